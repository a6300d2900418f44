//! The `#[toolhost_sdk::plugin]` attribute: turns a module of ordinary Rust functions into a
//! toolhost plugin (embedded manifest, WIT export and argument dispatch), so a tool's
//! declaration and its implementation can never drift apart.
//!
//! Use it through `toolhost-sdk`, which re-exports it and everything the expansion names.
//! Every misuse is reported as a `syn::Error` at the offending span, never as a panic.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::quote;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Item, ItemFn, ItemMod, Lit, Meta, Token};

mod prompts;
mod resources;
mod skills;
mod tool;

use tool::Tool;

// The host's rules, from the crate the host itself checks manifests with (`toolhost-spec`), so
// a plugin that builds is a plugin the host loads.
use toolhost_spec::manifest::{MAX_LABEL, MAX_NAME, MAX_PLUGIN_DESCRIPTION, SECTION, Text};

/// Manifest format version written by this SDK (the host accepts exactly the versions it knows).
const FORMAT: u64 = 1;

/// Why `name` is not a plugin name the host loads, if it is not (the host's rule: syntax and
/// the 64-character cap).
fn plugin_name_problem(name: &str) -> Option<String> {
    (!toolhost_spec::manifest::is_plugin_name(name)).then(|| {
        format!("plugin name {name:?} must match [A-Za-z_][A-Za-z0-9_-]* (at most {MAX_NAME} chars)")
    })
}

/// Why `name` is not a tool or param name the host accepts (`what` says which), if it is not.
fn ident_problem(what: &str, name: &str) -> Option<String> {
    (!toolhost_spec::manifest::is_tool_name(name))
        .then(|| format!("{what} name {name:?} must match [A-Za-z_][A-Za-z0-9_]* (at most {MAX_NAME} chars)"))
}

/// Why `value` is not a capability request of `kind` (`env`, `net`, `secret`, `exec`, `kv`), if it
/// is not: the host refuses a manifest with a malformed `env` or `exec` entry, and a malformed
/// `net` or `secret` entry could never be granted.
fn request_problem(kind: &str, value: &str) -> Option<String> {
    let bad = match kind {
        "env" => !toolhost_spec::env_name::is_valid(value),
        "net" => value.is_empty() || value.chars().any(char::is_whitespace),
        "secret" => value.trim().is_empty(),
        "kv" => !toolhost_spec::manifest::is_bucket_name(value),
        _ => !toolhost_spec::manifest::is_exec_request(value),
    };
    bad.then(|| match kind {
        "env" => format!("`env` entry {value:?} is not an environment variable name"),
        "net" => format!(
            "`net` entry {value:?} is not a host pattern such as \"api.example.com\", \"*.example.com\" or \"*\""
        ),
        "secret" => format!("`secret` entry {value:?} is not a secret name such as \"api_token\""),
        "kv" => format!("`kv` entry {value:?} {}", toolhost_spec::manifest::BUCKET_RULE),
        _ => format!(
            "`exec` entry {value:?} is not a program name such as \"git\" (no paths: the operator decides which executable a name runs; \"*\" asks for any program the operator grants)"
        ),
    })
}

/// Why `s` breaks the host's rules for free text, if it does (the host's rule,
/// `toolhost_spec::manifest::text_problem`, in the SDKs' words).
fn text_problem(s: &str, max: usize, description: bool) -> Option<String> {
    use toolhost_spec::manifest::TextProblem;
    let kind = if description { Text::Description } else { Text::Line };
    Some(match toolhost_spec::manifest::text_problem(s, max, kind)? {
        TextProblem::TooLong { chars, max } => {
            format!("is {chars} characters long; the host allows at most {max}")
        }
        control => control.to_string(),
    })
}

/// Why a schema is too large for the host, if it is.
fn schema_problem(schema: &Value) -> Option<String> {
    let n = toolhost_spec::manifest::schema_too_large(schema)?;
    Some(format!(
        "is {n} bytes of JSON; the host allows at most {}",
        toolhost_spec::manifest::MAX_SCHEMA_BYTES
    ))
}

/// Make the functions marked `#[tool]` inside this module the tools of a toolhost plugin.
///
/// See the `toolhost-sdk` crate documentation for the full reference.
#[proc_macro_attribute]
pub fn plugin(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = TokenStream2::from(attr);
    let item = TokenStream2::from(item);
    match expand(attr, item) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// `#[tool]` outside a `#[toolhost_sdk::plugin]` module is a mistake; say so at its span.
#[proc_macro_attribute]
pub fn tool(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = TokenStream2::from(item);
    let err = syn::Error::new(
        Span::call_site(),
        "`#[tool]` only works on functions inside a `#[toolhost_sdk::plugin] mod … { }` module",
    )
    .to_compile_error();
    quote!(#err #item).into()
}

/// One `key = value` or bare `key` option of `#[plugin(...)]` or `#[tool(...)]`.
struct Opt {
    key: syn::Ident,
    value: Option<Expr>,
}

impl Parse for Opt {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: syn::Ident = input.parse()?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Opt { key, value })
    }
}

fn parse_opts(tokens: TokenStream2) -> syn::Result<Vec<Opt>> {
    let parser = Punctuated::<Opt, Token![,]>::parse_terminated;
    Ok(syn::parse::Parser::parse2(parser, tokens)?.into_iter().collect())
}

fn lit_str(opt: &Opt) -> syn::Result<String> {
    match &opt.value {
        Some(Expr::Lit(ExprLit { lit: Lit::Str(s), .. })) => Ok(s.value()),
        Some(other) => Err(syn::Error::new_spanned(other, format!("`{}` takes a string literal", opt.key))),
        None => Err(syn::Error::new_spanned(
            &opt.key,
            format!("`{}` needs a value: `{} = \"…\"`", opt.key, opt.key),
        )),
    }
}

/// The values of `task_support`.
const TASK_SUPPORT: &[&str] = &["forbidden", "optional", "required"];

/// `timeout_ms = N`: milliseconds, from 1 to the host's most (a day).
fn timeout_ms(opt: &Opt) -> syn::Result<u64> {
    const MAX: u64 = toolhost_spec::manifest::MAX_TIMEOUT_MS;
    match &opt.value {
        Some(Expr::Lit(ExprLit { lit: Lit::Int(i), .. }))
            if i.base10_parse::<u64>().is_ok_and(|n| (1..=MAX).contains(&n)) =>
        {
            i.base10_parse()
        }
        Some(other) => Err(syn::Error::new_spanned(
            other,
            format!("`timeout_ms` must be a whole number of milliseconds from 1 to {MAX} (a day)"),
        )),
        None => Err(syn::Error::new_spanned(&opt.key, "`timeout_ms` needs a value: `timeout_ms = 60000`")),
    }
}

/// A whole number of `unit`, at least 1 (`output_limit = 1000`).
fn lit_u64(opt: &Opt, unit: &str) -> syn::Result<u64> {
    match &opt.value {
        Some(Expr::Lit(ExprLit { lit: Lit::Int(i), .. }))
            if i.base10_parse::<u64>().is_ok_and(|n| n >= 1) =>
        {
            i.base10_parse()
        }
        Some(other) => Err(syn::Error::new_spanned(
            other,
            format!("`{}` must be a whole number of {unit}, at least 1", opt.key),
        )),
        None => Err(syn::Error::new_spanned(
            &opt.key,
            format!("`{}` needs a value: `{} = 1000`", opt.key, opt.key),
        )),
    }
}

fn flag(opt: &Opt) -> syn::Result<bool> {
    match &opt.value {
        None => Ok(true),
        Some(Expr::Lit(ExprLit { lit: Lit::Bool(b), .. })) => Ok(b.value),
        Some(other) => Err(syn::Error::new_spanned(
            other,
            format!("`{}` is a flag: write `{}` or `{} = false`", opt.key, opt.key, opt.key),
        )),
    }
}

#[cfg(test)]
fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// What the macro derives from a `#[toolhost_sdk::plugin]` module: the manifest it embeds and
/// the dispatch arms of its `Guest` impl. The module comes back with the `#[tool]` and
/// `#[schema]` attributes taken off.
struct Derived {
    module: ItemMod,
    manifest: Value,
    arms: Vec<TokenStream2>,
    resources: resources::Resources,
    prompts: prompts::Prompts,
}

/// What `Cargo.toml` gives a plugin whose `#[plugin(...)]` does not set `name`, `version` or
/// `description`.
struct Package {
    name: String,
    version: String,
    description: String,
}

impl Package {
    /// The package the macro expands in (Cargo sets these for every crate it compiles).
    fn from_env() -> Self {
        let var = |key: &str| std::env::var(key).unwrap_or_default();
        Package {
            name: var("CARGO_PKG_NAME"),
            version: var("CARGO_PKG_VERSION"),
            description: var("CARGO_PKG_DESCRIPTION"),
        }
    }
}

fn derive(attr: TokenStream2, item: TokenStream2) -> syn::Result<Derived> {
    derive_in(&Package::from_env(), attr, item)
}

/// [`derive`] for a plugin of `package` (the conformance table's plugins are not this crate).
fn derive_in(package: &Package, attr: TokenStream2, item: TokenStream2) -> syn::Result<Derived> {
    let mut module: ItemMod = syn::parse2(item).map_err(|e| {
        syn::Error::new(e.span(), "`#[toolhost_sdk::plugin]` goes on an inline module: `mod my_tools { … }`")
    })?;
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new_spanned(
            &module,
            "`#[toolhost_sdk::plugin]` needs an inline module body (`mod name { … }`), not `mod name;`",
        ));
    };

    let mut plugin = plugin_fields(package, attr)?;

    let mod_name = &module.ident;
    let mut tools_json = Vec::new();
    let mut arms = Vec::new();
    let mut seen = BTreeSet::new();
    let mut declared = resources::Resources::default();
    let mut offered = prompts::Prompts::default();
    // Every mistake of the module at once, each at its own line (the compiler shows them all).
    let mut errors: Option<syn::Error> = None;
    let mut report = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for item in items.iter_mut() {
        let Item::Fn(func) = item else { continue };
        if let Some(pos) =
            func.attrs.iter().position(|a| resources::ATTRS.iter().any(|r| a.path().is_ident(r)))
        {
            if let Err(e) = declared.add(mod_name, func, pos) {
                report(e);
            }
            continue;
        }
        if let Some(pos) = func.attrs.iter().position(|a| prompts::ATTRS.iter().any(|r| a.path().is_ident(r)))
        {
            if let Err(e) = offered.add(mod_name, func, pos) {
                report(e);
            }
            continue;
        }
        let Some(pos) = func.attrs.iter().position(|a| a.path().is_ident("tool")) else {
            // A `pub fn` here looks like a tool to its author and is none to the model.
            if matches!(func.vis, syn::Visibility::Public(_))
                && !func.attrs.iter().any(|a| a.path().is_ident("cfg"))
            {
                report(syn::Error::new_spanned(
                    &func.sig.ident,
                    format!(
                        "`pub fn {}` in a `#[toolhost_sdk::plugin]` module is not a tool: add `#[tool]` to make it one (or `#[resource]`, `#[resource_template]`, `#[prompt]`, `#[complete]`), or make it private (`fn`, or `pub(crate) fn`) if it is a helper",
                        func.sig.ident
                    ),
                ));
            }
            continue;
        };
        match tool_of(func, pos, &mut seen) {
            Ok(tool) => {
                tools_json.push(tool.manifest());
                arms.push(tool.dispatch_arm(mod_name, &func.sig.ident, &func.sig.output));
            }
            Err(e) => report(e),
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    if tools_json.is_empty() {
        return Err(syn::Error::new_spanned(
            &module.ident,
            "this plugin declares no tools: mark at least one `pub fn` in the module with `#[tool]`",
        ));
    }
    plugin.insert("tools".into(), Value::Array(tools_json));
    // What is completed is marked on the templates before they are written.
    offered.manifest(&mut plugin, &mut declared)?;
    declared.manifest(&mut plugin)?;
    Ok(Derived { module, manifest: Value::Object(plugin), arms, resources: declared, prompts: offered })
}

/// The plugin's own manifest fields: `format`, `name`, `version` and `description` (Cargo.toml's
/// unless `#[plugin(...)]` sets them), and the `capabilities` its options request.
fn plugin_fields(package: &Package, attr: TokenStream2) -> syn::Result<Map<String, Value>> {
    let mut plugin = Map::new();
    plugin.insert("format".into(), json!(FORMAT));
    plugin.insert("name".into(), json!(package.name));
    plugin.insert("version".into(), json!(package.version));
    plugin.insert("description".into(), json!(package.description));
    // Where version and description came from, for errors: Cargo.toml unless an option sets them.
    let mut given: Vec<&Opt> = Vec::new();
    let opts = parse_opts(attr)?;
    let mut caps = Capabilities::default();
    for opt in &opts {
        match opt.key.to_string().as_str() {
            "name" | "version" | "description" => {
                let v = lit_str(opt)?;
                if opt.key == "name"
                    && let Some(problem) = plugin_name_problem(&v)
                {
                    return Err(syn::Error::new_spanned(&opt.value, problem));
                }
                plugin.insert(opt.key.to_string(), json!(v));
                given.push(opt);
            }
            "fs" => caps.fs.push(parse_fs(opt)?),
            key @ ("env" | "net" | "secret" | "exec" | "kv") => {
                let v = lit_str(opt)?;
                if let Some(problem) = request_problem(key, &v) {
                    return Err(syn::Error::new_spanned(&opt.value, problem));
                }
                match key {
                    "env" => caps.env.push(v),
                    "net" => caps.net.push(v),
                    "secret" => caps.secrets.push(v),
                    "kv" => caps.kv.push(v),
                    _ => caps.exec.push(v),
                }
            }
            other => {
                return Err(syn::Error::new_spanned(
                    &opt.key,
                    format!(
                        "unknown plugin option `{other}`; expected one of: name, version, description, fs, env, net, secret, exec, kv"
                    ),
                ));
            }
        }
    }
    for (key, max, description) in
        [("version", MAX_LABEL, false), ("description", MAX_PLUGIN_DESCRIPTION, true)]
    {
        let text = plugin.get(key).and_then(Value::as_str).unwrap_or_default();
        let empty = (key == "version" && text.trim().is_empty()).then(|| "must not be empty".to_string());
        if let Some(problem) = empty.or_else(|| text_problem(text, max, description)) {
            return Err(match given.iter().rev().find(|o| o.key == key) {
                Some(opt) => syn::Error::new_spanned(&opt.value, format!("plugin `{key}` {problem}")),
                None => syn::Error::new(
                    Span::call_site(),
                    format!(
                        "the package `{key}` in Cargo.toml {problem}; set `{key} = \"…\"` here to override it"
                    ),
                ),
            });
        }
    }
    plugin.insert("capabilities".into(), caps.to_json());
    Ok(plugin)
}

/// The tool of `func`, whose `#[tool]` attribute is at `pos` (taken off): one the plugin can
/// call, with a name no earlier tool of the module has (`seen` holds theirs).
fn tool_of(func: &mut ItemFn, pos: usize, seen: &mut BTreeSet<String>) -> syn::Result<Tool> {
    let tool_attr = func.attrs.remove(pos);
    if let Some(cfg) = func.attrs.iter().find(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr")) {
        return Err(syn::Error::new_spanned(
            cfg,
            "`#[cfg]` on a tool is not supported (the manifest is written before cfg is known); put the whole `#[toolhost_sdk::plugin]` module behind `#[cfg]` instead",
        ));
    }
    let tool = Tool::from_fn(func, &tool_attr)?;
    if !seen.insert(tool.name.clone()) {
        return Err(syn::Error::new_spanned(
            &func.sig.ident,
            format!(
                "tool `{}` is defined twice in this plugin; rename one with `#[tool(name = \"…\")]`",
                tool.name
            ),
        ));
    }
    if !matches!(func.vis, syn::Visibility::Public(_) | syn::Visibility::Restricted(_)) {
        return Err(syn::Error::new_spanned(
            &func.sig.ident,
            "a `#[tool]` function must be visible to the plugin: write `pub fn` (or `pub(crate) fn`)",
        ));
    }
    Ok(tool)
}

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let Derived { module, manifest, arms, resources, prompts } = derive(attr, item)?;
    let resources = resources.guest();
    let prompts = prompts.guest();
    let manifest = serde_json::to_string(&manifest)
        .map_err(|e| syn::Error::new(Span::call_site(), format!("cannot encode manifest: {e}")))?;
    let bytes = syn::LitByteStr::new(manifest.as_bytes(), Span::call_site());
    let len = manifest.len();
    let section = SECTION;
    let skills = skills::expand()?;

    Ok(quote! {
        #module

        #skills

        #[doc(hidden)]
        const _: () = {
            // The manifest travels inside the .wasm as a custom section, so the host can read it
            // without compiling or running the plugin.
            #[unsafe(link_section = #section)]
            #[used]
            static __TOOLHOST_MANIFEST: [u8; #len] = *#bytes;

            struct __ToolhostPlugin;

            impl ::toolhost_sdk::__private::Guest for __ToolhostPlugin {
                fn call(
                    tool: ::std::string::String,
                    args: ::std::vec::Vec<::std::string::String>,
                ) -> ::std::result::Result<::std::string::String, ::std::string::String> {
                    let mut args = ::toolhost_sdk::__private::Args::new(&tool, args);
                    match tool.as_str() {
                        #(#arms)*
                        other => ::std::result::Result::Err(::std::format!(
                            "this plugin has no tool named `{}`", other
                        )),
                    }
                }
            }

            #resources

            #prompts

            ::toolhost_sdk::__bindings::__export_plugin!(__ToolhostPlugin with_types_in ::toolhost_sdk::__bindings);
        };
    })
}

#[derive(Default)]
struct Capabilities {
    fs: Vec<Value>,
    env: Vec<String>,
    net: Vec<String>,
    secrets: Vec<String>,
    exec: Vec<String>,
    kv: Vec<String>,
}

impl Capabilities {
    fn to_json(&self) -> Value {
        let mut v = json!({ "fs": self.fs, "env": self.env, "net": self.net, "secrets": self.secrets });
        // Only when requested, so plugins that run nothing load on hosts that predate `exec`.
        if !self.exec.is_empty() {
            v["exec"] = json!(self.exec);
        }
        if !self.kv.is_empty() {
            v["kv"] = json!(self.kv);
        }
        v
    }
}

/// `fs = "workspace:rw"` / `fs = "docs:ro"`.
fn parse_fs(opt: &Opt) -> syn::Result<Value> {
    let v = lit_str(opt)?;
    let (name, mode) = v.split_once(':').unwrap_or((v.as_str(), "ro"));
    if !matches!(mode, "ro" | "rw") || name.trim().is_empty() {
        return Err(syn::Error::new_spanned(
            &opt.value,
            "`fs` takes \"NAME:ro\" or \"NAME:rw\", e.g. `fs = \"workspace:rw\"`",
        ));
    }
    Ok(json!({ "path": name, "mode": mode }))
}

/// `output_schema = r#"{"type": "object", …}"#`: JSON, and a schema for an object (the host
/// checks the rest of JSON Schema when it loads the plugin).
fn output_schema(opt: &Opt) -> syn::Result<Value> {
    let text = lit_str(opt)?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        syn::Error::new_spanned(&opt.value, format!("`output_schema` is not valid JSON: {e}"))
    })?;
    if v.get("type") != Some(&json!("object")) {
        return Err(syn::Error::new_spanned(
            &opt.value,
            "`output_schema` must describe an object (`\"type\": \"object\"`); return the result as a JSON object",
        ));
    }
    if let Some(problem) = schema_problem(&v) {
        return Err(syn::Error::new_spanned(&opt.value, format!("`output_schema` {problem}")));
    }
    Ok(v)
}

/// The span of the first doc attribute whose text matches `pick` (else of the first one): where
/// a problem with the doc comment is reported.
fn doc_span(attrs: &[Attribute], pick: impl Fn(&str) -> bool) -> Span {
    let docs: Vec<(&Attribute, String)> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some((a, s.value())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    docs.iter().find(|(_, text)| pick(text)).or(docs.first()).map_or_else(Span::call_site, |(a, _)| a.span())
}

fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        // An empty `///` line is `""`, which has no `lines()`: it is the blank line that ends a
        // paragraph, kept as one.
        .flat_map(|s| match s.is_empty() {
            true => vec![String::new()],
            false => s.lines().map(|l| l.strip_prefix(' ').unwrap_or(l).to_string()).collect(),
        })
        .collect()
}

/// First paragraph → description; lines like ``- `path`: text`` or ``* `path` - text`` → param docs.
fn split_docs(lines: &[String]) -> (String, Vec<(String, String)>) {
    let mut description = Vec::new();
    let mut in_first_paragraph = true;
    let mut params: Vec<(String, String)> = Vec::new();
    for line in lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("- `").or_else(|| t.strip_prefix("* `"))
            && let Some((name, after)) = rest.split_once('`')
        {
            let desc = after.trim_start().trim_start_matches([':', '-', '—']).trim().to_string();
            params.push((name.to_string(), desc));
            in_first_paragraph = false;
            continue;
        }
        if t.is_empty() {
            if !description.is_empty() {
                in_first_paragraph = false;
            }
            continue;
        }
        if t.starts_with('#') {
            in_first_paragraph = false;
            continue;
        }
        if in_first_paragraph {
            description.push(t.to_string());
        } else if let Some(last) = params.last_mut() {
            // Continuation line of a param description.
            if !line.starts_with(|c: char| c.is_whitespace()) {
                continue;
            }
            last.1.push(' ');
            last.1.push_str(t);
        }
    }
    (description.join(" "), params)
}

#[cfg(test)]
mod conformance;

#[cfg(test)]
mod tests;

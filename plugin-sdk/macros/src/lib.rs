//! The `#[toolhost_sdk::plugin]` attribute: turns a module of ordinary Rust functions into a
//! toolhost plugin (embedded manifest, WIT export and argument dispatch), so a tool's
//! declaration and its implementation can never drift apart.
//!
//! Use it through `toolhost-sdk`, which re-exports it and everything the expansion names.
//! Every misuse is reported as a `syn::Error` at the offending span, never as a panic.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use serde_json::{Map, Value, json};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Item, ItemFn, ItemMod, Lit, Meta, Pat, PathArguments,
    Token, Type,
};

mod prompts;
mod resources;
mod skills;

// The host's rules, from the crate the host itself checks manifests with (`toolhost-spec`), so
// a plugin that builds is a plugin the host loads.
use toolhost_spec::manifest::{
    MAX_ICONS, MAX_LABEL, MAX_NAME, MAX_PARAM_DESCRIPTION, MAX_PLUGIN_DESCRIPTION, MAX_TITLE,
    MAX_TOOL_DESCRIPTION, SECTION, Text,
};

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

fn lit_u64(opt: &Opt) -> syn::Result<u64> {
    match &opt.value {
        Some(Expr::Lit(ExprLit { lit: Lit::Int(i), .. }))
            if i.base10_parse::<u64>().is_ok_and(|n| n >= 1) =>
        {
            i.base10_parse()
        }
        Some(other) => Err(syn::Error::new_spanned(
            other,
            format!("`{}` must be a whole number of characters, at least 1", opt.key),
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

    let mod_name = &module.ident;
    let mut tools_json = Vec::new();
    let mut arms = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
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
        let tool_attr = func.attrs.remove(pos);
        if let Some(cfg) =
            func.attrs.iter().find(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr"))
        {
            report(syn::Error::new_spanned(
                cfg,
                "`#[cfg]` on a tool is not supported (the manifest is written before cfg is known); put the whole `#[toolhost_sdk::plugin]` module behind `#[cfg]` instead",
            ));
            continue;
        }
        let tool = match Tool::from_fn(func, &tool_attr) {
            Ok(t) => t,
            Err(e) => {
                report(e);
                continue;
            }
        };
        if !seen.insert(tool.name.clone()) {
            report(syn::Error::new_spanned(
                &func.sig.ident,
                format!(
                    "tool `{}` is defined twice in this plugin; rename one with `#[tool(name = \"…\")]`",
                    tool.name
                ),
            ));
            continue;
        }
        if !matches!(func.vis, syn::Visibility::Public(_) | syn::Visibility::Restricted(_)) {
            report(syn::Error::new_spanned(
                &func.sig.ident,
                "a `#[tool]` function must be visible to the plugin: write `pub fn` (or `pub(crate) fn`)",
            ));
            continue;
        }
        tools_json.push(tool.manifest());
        arms.push(tool.dispatch_arm(mod_name, &func.sig.ident, &func.sig.output));
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

/// What the macro learned about one `#[tool]` function.
struct Tool {
    name: String,
    description: String,
    params: Vec<Param>,
    rest: bool,
    danger: bool,
    read_only: bool,
    output_limit: Option<u64>,
    category: Option<String>,
    /// `output_schema = r#"{…}"#`: the JSON Schema (an object schema) of the tool's result.
    output_schema: Option<Value>,
    /// `timeout_ms = N`: the time limit the tool asks for.
    timeout_ms: Option<u64>,
    /// `task_support = "optional"`: whether the tool may run as an MCP task.
    task_support: Option<String>,
    /// `title = "…"`: a name for people.
    title: Option<String>,
    /// `idempotent`: calling it again with the same arguments changes nothing more.
    idempotent: bool,
    /// `icon = "data:image/png;base64,…"`, once per icon.
    icons: Vec<String>,
}

struct Param {
    name: String,
    description: String,
    kind: ParamKind,
    optional: bool,
    /// JSON Schema for the param: a type name or a full schema.
    schema: Value,
    span: Span,
    /// `#[default = LIT]`: the value when the argument is left off (the param is optional, its
    /// type is not an `Option`), and the literal that gives it.
    default: Option<(Value, Lit)>,
}

#[derive(PartialEq)]
enum ParamKind {
    Text,
    Json,
}

impl Tool {
    fn from_fn(func: &mut ItemFn, attr: &Attribute) -> syn::Result<Self> {
        let mut tool = Tool {
            name: func.sig.ident.to_string(),
            description: String::new(),
            params: Vec::new(),
            rest: false,
            danger: false,
            read_only: false,
            output_limit: None,
            category: None,
            output_schema: None,
            timeout_ms: None,
            task_support: None,
            title: None,
            idempotent: false,
            icons: Vec::new(),
        };
        let mut named = false;
        if let Meta::List(list) = &attr.meta {
            for opt in parse_opts(list.tokens.clone())? {
                match opt.key.to_string().as_str() {
                    "name" => {
                        let n = lit_str(&opt)?;
                        if let Some(problem) = ident_problem("tool", &n) {
                            return Err(syn::Error::new_spanned(&opt.value, problem));
                        }
                        tool.name = n;
                        named = true;
                    }
                    "danger" => tool.danger = flag(&opt)?,
                    "read_only" => tool.read_only = flag(&opt)?,
                    "rest" => tool.rest = flag(&opt)?,
                    "output_limit" => tool.output_limit = Some(lit_u64(&opt)?),
                    "category" => {
                        let c = lit_str(&opt)?;
                        if c.trim().is_empty() {
                            return Err(syn::Error::new_spanned(&opt.value, "`category` must not be empty"));
                        }
                        if let Some(problem) = text_problem(&c, MAX_LABEL, false) {
                            return Err(syn::Error::new_spanned(&opt.value, format!("`category` {problem}")));
                        }
                        tool.category = Some(c);
                    }
                    "output_schema" => tool.output_schema = Some(output_schema(&opt)?),
                    "timeout_ms" => tool.timeout_ms = Some(timeout_ms(&opt)?),
                    "task_support" => {
                        let v = lit_str(&opt)?;
                        if !TASK_SUPPORT.contains(&v.as_str()) {
                            return Err(syn::Error::new_spanned(
                                &opt.value,
                                format!(
                                    "`task_support` must be one of {}, got {v:?}",
                                    TASK_SUPPORT.join(", ")
                                ),
                            ));
                        }
                        tool.task_support = Some(v);
                    }
                    "title" => {
                        let t = lit_str(&opt)?;
                        if t.trim().is_empty() {
                            return Err(syn::Error::new_spanned(&opt.value, "`title` must not be empty"));
                        }
                        if let Some(problem) = text_problem(&t, MAX_TITLE, false) {
                            return Err(syn::Error::new_spanned(&opt.value, format!("`title` {problem}")));
                        }
                        tool.title = Some(t);
                    }
                    "idempotent" => tool.idempotent = flag(&opt)?,
                    "icon" => {
                        let src = lit_str(&opt)?;
                        if let Some(problem) = toolhost_spec::manifest::icon_problem(&src) {
                            return Err(syn::Error::new_spanned(&opt.value, format!("`icon` {problem}")));
                        }
                        if tool.icons.len() == MAX_ICONS {
                            return Err(syn::Error::new_spanned(
                                &opt.key,
                                format!("a tool has at most {MAX_ICONS} icons"),
                            ));
                        }
                        tool.icons.push(src);
                    }
                    other => {
                        return Err(syn::Error::new_spanned(
                            &opt.key,
                            format!(
                                "unknown tool option `{other}`; expected one of: name, danger, read_only, rest, output_limit, category, output_schema, timeout_ms, task_support, title, idempotent, icon"
                            ),
                        ));
                    }
                }
            }
        }
        if !named && let Some(problem) = ident_problem("tool", &tool.name) {
            return Err(syn::Error::new_spanned(&func.sig.ident, problem));
        }
        if func.sig.asyncness.is_some() {
            return Err(syn::Error::new_spanned(func.sig.asyncness, "tools are synchronous: remove `async`"));
        }
        if !func.sig.generics.params.is_empty() {
            return Err(syn::Error::new_spanned(&func.sig.generics, "a tool function cannot be generic"));
        }
        let docs = doc_lines(&func.attrs);
        let (description, param_docs) = split_docs(&docs);
        if description.is_empty() {
            return Err(syn::Error::new_spanned(
                &func.sig.ident,
                format!(
                    "tool `{}` has no description: write a doc comment; its first paragraph is the description the model reads",
                    tool.name
                ),
            ));
        }
        if let Some(problem) = text_problem(&description, MAX_TOOL_DESCRIPTION, true) {
            return Err(syn::Error::new(
                doc_span(&func.attrs, |d| text_problem(d, usize::MAX, true).is_some()),
                format!("the tool's description (the doc comment's first paragraph) {problem}"),
            ));
        }
        for (name, text) in &param_docs {
            if let Some(problem) = text_problem(text, MAX_PARAM_DESCRIPTION, true) {
                return Err(syn::Error::new(
                    doc_span(&func.attrs, |d| d.contains(&format!("`{name}`"))),
                    format!("the description of parameter `{name}` {problem}"),
                ));
            }
        }
        tool.description = description;

        for input in func.sig.inputs.iter_mut() {
            let FnArg::Typed(pat_ty) = input else {
                return Err(syn::Error::new_spanned(input, "a tool is a free function: no `self`"));
            };
            let Pat::Ident(pat_ident) = &*pat_ty.pat else {
                return Err(syn::Error::new_spanned(
                    &pat_ty.pat,
                    "tool parameters must be plain names (`path: String`), not patterns",
                ));
            };
            let name = pat_ident.ident.to_string().trim_start_matches("r#").to_string();
            if let Some(problem) = ident_problem("parameter", &name) {
                return Err(syn::Error::new_spanned(&pat_ident.ident, problem));
            }
            if tool.params.iter().any(|p| p.name == name) {
                return Err(syn::Error::new_spanned(
                    &pat_ident.ident,
                    format!("param `{name}` is declared twice"),
                ));
            }
            // `#[schema = "…"]` on a parameter overrides the JSON Schema derived from its type;
            // `#[default = 10]` gives the value a left-off argument takes.
            let mut schema_override = None;
            let mut default = None;
            let mut kept = Vec::new();
            for a in pat_ty.attrs.drain(..) {
                if a.path().is_ident("default") {
                    let Meta::NameValue(nv) = &a.meta else {
                        return Err(syn::Error::new_spanned(&a, "write `#[default = 10]` (a literal)"));
                    };
                    let lit = match &nv.value {
                        Expr::Lit(ExprLit { lit, .. }) => lit.clone(),
                        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => match &**expr {
                            Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => {
                                Lit::Int(syn::LitInt::new(&format!("-{}", i.base10_digits()), i.span()))
                            }
                            Expr::Lit(ExprLit { lit: Lit::Float(f), .. }) => {
                                Lit::Float(syn::LitFloat::new(&format!("-{}", f.base10_digits()), f.span()))
                            }
                            other => {
                                return Err(syn::Error::new_spanned(
                                    other,
                                    "a default is a literal: a string, a number or a bool",
                                ));
                            }
                        },
                        other => {
                            return Err(syn::Error::new_spanned(
                                other,
                                "a default is a literal: a string, a number or a bool",
                            ));
                        }
                    };
                    let value = match &lit {
                        Lit::Str(s) => json!(s.value()),
                        Lit::Bool(b) => json!(b.value),
                        Lit::Int(i) => json!(i.base10_parse::<i64>()?),
                        Lit::Float(f) => json!(f.base10_parse::<f64>()?),
                        other => {
                            return Err(syn::Error::new_spanned(
                                other,
                                "a default is a literal: a string, a number or a bool",
                            ));
                        }
                    };
                    default = Some((value, lit));
                } else if a.path().is_ident("schema") {
                    let Meta::NameValue(nv) = &a.meta else {
                        return Err(syn::Error::new_spanned(&a, "write `#[schema = r#\"{…}\"#]`"));
                    };
                    let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value else {
                        return Err(syn::Error::new_spanned(
                            &nv.value,
                            "`schema` takes a string literal holding JSON",
                        ));
                    };
                    let v: Value = serde_json::from_str(&s.value()).map_err(|e| {
                        syn::Error::new_spanned(s, format!("`schema` is not valid JSON: {e}"))
                    })?;
                    if let Some(problem) = schema_problem(&v) {
                        return Err(syn::Error::new_spanned(s, format!("`schema` {problem}")));
                    }
                    schema_override = Some(v);
                } else {
                    kept.push(a);
                }
            }
            pat_ty.attrs = kept;
            let (kind, mut optional, mut schema) = classify(&pat_ty.ty)?;
            if let Some((_, lit)) = &default {
                if optional {
                    return Err(syn::Error::new_spanned(
                        &pat_ty.ty,
                        format!(
                            "`{name}` has a default, so it is never missing: write its type without `Option<…>`"
                        ),
                    ));
                }
                let text = kind == ParamKind::Text;
                if text != matches!(lit, Lit::Str(_)) {
                    return Err(syn::Error::new_spanned(
                        lit,
                        if text {
                            format!("`{name}` is text (`String`), so its default is a string literal")
                        } else {
                            format!("`{name}` is a JSON parameter, so its default is a number or a bool")
                        },
                    ));
                }
                optional = true;
            }
            if let Some(s) = schema_override {
                if kind == ParamKind::Text {
                    return Err(syn::Error::new_spanned(
                        &pat_ty.ty,
                        "`#[schema]` is for JSON parameters; a `String` parameter is always plain text",
                    ));
                }
                schema = s;
            }
            let description =
                param_docs.iter().find(|(n, _)| *n == name).map(|(_, d)| d.clone()).unwrap_or_default();
            tool.params.push(Param {
                name,
                description,
                kind,
                optional,
                schema,
                span: pat_ty.ty.span(),
                default,
            });
        }
        for (doc_name, _) in &param_docs {
            if !tool.params.iter().any(|p| &p.name == doc_name) {
                // At the doc line itself (`/// - `pth`: …`), where the mistake is.
                return Err(syn::Error::new(
                    doc_span(&func.attrs, |d| d.contains(&format!("`{doc_name}`"))),
                    format!(
                        "the doc comment describes a parameter `{doc_name}` that this function does not have"
                    ),
                ));
            }
        }
        // Optional parameters may only trail: the model leaves them off the end.
        let mut seen_optional = false;
        for p in &tool.params {
            if p.optional {
                seen_optional = true;
            } else if seen_optional {
                return Err(syn::Error::new(
                    p.span,
                    "a required parameter cannot follow an `Option<…>` parameter",
                ));
            }
        }
        if tool.rest {
            match tool.params.last() {
                None => {
                    return Err(syn::Error::new_spanned(
                        &func.sig,
                        "`rest` needs at least one parameter: the last one takes the remaining arguments",
                    ));
                }
                Some(p) if p.kind != ParamKind::Text || p.optional => {
                    return Err(syn::Error::new(
                        p.span,
                        "with `rest`, the last parameter must be a `String`: it receives the remaining arguments joined with `,`",
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(tool)
    }

    fn manifest(&self) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                let mut v = json!({
                    "name": p.name,
                    "type": p.schema,
                    "description": p.description,
                    "optional": p.optional,
                });
                if let Some((default, _)) = &p.default {
                    v["default"] = default.clone();
                }
                v
            })
            .collect();
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("description".into(), json!(self.description));
        m.insert("params".into(), Value::Array(params));
        m.insert("argCount".into(), json!(self.params.len()));
        m.insert(
            "parseJson".into(),
            json!(self.params.iter().map(|p| p.kind == ParamKind::Json).collect::<Vec<_>>()),
        );
        m.insert("rest".into(), json!(self.rest));
        if let Some(limit) = self.output_limit {
            m.insert("outputLimit".into(), json!(limit));
        }
        m.insert("danger".into(), json!(self.danger));
        m.insert("readOnly".into(), json!(self.read_only));
        if let Some(c) = &self.category {
            m.insert("category".into(), json!(c));
        }
        if let Some(schema) = &self.output_schema {
            m.insert("outputSchema".into(), schema.clone());
        }
        if let Some(t) = self.timeout_ms {
            m.insert("timeoutMs".into(), json!(t));
        }
        if let Some(t) = &self.task_support {
            m.insert("taskSupport".into(), json!(t));
        }
        if let Some(t) = &self.title {
            m.insert("title".into(), json!(t));
        }
        if self.idempotent {
            m.insert("idempotent".into(), json!(true));
        }
        if !self.icons.is_empty() {
            m.insert(
                "icons".into(),
                json!(self.icons.iter().map(|s| json!({ "src": s })).collect::<Vec<_>>()),
            );
        }
        Value::Object(m)
    }

    fn dispatch_arm(&self, module: &syn::Ident, func: &syn::Ident, output: &syn::ReturnType) -> TokenStream2 {
        let tool = &self.name;
        let mut lets = Vec::new();
        let mut idents = Vec::new();
        for (i, p) in self.params.iter().enumerate() {
            let var = format_ident!("__arg_{}", i);
            let pname = &p.name;
            let getter = match (&p.kind, p.optional) {
                (ParamKind::Text, false) => quote!(args.text(#i, #pname)),
                (ParamKind::Text, true) => quote!(args.opt_text(#i)),
                (ParamKind::Json, false) => quote!(args.json(#i, #pname)),
                (ParamKind::Json, true) => quote!(args.opt_json(#i, #pname)),
            };
            match &p.default {
                // The default's own tokens: a literal that does not fit the type is an error at it.
                Some((_, lit)) => {
                    let value = match p.kind {
                        ParamKind::Text => quote_spanned!(lit.span()=> ::std::string::String::from(#lit)),
                        ParamKind::Json => quote_spanned!(lit.span()=> #lit),
                    };
                    lets.push(quote_spanned!(p.span=> let #var = #getter?.unwrap_or_else(|| #value);));
                }
                None => lets.push(quote_spanned!(p.span=> let #var = #getter?;)),
            }
            idents.push(var);
        }
        // The conversion of the result is spanned at the return type: a type a tool cannot
        // return is reported at the author's `-> T` (or the function's name when there is none).
        let at = match output {
            syn::ReturnType::Type(_, ty) => ty.span(),
            syn::ReturnType::Default => func.span(),
        };
        let into = quote_spanned!(at=> ::toolhost_sdk::__private::IntoToolResult::into_tool_result);
        // The value converted is a variable spanned there too: rustc reports an unsatisfied
        // bound at the argument, so the error points at the author's return type.
        let result = syn::Ident::new("__toolhost_result", at);
        quote! {
            #tool => {
                #(#lets)*
                let #result = #module::#func(#(#idents),*);
                #into(#result)
            }
        }
    }
}

/// How a parameter's Rust type maps onto the manifest: text or JSON, optional, and its schema.
fn classify(ty: &Type) -> syn::Result<(ParamKind, bool, Value)> {
    if let Type::Reference(r) = ty {
        return Err(syn::Error::new_spanned(
            r,
            "tool parameters are owned values: use `String` instead of `&str` (or an owned JSON type)",
        ));
    }
    let Type::Path(tp) = ty else {
        return Err(syn::Error::new_spanned(
            ty,
            "unsupported parameter type: use `String` for text or a `serde::Deserialize` type for JSON",
        ));
    };
    let Some(last) = tp.path.segments.last() else {
        return Err(syn::Error::new_spanned(ty, "unsupported parameter type"));
    };
    let name = last.ident.to_string();
    if name == "Option" {
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return Err(syn::Error::new_spanned(ty, "write `Option<T>`"));
        };
        let Some(GenericArgument::Type(inner)) = args.args.first() else {
            return Err(syn::Error::new_spanned(ty, "write `Option<T>`"));
        };
        if matches!(inner, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option")) {
            return Err(syn::Error::new_spanned(
                ty,
                "`Option<Option<…>>` is not a meaningful tool parameter",
            ));
        }
        let (kind, _, schema) = classify(inner)?;
        return Ok((kind, true, schema));
    }
    let schema = match name.as_str() {
        "String" => return Ok((ParamKind::Text, false, json!("string"))),
        "str" => {
            return Err(syn::Error::new_spanned(ty, "use `String` instead of `str`"));
        }
        "bool" => json!("boolean"),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => {
            json!("integer")
        }
        "f32" | "f64" => json!("number"),
        "Vec" | "VecDeque" | "HashSet" | "BTreeSet" => json!("array"),
        "Value" => json!({}),
        _ => json!("object"),
    };
    Ok((ParamKind::Json, false, schema))
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
mod tests {
    use super::*;
    use toolhost_spec::manifest::MAX_SCHEMA_BYTES;

    fn expand_str(attr: &str, item: &str) -> Result<String, String> {
        let attr: TokenStream2 = attr.parse().unwrap();
        let item: TokenStream2 = item.parse().unwrap();
        expand(attr, item).map(|t| t.to_string()).map_err(|e| e.to_string())
    }

    fn manifest_of(item: &str) -> Value {
        derive("name = \"demo\"".parse().unwrap(), item.parse().unwrap()).expect("derives").manifest
    }

    #[test]
    fn doc_comment_and_signature_become_manifest() {
        let m = manifest_of(
            r#"mod t {
                /// Split a task into subtasks.
                ///
                /// - `title`: the task title
                /// - `subtasks`: JSON array of subtasks
                #[tool(category = "task", output_limit = 500)]
                pub fn split_task(title: String, subtasks: Vec<Sub>, days: Option<u32>) -> Result<String, String> { todo!() }
            }"#,
        );
        let t = &m["tools"][0];
        assert_eq!(m["name"], "demo");
        assert_eq!(m["format"], 1);
        assert_eq!(t["name"], "split_task");
        assert_eq!(t["description"], "Split a task into subtasks.");
        assert_eq!(t["argCount"], 3);
        assert_eq!(t["parseJson"], json!([false, true, true]));
        assert_eq!(t["params"][0]["description"], "the task title");
        assert_eq!(t["params"][1]["type"], "array");
        assert_eq!(t["params"][2]["optional"], true);
        assert_eq!(t["params"][2]["type"], "integer");
        assert_eq!(t["outputLimit"], 500);
        assert_eq!(t["category"], "task");
        assert_eq!(t["danger"], false);
    }

    #[test]
    fn resources_and_templates_become_manifest_entries_and_a_read_dispatch() {
        let item = r#"mod t {
            /// d
            #[tool] pub fn a() -> String { todo!() }
            /// The style guide.
            ///
            /// More words.
            #[resource(uri = "docs://guide", mime_type = "text/markdown", size = 12)]
            pub fn guide() -> &'static str { "x" }
            /// A file.
            #[resource_template(uri = "file:///{+path}", name = "file", title = "File")]
            pub fn file(path: String) -> Vec<u8> { todo!() }
        }"#;
        let m = manifest_of(item);
        assert_eq!(
            m["resources"],
            json!([{"uri": "docs://guide", "name": "guide", "description": "The style guide.", "mimeType": "text/markdown", "size": 12}])
        );
        assert_eq!(
            m["resourceTemplates"],
            json!([{"uriTemplate": "file:///{+path}", "name": "file", "title": "File", "description": "A file."}])
        );
        let code = expand_str("", item).unwrap();
        assert!(code.contains("ResourcesGuest"), "{code}");
        assert!(code.contains(r#"variable (& req , "path")"#), "{code}");
        // No resources: no entries, and a read dispatch that answers "none".
        let m = manifest_of("mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }");
        assert!(m.get("resources").is_none() && m.get("resourceTemplates").is_none(), "{m}");
    }

    #[test]
    fn resource_mistakes_are_reported_at_the_function() {
        let err = |f: &str| {
            expand_str("", &format!("mod t {{ /// d\n #[tool] pub fn a() -> String {{ todo!() }} {f} }}"))
                .unwrap_err()
        };
        for (f, why) in [
            (
                r#"#[resource(uri = "skill://a/b/SKILL.md")] pub fn r() -> String { todo!() }"#,
                "scheme is the host's own",
            ),
            (r#"#[resource] pub fn r() -> String { todo!() }"#, "needs its URI"),
            (
                r#"#[resource(uri = "docs://a")] pub fn r(x: String) -> String { todo!() }"#,
                "takes no parameters",
            ),
            (
                r#"#[resource_template(uri = "file:///{+path}")] pub fn r(p: String) -> String { todo!() }"#,
                "`p` is no variable",
            ),
            (
                r#"#[resource_template(uri = "file:///{a}/{b}")] pub fn r(a: String) -> String { todo!() }"#,
                "`b` needs",
            ),
            (
                r#"#[resource_template(uri = "file:///{a}{b}")] pub fn r(a: String, b: String) -> String { todo!() }"#,
                "two expressions in a row",
            ),
            (
                r#"#[resource(uri = "docs://a", colour = "x")] pub fn r() -> String { todo!() }"#,
                "unknown resource option `colour`",
            ),
            (
                r#"#[resource(uri = "docs://a")] pub fn r() -> String { todo!() } #[resource(uri = "docs://a", name = "s")] pub fn s() -> String { todo!() }"#,
                "declared twice",
            ),
        ] {
            let e = err(f);
            assert!(e.contains(why), "{f}: {e}");
        }
    }

    #[test]
    fn output_schema_is_written_and_must_describe_an_object() {
        let m = manifest_of(
            r##"mod t { /// d
                #[tool(output_schema = r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#)]
                pub fn a() -> String { todo!() } }"##,
        );
        assert_eq!(m["tools"][0]["outputSchema"]["properties"]["n"]["type"], "integer");
        let m = manifest_of("mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }");
        assert!(m["tools"][0].get("outputSchema").is_none());
        let err = |schema: &str| {
            let item = format!(
                "mod t {{ /// d\n #[tool(output_schema = {schema:?})] pub fn a() -> String {{ todo!() }} }}"
            );
            expand_str("", &item).unwrap_err()
        };
        assert!(err(r#"{"type": "array"}"#).contains("must describe an object"));
        assert!(err("{not json").contains("not valid JSON"));
    }

    #[test]
    fn exec_requests_are_written_only_when_made() {
        let item = "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }";
        let out = expand_str("exec = \"git\", exec = \"xdg-open\"", item).unwrap();
        assert!(out.contains(r#"\"exec\":[\"git\",\"xdg-open\"]"#), "{out}");
        let out = expand_str("", item).unwrap();
        assert!(!out.contains("exec"), "{out}");
    }

    #[test]
    fn danger_and_rest_flags() {
        let m = manifest_of(
            r#"mod t {
                /// Search.
                #[tool(rest, danger)]
                pub fn search(query: String) -> String { query }
            }"#,
        );
        assert_eq!(m["tools"][0]["rest"], true);
        assert_eq!(m["tools"][0]["danger"], true);
    }

    #[test]
    fn free_text_is_held_to_the_hosts_caps() {
        let tool = |doc: &str, attrs: &str| {
            format!("mod t {{ {doc}\n #[tool({attrs})] pub fn a(x: String) -> String {{ x }} }}")
        };
        let long_doc = format!("/// {}", "d".repeat(MAX_TOOL_DESCRIPTION + 1));
        let long_param = format!("/// D.\n///\n/// - `x`: {}", "p".repeat(MAX_PARAM_DESCRIPTION + 1));
        let big_schema =
            format!(r#"{{"type": "object", "description": "{}"}}"#, "s".repeat(MAX_SCHEMA_BYTES));
        let cases = [
            ("", tool(&long_doc, ""), "is 4097 characters long; the host allows at most 4096"),
            ("", tool(&long_param, ""), "parameter `x` is 1025 characters long"),
            ("", tool("#[doc = \"Reads. \\u{1b}[2K\"]", ""), "contains the control character U+001B"),
            (
                "",
                tool("/// D.", "category = \"files\\nDANGEROUS\""),
                "`category` contains the control character U+000A",
            ),
            (
                "",
                tool("/// D.", &format!("category = \"{}\"", "c".repeat(MAX_LABEL + 1))),
                "`category` is 65 characters",
            ),
            (
                "",
                tool("/// D.", &format!("output_schema = {big_schema:?}")),
                "bytes of JSON; the host allows at most 16384",
            ),
            (
                &*format!("description = \"{}\"", "p".repeat(MAX_PLUGIN_DESCRIPTION + 1)),
                tool("/// D.", ""),
                "plugin `description` is 1025",
            ),
            (
                "version = \"1.0\\u{0}\"",
                tool("/// D.", ""),
                "plugin `version` contains the control character U+0000",
            ),
        ];
        for (attr, item, want) in cases {
            let err = expand_str(attr, &item).expect_err(&item);
            assert!(err.contains(want), "for {item}: expected {want:?} in {err:?}");
        }
        // At the caps, and a description with a tab: accepted.
        let doc = format!("/// {}\t{}", "d".repeat(100), "e".repeat(MAX_TOOL_DESCRIPTION - 101));
        let m = manifest_of(&tool(&doc, &format!("category = \"{}\"", "c".repeat(MAX_LABEL))));
        assert_eq!(m["tools"][0]["description"].as_str().unwrap().chars().count(), MAX_TOOL_DESCRIPTION);
    }

    #[test]
    fn the_hosts_name_caps_and_request_rules_hold_at_expansion() {
        let t = "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }";
        let long = |c: &str, n: usize| c.repeat(n);
        // Before: a 65-character plugin name expanded, then the host refused to load the file.
        let cases = [
            (format!("name = \"{}\"", long("p", 65)), t.to_string(), "(at most 64 chars)"),
            (
                String::new(),
                format!("mod t {{ /// d\n #[tool] pub fn {}() -> String {{ todo!() }} }}", long("t", 65)),
                "tool name",
            ),
            (
                String::new(),
                format!(
                    "mod t {{ /// d\n #[tool(name = \"{}\")] pub fn a() -> String {{ todo!() }} }}",
                    long("t", 65)
                ),
                "(at most 64 chars)",
            ),
            (
                String::new(),
                format!(
                    "mod t {{ /// d\n #[tool] pub fn a({}: String) -> String {{ todo!() }} }}",
                    long("a", 65)
                ),
                "parameter name",
            ),
            (
                String::new(),
                "mod t { /// d\n #[tool] pub fn a(x: String, x: String) -> String { todo!() } }".into(),
                "param `x` is declared twice",
            ),
            (format!("exec = \"{}\"", long("x", 256)), t.into(), "is not a program name"),
            ("exec = \"\"".into(), t.into(), "is not a program name"),
            ("env = \"A=B\"".into(), t.into(), "`env` entry \"A=B\" is not an environment variable name"),
            ("net = \"a b\"".into(), t.into(), "is not a host pattern"),
            ("secret = \" \"".into(), t.into(), "is not a secret name"),
            ("version = \" \"".into(), t.into(), "plugin `version` must not be empty"),
            (
                String::new(),
                "mod t { /// d\n #[tool(category = \"\")] pub fn a() -> String { todo!() } }".into(),
                "`category` must not be empty",
            ),
        ];
        for (attr, item, want) in cases {
            let err = expand_str(&attr, &item).expect_err(&attr);
            assert!(err.contains(want), "for {attr} {item}: expected {want:?} in {err:?}");
        }
        // At the caps: accepted.
        let m = derive(
            format!("name = \"{}\", exec = \"{}\"", long("p", 64), long("x", 255)).parse().unwrap(),
            format!(
                "mod t {{ /// d\n #[tool] pub fn {}({}: String) -> String {{ todo!() }} }}",
                long("t", 64),
                long("a", 64)
            )
            .parse()
            .unwrap(),
        )
        .expect("at the caps")
        .manifest;
        assert_eq!(m["name"].as_str().unwrap().len(), 64);
        assert_eq!(m["capabilities"]["exec"][0].as_str().unwrap().len(), 255);
    }

    #[test]
    fn misuse_is_an_error_not_a_panic() {
        let cases = [
            ("", "mod t { /// d\n #[tool] pub fn a(x: &str) -> String { todo!() } }", "use `String`"),
            (
                "",
                "mod t { #[tool] pub fn a() -> String { todo!() } }",
                "has no description: write a doc comment",
            ),
            (
                "",
                "mod t { /// d\n #[tool(rest)] pub fn a(x: u32) -> String { todo!() } }",
                "must be a `String`",
            ),
            ("", "mod t { /// d\n #[tool(bogus)] pub fn a() -> String { todo!() } }", "unknown tool option"),
            (
                "",
                "mod t { /// d\n #[tool(output_limit = 0)] pub fn a() -> String { todo!() } }",
                "at least 1",
            ),
            (
                "",
                "mod t { /// d\n #[tool] pub fn a(x: Option<String>, y: String) -> String { todo!() } }",
                "cannot follow",
            ),
            ("", "mod t { fn helper() {} }", "declares no tools"),
            ("", "mod t { /// d\n #[tool] fn a() -> String { todo!() } }", "pub fn"),
            (
                "",
                "mod t { /// d\n /// - `nope`: x\n #[tool] pub fn a() -> String { todo!() } }",
                "does not have",
            ),
            (
                "bogus = 1",
                "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }",
                "unknown plugin option",
            ),
            (
                "fs = \"workspace:rwx\"",
                "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }",
                "NAME:ro",
            ),
            ("", "fn not_a_module() {}", "inline module"),
            (
                "exec = \"/bin/sh\"",
                "mod t { /// d\n #[tool] pub fn a() -> String { todo!() } }",
                "is not a program name such as \"git\" (no paths",
            ),
            (
                "",
                "mod t { /// d\n #[tool] #[cfg(test)] pub fn a() -> String { todo!() } }",
                "`#[cfg]` on a tool",
            ),
            (
                "",
                "mod t { /// d\n #[tool(name = \"a\")] pub fn a() -> String { todo!() }\n /// d\n #[tool(name = \"a\")] pub fn b() -> String { todo!() } }",
                "defined twice",
            ),
        ];
        for (attr, item, want) in cases {
            let err = expand_str(attr, item).expect_err(item);
            assert!(err.contains(want), "for {item}: expected {want:?} in {err:?}");
        }
    }

    #[test]
    fn a_default_makes_a_param_optional_and_reaches_the_manifest() {
        let m = manifest_of(
            "mod t { /// Convert.\n #[tool] pub fn convert(distance: f64, #[default = \"mi\"] to_unit: String, #[default = -2] digits: i64) -> String { todo!() } }",
        );
        let p = &m["tools"][0]["params"];
        assert_eq!(p[0]["type"], "number");
        assert_eq!((&p[1]["optional"], &p[1]["default"]), (&json!(true), &json!("mi")));
        assert_eq!((&p[2]["optional"], &p[2]["default"]), (&json!(true), &json!(-2)));
        // The body gets the value, not an Option: the dispatch applies the default.
        let code = expand_str(
            "name = \"demo\"",
            "mod t { /// C.\n #[tool] pub fn c(#[default = 3] n: i64) -> String { todo!() } }",
        )
        .unwrap();
        assert!(code.contains("unwrap_or_else (|| 3)"), "{code}");
        for (item, says) in [
            ("#[default = 3] n: Option<i64>", "has a default, so it is never missing"),
            ("#[default = 3] s: String", "is text (`String`), so its default is a string literal"),
            ("#[default = \"x\"] n: i64", "is a JSON parameter, so its default is a number or a bool"),
            ("#[default = [1]] n: Vec<i64>", "a default is a literal"),
        ] {
            let e = expand_str(
                "name = \"demo\"",
                &format!("mod t {{ /// C.\n #[tool] pub fn c({item}) -> String {{ todo!() }} }}"),
            )
            .unwrap_err();
            assert!(e.contains(says), "{item}: {e}");
        }
    }

    #[test]
    fn every_mistake_of_a_module_is_reported_at_once() {
        let e = derive(
            "name = \"demo\"".parse().unwrap(),
            "mod t { /// A.\n /// - `pth`: the path\n #[tool] pub fn a(path: String) -> String { todo!() }\n pub fn helper() {}\n #[tool] pub fn b(x: &str) -> String { todo!() } }"
                .parse()
                .unwrap(),
        )
        .err()
        .expect("refused");
        let all: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(
            all,
            [
                "the doc comment describes a parameter `pth` that this function does not have",
                "`pub fn helper` in a `#[toolhost_sdk::plugin]` module is not a tool: add `#[tool]` to make it one (or `#[resource]`, `#[resource_template]`, `#[prompt]`, `#[complete]`), or make it private (`fn`, or `pub(crate) fn`) if it is a helper",
                "tool `b` has no description: write a doc comment; its first paragraph is the description the model reads",
            ]
        );
    }
}

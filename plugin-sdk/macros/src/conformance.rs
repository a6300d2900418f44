//! The SDK conformance table (`tests/sdk-conformance/cases.json`), run against the macro.
//!
//! Each case becomes the `#[toolhost_sdk::plugin(...)]` arguments and a `mod` of `#[tool]`
//! functions as an author would write them (doc comments for descriptions, `Option<T>` for
//! optional params, `#[schema]` for schemas), followed by its `#[resource]`,
//! `#[resource_template]`, `#[prompt]` and `#[complete]` functions, and goes through
//! [`derive_in`], the derivation the macro expands, for a crate of the author's (see
//! [`author_crate`]). The manifest must equal the table's, or the error must carry the table's
//! message fragment. Spans are not checked here: they are the author's tokens, which the
//! compiler places. `calls` are not checked here either: the dispatch runs inside a component.

use super::{Package, derive_in};
use serde_json::Value;
use std::fmt::Write;

const LANG: &str = "rust";

/// The table's value with every `{"$repeat": [[piece, times], …]}` written out.
fn expand_repeats(v: &Value) -> Value {
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key("$repeat") => {
            let pieces = o["$repeat"].as_array().expect("$repeat takes a list");
            Value::String(
                pieces
                    .iter()
                    .map(|p| p[0].as_str().expect("piece").repeat(p[1].as_u64().expect("times") as usize))
                    .collect(),
            )
        }
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), expand_repeats(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(expand_repeats).collect()),
        other => other.clone(),
    }
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof",
    "unsized", "virtual", "yield",
];

/// A Rust literal for a table value given to an option (`danger = "yes"`, `output_limit = -5`).
fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => format!("{:?}", other.to_string()),
    }
}

/// The Rust type of a param of neutral type `ty`, or why Rust has none.
fn rust_type(ty: &str) -> Result<&'static str, String> {
    Ok(match ty {
        "string" => "String",
        "integer" => "i64",
        "number" => "f64",
        "boolean" => "bool",
        "array" => "Vec<serde_json::Value>",
        "object" => "std::collections::HashMap<String, serde_json::Value>",
        "any" => "serde_json::Value",
        other => return Err(format!("no Rust type for the param type {other:?}")),
    })
}

/// The `#[plugin(...)]` arguments of one case.
fn plugin_attr(case: &Value) -> String {
    let mut attr = Vec::new();
    let plugin = case["plugin"].as_object().cloned().unwrap_or_default();
    for (key, value) in &plugin {
        if key == "capabilities" {
            for (cap, entries) in value.as_object().expect("capabilities object") {
                let key = if cap == "secrets" { "secret" } else { cap.as_str() };
                for e in entries.as_array().expect("a list of requests") {
                    attr.push(format!("{key} = {}", literal(e)));
                }
            }
        } else {
            attr.push(format!("{key} = {}", literal(value)));
        }
    }
    attr.join(", ")
}

/// Whether `name` can be a Rust function's or parameter's name as it is written.
fn plain_ident(name: &str) -> bool {
    super::is_ident(name) && name != "_" && !KEYWORDS.contains(&name)
}

/// A declaration's function name: `name` when Rust can spell it (so the macro's own naming by
/// function is what is tested), else `{kind}_{i}` with `name = "…"` pushed onto `options`.
fn fn_name(name: &str, kind: &str, i: usize, options: &mut Vec<String>) -> String {
    if plain_ident(name) {
        return name.to_string();
    }
    options.push(format!("name = {name:?}"));
    format!("{kind}_{i}")
}

/// The doc comment an author writes: the description, then a ``- `x`: …`` line for each
/// described parameter (or prompt argument). An empty description and no lines: no comment.
fn doc_comment(module: &mut String, description: &str, described: &[(&str, &str)]) {
    if !description.is_empty() {
        writeln!(module, "    #[doc = {:?}]", format!(" {description}")).unwrap();
    }
    if !described.is_empty() {
        writeln!(module, "    #[doc = \"\"]").unwrap();
        for (name, text) in described {
            writeln!(module, "    #[doc = {:?}]", format!(" - `{name}`: {text}")).unwrap();
        }
    }
}

/// A parameter's name as Rust source (`r#type` for a keyword).
fn param_ident(name: &str) -> String {
    if KEYWORDS.contains(&name) { format!("r#{name}") } else { name.to_string() }
}

/// Refuse a declaration holding a key this runner does not know: the case says something it
/// would otherwise silently leave out.
fn known_keys(decl: &Value, what: &str, known: &[&str]) -> Result<(), String> {
    match decl.as_object().into_iter().flatten().find(|(k, _)| !known.contains(&k.as_str())) {
        Some((k, _)) => Err(format!("a {what} with the key {k:?}, which the Rust runner does not know")),
        None => Ok(()),
    }
}

/// One `#[tool]` function.
fn tool_fn(module: &mut String, i: usize, tool: &Value) -> Result<(), String> {
    let name = tool["name"].as_str().expect("tool name");
    let mut options = Vec::new();
    let fn_name = fn_name(name, "tool", i, &mut options);
    for (key, rust) in [
        ("rest", "rest"),
        ("danger", "danger"),
        ("readOnly", "read_only"),
        ("outputLimit", "output_limit"),
        ("category", "category"),
        ("timeoutMs", "timeout_ms"),
        ("taskSupport", "task_support"),
        ("title", "title"),
        ("idempotent", "idempotent"),
    ] {
        if let Some(v) = tool.get(key) {
            options.push(format!("{rust} = {}", literal(v)));
        }
    }
    // `icons` is a list; the macro takes one `icon = "…"` per icon.
    for icon in tool.get("icons").and_then(Value::as_array).into_iter().flatten() {
        options.push(format!("icon = {}", literal(icon)));
    }
    if let Some(schema) = tool.get("outputSchema") {
        options.push(format!("output_schema = {:?}", schema.to_string()));
    }
    for (key, v) in tool.get("options").and_then(Value::as_object).into_iter().flatten() {
        options.push(format!("{key} = {}", literal(v)));
    }
    let params = tool["params"].as_array().cloned().unwrap_or_default();
    let described: Vec<(&str, &str)> = params
        .iter()
        .filter_map(|p| Some((p["name"].as_str()?, p.get("description")?.as_str().expect("a description"))))
        .collect();
    doc_comment(module, tool["description"].as_str().unwrap_or_default(), &described);
    writeln!(module, "    #[tool({})]", options.join(", ")).unwrap();
    let mut args = Vec::new();
    for p in &params {
        let pname = param_ident(p["name"].as_str().expect("param name"));
        let (mut ty, attr) = match p.get("schema") {
            Some(schema) => {
                ("serde_json::Value".to_string(), format!("#[schema = {:?}] ", schema.to_string()))
            }
            None => (rust_type(p["type"].as_str().unwrap_or("string"))?.to_string(), String::new()),
        };
        // A default is `#[default = 10]`, applied by the dispatch: the param is not an Option.
        let attr = match p.get("default") {
            Some(d) => format!("{attr}#[default = {}] ", literal(d)),
            None => attr,
        };
        if p["optional"] == true && p.get("default").is_none() {
            ty = format!("Option<{ty}>");
        }
        args.push(format!("{attr}{pname}: {ty}"));
    }
    writeln!(module, "    pub fn {fn_name}({}) -> String {{ todo!() }}", args.join(", ")).unwrap();
    Ok(())
}

/// The options a resource and a template share (`uri`, `name`, `title`, `mime_type`).
fn resource_options(decl: &Value, uri_key: &str, kind: &str, i: usize) -> (Vec<String>, String) {
    let mut options = vec![format!("uri = {}", literal(&decl[uri_key]))];
    // Without a `name`, the function's name is the resource's: the macro's fallback.
    let fn_name = match decl["name"].as_str() {
        Some(name) => fn_name(name, kind, i, &mut options),
        None => format!("{kind}_{i}"),
    };
    for (key, rust) in [("title", "title"), ("mimeType", "mime_type"), ("size", "size")] {
        if let Some(v) = decl.get(key) {
            options.push(format!("{rust} = {}", literal(v)));
        }
    }
    (options, fn_name)
}

/// One `#[resource]` function: takes nothing, reads `"x"`.
fn resource_fn(module: &mut String, i: usize, decl: &Value) -> Result<(), String> {
    known_keys(decl, "resource", &["uri", "name", "title", "description", "mimeType", "size"])?;
    let (options, fn_name) = resource_options(decl, "uri", "resource", i);
    doc_comment(module, decl["description"].as_str().unwrap_or_default(), &[]);
    writeln!(module, "    #[resource({})]", options.join(", ")).unwrap();
    writeln!(module, "    pub fn {fn_name}() -> &'static str {{ \"x\" }}").unwrap();
    Ok(())
}

/// The variables of a URI template, in order, read as an author reads them (`{name}`,
/// `{+name}`): even a template the macro refuses gets the function its author would write.
fn template_variables(template: &str) -> Vec<&str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(inner, _)| inner.trim_start_matches('+')))
        .collect()
}

/// One `#[resource_template]` function: takes the variables as `String`s, reads `"x"`.
fn template_fn(module: &mut String, i: usize, decl: &Value) -> Result<(), String> {
    known_keys(decl, "resource template", &["uriTemplate", "name", "title", "description", "mimeType"])?;
    let (options, fn_name) = resource_options(decl, "uriTemplate", "template", i);
    let uri = decl["uriTemplate"].as_str().expect("uriTemplate");
    let vars: Vec<String> =
        template_variables(uri).into_iter().map(|v| format!("{}: String", param_ident(v))).collect();
    doc_comment(module, decl["description"].as_str().unwrap_or_default(), &[]);
    writeln!(module, "    #[resource_template({})]", options.join(", ")).unwrap();
    writeln!(module, "    pub fn {fn_name}({}) -> &'static str {{ \"x\" }}", vars.join(", ")).unwrap();
    Ok(())
}

/// One `#[prompt]` function: its arguments are its parameters (`String` required,
/// `Option<String>` optional), described in the doc comment; it returns one user message.
fn prompt_fn(module: &mut String, i: usize, decl: &Value) -> Result<(), String> {
    known_keys(decl, "prompt", &["name", "title", "description", "arguments"])?;
    let mut options = Vec::new();
    let fn_name = fn_name(decl["name"].as_str().expect("prompt name"), "prompt", i, &mut options);
    if let Some(title) = decl.get("title") {
        options.push(format!("title = {}", literal(title)));
    }
    let arguments = decl["arguments"].as_array().cloned().unwrap_or_default();
    let mut described = Vec::new();
    let mut params = Vec::new();
    for a in &arguments {
        known_keys(a, "prompt argument", &["name", "description", "optional"])?;
        let name = a["name"].as_str().expect("argument name");
        if let Some(text) = a.get("description") {
            described.push((name, text.as_str().expect("a description")));
        }
        let ty = if a["optional"] == true { "Option<String>" } else { "String" };
        params.push(format!("{}: {ty}", param_ident(name)));
    }
    doc_comment(module, decl["description"].as_str().unwrap_or_default(), &described);
    writeln!(module, "    #[prompt({})]", options.join(", ")).unwrap();
    writeln!(
        module,
        "    pub fn {fn_name}({}) -> Vec<toolhost_sdk::prompt::Message> {{ vec![toolhost_sdk::prompt::user(\"x\")] }}",
        params.join(", ")
    )
    .unwrap();
    Ok(())
}

/// One `#[complete]` function, of a prompt's argument or a template's variable: it returns
/// the value typed.
fn completion_fn(module: &mut String, i: usize, decl: &Value) -> Result<(), String> {
    known_keys(decl, "completion", &["prompt", "template", "argument"])?;
    let of = match (decl.get("prompt"), decl.get("template")) {
        (Some(p), None) => format!("prompt = {}", literal(p)),
        (None, Some(t)) => format!("template = {}", literal(t)),
        _ => return Err("a completion names exactly one of `prompt` and `template`".into()),
    };
    let argument = literal(&decl["argument"]);
    writeln!(module, "    #[complete({of}, argument = {argument})]").unwrap();
    writeln!(
        module,
        "    pub fn complete_{i}(value: String) -> Result<Vec<String>, String> {{ Ok(vec![value]) }}"
    )
    .unwrap();
    Ok(())
}

/// What builds the functions of each list of a case, in the order an author would write them.
type Builder = fn(&mut String, usize, &Value) -> Result<(), String>;
const DECLARATIONS: &[(&str, Builder)] = &[
    ("tools", tool_fn),
    ("resources", resource_fn),
    ("resourceTemplates", template_fn),
    ("prompts", prompt_fn),
    ("completions", completion_fn),
];

/// The `#[plugin(...)]` arguments and the module of one case.
fn source(case: &Value) -> Result<(String, String), String> {
    let mut module = String::from("mod plugin_tools {\n");
    for (list, build) in DECLARATIONS {
        for (i, decl) in case[*list].as_array().into_iter().flatten().enumerate() {
            build(&mut module, i, decl)?;
        }
    }
    module.push('}');
    Ok((plugin_attr(case), module))
}

/// The crate a case's plugin is written in, as `cargo new` makes it: a name and a version
/// (so the cases that leave those out are skipped for Rust), and no description, so a plugin
/// without one falls back to none rather than to this macro crate's own.
fn author_crate() -> Package {
    let from_env = Package::from_env();
    Package { description: String::new(), ..from_env }
}

#[test]
fn the_conformance_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/sdk-conformance/cases.json");
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read cases.json")).unwrap();
    let mut failures = Vec::new();
    let (mut ran, mut skipped) = (0, 0);
    for raw in table["cases"].as_array().expect("cases") {
        let case = expand_repeats(raw);
        let id = case["id"].as_str().unwrap();
        if case["skip"].get(LANG).is_some() {
            skipped += 1;
            continue;
        }
        ran += 1;
        let (attr, module) = match source(&case) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{id}: cannot express the case ({e}) and it has no `skip.rust`"));
                continue;
            }
        };
        let listing = format!("#[toolhost_sdk::plugin({attr})]\n{module}");
        let derived = derive_in(
            &author_crate(),
            attr.parse().expect("attr tokens"),
            module.parse().expect("module tokens"),
        );
        match (derived, case.get("manifest"), case.get("error")) {
            (Ok(d), Some(want), _) if &d.manifest == want => {}
            (Ok(d), Some(want), _) => failures.push(format!(
                "{id}: the manifest differs\n  expected {want}\n  derived  {}\n{listing}",
                d.manifest
            )),
            (Err(e), Some(_), _) => failures.push(format!("{id}: refused: {e}\n{listing}")),
            (Ok(d), None, _) => {
                failures.push(format!("{id}: expected an error, derived {}\n{listing}", d.manifest))
            }
            (Err(e), None, Some(want)) => {
                let fragment = want["message"].as_str().unwrap();
                if !e.to_string().contains(fragment) {
                    failures.push(format!(
                        "{id}: rule {}: {fragment:?} not in {:?}\n{listing}",
                        want["rule"],
                        e.to_string()
                    ));
                }
            }
            (Err(_), None, None) => failures.push(format!("{id}: the case has neither manifest nor error")),
        }
    }
    assert!(ran >= 60 && skipped < 10, "ran {ran} cases, skipped {skipped}: is the table whole?");
    assert!(failures.is_empty(), "{} of {ran} cases failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

//! The SDK conformance table (`tests/sdk-conformance/cases.json`), run against the macro.
//!
//! Each case becomes the `#[toolhost_sdk::plugin(...)]` arguments and a `mod` of `#[tool]`
//! functions as an author would write them (doc comments for descriptions, `Option<T>` for
//! optional params, `#[schema]` for schemas), and goes through [`derive`], the derivation the
//! macro expands. The manifest must equal the table's, or the error must carry the table's
//! message fragment. Spans are not checked here: they are the author's tokens, which the
//! compiler places. `calls` are not checked here either: the dispatch runs inside a component.

use super::derive;
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

/// The `#[plugin(...)]` arguments and the module of one case.
fn source(case: &Value) -> Result<(String, String), String> {
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
    let mut module = String::from("mod plugin_tools {\n");
    for (i, tool) in case["tools"].as_array().into_iter().flatten().enumerate() {
        let name = tool["name"].as_str().expect("tool name");
        let mut options = Vec::new();
        let fn_name = if super::is_ident(name) && name != "_" && !KEYWORDS.contains(&name) {
            name.to_string()
        } else {
            options.push(format!("name = {name:?}"));
            format!("tool_{i}")
        };
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
        let description = tool["description"].as_str().unwrap_or_default();
        if !description.is_empty() {
            writeln!(module, "    #[doc = {:?}]", format!(" {description}")).unwrap();
        }
        let described: Vec<&Value> = params.iter().filter(|p| p.get("description").is_some()).collect();
        if !described.is_empty() {
            writeln!(module, "    #[doc = \"\"]").unwrap();
            for p in described {
                let line =
                    format!(" - `{}`: {}", p["name"].as_str().unwrap(), p["description"].as_str().unwrap());
                writeln!(module, "    #[doc = {line:?}]").unwrap();
            }
        }
        writeln!(module, "    #[tool({})]", options.join(", ")).unwrap();
        let mut args = Vec::new();
        for p in &params {
            let pname = p["name"].as_str().expect("param name");
            let pname = if KEYWORDS.contains(&pname) { format!("r#{pname}") } else { pname.to_string() };
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
    }
    module.push('}');
    Ok((attr.join(", "), module))
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
        let derived = derive(attr.parse().expect("attr tokens"), module.parse().expect("module tokens"));
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

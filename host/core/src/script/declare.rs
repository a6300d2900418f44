//! The `tools` a script can call, declared as TypeScript for the model: one method per tool,
//! its parameters typed and documented. Cut to a byte budget: first the parameters' docs go,
//! then whole tools (the declaration says how many are left out).

use std::fmt::Write;
use toolhost_spec::manifest::{ParamSpec, ToolSpec};

/// The declaration of `tools` for these tools, at most `budget` bytes (about).
pub fn declarations<'a>(tools: impl Iterator<Item = &'a ToolSpec>, budget: usize) -> String {
    let tools: Vec<&ToolSpec> = tools.collect();
    let full: Vec<String> = tools.iter().map(|t| method(t, true)).collect();
    let short: Vec<String> = tools.iter().map(|t| method(t, false)).collect();
    let head = "declare const tools: {\n";
    let tail = "};";
    let size = |ms: &[String]| head.len() + tail.len() + ms.iter().map(String::len).sum::<usize>();
    if size(&full) <= budget {
        return format!("{head}{}{tail}", full.concat());
    }
    let mut out = String::from(head);
    let mut used = size(&[]) + 80;
    let mut shown = 0;
    for m in &short {
        if used + m.len() > budget {
            break;
        }
        used += m.len();
        out.push_str(m);
        shown += 1;
    }
    if shown < short.len() {
        let _ = writeln!(out, "  // … and {} more tools, called the same way", short.len() - shown);
    }
    out.push_str(tail);
    out
}

/// One tool as a method of `tools`: `name(args: {…}): Promise<…>;`, with its docs.
fn method(tool: &ToolSpec, docs: bool) -> String {
    let mut out = String::new();
    let summary = tool.description.lines().next().unwrap_or_default().trim();
    if docs && !summary.is_empty() {
        let _ = writeln!(out, "  /** {} */", comment(summary));
    }
    let key = if is_identifier(&tool.name) { tool.name.clone() } else { format!("{:?}", tool.name) };
    let _ = write!(out, "  {key}(args: {{");
    for (i, p) in tool.params.iter().enumerate() {
        if i > 0 {
            out.push(';');
        }
        if docs && !p.description.is_empty() {
            let _ = write!(out, " /** {} */", comment(&p.description));
        }
        let _ = write!(out, " {}{}: {}", param_key(&p.name), if p.optional { "?" } else { "" }, ts_type(p));
    }
    let result = if tool.output_schema.is_some() { "object" } else { "unknown" };
    let _ = writeln!(out, "{}}}): Promise<{result}>;", if tool.params.is_empty() { "" } else { " " });
    out
}

/// A parameter's type in TypeScript, from its JSON Schema type.
fn ts_type(p: &ParamSpec) -> String {
    let ty = match &p.ty {
        serde_json::Value::String(s) => s.as_str(),
        serde_json::Value::Object(o) => {
            if let Some(values) = o.get("enum").and_then(|e| e.as_array()) {
                let parts: Vec<String> = values.iter().map(|v| v.to_string()).collect();
                if !parts.is_empty() {
                    return parts.join(" | ");
                }
            }
            o.get("type").and_then(|t| t.as_str()).unwrap_or("")
        }
        _ => "",
    };
    match ty {
        "string" => "string",
        "number" | "integer" => "number",
        "boolean" => "boolean",
        "array" => "unknown[]",
        "object" => "Record<string, unknown>",
        "null" => "null",
        _ => "unknown",
    }
    .to_string()
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn param_key(name: &str) -> String {
    if is_identifier(name) { name.to_string() } else { format!("{name:?}") }
}

/// Text safe inside a `/** … */` comment, on one line.
fn comment(text: &str) -> String {
    text.replace("*/", "* /").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, params: &[(&str, &str, bool)]) -> ToolSpec {
        let manifest = serde_json::json!({
            "name": name,
            "description": format!("Does {name}.\nMore lines."),
            "argCount": params.len(),
            "params": params.iter().map(|(n, t, o)| serde_json::json!({"name": n, "type": t, "description": format!("the {n}"), "optional": o})).collect::<Vec<_>>(),
        });
        serde_json::from_value(manifest).unwrap()
    }

    #[test]
    fn tools_are_declared_with_typed_documented_parameters() {
        let tools =
            [tool("read", &[("path", "string", false), ("limit", "integer", true)]), tool("a.b", &[])];
        let d = declarations(tools.iter(), 10_000);
        assert!(d.starts_with("declare const tools: {\n"), "{d}");
        assert!(d.contains("/** Does read. */"), "{d}");
        assert!(d.contains("read(args: { /** the path */ path: string; /** the limit */ limit?: number }): Promise<unknown>;"), "{d}");
        assert!(d.contains("\"a.b\"(args: {}): Promise<unknown>;"), "{d}");
        assert!(!d.contains("More lines"), "{d}");
    }

    #[test]
    fn a_large_catalog_is_cut_to_the_budget_and_says_so() {
        let tools: Vec<ToolSpec> =
            (0..200).map(|i| tool(&format!("tool{i}"), &[("x", "string", false)])).collect();
        let d = declarations(tools.iter(), 2000);
        assert!(d.len() <= 2100, "{}", d.len());
        assert!(!d.contains("/**"), "docs go first: {d}");
        assert!(d.contains("more tools, called the same way"), "{d}");
        assert!(d.contains("tool0(args: { x: string }): Promise<unknown>;"), "{d}");
    }
}

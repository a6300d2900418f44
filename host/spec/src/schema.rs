//! The JSON Schema of a tool's arguments, derived from its manifest entry: one property per
//! param, in the shape OpenAI function calling, MCP `inputSchema` and the catalog search's
//! results all use.

use crate::manifest::ToolSpec;
use serde_json::{Map, Value, json};

/// The JSON Schema of one param.
pub fn param_schema(spec: &ToolSpec, i: usize) -> Value {
    let p = &spec.params[i];
    let mut schema = match &p.ty {
        Value::String(t) => json!({ "type": t }),
        Value::Object(o) => Value::Object(o.clone()),
        _ => json!({}),
    };
    if let Value::Object(o) = &mut schema {
        if !p.description.is_empty() && !o.contains_key("description") {
            o.insert("description".into(), json!(p.description));
        }
        if let Some(default) = &p.default {
            o.insert("default".into(), default.clone());
        }
        if spec.rest && i + 1 == spec.params.len() {
            let d = o.get("description").and_then(Value::as_str).unwrap_or("").to_string();
            let note = "May contain commas.";
            o.insert(
                "description".into(),
                json!(if d.is_empty() { note.to_string() } else { format!("{d} ({note})") }),
            );
        }
    }
    schema
}

/// The `parameters` object of a tool: an object schema with one property per param.
pub fn parameters(spec: &ToolSpec) -> Value {
    Value::Object(input_schema(spec))
}

/// [`parameters`] as the map MCP's `inputSchema` holds.
pub fn input_schema(spec: &ToolSpec) -> Map<String, Value> {
    let mut props = Map::new();
    for (i, p) in spec.params.iter().enumerate() {
        props.insert(p.name.clone(), param_schema(spec, i));
    }
    let required: Vec<Value> =
        spec.params.iter().filter(|p| !p.optional).map(|p| Value::from(p.name.as_str())).collect();
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(props));
    schema.insert("required".into(), Value::Array(required));
    schema.insert("additionalProperties".into(), false.into());
    schema
}

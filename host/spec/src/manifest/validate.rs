//! A parsed manifest held to the rules, one function per concern (the plugin's own fields, its
//! requests, each tool's names and texts, icons, call shape, output schema, params, rest param).
//! The checks run in the order a reader meets the fields, and the first problem is the error,
//! naming its field: keep that order when adding a rule (the error a manifest gets is part of
//! what a plugin author sees).

use super::rules::{
    JSON_TYPES, MAX_NAME, Text, icon_problem, is_exec_request, is_icon_size, is_plugin_name, is_tool_name,
    schema_too_large, text_problem, type_name, type_phrase, value_has_type, value_kind,
};
use super::{
    Capabilities, MAX_ICONS, MAX_LABEL, MAX_PARAM_DESCRIPTION, MAX_PLUGIN_DESCRIPTION, MAX_SCHEMA_BYTES,
    MAX_TIMEOUT_MS, MAX_TITLE, MAX_TOOL_DESCRIPTION, Manifest, ManifestError, ParamSpec, ToolSpec, field,
};
use serde_json::Value;
use std::collections::BTreeSet;

/// Whether [`validate`] compiles each `outputSchema` to prove it a JSON Schema (the first
/// compilation in a process also builds the meta-schemas: about 0.3 ms).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Compile {
    Schemas,
    /// The manifest passed with [`Compile::Schemas`] in this host version before (the folder
    /// index's copy): the schema is the same text, and the tool's first result compiles it.
    Skip,
}

pub(super) fn validate(m: &Manifest, compile: Compile) -> Result<(), ManifestError> {
    plugin_fields(m)?;
    requests(&m.capabilities)?;
    if m.tools.is_empty() {
        return Err(field("tools", "declares no tools"));
    }
    let mut names = BTreeSet::new();
    for (t, tool) in m.tools.iter().enumerate() {
        tool_names_and_texts(t, tool, &mut names)?;
        icons(t, tool)?;
        call_shape(t, tool)?;
        if let Some(schema) = &tool.output_schema {
            check_schema_size(format!("tools[{t}].outputSchema"), schema)?;
            check_output_schema(format!("tools[{t}].outputSchema"), schema, compile)?;
        }
        params(t, tool)?;
        rest(t, tool)?;
    }
    super::resources::check(&m.resources, &m.resource_templates).map_err(|(at, why)| field(at, why))?;
    super::prompts::check(&m.prompts).map_err(|(at, why)| field(at, why))
}

/// The plugin's name, version and description.
fn plugin_fields(m: &Manifest) -> Result<(), ManifestError> {
    if !is_plugin_name(&m.name) {
        return Err(field(
            "name",
            format!("{:?} must match [A-Za-z_][A-Za-z0-9_-]* (at most {MAX_NAME} chars)", m.name),
        ));
    }
    if m.version.trim().is_empty() {
        return Err(field("version", "must not be empty"));
    }
    check_text("version", &m.version, MAX_LABEL, Text::Line)?;
    check_text("description", &m.description, MAX_PLUGIN_DESCRIPTION, Text::Description)
}

/// What the plugin asks for: directories by a non-empty name, environment variable names,
/// program names, key-value bucket names.
fn requests(caps: &Capabilities) -> Result<(), ManifestError> {
    for (i, f) in caps.fs.iter().enumerate() {
        if f.path.trim().is_empty() {
            return Err(field(format!("capabilities.fs[{i}].path"), "must not be empty"));
        }
    }
    for (i, e) in caps.env.iter().enumerate() {
        if !crate::env_name::is_valid(e) {
            return Err(field(
                format!("capabilities.env[{i}]"),
                format!("{e:?} is not an environment variable name"),
            ));
        }
    }
    for (i, e) in caps.exec.iter().enumerate() {
        if !is_exec_request(e) {
            return Err(field(
                format!("capabilities.exec[{i}]"),
                format!(
                    "{e:?} is not a program name (no paths: the operator decides where `git` is; `*` asks for whatever the operator grants)"
                ),
            ));
        }
    }
    for (i, b) in caps.kv.iter().enumerate() {
        if !super::rules::is_bucket_name(b) {
            return Err(field(
                format!("capabilities.kv[{i}]"),
                format!("{b:?} {}", super::rules::BUCKET_RULE),
            ));
        }
    }
    Ok(())
}

/// Tool `t`'s name (once in the plugin: `names` holds those seen before), description,
/// category and title.
fn tool_names_and_texts<'a>(
    t: usize,
    tool: &'a ToolSpec,
    names: &mut BTreeSet<&'a str>,
) -> Result<(), ManifestError> {
    let at = |f: &str| format!("tools[{t}].{f}");
    if !is_tool_name(&tool.name) {
        return Err(field(
            at("name"),
            format!("{:?} must match [A-Za-z_][A-Za-z0-9_]* (at most {MAX_NAME} chars)", tool.name),
        ));
    }
    if !names.insert(tool.name.as_str()) {
        return Err(field(at("name"), format!("tool `{}` is declared twice", tool.name)));
    }
    if tool.description.trim().is_empty() {
        return Err(field(
            at("description"),
            format!("tool `{}` has no description; the model needs one", tool.name),
        ));
    }
    check_text(at("description"), &tool.description, MAX_TOOL_DESCRIPTION, Text::Description)?;
    if let Some(category) = &tool.category {
        check_text(at("category"), category, MAX_LABEL, Text::Line)?;
    }
    if let Some(title) = &tool.title {
        if title.trim().is_empty() {
            return Err(field(at("title"), "must not be empty"));
        }
        check_text(at("title"), title, MAX_TITLE, Text::Line)?;
    }
    Ok(())
}

/// Tool `t`'s icons: how many, each one's `src` ([`icon_problem`]), sizes and theme.
fn icons(t: usize, tool: &ToolSpec) -> Result<(), ManifestError> {
    if tool.icons.len() > MAX_ICONS {
        return Err(field(
            format!("tools[{t}].icons"),
            format!("has {} icons; at most {MAX_ICONS} are allowed", tool.icons.len()),
        ));
    }
    for (i, icon) in tool.icons.iter().enumerate() {
        if let Some(problem) = icon_problem(&icon.src) {
            return Err(field(format!("tools[{t}].icons[{i}].src"), problem));
        }
        for (j, size) in icon.sizes.iter().enumerate() {
            if !is_icon_size(size) {
                return Err(field(
                    format!("tools[{t}].icons[{i}].sizes[{j}]"),
                    format!("{size:?} is not WIDTHxHEIGHT (48x48) or `any`"),
                ));
            }
        }
        if let Some(theme) = &icon.theme
            && theme != "light"
            && theme != "dark"
        {
            return Err(field(
                format!("tools[{t}].icons[{i}].theme"),
                format!("{theme:?} is neither `light` nor `dark`"),
            ));
        }
    }
    Ok(())
}

/// Tool `t`'s call shape and limits: `argCount` and `parseJson` agree with the params,
/// `outputLimit` and `timeoutMs` in range.
fn call_shape(t: usize, tool: &ToolSpec) -> Result<(), ManifestError> {
    let at = |f: &str| format!("tools[{t}].{f}");
    if tool.arg_count != tool.params.len() {
        return Err(field(
            at("argCount"),
            format!("is {} but {} params are declared", tool.arg_count, tool.params.len()),
        ));
    }
    if !tool.parse_json.is_empty() && tool.parse_json.len() != tool.params.len() {
        return Err(field(
            at("parseJson"),
            format!("has {} flags but {} params are declared", tool.parse_json.len(), tool.params.len()),
        ));
    }
    if tool.output_limit == Some(0) {
        return Err(field(at("outputLimit"), "must be at least 1"));
    }
    if let Some(t) = tool.timeout_ms
        && !(1..=MAX_TIMEOUT_MS).contains(&t)
    {
        return Err(field(
            at("timeoutMs"),
            format!("must be a whole number of milliseconds from 1 to {MAX_TIMEOUT_MS} (a day), got {t}"),
        ));
    }
    Ok(())
}

/// An `outputSchema` (the manifest field `at`) must be a valid JSON Schema for an object (MCP's
/// `structuredContent` is always an object).
fn check_output_schema(at: String, schema: &Value, compile: Compile) -> Result<(), ManifestError> {
    let Value::Object(o) = schema else {
        return Err(field(at, format!("must be a JSON Schema object, got {schema}")));
    };
    if o.get("type") != Some(&Value::String("object".into())) {
        return Err(field(
            at,
            "must describe an object (`\"type\": \"object\"`): a structured result is a JSON object",
        ));
    }
    #[cfg(feature = "schema")]
    if compile == Compile::Schemas {
        jsonschema::validator_for(schema)
            .map(drop)
            .map_err(|e| field(at, format!("is not a valid JSON Schema: {e}")))?;
    }
    #[cfg(not(feature = "schema"))]
    let _ = compile;
    Ok(())
}

/// Tool `t`'s params: names (once each), descriptions, types, required before optional,
/// defaults, and a non-string type only on a JSON param.
fn params(t: usize, tool: &ToolSpec) -> Result<(), ManifestError> {
    let mut pnames = BTreeSet::new();
    let mut seen_optional = false;
    for (p, param) in tool.params.iter().enumerate() {
        let pat = |f: &str| format!("tools[{t}].params[{p}].{f}");
        if !is_tool_name(&param.name) {
            return Err(field(pat("name"), format!("{:?} must match [A-Za-z_][A-Za-z0-9_]*", param.name)));
        }
        if !pnames.insert(param.name.as_str()) {
            return Err(field(pat("name"), format!("param `{}` is declared twice", param.name)));
        }
        check_text(pat("description"), &param.description, MAX_PARAM_DESCRIPTION, Text::Description)?;
        param_type(pat("type"), param)?;
        if param.optional {
            seen_optional = true;
        } else if seen_optional {
            return Err(field(pat("optional"), "a required param cannot follow an optional one"));
        }
        if let Some(default) = &param.default {
            check_default(&pat("default"), tool, p, default)?;
        }
        // A text param is handed over verbatim; only JSON params may have non-string types.
        let is_string = param.ty == Value::String("string".into());
        if !tool.is_json(p) && !is_string {
            return Err(field(
                format!("tools[{t}].parseJson[{p}]"),
                format!("param `{}` has type {} but is not marked parseJson", param.name, param.ty),
            ));
        }
    }
    Ok(())
}

/// A param's `type` (the manifest field `at`): a JSON Schema type name, a schema object no
/// larger than [`MAX_SCHEMA_BYTES`], or `true`.
fn param_type(at: String, param: &ParamSpec) -> Result<(), ManifestError> {
    match &param.ty {
        Value::String(s) if JSON_TYPES.contains(&s.as_str()) => Ok(()),
        Value::String(s) => {
            Err(field(at, format!("{s:?} is not a JSON Schema type ({})", JSON_TYPES.join(", "))))
        }
        Value::Object(_) => check_schema_size(at, &param.ty),
        Value::Bool(true) => Ok(()),
        other => Err(field(at, format!("must be a type name or a schema object, got {other}"))),
    }
}

/// A param's `default`: only on an optional param, a string for a text param, of the param's
/// type for a JSON one, and no larger than a schema (`null` reads as no default).
fn check_default(at: &str, tool: &ToolSpec, p: usize, default: &Value) -> Result<(), ManifestError> {
    let param = &tool.params[p];
    if !param.optional {
        return Err(field(at, format!("param `{}` is required, so it cannot have a default", param.name)));
    }
    let t = if tool.is_json(p) { type_name(&param.ty).unwrap_or("") } else { "string" };
    if !value_has_type(t, default) {
        return Err(field(
            at,
            format!("must be {} like param `{}`, got {}", type_phrase(t), param.name, value_kind(default)),
        ));
    }
    check_schema_size(at, default)
}

/// Tool `t`'s rest param: the last one, neither JSON nor optional.
fn rest(t: usize, tool: &ToolSpec) -> Result<(), ManifestError> {
    if !tool.rest {
        return Ok(());
    }
    let at = format!("tools[{t}].rest");
    match tool.params.last() {
        None => Err(field(at, "is true but the tool has no params")),
        Some(last) if tool.is_json(tool.params.len() - 1) => {
            Err(field(at, format!("the rest param `{}` cannot be parseJson", last.name)))
        }
        Some(last) if last.optional => {
            Err(field(at, format!("the rest param `{}` cannot be optional", last.name)))
        }
        Some(_) => Ok(()),
    }
}

fn check_text(at: impl Into<String>, s: &str, max: usize, kind: Text) -> Result<(), ManifestError> {
    match text_problem(s, max, kind) {
        Some(problem) => Err(field(at, problem.to_string())),
        None => Ok(()),
    }
}

/// A schema object's size as compact JSON, against [`MAX_SCHEMA_BYTES`].
fn check_schema_size(at: impl Into<String>, schema: &Value) -> Result<(), ManifestError> {
    match schema_too_large(schema) {
        Some(n) => Err(field(at, format!("is {n} bytes of JSON; at most {MAX_SCHEMA_BYTES} are allowed"))),
        None => Ok(()),
    }
}

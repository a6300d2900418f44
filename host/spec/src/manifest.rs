//! The embedded manifest: found in a `.wasm` file's `toolhost-manifest` custom section (in the
//! component or any nested core module), parsed from JSON and validated strictly — all without
//! compiling or running the plugin.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use wasmparser::{Parser, Payload};

/// Name of the custom section that holds the manifest JSON.
pub const SECTION: &str = "toolhost-manifest";
/// Manifest format versions this host understands.
pub const FORMATS: &[u32] = &[1];

// Caps on the manifest's free text, checked at load. Descriptions reach the model (the `[TOOL]`
// prompt, the OpenAI `tools` array, MCP `tools/list`) and the operator's terminal, so a plugin
// must not be able to fill a prompt with megabytes or hide control characters in it. Lengths
// are in characters (Unicode scalar values: what Python's `len` and JavaScript's
// `[...s].length` count). The three SDKs check the same numbers when they build a manifest.

/// The plugin's `description`, in characters.
pub const MAX_PLUGIN_DESCRIPTION: usize = 1024;
/// A tool's `description`, in characters.
pub const MAX_TOOL_DESCRIPTION: usize = 4096;
/// A param's `description`, in characters.
pub const MAX_PARAM_DESCRIPTION: usize = 1024;
/// The plugin's `version` and a tool's `category`, in characters (one line each).
pub const MAX_LABEL: usize = 64;
/// A param's schema object (`type`) or a tool's `outputSchema`, as compact JSON, in bytes.
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// A tool's `title`, in characters (one line).
pub const MAX_TITLE: usize = 128;
/// Icons one tool may have.
pub const MAX_ICONS: usize = 4;
/// One icon's `src` (a `data:` URI), in bytes: about 6 KiB of image. Every `tools/list`
/// carries it, for every tool.
pub const MAX_ICON_BYTES: usize = 8 * 1024;
/// The image types an icon may be. SVG is not among them: an SVG image can carry script.
pub const ICON_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];

/// What went wrong reading a plugin's manifest. The file name is added by the caller.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ManifestError {
    #[error("not a WebAssembly file ({0})")]
    NotWasm(String),
    #[error(
        "is a core WebAssembly module, not a component: build it for `wasm32-wasip2` (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    #[error("is not valid WebAssembly: {0}")]
    Malformed(String),
    #[error(
        "has no `{SECTION}` custom section: build it with toolhost-sdk, or embed one with `toolhost embed-manifest`"
    )]
    Missing,
    #[error("has {0} `{SECTION}` sections; exactly one is allowed")]
    Duplicate(usize),
    #[error("manifest is not valid JSON: {0}")]
    Json(String),
    #[error("manifest field `{field}`: {message}")]
    Field { field: String, message: String },
}

/// Whether [`validate`] compiles each `outputSchema` to prove it a JSON Schema (the first
/// compilation in a process also builds the meta-schemas: about 0.3 ms).
#[derive(Clone, Copy, PartialEq)]
enum Compile {
    Schemas,
    /// The manifest passed with [`Compile::Schemas`] in this host version before (the folder
    /// index's copy): the schema is the same text, and the tool's first result compiles it.
    Skip,
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

fn field(field: impl Into<String>, message: impl Into<String>) -> ManifestError {
    ManifestError::Field { field: field.into(), message: message.into() }
}

/// A plugin's self-description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// Manifest format version.
    pub format: u32,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub capabilities: Capabilities,
    pub tools: Vec<ToolSpec>,
}

/// What a plugin asks the operator for. Only a request: the operator's grants decide.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Directories by logical name (`workspace` or a name the operator maps to a path).
    #[serde(default)]
    pub fs: Vec<FsRequest>,
    /// Environment variable names.
    #[serde(default)]
    pub env: Vec<String>,
    /// Network hosts (`example.com`, `*.example.com`).
    #[serde(default)]
    pub net: Vec<String>,
    /// Named secrets.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Programs to run through the host, by name (`git`), or `*` for any the operator grants;
    /// the operator maps each name to an executable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec: Vec<String>,
}

/// A filesystem request: a logical directory and an access mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsRequest {
    pub path: String,
    pub mode: FsMode,
}

/// Read-only or read-write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FsMode {
    #[serde(rename = "ro")]
    ReadOnly,
    #[serde(rename = "rw")]
    ReadWrite,
}

impl std::fmt::Display for FsMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FsMode::ReadOnly => "ro",
            FsMode::ReadWrite => "rw",
        })
    }
}

/// One tool, with the fields users of the original tool registry know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub params: Vec<ParamSpec>,
    pub arg_count: usize,
    /// Per param: the argument must be valid JSON. Empty means "none".
    #[serde(default)]
    pub parse_json: Vec<bool>,
    /// The last param takes all remaining args joined with `,`.
    #[serde(default)]
    pub rest: bool,
    /// Max characters of output handed back.
    #[serde(default)]
    pub output_limit: Option<usize>,
    #[serde(default)]
    pub danger: bool,
    /// The tool only reads (MCP `readOnlyHint`).
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub category: Option<String>,
    /// The JSON Schema of the tool's result (an object schema). A tool that declares one
    /// promises a JSON object matching it: the executor checks every result against it, and
    /// MCP advertises it as `outputSchema` and sends the result as `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The time limit the tool asks for (ms), e.g. longer than the host's default for a tool
    /// that hashes large files. Only a request: the host grants at most its
    /// `[limits] max_timeout_ms`, and the operator's `[plugin.X]`/`[tool.X] timeout_ms` win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Whether the tool may or must run as an MCP task (`forbidden` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// A human-readable name for people (MCP `title`); the tool's name when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Calling the tool again with the same arguments has no further effect (MCP
    /// `idempotentHint`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
    /// Icons for people (MCP `icons`): `data:` URIs only, so a client never fetches anything
    /// because of a plugin; see [`icon_problem`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}

/// A tool's icon: an image inlined as a `data:` URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Icon {
    /// `data:image/png;base64,…` (one of [`ICON_TYPES`]), at most [`MAX_ICON_BYTES`].
    pub src: String,
    /// `48x48`, `any`, …
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// `light` or `dark`: the theme the icon is drawn for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// The image type its `data:` URI declares (`image/png`).
    pub fn mime_type(&self) -> Option<&str> {
        self.src.strip_prefix("data:")?.split_once(';').map(|(t, _)| t)
    }
}

/// What is wrong with an icon's `src`, if anything: it must be a `data:` URI of one of
/// [`ICON_TYPES`], base64 encoded, at most [`MAX_ICON_BYTES`] long, whose bytes start the way
/// that image type starts (so a plugin cannot pass a page off as a picture).
pub fn icon_problem(src: &str) -> Option<String> {
    if src.len() > MAX_ICON_BYTES {
        return Some(format!("is {} bytes long; at most {MAX_ICON_BYTES} are allowed", src.len()));
    }
    let Some(rest) = src.strip_prefix("data:") else {
        return Some("must be a `data:` URI (data:image/png;base64,…): icons are never fetched".into());
    };
    let Some((mime, data)) = rest.split_once(";base64,") else {
        return Some("must be a base64 `data:` URI (data:image/png;base64,…)".into());
    };
    if !ICON_TYPES.contains(&mime) {
        return Some(format!("has the type {mime:?}; an icon is one of {}", ICON_TYPES.join(", ")));
    }
    let Some(bytes) = base64_prefix(data, 12) else {
        return Some("is not valid base64".into());
    };
    let magic: &[&[u8]] = match mime {
        "image/png" => &[b"\x89PNG\r\n\x1a\n"],
        "image/jpeg" => &[b"\xff\xd8\xff"],
        "image/gif" => &[b"GIF87a", b"GIF89a"],
        _ => &[b"RIFF"],
    };
    let webp_ok = mime != "image/webp" || bytes.get(8..12) == Some(b"WEBP".as_slice());
    if !magic.iter().any(|m| bytes.starts_with(m)) || !webp_ok {
        return Some(format!("does not hold {mime} data"));
    }
    None
}

/// Check `data` is well-formed base64 (standard alphabet, padded) and decode its first `n`
/// bytes.
fn base64_prefix(data: &str, n: usize) -> Option<Vec<u8>> {
    let b = data.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 {
        return None;
    }
    let body = &b[..b.len() - pad];
    if body.iter().any(|&c| value(c).is_none()) {
        return None;
    }
    let mut out = Vec::new();
    for chunk in body.chunks(4).take(n.div_ceil(3)) {
        let v: Vec<u32> = chunk.iter().map(|&c| u32::from(value(c).unwrap_or(0))).collect();
        let word = v.iter().enumerate().fold(0u32, |w, (i, x)| w | (x << (18 - 6 * i)));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((word >> (16 - 8 * i)) as u8);
        }
    }
    out.truncate(n);
    Some(out)
}

/// Whether a tool may run as an MCP task (a call answered at once with a task id, its result
/// fetched later), as in MCP's `execution.taskSupport`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Always answered directly (the default).
    #[default]
    Forbidden,
    /// Run as a task when the client can take one.
    Optional,
    /// Only ever run as a task: a client that cannot take one is refused.
    Required,
}

impl TaskSupport {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// The longest time limit a manifest may ask for (one day); the operator's
/// `[limits] max_timeout_ms` caps what is granted.
pub const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    pub name: String,
    /// A JSON Schema type name (`"string"`) or a whole schema object.
    #[serde(rename = "type")]
    pub ty: Value,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub optional: bool,
    /// What the tool uses when the argument is left off (an optional param only): shown to the
    /// model as the schema's `default` and in usage lines. A text param's default is a string;
    /// a JSON param's matches its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// The JSON Schema type a param's `type` names, when it names one (`"number"`, or an object
/// schema with `"type": "number"`).
pub fn type_name(ty: &Value) -> Option<&str> {
    match ty {
        Value::String(s) => Some(s),
        Value::Object(o) => o.get("type").and_then(Value::as_str),
        _ => None,
    }
}

/// Whether `v` is a value of the JSON Schema type `t` (an unknown type name accepts anything;
/// `number` accepts integers).
pub fn value_has_type(t: &str, v: &Value) -> bool {
    match t {
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        "string" => v.is_string(),
        _ => true,
    }
}

/// How a type is named in an argument error, the same words for every way in (CLI, `[TOOL]`,
/// OpenAI, MCP): `must be a number, got …`.
pub fn type_phrase(t: &str) -> &'static str {
    match t {
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "true or false",
        "array" => "an array",
        "object" => "an object",
        "null" => "null",
        "string" => "a string",
        _ => "JSON",
    }
}

/// What a JSON value is, in an argument error: `a string`, `a number`, …
pub fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl ToolSpec {
    /// Whether argument `i` must be JSON.
    pub fn is_json(&self, i: usize) -> bool {
        self.parse_json.get(i).copied().unwrap_or(false)
    }

    /// Number of params the caller must give.
    pub fn required_count(&self) -> usize {
        self.params.iter().filter(|p| !p.optional).count()
    }

    /// `name(path, content…, count: integer?)`: `?` on optional params, `…` on a rest param,
    /// and the type of a JSON param (`number`, `integer`, `boolean`; `json` for an array, an
    /// object or a schema).
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut s = p.name.clone();
                if self.is_json(i) {
                    s.push_str(": ");
                    s.push_str(match type_name(&p.ty) {
                        Some(t @ ("number" | "integer" | "boolean")) => t,
                        _ => "json",
                    });
                }
                if p.optional {
                    s.push('?');
                }
                if self.rest && i + 1 == self.params.len() {
                    s.push('…');
                }
                s
            })
            .collect();
        format!("{}({})", self.name, params.join(", "))
    }
}

/// Read the manifest section's bytes from a component without compiling it.
pub fn find_section(bytes: &[u8]) -> Result<Vec<u8>, ManifestError> {
    if bytes.len() < 8 || &bytes[0..4] != b"\0asm" {
        let hint = if bytes.starts_with(b"\x7fELF") {
            "an ELF file, perhaps a precompiled `.cwasm`; precompiled code is never loaded from the plugins folder"
        } else if bytes.is_empty() {
            "the file is empty"
        } else {
            "missing the `\\0asm` magic number"
        };
        return Err(ManifestError::NotWasm(hint.to_string()));
    }
    if !Parser::is_component(bytes) {
        return Err(ManifestError::CoreModule);
    }
    let mut found: Vec<Vec<u8>> = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| ManifestError::Malformed(e.to_string()))?;
        if let Payload::CustomSection(reader) = payload
            && reader.name() == SECTION
        {
            found.push(reader.data().to_vec());
        }
    }
    match found.len() {
        0 => Err(ManifestError::Missing),
        1 => Ok(found.pop().unwrap_or_default()),
        n => Err(ManifestError::Duplicate(n)),
    }
}

/// Parse and validate manifest JSON.
pub fn parse(json: &[u8]) -> Result<Manifest, ManifestError> {
    // Check the format version before the shape, so a future format reads as "unknown
    // version" rather than as a list of unknown fields.
    let raw: Value = serde_json::from_slice(json).map_err(|e| ManifestError::Json(e.to_string()))?;
    if !raw.is_object() {
        return Err(ManifestError::Json("the manifest must be a JSON object".into()));
    }
    match raw.get("format") {
        None => return Err(field("format", "missing")),
        Some(v) => match v.as_u64() {
            Some(n) if FORMATS.contains(&(n as u32)) && n <= u32::MAX as u64 => {}
            _ => {
                return Err(field(
                    "format",
                    format!("unknown format version {v}; this host reads {FORMATS:?}"),
                ));
            }
        },
    }
    let manifest: Manifest = serde_path_to_error::deserialize(raw).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        // serde reports a missing field at its parent: name the field itself.
        if let Some(name) = message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
            let full = if path == "." { name.to_string() } else { format!("{path}.{name}") };
            return field(full, "missing");
        }
        if path == "." { ManifestError::Json(message) } else { field(path, message) }
    })?;
    validate(&manifest, Compile::Schemas)?;
    Ok(manifest)
}

/// A manifest this host version has checked with [`parse`] before — the folder index's copy
/// of an unchanged file's (`registry::index`): read straight into its type and checked by the
/// same rules, except that no `outputSchema` is compiled again (the same text compiled then;
/// the tool's first result compiles it for use). Anything else (a copy that does not read)
/// goes through [`parse`], for its error.
pub fn parse_checked_before(json: &[u8]) -> Result<Manifest, ManifestError> {
    match serde_json::from_slice::<Manifest>(json) {
        Ok(manifest) if FORMATS.contains(&manifest.format) => {
            validate(&manifest, Compile::Skip)?;
            Ok(manifest)
        }
        _ => parse(json),
    }
}

/// Read, parse and validate the manifest of a component's bytes.
pub fn read(bytes: &[u8]) -> Result<Manifest, ManifestError> {
    parse(&find_section(bytes)?)
}

/// Read a manifest written by hand, as TOML (`.toml`) or JSON (anything else), with the same
/// fields and validation as an embedded one.
pub fn parse_file_text(text: &str, is_toml: bool) -> Result<Manifest, ManifestError> {
    if is_toml {
        let v: Value =
            toml::from_str(text).map_err(|e| ManifestError::Json(format!("not valid TOML: {e}")))?;
        parse(v.to_string().as_bytes())
    } else {
        parse(text.as_bytes())
    }
}

/// Append `manifest` as the `toolhost-manifest` section of a component that has none — for
/// components built without toolhost-sdk (componentize-py, componentize-js, TinyGo, …).
pub fn embed(component: &[u8], manifest: &Manifest) -> Result<Vec<u8>, ManifestError> {
    match find_section(component) {
        Err(ManifestError::Missing) => {}
        Ok(_) | Err(ManifestError::Duplicate(_)) => {
            return Err(ManifestError::Malformed(format!("it already has a `{SECTION}` section")));
        }
        Err(e) => return Err(e),
    }
    let json = serde_json::to_vec(manifest).map_err(|e| ManifestError::Json(e.to_string()))?;
    parse(&json)?;
    let mut out = component.to_vec();
    wasm_encoder::Section::append_to(
        &wasm_encoder::CustomSection { name: SECTION.into(), data: json.as_slice().into() },
        &mut out,
    );
    // Read it back the way the host will.
    let back = read(&out)?;
    if &back != manifest {
        return Err(ManifestError::Malformed("the embedded manifest does not read back identically".into()));
    }
    Ok(out)
}

/// The longest plugin, tool or param name (characters; all ASCII).
pub const MAX_NAME: usize = 64;
/// The longest program name an `exec` request may hold.
pub const MAX_PROGRAM: usize = 255;

/// `[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_NAME`]: the name the model writes (a tool's or a
/// param's).
pub fn is_tool_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && s.len() <= MAX_NAME
}

/// `[A-Za-z_][A-Za-z0-9_-]*`, at most [`MAX_NAME`]: a plugin's name (grants are keyed by it).
pub fn is_plugin_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c == '-' || c.is_ascii_alphanumeric())
        && s.len() <= MAX_NAME
}

/// Whether `e` is a program an `exec` request may name: a plain name (no path: the operator
/// decides which executable it runs), or `*` for whatever the operator grants.
pub fn is_exec_request(e: &str) -> bool {
    e == "*"
        || (!e.is_empty()
            && e.len() <= MAX_PROGRAM
            && e != "."
            && e != ".."
            && e.chars().all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c)))
}

/// `48x48` or `any`: an icon size.
fn is_icon_size(s: &str) -> bool {
    let digits = |d: &str| !d.is_empty() && d.len() <= 5 && d.bytes().all(|b| b.is_ascii_digit());
    s == "any" || s.split_once('x').is_some_and(|(w, h)| digits(w) && digits(h))
}

/// The JSON Schema type names a param's `type` may be.
pub const JSON_TYPES: &[&str] = &["string", "number", "integer", "boolean", "object", "array", "null"];

/// What a piece of free text may hold besides printable characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {
    /// One line: no control characters at all (`version`, `category`).
    Line,
    /// A description: tabs and line breaks are allowed (a hand-written manifest or a JavaScript
    /// template literal has them); the `[TOOL]` prompt folds them into one line.
    Description,
}

/// How one free-text field breaks the rules: longer than its cap in characters, or holding a
/// control character (C0, DEL, C1: terminal escapes, NUL, backspace and the like have no place
/// in text for a model; a description may hold tabs and line breaks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextProblem {
    TooLong { chars: usize, max: usize },
    Control { c: char, kind: Text },
}

impl TextProblem {
    /// What the rule is, after the text's length or character (shared by the host's and the
    /// SDKs' messages).
    pub fn rule(&self) -> &'static str {
        match self {
            TextProblem::TooLong { .. } => "",
            TextProblem::Control { kind: Text::Line, .. } => "it must be one line of printable text",
            TextProblem::Control { kind: Text::Description, .. } => {
                "only tabs and line breaks are allowed besides printable text"
            }
        }
    }
}

impl std::fmt::Display for TextProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TextProblem::TooLong { chars, max } => {
                write!(f, "is {chars} characters long; at most {max} are allowed")
            }
            TextProblem::Control { c, .. } => {
                write!(f, "contains the control character U+{:04X}; {}", u32::from(*c), self.rule())
            }
        }
    }
}

/// Whether a free-text field breaks the rules ([`TextProblem`]).
pub fn text_problem(s: &str, max: usize, kind: Text) -> Option<TextProblem> {
    // Bytes bound characters from above: most text is checked without counting.
    if s.len() > max {
        let n = s.chars().count();
        if n > max {
            return Some(TextProblem::TooLong { chars: n, max });
        }
    }
    let allowed = |c: char| kind == Text::Description && matches!(c, '\t' | '\n' | '\r');
    let c = s.chars().find(|&c| c.is_control() && !allowed(c))?;
    Some(TextProblem::Control { c, kind })
}

fn check_text(at: impl Into<String>, s: &str, max: usize, kind: Text) -> Result<(), ManifestError> {
    match text_problem(s, max, kind) {
        Some(problem) => Err(field(at, problem.to_string())),
        None => Ok(()),
    }
}

/// A schema's size in bytes of compact JSON, when it is larger than [`MAX_SCHEMA_BYTES`].
pub fn schema_too_large(schema: &Value) -> Option<usize> {
    let n = serde_json::to_string(schema).map_or(usize::MAX, |s| s.len());
    (n > MAX_SCHEMA_BYTES).then_some(n)
}

/// A schema object's size as compact JSON, against [`MAX_SCHEMA_BYTES`].
fn check_schema_size(at: impl Into<String>, schema: &Value) -> Result<(), ManifestError> {
    match schema_too_large(schema) {
        Some(n) => Err(field(at, format!("is {n} bytes of JSON; at most {MAX_SCHEMA_BYTES} are allowed"))),
        None => Ok(()),
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

fn validate(m: &Manifest, compile: Compile) -> Result<(), ManifestError> {
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
    check_text("description", &m.description, MAX_PLUGIN_DESCRIPTION, Text::Description)?;
    for (i, f) in m.capabilities.fs.iter().enumerate() {
        if f.path.trim().is_empty() {
            return Err(field(format!("capabilities.fs[{i}].path"), "must not be empty"));
        }
    }
    for (i, e) in m.capabilities.env.iter().enumerate() {
        if !crate::env_name::is_valid(e) {
            return Err(field(
                format!("capabilities.env[{i}]"),
                format!("{e:?} is not an environment variable name"),
            ));
        }
    }
    for (i, e) in m.capabilities.exec.iter().enumerate() {
        if !is_exec_request(e) {
            return Err(field(
                format!("capabilities.exec[{i}]"),
                format!(
                    "{e:?} is not a program name (no paths: the operator decides where `git` is; `*` asks for whatever the operator grants)"
                ),
            ));
        }
    }
    if m.tools.is_empty() {
        return Err(field("tools", "declares no tools"));
    }
    let mut names = BTreeSet::new();
    for (t, tool) in m.tools.iter().enumerate() {
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
        if tool.icons.len() > MAX_ICONS {
            return Err(field(
                at("icons"),
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
        if let Some(schema) = &tool.output_schema {
            check_schema_size(at("outputSchema"), schema)?;
            check_output_schema(at("outputSchema"), schema, compile)?;
        }
        let mut pnames = BTreeSet::new();
        let mut seen_optional = false;
        for (p, param) in tool.params.iter().enumerate() {
            let pat = |f: &str| format!("tools[{t}].params[{p}].{f}");
            if !is_tool_name(&param.name) {
                return Err(field(
                    pat("name"),
                    format!("{:?} must match [A-Za-z_][A-Za-z0-9_]*", param.name),
                ));
            }
            if !pnames.insert(param.name.as_str()) {
                return Err(field(pat("name"), format!("param `{}` is declared twice", param.name)));
            }
            check_text(pat("description"), &param.description, MAX_PARAM_DESCRIPTION, Text::Description)?;
            match &param.ty {
                Value::String(s) if JSON_TYPES.contains(&s.as_str()) => {}
                Value::String(s) => {
                    return Err(field(
                        pat("type"),
                        format!("{s:?} is not a JSON Schema type ({})", JSON_TYPES.join(", ")),
                    ));
                }
                Value::Object(_) => check_schema_size(pat("type"), &param.ty)?,
                Value::Bool(true) => {}
                other => {
                    return Err(field(
                        pat("type"),
                        format!("must be a type name or a schema object, got {other}"),
                    ));
                }
            }
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
        if tool.rest {
            match tool.params.last() {
                None => return Err(field(at("rest"), "is true but the tool has no params")),
                Some(last) if tool.is_json(tool.params.len() - 1) => {
                    return Err(field(
                        at("rest"),
                        format!("the rest param `{}` cannot be parseJson", last.name),
                    ));
                }
                Some(last) if last.optional => {
                    return Err(field(
                        at("rest"),
                        format!("the rest param `{}` cannot be optional", last.name),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Value {
        serde_json::json!({
            "format": 1, "name": "demo", "version": "0.1.0", "description": "d",
            "tools": [{
                "name": "copy", "description": "Copy a file.",
                "params": [
                    {"name": "from", "type": "string", "description": "", "optional": false},
                    {"name": "to", "type": "string"}
                ],
                "argCount": 2, "parseJson": [false, false]
            }]
        })
    }

    fn check(mutate: impl FnOnce(&mut Value)) -> Result<Manifest, ManifestError> {
        let mut v = base();
        mutate(&mut v);
        parse(v.to_string().as_bytes())
    }

    #[test]
    fn valid_manifest_parses() {
        let m = check(|_| {}).unwrap();
        assert_eq!(m.tools[0].signature(), "copy(from, to)");
        assert_eq!(m.tools[0].required_count(), 2);
    }

    #[test]
    fn an_output_schema_must_be_a_valid_object_schema() {
        let with = |schema: Value| check(|v| v["tools"][0]["outputSchema"] = schema);
        let m =
            with(serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}})).unwrap();
        assert!(m.tools[0].output_schema.is_some());
        assert!(check(|_| {}).unwrap().tools[0].output_schema.is_none());
        for (schema, says) in [
            (serde_json::json!({"type": "array"}), "must describe an object"),
            (serde_json::json!("object"), "must be a JSON Schema object"),
            (serde_json::json!({"type": "object", "minProperties": "two"}), "is not a valid JSON Schema"),
        ] {
            let e = with(schema).unwrap_err().to_string();
            assert!(e.contains("tools[0].outputSchema") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_manifest_checked_before_reads_the_same_and_still_keeps_the_rules() {
        let mut v = base();
        v["tools"][0]["outputSchema"] =
            serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let text = v.to_string();
        assert_eq!(parse_checked_before(text.as_bytes()).unwrap(), parse(text.as_bytes()).unwrap());
        // The rules still hold; only the schema's compilation is left to its first use.
        for (mutate, says) in [
            (
                Box::new(|v: &mut Value| v["tools"][0]["name"] = "no spaces".into())
                    as Box<dyn Fn(&mut Value)>,
                "tools[0].name",
            ),
            (
                Box::new(|v: &mut Value| {
                    v["tools"][0]["outputSchema"] = serde_json::json!({"type": "array"})
                }),
                "must describe an object",
            ),
            (Box::new(|v: &mut Value| v["format"] = 99.into()), "unknown format version"),
            (Box::new(|v: &mut Value| v["surprise"] = 1.into()), "surprise"),
        ] {
            let mut v = base();
            mutate(&mut v);
            let e = parse_checked_before(v.to_string().as_bytes()).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let mut v = base();
        v["tools"][0]["outputSchema"] = serde_json::json!({"type": "object", "minProperties": "two"});
        assert!(parse(v.to_string().as_bytes()).is_err());
        assert!(parse_checked_before(v.to_string().as_bytes()).is_ok(), "not compiled again");
    }

    #[test]
    fn caps_count_characters_not_bytes() {
        // 4096 two-byte characters: 8192 bytes, within the cap of 4096 characters.
        let m = check(|v| v["tools"][0]["description"] = "é".repeat(MAX_TOOL_DESCRIPTION).into()).unwrap();
        assert_eq!(m.tools[0].description.chars().count(), MAX_TOOL_DESCRIPTION);
        let e = check(|v| v["tools"][0]["description"] = "é".repeat(MAX_TOOL_DESCRIPTION + 1).into());
        assert!(e.unwrap_err().to_string().contains("is 4097 characters long"));
        // Line breaks and tabs in a description, none in a label.
        assert!(check(|v| v["tools"][0]["params"][0]["description"] = "a\n\tb\r\n".into()).is_ok());
        let e = check(|v| v["version"] = "1.0\t".into()).unwrap_err().to_string();
        assert!(e.contains("`version`") && e.contains("U+0009"), "{e}");
        let e = check(|v| v["tools"][0]["description"] = "a\u{7f}b".into()).unwrap_err().to_string();
        assert!(e.contains("U+007F"), "{e}");
    }

    /// A 1×1 PNG.
    const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    #[test]
    fn title_idempotent_and_icons_are_read_and_checked() {
        let m = check(|v| {
            v["tools"][0]["title"] = "Copy a file".into();
            v["tools"][0]["idempotent"] = true.into();
            v["tools"][0]["icons"] =
                serde_json::json!([{"src": PNG, "sizes": ["1x1", "any"], "theme": "dark"}]);
        })
        .unwrap();
        let t = &m.tools[0];
        assert_eq!((t.title.as_deref(), t.idempotent), (Some("Copy a file"), true));
        assert_eq!(t.icons[0].mime_type(), Some("image/png"));
        assert!(icon_problem(PNG).is_none());
        for (icon, says) in [
            ("https://example.com/i.png", "must be a `data:` URI"),
            ("data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=", "\"image/svg+xml\""),
            ("data:image/png,rawbytes", "base64 `data:` URI"),
            ("data:image/png;base64,iVBORw0KGgo*", "not valid base64"),
            ("data:image/png;base64,PGh0bWw+PC9odG1sPg==", "does not hold image/png data"),
            ("data:image/gif;base64,R0lGODlhAQABAAAAACw=", ""),
        ] {
            let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": icon}]));
            if says.is_empty() {
                assert!(e.is_ok(), "{icon}: {e:?}");
                continue;
            }
            let e = e.unwrap_err().to_string();
            assert!(e.contains("tools[0].icons[0].src") && e.contains(says), "{icon}: {e}");
        }
        let long = format!("{PNG}{}", "A".repeat(MAX_ICON_BYTES));
        let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": long}])).unwrap_err();
        assert!(e.to_string().contains("at most 8192"), "{e}");
        let e =
            check(|v| v["tools"][0]["icons"] = vec![serde_json::json!({"src": PNG}); 5].into()).unwrap_err();
        assert!(e.to_string().contains("has 5 icons"), "{e}");
        let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": PNG, "sizes": ["big"]}]));
        assert!(e.unwrap_err().to_string().contains("sizes[0]"));
        let e = check(|v| v["tools"][0]["icons"] = serde_json::json!([{"src": PNG, "theme": "blue"}]));
        assert!(e.unwrap_err().to_string().contains("theme"));
        let e = check(|v| v["tools"][0]["title"] = "two\nlines".into()).unwrap_err().to_string();
        assert!(e.contains("tools[0].title") && e.contains("U+000A"), "{e}");
        let e = check(|v| v["tools"][0]["title"] = " ".into()).unwrap_err().to_string();
        assert!(e.contains("tools[0].title") && e.contains("must not be empty"), "{e}");
        // Written back only when set: older manifests read back identically.
        let plain = serde_json::to_value(&check(|_| {}).unwrap().tools[0]).unwrap();
        assert!(
            plain.get("title").is_none() && plain.get("idempotent").is_none() && plain.get("icons").is_none()
        );
    }

    #[test]
    fn signature_marks_json_optional_and_rest() {
        let m = check(|v| {
            v["tools"][0]["params"][1]["optional"] = true.into();
            v["tools"][0]["params"][1]["type"] = "array".into();
            v["tools"][0]["parseJson"] = serde_json::json!([false, true]);
        })
        .unwrap();
        assert_eq!(m.tools[0].signature(), "copy(from, to: json?)");
    }

    #[test]
    fn signature_names_scalar_types() {
        let m = check(|v| {
            v["tools"][0]["params"][1]["optional"] = true.into();
            v["tools"][0]["params"][0]["type"] = "number".into();
            v["tools"][0]["params"][1]["type"] = serde_json::json!({"type": "boolean"});
            v["tools"][0]["parseJson"] = serde_json::json!([true, true]);
        })
        .unwrap();
        assert_eq!(m.tools[0].signature(), "copy(from: number, to: boolean?)");
    }

    #[test]
    fn a_default_is_only_for_an_optional_param_and_of_its_type() {
        let with = |default: Value, ty: &str, json: bool| {
            check(|v| {
                v["tools"][0]["params"][1]["optional"] = true.into();
                v["tools"][0]["params"][1]["type"] = ty.into();
                v["tools"][0]["params"][1]["default"] = default;
                v["tools"][0]["parseJson"] = serde_json::json!([false, json]);
            })
        };
        let m = with("mi".into(), "string", false).unwrap();
        assert_eq!(m.tools[0].params[1].default, Some(Value::from("mi")));
        assert!(with(2.5.into(), "number", true).is_ok());
        assert!(with(3.into(), "integer", true).is_ok());
        let e = with(5.into(), "string", false).unwrap_err().to_string();
        assert_eq!(
            e,
            "manifest field `tools[0].params[1].default`: must be a string like param `to`, got a number"
        );
        let e = with("x".into(), "number", true).unwrap_err().to_string();
        assert!(e.contains("must be a number like param `to`, got a string"), "{e}");
        // `null` reads as no default at all.
        assert_eq!(with(Value::Null, "string", false).unwrap().tools[0].params[1].default, None);
        let e = check(|v| v["tools"][0]["params"][0]["default"] = "a".into()).unwrap_err().to_string();
        assert!(e.contains("param `from` is required, so it cannot have a default"), "{e}");
        // Left out, it is not written: a manifest without defaults reads as before.
        let back = serde_json::to_value(check(|_| {}).unwrap()).unwrap();
        assert!(back["tools"][0]["params"][0].get("default").is_none());
    }

    #[test]
    fn non_wasm_inputs_are_named() {
        assert!(matches!(find_section(b""), Err(ManifestError::NotWasm(_))));
        assert!(
            matches!(find_section(b"\x7fELF\x02\x01\x01\0\0\0"), Err(ManifestError::NotWasm(m)) if m.contains("precompiled"))
        );
        // A core module header (version 1, layer 0).
        assert_eq!(find_section(b"\0asm\x01\0\0\0"), Err(ManifestError::CoreModule));
        // A component header with garbage after it.
        assert!(matches!(find_section(b"\0asm\x0d\0\x01\0\xff\xff"), Err(ManifestError::Malformed(_))));
        // A valid, empty component.
        assert_eq!(find_section(b"\0asm\x0d\0\x01\0"), Err(ManifestError::Missing));
    }
}

//! The rules a manifest is held to, public so that the SDK macro checks a plugin at compile time
//! with the host's own: names, program names, free text, schema sizes, icons, and the JSON types
//! of params and defaults.

use super::{ICON_TYPES, MAX_ICON_BYTES, MAX_SCHEMA_BYTES};
use serde_json::Value;

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

/// The longest key-value bucket name.
pub const MAX_BUCKET: usize = 64;

/// What a bucket name that is not one is told (the SDKs say the same).
pub const BUCKET_RULE: &str =
    "is not a bucket name (1–64 letters, digits, '_', '-' or '.', starting with a letter or digit)";

/// Whether `b` may name a key-value bucket (`capabilities.kv`, `[plugin.NAME] kv`, `open`): 1 to
/// [`MAX_BUCKET`] ASCII letters, digits, `_`, `-` or `.`, starting with a letter or digit.
pub fn is_bucket_name(b: &str) -> bool {
    b.len() <= MAX_BUCKET
        && b.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && b.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// `48x48` or `any`: an icon size.
pub(super) fn is_icon_size(s: &str) -> bool {
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

/// A schema's size in bytes of compact JSON, when it is larger than [`MAX_SCHEMA_BYTES`].
pub fn schema_too_large(schema: &Value) -> Option<usize> {
    let n = serde_json::to_string(schema).map_or(usize::MAX, |s| s.len());
    (n > MAX_SCHEMA_BYTES).then_some(n)
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

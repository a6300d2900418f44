//! Reading a manifest: its custom section found in a component's bytes (nested modules too, no
//! compilation), the JSON parsed strictly (the format version first), then validated; and a
//! manifest written by hand as TOML or JSON.

use super::validate::{Compile, validate};
use super::{FORMATS, Manifest, ManifestError, SECTION, field};
use serde_json::Value;

/// Read the manifest section's bytes from a component without compiling it.
pub fn find_section(bytes: &[u8]) -> Result<Vec<u8>, ManifestError> {
    let mut found = crate::sections::find_named(bytes, SECTION)?;
    match found.len() {
        0 => Err(ManifestError::Missing),
        1 => Ok(found.pop().unwrap_or_default().to_vec()),
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

//! Embedding a manifest into a component built without toolhost-sdk, read back the way the host
//! reads it.

use super::read::{find_section, parse, read};
use super::{Manifest, ManifestError, SECTION};

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

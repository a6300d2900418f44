//! A component's sections: a named custom section found anywhere in it ([`find_named`], the
//! manifest's and the skills' reader); and its top-level sections as bytes, without a
//! WebAssembly parser: what identifies its *code* (the bytes the engine compiles, toolhost's own
//! custom sections left out), and the marker of a `toolhost dev` build.
//!
//! toolhost appends its custom sections (`toolhost-manifest` by `embed`, `toolhost-signature`
//! by `sign`, `toolhost-dev` by `toolhost dev`) at the top level of a component. The engine
//! ignores custom sections when it compiles, so two files that differ only there compile to the
//! same code: the compile cache is keyed by [`code_sha256`], and `toolhost dev` can give a new
//! manifest to the same prebuilt runtime without the host compiling it again.

use serde::{Deserialize, Serialize};
use wasmparser::{Parser, Payload};

/// Why bytes are not a component whose sections can be read.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum NotComponent {
    /// Not WebAssembly at all (why, for people).
    #[error("not a WebAssembly file ({0})")]
    NotWasm(&'static str),
    /// A core module, not a component.
    #[error(
        "is a core WebAssembly module, not a component: build it for `wasm32-wasip2` (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    /// WebAssembly the parser cannot read.
    #[error("is not valid WebAssembly: {0}")]
    Malformed(String),
}

/// The contents of every custom section called `name` in a component, in the component itself
/// or in any module or component nested in it (the Rust SDK's sections live in its core
/// module), in file order. Nothing is compiled or validated beyond the section framing.
pub fn find_named<'a>(bytes: &'a [u8], name: &str) -> Result<Vec<&'a [u8]>, NotComponent> {
    if bytes.len() < 8 || &bytes[0..4] != b"\0asm" {
        return Err(NotComponent::NotWasm(if bytes.starts_with(b"\x7fELF") {
            "an ELF file, perhaps a precompiled `.cwasm`; precompiled code is never loaded from the plugins folder"
        } else if bytes.is_empty() {
            "the file is empty"
        } else {
            "missing the `\\0asm` magic number"
        }));
    }
    if !Parser::is_component(bytes) {
        return Err(NotComponent::CoreModule);
    }
    let mut found = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| NotComponent::Malformed(e.to_string()))?;
        if let Payload::CustomSection(reader) = payload
            && reader.name() == name
        {
            found.push(reader.data());
        }
    }
    Ok(found)
}

/// A section of toolhost's that is JSON with rules of its own (skills, apps): how it is named,
/// written, read back and refused, so that [`read_json_section`] and [`embed_json_section`]
/// are written once for all of them.
pub trait JsonSection: Sized + PartialEq {
    /// The custom section's name.
    const NAME: &'static str;
    type Error: From<NotComponent>;
    fn encode(&self) -> Vec<u8>;
    /// Decoded and checked by the section's rules.
    fn decode(bytes: &[u8]) -> Result<Self, Self::Error>;
    /// A component with `n` such sections (at most one is allowed).
    fn duplicate(n: usize) -> Self::Error;
    /// [`embed_json_section`] into a component that has one.
    fn already_embedded() -> Self::Error;
    /// [`embed_json_section`] read back something else.
    fn read_back() -> Self::Error;
}

/// The section `S` of a component (in it or in a module nested in it), decoded; `None` when it
/// has none.
pub fn read_json_section<S: JsonSection>(component: &[u8]) -> Result<Option<S>, S::Error> {
    let found = find_named(component, S::NAME)?;
    match found.as_slice() {
        [] => Ok(None),
        [one] => S::decode(one).map(Some),
        more => Err(S::duplicate(more.len())),
    }
}

/// Append `section` as a top-level custom section of a component that has none, and read it
/// back the way the host will.
pub fn embed_json_section<S: JsonSection>(component: &[u8], section: &S) -> Result<Vec<u8>, S::Error> {
    if read_json_section::<S>(component)?.is_some() {
        return Err(S::already_embedded());
    }
    let json = section.encode();
    S::decode(&json)?;
    let mut out = component.to_vec();
    wasm_encoder::Section::append_to(
        &wasm_encoder::CustomSection { name: S::NAME.into(), data: json.as_slice().into() },
        &mut out,
    );
    if read_json_section::<S>(&out)?.as_ref() != Some(section) {
        return Err(S::read_back());
    }
    Ok(out)
}

/// The prefix of toolhost's own custom sections.
pub const TOOLHOST_PREFIX: &str = "toolhost-";
/// The custom section that marks a `toolhost dev` build.
pub const DEV_SECTION: &str = "toolhost-dev";

/// One top-level section: its id, its name if it is a custom section (id 0), and where the
/// whole section (id, size and contents) lies in the bytes.
struct Section<'a> {
    name: Option<&'a [u8]>,
    range: std::ops::Range<usize>,
    contents: &'a [u8],
}

/// An unsigned LEB128 `u32` at `*at`, advancing past it.
fn leb_u32(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut value: u64 = 0;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return u32::try_from(value).ok();
        }
    }
    None
}

/// The top-level sections of a component (a `\0asm` header of version 0x0d, layer 1), or
/// `None` when the bytes are not one or a section runs past the end.
fn sections(bytes: &[u8]) -> Option<Vec<Section<'_>>> {
    if bytes.len() < 8 || &bytes[0..4] != b"\0asm" || bytes[6..8] != [1, 0] {
        return None;
    }
    let mut out = Vec::new();
    let mut at = 8;
    while at < bytes.len() {
        let start = at;
        let id = bytes[at];
        at += 1;
        let size = leb_u32(bytes, &mut at)? as usize;
        let end = at.checked_add(size).filter(|&e| e <= bytes.len())?;
        let contents = &bytes[at..end];
        let name = if id == 0 {
            let mut n = 0;
            let len = leb_u32(contents, &mut n)? as usize;
            Some(contents.get(n..n.checked_add(len)?)?)
        } else {
            None
        };
        let body = match name {
            Some(name) => {
                let mut n = 0;
                leb_u32(contents, &mut n)?;
                &contents[n + name.len()..]
            }
            None => contents,
        };
        out.push(Section { name, range: start..end, contents: body });
        at = end;
    }
    Some(out)
}

/// The SHA-256 of a component's code: its bytes without toolhost's own top-level custom
/// sections. `content` is the SHA-256 of all the bytes, returned as it is when there is nothing
/// to leave out (a Rust plugin keeps its manifest inside its core module) or the bytes are not
/// a component this reader understands.
pub fn code_sha256(bytes: &[u8], content: [u8; 32]) -> [u8; 32] {
    use sha2::Digest as _;
    let Some(sections) = sections(bytes) else { return content };
    let ours = |s: &Section| s.name.is_some_and(|n| n.starts_with(TOOLHOST_PREFIX.as_bytes()));
    if !sections.iter().any(ours) {
        return content;
    }
    let mut h = sha2::Sha256::new();
    h.update(&bytes[..8]);
    for s in sections.iter().filter(|s| !ours(s)) {
        h.update(&bytes[s.range.clone()]);
    }
    h.finalize().into()
}

/// What the `toolhost-dev` section of a `toolhost dev` build says: its code is a prebuilt
/// runtime, and the author's sources are in the plugins folder's `.toolhost-dev/NAME-SOURCES/`
/// (the host derives the folder from its own plugins folder and the plugin's name; the file
/// only picks which of that plugin's snapshots).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevMarker {
    /// The snapshot's id: 8 to 64 lower-case hex digits.
    pub sources: String,
}

impl DevMarker {
    /// The folder, relative to the plugins folder, holding the sources of plugin `name`.
    pub fn folder(&self, name: &str) -> String {
        format!(".toolhost-dev/{name}-{}", self.sources)
    }
}

/// The dev marker of a component, if it has one; an error when it is malformed or repeated.
pub fn dev_marker(bytes: &[u8]) -> Result<Option<DevMarker>, String> {
    let Some(sections) = sections(bytes) else { return Ok(None) };
    let mut found = sections.iter().filter(|s| s.name == Some(DEV_SECTION.as_bytes()));
    let Some(s) = found.next() else { return Ok(None) };
    if found.next().is_some() {
        return Err(format!("has more than one `{DEV_SECTION}` section"));
    }
    let m: DevMarker = serde_json::from_slice(s.contents)
        .map_err(|e| format!("its `{DEV_SECTION}` section is not valid: {e}"))?;
    let ok = (8..=64).contains(&m.sources.len())
        && m.sources.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !ok {
        return Err(format!(
            "its `{DEV_SECTION}` section names sources {:?}, not 8 to 64 hex digits",
            m.sources
        ));
    }
    Ok(Some(m))
}

/// Append a `toolhost-dev` section to a component.
pub fn embed_dev_marker(component: &[u8], marker: &DevMarker) -> Vec<u8> {
    let json = serde_json::to_vec(marker).unwrap_or_default();
    let mut out = component.to_vec();
    wasm_encoder::Section::append_to(
        &wasm_encoder::CustomSection { name: DEV_SECTION.into(), data: json.as_slice().into() },
        &mut out,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256;

    const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";

    fn with_custom(base: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
        let mut out = base.to_vec();
        wasm_encoder::Section::append_to(
            &wasm_encoder::CustomSection { name: name.into(), data: data.into() },
            &mut out,
        );
        out
    }

    #[test]
    fn the_code_digest_leaves_out_only_toolhost_sections() {
        let code = with_custom(EMPTY, "name", b"kept");
        let c = code_sha256(&code, sha256(&code));
        assert_eq!(c, sha256(&code), "nothing to leave out: the content digest");
        let a = with_custom(&code, "toolhost-manifest", b"{\"a\":1}");
        let b = with_custom(&with_custom(&code, "toolhost-manifest", b"{\"b\":2}"), DEV_SECTION, b"{}");
        assert_eq!(code_sha256(&a, sha256(&a)), code_sha256(&b, sha256(&b)));
        assert_eq!(code_sha256(&a, sha256(&a)), c, "the same code as without the sections");
        let other = with_custom(&with_custom(EMPTY, "name", b"other"), "toolhost-manifest", b"{}");
        assert_ne!(code_sha256(&other, sha256(&other)), c);
        // Not a component, or cut short: the content digest.
        for bad in [&b"nope"[..], &a[..a.len() - 1]] {
            assert_eq!(code_sha256(bad, [7; 32]), [7; 32]);
        }
    }

    #[test]
    fn a_dev_marker_reads_back_and_is_checked() {
        let m = DevMarker { sources: "0123abcd".into() };
        let bytes = embed_dev_marker(EMPTY, &m);
        assert_eq!(dev_marker(&bytes), Ok(Some(m.clone())));
        assert_eq!(m.folder("notes"), ".toolhost-dev/notes-0123abcd");
        assert_eq!(dev_marker(EMPTY), Ok(None));
        let twice = embed_dev_marker(&bytes, &m);
        assert!(dev_marker(&twice).unwrap_err().contains("more than one"));
        for bad in [r#"{"sources": "../../etc"}"#, r#"{"sources": "ABCDEF01"}"#, r#"{"x": 1}"#, "nope"] {
            let b = with_custom(EMPTY, DEV_SECTION, bad.as_bytes());
            assert!(dev_marker(&b).is_err(), "{bad}");
        }
    }
}

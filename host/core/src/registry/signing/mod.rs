//! Plugin signatures and the operator's trust policy.
//!
//! A signature travels inside the plugin file, as a top-level `toolhost-signature` custom
//! section appended at the end of the component. It holds an Ed25519 signature over
//!
//! ```text
//! "toolhost-signature-v1\0" ‖ SHA-256(the file with every toolhost-signature section removed)
//!                           ‖ SHA-256(the toolhost-manifest section's bytes)
//! ```
//!
//! so any change to the code or to the embedded manifest after signing is detected, and several
//! signatures can sit side by side (each one excludes the others). The operator lists trusted
//! public keys and whether a signature is required (`[trust]` in `toolhost.toml`); the host checks
//! the file before compiling it, at start-up and on every reload ([`check`]).
//!
//! Key formats (text, one line): public `toolhost-ed25519:BASE64 [comment]`, private
//! `toolhost-ed25519-secret:BASE64` (the 32-byte seed; the file is written with mode 0600).

mod keys;
mod trust;

pub use keys::{KeyError, PUBLIC_PREFIX, PublicKey, SECRET_PREFIX, SecretKey, keygen, public_path};
pub use trust::{
    RawTrust, RawTrustPlugin, SignerInfo, Trust, TrustError, TrustSettingsError, check, check_unsigned,
    describe,
};

use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toolhost_spec::manifest;
use wasmparser::{Chunk, Parser, Payload};

/// Name of the custom section that holds one signature.
pub const SECTION: &str = "toolhost-signature";
/// Domain separation: a toolhost signature can never be mistaken for another Ed25519 message.
const CONTEXT: &[u8] = b"toolhost-signature-v1\0";

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// The JSON inside a `toolhost-signature` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SignatureRecord {
    format: u32,
    algorithm: String,
    /// `toolhost-ed25519:BASE64`
    key: String,
    /// SHA-256 of the embedded manifest section, hex.
    manifest_sha256: String,
    /// Base64 of the 64-byte Ed25519 signature.
    signature: String,
}

/// Why a signed file does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("is not a component with a manifest ({0}); only plugins can be signed")]
    NotPlugin(String),
    #[error("has a malformed `{SECTION}` section: {0}")]
    Malformed(String),
    #[error("the embedded manifest was changed after it was signed by {0} (tampered?)")]
    ManifestChanged(String),
    #[error("signature by {0} does not match the file (tampered?)")]
    Mismatch(String),
}

/// Byte ranges of the top-level `toolhost-signature` sections (whole sections, header included).
/// Each signature section: its byte range in the file and its contents.
type Sections = Vec<(std::ops::Range<usize>, Vec<u8>)>;

fn signature_ranges(bytes: &[u8]) -> Result<Sections, SignatureError> {
    let malformed = |m: &str| SignatureError::Malformed(m.to_string());
    let mut parser = Parser::new(0);
    let mut offset = 0usize;
    let mut found = Vec::new();
    loop {
        let parsed = parser.parse(&bytes[offset..], true);
        let (consumed, payload) = match parsed.map_err(|e| SignatureError::Malformed(e.to_string()))? {
            Chunk::Parsed { consumed, payload } => (consumed, payload),
            Chunk::NeedMoreData(_) => return Err(malformed("the file ends in the middle of a section")),
        };
        let start = offset;
        offset += consumed;
        match payload {
            Payload::CustomSection(r) if r.name() == SECTION => {
                found.push((start..offset, r.data().to_vec()));
            }
            // Nested modules and components belong to their parent section: step over them
            // (signatures live at the top level only).
            Payload::ModuleSection { unchecked_range, .. }
            | Payload::ComponentSection { unchecked_range, .. } => {
                offset = unchecked_range.end;
                if offset > bytes.len() {
                    return Err(malformed("a nested module runs past the end of the file"));
                }
            }
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                offset += size as usize;
            }
            Payload::End(_) => break,
            _ => {}
        }
    }
    Ok(found)
}

/// The file without its signature sections.
fn strip(bytes: &[u8], ranges: &[std::ops::Range<usize>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for r in ranges {
        out.extend_from_slice(&bytes[at..r.start]);
        at = r.end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// What is signed, for the unsigned form of a file.
fn message(unsigned: &[u8]) -> Result<(Vec<u8>, [u8; 32]), SignatureError> {
    let section = manifest::find_section(unsigned).map_err(|e| SignatureError::NotPlugin(e.to_string()))?;
    let manifest_hash: [u8; 32] = Sha256::digest(&section).into();
    let mut msg = CONTEXT.to_vec();
    msg.extend_from_slice(&Sha256::digest(unsigned));
    msg.extend_from_slice(&manifest_hash);
    Ok((msg, manifest_hash))
}

/// Sign a plugin: returns the file with a signature section by `key` appended (an earlier
/// signature by the same key is replaced; signatures by other keys stay).
pub fn sign(bytes: &[u8], key: &SecretKey) -> Result<Vec<u8>, SignatureError> {
    let ranges = signature_ranges(bytes)?;
    let public = key.public("").encoded();
    let own: Vec<_> = ranges
        .iter()
        .filter(|(_, data)| serde_json::from_slice::<SignatureRecord>(data).is_ok_and(|r| r.key == public))
        .map(|(r, _)| r.clone())
        .collect();
    let all: Vec<_> = ranges.iter().map(|(r, _)| r.clone()).collect();
    let (msg, manifest_hash) = message(&strip(bytes, &all))?;
    manifest::read(bytes).map_err(|e| SignatureError::NotPlugin(e.to_string()))?;
    let record = SignatureRecord {
        format: 1,
        algorithm: "ed25519".into(),
        key: public,
        manifest_sha256: hex::encode(manifest_hash),
        signature: b64().encode(key.0.sign(&msg).to_bytes()),
    };
    let json = serde_json::to_vec(&record).map_err(|e| SignatureError::Malformed(e.to_string()))?;
    let mut out = strip(bytes, &own);
    wasm_encoder::Section::append_to(
        &wasm_encoder::CustomSection { name: SECTION.into(), data: json.as_slice().into() },
        &mut out,
    );
    Ok(out)
}

/// Verify every signature in a file. `Ok(vec![])` means unsigned; otherwise the signers, in
/// file order. Any signature that does not verify is an error: the file was changed.
pub fn verify(bytes: &[u8]) -> Result<Vec<PublicKey>, SignatureError> {
    let ranges = signature_ranges(bytes)?;
    if ranges.is_empty() {
        return Ok(Vec::new());
    }
    let all: Vec<_> = ranges.iter().map(|(r, _)| r.clone()).collect();
    let (msg, manifest_hash) = message(&strip(bytes, &all))?;
    let mut signers = Vec::new();
    for (_, data) in &ranges {
        let rec: SignatureRecord =
            serde_json::from_slice(data).map_err(|e| SignatureError::Malformed(e.to_string()))?;
        if rec.format != 1 || rec.algorithm != "ed25519" {
            return Err(SignatureError::Malformed(format!(
                "format {} / algorithm {:?}; this host reads format 1, ed25519",
                rec.format, rec.algorithm
            )));
        }
        let key = PublicKey::parse(&rec.key).map_err(|e| SignatureError::Malformed(e.to_string()))?;
        if rec.manifest_sha256 != hex::encode(manifest_hash) {
            return Err(SignatureError::ManifestChanged(key.id()));
        }
        let sig = b64()
            .decode(&rec.signature)
            .ok()
            .and_then(|s| <[u8; 64]>::try_from(s).ok())
            .ok_or_else(|| SignatureError::Malformed("the signature is not 64 bytes of base64".into()))?;
        if key.key.verify_strict(&msg, &Signature::from_bytes(&sig)).is_err() {
            return Err(SignatureError::Mismatch(key.id()));
        }
        signers.push(key);
    }
    Ok(signers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plugin file with a manifest, unsigned.
    pub(super) fn plugin() -> Vec<u8> {
        let mut bytes = wat::parse_str("(component)").unwrap();
        let m = r#"{"format":1,"name":"p","version":"0.1.0","tools":[{"name":"t","description":"A tool.","argCount":0}]}"#;
        wasm_encoder::Section::append_to(
            &wasm_encoder::CustomSection { name: manifest::SECTION.into(), data: m.as_bytes().into() },
            &mut bytes,
        );
        bytes
    }

    #[test]
    fn sign_verify_and_tamper() {
        let key = SecretKey::generate().unwrap();
        let signed = sign(&plugin(), &key).unwrap();
        let signers = verify(&signed).unwrap();
        assert_eq!(signers, vec![key.public("")]);
        // Signing again with the same key replaces the signature instead of adding one.
        assert_eq!(sign(&signed, &key).unwrap().len(), signed.len());
        // A second key adds a second signature; both verify.
        let other = SecretKey::generate().unwrap();
        assert_eq!(verify(&sign(&signed, &other).unwrap()).unwrap().len(), 2);
        // Changing the manifest JSON (same length) after signing is caught.
        let pos = signed.windows(5).position(|w| w == b"0.1.0").unwrap();
        let mut tampered = signed.clone();
        tampered[pos] = b'9';
        assert!(
            matches!(verify(&tampered), Err(SignatureError::ManifestChanged(_))),
            "{:?}",
            verify(&tampered)
        );
        assert!(verify(&plugin()).unwrap().is_empty());
    }

    #[test]
    fn the_signature_covers_the_skills_section() {
        use toolhost_spec::skills::{self, SkillFile, SkillsSection};
        let section = SkillsSection {
            files: vec![SkillFile {
                path: "alpha/SKILL.md".into(),
                bytes: b"---\nname: alpha\ndescription: A skill.\n---\n".to_vec(),
            }],
        };
        let key = SecretKey::generate().unwrap();
        // Skills embedded, then signed: verifies.
        let signed = sign(&skills::embed(&plugin(), &section).unwrap(), &key).unwrap();
        assert_eq!(verify(&signed).unwrap(), vec![key.public("")]);
        assert!(skills::read(&signed).unwrap().is_some());
        // Signed, then skills added: refused.
        let added = skills::embed(&sign(&plugin(), &key).unwrap(), &section).unwrap();
        assert!(matches!(verify(&added), Err(SignatureError::Mismatch(_))), "{:?}", verify(&added));
    }
}

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

use crate::manifest;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wasmparser::{Chunk, Parser, Payload};

/// Name of the custom section that holds one signature.
pub const SECTION: &str = "toolhost-signature";
/// Prefix of a public key.
pub const PUBLIC_PREFIX: &str = "toolhost-ed25519:";
/// Prefix of a private key.
pub const SECRET_PREFIX: &str = "toolhost-ed25519-secret:";
/// Domain separation: a toolhost signature can never be mistaken for another Ed25519 message.
const CONTEXT: &[u8] = b"toolhost-signature-v1\0";

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A public key, with the comment the operator gave it (`alice@team`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    pub comment: String,
}

impl PublicKey {
    /// Parse `toolhost-ed25519:BASE64 [comment]`.
    pub fn parse(text: &str) -> Result<PublicKey, String> {
        let text = text.trim();
        let (key, comment) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let Some(b) = key.strip_prefix(PUBLIC_PREFIX) else {
            return Err(format!(
                "{key:?} is not a toolhost public key: it must start with `{PUBLIC_PREFIX}` (see `toolhost keygen`)"
            ));
        };
        let bytes = b64().decode(b).map_err(|e| format!("public key {key:?}: bad base64: {e}"))?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|v: Vec<u8>| format!("public key {key:?}: {} bytes, an Ed25519 key has 32", v.len()))?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|e| format!("public key {key:?}: {e}"))?;
        Ok(PublicKey { key, comment: comment.trim().to_string() })
    }

    /// `toolhost-ed25519:BASE64` (no comment).
    pub fn encoded(&self) -> String {
        format!("{PUBLIC_PREFIX}{}", b64().encode(self.key.as_bytes()))
    }

    /// A short, stable name for messages: `ed25519:` and 16 hex digits of the key's SHA-256.
    pub fn id(&self) -> String {
        format!("ed25519:{}", &hex(&Sha256::digest(self.key.as_bytes()))[..16])
    }

    /// `alice@team (ed25519:…)` or the id alone.
    pub fn display(&self) -> String {
        if self.comment.is_empty() { self.id() } else { format!("{} ({})", self.comment, self.id()) }
    }
}

/// A private signing key.
pub struct SecretKey(SigningKey);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(…)")
    }
}

impl SecretKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<SecretKey, String> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| format!("no random source: {e}"))?;
        Ok(SecretKey(SigningKey::from_bytes(&seed)))
    }

    pub fn parse(text: &str) -> Result<SecretKey, String> {
        let b = text.trim().strip_prefix(SECRET_PREFIX).ok_or_else(|| {
            format!(
                "not a toolhost private key: it must start with `{SECRET_PREFIX}` (see `toolhost keygen`)"
            )
        })?;
        let bytes = b64().decode(b).map_err(|e| format!("private key: bad base64: {e}"))?;
        let seed: [u8; 32] = bytes.try_into().map_err(|_| "private key: not 32 bytes".to_string())?;
        Ok(SecretKey(SigningKey::from_bytes(&seed)))
    }

    /// Read a private key file.
    pub fn read(path: &Path) -> Result<SecretKey, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read key {}: {e}", path.display()))?;
        SecretKey::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn encoded(&self) -> String {
        format!("{SECRET_PREFIX}{}", b64().encode(self.0.to_bytes()))
    }

    pub fn public(&self, comment: &str) -> PublicKey {
        PublicKey { key: self.0.verifying_key(), comment: comment.to_string() }
    }
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

fn signature_ranges(bytes: &[u8]) -> Result<Sections, String> {
    let mut parser = Parser::new(0);
    let mut offset = 0usize;
    let mut found = Vec::new();
    loop {
        let (consumed, payload) = match parser.parse(&bytes[offset..], true).map_err(|e| e.to_string())? {
            Chunk::Parsed { consumed, payload } => (consumed, payload),
            Chunk::NeedMoreData(_) => return Err("the file ends in the middle of a section".into()),
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
                    return Err("a nested module runs past the end of the file".into());
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
    let ranges = signature_ranges(bytes).map_err(SignatureError::Malformed)?;
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
        manifest_sha256: hex(&manifest_hash),
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
    let ranges = signature_ranges(bytes).map_err(SignatureError::Malformed)?;
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
        let key = PublicKey::parse(&rec.key).map_err(SignatureError::Malformed)?;
        if rec.manifest_sha256 != hex(&manifest_hash) {
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

/// Who signed a loaded plugin, as the host judged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignerInfo {
    /// `alice@team (ed25519:…)` for a trusted key (with the comment from `[trust] keys`), else the id.
    pub signer: String,
    /// Whether the key is in `[trust] keys`.
    pub trusted: bool,
}

impl std::fmt::Display for SignerInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.trusted {
            write!(f, "{}", self.signer)
        } else {
            write!(f, "{} (key not trusted)", self.signer)
        }
    }
}

/// The operator's trust policy: `[trust]` in `toolhost.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// Trusted public keys.
    pub keys: Vec<PublicKey>,
    /// Every plugin must carry a valid signature by a trusted key.
    pub require_signature: bool,
    /// Per-plugin overrides of `require_signature`.
    pub plugins: BTreeMap<String, bool>,
}

/// `[trust]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrust {
    /// Public keys (`toolhost-ed25519:…`) or paths of `.pub` files (relative to the config file).
    #[serde(default)]
    keys: Vec<String>,
    require_signature: Option<bool>,
    #[serde(default)]
    plugin: BTreeMap<String, RawTrustPlugin>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrustPlugin {
    require_signature: Option<bool>,
}

impl Trust {
    /// Resolve `[trust]`; key files are read relative to `base`. Errors name the key.
    pub fn resolve(raw: RawTrust, base: &Path) -> Result<Trust, String> {
        let mut keys = Vec::new();
        for (i, k) in raw.keys.iter().enumerate() {
            let key = if k.trim_start().starts_with(PUBLIC_PREFIX) {
                PublicKey::parse(k)
            } else {
                let path: PathBuf = base.join(k);
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))
                    .and_then(|t| PublicKey::parse(&t))
            };
            keys.push(key.map_err(|e| format!("trust.keys[{i}]: {e}"))?);
        }
        let mut trust =
            Trust { keys, require_signature: raw.require_signature.unwrap_or(false), ..Trust::default() };
        for (name, p) in raw.plugin {
            if let Some(r) = p.require_signature {
                trust.plugins.insert(name, r);
            }
        }
        let anyone_required = trust.require_signature || trust.plugins.values().any(|r| *r);
        if anyone_required && trust.keys.is_empty() {
            return Err(
                "trust.require_signature is set but trust.keys is empty, so no plugin could load; list your team's public keys (`toolhost keygen` prints one)"
                    .into(),
            );
        }
        Ok(trust)
    }

    /// Whether `plugin` must be signed by a trusted key.
    pub fn requires(&self, plugin: &str) -> bool {
        self.plugins.get(plugin).copied().unwrap_or(self.require_signature)
    }

    fn trusted(&self, key: &PublicKey) -> Option<&PublicKey> {
        self.keys.iter().find(|k| k.key == key.key)
    }
}

/// The load-time check: verify the file's signatures and apply the policy. `Ok(None)` is an
/// unsigned plugin the policy lets through; the `Err` is the reason the file is refused.
pub fn check(trust: &Trust, plugin: &str, bytes: &[u8]) -> Result<Option<SignerInfo>, String> {
    let signers = verify(bytes).map_err(|e| e.to_string())?;
    let required = trust.requires(plugin);
    if signers.is_empty() {
        if required {
            return Err(format!(
                "unsigned: require_signature is set for plugin `{plugin}` ([trust] in the config); sign it with `toolhost sign FILE --key KEY` using a key listed in [trust] keys"
            ));
        }
        return Ok(None);
    }
    if let Some(k) = signers.iter().find_map(|s| trust.trusted(s)) {
        return Ok(Some(SignerInfo { signer: k.display(), trusted: true }));
    }
    let ids: Vec<String> = signers.iter().map(PublicKey::id).collect();
    if required {
        return Err(format!(
            "signature by unknown key {} (not in [trust] keys); add the key if you trust its owner",
            ids.join(", ")
        ));
    }
    Ok(Some(SignerInfo { signer: ids.join(", "), trusted: false }))
}

/// One line for `inspect`: who signed the file and what this host's `[trust]` makes of it.
pub fn describe(trust: &Trust, plugin: &str, bytes: &[u8]) -> String {
    let all = match verify(bytes) {
        Ok(all) => all,
        Err(e) => return format!("signature: INVALID, the file {e}"),
    };
    let verdict = match check(trust, plugin, bytes) {
        Ok(_) => String::new(),
        Err(e) => format!("; this host refuses it: {e}"),
    };
    if all.is_empty() {
        return format!("signature: none{verdict}");
    }
    let names: Vec<String> = all
        .iter()
        .map(|k| match trust.trusted(k) {
            Some(t) => format!("{} (trusted)", t.display()),
            None => format!("{} (key not trusted)", k.id()),
        })
        .collect();
    format!("signed by {}{verdict}", names.join(", "))
}

/// Write a new key pair: `PATH` (private, mode 0600) and `PATH.pub`. Refuses to overwrite.
pub fn keygen(path: &Path, comment: &str) -> Result<PublicKey, String> {
    let public_path = public_path(path);
    for p in [path, public_path.as_path()] {
        if p.exists() {
            return Err(format!("{} already exists; choose another path or remove it", p.display()));
        }
    }
    let key = SecretKey::generate()?;
    let public = key.public(comment);
    write_private(path, &format!("{}\n", key.encoded()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let line = if comment.is_empty() { public.encoded() } else { format!("{} {comment}", public.encoded()) };
    std::fs::write(&public_path, format!("{line}\n"))
        .map_err(|e| format!("cannot write {}: {e}", public_path.display()))?;
    Ok(public)
}

/// `key` → `key.pub`.
pub fn public_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin() -> Vec<u8> {
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
    fn policy() {
        let key = SecretKey::generate().unwrap();
        let signed = sign(&plugin(), &key).unwrap();
        let trust = Trust { keys: vec![key.public("me")], require_signature: true, ..Trust::default() };
        assert_eq!(
            check(&trust, "p", &signed).unwrap().unwrap().signer,
            format!("me ({})", key.public("").id())
        );
        assert!(check(&trust, "p", &plugin()).unwrap_err().starts_with("unsigned"));
        let stranger = Trust { keys: vec![SecretKey::generate().unwrap().public("")], ..trust.clone() };
        assert!(check(&stranger, "p", &signed).unwrap_err().contains("unknown key"));
        let lax = Trust::default();
        assert!(!check(&lax, "p", &signed).unwrap().unwrap().trusted);
        let mut per = trust.clone();
        per.plugins.insert("p".into(), false);
        assert_eq!(check(&per, "p", &plugin()).unwrap(), None);
    }

    #[test]
    fn keys_round_trip() {
        let k = SecretKey::generate().unwrap();
        let again = SecretKey::parse(&k.encoded()).unwrap();
        assert_eq!(again.public("").encoded(), k.public("").encoded());
        let p = PublicKey::parse(&format!("{} alice@team", k.public("").encoded())).unwrap();
        assert_eq!(p.comment, "alice@team");
        assert!(PublicKey::parse("ssh-ed25519 AAAA").unwrap_err().contains("toolhost-ed25519:"));
    }
}

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

use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_spec::manifest;
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

/// A public key, with the comment the operator gave it (`alice@team`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    pub comment: String,
}

impl PublicKey {
    /// Parse `toolhost-ed25519:BASE64 [comment]`.
    pub fn parse(text: &str) -> Result<PublicKey, KeyError> {
        let text = text.trim();
        let (key, comment) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let Some(b) = key.strip_prefix(PUBLIC_PREFIX) else {
            return Err(KeyError::NotPublic { key: key.to_string() });
        };
        let bytes =
            b64().decode(b).map_err(|error| KeyError::PublicBase64 { key: key.to_string(), error })?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|v: Vec<u8>| KeyError::PublicLength { key: key.to_string(), len: v.len() })?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|error| KeyError::PublicInvalid { key: key.to_string(), error })?;
        Ok(PublicKey { key, comment: comment.trim().to_string() })
    }

    /// `toolhost-ed25519:BASE64` (no comment).
    pub fn encoded(&self) -> String {
        format!("{PUBLIC_PREFIX}{}", b64().encode(self.key.as_bytes()))
    }

    /// A short, stable name for messages: `ed25519:` and 16 hex digits of the key's SHA-256.
    pub fn id(&self) -> String {
        format!("ed25519:{}", &hex::encode(Sha256::digest(self.key.as_bytes()))[..16])
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
    pub fn generate() -> Result<SecretKey, KeyError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(KeyError::NoRandom)?;
        Ok(SecretKey(SigningKey::from_bytes(&seed)))
    }

    pub fn parse(text: &str) -> Result<SecretKey, KeyError> {
        let b = text.trim().strip_prefix(SECRET_PREFIX).ok_or(KeyError::NotSecret)?;
        let bytes = b64().decode(b).map_err(KeyError::SecretBase64)?;
        let seed: [u8; 32] = bytes.try_into().map_err(|_| KeyError::SecretLength)?;
        Ok(SecretKey(SigningKey::from_bytes(&seed)))
    }

    /// Read a private key file.
    pub fn read(path: &Path) -> Result<SecretKey, KeyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| KeyError::ReadSecret { path: path.to_path_buf(), error })?;
        SecretKey::parse(&text).map_err(|e| KeyError::InFile { path: path.to_path_buf(), error: Box::new(e) })
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

/// Why a key could not be parsed, read, made or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "{key:?} is not a toolhost public key: it must start with `{PUBLIC_PREFIX}` (see `toolhost keygen`)"
    )]
    NotPublic { key: String },
    #[error("public key {key:?}: bad base64: {error}")]
    PublicBase64 { key: String, error: base64::DecodeError },
    #[error("public key {key:?}: {len} bytes, an Ed25519 key has 32")]
    PublicLength { key: String, len: usize },
    #[error("public key {key:?}: {error}")]
    PublicInvalid { key: String, error: ed25519_dalek::SignatureError },
    #[error("not a toolhost private key: it must start with `{SECRET_PREFIX}` (see `toolhost keygen`)")]
    NotSecret,
    #[error("private key: bad base64: {0}")]
    SecretBase64(base64::DecodeError),
    #[error("private key: not 32 bytes")]
    SecretLength,
    #[error("no random source: {0}")]
    NoRandom(getrandom::Error),
    /// A `.pub` file `[trust]` names.
    #[error("cannot read {}: {error}", .path.display())]
    ReadPublic { path: PathBuf, error: std::io::Error },
    #[error("cannot read key {}: {error}", .path.display())]
    ReadSecret { path: PathBuf, error: std::io::Error },
    /// A key file that holds no key.
    #[error("{}: {error}", .path.display())]
    InFile { path: PathBuf, error: Box<KeyError> },
    /// `keygen` never overwrites.
    #[error("{} already exists; choose another path or remove it", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {error}", .path.display())]
    Write { path: PathBuf, error: std::io::Error },
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

/// Why a signed file is refused by the operator's policy (`[trust]`), or does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// No signature, and one is required for this plugin.
    #[error(
        "unsigned: require_signature is set for plugin `{plugin}` ([trust] in the config); sign it with `toolhost sign FILE --key KEY` using a key listed in [trust] keys"
    )]
    Unsigned { plugin: String },
    /// Signed, and one is required, but by no trusted key (`ids`: the signers').
    #[error("signature by unknown key {} (not in [trust] keys); add the key if you trust its owner", .ids.join(", "))]
    UnknownKey { ids: Vec<String> },
}

/// A `[trust]` section that cannot be used, naming the key.
#[derive(Debug, thiserror::Error)]
pub enum TrustSettingsError {
    /// `at`: where the key is listed (`trust.keys[0]`).
    #[error("{at}: {error}")]
    Key { at: String, error: KeyError },
    #[error(
        "trust.allow_unsigned[{index}]: {text:?} is not `sha256:` and 64 hex digits (`toolhost inspect FILE` prints a file's SHA-256)"
    )]
    AllowUnsigned { index: usize, text: String },
    /// An exemption by name (a file chooses its own name).
    #[error(
        "trust.plugin.{name}.require_signature = false would exempt any file whose manifest calls itself `{name}`; exempt the exact file instead ([trust] allow_unsigned = [\"sha256:…\"], `toolhost inspect FILE` prints it) or its signer ([trust.plugin.{name}] keys = [\"toolhost-ed25519:…\"])"
    )]
    NameExemption { name: String },
    #[error(
        "trust.require_signature is set but trust.keys is empty, so no plugin could load; list your team's public keys (`toolhost keygen` prints one)"
    )]
    NoKeys,
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
///
/// Exemptions from a requirement are keyed by what a file cannot choose: its SHA-256
/// (`allow_unsigned`) or the key that signed it (`[trust.plugin.NAME] keys`). A plugin's name
/// is chosen by the file itself, so a name alone never exempts anything: it can only *add* a
/// requirement (`[trust.plugin.NAME] require_signature = true`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// Trusted public keys.
    pub keys: Vec<PublicKey>,
    /// Every plugin must carry a valid signature by a trusted key.
    pub require_signature: bool,
    /// Plugins that must be signed even without the global requirement.
    pub plugins: BTreeMap<String, bool>,
    /// Exact files (by SHA-256) that may load without a trusted signature.
    pub allow_unsigned: Vec<[u8; 32]>,
    /// Keys trusted for one plugin name only: a file they signed is accepted if its manifest
    /// names that plugin.
    pub plugin_keys: BTreeMap<String, Vec<PublicKey>>,
    /// The `.pub` files the keys were read from (the host's own files: no grant may write them).
    pub key_files: Vec<PathBuf>,
}

/// `[trust]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrust {
    /// Public keys (`toolhost-ed25519:…`) or paths of `.pub` files (relative to the config file).
    #[serde(default)]
    keys: Vec<String>,
    require_signature: Option<bool>,
    /// `sha256:HEX` of files that may load unsigned (or signed by an unknown key).
    #[serde(default)]
    allow_unsigned: Vec<String>,
    #[serde(default)]
    plugin: BTreeMap<String, RawTrustPlugin>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrustPlugin {
    require_signature: Option<bool>,
    /// Keys trusted for this plugin only (as in `[trust] keys`).
    #[serde(default)]
    keys: Vec<String>,
}

impl Trust {
    /// Resolve `[trust]`; key files are read relative to `base`. Errors name the key.
    pub fn resolve(raw: RawTrust, base: &Path) -> Result<Trust, TrustSettingsError> {
        let read_keys = |list: &[String], key: &str| -> Result<Vec<PublicKey>, TrustSettingsError> {
            let mut keys = Vec::new();
            for (i, k) in list.iter().enumerate() {
                let parsed = if k.trim_start().starts_with(PUBLIC_PREFIX) {
                    PublicKey::parse(k)
                } else {
                    let path: PathBuf = base.join(k);
                    std::fs::read_to_string(&path)
                        .map_err(|error| KeyError::ReadPublic { path, error })
                        .and_then(|t| PublicKey::parse(&t))
                };
                keys.push(
                    parsed.map_err(|error| TrustSettingsError::Key { at: format!("{key}[{i}]"), error })?,
                );
            }
            Ok(keys)
        };
        let keys = read_keys(&raw.keys, "trust.keys")?;
        let key_files = (raw.keys.iter().chain(raw.plugin.values().flat_map(|p| &p.keys)))
            .filter(|k| !k.trim_start().starts_with(PUBLIC_PREFIX))
            .map(|k| base.join(k))
            .collect();
        let mut trust = Trust {
            keys,
            require_signature: raw.require_signature.unwrap_or(false),
            key_files,
            ..Trust::default()
        };
        for (i, text) in raw.allow_unsigned.iter().enumerate() {
            let hash = text
                .strip_prefix("sha256:")
                .and_then(toolhost_spec::digest::parse_sha256)
                .ok_or_else(|| TrustSettingsError::AllowUnsigned { index: i, text: text.clone() })?;
            trust.allow_unsigned.push(hash);
        }
        for (name, p) in raw.plugin {
            match p.require_signature {
                Some(false) => return Err(TrustSettingsError::NameExemption { name }),
                Some(true) => {
                    trust.plugins.insert(name.clone(), true);
                }
                None => {}
            }
            if !p.keys.is_empty() {
                let keys = read_keys(&p.keys, &format!("trust.plugin.{name}.keys"))?;
                trust.plugin_keys.insert(name, keys);
            }
        }
        let anyone_required = trust.require_signature || trust.plugins.values().any(|r| *r);
        if anyone_required && trust.keys.is_empty() {
            return Err(TrustSettingsError::NoKeys);
        }
        Ok(trust)
    }

    /// Whether `plugin` must be signed by a trusted key.
    pub fn requires(&self, plugin: &str) -> bool {
        self.plugins.get(plugin).copied().unwrap_or(self.require_signature)
    }

    /// The trusted key `key` is, for a file that calls itself `plugin`.
    fn trusted(&self, plugin: &str, key: &PublicKey) -> Option<&PublicKey> {
        let scoped = self.plugin_keys.get(plugin).into_iter().flatten();
        self.keys.iter().chain(scoped).find(|k| k.key == key.key)
    }

    /// Whether this exact file may load without a trusted signature.
    fn exempt(&self, bytes: &[u8]) -> bool {
        !self.allow_unsigned.is_empty() && self.exempt_hash(&sha2::Sha256::digest(bytes).into())
    }

    /// [`Trust::exempt`] of the file whose SHA-256 is `hash`.
    fn exempt_hash(&self, hash: &[u8; 32]) -> bool {
        self.allow_unsigned.contains(hash)
    }
}

/// [`check`] of a file known to carry no signature (the folder index keeps only such files),
/// by its SHA-256.
pub fn check_unsigned(trust: &Trust, plugin: &str, hash: &[u8; 32]) -> Result<(), TrustError> {
    if trust.requires(plugin) && !trust.exempt_hash(hash) {
        return Err(TrustError::Unsigned { plugin: plugin.to_string() });
    }
    Ok(())
}

/// The load-time check: verify the file's signatures and apply the policy. `Ok(None)` is an
/// unsigned plugin the policy lets through; the `Err` is the reason the file is refused.
pub fn check(trust: &Trust, plugin: &str, bytes: &[u8]) -> Result<Option<SignerInfo>, TrustError> {
    let signers = verify(bytes)?;
    let required = trust.requires(plugin) && !trust.exempt(bytes);
    if signers.is_empty() {
        if required {
            return Err(TrustError::Unsigned { plugin: plugin.to_string() });
        }
        return Ok(None);
    }
    if let Some(k) = signers.iter().find_map(|s| trust.trusted(plugin, s)) {
        return Ok(Some(SignerInfo { signer: k.display(), trusted: true }));
    }
    let ids: Vec<String> = signers.iter().map(PublicKey::id).collect();
    if required {
        return Err(TrustError::UnknownKey { ids });
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
        .map(|k| match trust.trusted(plugin, k) {
            Some(t) => format!("{} (trusted)", t.display()),
            None => format!("{} (key not trusted)", k.id()),
        })
        .collect();
    format!("signed by {}{verdict}", names.join(", "))
}

/// Write a new key pair: `PATH` (private, mode 0600) and `PATH.pub`. Refuses to overwrite.
pub fn keygen(path: &Path, comment: &str) -> Result<PublicKey, KeyError> {
    let public_path = public_path(path);
    for p in [path, public_path.as_path()] {
        if p.exists() {
            return Err(KeyError::Exists(p.to_path_buf()));
        }
    }
    let key = SecretKey::generate()?;
    let public = key.public(comment);
    write_private(path, &format!("{}\n", key.encoded()))
        .map_err(|error| KeyError::Write { path: path.to_path_buf(), error })?;
    let line = if comment.is_empty() { public.encoded() } else { format!("{} {comment}", public.encoded()) };
    std::fs::write(&public_path, format!("{line}\n"))
        .map_err(|error| KeyError::Write { path: public_path.clone(), error })?;
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
        assert_eq!(check(&trust, "p", &plugin()), Err(TrustError::Unsigned { plugin: "p".into() }));
        let stranger = Trust { keys: vec![SecretKey::generate().unwrap().public("")], ..trust.clone() };
        assert_eq!(
            check(&stranger, "p", &signed),
            Err(TrustError::UnknownKey { ids: vec![key.public("").id()] })
        );
        let lax = Trust::default();
        assert!(!check(&lax, "p", &signed).unwrap().unwrap().trusted);
        // Exemptions are keyed by the file's hash or its signer, never by the name it gives itself.
        let mut per = trust.clone();
        per.allow_unsigned.push(sha2::Sha256::digest(plugin()).into());
        assert_eq!(check(&per, "p", &plugin()).unwrap(), None, "the exempted file");
        assert_eq!(check(&per, "any-name", &plugin()).unwrap(), None, "whatever it calls itself");
        let mut other = plugin();
        other.push(0);
        assert!(check(&per, "p", &other).is_err(), "another file is not exempt");
        let team = SecretKey::generate().unwrap();
        let by_team = sign(&plugin(), &team).unwrap();
        let mut scoped = trust.clone();
        scoped.plugin_keys.insert("p".into(), vec![team.public("team")]);
        assert!(check(&scoped, "p", &by_team).unwrap().unwrap().trusted, "its signer, for its name");
        assert!(
            matches!(check(&scoped, "q", &by_team), Err(TrustError::UnknownKey { .. })),
            "not for another name"
        );
    }

    #[test]
    fn a_name_alone_never_exempts() {
        let raw: RawTrust = toml::from_str("[plugin.legacy]\nrequire_signature = false\n").unwrap();
        let e = Trust::resolve(raw, Path::new("/")).unwrap_err();
        assert!(matches!(&e, TrustSettingsError::NameExemption { name } if name == "legacy"), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("trust.plugin.legacy.require_signature = false") && e.contains("allow_unsigned"),
            "{e}"
        );
        let raw: RawTrust = toml::from_str("allow_unsigned = [\"abc\"]\n").unwrap();
        let e = Trust::resolve(raw, Path::new("/")).unwrap_err().to_string();
        assert!(e.contains("trust.allow_unsigned[0]") && e.contains("64 hex digits"), "{e}");
        let hash = "ab".repeat(32);
        let raw: RawTrust = toml::from_str(&format!("allow_unsigned = [\"sha256:{hash}\"]\n")).unwrap();
        assert_eq!(Trust::resolve(raw, Path::new("/")).unwrap().allow_unsigned, vec![[0xab; 32]]);
    }

    #[test]
    fn keys_round_trip() {
        let k = SecretKey::generate().unwrap();
        let again = SecretKey::parse(&k.encoded()).unwrap();
        assert_eq!(again.public("").encoded(), k.public("").encoded());
        let p = PublicKey::parse(&format!("{} alice@team", k.public("").encoded())).unwrap();
        assert_eq!(p.comment, "alice@team");
        let e = PublicKey::parse("ssh-ed25519 AAAA").unwrap_err();
        assert!(
            matches!(e, KeyError::NotPublic { .. }) && e.to_string().contains("toolhost-ed25519:"),
            "{e}"
        );
    }
}

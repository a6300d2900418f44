//! Ed25519 keys as toolhost writes them: public `toolhost-ed25519:BASE64 [comment]`, private
//! `toolhost-ed25519-secret:BASE64` (the 32-byte seed, written with mode 0600).

use super::b64;
use base64::Engine as _;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Prefix of a public key.
pub const PUBLIC_PREFIX: &str = "toolhost-ed25519:";
/// Prefix of a private key.
pub const SECRET_PREFIX: &str = "toolhost-ed25519-secret:";
/// A public key, with the comment the operator gave it (`alice@team`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub(super) key: VerifyingKey,
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
pub struct SecretKey(pub(super) SigningKey);

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

//! The operator's trust policy (`[trust]`): which keys are trusted, which plugins must be
//! signed, and the load-time check of a file against it.

use super::keys::{KeyError, PUBLIC_PREFIX, PublicKey};
use super::{SignatureError, verify};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::super::tests::plugin;
    use super::super::{SecretKey, sign};
    use super::*;

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
}

//! `[secrets.NAME]`: where a secret's value comes from (an environment variable or a file, never
//! the config itself) and the origins it may be sent to. Plugins' `secrets` grants, MCP tokens,
//! the model's API key and registry credentials all name these.

use super::invalid::Invalid;
use crate::capability::net::settings::SecretOrigin;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The longest value a secret may have (bytes).
pub const MAX_SECRET_BYTES: usize = 16 * 1024;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSecret {
    /// Read the value from this environment variable of the host.
    env: Option<String>,
    /// Or from this file (trailing newline removed).
    file: Option<PathBuf>,
    /// Send it only to these origins: `host` (https on 443), `host:port` (https),
    /// `http://host[:port]`; host patterns as in `net`. Default: https on port 443 of any host
    /// the plugin may reach.
    #[serde(default)]
    hosts: Vec<String>,
}

/// Where a secret's value comes from. The value is read when a plugin is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretSource {
    pub name: String,
    pub from: SecretFrom,
    /// Send only to these origins (empty: https on port 443 of any host the plugin may reach).
    pub hosts: Vec<SecretOrigin>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretFrom {
    Env(String),
    File(PathBuf),
}

/// Why a secret's value cannot be had now.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("secret `{name}`: environment variable {var} is not set")]
    Unset { name: String, var: String },
    #[error("secret `{name}`: cannot read {}: {error}", path.display())]
    Unreadable { name: String, path: PathBuf, error: std::io::Error },
    #[error("secret `{name}` is {len} bytes long, more than the {MAX_SECRET_BYTES} a secret may have")]
    TooLong { name: String, len: usize },
    #[error("secret `{name}` is shorter than 8 characters, too short to be redacted reliably")]
    TooShort { name: String },
}

/// Resolve `[secrets]`: each entry names exactly one source; its origins are checked now.
pub(crate) fn resolve(
    raw: BTreeMap<String, RawSecret>,
    base: &Path,
) -> Result<BTreeMap<String, SecretSource>, Invalid> {
    let mut out = BTreeMap::new();
    for (name, sec) in raw {
        let key = format!("secrets.{name}");
        let from = match (sec.env, sec.file) {
            (Some(var), None) => SecretFrom::Env(var),
            (None, Some(file)) => SecretFrom::File(base.join(file)),
            _ => return Err(Invalid::says(key, "give exactly one of `env = \"VAR\"` or `file = \"path\"`")),
        };
        let hosts = (sec.hosts.iter().enumerate())
            .map(|(i, h)| {
                SecretOrigin::parse(h).map_err(|e| Invalid::because(format!("{key}.hosts[{i}]"), e))
            })
            .collect::<Result<_, _>>()?;
        out.insert(name.clone(), SecretSource { name, from, hosts });
    }
    Ok(out)
}

impl SecretSource {
    /// A source outside `[secrets]` (an MCP token's `env`/`file`), sent nowhere.
    pub fn unnamed(name: impl Into<String>, from: SecretFrom) -> SecretSource {
        SecretSource { name: name.into(), from, hosts: Vec::new() }
    }

    /// Read the value now.
    pub fn read(&self) -> Result<String, SecretError> {
        let name = || self.name.clone();
        let v = match &self.from {
            SecretFrom::Env(var) => {
                std::env::var(var).map_err(|_| SecretError::Unset { name: name(), var: var.clone() })?
            }
            SecretFrom::File(path) => std::fs::read_to_string(path)
                .map_err(|error| SecretError::Unreadable { name: name(), path: path.clone(), error })?
                .trim_end_matches(['\n', '\r'])
                .to_string(),
        };
        if v.len() > MAX_SECRET_BYTES {
            // Every response to a plugin holding it is read this far past its cut (see
            // `capability::net`), and a header this long is refused by most servers anyway.
            return Err(SecretError::TooLong { name: name(), len: v.len() });
        }
        if v.chars().count() < 8 {
            // Redaction replaces every occurrence of the value in outputs: a very short value
            // would garble them, and is not much of a secret either.
            return Err(SecretError::TooShort { name: name() });
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_long_or_missing_secrets_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "abc\n").unwrap();
        let short = SecretSource { name: "t".into(), from: SecretFrom::File(file.clone()), hosts: vec![] };
        assert!(matches!(short.read(), Err(SecretError::TooShort { .. })));
        std::fs::write(&file, "x".repeat(MAX_SECRET_BYTES + 1)).unwrap();
        let e = short.read().unwrap_err();
        assert!(matches!(e, SecretError::TooLong { len, .. } if len == MAX_SECRET_BYTES + 1), "{e}");
        assert!(e.to_string().contains("more than the 16384"), "{e}");
        std::fs::write(&file, "a-long-enough-value\n").unwrap();
        assert_eq!(short.read().unwrap(), "a-long-enough-value", "the trailing newline is not part of it");
        let unset = SecretSource::unnamed("e", SecretFrom::Env("TOOLHOST_SURELY_UNSET_VARIABLE".into()));
        let e = unset.read().unwrap_err();
        assert_eq!(
            e.to_string(),
            "secret `e`: environment variable TOOLHOST_SURELY_UNSET_VARIABLE is not set"
        );
        let gone = SecretSource::unnamed("g", SecretFrom::File(dir.path().join("absent")));
        assert!(matches!(gone.read(), Err(SecretError::Unreadable { .. })));
    }
}

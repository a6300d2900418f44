//! `[registry."HOST"]`: credentials and transport for one OCI registry. A leaf: it imports
//! nothing of the crate.

use serde::Deserialize;
use std::collections::BTreeMap;
use toolhost_core::settings::SecretSource;

/// `[registry."HOST"]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRegistry {
    username: Option<String>,
    /// Name of a `[secrets.NAME]` entry holding the password or token.
    secret: Option<String>,
    /// Speak plain HTTP to this registry.
    insecure: Option<bool>,
}

/// Credentials and transport for one registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryConfig {
    pub username: Option<String>,
    pub secret: Option<SecretSource>,
    pub insecure: bool,
}

impl RegistryConfig {
    pub fn resolve(
        raw: BTreeMap<String, RawRegistry>,
        secrets: &BTreeMap<String, SecretSource>,
    ) -> Result<BTreeMap<String, RegistryConfig>, String> {
        let mut out = BTreeMap::new();
        for (host, r) in raw {
            let secret = match &r.secret {
                Some(s) => Some(secrets.get(s).cloned().ok_or_else(|| {
                    format!(
                        "registry.\"{host}\".secret: no secret `{s}` is defined; add [secrets.{s}] with env = \"VAR\" or file = \"path\""
                    )
                })?),
                None => None,
            };
            if secret.is_some() != r.username.is_some() {
                return Err(format!("registry.\"{host}\": give both `username` and `secret`, or neither"));
            }
            out.insert(
                host,
                RegistryConfig { username: r.username, secret, insecure: r.insecure.unwrap_or(false) },
            );
        }
        Ok(out)
    }
}

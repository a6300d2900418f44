//! What a plugin may reach over the network (request ∩ grant: [`effective`]), the secrets it is
//! granted with their values, and their redaction from what leaves the host's hands.

use super::{NetError, Origin, SecretOrigin};
use std::fmt;
use std::sync::Arc;
use toolhost_spec::host_pattern::matches as host_matches;

/// A secret granted to a plugin, with its value (read at load time).
#[derive(Clone, PartialEq, Eq)]
pub struct GrantedSecret {
    pub name: String,
    pub value: String,
    /// Origins it may be sent to (empty: [`SecretOrigin::any_https`]).
    pub hosts: Vec<SecretOrigin>,
}

impl fmt::Debug for GrantedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrantedSecret")
            .field("name", &self.name)
            .field("value", &"<redacted>")
            .field("hosts", &self.hosts)
            .finish()
    }
}

impl GrantedSecret {
    /// Whether the secret may be sent to `origin`.
    pub fn allows(&self, origin: &Origin) -> bool {
        if self.hosts.is_empty() {
            SecretOrigin::any_https().allows(origin)
        } else {
            self.hosts.iter().any(|o| o.allows(origin))
        }
    }

    /// Why it may not be sent to `origin` (its text has the line that would allow it).
    pub(super) fn refusal(&self, origin: &Origin) -> NetError {
        NetError::SecretOrigin {
            secret: self.name.clone(),
            hosts: self.hosts.clone(),
            origin: origin.clone(),
        }
    }
}

/// What one plugin may reach: the hosts it requested, the hosts granted (a host must match
/// both), whether private addresses are allowed, and its secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetGrant {
    pub requested: Vec<String>,
    pub granted: Vec<String>,
    pub private: bool,
    pub secrets: Vec<GrantedSecret>,
}

impl NetGrant {
    pub fn is_empty(&self) -> bool {
        self.granted.is_empty() || self.requested.is_empty()
    }

    /// Every secret value with its name, for redaction.
    pub fn redactions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.secrets.iter().map(|s| (s.name.as_str(), s.value.as_str()))
    }

    /// The name of the first secret whose whole value occurs in `bytes`.
    pub fn reflected(&self, bytes: &[u8]) -> Option<&str> {
        self.secrets
            .iter()
            .find(|s| !s.value.is_empty() && memchr::memmem::find(bytes, s.value.as_bytes()).is_some())
            .map(|s| s.name.as_str())
    }

    /// The length in bytes of the longest secret value (0 without secrets).
    pub fn longest_secret(&self) -> usize {
        self.secrets.iter().map(|s| s.value.len()).max().unwrap_or(0)
    }

    pub(super) fn check_host(&self, plugin: &Arc<str>, host: &str) -> Result<(), NetError> {
        if !self.requested.iter().any(|p| host_matches(p, host)) {
            return Err(NetError::HostNotRequested {
                plugin: plugin.clone(),
                host: host.to_string(),
                requested: self.requested.clone(),
            });
        }
        if !self.granted.iter().any(|p| host_matches(p, host)) {
            return Err(NetError::HostNotGranted { plugin: plugin.clone(), host: host.to_string() });
        }
        Ok(())
    }
}

/// The values of `sources` as one [`NetGrant`] to [`redact`] with (a source that cannot be read
/// now is left out): the one set the audit trail and telemetry redact arguments with, built
/// from `Config::secret_sources`.
pub fn redaction_set<'a>(sources: impl IntoIterator<Item = &'a crate::settings::SecretSource>) -> NetGrant {
    let secrets = (sources.into_iter())
        .filter_map(|s| Some(GrantedSecret { name: s.name.clone(), value: s.read().ok()?, hosts: vec![] }))
        .filter(|s| !s.value.is_empty())
        .collect();
    NetGrant { secrets, ..NetGrant::default() }
}

/// Replace every secret value in `s` with `[secret NAME redacted]`.
pub fn redact<'a>(s: &'a str, grant: &NetGrant) -> std::borrow::Cow<'a, str> {
    let mut out = std::borrow::Cow::Borrowed(s);
    for (name, value) in grant.redactions() {
        if out.contains(value) {
            out = std::borrow::Cow::Owned(out.replace(value, &format!("[secret {name} redacted]")));
        }
    }
    out
}

/// [`redact`] for an owned string: no copy unless a secret value is actually in it.
pub fn redact_owned(s: String, grant: &NetGrant) -> String {
    match redact(&s, grant) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => o,
    }
}

/// Request ∩ grant for the network: the hosts requested and granted (a host must match both),
/// private addresses if granted, and each requested secret the operator granted and defined,
/// its value read now; what is missing, with the config line that grants it.
pub fn effective(
    plugin: &str,
    request: &toolhost_spec::manifest::Capabilities,
    grant: &crate::settings::PluginConfig,
    secrets: &std::collections::BTreeMap<String, crate::settings::SecretSource>,
) -> (NetGrant, Vec<crate::capability::Missing>) {
    use crate::capability::{Missing, MissingKind};
    let mut missing = Vec::new();
    let mut net = NetGrant {
        requested: request.net.clone(),
        granted: grant.net.hosts.clone(),
        private: grant.net.private,
        secrets: Vec::new(),
    };
    for host in &request.net {
        if !grant.net.hosts.iter().any(|g| toolhost_spec::host_pattern::overlaps(host, g)) {
            let how = if host.contains('*') {
                format!(
                    "[plugin.{plugin}] net = [\"example.com\"] with the hosts you allow  (or --allow-net {plugin}=HOST)"
                )
            } else {
                format!("[plugin.{plugin}] net = [\"{host}\"]  (or --allow-net {plugin}={host})")
            };
            missing.push(Missing { kind: MissingKind::Net(host.clone()), what: format!("net {host}"), how });
        }
    }
    for secret in &request.secrets {
        let source = secrets.get(secret);
        let how = format!(
            "[plugin.{plugin}] secrets = [\"{secret}\"] and [secrets.{secret}] env = \"VAR\" (or file = \"path\")"
        );
        match (grant.net.secrets.iter().any(|s| s == secret), source) {
            (true, Some(src)) => match src.read() {
                Ok(value) => {
                    net.secrets.push(GrantedSecret { name: secret.clone(), value, hosts: src.hosts.clone() })
                }
                Err(why) => missing.push(Missing {
                    kind: MissingKind::Secret(secret.clone()),
                    what: format!("secret {secret} ({why})"),
                    how,
                }),
            },
            _ => missing.push(Missing {
                kind: MissingKind::Secret(secret.clone()),
                what: format!("secret {secret}"),
                how,
            }),
        }
    }
    (net, missing)
}

//! The network capability's settings: `[net]` (the bounds of every plugin's HTTP), and the
//! origins a secret is bound to (`[secrets.NAME] hosts`). A leaf: it imports nothing of the
//! crate but the config's error ([`Invalid`]).

use crate::settings::invalid::Invalid;
use serde::Deserialize;
use std::fmt;
use toolhost_spec::host_pattern::matches as host_matches;

/// `[net]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNet {
    timeout_ms: Option<u64>,
    max_response_kb: Option<u64>,
    max_redirects: Option<u32>,
    max_requests_per_call: Option<u32>,
    /// Largest request body a plugin may send (KiB).
    max_request_kb: Option<u64>,
    /// Bytes one call may send and receive over HTTP in total (MiB).
    max_transfer_mb: Option<u64>,
}

/// Network settings for every plugin (`[net]`, resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetSettings {
    /// Upper bound for one request (the call's own deadline may be sooner).
    pub timeout_ms: u64,
    /// Response bodies are cut at this size.
    pub max_response_bytes: u64,
    pub max_redirects: u32,
    pub max_requests_per_call: u32,
    /// Request bodies larger than this are refused before anything is sent.
    pub max_request_bytes: u64,
    /// Bytes one call may send (bodies) and receive (bodies) over HTTP in total.
    pub max_transfer_bytes: u64,
}

impl Default for NetSettings {
    fn default() -> Self {
        NetSettings {
            timeout_ms: 10_000,
            max_response_bytes: 2 * 1024 * 1024,
            max_redirects: 5,
            max_requests_per_call: 32,
            max_request_bytes: 1024 * 1024,
            max_transfer_bytes: 16 * 1024 * 1024,
        }
    }
}

impl RawNet {
    pub fn resolve(self) -> Result<NetSettings, Invalid> {
        let d = NetSettings::default();
        let net = NetSettings {
            timeout_ms: self.timeout_ms.unwrap_or(d.timeout_ms),
            max_response_bytes: self.max_response_kb.map(|kb| kb * 1024).unwrap_or(d.max_response_bytes),
            max_redirects: self.max_redirects.unwrap_or(d.max_redirects),
            max_requests_per_call: self.max_requests_per_call.unwrap_or(d.max_requests_per_call),
            max_request_bytes: self.max_request_kb.map(|kb| kb * 1024).unwrap_or(d.max_request_bytes),
            max_transfer_bytes: self
                .max_transfer_mb
                .map(|mb| mb * 1024 * 1024)
                .unwrap_or(d.max_transfer_bytes),
        };
        if net.timeout_ms == 0 || net.max_response_bytes == 0 || net.max_requests_per_call == 0 {
            let also = vec!["net.max_response_kb".into(), "net.max_requests_per_call".into()];
            return Err(Invalid::each_at_least_one("net.timeout_ms", also));
        }
        if net.max_request_bytes == 0 || net.max_transfer_bytes == 0 {
            return Err(Invalid::each_at_least_one("net.max_request_kb", vec!["net.max_transfer_mb".into()]));
        }
        Ok(net)
    }
}

/// Scheme, host and port of a URL: what a secret is bound to, and what a redirect must keep
/// for secret headers to follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: String,
    /// Lower case; an IPv6 address without brackets.
    pub host: String,
    pub port: u16,
}

impl Origin {
    /// The origin of an http(s) URL (`None` for other schemes or a URL without a host).
    pub fn of(url: &url::Url) -> Option<Origin> {
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        let host = match url.host()? {
            url::Host::Domain(d) => d.to_ascii_lowercase(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
        };
        Some(Origin { scheme: url.scheme().to_string(), host, port: url.port_or_known_default()? })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_origin(f, &self.scheme, &self.host, self.port)
    }
}

fn write_origin(f: &mut fmt::Formatter<'_>, scheme: &str, host: &str, port: u16) -> fmt::Result {
    let host = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
    if Some(port) == default_port(scheme) {
        write!(f, "{scheme}://{host}")
    } else {
        write!(f, "{scheme}://{host}:{port}")
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    }
}

/// Why an entry of `[secrets.NAME] hosts` is not an origin a secret can be bound to; `entry` is
/// the entry as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    #[error(
        "{entry:?}: scheme `{scheme}` is not allowed; a secret is sent over https (the default) or http (write \"http://host:port\")"
    )]
    Scheme { entry: String, scheme: String },
    #[error(
        "{entry:?} is not an origin; a secret is bound to a scheme, host and port, without a path, query or user (write \"{scheme}://host\" or \"{scheme}://host:port\")"
    )]
    NotAnOrigin { entry: String, scheme: String },
    #[error("{entry:?}: `[` without a closing `]`")]
    Unclosed { entry: String },
    #[error("{entry:?}: `{inner}` in brackets is not an IPv6 address")]
    NotIpv6 { entry: String, inner: String },
    #[error("{entry:?}: expected `:port` after `]`")]
    AfterBracket { entry: String },
    #[error("{entry:?}: port `{port}` is not a number from 1 to 65535")]
    Port { entry: String, port: String },
    #[error(
        "{entry:?}: `{host}` is not a host pattern; write `api.example.com`, `*.example.com`, `*` or an IP address (lower case), optionally with `http://` or `https://` before it and `:port` after it"
    )]
    Host { entry: String, host: String },
}

/// An entry of `[secrets.NAME] hosts`: the origins a secret may be sent to. `api.example.com`
/// (no scheme) is `https://api.example.com` on port 443; `http://127.0.0.1:8080` is exactly
/// that origin; the host part is a pattern as in `net` (`*.example.com`, `*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretOrigin {
    /// `http` or `https`.
    pub scheme: String,
    /// A host pattern (`example.com`, `*.example.com`, `*`, an IP address).
    pub host: String,
    pub port: u16,
}

impl SecretOrigin {
    /// Where a secret without `hosts` may go: any host the plugin may reach, over https, on
    /// port 443.
    pub fn any_https() -> SecretOrigin {
        SecretOrigin { scheme: "https".into(), host: "*".into(), port: 443 }
    }

    /// Whether a request to `origin` matches.
    pub fn allows(&self, origin: &Origin) -> bool {
        self.scheme == origin.scheme && self.port == origin.port && host_matches(&self.host, &origin.host)
    }

    /// Parse one entry: `[scheme://]host[:port][/]`, scheme `https` (default) or `http`.
    pub fn parse(entry: &str) -> Result<SecretOrigin, OriginError> {
        let at = || entry.to_string();
        let (scheme, rest) = match entry.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None => ("https".to_string(), entry),
        };
        let Some(default) = default_port(&scheme) else {
            return Err(OriginError::Scheme { entry: at(), scheme });
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(OriginError::NotAnOrigin { entry: at(), scheme });
        }
        // `[v6]:port`, a bare IPv6 address, or `host[:port]`.
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let Some((v6, after)) = inner.split_once(']') else {
                return Err(OriginError::Unclosed { entry: at() });
            };
            if v6.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(OriginError::NotIpv6 { entry: at(), inner: v6.to_string() });
            }
            match after {
                "" => (v6.to_string(), None),
                _ => match after.strip_prefix(':') {
                    Some(p) => (v6.to_string(), Some(p)),
                    None => return Err(OriginError::AfterBracket { entry: at() }),
                },
            }
        } else if rest.parse::<std::net::Ipv6Addr>().is_ok() {
            (rest.to_string(), None)
        } else {
            match rest.split_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (rest.to_string(), None),
            }
        };
        let port = match port {
            None => default,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(OriginError::Port { entry: at(), port: p.to_string() }),
            },
        };
        if toolhost_spec::HostPattern::parse(&host).is_err() {
            return Err(OriginError::Host { entry: at(), host });
        }
        // The form `Origin` uses, so `::1` and `0:0::1` are the same host.
        let host = host.parse::<std::net::Ipv6Addr>().map(|ip| ip.to_string()).unwrap_or(host);
        Ok(SecretOrigin { scheme, host, port })
    }
}

impl fmt::Display for SecretOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_origin(f, &self.scheme, &self.host, self.port)
    }
}

/// What the operator grants a plugin of the network (`[plugin.X] net`, `net_private`,
/// `secrets`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetConfig {
    /// Host patterns: `example.com`, `*.example.com` (subdomains only), `*` (any host).
    pub hosts: Vec<String>,
    /// Granted hosts may resolve to loopback/private/link-local addresses.
    pub private: bool,
    /// Names of secrets (defined under `[secrets.NAME]`).
    pub secrets: Vec<String>,
}

impl NetConfig {
    /// Add what `all` (`[plugin."*"]`) grants.
    pub fn merge(&mut self, all: &NetConfig) {
        for v in &all.hosts {
            if !self.hosts.contains(v) {
                self.hosts.push(v.clone());
            }
        }
        for v in &all.secrets {
            if !self.secrets.contains(v) {
                self.secrets.push(v.clone());
            }
        }
        self.private |= all.private;
    }
}

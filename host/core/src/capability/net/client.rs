//! The HTTP clients plugins' requests go through (one allowing private addresses, one not):
//! the resolver that checks every address a name resolves to, and the connector layer that
//! refuses the host's own listeners once connected.

use super::{NetError, ResolvedPrivate, listeners};
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

/// Why an address is not public, or `None` for a public address.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if v4.is_unspecified() || o[0] == 0 {
                Some("unspecified")
            } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
                Some("shared (CGNAT)")
            } else if v4.is_multicast() || v4.is_broadcast() || o[0] >= 240 {
                Some("multicast or reserved")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return non_public(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if (seg[0] & 0xfe00) == 0xfc00 {
                Some("private (unique local)")
            } else if (seg[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

/// Resolves names and refuses non-public addresses (unless built to allow them).
struct CheckedResolver {
    allow_private: bool,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> {
                    format!("cannot resolve {host}: {e}").into()
                })?
                .collect();
            if !allow_private {
                // One non-public address refuses the name: a name that resolves to both a
                // public and a private address must not be usable to reach the private one.
                if let Some((addr, kind)) = addrs.iter().find_map(|a| non_public(a.ip()).map(|k| (a, k))) {
                    return Err(ResolvedPrivate { host, addr: addr.ip(), kind }.into());
                }
            }
            let iter: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(iter)
        })
    }
}

/// One shared client per mode (building a client loads TLS roots, so never per request).
pub(super) fn client(allow_private: bool) -> Result<&'static reqwest::Client, NetError> {
    static STRICT: OnceLock<Result<reqwest::Client, NetError>> = OnceLock::new();
    static PRIVATE: OnceLock<Result<reqwest::Client, NetError>> = OnceLock::new();
    let cell = if allow_private { &PRIVATE } else { &STRICT };
    cell.get_or_init(|| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would connect on the plugin's behalf, past the address checks.
            .no_proxy()
            .dns_resolver(Arc::new(CheckedResolver { allow_private }))
            // Whatever the name resolved to, the address connected to is checked.
            .connector_layer(listeners::PeerCheckLayer)
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| NetError::Client(e.to_string()))
    })
    .as_ref()
    .map_err(Clone::clone)
}

pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

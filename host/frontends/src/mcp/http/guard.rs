//! The Host and Origin checks (DNS-rebinding protection) of the endpoints the front door
//! answers itself.

/// DNS-rebinding protection for the endpoints that say more than a status (`/metrics`): the
/// same rule rmcp applies to `/mcp` — the `Host` header must name an allowed host (a name
/// allowed without a port matches any port), and a request carrying an `Origin` must come from
/// an allowed origin (none by default). Without it a web page the operator visits could read
/// `/metrics` through a rebound name when no tokens are configured.
#[derive(Debug, Clone)]
pub(super) struct HostGuard {
    /// (host, port) pairs; lower case, IPv6 without brackets.
    hosts: Vec<(String, Option<u16>)>,
    /// (scheme, host, port) of each allowed origin; `None` for `null`.
    origins: Vec<Option<(String, String, Option<u16>)>>,
}

impl HostGuard {
    pub(super) fn new(hosts: &[String], origins: &[String]) -> HostGuard {
        let hosts = hosts.iter().filter_map(|h| allowed_host(h)).collect();
        let origins = origins.iter().filter_map(|o| parse_origin(o)).collect();
        HostGuard { hosts, origins }
    }

    /// `Err(status, why)` when the request must be refused.
    pub(super) fn check(&self, headers: &hyper::HeaderMap) -> Result<(), (hyper::StatusCode, &'static str)> {
        self.check_host(headers)?;
        self.check_origin(headers, None)
    }

    /// [`HostGuard::check`] for the console: besides the allowed origins, a request may come
    /// from the origin its own `Host` names (the console's page, `POST`ing to itself).
    pub(super) fn check_console(
        &self,
        headers: &hyper::HeaderMap,
    ) -> Result<(), (hyper::StatusCode, &'static str)> {
        let own = self.check_host(headers)?;
        self.check_origin(headers, Some(own))
    }

    /// The `Host` header's (host, port), if it names an allowed host.
    #[allow(clippy::type_complexity)] // a private helper's one-off shape
    pub(super) fn check_host(
        &self,
        headers: &hyper::HeaderMap,
    ) -> Result<(String, Option<u16>), (hyper::StatusCode, &'static str)> {
        let forbidden = hyper::StatusCode::FORBIDDEN;
        let host = headers
            .get(hyper::header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| hyper::http::uri::Authority::try_from(h).ok())
            .ok_or((hyper::StatusCode::BAD_REQUEST, "bad request: missing or invalid Host header\n"))?;
        let (name, port) = (normalize_host(host.host()), host.port_u16());
        if !self.hosts.iter().any(|(h, p)| *h == name && p.is_none_or(|p| Some(p) == port)) {
            tracing::warn!(host = %host, "refused a request with a Host header that is not allowed (DNS rebinding?)");
            return Err((forbidden, "forbidden: Host header is not allowed (see --allow-host)\n"));
        }
        Ok((name, port))
    }

    /// A request carrying an `Origin` must come from an allowed origin, or from `own` (the
    /// request's own host and port, over http or https).
    pub(super) fn check_origin(
        &self,
        headers: &hyper::HeaderMap,
        own: Option<(String, Option<u16>)>,
    ) -> Result<(), (hyper::StatusCode, &'static str)> {
        let forbidden = hyper::StatusCode::FORBIDDEN;
        if let Some(origin) = headers.get(hyper::header::ORIGIN) {
            let parsed = origin.to_str().ok().and_then(parse_origin);
            let same = |o: &Option<(String, String, Option<u16>)>| match (o, &own) {
                (Some((s, h, p)), Some((oh, op))) => {
                    (s == "http" || s == "https")
                        && h == oh
                        && p.or_else(|| default_port(s)) == op.or_else(|| default_port(s))
                }
                _ => false,
            };
            let allowed = parsed.is_some_and(|o| {
                same(&o)
                    || self.origins.iter().any(|a| match (a, &o) {
                        (None, None) => true,
                        (Some((s, h, p)), Some((os, oh, op))) => {
                            s == os
                                && h == oh
                                && p.or_else(|| default_port(s)) == op.or_else(|| default_port(os))
                        }
                        _ => false,
                    })
            });
            if !allowed {
                tracing::warn!("refused a request with an Origin that is not allowed (see --allow-origin)");
                return Err((forbidden, "forbidden: Origin is not allowed (see --allow-origin)\n"));
            }
        }
        Ok(())
    }
}

/// A host as compared: lower case, an IPv6 address without brackets and in its canonical form.
pub(super) fn normalize_host(h: &str) -> String {
    let bare = h.trim_matches(['[', ']']);
    match bare.parse::<std::net::Ipv6Addr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => bare.to_ascii_lowercase(),
    }
}

/// An allowed `Host` entry (`localhost`, `example.com:8080`, `[::1]:8765`, or a bare IPv6
/// address such as `::1`, whose colons are not a port) as (host, port).
pub(super) fn allowed_host(entry: &str) -> Option<(String, Option<u16>)> {
    let entry = entry.trim();
    if let Ok(ip) = entry.parse::<std::net::Ipv6Addr>() {
        return Some((ip.to_string(), None));
    }
    let a = hyper::http::uri::Authority::try_from(entry).ok()?;
    Some((normalize_host(a.host()), a.port_u16()))
}

pub(super) fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// `Some(None)` for `null`, `Some(Some((scheme, host, port)))` for a tuple origin.
#[allow(clippy::type_complexity)] // a private helper's one-off shape
pub(super) fn parse_origin(value: &str) -> Option<Option<(String, String, Option<u16>)>> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some(None);
    }
    let uri = hyper::http::Uri::try_from(value).ok()?;
    let authority = uri.authority()?;
    Some(Some((
        uri.scheme_str()?.to_ascii_lowercase(),
        normalize_host(authority.host()),
        authority.port_u16(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn a_bracketed_ipv6_host_is_allowed_where_its_address_is() {
        let hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        let guard = HostGuard::new(&hosts, &[]);
        let check = |host: &str| {
            let mut h = hyper::HeaderMap::new();
            h.insert(hyper::header::HOST, host.parse().unwrap());
            guard.check(&h).map_err(|(status, _)| status)
        };
        for ok in ["[::1]:8765", "[::1]", "[0:0::1]:80", "localhost:1", "127.0.0.1:8765"] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for refused in ["[::2]:8765", "[::ffff:127.0.0.1]:8765", "evil.example:8765"] {
            assert_eq!(check(refused), Err(hyper::StatusCode::FORBIDDEN), "{refused}");
        }
        // An entry with a port allows that port only.
        let guard = HostGuard::new(&["[::1]:8765".to_string()], &[]);
        let mut h = hyper::HeaderMap::new();
        h.insert(hyper::header::HOST, "[::1]:8765".parse().unwrap());
        assert!(guard.check(&h).is_ok());
        h.insert(hyper::header::HOST, "[::1]:8766".parse().unwrap());
        assert!(guard.check(&h).is_err());
    }
}

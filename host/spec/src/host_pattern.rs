//! Host patterns, as the `net` request of a manifest, the operator's `net` grants and a
//! secret's bound origins write them: `example.com` (that host), `*.example.com` (any
//! subdomain of it, not itself), `*` (any host), or an IP address. Lower case; no scheme, port
//! or path.

use std::fmt;

/// A string that is not a host pattern (see the module's doc for what is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a host pattern; write `example.com`, `*.example.com` (subdomains) or `*` (lower case, no scheme, port or path)"
)]
pub struct NotAHostPattern(pub String);

/// A checked host pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPattern(String);

impl HostPattern {
    /// Check `p`: `*`, an IP address, or a lower-case DNS name (letters, digits, `-`, `.`)
    /// optionally behind `*.`.
    pub fn parse(p: &str) -> Result<HostPattern, NotAHostPattern> {
        if p == "*" || p.parse::<std::net::IpAddr>().is_ok() {
            return Ok(HostPattern(p.to_string()));
        }
        let name = p.strip_prefix("*.").unwrap_or(p);
        let ok = !name.is_empty()
            && !name.starts_with('.')
            && !name.ends_with('.')
            && !name.contains("..")
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if ok { Ok(HostPattern(p.to_string())) } else { Err(NotAHostPattern(p.to_string())) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `host` (lower case, no port) is one this pattern allows.
    pub fn matches(&self, host: &str) -> bool {
        matches(&self.0, host)
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `host` (lower case, no port) matches `pattern`: `*` any host, `*.d` any subdomain
/// of `d` (not `d` itself), otherwise the exact name or IP.
pub fn matches(pattern: &str, host: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.strip_prefix("*.") {
        Some(domain) => {
            host.len() > domain.len() + 1 && host.ends_with(domain) && {
                let cut = host.len() - domain.len();
                host.as_bytes()[cut - 1] == b'.'
            }
        }
        None => host == pattern,
    }
}

/// Whether two patterns can match a common host (for reporting a request as not granted).
pub fn overlaps(a: &str, b: &str) -> bool {
    let covers = |wild: &str, other: &str| match wild.strip_prefix("*.") {
        Some(d) => {
            other == wild || matches(wild, other.strip_prefix("*.").unwrap_or(other)) || {
                other.strip_prefix("*.").is_some_and(|od| matches(&format!("*.{od}"), d))
            }
        }
        None => false,
    };
    a == "*" || b == "*" || a == b || covers(a, b) || covers(b, a)
}

/// Whether every host `inner` matches is matched by `outer` (an approved request covers a new
/// one).
pub fn covers(outer: &str, inner: &str) -> bool {
    outer == inner
        || outer == "*"
        || (outer.starts_with("*.") && inner != "*" && matches(outer, inner.trim_start_matches("*.")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_patterns() {
        assert!(matches("example.com", "example.com"));
        assert!(!matches("example.com", "www.example.com"));
        assert!(matches("*.example.com", "www.example.com"));
        assert!(matches("*.example.com", "a.b.example.com"));
        assert!(!matches("*.example.com", "example.com"));
        assert!(!matches("*.example.com", "badexample.com"));
        assert!(!matches("*.example.com", "example.com.evil.net"));
        assert!(matches("*", "anything.org"));
        assert!(overlaps("*", "example.com"));
        assert!(overlaps("*.wikipedia.org", "en.wikipedia.org"));
        assert!(overlaps("en.wikipedia.org", "*.wikipedia.org"));
        assert!(overlaps("*.en.wikipedia.org", "*.wikipedia.org"));
        assert!(!overlaps("example.com", "*.example.com"));
        assert!(!overlaps("example.com", "example.org"));
        assert!(
            covers("*.wikipedia.org", "en.wikipedia.org") && covers("*.wikipedia.org", "*.de.wikipedia.org")
        );
        assert!(covers("*", "*") && !covers("*.wikipedia.org", "*") && !covers("example.com", "evil.com"));
    }

    #[test]
    fn patterns_are_checked() {
        for ok in ["*", "example.com", "*.example.com", "127.0.0.1", "::1", "a-b.c9.org"] {
            assert_eq!(HostPattern::parse(ok).unwrap().as_str(), ok);
        }
        for bad in ["", "Example.com", "http://x", "x.com:80", "*.", ".x", "x..y", "x/y", "*.*.x"] {
            let e = HostPattern::parse(bad).unwrap_err();
            assert_eq!(e.0, bad);
            assert!(e.to_string().contains("is not a host pattern"), "{bad}: {e}");
        }
        assert!(HostPattern::parse("*.example.com").unwrap().matches("a.example.com"));
    }
}

//! Outbound HTTP for plugins: the host side of the `toolhost:plugin/http` import, served with
//! `reqwest` on the host's tokio runtime.
//!
//! Plugins never get sockets (WASI `allow_tcp/udp/ip_name_lookup` are off). Every request a
//! plugin makes through this import is checked here, in this order:
//! 1. the per-call request budget (`[net] max_requests_per_call`);
//! 2. the method (GET, HEAD, POST, PUT, PATCH, DELETE) and the scheme (http, https only);
//! 3. the host, after URL parsing, against both the plugin's manifest request and the
//!    operator's grant (`[plugin.NAME] net = [...]`);
//! 4. the addresses the name resolves to (or the IP literal): loopback, private, link-local,
//!    CGNAT, multicast and unspecified ranges are refused unless the operator set
//!    `net_private = true` for that plugin — so a granted name that resolves to 127.0.0.1
//!    cannot reach the host's own services. Resolution happens in the client's resolver, so
//!    the address checked is the address connected to;
//! 5. redirects are followed by this module (never by reqwest), each hop checked as above;
//!    secret headers are dropped when a redirect leaves the original host;
//! 6. a timeout (the sooner of `[net] timeout_ms` and the call's own deadline) and a response
//!    size cap (the body is cut and marked `truncated`);
//! 7. a request body cap (`[net] max_request_kb`, refused before anything is sent) and a
//!    per-call transfer budget (`[net] max_transfer_mb`, request bodies sent plus response
//!    bodies received; a response is cut at what is left, a request that does not fit is
//!    refused).
//!
//! Secrets are injected as headers the plugin names; their values are redacted from response
//! headers and bodies before the guest sees them, and from everything a call returns.

use crate::config::NetSettings;
// The request and response records of the WIT `http` interface, as bindgen generated them.
use crate::runtime::toolhost::plugin::http::{Request, Response};
use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A secret granted to a plugin, with its value (read at load time).
#[derive(Clone, PartialEq, Eq)]
pub struct GrantedSecret {
    pub name: String,
    pub value: String,
    /// Hosts it may be sent to (empty: any host the plugin may reach).
    pub hosts: Vec<String>,
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

/// What one plugin may reach: the hosts it requested, the hosts granted (a host must match
/// both), whether private addresses are allowed, and its secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetGrant {
    pub requested: Vec<String>,
    pub granted: Vec<String>,
    pub private: bool,
    pub secrets: Vec<GrantedSecret>,
}

/// Whether `host` (lower case, no port) matches `pattern`: `*` any host, `*.d` any subdomain
/// of `d` (not `d` itself), otherwise the exact name or IP.
pub fn host_matches(pattern: &str, host: &str) -> bool {
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
pub fn patterns_overlap(a: &str, b: &str) -> bool {
    let covers = |wild: &str, other: &str| match wild.strip_prefix("*.") {
        Some(d) => {
            other == wild || host_matches(wild, other.strip_prefix("*.").unwrap_or(other)) || {
                other.strip_prefix("*.").is_some_and(|od| host_matches(&format!("*.{od}"), d))
            }
        }
        None => false,
    };
    a == "*" || b == "*" || a == b || covers(a, b) || covers(b, a)
}

impl NetGrant {
    pub fn is_empty(&self) -> bool {
        self.granted.is_empty() || self.requested.is_empty()
    }

    /// Every secret value with its name, for redaction.
    pub fn redactions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.secrets.iter().map(|s| (s.name.as_str(), s.value.as_str()))
    }

    fn check_host(&self, plugin: &str, host: &str) -> Result<(), String> {
        if !self.requested.iter().any(|p| host_matches(p, host)) {
            return Err(format!(
                "host `{host}` is not in plugin `{plugin}`'s manifest request (it asks for: {})",
                list_or_none(&self.requested)
            ));
        }
        if !self.granted.iter().any(|p| host_matches(p, host)) {
            return Err(format!(
                "host `{host}` is not granted to plugin `{plugin}`; the operator can add it with [plugin.{plugin}] net = [\"{host}\"] in toolhost.toml (or --allow-net {plugin}={host})"
            ));
        }
        Ok(())
    }
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() { "no hosts".to_string() } else { v.join(", ") }
}

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
                    return Err(format!(
                        "{host} resolves to {}, a {kind} address; private addresses need net_private = true for the plugin",
                        addr.ip()
                    )
                    .into());
                }
            }
            let iter: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(iter)
        })
    }
}

/// One shared client per mode (building a client loads TLS roots, so never per request).
fn client(allow_private: bool) -> Result<&'static reqwest::Client, String> {
    static STRICT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    static PRIVATE: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let cell = if allow_private { &PRIVATE } else { &STRICT };
    cell.get_or_init(|| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would connect on the plugin's behalf, past the address checks.
            .no_proxy()
            .dns_resolver(Arc::new(CheckedResolver { allow_private }))
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The network side of one call's store.
#[derive(Debug, Clone)]
pub struct NetCall {
    pub plugin: Arc<str>,
    pub grant: Arc<NetGrant>,
    pub settings: NetSettings,
    /// The call's deadline: no request may outlive it.
    pub deadline: Instant,
    pub requests: u32,
    /// What the host refused during this call for want of a grant, so a failed call's note
    /// can name the grant that matters and no other.
    pub refused: Vec<Refusal>,
    /// Request body bytes sent in this call (each redirect hop that resends it counts).
    pub sent_bytes: u64,
    /// Response body bytes received in this call.
    pub received_bytes: u64,
}

/// A request refused because a capability is not granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The host name the plugin tried to reach.
    Host(String),
    /// The secret the plugin named in a header.
    Secret(String),
}

impl NetCall {
    /// A fresh budget for one call.
    pub fn new(plugin: Arc<str>, grant: Arc<NetGrant>, settings: NetSettings, deadline: Instant) -> NetCall {
        NetCall {
            plugin,
            grant,
            settings,
            deadline,
            requests: 0,
            refused: Vec::new(),
            sent_bytes: 0,
            received_bytes: 0,
        }
    }
}

const METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/// Headers a plugin may not set (the host decides them, or they would bypass the host checks).
const RESERVED_HEADERS: [&str; 5] =
    ["host", "content-length", "transfer-encoding", "connection", "proxy-authorization"];

impl NetCall {
    /// Serve one request from the guest. Every refusal is an `Err` for the plugin.
    pub async fn send(&mut self, req: Request) -> Result<Response, String> {
        if self.grant.is_empty() {
            // Name the host the plugin tried, so the hint is a line the operator can paste.
            let host = reqwest::Url::parse(&req.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_else(|| "HOST".into());
            self.refused.push(Refusal::Host(host.clone()));
            return Err(if self.grant.requested.is_empty() {
                format!(
                    "plugin `{}` has no network access: its manifest requests no hosts (add `net = \"host\"` to its #[toolhost_sdk::plugin(...)])",
                    self.plugin
                )
            } else {
                format!(
                    "plugin `{p}` has no network access: it requests {} but no host is granted; the operator can add [plugin.{p}] net = [\"{host}\"] in toolhost.toml (or --allow-net {p}={host})",
                    self.grant.requested.join(", "),
                    p = self.plugin
                )
            });
        }
        self.requests += 1;
        if self.requests > self.settings.max_requests_per_call {
            return Err(format!(
                "too many HTTP requests in one call (limit {}: [net] max_requests_per_call)",
                self.settings.max_requests_per_call
            ));
        }
        let body_len = req.body.as_ref().map_or(0, |b| b.len() as u64);
        if body_len > self.settings.max_request_bytes {
            return Err(format!(
                "request body of {} KiB is over the limit of {} KiB per request ([net] max_request_kb = {} in toolhost.toml); nothing was sent",
                body_len.div_ceil(1024),
                self.settings.max_request_bytes / 1024,
                self.settings.max_request_bytes / 1024
            ));
        }
        let method = req.method.to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(format!(
                "HTTP method {:?} is not supported; use one of {}",
                req.method,
                METHODS.join(", ")
            ));
        }
        let mut method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
        let mut url = reqwest::Url::parse(&req.url).map_err(|e| format!("invalid URL {:?}: {e}", req.url))?;
        let first_host = self.check_url(&url)?;

        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &req.headers {
            let lower = name.to_ascii_lowercase();
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                return Err(format!("header `{name}` is set by the host and cannot be set by a plugin"));
            }
            let n = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name {name:?}"))?;
            let v = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| format!("invalid value for header `{name}`"))?;
            headers.append(n, v);
        }
        let mut secret_names = Vec::new();
        for crate::runtime::toolhost::plugin::http::SecretHeader { name, secret, prefix } in
            &req.secret_headers
        {
            let Some(s) = self.grant.secrets.iter().find(|s| &s.name == secret) else {
                self.refused.push(Refusal::Secret(secret.clone()));
                return Err(format!(
                    "secret `{secret}` is not granted to plugin `{p}`; the operator can add [plugin.{p}] secrets = [\"{secret}\"] and define [secrets.{secret}] in toolhost.toml",
                    p = self.plugin
                ));
            };
            if !s.hosts.is_empty() && !s.hosts.iter().any(|p| host_matches(p, &first_host)) {
                return Err(format!(
                    "secret `{secret}` may only be sent to {} (not {first_host}); see [secrets.{secret}] hosts",
                    s.hosts.join(", ")
                ));
            }
            let n = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name {name:?}"))?;
            let mut v = reqwest::header::HeaderValue::from_str(&format!("{prefix}{}", s.value))
                .map_err(|_| format!("secret `{secret}` cannot be sent in a header (invalid characters)"))?;
            v.set_sensitive(true);
            headers.insert(n.clone(), v);
            secret_names.push(n);
        }
        // Shared, not copied, for each hop that resends it.
        let mut body = req.body.map(bytes::Bytes::from);
        let client = client(self.grant.private)?;

        let mut hops = 0;
        let response = loop {
            let remaining = self.remaining()?;
            let mut rb =
                client.request(method.clone(), url.clone()).headers(headers.clone()).timeout(remaining);
            if let Some(b) = &body {
                self.charge_sent(b.len() as u64)?;
                rb = rb.body(b.clone());
            }
            let resp = rb.send().await.map_err(|e| {
                describe(&e, &url, remaining)
                    .replace("for the plugin", &format!("in [plugin.{}] of toolhost.toml", self.plugin))
            })?;
            let status = resp.status();
            if !status.is_redirection() || status == reqwest::StatusCode::NOT_MODIFIED {
                break resp;
            }
            let Some(location) = resp.headers().get(reqwest::header::LOCATION) else { break resp };
            let location =
                location.to_str().map_err(|_| format!("{url} redirected to an invalid Location"))?;
            let next = url
                .join(location)
                .map_err(|e| format!("{url} redirected to invalid URL {location:?}: {e}"))?;
            hops += 1;
            if hops > self.settings.max_redirects {
                return Err(format!(
                    "too many redirects (more than {}: [net] max_redirects), last to {next}",
                    self.settings.max_redirects
                ));
            }
            let next_host = self.check_url(&next).map_err(|e| format!("redirect from {url} refused: {e}"))?;
            if next_host != first_host || next.scheme() != url.scheme() {
                // Like browsers: credentials do not follow a redirect to another origin.
                for n in &secret_names {
                    headers.remove(n);
                }
                headers.remove(reqwest::header::AUTHORIZATION);
                headers.remove(reqwest::header::COOKIE);
            }
            if status == reqwest::StatusCode::SEE_OTHER
                || (matches!(status.as_u16(), 301 | 302) && method == reqwest::Method::POST)
            {
                method = reqwest::Method::GET;
                body = None;
                headers.remove(reqwest::header::CONTENT_TYPE);
            }
            url = next;
        };

        let status = response.status().as_u16();
        let final_url = response.url().to_string();
        let resp_headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), self.redact(&String::from_utf8_lossy(v.as_bytes()))))
            .collect();
        let (body, truncated) = self.read_body(response, &final_url).await?;
        Ok(Response { status, url: final_url, headers: resp_headers, body, truncated })
    }

    /// Check scheme, host grant and (for IP literals) the address; returns the host.
    fn check_url(&mut self, url: &reqwest::Url) -> Result<String, String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("scheme `{}` is not allowed (http and https only): {url}", url.scheme()));
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(format!("URL has no host: {url}")),
        };
        if let Err(e) = self.grant.check_host(&self.plugin, &host) {
            self.refused.push(Refusal::Host(host));
            return Err(e);
        }
        if !self.grant.private
            && let Ok(ip) = host.parse::<IpAddr>()
            && let Some(kind) = non_public(ip)
        {
            return Err(format!(
                "{host} is a {kind} address; private addresses need net_private = true in [plugin.{}]",
                self.plugin
            ));
        }
        Ok(host)
    }

    /// Bytes this call may still send or receive.
    fn transfer_left(&self) -> u64 {
        self.settings.max_transfer_bytes.saturating_sub(self.sent_bytes + self.received_bytes)
    }

    fn charge_sent(&mut self, n: u64) -> Result<(), String> {
        if n > self.transfer_left() {
            return Err(format!(
                "sending {} KiB would pass this call's HTTP transfer budget of {} MiB (already sent {} KiB, received {} KiB; [net] max_transfer_mb = {} in toolhost.toml)",
                n.div_ceil(1024),
                self.settings.max_transfer_bytes / (1024 * 1024),
                self.sent_bytes / 1024,
                self.received_bytes / 1024,
                self.settings.max_transfer_bytes / (1024 * 1024)
            ));
        }
        self.sent_bytes += n;
        Ok(())
    }

    fn remaining(&self) -> Result<Duration, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the call's time limit was reached before the request could be sent".into());
        }
        Ok(left.min(Duration::from_millis(self.settings.timeout_ms)))
    }

    async fn read_body(
        &mut self,
        mut response: reqwest::Response,
        url: &str,
    ) -> Result<(Vec<u8>, bool), String> {
        // The response cap, or what is left of the call's transfer budget if that is less.
        let cap = self.settings.max_response_bytes.min(self.transfer_left()) as usize;
        let mut body = Vec::new();
        let mut truncated = false;
        let read = async {
            while let Some(chunk) =
                response.chunk().await.map_err(|e| format!("reading {url}: {}", chain(&e)))?
            {
                let room = cap - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<(), String>(())
        };
        let left = self.remaining()?;
        let r = tokio::time::timeout(left, read).await;
        self.received_bytes += body.len() as u64;
        match r {
            Ok(r) => r?,
            Err(_) => return Err(format!("reading {url} timed out after {} ms", left.as_millis())),
        }
        Ok((redact_bytes(body, &self.grant), truncated))
    }

    fn redact(&self, s: &str) -> String {
        redact(s, &self.grant).into_owned()
    }
}

fn chain(e: &dyn std::error::Error) -> String {
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

fn describe(e: &reqwest::Error, url: &reqwest::Url, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!("request to {url} timed out after {} ms", timeout.as_millis());
    }
    // The resolver's refusal is deep in the chain; show the innermost useful cause.
    let mut src: Option<&dyn std::error::Error> = Some(e);
    let mut last = e.to_string();
    while let Some(s) = src {
        last = s.to_string();
        src = s.source();
    }
    format!("request to {url} failed: {last}")
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

fn redact_bytes(body: Vec<u8>, grant: &NetGrant) -> Vec<u8> {
    let mut body = body;
    for (name, value) in grant.redactions() {
        let needle = value.as_bytes();
        if needle.is_empty() || !body.windows(needle.len()).any(|w| w == needle) {
            continue;
        }
        let with = format!("[secret {name} redacted]");
        let mut out = Vec::with_capacity(body.len());
        let mut i = 0;
        while i < body.len() {
            if body[i..].starts_with(needle) {
                out.extend_from_slice(with.as_bytes());
                i += needle.len();
            } else {
                out.push(body[i]);
                i += 1;
            }
        }
        body = out;
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_patterns() {
        assert!(host_matches("example.com", "example.com"));
        assert!(!host_matches("example.com", "www.example.com"));
        assert!(host_matches("*.example.com", "www.example.com"));
        assert!(host_matches("*.example.com", "a.b.example.com"));
        assert!(!host_matches("*.example.com", "example.com"));
        assert!(!host_matches("*.example.com", "badexample.com"));
        assert!(!host_matches("*.example.com", "example.com.evil.net"));
        assert!(host_matches("*", "anything.org"));
        assert!(patterns_overlap("*", "example.com"));
        assert!(patterns_overlap("*.wikipedia.org", "en.wikipedia.org"));
        assert!(patterns_overlap("en.wikipedia.org", "*.wikipedia.org"));
        assert!(patterns_overlap("*.en.wikipedia.org", "*.wikipedia.org"));
        assert!(!patterns_overlap("example.com", "*.example.com"));
        assert!(!patterns_overlap("example.com", "example.org"));
    }

    #[test]
    fn address_classes() {
        for (ip, kind) in [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("192.168.1.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("0.0.0.0", Some("unspecified")),
            ("100.64.0.1", Some("shared (CGNAT)")),
            ("::1", Some("loopback")),
            ("fd00::1", Some("private (unique local)")),
            ("fe80::1", Some("link-local")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("93.184.216.34", None),
            ("2606:4700::1111", None),
        ] {
            assert_eq!(non_public(ip.parse().unwrap()), kind, "{ip}");
        }
    }

    #[test]
    fn redaction_in_text_and_bytes() {
        let grant = NetGrant {
            secrets: vec![GrantedSecret { name: "gh".into(), value: "s3cr3t-value".into(), hosts: vec![] }],
            ..Default::default()
        };
        assert_eq!(redact("token=s3cr3t-value;", &grant), "token=[secret gh redacted];");
        assert_eq!(
            redact_bytes(b"xs3cr3t-values3cr3t-value".to_vec(), &grant),
            b"x[secret gh redacted][secret gh redacted]"
        );
        assert!(format!("{:?}", grant).contains("<redacted>") && !format!("{:?}", grant).contains("s3cr3t"));
    }
}

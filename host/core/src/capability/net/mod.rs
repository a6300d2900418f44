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
//! 5. the host's own listeners ([`listeners`]: `serve --http`'s port) are refused to every
//!    plugin, whatever its grant: an IP literal before anything is sent, and the connected
//!    socket's peer address before the request is written;
//! 6. redirects are followed by this module (never by reqwest), each hop checked as above;
//!    secret headers (and `Authorization`, `Cookie`) are dropped as soon as a redirect changes
//!    the origin — scheme, host or port;
//! 7. a timeout (the sooner of `[net] timeout_ms` and the call's own deadline) and a response
//!    size cap (the body is cut and marked `truncated`);
//! 8. a request body cap (`[net] max_request_kb`, refused before anything is sent) and a
//!    per-call transfer budget (`[net] max_transfer_mb`, request bodies sent plus response
//!    bodies received; a response is cut at what is left, a request that does not fit is
//!    refused).
//!
//! # Secrets
//!
//! A secret is injected as a header the plugin names, only on a request to an origin the
//! operator bound it to ([`SecretOrigin`]: `[secrets.NAME] hosts`, https on port 443 unless an
//! entry says otherwise). Its value never enters the guest. What a server sends back is the
//! risk: a server that echoes request headers would hand the value to the plugin. So, for a
//! plugin that holds any secret (whether or not this request carries one — a server may store
//! what an earlier request sent):
//!
//! - **No redaction, refusal.** A response that contains the value of one of the plugin's
//!   secrets — in a header of any hop, in the final URL, in the body — is refused as a whole
//!   (an `Err` naming the secret and where it was), never returned masked. Masking is an
//!   oracle: a plugin that sends a guess in a header and sees it come back masked or not
//!   learns whether it guessed right, and a masked response still shows where the value
//!   stood and how long it was. An error the host would return is checked the same way.
//! - **Truncation cannot cut a secret.** A body cut at the response cap or at the end of the
//!   transfer budget could end inside a reflected value, and a cut value is not the value:
//!   the whole-value check would not see it, and the plugin would read its first bytes. So the
//!   host reads `L - 1` bytes past the cut (`L`: the length of the plugin's longest secret),
//!   checks that whole window for whole values, and only then cuts. Any occurrence that
//!   starts before the cut ends inside the window, so it is seen and the response refused;
//!   an occurrence that starts at or after the cut is not returned at all. The read-ahead stays
//!   inside the transfer budget (when the budget is what cuts the body, the cut comes `L - 1`
//!   bytes earlier), so the budget still holds exactly.
//!
//!   Why not check the cut itself (refuse when the body ends with the start of a secret)?
//!   Because the plugin controls what the server echoes: it would put a guess at the cut and
//!   learn from the refusal whether the guess is the start of the secret, one character at a
//!   time. With the read-ahead, the only thing that decides a refusal is whether a *complete*
//!   value occurs in bytes the host read, so a guess teaches the plugin exactly one thing:
//!   whether that complete guess is the secret — no more than it could learn by sending the
//!   guess to the server as a password.
//! - **The host owns the encoding.** A gzip'd echo carries the value in a form no byte check
//!   can see. The host sends `Accept-Encoding: identity` (whatever the plugin set), refuses
//!   plugin-set `Range`, `If-Range` and `TE` (a partial body is a cut the host did not make),
//!   and refuses a response that is content-encoded anyway, uses a transfer coding other
//!   than `chunked`, or is partial content (206 or `Content-Range`).
//!
//! What cannot be caught: a server that transforms the value before echoing it (base64, hex,
//! percent-encoding, case folding, compression without saying so, an excerpt it cuts itself)
//! hands the plugin the secret in a form no check recognises. The value's *length* is not
//! hidden either (a reflecting server's `Content-Length` shows it). Bind each secret to the
//! origins that need it and grant it only to plugins whose servers do not reflect it.
//!
//! Values are still redacted from everything a call returns and from the plugin's log lines
//! ([`redact`]): the guest never sees those, so the difference cannot teach it anything.

mod capability;
mod error;
pub mod listeners;
pub mod settings;

pub use capability::Net;
pub use error::{NetError, Place, ResolvedPrivate};
pub use settings::{NetSettings, Origin, SecretOrigin};
// The request and response records of the WIT `http` interface, as bindgen generated them.
use crate::bindings::http::{Request, Response};
use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
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
    fn refusal(&self, origin: &Origin) -> NetError {
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

    fn check_host(&self, plugin: &Arc<str>, host: &str) -> Result<(), NetError> {
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
fn client(allow_private: bool) -> Result<&'static reqwest::Client, NetError> {
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

/// What the host refused a call for want of a grant (see [`crate::capability::Refusal`]).
pub use crate::capability::Refusal;

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
/// Headers a plugin that holds secrets may not set: each asks the server for a part of the
/// body (a cut the host did not make) or for a transfer coding the host would have to undo.
/// (`Accept-Encoding` is not refused but replaced: the host sends `identity`.)
const PARTIAL_HEADERS: [&str; 3] = ["range", "if-range", "te"];

impl NetCall {
    /// Serve one request from the guest. Every refusal is an `Err` for the plugin; one for want
    /// of a grant is also recorded in [`NetCall::refused`].
    pub async fn send(&mut self, req: Request) -> Result<Response, NetError> {
        let r = self.send_checked(req).await;
        let Err(e) = r else { return r };
        if let Some(refusal) = e.refusal() {
            self.refused.push(refusal);
        }
        // Last line of defence: no error text carries a secret either (a URL a server sent
        // can end up in one). Replaced whole, like a response, never masked.
        if let Some(name) = self.grant.reflected(e.to_string().as_bytes()) {
            return Err(NetError::SecretInError { plugin: self.plugin.clone(), secret: name.to_string() });
        }
        Err(e)
    }

    async fn send_checked(&mut self, req: Request) -> Result<Response, NetError> {
        // Before anything else: no grant (and no grant question) reaches the host's own servers.
        if let Ok(url) = reqwest::Url::parse(&req.url) {
            own_listener_literal(&url)?;
        }
        if self.grant.is_empty() {
            // Name the host the plugin tried, so the hint is a line the operator can paste.
            let host = reqwest::Url::parse(&req.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_else(|| "HOST".into());
            let plugin = self.plugin.clone();
            return Err(if self.grant.requested.is_empty() {
                NetError::NothingRequested { plugin, host }
            } else {
                NetError::NothingGranted { plugin, host, requested: self.grant.requested.clone() }
            });
        }
        self.requests += 1;
        if self.requests > self.settings.max_requests_per_call {
            return Err(NetError::TooManyRequests { limit: self.settings.max_requests_per_call });
        }
        let body_len = req.body.as_ref().map_or(0, |b| b.len() as u64);
        if body_len > self.settings.max_request_bytes {
            return Err(NetError::BodyTooLarge { bytes: body_len, limit: self.settings.max_request_bytes });
        }
        let unsupported = || NetError::Method { method: req.method.clone() };
        let method = req.method.to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(unsupported());
        }
        let mut method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| unsupported())?;
        let mut url = reqwest::Url::parse(&req.url)
            .map_err(|reason| NetError::InvalidUrl { url: req.url.clone(), reason })?;
        let mut origin = self.check_url(&url)?;
        // A plugin that holds secrets gets every response checked for them (see the module
        // docs), so the host decides that the body comes whole and unencoded.
        let guarded = !self.grant.secrets.is_empty();

        let mut headers = reqwest::header::HeaderMap::new();
        let secret_header_names = req.secret_headers.iter().map(|s| &s.name);
        for name in req.headers.iter().map(|(n, _)| n).chain(secret_header_names) {
            let lower = name.to_ascii_lowercase();
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                return Err(NetError::ReservedHeader { name: name.clone() });
            }
            if guarded && PARTIAL_HEADERS.contains(&lower.as_str()) {
                return Err(NetError::PartialHeader { plugin: self.plugin.clone(), name: name.clone() });
            }
        }
        if let Some(s) = req.secret_headers.iter().find(|s| s.name.eq_ignore_ascii_case("accept-encoding")) {
            return Err(NetError::SecretAsHostHeader { secret: s.secret.clone(), name: s.name.clone() });
        }
        for (name, value) in &req.headers {
            if guarded && name.eq_ignore_ascii_case("accept-encoding") {
                continue; // the host's `identity` below, whatever the plugin asked for
            }
            let n = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| NetError::HeaderName { name: name.clone() })?;
            let v = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| NetError::HeaderValue { name: name.clone() })?;
            headers.append(n, v);
        }
        let mut secret_names = Vec::new();
        for crate::bindings::http::SecretHeader { name, secret, prefix } in &req.secret_headers {
            let Some(s) = self.grant.secrets.iter().find(|s| &s.name == secret) else {
                return Err(NetError::SecretNotGranted {
                    plugin: self.plugin.clone(),
                    secret: secret.clone(),
                });
            };
            if !s.allows(&origin) {
                return Err(s.refusal(&origin));
            }
            let n = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| NetError::HeaderName { name: name.clone() })?;
            let mut v = reqwest::header::HeaderValue::from_str(&format!("{prefix}{}", s.value))
                .map_err(|_| NetError::SecretValue { secret: secret.clone() })?;
            v.set_sensitive(true);
            headers.insert(n.clone(), v);
            secret_names.push(n);
        }
        if guarded {
            // After the secret headers, so a plugin's own headers keep their order.
            let identity = reqwest::header::HeaderValue::from_static("identity");
            headers.insert(reqwest::header::ACCEPT_ENCODING, identity);
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
            let resp = rb.send().await.map_err(|e| self.describe(&e, &url, remaining))?;
            // Every hop's headers, before anything of them (a Location) is used.
            self.check_headers(&resp, &url)?;
            let status = resp.status();
            if !status.is_redirection() || status == reqwest::StatusCode::NOT_MODIFIED {
                break resp;
            }
            let Some(location) = resp.headers().get(reqwest::header::LOCATION) else { break resp };
            let location =
                location.to_str().map_err(|_| NetError::RedirectLocation { url: url.to_string() })?;
            let next = url.join(location).map_err(|reason| NetError::RedirectUrl {
                url: url.to_string(),
                location: location.to_string(),
                reason,
            })?;
            hops += 1;
            if hops > self.settings.max_redirects {
                return Err(NetError::TooManyRedirects {
                    limit: self.settings.max_redirects,
                    next: next.to_string(),
                });
            }
            let next_origin = self
                .check_url(&next)
                .map_err(|e| NetError::RedirectRefused { url: url.to_string(), refused: Box::new(e) })?;
            if next_origin != origin {
                // Like browsers, and stricter: credentials do not follow a redirect to another
                // origin — another scheme (https to http) or port of the same host included.
                // Once dropped they stay dropped, even if a later hop comes back.
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
            origin = next_origin;
        };

        let status = response.status().as_u16();
        let final_url = response.url().to_string();
        if let Some(name) = self.grant.reflected(final_url.as_bytes()) {
            return Err(NetError::SecretInUrl { plugin: self.plugin.clone(), secret: name.to_string() });
        }
        if guarded {
            self.check_whole_and_unencoded(&response, &url)?;
        }
        let resp_headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        let (body, truncated) = self.read_body(response, &url).await?;
        Ok(Response { status, url: final_url, headers: resp_headers, body, truncated })
    }

    /// Check scheme, host grant and (for IP literals) the address, the host's own listeners
    /// included; returns the origin.
    fn check_url(&self, url: &reqwest::Url) -> Result<Origin, NetError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(NetError::Scheme { scheme: url.scheme().to_string(), url: url.to_string() });
        }
        let Some(origin) = Origin::of(url) else { return Err(NetError::NoHost { url: url.to_string() }) };
        let host = &origin.host;
        let ip = host.parse::<IpAddr>().ok();
        // First: this holds whatever the grant says, and no grant question is asked about it.
        own_listener_literal(url)?;
        self.grant.check_host(&self.plugin, host)?;
        if !self.grant.private
            && let Some(ip) = ip
            && let Some(kind) = non_public(ip)
        {
            return Err(NetError::PrivateAddress { plugin: self.plugin.clone(), host: host.clone(), kind });
        }
        Ok(origin)
    }

    /// The refusal of a response that contains the value of secret `name`.
    fn reflection(&self, url: &reqwest::Url, name: &str, place: Place) -> NetError {
        NetError::SecretReflected {
            plugin: self.plugin.clone(),
            url: url.to_string(),
            secret: name.to_string(),
            place,
        }
    }

    /// Refuse a response with a secret in a header name or value.
    fn check_headers(&self, response: &reqwest::Response, url: &reqwest::Url) -> Result<(), NetError> {
        if self.grant.secrets.is_empty() {
            return Ok(());
        }
        for (k, v) in response.headers() {
            let found =
                self.grant.reflected(k.as_str().as_bytes()).or_else(|| self.grant.reflected(v.as_bytes()));
            if let Some(name) = found {
                return Err(self.reflection(url, name, Place::Header(k.as_str().to_string())));
            }
        }
        Ok(())
    }

    /// Refuse what the host cannot check byte for byte: an encoded or partial body.
    fn check_whole_and_unencoded(
        &self,
        response: &reqwest::Response,
        url: &reqwest::Url,
    ) -> Result<(), NetError> {
        let (plugin, url) = (self.plugin.clone(), url.to_string());
        let h = response.headers();
        let value = |name| h.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        for coding in value(reqwest::header::CONTENT_ENCODING) {
            for c in coding.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                if !c.eq_ignore_ascii_case("identity") {
                    return Err(NetError::ContentEncoded { plugin, url, coding: c.to_string() });
                }
            }
        }
        for coding in value(reqwest::header::TRANSFER_ENCODING) {
            for c in coding.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                if !c.eq_ignore_ascii_case("chunked") {
                    return Err(NetError::TransferCoding { plugin, url, coding: c.to_string() });
                }
            }
        }
        if response.status() == reqwest::StatusCode::PARTIAL_CONTENT
            || h.contains_key(reqwest::header::CONTENT_RANGE)
        {
            return Err(NetError::PartialContent { plugin, url });
        }
        Ok(())
    }

    /// Bytes this call may still send or receive.
    fn transfer_left(&self) -> u64 {
        self.settings.max_transfer_bytes.saturating_sub(self.sent_bytes + self.received_bytes)
    }

    fn charge_sent(&mut self, n: u64) -> Result<(), NetError> {
        if n > self.transfer_left() {
            return Err(NetError::TransferBudget {
                bytes: n,
                limit: self.settings.max_transfer_bytes,
                sent: self.sent_bytes,
                received: self.received_bytes,
            });
        }
        self.sent_bytes += n;
        Ok(())
    }

    fn remaining(&self) -> Result<Duration, NetError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(NetError::Deadline);
        }
        Ok(left.min(Duration::from_millis(self.settings.timeout_ms)))
    }

    /// Read the body up to the cap; for a plugin with secrets, read `L - 1` bytes past the cut,
    /// refuse the response if that window holds a whole secret, then cut (module docs).
    async fn read_body(
        &mut self,
        mut response: reqwest::Response,
        url: &reqwest::Url,
    ) -> Result<(Vec<u8>, bool), NetError> {
        let (cap, window) =
            body_window(self.settings.max_response_bytes, self.transfer_left(), self.grant.longest_secret());
        let (cap, window) = (cap as usize, window as usize);
        let mut body = Vec::new();
        let mut more = false;
        let read = async {
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| NetError::Reading { url: url.to_string(), cause: chain(&e) })?
            {
                let room = window - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    more = true;
                    break;
                }
                body.extend_from_slice(&chunk);
                if body.len() == window && body.len() > cap {
                    // The window is full and past the cut: whatever follows is not needed.
                    more = true;
                    break;
                }
            }
            Ok::<(), NetError>(())
        };
        let left = self.remaining()?;
        let r = tokio::time::timeout(left, read).await;
        self.received_bytes += body.len() as u64;
        match r {
            Ok(r) => r?,
            Err(_) => return Err(NetError::ReadTimeout { url: url.to_string(), after: left }),
        }
        cut_body(body, more, cap, &self.grant).map_err(|name| self.reflection(url, name, Place::Body))
    }
}

/// What the guest gets of a body read as far as its window (`more`: the stream went on): the
/// part before the cut and whether anything was cut, or the name of a secret whose whole value
/// is in what was read (the response is refused).
fn cut_body(mut body: Vec<u8>, more: bool, cap: usize, grant: &NetGrant) -> Result<(Vec<u8>, bool), &str> {
    if let Some(name) = grant.reflected(&body) {
        return Err(name);
    }
    let truncated = more || body.len() > cap;
    body.truncate(cap);
    Ok((body, truncated))
}

/// Where a body is cut (`cap`) and how much of it is read (`window`), given the response cap,
/// the transfer budget left and the length of the longest secret (0: none). The window reaches
/// `longest - 1` bytes past the cut, so a secret that starts before the cut ends inside it;
/// both stay within the budget.
fn body_window(max_response: u64, budget_left: u64, longest: usize) -> (u64, u64) {
    let ahead = (longest as u64).saturating_sub(1);
    let cap = max_response.min(budget_left.saturating_sub(ahead));
    (cap, (cap + ahead).min(budget_left))
}

/// Refuse a URL whose host is an IP literal at which one of the host's own listeners answers
/// (a name is checked once connected: [`listeners::PeerCheckLayer`]).
fn own_listener_literal(url: &reqwest::Url) -> Result<(), NetError> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return Ok(()),
    };
    let Some(port) = url.port_or_known_default() else { return Ok(()) };
    listeners::check(std::net::SocketAddr::new(ip, port))
        .map_err(|own| NetError::OwnListener { url: url.to_string(), own })
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

impl NetCall {
    /// What a request that could not be made failed of: the host's own refusals (its own
    /// listener, a name resolving to a private address) found in the client's error chain,
    /// else a timeout or the innermost cause the client gave.
    fn describe(&self, e: &reqwest::Error, url: &reqwest::Url, timeout: Duration) -> NetError {
        let url = url.to_string();
        if let Some(own) = listeners::refusal_in(e) {
            return NetError::OwnListener { url, own };
        }
        if let Some(resolved) = ResolvedPrivate::find_in(e) {
            return NetError::ResolvesPrivate { plugin: self.plugin.clone(), url, resolved };
        }
        if e.is_timeout() {
            return NetError::Timeout { url, after: timeout };
        }
        let mut src: Option<&dyn std::error::Error> = Some(e);
        let mut last = e.to_string();
        while let Some(s) = src {
            last = s.to_string();
            src = s.source();
        }
        NetError::Failed { url, cause: last }
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

impl crate::bindings::http::Host for NetCall {
    /// Every check and bound is in [`NetCall::send`]; the request is a child span of the
    /// call's when telemetry is on: method, host and port, status (no path, query or header).
    async fn send(&mut self, req: Request) -> Result<Response, String> {
        use crate::telemetry::attr;
        let span = crate::telemetry::host_span("http", || {
            let mut a = vec![attr("http.request.method", req.method.clone())];
            if let Ok(url) = reqwest::Url::parse(&req.url) {
                a.push(attr("url.scheme", url.scheme().to_string()));
                if let Some(host) = url.host_str() {
                    a.push(attr("server.address", host.to_string()));
                }
                if let Some(port) = url.port_or_known_default() {
                    a.push(attr("server.port", i64::from(port)));
                }
            }
            a
        });
        let r = NetCall::send(self, req).await;
        span.end(r.is_err(), || match &r {
            Ok(resp) => vec![attr("http.response.status_code", i64::from(resp.status))],
            Err(_) => vec![attr("error.type", "refused_or_failed")],
        });
        // The guest reads the text; what the host needs of a refusal is recorded in `refused`.
        r.map_err(|e| e.to_string())
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
        granted: grant.net.clone(),
        private: grant.net_private,
        secrets: Vec::new(),
    };
    for host in &request.net {
        if !grant.net.iter().any(|g| toolhost_spec::host_pattern::overlaps(host, g)) {
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
        match (grant.secrets.iter().any(|s| s == secret), source) {
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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn grant(secrets: &[(&str, &str)]) -> NetGrant {
        NetGrant {
            secrets: secrets
                .iter()
                .map(|(n, v)| GrantedSecret { name: n.to_string(), value: v.to_string(), hosts: vec![] })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn redaction_of_outcomes_and_reflection_in_bytes() {
        let grant = grant(&[("gh", "s3cr3t-value")]);
        assert_eq!(redact("token=s3cr3t-value;", &grant), "token=[secret gh redacted];");
        assert_eq!(grant.reflected(b"xs3cr3t-values3cr3t-value"), Some("gh"));
        assert_eq!(grant.reflected(b"xs3cr3t-valu"), None, "only a whole value counts");
        assert_eq!(NetGrant::default().reflected(b"anything"), None);
        assert!(format!("{:?}", grant).contains("<redacted>") && !format!("{:?}", grant).contains("s3cr3t"));
    }

    #[test]
    fn secret_origins_parse_with_https_on_443_by_default() {
        let o = |s: &str| SecretOrigin::parse(s).unwrap();
        let origin = |url: &str| Origin::of(&reqwest::Url::parse(url).unwrap()).unwrap();
        assert_eq!(
            o("api.example.com"),
            SecretOrigin { scheme: "https".into(), host: "api.example.com".into(), port: 443 }
        );
        assert_eq!(o("https://api.example.com/"), o("api.example.com"));
        assert_eq!(
            o("http://127.0.0.1:8080"),
            SecretOrigin { scheme: "http".into(), host: "127.0.0.1".into(), port: 8080 }
        );
        assert_eq!(o("HTTP://localhost").port, 80);
        assert_eq!(o("[::1]:8443").host, "::1");
        assert_eq!(o("http://[0:0::1]").to_string(), "http://[::1]");
        assert_eq!(o("::1").port, 443);
        assert_eq!(o("*.example.com:8443").to_string(), "https://*.example.com:8443");
        for (bad, why) in [
            ("ftp://example.com", "scheme `ftp` is not allowed"),
            ("https://api.example.com/v1", "not an origin"),
            ("https://user@api.example.com", "not an origin"),
            ("api.example.com?x=1", "not an origin"),
            ("api.example.com:0", "port `0`"),
            ("api.example.com:https", "port `https`"),
            ("API.example.com", "is not a host pattern"),
            ("http://", "is not a host pattern"),
            ("[::1", "without a closing"),
            ("[nope]:80", "not an IPv6 address"),
        ] {
            let e = SecretOrigin::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }

        // The binding is the whole origin: scheme, host and port.
        let bound = o("api.example.com");
        assert!(bound.allows(&origin("https://api.example.com/v1/me")));
        assert!(bound.allows(&origin("https://API.example.com:443/")));
        assert!(!bound.allows(&origin("http://api.example.com/")), "not over http");
        assert!(!bound.allows(&origin("https://api.example.com:8443/")), "not on another port");
        assert!(!bound.allows(&origin("https://www.example.com/")));
        assert!(o("http://127.0.0.1:8080").allows(&origin("http://127.0.0.1:8080/echo")));
        assert!(!o("http://127.0.0.1:8080").allows(&origin("http://127.0.0.1:8081/echo")));
        assert!(o("*.example.com").allows(&origin("https://a.example.com")));
        assert!(o("[::1]:8443").allows(&origin("https://[::1]:8443/")));
        // What a redirect must keep for secret headers to follow it.
        assert_eq!(origin("https://h.example/a"), origin("https://H.example:443/b?c"));
        assert_ne!(origin("https://h.example/"), origin("http://h.example:443/"), "scheme");
        assert_ne!(origin("http://127.0.0.1:8080/"), origin("http://127.0.0.1:8081/"), "port");

        // No `hosts`: any host, but https on 443 only; the refusal is the line to add.
        let s = GrantedSecret { name: "t".into(), value: "v".repeat(8), hosts: vec![] };
        assert!(s.allows(&origin("https://anything.example/")));
        assert!(
            !s.allows(&origin("http://anything.example/")) && !s.allows(&origin("https://a.example:444/"))
        );
        let e = s.refusal(&origin("http://127.0.0.1:8080/x")).to_string();
        assert!(
            e.contains("over https on port 443") && e.contains("hosts = [\"http://127.0.0.1:8080\"]"),
            "{e}"
        );
        let s = GrantedSecret { hosts: vec![o("api.example.com"), o("http://localhost:81")], ..s };
        let e = s.refusal(&origin("https://localhost:81/")).to_string();
        assert!(
            e.contains(
                "may only be sent to https://api.example.com, http://localhost:81 (not https://localhost:81)"
            ),
            "{e}"
        );
    }

    /// Everything the guest gets of a body `full`, read the way `read_body` reads it.
    fn served<'g>(
        full: &[u8],
        max_response: u64,
        left: u64,
        grant: &'g NetGrant,
    ) -> Result<(Vec<u8>, bool), &'g str> {
        let (cap, window) = body_window(max_response, left, grant.longest_secret());
        assert!(window <= left, "the read-ahead stays within the budget");
        let read = &full[..full.len().min(window as usize)];
        cut_body(read.to_vec(), full.len() > read.len(), cap as usize, grant)
    }

    /// The truncation oracle, exhaustively: wherever the budget cuts a body that reflects the
    /// secret, the guest gets either a refusal or bytes that end before the secret starts.
    #[test]
    fn a_cut_never_returns_part_of_a_secret() {
        let secret = "k7Q2-x9Zp4mW";
        for other in ["", "short-ok", "a-much-longer-second-secret-value"] {
            let g = if other.is_empty() {
                grant(&[("t", secret)])
            } else {
                grant(&[("t", secret), ("o", other)])
            };
            for before in [0usize, 1, 30] {
                let full = format!("{}authorization: Bearer {secret}\r\nx-after: 1\r\n", "h".repeat(before));
                let at = full.find(secret).unwrap();
                for left in 0..=full.len() as u64 + 40 {
                    for max_response in [1u64, at as u64, 2 * 1024 * 1024] {
                        match served(full.as_bytes(), max_response, left, &g) {
                            Err(name) => assert_eq!(name, "t"),
                            Ok((body, _)) => assert!(
                                body.len() <= at,
                                "{left} left, cap {max_response}: {:?} holds a part of the secret",
                                String::from_utf8_lossy(&body)
                            ),
                        }
                    }
                }
            }
        }
        // Without secrets nothing is read ahead: the cut is at the budget, as before.
        assert_eq!(served(b"0123456789", 100, 4, &NetGrant::default()).unwrap(), (b"0123".to_vec(), true));
        assert_eq!(served(b"0123", 4, 100, &NetGrant::default()).unwrap(), (b"0123".to_vec(), false));
    }

    /// The guess oracle at the cut: a guess the plugin puts where the body is cut is treated
    /// the same whether or not it is the start of the secret; only the complete value differs.
    #[test]
    fn a_guess_at_the_cut_teaches_nothing_but_the_complete_value() {
        let secret = "k7Q2-x9Zp4mW";
        let g = grant(&[("t", secret)]);
        let outcome = |guess: &str, left: u64| {
            let full = format!("x-guess: {guess}\r\nx-after: 1\r\n");
            served(full.as_bytes(), 1 << 20, left, &g).map(|(b, t)| (b.len(), t))
        };
        for len in 1..secret.len() {
            let right = &secret[..len];
            let wrong: String = right.chars().rev().map(|c| if c == 'z' { 'y' } else { 'z' }).collect();
            for left in 0..64 {
                assert_eq!(outcome(right, left), outcome(&wrong, left), "prefix of {len} at {left} left");
            }
        }
        // The complete value is refused wherever it lands in the window (the one thing a
        // guess can teach: this complete guess is the secret).
        assert!(outcome(secret, 1 << 20).is_err());
        assert!(outcome(secret, 9 + secret.len() as u64 + 3).is_err());
    }

    #[test]
    fn the_window_reserves_the_read_ahead_inside_the_budget() {
        assert_eq!(body_window(100, 1000, 0), (100, 100));
        assert_eq!(body_window(100, 1000, 20), (100, 119));
        assert_eq!(body_window(100, 50, 20), (31, 50));
        assert_eq!(body_window(100, 10, 20), (0, 10));
        assert_eq!(body_window(100, 0, 20), (0, 0));
    }
}

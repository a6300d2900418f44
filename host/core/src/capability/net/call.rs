//! One call's outbound HTTP: the request checked (see the module docs of `capability::net`),
//! sent and redirected hop by hop, and its response checked for the plugin's secrets before
//! the guest sees any of it.

use super::client::{chain, client, non_public};
use super::{NetError, NetGrant, NetSettings, Origin, Place, Refusal, ResolvedPrivate, listeners};
// The request and response records of the WIT `http` interface, as bindgen generated them.
use crate::bindings::http::{Request, Response};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// What the next hop of a request sends.
struct Outgoing {
    method: reqwest::Method,
    url: reqwest::Url,
    origin: Origin,
    headers: HeaderMap,
    /// The headers that carry secrets, dropped when a redirect leaves the origin.
    secret_names: Vec<HeaderName>,
    body: Option<bytes::Bytes>,
}

impl Outgoing {
    /// Follow a redirect (`status`) to `next`, already checked.
    fn redirect(&mut self, status: reqwest::StatusCode, next: reqwest::Url, next_origin: Origin) {
        if next_origin != self.origin {
            // Like browsers, and stricter: credentials do not follow a redirect to another
            // origin — another scheme (https to http) or port of the same host included.
            // Once dropped they stay dropped, even if a later hop comes back.
            for n in &self.secret_names {
                self.headers.remove(n);
            }
            self.headers.remove(reqwest::header::AUTHORIZATION);
            self.headers.remove(reqwest::header::COOKIE);
        }
        if status == reqwest::StatusCode::SEE_OTHER
            || (matches!(status.as_u16(), 301 | 302) && self.method == reqwest::Method::POST)
        {
            self.method = reqwest::Method::GET;
            self.body = None;
            self.headers.remove(reqwest::header::CONTENT_TYPE);
        }
        self.url = next;
        self.origin = next_origin;
    }
}

pub(super) const METHODS: [&str; 6] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
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
        let (method, url, origin) = self.admit(&req)?;
        // A plugin that holds secrets gets every response checked for them (see the module
        // docs), so the host decides that the body comes whole and unencoded.
        let guarded = !self.grant.secrets.is_empty();
        let (headers, secret_names) = self.headers(&req, &origin, guarded)?;
        // Shared, not copied, for each hop that resends it.
        let body = req.body.map(bytes::Bytes::from);
        let out = Outgoing { method, url, origin, headers, secret_names, body };
        let (response, url) = self.follow(out).await?;
        self.answer(response, &url, guarded).await
    }

    /// The checks made before anything is sent: the host's own listeners, a grant at all, the
    /// request count, the body size, the method and the URL. Returns what the first hop sends.
    fn admit(&mut self, req: &Request) -> Result<(reqwest::Method, reqwest::Url, Origin), NetError> {
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
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| unsupported())?;
        let url = reqwest::Url::parse(&req.url)
            .map_err(|reason| NetError::InvalidUrl { url: req.url.clone(), reason })?;
        let origin = self.check_url(&url)?;
        Ok((method, url, origin))
    }

    /// The headers the first hop sends: the plugin's own (none the host decides), then its
    /// secret headers, each for an origin its secret is granted to. Returns the names of the
    /// secret headers too, so a redirect to another origin can drop them.
    fn headers(
        &self,
        req: &Request,
        origin: &Origin,
        guarded: bool,
    ) -> Result<(HeaderMap, Vec<HeaderName>), NetError> {
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
        let header_name = |name: &String| {
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| NetError::HeaderName { name: name.clone() })
        };
        let mut headers = HeaderMap::new();
        for (name, value) in &req.headers {
            if guarded && name.eq_ignore_ascii_case("accept-encoding") {
                continue; // the host's `identity` below, whatever the plugin asked for
            }
            let v = HeaderValue::from_str(value).map_err(|_| NetError::HeaderValue { name: name.clone() })?;
            headers.append(header_name(name)?, v);
        }
        let mut secret_names = Vec::new();
        for crate::bindings::http::SecretHeader { name, secret, prefix } in &req.secret_headers {
            let Some(s) = self.grant.secrets.iter().find(|s| &s.name == secret) else {
                return Err(NetError::SecretNotGranted {
                    plugin: self.plugin.clone(),
                    secret: secret.clone(),
                });
            };
            if !s.allows(origin) {
                return Err(s.refusal(origin));
            }
            let n = header_name(name)?;
            let mut v = HeaderValue::from_str(&format!("{prefix}{}", s.value))
                .map_err(|_| NetError::SecretValue { secret: secret.clone() })?;
            v.set_sensitive(true);
            headers.insert(n.clone(), v);
            secret_names.push(n);
        }
        if guarded {
            // After the secret headers, so a plugin's own headers keep their order.
            headers.insert(reqwest::header::ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        }
        Ok((headers, secret_names))
    }

    /// Send the request and follow its redirects hop by hop, each hop's URL checked like the
    /// first and each hop's headers checked before anything of them is used. Returns the last
    /// response and its URL.
    async fn follow(&mut self, mut out: Outgoing) -> Result<(reqwest::Response, reqwest::Url), NetError> {
        let client = client(self.grant.private)?;
        let mut hops = 0;
        loop {
            let remaining = self.remaining()?;
            let mut rb = client.request(out.method.clone(), out.url.clone()).headers(out.headers.clone());
            if let Some(b) = &out.body {
                self.charge_sent(b.len() as u64)?;
                rb = rb.body(b.clone());
            }
            let resp =
                rb.timeout(remaining).send().await.map_err(|e| self.describe(&e, &out.url, remaining))?;
            self.check_headers(&resp, &out.url)?;
            let status = resp.status();
            if !status.is_redirection() || status == reqwest::StatusCode::NOT_MODIFIED {
                return Ok((resp, out.url));
            }
            let Some(location) = resp.headers().get(reqwest::header::LOCATION) else {
                return Ok((resp, out.url));
            };
            let url = &out.url;
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
            out.redirect(status, next, next_origin);
        }
    }

    /// What the guest gets of the last response: refused if its URL holds a secret or (for a
    /// plugin with secrets) its body is not whole and unencoded; otherwise its body, cut.
    async fn answer(
        &mut self,
        response: reqwest::Response,
        url: &reqwest::Url,
        guarded: bool,
    ) -> Result<Response, NetError> {
        let status = response.status().as_u16();
        let final_url = response.url().to_string();
        if let Some(name) = self.grant.reflected(final_url.as_bytes()) {
            return Err(NetError::SecretInUrl { plugin: self.plugin.clone(), secret: name.to_string() });
        }
        if guarded {
            self.check_whole_and_unencoded(&response, url)?;
        }
        let resp_headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        let (body, truncated) = self.read_body(response, url).await?;
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
pub(super) fn cut_body(
    mut body: Vec<u8>,
    more: bool,
    cap: usize,
    grant: &NetGrant,
) -> Result<(Vec<u8>, bool), &str> {
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
pub(super) fn body_window(max_response: u64, budget_left: u64, longest: usize) -> (u64, u64) {
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

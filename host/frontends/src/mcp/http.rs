//! MCP over streamable HTTP: rmcp's service behind a small hyper front door that serves only
//! `/mcp` (and, with a service, the probes and `/metrics`; with a console, `/` and
//! `/console/…`), checks the bearer token (when the operator configured any; without, marks
//! the requests that carry the local key) before anything else, registers its address as the
//! host's own listener (no plugin's HTTP reaches it), and leaves the Host/Origin checks
//! (DNS-rebinding protection) of `/mcp` to rmcp — `/metrics` gets the same checks here, and the
//! console the same Host check with its own origin allowed (a browser sends `Origin` with the
//! console's own `POST`s).
//!
//! Slow and numerous clients are bounded (`[serve]`, [`crate::service::HttpLimits`]): a request's
//! headers must arrive within `header_timeout_ms` (which also ends idle keep-alive connections),
//! its body within `body_timeout_ms`, and connections past `max_connections` in all or
//! `max_connections_per_peer` from one address are answered `503` at once and closed.

use super::McpServer;
use sha2::Digest;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Tokens shorter than this are refused: a bearer token must not be guessable.
const MIN_TOKEN_CHARS: usize = 16;

/// One accepted bearer token. Only its SHA-256 is kept: comparisons are over equal-length
/// digests in constant time, and the value itself cannot end up in a log or a panic message.
#[derive(Clone)]
pub struct McpToken {
    pub name: String,
    digest: [u8; 32],
}

impl std::fmt::Debug for McpToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToken").field("name", &self.name).finish_non_exhaustive()
    }
}

impl McpToken {
    pub fn new(name: impl Into<String>, value: &str) -> McpToken {
        McpToken { name: name.into(), digest: sha2::Sha256::digest(value.as_bytes()).into() }
    }
}

/// The console checks a token typed into its login form against the same list.
impl crate::console::Tokens for Vec<McpToken> {
    fn name_of(&self, value: &str) -> Option<String> {
        let digest: [u8; 32] = sha2::Sha256::digest(value.as_bytes()).into();
        let mut found = None;
        for t in self {
            if super::approval::ct_eq(&t.digest, &digest) {
                found = Some(t.name.clone());
            }
        }
        found
    }
}

/// Read the `[mcp] tokens` values (from their secrets, env vars or files) now.
pub fn load_tokens(mcp: &super::settings::McpSettings) -> anyhow::Result<Vec<McpToken>> {
    let mut out = Vec::new();
    for (name, source) in &mcp.tokens {
        let value = source.read().map_err(|e| anyhow::anyhow!("[mcp] token `{name}`: {e}"))?;
        if value.chars().count() < MIN_TOKEN_CHARS
            || value.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            anyhow::bail!(
                "[mcp] token `{name}` must be at least {MIN_TOKEN_CHARS} characters without spaces (e.g. \
                 `openssl rand -hex 32`)"
            );
        }
        out.push(McpToken::new(name.clone(), &value));
    }
    Ok(out)
}

/// Refuse to expose unauthenticated MCP beyond this machine unless the operator said so.
pub fn check_exposure(
    addr: SocketAddr,
    tokens: &[McpToken],
    allow_unauthenticated: bool,
) -> anyhow::Result<()> {
    if addr.ip().is_loopback() || !tokens.is_empty() || allow_unauthenticated {
        return Ok(());
    }
    anyhow::bail!(
        "refusing to serve MCP on {addr} without authentication: anyone who can reach it could run the tools. \
         Configure a token ([mcp] tokens = [{{ name = \"ci\", env = \"TOOLHOST_MCP_TOKEN\" }}] in toolhost.toml), \
         bind a loopback address (127.0.0.1), or pass --allow-unauthenticated-remote to accept the risk"
    )
}

/// Which configured token `header` (an `Authorization` value) carries, if any. Every token is
/// compared, each in constant time, so timing says nothing about which prefix matched.
fn authenticate<'a>(tokens: &'a [McpToken], header: Option<&[u8]>) -> Option<&'a McpToken> {
    let header = header?;
    let value = header.strip_prefix(b"Bearer ").or_else(|| header.strip_prefix(b"bearer "))?;
    let digest: [u8; 32] = sha2::Sha256::digest(value).into();
    let mut found = None;
    for t in tokens {
        if super::approval::ct_eq(&t.digest, &digest) {
            found = Some(t);
        }
    }
    found
}

/// DNS-rebinding protection for the endpoints that say more than a status (`/metrics`): the
/// same rule rmcp applies to `/mcp` — the `Host` header must name an allowed host (a name
/// allowed without a port matches any port), and a request carrying an `Origin` must come from
/// an allowed origin (none by default). Without it a web page the operator visits could read
/// `/metrics` through a rebound name when no tokens are configured.
#[derive(Debug, Clone)]
struct HostGuard {
    /// (host, port) pairs; lower case, IPv6 without brackets.
    hosts: Vec<(String, Option<u16>)>,
    /// (scheme, host, port) of each allowed origin; `None` for `null`.
    origins: Vec<Option<(String, String, Option<u16>)>>,
}

impl HostGuard {
    fn new(hosts: &[String], origins: &[String]) -> HostGuard {
        let hosts = hosts.iter().filter_map(|h| allowed_host(h)).collect();
        let origins = origins.iter().filter_map(|o| parse_origin(o)).collect();
        HostGuard { hosts, origins }
    }

    /// `Err(status, why)` when the request must be refused.
    fn check(&self, headers: &hyper::HeaderMap) -> Result<(), (hyper::StatusCode, &'static str)> {
        self.check_host(headers)?;
        self.check_origin(headers, None)
    }

    /// [`HostGuard::check`] for the console: besides the allowed origins, a request may come
    /// from the origin its own `Host` names (the console's page, `POST`ing to itself).
    fn check_console(&self, headers: &hyper::HeaderMap) -> Result<(), (hyper::StatusCode, &'static str)> {
        let own = self.check_host(headers)?;
        self.check_origin(headers, Some(own))
    }

    /// The `Host` header's (host, port), if it names an allowed host.
    #[allow(clippy::type_complexity)] // a private helper's one-off shape
    fn check_host(
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
    fn check_origin(
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
fn normalize_host(h: &str) -> String {
    let bare = h.trim_matches(['[', ']']);
    match bare.parse::<std::net::Ipv6Addr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => bare.to_ascii_lowercase(),
    }
}

/// An allowed `Host` entry (`localhost`, `example.com:8080`, `[::1]:8765`, or a bare IPv6
/// address such as `::1`, whose colons are not a port) as (host, port).
fn allowed_host(entry: &str) -> Option<(String, Option<u16>)> {
    let entry = entry.trim();
    if let Ok(ip) = entry.parse::<std::net::Ipv6Addr>() {
        return Some((ip.to_string(), None));
    }
    let a = hyper::http::uri::Authority::try_from(entry).ok()?;
    Some((normalize_host(a.host()), a.port_u16()))
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// `Some(None)` for `null`, `Some(Some((scheme, host, port)))` for a tuple origin.
#[allow(clippy::type_complexity)] // a private helper's one-off shape
fn parse_origin(value: &str) -> Option<Option<(String, String, Option<u16>)>> {
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

/// The name of the `[mcp] tokens` entry a request authenticated with, put in the request's
/// extensions for the MCP handler (which reads it back from rmcp's `http::request::Parts`).
#[derive(Debug, Clone)]
pub struct TokenName(pub String);

/// `resp`, whose body holds `held` until hyper is done with it (sent or dropped).
fn held_by_body<T: Send + Sync + 'static>(resp: hyper::Response<Body>, held: T) -> hyper::Response<Body> {
    use http_body_util::BodyExt;
    resp.map(move |body| {
        body.map_frame(move |frame| {
            let _held = &held;
            frame
        })
        .boxed()
    })
}
/// Put in a request's extensions, without `[mcp] tokens`, when it carries the process's local
/// key as its bearer token: only such a client is asked (and may answer) a danger or grant
/// question (see `keyless.rs`).
#[derive(Debug, Clone, Copy)]
pub struct LocalOperator;

/// Options for the streamable HTTP transport.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Extra `Host` header values to accept (besides localhost, 127.0.0.1 and ::1).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call (`http://localhost:3000`); none by default, so any request
    /// carrying an `Origin` header is refused (DNS-rebinding protection).
    pub allowed_origins: Vec<String>,
    /// Accepted bearer tokens; empty means no authentication (see [`check_exposure`]).
    pub tokens: Vec<McpToken>,
    /// With a service: `/healthz`, `/readyz` and `/metrics` are served, and a shutdown drains
    /// the calls in flight (see `service::shutdown`) before the server returns.
    pub service: Option<Arc<crate::service::Service>>,
    /// Timeouts and connection caps (`[serve]`).
    pub limits: crate::service::HttpLimits,
    /// The web console at `/` (`[console]`), if enabled.
    pub console: Option<Arc<crate::console::Console>>,
    /// Without tokens: the key a client presents (`Authorization: Bearer KEY`) to be asked
    /// about dangerous calls and grants; with none, no client over HTTP is asked.
    pub local_key: Option<Arc<crate::local_key::LocalKey>>,
}

/// Open connections, in all and per peer address, against [`HttpLimits`]'s caps.
///
/// [`HttpLimits`]: crate::service::HttpLimits
#[derive(Debug)]
struct Connections {
    max_total: usize,
    max_per_peer: usize,
    open: std::sync::Mutex<(usize, std::collections::HashMap<std::net::IpAddr, usize>)>,
}

/// One admitted connection; dropping it frees its place.
struct Admitted {
    connections: Arc<Connections>,
    peer: std::net::IpAddr,
}

impl Connections {
    fn new(limits: &crate::service::HttpLimits) -> Arc<Connections> {
        Arc::new(Connections {
            max_total: limits.max_connections,
            max_per_peer: limits.max_connections_per_peer,
            open: Default::default(),
        })
    }

    /// A place for a connection from `peer`, or `None` when a cap is reached.
    fn admit(self: &Arc<Self>, peer: std::net::IpAddr) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let from_peer = open.1.get(&peer).copied().unwrap_or(0);
        if open.0 >= self.max_total || from_peer >= self.max_per_peer {
            return None;
        }
        open.0 += 1;
        open.1.insert(peer, from_peer + 1);
        Some(Admitted { connections: self.clone(), peer })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.connections.open.lock().unwrap_or_else(|p| p.into_inner());
        open.0 -= 1;
        if let Some(n) = open.1.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.peer);
            }
        }
    }
}

/// Raise this process's open-file limit to its hard limit (a server holds a descriptor per
/// connection, per open plugin file and per granted directory), and return the soft limit now
/// in force, if known.
fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let lim = getrlimit(Resource::Nofile);
        if let (Some(cur), max) = (lim.current, lim.maximum)
            && max.is_none_or(|m| m > cur)
        {
            let want = max.unwrap_or(1 << 20).min(1 << 20);
            if setrlimit(Resource::Nofile, Rlimit { current: Some(want), maximum: max }).is_ok() {
                return Some(want);
            }
        }
        lim.current
    }
    #[cfg(not(unix))]
    None
}

/// Descriptors kept back from connections for everything else the server opens.
const FD_RESERVE: u64 = 256;

/// Refused connections being answered at once; past this many they are simply closed.
const MAX_REFUSING: usize = 64;

/// Answer a connection over a cap with `503` and close it, without reading its request.
fn refuse_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    refusing: Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering;
    tracing::warn!(
        "HTTP connection from {peer} refused: too many open connections ([serve] max_connections, max_connections_per_peer)"
    );
    if refusing.fetch_add(1, Ordering::Relaxed) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        const BODY: &str = "too many connections: retry later\n";
        let resp = format!(
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: {RETRY_AFTER_S}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
            BODY.len()
        );
        let mut stream = stream;
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(resp.as_bytes()).await?;
            stream.shutdown().await
        })
        .await;
        refusing.fetch_sub(1, Ordering::Relaxed);
    });
}

/// A request body that must arrive in full by a deadline (a client sending its body a byte at
/// a time holds a connection and a task for as long as it likes otherwise).
struct DeadlineBody {
    inner: hyper::body::Incoming,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl hyper::body::Body for DeadlineBody {
    type Data = bytes::Bytes;
    type Error = String;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, String>>> {
        use std::task::Poll;
        match std::pin::Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(|e| e.to_string()))),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(format!(
                    "the request body did not arrive within {} ms ([serve] body_timeout_ms)",
                    self.timeout.as_millis()
                )))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// How long, after the last call, connections get to deliver their final responses.
const FLUSH_WAIT: Duration = Duration::from_secs(2);
/// Once drained, the port closes after no connection has come for this long…
const CLOSE_QUIET: Duration = Duration::from_millis(50);
/// …or at the latest after this.
const CLOSE_MAX: Duration = Duration::from_secs(1);

/// The drain's last step, before the port closes. Closing a listening socket resets the
/// connections the kernel has accepted that the server has not yet taken: a load balancer that
/// had already sent a request on one sees it fail after sending, and must not replay it (it
/// cannot know the request was never read), so the client would get a `502` for a call that
/// never ran. So first new connections are stopped: a socket filter (classic BPF) drops the
/// SYN of every new connection reaching the listening socket — it goes unanswered, and its
/// retransmission, after the port has closed, is refused (a balancer passes a refused
/// connection to the next replica: nothing was sent) — while the handshakes under way complete.
/// The server then takes and serves (`503`, draining) what is queued, and closes the port once
/// nothing more arrives for [`CLOSE_QUIET`].
fn stop_new_connections(listener: &tokio::net::TcpListener) {
    #[cfg(target_os = "linux")]
    if let Err(e) = socket2::SockRef::from(listener).attach_filter(&DROP_SYN) {
        tracing::debug!("could not stop new connections before closing the port: {e}");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = listener;
}

/// A TCP socket's filter sees the segment from its TCP header on: load the flags (byte 13),
/// drop a segment with SYN set, keep the rest.
#[cfg(target_os = "linux")]
const DROP_SYN: [socket2::SockFilter; 4] = {
    const LD_B_ABS: u16 = 0x30;
    const JMP_JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    const SYN: u32 = 0x02;
    [
        socket2::SockFilter::new(LD_B_ABS, 0, 0, 13),
        socket2::SockFilter::new(JMP_JSET_K, 0, 1, SYN),
        socket2::SockFilter::new(RET_K, 0, 0, 0),
        socket2::SockFilter::new(RET_K, 0, 0, u32::MAX),
    ]
};

/// `Retry-After` (seconds) on a `503` while shutting down: a load balancer has usually routed
/// the client elsewhere by then.
const RETRY_AFTER_S: &str = "1";

type Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;

/// MCP `POST`s whose response has not been sent in full, counted from the request on. A call
/// that finishes during the drain has its answer still on the way through rmcp to the client
/// when the drain sees no call in flight: sessions are ended only once these are done (or after
/// [`FLUSH_WAIT`]) — ending them first would turn a 2026-07-28 stateless call's answer into a 500.
#[derive(Clone, Default)]
struct OpenAnswers(Arc<(std::sync::atomic::AtomicUsize, tokio::sync::Notify)>);

/// Held by a response body until hyper has sent it (or dropped it).
struct OpenAnswer(OpenAnswers);

impl Drop for OpenAnswer {
    fn drop(&mut self) {
        let (count, notify) = &*self.0.0;
        if count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            notify.notify_waiters();
        }
    }
}

impl OpenAnswers {
    /// One more answer on its way, counted from before rmcp handles the request: a 2026-07-28
    /// stateless request has no response at all until its handler's first message.
    fn open(&self) -> OpenAnswer {
        self.0.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        OpenAnswer(self.clone())
    }

    /// `resp`, still counted (by `open`) until its body is done.
    fn track(open: OpenAnswer, resp: hyper::Response<Body>) -> hyper::Response<Body> {
        held_by_body(resp, open)
    }

    /// Until no tracked response is open.
    async fn idle(&self) {
        let (count, notify) = &*self.0;
        loop {
            let notified = notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if count.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// The header naming a streamable HTTP session.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

type McpBody = http_body_util::Either<DeadlineBody, http_body_util::Full<bytes::Bytes>>;

/// While draining: `req` back (its body read into memory, if it had to be read to decide)
/// when it may be served, or the `503` that refuses it. See the comment at the call.
async fn admit_while_draining(
    req: hyper::Request<McpBody>,
    max_message: usize,
) -> Result<hyper::Request<McpBody>, hyper::Response<Body>> {
    use http_body_util::BodyExt;
    if req.headers().contains_key(SESSION_ID) {
        return Ok(req);
    }
    if req.method() != hyper::Method::POST {
        return Err(unavailable(false, false));
    }
    let (parts, body) = req.into_parts();
    let body = http_body_util::Limited::new(body, max_message);
    let Ok(bytes) = body.collect().await.map(|b| b.to_bytes()) else {
        return Err(unavailable(false, true));
    };
    let method = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_string));
    match method.as_deref() {
        Some(m) if m != "initialize" && m != "tools/call" => Ok(hyper::Request::from_parts(
            parts,
            http_body_util::Either::Right(http_body_util::Full::new(bytes)),
        )),
        _ => Err(unavailable(false, true)),
    }
}

/// The media types a request's `Accept` lists, without their parameters.
fn accepted(headers: &hyper::HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.split(';').next().unwrap_or("").trim())
}

/// Whether a request's `Accept` takes `application/json` (or anything).
fn accepts_json(headers: &hyper::HeaderMap) -> bool {
    accepted(headers).any(|t| {
        t.eq_ignore_ascii_case("application/json") || t == "*/*" || t.eq_ignore_ascii_case("application/*")
    })
}

/// Whether a request's `Accept` names both JSON and event streams, as rmcp requires of a
/// `POST` (exactly: no wildcards).
fn accepts_both(headers: &hyper::HeaderMap) -> bool {
    let named = |essence: &str| accepted(headers).any(|t| t.eq_ignore_ascii_case(essence));
    named("application/json") && named("text/event-stream")
}

/// Whether a request declares a body (`Content-Length`) of at most `max` bytes: only then is
/// it read here before rmcp reads it.
fn declared_within(headers: &hyper::HeaderMap, max: usize) -> bool {
    headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .is_some_and(|n| n <= max)
}

/// A request's body, of at most `max` bytes; a `400` when it cannot be read.
async fn read_body(body: McpBody, max: usize) -> Result<bytes::Bytes, hyper::Response<Body>> {
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(body, max).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(_) => Err(text(hyper::StatusCode::BAD_REQUEST, "cannot read the request body\n")),
    }
}

/// A request rebuilt around its body, read into memory.
fn with_body(parts: hyper::http::request::Parts, body: bytes::Bytes) -> hyper::Request<McpBody> {
    hyper::Request::from_parts(parts, http_body_util::Either::Right(http_body_util::Full::new(body)))
}

/// A `200` carrying one JSON-RPC message as `application/json`.
fn json(message: Vec<u8>) -> hyper::Response<Body> {
    use http_body_util::{BodyExt, Full};
    let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from(message)).boxed());
    resp.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    resp
}

/// 2025-11-25 tasks over HTTP (see `tasks2025.rs`): the body of a `POST` of that revision (its
/// `MCP-Protocol-Version` header) or of no session yet (an `initialize`, whose answer then
/// declares `tasks`: the bool returned) is read here, if its declared length is within the
/// message limit, and a task request renamed. Any other body goes on as it came: rmcp reads and
/// limits it (so a task request sent without `Content-Length` is not seen as one).
async fn rename_for_2025(
    req: hyper::Request<McpBody>,
    max_message: usize,
) -> Result<(hyper::Request<McpBody>, bool), hyper::Response<Body>> {
    let revision = req.headers().get("mcp-protocol-version").map(|v| v.as_bytes());
    let on_2025 = revision == Some(super::tasks2025::REVISION.as_bytes());
    let opening = revision.is_none() && !req.headers().contains_key(SESSION_ID);
    if !(on_2025 || opening) || !declared_within(req.headers(), max_message) {
        return Ok((req, false));
    }
    let (mut parts, body) = req.into_parts();
    let bytes = read_body(body, max_message).await?;
    let initialize = opening && memchr::memmem::find(&bytes, b"\"initialize\"").is_some();
    let renamed = if on_2025 { super::tasks2025::rename(&bytes) } else { None };
    let bytes = match renamed {
        Some(renamed) => {
            parts.headers.insert(hyper::header::CONTENT_LENGTH, renamed.len().into());
            bytes::Bytes::from(renamed)
        }
        None => bytes,
    };
    Ok((with_body(parts, bytes), initialize))
}

/// The answer to an `initialize`, with `capabilities.tasks` added if it negotiated 2025-11-25
/// (a JSON body or a `data:` line of an event stream; rmcp writes the answer in one frame).
fn declare_tasks(mut resp: hyper::Response<Body>) -> hyper::Response<Body> {
    use http_body_util::BodyExt;
    resp.headers_mut().remove(hyper::header::CONTENT_LENGTH);
    resp.map(|body| {
        body.map_frame(|frame| match frame.into_data() {
            Ok(data) => hyper::body::Frame::data(declare_tasks_in(data)),
            Err(frame) => frame,
        })
        .boxed()
    })
}

fn declare_tasks_in(data: bytes::Bytes) -> bytes::Bytes {
    use super::tasks2025::declare_tasks;
    if memchr::memmem::find(&data, b"\"serverInfo\"").is_none() {
        return data;
    }
    let Ok(text) = std::str::from_utf8(&data) else { return data };
    if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text) {
        return if declare_tasks(&mut v) { bytes::Bytes::from(v.to_string()) } else { data };
    }
    let mut out = String::with_capacity(text.len() + 80);
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        if let Some(json) = body.strip_prefix("data:")
            && let Ok(mut v) = serde_json::from_str::<serde_json::Value>(json.trim_start())
            && declare_tasks(&mut v)
        {
            out.push_str("data: ");
            out.push_str(&v.to_string());
            out.push_str(&line[body.len()..]);
            changed = true;
            continue;
        }
        out.push_str(line);
    }
    if changed { bytes::Bytes::from(out) } else { data }
}

/// `503` with `Retry-After` while starting or shutting down. To a `POST` the body is also a
/// JSON-RPC error (`id: null`: the request is not read), which clients show as the reason.
fn unavailable(starting: bool, post: bool) -> hyper::Response<Body> {
    use http_body_util::{BodyExt, Full};
    let why = if starting {
        "toolhost is starting: the plugins are loading; retry"
    } else {
        "toolhost is shutting down and accepts no new sessions or calls; retry (another replica will answer)"
    };
    let mut resp = if post {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": UNAVAILABLE_CODE, "message": format!("{why} [unavailable]") },
        });
        let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from(body.to_string())).boxed());
        resp.headers_mut()
            .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
        *resp.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
        resp
    } else {
        let why: &'static str = if starting {
            "toolhost is starting: the plugins are loading; retry\n"
        } else {
            "toolhost is shutting down: retry (another replica will answer)\n"
        };
        text(hyper::StatusCode::SERVICE_UNAVAILABLE, why)
    };
    resp.headers_mut()
        .insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from_static(RETRY_AFTER_S));
    resp
}

pub(crate) use super::UNAVAILABLE_CODE;

fn text(status: hyper::StatusCode, body: &'static str) -> hyper::Response<Body> {
    use http_body_util::{BodyExt, Full};
    let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from_static(body.as_bytes())).boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut()
        .insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-store"));
    resp
}

/// `401` with a Bearer challenge; the header's value is never logged (it may be a real token
/// typed wrong).
fn unauthorized(peer: SocketAddr, what: &str, had_header: bool) -> hyper::Response<Body> {
    tracing::info!(
        "{what} request from {peer} refused: {}",
        if had_header { "unknown bearer token" } else { "no bearer token" }
    );
    let challenge = if had_header {
        r#"Bearer realm="toolhost", error="invalid_token""#
    } else {
        r#"Bearer realm="toolhost""#
    };
    let mut resp = text(
        hyper::StatusCode::UNAUTHORIZED,
        "unauthorized: send Authorization: Bearer <token> (an [mcp] tokens entry)\n",
    );
    resp.headers_mut()
        .insert(hyper::header::WWW_AUTHENTICATE, hyper::header::HeaderValue::from_static(challenge));
    resp
}

/// Serve MCP over streamable HTTP at `http://ADDR/mcp` until `shutdown` completes — and, with
/// a service, until the calls in flight are drained: the listener keeps answering (probes,
/// `503` for new MCP requests) while they finish.
pub async fn serve_http(
    server: McpServer,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    use rmcp::transport::streamable_http_server::StreamableHttpService;

    let addr = listener.local_addr()?;
    // No plugin's HTTP request may reach this server, whatever its grant.
    let _own = toolhost_core::capability::net::listeners::register(addr);
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    let guard = Arc::new(HostGuard::new(&hosts, &options.allowed_origins));
    // One limit for an MCP message whatever the transport (`[mcp] max_message_kb`).
    // A 2026-07-28 stateless request that needs no stream is answered with plain JSON by rmcp
    // (a 2025 session's by `plain_json`).
    let mut config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_allowed_hosts(hosts)
        .with_max_request_body_bytes(server.max_message);
    config = if options.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(options.allowed_origins.clone())
    };
    // Cancelled once the calls are drained: rmcp then ends its sessions and open streams.
    let sessions = config.cancellation_token.clone();
    let tokens: Arc<[McpToken]> = options.tokens.clone().into();
    let local_key = options.local_key.clone();
    let max_message = server.max_message;
    // 2025 sessions unused for `[mcp] session_idle_s` are closed (their memory freed) until the
    // sessions end.
    let idle_sessions = Arc::new(super::idle::IdleSessions::new(server.session_idle, server.session_caps));
    tokio::spawn(idle_sessions.clone().sweep(sessions.clone().cancelled_owned()));
    // A session's common call is answered without rmcp's session (see `direct.rs`).
    let direct = Arc::new(super::direct::Direct::new(server.clone(), idle_sessions.clone()));
    let service = StreamableHttpService::new(move || Ok(server.session()), idle_sessions.clone(), config);
    let host_service = options.service.clone();
    let console = options.console.clone();
    let mut limits = options.limits;
    if let Some(fds) = raise_fd_limit() {
        let room = usize::try_from(fds.saturating_sub(FD_RESERVE).max(16)).unwrap_or(usize::MAX);
        if limits.max_connections > room {
            tracing::warn!(
                "[serve] max_connections = {} is more than this process's open-file limit allows ({fds}); serving at most {room} connections",
                limits.max_connections
            );
            limits.max_connections = room;
            limits.max_connections_per_peer = limits.max_connections_per_peer.min(room);
        }
    }
    let connections = Connections::new(&limits);
    let refusing = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let answers = OpenAnswers::default();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let (drained_tx, mut drained_rx) = tokio::sync::watch::channel(false);
    let mut shutting_down = false;
    // Once drained: when the port closes. See `stop_new_connections`.
    let mut closing: Option<tokio::time::Instant> = None;
    loop {
        let quiet = closing.map(|end| end.min(tokio::time::Instant::now() + CLOSE_QUIET));
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept on {addr}: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown, if !shutting_down => {
                shutting_down = true;
                let Some(s) = host_service.clone() else { break };
                let done = drained_tx.clone();
                tokio::spawn(async move {
                    s.shutdown().await;
                    let _ = done.send(true);
                });
                continue;
            }
            () = async { let _ = drained_rx.wait_for(|d| *d).await; }, if closing.is_none() => {
                stop_new_connections(&listener);
                closing = Some(tokio::time::Instant::now() + CLOSE_MAX);
                continue;
            }
            () = async { if let Some(q) = quiet { tokio::time::sleep_until(q).await } }, if quiet.is_some() => break,
        };
        let Some(admitted) = connections.admit(peer.ip()) else {
            refuse_connection(stream, peer, refusing.clone());
            continue;
        };
        // Each answer is one small write: without TCP_NODELAY, Nagle's algorithm holds it until
        // the client's delayed ACK (~40 ms per call on Linux).
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let tokens = tokens.clone();
        let host_service = host_service.clone();
        let answers = answers.clone();
        let guard = guard.clone();
        let console = console.clone();
        let direct = direct.clone();
        let idle_sessions = idle_sessions.clone();
        let local_key = local_key.clone();
        let handler = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            let local_key = local_key.clone();
            let direct = direct.clone();
            let idle_sessions = idle_sessions.clone();
            let service = service.clone();
            let tokens = tokens.clone();
            let host_service = host_service.clone();
            let answers = answers.clone();
            let guard = guard.clone();
            let console = console.clone();
            async move {
                let path = req.uri().path();
                if let Some(c) = &console
                    && crate::console::Console::serves(path)
                {
                    if let Err((status, why)) = guard.check_console(req.headers()) {
                        return Ok(text(status, why));
                    }
                    return Ok(c.handle(req, peer).await);
                }
                let get = req.method() == hyper::Method::GET;
                let authorized = || {
                    let auth = req.headers().get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes());
                    (auth.is_some(), authenticate(&tokens, auth).map(|t| t.name.clone()))
                };
                // Probes: unauthenticated, and they say nothing but the status.
                match (path, &host_service) {
                    ("/healthz", Some(_)) if get => {
                        return Ok::<_, std::convert::Infallible>(text(hyper::StatusCode::OK, "ok\n"));
                    }
                    ("/readyz", Some(s)) if get => {
                        return Ok(if s.lifecycle.is_ready() {
                            text(hyper::StatusCode::OK, "ready\n")
                        } else {
                            text(hyper::StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
                        });
                    }
                    ("/metrics", Some(s)) if get => {
                        if let Err((status, why)) = guard.check(req.headers()) {
                            return Ok(text(status, why));
                        }
                        if !tokens.is_empty()
                            && let (had, None) = authorized()
                        {
                            return Ok(unauthorized(peer, "metrics", had));
                        }
                        use http_body_util::{BodyExt, Full};
                        let mut resp =
                            hyper::Response::new(Full::new(bytes::Bytes::from(s.metrics_text())).boxed());
                        resp.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static(crate::service::metrics::CONTENT_TYPE),
                        );
                        return Ok(resp);
                    }
                    ("/mcp", _) => {}
                    _ => {
                        return Ok(text(
                            hyper::StatusCode::NOT_FOUND,
                            "not found: the MCP endpoint is /mcp\n",
                        ));
                    }
                }
                if !tokens.is_empty() {
                    match authorized() {
                        (_, Some(name)) => {
                            tracing::debug!(token = name, "MCP {} from {peer}", req.method());
                            req.extensions_mut().insert(TokenName(name));
                        }
                        (had, None) => return Ok(unauthorized(peer, "MCP", had)),
                    }
                } else if let Some(key) = &local_key
                    && key.is_bearer(req.headers().get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes()))
                {
                    req.extensions_mut().insert(LocalOperator);
                }
                // Who the request comes from, and (for a POST) whether they are still there:
                // for the caps on what one client may hold, and to drop a call still waiting
                // for a slot when its client is gone.
                let token = req.extensions().get::<TokenName>().map(|t| t.0.clone());
                let is_post = req.method() == hyper::Method::POST;
                let gone = super::client::mark(req.extensions_mut(), peer.ip(), token.as_deref(), is_post);
                // While starting, nothing; while shutting down, nothing new. A new session's
                // `initialize` and a new call are refused, but the rest is served — an existing
                // session's GET stream, its notifications (`notifications/cancelled`), the answer
                // to an elicitation, its DELETE, a new call in it (which the executor answers
                // `unavailable`), and a 2026-07-28 stateless request that is not a call (the
                // `tools/list` a client reads an outputSchema from) — so a client lives until
                // its calls in flight are answered. The official clients end the whole session
                // on a 503 to any of these, and with it the answers they are waiting for.
                let post = req.method() == hyper::Method::POST;
                let req = req.map(|inner| {
                    http_body_util::Either::Left(DeadlineBody {
                        inner,
                        deadline: Box::pin(tokio::time::sleep(limits.body_timeout)),
                        timeout: limits.body_timeout,
                    })
                });
                let ready = host_service.as_ref().is_none_or(|s| s.lifecycle.is_ready());
                let req = match &host_service {
                    Some(s) if !s.lifecycle.is_ready() => {
                        let starting = s.lifecycle.phase() == crate::service::shutdown::Phase::Serving;
                        if starting {
                            return Ok(unavailable(true, post));
                        }
                        match admit_while_draining(req, max_message).await {
                            Ok(req) => req,
                            Err(resp) => return Ok(resp),
                        }
                    }
                    _ => req,
                };
                let open = post.then(|| answers.open());
                let answered = move |resp| {
                    let resp = match open {
                        Some(open) => OpenAnswers::track(open, resp),
                        None => resp,
                    };
                    match gone {
                        Some(gone) => held_by_body(resp, gone),
                        None => resp,
                    }
                };
                // A call that needs nothing of its session is answered here. The request's
                // Host and Origin are checked as rmcp checks them; if refused, rmcp answers.
                let session = if ready
                    && post
                    && declared_within(req.headers(), max_message)
                    && accepts_both(req.headers())
                    && guard.check(req.headers()).is_ok()
                {
                    direct.session(req.headers()).await
                } else {
                    None
                };
                let req = match session {
                    Some(session) => {
                        let (mut parts, body) = req.into_parts();
                        let body = match read_body(body, max_message).await {
                            Ok(b) => b,
                            Err(resp) => return Ok(answered(resp)),
                        };
                        if let Some(message) = direct.answer(&session, &mut parts, &body).await {
                            return Ok(answered(json(message)));
                        }
                        with_body(parts, body)
                    }
                    None => req,
                };
                let (req, initialize) = if post {
                    match rename_for_2025(req, max_message).await {
                        Ok(r) => r,
                        Err(resp) => return Ok(resp),
                    }
                } else {
                    (req, false)
                };
                // No new session past `[mcp] max_sessions` (…`_per_peer`); `IdleSessions`
                // refuses one this does not see as an `initialize` (sent without a length).
                let client = || req.extensions().get::<super::client::Client>().and_then(|c| c.0.clone());
                if initialize && let Err(full) = idle_sessions.room(client().as_ref()) {
                    return Ok(super::idle::refused(full, client().as_ref()));
                }
                // A client that accepts JSON gets its answer as plain JSON when no stream is
                // needed (see `plain_json`); one that accepts only streams keeps them.
                let accepts_json = post && accepts_json(req.headers());
                let resp = service.handle(req).await;
                let resp = if initialize { declare_tasks(resp) } else { resp };
                let resp = if accepts_json { super::plain_json::plain_json(resp).await } else { resp };
                Ok(answered(resp))
            }
        });
        let io = hyper_util::rt::TokioIo::new(stream);
        let conn = hyper::server::conn::http1::Builder::new()
            // The header timer also closes a keep-alive connection left idle between requests.
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(io, handler);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _admitted = admitted;
            if let Err(e) = conn.await {
                tracing::debug!("MCP HTTP connection from {peer}: {e}");
            }
        });
    }
    drop(listener);
    // Every call has its outcome; the last answers may still be on their way through rmcp:
    // let them be sent, then end rmcp's sessions and streams, let connections deliver what they
    // hold (each closes after its current response), and return.
    if tokio::time::timeout(FLUSH_WAIT, answers.idle()).await.is_err() {
        tracing::debug!("MCP HTTP: answers still open after {FLUSH_WAIT:?}; ending the sessions");
    }
    sessions.cancel();
    if tokio::time::timeout(FLUSH_WAIT, graceful.shutdown()).await.is_err() {
        tracing::debug!("MCP HTTP: connections still open after {FLUSH_WAIT:?}; closing them");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn once_new_connections_are_stopped_queued_ones_are_still_served() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut queued = tokio::net::TcpStream::connect(addr).await.unwrap();
        queued.write_all(b"ping").await.unwrap();
        stop_new_connections(&listener);
        // A new connection's SYN goes unanswered…
        let late =
            tokio::time::timeout(Duration::from_millis(300), tokio::net::TcpStream::connect(addr)).await;
        assert!(late.is_err(), "a new connection was accepted: {late:?}");
        // …while the one the kernel had queued is taken and its bytes read.
        let (mut served, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4];
        served.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        served.write_all(b"pong").await.unwrap();
        queued.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
    }

    #[test]
    fn only_a_configured_bearer_token_authenticates() {
        let tokens =
            [McpToken::new("ci", "0123456789abcdef-ci"), McpToken::new("ide", "0123456789abcdef-ide")];
        assert_eq!(
            authenticate(&tokens, Some(b"Bearer 0123456789abcdef-ide")).map(|t| &t.name[..]),
            Some("ide")
        );
        assert_eq!(
            authenticate(&tokens, Some(b"Bearer 0123456789abcdef-ci")).map(|t| &t.name[..]),
            Some("ci")
        );
        assert!(authenticate(&tokens, Some(b"Bearer 0123456789abcdef-c")).is_none());
        assert!(authenticate(&tokens, Some(b"Basic 0123456789abcdef-ci")).is_none());
        assert!(authenticate(&tokens, Some(b"0123456789abcdef-ci")).is_none());
        assert!(authenticate(&tokens, None).is_none());
        assert!(!format!("{:?}", tokens[0]).contains("0123"), "Debug must not show the token");
    }

    #[test]
    fn a_bracketed_ipv6_host_is_allowed_where_its_address_is() {
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

    #[test]
    fn non_loopback_without_a_token_needs_the_explicit_flag() {
        let lan: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let e = check_exposure(lan, &[], false).unwrap_err().to_string();
        assert!(e.contains("--allow-unauthenticated-remote") && e.contains("[mcp] tokens"), "{e}");
        assert!(check_exposure(lan, &[], true).is_ok());
        assert!(check_exposure(lan, &[McpToken::new("ci", "0123456789abcdef")], false).is_ok());
        assert!(check_exposure(local, &[], false).is_ok());
    }
}

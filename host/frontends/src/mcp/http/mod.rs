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
//!
//! Here the accept loop and the drain ([`serve_http`]) and the [`FrontDoor`]'s way with one
//! request; `auth` the tokens and the key, `guard` the Host/Origin checks, `conn` connections
//! and bodies, `requests` what is read of a request and the plain answers.

/// Options for the streamable HTTP transport.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Extra `Host` header values to accept (besides localhost, 127.0.0.1 and ::1).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call (`http://localhost:3000`); none by default, so any request
    /// carrying an `Origin` header is refused (DNS-rebinding protection).
    pub allowed_origins: Vec<String>,
    /// Accepted bearer tokens; empty (and no `auth`) means no authentication (see
    /// [`check_exposure`]).
    pub tokens: Vec<McpToken>,
    /// `[auth]`: OAuth access tokens accepted besides the static tokens, and the Protected
    /// Resource Metadata served.
    pub auth: Option<Arc<crate::auth::Verifier>>,
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

type Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;

/// The header naming a streamable HTTP session.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

type McpBody = http_body_util::Either<DeadlineBody, http_body_util::Full<bytes::Bytes>>;

mod auth;
mod conn;
mod guard;
mod requests;

pub use auth::{McpToken, check_exposure, load_tokens};
use auth::{authenticate, refused, unauthorized};
use conn::{
    CLOSE_MAX, CLOSE_QUIET, Connections, DeadlineBody, FD_RESERVE, FLUSH_WAIT, OpenAnswers, held_by_body,
    raise_fd_limit, refuse_connection, stop_new_connections,
};
use guard::HostGuard;
use requests::{
    accepts_both, accepts_json, admit_while_draining, declare_tasks, declared_within, json, read_body,
    rename_for_2025, text, unavailable, with_body,
};

use super::McpServer;
use super::client::Who;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// What answers every request of one server: rmcp's service behind the front door's own rules,
/// shared by the connections.
struct FrontDoor {
    service:
        rmcp::transport::streamable_http_server::StreamableHttpService<McpServer, super::idle::IdleSessions>,
    tokens: Arc<[McpToken]>,
    auth: Option<Arc<crate::auth::Verifier>>,
    local_key: Option<Arc<crate::local_key::LocalKey>>,
    host_service: Option<Arc<crate::service::Service>>,
    console: Option<Arc<crate::console::Console>>,
    guard: HostGuard,
    direct: Arc<super::direct::Direct>,
    idle_sessions: Arc<super::idle::IdleSessions>,
    answers: OpenAnswers,
    limits: crate::service::HttpLimits,
    max_message: usize,
}

/// An answer the front door has decided, or the request to go on with.
type Step<T> = Result<T, hyper::Response<Body>>;

impl FrontDoor {
    /// One request of the client at `peer`, from the console and probes to rmcp.
    async fn handle(
        &self,
        mut req: hyper::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> hyper::Response<Body> {
        let path = req.uri().path();
        if let Some(c) = &self.console
            && crate::console::Console::serves(path)
        {
            if let Err((status, why)) = self.guard.check_console(req.headers()) {
                return text(status, why);
            }
            return c.handle(req, peer).await;
        }
        if let Some(answer) = self.probe((req.method(), req.uri().path()), req.headers(), peer).await {
            return answer;
        }
        let who = match self.identify(req.headers(), peer, "MCP").await {
            Ok(who) => who,
            Err(refused) => return refused,
        };
        // Who the request comes from, and (for a POST) whether they are still there: for the
        // caps on what one client may hold, and to drop a call still waiting for a slot when
        // its client is gone.
        let post = req.method() == hyper::Method::POST;
        let gone = super::client::mark(req.extensions_mut(), peer.ip(), who, post);
        let timeout = self.limits.body_timeout;
        let req = req.map(|inner| http_body_util::Either::Left(DeadlineBody::new(inner, timeout)));
        let req = match self.admit(req, post).await {
            Ok(req) => req,
            Err(answer) => return answer,
        };
        let open = post.then(|| self.answers.open());
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
        match self.to_rmcp(req, post).await {
            Ok(resp) | Err(resp) => answered(resp),
        }
    }

    /// The probes and `/metrics` (with a service), the Protected Resource Metadata (with
    /// `[auth]`), and `404` for anything but `/mcp`: `None` to go on with an MCP request.
    async fn probe(
        &self,
        (method, path): (&hyper::Method, &str),
        headers: &hyper::HeaderMap,
        peer: SocketAddr,
    ) -> Option<hyper::Response<Body>> {
        let get = method == hyper::Method::GET;
        if let Some(auth) = &self.auth
            && get
            && crate::auth::metadata_paths(auth.settings()).iter().any(|p| p == path)
        {
            return Some(auth::metadata(auth.settings()));
        }
        // Probes: unauthenticated, and they say nothing but the status.
        match (path, &self.host_service) {
            ("/healthz", Some(_)) if get => Some(text(hyper::StatusCode::OK, "ok\n")),
            ("/readyz", Some(s)) if get => Some(if s.lifecycle.is_ready() {
                text(hyper::StatusCode::OK, "ready\n")
            } else {
                text(hyper::StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
            }),
            ("/metrics", Some(s)) if get => Some(self.metrics(headers, peer, s).await),
            ("/mcp", _) => None,
            _ => Some(text(hyper::StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp\n")),
        }
    }

    /// `/metrics`, behind the Host/Origin checks and the tokens.
    async fn metrics(
        &self,
        headers: &hyper::HeaderMap,
        peer: SocketAddr,
        s: &crate::service::Service,
    ) -> hyper::Response<Body> {
        use http_body_util::{BodyExt, Full};
        if let Err((status, why)) = self.guard.check(headers) {
            return text(status, why);
        }
        if let Err(refused) = self.identify(headers, peer, "metrics").await {
            return refused;
        }
        let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from(s.metrics_text())).boxed());
        resp.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(crate::service::metrics::CONTENT_TYPE),
        );
        resp
    }

    /// Who the request is from, by its `Authorization`: a static token, else (with `[auth]`) an
    /// OAuth access token; the answer refusing it when neither is good but one is required.
    /// Without either configured: the local key's mark on a request that carries the key. What
    /// it finds goes in the request's extensions.
    async fn identify(&self, headers: &hyper::HeaderMap, peer: SocketAddr, what: &str) -> Step<Option<Who>> {
        let auth = headers.get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes());
        if let Some(token) = authenticate(&self.tokens, auth) {
            tracing::debug!(token = token.name, "{what} request from {peer}");
            let principal = toolhost_core::identity::Principal::token(token.name.clone());
            return Ok(Some(Who::Token(token.name.clone(), Arc::new(principal))));
        }
        if let Some(verifier) = &self.auth {
            return match verifier.verify(auth).await {
                Ok(p) => Ok(Some(Who::Oauth(p))),
                Err(r) => Err(refused(verifier.settings(), &r, peer, what)),
            };
        }
        if !self.tokens.is_empty() {
            return Err(unauthorized(peer, what, auth.is_some()));
        }
        match &self.local_key {
            Some(key) if key.is_bearer(auth) => Ok(Some(Who::LocalOperator)),
            _ => Ok(None),
        }
    }

    /// While starting, nothing; while shutting down, nothing new. A new session's `initialize`
    /// and a new call are refused, but the rest is served — an existing session's GET stream,
    /// its notifications (`notifications/cancelled`), the answer to an elicitation, its DELETE,
    /// a new call in it (which the executor answers `unavailable`), and a 2026-07-28 stateless
    /// request that is not a call (the `tools/list` a client reads an outputSchema from) — so a
    /// client lives until its calls in flight are answered. The official clients end the whole
    /// session on a 503 to any of these, and with it the answers they are waiting for.
    async fn admit(&self, req: hyper::Request<McpBody>, post: bool) -> Step<hyper::Request<McpBody>> {
        match &self.host_service {
            Some(s) if !s.lifecycle.is_ready() => {
                if s.lifecycle.phase() == crate::service::shutdown::Phase::Serving {
                    return Err(unavailable(true, post));
                }
                admit_while_draining(req, self.max_message).await
            }
            _ => Ok(req),
        }
    }

    /// The request through rmcp — unless it is a call the front door answers itself
    /// (`direct.rs`) — with the 2025-11-25 task requests renamed, the cap on sessions, and plain
    /// JSON answers where no stream is needed (see `plain_json`).
    async fn to_rmcp(&self, req: hyper::Request<McpBody>, post: bool) -> Step<hyper::Response<Body>> {
        let req = if post { self.answer_directly(req).await? } else { req };
        let (req, initialize) =
            if post { rename_for_2025(req, self.max_message).await? } else { (req, false) };
        // No new session past `[mcp] max_sessions` (…`_per_peer`); `IdleSessions` refuses one
        // this does not see as an `initialize` (sent without a length).
        let client = || req.extensions().get::<super::client::Client>().and_then(|c| c.0.clone());
        if initialize && let Err(full) = self.idle_sessions.room(client().as_ref()) {
            return Err(super::idle::refused(full, client().as_ref()));
        }
        // A client that accepts JSON gets its answer as plain JSON when no stream is needed (see
        // `plain_json`); one that accepts only streams keeps them.
        let accepts_json = post && accepts_json(req.headers());
        let resp = self.service.handle(req).await;
        let resp = if initialize { declare_tasks(resp) } else { resp };
        Ok(if accepts_json { super::plain_json::plain_json(resp).await } else { resp })
    }

    /// A session's call that needs nothing of its session, and a 2026-07-28 stateless call that
    /// needs nothing of rmcp, are answered here (`Err`, the answer); otherwise the request goes
    /// on. Its Host and Origin are checked as rmcp checks them; if refused, rmcp answers.
    async fn answer_directly(&self, req: hyper::Request<McpBody>) -> Step<hyper::Request<McpBody>> {
        let ready = self.host_service.as_ref().is_none_or(|s| s.lifecycle.is_ready());
        let eligible = ready
            && declared_within(req.headers(), self.max_message)
            && accepts_both(req.headers())
            && self.guard.check(req.headers()).is_ok();
        if !eligible {
            return Ok(req);
        }
        let session = self.direct.session(req.headers()).await;
        if session.is_none() && !super::stateless::request(req.headers()) {
            return Ok(req);
        }
        let (mut parts, body) = req.into_parts();
        let body = read_body(body, self.max_message).await?;
        let answer = match &session {
            Some(session) => self.direct.answer(session, &mut parts, &body).await,
            None => self.direct.answer_stateless(&mut parts, &body).await,
        };
        match answer {
            Some(message) => Err(json(message)),
            None => Ok(with_body(parts, body)),
        }
    }
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
    let addr = listener.local_addr()?;
    // No plugin's HTTP request may reach this server, whatever its grant.
    let _own = toolhost_core::capability::net::listeners::register(addr);
    let config = rmcp_config(&server, &options);
    // Cancelled once the calls are drained: rmcp then ends its sessions and open streams.
    let sessions = config.cancellation_token.clone();
    let door = front_door(server, &options, config);
    let door = Arc::new(door);
    let connections = Connections::new(&door.limits);
    let refusing = Arc::new(std::sync::atomic::AtomicUsize::new(0));
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
                let Some(s) = door.host_service.clone() else { break };
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
        serve_connection(door.clone(), stream, peer, admitted, &graceful);
    }
    drop(listener);
    // Every call has its outcome; the last answers may still be on their way through rmcp:
    // let them be sent, then end rmcp's sessions and streams, let connections deliver what they
    // hold (each closes after its current response), and return.
    if tokio::time::timeout(FLUSH_WAIT, door.answers.idle()).await.is_err() {
        tracing::debug!("MCP HTTP: answers still open after {FLUSH_WAIT:?}; ending the sessions");
    }
    sessions.cancel();
    if tokio::time::timeout(FLUSH_WAIT, graceful.shutdown()).await.is_err() {
        tracing::debug!("MCP HTTP: connections still open after {FLUSH_WAIT:?}; closing them");
    }
    Ok(())
}

/// Serve one admitted connection on a task of its own, watched by the graceful shutdown.
fn serve_connection(
    door: Arc<FrontDoor>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    admitted: conn::Admitted,
    graceful: &hyper_util::server::graceful::GracefulShutdown,
) {
    // Each answer is one small write: without TCP_NODELAY, Nagle's algorithm holds it until
    // the client's delayed ACK (~40 ms per call on Linux).
    let _ = stream.set_nodelay(true);
    let header_timeout = door.limits.header_timeout;
    let handler = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let door = door.clone();
        async move { Ok::<_, std::convert::Infallible>(door.handle(req, peer).await) }
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    let conn = hyper::server::conn::http1::Builder::new()
        // The header timer also closes a keep-alive connection left idle between requests.
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(io, handler);
    let conn = graceful.watch(conn);
    tokio::spawn(async move {
        let _admitted = admitted;
        if let Err(e) = conn.await {
            tracing::debug!("MCP HTTP connection from {peer}: {e}");
        }
    });
}

/// The allowed `Host` values: loopback's names, and the operator's.
fn allowed_hosts(options: &HttpOptions) -> Vec<String> {
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    hosts
}

/// rmcp's configuration of its streamable HTTP service for `server` with `options`.
fn rmcp_config(
    server: &McpServer,
    options: &HttpOptions,
) -> rmcp::transport::streamable_http_server::StreamableHttpServerConfig {
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    // One limit for an MCP message whatever the transport (`[mcp] max_message_kb`). A
    // 2026-07-28 stateless request that needs no stream is answered with plain JSON by rmcp (a
    // 2025 session's by `plain_json`).
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_allowed_hosts(allowed_hosts(options))
        .with_max_request_body_bytes(server.max_message);
    if options.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(options.allowed_origins.clone())
    }
}

/// The front door of `server` with `options`, rmcp's service configured by `config`.
fn front_door(
    server: McpServer,
    options: &HttpOptions,
    config: rmcp::transport::streamable_http_server::StreamableHttpServerConfig,
) -> FrontDoor {
    let guard = HostGuard::new(&allowed_hosts(options), &options.allowed_origins);
    let sessions = config.cancellation_token.clone();
    let max_message = server.max_message;
    // 2025 sessions unused for `[mcp] session_idle_s` are closed (their memory freed) until the
    // sessions end.
    let idle_sessions = Arc::new(super::idle::IdleSessions::new(server.session_idle, server.session_caps));
    tokio::spawn(idle_sessions.clone().sweep(sessions.clone().cancelled_owned()));
    // A session's common call is answered without rmcp's session (see `direct.rs`).
    let direct = Arc::new(super::direct::Direct::new(server.clone(), idle_sessions.clone()));
    let service = rmcp::transport::streamable_http_server::StreamableHttpService::new(
        move || Ok(server.session()),
        idle_sessions.clone(),
        config,
    );
    FrontDoor {
        service,
        tokens: options.tokens.clone().into(),
        auth: options.auth.clone(),
        local_key: options.local_key.clone(),
        host_service: options.service.clone(),
        console: options.console.clone(),
        guard,
        direct,
        idle_sessions,
        answers: OpenAnswers::default(),
        limits: connection_limits(options.limits),
        max_message,
    }
}

/// `limits`, with the connection caps lowered to what this process's open-file limit allows
/// (raised to its hard limit first).
fn connection_limits(mut limits: crate::service::HttpLimits) -> crate::service::HttpLimits {
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
    limits
}

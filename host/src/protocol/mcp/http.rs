//! MCP over streamable HTTP: rmcp's service behind a small hyper front door that serves only
//! `/mcp`, checks the bearer token (when the operator configured any) before anything else,
//! and leaves the Host/Origin checks (DNS-rebinding protection) to rmcp.

use super::McpServer;
use crate::config::Config;
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

/// Read the `[mcp] tokens` values (from their secrets, env vars or files) now.
pub fn load_tokens(cfg: &Config) -> anyhow::Result<Vec<McpToken>> {
    let mut out = Vec::new();
    for (name, source) in &cfg.mcp.tokens {
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

/// The name of the `[mcp] tokens` entry a request authenticated with, put in the request's
/// extensions for the MCP handler (which reads it back from rmcp's `http::request::Parts`).
#[derive(Debug, Clone)]
pub struct TokenName(pub String);

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
}

/// How long, after the last call, connections get to deliver their final responses.
const FLUSH_WAIT: Duration = Duration::from_secs(2);
/// `Retry-After` (seconds) on a `503` while shutting down: a load balancer has usually routed
/// the client elsewhere by then.
const RETRY_AFTER_S: &str = "1";

type Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;

/// MCP `POST` responses whose body has not been sent in full. A call that finishes during the
/// drain has its answer still on the way through rmcp to the client when the drain sees no call
/// in flight: sessions are ended only once these are done (or after [`FLUSH_WAIT`]).
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
    /// `resp`, counted until its body is done.
    fn track(&self, resp: hyper::Response<Body>) -> hyper::Response<Body> {
        use http_body_util::BodyExt;
        self.0.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let open = OpenAnswer(self.clone());
        resp.map(move |body| {
            body.map_frame(move |frame| {
                let _held = &open;
                frame
            })
            .boxed()
        })
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
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

    let addr = listener.local_addr()?;
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts);
    config = if options.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(options.allowed_origins.clone())
    };
    // Cancelled once the calls are drained: rmcp then ends its sessions and open streams.
    let sessions = config.cancellation_token.clone();
    let tokens: Arc<[McpToken]> = options.tokens.clone().into();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let host_service = options.service.clone();
    let answers = OpenAnswers::default();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let (drained_tx, mut drained_rx) = tokio::sync::watch::channel(false);
    let mut shutting_down = false;
    loop {
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
            () = async { let _ = drained_rx.wait_for(|d| *d).await; } => break,
        };
        // Each answer is one small write: without TCP_NODELAY, Nagle's algorithm holds it until
        // the client's delayed ACK (~40 ms per call on Linux).
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let tokens = tokens.clone();
        let host_service = host_service.clone();
        let answers = answers.clone();
        let handler = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            let service = service.clone();
            let tokens = tokens.clone();
            let host_service = host_service.clone();
            let answers = answers.clone();
            async move {
                let path = req.uri().path();
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
                }
                if let Some(s) = &host_service
                    && !s.lifecycle.is_ready()
                {
                    let why = if s.lifecycle.phase() == crate::service::shutdown::Phase::Serving {
                        "toolhost is starting: the plugins are loading; retry\n"
                    } else {
                        "toolhost is shutting down: retry (another replica will answer)\n"
                    };
                    let mut resp = text(hyper::StatusCode::SERVICE_UNAVAILABLE, why);
                    resp.headers_mut().insert(
                        hyper::header::RETRY_AFTER,
                        hyper::header::HeaderValue::from_static(RETRY_AFTER_S),
                    );
                    return Ok(resp);
                }
                let post = req.method() == hyper::Method::POST;
                let resp = service.handle(req).await;
                Ok(if post { answers.track(resp) } else { resp })
            }
        });
        let io = hyper_util::rt::TokioIo::new(stream);
        let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, handler);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
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

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
}

/// Serve MCP over streamable HTTP at `http://ADDR/mcp` until `shutdown` completes.
pub async fn serve_http(
    server: McpServer,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    use http_body_util::{BodyExt, Full};
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
    let tokens: Arc<[McpToken]> = options.tokens.clone().into();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut shutdown = std::pin::pin!(shutdown);
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
            _ = &mut shutdown => return Ok(()),
        };
        // Each answer is one small write: without TCP_NODELAY, Nagle's algorithm holds it until
        // the client's delayed ACK (~40 ms per call on Linux).
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let tokens = tokens.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let service = service.clone();
                let tokens = tokens.clone();
                async move {
                    if req.uri().path() != "/mcp" {
                        let body =
                            Full::new(bytes::Bytes::from_static(b"not found: the MCP endpoint is /mcp\n"))
                                .map_err(|never| match never {})
                                .boxed();
                        let mut resp = hyper::Response::new(body);
                        *resp.status_mut() = hyper::StatusCode::NOT_FOUND;
                        return Ok::<_, std::convert::Infallible>(resp);
                    }
                    if !tokens.is_empty() {
                        let auth = req.headers().get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes());
                        match authenticate(&tokens, auth) {
                            Some(t) => tracing::debug!(token = t.name, "MCP {} from {peer}", req.method()),
                            None => {
                                // The header's value is never logged: it may be a real token typed wrong.
                                tracing::info!(
                                    "MCP request from {peer} refused: {}",
                                    if auth.is_some() { "unknown bearer token" } else { "no bearer token" }
                                );
                                let challenge = if auth.is_some() {
                                    r#"Bearer realm="toolhost", error="invalid_token""#
                                } else {
                                    r#"Bearer realm="toolhost""#
                                };
                                let body = Full::new(bytes::Bytes::from_static(
                                    b"unauthorized: send Authorization: Bearer <token> (an [mcp] tokens entry)\n",
                                ))
                                .map_err(|never| match never {})
                                .boxed();
                                let mut resp = hyper::Response::new(body);
                                *resp.status_mut() = hyper::StatusCode::UNAUTHORIZED;
                                resp.headers_mut().insert(
                                    hyper::header::WWW_AUTHENTICATE,
                                    hyper::header::HeaderValue::from_static(challenge),
                                );
                                return Ok(resp);
                            }
                        }
                    }
                    Ok(service.handle(req).await)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await {
                tracing::debug!("MCP HTTP connection from {peer}: {e}");
            }
        });
    }
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

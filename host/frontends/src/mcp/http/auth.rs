//! Who may use `/mcp`: the bearer tokens of `[mcp] tokens` (held as SHA-256 digests, compared in
//! constant time), OAuth access tokens under `[auth]` (checked by [`crate::auth::Verifier`]),
//! the local key's mark without either, and the `401`/`403` for everyone else.

use super::Body;
use super::requests::text;
use sha2::Digest;
use std::net::SocketAddr;

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
            if crate::mcp::approval::ct_eq(&t.digest, &digest) {
                found = Some(t.name.clone());
            }
        }
        found
    }

    fn any(&self) -> bool {
        !self.is_empty()
    }
}

/// Read the `[mcp] tokens` values (from their secrets, env vars or files) now.
pub fn load_tokens(mcp: &crate::mcp::settings::McpSettings) -> anyhow::Result<Vec<McpToken>> {
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

/// Refuse to expose unauthenticated MCP beyond this machine unless the operator said so
/// (`authenticated`: static tokens or `[auth]` are configured).
pub fn check_exposure(
    addr: SocketAddr,
    authenticated: bool,
    allow_unauthenticated: bool,
) -> anyhow::Result<()> {
    if addr.ip().is_loopback() || authenticated || allow_unauthenticated {
        return Ok(());
    }
    anyhow::bail!(
        "refusing to serve MCP on {addr} without authentication: anyone who can reach it could run the tools. \
         Configure a token ([mcp] tokens = [{{ name = \"ci\", env = \"TOOLHOST_MCP_TOKEN\" }}] in toolhost.toml) \
         or an authorization server ([auth]), \
         bind a loopback address (127.0.0.1), or pass --allow-unauthenticated-remote to accept the risk"
    )
}

/// Which configured token `header` (an `Authorization` value) carries, if any. Every token is
/// compared, each in constant time, so timing says nothing about which prefix matched.
pub(super) fn authenticate<'a>(tokens: &'a [McpToken], header: Option<&[u8]>) -> Option<&'a McpToken> {
    let header = header?;
    let value = header.strip_prefix(b"Bearer ").or_else(|| header.strip_prefix(b"bearer "))?;
    let digest: [u8; 32] = sha2::Sha256::digest(value).into();
    let mut found = None;
    for t in tokens {
        if crate::mcp::approval::ct_eq(&t.digest, &digest) {
            found = Some(t);
        }
    }
    found
}

/// `401` with a Bearer challenge; the header's value is never logged (it may be a real token
/// typed wrong).
pub(super) fn unauthorized(peer: SocketAddr, what: &str, had_header: bool) -> hyper::Response<Body> {
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

/// The answer to a request `[auth]` refused: its status and challenge (`auth::challenge`), and
/// a body saying what to do. The reason is logged; the token never is.
pub(super) fn refused(
    settings: &crate::auth::AuthSettings,
    refusal: &crate::auth::Refusal,
    peer: SocketAddr,
    what: &str,
) -> hyper::Response<Body> {
    use crate::auth::Refusal;
    match refusal {
        Refusal::Unavailable(e) => tracing::warn!("{what} request from {peer} refused: {refusal} ({e})"),
        _ => tracing::info!("{what} request from {peer} refused: {refusal}"),
    }
    let (status, challenge) = crate::auth::challenge(settings, refusal);
    let status = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::UNAUTHORIZED);
    let body = match refusal {
        Refusal::Missing => "unauthorized: send Authorization: Bearer <access token> from the authorization \
                             server named in the resource metadata\n"
            .to_string(),
        Refusal::Unavailable(_) => "the token cannot be checked now: try again shortly\n".to_string(),
        other => format!("{other}\n"),
    };
    let mut resp = text(status, body);
    if let Ok(v) = hyper::header::HeaderValue::from_str(&challenge) {
        resp.headers_mut().insert(hyper::header::WWW_AUTHENTICATE, v);
    }
    if matches!(refusal, Refusal::Unavailable(_)) {
        resp.headers_mut().insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from_static("5"));
    }
    resp
}

/// The Protected Resource Metadata document (RFC 9728), readable from any origin: it is public,
/// and a browser-based client must read it before it has a token.
pub(super) fn metadata(settings: &crate::auth::AuthSettings) -> hyper::Response<Body> {
    use http_body_util::{BodyExt, Full};
    let doc = crate::auth::metadata(settings).to_string();
    let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from(doc)).boxed());
    let h = resp.headers_mut();
    h.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    h.insert(hyper::header::ACCESS_CONTROL_ALLOW_ORIGIN, hyper::header::HeaderValue::from_static("*"));
    h.insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("max-age=300"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn only_a_configured_bearer_token_authenticates() {
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
    pub(super) fn non_loopback_without_a_token_needs_the_explicit_flag() {
        let lan: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let e = check_exposure(lan, false, false).unwrap_err().to_string();
        assert!(e.contains("--allow-unauthenticated-remote") && e.contains("[mcp] tokens"), "{e}");
        assert!(e.contains("[auth]"), "{e}");
        assert!(check_exposure(lan, false, true).is_ok());
        assert!(check_exposure(lan, true, false).is_ok());
        assert!(check_exposure(local, false, false).is_ok());
    }
}

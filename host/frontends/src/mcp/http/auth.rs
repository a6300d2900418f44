//! Who may use `/mcp`: the bearer tokens of `[mcp] tokens` (held as SHA-256 digests, compared in
//! constant time), the local key's mark without them, and the `401` for everyone else.

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

/// The name of the `[mcp] tokens` entry a request authenticated with, put in the request's
/// extensions for the MCP handler (which reads it back from rmcp's `http::request::Parts`).
#[derive(Debug, Clone)]
pub struct TokenName(pub String);

/// Put in a request's extensions, without `[mcp] tokens`, when it carries the process's local
/// key as its bearer token: only such a client is asked (and may answer) a danger or grant
/// question (see `keyless.rs`).
#[derive(Debug, Clone, Copy)]
pub struct LocalOperator;

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
        let e = check_exposure(lan, &[], false).unwrap_err().to_string();
        assert!(e.contains("--allow-unauthenticated-remote") && e.contains("[mcp] tokens"), "{e}");
        assert!(check_exposure(lan, &[], true).is_ok());
        assert!(check_exposure(lan, &[McpToken::new("ci", "0123456789abcdef")], false).is_ok());
        assert!(check_exposure(local, &[], false).is_ok());
    }
}

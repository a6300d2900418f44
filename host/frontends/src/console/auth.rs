//! Who may use the console: the same tokens as MCP over HTTP, asked once and kept as a session
//! cookie (`HttpOnly`, `SameSite=Strict`, `Secure` behind TLS); without tokens, loopback peers
//! only. Every state-changing request carries the session's CSRF token.

use sha2::Digest;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The session cookie's name.
pub const COOKIE: &str = "toolhost_console";
/// The header a state-changing request carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Sessions kept at most; past this the least recently used is forgotten.
const MAX_SESSIONS: usize = 1024;

/// The accepted tokens (`[mcp] tokens`): the HTTP front door implements this over its own
/// token list, so the console never holds a token value or names the MCP front end.
pub trait Tokens: Send + Sync {
    /// No token is configured.
    fn is_empty(&self) -> bool;
    /// The name of the configured token `value` is, if any (compared in constant time).
    fn name_of(&self, value: &str) -> Option<String>;
}

/// Who a request is, once let in.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The `[mcp] tokens` entry the session was opened with (`None`: no tokens, loopback).
    pub token: Option<String>,
    /// The CSRF token the page must send back.
    pub csrf: String,
}

/// Why a request is not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Tokens are configured and the request has no live session: ask for the token.
    Login,
    /// No tokens and the peer is not on this machine.
    NotLoopback,
}

struct Session {
    token: String,
    csrf: String,
    last_used: Instant,
}

/// The tokens, the open sessions and (without tokens) the one CSRF token of this process.
pub struct Sessions {
    tokens: std::sync::Arc<dyn Tokens>,
    idle: Duration,
    /// By SHA-256 of the session id: a lookup compares digests, never the id itself.
    open: Mutex<HashMap<[u8; 32], Session>>,
    /// Without tokens there are no sessions; the page reads this from `/console/api/session`,
    /// which a page of another origin cannot read.
    loopback_csrf: String,
}

/// 32 random bytes as hex (a session id, a CSRF token).
pub fn random_hex() -> String {
    let mut b = [0u8; 32];
    // getrandom fails only where the OS has no randomness source at all.
    getrandom::fill(&mut b).expect("the OS random number generator");
    hex::encode(b)
}

fn digest(s: &str) -> [u8; 32] {
    sha2::Sha256::digest(s.as_bytes()).into()
}

impl Sessions {
    pub fn new(tokens: std::sync::Arc<dyn Tokens>, idle: Duration) -> Sessions {
        Sessions { tokens, idle, open: Mutex::default(), loopback_csrf: random_hex() }
    }

    /// Whether a token is needed (some `[mcp] tokens` are configured).
    pub fn needs_token(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Let `peer` in with the session its `Cookie` header names, or say why not.
    pub fn caller(&self, peer: SocketAddr, cookie: Option<&str>) -> Result<Caller, Refused> {
        if self.tokens.is_empty() {
            if !peer.ip().is_loopback() && !peer.ip().to_canonical().is_loopback() {
                return Err(Refused::NotLoopback);
            }
            return Ok(Caller { token: None, csrf: self.loopback_csrf.clone() });
        }
        let id = cookie.and_then(session_cookie).ok_or(Refused::Login)?;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let key = digest(id);
        let now = Instant::now();
        match open.get_mut(&key) {
            Some(s) if now.duration_since(s.last_used) < self.idle => {
                s.last_used = now;
                Ok(Caller { token: Some(s.token.clone()), csrf: s.csrf.clone() })
            }
            Some(_) => {
                open.remove(&key);
                Err(Refused::Login)
            }
            None => Err(Refused::Login),
        }
    }

    /// Open a session for `token` (a value typed into the login form): the new session id,
    /// or `None` when it is no configured token.
    pub fn login(&self, token: &str) -> Option<String> {
        let name = self.tokens.name_of(token.trim())?;
        let id = random_hex();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        open.retain(|_, s| now.duration_since(s.last_used) < self.idle);
        if open.len() >= MAX_SESSIONS
            && let Some(oldest) = open.iter().min_by_key(|(_, s)| s.last_used).map(|(k, _)| *k)
        {
            open.remove(&oldest);
        }
        open.insert(digest(&id), Session { token: name, csrf: random_hex(), last_used: now });
        Some(id)
    }

    /// End the session the cookie names.
    pub fn logout(&self, cookie: Option<&str>) {
        if let Some(id) = cookie.and_then(session_cookie) {
            self.open.lock().unwrap_or_else(|p| p.into_inner()).remove(&digest(id));
        }
    }
}

/// The session id in a `Cookie` header.
fn session_cookie(header: &str) -> Option<&str> {
    header.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == COOKIE && !v.is_empty()).then_some(v)
    })
}

/// Whether `given` (the request's CSRF header) is the caller's token, compared in constant time.
pub fn csrf_ok(caller: &Caller, given: Option<&[u8]>) -> bool {
    use subtle::ConstantTimeEq;
    given.is_some_and(|g| bool::from(sha2::Sha256::digest(g).as_slice().ct_eq(&digest(&caller.csrf))))
}

/// The `Set-Cookie` value for a new session.
pub fn set_cookie(id: &str, secure: bool, idle: Duration) -> String {
    format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        idle.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that ends the session in the browser.
pub fn clear_cookie(secure: bool) -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}", if secure { "; Secure" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Tokens by value, for the tests (the front door's own list keeps only digests).
    struct Plain(Vec<(&'static str, &'static str)>);

    impl Tokens for Plain {
        fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
        fn name_of(&self, value: &str) -> Option<String> {
            self.0.iter().find(|(_, v)| *v == value).map(|(n, _)| n.to_string())
        }
    }

    fn peer(ip: &str) -> SocketAddr {
        format!("{ip}:4000").parse().unwrap()
    }

    #[test]
    fn without_tokens_only_loopback_gets_in() {
        let s = Sessions::new(Arc::new(Plain(vec![])), Duration::from_secs(60));
        assert!(s.caller(peer("127.0.0.1"), None).is_ok());
        assert!(s.caller(peer("[::1]"), None).is_ok());
        assert_eq!(s.caller(peer("192.0.2.7"), None).unwrap_err(), Refused::NotLoopback);
    }

    #[test]
    fn a_token_opens_a_session_and_only_its_cookie_lets_in() {
        let s =
            Sessions::new(Arc::new(Plain(vec![("ops", "0123456789abcdef-ops")])), Duration::from_secs(60));
        let remote = peer("192.0.2.7");
        assert_eq!(s.caller(remote, None).unwrap_err(), Refused::Login);
        assert!(s.login("0123456789abcdef-op").is_none(), "a wrong token opens nothing");
        let id = s.login("0123456789abcdef-ops").unwrap();
        let cookie = format!("other=1; {COOKIE}={id}");
        let caller = s.caller(remote, Some(&cookie)).unwrap();
        assert_eq!(caller.token.as_deref(), Some("ops"));
        assert!(csrf_ok(&caller, Some(caller.csrf.as_bytes())));
        assert!(!csrf_ok(&caller, Some(b"nope")) && !csrf_ok(&caller, None));
        assert_eq!(s.caller(remote, Some(&format!("{COOKIE}={id}x"))).unwrap_err(), Refused::Login);
        s.logout(Some(&cookie));
        assert_eq!(s.caller(remote, Some(&cookie)).unwrap_err(), Refused::Login);
        let c = set_cookie(&id, true, Duration::from_secs(60));
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.ends_with("; Secure"), "{c}");
    }

    #[test]
    fn an_idle_session_is_forgotten() {
        let s =
            Sessions::new(Arc::new(Plain(vec![("ops", "0123456789abcdef-ops")])), Duration::from_millis(1));
        let id = s.login("0123456789abcdef-ops").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(s.caller(peer("127.0.0.1"), Some(&format!("{COOKIE}={id}"))).unwrap_err(), Refused::Login);
    }
}

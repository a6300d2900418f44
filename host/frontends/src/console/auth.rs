//! Who may use the console: with `[mcp] tokens`, whoever types one of them into the login
//! form; with `[console] oauth_client_id`, whoever signs in at the authorization server
//! (`signin.rs`: the session is that person's principal, and ends when their access token
//! expires); without either, whoever opens the login link `serve --http` printed at start (it
//! carries the process's [`LocalKey`]), from loopback only. Either way the browser then keeps a
//! session cookie (`HttpOnly`, `SameSite=Strict`, `Secure` behind TLS), and every
//! state-changing request carries the session's CSRF token.

use crate::local_key::{LocalKey, random_hex};
use sha2::Digest;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_core::identity::Principal;

/// The session cookie's name.
pub const COOKIE: &str = "toolhost_console";
/// The header a state-changing request carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Sessions kept at most; past this the least recently used is forgotten.
const MAX_SESSIONS: usize = 1024;
/// How long a one-time login link stays good if unused.
const ONE_TIME_TTL: Duration = Duration::from_secs(600);
/// One-time login links kept at most.
const MAX_ONE_TIME: usize = 16;

/// The accepted tokens (`[mcp] tokens`): the HTTP front door implements this over its own
/// token list, so the console never holds a token value or names the MCP front end.
pub trait Tokens: Send + Sync {
    /// The name of the configured token `value` is, if any (compared in constant time).
    fn name_of(&self, value: &str) -> Option<String>;

    /// Whether any token is configured (without, the login form is not offered).
    fn any(&self) -> bool {
        true
    }
}

/// What opens a console session.
#[derive(Clone)]
pub enum Access {
    /// `[mcp] tokens`: one of them, typed into the login form.
    Tokens(Arc<dyn Tokens>),
    /// No tokens: the process's local key (the login link printed at start, or the key typed
    /// into the form), from a peer on loopback.
    LocalKey(Arc<LocalKey>),
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Tokens(_) => "Access::Tokens",
            Access::LocalKey(_) => "Access::LocalKey",
        })
    }
}

/// Who a request is, once let in.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The `[mcp] tokens` entry the session was opened with (`None`: the local key, or a
    /// sign-in at the authorization server).
    pub token: Option<String>,
    /// The person who signed in at the authorization server, as their access token says.
    pub principal: Option<Arc<Principal>>,
    /// The CSRF token the page must send back.
    pub csrf: String,
}

impl Caller {
    /// The context of a call, read or prompt this caller makes from the console: who it is (the
    /// signed-in person's principal, or a token's), and no MCP session (buckets scoped per
    /// session are refused to it).
    pub fn context(&self) -> toolhost_core::executor::CallContext {
        toolhost_core::executor::CallContext {
            front_end: Some("console"),
            token: self.token.clone(),
            principal: self
                .principal
                .clone()
                .or_else(|| self.token.as_ref().map(|t| Arc::new(Principal::token(t.clone())))),
            ..Default::default()
        }
    }
}

/// Why a request is not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No live session: sign in (a token, or the local key's link).
    Login,
    /// No tokens and the peer is not on this machine.
    NotLoopback,
}

struct Session {
    token: Option<String>,
    principal: Option<Arc<Principal>>,
    /// When the session ends however busy (the signed-in person's access token expires).
    until: Option<Instant>,
    csrf: String,
    last_used: Instant,
}

impl Session {
    fn live(&self, now: Instant, idle: Duration) -> bool {
        now.duration_since(self.last_used) < idle && self.until.is_none_or(|u| now < u)
    }
}

/// What opens a session, the open sessions and the unused one-time login links.
pub struct Sessions {
    access: Access,
    idle: Duration,
    /// By SHA-256 of the session id: a lookup compares digests, never the id itself.
    open: Mutex<HashMap<[u8; 32], Session>>,
    /// One-time login codes (their SHA-256) and when each was made.
    once: Mutex<Vec<([u8; 32], Instant)>>,
}

fn digest(s: &str) -> [u8; 32] {
    sha2::Sha256::digest(s.as_bytes()).into()
}

impl Sessions {
    pub fn new(access: Access, idle: Duration) -> Sessions {
        Sessions { access, idle, open: Mutex::default(), once: Mutex::default() }
    }

    /// Whether sessions open with the local key (no `[mcp] tokens`).
    pub fn by_key(&self) -> bool {
        matches!(self.access, Access::LocalKey(_))
    }

    /// Whether sessions open with one of the `[mcp] tokens` (at least one is configured).
    pub fn by_token(&self) -> bool {
        matches!(&self.access, Access::Tokens(t) if t.any())
    }

    /// Whether `peer` may use the console at all: anyone with tokens, loopback only without.
    pub fn reachable_by(&self, peer: SocketAddr) -> Result<(), Refused> {
        let ip = peer.ip().to_canonical();
        if self.by_key() && !ip.is_loopback() {
            return Err(Refused::NotLoopback);
        }
        Ok(())
    }

    /// Let `peer` in with the session its `Cookie` header names, or say why not.
    pub fn caller(&self, peer: SocketAddr, cookie: Option<&str>) -> Result<Caller, Refused> {
        self.reachable_by(peer)?;
        let id = cookie.and_then(session_cookie).ok_or(Refused::Login)?;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let key = digest(id);
        let now = Instant::now();
        match open.get_mut(&key) {
            Some(s) if s.live(now, self.idle) => {
                s.last_used = now;
                Ok(Caller { token: s.token.clone(), principal: s.principal.clone(), csrf: s.csrf.clone() })
            }
            Some(_) => {
                open.remove(&key);
                Err(Refused::Login)
            }
            None => Err(Refused::Login),
        }
    }

    /// Open a session for `value` (typed into the login form, or the `key` of the login link):
    /// the new session id, or `None` when it is neither a configured token nor the local key.
    pub fn login(&self, value: &str) -> Option<String> {
        let value = value.trim();
        let token = match &self.access {
            Access::Tokens(tokens) => Some(tokens.name_of(value)?),
            Access::LocalKey(key) if key.matches(value.as_bytes()) => None,
            Access::LocalKey(_) => return None,
        };
        Some(self.open_session(token, None, None))
    }

    /// Open a session for `principal`, signed in at the authorization server, ending at `until`
    /// at the latest (when their access token expires): the new session id.
    pub fn signed_in(&self, principal: Arc<Principal>, until: Instant) -> String {
        self.open_session(None, Some(principal), Some(until))
    }

    /// A one-time login code (without tokens): good for one session within ten minutes, so a
    /// link handed to a browser on its command line (`--open`) is not the key itself.
    pub fn one_time_code(&self) -> Option<String> {
        if !self.by_key() {
            return None;
        }
        let code = random_hex();
        let mut once = self.once.lock().unwrap_or_else(|p| p.into_inner());
        once.retain(|(_, made)| made.elapsed() < ONE_TIME_TTL);
        if once.len() >= MAX_ONE_TIME {
            once.remove(0);
        }
        once.push((digest(&code), Instant::now()));
        Some(code)
    }

    /// Open a session with a one-time code, spending it: the new session id, or `None`.
    pub fn login_once(&self, code: &str) -> Option<String> {
        use subtle::ConstantTimeEq;
        let d = digest(code.trim());
        let mut once = self.once.lock().unwrap_or_else(|p| p.into_inner());
        once.retain(|(_, made)| made.elapsed() < ONE_TIME_TTL);
        let at = once.iter().position(|(c, _)| bool::from(c.as_slice().ct_eq(d.as_slice())))?;
        once.remove(at);
        drop(once);
        Some(self.open_session(None, None, None))
    }

    fn open_session(
        &self,
        token: Option<String>,
        principal: Option<Arc<Principal>>,
        until: Option<Instant>,
    ) -> String {
        let id = random_hex();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        open.retain(|_, s| s.live(now, self.idle));
        if open.len() >= MAX_SESSIONS
            && let Some(oldest) = open.iter().min_by_key(|(_, s)| s.last_used).map(|(k, _)| *k)
        {
            open.remove(&oldest);
        }
        open.insert(digest(&id), Session { token, principal, until, csrf: random_hex(), last_used: now });
        id
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

    /// Tokens by value, for the tests (the front door's own list keeps only digests).
    struct Plain(Vec<(&'static str, &'static str)>);

    impl Tokens for Plain {
        fn name_of(&self, value: &str) -> Option<String> {
            self.0.iter().find(|(_, v)| *v == value).map(|(n, _)| n.to_string())
        }
    }

    fn peer(ip: &str) -> SocketAddr {
        format!("{ip}:4000").parse().unwrap()
    }

    fn tokens(list: Vec<(&'static str, &'static str)>, idle: Duration) -> Sessions {
        Sessions::new(Access::Tokens(Arc::new(Plain(list))), idle)
    }

    #[test]
    fn without_tokens_only_the_key_opens_a_session_and_only_on_loopback() {
        let key = Arc::new(LocalKey::generate());
        let s = Sessions::new(Access::LocalKey(key.clone()), Duration::from_secs(60));
        let local = peer("127.0.0.1");
        assert_eq!(s.caller(local, None).unwrap_err(), Refused::Login, "loopback alone is not enough");
        assert_eq!(s.caller(peer("192.0.2.7"), None).unwrap_err(), Refused::NotLoopback);
        assert!(s.login("not-the-key").is_none());
        let id = s.login(key.value()).unwrap();
        let cookie = format!("{COOKIE}={id}");
        let caller = s.caller(local, Some(&cookie)).unwrap();
        assert_eq!(caller.token, None);
        assert!(s.caller(peer("[::1]"), Some(&cookie)).is_ok());
        assert!(s.caller(peer("[::ffff:127.0.0.1]"), Some(&cookie)).is_ok());
        assert_eq!(s.caller(peer("192.0.2.7"), Some(&cookie)).unwrap_err(), Refused::NotLoopback);
        // Each session has its own CSRF token.
        let other = s.login(key.value()).unwrap();
        let other = s.caller(local, Some(&format!("{COOKIE}={other}"))).unwrap();
        assert_ne!(caller.csrf, other.csrf);
    }

    #[test]
    fn a_one_time_code_opens_one_session() {
        let s = Sessions::new(Access::LocalKey(Arc::new(LocalKey::generate())), Duration::from_secs(60));
        let code = s.one_time_code().unwrap();
        assert!(s.login_once("0123").is_none());
        let id = s.login_once(&code).unwrap();
        assert!(s.caller(peer("127.0.0.1"), Some(&format!("{COOKIE}={id}"))).is_ok());
        assert!(s.login_once(&code).is_none(), "spent");
        assert!(s.login(&code).is_none(), "a code is not the key");
        assert!(
            tokens(vec![("ops", "0123456789abcdef-ops")], Duration::from_secs(60)).one_time_code().is_none()
        );
    }

    #[test]
    fn a_token_opens_a_session_and_only_its_cookie_lets_in() {
        let s = tokens(vec![("ops", "0123456789abcdef-ops")], Duration::from_secs(60));
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
    fn a_signed_in_session_is_the_persons_and_ends_with_their_token() {
        let s = tokens(vec![], Duration::from_secs(60));
        let alice = Arc::new(Principal {
            subject: "alice".into(),
            issuer: Some("https://as".into()),
            client_id: Some("console".into()),
            scopes: vec![],
            groups: vec!["ops".into()],
            via: toolhost_core::identity::Via::Oauth,
        });
        let id = s.signed_in(alice.clone(), Instant::now() + Duration::from_millis(30));
        let cookie = format!("{COOKIE}={id}");
        let caller = s.caller(peer("192.0.2.7"), Some(&cookie)).unwrap();
        assert_eq!(caller.token, None);
        let ctx = caller.context();
        assert_eq!(ctx.principal.as_deref(), Some(&*alice), "calls are made as the person");
        assert_eq!(ctx.token, None);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(
            s.caller(peer("192.0.2.7"), Some(&cookie)).unwrap_err(),
            Refused::Login,
            "not past the token's expiry, however busy"
        );
    }

    #[test]
    fn an_idle_session_is_forgotten() {
        let s = tokens(vec![("ops", "0123456789abcdef-ops")], Duration::from_millis(1));
        let id = s.login("0123456789abcdef-ops").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(s.caller(peer("127.0.0.1"), Some(&format!("{COOKIE}={id}"))).unwrap_err(), Refused::Login);
    }
}

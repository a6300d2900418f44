//! `[mcp]`: the bearer tokens MCP over HTTP accepts, how long a 2026-07-28 client has to
//! answer a danger confirmation, and the caps of MCP tasks and 2025 HTTP sessions. A leaf: it imports nothing of the
//! crate.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_core::settings::{Invalid, Problem, SecretFrom, SecretSource};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    /// Bearer tokens accepted by `serve --mcp --http`.
    #[serde(default)]
    tokens: Vec<RawMcpToken>,
    /// Seconds a 2026-07-28 client has to answer a danger confirmation.
    approval_ttl_s: Option<u64>,
    /// MCP tasks running at once, in all.
    tasks_max_running: Option<usize>,
    /// MCP tasks one client may have running at once.
    tasks_max_running_per_client: Option<usize>,
    /// Seconds a finished task's result is kept for `tasks/get`.
    tasks_keep_s: Option<u64>,
    /// Finished tasks kept at most (the oldest go first).
    tasks_max_kept: Option<usize>,
    /// The largest MCP message read (KiB): a stdio line, an HTTP request body.
    max_message_kb: Option<usize>,
    /// Seconds a 2025 HTTP session may go unused (no request, no open stream) before it is closed.
    session_idle_s: Option<u64>,
    /// 2025 HTTP sessions open at once, in all.
    max_sessions: Option<usize>,
    /// 2025 HTTP sessions open at once for one client (its token's name, else its IP address).
    max_sessions_per_peer: Option<usize>,
    /// Items one page of `resources/list`, `resources/templates/list`, `prompts/list` and
    /// `skills/list` holds.
    page_size: Option<usize>,
    /// The key sealing 2026-07-28 approvals, shared by the replicas of a fleet.
    approval_key: Option<RawKey>,
    /// Where redeemed approval nonces live when several replicas share them (`redis://…`, or a
    /// secret holding such a URL when it carries a password).
    replay_store: Option<RawStore>,
}

/// `replay_store = "redis://host:port"`, or `{ secret = "NAME" }` (or `env`/`file`) for a URL
/// with a password.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawStore {
    Url(String),
    From(RawSecretRef),
}

/// Where the replay store's URL comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// In the config (it holds no password).
    Plain(String),
    /// From a secret (it may hold a password).
    Secret(SecretSource),
}

impl StoreUrl {
    /// The URL, read now.
    pub fn read(&self) -> Result<String, Invalid> {
        match self {
            StoreUrl::Plain(u) => Ok(u.clone()),
            StoreUrl::Secret(s) => s.read().map_err(|e| Invalid::because("mcp.replay_store", e)),
        }
    }
}

/// `approval_key = { secret = "NAME" }` (or `env`/`file`); a bare string is a literal key,
/// refused with a message saying where it goes instead.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawKey {
    Literal(String),
    From(RawSecretRef),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSecretRef {
    secret: Option<String>,
    env: Option<String>,
    file: Option<PathBuf>,
}

/// The caps and retention of MCP tasks (`[mcp] tasks_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    pub max_running: usize,
    pub max_running_per_client: usize,
    /// How long a finished task's result is kept.
    pub keep: std::time::Duration,
    pub max_kept: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_running: 32,
            max_running_per_client: 4,
            keep: std::time::Duration::from_secs(600),
            max_kept: 256,
        }
    }
}

/// How many 2025 HTTP sessions may be open (`[mcp] max_sessions`, `max_sessions_per_peer`):
/// each holds some 60 KiB until it ends or is closed as idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionCaps {
    pub max: usize,
    pub max_per_peer: usize,
}

impl Default for SessionCaps {
    fn default() -> Self {
        SessionCaps { max: 1024, max_per_peer: 256 }
    }
}

/// `[mcp] session_idle_s` by default (rmcp's own default keep-alive).
pub const DEFAULT_SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);

/// `[mcp] max_message_kb` by default: four times the per-call argument limit.
pub const DEFAULT_MAX_MESSAGE_KB: usize = 4096;
/// The least `max_message_kb`: a message must hold arguments up to the per-call limit
/// (`toolhost_core::executor::MAX_ARGS_BYTES`) and the envelope around them.
pub const MIN_MAX_MESSAGE_KB: usize = toolhost_core::executor::MAX_ARGS_BYTES / 1024 + 64;
/// The largest `max_message_kb` (a message is read whole before it is parsed).
pub const MAX_MAX_MESSAGE_KB: usize = 256 * 1024;

/// Items a list page holds unless `[mcp] page_size` says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// The most `[mcp] page_size` may be.
pub const MAX_PAGE_SIZE: usize = 10_000;

/// A token's value never appears in the config: it comes from a `[secrets.X]`, an env var or a file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcpToken {
    name: String,
    secret: Option<String>,
    env: Option<String>,
    file: Option<PathBuf>,
}

/// The `[mcp]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// Bearer tokens for MCP over HTTP, by name (the name identifies the client in logs).
    pub tokens: Vec<(String, SecretSource)>,
    pub approval_ttl: std::time::Duration,
    pub tasks: TaskLimits,
    /// The largest MCP message read, in bytes: one stdio line, one HTTP request body. Larger
    /// ones are answered with an error naming the limit; arguments within the per-call limit
    /// always fit.
    pub max_message_bytes: usize,
    /// How long a 2025 HTTP session may go unused (no request, no open stream) before it is
    /// closed and its memory freed.
    pub session_idle: std::time::Duration,
    /// How many 2025 HTTP sessions may be open, in all and per client; past it an `initialize`
    /// is refused.
    pub sessions: SessionCaps,
    /// Where the key sealing 2026-07-28 approvals comes from, when a fleet shares one; without
    /// it each process draws its own (confirmations then work only with sticky routing).
    pub approval_key: Option<SecretSource>,
    /// The Redis URL redeemed approval nonces are kept in; `None`: this process's memory.
    pub replay_store: Option<StoreUrl>,
    /// Items one page of the paginated lists holds (see `mcp::pages`).
    pub page_size: usize,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            tokens: Vec::new(),
            approval_ttl: std::time::Duration::from_secs(300),
            tasks: TaskLimits::default(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_KB * 1024,
            session_idle: DEFAULT_SESSION_IDLE,
            sessions: SessionCaps::default(),
            approval_key: None,
            replay_store: None,
            page_size: DEFAULT_PAGE_SIZE,
        }
    }
}

impl RawMcp {
    /// Resolve `[mcp]`; a token may name a `[secrets]` entry, and its file is relative to `base`.
    pub fn resolve(
        self,
        secrets: &BTreeMap<String, SecretSource>,
        base: &Path,
    ) -> Result<McpSettings, Invalid> {
        resolve_mcp(self, secrets, base)
    }
}

fn resolve_mcp(
    raw: RawMcp,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<McpSettings, Invalid> {
    let mut out = McpSettings::default();
    resolve_limits(&raw, &mut out)?;
    out.tokens = resolve_tokens(raw.tokens, secrets, base)?;
    out.approval_key = resolve_approval_key(raw.approval_key, secrets, base)?;
    out.replay_store = resolve_replay_store(raw.replay_store, secrets, base)?;
    Ok(out)
}

/// `[mcp]`'s numbers: the approvals' lifetime, the task, session and message limits.
fn resolve_limits(raw: &RawMcp, out: &mut McpSettings) -> Result<(), Invalid> {
    if let Some(s) = raw.approval_ttl_s {
        if !(1..=3600).contains(&s) {
            return Err(Invalid::out_of_range("mcp.approval_ttl_s", s, 1, 3600));
        }
        out.approval_ttl = std::time::Duration::from_secs(s);
    }
    let range = |key: &str, v: u64, max: u64| {
        if (1..=max).contains(&v) {
            Ok(v)
        } else {
            Err(Invalid::out_of_range(format!("mcp.{key}"), v, 1, max))
        }
    };
    let t = &mut out.tasks;
    if let Some(n) = raw.tasks_max_running {
        t.max_running = range("tasks_max_running", n as u64, 10_000)? as usize;
    }
    if let Some(n) = raw.tasks_max_running_per_client {
        t.max_running_per_client = range("tasks_max_running_per_client", n as u64, 10_000)? as usize;
    }
    if t.max_running_per_client > t.max_running {
        return Err(Invalid::value(
            "mcp.tasks_max_running_per_client",
            t.max_running_per_client.to_string(),
            format!("is above mcp.tasks_max_running = {}", t.max_running),
        ));
    }
    if let Some(s) = raw.tasks_keep_s {
        t.keep = std::time::Duration::from_secs(range("tasks_keep_s", s, 7 * 24 * 3600)?);
    }
    if let Some(n) = raw.tasks_max_kept {
        t.max_kept = range("tasks_max_kept", n as u64, 100_000)? as usize;
    }
    if let Some(s) = raw.session_idle_s {
        out.session_idle = std::time::Duration::from_secs(range("session_idle_s", s, 7 * 24 * 3600)?);
    }
    if let Some(n) = raw.max_sessions {
        out.sessions.max = range("max_sessions", n as u64, 1_000_000)? as usize;
    }
    if let Some(n) = raw.max_sessions_per_peer {
        out.sessions.max_per_peer = range("max_sessions_per_peer", n as u64, 1_000_000)? as usize;
    }
    out.sessions.max_per_peer = out.sessions.max_per_peer.min(out.sessions.max);
    if let Some(n) = raw.page_size {
        out.page_size = range("page_size", n as u64, MAX_PAGE_SIZE as u64)? as usize;
    }
    if let Some(kb) = raw.max_message_kb {
        if !(MIN_MAX_MESSAGE_KB..=MAX_MAX_MESSAGE_KB).contains(&kb) {
            let bounds = (MIN_MAX_MESSAGE_KB as u64, MAX_MAX_MESSAGE_KB as u64);
            let why = format!(
                ": a message must hold the arguments of a call up to their {} KiB limit",
                toolhost_core::executor::MAX_ARGS_BYTES / 1024
            );
            return Err(Invalid::out_of_range_noting("mcp.max_message_kb", kb, bounds, why));
        }
        out.max_message_bytes = kb * 1024;
    }
    Ok(())
}

/// `[mcp] tokens`: each named once, its value from a secret source.
fn resolve_tokens(
    raw: Vec<RawMcpToken>,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<Vec<(String, SecretSource)>, Invalid> {
    let mut out: Vec<(String, SecretSource)> = Vec::new();
    for (i, t) in raw.into_iter().enumerate() {
        let key = format!("mcp.tokens[{i}]");
        if t.name.is_empty() || out.iter().any(|(n, _)| *n == t.name) {
            return Err(Invalid::says(
                key,
                format!("name {:?} is empty or used twice; give each token its own name", t.name),
            ));
        }
        let own = format!("mcp token `{}`", t.name);
        let r = RawSecretRef { secret: t.secret, env: t.env, file: t.file };
        let source = secret_source(&key, own, "a token's value", r, secrets, base)?;
        out.push((t.name, source));
    }
    Ok(out)
}

/// `[mcp] approval_key`: from a secret source, never the config itself.
fn resolve_approval_key(
    raw: Option<RawKey>,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<Option<SecretSource>, Invalid> {
    Ok(match raw {
        None => None,
        Some(RawKey::Literal(literal)) => {
            return Err(Invalid::says(
                "mcp.approval_key",
                format!(
                    "a literal key ({} bytes) never goes in the config file; give approval_key = \
                     {{ secret = \"NAME\" }} (a [secrets.NAME]), {{ env = \"VAR\" }} or {{ file = \"path\" }}",
                    literal.len()
                ),
            ));
        }
        Some(RawKey::From(r)) => {
            Some(secret_source("mcp.approval_key", "mcp approval_key".into(), "the key", r, secrets, base)?)
        }
    })
}

/// `[mcp] replay_store`: a `redis://` URL without a password, or one from a secret source.
fn resolve_replay_store(
    raw: Option<RawStore>,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<Option<StoreUrl>, Invalid> {
    Ok(match raw {
        None => None,
        Some(RawStore::Url(url)) => {
            if !url.starts_with("redis://") {
                // Only the scheme is shown: the rest may hold a password.
                let scheme = url.split_once("://").map_or("(none)", |(s, _)| s);
                return Err(Invalid::says(
                    "mcp.replay_store",
                    format!(
                        "the URL's scheme is {scheme:?}; give a redis://host:port URL (the only store supported; \
                         TLS `rediss://` is not)"
                    ),
                ));
            }
            if url::Url::parse(&url).is_ok_and(|u| u.password().is_some()) {
                return Err(Invalid::says(
                    "mcp.replay_store",
                    "the URL holds a password, which never goes in the config file; give replay_store = \
                     { secret = \"NAME\" } (a [secrets.NAME] holding the URL), { env = \"VAR\" } or { file = \
                     \"path\" }",
                ));
            }
            Some(StoreUrl::Plain(url))
        }
        Some(RawStore::From(r)) => Some(StoreUrl::Secret(secret_source(
            "mcp.replay_store",
            "mcp replay_store".into(),
            "a URL with a password",
            r,
            secrets,
            base,
        )?)),
    })
}

/// Where the value of `key` comes from: a `[secrets]` entry, an env var or a file under `base`;
/// never the config itself (`what` names the value in the message).
pub(crate) fn secret_source(
    key: &str,
    own: String,
    what: &str,
    r: RawSecretRef,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<SecretSource, Invalid> {
    match (r.secret, r.env, r.file) {
        (Some(s), None, None) => {
            secrets.get(&s).cloned().ok_or_else(|| Invalid::new(key, Problem::NoSecret(s.clone())))
        }
        (None, Some(var), None) => Ok(SecretSource::unnamed(own, SecretFrom::Env(var))),
        (None, None, Some(f)) => Ok(SecretSource::unnamed(own, SecretFrom::File(base.join(f)))),
        _ => Err(Invalid::says(
            key,
            format!(
                "give exactly one of `secret = \"NAME\"` (a [secrets.NAME]), `env = \"VAR\"` or \
                 `file = \"path\"`; {what} never goes in the config file"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(v: serde_json::Value) -> Result<McpSettings, Invalid> {
        let raw: RawMcp = serde_json::from_value(v).expect("the shape of [mcp]");
        let mut secrets = BTreeMap::new();
        secrets.insert(
            "fleet".to_string(),
            SecretSource::unnamed("fleet", SecretFrom::Env("TOOLHOST_FLEET_KEY".into())),
        );
        raw.resolve(&secrets, Path::new("/etc/toolhost"))
    }

    /// The message `v` is refused with.
    fn refused(v: serde_json::Value) -> String {
        resolve(v).unwrap_err().to_string()
    }

    #[test]
    fn the_approval_key_comes_from_a_secret_env_or_file_never_the_config() {
        let s = resolve(serde_json::json!({"approval_key": {"secret": "fleet"}})).unwrap();
        assert_eq!(s.approval_key.unwrap().from, SecretFrom::Env("TOOLHOST_FLEET_KEY".into()));
        let s = resolve(serde_json::json!({"approval_key": {"file": "key"}})).unwrap();
        assert_eq!(s.approval_key.unwrap().from, SecretFrom::File("/etc/toolhost/key".into()));
        let e = refused(serde_json::json!({"approval_key": "0123456789abcdef0123456789abcdef"}));
        assert!(e.contains("mcp.approval_key") && e.contains("never goes in the config file"), "{e}");
        let e = refused(serde_json::json!({"approval_key": {"secret": "nope"}}));
        assert!(e.contains("no secret `nope`"), "{e}");
        let e = refused(serde_json::json!({"approval_key": {"env": "A", "file": "b"}}));
        assert!(e.contains("exactly one"), "{e}");
        assert!(resolve(serde_json::json!({})).unwrap().approval_key.is_none());
    }

    #[test]
    fn session_idle_s_is_bounded_and_defaults_to_five_minutes() {
        assert_eq!(resolve(serde_json::json!({})).unwrap().session_idle, std::time::Duration::from_secs(300));
        let s = resolve(serde_json::json!({"session_idle_s": 30})).unwrap();
        assert_eq!(s.session_idle, std::time::Duration::from_secs(30));
        for bad in [0, 7 * 24 * 3600 + 1] {
            let e = refused(serde_json::json!({"session_idle_s": bad}));
            assert!(e.contains("mcp.session_idle_s") && e.contains("outside"), "{e}");
        }
    }

    #[test]
    fn session_caps_are_bounded_and_per_peer_is_at_most_all() {
        assert_eq!(
            resolve(serde_json::json!({})).unwrap().sessions,
            SessionCaps { max: 1024, max_per_peer: 256 }
        );
        let s = resolve(serde_json::json!({"max_sessions": 8, "max_sessions_per_peer": 20})).unwrap();
        assert_eq!(s.sessions, SessionCaps { max: 8, max_per_peer: 8 });
        let e = refused(serde_json::json!({"max_sessions_per_peer": 0}));
        assert!(e.contains("mcp.max_sessions_per_peer") && e.contains("outside"), "{e}");
    }

    #[test]
    fn the_replay_store_is_a_redis_url_and_its_password_is_not_echoed() {
        let s = resolve(serde_json::json!({"replay_store": "redis://cache:6379/0"})).unwrap();
        assert_eq!(s.replay_store, Some(StoreUrl::Plain("redis://cache:6379/0".into())));
        let e = refused(serde_json::json!({"replay_store": "rediss://:hunter2@cache"}));
        assert!(e.contains("mcp.replay_store") && e.contains("\"rediss\"") && !e.contains("hunter2"), "{e}");
        let e = refused(serde_json::json!({"replay_store": "redis://:hunter2@cache:6379"}));
        assert!(e.contains("holds a password") && !e.contains("hunter2"), "{e}");
        let s = resolve(serde_json::json!({"replay_store": {"secret": "fleet"}})).unwrap();
        assert!(matches!(s.replay_store, Some(StoreUrl::Secret(_))));
    }
}

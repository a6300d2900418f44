//! `[mcp]`: the bearer tokens MCP over HTTP accepts, how long a 2026-07-28 client has to
//! answer a danger confirmation, and the caps of MCP tasks. A leaf: it imports nothing of the
//! crate.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_core::settings::{SecretFrom, SecretSource};

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

/// `[mcp] max_message_kb` by default: four times the per-call argument limit.
pub const DEFAULT_MAX_MESSAGE_KB: usize = 4096;
/// The least `max_message_kb`: a message must hold arguments up to the per-call limit
/// (`toolhost_core::executor::MAX_ARGS_BYTES`) and the envelope around them.
pub const MIN_MAX_MESSAGE_KB: usize = toolhost_core::executor::MAX_ARGS_BYTES / 1024 + 64;
/// The largest `max_message_kb` (a message is read whole before it is parsed).
pub const MAX_MAX_MESSAGE_KB: usize = 256 * 1024;

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
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            tokens: Vec::new(),
            approval_ttl: std::time::Duration::from_secs(300),
            tasks: TaskLimits::default(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_KB * 1024,
        }
    }
}

impl RawMcp {
    /// Resolve `[mcp]`; a token may name a `[secrets]` entry, and its file is relative to `base`.
    pub fn resolve(
        self,
        secrets: &BTreeMap<String, SecretSource>,
        base: &Path,
    ) -> Result<McpSettings, String> {
        resolve_mcp(self, secrets, base)
    }
}

fn resolve_mcp(
    raw: RawMcp,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<McpSettings, String> {
    let mut out = McpSettings::default();
    if let Some(s) = raw.approval_ttl_s {
        if !(1..=3600).contains(&s) {
            return Err(format!("mcp.approval_ttl_s = {s} is outside 1..=3600"));
        }
        out.approval_ttl = std::time::Duration::from_secs(s);
    }
    let range = |key: &str, v: u64, max: u64| {
        if (1..=max).contains(&v) { Ok(v) } else { Err(format!("mcp.{key} = {v} is outside 1..={max}")) }
    };
    let t = &mut out.tasks;
    if let Some(n) = raw.tasks_max_running {
        t.max_running = range("tasks_max_running", n as u64, 10_000)? as usize;
    }
    if let Some(n) = raw.tasks_max_running_per_client {
        t.max_running_per_client = range("tasks_max_running_per_client", n as u64, 10_000)? as usize;
    }
    if t.max_running_per_client > t.max_running {
        return Err(format!(
            "mcp.tasks_max_running_per_client = {} is above mcp.tasks_max_running = {}",
            t.max_running_per_client, t.max_running
        ));
    }
    if let Some(s) = raw.tasks_keep_s {
        t.keep = std::time::Duration::from_secs(range("tasks_keep_s", s, 7 * 24 * 3600)?);
    }
    if let Some(n) = raw.tasks_max_kept {
        t.max_kept = range("tasks_max_kept", n as u64, 100_000)? as usize;
    }
    if let Some(kb) = raw.max_message_kb {
        if !(MIN_MAX_MESSAGE_KB..=MAX_MAX_MESSAGE_KB).contains(&kb) {
            return Err(format!(
                "mcp.max_message_kb = {kb} is outside {MIN_MAX_MESSAGE_KB}..={MAX_MAX_MESSAGE_KB}: a message must \
                 hold the arguments of a call up to their {} KiB limit",
                toolhost_core::executor::MAX_ARGS_BYTES / 1024
            ));
        }
        out.max_message_bytes = kb * 1024;
    }
    for (i, t) in raw.tokens.into_iter().enumerate() {
        let key = format!("mcp.tokens[{i}]");
        if t.name.is_empty() || out.tokens.iter().any(|(n, _)| *n == t.name) {
            return Err(format!(
                "{key}: name {:?} is empty or used twice; give each token its own name",
                t.name
            ));
        }
        let own = format!("mcp token `{}`", t.name);
        let source = match (t.secret, t.env, t.file) {
            (Some(s), None, None) => secrets.get(&s).cloned().ok_or_else(|| {
                format!("{key}: no secret `{s}` is defined; add [secrets.{s}] with env = \"VAR\" or file = \"path\"")
            })?,
            (None, Some(var), None) => SecretSource::unnamed(own, SecretFrom::Env(var)),
            (None, None, Some(f)) => SecretSource::unnamed(own, SecretFrom::File(base.join(f))),
            _ => {
                return Err(format!(
                    "{key}: give exactly one of `secret = \"NAME\"` (a [secrets.NAME]), `env = \"VAR\"` or \
                     `file = \"path\"`; a token's value never goes in the config file"
                ));
            }
        };
        out.tokens.push((t.name, source));
    }
    Ok(out)
}

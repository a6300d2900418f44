//! Running toolhost as a service (`serve`, #17): graceful shutdown ([`shutdown`]), the metrics
//! behind `/metrics` ([`metrics`]) and the audit trail ([`audit`]).
//!
//! A [`Service`] is attached to the executor (`Executor::attach_service`) and sees every call
//! of every front end: it admits the call (or refuses it while shutting down), races it against
//! the end of the grace period, then counts it and writes its audit line. Without one (library
//! use, one-off commands without `[audit] file`), the executor runs calls exactly as before.

pub mod audit;
pub mod metrics;
pub mod shutdown;

use crate::config::Config;
use crate::executor::{Confirm, ErrorKind, Executor, Outcome, ToolCall};
use crate::net::{GrantedSecret, NetGrant, redact_owned};
use crate::registry::{LoadedPlugin, Registry};
use crate::reload::Reloader;
use arc_swap::ArcSwap;
use audit::AuditLog;
use metrics::Metrics;
use serde::Deserialize;
use shutdown::Lifecycle;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments longer than this (in characters) are cut in the audit trail, keeping a prefix of
/// [`AUDIT_ARG_PREFIX`] characters and the SHA-256 of the whole (redacted) argument.
pub const AUDIT_ARG_MAX: usize = 256;
pub const AUDIT_ARG_PREFIX: usize = 64;

/// `[serve]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServe {
    shutdown_grace_ms: Option<u64>,
    header_timeout_ms: Option<u64>,
    body_timeout_ms: Option<u64>,
    max_connections: Option<usize>,
    max_connections_per_peer: Option<usize>,
}

/// `[serve]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeSettings {
    /// How long calls in flight may go on after SIGTERM/SIGINT before they are cancelled.
    pub shutdown_grace: Duration,
    /// Bounds of the HTTP server (`serve --http`) against slow or numerous clients.
    pub http: HttpLimits,
}

/// What one HTTP client may hold of the server: a slow client (headers or body sent a byte at
/// a time, or a connection left open and silent) is cut off, and connections past the caps are
/// answered `503` at once instead of exhausting file descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// A request's headers must arrive within this; it is also how long an idle keep-alive
    /// connection is kept open waiting for its next request (hyper's header-read timer).
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this (counted from its headers).
    pub body_timeout: Duration,
    /// Open connections, all clients together.
    pub max_connections: usize,
    /// Open connections from one IP address.
    pub max_connections_per_peer: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 512,
            max_connections_per_peer: 64,
        }
    }
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings { shutdown_grace: Duration::from_secs(15), http: HttpLimits::default() }
    }
}

impl ServeSettings {
    pub fn resolve(raw: RawServe) -> Result<ServeSettings, String> {
        let mut out = ServeSettings::default();
        if let Some(ms) = raw.shutdown_grace_ms {
            if ms > 3_600_000 {
                return Err(format!("serve.shutdown_grace_ms = {ms} is outside 0..=3600000"));
            }
            out.shutdown_grace = Duration::from_millis(ms);
        }
        let ms = |key: &str, v: Option<u64>, default: Duration| match v {
            None => Ok(default),
            Some(ms) if (100..=3_600_000).contains(&ms) => Ok(Duration::from_millis(ms)),
            Some(ms) => Err(format!("serve.{key} = {ms} is outside 100..=3600000")),
        };
        out.http.header_timeout = ms("header_timeout_ms", raw.header_timeout_ms, out.http.header_timeout)?;
        out.http.body_timeout = ms("body_timeout_ms", raw.body_timeout_ms, out.http.body_timeout)?;
        if let Some(n) = raw.max_connections {
            if !(1..=1_000_000).contains(&n) {
                return Err(format!("serve.max_connections = {n} is outside 1..=1000000"));
            }
            out.http.max_connections = n;
        }
        if let Some(n) = raw.max_connections_per_peer {
            if !(1..=1_000_000).contains(&n) {
                return Err(format!("serve.max_connections_per_peer = {n} is outside 1..=1000000"));
            }
            out.http.max_connections_per_peer = n;
        }
        if out.http.max_connections_per_peer > out.http.max_connections {
            out.http.max_connections_per_peer = out.http.max_connections;
        }
        Ok(out)
    }
}

/// `[audit]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAudit {
    file: Option<PathBuf>,
    enabled: Option<bool>,
    max_mb: Option<u64>,
    keep: Option<u32>,
}

/// `[audit]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// Where the trail goes; `None`: the default for `serve`, nothing for other commands.
    pub file: Option<PathBuf>,
    /// `false` turns the trail off, for `serve` too.
    pub enabled: bool,
    /// The file is rotated before it grows past this.
    pub max_bytes: u64,
    /// Rotated files kept (`audit.jsonl.1` … `.N`).
    pub keep: u32,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings { file: None, enabled: true, max_bytes: 100 * 1024 * 1024, keep: 5 }
    }
}

impl AuditSettings {
    pub fn resolve(raw: RawAudit, base: &Path) -> Result<AuditSettings, String> {
        let mut out = AuditSettings { file: raw.file.map(|f| base.join(f)), ..AuditSettings::default() };
        out.enabled = raw.enabled.unwrap_or(true);
        if let Some(mb) = raw.max_mb {
            if !(1..=1024 * 1024).contains(&mb) {
                return Err(format!("audit.max_mb = {mb} is outside 1..=1048576"));
            }
            out.max_bytes = mb * 1024 * 1024;
        }
        if let Some(k) = raw.keep {
            if k > 1000 {
                return Err(format!("audit.keep = {k} is outside 0..=1000"));
            }
            out.keep = k;
        }
        Ok(out)
    }

    /// The file a command writes the trail to: the configured one; for `serve` without one,
    /// [`default_audit_file`]; nothing when disabled.
    pub fn file_for(&self, serve: bool) -> Option<PathBuf> {
        if !self.enabled {
            return None;
        }
        self.file.clone().or_else(|| if serve { default_audit_file() } else { None })
    }
}

/// `$XDG_STATE_HOME/toolhost/audit.jsonl`, else `$HOME/.local/state/toolhost/audit.jsonl`.
pub fn default_audit_file() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".local/state"))
        })
        .map(|d| d.join("toolhost/audit.jsonl"))
}

/// Who is calling, as far as the front end knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// `mcp-http`, `mcp-stdio`, …; `None`: the service's default for this command.
    pub front_end: Option<&'static str>,
    /// The MCP client's name (`clientInfo.name`).
    pub client: Option<String>,
    /// The name of the `[mcp] tokens` entry the HTTP request authenticated with.
    pub token: Option<String>,
}

/// What the executor learned about a call while running it, for the audit trail.
#[derive(Debug, Default)]
pub struct CallRecord {
    /// The plugin that served the tool (unset: no such tool).
    pub plugin: Option<Arc<LoadedPlugin>>,
    /// Set for a dangerous tool: the decision and who made it.
    pub danger: Option<DangerRecord>,
}

/// A decision about a dangerous call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DangerRecord {
    /// `policy` (`[danger] policy` allow/deny), `terminal`, `elicitation`, `flag` (`--yes`) or
    /// `no_one` (policy `ask` with no one to ask).
    pub by: &'static str,
    /// `allow`, `deny`, or `asked` (the question went to the client, whose answer comes with a retry).
    pub decision: &'static str,
}

/// The service side of a running host: lifecycle, metrics, audit.
#[derive(Debug)]
pub struct Service {
    pub lifecycle: Lifecycle,
    pub metrics: Metrics,
    audit: Option<AuditLog>,
    registry: Arc<ArcSwap<Registry>>,
    front_end: &'static str,
    /// Every secret the config defines (and every MCP token), to redact from audited arguments.
    secrets: NetGrant,
}

impl Service {
    /// The service for a command whose calls come from `front_end` (`mcp`, `cli`, `text`, …):
    /// opens the audit file `[audit]` names (for `serve`, the default file when none is named).
    /// A named file that cannot be opened is an error; the default one only a warning.
    pub fn for_command(
        config: &Config,
        registry: Arc<ArcSwap<Registry>>,
        front_end: &'static str,
        serve: bool,
    ) -> anyhow::Result<Service> {
        let audit = match config.audit.file_for(serve) {
            None => None,
            Some(path) => match AuditLog::open(&path, config.audit.max_bytes, config.audit.keep) {
                Ok(a) => Some(a),
                Err(e) if config.audit.file.is_some() => {
                    anyhow::bail!(
                        "[audit] file {}: cannot open it for appending: {e} (fix the path or its permissions, or set [audit] enabled = false)",
                        path.display()
                    )
                }
                Err(e) => {
                    tracing::warn!(
                        "audit trail off: cannot open the default {}: {e} (set [audit] file in toolhost.toml)",
                        path.display()
                    );
                    None
                }
            },
        };
        Ok(Service::new(config, registry, front_end, audit))
    }

    /// For one-off commands (`call`, `run`, `chat`): attach a service to `host` only when
    /// `[audit] file` is set, so their calls are audited too.
    pub fn attach_audit(host: &crate::Toolhost, front_end: &'static str) -> anyhow::Result<()> {
        if host.config.audit.file_for(false).is_some() {
            let s = Service::for_command(&host.config, host.registry.clone(), front_end, false)?;
            host.executor.attach_service(Arc::new(s));
        }
        Ok(())
    }

    pub fn new(
        config: &Config,
        registry: Arc<ArcSwap<Registry>>,
        front_end: &'static str,
        audit: Option<AuditLog>,
    ) -> Service {
        let sources = config.secrets.values().chain(config.mcp.tokens.iter().map(|(_, s)| s));
        let secrets = sources
            .filter_map(|s| {
                s.read().ok().map(|value| GrantedSecret { name: s.name.clone(), value, hosts: vec![] })
            })
            .collect();
        Service {
            lifecycle: Lifecycle::new(config.serve.shutdown_grace),
            metrics: Metrics::new(),
            audit,
            registry,
            front_end,
            secrets: NetGrant { secrets, ..NetGrant::default() },
        }
    }

    /// Where the audit trail goes, if anywhere.
    pub fn audit_path(&self) -> Option<&Path> {
        self.audit.as_ref().map(|a| a.path())
    }

    /// The `/metrics` text.
    pub fn metrics_text(&self) -> String {
        self.metrics.encode(&self.registry.load())
    }

    /// Count the reloader's registry swaps and failures for as long as it runs.
    pub fn watch_reloads(self: &Arc<Self>, reloader: &Reloader) {
        let mut rx = reloader.subscribe();
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(change) => match me.upgrade() {
                        Some(s) => s.metrics.reload(change.failures.len()),
                        None => return,
                    },
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Stop admitting calls, let those in flight finish within the grace period, cancel the
    /// rest, and sync the audit file.
    pub async fn shutdown(&self) -> shutdown::Drained {
        let grace = self.lifecycle.grace();
        let n = self.lifecycle.stop_admitting();
        eprintln!(
            "toolhost: shutting down: {n} call{} in flight, grace period {} ms",
            if n == 1 { "" } else { "s" },
            grace.as_millis()
        );
        let drained = self.lifecycle.drain().await;
        if drained.cancelled > 0 {
            eprintln!(
                "toolhost: cancelled {} call{} still running after {} ms (serve.shutdown_grace_ms)",
                drained.cancelled,
                if drained.cancelled == 1 { "" } else { "s" },
                grace.as_millis()
            );
        }
        self.sync();
        drained
    }

    /// Force the audit trail to disk.
    pub fn sync(&self) {
        if let Some(a) = &self.audit {
            a.sync();
        }
    }

    /// Run one call through `exec` (see the module docs).
    pub(crate) async fn observe(
        &self,
        exec: &Executor,
        call: &ToolCall,
        confirm: &dyn Confirm,
        ctx: &CallContext,
    ) -> Outcome {
        let started = Instant::now();
        let mut rec = CallRecord::default();
        let Some(ticket) = self.lifecycle.admit() else {
            rec.plugin = self.registry.load().get(&call.name).map(|e| e.plugin.clone());
            let o = Outcome::err(
                ErrorKind::Unavailable,
                "toolhost is shutting down and accepts no new calls; retry (another replica, or this \
                 service once it has restarted, will answer)",
            );
            self.finish(call, ctx, &rec, &o, started.elapsed());
            return o;
        };
        self.metrics.in_flight().inc();
        tracing::debug!(tool = call.name, "call admitted");
        let outcome = tokio::select! {
            biased;
            o = exec.call_recorded(call, confirm, &mut rec) => o,
            () = self.lifecycle.cancelled() => Outcome::err(
                ErrorKind::Unavailable,
                format!(
                    "toolhost is shutting down and `{}` did not finish within the grace period ({} ms, \
                     serve.shutdown_grace_ms); it was cancelled and may have partly run",
                    call.name,
                    self.lifecycle.grace().as_millis()
                ),
            ),
        };
        self.metrics.in_flight().dec();
        self.finish(call, ctx, &rec, &outcome, started.elapsed());
        // The ticket goes last: once the drain sees no call in flight, every line is written.
        drop(ticket);
        outcome
    }

    /// Count and audit a call a front end answered without running it (e.g. MCP arguments
    /// that do not fit the tool's parameters), with the plugin from `registry` when the tool exists.
    pub fn record_unrun(&self, registry: &Registry, call: &ToolCall, ctx: &CallContext, outcome: &Outcome) {
        let rec = CallRecord { plugin: registry.get(&call.name).map(|e| e.plugin.clone()), danger: None };
        self.finish(call, ctx, &rec, outcome, Duration::ZERO);
    }

    fn finish(&self, call: &ToolCall, ctx: &CallContext, rec: &CallRecord, o: &Outcome, took: Duration) {
        let outcome = o.kind.map_or("ok", ErrorKind::as_str);
        let tool = if rec.plugin.is_some() { call.name.as_str() } else { metrics::UNKNOWN_TOOL };
        self.metrics.call(tool, outcome, took.as_secs_f64());
        if let Some(d) = rec.danger {
            self.metrics.danger(d.decision, d.by);
        }
        let Some(audit) = &self.audit else { return };
        let plugin = rec.plugin.as_ref();
        // Serialized straight from borrowed fields (no JSON tree per call); keys in name order.
        #[derive(serde::Serialize)]
        struct Line<'a> {
            args: Vec<String>,
            client: Option<&'a str>,
            danger: Option<&'a DangerRecord>,
            duration_ms: f64,
            front_end: &'a str,
            outcome: &'a str,
            plugin: Option<&'a str>,
            sha256: Option<String>,
            time: String,
            token: Option<&'a str>,
            tool: &'a str,
            truncated: bool,
            version: Option<&'a str>,
        }
        audit.append(&Line {
            args: call.args.iter().map(|a| self.audit_arg(a)).collect(),
            client: ctx.client.as_deref(),
            danger: rec.danger.as_ref(),
            duration_ms: (took.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
            front_end: ctx.front_end.unwrap_or(self.front_end),
            outcome,
            plugin: plugin.map(|p| &*p.name),
            sha256: plugin.map(|p| crate::approvals::hex(&p.hash)),
            time: audit::rfc3339(std::time::SystemTime::now()),
            token: ctx.token.as_deref(),
            tool: &call.name,
            truncated: o.truncated,
            version: plugin.map(|p| p.manifest.version.as_str()),
        });
    }

    /// An argument as the audit trail keeps it: secrets redacted, a long one cut to a prefix
    /// plus the SHA-256 of the whole (redacted) text.
    fn audit_arg(&self, arg: &str) -> String {
        let redacted = redact_owned(arg.to_string(), &self.secrets);
        let chars = redacted.chars().count();
        if chars <= AUDIT_ARG_MAX {
            return redacted;
        }
        let prefix: String = redacted.chars().take(AUDIT_ARG_PREFIX).collect();
        let hash = crate::registry::content_hash(redacted.as_bytes());
        format!("{prefix}…[{chars} chars, sha256:{}]", crate::approvals::hex(&hash))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::from_str_at(text, Path::new("/etc/toolhost"), None).map_err(|e| e.to_string())
    }

    #[test]
    fn serve_and_audit_settings_are_checked_and_resolved() {
        let c = parse(
            "[serve]\nshutdown_grace_ms = 2500\n[audit]\nfile = \"log/a.jsonl\"\nmax_mb = 2\nkeep = 0\n",
        )
        .unwrap();
        assert_eq!(c.serve.shutdown_grace, Duration::from_millis(2500));
        assert_eq!(c.audit.file_for(false), Some(PathBuf::from("/etc/toolhost/log/a.jsonl")));
        assert_eq!((c.audit.max_bytes, c.audit.keep), (2 * 1024 * 1024, 0));
        let d = parse("").unwrap();
        assert_eq!(d.serve.shutdown_grace, Duration::from_secs(15));
        assert_eq!(d.audit.file_for(false), None, "off by default for one-off commands");
        assert_eq!(d.audit.file_for(true), default_audit_file(), "on for serve");
        let off = parse("[audit]\nenabled = false\nfile = \"a.jsonl\"\n").unwrap();
        assert_eq!((off.audit.file_for(true), off.audit.file_for(false)), (None, None));
        for (bad, says) in [
            ("[serve]\nshutdown_grace_ms = 3600001\n", "serve.shutdown_grace_ms"),
            ("[serve]\ngrace = 1\n", "grace"),
            ("[audit]\nmax_mb = 0\n", "audit.max_mb"),
            ("[audit]\nkeep = 5000\n", "audit.keep"),
            ("[audit]\nrotate = true\n", "rotate"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

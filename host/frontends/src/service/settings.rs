//! `[serve]` (shutdown and the HTTP server's bounds) and `[audit]` (the audit trail). A leaf: it
//! imports nothing of the crate.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost_core::settings::Invalid;

/// `[serve]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServe {
    shutdown_grace_ms: Option<u64>,
    header_timeout_ms: Option<u64>,
    body_timeout_ms: Option<u64>,
    max_connections: Option<usize>,
    max_connections_per_peer: Option<usize>,
    max_waiting_calls: Option<usize>,
    max_waiting_calls_per_peer: Option<usize>,
}

/// `[serve]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeSettings {
    /// How long calls in flight may go on after SIGTERM/SIGINT before they are cancelled.
    pub shutdown_grace: Duration,
    /// Bounds of the HTTP server (`serve --http`) against slow or numerous clients.
    pub http: HttpLimits,
    /// Calls waiting for a call slot, all clients together; past it a call that would wait is
    /// answered `busy` at once (each waiting call holds its arguments in memory).
    pub max_waiting_calls: usize,
    /// Calls waiting for a call slot from one client (its token's name, else its IP address).
    pub max_waiting_calls_per_peer: usize,
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
        ServeSettings {
            shutdown_grace: Duration::from_secs(15),
            http: HttpLimits::default(),
            max_waiting_calls: 64,
            max_waiting_calls_per_peer: 16,
        }
    }
}

impl ServeSettings {
    pub fn resolve(raw: RawServe) -> Result<ServeSettings, Invalid> {
        let mut out = ServeSettings::default();
        if let Some(ms) = raw.shutdown_grace_ms {
            if ms > 3_600_000 {
                return Err(Invalid::out_of_range("serve.shutdown_grace_ms", ms, 0, 3_600_000));
            }
            out.shutdown_grace = Duration::from_millis(ms);
        }
        let ms = |key: &str, v: Option<u64>, default: Duration| match v {
            None => Ok(default),
            Some(ms) if (100..=3_600_000).contains(&ms) => Ok(Duration::from_millis(ms)),
            Some(ms) => Err(Invalid::out_of_range(format!("serve.{key}"), ms, 100, 3_600_000)),
        };
        out.http.header_timeout = ms("header_timeout_ms", raw.header_timeout_ms, out.http.header_timeout)?;
        out.http.body_timeout = ms("body_timeout_ms", raw.body_timeout_ms, out.http.body_timeout)?;
        if let Some(n) = raw.max_connections {
            if !(1..=1_000_000).contains(&n) {
                return Err(Invalid::out_of_range("serve.max_connections", n, 1, 1_000_000));
            }
            out.http.max_connections = n;
        }
        if let Some(n) = raw.max_connections_per_peer {
            if !(1..=1_000_000).contains(&n) {
                return Err(Invalid::out_of_range("serve.max_connections_per_peer", n, 1, 1_000_000));
            }
            out.http.max_connections_per_peer = n;
        }
        if out.http.max_connections_per_peer > out.http.max_connections {
            out.http.max_connections_per_peer = out.http.max_connections;
        }
        for (key, v, field) in [
            ("max_waiting_calls", raw.max_waiting_calls, &mut out.max_waiting_calls),
            (
                "max_waiting_calls_per_peer",
                raw.max_waiting_calls_per_peer,
                &mut out.max_waiting_calls_per_peer,
            ),
        ] {
            if let Some(n) = v {
                if !(1..=1_000_000).contains(&n) {
                    return Err(Invalid::out_of_range(format!("serve.{key}"), n, 1, 1_000_000));
                }
                *field = n;
            }
        }
        out.max_waiting_calls_per_peer = out.max_waiting_calls_per_peer.min(out.max_waiting_calls);
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
    fsync: Option<bool>,
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
    /// A call's line is on disk (`fdatasync`) before its answer is sent; `false`: written
    /// before the answer (a crash of toolhost loses none) but left to the OS to flush.
    pub fsync: bool,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings { file: None, enabled: true, max_bytes: 100 * 1024 * 1024, keep: 5, fsync: true }
    }
}

impl AuditSettings {
    pub fn resolve(raw: RawAudit, base: &Path) -> Result<AuditSettings, Invalid> {
        let mut out = AuditSettings { file: raw.file.map(|f| base.join(f)), ..AuditSettings::default() };
        if let Some(fsync) = raw.fsync {
            out.fsync = fsync;
        }
        out.enabled = raw.enabled.unwrap_or(true);
        if let Some(mb) = raw.max_mb {
            if !(1..=1024 * 1024).contains(&mb) {
                return Err(Invalid::out_of_range("audit.max_mb", mb, 1, 1024 * 1024));
            }
            out.max_bytes = mb * 1024 * 1024;
        }
        if let Some(k) = raw.keep {
            if k > 1000 {
                return Err(Invalid::out_of_range("audit.keep", k, 0, 1000));
            }
            out.keep = k;
        }
        Ok(out)
    }

    /// The file a command writes the trail to: the configured one; for `serve` without one,
    /// `default_audit_file`; nothing when disabled.
    pub fn file_for(&self, serve: bool) -> Option<PathBuf> {
        if !self.enabled {
            return None;
        }
        self.file.clone().or_else(|| if serve { default_audit_file() } else { None })
    }
}

/// `$XDG_STATE_HOME/toolhost/audit.jsonl`, else `$HOME/.local/state/toolhost/audit.jsonl`.
pub fn default_audit_file() -> Option<PathBuf> {
    toolhost_core::files::state_dir().map(|d| d.join("audit.jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<crate::Settings, toolhost_core::settings::ConfigError> {
        let file = toolhost_core::settings::ConfigFile::parse(text, Path::new("/etc/toolhost"), None)?;
        let core = toolhost_core::Config::from_file(&file)?;
        crate::Settings::from_file(&file, &core)
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
        assert_eq!((d.serve.max_waiting_calls, d.serve.max_waiting_calls_per_peer), (64, 16));
        let w = parse("[serve]\nmax_waiting_calls = 4\nmax_waiting_calls_per_peer = 9\n").unwrap();
        assert_eq!(
            (w.serve.max_waiting_calls, w.serve.max_waiting_calls_per_peer),
            (4, 4),
            "per peer at most all"
        );
        assert_eq!(d.audit.file_for(false), None, "off by default for one-off commands");
        assert_eq!(d.audit.file_for(true), default_audit_file(), "on for serve");
        assert!(d.audit.fsync, "each line on disk before its answer, by default");
        assert!(!parse("[audit]\nfsync = false\n").unwrap().audit.fsync);
        let off = parse("[audit]\nenabled = false\nfile = \"a.jsonl\"\n").unwrap();
        assert_eq!((off.audit.file_for(true), off.audit.file_for(false)), (None, None));
        for (bad, says) in [
            ("[serve]\nshutdown_grace_ms = 3600001\n", "serve.shutdown_grace_ms"),
            ("[serve]\nmax_waiting_calls = 0\n", "serve.max_waiting_calls"),
            ("[serve]\ngrace = 1\n", "grace"),
            ("[audit]\nmax_mb = 0\n", "audit.max_mb"),
            ("[audit]\nkeep = 5000\n", "audit.keep"),
            ("[audit]\nrotate = true\n", "rotate"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

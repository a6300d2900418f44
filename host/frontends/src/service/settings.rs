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

/// When a written line reaches the disk (`[audit] fsync`). Every setting writes a call's line
/// before its answer is sent, so a crash of toolhost loses none; they differ in what a power
/// or kernel failure may lose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `fdatasync` at most this often, in the background, when lines were written since the
    /// last one, and at rotation and shutdown: a power failure loses at most this window.
    Interval(Duration),
    /// Each line synced before its answer (group commit under concurrency): loses none.
    Always,
    /// Never synced by toolhost except at rotation and shutdown: the OS writes the lines back
    /// when it chooses (typically within 30 s on Linux).
    Never,
}

impl Durability {
    /// The default interval of [`Durability::Interval`].
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(200);
}

impl Default for Durability {
    fn default() -> Self {
        Durability::Interval(Durability::DEFAULT_INTERVAL)
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
    fsync: Option<RawFsync>,
    fsync_interval_ms: Option<u64>,
}

/// `[audit] fsync` as written: a setting's name, or the `true`/`false` of before issue #57.
#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "expected \"interval\", \"always\" or \"never\"")]
enum RawFsync {
    Flag(bool),
    Name(String),
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
    /// When a call's line, written before its answer in every case, reaches the disk.
    pub durability: Durability,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            file: None,
            enabled: true,
            max_bytes: 100 * 1024 * 1024,
            keep: 5,
            durability: Durability::default(),
        }
    }
}

impl AuditSettings {
    /// `source`: the config file, named in the deprecation warning of `fsync = true/false`.
    pub fn resolve(raw: RawAudit, base: &Path, source: Option<&Path>) -> Result<AuditSettings, Invalid> {
        let mut out = AuditSettings {
            file: raw.file.map(|f| base.join(f)),
            durability: durability(raw.fsync, raw.fsync_interval_ms, source)?,
            ..AuditSettings::default()
        };
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

/// `[audit] fsync` and `fsync_interval_ms`, resolved; `true`/`false` still mean what they
/// meant (`always`/`never`), with a warning naming the file.
fn durability(
    fsync: Option<RawFsync>,
    interval_ms: Option<u64>,
    source: Option<&Path>,
) -> Result<Durability, Invalid> {
    let interval = match interval_ms {
        None => Durability::DEFAULT_INTERVAL,
        Some(ms @ 1..=60_000) => Duration::from_millis(ms),
        Some(ms) => return Err(Invalid::out_of_range("audit.fsync_interval_ms", ms, 1, 60_000)),
    };
    let name = match fsync {
        None => return Ok(Durability::Interval(interval)),
        Some(RawFsync::Name(name)) => name,
        Some(RawFsync::Flag(flag)) => {
            let now = if flag { "always" } else { "never" };
            tracing::warn!(
                "{}: [audit] fsync = {flag} is deprecated: write fsync = \"{now}\" (the same), or leave it out for \"interval\" (the default)",
                source.map_or_else(|| "the configuration".to_string(), |p| p.display().to_string())
            );
            now.to_string()
        }
    };
    if interval_ms.is_some() && name != "interval" {
        return Err(Invalid::says(
            "audit.fsync_interval_ms",
            format!("is used only with fsync = \"interval\", not \"{name}\" (remove one of the two)"),
        ));
    }
    match name.as_str() {
        "interval" => Ok(Durability::Interval(interval)),
        "always" => Ok(Durability::Always),
        "never" => Ok(Durability::Never),
        _ => Err(Invalid::value(
            "audit.fsync",
            format!("{name:?}"),
            "is not a setting: write \"interval\" (the default), \"always\" or \"never\"",
        )),
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
        let durability = |text: &str| parse(text).unwrap().audit.durability;
        assert_eq!(
            d.audit.durability,
            Durability::Interval(Duration::from_millis(200)),
            "synced in the background"
        );
        assert_eq!(durability("[audit]\nfsync = \"always\"\n"), Durability::Always);
        assert_eq!(durability("[audit]\nfsync = \"never\"\n"), Durability::Never);
        assert_eq!(
            durability("[audit]\nfsync = \"interval\"\nfsync_interval_ms = 1000\n"),
            Durability::Interval(Duration::from_secs(1))
        );
        assert_eq!(
            durability("[audit]\nfsync_interval_ms = 50\n"),
            Durability::Interval(Duration::from_millis(50))
        );
        // The flags of before issue #57 keep their meaning.
        assert_eq!(durability("[audit]\nfsync = true\n"), Durability::Always);
        assert_eq!(durability("[audit]\nfsync = false\n"), Durability::Never);
        let off = parse("[audit]\nenabled = false\nfile = \"a.jsonl\"\n").unwrap();
        assert_eq!((off.audit.file_for(true), off.audit.file_for(false)), (None, None));
        for (bad, says) in [
            ("[serve]\nshutdown_grace_ms = 3600001\n", "serve.shutdown_grace_ms"),
            ("[serve]\nmax_waiting_calls = 0\n", "serve.max_waiting_calls"),
            ("[serve]\ngrace = 1\n", "grace"),
            ("[audit]\nmax_mb = 0\n", "audit.max_mb"),
            ("[audit]\nkeep = 5000\n", "audit.keep"),
            ("[audit]\nrotate = true\n", "rotate"),
            ("[audit]\nfsync = \"sometimes\"\n", "audit.fsync"),
            ("[audit]\nfsync_interval_ms = 0\n", "audit.fsync_interval_ms"),
            ("[audit]\nfsync = \"always\"\nfsync_interval_ms = 10\n", "audit.fsync_interval_ms"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

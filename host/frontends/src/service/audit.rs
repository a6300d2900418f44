//! The audit trail: one JSON line per call, appended to a file opened with `O_APPEND`.
//!
//! Each line is written whole with one `write_all` of a complete line, under a lock, straight
//! to the file (no user-space buffer), before the call's answer is sent: a crash of the host
//! (even `SIGKILL`) loses none, since the kernel has the line; and a reader never sees two
//! lines interleaved. What reaches the disk itself, against a power or kernel failure, is
//! [`Durability`] (`[audit] fsync`): by default (`Interval`) a background thread runs one
//! `fdatasync` at most every interval, and only when lines were written since the last; with
//! `Always` each line is synced before its answer, by group commit: one `fdatasync` covers
//! every line written before it began, so concurrent calls share one
//! (see [`AuditLog::make_durable`]; its cost is in BENCHMARKS.md). When the next line would
//! take the file past `max_bytes`, the file is rotated first (the old file synced):
//! `audit.jsonl.N-1` → `.N`, …, `audit.jsonl` → `.1`, the oldest beyond `keep` removed, and a
//! fresh file opened. The file is created `0600`: it names clients and carries (redacted)
//! arguments.

use prometheus_client::metrics::counter::Counter;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use super::settings::Durability;

/// An open audit file.
#[derive(Debug)]
pub struct AuditLog {
    shared: Arc<Shared>,
    durability: Durability,
    /// The background syncs of [`Durability::Interval`]; stopped (after a last sync) on drop.
    flusher: Option<Flusher>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    inner: Mutex<Inner>,
    /// Lines known to be on disk, by their number; held while syncing.
    durable: Mutex<u64>,
    /// Syncs run, for lines, at rotation and at shutdown (`toolhost_audit_syncs_total`).
    syncs: Counter,
}

#[derive(Debug)]
struct Inner {
    file: Arc<File>,
    size: u64,
    /// Lines written since the file was opened.
    written: u64,
    /// Write errors are logged once until a write succeeds again.
    failing: bool,
}

#[derive(Debug)]
struct Flusher {
    /// Dropped to stop the thread.
    stop: Option<Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

impl AuditLog {
    /// Open (creating the file and its folder) `path` for appending, with
    /// [`Durability::Always`] until [`AuditLog::with_durability`] says otherwise.
    pub fn open(path: &Path, max_bytes: u64, keep: u32) -> std::io::Result<AuditLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        let shared = Shared {
            path: path.to_path_buf(),
            max_bytes: max_bytes.max(1),
            keep,
            inner: Mutex::new(Inner { file: Arc::new(file), size, written: 0, failing: false }),
            durable: Mutex::new(0),
            syncs: Counter::default(),
        };
        Ok(AuditLog { shared: Arc::new(shared), durability: Durability::Always, flusher: None })
    }

    /// When lines reach the disk (`[audit] fsync`); `Interval` starts the thread that syncs.
    pub fn with_durability(mut self, durability: Durability) -> AuditLog {
        self.flusher = None;
        self.durability = durability;
        if let Durability::Interval(every) = durability {
            self.flusher = Some(self.shared.clone().start_flusher(every));
        }
        self
    }

    /// Whether each line is synced before its answer ([`AuditLog::make_durable`] waits).
    pub fn syncs_each_line(&self) -> bool {
        self.durability == Durability::Always
    }

    /// The count of syncs run (for lines, at rotation, at shutdown), shared with `/metrics`.
    pub fn syncs(&self) -> Counter {
        self.shared.syncs.clone()
    }

    /// With [`Durability::Always`], make line `n` (as [`AuditLog::append`] numbered it)
    /// durable: on disk when this returns. Blocks for an `fdatasync` unless one that began
    /// after the line was written has already finished: callers queue on one lock, and the
    /// sync each one runs covers every line written so far, so the ones behind it find their
    /// line covered and return at once. Otherwise returns at once.
    pub fn make_durable(&self, n: u64) {
        if self.syncs_each_line() {
            self.shared.sync_upto(n);
        }
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Append one record as a line; returns its number for [`AuditLog::make_durable`].
    /// Failures are logged, never returned: the call it records has already happened.
    pub fn append(&self, record: &impl serde::Serialize) -> u64 {
        self.shared.append(record)
    }

    /// Force what was written to disk (at shutdown).
    pub fn sync(&self) {
        self.shared.syncs.inc();
        let inner = self.shared.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = inner.file.sync_all() {
            tracing::warn!("audit: cannot sync {}: {e}", self.shared.path.display());
        }
    }
}

impl Shared {
    /// The thread of [`Durability::Interval`]: wakes every `every`, syncs if lines were
    /// written since the last sync; when its `AuditLog` is dropped, syncs once more and ends.
    fn start_flusher(self: Arc<Shared>, every: Duration) -> Flusher {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let path = self.path.clone();
        let thread = std::thread::Builder::new().name("toolhost-audit-sync".into()).spawn(move || {
            loop {
                let last = stopped.recv_timeout(every);
                let written = self.inner.lock().unwrap_or_else(|p| p.into_inner()).written;
                self.sync_upto(written);
                if last != Err(RecvTimeoutError::Timeout) {
                    return;
                }
            }
        });
        match thread {
            Ok(t) => Flusher { stop: Some(stop), thread: Some(t) },
            Err(e) => {
                tracing::error!(
                    "audit: cannot start the thread that syncs {} (lines are written, left to the OS to flush): {e}",
                    path.display()
                );
                Flusher { stop: None, thread: None }
            }
        }
    }

    /// Sync the file unless line `n` is already known to be on disk; every line written when
    /// the sync began is then.
    fn sync_upto(&self, n: u64) {
        let mut durable = self.durable.lock().unwrap_or_else(|p| p.into_inner());
        if *durable >= n {
            return;
        }
        let (upto, file) = {
            let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            (inner.written, inner.file.clone())
        };
        self.syncs.inc();
        match file.sync_data() {
            Ok(()) => *durable = upto,
            Err(e) => tracing::error!("audit: cannot sync {}: {e}", self.path.display()),
        }
    }

    fn append(&self, record: &impl serde::Serialize) -> u64 {
        let mut line = match serde_json::to_string(record) {
            Ok(line) => line,
            Err(e) => {
                tracing::error!("audit: cannot encode a record: {e}");
                return 0;
            }
        };
        line.push('\n');
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if inner.size > 0
            && inner.size + line.len() as u64 > self.max_bytes
            && let Err(e) = self.rotate(&mut inner)
        {
            tracing::warn!("audit: cannot rotate {}: {e}", self.path.display());
        }
        match (&*inner.file).write_all(line.as_bytes()) {
            Ok(()) => {
                inner.size += line.len() as u64;
                inner.written += 1;
                inner.failing = false;
                inner.written
            }
            Err(e) => {
                if !inner.failing {
                    tracing::error!("audit: cannot write {}: {e}", self.path.display());
                }
                inner.failing = true;
                0
            }
        }
    }

    fn rotated(&self, n: u32) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".{n}"));
        self.path.with_file_name(name)
    }

    fn rotate(&self, inner: &mut Inner) -> std::io::Result<()> {
        self.syncs.inc();
        let _ = inner.file.sync_all();
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            let _ = std::fs::remove_file(self.rotated(self.keep));
            for n in (1..self.keep).rev() {
                let from = self.rotated(n);
                if from.exists() {
                    std::fs::rename(&from, self.rotated(n + 1))?;
                }
            }
            std::fs::rename(&self.path, self.rotated(1))?;
        }
        // The lines so far were synced above, with the old file.
        inner.file = Arc::new(open_append(&self.path)?);
        inner.size = 0;
        Ok(())
    }
}

/// `2026-11-30T19:04:05.123Z` for `t` (UTC; a clock outside 1970–9999 reads as the nearer end).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    rfc3339_display(t).to_string()
}

/// [`rfc3339`] as a `Display`, to write it without a `String` of its own.
pub fn rfc3339_display(t: std::time::SystemTime) -> humantime::Rfc3339Timestamp {
    humantime::format_rfc3339_millis(toolhost_core::settings::grants::rfc3339_range(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// Issue #32: with `fsync`, a line is on disk once `make_durable` returns; concurrent
    /// writers share syncs (group commit) and every one of them finds its line durable.
    #[test]
    fn make_durable_covers_every_line_written_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(AuditLog::open(&dir.path().join("a.jsonl"), 1 << 20, 1).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..5 {
                        let n = log.append(&serde_json::json!({ "t": t, "i": i }));
                        assert!(n > 0);
                        log.make_durable(n);
                        assert!(*log.shared.durable.lock().unwrap() >= n, "line {n} not durable on return");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*log.shared.durable.lock().unwrap(), 40);
        assert!((1..=40).contains(&log.syncs().get()), "shared syncs, at least one");
        // `never` syncs nothing per line (the OS flushes; `sync` at rotation and shutdown).
        let off = AuditLog::open(&dir.path().join("b.jsonl"), 1 << 20, 1)
            .unwrap()
            .with_durability(Durability::Never);
        let n = off.append(&serde_json::json!({}));
        off.make_durable(n);
        assert_eq!((*off.shared.durable.lock().unwrap(), off.syncs().get()), (0, 0));
    }

    /// Issue #57: with `interval`, a line is not waited for, and is on disk within the
    /// interval; an idle trail is not synced again; dropping the log syncs what is left.
    #[test]
    fn the_interval_setting_syncs_in_the_background_only_when_lines_were_written() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("a.jsonl"), 1 << 20, 1)
            .unwrap()
            .with_durability(Durability::Interval(Duration::from_millis(20)));
        assert!(!log.syncs_each_line());
        let syncs = log.syncs();
        let mut n = 0;
        for i in 0..3 {
            n = log.append(&serde_json::json!({ "i": i }));
            log.make_durable(n); // returns at once: the thread syncs
        }
        let t0 = std::time::Instant::now();
        while *log.shared.durable.lock().unwrap() < n {
            assert!(t0.elapsed() < Duration::from_secs(10), "no background sync within 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        let after = syncs.get();
        assert!((1..=3).contains(&after), "one sync covers the lines written before it: {after}");
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(syncs.get(), after, "nothing written since: no sync");
        let last = log.append(&serde_json::json!({ "i": 3 }));
        drop(log);
        assert_eq!((last, syncs.get()), (4, after + 1), "the last line synced when the trail closes");
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_millis(951_782_400_123)), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(1_796_065_445)), "2026-11-30T19:04:05.000Z");
        // A clock outside what RFC 3339 writes is written as the nearer end, never a panic.
        assert_eq!(rfc3339(UNIX_EPOCH - Duration::from_secs(5)), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(400_000_000_000)), "9999-12-31T23:59:59.000Z");
    }

    #[test]
    fn lines_are_whole_and_the_file_rotates_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/audit.jsonl");
        let log = AuditLog::open(&path, 200, 2).unwrap();
        for i in 0..20 {
            log.append(&serde_json::json!({ "n": i, "pad": "x".repeat(40) }));
        }
        log.sync();
        let read = |p: &Path| -> Vec<serde_json::Value> {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).expect("every line is whole JSON"))
                .collect()
        };
        let current = read(&path);
        let one = read(&dir.path().join("logs/audit.jsonl.1"));
        let two = read(&dir.path().join("logs/audit.jsonl.2"));
        assert!(!dir.path().join("logs/audit.jsonl.3").exists(), "only `keep` old files");
        assert!(std::fs::metadata(&path).unwrap().len() <= 200);
        // The newest lines, in order, across the rotated files.
        let all: Vec<i64> =
            two.iter().chain(&one).chain(&current).map(|v| v["n"].as_i64().unwrap()).collect();
        assert_eq!(*all.last().unwrap(), 19);
        assert!(all.windows(2).all(|w| w[1] == w[0] + 1), "{all:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // Reopening appends.
        drop(log);
        let log = AuditLog::open(&path, 10_000, 2).unwrap();
        log.append(&serde_json::json!({ "n": 20 }));
        assert_eq!(read(&path).last().unwrap()["n"], 20);
        assert_eq!(read(&path).len(), current.len() + 1);
    }
}

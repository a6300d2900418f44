//! The `log` import: a plugin's lines go to the host's log, bounded — within a call `log_lines`
//! lines and `log_kb` KiB ([`CallLog`]); across calls a plugin's lines are rate-limited
//! (`[limits] log_rate` per second, bursts of ten seconds' worth, [`LogBucket`]), so a busy
//! plugin cannot flood the host log. What is dropped is counted and reported in one line at the
//! end of the call. Secret values of the plugin are redacted from every line.

mod host;

pub use host::{HostInterface, HostView, Log, host_view};

use crate::bindings::host::Level;
use crate::capability::net::NetGrant;
use crate::settings::limits::Limits;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The longest line kept (characters); the rest of a longer line is cut.
const MAX_LINE_CHARS: usize = 4096;

/// A token bucket of log lines for one plugin, shared by its calls.
#[derive(Debug)]
pub struct LogBucket {
    rate: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl LogBucket {
    pub fn new(per_second: u32) -> Self {
        let rate = f64::from(per_second.max(1));
        let burst = rate * 10.0;
        LogBucket { rate, burst, state: Mutex::new((burst, Instant::now())) }
    }

    /// Take one line's token; `false` if the plugin is over its rate.
    pub fn take(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let refill = now.duration_since(s.1).as_secs_f64() * self.rate;
        s.0 = (s.0 + refill).min(self.burst);
        s.1 = now;
        if s.0 >= 1.0 {
            s.0 -= 1.0;
            true
        } else {
            false
        }
    }
}

/// What one call has logged and dropped.
#[derive(Debug)]
pub struct CallLog {
    max_lines: u32,
    max_bytes: u64,
    pub lines: u32,
    pub bytes: u64,
    pub dropped_lines: u32,
    pub dropped_bytes: u64,
    /// Of the dropped lines, how many for the plugin's rate across calls.
    pub rate_dropped: u32,
    bucket: Option<Arc<LogBucket>>,
}

impl CallLog {
    pub fn new(limits: &Limits, bucket: Option<Arc<LogBucket>>) -> Self {
        CallLog {
            max_lines: limits.log_lines,
            max_bytes: limits.log_kb.saturating_mul(1024),
            lines: 0,
            bytes: 0,
            dropped_lines: 0,
            dropped_bytes: 0,
            rate_dropped: 0,
            bucket,
        }
    }

    /// Whether a message of `len` bytes may go to the host log; counts it either way.
    pub fn admit(&mut self, len: usize) -> bool {
        let len = len as u64;
        let within_call = self.lines < self.max_lines && self.bytes + len <= self.max_bytes;
        let within_rate = within_call && self.bucket.as_ref().is_none_or(|b| b.take());
        if within_rate {
            self.lines += 1;
            self.bytes += len;
        } else {
            self.dropped_lines += 1;
            self.dropped_bytes += len;
            if within_call {
                self.rate_dropped += 1;
            }
        }
        within_rate
    }

    /// The one line saying what was dropped, if anything was.
    pub fn dropped_note(&self, limits: &Limits, log_rate: u32) -> Option<String> {
        (self.dropped_lines > 0).then(|| {
            format!(
                "log: dropped {} lines ({} bytes) of this call ({} over the per-call limits log_lines = {}, log_kb = {}; {} over [limits] log_rate = {} lines/s for the plugin)",
                self.dropped_lines,
                self.dropped_bytes,
                self.dropped_lines - self.rate_dropped,
                limits.log_lines,
                limits.log_kb,
                self.rate_dropped,
                log_rate
            )
        })
    }
}

/// The log side of one call's store: the tool logging and its budget (the plugin's name and
/// the secrets to redact are the call's net part's, handed in with each line).
#[derive(Debug)]
pub struct LogCall {
    pub tool: Arc<str>,
    pub budget: CallLog,
}

impl LogCall {
    /// The guest's `log(level, message)` (the `host` interface is linked by [`Log`], which
    /// hands `log` here and `progress` to its own capability) from `plugin`, with the secret
    /// values of `redact` (the plugin's) redacted.
    pub fn log(&mut self, level: Level, message: String, plugin: &str, redact: &NetGrant) {
        // Bound what a plugin can push into the host's log: per line, per call and per plugin
        // across calls. A dropped line costs a count, nothing more.
        let mut message = message;
        if message.len() > MAX_LINE_CHARS {
            message = message.chars().take(MAX_LINE_CHARS).collect();
        }
        if !self.budget.admit(message.len()) {
            return;
        }
        let message = crate::capability::net::redact(&message, redact);
        let tool = &*self.tool;
        match level {
            Level::Trace => tracing::trace!(plugin, tool, "{message}"),
            Level::Debug => tracing::debug!(plugin, tool, "{message}"),
            Level::Info => tracing::info!(plugin, tool, "{message}"),
            Level::Warn => tracing::warn!(plugin, tool, "{message}"),
            Level::Error => tracing::error!(plugin, tool, "{message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_log_keeps_lines_and_bytes_within_limits() {
        let limits = Limits { log_lines: 3, log_kb: 1, ..Limits::default() };
        let mut log = CallLog::new(&limits, None);
        assert!(log.admit(10) && log.admit(10));
        assert!(!log.admit(2000), "over log_kb");
        assert!(log.admit(10));
        assert!(!log.admit(1), "over log_lines");
        assert_eq!((log.lines, log.dropped_lines, log.dropped_bytes), (3, 2, 2001));
        let note = log.dropped_note(&limits, 100).unwrap();
        assert!(note.contains("dropped 2 lines (2001 bytes)") && note.contains("log_lines = 3"), "{note}");
    }

    #[test]
    fn bucket_limits_the_rate_across_calls() {
        let b = LogBucket::new(1);
        let taken = (0..100).filter(|_| b.take()).count();
        assert_eq!(taken, 10, "a burst of ten seconds' worth, then nothing");
    }
}

//! Each plugin's fair share of the host: call slots and log volume.
//!
//! - **Slots.** `[limits] concurrency` calls run at once (the instance pool is sized for it).
//!   In front of those, each plugin has its own slots (`[plugin.X] concurrency`, default
//!   `[limits] plugin_concurrency`, itself half the global slots by default), so a plugin
//!   whose calls are slow or hostile saturates its own slots and the others keep being
//!   served. A waiting call waits at most until its own deadline.
//! - **Log.** Within a call, `log` keeps `log_lines` lines and `log_kb` KiB; across calls,
//!   a plugin's lines are rate-limited (`[limits] log_rate` per second, bursts of ten
//!   seconds' worth), so a busy plugin cannot flood the host log. What is dropped is
//!   counted and reported in one line at the end of the call.

use crate::config::{Config, Limits};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The host's call slots and each plugin's share of them.
#[derive(Debug)]
pub struct Shares {
    global: Arc<Semaphore>,
    global_limit: u32,
    plugins: Mutex<HashMap<Arc<str>, Arc<PluginShare>>>,
}

/// One plugin's slots and log budget, kept across calls (and reloads) by plugin name.
#[derive(Debug)]
pub struct PluginShare {
    slots: Arc<Semaphore>,
    pub limit: u32,
    pub log: LogBucket,
}

/// Both slots a running call holds; dropping it frees them.
#[derive(Debug)]
pub struct Slot {
    _plugin: OwnedSemaphorePermit,
    _global: OwnedSemaphorePermit,
}

/// No slot became free before the call's deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Busy {
    /// The plugin's own slots were all taken.
    Plugin { limit: u32 },
    /// Every slot of the host was taken.
    Host { limit: u32 },
}

impl Shares {
    pub fn new(config: &Config) -> Self {
        let n = config.concurrency.max(1);
        Shares {
            global: Arc::new(Semaphore::new(n as usize)),
            global_limit: n,
            plugins: Mutex::new(HashMap::new()),
        }
    }

    /// The share of `plugin` (created on its first call).
    pub fn plugin(&self, plugin: &Arc<str>, config: &Config) -> Arc<PluginShare> {
        let mut map = self.plugins.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(plugin.clone())
            .or_insert_with(|| {
                let limit = config.concurrency_for(plugin).min(self.global_limit).max(1);
                Arc::new(PluginShare {
                    slots: Arc::new(Semaphore::new(limit as usize)),
                    limit,
                    log: LogBucket::new(config.log_rate),
                })
            })
            .clone()
    }

    /// Wait for a slot of the plugin, then one of the host, until `deadline`.
    pub async fn acquire(&self, share: &PluginShare, deadline: tokio::time::Instant) -> Result<Slot, Busy> {
        let plugin = tokio::time::timeout_at(deadline, share.slots.clone().acquire_owned())
            .await
            .map_err(|_| Busy::Plugin { limit: share.limit })?
            .map_err(|_| Busy::Plugin { limit: share.limit })?;
        let global = tokio::time::timeout_at(deadline, self.global.clone().acquire_owned())
            .await
            .map_err(|_| Busy::Host { limit: self.global_limit })?
            .map_err(|_| Busy::Host { limit: self.global_limit })?;
        Ok(Slot { _plugin: plugin, _global: global })
    }
}

impl Busy {
    /// Why the call did not run, and which setting to raise.
    pub fn message(&self, plugin: &str, tool: &str, waited_ms: u128) -> String {
        match self {
            Busy::Plugin { limit } => format!(
                "tool `{tool}` waited {waited_ms} ms for a free slot and reached its deadline: plugin `{plugin}` already runs {limit} calls at once \
                 (limit: [plugin.{plugin}] concurrency = {limit} in toolhost.toml, default [limits] plugin_concurrency; raise it or retry later)"
            ),
            Busy::Host { limit } => format!(
                "tool `{tool}` waited {waited_ms} ms for a free slot and reached its deadline: the host already runs {limit} calls at once \
                 (limit: [limits] concurrency = {limit} in toolhost.toml)"
            ),
        }
    }
}

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
    share: Option<Arc<PluginShare>>,
}

impl CallLog {
    pub fn new(limits: &Limits, share: Option<Arc<PluginShare>>) -> Self {
        CallLog {
            max_lines: limits.log_lines,
            max_bytes: limits.log_kb.saturating_mul(1024),
            lines: 0,
            bytes: 0,
            dropped_lines: 0,
            dropped_bytes: 0,
            rate_dropped: 0,
            share,
        }
    }

    /// Whether a message of `len` bytes may go to the host log; counts it either way.
    pub fn admit(&mut self, len: usize) -> bool {
        let len = len as u64;
        let within_call = self.lines < self.max_lines && self.bytes + len <= self.max_bytes;
        let within_rate = within_call && self.share.as_ref().is_none_or(|s| s.log.take());
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

    #[tokio::test]
    async fn a_plugin_cannot_take_every_slot() {
        let config = Config { concurrency: 4, plugin_concurrency: 2, ..Config::default() };
        let shares = Shares::new(&config);
        let a = shares.plugin(&Arc::from("a"), &config);
        let b = shares.plugin(&Arc::from("b"), &config);
        let soon = || tokio::time::Instant::now() + std::time::Duration::from_millis(20);
        let _a1 = shares.acquire(&a, soon()).await.unwrap();
        let _a2 = shares.acquire(&a, soon()).await.unwrap();
        assert_eq!(shares.acquire(&a, soon()).await.unwrap_err(), Busy::Plugin { limit: 2 });
        let _b1 = shares.acquire(&b, soon()).await.expect("another plugin is still served");
        let _b2 = shares.acquire(&b, soon()).await.unwrap();
        let c = shares.plugin(&Arc::from("c"), &config);
        assert_eq!(shares.acquire(&c, soon()).await.unwrap_err(), Busy::Host { limit: 4 });
        let msg = Busy::Plugin { limit: 2 }.message("a", "t", 20);
        assert!(msg.contains("[plugin.a] concurrency = 2"), "{msg}");
    }
}

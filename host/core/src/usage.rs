//! What one call cost, for the operator: busy and wall time, peak memory, bytes written, files
//! created, HTTP requests and bytes, log lines. Shown in `call --json` (`usage`) and in MCP
//! results (`_meta["toolhost/usage"]`); never shown to the model.

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// The cost of one call that ran (calls refused before running have none). Serialized, a
/// count that is zero is left out: `busy_us`, `wall_us` and `peak_memory_kb` are always there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Wall time inside the polls of the call's future: the guest's code and the host
    /// functions it called inline (file I/O included), instantiation too. Waiting (timers,
    /// sleeps, HTTP, a free slot) is not counted. Not CPU time: a thread the OS preempted
    /// mid-poll still counts, so it is an upper bound of the CPU time. (Per-thread CPU time
    /// would need a system call per poll — `CLOCK_THREAD_CPUTIME_ID` is not in the vDSO — where
    /// this takes two vDSO clock reads.) Microseconds.
    pub busy_us: u64,
    /// Wall-clock time from the call's start (instantiation included) to its end, waiting for
    /// a slot excluded. Microseconds.
    pub wall_us: u64,
    /// Waiting for a free slot (per plugin, then global), microseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queued_us: u64,
    /// Largest total linear memory of the instance, KiB.
    pub peak_memory_kb: u64,
    /// Bytes written to granted directories (writes, appends, `set-size` growth).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub written_bytes: u64,
    /// Files, directories and links created in granted directories.
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub created: u32,
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub http_requests: u32,
    /// HTTP request bodies sent, bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub http_sent_bytes: u64,
    /// HTTP response bodies received, bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub http_received_bytes: u64,
    /// `log` lines that reached the host log, and lines dropped by the limits.
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub log_lines: u32,
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub log_dropped: u32,
    /// Key-value operations (`wasi:keyvalue`; each key of a batch counts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kv_ops: u64,
    /// Bytes of values written to the key-value store.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kv_written_bytes: u64,
    /// Tool calls a code-mode script made (each also audited as its own call).
    #[serde(default, skip_serializing_if = "is_zero32")]
    pub inner_calls: u32,
    /// The quota the call ran into, as the guest was told (`quota exceeded: …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<String>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero32(v: &u32) -> bool {
    *v == 0
}

/// Micro-seconds in a `Duration`, saturating.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Runs a future and adds up the time spent inside its polls. A wasmtime guest runs on a
/// fiber inside `poll` and yields (returns `Pending`) whenever it waits, so this is the time a
/// host thread spent running the call, whichever worker polled it. Two monotonic clock reads
/// (vDSO, no system call) per poll; the output has the second of the last poll's too (when the
/// future finished: the caller needs no clock read of its own for that). The future is pinned
/// by the caller (`std::pin::pin!`, no allocation per call).
pub struct BusyTimed<F> {
    inner: F,
    busy: Duration,
}

impl<F: Future + Unpin> BusyTimed<F> {
    pub fn new(inner: F) -> Self {
        BusyTimed { inner, busy: Duration::ZERO }
    }
}

impl<F: Future + Unpin> Future for BusyTimed<F> {
    /// The future's output, the busy time, and when it finished.
    type Output = (F::Output, Duration, std::time::Instant);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let start = std::time::Instant::now();
        let r = Pin::new(&mut self.inner).poll(cx);
        let end = std::time::Instant::now();
        self.busy += end - start;
        let busy = self.busy;
        r.map(|out| (out, busy, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_that_is_zero_is_left_out_and_read_back_as_zero() {
        let u = Usage { busy_us: 3, wall_us: 5, http_requests: 1, ..Usage::default() };
        let json = serde_json::to_value(&u).unwrap();
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["busy_us", "http_requests", "peak_memory_kb", "wall_us"]);
        assert_eq!(serde_json::from_value::<Usage>(json).unwrap(), u);
    }

    #[tokio::test]
    async fn busy_time_counts_work_not_sleeps() {
        let busy = async {
            let t = std::time::Instant::now();
            let mut x = 0u64;
            while t.elapsed() < Duration::from_millis(30) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            x
        };
        let (_, t, _) = BusyTimed::new(std::pin::pin!(busy)).await;
        assert!(t >= Duration::from_millis(30), "work is counted: {t:?}");
        assert!(t < Duration::from_millis(100), "sleep is not: {t:?}");
    }
}

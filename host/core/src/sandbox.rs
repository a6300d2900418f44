//! The per-call sandbox: turns the effective grants of one plugin into a fresh WASI context and
//! store state, in one place.
//!
//! **What a plugin gets by default: nothing.** No preopened directory (only an empty stand-in
//! as `/` in which every open and look-up is refused, so that the host sees — and can name —
//! a path outside every grant: see `capability::fs`), no environment
//! variables, no arguments, closed stdin, no network (no sockets, no name lookup), and
//! stdout/stderr captured into bounded buffers that go to the host's log — never to the
//! host's own stdout. Clocks and random numbers are available (they grant no access).
//! Every other capability is an explicit grant computed by `capability::Grants::effective`.

pub use crate::capability::Grants;
use crate::capability::{CallState, Calls};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Bytes of guest stdout/stderr kept per call (the rest is counted and dropped).
pub const STDIO_CAPTURE_BYTES: usize = 64 * 1024;

/// Open WASI handles (files, directories, streams, pollables) one call may hold at once. Each
/// open file is a host file descriptor: without a cap, one call could exhaust the host's
/// descriptor limit (and starve every other call). 32 concurrent calls × 256 stays well under
/// common limits.
pub const MAX_HANDLES: usize = 256;

/// A fresh WASI context with exactly `grants`' directories and variables (see the module docs
/// for the defaults).
pub fn wasi_ctx(grants: &Grants, stdout: CappedPipe, stderr: CappedPipe) -> io::Result<WasiCtx> {
    let mut b = WasiCtxBuilder::new();
    // File operations run inline rather than on tokio's blocking pool: for the small local
    // files tools touch, the thread hand-off costs more than the I/O (set before preopens).
    b.allow_blocking_current_thread(true);
    b.stdout(stdout).stderr(stderr);
    b.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    // Bound what a guest can make the host allocate through `get-random-bytes`.
    b.max_random_size(1024 * 1024);
    for (k, v) in &grants.env {
        b.env(k, v);
    }
    grants.fs.preopens.build(&grants.fs, b)
}

/// Store data for one call: WASI, the memory limiter, and each capability's part of the call
/// ([`Calls`], reached by the capabilities' host functions through [`CallState`]).
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    pub calls: Calls,
}

impl HostState {
    /// The state of one call's store: `wasi`, its memory limit and its capabilities' parts.
    pub fn new(wasi: WasiCtx, limiter: MemoryLimiter, calls: Calls) -> Self {
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HANDLES);
        HostState { wasi, table, limiter, calls }
    }

    /// The plugin this call runs (held by the call's `net` part).
    pub fn plugin(&self) -> &Arc<str> {
        &self.calls.net.plugin
    }

    /// The tool's exposed name (held by the call's `log` part).
    pub fn tool(&self) -> &Arc<str> {
        &self.calls.log.tool
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl CallState for HostState {
    fn calls(&mut self) -> &mut Calls {
        &mut self.calls
    }

    fn calls_ref(&self) -> &Calls {
        &self.calls
    }
}

/// Caps the total linear memory (and table size) of one call's store, and remembers whether
/// the cap was hit so the outcome can say "memory limit" rather than a generic trap.
#[derive(Debug)]
pub struct MemoryLimiter {
    limit: usize,
    used: usize,
    pub hit: bool,
}

/// Raised into the guest when it grows past its memory limit.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit_mb} MiB exceeded (tried to grow to {wanted_mb} MiB)")]
pub struct MemoryLimitExceeded {
    pub limit_mb: u64,
    pub wanted_mb: u64,
}

impl MemoryLimiter {
    pub fn new(limit_mb: u64) -> Self {
        MemoryLimiter { limit: (limit_mb as usize).saturating_mul(1024 * 1024), used: 0, hit: false }
    }

    /// The most linear memory the call held at once (wasm memories never shrink, so this is
    /// what it holds now).
    pub fn peak_bytes(&self) -> u64 {
        self.used as u64
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.used.saturating_add(desired.saturating_sub(current));
        if total > self.limit {
            self.hit = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit_mb: (self.limit / (1024 * 1024)) as u64,
                wanted_mb: (total / (1024 * 1024)) as u64,
            }));
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables cost a pointer per element; 1M elements is far beyond any real plugin.
        Ok(desired <= 1_000_000)
    }
}

/// Captures a guest's stdout or stderr: keeps the first `cap` bytes, counts and drops the rest.
/// Never fails a write, so a chatty guest is not turned into a crashing one.
#[derive(Clone)]
pub struct CappedPipe {
    /// Both streams of a call share one allocation ([`CappedPipe::pair`]); `which` is this one.
    inner: Arc<[Mutex<Captured>; 2]>,
    which: usize,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: usize,
    cap: usize,
}

impl CappedPipe {
    pub fn new(cap: usize) -> Self {
        CappedPipe::pair(cap).0
    }

    /// Two pipes, a call's stdout and stderr, each keeping `cap` bytes, in one allocation.
    pub fn pair(cap: usize) -> (CappedPipe, CappedPipe) {
        let captured = || Mutex::new(Captured { cap, ..Default::default() });
        let inner = Arc::new([captured(), captured()]);
        (CappedPipe { inner: inner.clone(), which: 0 }, CappedPipe { inner, which: 1 })
    }

    fn captured(&self) -> std::sync::MutexGuard<'_, Captured> {
        self.inner[self.which].lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, buf: &[u8]) {
        let mut c = self.captured();
        let room = c.cap.saturating_sub(c.bytes.len());
        let take = room.min(buf.len());
        c.bytes.extend_from_slice(&buf[..take]);
        c.dropped += buf.len() - take;
    }

    /// What was captured, as lossy UTF-8, and how many bytes were dropped.
    pub fn take(&self) -> (String, usize) {
        let mut c = self.captured();
        let bytes = std::mem::take(&mut c.bytes);
        // Valid UTF-8 (the usual case) is kept as it is, not copied.
        let text =
            String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (text, std::mem::take(&mut c.dropped))
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        self.push(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_pipe_keeps_a_prefix_and_counts_the_rest() {
        let p = CappedPipe::new(4);
        p.push(b"abcdef");
        p.push(b"gh");
        assert_eq!(p.take(), ("abcd".to_string(), 4));
        // Bytes that are not UTF-8 (here a cut character) come out replaced, not dropped.
        p.push(&"é".as_bytes()[..1]);
        p.push(b"z");
        assert_eq!(p.take(), ("\u{FFFD}z".to_string(), 0));
    }

    #[test]
    fn a_pair_of_pipes_keeps_each_stream_apart() {
        let (out, err) = CappedPipe::pair(4);
        out.push(b"out!!");
        err.push(b"e");
        assert_eq!(out.take(), ("out!".to_string(), 1));
        assert_eq!(err.take(), ("e".to_string(), 0));
    }

    #[test]
    fn limiter_counts_all_memories() {
        let mut l = MemoryLimiter::new(1);
        assert!(l.memory_growing(0, 600 * 1024, None).unwrap());
        assert!(l.memory_growing(0, 300 * 1024, None).unwrap());
        assert!(l.memory_growing(0, 200 * 1024, None).is_err());
        assert!(l.hit);
    }
}

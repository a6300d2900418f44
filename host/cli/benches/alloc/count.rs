//! Allocations per call (issue #33, target 5): a counting global allocator for the bench binary
//! only, and the rows that use it. Counting is off (one relaxed load per allocation) except
//! around the passes that measure it, so the latency rows are not charged for it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The system allocator, counting allocations (and reallocations) and their bytes while
/// [`counting`] is on, in every thread of the process.
pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

fn note(size: usize) {
    if ON.load(Relaxed) {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(size as u64, Relaxed);
    }
}

// SAFETY: every method forwards its own arguments to `System` unchanged, so each call meets
// `System`'s contract exactly when the caller meets `GlobalAlloc`'s; the counters are atomics
// and never allocate. Only the bench binary installs it (`#[global_allocator]` in bench.rs).
#[allow(unsafe_code)] // `GlobalAlloc` is an unsafe trait; see SAFETY above
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations and bytes per run of `f` (after `warm` runs uncounted), averaged over `runs`.
pub fn per_call(rt: &tokio::runtime::Runtime, case: &mut crate::Case<'_>, runs: usize) -> (f64, f64) {
    rt.block_on(async {
        for _ in 0..runs / 10 + 1 {
            case().await;
        }
        let (a0, b0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
        ON.store(true, Relaxed);
        for _ in 0..runs {
            case().await;
        }
        ON.store(false, Relaxed);
        let (a1, b1) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
        ((a1 - a0) as f64 / runs as f64, (b1 - b0) as f64 / runs as f64)
    })
}

/// The allocation table: each case's allocations and bytes per call, the first case (the raw
/// floor) the baseline.
pub fn rows(
    line: &mut impl FnMut(String),
    rt: &tokio::runtime::Runtime,
    cases: Vec<(&str, crate::Case<'_>)>,
    runs: usize,
) -> Vec<f64> {
    line(String::new());
    line(format!(
        "Allocations per call (a counting global allocator in the bench, every thread, {runs} calls each after a warm-up; the case's own closure included):"
    ));
    line(String::new());
    line("| what | allocations / call | bytes allocated / call | allocations ÷ raw floor |".into());
    line("|---|---|---|---|".into());
    let mut floor = None;
    let mut counts = Vec::new();
    for (label, mut case) in cases {
        let (allocs, bytes) = per_call(rt, &mut case, runs);
        let base = *floor.get_or_insert(allocs);
        line(format!("| {label} | {allocs:.1} | {bytes:.0} | {:.2}× |", allocs / base.max(1.0)));
        counts.push(allocs);
    }
    counts
}

/// An MCP session served in-process (toolhost's `McpServer` on rmcp's framing over an
/// in-memory pipe, no process boundary), as a case: each run is one `tools/call` of `echo`,
/// written as one line and read back as one line. Counts what the MCP path allocates per call
/// on both ends of the pipe (the client's line and read buffer included).
pub fn mcp_case<'a>(
    rt: &tokio::runtime::Runtime,
    host: &'a std::sync::Arc<toolhost_core::Toolhost>,
) -> crate::Case<'a> {
    use rmcp::ServiceExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (client, server) = tokio::io::duplex(1 << 16);
    let mcp = toolhost_frontends::mcp::McpServer::new(host.executor.clone(), None).unwrap();
    rt.spawn(async move {
        let (r, w) = tokio::io::split(server);
        if let Ok(running) = mcp.serve((r, w)).await {
            let _ = running.waiting().await;
        }
    });
    let (r, w) = tokio::io::split(client);
    let io = std::sync::Arc::new(tokio::sync::Mutex::new((tokio::io::BufReader::new(r), w, String::new())));
    rt.block_on({
        let io = io.clone();
        async move {
            let mut io = io.lock().await;
            let (r, w, line) = &mut *io;
            w.write_all(format!("{}\n{}\n", crate::MCP_INITIALIZE, crate::MCP_INITIALIZED).as_bytes())
                .await
                .unwrap();
            line.clear();
            r.read_line(line).await.unwrap();
            assert!(line.contains("\"id\":0"), "{line}");
        }
    });
    let request: &'static [u8] =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}}\n";
    Box::new(move || {
        let io = io.clone();
        Box::pin(async move {
            let mut io = io.lock().await;
            let (r, w, line) = &mut *io;
            w.write_all(request).await.unwrap();
            line.clear();
            r.read_line(line).await.unwrap();
            assert!(line.contains("hello") && !line.contains("\"isError\":true"), "{line}");
        })
    })
}

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
) {
    line(String::new());
    line(format!(
        "Allocations per call (a counting global allocator in the bench, every thread, {runs} calls each after a warm-up; the case's own closure included):"
    ));
    line(String::new());
    line("| what | allocations / call | bytes allocated / call | allocations ÷ raw floor |".into());
    line("|---|---|---|---|".into());
    let mut floor = None;
    for (label, mut case) in cases {
        let (allocs, bytes) = per_call(rt, &mut case, runs);
        let base = *floor.get_or_insert(allocs);
        line(format!("| {label} | {allocs:.1} | {bytes:.0} | {:.2}× |", allocs / base.max(1.0)));
    }
}

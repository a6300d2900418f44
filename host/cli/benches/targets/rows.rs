//! Issue #33's targets and issue #57's bounds on the default configuration, checked against
//! figures the sections of this run record.
//!
//! A section that measures something a target reads calls [`record`] with a named figure; the
//! last table of the report ([`table`]) marks each target met or not met, with its bound, from
//! the figures of this run only. A target whose figures were not measured in this run (a
//! section left out with `TOOLHOST_BENCH_ONLY`) says so instead of reusing an old number.

use std::collections::BTreeMap;
use std::sync::Mutex;

static FIGURES: Mutex<BTreeMap<&'static str, f64>> = Mutex::new(BTreeMap::new());

/// Figure names (microseconds unless the name says otherwise).
pub const EXECUTOR_ECHO_P50: &str = "executor echo p50 µs";
pub const TUNED_FLOOR_P50: &str = "tuned raw floor p50 µs";
pub const SANDBOXED_FLOOR_P50: &str = "raw floor with the sandbox's limits p50 µs";
pub const ECHO_ALLOCATIONS: &str = "allocations per executor echo";
pub const RAW_ALLOCATIONS: &str = "allocations per raw wasmtime echo";
/// Allocations per executor `echo` call before issue #33's work, counted by this bench's
/// allocator on commit 16d1b62 (74, of which 3 were the bench's own clone of the `ToolCall`,
/// no longer made): counts do not depend on the machine or the build profile.
const ECHO_ALLOCATIONS_BEFORE: f64 = 71.0;
pub const MCP_EXECUTOR_ECHO_P50: &str = "executor echo p50 µs, beside the MCP stages";
pub const MCP_EXECUTOR_ECHO_P99: &str = "executor echo p99 µs, beside the MCP stages";
pub const MCP_PING_P50: &str = "mcp stdio ping p50 µs";
pub const MCP_RMCP_STDIO_P50: &str = "mcp stdio call answered by rmcp alone p50 µs";
pub const MCP_STDIO_P50: &str = "mcp stdio echo p50 µs, fsync off";
/// The p99 of the run whose p50 is the median.
pub const MCP_STDIO_P99: &str = "mcp stdio echo p99 µs, fsync off";
/// Each run's p99 ÷ its p50: the median over the runs (what the target checks), the least and
/// the most, and how many runs.
pub const MCP_STDIO_P99_RATIO: &str = "mcp stdio echo p99 ÷ p50, median of the runs";
pub const MCP_STDIO_P99_RATIO_MIN: &str = "mcp stdio echo p99 ÷ p50, least of the runs";
pub const MCP_STDIO_P99_RATIO_MAX: &str = "mcp stdio echo p99 ÷ p50, most of the runs";
pub const MCP_STDIO_P99_RUNS: &str = "mcp stdio echo runs";
/// A do-nothing stdio server spinning as long as toolhost's call took, all pinned as toolhost:
/// its p99 ÷ p50 (the machine's own tail on that much time).
pub const SPIN_STDIO_P99_RATIO: &str = "do-nothing stdio server spinning toolhost's p50: p99 ÷ p50";
/// toolhost's stdio call with its epoch ticker moved to another CPU: p99 ÷ p50.
pub const MCP_STDIO_P99_RATIO_TICKER_OFF: &str = "mcp stdio echo p99 ÷ p50, epoch ticker on another CPU";
pub const MCP_STDIO_FSYNC_P50: &str = "mcp stdio echo p50 µs, fsync always";
/// The default configuration (`serve --mcp` with no config: `[audit] fsync = "interval"`).
pub const MCP_STDIO_DEFAULT_P50: &str = "mcp stdio echo p50 µs, default configuration";
/// Each default run's p99 ÷ its p50, the median over the runs.
pub const MCP_STDIO_DEFAULT_P99_RATIO: &str = "mcp stdio echo p99 ÷ p50, default configuration";
pub const MCP_HTTP_DEFAULT_P50: &str = "mcp http echo p50 µs, default configuration";
/// Issue #57's own method (an independent client, `independent/client.py`): the default
/// configuration's p50 and its do-nothing baseline per transport, and stdio's p99 ÷ p50.
pub const INDEPENDENT_STDIO_P50: &str = "independent client: mcp stdio echo p50 µs, default configuration";
pub const INDEPENDENT_STDIO_NOOP_P50: &str = "independent client: stdio do-nothing p50 µs";
/// The do-nothing stdio server running `echo` on raw wasmtime for each call (no toolhost code).
pub const INDEPENDENT_STDIO_WASM_P50: &str =
    "independent client: stdio do-nothing running echo on raw wasmtime p50 µs";
pub const INDEPENDENT_STDIO_P99_RATIO: &str =
    "independent client: mcp stdio echo p99 ÷ p50, default configuration";
pub const INDEPENDENT_HTTP_P50: &str = "independent client: mcp http echo p50 µs, default configuration";
pub const INDEPENDENT_HTTP_NOOP_P50: &str = "independent client: http do-nothing p50 µs";
pub const INDEPENDENT_HTTP_P99_RATIO: &str =
    "independent client: mcp http echo p99 ÷ p50, default configuration";
/// The do-nothing HTTP server of the stateless rounds (its own baseline: the session's rounds
/// measure theirs).
pub const INDEPENDENT_STATELESS_NOOP_P50: &str =
    "independent client: http do-nothing p50 µs, stateless rounds";
pub const INDEPENDENT_STATELESS_P50: &str =
    "independent client: mcp http stateless echo p50 µs, default configuration";
pub const INDEPENDENT_STATELESS_P99_RATIO: &str =
    "independent client: mcp http stateless echo p99 ÷ p50, default configuration";
pub const FDATASYNC_P50: &str = "fdatasync of one audit line p50 µs";
pub const MCP_HTTP_P50: &str = "mcp http echo p50 µs";
pub const MCP_HTTP_NOOP_P50: &str = "mcp http do-nothing p50 µs";
pub const MCP_HTTP_PING_P50: &str = "mcp http ping p50 µs";
pub const MCP_HTTP_RMCP_P50: &str = "mcp http call answered by rmcp alone p50 µs";
pub const MCP_STDIO_NOOP_P50: &str = "mcp stdio do-nothing p50 µs";
/// The do-nothing stdio server running `echo` on raw wasmtime for each call (no toolhost code).
pub const MCP_STDIO_WASM_P50: &str = "mcp stdio do-nothing running echo on raw wasmtime p50 µs";
/// The call timed inside the server (its audit line's `duration_ms`), median of the runs.
pub const MCP_STDIO_INSIDE: &str = "mcp stdio echo inside the server µs";
pub const MCP_HTTP_INSIDE: &str = "mcp http echo inside the server µs";
pub const PYTHON_P50: &str = "python template call p50 µs";
pub const JS_P50: &str = "javascript template call p50 µs";
pub const PYTHON_FIXED: &str = "python bare instantiate + slot reset µs";
pub const JS_FIXED: &str = "javascript bare instantiate + slot reset µs";
pub const VERSION_START: &str = "toolhost --version µs";
pub const FIRST_LIST_1: &str = "first tools/list, 1 plugin µs";
pub const FIRST_LIST_10: &str = "first tools/list, 10 plugins µs";
pub const ENGINE_BUILD: &str = "engine build (Runtime::for_config) in process µs";

/// Record a figure of this run for the targets table.
pub fn record(name: &'static str, value: f64) {
    FIGURES.lock().unwrap_or_else(|p| p.into_inner()).insert(name, value);
}

fn get(name: &str) -> Option<f64> {
    FIGURES.lock().unwrap_or_else(|p| p.into_inner()).get(name).copied()
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**not met**" }
}

/// One target: what it asks, what this run measured, and whether it holds. `None` when a
/// figure it needs was not measured in this run.
struct Row {
    target: &'static str,
    check: Option<(String, bool)>,
    bound: String,
}

fn rows() -> Vec<Row> {
    let f = get;
    let mut out = Vec::new();
    out.push(Row {
        target: "1. MCP stdio `echo` p50 ≤ executor `echo` + MCP `ping` + 5 µs (`[audit] fsync = \"never\"`)",
        check: (|| {
            let (call, echo, ping) = (f(MCP_STDIO_P50)?, f(MCP_EXECUTOR_ECHO_P50)?, f(MCP_PING_P50)?);
            let bound = echo + ping + 5.0;
            // Two decimals: a call within 0.1 µs of its bound reads as equal with one.
            Some((format!("{call:.2} µs vs {echo:.2} + {ping:.2} + 5 = {bound:.2} µs"), call <= bound))
        })(),
        bound: (|| {
            let (rmcp, echo, ping) = (f(MCP_RMCP_STDIO_P50)?, f(MCP_EXECUTOR_ECHO_P50)?, f(MCP_PING_P50)?);
            Some(format!(
                "rmcp alone answering the same `tools/call` at once on toolhost's transport (no tool run, no audit): {rmcp:.1} µs, {:.1} µs more than toolhost's `ping`; with the executor's `echo` added: {:.1} µs",
                rmcp - ping,
                rmcp + echo
            ))
        })()
        .unwrap_or_default(),
    });
    out.push(Row {
        // The label is the committed report's (its "before" column matches rows by label).
        target: "1. MCP stdio `echo` p99 ≤ 2× p50 (`[audit] fsync = \"never\"`)",
        check: (|| {
            let (ratio, least, most, runs) = (
                f(MCP_STDIO_P99_RATIO)?,
                f(MCP_STDIO_P99_RATIO_MIN)?,
                f(MCP_STDIO_P99_RATIO_MAX)?,
                f(MCP_STDIO_P99_RUNS)?,
            );
            let (p50, p99) = (f(MCP_STDIO_P50)?, f(MCP_STDIO_P99)?);
            Some((
                format!(
                    "{ratio:.2}× p50 (each run's p99 ÷ its p50, median of {runs:.0} runs: {least:.2}–{most:.2}×); the run with the median p50: p99 {p99:.1} µs = {:.2}×",
                    p99 / p50
                ),
                ratio <= 2.0,
            ))
        })(),
        bound: (|| {
            let (p50, p99) = (f(MCP_EXECUTOR_ECHO_P50)?, f(MCP_EXECUTOR_ECHO_P99)?);
            let alone =
                format!("the executor call alone, in process: p99 {p99:.1} µs = {:.2}× its p50 {p50:.1} µs", p99 / p50);
            Some(match (f(SPIN_STDIO_P99_RATIO), f(MCP_STDIO_P99_RATIO_TICKER_OFF)) {
                (Some(spin), Some(off)) => format!(
                    "{alone}; a do-nothing server spinning as long, pinned the same: p99 {spin:.2}× p50; toolhost with its epoch ticker moved to another CPU: {off:.2}×"
                ),
                _ => alone,
            })
        })()
        .unwrap_or_default(),
    });
    out.push(Row {
        target: "1. the same with each audit line synced before its answer (`[audit] fsync = \"always\"`)",
        check: (|| {
            let (call, echo, ping) = (f(MCP_STDIO_FSYNC_P50)?, f(MCP_EXECUTOR_ECHO_P50)?, f(MCP_PING_P50)?);
            let bound = echo + ping + 5.0;
            Some((format!("{call:.1} µs vs {bound:.1} µs"), call <= bound))
        })(),
        bound: f(FDATASYNC_P50)
            .map(|s| format!("one `fdatasync` of an appended line on this disk: {s:.1} µs (p50)"))
            .unwrap_or_default(),
    });
    out.push(Row {
        target: "2. MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server (2025-06-18 session, `[audit] fsync = \"never\"`)",
        check: (|| {
            let (call, noop) = (f(MCP_HTTP_P50)?, f(MCP_HTTP_NOOP_P50)?);
            Some((format!("{call:.1} µs = {:.2}× {noop:.1} µs", call / noop), call <= 2.0 * noop))
        })(),
        bound: (|| {
            let (ping, noop, rmcp) = (f(MCP_HTTP_PING_P50)?, f(MCP_HTTP_NOOP_P50)?, f(MCP_HTTP_RMCP_P50)?);
            let (inside, inside_stdio) = (f(MCP_HTTP_INSIDE)?, f(MCP_STDIO_INSIDE)?);
            let (stdio, stdio_noop) = (f(MCP_STDIO_P50)?, f(MCP_STDIO_NOOP_P50)?);
            // What toolhost adds around the executor's call over stdio (reading, mapping,
            // answering, the wake-ups): the same work over HTTP, hyper's aside.
            let around = stdio - stdio_noop - inside_stdio;
            Some(format!(
                "the call itself, timed inside the server (audit `duration_ms`, executor and observer): {inside:.0} µs; with the do-nothing round trip, {:.1} µs = {:.2}×, leaving {:.1} µs under the target for what is around the call — which over stdio (round trip − do-nothing − the call inside) takes {around:.1} µs. The call no longer goes through rmcp's session (`mcp::direct`); rmcp's service alone answering the same call at once: {rmcp:.1} µs = {:.2}×; toolhost's `ping`, which still does: {ping:.1} µs = {:.2}×",
                noop + inside,
                (noop + inside) / noop,
                noop - inside,
                rmcp / noop,
                ping / noop
            ))
        })()
        .unwrap_or_default(),
    });
    out.push(Row {
        target: "3. Python template call p50 ≤ 0.3 ms",
        check: f(PYTHON_P50).map(|p| (format!("{:.3} ms", p / 1000.0), p <= 300.0)),
        bound: f(PYTHON_FIXED)
            .map(|x| {
                format!(
                    "raw wasmtime's instantiate + slot reset of the same component, no guest code: {x:.0} µs"
                )
            })
            .unwrap_or_default(),
    });
    out.push(Row {
        target: "3. JavaScript template call p50 ≤ 60 µs",
        check: f(JS_P50).map(|p| (format!("{p:.1} µs"), p <= 60.0)),
        bound: f(JS_FIXED)
            .map(|x| {
                format!(
                    "raw wasmtime's instantiate + slot reset of the same component, no guest code: {x:.0} µs"
                )
            })
            .unwrap_or_default(),
    });
    for (target, name) in [
        ("4. first `tools/list`, 1 plugin, warm ≤ 2× `toolhost --version`", FIRST_LIST_1),
        ("4. first `tools/list`, 10 plugins, warm ≤ 2× `toolhost --version`", FIRST_LIST_10),
    ] {
        out.push(Row {
            target,
            check: (|| {
                let (list, version) = (f(name)?, f(VERSION_START)?);
                Some((format!("{:.2}×", list / version), list <= 2.0 * version))
            })(),
            bound: (|| {
                let (engine, version) = (f(ENGINE_BUILD)?, f(VERSION_START)?);
                Some(format!(
                    "the first load waits for the engine, built in {:.2} ms (in process, warm): `--version` + that = {:.2}× `--version`, before any plugin is loaded",
                    engine / 1000.0,
                    (version + engine) / version
                ))
            })()
            .unwrap_or_default(),
        });
    }
    out.push(Row {
        target: "5. executor `echo` p50 ≤ 1.15× the tuned raw floor",
        check: (|| {
            let (echo, floor) = (f(EXECUTOR_ECHO_P50)?, f(TUNED_FLOOR_P50)?);
            Some((format!("{:.3}× ({echo:.1} vs {floor:.1} µs)", echo / floor), echo <= 1.15 * floor))
        })(),
        bound: (|| {
            let (sandboxed, floor) = (f(SANDBOXED_FLOOR_P50)?, f(TUNED_FLOOR_P50)?);
            Some(format!(
                "raw wasmtime with the limits every sandboxed call has (a memory limiter, stdout and stderr captured, a wall-clock timer), no toolhost code: {sandboxed:.1} µs = {:.3}× the tuned floor",
                sandboxed / floor
            ))
        })()
        .unwrap_or_default(),
    });
    out.push(Row {
        target: "5. allocations per executor `echo` call halved",
        check: f(ECHO_ALLOCATIONS).map(|now| {
            let before = ECHO_ALLOCATIONS_BEFORE;
            (format!("{now:.0} (before: {before:.0} on 16d1b62, {:.2}×)", now / before), now * 2.0 <= before)
        }),
        bound: f(RAW_ALLOCATIONS)
            .map(|raw| format!("raw wasmtime's own instantiate + call allocates {raw:.0} per call"))
            .unwrap_or_default(),
    });
    out.push(Row {
        target: "5. the same, toolhost's share (above the raw wasmtime call's) halved",
        check: (|| {
            let (now, raw) = (f(ECHO_ALLOCATIONS)?, f(RAW_ALLOCATIONS)?);
            let before = ECHO_ALLOCATIONS_BEFORE - raw;
            let share = now - raw;
            Some((format!("{share:.0} (before: {before:.0})"), share * 2.0 <= before))
        })(),
        bound: String::new(),
    });
    out
}

/// Issue #57's bounds on the default configuration (`toolhost serve --mcp` with no config,
/// `[audit] fsync = "interval"`), each path with its tuned variants beside it.
fn default_rows() -> Vec<Row> {
    let f = get;
    let ratio = |x: f64, base: f64| format!("{x:.1} µs = {:.2}× {base:.1} µs", x / base);
    let independent = |call: &str, noop: &str| -> Option<(String, bool)> {
        let (call, noop) = (f(call)?, f(noop)?);
        Some((ratio(call, noop), call <= 2.0 * noop))
    };
    vec![
        // Issue #57's own method first: an independent client (see `independent/rows.rs`).
        Row {
            target: "MCP stdio `echo` p50 ≤ 2× the do-nothing server — issue #57's method (independent client)",
            check: independent(INDEPENDENT_STDIO_P50, INDEPENDENT_STDIO_NOOP_P50),
            bound: (|| {
                let (noop, wasm) = (f(INDEPENDENT_STDIO_NOOP_P50)?, f(INDEPENDENT_STDIO_WASM_P50)?);
                Some(format!(
                    "the do-nothing server running the same `echo` on raw wasmtime per call (no toolhost code: any WebAssembly host's floor): {}; the bench's own Rust client (a stricter ratio) in the next rows",
                    ratio(wasm, noop)
                ))
            })()
            .unwrap_or_default(),
        },
        Row {
            target: "MCP stdio `echo` p99 ≤ 2× its p50 — issue #57's method (independent client)",
            check: f(INDEPENDENT_STDIO_P99_RATIO)
                .map(|r| (format!("{r:.2}× (each run's p99 ÷ its p50, median of the rounds)"), r <= 2.0)),
            bound: String::new(),
        },
        Row {
            target: "MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server — issue #57's method (independent client, 2025-06-18 session)",
            check: independent(INDEPENDENT_HTTP_P50, INDEPENDENT_HTTP_NOOP_P50),
            bound: f(INDEPENDENT_HTTP_P99_RATIO).map(|r| format!("its p99 ÷ p50: {r:.2}×")).unwrap_or_default(),
        },
        Row {
            target: "MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server — issue #57's method (independent client, 2026-07-28 stateless)",
            check: independent(INDEPENDENT_STATELESS_P50, INDEPENDENT_STATELESS_NOOP_P50),
            bound: f(INDEPENDENT_STATELESS_P99_RATIO).map(|r| format!("its p99 ÷ p50: {r:.2}×")).unwrap_or_default(),
        },
        Row {
            target: "MCP stdio `echo` p50 ≤ 2× the do-nothing server — the bench's Rust client",
            check: (|| {
                let (call, noop) = (f(MCP_STDIO_DEFAULT_P50)?, f(MCP_STDIO_NOOP_P50)?);
                Some((ratio(call, noop), call <= 2.0 * noop))
            })(),
            bound: (|| {
                let (noop, never, always) = (f(MCP_STDIO_NOOP_P50)?, f(MCP_STDIO_P50)?, f(MCP_STDIO_FSYNC_P50)?);
                let inside = f(MCP_STDIO_INSIDE).map_or(String::new(), |i| {
                    format!("; the call alone, timed inside the server (executor and observer): {i:.0} µs = {:.2}×", i / noop)
                });
                let wasm = f(MCP_STDIO_WASM_P50).map_or(String::new(), |w| {
                    format!("; the do-nothing server running the same `echo` on raw wasmtime per call (no toolhost code): {}", ratio(w, noop))
                });
                Some(format!(
                    "tuned beside it: `fsync = \"never\"` {:.2}×, `fsync = \"always\"` (the default before issue #57) {:.2}×{inside}{wasm}",
                    never / noop,
                    always / noop
                ))
            })()
            .unwrap_or_default(),
        },
        Row {
            target: "MCP stdio `echo` p99 ≤ 2× its p50 — the bench's Rust client",
            check: f(MCP_STDIO_DEFAULT_P99_RATIO).map(|r| (format!("{r:.2}× (each run's p99 ÷ its p50, median of the runs)"), r <= 2.0)),
            bound: f(MCP_STDIO_P99_RATIO)
                .map(|r| format!("`fsync = \"never\"`: {r:.2}× (issue #33's row below)"))
                .unwrap_or_default(),
        },
        Row {
            target: "MCP streamable HTTP `echo` p50 ≤ 2× the do-nothing server — the bench's Rust client (2025-06-18 session)",
            check: (|| {
                let (call, noop) = (f(MCP_HTTP_DEFAULT_P50)?, f(MCP_HTTP_NOOP_P50)?);
                Some((ratio(call, noop), call <= 2.0 * noop))
            })(),
            bound: (|| {
                let (noop, never) = (f(MCP_HTTP_NOOP_P50)?, f(MCP_HTTP_P50)?);
                Some(format!("tuned beside it: `fsync = \"never\"` {:.2}× (the MCP HTTP table has `\"always\"`)", never / noop))
            })()
            .unwrap_or_default(),
        },
        Row {
            target: "executor `echo` p50 ≤ 1.15× the tuned raw floor (the sandbox as configured by default)",
            check: (|| {
                let (echo, floor) = (f(EXECUTOR_ECHO_P50)?, f(TUNED_FLOOR_P50)?);
                Some((ratio(echo, floor), echo <= 1.15 * floor))
            })(),
            bound: String::new(),
        },
    ]
}

/// The first table of the report: the default configuration of each path against its bound.
pub fn default_table() -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line("## The default configuration (issue #57, this run)".into());
    line(String::new());
    line("What a user who starts `toolhost serve --mcp` with no config gets (`[audit] fsync = \"interval\"`), each bound checked against this run's own baseline; the sections below have every variant. The MCP bounds are checked twice: with issue #57's own method (an independent client, Python's standard library, whose round trip to the do-nothing server is what a real client's is) and with the bench's own Rust client (whose do-nothing round trip of a few microseconds makes every microsecond toolhost adds weigh more: stricter).".into());
    line(String::new());
    write_rows(&mut line, default_rows());
    line(String::new());
    out
}

fn write_rows(line: &mut impl FnMut(String), rows: Vec<Row>) {
    line("| target | measured | met | bound |".into());
    line("|---|---|---|---|".into());
    for row in rows {
        let (measured, ok) = match row.check {
            Some((m, ok)) => (m, met(ok)),
            None => ("not measured in this run".to_string(), "—"),
        };
        let bound = if row.bound.is_empty() { "—".to_string() } else { row.bound };
        line(format!("| {} | {measured} | {ok} | {bound} |", row.target));
    }
}

/// The targets table, last in the report.
pub fn table(line: &mut impl FnMut(String)) {
    line(String::new());
    line("## Targets of issue #33 (this run)".into());
    line(String::new());
    write_rows(line, rows());
}

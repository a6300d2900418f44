//! Issue #57's own method: an MCP client that shares no code with toolhost (`client.py`,
//! Python's standard library), client and server pinned to one CPU, 3 rounds × 2 processes
//! (the do-nothing server, then `toolhost serve --mcp` with no config) × 2,000 calls, over stdio
//! and over streamable HTTP (a session, and 2026-07-28 stateless calls).
//!
//! The bench's own Rust client (the MCP round-trip tables) asks more of the server: its round
//! trip to the do-nothing server is a few microseconds, so what toolhost adds weighs more in its
//! ratio. This one measures what the issue measured; both are reported, each against its own
//! do-nothing baseline.

use super::targets;
use std::process::Command;

/// The client: beside this file, run by the `python3` on `PATH`.
const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/independent/client.py");

/// What one run of the client measured, in µs.
#[derive(Clone, Copy)]
struct Run {
    p50: f64,
    p99: f64,
}

/// One transport's rounds: the do-nothing server's runs and toolhost's (over stdio also the
/// do-nothing server running `echo` on raw wasmtime).
struct Rounds {
    noop: Vec<Run>,
    host: Vec<Run>,
    wasm: Vec<Run>,
}

impl Rounds {
    fn p50(runs: &[Run]) -> f64 {
        super::median(runs.iter().map(|r| r.p50).collect())
    }

    /// Each run's p99 ÷ its p50, the median over the runs.
    fn tail(runs: &[Run]) -> f64 {
        super::median(runs.iter().map(|r| r.p99 / r.p50).collect())
    }
}

/// Run `client.py` with `head` (transport, calls, warm-up[, where the URL is printed]) against
/// `server`; `None` (with the reason on stderr) when it cannot run.
fn client(head: &[String], server: &Command) -> Option<Run> {
    let mut c = Command::new("python3");
    c.arg(CLIENT).args(head).arg("--").arg(server.get_program()).args(server.get_args());
    for (k, v) in server.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = match c.output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("independent client: cannot run python3: {e}");
            return None;
        }
    };
    if !out.status.success() {
        eprintln!("independent client failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(Run { p50: v["p50_us"].as_f64()?, p99: v["p99_us"].as_f64()? })
}

/// The section: both transports, `rounds` rounds of `calls` calls per process. `noop` is the
/// do-nothing server for a transport (`stdio`/`http`); `host` toolhost with no config.
pub fn rows(
    line: &mut impl FnMut(String),
    rounds: usize,
    calls: usize,
    noop: &dyn Fn(&str) -> Command,
    host: &dyn Fn(bool) -> Command,
) {
    let warmup = (calls / 10).to_string();
    let calls = calls.to_string();
    let mut measured = Vec::new();
    for transport in ["stdio", "http", "http-stateless"] {
        let http = transport != "stdio";
        let head = |url_on: &str| {
            let mut h = vec![transport.to_string(), calls.clone(), warmup.clone()];
            if http {
                h.push(url_on.to_string());
            }
            h
        };
        let mut r = Rounds { noop: Vec::new(), host: Vec::new(), wasm: Vec::new() };
        for _ in 0..rounds {
            // Over stdio, the floor of any WebAssembly host measured this way: the do-nothing
            // server running the same `echo` on raw wasmtime for each call, no toolhost code.
            if !http {
                match client(&head("stdout"), &noop("stdio-wasm")) {
                    Some(w) => r.wasm.push(w),
                    None => eprintln!("independent client: the raw-wasmtime server did not run"),
                }
            }
            // The do-nothing HTTP server prints its URL on stdout, toolhost on stderr.
            let (Some(n), Some(h)) = (
                client(&head("stdout"), &noop(if http { "http" } else { "stdio" })),
                client(&head("stderr"), &host(http)),
            ) else {
                line(String::new());
                line(format!(
                    "The independent client (issue #57's method) could not run over {transport}: see the benchmark's stderr."
                ));
                return;
            };
            r.noop.push(n);
            r.host.push(h);
        }
        measured.push((transport, r));
    }
    line(String::new());
    line(format!(
        "### Issue #57's method: an independent client ({rounds} rounds × 2 processes × {calls} calls)"
    ));
    line(String::new());
    line(format!(
        "`host/cli/benches/independent/client.py` (Python's standard library, no code shared with toolhost) pinned with the server it starts to CPU 0, a 2025-06-18 session (or 2026-07-28 stateless calls, each with its `_meta` and SEP-2243 headers), sequential `echo` calls after {warmup} of warm-up; the do-nothing server, then `toolhost serve --mcp` with no config, in each round; the median of the rounds' p50s, and of each run's p99 ÷ its p50."
    ));
    line(String::new());
    line("| transport | do-nothing server p50 | toolhost p50 (default configuration) | ÷ do-nothing | toolhost p99 ÷ p50 | do-nothing p99 ÷ p50 |".into());
    line("|---|---|---|---|---|---|".into());
    let mut floor = None;
    for (transport, r) in &measured {
        let (noop, host) = (Rounds::p50(&r.noop), Rounds::p50(&r.host));
        let (host_tail, noop_tail) = (Rounds::tail(&r.host), Rounds::tail(&r.noop));
        let name = match *transport {
            "http" => "streamable HTTP (a 2025-06-18 session)",
            "http-stateless" => "streamable HTTP (2026-07-28, stateless)",
            _ => "stdio",
        };
        line(format!(
            "| {name} | {noop:.1} µs | {host:.1} µs | {:.2}× | {host_tail:.2}× | {noop_tail:.2}× |",
            host / noop
        ));
        let (p50, baseline, tail) = match *transport {
            "http" => (
                targets::INDEPENDENT_HTTP_P50,
                targets::INDEPENDENT_HTTP_NOOP_P50,
                targets::INDEPENDENT_HTTP_P99_RATIO,
            ),
            "http-stateless" => (
                targets::INDEPENDENT_STATELESS_P50,
                targets::INDEPENDENT_STATELESS_NOOP_P50,
                targets::INDEPENDENT_STATELESS_P99_RATIO,
            ),
            _ => (
                targets::INDEPENDENT_STDIO_P50,
                targets::INDEPENDENT_STDIO_NOOP_P50,
                targets::INDEPENDENT_STDIO_P99_RATIO,
            ),
        };
        targets::record(p50, host);
        targets::record(baseline, noop);
        targets::record(tail, host_tail);
        if !r.wasm.is_empty() {
            let wasm = Rounds::p50(&r.wasm);
            floor = Some((noop, wasm, host, Rounds::tail(&r.wasm)));
            targets::record(targets::INDEPENDENT_STDIO_WASM_P50, wasm);
        }
    }
    if let Some((noop, wasm, host, wasm_tail)) = floor {
        let left = 2.0 * noop - wasm;
        let verdict = if left > 0.0 {
            format!(
                "The bound of 2× leaves {left:.1} µs above that floor for everything a host does besides running the component (the request read as MCP, the prepared call, the audit line, the answer with its usage); toolhost takes {:.1} µs.",
                host - wasm
            )
        } else {
            format!(
                "That floor alone is over the bound of 2×: no host that runs the component in a fresh instance per call meets it measured this way. toolhost takes {:.1} µs above the floor.",
                host - wasm
            )
        };
        line(String::new());
        line(format!(
            "The floor of any WebAssembly host measured this way, over stdio: the do-nothing server running the same `echo` (text.wasm) on raw wasmtime for each call — a fresh store and instance on toolhost's engine settings and pool tuning, no toolhost code — answers in {wasm:.1} µs, {:.2}× the do-nothing server (its p99 ÷ p50: {wasm_tail:.2}×). {verdict}",
            wasm / noop
        ));
    }
}

/// Whether `python3` runs here (the client needs nothing else).
pub fn available() -> bool {
    Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success())
}

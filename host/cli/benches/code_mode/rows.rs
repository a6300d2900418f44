//! Issue #61: what code mode costs, each figure beside its baseline in the same run.
//!
//! - The script sandbox's start: `run_script("return 1")` through the executor (a fresh runner
//!   instance, the script rewritten and run, no inner call) beside one `echo` call (target ≤
//!   5 ms p50, warm: the runner compiled once).
//! - An inner call's overhead: one script making 500 `echo` calls, less the empty script, per
//!   call, against 500 `echo` calls made directly in a row, per call (target ≤ 1.2×).
//! - The tokens and model round trips of a scripted agent task, both ways (`tokens.mjs`: a
//!   scripted model, `toolhost chat`, o200k_base counted by js-tiktoken).

use super::{AlwaysConfirm, Case, Config, Registry, Runtime, ToolCall, Toolhost, interleaved, us};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Inner calls of the scripted rows: enough that parsing the script (acorn, interpreted: about
/// 2 µs a character) is a small part of each call's share.
const INNER: usize = 500;

/// The section: `n` samples per case.
pub fn rows(line: &mut impl FnMut(String), rt: &tokio::runtime::Runtime, work: &Path, n: usize) {
    line(String::new());
    line("## Code mode (issue #61)".into());
    line(String::new());
    let host = host(work);
    let host = &host;
    let echo = ToolCall::new("echo", ["x"]);
    let empty = ToolCall::new("run_script", ["return 1"]);
    let code = format!("for (let i = 0; i < {INNER}; i++) await tools.echo('x'); return 1");
    let scripted = ToolCall::new("run_script", [code.as_str()]);
    // Where an inner call's time goes, the script's own part of it, each piece alone: the
    // loop, an `await` of a settled promise (a tool call's value is one), a host call (the
    // runner's `now` import), the arguments out and the value back as JSON.
    let piece = |body: &str| {
        let code =
            format!("let p = Promise.resolve(1), t; for (let i = 0; i < {INNER}; i++) {body}; return 1");
        ToolCall::new("run_script", [code.as_str()])
    };
    let (looped, awaits, clock, json) = (
        piece("{}"),
        piece("await p"),
        piece("t = performance.now()"),
        piece("t = JSON.parse(JSON.stringify(['x']))"),
    );
    let (echo, empty, scripted) = (&echo, &empty, &scripted);
    let (looped, awaits, clock, json) = (&looped, &awaits, &clock, &json);
    // Every case must succeed: a failing script would be measured as fast.
    for c in [echo, empty, scripted, looped, awaits, clock, json] {
        let o = rt.block_on(host.call(c));
        assert!(o.success, "{}: {o:?}", c.name);
    }
    let mut cases: Vec<Case<'_>> = vec![
        Box::new(move || Box::pin(async move { drop(host.call(echo).await) })),
        Box::new(move || Box::pin(async move { drop(host.call(empty).await) })),
        Box::new(move || Box::pin(async move { drop(host.call(scripted).await) })),
        Box::new(move || Box::pin(async move { drop(host.call(looped).await) })),
        Box::new(move || Box::pin(async move { drop(host.call(awaits).await) })),
        Box::new(move || Box::pin(async move { drop(host.call(clock).await) })),
        Box::new(move || Box::pin(async move { drop(host.call(json).await) })),
        // The inner calls' baseline: as many `echo` calls made directly, in a row, as the
        // script makes — the same batch, so the same warm caches, and as many calls per sample.
        Box::new(move || {
            Box::pin(async move {
                for _ in 0..INNER {
                    drop(host.call(echo).await);
                }
            })
        }),
    ];
    // The scripted case makes 500 calls: fewer samples keep it within the others' time.
    let m = interleaved(rt, &mut cases, (n / 30).max(60));
    let (direct, start, script) = (m[0].stats.p50, m[1].stats.p50, m[2].stats.p50);
    let per_inner = script.saturating_sub(start) / INNER as u32;
    let direct_in_a_row = m[7].stats.p50 / INNER as u32;
    let ratio = per_inner.as_secs_f64() / direct_in_a_row.as_secs_f64();
    line("| what | p50 | p99 | ratio | target |".into());
    line("|---|---|---|---|---|".into());
    line(format!(
        "| `echo` called directly (the baseline) | {} | {} | 1.00× | — |",
        us(direct),
        us(m[0].stats.p99)
    ));
    let met = |ok: bool| if ok { "met" } else { "**not met**" };
    line(format!(
        "| `run_script(\"return 1\")`: the script sandbox's start (a fresh runner instance, no inner call) | {} | {} | {:.1}× `echo` | ≤ 5 ms p50: {} |",
        us(start),
        us(m[1].stats.p99),
        start.as_secs_f64() / direct.as_secs_f64(),
        met(start.as_secs_f64() <= 0.005)
    ));
    line(format!(
        "| a script making {INNER} `echo` calls | {} | {} | — | — |",
        us(script),
        us(m[2].stats.p99)
    ));
    line(format!(
        "| `echo` called directly {INNER} times in a row, ÷ {INNER} (the inner call's baseline) | {} | — | {:.2}× | — |",
        us(direct_in_a_row),
        direct_in_a_row.as_secs_f64() / direct.as_secs_f64()
    ));
    line(format!(
        "| one inner call: (that − the empty script) ÷ {INNER} | {} | — | {ratio:.2}× `echo` in a row | ≤ 1.2×: {} |",
        us(per_inner),
        met(ratio <= 1.2)
    ));
    // Each piece's rows: its script less the empty one, per iteration (the loop included).
    let per = |i: usize| m[i].stats.p50.saturating_sub(start).as_secs_f64() / INNER as f64;
    let pieces = [
        (3, "the script's loop alone (`for` … `{}`)"),
        (4, "… with an `await` of a settled promise (as a tool call's value is)"),
        (5, "… with a host call (`performance.now()`: the runner's `now` import, no strings)"),
        (6, "… with the arguments out and a value back as JSON (`JSON.parse(JSON.stringify(['x']))`)"),
    ];
    for (i, what) in pieces {
        line(format!(
            "| where it goes, per call: {what} | {} | — | — | — |",
            us(Duration::from_secs_f64(per(i).max(0.0)))
        ));
    }
    // The script's own part of an inner call, with no host work but a bare import: the loop,
    // then each piece less the loop.
    let floor = per(4) + per(5) + per(6) - 2.0 * per(3);
    let floor_ratio = 1.0 + floor / direct_in_a_row.as_secs_f64();
    line(format!(
        "| the script's own floor per call: the loop, the `await`, the host call and the JSON (each less the loop) | {} | — | {floor_ratio:.2}× `echo` in a row, with `echo` | — |",
        us(Duration::from_secs_f64(floor.max(0.0)))
    ));
    token_rows(line, work);
}

/// The scripted agent task both ways (`tokens.mjs`), its table and the target.
fn token_rows(line: &mut impl FnMut(String), work: &Path) {
    line(String::new());
    line("A scripted agent task (read 20 workspace files, count their words, give the three longest with their first lines) run by `toolhost chat` against a scripted model both ways, the same replies every run; tokens are o200k_base (js-tiktoken):".into());
    line(String::new());
    let Some(tokenizer) = tokenizer() else {
        line(
            "(skipped: js-tiktoken is not installed; `cargo xtask bench` installs it into target/tokenizer)"
                .into(),
        );
        return;
    };
    let plugins = work.join("code-mode-task-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for p in [plugin_artifacts::FILES, plugin_artifacts::TEXT] {
        let p = Path::new(p);
        std::fs::copy(p, plugins.join(p.file_name().unwrap())).unwrap();
    }
    let json = work.join("code-mode-tokens.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/code_mode/tokens.mjs");
    let out = Command::new("node")
        .arg(script)
        .arg("--toolhost")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(&plugins)
        .arg("--tokenizer")
        .arg(&tokenizer)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("node runs tokens.mjs");
    assert!(out.status.success(), "tokens.mjs failed: {}", String::from_utf8_lossy(&out.stderr));
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        line(l.to_string());
    }
    let figures: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let fewer = figures["reduction_pct"]["tokens"].as_f64().unwrap_or(0.0);
    let trips = figures["reduction_pct"]["round_trips"].as_f64().unwrap_or(0.0);
    line(String::new());
    line(format!(
        "Target ≥ 60% fewer tokens and fewer round trips: {}.",
        if fewer >= 60.0 && trips > 0.0 { "met" } else { "**not met**" }
    ));
}

/// The `node_modules` holding js-tiktoken: `TOOLHOST_BENCH_TOKENIZER`, else `tokenizer/` in the
/// target folder this bench was built in or in the workspace's (where `cargo xtask bench` puts it).
fn tokenizer() -> Option<PathBuf> {
    let exe = std::env::current_exe().unwrap_or_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::var_os("TOOLHOST_BENCH_TOKENIZER")
        .map(PathBuf::from)
        .into_iter()
        .chain(exe.ancestors().skip(1).map(|d| d.join("tokenizer/node_modules")))
        .chain([root.join("target/tokenizer/node_modules")])
        .find(|d| d.join("js-tiktoken/package.json").is_file())
}

/// A host serving `text` with code mode on (confirming nothing: no tool here is dangerous).
pub(super) fn host(work: &Path) -> Toolhost {
    let plugins = work.join("code-mode-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    let mut config =
        Config { plugins_dir: plugins, cache_dir: Some(work.join("code-mode-cache")), ..Config::default() };
    config.code_mode.enabled = true;
    config.code_mode.max_calls = INNER as u32;
    let runtime = Runtime::for_config(&config).expect("engine");
    let registry = Registry::load(&runtime, &config).expect("registry");
    Toolhost::from_parts(runtime, Arc::new(config), registry, Arc::new(AlwaysConfirm))
}

//! toolhost benchmarks (`cargo xtask bench`, or `cargo bench -p toolhost --bench bench`).
//!
//! Prints a Markdown report of medians and ratios, every figure measured in this run beside
//! its baseline (a native function call, raw wasmtime instantiate+call), because shared
//! machines are noisy and absolute numbers from another run mean little.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost::config::Config;
use toolhost::executor::AlwaysConfirm;
use toolhost::manifest::FsMode;
use toolhost::registry::Registry;
use toolhost::reload::Reloader;
use toolhost::runtime::{PluginPre, Runtime};
use toolhost::{ToolCall, Toolhost};
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Store data for the raw-wasmtime floor: just WASI and a no-op log, no toolhost code.
struct Raw {
    wasi: WasiCtx,
    table: ResourceTable,
}
impl WasiView for Raw {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}
impl toolhost::runtime::toolhost::plugin::host::Host for Raw {
    fn log(&mut self, _level: toolhost::runtime::Level, _message: String) {}
}

struct Stats {
    p50: Duration,
    p99: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Stats { p50: at(0.5), p99: at(0.99) }
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Ten distinct plugins: copies of `text.wasm` whose manifest name is rewritten in place
/// (same length, so the binary stays valid) — distinct content, distinct plugin names.
fn ten_plugins(dir: &Path) {
    let text = std::fs::read(plugin_artifacts::TEXT).unwrap();
    let needle = br#""name":"text""#;
    let at = text.windows(needle.len()).position(|w| w == needle).expect("manifest name in text.wasm");
    for i in 0..10 {
        let mut bytes = text.clone();
        bytes[at..at + needle.len()].copy_from_slice(format!(r#""name":"tex{i}""#).as_bytes());
        std::fs::write(dir.join(format!("tex{i}.wasm")), bytes).unwrap();
    }
}

async fn sample<F, Fut>(n: usize, mut f: F) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..n / 10 {
        f().await; // warm-up
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        out.push(t.elapsed());
    }
    out
}

fn main() {
    let mut report = String::new();
    let mut line = |s: String| {
        println!("{s}");
        report.push_str(&s);
        report.push('\n');
    };
    let quick = std::env::var_os("TOOLHOST_BENCH_QUICK").is_some();
    let n = if quick { 300 } else { 3000 };

    let rss_start = rss_kib("VmRSS:");
    let work = tempfile::tempdir().unwrap();
    let plugins = work.path().join("plugins");
    let ws = work.path().join("ws");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    std::fs::copy(plugin_artifacts::FILES, plugins.join("files.wasm")).unwrap();
    std::fs::write(ws.join("4k.txt"), "x".repeat(4096)).unwrap();
    let mut config = Config { plugins_dir: plugins.clone(), cache_dir: None, ..Config::default() };
    config.set_workspace(&ws);
    config.grant_workspace("files", FsMode::ReadOnly);
    let runtime = Runtime::for_config(&config).unwrap();
    let registry = Registry::load(&runtime, &config).unwrap();
    let host =
        Arc::new(Toolhost::from_parts(runtime.clone(), Arc::new(config), registry, Arc::new(AlwaysConfirm)));
    let tokio_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

    line("## Per-call latency (single caller)".into());
    line(String::new());
    line("| what | p50 | p99 | p50 ÷ raw wasmtime p50 |".into());
    line("|---|---|---|---|".into());

    // Floor 1: a native Rust function doing what `echo` does.
    let native = {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let s = std::hint::black_box(String::from("hello"));
            std::hint::black_box(s.clone());
            v.push(t.elapsed());
        }
        stats(v)
    };

    // Floor 2: raw wasmtime, InstancePre::instantiate + the export call, no toolhost code.
    let mut linker = Linker::<Raw>::new(&runtime.engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
    toolhost::runtime::toolhost::plugin::host::add_to_linker::<Raw, HasSelf<Raw>>(&mut linker, |s| s)
        .unwrap();
    let component =
        wasmtime::component::Component::new(&runtime.engine, std::fs::read(plugin_artifacts::TEXT).unwrap())
            .unwrap();
    let pre = PluginPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
    let engine = runtime.engine.clone();
    let raw = tokio_rt.block_on(sample(n, || {
        let pre = &pre;
        let engine = &engine;
        async move {
            let mut store =
                Store::new(engine, Raw { wasi: WasiCtx::builder().build(), table: ResourceTable::new() });
            store.set_epoch_deadline(u64::MAX / 2);
            let inst = pre.instantiate_async(&mut store).await.unwrap();
            let out = inst
                .toolhost_plugin_tools()
                .call_call(&mut store, "echo", &["hello".to_string()])
                .await
                .unwrap();
            assert_eq!(out.as_deref(), Ok("hello"));
        }
    }));
    let raw = stats(raw);
    let ratio = |s: &Stats| format!("{:.2}×", s.p50.as_secs_f64() / raw.p50.as_secs_f64());
    line(format!(
        "| native Rust fn (floor) | {} | {} | {} |",
        us(native.p50),
        us(native.p99),
        ratio(&native)
    ));
    line(format!("| raw wasmtime instantiate + call (floor) | {} | {} | 1.00× |", us(raw.p50), us(raw.p99)));

    let mut through = |label: &str, call: ToolCall| {
        let h = host.clone();
        let s = stats(tokio_rt.block_on(sample(n, || {
            let h = h.clone();
            let call = call.clone();
            async move {
                let o = h.call(&call).await;
                assert!(o.success, "{o:?}");
            }
        })));
        line(format!("| {label} | {} | {} | {} |", us(s.p50), us(s.p99), ratio(&s)));
        s
    };
    through("toolhost executor: `echo(\"hello\")`", ToolCall::new("echo", ["hello"]));
    through("toolhost executor: `read` of a 4 KiB file", ToolCall::new("read", ["4k.txt"]));
    through(
        "toolhost executor: `split_task` with a JSON arg",
        ToolCall::new(
            "split_task",
            ["Launch", r#"[{"title": "design, review", "days": 2}, {"title": "ship", "days": 1}]"#],
        ),
    );

    // The disk quota's cost on the 4 KiB write path (issue #14): the same `write` call through
    // the executor, on an engine with the quota (as every host has it) and on one without.
    let write_4k = "x".repeat(4096);
    let mut quota_rows = Vec::new();
    for disk_quota in [false, true] {
        let mut cfg = Config { plugins_dir: plugins.clone(), cache_dir: None, ..Config::default() };
        cfg.set_workspace(&ws);
        cfg.grant_workspace("files", FsMode::ReadWrite);
        let pool =
            toolhost::runtime::Pool { concurrent_calls: cfg.concurrency, max_memory_mb: cfg.max_memory_mb() };
        let rt = Runtime::with_disk_quota(cfg.stack_kb, None, Some(pool), disk_quota).unwrap();
        let reg = Registry::load(&rt, &cfg).unwrap();
        let h = Arc::new(Toolhost::from_parts(rt, Arc::new(cfg), reg, Arc::new(AlwaysConfirm)));
        let call = ToolCall::new("write", ["out-4k.txt", write_4k.as_str()]);
        let s = stats(tokio_rt.block_on(sample(n, || {
            let h = h.clone();
            let call = call.clone();
            async move {
                let o = h.call(&call).await;
                assert!(o.success, "{o:?}");
            }
        })));
        quota_rows.push(s);
    }
    let (off, on) = (&quota_rows[0], &quota_rows[1]);
    line(format!(
        "| `write` of 4 KiB, no disk quota (engine without it) | {} | {} | {} |",
        us(off.p50),
        us(off.p99),
        ratio(off)
    ));
    line(format!(
        "| `write` of 4 KiB with the disk quota (p50 {:+.1}% vs without; target within 5%) | {} | {} | {} |",
        (on.p50.as_secs_f64() / off.p50.as_secs_f64() - 1.0) * 100.0,
        us(on.p50),
        us(on.p99),
        ratio(on)
    ));

    line(String::new());
    line("## Throughput (`echo`, calls/s)".into());
    line(String::new());
    line("| callers | runtime workers | calls/s |".into());
    line("|---|---|---|".into());
    let total = if quick { 2000 } else { 20_000 };
    for (workers, callers) in [(1usize, 1usize), (1, 8), (2, 8), (2, 50)] {
        let rt =
            tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().unwrap();
        let h = host.clone();
        let per = total / callers;
        let t = Instant::now();
        rt.block_on(async move {
            let tasks: Vec<_> = (0..callers)
                .map(|_| {
                    let h = h.clone();
                    tokio::spawn(async move {
                        let call = ToolCall::new("echo", ["hello"]);
                        for _ in 0..per {
                            assert!(h.call(&call).await.success);
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        let rate = (per * callers) as f64 / t.elapsed().as_secs_f64();
        line(format!("| {callers} | {workers} | {rate:.0} |"));
    }

    line(String::new());
    line("## Memory".into());
    line(String::new());
    let ten = work.path().join("ten");
    std::fs::create_dir_all(&ten).unwrap();
    ten_plugins(&ten);
    let ten_cfg = Config { plugins_dir: ten.clone(), cache_dir: None, ..Config::default() };
    let before = rss_kib("VmRSS:");
    let ten_host = Arc::new(Toolhost::load(ten_cfg, Arc::new(AlwaysConfirm)).unwrap());
    let idle = rss_kib("VmRSS:");
    let h = ten_host.clone();
    tokio_rt.block_on(async move {
        let tasks: Vec<_> = (0..50)
            .map(|i| {
                let h = h.clone();
                tokio::spawn(async move {
                    for _ in 0..20 {
                        let o = h
                            .call(&ToolCall::new(
                                "split_task",
                                [format!("task {i}"), r#"[{"title": "a", "days": 1}]"#.into()],
                            ))
                            .await;
                        assert!(o.success);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let peak = rss_kib("VmHWM:");
    line("| what | RSS |".into());
    line("|---|---|".into());
    line(format!("| process at start of the benchmark | {} MiB |", rss_start / 1024));
    line(format!(
        "| 10 plugins loaded, idle (increase over before loading) | {} MiB (+{} MiB) |",
        idle / 1024,
        idle.saturating_sub(before) / 1024
    ));
    line(format!("| peak so far, after 50 concurrent callers × 20 calls | {} MiB |", peak / 1024));

    line(String::new());
    line("## Start-up and scanning".into());
    line(String::new());
    line("| what | time | ratio |".into());
    line("|---|---|---|".into());
    let exe = env!("CARGO_BIN_EXE_toolhost");
    let cache = work.path().join("cache");
    let first_call = |fresh_cache: bool| -> Duration {
        if fresh_cache {
            let _ = std::fs::remove_dir_all(&cache);
        }
        let t = Instant::now();
        let out = std::process::Command::new(exe)
            .env("XDG_CACHE_HOME", &cache)
            .args(["--plugins"])
            .arg(&ten)
            .args(["call", "count_words", "a b c"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        t.elapsed()
    };
    let runs = if quick { 1 } else { 3 };
    let cold = stats((0..runs).map(|_| first_call(true)).collect());
    first_call(false);
    let warm = stats((0..runs * 3).map(|_| first_call(false)).collect());
    line(format!(
        "| process start → first call served, 10 plugins, cold compile cache | {} | 1.00× |",
        ms(cold.p50)
    ));
    line(format!(
        "| process start → first call served, 10 plugins, warm compile cache | {} | {:.1}× faster |",
        ms(warm.p50),
        cold.p50.as_secs_f64() / warm.p50.as_secs_f64()
    ));

    let hundred = work.path().join("hundred");
    std::fs::create_dir_all(&hundred).unwrap();
    let text = std::fs::read(plugin_artifacts::TEXT).unwrap();
    for i in 0..100 {
        std::fs::write(hundred.join(format!("p{i:03}.wasm")), &text).unwrap();
    }
    let scans: Vec<Duration> = (0..if quick { 3 } else { 20 })
        .map(|_| {
            let t = Instant::now();
            let (found, _) = toolhost::discovery::scan(&hundred, 64 << 20).unwrap();
            for c in &found {
                toolhost::manifest::read(&c.bytes).unwrap();
            }
            t.elapsed()
        })
        .collect();
    let scan = stats(scans);
    line(format!(
        "| manifest scan of 100 plugin files (read + parse + validate, no compilation) | {} ({} per plugin) | — |",
        ms(scan.p50),
        us(scan.p50 / 100)
    ));

    line(String::new());
    line("## Hot reload".into());
    line(String::new());
    let reload_dir = work.path().join("reload");
    std::fs::create_dir_all(&reload_dir).unwrap();
    let debounce = Duration::from_millis(100);
    let rcfg = Arc::new(Config { plugins_dir: reload_dir.clone(), cache_dir: None, ..Config::default() });
    let rhost =
        Toolhost::from_parts(runtime.clone(), rcfg.clone(), Registry::default(), Arc::new(AlwaysConfirm));
    let (v1, v2) = (
        std::fs::read(plugin_artifacts::VERSIONED).unwrap(),
        std::fs::read(plugin_artifacts::VERSIONED_V2).unwrap(),
    );
    let samples: Vec<(Duration, bool)> = tokio_rt.block_on(async {
        let reloader = Reloader::new(runtime.clone(), rcfg.clone(), rhost.registry.clone());
        let _watch = reloader.watch(debounce).unwrap();
        let mut out = Vec::new();
        for i in 0..if quick { 4 } else { 10 } {
            let (bytes, want) = if i % 2 == 0 { (&v1, "v1") } else { (&v2, "v2") };
            let t = Instant::now();
            std::fs::write(reload_dir.join("versioned.wasm"), bytes).unwrap();
            loop {
                let o = rhost.call(&ToolCall::new("which", Vec::<String>::new())).await;
                if o.data.as_deref() == Some(want) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                assert!(t.elapsed() < Duration::from_secs(60), "reload never happened");
            }
            out.push((t.elapsed(), i < 2));
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        out
    });
    let first_compiles: Vec<Duration> = samples.iter().filter(|(_, f)| *f).map(|(d, _)| *d).collect();
    let cached: Vec<Duration> = samples.iter().filter(|(_, f)| !*f).map(|(d, _)| *d).collect();
    line("| what | median | debounce |".into());
    line("|---|---|---|".into());
    line(format!(
        "| write of a changed plugin → first call served by it (first time: compile included) | {} | {} |",
        ms(stats(first_compiles).p50),
        ms(debounce)
    ));
    line(format!(
        "| the same, version already compiled once (in-memory code cache) | {} | {} |",
        ms(stats(cached).p50),
        ms(debounce)
    ));

    if let Some(out) = std::env::var_os("TOOLHOST_BENCH_OUT") {
        std::fs::write(PathBuf::from(out), report).unwrap();
    }
}

//! What one call of a plugin costs, phase by phase (the `languages` section's breakdown):
//! raw wasmtime on an engine configured as toolhost's (the pooling allocator with a given
//! [`Tuning`]), a fresh store and instance per call as in the host, timed in three phases —
//! `instantiate` (slot allocation, the memory image mapped, the component's start functions),
//! the guest's `call` export, and the drop of the store (where the pool resets the slot:
//! `PAGEMAP_SCAN` and `memcpy`/`memset` of the dirty pages it keeps resident, `madvise` of the
//! rest) — with the page faults of each phase, the linear memory the call touched and left
//! private (what the reset must restore), and whether the memory was mapped from a
//! copy-on-write image.

use super::Raw;
use std::time::{Duration, Instant};
use toolhost_core::engine::{Pool, Tuning};
use wasmtime::Store;
use wasmtime::component::{HasSelf, ResourceTable};
use wasmtime_wasi::WasiCtx;

/// One plugin's per-call figures on one engine.
pub struct Breakdown {
    /// p50 of each phase: instantiate, guest call, store drop (slot reset).
    pub phases: [Duration; 3],
    /// p50 of the three together.
    pub total: Duration,
    /// p50 of a second `call` on the same instance: the guest's own work without what a fresh
    /// instance's first call adds (its pages faulted in, the toolchain runtime's first-call
    /// setup). Not how the host calls (every call gets a fresh instance): a bound only.
    pub again: Duration,
    /// Page faults per call in each phase (the whole process, `/proc/self/stat`).
    pub faults: [f64; 3],
    /// KiB of the guest's linear memory referenced by one call (read or written; `Referenced`
    /// of the slot's mappings after `clear_refs`).
    pub touched_kib: u64,
    /// KiB of the guest's linear memory private after one call (`Anonymous` of the slot's
    /// mappings: pages written, copied from the image or zero-filled): what the reset restores.
    pub private_kib: u64,
    /// Runs of adjacent private pages in the guest's memory after one call: wasmtime's reset
    /// restores at most 32 of them (`PAGEMAP_SCAN` with a fixed 32-region buffer) and
    /// `madvise`s everything after the 32nd, whatever the keep-resident size.
    pub private_runs: u64,
    /// KiB of the slot's memory mapped from a copy-on-write image file (`memfd` or the `.cwasm`
    /// of the compile cache); 0: no image, the data segments were copied at instantiation.
    pub image_kib: u64,
}

/// Link every `wasi:keyvalue` import of `component` to a function that traps. Only those:
/// wasmtime's `define_unknown_imports_as_traps` also stubs a WASI import at a newer patch
/// version than wasmtime-wasi's (`wasi:cli/environment@0.2.9`), shadowing the semver match the
/// linker would otherwise make.
fn stub_keyvalue(
    engine: &wasmtime::Engine,
    linker: &mut wasmtime::component::Linker<Raw>,
    component: &wasmtime::component::Component,
) {
    use wasmtime::component::types::ComponentItem;
    for (name, import) in component.component_type().imports(engine) {
        let ComponentItem::ComponentInstance(instance) = import.ty else { continue };
        if !name.starts_with("wasi:keyvalue/") {
            continue;
        }
        let mut stubs = linker.instance(name).unwrap();
        for (item, export) in instance.exports(engine) {
            match export.ty {
                ComponentItem::ComponentFunc(_) => stubs
                    .func_new(item, |_, _, _, _| {
                        Err(wasmtime::Error::msg("the bench links no key-value store"))
                    })
                    .unwrap(),
                ComponentItem::Resource(_) => stubs
                    .resource(item, wasmtime::component::ResourceType::host::<()>(), |_, _| Ok(()))
                    .unwrap(),
                _ => {}
            }
        }
    }
}

/// The engine and linked component of one plugin.
pub struct Raw1 {
    engine: wasmtime::Engine,
    pre: toolhost_core::engine::PluginPre<Raw>,
    tool: String,
    arg: String,
}

impl Raw1 {
    pub fn new(stack_kb: usize, pool: Pool, tuning: Tuning, component: &[u8], tool: &str, arg: &str) -> Raw1 {
        let (engine, mut linker) = super::raw_engine(stack_kb, pool, tuning);
        // The SDKs' other host interfaces, never called by the word counter.
        toolhost_core::bindings::http::add_to_linker::<Raw, HasSelf<Raw>>(&mut linker, |s| s).unwrap();
        toolhost_core::bindings::process::add_to_linker::<Raw, HasSelf<Raw>>(&mut linker, |s| s).unwrap();
        let component = wasmtime::component::Component::new(&engine, component).unwrap();
        // The key-value store the Python and JavaScript SDKs import (#59), stubbed the same way.
        stub_keyvalue(&engine, &mut linker, &component);
        let pre = toolhost_core::engine::PluginPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
        Raw1 { engine, pre, tool: tool.into(), arg: arg.into() }
    }

    fn store(&self) -> Store<Raw> {
        let wasi = WasiCtx::builder().allow_blocking_current_thread(true).build();
        let mut store = Store::new(&self.engine, Raw { wasi, table: ResourceTable::new(), limits: None });
        store.set_epoch_deadline(u64::MAX / 2);
        store
    }

    /// One call, with a hook after instantiation and after the guest returned.
    async fn call(&self, mut mark: impl FnMut(usize)) {
        let mut store = self.store();
        let inst = self.pre.instantiate_async(&mut store).await.unwrap();
        mark(0);
        let out = inst
            .toolhost_plugin_tools()
            .call_call(&mut store, &self.tool, std::slice::from_ref(&self.arg))
            .await
            .unwrap();
        assert!(out.as_deref().is_ok_and(|o| o.contains('3')), "{}: {out:?}", self.tool);
        mark(1);
        drop(store);
        mark(2);
    }

    /// Measure `n` calls (after a warm-up).
    pub fn measure(&self, rt: &tokio::runtime::Runtime, n: usize) -> Breakdown {
        rt.block_on(async {
            for _ in 0..n / 10 + 2 {
                self.call(|_| {}).await;
            }
            // Times of each phase.
            let mut phases: [Vec<Duration>; 3] = Default::default();
            let mut total = Vec::with_capacity(n);
            for _ in 0..n {
                let t0 = Instant::now();
                let mut last = t0;
                self.call(|i| {
                    let now = Instant::now();
                    phases[i].push(now - last);
                    last = now;
                })
                .await;
                total.push(t0.elapsed());
            }
            // A second call on the same instance.
            let mut again = Vec::with_capacity(n / 4 + 1);
            for _ in 0..n / 4 + 1 {
                let mut store = self.store();
                let inst = self.pre.instantiate_async(&mut store).await.unwrap();
                let tools = inst.toolhost_plugin_tools();
                let args = std::slice::from_ref(&self.arg);
                tools.call_call(&mut store, &self.tool, args).await.unwrap().unwrap();
                let t = Instant::now();
                tools.call_call(&mut store, &self.tool, args).await.unwrap().unwrap();
                again.push(t.elapsed());
            }
            // Faults of each phase (reading /proc costs time, so in a pass of its own).
            let k = (n / 5).clamp(20, 200);
            let mut faults = [0i64; 3];
            for _ in 0..k {
                let mut last = faults_now();
                self.call(|i| {
                    let now = faults_now();
                    faults[i] += now - last;
                    last = faults_now();
                })
                .await;
            }
            // Memory touched and left private by one call (median of a few).
            let (mut touched, mut private, mut image, mut runs) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..5 {
                let _ = std::fs::write("/proc/self/clear_refs", "1");
                let mut store = self.store();
                let inst = self.pre.instantiate_async(&mut store).await.unwrap();
                inst.toolhost_plugin_tools()
                    .call_call(&mut store, &self.tool, std::slice::from_ref(&self.arg))
                    .await
                    .unwrap()
                    .unwrap();
                let slot = touched_slot();
                drop(store);
                touched.push(slot.0);
                private.push(slot.1);
                image.push(slot.2);
                runs.push(slot.3);
            }
            let p50 = |v: Vec<Duration>| super::stats(v).p50;
            let [a, b, c] = phases;
            Breakdown {
                phases: [p50(a), p50(b), p50(c)],
                total: p50(total),
                again: p50(again),
                faults: faults.map(|f| f as f64 / k as f64),
                touched_kib: super::median(touched),
                private_kib: super::median(private),
                image_kib: super::median(image),
                private_runs: super::median(runs),
            }
        })
    }
}

impl toolhost_core::bindings::http::Host for Raw {
    async fn send(
        &mut self,
        _req: toolhost_core::bindings::http::Request,
    ) -> Result<toolhost_core::bindings::http::Response, String> {
        Err("no network in the benchmark".into())
    }
}

impl toolhost_core::bindings::process::Host for Raw {
    async fn run(
        &mut self,
        _program: String,
        _args: Vec<String>,
    ) -> wasmtime::Result<Result<toolhost_core::bindings::process::Output, String>> {
        Ok(Err("no processes in the benchmark".into()))
    }
}

/// Page faults (minor + major) of the whole process so far.
fn faults_now() -> i64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<i64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    f.get(7).copied().unwrap_or(0) + f.get(9).copied().unwrap_or(0)
}

/// `TOOLHOST_BENCH_LANG_PROFILE=FILE.wasm:TOOL`: call TOOL of FILE (`a b c`) on the host's
/// engine configuration for 5 s (`TOOLHOST_BENCH_LANG_SECS`) and stop (run under `perf record` to see where a Python or
/// JavaScript call's time goes). Whether it ran.
pub fn profile_from_env() -> bool {
    let Ok(spec) = std::env::var("TOOLHOST_BENCH_LANG_PROFILE") else { return false };
    let (file, tool) = spec.rsplit_once(':').expect("TOOLHOST_BENCH_LANG_PROFILE=FILE.wasm:TOOL");
    let config = toolhost_core::settings::Config::default();
    let pool = Pool { concurrent_calls: config.concurrency, max_memory_mb: config.max_memory_mb() };
    let tuning = match std::env::var("TOOLHOST_BENCH_LANG_KEEP_MB") {
        Ok(mb) => Tuning {
            keep_resident: mb.parse::<usize>().unwrap() << 20,
            pagemap_scan: std::env::var_os("TOOLHOST_BENCH_LANG_NO_SCAN").is_none(),
            ..Tuning::for_this_machine()
        },
        Err(_) => Tuning::for_this_machine(),
    };
    let raw = Raw1::new(config.stack_kb, pool, tuning, &std::fs::read(file).unwrap(), tool, "a b c");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let secs = std::env::var("TOOLHOST_BENCH_LANG_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let until = Instant::now() + Duration::from_secs(secs);
    let mut calls = 0u64;
    rt.block_on(async {
        while Instant::now() < until {
            raw.call(|_| {}).await;
            calls += 1;
        }
    });
    let b = raw.measure(&rt, 200);
    eprintln!(
        "{calls} calls in {secs} s; p50 instantiate {:?} call {:?} (again {:?}) drop {:?}; faults {:?}; touched {} KiB private {} KiB in {} runs, image {} KiB",
        b.phases[0],
        b.phases[1],
        b.again,
        b.phases[2],
        b.faults,
        b.touched_kib,
        b.private_kib,
        b.private_runs,
        b.image_kib
    );
    true
}

/// One mapping of `/proc/self/smaps`.
struct Vma {
    start: u64,
    end: u64,
    accessible: bool,
    image: bool,
    referenced: u64,
    anonymous: u64,
}

fn smaps() -> Vec<Vma> {
    let text = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut out: Vec<Vma> = Vec::new();
    for l in text.lines() {
        let mut words = l.split_whitespace();
        let first = words.next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-')
            && let (Ok(start), Ok(end)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16))
        {
            let perms = words.next().unwrap_or("");
            // The memory image: a `memfd` wasmtime made, or the compile cache's file.
            let image = l.contains("wasm-memory-image") || l.ends_with(".cwasm");
            out.push(Vma {
                start,
                end,
                accessible: perms.starts_with("rw"),
                image,
                referenced: 0,
                anonymous: 0,
            });
            continue;
        }
        let kib = || l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if let Some(v) = out.last_mut() {
            if first == "Referenced:" {
                v.referenced = kib();
            } else if first == "Anonymous:" {
                v.anonymous = kib();
            }
        }
    }
    out
}

/// (referenced KiB, private KiB, image-mapped KiB, runs of private pages) of the guest memories referenced since the
/// last `clear_refs`: each run of adjacent accessible mappings holding a memory image and
/// referenced since (other slots, of other engines, are idle). Without an image mapped the
/// slot cannot be told from the host's own anonymous memory: (0, 0, 0) then.
fn touched_slot() -> (u64, u64, u64, u64) {
    let vmas = smaps();
    let (mut touched, mut private, mut image, mut runs) = (0, 0, 0, 0);
    let mut i = 0;
    while i < vmas.len() {
        let mut j = i + 1;
        while j < vmas.len() && vmas[j].start == vmas[j - 1].end && vmas[j].accessible == vmas[i].accessible {
            j += 1;
        }
        let run = &vmas[i..j];
        if run[0].accessible && run.iter().any(|v| v.image) && run.iter().any(|v| v.referenced > 0) {
            touched += run.iter().map(|v| v.referenced).sum::<u64>();
            private += run.iter().map(|v| v.anonymous).sum::<u64>();
            image += run.iter().filter(|v| v.image).map(|v| (v.end - v.start) / 1024).sum::<u64>();
            runs += private_runs(run[0].start, run[run.len() - 1].end);
        }
        i = j;
    }
    (touched, private, image, runs)
}

/// Runs of adjacent pages in `start..end` that are present and not file-backed (the pages
/// wasmtime's reset finds with `PAGEMAP_SCAN`), from `/proc/self/pagemap`.
fn private_runs(start: u64, end: u64) -> u64 {
    use std::io::{Read, Seek, SeekFrom};
    let page = 4096;
    let Ok(mut f) = std::fs::File::open("/proc/self/pagemap") else { return 0 };
    let mut buf = vec![0u8; ((end - start) / page * 8) as usize];
    if f.seek(SeekFrom::Start(start / page * 8)).is_err() || f.read_exact(&mut buf).is_err() {
        return 0;
    }
    let (mut runs, mut inside) = (0, false);
    for e in buf.chunks_exact(8) {
        let e = u64::from_le_bytes(e.try_into().unwrap());
        let private = e >> 63 & 1 == 1 && e >> 61 & 1 == 0;
        if private && !inside {
            runs += 1;
        }
        inside = private;
    }
    runs
}

/// RSS of a `toolhost serve --mcp` process serving the plugins in `dir` (the compile cache in
/// `cache` already warm): (after `tools/list`, idle; after one call of `tool`). The memory one
/// loaded plugin costs is the difference to the same with an empty folder.
pub fn served_rss_kib(
    exe: &str,
    dir: &std::path::Path,
    cache: &std::path::Path,
    tool: Option<&str>,
) -> (u64, u64) {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let state = cache.join("state");
    let mut child = Command::new(exe)
        .env("XDG_CACHE_HOME", cache)
        .env("XDG_STATE_HOME", &state)
        .arg("--plugins")
        .arg(dir)
        .args(["serve", "--mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |body: String, id: Option<u32>| {
        stdin.write_all(format!("{body}\n").as_bytes()).unwrap();
        let Some(id) = id else { return String::new() };
        let want = format!("\"id\":{id}");
        loop {
            let mut l = String::new();
            if stdout.read_line(&mut l).unwrap() == 0 {
                panic!("toolhost serve --mcp ({}) closed its output", dir.display());
            }
            if l.contains(&want) {
                return l;
            }
        }
    };
    ask(super::MCP_INITIALIZE.into(), Some(0));
    ask(super::MCP_INITIALIZED.into(), None);
    ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.into(), Some(1));
    let rss = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let idle = rss();
    let called = match tool {
        Some(tool) => {
            let answer = ask(
                format!(
                    r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":"a b c"}}}}}}"#
                ),
                Some(2),
            );
            assert!(answer.contains("\"isError\":false") || !answer.contains("isError"), "{tool}: {answer}");
            rss()
        }
        None => idle,
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    (idle, called)
}

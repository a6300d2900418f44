//! The wasmtime side: one shared [`Engine`] per process (component model, epoch interruption),
//! the single host-side `bindgen!` of `wit/`, compilation of a plugin into an `InstancePre`,
//! and the epoch ticker that turns wall-clock time into deadlines.

use crate::sandbox::HostState;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config as WasmConfig, Engine};

pub use crate::bindings::Plugin as PluginWorld;
pub use crate::bindings::PluginPre;
pub use crate::bindings::host::Level;
use crate::bindings::{completion, prompts, resources};

/// A plugin's code linked against the host's imports: its `tools` export ready to instantiate,
/// and where its other exports are — each `None` when the component has none (one of world
/// `plugin`). Looked up once, when the code links, rather than on every read, prompt or
/// completion: each lookup finds names in the component's exports.
pub struct Linked {
    pub tools: PluginPre<HostState>,
    pub resources: Option<resources::GuestIndices>,
    pub prompts: Option<prompts::GuestIndices>,
    pub completion: Option<completion::GuestIndices>,
}

impl Linked {
    fn new(tools: PluginPre<HostState>) -> Linked {
        let pre = tools.instance_pre();
        Linked {
            resources: resources::GuestIndices::new(pre).ok(),
            prompts: prompts::GuestIndices::new(pre).ok(),
            completion: completion::GuestIndices::new(pre).ok(),
            tools,
        }
    }
}

/// Length of one epoch tick: deadlines are rounded up to it.
pub const TICK: Duration = Duration::from_millis(5);

/// How much later than [`TICK`] the ticker may wake: one scheduler tick of a 250 Hz kernel.
/// On a busy CPU the kernel then runs the ticker's wake-up from an interrupt it takes anyway
/// (its own tick) instead of interrupting the call running there once more: a timer interrupt
/// costs a call on a virtual machine 10–30 µs, and one every 5 ms, landing on the calls of a
/// server pinned to one CPU, doubled their p99 (issue #33). A tick is then 5–9 ms long.
const TICK_SLACK: Duration = Duration::from_millis(4);

/// Let this thread's timers fire up to [`TICK_SLACK`] late, with other timers' interrupts.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn coalesce_timer_wakeups() {
    // SAFETY: `PR_SET_TIMERSLACK` takes one integer and sets the calling thread's timer slack;
    // it reads and writes no memory of this process.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, TICK_SLACK.as_nanos() as libc::c_ulong) };
}

#[cfg(not(target_os = "linux"))]
fn coalesce_timer_wakeups() {}

/// The process-wide engine, linker and epoch ticker.
pub struct Runtime {
    pub engine: Engine,
    /// Built on first use (the first component prepared: the link thread, or the first call),
    /// so a first `tools/list`, answered from manifests, never waits for it.
    linker: std::sync::OnceLock<Linker<HostState>>,
    /// Whether the linker charges writes to granted directories to a call's disk quota.
    disk_quota: bool,
    ticker_stop: Arc<AtomicBool>,
    /// Compiled components by SHA-256 of their bytes: an unchanged file is never recompiled.
    compiled: Mutex<HashMap<[u8; 32], Component>>,
    /// Where compiled code is kept across restarts (the host's own directory, never the
    /// plugins folder), keyed by engine compatibility and content hash. `None`: memory only.
    disk_cache: Option<PathBuf>,
}

/// Pooling-allocator sizing.
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    /// Calls that may run at once.
    pub concurrent_calls: u32,
    /// The largest memory limit any call may have.
    pub max_memory_mb: u64,
}

/// How the pooling allocator resets a slot's memory, tables and fiber stack when a call ends
/// (every call still gets a fresh instance: only how the zeroing is done differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Bytes of each linear memory, table and async stack reset with `memset` and kept
    /// resident, instead of `madvise`d away (which costs a page fault per touched page on the
    /// next call, and TLB-shootdown IPIs to the other cores).
    pub keep_resident: usize,
    /// Linux ≥ 6.7: find the pages a call dirtied with `PAGEMAP_SCAN` and reset only those.
    pub pagemap_scan: bool,
    /// Decommits queued before one batched `madvise`.
    pub decommit_batch: usize,
}

impl Tuning {
    /// wasmtime's defaults: everything `madvise`d, no batching.
    pub const WASMTIME_DEFAULT: Tuning = Tuning { keep_resident: 0, pagemap_scan: false, decommit_batch: 1 };
    /// What the host uses (chosen by `cargo xtask bench`, which measures it against the
    /// default and other candidates in the same run): up to 4 MiB per slot kept resident and
    /// reset by `memset` of only the pages `PAGEMAP_SCAN` finds dirty (where the kernel has it;
    /// elsewhere wasmtime falls back to `madvise`). A slot's resident memory is bounded by what
    /// its calls touched, at most 4 MiB per memory and table.
    pub const HOST: Tuning = Tuning { keep_resident: 4 << 20, pagemap_scan: true, decommit_batch: 1 };

    /// [`Tuning::HOST`] where the kernel has `PAGEMAP_SCAN` (Linux ≥ 6.7 with
    /// `/proc/self/pagemap` readable), else wasmtime's default: without the scan, keeping memory
    /// resident means a `memset` of the whole kept range on every call, which the benchmark
    /// shows is slower than `madvise` (1.7× the default floor for 1 MiB).
    pub fn for_this_machine() -> Tuning {
        if pagemap_scan_likely() { Tuning::HOST } else { Tuning::WASMTIME_DEFAULT }
    }
}

/// Whether `PAGEMAP_SCAN` can be expected: Linux 6.7 or later, and `/proc/self/pagemap` can be
/// opened (some sandboxes hide it). wasmtime checks the ioctl itself and falls back to `madvise`
/// if it fails; this only decides whether keeping pages resident is worth it.
fn pagemap_scan_likely() -> bool {
    if !cfg!(target_os = "linux") || std::fs::File::open("/proc/self/pagemap").is_err() {
        return false;
    }
    kernel_at_least(&std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default(), (6, 7))
}

/// Whether a kernel release string (`6.18.2-arch1`, `5.15.0-91-generic`) is at least `want`.
fn kernel_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= want
}

/// The engine configuration every toolhost engine uses: component model, epoch interruption,
/// the wasm stack limit (and a fiber stack to hold it), and with `pool` a pooling allocator
/// sized for that many concurrent calls, reset as `tuning` says.
pub fn engine_config(stack_kb: usize, pool: Option<Pool>, tuning: Tuning) -> WasmConfig {
    let mut cfg = WasmConfig::new();
    if let Some(pool) = pool {
        let n = pool.concurrent_calls.max(1);
        let mut p = wasmtime::PoolingAllocationConfig::new();
        // A Rust wasip2 component has a handful of core instances, one or two memories
        // and a few tables; these per-call budgets leave ample room.
        p.total_component_instances(n)
            .total_core_instances(n * 16)
            .total_memories(n * 4)
            .total_tables(n * 16)
            .total_stacks(n)
            .max_memory_size((pool.max_memory_mb as usize).saturating_mul(1024 * 1024));
        p.linear_memory_keep_resident(tuning.keep_resident)
            .table_keep_resident(tuning.keep_resident)
            .async_stack_keep_resident(tuning.keep_resident)
            .decommit_batch_size(tuning.decommit_batch.max(1))
            .pagemap_scan(if tuning.pagemap_scan { wasmtime::Enabled::Auto } else { wasmtime::Enabled::No });
        cfg.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(p));
    }
    cfg.wasm_component_model(true);
    cfg.epoch_interruption(true);
    let stack = stack_kb * 1024;
    cfg.max_wasm_stack(stack);
    // The fiber stack must hold the wasm stack plus the host frames below it.
    cfg.async_stack_size(stack + 1024 * 1024);
    cfg
}

/// Compiled components kept in memory (oldest dropped first beyond this).
const COMPILED_CACHE: usize = 256;

impl Runtime {
    /// Build the engine with an in-memory compile cache only and on-demand allocation.
    pub fn new(stack_kb: usize) -> anyhow::Result<Arc<Runtime>> {
        Self::with_options(stack_kb, None, None)
    }

    /// The engine `config` asks for: its stack limit, compile cache and an instance pool sized
    /// by [`crate::Config::pool_calls`] and the largest memory limit.
    pub fn for_config(config: &crate::Config) -> anyhow::Result<Arc<Runtime>> {
        let pool = Pool { concurrent_calls: config.pool_calls(), max_memory_mb: config.max_memory_mb() };
        Self::with_options(config.stack_kb, config.cache_dir.as_deref(), Some(pool))
    }

    /// Build the engine with a disk cache and on-demand allocation.
    pub fn with_disk_cache(stack_kb: usize, cache_dir: Option<&Path>) -> anyhow::Result<Arc<Runtime>> {
        Self::with_options(stack_kb, cache_dir, None)
    }

    /// Build the engine. `stack_kb` bounds wasm stack per call (engine-wide); compiled code is
    /// also cached under `cache_dir` so a restart does not recompile; with `pool`, instances
    /// come from a pooling allocator sized for that many concurrent calls (callers must not
    /// run more at once: the executor's semaphore sees to it).
    pub fn with_options(
        stack_kb: usize,
        cache_dir: Option<&Path>,
        pool: Option<Pool>,
    ) -> anyhow::Result<Arc<Runtime>> {
        Self::with_disk_quota(stack_kb, cache_dir, pool, true)
    }

    /// [`Runtime::with_options`], choosing whether file writes are charged to the call's disk
    /// quota. Without it (`false`) nothing bounds what a call writes: only for measuring the
    /// quota's cost (the benchmarks) — every host built from a config has it.
    pub fn with_disk_quota(
        stack_kb: usize,
        cache_dir: Option<&Path>,
        pool: Option<Pool>,
        disk_quota: bool,
    ) -> anyhow::Result<Arc<Runtime>> {
        Self::with_tuning(stack_kb, cache_dir, pool, disk_quota, Tuning::for_this_machine())
    }

    /// [`Runtime::with_disk_quota`] with the pool's slot reset set by `tuning` (the benchmarks
    /// compare the host's setting with wasmtime's default; hosts use
    /// [`Tuning::for_this_machine`]).
    pub fn with_tuning(
        stack_kb: usize,
        cache_dir: Option<&Path>,
        pool: Option<Pool>,
        disk_quota: bool,
        tuning: Tuning,
    ) -> anyhow::Result<Arc<Runtime>> {
        let cfg = engine_config(stack_kb, pool, tuning);
        let engine = Engine::new(&cfg)?;
        let ticker_stop = Arc::new(AtomicBool::new(false));
        let weak = engine.weak();
        let stop = ticker_stop.clone();
        std::thread::Builder::new().name("toolhost-epoch".into()).spawn(move || {
            coalesce_timer_wakeups();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })?;
        let disk_cache = match cache_dir {
            Some(dir) => {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                engine.precompile_compatibility_hash().hash(&mut h);
                // And by toolhost's version: what a plugin may import (the linker) can change
                // between versions, and a cache entry stands for "these bytes loaded".
                env!("CARGO_PKG_VERSION").hash(&mut h);
                let dir = dir.join(format!("engine-{:016x}", h.finish()));
                match crate::files::create_private_dir(&dir) {
                    Ok(()) => Some(dir),
                    Err(e) => {
                        tracing::warn!("compile cache disabled: cannot create {}: {e}", dir.display());
                        None
                    }
                }
            }
            None => None,
        };
        Ok(Arc::new(Runtime {
            engine,
            linker: std::sync::OnceLock::new(),
            disk_quota,
            ticker_stop,
            compiled: Mutex::default(),
            disk_cache,
        }))
    }

    /// The linker every plugin is instantiated with: WASI and each capability's interfaces.
    pub fn linker(&self) -> anyhow::Result<&Linker<HostState>> {
        if let Some(linker) = self.linker.get() {
            return Ok(linker);
        }
        let built = link(&self.engine, self.disk_quota)?;
        // A racing builder's linker is the same; the first one stays.
        Ok(self.linker.get_or_init(|| built))
    }

    /// Compile a component and link it against the host's imports. Fails with a readable
    /// message if the component imports something the host does not provide.
    /// `name` is only for progress messages.
    pub fn prepare(&self, name: &str, bytes: &[u8]) -> anyhow::Result<Linked> {
        let code = toolhost_spec::sections::code_sha256(bytes, crate::discovery::content_hash(bytes));
        self.prepare_hashed(name, &code, || Ok(bytes.into()))
    }

    /// [`Runtime::prepare`] with the SHA-256 of the code already computed (discovery computes
    /// it once per file, [`crate::discovery::Candidate::code`]; hashing is a visible part of
    /// start-up), and the bytes asked for only when they must be compiled (discovery does not
    /// keep them: cached code needs none).
    pub fn prepare_hashed<'b>(
        &self,
        name: &str,
        key: &[u8; 32],
        bytes: impl FnOnce() -> anyhow::Result<std::borrow::Cow<'b, [u8]>>,
    ) -> anyhow::Result<Linked> {
        let pre = self.compiled_then(name, key, bytes, |component| {
            Ok(PluginPre::new(self.linker()?.instantiate_pre(component)?)?)
        })?;
        Ok(Linked::new(pre))
    }

    /// A component of the host's own (the code-mode script runner), compiled once: from the
    /// compile caches like a plugin's code, linked by its owner.
    pub fn component(&self, name: &str, bytes: &[u8]) -> anyhow::Result<Component> {
        let key = crate::discovery::content_hash(bytes);
        self.compiled_then(name, &key, || Ok(bytes.into()), |c| Ok(c.clone()))
    }

    /// The component compiled from the bytes with SHA-256 `key` (cached, or compiled now),
    /// made into what `link` makes of it. Code is remembered (in memory, and when just compiled
    /// on disk) only once it links, so `is_cached` means "these bytes loaded before": deferring
    /// their linking to the first call (`registry::Code`) cannot hide a load failure.
    fn compiled_then<'b, T>(
        &self,
        name: &str,
        key: &[u8; 32],
        bytes: impl FnOnce() -> anyhow::Result<std::borrow::Cow<'b, [u8]>>,
        link: impl FnOnce(&Component) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let key = *key;
        let cached = self.compiled.lock().unwrap_or_else(|p| p.into_inner()).get(&key).cloned();
        let (component, compiled_now) = match cached {
            Some(c) => (c, false),
            None => self.load_or_compile(name, &key, bytes)?,
        };
        let linked = link(&component)?;
        {
            let mut cache = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
            if cache.len() >= COMPILED_CACHE {
                cache.clear();
            }
            cache.insert(key, component.clone());
        }
        if compiled_now {
            self.persist(&key, &component);
        }
        Ok(linked)
    }

    /// Whether code compiled from bytes with this SHA-256 is cached (in memory, or on disk for
    /// this engine and toolhost version): these bytes compiled and linked before, and preparing
    /// them again needs no compiler.
    pub fn is_cached(&self, key: &[u8; 32]) -> bool {
        if self.compiled.lock().unwrap_or_else(|p| p.into_inner()).contains_key(key) {
            return true;
        }
        self.cache_file(key).is_some_and(|path| path.is_file())
    }

    /// Where the disk cache keeps the code compiled from bytes with this SHA-256.
    fn cache_file(&self, key: &[u8; 32]) -> Option<PathBuf> {
        let dir = self.disk_cache.as_ref()?;
        Some(dir.join(format!("{}.cwasm", hex::encode(key))))
    }

    /// Load from the disk cache when this exact content was compiled before by a compatible
    /// engine, or compile (`true`: compiled now, not yet in the disk cache).
    fn load_or_compile<'b>(
        &self,
        name: &str,
        key: &[u8; 32],
        bytes: impl FnOnce() -> anyhow::Result<std::borrow::Cow<'b, [u8]>>,
    ) -> anyhow::Result<(Component, bool)> {
        let fresh = || -> anyhow::Result<Component> {
            let bytes = bytes()?;
            // Compilation is the one slow step (seconds for a large plugin): say so.
            tracing::info!("compiling {name} ({} KiB)…", bytes.len() / 1024);
            let t = std::time::Instant::now();
            let c = Component::new(&self.engine, &bytes);
            tracing::info!("compiled {name} in {:.2}s", t.elapsed().as_secs_f64());
            Ok(c?)
        };
        let Some(path) = self.cache_file(key) else { return Ok((fresh()?, true)) };
        if path.is_file() {
            // SAFETY: `deserialize_file` trusts its input to be wasmtime's own output, and maps
            // the file, so the file must not change while the code is in use. The file is in the
            // host's private cache directory (created 0700 by this process), named by the
            // SHA-256 of the plugin bytes, under a directory keyed by this engine's
            // compatibility hash; plugin folders are never read this way. Cache entries are
            // never written in place: a new one is written to a temporary name and renamed
            // over (`persist`), and an unusable one is unlinked, so a mapped file's contents stay
            // as they were. Mapping instead of reading saves copying the code twice (into a
            // buffer, then into executable memory) on every start: the issue-#16 start-up rows.
            #[allow(unsafe_code)] // the only unsafe in the host; see SAFETY above
            let loaded = unsafe { Component::deserialize_file(&self.engine, &path) };
            match loaded {
                Ok(c) => return Ok((c, false)),
                Err(e) => {
                    tracing::warn!("ignoring unusable cached code {}: {e:#}", path.display());
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        Ok((fresh()?, true))
    }

    /// Write compiled code to the disk cache: to a temporary name, then renamed over (entries
    /// are mapped by running hosts, so never written in place).
    fn persist(&self, key: &[u8; 32], component: &Component) {
        let Some(path) = self.cache_file(key) else { return };
        match component.serialize() {
            Ok(code) => {
                if let Err(e) = crate::files::write_atomic(&path, &code) {
                    tracing::warn!("cannot write compile cache {}: {e}", path.display());
                }
            }
            Err(e) => tracing::warn!("cannot serialize compiled code: {e}"),
        }
    }
}

/// The linker: WASI, then each capability's host functions (its interface, or the WASI
/// functions it shadows: the disk quota's and the file system's checks), on its own part of the
/// call's state (`capability::add_to_linker`).
fn link(engine: &Engine, disk_quota: bool) -> anyhow::Result<Linker<HostState>> {
    let mut linker = Linker::<HostState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    crate::capability::add_to_linker(&mut linker, crate::capability::LinkOptions { disk_quota })?;
    Ok(linker)
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::Runtime;

    #[test]
    fn the_linker_is_built_when_a_component_is_first_prepared_not_with_the_engine() {
        // A warm start answers `tools/list` before any component is linked: building the
        // linker with the engine would put it before that answer.
        let runtime = Runtime::with_options(512, None, None).unwrap();
        assert!(runtime.linker.get().is_none(), "the linker was built with the engine");
        let empty = wat::parse_str("(component)").unwrap();
        // No `run` export: not a plugin, but linked (against the built linker) before that is found.
        let refused = runtime.prepare("empty.wasm", &empty).err().expect("an empty component is no plugin");
        assert!(runtime.linker.get().is_some(), "prepared without a linker: {refused:#}");
    }

    /// The ticker's wake-ups may ride on the kernel's own timer interrupts (see `TICK_SLACK`).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_epoch_ticker_lets_its_wake_ups_be_late_by_the_slack() {
        let _runtime = Runtime::with_options(512, None, None).unwrap();
        let slack = super::TICK_SLACK.as_nanos().to_string();
        let tickers = || -> Vec<String> {
            let tasks = std::fs::read_dir("/proc/self/task").unwrap().flatten();
            let named = tasks.filter(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == "toolhost-epoch")
            });
            // The slack is read from `/proc/TID` (a thread's own, not its process's).
            named
                .filter_map(|t| {
                    std::fs::read_to_string(format!("/proc/{}/timerslack_ns", t.file_name().to_str()?)).ok()
                })
                .map(|s| s.trim().to_string())
                .collect()
        };
        // The thread sets its slack as it starts: give it a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut seen = tickers();
        while (seen.is_empty() || seen.iter().any(|s| *s != slack)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            seen = tickers();
        }
        assert!(!seen.is_empty() && seen.iter().all(|s| *s == slack), "ticker slacks {seen:?}, want {slack}");
    }

    #[test]
    fn kernel_releases_compare_by_major_then_minor() {
        use super::kernel_at_least as at_least;
        assert!(at_least("6.18.2-arch1-1\n", (6, 7)));
        assert!(at_least("6.7.0", (6, 7)));
        assert!(at_least("7.0", (6, 7)));
        assert!(!at_least("6.6.30-lts", (6, 7)));
        assert!(!at_least("5.15.0-91-generic", (6, 7)));
        assert!(!at_least("", (6, 7)));
    }
}

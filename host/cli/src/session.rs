//! Loading a host for a command: the plugins folder read once (`open`), or kept live while it
//! changes (`live_host`, printing each change), and the change lines as `serve` and `dev` print
//! them.

use crate::settings::Settings;
use crate::term;
use anyhow::{Result, bail};
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::engine::Runtime;
use toolhost_core::executor::Confirm;
use toolhost_core::registry::reload::{Change, Reloader, WatchFrom, WatchHandle};
use toolhost_core::registry::{ReadAhead, Registry};
use toolhost_core::{Config, Toolhost};

/// Print registry changes as they happen.
pub fn print_change(change: &Change) {
    write_change(&mut std::io::stdout().lock(), "", change);
}

/// Print registry changes on stderr (stdout belongs to a protocol), each line after
/// `toolhost: `. A closed stderr drops them (`eprintln!` would panic in the watcher).
pub fn eprint_change(change: &Change) {
    write_change(&mut std::io::stderr().lock(), "toolhost: ", change);
}

/// A change's lines in one write (stderr is unbuffered: a start with many tools would
/// otherwise make several writes per line before it serves).
fn write_change(out: &mut dyn std::io::Write, prefix: &str, change: &Change) {
    use std::fmt::Write;
    let mut text = String::new();
    for line in change.lines() {
        let _ = writeln!(text, "{prefix}{}", term::line(&line));
    }
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// A host whose registry follows the folder: initial load (printed as additions), then a watch.
pub async fn live_host(cfg: Config, debounce: Duration) -> Result<(Toolhost, Arc<Reloader>, WatchHandle)> {
    live_host_with(HostStart::begin(cfg, WatchFrom::Now), debounce, print_change).await
}

/// [`live_host`] of a start under way.
pub async fn live_host_with(
    start: HostStart,
    debounce: Duration,
    print_change: fn(&Change),
) -> Result<(Toolhost, Arc<Reloader>, WatchHandle)> {
    let (host, reloader, first) = unloaded_host(start)?;
    let watch = load_and_watch(&host, first, &reloader, debounce, print_change).await?;
    Ok((host, reloader, watch))
}

/// A host's start under way from the moment its settings are known: the plugins folder watched
/// and read on one thread, the engine built on another, while the caller sets up the rest (its
/// async runtime, its front end). [`unloaded_host`] takes both.
pub struct HostStart {
    cfg: Arc<Config>,
    ahead: ReadAhead,
    /// The thread building the engine (`None`: no thread to be had; `unloaded_host` builds it).
    engine: Option<EngineThread>,
}

/// The thread that builds the engine and then runs the first load with it: it sends the engine,
/// and is sent back the reloader to load with and where to report (no thread is started for the
/// first load: at a warm start that would be a visible part of it).
struct EngineThread {
    engine: std::sync::mpsc::Receiver<Result<Arc<Runtime>>>,
    load: std::sync::mpsc::SyncSender<(Arc<Reloader>, Loaded)>,
}

/// Where the first load reports.
type Loaded = tokio::sync::oneshot::Sender<std::io::Result<Arc<Change>>>;

impl HostStart {
    /// The start of a host whose folder is watched from `watch`.
    pub fn begin(cfg: Config, watch: WatchFrom) -> HostStart {
        let cfg = Arc::new(cfg);
        let (engine_tx, engine) = std::sync::mpsc::sync_channel(1);
        let (load, load_rx) = std::sync::mpsc::sync_channel::<(Arc<Reloader>, Loaded)>(1);
        let spawned = std::thread::Builder::new().name("toolhost-engine".into()).spawn({
            let cfg = cfg.clone();
            move || {
                let runtime = Runtime::for_config(&cfg);
                let built = runtime.is_ok();
                if engine_tx.send(runtime).is_ok()
                    && built
                    && let Ok((reloader, loaded)) = load_rx.recv()
                {
                    let _ = loaded.send(reloader.rescan());
                }
            }
        });
        // The engine's thread first: on two CPUs the thread started last waits for one (the
        // caller's own thread keeps the other), and the first load needs both. The engine takes
        // about half a millisecond; a warm read of a few plugins less (their manifests are
        // indexed), of ten about as long.
        let ahead = ReadAhead::start(cfg.clone(), watch);
        HostStart { cfg, ahead, engine: spawned.ok().map(|_| EngineThread { engine, load }) }
    }
}

/// The first load of a [`unloaded_host`], under way on the engine's thread (or a blocking one).
pub struct FirstLoad(tokio::sync::oneshot::Receiver<std::io::Result<Arc<Change>>>);

/// A host with an empty registry, the reloader that fills it, and its first load, started
/// here (so it runs while the caller sets up its front end): the first load takes what the
/// [`HostStart`]'s reading found, and the reloader's watch what changed since. Must run inside
/// a Tokio runtime.
pub fn unloaded_host(start: HostStart) -> Result<(Toolhost, Arc<Reloader>, FirstLoad)> {
    let HostStart { cfg, ahead, engine } = start;
    // A thread that ended without sending (it panicked) leaves the engine to be built here.
    let built = engine.as_ref().and_then(|t| t.engine.recv().ok());
    let (runtime, thread) = match built {
        Some(runtime) => (runtime?, engine),
        None => (Runtime::for_config(&cfg)?, None),
    };
    let host =
        Toolhost::from_parts(runtime, cfg, Registry::default(), Arc::new(toolhost_core::executor::NoConfirm));
    let reloader = Reloader::new(host.runtime.clone(), host.config.clone(), host.registry.clone());
    reloader.read_ahead(ahead);
    let (loaded, first) = tokio::sync::oneshot::channel();
    let job = (reloader.clone(), loaded);
    let unsent = match thread {
        Some(t) => t.load.send(job).err().map(|e| e.0),
        None => Some(job),
    };
    if let Some((r, loaded)) = unsent {
        tokio::task::spawn_blocking(move || {
            let _ = loaded.send(r.rescan());
        });
    }
    Ok((host, reloader, FirstLoad(first)))
}

/// The first load finished (printed as additions), then the watch.
pub async fn load_and_watch(
    host: &Toolhost,
    first: FirstLoad,
    reloader: &Arc<Reloader>,
    debounce: Duration,
    print_change: fn(&Change),
) -> Result<WatchHandle> {
    first_loaded(host, first, print_change).await?;
    watch(reloader, debounce).await
}

/// The first load finished (printed as additions).
pub async fn first_loaded(host: &Toolhost, first: FirstLoad, print_change: fn(&Change)) -> Result<()> {
    // A first load that panicked drops its sender.
    let initial =
        first.0.await.map_err(|_| anyhow::anyhow!("the first load of the plugins folder failed"))??;
    print_change(&initial);
    if host.registry.load().tools().next().is_none() {
        eprintln!("toolhost: no tools yet in {}", host.config.plugins_dir.display());
    }
    Ok(())
}

/// The watch the reading started before it read the folder (`HostStart::begin`), once it is up
/// (waited for off the async workers: it may start only after a front end's first listing,
/// `WatchFrom::FirstListing`).
pub async fn watch(reloader: &Arc<Reloader>, debounce: Duration) -> Result<WatchHandle> {
    let r = reloader.clone();
    Ok(tokio::task::spawn_blocking(move || r.watch(debounce)).await??)
}

/// A host loaded from `settings` (its core part) for a one-off command; the plugins folder must
/// exist.
pub fn open(
    settings: Settings,
    confirm: Arc<dyn Confirm>,
) -> Result<(Toolhost, toolhost_frontends::Settings)> {
    let Settings { core, frontends, flag_plugins, .. } = settings;
    if !core.plugins_dir.is_dir() {
        bail!(
            "plugins folder {} does not exist (set `plugins` in toolhost.toml or pass --plugins DIR)",
            core.plugins_dir.display()
        );
    }
    let dir = core.plugins_dir.clone();
    let host = Toolhost::load(core, confirm)?;
    crate::settings::unknown_flag_plugins(&flag_plugins, &host.registry.load(), &dir)?;
    Ok((host, frontends))
}

/// [`open`] for a command that shows no table of the plugins (`call`, `run`, `prompt`,
/// `schema`): each file that failed to load, and each tool name several plugins claim, is
/// reported once, here. The registry itself only
/// returns failures; `list` shows them in its table and `serve` as `!` lines.
pub fn open_reporting(
    settings: Settings,
    confirm: Arc<dyn Confirm>,
) -> Result<(Toolhost, toolhost_frontends::Settings)> {
    let (host, frontends) = open(settings, confirm)?;
    let registry = host.registry.load();
    for f in registry.failures() {
        tracing::warn!("skipped {f}");
    }
    for c in registry.conflicts() {
        tracing::warn!("{c}");
    }
    Ok((host, frontends))
}

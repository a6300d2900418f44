//! `toolhost dev [PATH]`: a plugin project rebuilt on every save and dropped into the plugins
//! folder, which a live registry (and any running `serve`) picks up.

use crate::args::GlobalArgs;
use crate::project::{Project, Toolchains};
use crate::session::{live_host, print_change};
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use toolhost_core::Config;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin project: a Rust crate (Cargo.toml), a Python project (pyproject.toml with
    /// [tool.toolhost], or app.py) or a JS project (package.json with "toolhost")
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Quiet time after the last source change before rebuilding
    #[arg(long, value_name = "MS", default_value_t = 150)]
    pub debounce_ms: u64,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let cfg = Settings::resolve(g)?.core;
    std::fs::create_dir_all(&cfg.plugins_dir)
        .with_context(|| format!("cannot create plugins folder {}", cfg.plugins_dir.display()))?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let r = rt.block_on(dev(cfg, &a.path, Duration::from_millis(a.debounce_ms)));
    // A build still running on the blocking pool does not hold the exit.
    rt.shutdown_timeout(Duration::from_millis(500));
    r
}

async fn dev(cfg: Config, path: &std::path::Path, debounce: Duration) -> Result<ExitCode> {
    use notify::Watcher;
    let project = Project::locate(path)?;
    let toolchains = Toolchains::from_env();
    let plugins_dir = cfg.plugins_dir.clone();
    let (_host, reloader, _watch) = live_host(cfg, debounce).await?;
    let mut changes = reloader.subscribe();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let p = project.clone();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res
            && toolhost_core::registry::reload::is_change(&ev)
            && ev.paths.iter().any(|path| p.is_source(path))
        {
            let _ = tx.send(());
        }
    })?;
    watcher.watch(project.dir(), notify::RecursiveMode::Recursive)?;
    eprintln!(
        "toolhost dev: watching {} ({}) → {} (Ctrl-C or SIGTERM to stop)",
        project.dir().display(),
        project.lang(),
        plugins_dir.display()
    );
    let build = |p: Project, t: Toolchains, dir: std::path::PathBuf| async move {
        eprintln!("toolhost dev: building {} …", p.dir().display());
        let result = tokio::task::spawn_blocking(move || {
            let built = p.build(&t)?;
            crate::project::cargo::approve_own_build(&dir, &built.manifest);
            let to = built.install(&dir)?;
            anyhow::Ok((built.seconds, to))
        })
        .await;
        match result {
            Ok(Ok((secs, to))) => eprintln!("toolhost dev: built in {secs:.1}s → {}", to.display()),
            Ok(Err(e)) => eprintln!("toolhost dev: {}", term::text(&format!("{e:#}"))),
            Err(e) => eprintln!("toolhost dev: build task failed: {e}"),
        }
    };
    // SIGTERM (a supervisor, an editor's task) ends the loop as Ctrl-C does, during a build too.
    let mut signals = toolhost_frontends::service::shutdown::Signals::install()
        .map_err(|e| anyhow::anyhow!("cannot install signal handlers: {e}"))?;
    tokio::select! {
        () = build(project.clone(), toolchains.clone(), plugins_dir.clone()) => {}
        _ = signals.recv() => return Ok(ExitCode::SUCCESS),
    }
    loop {
        tokio::select! {
            _ = signals.recv() => return Ok(ExitCode::SUCCESS),
            change = changes.recv() => {
                if let Ok(c) = change { print_change(&c) }
            }
            ev = rx.recv() => {
                if ev.is_none() { return Ok(ExitCode::SUCCESS) }
                while let Ok(Some(())) = tokio::time::timeout(debounce, rx.recv()).await {}
                tokio::select! {
                    () = build(project.clone(), toolchains.clone(), plugins_dir.clone()) => {}
                    _ = signals.recv() => return Ok(ExitCode::SUCCESS),
                }
            }
        }
    }
}

//! `toolhost dev [PATH]`: a plugin project rebuilt on every save and dropped into the plugins
//! folder, which a live registry (and any running `serve`) picks up.
//!
//! Python and JavaScript projects are installed as dev builds (`project::dev`): a runtime
//! built once, given the project's new manifest and sources on each save, so a save is live in
//! well under two seconds; `--full` builds the self-contained component instead, as `toolhost
//! build` does. Rust projects always build with cargo (incremental: fractions of a second).

use crate::args::GlobalArgs;
use crate::project::dev::DevInstall;
use crate::project::{Project, Toolchains, check_collisions};
use crate::session::{live_host, print_change};
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use toolhost_spec::manifest::Manifest;

pub const AFTER_HELP: &str = "\
A save of a file that goes into the plugin (not a test: test_*.py, *.test.js) rebuilds it. Python
and JavaScript projects run as a dev build: a runtime built once per SDK version (kept with the
toolchains) that reads the project's sources from PLUGINS/.toolhost-dev/NAME-ID/, which the host
maps read-only into the plugin's sandbox; the manifest, grants and limits are those of the built
plugin. A Python project importing a module the runtime lacks is built the full way. Use
`toolhost build` for the self-contained .wasm to ship.

Examples:
  toolhost --plugins ./plugins dev notes
  toolhost --plugins ./plugins --allow-write notes dev notes --full";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin project: a Rust crate (Cargo.toml), a Python project (pyproject.toml with
    /// [tool.toolhost], or app.py) or a JS project (package.json with "toolhost")
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Quiet time after the last source change before rebuilding
    #[arg(long, value_name = "MS", default_value_t = 150)]
    pub debounce_ms: u64,
    /// Build the self-contained component on every save (as `toolhost build`), not a dev build
    #[arg(long)]
    pub full: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let settings = Settings::resolve(g)?;
    std::fs::create_dir_all(&settings.core.plugins_dir)
        .with_context(|| format!("cannot create plugins folder {}", settings.core.plugins_dir.display()))?;
    let rt = super::async_runtime()?;
    let r = rt.block_on(dev(settings, &a.path, Duration::from_millis(a.debounce_ms), a.full));
    // A build still running on the blocking pool does not hold the exit.
    rt.shutdown_timeout(Duration::from_millis(500));
    r
}

async fn dev(settings: Settings, path: &Path, debounce: Duration, full: bool) -> Result<ExitCode> {
    use notify::Watcher;
    let project = Project::locate(path)?;
    let toolchains = Toolchains::from_env();
    let plugins_dir = settings.core.plugins_dir.clone();
    // Everything this session writes besides the plugin itself (snapshots, the build tools'
    // temporary files) goes here, and goes when the session ends.
    let scratch = tempfile::Builder::new()
        .prefix("toolhost-dev-")
        .tempdir()
        .context("cannot create a scratch folder")?;
    crate::project::set_scratch(scratch.path());
    let (host, reloader, _watch) = live_host(settings.core.clone(), debounce).await?;
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
    let build = |p: Project, t: Toolchains, dir: PathBuf, scratch: PathBuf| async move {
        eprintln!("toolhost dev: building {} …", p.dir().display());
        let result = tokio::task::spawn_blocking(move || build_once(&p, &t, &dir, &scratch, full)).await;
        match result {
            Ok(Ok((how, secs, to))) => eprintln!("toolhost dev: {how} in {secs:.1}s → {}", to.display()),
            Ok(Err(e)) => eprintln!("toolhost dev: {}", term::text(&format!("{e:#}"))),
            Err(e) => eprintln!("toolhost dev: build task failed: {e}"),
        }
    };
    // A grant on the command line for a plugin that is not there is most likely a typo: said
    // once, when the folder first has tools.
    let mut flags_checked = false;
    // SIGTERM (a supervisor, an editor's task) ends the session as Ctrl-C does, during a build
    // too; then the scratch folder goes.
    let mut signals = toolhost_frontends::service::shutdown::Signals::install()
        .map_err(|e| anyhow::anyhow!("cannot install signal handlers: {e}"))?;
    let mut stopped = tokio::select! {
        () = build(project.clone(), toolchains.clone(), plugins_dir.clone(), scratch.path().to_path_buf()) => false,
        _ = signals.recv() => true,
    };
    while !stopped {
        tokio::select! {
            _ = signals.recv() => break,
            change = changes.recv() => {
                if let Ok(c) = change { print_change(&c) }
                let registry = host.registry.load();
                if !flags_checked && registry.tools().next().is_some() {
                    flags_checked = true;
                    if let Err(e) = settings.check_flag_plugins(&registry) {
                        eprintln!("toolhost dev: warning: {e:#}");
                    }
                }
            }
            ev = rx.recv() => {
                if ev.is_none() { break }
                while let Ok(Some(())) = tokio::time::timeout(debounce, rx.recv()).await {}
                stopped = tokio::select! {
                    () = build(project.clone(), toolchains.clone(), plugins_dir.clone(), scratch.path().to_path_buf()) => false,
                    _ = signals.recv() => true,
                };
            }
        }
    }
    drop(watcher);
    scratch.close().context("cannot remove the scratch folder")?;
    eprintln!("toolhost dev: stopped");
    Ok(ExitCode::SUCCESS)
}

/// One build and install: a dev build where the project can have one, else the full build.
/// Before anything is written: the plugins folder is checked for another plugin with one of
/// its tool names, and the build's requests are approved (the author is the operator here).
fn build_once(
    p: &Project,
    t: &Toolchains,
    plugins_dir: &Path,
    scratch: &Path,
    full: bool,
) -> Result<(&'static str, f64, PathBuf)> {
    let before_install = |m: &Manifest| -> Result<()> {
        check_collisions(plugins_dir, m)?;
        crate::project::cargo::approve_own_build(plugins_dir, m);
        Ok(())
    };
    if !full && !matches!(p, Project::Rust(_)) {
        match p.dev_install(t, plugins_dir, scratch, &before_install)? {
            DevInstall::Installed { seconds, to, .. } => return Ok(("dev build", seconds, to)),
            DevInstall::Unsupported(why) => eprintln!("toolhost dev: {why}; building the full component"),
        }
    }
    let built = p.build(t)?;
    before_install(&built.manifest)?;
    let to = built.install(plugins_dir)?;
    Ok(("built", built.seconds, to))
}

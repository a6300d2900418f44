//! `toolhost build [DIR]`: a plugin project (Rust, Python, JavaScript) built into one
//! self-contained `.wasm`, its manifest derived from the code and checked by the host's reader;
//! the project's tests run first, and the host's compile cache is warmed with the result.

use crate::args::GlobalArgs;
use crate::project::{Project, Toolchains, check_collisions, testing};
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

pub const AFTER_HELP: &str = "\
The project's own tests run first (pytest or unittest, node --test, cargo test; `--no-test` skips
them). Toolchains are installed at pinned versions on first use into $TOOLHOST_TOOLCHAINS
(default: $XDG_CACHE_HOME/toolhost/toolchains): componentize-py for Python (needs python3),
jco + componentize-qjs for JavaScript (needs node and npm). Nothing is installed globally.
Building unchanged sources again gives the same file (Python and JavaScript builds are kept in
the toolchains folder by their inputs). The result is compiled once for this host (its compile
cache), so the first call does not wait. With --install, a plugin already in the folder with the
same name under another file, or one of the same tool names, is an error naming both.

Examples:
  toolhost new notes --lang python && toolhost build notes
  toolhost build . --install ./plugins";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin project's folder
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Where to write the component [default: DIR/NAME.wasm]
    #[arg(long, short, value_name = "FILE", conflicts_with = "install")]
    pub output: Option<PathBuf>,
    /// Install into this plugins folder as NAME.wasm (write-then-rename, safe while a host
    /// watches the folder)
    #[arg(long, value_name = "PLUGINS_DIR")]
    pub install: Option<PathBuf>,
    /// Do not run the project's tests first
    #[arg(long)]
    pub no_test: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let Args { dir, output, install, no_test } = a;
    let project = Project::locate(&dir)?;
    let toolchains = Toolchains::from_env();
    if !no_test {
        testing::run_own_tests(&project, &toolchains)?;
    }
    eprintln!("toolhost build: {} project {} …", project.lang(), project.dir().display());
    let built = project.build(&toolchains)?;
    let to = match (output, install) {
        (Some(out), _) => {
            built.write(&out)?;
            out
        }
        (None, Some(plugins)) => {
            check_collisions(&plugins, &built.manifest)?;
            built.install(&plugins)?
        }
        (None, None) => {
            let out = project.dir().join(format!("{}.wasm", built.manifest.name));
            built.write(&out)?;
            out
        }
    };
    let tools: Vec<String> = built.manifest.tools.iter().map(|t| t.signature()).collect();
    eprintln!(
        "toolhost build: {} {} ({}: {}{}) in {:.1}s{} → {} ({} KiB)",
        built.manifest.name,
        term::line(&built.manifest.version),
        term::count(tools.len(), "tool"),
        tools.join(", "),
        skills_note(&built.bytes),
        built.seconds,
        if built.cached { ", unchanged (the build of the same sources)" } else { "" },
        to.display(),
        built.bytes.len() / 1024
    );
    warm(g, &built);
    Ok(ExitCode::SUCCESS)
}

/// `; 1 skill: tidy` for a component carrying skills (read back, as the host will), else nothing.
fn skills_note(bytes: &[u8]) -> String {
    let skills = toolhost_spec::skills::read(bytes)
        .ok()
        .flatten()
        .and_then(|section| toolhost_spec::skills::skills(&section).ok())
        .unwrap_or_default();
    if skills.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    format!("; {}: {}", term::count(names.len(), "skill"), names.join(", "))
}

/// Compile the component into this host's compile cache, so the first call does not wait for
/// it (a failure here is only a cold cache: the host reports a bad component when it loads).
fn warm(g: &GlobalArgs, built: &crate::project::Built) {
    let Ok(settings) = Settings::resolve(g) else { return };
    if settings.core.cache_dir.is_none() {
        return;
    }
    let started = std::time::Instant::now();
    let result = toolhost_core::engine::Runtime::for_config(&settings.core)
        .and_then(|rt| rt.prepare(&built.manifest.name, &built.bytes).map(drop));
    match result {
        Ok(()) => eprintln!(
            "toolhost build: compiled for this host in {:.1}s (kept in its compile cache)",
            started.elapsed().as_secs_f64()
        ),
        Err(e) => tracing::debug!("compile cache not warmed: {e:#}"),
    }
}

//! `toolhost build [DIR]`: a plugin project (Rust, Python, JavaScript) built into one
//! self-contained `.wasm`, its manifest derived from the code and checked by the host's reader.

use crate::project::{Project, Toolchains};
use crate::term;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

pub const AFTER_HELP: &str = "\
Toolchains are installed at pinned versions on first use into $TOOLHOST_TOOLCHAINS
(default: $XDG_CACHE_HOME/toolhost/toolchains): componentize-py for Python (needs python3),
jco + componentize-qjs for JavaScript (needs node and npm). Nothing is installed globally.

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
}

pub fn run(a: Args) -> Result<ExitCode> {
    let Args { dir, output, install } = a;
    let project = Project::locate(&dir)?;
    eprintln!("toolhost build: {} project {} …", project.lang(), project.dir().display());
    let built = project.build(&Toolchains::from_env())?;
    let to = match (output, install) {
        (Some(out), _) => {
            built.write(&out)?;
            out
        }
        (None, Some(plugins)) => built.install(&plugins)?,
        (None, None) => {
            let out = project.dir().join(format!("{}.wasm", built.manifest.name));
            built.write(&out)?;
            out
        }
    };
    let tools: Vec<String> = built.manifest.tools.iter().map(|t| t.signature()).collect();
    eprintln!(
        "toolhost build: {} {} ({} tool{}: {}) in {:.1}s → {} ({} KiB)",
        built.manifest.name,
        term::line(&built.manifest.version),
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        tools.join(", "),
        built.seconds,
        to.display(),
        built.bytes.len() / 1024
    );
    Ok(ExitCode::SUCCESS)
}

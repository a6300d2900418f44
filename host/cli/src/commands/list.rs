//! `toolhost list`: the exposed tools (under their exposed names), the tools the operator's
//! selection hides and why, tool names several plugins claim, each plugin's requested, granted
//! and missing capabilities and its skills (with the grants a human allowed "always" when asked, and where they
//! are written), and the files that failed to load; `--json` for programs. The report itself is
//! [`crate::report`]'s.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;

// Where the integration tests and embedders have always found them.
pub use crate::report::{list_json, render_list};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let (host, _) =
        crate::session::open(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    let reg = host.registry.load_full();
    if a.json {
        println!("{}", term::to_json(&crate::report::list_document(&reg, &host.config))?);
    } else {
        print!("{}", render_list(&reg, &host.config));
    }
    Ok(ExitCode::SUCCESS)
}

//! `toolhost prompt`: the prompt section that teaches a model the `[TOOL]` protocol and lists
//! every tool.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;

pub fn run(g: &GlobalArgs) -> Result<ExitCode> {
    let (host, _) =
        crate::session::open_reporting(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    print!("{}", term::stdout_text(&toolhost_frontends::text::prompt(&host.registry.load(), &host.config)));
    Ok(ExitCode::SUCCESS)
}

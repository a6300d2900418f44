//! `toolhost prompt`: the prompt section that teaches a model the `[TOOL]` protocol and lists
//! every tool; with `--skills`, the instructions of their plugins' skills after it.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Add the skills of the listed tools' plugins: each skill's name and description, and its
    /// SKILL.md instructions while they fit in 24 KiB (a skill past that is named with its URI)
    #[arg(long)]
    pub skills: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let (host, _) =
        crate::session::open_reporting(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    let registry = host.registry.load();
    let offered = host.executor.listing(&registry, &toolhost_core::executor::CallContext::local(None));
    let mut prompt = toolhost_frontends::text::prompt(&registry, &offered);
    if a.skills {
        prompt.push_str(&toolhost_frontends::text::skills_section(&registry, &host.config));
    }
    print!("{}", term::stdout_text(&prompt));
    Ok(ExitCode::SUCCESS)
}

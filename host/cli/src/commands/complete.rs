//! `toolhost complete prompt NAME ARG [VALUE]` and `toolhost complete template TEMPLATE ARG
//! [VALUE]`: what a plugin offers for a prompt's argument or a resource template's variable, as
//! MCP's `completion/complete` asks it, one value a line.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::registry::prompts::Target;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  toolhost --plugins target/plugins complete prompt summarise-file path RE
  toolhost --plugins target/plugins complete template 'file:///{+path}' path notes/")]
pub struct Args {
    /// What the argument belongs to
    #[arg(value_enum)]
    pub kind: Kind,
    /// The prompt's name, or the template exactly as `toolhost list` shows it
    pub target: String,
    /// The argument (or template variable) to complete
    pub argument: String,
    /// What has been typed so far
    #[arg(default_value = "")]
    pub value: String,
    /// Other arguments already given, as NAME=VALUE
    #[arg(long = "with", value_name = "ARG=VALUE")]
    pub context: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Kind {
    Prompt,
    Template,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let context = crate::args::name_values(&a.context)?;
    let (host, _) =
        crate::session::open(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    let target = match a.kind {
        Kind::Prompt => Target::Prompt(&a.target),
        Kind::Template => Target::Template(&a.target),
    };
    let done = super::async_runtime()?
        .block_on(host.executor.complete(target, &a.argument, &a.value, &context))
        .map_err(|e| anyhow::anyhow!("{}", term::line(&e.to_string())))?;
    for v in &done.values {
        println!("{}", term::line(v));
    }
    if done.has_more() {
        eprintln!("({} of {} shown)", done.values.len(), done.total);
    }
    Ok(ExitCode::SUCCESS)
}

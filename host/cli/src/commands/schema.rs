//! `toolhost schema`: the tool definitions for function calling.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which definitions
    #[arg(long, value_enum, default_value_t = SchemaFormat::Openai)]
    pub format: SchemaFormat,
}

/// Output format of `toolhost schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaFormat {
    /// The `tools` array of the OpenAI chat completions API
    Openai,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let SchemaFormat::Openai = a.format;
    let (host, _) =
        crate::session::open_reporting(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    let registry = host.registry.load();
    let offered = host.executor.listing(&registry, &toolhost_core::executor::CallContext::local(None));
    let tools = toolhost_frontends::openai::tools(&offered)?;
    println!("{}", term::to_json(&tools)?);
    Ok(ExitCode::SUCCESS)
}

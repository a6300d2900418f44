//! `toolhost get-prompt NAME [ARG=VALUE…]`: one of the plugins' prompts, got as MCP's
//! `prompts/get` gets it (its arguments checked against the manifest, the plugin run in its
//! sandbox), its messages printed one after the other, each under its role.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::executor::{CallContext, PromptContent, Role};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
`toolhost list` shows each plugin's prompts with their arguments (`?`: optional); `toolhost
complete prompt NAME ARG VALUE` lists what an argument can be.

Examples:
  toolhost --plugins target/plugins get-prompt summarise-file path=README.md
  toolhost --plugins target/plugins get-prompt summarise-file path=notes/a.md style=bullets")]
pub struct Args {
    /// The prompt's name
    pub name: String,
    /// Its arguments, each as NAME=VALUE
    #[arg(value_name = "ARG=VALUE")]
    pub arguments: Vec<String>,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let arguments = crate::args::name_values(&a.arguments)?;
    let (host, _) =
        crate::session::open(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    let ctx = CallContext::local(None);
    let got = super::async_runtime()?
        .block_on(host.executor.get_prompt(&a.name, &arguments, "toolhost get-prompt", &ctx))
        .map_err(|e| {
            anyhow::anyhow!("{} (`toolhost list` shows each plugin's prompts)", term::line(&e.to_string()))
        })?;
    if let Some(d) = &got.description {
        println!("{}\n", term::line(d));
    }
    for m in &got.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        match &m.content {
            PromptContent::Text(text) => println!("[{role}]\n{}\n", term::stdout_text(text)),
            PromptContent::Link { uri, name, .. } => {
                println!(
                    "[{role}] resource: {} ({}) — `toolhost read` prints it\n",
                    term::line(uri),
                    term::line(name)
                )
            }
        }
    }
    if got.truncated {
        eprintln!("note: the prompt was cut at the plugin's resource_kb limit");
    }
    Ok(ExitCode::SUCCESS)
}

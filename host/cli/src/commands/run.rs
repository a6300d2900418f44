//! `toolhost run [FILE]`: every `[TOOL] name(args) [/TOOL]` call of a model's reply (or an
//! OpenAI assistant message's `tool_calls`), run in order, and the feedback for the conversation.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Context;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::executor::{AlwaysConfirm, Confirm};
use toolhost_frontends::{openai, text};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// File holding the reply; `-` or nothing reads standard input
    pub file: Option<PathBuf>,
    /// Input format: a text reply, or an OpenAI assistant message with `tool_calls`
    #[arg(long, value_enum, default_value_t = ReplyFormat::Text)]
    pub format: ReplyFormat,
    /// Print the structured result as JSON instead of the feedback block
    #[arg(long)]
    pub json: bool,
    /// Confirm dangerous tools without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Input format of `toolhost run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplyFormat {
    /// A model reply with `[TOOL] … [/TOOL]` calls
    Text,
    /// An OpenAI assistant message (or chat completion) with `tool_calls`; prints `role: "tool"` messages
    Openai,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let Args { file, format, json, yes } = a;
    let reply = read_input(file.as_deref())?;
    let confirm: Arc<dyn Confirm> =
        if yes { Arc::new(AlwaysConfirm) } else { Arc::new(crate::confirm::TerminalConfirm) };
    let (host, frontends) = crate::session::open_reporting(Settings::resolve(g)?, confirm)?;
    toolhost_frontends::service::Service::attach_audit(
        &host,
        &frontends,
        if format == ReplyFormat::Text { "text" } else { "openai" },
    )?;
    host.executor.attach_grant_asker(Arc::new(crate::confirm::TerminalGrants));
    let rt = super::async_runtime()?;
    match format {
        ReplyFormat::Text => {
            let results = rt.block_on(text::execute(&host.executor, &reply));
            if json {
                println!("{}", term::to_json(&text::results_json(&results))?);
            } else {
                // Shown rendered on a terminal; as is into a pipe, which feeds it to a
                // model (the conversation needs the outcomes exactly).
                print!("{}", term::stdout_text(&text::feedback(&reply, &results)));
            }
            let all_ok = results.iter().all(|(seg, o)| {
                !matches!(seg, text::Segment::Error { .. }) && o.as_ref().is_none_or(|o| o.success)
            });
            Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        ReplyFormat::Openai => {
            let message =
                openai::parse_message(&reply).map_err(|e| anyhow::anyhow!("--format openai: {e}"))?;
            let results = rt.block_on(openai::execute(&host.executor, &message));
            let messages: Vec<_> = results.iter().map(|(m, _)| m).collect();
            println!("{}", term::to_json(&messages)?);
            let all_ok = results.iter().all(|(_, o)| o.success);
            Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

fn read_input(file: Option<&std::path::Path>) -> Result<String> {
    use std::io::Read;
    match file {
        Some(p) if p != std::path::Path::new("-") => {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
        _ => {
            // Invalid UTF-8 from a model is replaced, not fatal: the parser sees U+FFFD.
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).context("cannot read the reply from standard input")?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        }
    }
}

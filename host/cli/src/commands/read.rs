//! `toolhost read URI`: one resource the host serves, printed or written to a file — a
//! plugin's skill file (`skill://PLUGIN/SKILL/FILE`), or a resource a plugin declares (read by
//! running the plugin in its sandbox), as MCP's `resources/read` serves them.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::executor::{Body, CallContext};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
`toolhost list` shows each plugin's resources, templates and skills. A skill's files are at
skill://PLUGIN/SKILL/FILE (SKILL.md is its instructions); a resource a plugin declares is read
by running the plugin, with its grants and the operator's [plugin.NAME] limits (resource_kb
caps what comes back).

Examples:
  toolhost --plugins target/plugins read skill://files/workspace-files/SKILL.md
  toolhost --plugins target/plugins read file:///README.md
  toolhost --plugins target/plugins read skill://PLUGIN/SKILL/img/diagram.png --out diagram.png")]
pub struct Args {
    /// The resource's URI
    pub uri: String,
    /// Write it to FILE instead of standard output (a binary resource is never written to a
    /// terminal)
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let (host, _) =
        crate::session::open(Settings::resolve(g)?, Arc::new(toolhost_core::executor::NoConfirm))?;
    let ctx = CallContext::local(None);
    let read =
        super::async_runtime()?.block_on(host.executor.read(&a.uri, "toolhost read", &ctx)).map_err(|e| {
            anyhow::anyhow!("{} (`toolhost list` shows what each plugin serves)", term::line(&e.to_string()))
        })?;
    let mime = read.mime_type.as_deref().unwrap_or("no declared type");
    if read.truncated {
        eprintln!("note: {} was cut at the plugin's resource_kb limit", term::line(&a.uri));
    }
    if let Some(out) = &a.out {
        let bytes = match &read.body {
            Body::Text(t) => t.as_bytes(),
            Body::Blob(b) => b,
        };
        std::fs::write(out, bytes).with_context(|| format!("cannot write {}", out.display()))?;
        eprintln!("wrote {} ({}, {} bytes)", out.display(), term::line(mime), bytes.len());
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = std::io::stdout().lock();
    match &read.body {
        Body::Text(text) => stdout.write_all(term::stdout_text(text).as_bytes())?,
        Body::Blob(b) if std::io::IsTerminal::is_terminal(&std::io::stdout()) => bail!(
            "{} is binary ({}, {} bytes): write it with --out FILE or through a pipe",
            term::line(&a.uri),
            term::line(mime),
            b.len()
        ),
        Body::Blob(b) => stdout.write_all(b)?,
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

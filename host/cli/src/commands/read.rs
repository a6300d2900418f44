//! `toolhost read URI`: one resource the host serves, printed or written to a file — today a
//! plugin's skill file (`skill://PLUGIN/SKILL/FILE`, as MCP's `resources/read` serves it).
//! Nothing runs: the file was read and checked when its plugin loaded.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::registry::Registry;
use toolhost_core::registry::skills::{self, SkillFile};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
A skill's files are at skill://PLUGIN/SKILL/FILE: `toolhost list` shows each plugin's skills,
and SKILL.md is each skill's instructions.

Examples:
  toolhost --plugins target/plugins read skill://files/workspace-files/SKILL.md
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
    let registry = host.registry.load_full();
    let file = resource(&registry, &a.uri)?;
    if let Some(out) = &a.out {
        std::fs::write(out, &file.bytes).with_context(|| format!("cannot write {}", out.display()))?;
        eprintln!("wrote {} ({}, {} bytes)", out.display(), file.mime, file.size());
        return Ok(ExitCode::SUCCESS);
    }
    let mut stdout = std::io::stdout().lock();
    match file.as_text() {
        Some(text) => stdout.write_all(term::stdout_text(text).as_bytes())?,
        None if std::io::IsTerminal::is_terminal(&std::io::stdout()) => bail!(
            "{} is binary ({}, {} bytes): write it with --out FILE or through a pipe",
            term::line(&a.uri),
            file.mime,
            file.size()
        ),
        None => stdout.write_all(&file.bytes)?,
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The resource `uri` names, or an error naming it and saying where the URIs are listed.
fn resource<'r>(registry: &'r Registry, uri: &str) -> Result<&'r SkillFile> {
    skills::resource(registry.plugins(), uri).map(|(_, file)| file).map_err(|e| {
        anyhow::anyhow!("{} (`toolhost list` shows each plugin's skills)", term::line(&e.to_string()))
    })
}

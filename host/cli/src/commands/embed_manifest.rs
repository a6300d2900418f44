//! `toolhost embed-manifest INPUT --manifest FILE`: put a manifest into a component built
//! without toolhost-sdk.

use crate::term;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The component (.wasm)
    pub input: PathBuf,
    /// The manifest: a .toml file, or JSON
    #[arg(long, short)]
    pub manifest: PathBuf,
    /// Where to write the result [default: replace INPUT]
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let Args { input, manifest, output } = a;
    let text =
        std::fs::read_to_string(&manifest).with_context(|| format!("cannot read {}", manifest.display()))?;
    let is_toml = manifest.extension().is_some_and(|e| e == "toml");
    let parsed = toolhost_spec::manifest::parse_file_text(&text, is_toml)
        .map_err(|e| anyhow::anyhow!("{}: {e}", manifest.display()))?;
    let bytes = std::fs::read(&input).with_context(|| format!("cannot read {}", input.display()))?;
    let out_bytes = toolhost_spec::manifest::embed(&bytes, &parsed)
        .map_err(|e| anyhow::anyhow!("{}: {e}", input.display()))?;
    let out = output.unwrap_or_else(|| input.clone());
    toolhost_core::files::write_atomic(&out, &out_bytes)
        .with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!(
        "embedded manifest of `{}` ({}) into {}",
        term::line(&parsed.name),
        term::count(parsed.tools.len(), "tool"),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

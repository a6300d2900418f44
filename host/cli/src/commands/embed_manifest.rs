//! `toolhost embed-manifest INPUT --manifest FILE [--skills DIR]`: put a manifest, and a skills
//! folder, into a component built without toolhost-sdk.

use crate::term;
use anyhow::{Context, Result, anyhow};
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost_spec::skills;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The component (.wasm)
    pub input: PathBuf,
    /// The manifest: a .toml file, or JSON
    #[arg(long, short)]
    pub manifest: PathBuf,
    /// A skills folder to embed too (`DIR/NAME/SKILL.md` and the files beside it), served by
    /// the host as MCP skills
    #[arg(long, value_name = "DIR")]
    pub skills: Option<PathBuf>,
    /// Where to write the result [default: replace INPUT]
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let Args { input, manifest, skills: skills_dir, output } = a;
    let text =
        std::fs::read_to_string(&manifest).with_context(|| format!("cannot read {}", manifest.display()))?;
    let is_toml = manifest.extension().is_some_and(|e| e == "toml");
    let parsed = toolhost_spec::manifest::parse_file_text(&text, is_toml)
        .map_err(|e| anyhow!("{}: {e}", manifest.display()))?;
    // Read and check the skills before writing anything.
    let section = match &skills_dir {
        Some(dir) => {
            let problem = |e: skills::SkillsError| anyhow!("the skills in {}: {e}", dir.display());
            let section = skills::collect_dir(dir).map_err(problem)?;
            let count = skills::skills(&section).map_err(problem)?.len();
            Some((section, count))
        }
        None => None,
    };
    let bytes = std::fs::read(&input).with_context(|| format!("cannot read {}", input.display()))?;
    let mut out_bytes =
        toolhost_spec::manifest::embed(&bytes, &parsed).map_err(|e| anyhow!("{}: {e}", input.display()))?;
    if let Some((section, _)) = &section {
        out_bytes = skills::embed(&out_bytes, section).map_err(|e| anyhow!("{}: {e}", input.display()))?;
    }
    let out = output.unwrap_or_else(|| input.clone());
    toolhost_core::files::write_atomic(&out, &out_bytes)
        .with_context(|| format!("cannot write {}", out.display()))?;
    let with_skills = match &section {
        Some((_, n)) => format!(" and {}", term::count(*n, "skill")),
        None => String::new(),
    };
    eprintln!(
        "embedded manifest of `{}` ({}){with_skills} into {}",
        term::line(&parsed.name),
        term::count(parsed.tools.len(), "tool"),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

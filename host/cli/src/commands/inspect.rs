//! `toolhost inspect FILE`: the manifest embedded in a plugin file, its resources, its skills and apps,
//! its signature and SHA-256 (reads the file; never compiles or runs it). The report itself is [`crate::report`]'s.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::{report, term};
use anyhow::Context;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin file
    pub file: PathBuf,
    /// Print the manifest as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let cfg = Settings::resolve(g)?.core;
    let Args { file, json } = a;
    let manifest = toolhost_core::registry::inspect_file(&file, cfg.max_plugin_bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let signature = toolhost_core::registry::signing::describe(&cfg.trust, &manifest.name, &bytes);
    // What `[trust] allow_unsigned` and `[approvals.plugin.NAME] sha256` pin.
    let digest = format!("sha256:{}", toolhost_spec::digest::sha256_hex(&bytes));
    if json {
        println!("{}", term::to_json(&manifest)?);
        // stdout stays the manifest alone (embed-manifest reads it)
        eprintln!("{}\nfile: {digest}", term::text(&signature));
    } else {
        print!("{}", report::render_manifest(&manifest));
        print!("{}", report::served_lines(&manifest, None));
        print!("{}", skills(&bytes));
        print!("{}", apps(&bytes, &manifest, &cfg));
        println!("time limits here: {}", report::time_limits(&manifest, &cfg));
        println!("{}", term::text(&signature));
        println!("file: {digest}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The file's apps as `list` shows a loaded plugin's, with the origins this config allows: a
/// section the host would refuse (and with it the plugin) says why.
fn apps(bytes: &[u8], manifest: &toolhost_spec::Manifest, cfg: &toolhost_core::Config) -> String {
    let allowed = cfg.plugin(&manifest.name).app_domains;
    match toolhost_core::registry::apps::of_file(bytes, manifest, &allowed) {
        Ok(apps) => apps.iter().map(report::app_lines).collect(),
        Err(e) => format!("apps:      refused, and with them the plugin: {}\n", term::line(&e)),
    }
}

/// The file's skills as `list` shows a loaded plugin's, checked by the host's rules: a section
/// the host would refuse (and with it the plugin) says why.
fn skills(bytes: &[u8]) -> String {
    use toolhost_spec::skills;
    match skills::read(bytes).and_then(|s| s.map(|s| skills::skills(&s)).transpose()) {
        Ok(None) => String::new(),
        Ok(Some(list)) => list
            .iter()
            .map(|s| {
                let size = s.files.iter().map(|f| f.bytes.len() as u64).sum();
                format!("{}\n", report::skill_line(&s.name, s.files.len(), size))
            })
            .collect(),
        Err(e) => format!("skills:    refused, and with them the plugin: {}\n", term::line(&e.to_string())),
    }
}

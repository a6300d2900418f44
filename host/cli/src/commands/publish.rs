//! `toolhost publish FILE.wasm REF`: push a plugin to an OCI registry.

use crate::settings::Settings;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

/// Push a plugin to an OCI registry as an artifact: the component as its layer, the embedded
/// manifest as its config blob (so the registry shows the tools without the code). Credentials
/// come from [registry."HOST"] in toolhost.toml or the Docker config, never the command line
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  toolhost publish files.wasm registry.example.com/tools/files:0.1.0")]
pub struct Args {
    /// The plugin file (sign it first with `toolhost sign` if hosts require signatures)
    pub file: PathBuf,
    /// Where to push: HOST[:PORT]/REPOSITORY:TAG
    pub reference: String,
}

pub fn run(cfg: &Settings, args: &Args) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let p = rt.block_on(crate::oci::publish(cfg, &args.file, &args.reference))?;
    println!(
        "published {} v{} to {}",
        crate::term::line(&p.name),
        crate::term::line(&p.version),
        args.reference
    );
    println!("digest: {}", p.digest);
    if p.signers.is_empty() {
        println!("unsigned (hosts with [trust] require_signature will refuse it; see `toolhost sign`)");
    } else {
        println!("signed by {}", crate::term::line(&p.signers.join(", ")));
    }
    Ok(ExitCode::SUCCESS)
}

//! `toolhost keygen [PATH]`: write an Ed25519 key pair for signing plugins.

use anyhow::{Result, anyhow};
use std::path::PathBuf;
use std::process::ExitCode;

/// Write a new signing key pair: PATH (the private key, mode 0600; keep it secret) and PATH.pub
/// (the public key line operators put in [trust] keys)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The private key file to create (never overwritten)
    #[arg(default_value = "toolhost-signing.key")]
    pub path: PathBuf,
    /// A comment stored with the public key, shown as the signer (e.g. alice@team)
    #[arg(long, short, default_value = "")]
    pub comment: String,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let public =
        toolhost_core::registry::signing::keygen(&args.path, &args.comment).map_err(|e| anyhow!(e))?;
    println!("private key: {} (keep it secret)", args.path.display());
    println!("public key:  {}", toolhost_core::registry::signing::public_path(&args.path).display());
    println!("key id:      {}", public.id());
    println!(
        "\nto trust it, add to toolhost.toml:\n[trust]\nkeys = [\"{}\"]",
        std::fs::read_to_string(toolhost_core::registry::signing::public_path(&args.path))?.trim()
    );
    Ok(ExitCode::SUCCESS)
}

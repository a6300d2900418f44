//! `toolhost sign FILE.wasm --key KEY`: append a signature section.

use anyhow::{Context, Result, anyhow};
use std::path::PathBuf;
use std::process::ExitCode;

/// Sign a plugin: append a `toolhost-signature` section with an Ed25519 signature over the
/// component (without signature sections) and its embedded manifest. Changing a byte of the code
/// or the manifest afterwards makes hosts refuse the file
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin file
    pub file: PathBuf,
    /// The private key file (from `toolhost keygen`)
    #[arg(long, short)]
    pub key: PathBuf,
    /// Where to write the signed plugin [default: replace FILE]
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let key = toolhost_core::registry::signing::SecretKey::read(&args.key).map_err(|e| anyhow!(e))?;
    let bytes = std::fs::read(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let signed = toolhost_core::registry::signing::sign(&bytes, &key)
        .map_err(|e| anyhow!("{}: {e}", args.file.display()))?;
    // Read it back the way a host will before writing anything.
    let signers = toolhost_core::registry::signing::verify(&signed)
        .map_err(|e| anyhow!("{}: {e}", args.file.display()))?;
    let out = args.output.clone().unwrap_or_else(|| args.file.clone());
    crate::oci::write_atomic(&out, &signed).with_context(|| format!("cannot write {}", out.display()))?;
    let me = key.public("");
    println!("signed {} with {} ({} signature(s) in the file)", out.display(), me.id(), signers.len());
    println!("hosts that trust it list: {}", me.encoded());
    Ok(ExitCode::SUCCESS)
}

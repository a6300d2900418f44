//! `toolhost install REF` / `toolhost install --locked`: pull plugins from an OCI registry.

use crate::settings::Settings;
use anyhow::{Result, bail};
use std::path::PathBuf;
use std::process::ExitCode;

/// Pull a plugin from an OCI registry into the plugins folder: the layer's digest is checked,
/// the signature policy ([trust]) applied, and the file written with write-then-rename, then
/// recorded in toolhost.lock. `--locked` reinstalls exactly what the lock file records (by
/// digest, checking each file's SHA-256 and signer) and writes nothing unless all of it checks;
/// plugin files in the folder that the lock does not record are listed, and with `--prune`
/// removed, so the folder is exactly the lock
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  toolhost install registry.example.com/tools/files:0.1.0\n  toolhost install registry.example.com/tools/files@sha256:4f1c…\n  toolhost install --locked          # on another machine, from toolhost.lock\n  toolhost install --locked --prune  # … and remove plugin files the lock does not record"
)]
pub struct Args {
    /// What to install: HOST[:PORT]/REPOSITORY:TAG or HOST[:PORT]/REPOSITORY@sha256:DIGEST
    #[arg(required_unless_present = "locked", conflicts_with = "locked")]
    pub reference: Option<String>,
    /// Install every plugin recorded in the lock file, exactly as recorded; plugin files in the
    /// folder that it does not record are listed
    #[arg(long)]
    pub locked: bool,
    /// With --locked: remove the plugin files (`*.wasm`) the lock file does not record, so the
    /// plugins folder is exactly the lock (other files, such as approvals, stay)
    #[arg(long, requires = "locked")]
    pub prune: bool,
    /// The lock file [default: toolhost.lock beside the config file, or in the current directory]
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
}

pub fn run(cfg: &Settings, args: &Args) -> Result<ExitCode> {
    let lock = args.lock.clone().unwrap_or_else(|| crate::oci::default_lock_path(cfg));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let installed = match (&args.reference, args.locked) {
        (_, true) => rt.block_on(crate::oci::install_locked(cfg, &lock))?,
        (Some(r), false) => vec![rt.block_on(crate::oci::install(cfg, r, &lock))?],
        (None, false) => bail!("give a reference to install, or --locked"),
    };
    for p in &installed {
        let signer = match &p.signer {
            Some(s) => format!("signed by {}", crate::term::line(&s.to_string())),
            None => "unsigned".to_string(),
        };
        println!(
            "installed {} v{} → {} ({}, {signer})",
            crate::term::line(&p.entry.name),
            crate::term::line(&p.entry.version),
            cfg.core.plugins_dir.join(&p.entry.file).display(),
            p.entry.digest
        );
    }
    if args.locked {
        println!("{} plugins installed from {}", installed.len(), lock.display());
        let extra = crate::oci::unlocked_plugins(cfg, &lock, args.prune)?;
        for name in &extra {
            let name = crate::term::line(name);
            if args.prune {
                println!("removed {name}: not in {}", lock.display());
            } else {
                println!("not in {}: {name} (pass --prune to remove it)", lock.display());
            }
        }
    } else {
        println!("recorded in {}", lock.display());
    }
    Ok(ExitCode::SUCCESS)
}

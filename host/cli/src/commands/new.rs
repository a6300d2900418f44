//! `toolhost new NAME --lang L`: a plugin project with one example tool and a test.

use crate::project::Lang;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin's name (lower-case letters, digits, `_`, `-`); also the folder's name
    pub name: String,
    /// The language. A JavaScript project uses an installed toolhost-sdk of this version that
    /// Node finds from the project folder (a node_modules/ above it), else gets a copy of the SDK
    /// in its own node_modules/; a Python project needs none (the host puts the SDK on the path)
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    pub lang: Lang,
    /// Create the project inside this folder [default: the current folder]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Rust only: the toolhost-sdk folder the project depends on [default: the plugin-sdk/
    /// of the checkout toolhost was built from, if it is still there; else the published
    /// toolhost-sdk of this version]
    #[arg(long, value_name = "PATH")]
    pub sdk: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let Args { name, lang, dir, sdk } = a;
    let parent = dir.unwrap_or_else(|| PathBuf::from("."));
    let created = crate::project::scaffold::create(&parent, &name, lang, sdk.as_deref())?;
    println!("created {} ({lang})", created.display());
    // A hint that writes nothing into the project (its README says how to build and install).
    println!(
        "next: toolhost test {}   (its tests, then each tool called once through the host)",
        created.display()
    );
    Ok(ExitCode::SUCCESS)
}

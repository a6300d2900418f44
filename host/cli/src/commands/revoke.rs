//! `toolhost revoke PLUGIN ITEM`: remove a grant a human allowed "always" (or a refusal answered
//! "never") when toolhost asked (an entry of `toolhost.grants.toml` beside the config). Grants written in `toolhost.toml`
//! itself are the operator's to edit there.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use anyhow::{Result, bail};
use std::process::ExitCode;
use toolhost_core::settings::{GrantItem, grants};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin name (as `list` shows it)
    pub plugin: String,
    /// The item as `list` shows it: `net HOST`, `secret NAME`, `fs ro|rw PATH` or `exec PATH
    /// ARG…` (one word or several: `net api.github.com`, `exec /usr/bin/git status --short`)
    #[arg(num_args = 1.., required = true, allow_hyphen_values = true, trailing_var_arg = true)]
    pub item: Vec<String>,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let cfg = Settings::resolve(g)?.core;
    let item = GrantItem::parse(&a.item.join(" ")).map_err(anyhow::Error::msg)?;
    let path = &cfg.grants_file;
    if !grants::revoke(path, &a.plugin, &item).map_err(anyhow::Error::msg)? {
        bail!("{} holds no grant of `{item}` to plugin `{}`", path.display(), a.plugin);
    }
    println!("revoked {item} for plugin `{}` (removed from {})", a.plugin, path.display());
    Ok(ExitCode::SUCCESS)
}

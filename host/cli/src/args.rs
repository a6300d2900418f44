//! The options every subcommand takes, as written on the command line (the subcommands' own are
//! in `commands/`). Resolving them into the settings a command runs with is
//! [`crate::settings`]'s job (ripgrep's raw → resolved).

use clap::Args;
use std::path::PathBuf;
use toolhost_core::settings::DangerPolicy;

/// Options that apply to every subcommand.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Config file [default: ./toolhost.toml if it exists, else built-in defaults that grant nothing]
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Plugins folder (overrides `plugins` in the config)
    #[arg(long, global = true, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// The workspace directory that `fs` grants named "workspace" refer to (overrides the config)
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Grant PLUGIN read-only access to the workspace (`*` = every plugin that requests it)
    #[arg(long = "allow-read", global = true, value_name = "PLUGIN")]
    pub allow_read: Vec<String>,
    /// Grant PLUGIN read-write access to the workspace (`*` = every plugin that requests it)
    #[arg(long = "allow-write", global = true, value_name = "PLUGIN")]
    pub allow_write: Vec<String>,
    /// Grant PLUGIN the host environment variable VAR, if it requests it
    #[arg(long = "allow-env", global = true, value_name = "PLUGIN=VAR")]
    pub allow_env: Vec<String>,
    /// Grant PLUGIN HTTP access to HOST (`example.com`, `*.example.com`, `*`), if it requests it
    #[arg(long = "allow-net", global = true, value_name = "PLUGIN=HOST")]
    pub allow_net: Vec<String>,
    /// Let PLUGIN run PROGRAM (a name, resolved now by your PATH, or an absolute path) with any
    /// arguments, an empty environment, in the workspace (read-only to it, no network), if it
    /// requests it; its tools become dangerous (confirmed per call) unless `[tool.NAME] danger =
    /// false`
    #[arg(long = "allow-run", global = true, value_name = "PLUGIN=PROGRAM")]
    pub allow_run: Vec<String>,
    /// Let PLUGIN open the key-value BUCKET (`default`, …) of its own store, if it requests it;
    /// the data is kept between calls and runs, under `[kv] dir` (see `toolhost kv`)
    #[arg(long = "allow-kv", global = true, value_name = "PLUGIN=BUCKET")]
    pub allow_kv: Vec<String>,
    /// Do not read or write the compiled-code cache (default: ~/.cache/toolhost)
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// Danger policy for tools marked dangerous (overrides the config)
    #[arg(long, global = true, value_enum, value_name = "POLICY")]
    pub danger: Option<Danger>,
    /// More log output on stderr (-v info, -vv debug)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// `--danger`: the policies of `[danger] policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Danger {
    /// Ask on the terminal (or through the front end); with no way to ask, deny.
    Ask,
    /// Run without asking.
    Allow,
    /// Never run.
    Deny,
}

impl From<Danger> for DangerPolicy {
    fn from(d: Danger) -> DangerPolicy {
        match d {
            Danger::Ask => DangerPolicy::Ask,
            Danger::Allow => DangerPolicy::Allow,
            Danger::Deny => DangerPolicy::Deny,
        }
    }
}

/// `NAME=VALUE` arguments as pairs, or an error naming the one without `=` (a prompt's
/// arguments, a completion's context).
pub fn name_values(given: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    given
        .iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => anyhow::bail!("`{}` is not NAME=VALUE", crate::term::line(a)),
        })
        .collect()
}

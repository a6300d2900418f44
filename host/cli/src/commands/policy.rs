//! `toolhost policy check`: decide one request against the operator's rules (`[policy] file`,
//! or `--file`) offline, as the running host would, and say which rule decided.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use toolhost_core::identity::{Principal, Via};
use toolhost_core::policy::{Action, Policy, Request, Resource};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Decide one request: prints `allow` or `deny` and the rule that decided; exits 0 when
    /// allowed, 1 when denied, 2 when the policy file has an error (its line and column)
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The rules file (default: the config's `[policy] file`)
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// What the request asks to do
    #[arg(long, value_enum, default_value = "call")]
    pub action: ActionArg,
    /// The tool (for `list`, `call` and `answer`)
    #[arg(long, required_unless_present_any = ["uri", "plugin"])]
    pub tool: Option<String>,
    /// The resource URI or prompt name (for `read`)
    #[arg(long, conflicts_with = "tool")]
    pub uri: Option<String>,
    /// The plugin serving the tool or the resource (alone: the plugin, for `approve`)
    #[arg(long)]
    pub plugin: Option<String>,
    /// The tool is dangerous (`--danger` is the global option of the danger policy)
    #[arg(long)]
    pub dangerous: bool,
    /// The tool is read-only
    #[arg(long)]
    pub read_only: bool,
    /// The caller's subject (`sub`); without it, a caller who proved nothing (`via: none`)
    #[arg(long)]
    pub sub: Option<String>,
    /// The issuer that vouched for the subject (an OAuth principal; without it a static token's)
    #[arg(long)]
    pub iss: Option<String>,
    /// The OAuth client
    #[arg(long)]
    pub client_id: Option<String>,
    /// A group or role of the caller (repeat it)
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// A scope the caller's token grants (repeat it)
    #[arg(long = "scope")]
    pub scopes: Vec<String>,
    /// The front end the request comes through
    #[arg(long, default_value = "mcp-http")]
    pub front_end: String,
    /// A call's argument, NAME=VALUE (repeat it)
    #[arg(long = "arg", value_parser = name_value)]
    pub args: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ActionArg {
    List,
    Call,
    Read,
    Answer,
    Approve,
}

fn name_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{s}` is not NAME=VALUE"))
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let Sub::Check(c) = a.command;
    let file = match c.file.clone() {
        Some(f) => f,
        None => Settings::resolve(g)?.core.policy_file.clone().context(
            "no policy file: give --file, or name one in the config ([policy] file = \"toolhost.policy.toml\")",
        )?,
    };
    let policy = match Policy::load(&file) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("toolhost: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let principal = c.sub.as_ref().map(|sub| Principal {
        subject: sub.clone(),
        issuer: c.iss.clone(),
        client_id: c.client_id.clone(),
        scopes: c.scopes.clone(),
        groups: c.groups.clone(),
        via: if c.iss.is_some() { Via::Oauth } else { Via::Token },
    });
    let action = match c.action {
        ActionArg::List => Action::List,
        ActionArg::Call => Action::Call,
        ActionArg::Read => Action::Read,
        ActionArg::Answer => Action::Answer,
        ActionArg::Approve => Action::Approve,
    };
    let plugin = c.plugin.as_deref().unwrap_or("");
    let resource = match (&c.tool, &c.uri) {
        (Some(name), _) => Resource::Tool { name, plugin, danger: c.dangerous, read_only: c.read_only },
        (None, Some(uri)) => Resource::Uri { uri, plugin },
        (None, None) => Resource::Plugin { plugin },
    };
    let args: serde_json::Map<String, serde_json::Value> =
        c.args.iter().map(|(n, v)| (n.clone(), serde_json::Value::String(v.clone()))).collect();
    let request = Request {
        action,
        principal: principal.as_ref(),
        front_end: &c.front_end,
        resource,
        args: serde_json::Value::Object(args),
    };
    let decision = policy.decide(&request);
    let word = if decision.allowed() { "allow" } else { "deny" };
    println!("{word}: {} ({} rules in {})", decision.rule(), policy.len(), file.display());
    Ok(if decision.allowed() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

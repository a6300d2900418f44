//! `toolhost call TOOL ARGS…`: one call, its outcome printed (exit code 1 if it fails).

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::executor::{AlwaysConfirm, Confirm, ToolCall};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tool name
    pub tool: String,
    /// Arguments, as the model would give them (JSON params as JSON text). Everything after
    /// the first argument is an argument too, `-5` and `--` included; put -y/--json before
    /// TOOL or right after it, and `--` right after TOOL when the first argument starts with `-`
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// Confirm a dangerous tool without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the outcome as JSON: {"success": true, "data": …} or {"success": false, "error": …}
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let Args { tool, args, yes, json } = a;
    let confirm: Arc<dyn Confirm> =
        if yes { Arc::new(AlwaysConfirm) } else { Arc::new(crate::confirm::TerminalConfirm) };
    let (host, frontends) = crate::session::open_reporting(Settings::resolve(g)?, confirm)?;
    toolhost_frontends::service::Service::attach_audit(&host, &frontends, "cli")?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let outcome = rt.block_on(host.call(&ToolCall { name: tool, args }));
    if json {
        println!("{}", term::to_json(&outcome)?);
    } else if outcome.success {
        // Rendered on a terminal; byte for byte into a pipe or a file.
        let data = outcome.data.as_deref().unwrap_or("");
        println!("{}", term::stdout_text(data));
    } else {
        let kind = outcome.kind.map(|k| k.to_string()).unwrap_or_default();
        eprintln!("error[{kind}]: {}", term::text(outcome.error.as_deref().unwrap_or("")));
    }
    Ok(if outcome.success { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use crate::commands::{Cli, Command};
    use clap::Parser;

    fn parse(line: &[&str]) -> (String, Vec<String>, bool, bool) {
        let cli = Cli::try_parse_from(["toolhost", "call"].iter().chain(line)).unwrap();
        let Command::Call(a) = cli.command else { panic!("not call") };
        (a.tool, a.args, a.yes, a.json)
    }

    fn args(line: &[&str]) -> Vec<String> {
        parse(line).1
    }

    #[test]
    fn arguments_are_taken_as_written() {
        assert_eq!(args(&["convert", "-5", "km"]), ["-5", "km"]);
        assert_eq!(args(&["echo", "abc", "--"]), ["abc", "--"]);
        assert_eq!(args(&["echo", "abc", "--", "x"]), ["abc", "--", "x"]);
        assert_eq!(args(&["echo", "abc", "-y"]), ["abc", "-y"]);
        assert_eq!(args(&["echo", "--", "-y"]), ["-y"]);
        assert_eq!(args(&["echo", "a,b", "--json"]), ["a,b", "--json"]);
        let (tool, a, yes, json) = parse(&["-y", "--json", "run", "git", "status"]);
        assert_eq!((tool.as_str(), yes, json), ("run", true, true));
        assert_eq!(a, ["git", "status"]);
        let (_, a, yes, json) = parse(&["run", "-y", "--json", "git"]);
        assert_eq!((yes, json), (true, true));
        assert_eq!(a, ["git"]);
    }
}

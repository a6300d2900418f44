//! `toolhost call TOOL ARGS…`: one call, its outcome printed (exit code 1 if it fails, 130 if
//! Ctrl-C cancelled it). While it runs, its progress: a bar on a terminal (`indicatif`, on
//! stderr), plain lines on stderr otherwise, JSON lines on stdout with `--json`. Ctrl-C cancels
//! the call through the executor: the sandbox stops and the outcome is `cancelled`.

use crate::args::GlobalArgs;
use crate::settings::Settings;
use crate::term;
use anyhow::Result;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::executor::{
    AlwaysConfirm, CallContext, CallControl, Cancel, Confirm, ErrorKind, Progress, ProgressSink, ToolCall,
};

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
    /// Print the outcome as JSON: {"success": true, "data": …} or {"success": false, "error": …},
    /// after one JSON line {"progress": {"done": …, "total": …, "message": …}} per progress
    /// report
    #[arg(long)]
    pub json: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let Args { tool, args, yes, json } = a;
    let confirm: Arc<dyn Confirm> =
        if yes { Arc::new(AlwaysConfirm) } else { Arc::new(crate::confirm::TerminalConfirm) };
    let (host, frontends) = crate::session::open_reporting(Settings::resolve(g)?, confirm.clone())?;
    toolhost_frontends::service::Service::attach_audit(&host, &frontends, "cli")?;
    host.executor.attach_grant_asker(Arc::new(crate::confirm::TerminalGrants));
    let rt = super::async_runtime()?;
    let shown = Arc::new(Shown::new(json));
    let cancel = Cancel::new();
    let control = CallControl::default().with_cancel(cancel.clone()).with_progress(shown.clone());
    let call = ToolCall { name: tool, args };
    let outcome = rt.block_on(async {
        let ctx = CallContext::local(None);
        let run = host.executor.call_controlled(&call, &*confirm, &ctx, &control);
        tokio::pin!(run);
        tokio::select! {
            o = &mut run => o,
            _ = tokio::signal::ctrl_c() => {
                cancel.cancel("Ctrl-C");
                run.await
            }
        }
    });
    shown.finish();
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
    Ok(match (outcome.success, outcome.kind) {
        (true, _) => ExitCode::SUCCESS,
        (false, Some(ErrorKind::Cancelled)) if cancel.is_cancelled() => ExitCode::from(130),
        (false, _) => ExitCode::from(1),
    })
}

/// Where a call's progress is shown.
enum Shown {
    /// `--json`: a JSON line per report on stdout.
    Json,
    /// A bar on stderr, a terminal (drawn once the first report arrives).
    Bar(indicatif::ProgressBar),
    /// A plain line per report on stderr (not a terminal).
    Lines,
}

impl Shown {
    fn new(json: bool) -> Shown {
        if json {
            Shown::Json
        } else if std::io::stderr().is_terminal() {
            Shown::Bar(indicatif::ProgressBar::hidden())
        } else {
            Shown::Lines
        }
    }

    /// Take the bar off the terminal before the outcome is printed.
    fn finish(&self) {
        if let Shown::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }

    fn show(&self, p: &Progress) {
        // The message is the plugin's text: escaped for the terminal, on one line.
        let message = term::line(&p.message).into_owned();
        match self {
            Shown::Json => {
                // One line each (JSON lines), escaped like every --json output.
                if let Ok(line) = serde_json::to_string(&serde_json::json!({ "progress": p })) {
                    println!("{}", term::json(&line));
                }
            }
            Shown::Lines => match p.total {
                Some(t) => eprintln!("progress: {}/{t} {message}", p.done),
                None => eprintln!("progress: {} {message}", p.done),
            },
            Shown::Bar(bar) => {
                if bar.is_hidden() {
                    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
                let style = match p.total {
                    Some(total) => {
                        bar.set_length(total);
                        "{bar:30.cyan/blue} {percent:>3}% {msg} (ETA {eta})"
                    }
                    None => "{spinner} {pos} {msg}",
                };
                if let Ok(s) = indicatif::ProgressStyle::with_template(style) {
                    bar.set_style(s);
                }
                bar.set_position(p.done);
                bar.set_message(message);
            }
        }
    }
}

impl ProgressSink for Shown {
    fn report<'a>(
        &'a self,
        progress: &'a Progress,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        self.show(progress);
        Box::pin(std::future::ready(()))
    }
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

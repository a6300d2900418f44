//! toolhost, the command line: clap's definitions ([`args`]), resolved into settings in one
//! place ([`settings`]), one file per subcommand ([`commands`]), the danger question on the
//! terminal ([`confirm`]) and the rendering of untrusted text for it ([`term`]), what the
//! commands print about plugins and tools ([`report`]), what the chat brings into a
//! conversation ([`attach`]), plugin projects (`build`, `new`, `dev`:
//! [`project`]) and OCI distribution ([`oci`]). The engine and the
//! sandbox are `toolhost-core`'s, the front ends `toolhost-frontends`'. Exit codes: 0 success,
//! 1 a tool call failed, 2 bad usage or configuration.

// clap turns the doc comments of arguments into `--help` text verbatim: they hold `[TOOL]`,
// `[trust]` and `HOST[:PORT]` as a terminal shows them, which rustdoc would take for links.
#![allow(rustdoc::broken_intra_doc_links)]

pub mod args;
pub mod attach;
pub mod commands;
pub mod confirm;
pub mod oci;
pub mod project;
pub mod report;
pub mod session;
pub mod settings;
pub mod term;

pub use args::GlobalArgs;
pub use commands::{Cli, Command};
pub use settings::Settings;

use clap::FromArgMatches;
use std::process::ExitCode;

/// Entry point for the binary: parse, run, map errors to exit code 2.
pub fn main() -> ExitCode {
    // Parsed from the definition whose help points into the book (`commands::book`).
    let matches = commands::book::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init_logging(cli.global.verbose);
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            let chain = e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ");
            eprintln!("toolhost: {}", term::text(&chain));
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        // Compilation progress (rare: compiled code is cached) is shown by default.
        0 => "warn,toolhost::runtime=info",
        1 => "info",
        _ => "debug",
    };
    let spec = std::env::var("TOOLHOST_LOG").ok().filter(|s| !s.trim().is_empty());
    let mut filter = spec
        .as_deref()
        .and_then(|s| tracing_subscriber::EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    // rmcp's debug and trace lines carry every request and response verbatim: tool arguments
    // and results, secrets among them (the audit trail redacts those; a log cannot). They stay
    // off unless the operator names rmcp explicitly in TOOLHOST_LOG.
    let rmcp_named = spec.as_deref().is_some_and(|s| s.contains("rmcp"));
    if !rmcp_named && let Ok(d) = "rmcp=info".parse() {
        filter = filter.add_directive(d);
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Plugins' log lines, captured output and file names are in there: rendered by `term`.
        .with_writer(term::LogStderr)
        // Colour only for a person at a terminal, never into pipes and log files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        // Never `eprintln!` about a line it could not write: that panics when stderr is gone.
        .log_internal_errors(false)
        .try_init();
    if rmcp_named {
        tracing::warn!(
            "TOOLHOST_LOG names rmcp: its debug lines show tool arguments and results verbatim, secrets included"
        );
    }
}

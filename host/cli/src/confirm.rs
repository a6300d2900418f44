//! The questions on the operator's terminal: the danger question ([`TerminalConfirm`]), which
//! the executor asks under policy `ask` for `call`, `run` and `chat`, and the grant question
//! ([`TerminalGrants`]: allow once / always / deny a grant a plugin requested and the operator
//! has not given). The rendering and the reading of the answer are [`crate::term`]'s.

use crate::term;
use std::future::Future;
use std::pin::Pin;
use toolhost_core::executor::{
    AskGrant, Confirm, DangerRequest, DecidedBy, Decision, GrantAnswer, GrantRequest, NoConfirm,
};

/// Ask the operator on the terminal (`/dev/tty`, see [`term::Tty`]; else deny like
/// [`NoConfirm`]). The question starts on a clean, reset line, shows the whole call with every
/// argument rendered by [`term::quoted`], and takes only an answer typed after it.
#[derive(Debug, Default)]
pub struct TerminalConfirm;

impl Confirm for TerminalConfirm {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            let mut heading =
                vec![format!("toolhost: tool `{}` (plugin `{}`) is marked dangerous.", req.tool, req.plugin)];
            heading.extend(req.notes.iter().map(|n| format!("  note: {}", term::line(n))));
            let question = term::Question { heading, tool: req.tool.clone(), args: req.args.clone() };
            match term::ask(question).await {
                term::Answer::Yes => Decision::Allow,
                term::Answer::No => {
                    Decision::Deny(format!("the operator declined to run dangerous tool `{}`", req.tool))
                }
                term::Answer::NoTerminal => NoConfirm.confirm(req).await,
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        if term::Tty::available() { DecidedBy::Terminal } else { DecidedBy::NoOne }
    }
}

/// Ask the operator on the terminal about a grant (`/dev/tty`, see [`term::Tty`]; with no
/// terminal, nobody is asked and the call fails with its note). Only the terminal answers:
/// standard input, a model's reply and a tool's arguments never do.
#[derive(Debug, Default)]
pub struct TerminalGrants;

impl AskGrant for TerminalGrants {
    fn ask<'a>(&'a self, req: &'a GrantRequest) -> Pin<Box<dyn Future<Output = GrantAnswer> + Send + 'a>> {
        Box::pin(async move {
            let heading = vec![
                format!("toolhost: {} — tool `{}` (plugin `{}`).", req.sentence(), req.tool, req.plugin),
                format!(
                    "  the plugin's manifest requests it and it is not granted; \"always\" writes it to {}",
                    toolhost_core::settings::grants::GRANTS_FILE
                ),
            ];
            let question = term::Question { heading, tool: req.tool.clone(), args: req.args.clone() };
            match term::ask_grant(question).await {
                term::GrantChoice::Once => GrantAnswer::Once,
                term::GrantChoice::Always => GrantAnswer::Always,
                term::GrantChoice::Deny => GrantAnswer::Deny,
                term::GrantChoice::Never => GrantAnswer::Never,
                term::GrantChoice::NoTerminal => GrantAnswer::NoOne,
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        if term::Tty::available() { DecidedBy::Terminal } else { DecidedBy::NoOne }
    }
}

//! The danger question on the operator's terminal ([`TerminalConfirm`]): the executor asks it
//! under policy `ask` for `call`, `run` and `chat`; the rendering and the reading of the answer
//! are [`crate::term`]'s.

use crate::term;
use std::future::Future;
use std::pin::Pin;
use toolhost_core::executor::{Confirm, DangerRequest, DecidedBy, Decision, NoConfirm};

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

//! The danger policy's question: what a person is shown ([`DangerRequest`]), their answer
//! ([`Decision`]), and who asks them ([`Confirm`]: no one, the `--yes` flag; the terminal and the
//! MCP client's own implementations live with their front ends).

pub use super::observer::DecidedBy;
use std::future::Future;
use std::pin::Pin;

/// What the danger check needs to show a human.
#[derive(Debug, Clone)]
pub struct DangerRequest {
    pub tool: String,
    pub plugin: String,
    pub args: Vec<String>,
    /// SHA-256 of the plugin file that will run (an approval is bound to this version).
    pub plugin_hash: [u8; 32],
    /// What the person should know besides the call, one line each (e.g. "git runs over files
    /// plugins can write").
    pub notes: Vec<String>,
}

/// An answer to a danger confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny(String),
}

/// Asks someone whether a dangerous call may run (policy `ask`).
pub trait Confirm: Send + Sync {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;

    /// Who answered, for the audit trail and metrics. Asked after [`Confirm::confirm`].
    fn decided_by(&self) -> DecidedBy {
        DecidedBy::FrontEnd
    }

    /// The refusal only stands for "asked, the answer comes with a retry" (2026-07-28 MCP).
    fn pending(&self) -> bool {
        false
    }

    /// Whether a question is answered while the call waits (a terminal, an MCP elicitation,
    /// the console, a flag), rather than by a retry of the whole request (2026-07-28 MCP): a
    /// code-mode script's inner call is asked only then (a retry would run the script again).
    fn asks_in_the_moment(&self) -> bool {
        true
    }

    /// Who asks this call's front end's human about a missing grant (see `grant`), in place
    /// of the executor's attached asker: an MCP client with elicitation.
    fn grants(&self) -> Option<&dyn super::grant::AskGrant> {
        None
    }
}

/// No one to ask: deny, and say how the operator can allow it.
#[derive(Debug, Default)]
pub struct NoConfirm;

impl Confirm for NoConfirm {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            Decision::Deny(format!(
                "tool `{}` is dangerous and needs confirmation, but there is no one to ask (danger policy `ask`, no terminal); \
                 the operator can confirm with `--yes` or set `[danger] policy = \"allow\"` in toolhost.toml",
                req.tool
            ))
        })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }
}

/// The operator confirmed up front (`--yes`).
#[derive(Debug, Default)]
pub struct AlwaysConfirm;

impl Confirm for AlwaysConfirm {
    fn confirm<'a>(&'a self, _req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async { Decision::Allow })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::Flag
    }
}

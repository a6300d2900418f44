//! Who may be asked a question over MCP: a danger confirmation or a grant question goes only to
//! a client that proved it is the operator's — over stdio (the operator started it), over HTTP
//! with one of the `[mcp] tokens` or, without tokens, with the process's local key as its bearer
//! token ([`crate::local_key`]). Anyone else who can reach a tokenless port (another local
//! process, a plugin of this very host through a proxy) still calls the tools that ask nothing,
//! but its dangerous calls are refused as when no one can be asked, its grant questions are not
//! asked, and a 2026-07-28 retry carrying answers (`requestState`, `inputResponses`) is refused.

use super::client::{Identity, LocalOperator};
use std::future::Future;
use std::pin::Pin;
use toolhost_core::executor::{
    AskGrant, Confirm, DangerRequest, DecidedBy, Decision, GrantAnswer, GrantRequest,
};

/// How a client without the key gets to be asked, for every refusal's text.
const HOW: &str = "without [mcp] tokens only a client that sends the key toolhost printed at start \
                   (Authorization: Bearer <key>) is asked; send it, or configure [mcp] tokens";

/// Whether the client of a request (its HTTP request's parts; `None` over stdio) may be asked
/// questions and answer them.
pub(crate) fn may_ask(parts: Option<&hyper::http::request::Parts>) -> bool {
    parts.is_none_or(|p| {
        p.extensions.get::<Identity>().is_some() || p.extensions.get::<LocalOperator>().is_some()
    })
}

/// The refusal of a retried call that carries answers from a client that may not give them.
pub(crate) fn answers_refused(tool: &str) -> String {
    format!(
        "the retried call of `{tool}` carries answers (requestState, inputResponses), but this client cannot answer questions: {HOW}"
    )
}

/// The confirmation of a client that may not be asked: every dangerous call under `ask` is
/// refused, every grant question unasked.
pub(crate) struct Keyless;

impl Confirm for Keyless {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(std::future::ready(Decision::Deny(format!(
            "tool `{}` is dangerous and needs confirmation, but this MCP client cannot be asked: {HOW}",
            req.tool
        ))))
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }

    fn grants(&self) -> Option<&dyn AskGrant> {
        Some(self)
    }
}

impl AskGrant for Keyless {
    fn ask<'a>(&'a self, _req: &'a GrantRequest) -> Pin<Box<dyn Future<Output = GrantAnswer> + Send + 'a>> {
        Box::pin(std::future::ready(GrantAnswer::NoOne))
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }

    fn by_default(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(with: impl FnOnce(&mut hyper::http::Extensions)) -> hyper::http::request::Parts {
        let mut req = hyper::Request::new(());
        with(req.extensions_mut());
        req.into_parts().0
    }

    #[test]
    fn only_stdio_a_token_or_the_key_may_be_asked() {
        assert!(may_ask(None), "stdio");
        assert!(may_ask(Some(&parts(|e| {
            e.insert(Identity(std::sync::Arc::new(toolhost_core::identity::Principal::token("ci"))));
        }))));
        assert!(may_ask(Some(&parts(|e| {
            e.insert(LocalOperator);
        }))));
        assert!(!may_ask(Some(&parts(|_| {}))), "HTTP without a token or the key");
    }
}

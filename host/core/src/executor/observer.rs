//! What a service mode needs from every call, without the executor knowing the service: the
//! [`CallObserver`] trait the executor calls around each call when one is attached
//! (`Executor::attach_observer`), and the records it hands over. `toolhost-frontends`'
//! `service::Service` implements it (admission during shutdown, metrics, the audit trail).

use super::Outcome;
use crate::registry::LoadedPlugin;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use toolhost_spec::ToolCall;

/// Who is calling, as far as the front end knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// `mcp-http`, `mcp-stdio`, …; `None`: the service's default for this command.
    pub front_end: Option<&'static str>,
    /// The MCP client's name (`clientInfo.name`).
    pub client: Option<String>,
    /// The name of the `[mcp] tokens` entry the HTTP request authenticated with.
    pub token: Option<String>,
    /// Who the request authenticated as (a static token's principal, or an OAuth access
    /// token's); `None`: nobody proved anything (stdio, the CLI, a tokenless HTTP server).
    pub principal: Option<std::sync::Arc<crate::identity::Principal>>,
    /// The IP address the HTTP request came from (`None`: not over HTTP).
    pub peer: Option<std::net::IpAddr>,
    /// The MCP session the call belongs to (a 2025 HTTP session's id; one per process over
    /// stdio); `None`: no session (a CLI call, a 2026-07-28 stateless request). What a bucket
    /// scoped per session (`[plugin.NAME] kv_scope = "session"`) is keyed by.
    pub session: Option<std::sync::Arc<str>>,
    /// The caller's span (W3C `traceparent` from the HTTP request or MCP `_meta`): the call's
    /// span continues its trace when telemetry is on.
    pub trace_parent: Option<crate::telemetry::TraceParent>,
    /// The number of the code-mode script's call ([`CallRecord::id`]) this call is an inner
    /// call of; `None`: the caller made it.
    pub parent: Option<u64>,
}

impl CallContext {
    /// The context of a call the operator's own process makes (through `front_end`): the
    /// local user's principal ([`crate::identity::Principal::local`]).
    pub fn local(front_end: Option<&'static str>) -> CallContext {
        CallContext {
            front_end,
            principal: Some(crate::identity::Principal::local()),
            ..CallContext::default()
        }
    }
}

/// What the executor learned about a call while running it, for the audit trail.
#[derive(Debug, Default, Clone)]
pub struct CallRecord {
    /// The call's number in this process (from 1; 0: a call no executor ran), so an observer
    /// can tell calls apart in [`CallObserver::progress`].
    pub id: u64,
    /// The plugin that served the tool (unset: no such tool).
    pub plugin: Option<Arc<LoadedPlugin>>,
    /// Set for a dangerous tool: the decision and who made it.
    pub danger: Option<DangerRecord>,
    /// Each grant question asked during the call, with its answer and who gave it.
    pub grants: Vec<GrantRecord>,
}

/// One question and its answer, for the audit trail (`grants` in an audit line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GrantRecord {
    /// `net api.github.com`.
    pub item: String,
    pub answer: GrantAnswer,
    pub by: DecidedBy,
}

/// A human's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantAnswer {
    /// Grant it for this call only.
    Once,
    /// Grant it now and from now on (written to the grants file).
    Always,
    /// Refuse it, and do not ask again in this session.
    Deny,
    /// Refuse it now and from now on (written to the grants file; never asked again).
    Never,
    /// No one could be asked (no terminal): refused as without the question.
    NoOne,
}

impl GrantAnswer {
    pub fn as_str(self) -> &'static str {
        match self {
            GrantAnswer::Once => "once",
            GrantAnswer::Always => "always",
            GrantAnswer::Deny => "deny",
            GrantAnswer::Never => "never",
            GrantAnswer::NoOne => "no_one",
        }
    }
}

/// A decision about a dangerous call, and who made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DangerRecord {
    pub by: DecidedBy,
    pub decision: DangerDecision,
}

/// What was decided about a dangerous call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DangerDecision {
    Allow,
    Deny,
    /// The question went to the client, whose answer comes with a retry.
    Asked,
}

/// Who decided about a dangerous call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// `[danger] policy` allow or deny.
    Policy,
    /// The operator at the terminal.
    Terminal,
    /// The person behind an MCP client (elicitation, or a 2026-07-28 confirmation).
    Elicitation,
    /// `--yes` on the command line.
    Flag,
    /// Policy `ask` with no one to ask.
    NoOne,
    /// A front end's own way of asking (an embedder's `Confirm`).
    FrontEnd,
    /// The person in the web console (its confirmation dialog or grant card).
    Console,
}

impl DangerDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            DangerDecision::Allow => "allow",
            DangerDecision::Deny => "deny",
            DangerDecision::Asked => "asked",
        }
    }
}

impl DecidedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Policy => "policy",
            DecidedBy::Terminal => "terminal",
            DecidedBy::Elicitation => "elicitation",
            DecidedBy::Flag => "flag",
            DecidedBy::NoOne => "no_one",
            DecidedBy::FrontEnd => "front_end",
            DecidedBy::Console => "console",
        }
    }
}

/// The record a running call fills in (shared with the observer, which reads it even when it
/// ended the call early).
pub type SharedRecord = Arc<Mutex<CallRecord>>;

/// A call, ready to run; the observer decides whether and for how long.
pub type CallRun<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// What a service does around every call of every front end: admit it (or answer it itself,
/// e.g. while shutting down), race it against its own deadline, then count and audit it. A
/// request the executor refused to prepare (an unknown tool, arguments that do not fit) or a
/// front end refused by its own rule comes through [`CallObserver::observe`] too, its run
/// already decided: every call is seen once, and only here.
pub trait CallObserver: Send + Sync {
    /// Run `run` (or not) for `call` made by `ctx`; `record` holds what the executor learned.
    fn observe<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a CallContext,
        record: SharedRecord,
        run: CallRun<'a>,
    ) -> CallRun<'a>;

    /// `call` found every slot it needs taken and would wait for one (until its deadline):
    /// let it wait — what is returned is held while it does (a gauge of waiting calls, its
    /// place under a cap of them) — or refuse with why (too many calls wait already), and the
    /// call is answered `busy` at once. The text is all anyone does with a refusal.
    fn wait(&self, call: &ToolCall, ctx: &CallContext) -> Result<Option<Box<dyn Send>>, String> {
        let _ = (call, ctx);
        Ok(None)
    }

    /// Whether this observer follows calls' progress ([`CallObserver::progress`]); a call's
    /// progress is only watched when someone does (the front end or the observer).
    fn wants_progress(&self) -> bool {
        false
    }

    /// A running call's progress (coalesced: at most about ten a second per call, the last
    /// always), for a live view of running calls; `id` is the call's [`CallRecord::id`].
    /// Called from the call's own task, only if [`CallObserver::wants_progress`]: return
    /// quickly.
    fn progress(&self, id: u64, call: &ToolCall, progress: &super::Progress) {
        let _ = (id, call, progress);
    }

    /// A resource was read ([`ResourceRead`]): count and audit it; the front end answers once
    /// the returned future is done.
    fn read<'a>(&'a self, read: ResourceRead<'a>) -> ReadDone<'a> {
        let _ = read;
        Box::pin(async {})
    }
}

/// One read of a resource the host serves (a skill's file, a whole skill, a plugin's resource),
/// by a front end: what the observer audits and counts.
#[derive(Debug, Clone, Copy)]
pub struct ResourceRead<'a> {
    /// The URI asked for, as given.
    pub uri: &'a str,
    /// How: `resources/read`, `skills/get` (MCP), `console`.
    pub method: &'static str,
    /// The plugin whose file it is; `None`: no such resource.
    pub plugin: Option<&'a LoadedPlugin>,
    /// The bytes served (0 when none was).
    pub bytes: u64,
    /// `ok`, `not_found`, or what else failed (an [`super::ErrorKind`]'s word, `not_text`).
    pub outcome: &'static str,
    pub ctx: &'a CallContext,
}

/// What observing a read leaves to wait for (its audit line made durable, as `[audit] fsync`
/// asks, before the answer).
pub type ReadDone<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The next call number (see [`CallRecord::id`]).
pub(crate) fn next_call_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

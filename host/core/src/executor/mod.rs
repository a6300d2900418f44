//! The executor: the one place every front end goes through to run a tool. It looks the tool
//! up, checks the arguments against the manifest (argCount, parseJson, rest), applies the
//! danger policy, runs the call in a fresh sandboxed store with the call's limits, and turns
//! whatever happened into an [`Outcome`] — errors are values for the model, never panics.

use crate::capability::net::{NetGrant, Refusal, redact, redact_owned, redaction_set};
use crate::capability::progress::ProgressCall;
use crate::capability::{Missing, MissingKind};
use crate::engine::Runtime;
use crate::registry::{LoadedPlugin, Registry, Served, ToolEntry};
use crate::sandbox::{CappedPipe, HostState, MemoryLimitExceeded, MemoryLimiter, STDIO_CAPTURE_BYTES};
use crate::settings::{Config, DangerPolicy, Limits};
use crate::telemetry::{CallSpan, Finished};
use crate::usage::{BusyTimed, Usage, micros};
use arc_swap::ArcSwap;
use slots::Shares;
use std::sync::Arc;
use std::time::Duration;
use toolhost_spec::manifest::ToolSpec;
use wasmtime::{Store, Trap, UpdateDeadline};

mod args;
mod ask;
mod call;
mod control;
mod danger;
mod export;
mod find;
pub mod grant;
mod notes;
pub mod observer;
mod outcome;
mod permit;
mod policy;
mod prepare;
mod prompt;
mod read;
mod run;
mod script;
mod slots;

pub use crate::capability::progress::Progress;
pub use args::{MAX_ARGS_BYTES, MAX_JSON_DEPTH, check_args, map_named, map_named_json};
pub use control::{CallControl, Cancel, ProgressSink};
pub use danger::{AlwaysConfirm, Confirm, DangerRequest, Decision, NoConfirm};
pub use export::RunFailure;
pub use grant::{AskGrant, GrantRequest};
pub use notes::missing_grant_note;
pub use observer::{
    CallContext, CallObserver, CallRecord, DangerDecision, DangerRecord, DecidedBy, GrantAnswer, GrantRecord,
    ResourceRead,
};
use outcome::structured_outcome;
pub use outcome::{ErrorKind, Note, Outcome, truncate};
pub use prepare::{CallRequest, PreparedCall};
pub use prompt::{
    CompleteError, Completion, GotPrompt, MAX_COMPLETIONS, PromptContent, PromptError, PromptMessage, Role,
};
pub use read::{Body, Read, ReadError};
pub use toolhost_spec::call::ToolCall;

/// The context of a call no front end describes: the embedding process's own (the local user).
static NO_CONTEXT: std::sync::LazyLock<CallContext> = std::sync::LazyLock::new(|| CallContext::local(None));
/// The control of a call nobody steers ([`CallControl::default`], as a static).
static NO_CONTROL: CallControl = CallControl { cancel: None, gone: None, progress: None };

/// Runs tool calls against the current registry snapshot.
pub struct Executor {
    runtime: Arc<Runtime>,
    config: Arc<Config>,
    registry: Arc<ArcSwap<Registry>>,
    confirm: Arc<dyn Confirm>,
    /// Call slots, global and per plugin, and each plugin's log budget.
    shares: Shares,
    /// What a service does around every call (shutdown, metrics, audit), once attached.
    observer: std::sync::OnceLock<Arc<dyn CallObserver>>,
    /// Who asks a human about a missing grant, once a front end attached one (see `grant`).
    asker: std::sync::OnceLock<Arc<dyn AskGrant>>,
    /// What the humans of this session answered about grants.
    session: grant::Session,
    /// The workspace, shared by every call's process capability (no copy per call).
    workspace: Arc<std::path::Path>,
    /// The secrets redacted from exported arguments, read at the first export that needs them.
    redactions: std::sync::OnceLock<NetGrant>,
    /// Every plugin's key-value store (`[kv]`).
    kv: Arc<crate::capability::kv::Stores>,
    /// Every identity's calls against `[rate_limits]`.
    rate: crate::rate::RateLimits,
    /// Code mode's script runner, compiled and linked on the first script (or why it cannot be).
    script: std::sync::OnceLock<Result<Arc<script::Runner>, String>>,
    /// Scripts running at once (`[code_mode] concurrency`: their share of the instance pool).
    scripts: tokio::sync::Semaphore,
}

impl Executor {
    pub fn new(
        runtime: Arc<Runtime>,
        config: Arc<Config>,
        registry: Arc<ArcSwap<Registry>>,
        confirm: Arc<dyn Confirm>,
    ) -> Self {
        let shares = Shares::new(&config);
        let workspace = Arc::from(config.workspace.as_path());
        let kv = Arc::new(crate::capability::kv::Stores::new(config.kv.clone()));
        let rate = crate::rate::RateLimits::new(config.rate_limits.clone());
        let scripts = tokio::sync::Semaphore::new(config.code_mode.concurrency as usize);
        Executor {
            runtime,
            config,
            registry,
            confirm,
            shares,
            observer: std::sync::OnceLock::new(),
            asker: std::sync::OnceLock::new(),
            session: grant::Session::default(),
            workspace,
            redactions: std::sync::OnceLock::new(),
            rate,
            kv,
            script: std::sync::OnceLock::new(),
            scripts,
        }
    }

    /// Every plugin's key-value store, as calls use them.
    pub fn kv(&self) -> &Arc<crate::capability::kv::Stores> {
        &self.kv
    }

    /// Ask `asker` about a grant a plugin requested and the operator did not give, when a call
    /// needs it and the plugin's `on_missing` is not `refuse` (once; `false` if one was
    /// attached). Without one, such a call fails with a note naming the grant.
    pub fn attach_grant_asker(&self, asker: Arc<dyn AskGrant>) -> bool {
        self.asker.set(asker).is_ok()
    }

    /// Route every call through `observer` from now on (once; `false` if one was attached).
    pub fn attach_observer(&self, observer: Arc<dyn CallObserver>) -> bool {
        self.observer.set(observer).is_ok()
    }

    /// The attached observer, if any.
    pub fn observer(&self) -> Option<&Arc<dyn CallObserver>> {
        self.observer.get()
    }

    /// Tell the observer, if any, that a front end served `read` (its audit line, its count).
    pub async fn observe_read(&self, read: ResourceRead<'_>) {
        if let Some(o) = self.observer.get() {
            o.read(read).await;
        }
    }

    /// Who the executor asks about a dangerous call unless a front end brings its own.
    pub fn confirm(&self) -> &Arc<dyn Confirm> {
        &self.confirm
    }

    /// The current registry snapshot.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.load_full()
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Run one call. Never panics and never returns a host error: every failure is an Outcome.
    ///
    /// This and the other shorthands return [`Executor::call_controlled`]'s own future rather
    /// than wrapping it in one more `async fn`: a call's future is a few KiB, and every layer
    /// of `async fn` around it copies all of it once more per call.
    pub fn call<'a>(&'a self, call: &'a ToolCall) -> impl Future<Output = Outcome> + 'a {
        self.call_controlled(call, &*self.confirm, &NO_CONTEXT, &NO_CONTROL)
    }

    /// [`Executor::call`], asking `confirm` (instead of the executor's own) about a dangerous
    /// tool under policy `ask` — a front end that can ask its client (MCP elicitation) does.
    pub fn call_with<'a>(
        &'a self,
        call: &'a ToolCall,
        confirm: &'a dyn Confirm,
    ) -> impl Future<Output = Outcome> + 'a {
        self.call_controlled(call, confirm, &NO_CONTEXT, &NO_CONTROL)
    }

    /// [`Executor::call_with`] on behalf of the client `ctx` names (for the audit trail).
    pub fn call_in<'a>(
        &'a self,
        call: &'a ToolCall,
        confirm: &'a dyn Confirm,
        ctx: &'a CallContext,
    ) -> impl Future<Output = Outcome> + 'a {
        self.call_controlled(call, confirm, ctx, &NO_CONTROL)
    }

    /// [`Executor::call_in`], steered by `control`: cancelled when its [`Cancel`] fires (the
    /// outcome is [`ErrorKind::Cancelled`]), its progress reports sent to its [`ProgressSink`]
    /// (and to the observer's [`CallObserver::progress`]) as they come, coalesced. The call is
    /// [prepared](Executor::prepare), then [run](Executor::run).
    pub async fn call_controlled(
        &self,
        call: &ToolCall,
        confirm: &dyn Confirm,
        ctx: &CallContext,
        control: &CallControl,
    ) -> Outcome {
        match self.prepare(CallRequest::Positional(call), ctx).await {
            Ok(prepared) => self.run(&prepared, confirm, ctx, control).await,
            Err(refused) => refused,
        }
    }

    /// Run a prepared call, asking `confirm` about it if its policy says so, on behalf of `ctx`
    /// and steered by `control` (see [`Executor::call_controlled`]).
    pub fn run<'a>(
        &'a self,
        prepared: &'a PreparedCall<'_>,
        confirm: &'a dyn Confirm,
        ctx: &'a CallContext,
        control: &'a CallControl,
    ) -> impl Future<Output = Outcome> + 'a {
        self.observed(prepared.call(), prepared.plugin(), ctx, Work::Run { prepared, confirm, control })
    }

    /// Refuse a prepared call by a front end's own rule (a task the client cannot take, a
    /// retry whose state does not open): `outcome`, counted and audited like every call.
    pub fn refuse<'a>(
        &'a self,
        prepared: &'a PreparedCall<'_>,
        outcome: Outcome,
        ctx: &'a CallContext,
    ) -> impl Future<Output = Outcome> + 'a {
        self.observed(prepared.call(), prepared.plugin(), ctx, Work::Settled(outcome))
    }

    /// `work` for `call` (of `plugin`) as every call goes: numbered, under its span when
    /// telemetry is on, through the observer when one is attached.
    async fn observed(
        &self,
        call: &ToolCall,
        plugin: Option<&Arc<LoadedPlugin>>,
        ctx: &CallContext,
        work: Work<'_>,
    ) -> Outcome {
        let id = observer::next_call_id();
        // The record is kept only for someone who reads it: the observer, or the span.
        let new_record = || {
            let record = observer::SharedRecord::default();
            {
                let mut r = record.lock().unwrap_or_else(|p| p.into_inner());
                (r.id, r.plugin) = (id, plugin.cloned());
            }
            record
        };
        // Telemetry off: one check, nothing else (see `telemetry`).
        let Some(span) =
            CallSpan::start(&call.name, ctx.front_end, ctx.trace_parent.as_ref(), ctx.principal.as_deref())
        else {
            let record = self.observer.get().map(|_| new_record());
            return self.call_observed(call, ctx, id, record, work).await;
        };
        let record = new_record();
        // The inner future is made in place, never held in a local first: a future moved out
        // of a local still takes its room in this one's (see `call`).
        let outcome = crate::telemetry::in_context(
            span.context().clone(),
            self.call_observed(call, ctx, id, Some(record.clone()), work),
        )
        .await;
        // Argument values only if the operator asked, and never a secret's value.
        let arguments =
            span.captures_arguments().then(|| self.redacted_args(&call.args, plugin.map(|p| &**p)));
        span.finish(Finished {
            plugin: plugin.map(|p| &*p.name),
            version: plugin.map(|p| p.manifest.version.as_str()),
            outcome: outcome.kind.map_or("ok", ErrorKind::as_str),
            usage: outcome.usage.as_ref(),
            arguments: arguments.as_deref(),
        });
        outcome
    }

    /// `args` with the value of every secret the host reads (`Config::secret_sources`, the
    /// audit trail's set) and of each secret granted to `plugin` replaced by
    /// `[secret NAME redacted]`.
    fn redacted_args(&self, args: &[String], plugin: Option<&LoadedPlugin>) -> Vec<String> {
        let host = self.redactions.get_or_init(|| redaction_set(self.config.secret_sources()));
        let granted = plugin.map(|p| &*p.grants.net);
        args.iter()
            .map(|a| {
                let a = redact(a, host);
                match granted {
                    Some(g) => redact(&a, g).into_owned(),
                    None => a.into_owned(),
                }
            })
            .collect()
    }

    /// The call through the observer, if one is attached (`record`, call number `id`: see
    /// [`Executor::call_recorded`]; always kept when an observer is attached).
    async fn call_observed(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        id: u64,
        record: Option<observer::SharedRecord>,
        work: Work<'_>,
    ) -> Outcome {
        match (self.observer.get(), record) {
            (Some(observer), Some(record)) => {
                let run = Box::pin(self.call_cancellable(ctx, id, Some(record.clone()), work));
                observer.observe(call, ctx, record, run).await
            }
            (_, record) => self.call_cancellable(ctx, id, record, work).await,
        }
    }

    /// The call, raced against its [`Cancel`]: a cancelled call's future is dropped wherever
    /// it is (waiting for a confirmation or a slot, or running in its sandbox; see `control`).
    async fn call_cancellable(
        &self,
        ctx: &CallContext,
        id: u64,
        rec: Option<observer::SharedRecord>,
        work: Work<'_>,
    ) -> Outcome {
        let (prepared, confirm, control) = match work {
            Work::Run { prepared, confirm, control } => (prepared, confirm, control),
            Work::Settled(outcome) => return outcome,
        };
        // The call's future is made where it is awaited, in each branch (see `call_controlled`).
        let Some(cancel) = &control.cancel else {
            return self.call_recorded(prepared, confirm, ctx, id, rec, control).await;
        };
        let started = std::time::Instant::now();
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                let o = cancel.outcome(prepared.name(), started.elapsed().as_millis());
                tracing::info!(tool = prepared.name(), "{}", o.text());
                o
            }
            o = self.call_recorded(prepared, confirm, ctx, id, rec, control) => o,
        }
    }
}

/// How a running call notes what it learns in its record (when someone reads it).
type Noter<'a> = dyn Fn(&dyn Fn(&mut CallRecord)) + Sync + 'a;

/// What a call, observed as every call is, comes to: a prepared call to run, or a refusal
/// already decided (by the preparation, or by a front end's rule).
enum Work<'a> {
    Run { prepared: &'a PreparedCall<'a>, confirm: &'a dyn Confirm, control: &'a CallControl },
    Settled(Outcome),
}

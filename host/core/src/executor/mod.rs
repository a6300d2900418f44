//! The executor: the one place every front end goes through to run a tool. It looks the tool
//! up, checks the arguments against the manifest (argCount, parseJson, rest), applies the
//! danger policy, runs the call in a fresh sandboxed store with the call's limits, and turns
//! whatever happened into an [`Outcome`] — errors are values for the model, never panics.

use crate::capability::log::{CallLog, LogCall};
use crate::capability::net::{NetCall, NetGrant, Refusal, redact, redact_owned, redaction_set};
use crate::capability::progress::ProgressCall;
use crate::capability::quota::CallMeter;
use crate::capability::{Missing, MissingKind};
use crate::engine::Runtime;
use crate::registry::{LoadedPlugin, Registry, Served, ToolEntry};
use crate::sandbox::{
    CallParts, CappedPipe, HostState, MemoryLimitExceeded, MemoryLimiter, STDIO_CAPTURE_BYTES,
};
use crate::settings::{Config, DangerPolicy, Limits};
use crate::telemetry::{CallSpan, Finished};
use crate::usage::{BusyTimed, Usage, micros};
use arc_swap::ArcSwap;
use slots::Shares;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use toolhost_spec::manifest::ToolSpec;
use wasmtime::{Store, Trap, UpdateDeadline};

/// Total bytes of arguments accepted for one call.
pub const MAX_ARGS_BYTES: usize = 1024 * 1024;
/// Deepest JSON nesting accepted in an argument (a guest decoding deeper JSON recursively
/// could exhaust its stack).
pub const MAX_JSON_DEPTH: usize = 128;
/// Epoch ticks a guest runs between yields to the async runtime: one, 5–9 ms (a tick may wait
/// for the kernel's own, see `engine::TICK`), so a cancelled busy guest stops within 10 ms. A
/// short call a tick happens to land in yields once, at once (a few µs, for about one call in
/// a thousand of 10 µs).
const YIELD_TICKS: u64 = 1;
/// Extra wall-clock time past the epoch deadline before the guard fires (covers host calls
/// that block, such as a guest sleeping, which epochs cannot interrupt).
const WALL_CLOCK_GRACE: Duration = Duration::from_millis(500);

mod control;
mod danger;
pub mod grant;
pub mod observer;
mod outcome;
mod slots;

pub use crate::capability::progress::Progress;
pub use control::{CallControl, Cancel, ProgressSink};
pub use danger::{AlwaysConfirm, Confirm, DangerRequest, Decision, NoConfirm};
pub use grant::{AskGrant, GrantRequest};
pub use observer::{
    CallContext, CallObserver, CallRecord, DangerDecision, DangerRecord, DecidedBy, GrantAnswer, GrantRecord,
};
use outcome::structured_outcome;
pub use outcome::{ErrorKind, Outcome, truncate};
pub use toolhost_spec::call::ToolCall;

/// The context of a call no front end describes ([`CallContext::default`], as a static).
static NO_CONTEXT: CallContext =
    CallContext { front_end: None, client: None, token: None, peer: None, trace_parent: None };
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
        }
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
    /// (and to the observer's [`CallObserver::progress`]) as they come, coalesced.
    pub async fn call_controlled(
        &self,
        call: &ToolCall,
        confirm: &dyn Confirm,
        ctx: &CallContext,
        control: &CallControl,
    ) -> Outcome {
        let id = observer::next_call_id();
        // The record is kept only for someone who reads it: the observer, or the span.
        let new_record = || {
            let record = observer::SharedRecord::default();
            record.lock().unwrap_or_else(|p| p.into_inner()).id = id;
            record
        };
        // Telemetry off: one check, nothing else (see `telemetry`).
        let Some(span) = CallSpan::start(&call.name, ctx.front_end, ctx.trace_parent.as_ref()) else {
            let record = self.observer.get().map(|_| new_record());
            return self.call_observed(call, confirm, ctx, control, id, record).await;
        };
        let record = new_record();
        // The inner future is made in place, never held in a local first: a future moved out
        // of a local still takes its room in this one's (see `call`).
        let outcome = crate::telemetry::in_context(
            span.context().clone(),
            self.call_observed(call, confirm, ctx, control, id, Some(record.clone())),
        )
        .await;
        let plugin = record.lock().unwrap_or_else(|p| p.into_inner()).plugin.clone();
        // Argument values only if the operator asked, and never a secret's value.
        let arguments = span.captures_arguments().then(|| self.redacted_args(&call.args, plugin.as_deref()));
        span.finish(Finished {
            plugin: plugin.as_ref().map(|p| &*p.name),
            version: plugin.as_ref().map(|p| p.manifest.version.as_str()),
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
        confirm: &dyn Confirm,
        ctx: &CallContext,
        control: &CallControl,
        id: u64,
        record: Option<observer::SharedRecord>,
    ) -> Outcome {
        match (self.observer.get(), record) {
            (Some(observer), Some(record)) => {
                let run =
                    Box::pin(self.call_cancellable(call, confirm, ctx, id, Some(record.clone()), control));
                observer.observe(call, ctx, record, run).await
            }
            (_, record) => self.call_cancellable(call, confirm, ctx, id, record, control).await,
        }
    }

    /// The call, raced against its [`Cancel`]: a cancelled call's future is dropped wherever
    /// it is (waiting for a confirmation or a slot, or running in its sandbox; see `control`).
    async fn call_cancellable(
        &self,
        call: &ToolCall,
        confirm: &dyn Confirm,
        ctx: &CallContext,
        id: u64,
        rec: Option<observer::SharedRecord>,
        control: &CallControl,
    ) -> Outcome {
        // The call's future is made where it is awaited, in each branch (see `call_controlled`).
        let Some(cancel) = &control.cancel else {
            return self.call_recorded(call, confirm, ctx, id, rec, control).await;
        };
        let started = std::time::Instant::now();
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                let o = cancel.outcome(&call.name, started.elapsed().as_millis());
                tracing::info!(tool = call.name, "{}", o.text());
                o
            }
            o = self.call_recorded(call, confirm, ctx, id, rec, control) => o,
        }
    }

    /// The call itself (number `id`), noting in `rec` the plugin that served it and any danger
    /// decision (nothing to note without a record: nobody reads it).
    async fn call_recorded(
        &self,
        call: &ToolCall,
        confirm: &dyn Confirm,
        ctx: &CallContext,
        id: u64,
        rec: Option<observer::SharedRecord>,
        control: &CallControl,
    ) -> Outcome {
        let note = |f: &dyn Fn(&mut CallRecord)| {
            if let Some(rec) = &rec {
                f(&mut rec.lock().unwrap_or_else(|p| p.into_inner()));
            }
        };
        // The snapshot is held for the whole call: a reload swaps the registry, and this call
        // finishes on the version it started with.
        let registry = self.registry.load_full();
        let entry = match registry.who_serves(&call.name) {
            Served::By(entry) => entry,
            // An ambiguous name never runs anything: the error names the plugins and the fix.
            Served::Ambiguous(conflict) => return Outcome::err(ErrorKind::UnknownTool, conflict.message()),
            Served::Nobody => {
                if let Some(search) = registry.search().filter(|_| call.name == crate::catalog::FIND_TOOLS) {
                    return self.find_tools(&registry, search, call);
                }
                return Outcome::err(ErrorKind::UnknownTool, unknown_tool_message(&registry, &call.name));
            }
        };
        let spec = entry.spec();
        let plugin = &entry.plugin;
        note(&|r| r.plugin = Some(plugin.clone()));
        let args = match check_args(spec, &call.args) {
            Ok(a) => a,
            Err(e) => return Outcome::err(ErrorKind::BadArguments, e),
        };
        if let Some(policy) = crate::view::call_policy(spec, plugin, &self.config) {
            let req = DangerRequest {
                tool: spec.name.clone(),
                plugin: plugin.name.to_string(),
                args: args.to_vec(),
                plugin_hash: plugin.hash,
                notes: registry.shared_write_notes(plugin, &self.config.workspace),
            };
            let decided = |decision, by| note(&|r| r.danger = Some(DangerRecord { decision, by }));
            let by_tool = self.config.tools.get(&spec.name).and_then(|t| t.policy).is_some();
            match policy {
                DangerPolicy::Allow => decided(DangerDecision::Allow, DecidedBy::Policy),
                DangerPolicy::Deny => {
                    decided(DangerDecision::Deny, DecidedBy::Policy);
                    let message = if by_tool {
                        format!(
                            "tool `{0}` is disabled by the operator ([tool.{0}] policy = \"deny\")",
                            spec.name
                        )
                    } else {
                        format!("tool `{}` is dangerous and the danger policy is `deny`", spec.name)
                    };
                    return Outcome::err(ErrorKind::Denied, message);
                }
                DangerPolicy::Ask => {
                    let decision = confirm.confirm(&req).await;
                    let by = confirm.decided_by();
                    if let Decision::Deny(why) = decision {
                        let decision =
                            if confirm.pending() { DangerDecision::Asked } else { DangerDecision::Deny };
                        decided(decision, by);
                        return Outcome::err(ErrorKind::Denied, why);
                    }
                    decided(DangerDecision::Allow, by);
                }
            }
        }
        let limits = self.config.limits_for_tool(&plugin.name, spec);
        let observer = self.observer.get().filter(|o| o.wants_progress());
        let watch =
            Watch { call, ctx, gone: control.gone.as_ref(), id, sink: control.progress.as_ref(), observer };
        let mut extra = self.session.allowed(&plugin.name);
        let (mut outcome, mut refused, mut outside) = self.run(entry, &args, limits, watch, &extra).await;
        let mut denied = Vec::new();
        for _ in 0..grant::MAX_QUESTIONS {
            if outcome.kind != Some(ErrorKind::ToolError) {
                break;
            }
            let Some((req, asker)) =
                self.grant_question(entry, confirm, &args, &refused, &outside, &mut denied)
            else {
                break;
            };
            let answer = asker.ask(&req).await;
            let record = GrantRecord { item: req.item.to_string(), answer, by: asker.decided_by() };
            tracing::info!(
                plugin = req.plugin,
                tool = req.tool,
                item = record.item,
                answer = answer.as_str(),
                by = record.by.as_str(),
                "grant question answered"
            );
            note(&|r| r.grants.push(record.clone()));
            match answer {
                GrantAnswer::Once => extra.push(req.item.clone()),
                GrantAnswer::Always | GrantAnswer::Never => {
                    let deny = answer == GrantAnswer::Never;
                    let g = crate::settings::AskedGrant {
                        plugin: plugin.name.to_string(),
                        item: req.item.clone(),
                        granted: crate::settings::grants::rfc3339(std::time::SystemTime::now()),
                        by: record.by.as_str().to_string(),
                        deny,
                        sha256: Some(hex::encode(plugin.hash)),
                    };
                    if let Err(e) = crate::settings::grants::add(&self.config.grants_file, g) {
                        tracing::warn!("{e}; the answer holds for this session only");
                    }
                    if deny {
                        self.session.deny(&plugin.name, &req.item);
                        denied.push(req.item);
                        break;
                    }
                    self.session.allow(&plugin.name, &req.item);
                    extra.push(req.item.clone());
                }
                GrantAnswer::Deny => {
                    self.session.deny(&plugin.name, &req.item);
                    denied.push(req.item);
                    break;
                }
                GrantAnswer::NoOne => break,
            }
            (outcome, refused, outside) = self.run(entry, &args, limits, watch, &extra).await;
        }
        if !denied.is_empty()
            && let Some(e) = outcome.error.as_mut()
        {
            let items: Vec<String> = denied.iter().map(ToString::to_string).collect();
            e.push_str(&format!(
                "\n[note: the operator denied plugin `{}` {} for this session]",
                plugin.name,
                items.join(", ")
            ));
        }
        if !outcome.success && !outside.is_empty() {
            // The failure is about a path the plugin has no access to: say so first.
            let mut o = outcome;
            let e = o.error.take().unwrap_or_default();
            let mut message = format!("{}\n{e}", no_access_message(plugin, &outside));
            let others: Vec<Missing> =
                plugin.missing.iter().filter(|m| !matches!(m.kind, MissingKind::Fs(_))).cloned().collect();
            if o.kind == Some(ErrorKind::ToolError)
                && let Some(note) = missing_grant_note(&plugin.name, &others, &refused)
            {
                message.push_str(&format!("\n[note: {note}]"));
            }
            o.error = Some(message);
            return o;
        }
        if outcome.kind == Some(ErrorKind::ToolError)
            && let Some(note) = missing_grant_note(&plugin.name, &plugin.missing, &refused)
        {
            let mut o = outcome;
            let e = o.error.take().unwrap_or_default();
            o.error = Some(format!("{e}\n[note: {note}]"));
            return o;
        }
        outcome
    }

    /// The next grant question about a failed call of `entry` that the host refused `refused`
    /// for, and who asks it: none when the plugin's `on_missing` is `refuse`, no asker is
    /// attached, or every askable item was denied (this session, or in `denied` for this call).
    fn grant_question<'a>(
        &'a self,
        entry: &ToolEntry,
        confirm: &'a dyn Confirm,
        args: &[String],
        refused: &[Refusal],
        outside: &[String],
        denied: &mut Vec<crate::settings::GrantItem>,
    ) -> Option<(GrantRequest, &'a dyn AskGrant)> {
        let plugin = &entry.plugin;
        let asker: &dyn AskGrant = match confirm.grants() {
            Some(a) => a,
            None => &**self.asker.get()?,
        };
        match self.config.plugin(&plugin.name).on_missing {
            Some(crate::settings::OnMissing::Refuse) => return None,
            None if !asker.by_default() => return None,
            _ => {}
        }
        let this_version =
            self.config.plugin(&plugin.name).asked_grants == Some(crate::settings::AskedGrants::ThisVersion);
        let here = hex::encode(plugin.hash);
        let secrets = &plugin.manifest.capabilities.secrets;
        let defined = |name: &str| self.config.secrets.contains_key(name);
        let exec = &plugin.grants.exec;
        let program_granted = |name: &str| exec.granted.iter().any(|g| g.grant.name == name);
        let programs = grant::askable_programs(
            &exec.requested,
            &program_granted,
            &crate::capability::process::resolve_in_path,
            refused,
        );
        let workspace = grant::askable_workspace(
            &plugin.manifest.capabilities.fs,
            &plugin.grants.fs,
            &self.config.workspace,
            outside,
            self.config.workspace_writable(),
        );
        let items = grant::askable(&plugin.grants.net.requested, secrets, &defined, refused)
            .into_iter()
            .chain(programs)
            .chain(workspace);
        for item in items {
            let never = self.config.asked_for(&plugin.name).any(|g| {
                g.deny && g.item == item && (!this_version || g.sha256.as_deref() == Some(here.as_str()))
            });
            if never || self.session.denied(&plugin.name, &item) {
                if !denied.contains(&item) {
                    denied.push(item);
                }
                continue;
            }
            let req = GrantRequest {
                plugin: plugin.name.to_string(),
                tool: entry.spec().name.clone(),
                args: args.to_vec(),
                item,
                plugin_hash: plugin.hash,
            };
            return Some((req, asker));
        }
        None
    }

    /// `find_tools` in search mode: the best matches for the query, each with its name,
    /// description and the JSON Schema of its arguments, as a JSON object for the model — whole
    /// entries only, as many as fit the output limit (at least one).
    fn find_tools(&self, registry: &Registry, search: &crate::registry::Search, call: &ToolCall) -> Outcome {
        let args = match check_args(&search.spec, &call.args) {
            Ok(a) => a,
            Err(e) => return Outcome::err(ErrorKind::BadArguments, e),
        };
        let query = args.first().map(String::as_str).unwrap_or_default();
        let mut found = Vec::new();
        for name in search.index.search(query, self.config.catalog.results) {
            let Some(entry) = registry.get(name) else { continue };
            let view = crate::view::ToolView::new(entry, &self.config);
            let mut tool = serde_json::json!({
                "name": entry.name(),
                "title": view.title(),
                "description": view.description_with_danger_note(),
                "usage": entry.spec().signature(),
                "parameters": toolhost_spec::schema::parameters(entry.spec()),
            });
            let openai = crate::catalog::openai_name(entry.name());
            if openai != entry.name() {
                tool["openaiName"] = openai.into_owned().into();
            }
            found.push(tool);
        }
        let note = if found.is_empty() {
            "no tool matches; try other words"
        } else {
            "call a tool by its name with the arguments its parameters describe"
        };
        let mut shown = found.len();
        loop {
            let data = serde_json::json!({
                "query": query,
                "tools": &found[..shown],
                "note": note,
            })
            .to_string();
            if data.chars().count() <= self.config.limits.output_limit || shown <= 1 {
                return Outcome::ok(data, shown < found.len());
            }
            shown -= 1;
        }
    }

    async fn run(
        &self,
        entry: &ToolEntry,
        args: &[String],
        limits: Limits,
        watch: Watch<'_>,
        extra: &[crate::settings::GrantItem],
    ) -> (Outcome, Vec<Refusal>, Vec<String>) {
        let (plugin, spec) = (&entry.plugin, entry.spec());
        // What a human granted for this call (or this session) on top of the plugin's grants.
        let extra_fs = match extra {
            [] => Vec::new(),
            _ => {
                let workspace = self.config.workspace_grant(toolhost_spec::manifest::FsMode::ReadWrite);
                grant::extra_dirs(extra, &plugin.grants.fs, &workspace)
            }
        };
        let exec = grant::extra_programs(extra, &plugin.grants.exec);
        let net_grant = if extra.is_empty() {
            plugin.grants.net.clone()
        } else {
            let mut g = (*plugin.grants.net).clone();
            for item in extra {
                match item {
                    crate::settings::GrantItem::Net(host) if !g.granted.contains(host) => {
                        g.granted.push(host.clone())
                    }
                    crate::settings::GrantItem::Net(_) => {}
                    crate::settings::GrantItem::Secret(name)
                        if !g.secrets.iter().any(|s| &s.name == name) =>
                    {
                        // Read now, like a granted secret at load; one that cannot be read
                        // stays refused (the call's error says so).
                        match self.config.secrets.get(name).map(|src| (src, src.read())) {
                            Some((src, Ok(value))) => g.secrets.push(crate::capability::net::GrantedSecret {
                                name: name.clone(),
                                value,
                                hosts: src.hosts.clone(),
                            }),
                            Some((_, Err(why))) => tracing::warn!("{why}"),
                            None => {}
                        }
                    }
                    crate::settings::GrantItem::Secret(_)
                    | crate::settings::GrantItem::Fs { .. }
                    | crate::settings::GrantItem::Exec { .. } => {}
                }
            }
            Arc::new(g)
        };
        // A plugin loaded from the warm compile cache is linked on first use (see
        // `registry::Code`): off the async workers, as it blocks for about a millisecond.
        if !plugin.code.is_ready() {
            let p = plugin.clone();
            let _ = tokio::task::spawn_blocking(move || p.code.get().map(drop).map_err(str::to_string)).await;
        }
        let pre = match plugin.code.get() {
            Ok(pre) => pre,
            Err(e) => {
                return (
                    Outcome::err(ErrorKind::HostError, format!("tool `{}`: {e}", spec.name)),
                    Vec::new(),
                    Vec::new(),
                );
            }
        };
        let (stdout, stderr) = CappedPipe::pair(STDIO_CAPTURE_BYTES);
        let wasi = match plugin.grants.wasi_ctx_with(&extra_fs, stdout.clone(), stderr.clone()) {
            Ok(w) => w,
            Err(e) => {
                let o = Outcome::err(
                    ErrorKind::HostError,
                    format!("cannot set up the sandbox for `{}`: {e}", spec.name),
                );
                return (o, Vec::new(), Vec::new());
            }
        };
        let timeout = Duration::from_millis(limits.timeout_ms);
        // The deadline counts from the call's arrival: waiting for a slot is part of it.
        let arrived = std::time::Instant::now();
        let deadline = arrived + timeout;
        let share = self.shares.plugin(&plugin.name, &self.config);
        let slot = match self.shares.try_acquire(&share) {
            Some(slot) => slot,
            None => match self.wait_for_slot(entry, &share, arrived, deadline, watch).await {
                Ok(slot) => slot,
                Err(o) => return (o, Vec::new(), Vec::new()),
            },
        };
        // A call that found its slots free started when it arrived (no second clock read).
        let started = if slot.waited { std::time::Instant::now() } else { arrived };
        let net = NetCall::new(plugin.name.clone(), net_grant.clone(), self.config.net, deadline);
        let log = LogCall {
            tool: entry.shared_name().clone(),
            budget: CallLog::new(&limits, Some(share.log.clone())),
        };
        // Moved once, into the store (the call's state is large: every move of it is a copy).
        let mut store = Store::new(
            &self.runtime.engine,
            HostState::new(
                wasi,
                CallParts {
                    limiter: MemoryLimiter::new(limits.memory_mb),
                    net,
                    log,
                    meter: CallMeter::new(limits.write_mb, limits.create_limit),
                    process: crate::capability::process::ProcessCall {
                        plugin: plugin.name.clone(),
                        exec,
                        workspace: self.workspace.clone(),
                        create_workspace: self.config.workspace_is_default,
                        deadline: Some(deadline),
                        runs: 0,
                        settings: self.config.process.clone(),
                        refused: Vec::new(),
                    },
                },
            ),
        );
        // Progress is watched only when someone follows it (a front end's sink, an observer).
        let progress = (watch.sink.is_some() || watch.observer.is_some()).then(|| {
            let (p, rx) = ProgressCall::watched();
            store.data_mut().progress = p;
            rx
        });
        let forwarder = progress.map(|rx| control::Forwarder::new(rx, move |p: Progress| watch.deliver(p)));
        store.data_mut().outside.armed = plugin.grants.guards_outside_with(&extra_fs);
        store.limiter(|s| &mut s.limiter);
        // Every few ticks the guest yields to the async runtime (so a busy guest cannot starve
        // other calls or the host's own tasks); past its deadline it is interrupted. The
        // deadline is read from the store (the call's `NetCall` holds it): the callback
        // captures nothing, so wasmtime boxes a zero-sized closure, without allocating.
        store.epoch_deadline_callback(|s| {
            Ok(if std::time::Instant::now() >= s.data().net.deadline {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::Yield(YIELD_TICKS)
            })
        });
        store.set_epoch_deadline(YIELD_TICKS);

        let (result, busy, ended) = {
            // On the heap: wasmtime's instantiation and call futures are most of a call's
            // future (several KiB), and every `async fn` layer above this one would otherwise
            // copy them once more per call; one allocation copies them once.
            let run = Box::pin(async {
                let instance = pre.instantiate_async(&mut store).await?;
                // The plugin is called with its own name for the tool, whatever it is exposed as.
                instance.toolhost_plugin_tools().call_call(&mut store, entry.own_name(), args).await
            });
            // From the deadline already computed: no clock read.
            let guard = tokio::time::Instant::from_std(deadline + WALL_CLOCK_GRACE);
            let guest = std::pin::pin!(tokio::time::timeout_at(guard, run));
            let guest = BusyTimed::new(guest);
            match &forwarder {
                None => guest.await,
                // The last report goes out before the outcome.
                Some(f) => f.around(guest).await,
            }
        };
        let memory_hit = store.data().limiter.hit;
        let mut refused = std::mem::take(&mut store.data_mut().net.refused);
        refused.append(&mut store.data_mut().process.refused);
        let outside = std::mem::take(&mut store.data_mut().outside.paths);
        let usage = self.usage(store.data(), &limits, busy, started.duration_since(arrived), ended - started);
        drop(store);
        let (out, out_dropped) = stdout.take();
        let (err, err_dropped) = stderr.take();
        let net = &*net_grant;
        let (out, err) = (redact_owned(out, net), redact_owned(err, net));
        // A path is the guest's text too: it may hold a secret.
        let outside: Vec<String> = outside.into_iter().map(|p| redact_owned(p, net)).collect();
        log_stdio(&plugin.name, &spec.name, "stdout", &out, out_dropped);
        log_stdio(&plugin.name, &spec.name, "stderr", &err, err_dropped);

        let limit = limits.output_limit;
        let mut outcome = match result {
            Err(_elapsed) => Outcome::err(ErrorKind::Timeout, timeout_message(spec, limits)),
            // A granted secret's value never reaches the model, whatever the plugin did.
            Ok(Ok(Ok(data))) => {
                let data = redact_owned(data, net);
                match entry.output_validator() {
                    Some(Ok(validator)) => structured_outcome(spec, validator, data, limit),
                    Some(Err(e)) => Outcome::err(ErrorKind::HostError, e.to_string()),
                    None => {
                        let (data, truncated) = truncate(data, limit);
                        Outcome::ok(data, truncated)
                    }
                }
            }
            Ok(Ok(Err(message))) => {
                let message = outcome::without_os_error_numbers(&message);
                Outcome::err(ErrorKind::ToolError, truncate(redact_owned(message, net), limit).0)
            }
            Ok(Err(e)) => classify_trap(spec, limits, &e, memory_hit, &err),
        };
        if let (Some(q), Some(e)) = (&usage.quota, outcome.error.as_mut()) {
            // The plugin failed after its quota stopped a write: say which limit, and how to
            // raise it (a plugin that carried on and succeeded has it in `usage` only).
            e.push_str(&format!(
                "\n[note: {q}; the operator can raise it with [limits], [plugin.{p}] or [tool.{t}] write_mb / create_limit in toolhost.toml]",
                p = plugin.name,
                t = spec.name
            ));
        }
        outcome.usage = Some(usage);
        (outcome, refused, outside)
    }

    /// Wait for a slot of `share` until `deadline` — if the observer lets the call wait (it
    /// refuses when too many calls wait already: `busy` at once), and only while its client is
    /// there: a call whose client went away ([`CallControl::gone`]) is dropped before it runs.
    async fn wait_for_slot<'a>(
        &'a self,
        entry: &ToolEntry,
        share: &'a slots::PluginShare,
        arrived: std::time::Instant,
        deadline: std::time::Instant,
        watch: Watch<'_>,
    ) -> Result<slots::Slot<'a>, Outcome> {
        let (plugin, tool) = (&entry.plugin.name, &entry.spec().name);
        let place = match self.observer.get().map(|o| o.wait(watch.call, watch.ctx)) {
            Some(Err(why)) => {
                // Not louder: a flood of refusals must not flood the log.
                tracing::debug!(plugin = &**plugin, tool, "call refused: {why}");
                return Err(Outcome::err(ErrorKind::Busy, why));
            }
            Some(Ok(place)) => place,
            None => None,
        };
        let acquire = self.shares.acquire(share, deadline.into());
        let acquired = match watch.gone {
            None => acquire.await,
            Some(gone) => tokio::select! {
                biased;
                () = gone.cancelled() => {
                    let o = gone.gone_outcome(tool, arrived.elapsed().as_millis());
                    tracing::info!(plugin = &**plugin, tool, "{}", o.text());
                    return Err(o);
                }
                acquired = acquire => acquired,
            },
        };
        drop(place);
        acquired.map_err(|busy| {
            Outcome::err(ErrorKind::Busy, busy.message(plugin, tool, arrived.elapsed().as_millis()))
        })
    }

    /// The cost of the call, from the store's meters; logs what the log limits dropped.
    fn usage(
        &self,
        state: &HostState,
        limits: &Limits,
        busy: Duration,
        queued: Duration,
        wall: Duration,
    ) -> Usage {
        let log = &state.log.budget;
        if let Some(note) = log.dropped_note(limits, self.config.log_rate) {
            tracing::warn!(plugin = &**state.plugin(), tool = &**state.tool(), "{note}");
        }
        Usage {
            busy_us: micros(busy),
            wall_us: micros(wall),
            queued_us: micros(queued),
            peak_memory_kb: state.limiter.peak_bytes() / 1024,
            written_bytes: state.meter.written(),
            created: state.meter.created(),
            http_requests: state.net.requests,
            http_sent_bytes: state.net.sent_bytes,
            http_received_bytes: state.net.received_bytes,
            log_lines: log.lines,
            log_dropped: log.dropped_lines,
            quota: state.meter.hit().map(|h| state.meter.message(h)),
        }
    }
}

/// One call as those around it see it: who made it (and whether they are still there, for a
/// call waiting for a slot), and who follows its progress — the front end's sink and the
/// observer.
#[derive(Clone, Copy)]
struct Watch<'a> {
    call: &'a ToolCall,
    ctx: &'a CallContext,
    gone: Option<&'a Cancel>,
    id: u64,
    sink: Option<&'a Arc<dyn ProgressSink>>,
    observer: Option<&'a Arc<dyn CallObserver>>,
}

impl Watch<'_> {
    async fn deliver(self, p: Progress) {
        if let Some(o) = self.observer {
            o.progress(self.id, self.call, &p);
        }
        if let Some(s) = self.sink {
            s.report(&p).await;
        }
    }
}

/// The first line of a failed call's error when it tried paths outside every directory granted
/// to it: `` `files` has no access to `README.txt`: not granted (…) ``.
fn no_access_message(plugin: &LoadedPlugin, paths: &[String]) -> String {
    let shown: Vec<String> =
        paths.iter().map(|p| format!("`{}`", p.chars().take(200).collect::<String>())).collect();
    let why = {
        let fs_missing: Vec<String> = plugin
            .missing
            .iter()
            .filter(|m| matches!(m.kind, MissingKind::Fs(_)))
            .map(|m| format!("it requests {} (grant: {})", m.what, m.how))
            .collect();
        let granted: Vec<String> = plugin.grants.fs.iter().map(|g| g.guest_path()).collect();
        if !fs_missing.is_empty() {
            format!("not granted — {}", fs_missing.join("; "))
        } else if granted.is_empty() {
            "not granted — the plugin requests no directory".to_string()
        } else {
            format!("outside the directories granted to it ({})", granted.join(", "))
        }
    };
    format!("`{}` has no access to {}: {why}", plugin.name, shown.join(", "))
}

/// The note added to a tool error from a plugin that lacks some requested capability.
///
/// Network and secret refusals are recorded by the host as they happen, so when the call hit
/// one, the note names exactly the grant that would have allowed it. Directories and
/// variables that are not granted are invisible to the host (they simply do not exist for the
/// guest), so when nothing was refused the note lists those, and says they are candidates.
/// Grants the call demonstrably did not need are never mentioned.
pub fn missing_grant_note(plugin: &str, missing: &[Missing], refused: &[Refusal]) -> Option<String> {
    let hint = |m: &Missing| format!("{} (grant: {})", m.what, m.how);
    let explained: Vec<String> =
        missing.iter().filter(|m| refused.iter().any(|r| m.explains(r))).map(hint).collect();
    if !explained.is_empty() {
        return Some(format!(
            "the host refused what plugin `{plugin}` tried because it is not granted: {}",
            explained.join("; ")
        ));
    }
    if !refused.is_empty() {
        // Refused for a reason no grant of the manifest's request would fix (e.g. a host the
        // manifest does not ask for): the error itself says why.
        return None;
    }
    let unseen: Vec<String> = missing.iter().filter(|m| !m.observable()).map(hint).collect();
    (!unseen.is_empty()).then(|| {
        format!(
            "plugin `{plugin}` is not granted everything it requested; the failure may come from one of these: {}",
            unseen.join("; ")
        )
    })
}

fn timeout_message(spec: &ToolSpec, limits: Limits) -> String {
    format!("tool `{}` timed out after {} ms (limit: timeout_ms)", spec.name, limits.timeout_ms)
}

fn classify_trap(
    spec: &ToolSpec,
    limits: Limits,
    e: &wasmtime::Error,
    memory_hit: bool,
    stderr: &str,
) -> Outcome {
    if memory_hit || e.downcast_ref::<MemoryLimitExceeded>().is_some() {
        return Outcome::err(
            ErrorKind::MemoryLimit,
            format!(
                "tool `{}` exceeded its memory limit of {} MiB (limit: memory_mb)",
                spec.name, limits.memory_mb
            ),
        );
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Outcome::err(ErrorKind::Timeout, timeout_message(spec, limits)),
        Some(Trap::StackOverflow) => Outcome::err(
            ErrorKind::StackOverflow,
            format!("tool `{}` overflowed its wasm stack (too deep recursion)", spec.name),
        ),
        trap => {
            let what = trap
                .map(|t| t.to_string())
                .unwrap_or_else(|| e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": "));
            // A Rust guest's panic is on its stderr just before the trap: `thread '…' panicked
            // at FILE:LINE:COL:` and the message on the next line.
            let lines: Vec<&str> = stderr.lines().collect();
            let panic = lines.iter().rposition(|l| l.contains("panicked")).map(|i| {
                let mut p = lines[i].trim().to_string();
                if p.ends_with(':')
                    && let Some(next) = lines.get(i + 1)
                {
                    p.push(' ');
                    p.push_str(next.trim());
                }
                p
            });
            let mut msg = format!("tool `{}` crashed: {what}", spec.name);
            if let Some(p) = panic {
                msg.push_str(&format!(" ({})", p.chars().take(500).collect::<String>()));
            }
            Outcome::err(ErrorKind::Trap, msg)
        }
    }
}

fn log_stdio(plugin: &str, tool: &str, stream: &str, text: &str, dropped: usize) {
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        tracing::info!(plugin, tool, stream, "{line}");
    }
    if dropped > 0 {
        tracing::info!(plugin, tool, stream, "… {dropped} more bytes dropped");
    }
}

fn unknown_tool_message(registry: &Registry, name: &str) -> String {
    let close = registry.suggest(name);
    if !close.is_empty() {
        return format!("unknown tool `{name}`; did you mean: {}?", close.join(", "));
    }
    if registry.search().is_some() {
        return format!(
            "unknown tool `{name}`; search the catalog with {}(\"what you want to do\")",
            crate::catalog::FIND_TOOLS
        );
    }
    let all: Vec<&str> = registry.tools().map(ToolEntry::name).take(30).collect();
    if all.is_empty() {
        format!("unknown tool `{name}`; no tools are loaded")
    } else {
        format!("unknown tool `{name}`; available tools: {}", all.join(", "))
    }
}

/// Check `args` against the manifest, join `rest` args with `,`, validate JSON args.
pub fn check_args<'a>(spec: &ToolSpec, args: &'a [String]) -> Result<Cow<'a, [String]>, String> {
    let total: usize = args.iter().map(String::len).sum();
    if total > MAX_ARGS_BYTES {
        return Err(format!(
            "the arguments to `{}` are {} KiB, over the {} KiB limit per call",
            spec.name,
            total / 1024,
            MAX_ARGS_BYTES / 1024
        ));
    }
    let n = spec.params.len();
    // Borrowed unless a rest param's values are joined: a call's arguments are not copied.
    let args: Cow<'a, [String]> = if spec.rest && args.len() > n {
        let mut joined = args[..n - 1].to_vec();
        joined.push(args[n - 1..].join(","));
        Cow::Owned(joined)
    } else {
        Cow::Borrowed(args)
    };
    let required = spec.required_count();
    if args.len() < required || args.len() > n {
        let expected = if required == n {
            format!("{n} argument{}", if n == 1 { "" } else { "s" })
        } else {
            format!("{required} to {n} arguments")
        };
        return Err(format!(
            "`{}` takes {expected} but got {}; usage: {}",
            spec.name,
            args.len(),
            spec.signature()
        ));
    }
    for (i, arg) in args.iter().enumerate() {
        if spec.is_json(i) {
            let depth = json_depth(arg);
            if depth > MAX_JSON_DEPTH {
                return Err(format!(
                    "argument {} (`{}`) of `{}` is JSON nested {depth} levels deep; at most {MAX_JSON_DEPTH} are accepted",
                    i + 1,
                    spec.params[i].name,
                    spec.name
                ));
            }
            if let Some(problem) = json_arg_problem(&spec.params[i], arg) {
                let param = &spec.params[i].name;
                return Err(format!(
                    "argument {} (`{param}`) of `{}` {problem}; usage: {}",
                    i + 1,
                    spec.name,
                    spec.signature()
                ));
            }
        }
    }
    Ok(args)
}

/// Why the text of a JSON argument does not fit its param's type, in the words every front end
/// uses (`must be a number, got `ten``): not JSON at all, or JSON of another type.
/// An optional param also takes `null` (left off).
fn json_arg_problem(param: &toolhost_spec::manifest::ParamSpec, arg: &str) -> Option<String> {
    use toolhost_spec::manifest::{type_name, type_phrase, value_has_type};
    let shown = || {
        let t = arg.trim();
        let short: String = t.chars().take(40).collect();
        if short.len() < t.len() { format!("`{short}…`") } else { format!("`{short}`") }
    };
    let t = type_name(&param.ty).filter(|t| toolhost_spec::manifest::JSON_TYPES.contains(t));
    let scalar = matches!(t, Some("number" | "integer" | "boolean" | "null" | "string"));
    // Structured JSON is only checked for syntax here (and its outer type by its first
    // character): the plugin checks the rest, and the parser's depth limit stays the one of
    // `IgnoredAny`.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(arg) {
        return Some(match t {
            Some(t) if scalar => format!("must be {}, got {}", type_phrase(t), shown()),
            Some(t) => format!("must be {} in JSON, got {} ({e})", type_phrase(t), shown()),
            None => format!("must be valid JSON, got {} ({e})", shown()),
        });
    }
    let t = t?;
    let null = arg.trim() == "null";
    if param.optional && null {
        return None;
    }
    let fits = match t {
        "array" => arg.trim_start().starts_with('['),
        "object" => arg.trim_start().starts_with('{'),
        _ if scalar => serde_json::from_str::<serde_json::Value>(arg).is_ok_and(|v| value_has_type(t, &v)),
        _ => true,
    };
    (!fits).then(|| format!("must be {}, got {}", type_phrase(t), shown()))
}

/// Maximum bracket nesting of a JSON text, strings skipped (linear, no recursion).
fn json_depth(s: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0usize, false, false);
    for b in s.bytes() {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_spec::manifest::ParamSpec;

    #[test]
    fn an_error_kind_reads_as_it_serializes() {
        use ErrorKind::*;
        let all = [
            UnknownTool,
            BadArguments,
            Denied,
            ToolError,
            Timeout,
            MemoryLimit,
            StackOverflow,
            Trap,
            HostError,
            Busy,
            Unavailable,
            Cancelled,
        ];
        for kind in all {
            assert_eq!(json!(kind), json!(kind.as_str()), "{kind:?}");
            assert_eq!(serde_json::from_value::<ErrorKind>(json!(kind.to_string())).unwrap(), kind);
        }
    }

    fn spec(params: &[(&str, bool, bool)], rest: bool) -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: "d".into(),
            params: params
                .iter()
                .map(|(n, json, optional)| ParamSpec {
                    name: n.to_string(),
                    ty: if *json { json!("array") } else { json!("string") },
                    description: String::new(),
                    optional: *optional,
                    default: None,
                })
                .collect(),
            arg_count: params.len(),
            parse_json: params.iter().map(|p| p.1).collect(),
            rest,
            output_limit: None,
            danger: false,
            read_only: false,
            category: None,
            output_schema: None,
            timeout_ms: None,
            task_support: None,
            title: None,
            idempotent: false,
            icons: Vec::new(),
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arity_is_checked_with_the_signature() {
        let t = spec(&[("from", false, false), ("to", false, false)], false);
        assert_eq!(check_args(&t, &s(&["a", "b"])).unwrap(), s(&["a", "b"]));
        let e = check_args(&t, &s(&["a"])).unwrap_err();
        assert!(e.contains("takes 2 arguments but got 1") && e.contains("t(from, to)"), "{e}");
        assert!(check_args(&t, &s(&["a", "b", "c"])).is_err());
    }

    #[test]
    fn rest_joins_extra_args_with_commas() {
        let t = spec(&[("path", false, false), ("content", false, false)], true);
        assert_eq!(check_args(&t, &s(&["p", "a", " b", "c"])).unwrap(), s(&["p", "a, b,c"]));
        assert_eq!(check_args(&t, &s(&["p", "a"])).unwrap(), s(&["p", "a"]));
    }

    #[test]
    fn optional_params_may_be_left_off() {
        let t = spec(&[("a", false, false), ("b", true, true)], false);
        assert!(check_args(&t, &s(&["x"])).is_ok());
        assert!(check_args(&t, &s(&["x", "[1]"])).is_ok());
        assert!(check_args(&t, &s(&[])).unwrap_err().contains("1 to 2 arguments"));
    }

    #[test]
    fn invalid_json_names_the_position() {
        let t = spec(&[("title", false, false), ("subtasks", true, false)], false);
        let e = check_args(&t, &s(&["x", "[{\"a\": 1,}]"])).unwrap_err();
        assert!(e.contains("argument 2 (`subtasks`)") && e.contains("column"), "{e}");
        assert!(e.contains("must be an array in JSON, got `[{\"a\": 1,}]`"), "{e}");
        // Deep nesting is refused by the JSON parser's depth limit, not by a stack overflow.
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(check_args(&t, &["x".to_string(), deep]).unwrap_err().contains("nested 100000 levels"));
        let ok = "[".repeat(128) + &"]".repeat(128);
        assert!(check_args(&t, &["x".to_string(), ok]).is_ok());
        assert_eq!(json_depth(r#"["[[[", {"a": "\"]"}]"#), 2);
    }

    #[test]
    fn typed_arguments_are_refused_in_the_words_of_every_front_end() {
        let mut t = spec(&[("distance", true, false), ("exact", true, true)], false);
        t.name = "convert".into();
        t.params[0].ty = json!("number");
        t.params[1].ty = json!("boolean");
        let e = check_args(&t, &s(&["ten"])).unwrap_err();
        assert_eq!(
            e,
            "argument 1 (`distance`) of `convert` must be a number, got `ten`; usage: convert(distance: number, exact: boolean?)"
        );
        let e = check_args(&t, &s(&["\"5\""])).unwrap_err();
        assert!(e.contains("must be a number, got `\"5\"`"), "{e}");
        let e = check_args(&t, &s(&["5", "yes"])).unwrap_err();
        assert!(e.contains("argument 2 (`exact`) of `convert` must be true or false, got `yes`"), "{e}");
        assert!(check_args(&t, &s(&["-5", "true"])).is_ok());
        assert!(check_args(&t, &s(&["2.5", "null"])).is_ok(), "an optional param may be null");
        let long = "x".repeat(100);
        assert!(check_args(&t, &[long]).unwrap_err().contains(&format!("got `{}…`", "x".repeat(40))));
    }

    #[test]
    fn oversized_arguments_are_refused() {
        let t = spec(&[("a", false, false)], false);
        assert!(check_args(&t, &["x".repeat(MAX_ARGS_BYTES + 1)]).unwrap_err().contains("limit"));
    }

    #[test]
    fn a_result_is_checked_against_the_declared_output_schema() {
        let mut t = spec(&[], false);
        let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        t.output_schema = Some(schema.clone());
        let validator = jsonschema::validator_for(&schema).unwrap();
        let run = |data: &str, limit| structured_outcome(&t, &validator, data.to_string(), limit);
        let passed = run(r#"{"n": 3}"#, 100);
        assert_eq!(passed.data.as_deref(), Some(r#"{"n": 3}"#));
        // Parsed once, here; the front ends reuse it (issue #32).
        assert_eq!(passed.structured.as_deref(), Some(&json!({"n": 3})));
        for (data, limit, says) in [
            (r#"{"n": "three"}"#, 100, "does not match it: at `/n`"),
            ("{}", 100, "\"n\" is a required property"),
            ("[1]", 100, "is JSON but not an object"),
            ("n=3", 100, "is not JSON"),
            (r#"{"n": 3}"#, 4, "over its output limit of 4, and a JSON result cannot be cut"),
        ] {
            let o = run(data, limit);
            assert_eq!(o.kind, Some(ErrorKind::ToolError), "{data}");
            let e = o.error.unwrap();
            assert!(
                e.starts_with("tool `t` declares an outputSchema, but its result") && e.contains(says),
                "{e}"
            );
        }
    }

    #[test]
    fn truncation_is_at_char_boundaries_and_marked() {
        assert_eq!(truncate("héllo".into(), 10), ("héllo".into(), false));
        let (t, cut) = truncate("héllo wörld".into(), 4);
        assert!(cut);
        assert_eq!(t, "héll\n…[truncated 7 of 11 chars]");
        let (t, _) = truncate("日本語テキスト".into(), 2);
        assert!(t.starts_with("日本\n"));
    }

    #[test]
    fn outcome_serializes_as_the_seed_contract() {
        let ok = serde_json::to_value(Outcome::ok("x".into(), false)).unwrap();
        assert_eq!(ok, json!({"success": true, "data": "x"}));
        let err = serde_json::to_value(Outcome::err(ErrorKind::Timeout, "slow")).unwrap();
        assert_eq!(err, json!({"success": false, "error": "slow", "kind": "timeout"}));
    }
}

#[cfg(test)]
mod note_tests {
    use super::missing_grant_note;
    use crate::capability::net::Refusal;
    use crate::capability::{Missing, MissingKind};

    fn missing() -> Vec<Missing> {
        vec![
            Missing {
                kind: MissingKind::Fs("workspace".into()),
                what: "fs workspace:ro".into(),
                how: "F".into(),
            },
            Missing { kind: MissingKind::Net("*".into()), what: "net *".into(), how: "N".into() },
            Missing {
                kind: MissingKind::Secret("api_token".into()),
                what: "secret api_token".into(),
                how: "S".into(),
            },
        ]
    }

    #[test]
    fn a_refusal_names_its_grant_only() {
        let n = missing_grant_note("web", &missing(), &[Refusal::Host("example.com".into())]).unwrap();
        assert!(n.contains("net * (grant: N)") && !n.contains("secret") && !n.contains("fs "), "{n}");
        let n = missing_grant_note("web", &missing(), &[Refusal::Secret("api_token".into())]).unwrap();
        assert!(n.contains("secret api_token (grant: S)") && !n.contains("net *"), "{n}");
    }

    #[test]
    fn without_a_refusal_only_unobservable_grants_are_candidates() {
        let n = missing_grant_note("web", &missing(), &[]).unwrap();
        assert!(n.contains("may come from one of these: fs workspace:ro (grant: F)"), "{n}");
        assert!(!n.contains("net *") && !n.contains("secret"), "{n}");
        let net_only = &missing()[1..];
        assert_eq!(missing_grant_note("web", net_only, &[]), None, "no refusal, nothing unseen: no note");
        // A refusal no missing grant explains (e.g. a host outside the manifest's request).
        let other = [Refusal::Secret("other".into())];
        assert_eq!(missing_grant_note("web", net_only, &other), None);
    }
}

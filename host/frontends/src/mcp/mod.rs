//! MCP front end: the registry served to any MCP client over stdio or streamable HTTP, with the
//! official Rust SDK (`rmcp`) doing the protocol. Every revision rmcp knows is served, from
//! 2024-11-05 (with the `initialize` handshake) to 2026-07-28 (per-request `_meta`, no
//! server-to-client requests).
//!
//! - `tools/list`: what `view::listing` offers, in name order, each tool as the one presentation
//!   function (`ToolView`) describes it: the same JSON Schema as the OpenAI front end, `title`
//!   (the manifest's, else the name), `annotations` (`readOnlyHint` where the manifest says
//!   `read_only` and the tool is not dangerous, `destructiveHint` for dangerous tools,
//!   `idempotentHint` from the manifest, `openWorldHint` when the plugin is granted network
//!   access), the manifest's `icons` (`data:` URIs) and `outputSchema`, and `_meta` with the
//!   tool's limits and its plugin's name and version; on 2026-07-28 with `ttlMs`/`cacheScope`
//!   (see [`McpServer::tools_result`]). Names several plugins claim are left out and reported
//!   under `_meta["toolhost/conflicts"]` of the result.
//! - Search mode (`[catalog] mode`): the list holds the pinned tools and `find_tools`; each tool
//!   a `find_tools` call returns is added to this session's list, and on the handshake
//!   revisions the client is told with `notifications/tools/list_changed`. Any exposed tool
//!   can be called by name whether listed or not.
//! - `tools/call`: through the one executor. Success is text content (plus `structuredContent`
//!   when the tool returned a JSON object — always, for a tool with an `outputSchema`, whose
//!   result the executor has checked against it); a failed call is `isError: true` with the error
//!   text for the model (bad arguments included, so the model can correct itself); an unknown
//!   tool is a JSON-RPC `invalid params` error, as the spec lists it among protocol errors.
//! - Danger under policy `ask`: a client that declares form elicitation is asked — on the
//!   handshake revisions with an `elicitation/create` request, on 2026-07-28 with an
//!   `InputRequiredResult` and a sealed `requestState` (`approval.rs`); otherwise the call is
//!   refused with the operator's options. Nothing a client sends can change the policy.
//! - A grant the plugin requested and the operator did not give, under `[plugin.NAME]
//!   on_missing = "ask"` only: asked the same two ways (`inputRequests.grant` on 2026-07-28,
//!   sealed and bound to the one item too); "always" is written to the grants file.
//! - Each request is its own task in `rmcp`, so calls from one client run concurrently; a
//!   `notifications/cancelled` (or, for a 2026-07-28 request over HTTP, the client going away)
//!   cancels the call: its sandbox stops, and the outcome, audited and counted, is `cancelled`.
//! - Progress: a call whose request carries a `progressToken` gets `notifications/progress`
//!   from the plugin's `progress` reports (coalesced to about ten a second, the last always;
//!   `progress` never decreases), on the request's own stream over HTTP.
//! - Tasks (`tasks.rs`, the `io.modelcontextprotocol/tasks` extension): a client that declares
//!   the extension gets a task id at once for a tool whose manifest says `taskSupport`
//!   `optional` or `required`; a client that does not gets a plain result (or, for `required`,
//!   the missing-capability error). Each tool's `_meta` says `toolhost/taskSupport` and its
//!   effective `toolhost/timeoutMs`. The 2025-11-25 experimental tasks (`tasks2025.rs`) use the
//!   same store; rmcp does not model them, so the transports rename those requests for
//!   `on_custom_request` and declare the `tasks` capability rmcp's types cannot carry.
//! - Every registry change from the reloader becomes `notifications/tools/list_changed`: to
//!   every initialized session on the handshake revisions, and on the `subscriptions/listen`
//!   streams that asked for `toolsListChanged` on 2026-07-28.

mod approval;
mod client;
mod decode;
mod direct;
mod http;
mod idle;
mod keyless;
mod plain_json;
mod replay;
pub(crate) mod settings;
#[doc(hidden)]
pub mod stages;
mod stdio;
mod tasks;
mod tasks2025;

pub use http::{HttpOptions, McpToken, check_exposure, load_tokens, serve_http};
pub use settings::{SessionCaps, StoreUrl};
pub use tasks::{TaskLimits, Tasks};

/// The 2026-07-28 confirmation and grant question, for tests that drive the executor with it.
pub use approval::{ApprovalError, Approvals, GRANT_KEY, Interrupt, MrtrConfirm};
pub use replay::StoreError;

use crate::openai;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ClientCapabilities, ContentBlock, CreateTaskResult, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, GetTaskParams, GetTaskResult, Implementation, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities,
    SubscriptionFilter, Tool, ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::{ElicitationMode, NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;
use toolhost_core::executor::{
    CallContext, CallControl, CallRecord, Cancel, DecidedBy, Progress, ProgressSink,
};
use toolhost_core::executor::{Confirm, DangerRequest, Decision, ErrorKind, Executor, Outcome, ToolCall};
use toolhost_core::registry::Served;
use toolhost_core::registry::reload::Reloader;
use toolhost_core::settings::DangerPolicy;
use toolhost_spec::manifest::TaskSupport;

/// How long a dangerous call waits for the person behind the client to answer.
const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// `tools/list` freshness while the plugin folder is watched: a change is also announced with
/// `list_changed`, so a client that listens sees it at once, and one that does not within this.
const LIVE_LIST_TTL_MS: u64 = 10_000;
/// `tools/list` freshness when nothing reloads the registry (it cannot change).
const FIXED_LIST_TTL_MS: u64 = 3_600_000;

/// The JSON-RPC error code of a request refused because the server is starting or stopping, or
/// has no room for it (in the implementation-defined server error range).
pub(crate) const UNAVAILABLE_CODE: i64 = -32001;

/// The MCP server: one per connection (or HTTP session), all sharing one executor.
#[derive(Clone)]
pub struct McpServer {
    executor: Arc<Executor>,
    reloader: Option<Arc<Reloader>>,
    approvals: Arc<Approvals>,
    cache_scope: CacheScope,
    tasks: Arc<Tasks>,
    /// The largest MCP message read, in bytes: a stdio line, an HTTP body (`[mcp] max_message_kb`).
    max_message: usize,
    /// How long a 2025 HTTP session may go unused before it is closed (`[mcp] session_idle_s`).
    session_idle: Duration,
    /// How many 2025 HTTP sessions may be open (`[mcp] max_sessions`, `max_sessions_per_peer`).
    session_caps: SessionCaps,
    /// Search mode: the tools `find_tools` returned in this session, listed from then on.
    revealed: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// Set while the host's first load runs (see [`McpServer::until_loaded`]).
    loaded: Option<tokio::sync::watch::Receiver<bool>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for `executor`; with a `reloader`, clients are told when the tool list changes.
    /// Fails only if the operating system cannot supply a random key for sealing approvals.
    pub fn new(executor: Arc<Executor>, reloader: Option<Arc<Reloader>>) -> anyhow::Result<McpServer> {
        let approvals = Approvals::new(approval::DEFAULT_TTL).map_err(anyhow::Error::msg)?;
        Ok(McpServer {
            executor,
            reloader,
            approvals: Arc::new(approvals),
            cache_scope: CacheScope::Public,
            tasks: Arc::new(Tasks::new(TaskLimits::default())),
            max_message: settings::DEFAULT_MAX_MESSAGE_KB * 1024,
            session_idle: settings::DEFAULT_SESSION_IDLE,
            session_caps: SessionCaps::default(),
            revealed: Arc::default(),
            loaded: None,
        })
    }

    /// Serve while the host's first load runs: the handshake (and `ping`) is answered at once,
    /// and what needs the tools (`tools/list`, `tools/call`) waits until `loaded` turns true —
    /// never an empty list because the folder was still being read. A client is not kept waiting
    /// for its `initialize` answer through a cold start's compiles.
    pub fn until_loaded(mut self, loaded: tokio::sync::watch::Receiver<bool>) -> McpServer {
        self.loaded = Some(loaded);
        self
    }

    /// The end of the first load, if it is still running (a load that failed ends the process).
    pub(crate) fn first_load(&self) -> impl Future<Output = ()> + Send + 'static {
        // Once loaded (every request but those of the first moments), nothing is cloned.
        let loaded = self.loaded.as_ref().filter(|l| !*l.borrow()).cloned();
        async move {
            if let Some(mut loaded) = loaded {
                let _ = loaded.wait_for(|done| *done).await;
            }
        }
    }

    /// Cap and keep MCP tasks as `limits` say (`[mcp] tasks_*`).
    pub fn with_task_limits(mut self, limits: TaskLimits) -> McpServer {
        self.tasks = Arc::new(Tasks::new(limits));
        self
    }

    /// The server's tasks (shared by every session), e.g. to count those a shutdown cancelled.
    pub fn tasks(&self) -> Arc<Tasks> {
        self.tasks.clone()
    }

    /// Read MCP messages (a stdio line, an HTTP request body) of at most `bytes`; a longer
    /// one is answered with an error naming the limit.
    pub fn with_max_message(mut self, bytes: usize) -> McpServer {
        self.max_message = bytes;
        self
    }

    /// Close a 2025 HTTP session unused for `idle` (`[mcp] session_idle_s`).
    pub fn with_session_idle(mut self, idle: Duration) -> McpServer {
        self.session_idle = idle;
        self
    }

    /// Open at most `caps` 2025 HTTP sessions, in all and per client (`[mcp] max_sessions`,
    /// `max_sessions_per_peer`).
    pub fn with_session_caps(mut self, caps: SessionCaps) -> McpServer {
        self.session_caps = caps;
        self
    }

    /// The server for one more session: everything shared but what `find_tools` revealed.
    pub fn session(&self) -> McpServer {
        McpServer { revealed: Arc::default(), ..self.clone() }
    }

    /// Approvals as `[mcp]` says: live `approval_ttl`, sealed with the shared `approval_key`
    /// (its value, read from its secret) when given, else a per-process key, and redeemed
    /// nonces kept in the `replay_store` Redis when given, else in memory. Fails on a key
    /// shorter than 32 bytes or a store URL that is not `redis://`.
    pub fn with_approvals(
        mut self,
        ttl: Duration,
        key: Option<&str>,
        replay_store: Option<&str>,
    ) -> anyhow::Result<McpServer> {
        let key = key.map(approval::shared_key).transpose().map_err(anyhow::Error::msg)?;
        let store = match replay_store {
            Some(url) => replay::ReplayStore::redis(url).map_err(anyhow::Error::msg)?,
            None => replay::ReplayStore::memory(),
        };
        self.approvals = Arc::new(Approvals::with(key, ttl, store).map_err(anyhow::Error::msg)?);
        Ok(self)
    }

    /// Mark `tools/list` results `cacheScope: private` (set when HTTP callers must authenticate,
    /// so no shared cache hands the list to someone without a token).
    pub fn private_listing(mut self) -> McpServer {
        self.cache_scope = CacheScope::Private;
        self
    }

    /// The `tools/list` entries for the current registry, in name order.
    pub fn tools(&self) -> Vec<Tool> {
        let registry = self.executor.registry();
        let config = self.executor.config();
        let mut views = toolhost_core::view::listing(&registry, config);
        if registry.search().is_some() {
            let revealed = self.revealed.lock().unwrap_or_else(|p| p.into_inner());
            let listed: std::collections::BTreeSet<String> =
                views.iter().map(|v| v.name().to_string()).collect();
            views.extend(
                revealed
                    .iter()
                    .filter(|n| !listed.contains(*n))
                    .filter_map(|n| registry.get(n))
                    .map(|e| toolhost_core::view::ToolView::new(e, config)),
            );
            views.sort_by(|a, b| a.name().cmp(b.name()));
        }
        let policy = config.danger;
        views.iter().map(|v| tool(v, policy)).collect()
    }

    /// The whole `tools/list` result. The caching hints (SEP-2549, required on 2026-07-28 and
    /// ignored before): the list is the same for every caller of this process, fresh for
    /// `LIVE_LIST_TTL_MS` while the folder is watched, and `public` unless HTTP tokens guard it.
    pub fn tools_result(&self) -> ListToolsResult {
        let ttl = if self.reloader.is_some() { LIVE_LIST_TTL_MS } else { FIXED_LIST_TTL_MS };
        let mut result =
            ListToolsResult::with_all_items(self.tools()).with_ttl_ms(ttl).with_cache_scope(self.cache_scope);
        let conflicts = toolhost_core::view::conflict_lines(&self.executor.registry());
        if !conflicts.is_empty() {
            let mut m = serde_json::Map::new();
            m.insert("toolhost/conflicts".into(), conflicts.into());
            result.meta = Some(rmcp::model::MetaObject(m));
        }
        result
    }

    /// Run one `tools/call`; `task_2025` is, on a 2025-11-25 session, whether it asked for a
    /// task (its `task` member).
    async fn call(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        task_2025: Option<bool>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.first_load().await;
        let registry = self.executor.registry();
        let meta_tool = registry.search().map(|s| &s.spec).filter(|s| s.name == params.name);
        let served = registry.who_serves(&params.name);
        let entry = match &served {
            Served::By(entry) => Some(*entry),
            _ => None,
        };
        let spec = match (served, meta_tool) {
            (Served::By(entry), _) => entry.spec(),
            (_, Some(spec)) => spec,
            (Served::Ambiguous(conflict), _) => {
                let message = conflict.message();
                self.unrun(&params, context, ErrorKind::UnknownTool, &message);
                return Err(ErrorData::invalid_params(message, None));
            }
            (Served::Nobody, None) => return Err(self.unknown(&registry, &params, context)),
        };
        let empty = JsonObject::new();
        let args = match openai::map_argument_object(spec, params.arguments.as_ref().unwrap_or(&empty)) {
            Ok(a) => a,
            Err(e) => {
                self.unrun(&params, context, ErrorKind::BadArguments, &e);
                return Ok(CallToolResult::error(vec![ContentBlock::text(e)]).into());
            }
        };
        let call = ToolCall { name: spec.name.clone(), args };
        let finding = meta_tool.is_some();
        // A tool's time limit and task support (`find_tools` answers at once: never a task).
        let (support, timeout) = match entry {
            Some(entry) => {
                let view = toolhost_core::view::ToolView::new(entry, self.executor.config());
                (
                    task_support(&view, self.executor.config().danger),
                    Duration::from_millis(view.limits.timeout_ms),
                )
            }
            _ => (TaskSupport::Forbidden, Duration::from_millis(self.executor.config().limits.timeout_ms)),
        };
        drop(registry);
        let client_tasks = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        // What follows decides whether a call may ask the client something or run as a task:
        // `McpServer::direct_call` picks the calls that cannot, from the same rules; keep the two
        // in step.
        // 2025-11-25: a `task` member asks for a task (see `tasks2025.rs`).
        if let Some(requested) = task_2025 {
            let why = match (support, requested) {
                (TaskSupport::Optional | TaskSupport::Required, true) => {
                    // That revision keeps the request's progressToken valid for the task's life.
                    return self.start_task(call, context, timeout, progress_sink(context));
                }
                (TaskSupport::Required, false) => {
                    "runs only as a task (its manifest says taskSupport: required); call it with `task`"
                }
                (_, true) => "does not run as a task (taskSupport: forbidden); call it without `task`",
                _ => "",
            };
            if !why.is_empty() {
                let message = format!("tool `{}` {why}", call.name);
                self.unrun(&params, context, ErrorKind::BadArguments, &message);
                return Err(tasks2025::method_not_found(message));
            }
        }
        match support {
            TaskSupport::Required if !client_tasks => {
                let why = "it runs only as a task (its manifest says taskSupport: required)";
                self.unrun(
                    &params,
                    context,
                    ErrorKind::BadArguments,
                    &format!("tool `{}`: {why}", call.name),
                );
                return Err(ErrorData::missing_required_client_capability(
                    ClientCapabilities::builder().enable_tasks().build(),
                ));
            }
            TaskSupport::Optional | TaskSupport::Required if client_tasks => {
                return self.start_task(call, context, timeout, None);
            }
            _ => {}
        }
        // Answers from a client that may not be asked are refused before anything runs.
        if (params.request_state.is_some() || params.input_responses.is_some()) && !may_ask(context) {
            let e = keyless::answers_refused(&call.name);
            tracing::info!(
                tool = call.name,
                "refused a retried call: it carries answers without a token or the key"
            );
            self.unrun(&params, context, ErrorKind::Denied, &e);
            return Err(ErrorData::invalid_params(e, None));
        }
        // A retry whose state does not open, has expired, or was issued for another tool or
        // plugin file is refused before anything runs.
        let modern = context.protocol_version().is_some_and(|v| !v.has_initialize());
        if modern
            && let Some(state) = &params.request_state
            && let Served::By(entry) = self.executor.registry().who_serves(&params.name)
            && let Err(e) = self.approvals.precheck(state, &call.name, &entry.plugin.name, &entry.plugin.hash)
        {
            tracing::info!(tool = call.name, "refused a retried call: {e}");
            self.unrun(&params, context, ErrorKind::Denied, &e.to_string());
            return Err(ErrorData::invalid_params(e.to_string(), None));
        }
        let response = self.run(call, params.request_state, params.input_responses, context).await?;
        if finding && let CallToolResponse::Complete(r) = &response {
            self.reveal(r, context).await;
        }
        Ok(response)
    }

    /// An unknown tool: a JSON-RPC `invalid params` error with the closest names.
    fn unknown(
        &self,
        registry: &toolhost_core::Registry,
        params: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> ErrorData {
        {
            let close = registry.suggest(&params.name);
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!("; did you mean: {}?", close.join(", "))
            };
            let message = format!("unknown tool `{}`{hint}", params.name);
            self.unrun(params, context, ErrorKind::UnknownTool, &message);
            ErrorData::invalid_params(message, None)
        }
    }

    /// Add the tools a `find_tools` result names to this session's list, and tell a handshake
    /// client the list changed.
    async fn reveal(&self, result: &CallToolResult, context: &RequestContext<RoleServer>) {
        let Some(text) = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()) else {
            return;
        };
        let Ok(found) = serde_json::from_str::<serde_json::Value>(&text) else { return };
        let names = found["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str());
        let added = {
            let mut revealed = self.revealed.lock().unwrap_or_else(|p| p.into_inner());
            // Every name is inserted (no short circuit): count the new ones.
            names.filter(|n| revealed.insert(n.to_string())).count() > 0
        };
        let handshake = context.protocol_version().is_none_or(|v| v.has_initialize());
        if added
            && handshake
            && let Err(e) = context.peer.notify_tool_list_changed().await
        {
            tracing::debug!("cannot tell the client the tool list changed: {e}");
        }
    }

    /// The call a handshake session's `tools/call` maps to when nothing in it can need the
    /// session (see `direct.rs`): the host has loaded, a plugin serves the tool (not
    /// `find_tools`, whose result changes the session's list), no confirmation is asked (danger
    /// policy other than `ask`), no grant is asked about (`on_missing` other than `ask`), it
    /// does not run as a task for this client, and its arguments map. `None`, with nothing
    /// done: rmcp serves the request, as every other.
    pub(crate) fn direct_call(&self, params: &CallToolRequestParams, client_tasks: bool) -> Option<ToolCall> {
        if self.loaded.as_ref().is_some_and(|l| !*l.borrow()) {
            return None;
        }
        let registry = self.executor.registry();
        let Served::By(entry) = registry.who_serves(&params.name) else { return None };
        let config = self.executor.config();
        let view = toolhost_core::view::ToolView::new(entry, config);
        match task_support(&view, config.danger) {
            TaskSupport::Required => return None,
            TaskSupport::Optional if client_tasks => return None,
            _ => {}
        }
        let spec = entry.spec();
        if toolhost_core::view::call_policy(spec, &entry.plugin, config) == Some(DangerPolicy::Ask)
            || config.plugin(&entry.plugin.name).on_missing == Some(toolhost_core::settings::OnMissing::Ask)
        {
            return None;
        }
        let empty = JsonObject::new();
        let args = openai::map_argument_object(spec, params.arguments.as_ref().unwrap_or(&empty)).ok()?;
        Some(ToolCall { name: spec.name.clone(), args })
    }

    /// Run a call [`McpServer::direct_call`] mapped, cancelled by `cancel` (and dropped while it
    /// waits for a slot if `gone` fires): the result a handshake session's handler gives it
    /// ([`McpServer::run`] with no one to ask).
    pub(crate) async fn run_direct(
        &self,
        call: ToolCall,
        who: CallContext,
        cancel: Cancel,
        gone: Option<Cancel>,
    ) -> CallToolResult {
        let control = CallControl::default().with_cancel(cancel.clone()).with_gone(gone);
        let outcome = self.executor.call_controlled(&call, &NoOneToAsk, &who, &control).await;
        if outcome.kind == Some(ErrorKind::Cancelled) && cancel.is_cancelled() {
            tracing::info!(tool = call.name, "call cancelled by the client; its sandbox was stopped");
        }
        result_of(outcome)
    }

    /// Run a mapped call through the executor with the confirmation this revision allows.
    async fn run(
        &self,
        call: ToolCall,
        request_state: Option<String>,
        input_responses: Option<rmcp::model::InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = caller(context);
        let control = CallControl::default()
            .with_cancel(Cancel::from_token(context.ct.clone(), "the client"))
            .with_gone(client_gone(context.extensions.get::<hyper::http::request::Parts>()))
            .with_progress_opt(progress_sink(context));
        let modern = context.protocol_version().is_some_and(|v| !v.has_initialize());
        let outcome = if !may_ask(context) {
            self.executor.call_controlled(&call, &keyless::Keyless, &who, &control).await
        } else if modern {
            let confirm = MrtrConfirm {
                approvals: &self.approvals,
                can_elicit: supports_form(context.client_capabilities().as_ref()),
                request_state,
                input_responses,
                interrupt: Mutex::new(None),
                used: Default::default(),
            };
            let outcome = self.executor.call_controlled(&call, &confirm, &who, &control).await;
            match confirm.take_interrupt() {
                Some(Interrupt::InputRequired(r)) => return Ok(CallToolResponse::InputRequired(r)),
                Some(Interrupt::Invalid(e)) => {
                    tracing::info!(tool = call.name, "refused a retried call: {e}");
                    return Err(ErrorData::invalid_params(e.to_string(), None));
                }
                Some(Interrupt::Unavailable(e)) => {
                    tracing::warn!(tool = call.name, "refused a retried call: {e}");
                    return Err(ErrorData::internal_error(e.to_string(), None));
                }
                None => outcome,
            }
        } else {
            self.executor
                .call_controlled(&call, &ElicitConfirm { peer: context.peer.clone() }, &who, &control)
                .await
        };
        if outcome.kind == Some(ErrorKind::Cancelled) && context.ct.is_cancelled() {
            tracing::info!(tool = call.name, "call cancelled by the client; its sandbox was stopped");
        }
        Ok(result_of(outcome).into())
    }

    /// Run `call` as a task of the request's client: answered at once with the task, the call
    /// running on (cancelled by `tasks/cancel` or a shutdown, never by this request's end).
    /// Its progress goes to the task (for `tasks/get`) and to `notify`, if given.
    fn start_task(
        &self,
        call: ToolCall,
        context: &RequestContext<RoleServer>,
        timeout: Duration,
        notify: Option<Arc<dyn ProgressSink>>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (who, owner) = (caller(context), owner(context));
        let executor = self.executor.clone();
        let tool = call.name.clone();
        let task = self.tasks.start(&owner, &tool, timeout, move |cancel, progress| async move {
            let task: Arc<dyn ProgressSink> = Arc::new(move |p: &Progress| progress(p));
            let sink = match notify {
                Some(notify) => Arc::new(Both(task, notify)),
                None => task,
            };
            let control = CallControl::default().with_cancel(cancel).with_progress(sink);
            // Nobody can be asked inside a task: a dangerous tool under `ask` is refused.
            let outcome = executor.call_controlled(&call, &TaskConfirm, &who, &control).await;
            match outcome.kind {
                // Stopped by its client or by a shutdown (to a plain call that is `unavailable`).
                Some(ErrorKind::Cancelled | ErrorKind::Unavailable) => {
                    tasks::Ended::Cancelled(outcome.error.unwrap_or_default())
                }
                _ => tasks::Ended::Result(result_of(outcome)),
            }
        })?;
        tracing::info!(tool, task = task.task_id, "started a task");
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }
}

/// What clients are told about running `view`'s tool as a task: its manifest's
/// `taskSupport`, except that a tool that needs a person's confirmation (dangerous under
/// policy `ask`) is never run as an optional task, where nobody could be asked.
fn task_support(view: &toolhost_core::view::ToolView<'_>, policy: DangerPolicy) -> TaskSupport {
    let support = view.spec.task_support.unwrap_or_default();
    let asks = view.dangerous && policy == DangerPolicy::Ask;
    if asks && support == TaskSupport::Optional { TaskSupport::Forbidden } else { support }
}

/// Whose task it is: the token the client authenticated with; else, over HTTP, its 2025
/// session (whose id is a secret the server drew and checks) or, for a 2026-07-28 request with
/// no token, nobody's ([`tasks::ANONYMOUS`]: the task's unguessable id is the only way to it,
/// and `tasks/list` lists none); over stdio, whose one client is the process that started
/// toolhost, the name it gives, else the transport. Over HTTP never the client's self-declared
/// name: another local client can claim any name.
fn owner(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<hyper::http::request::Parts>();
    if let Some(t) = parts.and_then(|p| p.extensions.get::<http::TokenName>()) {
        return format!("token:{}", t.0);
    }
    let Some(parts) = parts else {
        return match context.client_info() {
            Some(c) => format!("client:{}", c.name),
            None => "mcp-stdio".into(),
        };
    };
    match parts.headers.get(http::SESSION_ID) {
        Some(id) => format!("session:{}", toolhost_spec::digest::sha256_hex(id.as_bytes())),
        None => tasks::ANONYMOUS.into(),
    }
}

/// Where a call's progress goes: `notifications/progress` with the request's token, if it
/// carries one.
fn progress_sink(context: &RequestContext<RoleServer>) -> Option<Arc<dyn ProgressSink>> {
    let token = context.meta.get_progress_token()?;
    Some(Arc::new(McpProgress { peer: context.peer.clone(), token, last: Mutex::new(None) }))
}

/// `notifications/progress` for one request. MCP wants `progress` to increase with every
/// notification: a report that does not raise it (a new message only) is not sent.
struct McpProgress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    last: Mutex<Option<u64>>,
}

impl ProgressSink for McpProgress {
    fn report<'a>(&'a self, p: &'a Progress) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            {
                let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
                if last.is_some_and(|l| p.done <= l) {
                    return;
                }
                *last = Some(p.done);
            }
            let mut n = ProgressNotificationParam::new(self.token.clone(), p.done as f64);
            n.total = p.total.map(|t| t as f64);
            n.message = (!p.message.is_empty()).then(|| p.message.clone());
            // A client that went away misses its progress; the call's own end decides the rest.
            let _ = self.peer.notify_progress(n).await;
        })
    }
}

/// Progress to two sinks, in turn.
struct Both(Arc<dyn ProgressSink>, Arc<dyn ProgressSink>);

impl ProgressSink for Both {
    fn report<'a>(&'a self, p: &'a Progress) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            self.0.report(p).await;
            self.1.report(p).await;
        })
    }
}

/// Inside a task nobody can answer a question: a dangerous call under `ask` is refused.
struct TaskConfirm;

impl Confirm for TaskConfirm {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            refuse(
                req,
                "it runs as a task, where nobody can be asked; the tool's manifest requires tasks".into(),
            )
        })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }
}

/// A call's outcome as a `tools/call` result, with what it cost in `_meta`.
fn result_of(outcome: Outcome) -> CallToolResult {
    // What the call cost, for the client's operator (not part of the content the model reads).
    let meta = outcome.usage.as_ref().and_then(|u| serde_json::to_value(u).ok()).map(|u| {
        let mut m = serde_json::Map::new();
        m.insert("toolhost/usage".into(), u);
        rmcp::model::MetaObject(m)
    });
    let mut result = call_result(outcome);
    result.meta = meta;
    result
}

/// A call's outcome as an MCP result. A tool with an outputSchema has its result already
/// parsed (the executor checked it against the schema: `Outcome::structured`), and it is used
/// as is; any other tool's JSON object result is structured too, parsed here.
fn call_result(outcome: Outcome) -> CallToolResult {
    if !outcome.success {
        let kind = outcome.kind.unwrap_or(ErrorKind::ToolError);
        let text = format!("{} [{kind}]", outcome.error.unwrap_or_default());
        return CallToolResult::error(vec![ContentBlock::text(text)]);
    }
    let structured = match outcome.structured {
        Some(parsed) => Some(Arc::unwrap_or_clone(parsed)),
        None => outcome
            .data
            .as_deref()
            .filter(|d| d.trim_start().starts_with('{') && !outcome.truncated)
            .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .filter(serde_json::Value::is_object),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.data.unwrap_or_default())]);
    result.structured_content = structured;
    result
}

/// One `tools/list` entry, from the one presentation function.
pub fn tool(view: &toolhost_core::view::ToolView<'_>, policy: DangerPolicy) -> Tool {
    // See `ToolView::advertise_read_only`: a dangerous tool is never advertised as read-only, so
    // the two hints never contradict each other.
    let annotations = ToolAnnotations::new()
        .read_only(view.advertise_read_only())
        .destructive(view.dangerous)
        .idempotent(view.idempotent())
        .open_world(view.open_world);
    let mut tool = Tool::new(view.name().to_string(), view.spec.description.clone(), view.input_schema());
    tool.title = Some(view.title().to_string());
    tool.annotations = Some(annotations);
    tool.output_schema = view.output_schema();
    if !view.icons().is_empty() {
        tool.icons = Some(
            view.icons()
                .iter()
                .map(|i| {
                    let mut icon = rmcp::model::Icon::new(i.src.clone());
                    icon.mime_type = i.mime_type().map(str::to_string);
                    icon.sizes = (!i.sizes.is_empty()).then(|| i.sizes.clone());
                    icon.theme = i.theme.as_deref().and_then(|t| serde_json::from_value(t.into()).ok());
                    icon
                })
                .collect(),
        );
    }
    // What the host grants this tool, for clients that plan around long calls.
    let mut meta = view.meta();
    meta.insert("toolhost/timeoutMs".into(), view.limits.timeout_ms.into());
    meta.insert("toolhost/taskSupport".into(), task_support(view, policy).as_str().into());
    tool.meta = Some(rmcp::model::MetaObject(meta));
    tool
}

fn arguments_text(params: &CallToolRequestParams) -> String {
    serde_json::Value::Object(params.arguments.clone().unwrap_or_default()).to_string()
}

impl McpServer {
    /// Count and audit a call answered here, before the executor (unknown tool, arguments
    /// that do not map to the tool's parameters).
    fn unrun(
        &self,
        params: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        kind: ErrorKind,
        why: &str,
    ) {
        if let Some(observer) = self.executor.observer() {
            let call = ToolCall { name: params.name.to_string(), args: vec![arguments_text(params)] };
            let plugin = self.executor.registry().get(&call.name).map(|e| e.plugin.clone());
            let record = CallRecord { plugin, ..CallRecord::default() };
            observer.unrun(&call, &caller(context), record, &Outcome::err(kind, why));
        }
    }
}

/// Who is calling: the transport, the client's own name, and over HTTP the token it presented.
fn caller(context: &RequestContext<RoleServer>) -> CallContext {
    let parts = context.extensions.get::<hyper::http::request::Parts>();
    caller_of(parts, context.client_info().map(|i| i.name), &context.meta)
}

/// [`caller`] from its parts: the HTTP request (`None` over stdio), the client's name, the
/// request's `_meta`.
fn caller_of(
    parts: Option<&hyper::http::request::Parts>,
    client: Option<String>,
    meta: &rmcp::model::RequestMetaObject,
) -> CallContext {
    CallContext {
        front_end: Some(if parts.is_some() { "mcp-http" } else { "mcp-stdio" }),
        client,
        token: parts.and_then(|p| p.extensions.get::<http::TokenName>()).map(|t| t.0.clone()),
        peer: parts.and_then(|p| p.extensions.get::<client::PeerAddr>()).map(|p| p.0),
        trace_parent: trace_parent(meta, parts),
    }
}

/// Over HTTP, what fires when the request's client is gone (see [`client::ClientGone`]).
fn client_gone(parts: Option<&hyper::http::request::Parts>) -> Option<Cancel> {
    parts?.extensions.get::<client::ClientGone>().map(|g| g.0.clone())
}

/// The caller's span, when telemetry is on: `_meta.traceparent` (SEP-414, 2026-07-28), else
/// the HTTP request's `traceparent` header (streamable HTTP); a malformed one is ignored.
fn trace_parent(
    meta: &rmcp::model::RequestMetaObject,
    parts: Option<&hyper::http::request::Parts>,
) -> Option<toolhost_core::telemetry::TraceParent> {
    use toolhost_core::telemetry::{self, TraceParent};
    if !telemetry::enabled() {
        return None;
    }
    let header = || parts?.headers.get("traceparent")?.to_str().ok();
    meta.0.get_traceparent().and_then(TraceParent::parse).or_else(|| header().and_then(TraceParent::parse))
}

/// Whether this request's client may be asked questions (see `keyless.rs`).
fn may_ask(context: &RequestContext<RoleServer>) -> bool {
    keyless::may_ask(context.extensions.get::<hyper::http::request::Parts>())
}

/// Whether the client declared form elicitation (an empty `elicitation: {}` means form).
fn supports_form(caps: Option<&ClientCapabilities>) -> bool {
    caps.and_then(|c| c.elicitation.as_ref()).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The question shown to the user about a dangerous call, and the form's schema.
fn question(req: &DangerRequest) -> Result<(String, ElicitationSchema), String> {
    let schema = ElicitationSchema::builder()
        .required_bool("approve")
        .build()
        .map_err(|e| format!("cannot build the question: {e}"))?;
    let shown: Vec<String> =
        req.args.iter().map(|a| format!("{:?}", a.chars().take(200).collect::<String>())).collect();
    let message = format!(
        "Allow the dangerous tool `{}` (plugin `{}`) to run with arguments ({})?{} Set approve to true to allow.",
        req.tool,
        req.plugin,
        shown.join(", "),
        req.notes.iter().map(|n| format!(" Note: {n}.")).collect::<String>()
    );
    Ok((message, schema))
}

/// The grant question shown to the user (a form with `allow`, required, and `always`).
fn grant_question(
    req: &toolhost_core::executor::GrantRequest,
) -> Result<(String, ElicitationSchema), String> {
    let schema = ElicitationSchema::builder()
        .required_bool("allow")
        .optional_bool("always", false)
        .build()
        .map_err(|e| format!("cannot build the question: {e}"))?;
    let shown: Vec<String> =
        req.args.iter().map(|a| format!("{:?}", a.chars().take(200).collect::<String>())).collect();
    let message = format!(
        "{} — tool `{}` (plugin `{}`) with arguments ({}). The plugin requests it and it is not granted. \
         Set allow to true to allow it for this call; also set always to true to grant it from now on.",
        req.sentence(),
        req.tool,
        req.plugin,
        shown.join(", ")
    );
    Ok((message, schema))
}

/// The user's answer to a grant question: `accept` with `allow: true` grants (with
/// `always: true`, from now on); anything else refuses.
fn grant_answer(
    action: ElicitationAction,
    content: Option<&serde_json::Value>,
) -> toolhost_core::executor::GrantAnswer {
    use toolhost_core::executor::GrantAnswer;
    if action != ElicitationAction::Accept {
        return GrantAnswer::Deny;
    }
    let get = |k: &str| content.and_then(|c| c.get(k)).and_then(|v| v.as_bool());
    match (get("allow"), get("always")) {
        (Some(true), Some(true)) => GrantAnswer::Always,
        (Some(true), _) => GrantAnswer::Once,
        _ => GrantAnswer::Deny,
    }
}

/// The refusal of a dangerous call, with what the operator can do about it.
fn refuse(req: &DangerRequest, why: String) -> Decision {
    Decision::Deny(format!(
        "tool `{}` is dangerous and was not confirmed ({why}); the operator can allow it with \
         `[danger] policy = \"allow\"` in toolhost.toml or `--danger allow`",
        req.tool
    ))
}

/// The user's answer to the question: only `accept` with `approve: true` allows.
fn decide(req: &DangerRequest, action: ElicitationAction, content: Option<&serde_json::Value>) -> Decision {
    if action != ElicitationAction::Accept {
        return refuse(req, format!("the user answered {action:?}").to_lowercase());
    }
    let approved = content.and_then(|c| c.get("approve")).and_then(|v| v.as_bool()).unwrap_or(false);
    if approved { Decision::Allow } else { refuse(req, "the user did not approve".into()) }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> InitializeResult {
        let caps =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_tasks().build();
        InitializeResult::new(caps)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools run in a sandbox with only the capabilities the operator granted. A tool marked \
                 destructive may ask the user for confirmation.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.first_load().await;
        Ok(self.tools_result())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // A cancellation reaches the executor (see `McpServer::call`), which stops the call and
        // answers `cancelled`.
        let task_2025 = tasks2025::on_2025_11_25(&context).then_some(false);
        self.call(request, &context, task_2025).await
    }

    /// The 2025-11-25 task requests the transports renamed (see `tasks2025.rs`).
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        match self.on_2025_11_25(&request, &context).await {
            Some(answer) => answer.map(rmcp::model::CustomResult),
            None => Err(ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&owner(&context), &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&owner(&context), &request.task_id)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&owner(&context), &request.task_id)
    }

    /// 2026-07-28: `subscriptions/listen` may ask for `toolsListChanged` (when a reloader
    /// watches the folder; otherwise the list never changes and the request is not offered).
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.reloader.as_ref()?;
        Some(requested.intersection(&SubscriptionFilter::builder().tools_list_changed().build()))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(reloader) = &self.reloader else {
            context.cancelled().await;
            return Ok(());
        };
        // The first load is not a change of the list: the client lists after it.
        tokio::select! {
            _ = context.cancelled() => return Ok(()),
            () = self.first_load() => {}
        }
        let mut rx = reloader.subscribe();
        let sink = context.sink().clone();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                change = rx.recv() => match change {
                    Ok(c) if c.added.is_empty() && c.changed.is_empty() && c.removed.is_empty() => {}
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if context.accepted().tools_list_changed == Some(true)
                            && sink.notify_tool_list_changed().await.is_err()
                        {
                            return Ok(()); // the client is gone
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(reloader) = &self.reloader else { return };
        // Subscribed now, or (while the first load runs) once it is done: the first load is not
        // a change of the list the client is told about.
        let subscribed = self.loaded.is_none().then(|| reloader.subscribe());
        let (reloader, first_load) = (reloader.clone(), self.first_load());
        let peer = context.peer;
        tokio::spawn(async move {
            let mut rx = match subscribed {
                Some(rx) => rx,
                None => {
                    first_load.await;
                    reloader.subscribe()
                }
            };
            loop {
                match rx.recv().await {
                    Ok(change)
                        if change.added.is_empty()
                            && change.changed.is_empty()
                            && change.removed.is_empty() => {}
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if peer.notify_tool_list_changed().await.is_err() {
                            return; // the client is gone
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
}

/// Asks the person behind a handshake-era MCP client (an `elicitation/create` request) whether
/// a dangerous call may run.
struct ElicitConfirm {
    peer: Peer<RoleServer>,
}

impl Confirm for ElicitConfirm {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
                return refuse(
                    req,
                    "this MCP client cannot be asked: it does not support elicitation".into(),
                );
            }
            let (message, schema) = match question(req) {
                Ok(q) => q,
                Err(e) => return refuse(req, e),
            };
            let params =
                ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
            match self.peer.create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT)).await {
                Ok(r) => decide(req, r.action, r.content.as_ref()),
                Err(e) => refuse(req, format!("asking the client failed: {e}")),
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        if self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            DecidedBy::Elicitation
        } else {
            DecidedBy::NoOne
        }
    }

    fn grants(&self) -> Option<&dyn toolhost_core::executor::AskGrant> {
        Some(self)
    }
}

/// A call answered without its session (see `direct.rs`) is one that asks nothing:
/// [`McpServer::direct_call`] leaves calls that could ask to rmcp. Were one to ask anyway, it
/// is refused, never allowed, and no grant question goes to the operator's terminal instead.
struct NoOneToAsk;

impl Confirm for NoOneToAsk {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        toolhost_core::executor::NoConfirm.confirm(req)
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }

    fn grants(&self) -> Option<&dyn toolhost_core::executor::AskGrant> {
        Some(self)
    }
}

impl toolhost_core::executor::AskGrant for NoOneToAsk {
    fn ask<'a>(
        &'a self,
        _req: &'a toolhost_core::executor::GrantRequest,
    ) -> Pin<Box<dyn Future<Output = toolhost_core::executor::GrantAnswer> + Send + 'a>> {
        Box::pin(std::future::ready(toolhost_core::executor::GrantAnswer::NoOne))
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }

    fn by_default(&self) -> bool {
        false
    }
}

/// A grant question (see `toolhost_core::executor::grant`) as an elicitation form, for a
/// plugin whose `on_missing` is `ask`: `allow` (required) and `always`; a client without
/// elicitation is not asked, and the call fails with its note.
impl toolhost_core::executor::AskGrant for ElicitConfirm {
    fn ask<'a>(
        &'a self,
        req: &'a toolhost_core::executor::GrantRequest,
    ) -> Pin<Box<dyn Future<Output = toolhost_core::executor::GrantAnswer> + Send + 'a>> {
        use toolhost_core::executor::GrantAnswer;
        Box::pin(async move {
            if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
                return GrantAnswer::NoOne;
            }
            let Ok((message, schema)) = grant_question(req) else {
                return GrantAnswer::NoOne;
            };
            let params =
                ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
            match self.peer.create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT)).await {
                Ok(r) => grant_answer(r.action, r.content.as_ref()),
                Err(_) => GrantAnswer::NoOne,
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        Confirm::decided_by(self)
    }

    fn by_default(&self) -> bool {
        false
    }
}

/// After the end of stdin, how long requests read before it have to reach the executor.
const EOF_ADMIT_WAIT: Duration = Duration::from_secs(2);

/// Serve MCP over stdin/stdout until the client disconnects. stdout carries only protocol
/// messages (logs go to stderr).
pub async fn serve_stdio(server: McpServer) -> anyhow::Result<()> {
    serve_stdio_until(server, std::future::pending(), None).await
}

/// [`serve_stdio`] until the client disconnects or `shutdown` completes; then, with a
/// `service`, the calls in flight are drained (new ones refused, the rest cancelled at the
/// grace period) and their answers written before the session is closed.
pub async fn serve_stdio_until(
    server: McpServer,
    shutdown: impl Future<Output = ()>,
    service: Option<Arc<crate::service::Service>>,
) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let mut shutdown = std::pin::pin!(shutdown);
    // Pipes (how MCP clients start a server) go through tokio's reactor rather than its
    // blocking pool: no thread hand-off per message (rmcp falls back to `stdio()` otherwise).
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    // With a service, the end of stdin is a shutdown like SIGTERM: the calls in flight finish
    // (or are cancelled at the grace period) and are answered before the session ends.
    let (eof_tx, mut eof_rx) = tokio::sync::watch::channel(false);
    let hold_eof = service.is_some().then_some(eof_tx);
    let transport = stdio::StdioTransport::new(stdin, stdout, server.max_message, hold_eof);
    let pending = transport.pending();
    let first_load = server.first_load();
    let mut stdin_closed = std::pin::pin!(async move {
        let _ = eof_rx.wait_for(|closed| *closed).await;
    });
    let running = tokio::select! {
        r = server.serve(transport) => r?,
        // No session yet: nothing in flight.
        () = &mut shutdown => return Ok(()),
        () = &mut stdin_closed => return Ok(()),
    };
    let session = running.cancellation_token();
    let mut waiting = std::pin::pin!(running.waiting());
    tokio::select! {
        r = &mut waiting => {
            r?;
            return Ok(());
        }
        () = &mut shutdown => {}
        () = &mut stdin_closed => {
            if let Some(s) = &service {
                // Requests read before the end of stdin are answered: those waiting for the first
                // load (a client that wrote its requests and closed stdin at once) wait with it.
                first_load.await;
                // Calls read before the end of stdin are not new: wait (briefly) until each
                // request still unanswered is an admitted call, then admit no more.
                let deadline = tokio::time::Instant::now() + EOF_ADMIT_WAIT;
                while pending.load(std::sync::atomic::Ordering::SeqCst) > s.lifecycle.in_flight()
                    && tokio::time::Instant::now() < deadline
                {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                s.lifecycle.stop_admitting();
            }
            crate::say!("toolhost: stdin closed: no new calls; finishing the calls in flight");
        }
    }
    if let Some(s) = service {
        s.shutdown().await;
    }
    // rmcp writes the answers still queued, then closes.
    session.cancel();
    waiting.await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #32: the executor's parse of an outputSchema tool's result is the one MCP uses.
    #[test]
    fn a_result_the_executor_parsed_is_not_parsed_again() {
        let parsed = serde_json::json!({ "words": 2 });
        // The text is what the model reads; the structure comes from the executor's parse.
        let outcome = Outcome {
            structured: Some(Arc::new(parsed.clone())),
            ..Outcome::ok("{\"words\": 2}".into(), false)
        };
        assert_eq!(call_result(outcome).structured_content, Some(parsed));
        let marker = serde_json::json!({ "from": "the executor" });
        let outcome =
            Outcome { structured: Some(Arc::new(marker.clone())), ..Outcome::ok("{}".into(), false) };
        assert_eq!(
            call_result(outcome).structured_content,
            Some(marker),
            "used as is, not re-read from the text"
        );
        // Without an outputSchema, a JSON object result is parsed here.
        let plain = Outcome::ok("{\"a\": 1}".into(), false);
        assert_eq!(call_result(plain).structured_content, Some(serde_json::json!({ "a": 1 })));
        assert_eq!(call_result(Outcome::ok("[1]".into(), false)).structured_content, None);
    }
}

//! `tools/call`, from a request to its answer: prepared once by the executor, planned once
//! ([`plan`]: run here, run as a task, or refused by this front end's rules on tasks) — the
//! same plan on rmcp's path and on the HTTP front door's direct one (`direct.rs`) — and run
//! with the confirmation this revision allows.

use super::*;
use toolhost_core::executor::{CallRequest, PreparedCall};

/// What this front end does with a prepared call ([`plan`] decides, and only it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Answered at once with a task, the call running on.
    Task,
    /// Run, and answered with its outcome.
    Run,
    /// Refused before it runs, for this reason.
    Refuse(TaskRule),
}

/// A rule on tasks a call breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskRule {
    /// It runs only as a task, and the client does not take tasks.
    NeedsTasks,
    /// 2025-11-25: it runs only as a task, and the request has no `task` member.
    TaskRequired,
    /// 2025-11-25: the request asks for a task, and the tool does not run as one.
    TaskForbidden,
}

impl TaskRule {
    /// The refusal's text (for the audit trail, and the error of the 2025-11-25 rules).
    fn message(self, tool: &str) -> String {
        match self {
            TaskRule::NeedsTasks => {
                format!("tool `{tool}`: it runs only as a task (its manifest says taskSupport: required)")
            }
            TaskRule::TaskRequired => format!(
                "tool `{tool}` runs only as a task (its manifest says taskSupport: required); call it with `task`"
            ),
            TaskRule::TaskForbidden => {
                format!(
                    "tool `{tool}` does not run as a task (taskSupport: forbidden); call it without `task`"
                )
            }
        }
    }

    /// The JSON-RPC error the client gets.
    fn error(self, message: String) -> ErrorData {
        match self {
            TaskRule::NeedsTasks => ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ),
            TaskRule::TaskRequired | TaskRule::TaskForbidden => tasks2025::method_not_found(message),
        }
    }
}

/// The plan for `prepared` from a client that takes tasks (`client_tasks`: the tasks extension)
/// or not, and, on a 2025-11-25 session, whether the request asked for a task (its `task`
/// member). A call its policy refuses is run (and so refused at once), never made a task.
pub(crate) fn plan(prepared: &PreparedCall<'_>, client_tasks: bool, task_2025: Option<bool>) -> Plan {
    if prepared.policy() == Some(DangerPolicy::Deny) {
        return Plan::Run;
    }
    let support = prepared.task_support();
    if let Some(requested) = task_2025 {
        match (support, requested) {
            (TaskSupport::Optional | TaskSupport::Required, true) => return Plan::Task,
            (TaskSupport::Required, false) => return Plan::Refuse(TaskRule::TaskRequired),
            (_, true) => return Plan::Refuse(TaskRule::TaskForbidden),
            _ => {}
        }
    }
    match support {
        TaskSupport::Required if !client_tasks => Plan::Refuse(TaskRule::NeedsTasks),
        TaskSupport::Optional | TaskSupport::Required if client_tasks => Plan::Task,
        _ => Plan::Run,
    }
}

/// Whether the HTTP front door answers `prepared` itself (`direct.rs`): it runs here, asks no
/// one (MCP asks about grants only under `on_missing = "ask"`), and is not `find_tools`, whose
/// result changes the session's list.
pub(crate) fn answered_directly(prepared: &PreparedCall<'_>, plan: Plan) -> bool {
    plan == Plan::Run && !prepared.may_ask(false) && !prepared.is_find_tools()
}

/// The answer to a request the executor refused to prepare: an unknown or ambiguous tool is a
/// JSON-RPC `invalid params` error (the spec lists it among protocol errors); arguments that
/// do not fit are a failed result the model can correct.
pub(crate) fn refused(outcome: Outcome) -> Result<CallToolResult, ErrorData> {
    match outcome.kind {
        Some(ErrorKind::UnknownTool) => {
            Err(ErrorData::invalid_params(outcome.error.unwrap_or_default(), None))
        }
        _ => Ok(result_of(outcome)),
    }
}

/// A call prepared by the direct path and handed on to rmcp (see `direct.rs`): the same
/// prepared call, so its request is prepared once.
#[derive(Clone)]
pub(crate) struct Prepared(pub(crate) Arc<Mutex<Option<PreparedCall<'static>>>>);

impl McpServer {
    /// Run one `tools/call`; `task_2025` is, on a 2025-11-25 session, whether it asked for a
    /// task (its `task` member).
    pub(super) async fn call(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        task_2025: Option<bool>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.first_load().await;
        let who = caller(context);
        let prepared = match handed_on(context, &params.name) {
            Some(prepared) => prepared,
            None => {
                let empty = JsonObject::new();
                let args = params.arguments.as_ref().unwrap_or(&empty);
                let request = CallRequest::Named { name: &params.name, args };
                match self.executor.prepare(request, &who).await {
                    Ok(prepared) => prepared.into_owned(),
                    Err(outcome) => return refused(outcome).map(Into::into),
                }
            }
        };
        let client_tasks = context.client_capabilities().is_some_and(|c| c.supports_tasks());
        match plan(&prepared, client_tasks, task_2025) {
            // That revision keeps the request's progressToken valid for the task's life.
            Plan::Task => {
                let notify = task_2025.and_then(|_| progress_sink(context));
                return self.start_task(prepared, context, notify);
            }
            Plan::Refuse(rule) => {
                let message = rule.message(prepared.name());
                self.executor
                    .refuse(&prepared, Outcome::err(ErrorKind::BadArguments, message.clone()), &who)
                    .await;
                return Err(rule.error(message));
            }
            Plan::Run => {}
        }
        if let Err(e) = self.check_answers(&prepared, &params, context) {
            self.executor.refuse(&prepared, Outcome::err(ErrorKind::Denied, e.clone()), &who).await;
            return Err(ErrorData::invalid_params(e.to_string(), None));
        }
        let response = self.run(&prepared, params.request_state, params.input_responses, context).await?;
        if prepared.is_find_tools()
            && let CallToolResponse::Complete(r) = &response
        {
            self.reveal(r, context).await;
        }
        Ok(response)
    }

    /// A retry's answers are refused before anything runs when its client may not be asked,
    /// or when its state does not open, has expired, or was issued for another tool or plugin
    /// file.
    fn check_answers(
        &self,
        prepared: &PreparedCall<'_>,
        params: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), String> {
        let name = prepared.name();
        if (params.request_state.is_some() || params.input_responses.is_some()) && !may_ask(context) {
            tracing::info!(
                tool = name,
                "refused a retried call: it carries answers without a token or the key"
            );
            return Err(keyless::answers_refused(name));
        }
        let modern = context.protocol_version().is_some_and(|v| !v.has_initialize());
        if modern
            && let Some(state) = &params.request_state
            && let Some(plugin) = prepared.plugin()
            && let Err(e) = self.approvals.precheck(state, name, &plugin.name, &plugin.hash)
        {
            tracing::info!(tool = name, "refused a retried call: {e}");
            return Err(e.to_string());
        }
        Ok(())
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

    /// Run a call the HTTP front door answers itself ([`answered_directly`]), cancelled by
    /// `cancel` (and dropped while it waits for a slot if `gone` fires): the result a handshake
    /// session's handler gives it ([`McpServer::run`] with no one to ask).
    pub(crate) async fn run_direct(
        &self,
        prepared: &PreparedCall<'_>,
        who: CallContext,
        cancel: Cancel,
        gone: Option<Cancel>,
    ) -> CallToolResult {
        let control = CallControl::default().with_cancel(cancel.clone()).with_gone(gone);
        let outcome = self.executor.run(prepared, &NoOneToAsk, &who, &control).await;
        if outcome.kind == Some(ErrorKind::Cancelled) && cancel.is_cancelled() {
            tracing::info!(tool = prepared.name(), "call cancelled by the client; its sandbox was stopped");
        }
        result_of(outcome)
    }

    /// Run a prepared call through the executor with the confirmation this revision allows.
    async fn run(
        &self,
        prepared: &PreparedCall<'_>,
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
            self.executor.run(prepared, &keyless::Keyless, &who, &control).await
        } else if modern {
            let confirm = MrtrConfirm {
                approvals: &self.approvals,
                can_elicit: supports_form(context.client_capabilities().as_ref()),
                request_state,
                input_responses,
                interrupt: Mutex::new(None),
                used: Default::default(),
            };
            let outcome = self.executor.run(prepared, &confirm, &who, &control).await;
            match confirm.take_interrupt() {
                Some(Interrupt::InputRequired(r)) => return Ok(CallToolResponse::InputRequired(r)),
                Some(Interrupt::Invalid(e)) => {
                    tracing::info!(tool = prepared.name(), "refused a retried call: {e}");
                    return Err(ErrorData::invalid_params(e.to_string(), None));
                }
                Some(Interrupt::Unavailable(e)) => {
                    tracing::warn!(tool = prepared.name(), "refused a retried call: {e}");
                    return Err(ErrorData::internal_error(e.to_string(), None));
                }
                None => outcome,
            }
        } else {
            self.executor.run(prepared, &ElicitConfirm { peer: context.peer.clone() }, &who, &control).await
        };
        if outcome.kind == Some(ErrorKind::Cancelled) && context.ct.is_cancelled() {
            tracing::info!(tool = prepared.name(), "call cancelled by the client; its sandbox was stopped");
        }
        Ok(result_of(outcome).into())
    }

    /// Run `prepared` as a task of the request's client: answered at once with the task, the
    /// call running on (cancelled by `tasks/cancel` or a shutdown, never by this request's end).
    /// Its progress goes to the task (for `tasks/get`) and to `notify`, if given.
    fn start_task(
        &self,
        prepared: PreparedCall<'static>,
        context: &RequestContext<RoleServer>,
        notify: Option<Arc<dyn ProgressSink>>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (who, owner) = (caller(context), owner(context));
        let executor = self.executor.clone();
        let (tool, timeout) = (prepared.name().to_string(), prepared.timeout());
        let task = self.tasks.start(&owner, &tool, timeout, move |cancel, progress| async move {
            let task: Arc<dyn ProgressSink> = Arc::new(move |p: &Progress| progress(p));
            let sink = match notify {
                Some(notify) => Arc::new(Both(task, notify)),
                None => task,
            };
            let control = CallControl::default().with_cancel(cancel).with_progress(sink);
            // Nobody can be asked inside a task: a dangerous tool under `ask` is refused.
            let outcome = executor.run(&prepared, &TaskConfirm, &who, &control).await;
            match outcome.kind {
                // Stopped by its client, or by a shutdown (to a plain call that is `unavailable`).
                Some(ErrorKind::Cancelled) => tasks::Ended::Cancelled(outcome.error.unwrap_or_default()),
                Some(ErrorKind::Unavailable) => tasks::Ended::Stopped(outcome.error.unwrap_or_default()),
                _ => tasks::Ended::Result(result_of(outcome)),
            }
        })?;
        tracing::info!(tool, task = task.task_id, "started a task");
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }
}

/// The call the direct path (`direct.rs`) prepared for this request and handed on, if it is for
/// `tool`.
pub(super) fn handed_on(context: &RequestContext<RoleServer>, tool: &str) -> Option<PreparedCall<'static>> {
    // Over stdio with the request itself; over HTTP with its request's parts.
    let parts = || context.extensions.get::<hyper::http::request::Parts>();
    let slot = context.extensions.get::<Prepared>().or_else(|| parts()?.extensions.get::<Prepared>())?;
    let handed = slot.0.lock().unwrap_or_else(|e| e.into_inner()).take()?;
    (handed.call().name == tool || handed.name() == tool).then_some(handed)
}

/// Whose task it is: the token the client authenticated with; else, over HTTP, its 2025
/// session (whose id is a secret the server drew and checks) or, for a 2026-07-28 request with
/// no token, nobody's ([`tasks::ANONYMOUS`]: the task's unguessable id is the only way to it,
/// and `tasks/list` lists none); over stdio, whose one client is the process that started
/// toolhost, the name it gives, else the transport. Over HTTP never the client's self-declared
/// name: another local client can claim any name.
pub(super) fn owner(context: &RequestContext<RoleServer>) -> String {
    let parts = context.extensions.get::<hyper::http::request::Parts>();
    if let Some(who) = parts.and_then(|p| p.extensions.get::<client::Identity>()) {
        return who.0.key();
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
pub(super) fn progress_sink(context: &RequestContext<RoleServer>) -> Option<Arc<dyn ProgressSink>> {
    let token = context.meta.get_progress_token()?;
    Some(Arc::new(McpProgress { peer: context.peer.clone(), token, last: Mutex::new(None) }))
}

/// `notifications/progress` for one request. MCP wants `progress` to increase with every
/// notification: a report that does not raise it (a new message only) is not sent.
pub(super) struct McpProgress {
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
pub(super) struct Both(Arc<dyn ProgressSink>, Arc<dyn ProgressSink>);

impl ProgressSink for Both {
    fn report<'a>(&'a self, p: &'a Progress) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            self.0.report(p).await;
            self.1.report(p).await;
        })
    }
}

/// A call's outcome as a `tools/call` result, with what it cost in `_meta` (and, refused by a
/// rate limit, when to retry: `toolhost/retryAfterMs`).
pub(super) fn result_of(outcome: Outcome) -> CallToolResult {
    let mut m = serde_json::Map::new();
    // What the call cost, for the client's operator (not part of the content the model reads).
    if let Some(u) = outcome.usage.as_ref().and_then(|u| serde_json::to_value(u).ok()) {
        m.insert("toolhost/usage".into(), u);
    }
    for note in &outcome.notes {
        if let toolhost_core::executor::Note::RetryAfter(d) = note {
            m.insert("toolhost/retryAfterMs".into(), (d.as_millis().max(1) as u64).into());
        }
    }
    let meta = (!m.is_empty()).then_some(rmcp::model::MetaObject(m));
    let mut result = call_result(outcome);
    result.meta = meta;
    result
}

/// A call's outcome as an MCP result. A tool with an outputSchema has its result already
/// parsed (the executor checked it against the schema: `Outcome::structured`), and it is used
/// as is; any other tool's JSON object result is structured too, parsed here.
pub(super) fn call_result(outcome: Outcome) -> CallToolResult {
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

/// Whether the client shows MCP Apps: it advertised the `io.modelcontextprotocol/ui` extension
/// (at `initialize`, or in a 2026-07-28 request's `_meta`).
pub(super) fn shows_apps(context: &RequestContext<RoleServer>) -> bool {
    let caps = context.client_capabilities();
    caps.as_ref()
        .and_then(|c| c.extensions.as_ref())
        .is_some_and(|e| e.contains_key(toolhost_spec::apps::EXTENSION))
}

/// Who is calling: the transport, the client's own name, and over HTTP the token it presented.
pub(super) fn caller(context: &RequestContext<RoleServer>) -> CallContext {
    let parts = context.extensions.get::<hyper::http::request::Parts>();
    caller_of(parts, context.client_info().map(|i| i.name), &context.meta)
}

/// [`caller`] from its parts: the HTTP request (`None` over stdio), the client's name, the
/// request's `_meta`.
pub(super) fn caller_of(
    parts: Option<&hyper::http::request::Parts>,
    client: Option<String>,
    meta: &rmcp::model::RequestMetaObject,
) -> CallContext {
    CallContext {
        front_end: Some(if parts.is_some() { "mcp-http" } else { "mcp-stdio" }),
        client,
        token: parts.and_then(|p| p.extensions.get::<client::TokenName>()).map(|t| t.0.clone()),
        // Over stdio: the operator's own process (it started the client).
        principal: match parts {
            Some(p) => p.extensions.get::<client::Identity>().map(|i| i.0.clone()),
            None => Some(toolhost_core::identity::Principal::local()),
        },
        peer: parts.and_then(|p| p.extensions.get::<client::PeerAddr>()).map(|p| p.0),
        session: session_of(parts),
        trace_parent: trace_parent(meta, parts),
        parent: None,
    }
}

/// The MCP session of a request: over HTTP its `Mcp-Session-Id` (none for a 2026-07-28
/// stateless request), over stdio this process's one session.
fn session_of(parts: Option<&hyper::http::request::Parts>) -> Option<std::sync::Arc<str>> {
    static STDIO: std::sync::OnceLock<std::sync::Arc<str>> = std::sync::OnceLock::new();
    match parts {
        Some(p) => p.headers.get("mcp-session-id")?.to_str().ok().map(|s| format!("http:{s}").into()),
        None => Some(STDIO.get_or_init(|| format!("stdio:{}", std::process::id()).into()).clone()),
    }
}

/// Over HTTP, what fires when the request's client is gone (see [`client::ClientGone`]).
pub(super) fn client_gone(parts: Option<&hyper::http::request::Parts>) -> Option<Cancel> {
    parts?.extensions.get::<client::ClientGone>().map(|g| g.0.clone())
}

/// The caller's span, when telemetry is on: `_meta.traceparent` (SEP-414, 2026-07-28), else
/// the HTTP request's `traceparent` header (streamable HTTP); a malformed one is ignored.
pub(super) fn trace_parent(
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
pub(super) fn may_ask(context: &RequestContext<RoleServer>) -> bool {
    keyless::may_ask(context.extensions.get::<hyper::http::request::Parts>())
}

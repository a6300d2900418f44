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
//!   refused with the operator's options. Nothing a client sends can change the policy or any
//!   grant.
//! - Each request is its own task in `rmcp`, so calls from one client run concurrently; a
//!   `notifications/cancelled` stops waiting for (and drops) the call.
//! - Every registry change from the reloader becomes `notifications/tools/list_changed`: to
//!   every initialized session on the handshake revisions, and on the `subscriptions/listen`
//!   streams that asked for `toolsListChanged` on 2026-07-28.

mod approval;
mod http;
pub(crate) mod settings;

pub use http::{HttpOptions, McpToken, check_exposure, load_tokens, serve_http};

use crate::openai;
use approval::{Approvals, Interrupt, MrtrConfirm};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    ElicitRequestParams, ElicitationAction, ElicitationSchema, Implementation, InitializeResult, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;
use toolhost_core::executor::{CallContext, CallRecord, DecidedBy};
use toolhost_core::executor::{Confirm, DangerRequest, Decision, ErrorKind, Executor, Outcome, ToolCall};
use toolhost_core::registry::Served;
use toolhost_core::registry::reload::Reloader;

/// How long a dangerous call waits for the person behind the client to answer.
const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// `tools/list` freshness while the plugin folder is watched: a change is also announced with
/// `list_changed`, so a client that listens sees it at once, and one that does not within this.
const LIVE_LIST_TTL_MS: u64 = 10_000;
/// `tools/list` freshness when nothing reloads the registry (it cannot change).
const FIXED_LIST_TTL_MS: u64 = 3_600_000;

/// The MCP server: one per connection (or HTTP session), all sharing one executor.
#[derive(Clone)]
pub struct McpServer {
    executor: Arc<Executor>,
    reloader: Option<Arc<Reloader>>,
    approvals: Arc<Approvals>,
    cache_scope: CacheScope,
    /// Search mode: the tools `find_tools` returned in this session, listed from then on.
    revealed: Arc<Mutex<std::collections::BTreeSet<String>>>,
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
            revealed: Arc::default(),
        })
    }

    /// The server for one more session: everything shared but what `find_tools` revealed.
    pub fn session(&self) -> McpServer {
        McpServer { revealed: Arc::default(), ..self.clone() }
    }

    /// Approvals (2026-07-28 `requestState`) live this long before the question must be asked again.
    pub fn with_approval_ttl(mut self, ttl: Duration) -> anyhow::Result<McpServer> {
        self.approvals = Arc::new(Approvals::new(ttl).map_err(anyhow::Error::msg)?);
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
        views.iter().map(tool).collect()
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

    /// Run one `tools/call`.
    async fn call(
        &self,
        params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let registry = self.executor.registry();
        let meta_tool = registry.search().map(|s| &s.spec).filter(|s| s.name == params.name);
        let spec = match (registry.who_serves(&params.name), meta_tool) {
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
        drop(registry);
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

    /// Run a mapped call through the executor with the confirmation this revision allows.
    async fn run(
        &self,
        call: ToolCall,
        request_state: Option<String>,
        input_responses: Option<rmcp::model::InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = caller(context);
        let modern = context.protocol_version().is_some_and(|v| !v.has_initialize());
        let outcome = if modern {
            let confirm = MrtrConfirm {
                approvals: &self.approvals,
                can_elicit: supports_form(context.client_capabilities().as_ref()),
                request_state,
                input_responses,
                interrupt: Mutex::new(None),
            };
            let outcome = self.executor.call_in(&call, &confirm, &who).await;
            match confirm.take_interrupt() {
                Some(Interrupt::InputRequired(r)) => return Ok(CallToolResponse::InputRequired(r)),
                Some(Interrupt::Invalid(e)) => {
                    tracing::info!(tool = call.name, "refused a retried call: {e}");
                    return Err(ErrorData::invalid_params(e, None));
                }
                None => outcome,
            }
        } else {
            self.executor.call_in(&call, &ElicitConfirm { peer: context.peer.clone() }, &who).await
        };
        // What the call cost, for the client's operator (not part of the content the model reads).
        let meta = outcome.usage.as_ref().and_then(|u| serde_json::to_value(u).ok()).map(|u| {
            let mut m = serde_json::Map::new();
            m.insert("toolhost/usage".into(), u);
            rmcp::model::MetaObject(m)
        });
        let mut result = if outcome.success {
            let data = outcome.data.unwrap_or_default();
            // A tool with an outputSchema always has an object here (the executor checked it
            // against the schema); any other tool's JSON object result is structured too.
            let structured = if data.trim_start().starts_with('{') && !outcome.truncated {
                serde_json::from_str::<serde_json::Value>(&data).ok().filter(serde_json::Value::is_object)
            } else {
                None
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(data)]);
            result.structured_content = structured;
            result
        } else {
            let kind = outcome.kind.unwrap_or(ErrorKind::ToolError);
            let text = format!("{} [{kind}]", outcome.error.unwrap_or_default());
            CallToolResult::error(vec![ContentBlock::text(text)])
        };
        result.meta = meta;
        Ok(result.into())
    }
}

/// One `tools/list` entry, from the one presentation function.
pub fn tool(view: &toolhost_core::view::ToolView<'_>) -> Tool {
    let schema = match openai::parameters(view.spec) {
        serde_json::Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    // See `ToolView::advertise_read_only`: a dangerous tool is never advertised as read-only, so
    // the two hints never contradict each other.
    let annotations = ToolAnnotations::new()
        .read_only(view.advertise_read_only())
        .destructive(view.dangerous)
        .idempotent(view.idempotent())
        .open_world(view.open_world);
    let mut tool = Tool::new(view.name().to_string(), view.spec.description.clone(), Arc::new(schema));
    tool.title = Some(view.title().to_string());
    tool.annotations = Some(annotations);
    if let Some(serde_json::Value::Object(o)) = &view.spec.output_schema {
        tool.output_schema = Some(Arc::new(o.clone()));
    }
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
    tool.meta = Some(rmcp::model::MetaObject(view.meta()));
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
            let plugin = self.executor.registry().lookup(&call.name).map(|e| e.plugin.clone());
            let record = CallRecord { plugin, danger: None };
            observer.unrun(&call, &caller(context), record, &Outcome::err(kind, why));
        }
    }
}

/// Who is calling: the transport, the client's own name, and over HTTP the token it presented.
fn caller(context: &RequestContext<RoleServer>) -> CallContext {
    let parts = context.extensions.get::<hyper::http::request::Parts>();
    CallContext {
        front_end: Some(if parts.is_some() { "mcp-http" } else { "mcp-stdio" }),
        client: context.client_info().map(|i| i.name),
        token: parts.and_then(|p| p.extensions.get::<http::TokenName>()).map(|t| t.0.clone()),
    }
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
        InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
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
        Ok(self.tools_result())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        tokio::select! {
            r = self.call(request, &context) => r,
            _ = context.ct.cancelled() => {
                tracing::info!(tool = name, "call cancelled by the client");
                Err(ErrorData::internal_error(format!("call to `{name}` was cancelled"), None))
            }
        }
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
        let mut rx = reloader.subscribe();
        let peer = context.peer;
        tokio::spawn(async move {
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
}

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
    let running = tokio::select! {
        r = server.serve(rmcp::transport::stdio_pipes()) => r?,
        () = &mut shutdown => return Ok(()), // no session yet: nothing in flight
    };
    let session = running.cancellation_token();
    let mut waiting = std::pin::pin!(running.waiting());
    tokio::select! {
        r = &mut waiting => {
            r?;
            return Ok(());
        }
        () = &mut shutdown => {}
    }
    if let Some(s) = service {
        s.shutdown().await;
    }
    // rmcp writes the answers still queued, then closes.
    session.cancel();
    waiting.await?;
    Ok(())
}

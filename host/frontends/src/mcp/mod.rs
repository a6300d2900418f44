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
//! - Skills (`skills.rs`, the `io.modelcontextprotocol/skills` extension): `skills/list`,
//!   `skills/get`, and their files as resources, `skill://PLUGIN/NAME/PATH`; cached like
//!   `tools/list`.
//! - Resources (`resources.rs`): `resources/list` (each skill's `SKILL.md`, the plugins' static
//!   resources), `resources/templates/list`, `resources/read` (the executor's read: a plugin's
//!   resource runs in its sandbox).
//! - Prompts and completion (`prompts.rs`): `prompts/list`, `prompts/get` and
//!   `completion/complete`, through the executor; `notifications/prompts/list_changed` with the
//!   others on a reload.
//!   The capabilities are declared whether or not a plugin has skills (a reload may add some).
//! - Every registry change from the reloader becomes `notifications/tools/list_changed` and
//!   `notifications/resources/list_changed`: to every initialized session on the handshake
//!   revisions, and on the `subscriptions/listen` streams that asked for `toolsListChanged` or
//!   `resourcesListChanged` on 2026-07-28.

mod approval;
mod call;
mod client;
mod confirm;
mod decode;
mod direct;
mod handler;
mod http;
mod idle;
mod keyless;
mod pages;
mod plain_json;
mod prompts;
mod replay;
mod resources;
pub(crate) mod settings;
mod skills;
#[doc(hidden)]
pub mod stages;
mod stateless;
mod stdio;
mod stdio_direct;
mod subscriptions;
mod tasks;
mod tasks2025;

use call::*;
use confirm::*;
pub use http::{HttpOptions, McpToken, check_exposure, load_tokens, serve_http};
pub use settings::{SessionCaps, StoreUrl};
pub use tasks::{TaskLimits, Tasks};

/// The 2026-07-28 confirmation and grant question, for tests that drive the executor with it.
pub use approval::{ApprovalError, Approvals, GRANT_KEY, Interrupt, MrtrConfirm};
pub use replay::StoreError;

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
use toolhost_core::executor::{CallContext, CallControl, Cancel, DecidedBy, Progress, ProgressSink};
use toolhost_core::executor::{Confirm, DangerRequest, Decision, ErrorKind, Executor, Outcome};
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
    /// Items one page of a paginated list holds (`[mcp] page_size`; see [`pages`]).
    page_size: usize,
    /// Search mode: the tools `find_tools` returned in this session, listed from then on.
    revealed: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// The resources this session follows (`resources/subscribe`).
    watched: Arc<subscriptions::Watched>,
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
            page_size: settings::DEFAULT_PAGE_SIZE,
            revealed: Arc::default(),
            watched: Arc::default(),
            loaded: None,
        })
    }

    /// The server `[mcp]` describes (`mcp`): approvals sealed with its shared key and redeemed in
    /// its replay store when given, its task limits, message cap and 2025 session rules — the
    /// server `serve --mcp` runs, for an embedder in one call. `private` marks `tools/list`
    /// private (set when HTTP callers must authenticate). Fails when a secret cannot be read, the
    /// key is too short or the store's URL is not `redis://`.
    pub fn from_settings(
        executor: Arc<Executor>,
        reloader: Option<Arc<Reloader>>,
        mcp: &settings::McpSettings,
        private: bool,
    ) -> anyhow::Result<McpServer> {
        let approval_key = match &mcp.approval_key {
            Some(source) => Some(source.read().map_err(|e| anyhow::anyhow!("mcp.approval_key: {e}"))?),
            None => None,
        };
        let replay_store =
            mcp.replay_store.as_ref().map(|s| s.read()).transpose().map_err(anyhow::Error::msg)?;
        let server = McpServer::new(executor, reloader)?
            .with_approvals(mcp.approval_ttl, approval_key.as_deref(), replay_store.as_deref())?
            .with_task_limits(mcp.tasks)
            .with_max_message(mcp.max_message_bytes)
            .with_session_idle(mcp.session_idle)
            .with_session_caps(mcp.sessions)
            .with_page_size(mcp.page_size);
        Ok(if private { server.private_listing() } else { server })
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

    /// At most `n` items a page of `resources/list`, `resources/templates/list`, `prompts/list`
    /// and `skills/list`.
    pub fn with_page_size(mut self, n: usize) -> McpServer {
        self.page_size = n.max(1);
        self
    }

    /// The server for one more session: everything shared but what `find_tools` revealed.
    pub fn session(&self) -> McpServer {
        McpServer { revealed: Arc::default(), watched: Arc::default(), ..self.clone() }
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

    /// How long a listing (tools, skills, resources) stays fresh: `LIVE_LIST_TTL_MS` while
    /// the folder is watched, `FIXED_LIST_TTL_MS` when nothing can change it.
    fn list_ttl(&self) -> u64 {
        if self.reloader.is_some() { LIVE_LIST_TTL_MS } else { FIXED_LIST_TTL_MS }
    }

    /// The `tools/list` entries for the current registry, in name order.
    pub fn tools(&self, who: &toolhost_core::executor::CallContext) -> Vec<Tool> {
        self.tools_for(who, true)
    }

    /// [`McpServer::tools`] for a client that shows MCP Apps (`shows_apps`: it advertised the
    /// `io.modelcontextprotocol/ui` extension) or not: a tool for apps only is listed to the
    /// first, with `visibility: ["app"]`, and kept from the others, whose models would be
    /// offered it.
    pub fn tools_for(&self, who: &toolhost_core::executor::CallContext, shows_apps: bool) -> Vec<Tool> {
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
        // The operator's policy: a caller never sees a tool it may not call.
        let shown = |v: &&toolhost_core::view::ToolView<'_>| shows_apps || !v.app_only;
        views.iter().filter(shown).filter(|v| self.executor.may_list(v, who)).map(tool).collect()
    }

    /// The whole `tools/list` result. The caching hints (SEP-2549, required on 2026-07-28 and
    /// ignored before): the list is the same for every caller of this process, fresh for
    /// `LIVE_LIST_TTL_MS` while the folder is watched, and `public` unless HTTP tokens guard it.
    /// A client that does not show apps is not listed the tools for apps only (see
    /// [`McpServer::tools_for`]): while there are any, the list is private to its client.
    pub fn tools_result(
        &self,
        who: &toolhost_core::executor::CallContext,
        shows_apps: bool,
    ) -> ListToolsResult {
        let registry = self.executor.registry();
        let app_only =
            registry.tools().any(|e| toolhost_core::registry::apps::app_only(&e.plugin, e.own_name()));
        let scope = if app_only { CacheScope::Private } else { self.cache_scope };
        let mut result = ListToolsResult::with_all_items(self.tools_for(who, shows_apps))
            .with_ttl_ms(self.list_ttl())
            .with_cache_scope(scope);
        let conflicts = toolhost_core::view::conflict_lines(&self.executor.registry());
        if !conflicts.is_empty() {
            let mut m = serde_json::Map::new();
            m.insert("toolhost/conflicts".into(), conflicts.into());
            result.meta = Some(rmcp::model::MetaObject(m));
        }
        result
    }
}

/// One `tools/list` entry, from the one presentation function.
pub fn tool(view: &toolhost_core::view::ToolView<'_>) -> Tool {
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
    meta.insert("toolhost/taskSupport".into(), view.task_support().as_str().into());
    tool.meta = Some(rmcp::model::MetaObject(meta));
    tool
}

/// How long calls answered directly may run on after a client closed stdin with no service to
/// drain them (what rmcp gives the calls it runs).
const UNDRAINED_GRACE: Duration = Duration::from_secs(5);

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
    let direct = stdio_direct::StdioDirect::new(server.clone());
    let transport =
        stdio::StdioTransport::new(stdin, stdout, server.max_message, hold_eof).with_direct(direct.clone());
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
            // The client closed stdin with no service to drain: the calls answered directly
            // get what rmcp gives its own (five seconds), then are cancelled and answered.
            if tokio::time::timeout(UNDRAINED_GRACE, direct.finished()).await.is_err() {
                direct.cancel_all("the end of the session");
                direct.finished().await;
            }
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
    // Drained: the calls answered directly have ended; their answers are written first.
    direct.cancel_all("the end of the session");
    direct.finished().await;
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

//! MCP front end: the registry served to any MCP client over stdio or streamable HTTP, with the
//! official Rust SDK (`rmcp`) doing the protocol.
//!
//! - `tools/list`: every registered tool, with the same JSON Schema as the OpenAI front end,
//!   `destructiveHint` for `danger` tools (from the manifest or the operator's `[tool.X]`) and
//!   `readOnlyHint` where the manifest says `read_only`.
//! - `tools/call`: through the one executor. Success is text content (plus `structuredContent`
//!   when the tool returned a JSON object); a failed call is `isError: true` with the error
//!   text for the model (bad arguments included, so the model can correct itself); an unknown
//!   tool is a JSON-RPC `invalid params` error, as the spec lists it among protocol errors.
//! - Danger under policy `ask`: the client is asked through form elicitation when it declares
//!   support; otherwise the call is refused with the operator's options. Nothing a client
//!   sends can change the policy or any grant.
//! - Each request is its own task in `rmcp`, so calls from one client run concurrently; a
//!   `notifications/cancelled` stops waiting for (and drops) the call.
//! - Every registry change from the reloader becomes `notifications/tools/list_changed`.

use crate::executor::{Confirm, DangerRequest, Decision, ErrorKind, Executor, ToolCall};
use crate::protocol::openai;
use crate::reload::Reloader;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{ElicitationMode, NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// How long a dangerous call waits for the person behind the client to answer.
const ELICITATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The MCP server: one per connection (or HTTP session), all sharing one executor.
#[derive(Clone)]
pub struct McpServer {
    executor: Arc<Executor>,
    reloader: Option<Arc<Reloader>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for `executor`; with a `reloader`, clients are told when the tool list changes.
    pub fn new(executor: Arc<Executor>, reloader: Option<Arc<Reloader>>) -> McpServer {
        McpServer { executor, reloader }
    }

    /// The `tools/list` entries for the current registry.
    pub fn tools(&self) -> Vec<Tool> {
        let registry = self.executor.registry();
        registry
            .tools()
            .map(|entry| {
                let view = crate::view::ToolView::new(entry, self.executor.config());
                let spec = view.spec;
                let schema = match openai::parameters(spec) {
                    serde_json::Value::Object(o) => o,
                    _ => JsonObject::new(),
                };
                // See `ToolView::advertise_read_only`: a dangerous tool is never advertised as
                // read-only, so the two hints never contradict each other.
                let annotations =
                    ToolAnnotations::new().read_only(view.advertise_read_only()).destructive(view.dangerous);
                let mut tool = Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(schema));
                tool.annotations = Some(annotations);
                tool
            })
            .collect()
    }

    /// Run one `tools/call`.
    async fn call(
        &self,
        params: CallToolRequestParams,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let registry = self.executor.registry();
        let Some(entry) = registry.get(&params.name) else {
            let close = registry.suggest(&params.name);
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!("; did you mean: {}?", close.join(", "))
            };
            return Err(ErrorData::invalid_params(format!("unknown tool `{}`{hint}", params.name), None));
        };
        let spec = entry.spec().clone();
        drop(registry);
        let arguments = serde_json::Value::Object(params.arguments.unwrap_or_default()).to_string();
        let args = match openai::map_arguments(&spec, &arguments) {
            Ok(a) => a,
            Err(e) => return Ok(CallToolResult::error(vec![ContentBlock::text(e)])),
        };
        let call = ToolCall { name: spec.name.clone(), args };
        let confirm = ElicitConfirm { peer };
        let outcome = self.executor.call_with(&call, &confirm).await;
        // What the call cost, for the client's operator (not part of the content the model reads).
        let meta = outcome.usage.as_ref().and_then(|u| serde_json::to_value(u).ok()).map(|u| {
            let mut m = serde_json::Map::new();
            m.insert("toolhost/usage".into(), u);
            rmcp::model::MetaObject(m)
        });
        let mut result = if outcome.success {
            let data = outcome.data.unwrap_or_default();
            let structured = match serde_json::from_str::<serde_json::Value>(&data) {
                Ok(v @ serde_json::Value::Object(_)) if !outcome.truncated => Some(v),
                _ => None,
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
        Ok(result)
    }
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
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        tokio::select! {
            r = self.call(request, context.peer.clone()) => r.map(CallToolResponse::from),
            _ = context.ct.cancelled() => {
                tracing::info!(tool = name, "call cancelled by the client");
                Err(ErrorData::internal_error(format!("call to `{name}` was cancelled"), None))
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

/// Asks the person behind the MCP client (form elicitation) whether a dangerous call may run.
struct ElicitConfirm {
    peer: Peer<RoleServer>,
}

impl Confirm for ElicitConfirm {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            let refuse = |why: String| {
                Decision::Deny(format!(
                    "tool `{}` is dangerous and was not confirmed ({why}); the operator can allow it with \
                     `[danger] policy = \"allow\"` in toolhost.toml or `--danger allow`",
                    req.tool
                ))
            };
            if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
                return refuse("this MCP client cannot be asked: it does not support elicitation".into());
            }
            let schema = match ElicitationSchema::builder().required_bool("approve").build() {
                Ok(s) => s,
                Err(e) => return refuse(format!("cannot build the question: {e}")),
            };
            let shown: Vec<String> =
                req.args.iter().map(|a| format!("{:?}", a.chars().take(200).collect::<String>())).collect();
            let message = format!(
                "Allow the dangerous tool `{}` (plugin `{}`) to run with arguments ({})? Set approve to true to allow.",
                req.tool,
                req.plugin,
                shown.join(", ")
            );
            let params =
                ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
            match self.peer.create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT)).await {
                Ok(r) if r.action == ElicitationAction::Accept => {
                    let approved = r
                        .content
                        .as_ref()
                        .and_then(|c| c.get("approve"))
                        .and_then(|v| v.as_bool())
                        .unwrap_or(false);
                    if approved { Decision::Allow } else { refuse("the user did not approve".into()) }
                }
                Ok(r) => refuse(format!("the user answered {:?}", r.action).to_lowercase()),
                Err(e) => refuse(format!("asking the client failed: {e}")),
            }
        })
    }
}

/// Serve MCP over stdin/stdout until the client disconnects. stdout carries only protocol
/// messages (logs go to stderr).
pub async fn serve_stdio(server: McpServer) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// Options for the streamable HTTP transport.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Extra `Host` header values to accept (besides localhost, 127.0.0.1 and ::1).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call (`http://localhost:3000`); none by default, so any request
    /// carrying an `Origin` header is refused (DNS-rebinding protection).
    pub allowed_origins: Vec<String>,
}

/// Serve MCP over streamable HTTP at `http://ADDR/mcp` until `shutdown` completes.
pub async fn serve_http(
    server: McpServer,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    use http_body_util::{BodyExt, Full};
    use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
    use rmcp::transport::streamable_http_server::StreamableHttpService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

    let addr = listener.local_addr()?;
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts);
    config = if options.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(options.allowed_origins.clone())
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept on {addr}: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return Ok(()),
        };
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let service = service.clone();
                async move {
                    if req.uri().path() != "/mcp" {
                        let body =
                            Full::new(bytes::Bytes::from_static(b"not found: the MCP endpoint is /mcp\n"))
                                .map_err(|never| match never {})
                                .boxed();
                        let mut resp = hyper::Response::new(body);
                        *resp.status_mut() = hyper::StatusCode::NOT_FOUND;
                        return Ok::<_, std::convert::Infallible>(resp);
                    }
                    Ok(service.handle(req).await)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await {
                tracing::debug!("MCP HTTP connection from {peer}: {e}");
            }
        });
    }
}

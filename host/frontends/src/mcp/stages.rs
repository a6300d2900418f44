//! The stages of one MCP `tools/call`, each on its own, for the benchmark's breakdown (issue
//! #33; `host/cli/benches/bench.rs`). Not an API: the same functions the call path runs, with
//! the same inputs, so each can be timed alone.

use super::McpServer;
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, ClientRequest, JsonObject, JsonRpcMessage, ServerResult};
use rmcp::service::RxJsonRpcMessage;
use std::sync::Arc;
use toolhost_core::executor::{Executor, Outcome};
use toolhost_core::registry::Served;
use toolhost_spec::ToolCall;

/// One `tools/call` request line, decoded once to get at its parameters.
pub struct CallStages {
    executor: Arc<Executor>,
    line: Vec<u8>,
    params: CallToolRequestParams,
}

impl CallStages {
    /// `line` must be a `tools/call` request.
    pub fn new(executor: Arc<Executor>, line: &str) -> anyhow::Result<CallStages> {
        let m: RxJsonRpcMessage<RoleServer> = serde_json::from_str(line)?;
        let JsonRpcMessage::Request(r) = m else { anyhow::bail!("not a request: {line}") };
        let ClientRequest::CallToolRequest(c) = r.request else { anyhow::bail!("not a tools/call: {line}") };
        Ok(CallStages { executor, line: line.as_bytes().to_vec(), params: c.params })
    }

    /// rmcp's decoding of the line into its message type (what the stdio transport does).
    pub fn decode(&self) -> bool {
        serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&self.line).is_ok()
    }

    /// The registry lookup, the mapping of the JSON arguments to the tool's parameters, and the
    /// tool's view (its limits and task support): what `McpServer::call` does before running.
    pub fn map(&self) -> Option<ToolCall> {
        let registry = self.executor.registry();
        let Served::By(entry) = registry.who_serves(&self.params.name) else { return None };
        let spec = entry.spec();
        let empty = JsonObject::new();
        let args = crate::openai::map_argument_object(spec, self.params.arguments.as_ref().unwrap_or(&empty))
            .ok()?;
        let view = toolhost_core::view::ToolView::new(entry, self.executor.config());
        let support = super::task_support(&view, self.executor.config().danger);
        std::hint::black_box((support, view.limits.timeout_ms));
        Some(ToolCall { name: spec.name.clone(), args })
    }

    /// An outcome as the answer's line: the MCP result, the JSON-RPC response, its encoding.
    pub fn encode(&self, outcome: Outcome) -> usize {
        let response = super::result_of(outcome);
        let message: rmcp::service::TxJsonRpcMessage<RoleServer> = JsonRpcMessage::response(
            ServerResult::from(rmcp::model::CallToolResponse::from(response)),
            rmcp::model::NumberOrString::Number(1),
        );
        let mut line = serde_json::to_vec(&message).unwrap_or_default();
        line.push(b'\n');
        line.len()
    }
}

/// `server` serving MCP over an in-memory pipe (no process, no system pipe): the client's
/// writer and line reader. The protocol layer and its task hops, without the transport's.
pub fn in_process(
    server: McpServer,
) -> (
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
    tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
) {
    use rmcp::ServiceExt;
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let transport = super::stdio::StdioTransport::new(read, write, server.max_message, None);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(transport).await {
            let _ = running.waiting().await;
        }
    });
    let (read, write) = tokio::io::split(client);
    (write, tokio::io::BufReader::new(read))
}

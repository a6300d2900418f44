//! The stages of one MCP `tools/call`, each on its own, for the benchmark's breakdown (issue
//! #33; `host/cli/benches/bench.rs`). Not an API: the same functions the call path runs, with
//! the same inputs, so each can be timed alone. [`FixedAnswer`] is rmcp alone answering a call
//! at once, served as `serve --mcp` serves: the protocol layer's share of a round trip.

use super::McpServer;
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, ClientRequest, JsonObject, JsonRpcMessage, ServerResult};
use rmcp::service::RxJsonRpcMessage;
use std::sync::Arc;
use toolhost_core::executor::{Executor, Outcome};

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

    /// The stdio transport's decoding of the line into rmcp's message type (a `tools/call` in
    /// the usual shape in one pass, see `decode.rs`): whether it was read that way.
    pub fn decode(&self) -> bool {
        super::decode::tools_call(&self.line).is_some()
    }

    /// rmcp's own decoding of the line (what the stdio transport did before, and what rmcp's
    /// streamable HTTP service does).
    pub fn decode_rmcp(&self) -> bool {
        serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&self.line).is_ok()
    }

    /// The call's preparation (the registry lookup, the mapping of the JSON arguments to the
    /// tool's parameters, its policy, limits and task support) and this front end's plan of it:
    /// what `McpServer::call` does before running. Whether it would run.
    pub async fn map(&self) -> bool {
        let empty = JsonObject::new();
        let args = self.params.arguments.as_ref().unwrap_or(&empty);
        let request = toolhost_core::executor::CallRequest::Named { name: &self.params.name, args };
        let ctx = toolhost_core::executor::CallContext::default();
        match self.executor.prepare(request, &ctx).await {
            Ok(prepared) => super::plan(&prepared, false, None) == super::Plan::Run,
            Err(_) => false,
        }
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
pub fn in_process(server: McpServer) -> InProcess {
    let max_message = server.max_message;
    in_process_with(server, max_message)
}

/// [`FixedAnswer`] serving MCP over an in-memory pipe, as [`in_process`] serves toolhost's.
pub fn in_process_fixed() -> InProcess {
    in_process_with(FixedAnswer, MAX_MESSAGE)
}

/// The client's ends of an in-memory MCP pipe: its writer and line reader.
pub type InProcess = (
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
    tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
);

fn in_process_with<S: rmcp::ServerHandler>(handler: S, max_message: usize) -> InProcess {
    use rmcp::ServiceExt;
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let transport = super::stdio::StdioTransport::new(read, write, max_message, None);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(transport).await {
            let _ = running.waiting().await;
        }
    });
    let (read, write) = tokio::io::split(client);
    (write, tokio::io::BufReader::new(read))
}

/// A server that answers every `tools/call` at once with its `text` argument, running no tool:
/// rmcp's protocol layer for a call, alone — the bound the benchmark puts beside toolhost's
/// round trips (issue #33).
#[derive(Clone, Copy, Debug, Default)]
pub struct FixedAnswer;

impl rmcp::ServerHandler for FixedAnswer {
    fn get_info(&self) -> rmcp::model::InitializeResult {
        rmcp::model::InitializeResult::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let text = request.arguments.as_ref().and_then(|a| a.get("text")?.as_str()).unwrap_or_default();
        Ok(rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]).into())
    }
}

/// `[mcp] max_message_kb` by default, in bytes.
const MAX_MESSAGE: usize = super::settings::DEFAULT_MAX_MESSAGE_KB * 1024;

/// [`FixedAnswer`] over stdin and stdout through toolhost's own stdio transport (as
/// `serve --mcp` reads and writes them), until stdin ends.
pub async fn serve_fixed_stdio() -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let transport = super::stdio::StdioTransport::new(stdin, stdout, MAX_MESSAGE, None);
    FixedAnswer.serve(transport).await?.waiting().await?;
    Ok(())
}

/// [`FixedAnswer`] behind rmcp's streamable HTTP service, configured as `serve --mcp --http`
/// configures it (JSON answers where rmcp gives them, loopback hosts, the message limit), on
/// `listener`'s connections (keep-alive, `TCP_NODELAY`); serves until the process ends.
pub async fn serve_fixed_http(listener: tokio::net::TcpListener) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"].map(String::from))
        .with_max_request_body_bytes(MAX_MESSAGE)
        .enforce_origin_validation();
    let service =
        StreamableHttpService::new(|| Ok(FixedAnswer), Arc::new(LocalSessionManager::default()), config);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let service = service.clone();
                async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_fixed_answer_is_the_calls_text_and_nothing_runs() {
        let (mut write, read) = in_process_fixed();
        let mut lines = read.lines();
        let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        write.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
        let answer: serde_json::Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert!(answer["result"]["capabilities"]["tools"].is_object(), "{answer}");
        write.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await.unwrap();
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"anything","arguments":{"text":"hello there"}}}"#;
        write.write_all(format!("{call}\n").as_bytes()).await.unwrap();
        let answer: serde_json::Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"]["content"][0]["text"], "hello there", "{answer}");
        assert_eq!(answer["result"]["isError"], false);
    }
}

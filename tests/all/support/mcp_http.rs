//! MCP over HTTP driven raw: a POST and the JSON-RPC messages of its answer, a POST whose event
//! stream may carry requests of the server's (an `elicitation/create`) that the test answers, a
//! 2025 session opened with the capabilities a test declares, a 2026-07-28 stateless call, and
//! the server started with its stderr left to the test.

use super::Env;
use super::http::{self, header};
use super::server::{Started, launch};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, ChildStderr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use super::server::Killed;

/// The header lines every MCP POST carries.
const POST_HEADERS: &str =
    "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";

/// `serve --mcp --http 127.0.0.1:0` in `env`, with `global` arguments before the subcommand;
/// the server, its URL, and its stderr (the caller decides whether it keeps reading it).
#[track_caller]
pub fn serve_mcp_http(env: &Env, global: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    let Started { child, url, stderr, .. } =
        launch(env.command().args(global).args(["serve", "--mcp", "--http", "127.0.0.1:0"]));
    (child, url, stderr)
}

/// [`serve_mcp_http`], and the local key the server printed before its URL (none with `[mcp]
/// tokens`): the bearer token of a client that may be asked questions.
#[track_caller]
pub fn serve_mcp_http_keyed(
    env: &Env,
    global: &[&str],
) -> (Child, String, BufReader<ChildStderr>, Option<String>) {
    let Started { child, url, stderr, key, .. } =
        launch(env.command().args(global).args(["serve", "--mcp", "--http", "127.0.0.1:0"]));
    (child, url, stderr, key)
}

/// The server's stderr lines, read on as they come.
pub fn keep_reading(mut err: BufReader<ChildStderr>) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let kept = lines.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while err.read_line(&mut line).is_ok_and(|n| n > 0) {
            kept.lock().unwrap().push(std::mem::take(&mut line));
        }
    });
    lines
}

/// An MCP endpoint's `HOST:PORT` and path.
fn split(url: &str) -> (&str, &str) {
    let rest = url.trim_start_matches("http://");
    rest.find('/').map_or((rest, "/"), |at| rest.split_at(at))
}

/// `body` POSTed to `url` (an MCP endpoint) with the header lines `headers`: the status, the head
/// and the JSON messages of the answer (plain JSON, or the events of a stream).
#[track_caller]
pub fn post(url: &str, headers: &str, body: &Value) -> (u16, String, Vec<Value>) {
    try_post(url, headers, body).unwrap_or_else(|e| panic!("no answer from {url}: {e}"))
}

/// [`post`], with a failure to connect, send or read the answer's head as an `Err` (a server
/// may be going away under it).
pub fn try_post(url: &str, headers: &str, body: &Value) -> std::io::Result<(u16, String, Vec<Value>)> {
    let (to, path) = split(url);
    let a = http::try_request(to, "POST", path, &format!("{POST_HEADERS}{headers}"), &body.to_string())?;
    let messages = a.messages();
    Ok((a.status, a.head, messages))
}

/// `body` (a notification or a response) POSTed with `headers`: the status.
#[track_caller]
pub fn send(url: &str, headers: &str, body: &Value) -> u16 {
    post(url, headers, body).0
}

/// `body` POSTed with `headers` until the answer to its request arrives: the status, the head
/// and the messages in the order they came (plain JSON, or the events of a stream). A request
/// the server sends on the stream (an `elicitation/create`) is answered with `reply(request)` as
/// its result, POSTed with the same headers.
pub fn exchange(
    url: &str,
    headers: &str,
    body: &Value,
    reply: impl Fn(&Value) -> Value,
) -> (u16, String, Vec<Value>) {
    let (to, path) = split(url);
    let mut s = http::stream(to, "POST", path, &format!("{POST_HEADERS}{headers}"), &body.to_string());
    if !content_type(&s.head).starts_with("text/event-stream") {
        let mut rest = String::new();
        s.body.read_to_string(&mut rest).unwrap();
        let messages = if rest.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(rest.trim()).unwrap_or_else(|e| panic!("{e}: {rest:?}"))]
        };
        return (s.status, s.head, messages);
    }
    let id = &body["id"];
    let mut messages: Vec<Value> = Vec::new();
    let mut line = String::new();
    while !messages.iter().any(|m| m["id"] == *id && m.get("method").is_none()) {
        line.clear();
        if s.body.read_line(&mut line).unwrap() == 0 {
            break; // the stream ended without the answer: the caller sees what came
        }
        let Some(message) =
            line.strip_prefix("data:").and_then(|d| serde_json::from_str::<Value>(d.trim()).ok())
        else {
            continue;
        };
        if message.get("method").is_some() && message.get("id").is_some() {
            let result = json!({"jsonrpc": "2.0", "id": message["id"], "result": reply(&message)});
            assert_eq!(send(url, headers, &result), 202, "the reply to {message}");
        }
        messages.push(message);
    }
    (s.status, s.head, messages)
}

/// A session of `revision` opened by a client named `client` that declares `capabilities`
/// (its `initialize` must succeed, read as [`exchange`] reads, and `notifications/initialized` is
/// sent): its id.
#[track_caller]
pub fn open_session(url: &str, revision: &str, capabilities: Value, client: &str) -> String {
    let init = initialize(revision, capabilities, client);
    let (status, head, messages) = exchange(url, "", &init, |_| panic!("asked during initialize"));
    initialized(url, "", revision, (status, head, messages))
}

/// [`open_session`] with the header lines `auth` (an `Authorization` line, or nothing) on its
/// requests, the answer to `initialize` read whole ([`post`]).
#[track_caller]
pub fn open_session_as(url: &str, auth: &str, revision: &str, capabilities: Value, client: &str) -> String {
    let answer = post(url, auth, &initialize(revision, capabilities, client));
    initialized(url, auth, revision, answer)
}

/// An `initialize` (request id 0).
fn initialize(revision: &str, capabilities: Value, client: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": capabilities,
        "clientInfo": {"name": client, "version": "0"}}})
}

/// The session `answer` (to [`initialize`]) opened, once told `notifications/initialized`.
#[track_caller]
fn initialized(url: &str, auth: &str, revision: &str, answer: (u16, String, Vec<Value>)) -> String {
    let (status, head, messages) = answer;
    assert_eq!(status, 200, "{head}");
    assert!(messages.iter().any(|m| m["id"] == json!(0) && m.get("result").is_some()), "{messages:?}");
    let session = header(&head, "mcp-session-id").unwrap_or_else(|| panic!("no session id: {head}"));
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(url, &format!("{auth}{}", session_headers(&session, revision)), &done), 202);
    session
}

/// The header lines of a request in `session`, of `revision`.
pub fn session_headers(session: &str, revision: &str) -> String {
    format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {revision}\r\n")
}

/// The `Content-Type` of a response head.
pub fn content_type(head: &str) -> String {
    header(head, "content-type").unwrap_or_default()
}

/// The answer to request `id` among `messages`.
pub fn answer(messages: &[Value], id: i64) -> &Value {
    messages.iter().find(|m| m["id"] == json!(id)).unwrap_or_else(|| panic!("no answer {id}: {messages:?}"))
}

/// What a server (`-vv`) says when it answers a call without rmcp's session (`mcp::direct`).
pub const ANSWERED_DIRECTLY: &str = "answered without rmcp's session";

/// How many calls the server says it answered without rmcp's session (`-vv`).
pub fn answered_directly(lines: &Mutex<Vec<String>>) -> usize {
    lines.lock().unwrap().iter().filter(|l| l.contains(ANSWERED_DIRECTLY)).count()
}

/// A result with what varies from call to call (its cost) left out.
pub fn without_usage(mut message: Value) -> Value {
    if let Some(meta) = message["result"]["_meta"].as_object_mut() {
        meta.remove("toolhost/usage");
    }
    message
}

/// A 2026-07-28 client, stateless: who it is travels in each request's `_meta`.
pub struct Stateless<'a> {
    pub url: &'a str,
    /// Header lines of its every request (an `Authorization` line, or nothing).
    pub auth: &'a str,
    pub client: &'a str,
    pub capabilities: Value,
}

/// The capabilities of a client that can be asked by form.
pub fn form() -> Value {
    json!({"elicitation": {"form": {}}})
}

impl Stateless<'_> {
    /// The `params` of its `tools/call` of `tool` with `arguments`.
    pub fn params(&self, tool: &str, arguments: Value) -> Value {
        json!({"name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": self.client, "version": "0"},
        }})
    }

    /// The header lines of its `tools/call` of `tool`, after `auth`.
    pub fn headers(&self, tool: &str) -> String {
        format!(
            "{}MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n",
            self.auth
        )
    }

    /// A `tools/call` (id 1) with `params` and the extra header lines `extra`: the status, the
    /// head and the JSON-RPC response.
    #[track_caller]
    pub fn call_with(&self, params: Value, extra: &str) -> (u16, String, Value) {
        let tool = params["name"].as_str().unwrap().to_string();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let (status, head, messages) = post(self.url, &format!("{}{extra}", self.headers(&tool)), &body);
        let response = messages
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(1)))
            .unwrap_or_else(|| panic!("no JSON-RPC response in: {head}"));
        (status, head, response)
    }

    /// A `tools/call` of `tool` with `arguments` — on a retry, with the sealed `requestState` of
    /// the question and the answer to its input request (`(state, name, answer)`): the JSON-RPC
    /// response.
    #[track_caller]
    pub fn call(&self, tool: &str, arguments: Value, retry: Option<(&str, &str, Value)>) -> Value {
        let mut params = self.params(tool, arguments);
        if let Some((state, name, answer)) = retry {
            params["requestState"] = state.into();
            params["inputResponses"] = json!({ name: answer });
        }
        self.call_with(params, "").2
    }
}

/// A 2025-06-18 `initialize` (request id 1) from a client named `raw`.
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// The head of an MCP `POST` written raw (the request line and header lines: with the bearer
/// `token`, if any, and the session, if any).
pub fn mcp_headers(addr: SocketAddr, token: Option<&str>, session: Option<&str>) -> String {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let session = session.map(|s| session_headers(s, "2025-06-18")).unwrap_or_default();
    format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}{POST_HEADERS}{session}")
}

/// The JSON-RPC message of an MCP answer's body: plain JSON, or the one in an SSE event.
pub fn json_rpc(body: &str) -> Option<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(body))
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok().filter(|v| v.get("jsonrpc").is_some()))
}

/// An MCP POST (with `token`, in `session`); the status, head and JSON-RPC message of the answer.
#[track_caller]
pub fn mcp_post(
    addr: SocketAddr,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> (u16, String, Option<Value>) {
    let a = http::send(addr, &mcp_headers(addr, token, session), body);
    (a.status, a.head, json_rpc(&a.body))
}

/// A whole MCP exchange with `token`: initialize, initialized, `echo` (of the `text` plugin) —
/// all of it answered within `within`.
#[track_caller]
pub fn echo_over_mcp(addr: SocketAddr, token: Option<&str>, within: Duration) {
    let started = std::time::Instant::now();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let session = open_session_as(&format!("http://{addr}/mcp"), &auth, "2025-06-18", json!({}), "raw");
    echo_in(addr, token, &session);
    assert!(started.elapsed() < within, "the MCP exchange took {:?}", started.elapsed());
}

/// `echo` in an open session, answered.
#[track_caller]
pub fn echo_in(addr: SocketAddr, token: Option<&str>, session: &str) {
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still served"}}}"#;
    let (status, head, answer) = mcp_post(addr, token, Some(session), call);
    assert_eq!(status, 200, "{head}");
    let answer = answer.unwrap_or_else(|| panic!("no answer to tools/call: {head}"));
    assert_eq!(answer["result"]["content"][0]["text"], "still served", "{answer}");
}

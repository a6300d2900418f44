//! `serve --mcp --http` driven raw: the server started and its URL read, its stderr read on,
//! a 2025 session opened with the capabilities a test declares, and a POST whose event stream
//! may carry requests of the server's (an `elicitation/create`) that the test answers.

use super::Env;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `serve --mcp --http 127.0.0.1:0` in `env`, with `global` arguments before the subcommand;
/// the server, its URL, and its stderr (the caller decides whether it keeps reading it).
pub fn serve_mcp_http(env: &Env, global: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    let mut child = env
        .command()
        .args(global)
        .args(["serve", "--mcp", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut said = String::new();
    let url = loop {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve exited before printing its URL: {said}");
        }
        said.push_str(&line);
        if let Some(rest) = line.split("MCP over streamable HTTP at ").nth(1) {
            break rest.split(',').next().unwrap().trim().to_string();
        }
    };
    (child, url, err)
}

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

/// A session of `revision` opened by a client named `client` that declares `capabilities`
/// (its `initialize` must succeed, and `notifications/initialized` is sent): its id.
pub fn open_session(url: &str, revision: &str, capabilities: Value, client: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": capabilities,
        "clientInfo": {"name": client, "version": "0"}}});
    let (status, head, messages) = exchange(url, "", &init, |_| panic!("asked during initialize"));
    assert_eq!(status, 200, "{head}");
    assert!(messages.iter().any(|m| m["id"] == json!(0) && m.get("result").is_some()), "{messages:?}");
    let session = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| panic!("no session id: {head}"));
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(send(url, &session_headers(&session, revision), &done), 202);
    session
}

/// The header lines of a request in `session`, of `revision`.
pub fn session_headers(session: &str, revision: &str) -> String {
    format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {revision}\r\n")
}

/// The `Content-Type` of a response head.
pub fn content_type(head: &str) -> String {
    head.lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-type")))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
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

/// `body` POSTed (raw HTTP/1.0) with `headers` (whole lines) until the answer to its request
/// arrives: the status, the head and the messages in the order they came (plain JSON, or the
/// events of a stream). A request the server sends on the stream (an `elicitation/create`) is
/// answered with `reply(request)` as its result, POSTed with the same headers.
pub fn exchange(
    url: &str,
    headers: &str,
    body: &Value,
    reply: impl Fn(&Value) -> Value,
) -> (u16, String, Vec<Value>) {
    let mut s = BufReader::new(open(url, headers, body));
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if s.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status =
        head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status: {head:?}"));
    if !content_type(&head).starts_with("text/event-stream") {
        let mut rest = String::new();
        s.read_to_string(&mut rest).unwrap();
        let messages = if rest.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(rest.trim()).unwrap_or_else(|e| panic!("{e}: {rest:?}"))]
        };
        return (status, head, messages);
    }
    let id = &body["id"];
    let mut messages: Vec<Value> = Vec::new();
    let mut line = String::new();
    while !messages.iter().any(|m| m["id"] == *id && m.get("method").is_none()) {
        line.clear();
        if s.read_line(&mut line).unwrap() == 0 {
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
    (status, head, messages)
}

/// `body` POSTed with `headers`, the response unread.
fn open(url: &str, headers: &str, body: &Value) -> TcpStream {
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let body = body.to_string();
    let req = format!(
        "POST /mcp HTTP/1.0\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    s
}

/// `body` (a notification or a response) POSTed with `headers`: the status.
pub fn send(url: &str, headers: &str, body: &Value) -> u16 {
    let mut status = String::new();
    BufReader::new(open(url, headers, body)).read_line(&mut status).unwrap();
    status.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status: {status:?}"))
}

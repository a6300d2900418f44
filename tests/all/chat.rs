//! The agent loop (`toolhost_frontends::agent`, `toolhost chat`) against an OpenAI-compatible server
//! started here on 127.0.0.1 that replays scripted responses over real HTTP/1.1: SSE streams
//! in chunked encoding (events split across chunks, tool-call arguments in index-keyed
//! fragments), plain JSON replies, error statuses, and streams cut midway.

use crate::support::{Env, Operator, free_port, runtime, toolhost};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolhost_core::executor::{Confirm, DangerRequest, Decision};
use toolhost_frontends::agent::{
    Agent, AgentError, AgentOptions, Cancel, ClientOptions, Conversation, Event, ModelClient, ModelError,
    Protocol, RetryPolicy, Stop, TurnResult,
};
use toolhost_spec::manifest::FsMode;

// ---- the scripted server ----

/// One scripted response.
enum Resp {
    /// A complete SSE stream: these event payloads, then `data: [DONE]`.
    Sse(Vec<String>),
    /// These events, then the connection closes without finishing the chunked body.
    Cut(Vec<String>),
    /// These events, then nothing more until the client goes away.
    Stall(Vec<String>),
    /// A status with headers and a body.
    Status(u16, Vec<(&'static str, String)>, String),
    /// `200 application/json` (a server that ignores `stream: true`).
    Json(String),
}

/// A request the server received.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Value,
}

impl Seen {
    fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages")
    }
    fn last(&self) -> &Value {
        self.messages().last().unwrap()
    }
    fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|a| a.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    }
}

struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start(script: Vec<Resp>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let s = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else { return };
                let (s, script) = (s.clone(), script.clone());
                tokio::spawn(async move {
                    let _ = serve(conn, s, script).await;
                });
            }
        });
        Server { addr, seen }
    }

    fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(
    mut conn: TcpStream,
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<VecDeque<Resp>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = conn.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = conn.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    assert!(head.starts_with("post /v1/chat/completions "), "unexpected request: {head}");
    seen.lock().unwrap().push(Seen { head, body });
    let resp = script.lock().unwrap().pop_front();
    let Some(resp) = resp else {
        let body = r#"{"error":{"message":"the test script has no more responses"}}"#;
        let msg = format!(
            "HTTP/1.1 418 I'm a teapot\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return conn.write_all(msg.as_bytes()).await;
    };
    let sse_head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    match resp {
        Resp::Sse(events) => {
            conn.write_all(sse_head.as_bytes()).await?;
            write_events(&mut conn, &events).await?;
            write_chunk(&mut conn, "data: [DONE]\n\n").await?;
            conn.write_all(b"0\r\n\r\n").await?;
        }
        Resp::Cut(events) => {
            conn.write_all(sse_head.as_bytes()).await?;
            write_events(&mut conn, &events).await?;
            conn.shutdown().await?;
        }
        Resp::Stall(events) => {
            conn.write_all(sse_head.as_bytes()).await?;
            write_events(&mut conn, &events).await?;
            // Wait until the client hangs up.
            let _ = conn.read(&mut tmp).await;
        }
        Resp::Status(code, headers, body) => {
            let mut msg = format!(
                "HTTP/1.1 {code} Status\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                msg.push_str(&format!("{k}: {v}\r\n"));
            }
            msg.push_str("\r\n");
            msg.push_str(&body);
            conn.write_all(msg.as_bytes()).await?;
        }
        Resp::Json(body) => {
            let msg = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            conn.write_all(msg.as_bytes()).await?;
        }
    }
    conn.flush().await
}

/// Each event as `data: …\n\n`, split in two HTTP chunks (so lines span reads).
async fn write_events(conn: &mut TcpStream, events: &[String]) -> std::io::Result<()> {
    for e in events {
        let frame = format!("data: {e}\n\n");
        let mut mid = frame.len() / 2;
        while !frame.is_char_boundary(mid) {
            mid += 1;
        }
        write_chunk(conn, &frame[..mid]).await?;
        write_chunk(conn, &frame[mid..]).await?;
    }
    Ok(())
}

async fn write_chunk(conn: &mut TcpStream, s: &str) -> std::io::Result<()> {
    conn.write_all(format!("{:x}\r\n{s}\r\n", s.len()).as_bytes()).await?;
    conn.flush().await
}

/// A streamed text reply in small pieces, then `finish_reason: stop`.
fn text(s: &str) -> Resp {
    Resp::Sse(text_events(s, true))
}

fn text_events(s: &str, finish: bool) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out =
        vec![json!({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}).to_string()];
    for piece in chars.chunks(5) {
        let piece: String = piece.iter().collect();
        out.push(json!({"choices":[{"index":0,"delta":{"content":piece}}]}).to_string());
    }
    if finish {
        out.push(json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}).to_string());
    }
    out
}

/// Streamed tool calls: each call's id and name first, then the arguments in 4-byte
/// fragments, the calls' fragments interleaved by index.
fn calls(list: &[(&str, &str, Value)]) -> Resp {
    let mut out =
        vec![json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}).to_string()];
    let args: Vec<Vec<String>> = list
        .iter()
        .map(|(_, _, a)| {
            let t = a.to_string();
            let cs: Vec<char> = t.chars().collect();
            cs.chunks(4).map(|c| c.iter().collect()).collect()
        })
        .collect();
    for (i, (id, name, _)) in list.iter().enumerate() {
        out.push(json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]}).to_string());
    }
    let longest = args.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..longest {
        for (i, frags) in args.iter().enumerate() {
            if let Some(f) = frags.get(k) {
                out.push(json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":i,"function":{"arguments":f}}]}}]}).to_string());
            }
        }
    }
    out.push(json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string());
    Resp::Sse(out)
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string()
}

// ---- the host and the loop ----

fn env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    env.config.grant_workspace("files", FsMode::ReadWrite);
    env
}

fn agent(host: &toolhost_core::Toolhost, server: &Server, protocol: Protocol) -> Agent {
    let mut o = ClientOptions::new(server.url(), "test-model");
    o.retry = RetryPolicy {
        max_tries: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(2),
    };
    o.idle_timeout = Duration::from_secs(20);
    let client = ModelClient::new(o).unwrap();
    Agent::new(host.executor.clone(), client, AgentOptions { protocol, ..AgentOptions::default() })
}

async fn turn(
    agent: &Agent,
    conv: &mut Conversation,
    input: &str,
) -> (Result<TurnResult, AgentError>, Vec<Event>) {
    let mut events = Vec::new();
    let mut sink = |e: Event| events.push(e);
    let r = agent.turn(conv, input, &Cancel::new(), &mut sink).await;
    (r, events)
}

fn tokens(events: &[Event]) -> String {
    events.iter().filter_map(|e| if let Event::Token(t) = e { Some(t.as_str()) } else { None }).collect()
}

fn outcome(msg: &Value) -> Value {
    assert_eq!(msg["role"], "tool", "{msg}");
    serde_json::from_str(msg["content"].as_str().unwrap()).unwrap()
}

// ---- tests ----

#[tokio::test]
async fn native_function_calling_multi_step_across_two_tools() {
    let env = env();
    let host = env.host();
    let text_arg = "apples, pears and plums";
    let server = Server::start(vec![
        calls(&[
            ("call_w", "write", json!({"path": "note.txt", "content": text_arg})),
            ("call_c", "count_words", json!({"text": text_arg})),
        ]),
        calls(&[("call_r", "read", json!({"path": "note.txt"}))]),
        text("The note holds 4 words."),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let (r, events) = turn(&agent, &mut conv, "Save the fruit list and count its words.").await;
    let r = r.unwrap();
    assert_eq!(r.stop, Stop::Answer);
    assert_eq!(r.answer, "The note holds 4 words.");
    assert_eq!(r.steps, 3);
    assert_eq!(tokens(&events), "The note holds 4 words.");
    assert_eq!(std::fs::read_to_string(env.ws("note.txt")).unwrap(), text_arg);

    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].body["model"], "test-model");
    assert_eq!(seen[0].body["stream"], true);
    let names = seen[0].tool_names();
    for t in ["write", "read", "count_words", "delete"] {
        assert!(names.contains(&t.to_string()), "{t} not offered: {names:?}");
    }
    assert_eq!(seen[0].messages()[0]["role"], "system");
    // The second request carries the assistant's calls (fragments joined) and both results.
    let m = seen[1].messages();
    let n = m.len();
    assert_eq!(m[n - 3]["role"], "assistant");
    assert_eq!(
        m[n - 3]["tool_calls"][0]["function"]["arguments"],
        json!({"path": "note.txt", "content": text_arg}).to_string()
    );
    assert_eq!(m[n - 2]["tool_call_id"], "call_w");
    assert_eq!(outcome(&m[n - 2])["success"], true);
    assert_eq!(m[n - 1]["tool_call_id"], "call_c");
    let counted = outcome(&m[n - 1]);
    let data: Value = serde_json::from_str(counted["data"].as_str().unwrap()).unwrap();
    assert_eq!(data["words"], 4, "{counted}");
    let read = outcome(seen[2].last());
    assert_eq!(read["data"], text_arg);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::ToolEnd { .. })).count(), 3);
    // The conversation is what was sent, plus the answer.
    assert_eq!(conv.messages.len(), 1 + 3 + 2 + 1);
    assert_eq!(conv.messages.last().unwrap().content, "The note holds 4 words.");
}

#[tokio::test]
async fn text_protocol_multi_step() {
    let env = env();
    let host = env.host();
    let server = Server::start(vec![
        text("I'll save it. [TOOL] write(\"t.txt\", \"hello, world\") [/TOOL]"),
        text("[TOOL] count_words(\"hello, big world\") [/TOOL] and [TOOL] read(\"t.txt\" [/TOOL]"),
        text("Saved; the phrase has 3 words."),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Text);
    let mut conv = Conversation::new();
    let (r, events) = turn(&agent, &mut conv, "Save hello, world to t.txt").await;
    let r = r.unwrap();
    assert_eq!((r.stop.clone(), r.answer.as_str()), (Stop::Answer, "Saved; the phrase has 3 words."));
    assert_eq!(std::fs::read_to_string(env.ws("t.txt")).unwrap(), "hello, world");
    let seen = server.seen();
    assert!(seen[0].body.get("tools").is_none(), "the text protocol sends no tools");
    let system = seen[0].messages()[0]["content"].as_str().unwrap();
    assert!(system.contains("[TOOL] tool_name(") && system.contains("- write(path, content…)"), "{system}");
    let fb = &seen[1].last();
    assert_eq!(fb["role"], "user");
    let fb = fb["content"].as_str().unwrap();
    assert!(fb.starts_with("[RESULT 1] write(\"t.txt\", \"hello, world\") success\n"), "{fb}");
    let fb2 = seen[2].last()["content"].as_str().unwrap();
    assert!(fb2.contains("[RESULT 1] count_words(\"hello, big world\") success"), "{fb2}");
    assert!(fb2.contains("[RESULT 2] ") && fb2.contains("error parse_error"), "{fb2}");
    let parse_card = events
        .iter()
        .any(|e| matches!(e, Event::ToolEnd { name, outcome, .. } if name == "[TOOL]" && !outcome.success));
    assert!(parse_card, "a malformed call is shown as a failed card");
}

#[tokio::test]
async fn a_tool_error_the_model_recovers_from() {
    let env = env();
    std::fs::write(env.ws("there.txt"), "found it").unwrap();
    let host = env.host();
    let server = Server::start(vec![
        calls(&[("c1", "read", json!({"path": "missing.txt"}))]),
        calls(&[("c2", "read", json!({"path": "there.txt"}))]),
        text("It says: found it"),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let (r, events) = turn(&agent, &mut conv, "Read missing.txt").await;
    assert_eq!(r.unwrap().answer, "It says: found it");
    let seen = server.seen();
    let failed = outcome(seen[1].last());
    assert_eq!(
        (failed["success"].clone(), failed["kind"].clone()),
        (json!(false), json!("tool_error")),
        "{failed}"
    );
    assert!(failed["error"].as_str().unwrap().contains("missing.txt"), "{failed}");
    assert_eq!(outcome(seen[2].last())["data"], "found it");
    let kinds: Vec<bool> = events
        .iter()
        .filter_map(|e| if let Event::ToolEnd { outcome, .. } = e { Some(outcome.success) } else { None })
        .collect();
    assert_eq!(kinds, [false, true]);
}

#[tokio::test]
async fn a_dangerous_call_declined() {
    let env = env();
    std::fs::write(env.ws("keep.txt"), "precious").unwrap();
    let host = env.host();
    let server = Server::start(vec![
        calls(&[("d1", "delete", json!({"path": "keep.txt"}))]),
        text("I was not allowed to delete it."),
    ])
    .await;
    let decline = Operator::answering(Decision::Deny("the user said no".into()));
    let agent = agent(&host, &server, Protocol::Native).with_confirm(decline.clone());
    let mut conv = Conversation::new();
    let (r, _) = turn(&agent, &mut conv, "Delete keep.txt").await;
    assert_eq!(r.unwrap().answer, "I was not allowed to delete it.");
    let asked: Vec<String> =
        decline.asked().iter().map(|r| format!("{}({})", r.tool, r.args.join(", "))).collect();
    assert_eq!(asked, ["delete(keep.txt)"]);
    assert_eq!(std::fs::read_to_string(env.ws("keep.txt")).unwrap(), "precious");
    let o = outcome(server.seen()[1].last());
    assert_eq!(o["kind"], "denied");
    assert_eq!(o["error"], "the user said no");
    let offered = &server.seen()[0].body["tools"];
    let delete = offered.as_array().unwrap().iter().find(|t| t["function"]["name"] == "delete").unwrap();
    assert!(delete["function"]["description"].as_str().unwrap().contains("Dangerous"), "{delete}");
}

#[tokio::test]
async fn rate_limited_then_success_honours_retry_after() {
    let env = env();
    let host = env.host();
    let server = Server::start(vec![
        Resp::Status(429, vec![("retry-after", "1".into())], error_body("Rate limit reached, slow down")),
        text("Hello after waiting."),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let started = Instant::now();
    let (r, events) = turn(&agent, &mut conv, "hi").await;
    assert_eq!(r.unwrap().answer, "Hello after waiting.");
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 was not honoured");
    let retry = events.iter().find_map(|e| {
        if let Event::Retrying { wait, reason, .. } = e { Some((*wait, reason.clone())) } else { None }
    });
    assert_eq!(retry, Some((Duration::from_secs(1), "rate limited (429)".to_string())));
    assert_eq!(server.seen().len(), 2);

    // Always limited: bounded tries, then an explained error.
    let limited =
        || Resp::Status(429, vec![("retry-after-ms", "20".into())], error_body("Rate limit reached"));
    let server = Server::start((0..5).map(|_| limited()).collect()).await;
    let agent2 = self::agent(&host, &server, Protocol::Native);
    let (r, events) = turn(&agent2, &mut Conversation::new(), "hi").await;
    let e = r.unwrap_err();
    assert!(matches!(e, AgentError::Model(ModelError::RateLimited { tries: 4, .. })), "{e:?}");
    assert!(e.to_string().contains("rate limited by the model server (429), 4 tries"), "{e}");
    assert_eq!(server.seen().len(), 4);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Retrying { .. })).count(), 3);
}

#[tokio::test]
async fn a_malformed_response_is_explained_and_the_conversation_goes_on() {
    let env = env();
    let host = env.host();
    let server = Server::start(vec![
        Resp::Sse(vec!["{\"choices\": [{\"delta\": {\"content\": \"ok\"".into()]),
        Resp::Json(json!({"id": "x", "object": "chat.completion"}).to_string()),
        Resp::Json(
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "A whole JSON reply."}, "finish_reason": "stop"}]})
                .to_string(),
        ),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let (r, _) = turn(&agent, &mut conv, "first").await;
    let e = r.unwrap_err();
    assert!(e.to_string().contains("malformed response: a stream event is not JSON"), "{e}");
    let (r, _) = turn(&agent, &mut conv, "second").await;
    assert!(r.unwrap_err().to_string().contains("no `choices[0].message`"));
    let (r, events) = turn(&agent, &mut conv, "third").await;
    assert_eq!(r.unwrap().answer, "A whole JSON reply.");
    assert_eq!(tokens(&events), "A whole JSON reply.");
    let seen = server.seen();
    let users: Vec<&str> = seen[2]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first", "second", "third"], "the failed turns stay in the conversation");
}

#[tokio::test]
async fn a_stream_cut_midway_is_retried_then_explained() {
    let env = env();
    let host = env.host();
    let server =
        Server::start(vec![Resp::Cut(text_events("Half an answ", false)), text("A full answer.")]).await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let (r, events) = turn(&agent, &mut conv, "hi").await;
    let r = r.unwrap();
    assert_eq!(r.answer, "A full answer.");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Retrying { reason, .. } if reason.contains("stream was cut"))),
        "{events:?}"
    );
    assert_eq!(conv.messages.last().unwrap().content, "A full answer.", "the cut text is not kept");

    // Cut tool-call arguments are never run; after the last try the error says what happened.
    let cut_call = || {
        let Resp::Sse(mut ev) = calls(&[("c", "write", json!({"path": "cut.txt", "content": "x"}))]) else {
            unreachable!()
        };
        ev.truncate(ev.len() - 3);
        Resp::Cut(ev)
    };
    let server = Server::start((0..4).map(|_| cut_call()).collect()).await;
    let agent = self::agent(&host, &server, Protocol::Native);
    let (r, _) = turn(&agent, &mut Conversation::new(), "write it").await;
    let e = r.unwrap_err();
    assert!(matches!(e, AgentError::Model(ModelError::StreamCut { tries: 4, .. })), "{e:?}");
    assert!(e.to_string().contains("closed the stream in the middle of a reply"), "{e}");
    assert!(!env.ws("cut.txt").exists());
}

#[tokio::test]
async fn auto_falls_back_to_the_text_protocol_when_tools_are_refused() {
    let env = env();
    let host = env.host();
    let server = Server::start(vec![
        Resp::Status(
            400,
            vec![],
            json!({"error": "registry.ollama.ai/library/gemma:2b does not support tools"}).to_string(),
        ),
        text("[TOOL] echo(\"ping\") [/TOOL]"),
        text("pong"),
        text("again"),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Auto);
    let mut conv = Conversation::new();
    let (r, events) = turn(&agent, &mut conv, "echo ping").await;
    assert_eq!(r.unwrap().answer, "pong");
    assert!(events.iter().any(|e| matches!(e, Event::Notice(n) if n.contains("[TOOL] text protocol"))));
    assert_eq!(agent.protocol(), Protocol::Text);
    let seen = server.seen();
    assert!(!seen[0].tool_names().is_empty());
    assert!(seen[1].body.get("tools").is_none());
    assert!(seen[1].messages()[0]["content"].as_str().unwrap().contains("## Tools"));
    assert!(
        seen[2].last()["content"].as_str().unwrap().starts_with("[RESULT 1] echo(\"ping\") success\nping")
    );
    // Decided once for the session.
    let (r, _) = turn(&agent, &mut conv, "again").await;
    r.unwrap();
    assert!(server.seen()[3].body.get("tools").is_none());
}

#[tokio::test]
async fn errors_a_user_meets_are_explained() {
    let env = env();
    let host = env.host();
    let server = Server::start(vec![
        Resp::Status(401, vec![], error_body("Incorrect API key provided")),
        Resp::Status(404, vec![], json!({"error": {"message": "model \"test-model\" not found, try pulling it first"}}).to_string()),
        Resp::Status(400, vec![], json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}).to_string()),
        Resp::Status(404, vec![], "404 page not found".into()),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let cases = [
        "refused the request (401): Incorrect API key provided; check the API key",
        "model `test-model` not found",
        "no longer fits the model's context window",
        "/v1/chat/completions does not exist (404): the base URL must be the API root",
    ];
    for want in cases {
        let (r, _) = turn(&agent, &mut conv, "hi").await;
        let e = r.unwrap_err().to_string();
        assert!(e.contains(want), "{e}\nwanted: {want}");
    }
    // Nothing listening.
    let port = free_port();
    let mut o = ClientOptions::new(format!("http://127.0.0.1:{port}/v1"), "m");
    o.retry.base_delay = Duration::from_millis(1);
    let agent = Agent::new(host.executor.clone(), ModelClient::new(o).unwrap(), AgentOptions::default());
    let (r, _) = turn(&agent, &mut Conversation::new(), "hi").await;
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains(&format!("cannot reach the model server at http://127.0.0.1:{port}/v1/chat/completions")),
        "{e}"
    );
    assert!(e.contains("is it running?"), "{e}");
}

#[tokio::test]
async fn a_model_repeating_a_failing_call_is_stopped_and_steps_are_bounded() {
    let env = env();
    let host = env.host();
    let same = || calls(&[("c", "read", json!({"path": "nope.txt"}))]);
    let server = Server::start(vec![same(), same(), same(), same()]).await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let (r, _) = turn(&agent, &mut conv, "read nope.txt").await;
    let r = r.unwrap();
    assert!(
        matches!(&r.stop, Stop::Repeating { times: 3, call, .. } if call == "read(\"nope.txt\")"),
        "{r:?}"
    );
    assert!(r.explain("--max-steps").unwrap().contains("same failing call 3 times"));
    assert_eq!(server.seen().len(), 3);
    assert_eq!(conv.messages.last().unwrap().role, "tool", "every call has its result");

    let echo = |i: usize| calls(&[("e", "echo", json!({"text": format!("round {i}")}))]);
    let server = Server::start((0..5).map(echo).collect()).await;
    let mut agent = self::agent(&host, &server, Protocol::Native);
    agent = Agent::new(
        host.executor.clone(),
        agent.client().clone(),
        AgentOptions { max_steps: 2, protocol: Protocol::Native, ..AgentOptions::default() },
    );
    let (r, _) = turn(&agent, &mut Conversation::new(), "loop").await;
    assert_eq!(r.unwrap().stop, Stop::StepLimit(2));
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn registry_reloads_show_in_the_next_request() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let host = env.host();
    let reloader =
        toolhost_core::registry::reload::Reloader::new(runtime(), host.config.clone(), host.registry.clone());
    reloader.rescan().unwrap();
    let server = Server::start(vec![text("one"), text("[TOOL] echo(\"x\") [/TOOL]"), text("two")]).await;
    let agent = agent(&host, &server, Protocol::Text);
    let mut conv = Conversation::new();
    let mut systems = Vec::new();
    let mut sink = |e: Event| {
        if let Event::Message(m) = e
            && m.role == "system"
        {
            systems.push(m.content);
        }
    };
    agent.turn(&mut conv, "first", &Cancel::new(), &mut sink).await.unwrap();
    std::fs::copy(plugin_artifacts::FILES, env.plugins.path().join("files.wasm")).unwrap();
    let change = reloader.rescan().unwrap();
    assert!(!change.is_empty());
    agent.turn(&mut conv, "second", &Cancel::new(), &mut sink).await.unwrap();
    let seen = server.seen();
    let sys = |i: usize| seen[i].messages()[0]["content"].as_str().unwrap().to_string();
    assert!(!sys(0).contains("- write("), "files is not loaded yet");
    assert!(
        sys(1).contains("- write(") && sys(2).contains("- write("),
        "the reload shows in the next request"
    );
    assert_eq!(systems.len(), 2, "the system message is reported when it changes");
}

/// Never answers (a person who walked away from the confirmation).
struct Forever;

impl Confirm for Forever {
    fn confirm<'a>(
        &'a self,
        _: &'a DangerRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Decision> + Send + 'a>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn cancel_stops_generation_or_a_call_and_keeps_the_conversation() {
    let env = env();
    std::fs::write(env.ws("keep.txt"), "x").unwrap();
    let host = env.host();
    let server = Server::start(vec![
        Resp::Stall(text_events("Thinking hard about", false)),
        calls(&[("d", "delete", json!({"path": "keep.txt"})), ("e", "echo", json!({"text": "later"}))]),
        text("Fine."),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Native).with_confirm(Arc::new(Forever));
    let mut conv = Conversation::new();

    // Cancelled mid-stream, once some text arrived.
    let cancel = Cancel::new();
    let c = cancel.clone();
    let mut streamed = String::new();
    let mut sink = |e: Event| {
        if let Event::Token(t) = &e {
            streamed.push_str(t);
            if streamed.ends_with("about") {
                c.cancel();
            }
        }
    };
    let r = tokio::time::timeout(Duration::from_secs(20), agent.turn(&mut conv, "think", &cancel, &mut sink))
        .await
        .expect("cancel ends the turn")
        .unwrap();
    assert_eq!(r.stop, Stop::Cancelled);
    assert_eq!(conv.messages.last().unwrap().content, "Thinking hard about", "partial text is kept");

    // Cancelled while a dangerous call waits for its confirmation.
    let cancel = Cancel::new();
    let c = cancel.clone();
    let mut sink = |e: Event| {
        if matches!(&e, Event::ToolStart { name, .. } if name == "delete") {
            c.cancel();
        }
    };
    let r =
        tokio::time::timeout(Duration::from_secs(20), agent.turn(&mut conv, "delete", &cancel, &mut sink))
            .await
            .expect("cancel ends the turn")
            .unwrap();
    assert_eq!(r.stop, Stop::Cancelled);
    assert!(env.ws("keep.txt").exists());
    let n = conv.messages.len();
    let cancelled = outcome(&serde_json::to_value(&conv.messages[n - 2]).unwrap());
    assert_eq!(cancelled["error"], toolhost_frontends::agent::CANCELLED);
    assert_eq!(cancelled["kind"], "cancelled", "its own kind, not `denied`");
    assert_eq!(conv.messages[n - 1].tool_call_id.as_deref(), Some("e"), "every call has a result");

    let (r, _) = turn(&agent, &mut conv, "ok").await;
    assert_eq!(r.unwrap().answer, "Fine.");
    let sent = &server.seen()[2];
    let roles: Vec<&str> = sent.messages().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant", "tool", "tool", "user"]);
}

#[tokio::test]
async fn a_long_tool_s_progress_reaches_the_turn_s_events() {
    let env = env();
    std::fs::write(env.ws("big.bin"), vec![7u8; 3 * 1024 * 1024]).unwrap();
    let host = env.host();
    let server =
        Server::start(vec![calls(&[("c", "checksum", json!({"path": "big.bin"}))]), text("Hashed.")]).await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let (r, events) = turn(&agent, &mut conv, "hash big.bin").await;
    assert_eq!(r.unwrap().answer, "Hashed.");
    let progress: Vec<&toolhost_core::executor::Progress> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolProgress { id, name, progress } if id == "c" && name == "checksum" => Some(progress),
            _ => None,
        })
        .collect();
    let last = progress.last().expect("the tool card gets progress events");
    assert_eq!((last.done, last.total, last.message.as_str()), (3 << 20, Some(3 << 20), "3 of 3 MiB"));
    let end = events.iter().position(|e| matches!(e, Event::ToolEnd { .. })).unwrap();
    let last_progress = events.iter().rposition(|e| matches!(e, Event::ToolProgress { .. })).unwrap();
    assert!(last_progress < end, "progress comes before the card's end");
}

// ---- the command line ----

fn chat_command(env: &Env, url: &str, extra: &[&str]) -> std::process::Command {
    let mut cmd = env.command();
    cmd.env("TOOLHOST_TEST_KEY", "sk-test-secret-0123456789")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .args(["--allow-write", "files", "chat", "--model", "test-model", "--base-url"])
        .arg(url)
        .args(extra)
        .stdin(std::process::Stdio::null());
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_once_prints_the_answer_json_and_transcript() {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    let server = Server::start(vec![
        calls(&[("w", "write", json!({"path": "cli.txt", "content": "from the cli"}))]),
        text("Written to cli.txt."),
        text("Just the answer."),
    ])
    .await;
    let transcript = env.workspace.path().join("t.jsonl");
    let mut cmd = chat_command(
        &env,
        &server.url(),
        &[
            "--api-key-env",
            "TOOLHOST_TEST_KEY",
            "--once",
            "write it",
            "--json",
            "--transcript",
            transcript.to_str().unwrap(),
        ],
    );
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["answer"], "Written to cli.txt.");
    assert_eq!(v["stop"], "answer");
    let roles: Vec<&str> =
        v["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
    assert_eq!(std::fs::read_to_string(env.ws("cli.txt")).unwrap(), "from the cli");
    assert!(
        stderr.contains("▸ write(\"cli.txt\", \"from the cli\")") && stderr.contains("✓ success"),
        "{stderr}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, *v["messages"].as_array().unwrap());
    let seen = server.seen();
    assert!(seen[0].head.contains("authorization: bearer sk-test-secret-0123456789"), "{}", seen[0].head);
    for text in [&*stdout, &*stderr, &std::fs::read_to_string(&transcript).unwrap()] {
        assert!(!text.contains("sk-test-secret"), "the key leaked: {text}");
    }

    // Without --json: only the answer on stdout; the transcript is appended to.
    let mut cmd =
        chat_command(&env, &server.url(), &["--once", "again", "--transcript", transcript.to_str().unwrap()]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Just the answer.\n");
    assert_eq!(std::fs::read_to_string(&transcript).unwrap().lines().count(), 5 + 3);
    assert!(!server.seen()[2].head.contains("authorization"), "no key configured, none sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_explains_an_unreachable_server_and_a_missing_model() {
    // `files` too: `chat_command` grants it, and a grant for a plugin not there is an error.
    let env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::FILES]);
    let port = free_port();
    let mut cmd = chat_command(&env, &format!("http://127.0.0.1:{port}/v1"), &["--once", "hi"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot reach the model server") && stderr.contains("ollama serve"), "{stderr}");

    let mut cmd = toolhost();
    cmd.args(["--plugins"])
        .arg(env.plugins.path())
        .args(["chat", "--once", "hi"])
        .current_dir(env.dir.path());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("no model given: pass --model NAME"), "{stderr}");
}

#[tokio::test]
async fn in_search_mode_the_loop_offers_find_tools_then_what_it_found() {
    let mut env = env();
    env.config.catalog.mode = toolhost_core::catalog::settings::Mode::Search;
    let host = env.host();
    let server = Server::start(vec![
        calls(&[("c1", "find_tools", json!({"query": "count the words of a text"}))]),
        calls(&[("c2", "count_words", json!({"text": "one two three"}))]),
        text("Three words."),
    ])
    .await;
    let agent = agent(&host, &server, Protocol::Native);
    let mut conv = Conversation::new();
    let (r, _) = turn(&agent, &mut conv, "How many words in 'one two three'?").await;
    assert_eq!(r.unwrap().answer, "Three words.");
    let seen = server.seen();
    assert_eq!(seen[0].tool_names(), ["find_tools"], "only find_tools is offered at first");
    let found = outcome(&seen[1].messages()[seen[1].messages().len() - 1]);
    assert!(found["data"].as_str().unwrap().contains("\"name\":\"count_words\""), "{found}");
    let offered = seen[1].tool_names();
    assert!(offered.contains(&"count_words".into()) && offered.contains(&"find_tools".into()), "{offered:?}");
    let counted = outcome(seen[2].last());
    assert!(counted["data"].as_str().unwrap().contains("\"words\":3"), "{counted}");
    assert!(conv.found.contains("count_words"));

    // The text protocol: the prompt teaches find_tools; found tools are called by name.
    let server = Server::start(vec![
        text("[TOOL] find_tools(count the words, in a text) [/TOOL]"),
        text("[TOOL] count_words(\"a b\") [/TOOL]"),
        text("Two."),
    ])
    .await;
    let agent = self::agent(&host, &server, Protocol::Text);
    let mut conv = Conversation::new();
    let (r, _) = turn(&agent, &mut conv, "Count 'a b'.").await;
    assert_eq!(r.unwrap().answer, "Two.");
    let seen = server.seen();
    let system = seen[0].messages()[0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("- find_tools(query…)") && !system.contains("- count_words("), "{system}");
    let results = seen[2].last()["content"].as_str().unwrap();
    assert!(results.contains("[RESULT 1] count_words(\"a b\") success"), "{results}");
}

/// `--skills` (AgentOptions::skills) puts the plugins' skills into the system message, for the
/// text protocol after its tools section and for native calling after the system prompt.
#[test]
fn skills_go_into_the_system_message_when_asked() {
    let env = env();
    let host = env.host();
    let registry = host.registry.load();
    let client = ModelClient::new(ClientOptions::new("http://127.0.0.1:9/v1", "m")).unwrap();
    let options = |skills| AgentOptions { skills, ..AgentOptions::default() };
    let with = Agent::new(host.executor.clone(), client.clone(), options(true));
    let without = Agent::new(host.executor.clone(), client, options(false));
    for protocol in [Protocol::Text, Protocol::Native] {
        let text = with.system_message(&registry, protocol);
        assert!(text.contains("### Skill workspace-files (plugin files):"), "{protocol:?}: {text}");
        assert!(text.contains("## When a call fails"), "{protocol:?}: {text}");
        assert!(!without.system_message(&registry, protocol).contains("## Skills"));
    }
    let text = with.system_message(&registry, Protocol::Text);
    assert!(text.find("Available tools").unwrap() < text.find("## Skills").unwrap(), "{text}");
    assert!(text.trim_end().ends_with("reply without any [TOOL] call."), "{text}");
}

/// In the chat, `/skills` lists the skills and `/read URI` attaches a skill's file to the
/// conversation: the next question's request carries it as a user message; a bad URI is said
/// and attaches nothing.
#[tokio::test(flavor = "multi_thread")]
async fn chat_read_attaches_a_skill_file_to_the_conversation() {
    use std::io::Write;
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    let server = Server::start(vec![text("Noted.")]).await;
    let mut cmd = chat_command(&env, &server.url(), &["--protocol", "native"]);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let lines = "/skills\n/read skill://files/nope/SKILL.md\n/read skill://files/workspace-files/SKILL.md\nwhat now?\n";
        child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("  workspace-files — Read, create"), "{stdout}");
    assert!(stdout.contains("no resource skill://files/nope/SKILL.md"), "{stdout}");
    assert!(stdout.contains("(attached skill://files/workspace-files/SKILL.md,"), "{stdout}");
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "one question, one request");
    let users: Vec<&str> = seen[0]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(
        users[0].starts_with(
            "(Attached: skill://files/workspace-files/SKILL.md, text/markdown)\n\n---\nname: workspace-files"
        ),
        "{}",
        users[0]
    );
    assert_eq!(users[1], "what now?");
}

//! What goes over the wire of `serve --mcp --http` (issue #33): plain `application/json`
//! answers when no stream is needed, an event stream when progress is asked for, and a server
//! whose stderr is gone still answering calls.

use crate::support::Env;
use crate::support::mcp_http::{
    Killed, answer, answered_directly, content_type, keep_reading, open_session, post, serve_mcp_http,
    session_headers, without_usage,
};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::Stdio;

/// `serve --mcp --http 127.0.0.1:0` over the text and ticker plugins (ticker granted the
/// workspace), with `global` arguments before the subcommand.
fn serve(env: &Env, global: &[&str]) -> (std::process::Child, String, BufReader<std::process::ChildStderr>) {
    serve_mcp_http(env, &[global, &["--allow-write", "ticker"]].concat())
}

fn env() -> Env {
    Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::TICKER])
}

/// A 2025-06-18 session with no capabilities: the headers of its requests.
fn session(url: &str) -> String {
    session_headers(&open_session(url, "2025-06-18", json!({}), "wire"), "2025-06-18")
}

#[test]
fn http_answers_are_plain_json_unless_progress_needs_a_stream() {
    let env = env();
    let (child, url, mut err) = serve(&env, &[]);
    let _server = Killed(child);
    std::thread::spawn(move || while err.read_line(&mut String::new()).is_ok_and(|n| n > 0) {});

    // A 2025 session: a call without a progress token is answered with plain JSON.
    let headers = session(&url);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"}}});
    let (status, head, messages) = post(&url, &headers, &call);
    assert_eq!(status, 200, "{head}");
    assert_eq!(content_type(&head), "application/json", "{head}");
    assert!(answer(&messages, 1).to_string().contains("hello"), "{messages:?}");

    // With a progress token, the reports stream before the answer.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "tick", "arguments": {"n": 3, "ms": 20, "trail": ""}, "_meta": {"progressToken": "p2"}}});
    let (status, head, messages) = post(&url, &headers, &call);
    assert_eq!(status, 200, "{head}");
    assert!(content_type(&head).starts_with("text/event-stream"), "{head}");
    assert!(
        messages
            .iter()
            .any(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "p2"),
        "{messages:?}"
    );
    assert!(answer(&messages, 2).get("result").is_some(), "{messages:?}");

    // A 2026-07-28 stateless request: plain JSON too.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
    "name": "echo", "arguments": {"text": "stateless"},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "0"},
    }}});
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n";
    let (status, head, messages) = post(&url, headers, &call);
    assert_eq!(status, 200, "{head}");
    assert_eq!(content_type(&head), "application/json", "{head}");
    assert!(answer(&messages, 3).to_string().contains("stateless"), "{messages:?}");
}

/// The server's stderr closed (its reader gone) after start-up: log lines are lost, calls are
/// still answered — with `-v`, so every call logs.
#[test]
fn serve_http_with_its_stderr_closed_answers_calls() {
    let env = env();
    let (child, url, err) = serve(&env, &["-vv"]);
    let _server = Killed(child);
    drop(err);
    let headers = session(&url);
    for id in 1..=3 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": format!("after {id}")}}});
        let (status, head, messages) = post(&url, &headers, &call);
        assert_eq!(status, 200, "{head}");
        assert!(answer(&messages, id).to_string().contains(&format!("after {id}")), "{messages:?}");
    }
}

/// A 2025-06-18 `initialize` written to a stdio server, and its answer read (it must succeed).
fn initialize_over_stdio(stdin: &mut impl std::io::Write, out: &mut impl BufRead) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "wire", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("\"result\""), "{line:?}");
}

/// Over stdio with stderr closed from the start: the call in flight when stdin ends is still
/// answered (the drain's notice to the operator is dropped, not a panic), and `serve` exits 0.
#[test]
fn serve_stdio_with_its_stderr_closed_drains_and_answers() {
    use std::io::Write;
    let env = env();
    let mut child = env
        .command()
        .args(["--allow-write", "ticker", "serve", "--mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    initialize_over_stdio(&mut stdin, &mut out);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "tick", "arguments": {"n": 4, "ms": 50, "trail": ""}}});
    writeln!(stdin, "{}\n{call}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    stdin.flush().unwrap();
    drop(stdin); // the end of stdin while `tick` runs: a drain
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.wait().unwrap();
    let messages: Vec<Value> = rest.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(answer(&messages, 1).get("result").is_some(), "{rest}");
    assert!(status.success(), "{status}: {rest}");
}

/// Over stdio the handshake does not wait for the first load (here a cold one: an empty compile
/// cache), and what needs the tools waits for it: requests written at once, stdin closed right
/// after, get the whole list and the call's answer — never an empty list.
#[test]
fn serve_stdio_answers_the_handshake_during_a_cold_load_and_lists_after_it() {
    use std::io::Write;
    let env = env();
    let cold = tempfile::tempdir().unwrap();
    let mut child = env
        .command()
        .args(["serve", "--mcp"])
        .env("XDG_CACHE_HOME", cold.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // When the operator's "watching" line (printed once the first load is done) arrives.
    let err = BufReader::new(child.stderr.take().unwrap());
    let (loaded_tx, loaded) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if err.lines().map_while(Result::ok).any(|l| l.contains("MCP over stdio, watching")) {
            let _ = loaded_tx.send(std::time::Instant::now());
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    initialize_over_stdio(&mut stdin, &mut out);
    let handshake = std::time::Instant::now();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "count_words", "arguments": {"text": "a b c"}}});
    writeln!(stdin, "{}\n{list}\n{call}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .unwrap();
    // Both answered before stdin is closed: a session that ends sooner may end before the
    // watch starts, and its line is then never printed.
    let mut rest = String::new();
    let mut messages: Vec<Value> = Vec::new();
    while !(messages.iter().any(|m| m["id"] == json!(1)) && messages.iter().any(|m| m["id"] == json!(2))) {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "serve ended before answering: {rest}");
        rest.push_str(&line);
        messages.extend(serde_json::from_str::<Value>(&line).ok());
    }
    let loaded = loaded
        .recv_timeout(std::time::Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("no `watching` line ({e}): {rest}"));
    drop(stdin);
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.wait().unwrap();
    let messages: Vec<Value> = rest.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let tools: Vec<&str> = answer(&messages, 1)["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{rest}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"count_words") && tools.contains(&"tick"), "{tools:?}");
    assert!(answer(&messages, 2).get("result").is_some(), "{rest}");
    assert!(
        !messages.iter().any(|m| m["method"] == "notifications/tools/list_changed"),
        "the first load is not a change: {rest}"
    );
    assert!(status.success(), "{status}: {rest}");
    assert!(handshake < loaded, "the handshake waited for the first load");
}

/// A server (`-vv`) whose stderr is read on, with a 2025-06-18 session open.
struct Logged {
    _server: Killed,
    url: String,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The session's headers, for [`post`].
    headers: String,
}

impl Logged {
    fn serve(env: &Env) -> Logged {
        let (child, url, err) = serve(env, &["-vv"]);
        let _server = Killed(child);
        let lines = keep_reading(err);
        let headers = session(&url);
        Logged { _server, url, lines, headers }
    }
}

/// A 2025 session's common call is answered by toolhost's own handler (`mcp::direct`), not
/// through rmcp's session: the same answer, byte for byte but the call's cost, as rmcp's path
/// gives the same call (taken here by adding a `progressToken`, which only rmcp serves; these
/// tools report no progress, so its answer is plain JSON too). A call that could need the
/// session (a tool that runs only as a task) still gets rmcp's answer.
#[test]
fn a_session_call_answered_directly_is_the_answer_rmcp_gives() {
    let env = env();
    let Logged { _server, url, lines, headers } = Logged::serve(&env);
    let calls = [
        json!({"name": "echo", "arguments": {"text": "hello \"wire\" ✓"}}),
        // An outputSchema tool: structuredContent.
        json!({"name": "count_words", "arguments": {"text": "one two\nthree"}}),
        // The tool fails.
        json!({"name": "search", "arguments": {"query": "  "}}),
        // The executor refuses the arguments.
        json!({"name": "split_task", "arguments": {"title": "t", "subtasks": []}}),
    ];
    let mut id = 0;
    for params in calls {
        id += 2;
        let before = answered_directly(&lines);
        let direct = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params.clone()});
        let (status, head, direct) = post(&url, &headers, &direct);
        assert_eq!((status, content_type(&head).as_str()), (200, "application/json"), "{head}");
        let mut through_rmcp = params.clone();
        through_rmcp["_meta"] = json!({"progressToken": format!("p{id}")});
        let rmcp = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": through_rmcp});
        let (status, head, rmcp) = post(&url, &headers, &rmcp);
        assert_eq!((status, content_type(&head).as_str()), (200, "application/json"), "{head}");
        let (direct, rmcp) =
            (without_usage(answer(&direct, id).clone()), without_usage(answer(&rmcp, id).clone()));
        assert_eq!(direct, rmcp, "{params}");
        // Only the first of the two was answered directly (the log line comes before the answer).
        assert_eq!(answered_directly(&lines), before + 1, "{params}");
    }
    // A tool that runs only as a task: rmcp's error, as before.
    let chore = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "chore", "arguments": {"n": 1, "ms": 0}}});
    let before = answered_directly(&lines);
    let (_, head, messages) = post(&url, &headers, &chore);
    let error = &answer(&messages, 99)["error"];
    assert_eq!(error["message"], "Missing required client capability", "{head} {messages:?}");
    assert!(error["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    assert_eq!(answered_directly(&lines), before);
    // An unknown session is rmcp's to refuse.
    let stale = "Mcp-Session-Id: no-such-session\r\nMCP-Protocol-Version: 2025-06-18\r\n";
    let call = json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}}});
    assert_eq!(post(&url, stale, &call).0, 404);
    assert_eq!(answered_directly(&lines), before);
}

/// A call answered directly is cancelled by the `notifications/cancelled` its client sends to
/// the session, as one rmcp serves is: its answer says so, and the plugin stops.
#[test]
fn a_call_answered_directly_stops_at_notifications_cancelled() {
    let env = env();
    let Logged { _server, url, lines, headers } = Logged::serve(&env);
    let trail = env.workspace.path().join("trail.txt");
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "tick", "arguments": {"n": 100_000, "ms": 10, "trail": "trail.txt"}}});
    let (url2, headers2) = (url.clone(), headers.clone());
    let running = std::thread::spawn(move || post(&url2, &headers2, &call));
    let size = || std::fs::metadata(&trail).map_or(0, |m| m.len());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while size() < 3 {
        assert!(std::time::Instant::now() < until, "the trail does not grow");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(answered_directly(&lines), 1);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the test cancels it"}});
    assert_eq!(post(&url, &headers, &cancel).0, 202);
    let (status, head, messages) = running.join().unwrap();
    assert_eq!(status, 200, "{head}");
    let text = answer(&messages, 7)["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("[cancelled]"), "{messages:?}");
    let stopped = size();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(size(), stopped, "the plugin goes on after the cancel");
}

/// `toolhost -vv serve --mcp` over stdio, read as it writes: its answers by id, its log lines.
struct StdioWire {
    _server: Killed,
    stdin: std::process::ChildStdin,
    out: std::sync::mpsc::Receiver<String>,
    seen: Vec<Value>,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl StdioWire {
    fn serve(env: &Env, capabilities: Value) -> StdioWire {
        let mut child = env
            .command()
            .args(["-vv", "--allow-write", "ticker", "serve", "--mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = keep_reading(BufReader::new(child.stderr.take().unwrap()));
        let out = crate::support::lines::lines(child.stdout.take().unwrap());
        let stdin = child.stdin.take().unwrap();
        let mut wire = StdioWire { _server: Killed(child), stdin, out, seen: Vec::new(), lines };
        wire.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": {"name": "wire", "version": "0"}}}));
        assert!(wire.answer(0).get("result").is_some(), "{:?}", wire.seen);
        wire.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // Calls that come during the first load wait for it in rmcp's handler.
        let loaded = |l: &String| l.contains("MCP over stdio, watching");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !wire.lines.lock().unwrap().iter().any(loaded) {
            assert!(std::time::Instant::now() < until, "not loaded: {:?}", wire.lines.lock().unwrap());
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        wire
    }

    fn send(&mut self, message: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// How many calls the server answered directly, counted after a call (`id`) it answers
    /// directly: its log lines come in order, so every earlier call's line is counted too.
    fn fence(&mut self, id: i64) -> usize {
        let before = answered_directly(&self.lines);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "fence"}}}));
        self.answer(id);
        wait_directly(&self.lines, before + 1)
    }

    /// The answer to request `id` (what came before it is kept).
    fn answer(&mut self, id: i64) -> Value {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if let Some(m) = self.seen.iter().find(|m| m["id"] == json!(id) && m.get("method").is_none()) {
                return m.clone();
            }
            let left = until.checked_duration_since(std::time::Instant::now()).unwrap_or_default();
            let line = self
                .out
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer {id} ({e}): {:?}", self.seen));
            self.seen.extend(serde_json::from_str::<Value>(&line).ok());
        }
    }
}

/// Over stdio, a call the direct path answers (see `mcp::stdio_direct`) gets the answer rmcp's
/// service gives the same call (sent with a `progressToken`, which only rmcp serves); a tool that
/// runs only as a task and a client that takes tasks still get rmcp's answers.
#[test]
fn a_stdio_call_answered_directly_is_the_answer_rmcp_gives() {
    let env = env();
    let mut wire = StdioWire::serve(&env, json!({}));
    let calls = [
        json!({"name": "echo", "arguments": {"text": "hello \"wire\" ✓"}}),
        json!({"name": "count_words", "arguments": {"text": "one two\nthree"}}),
        json!({"name": "search", "arguments": {"query": "  "}}),
        json!({"name": "split_task", "arguments": {"title": "t", "subtasks": []}}),
        json!({"name": "no_such_tool", "arguments": {}}),
    ];
    let mut id = 0;
    for params in calls {
        id += 3;
        let before = answered_directly(&wire.lines);
        wire.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params.clone()}));
        let direct = without_usage(wire.answer(id));
        let mut through_rmcp = params.clone();
        through_rmcp["_meta"] = json!({"progressToken": format!("p{id}")});
        wire.send(&json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call", "params": through_rmcp}));
        let mut rmcp = without_usage(wire.answer(id + 1));
        rmcp["id"] = json!(id);
        assert_eq!(direct, rmcp, "{params}");
        // Only the first of the two was run directly; an unknown tool is refused before anything
        // runs, on either path, and logs nothing.
        let ran = usize::from(params["name"] != "no_such_tool");
        assert_eq!(wire.fence(id + 2), before + ran + 1, "{params}");
    }
    let before = answered_directly(&wire.lines);
    wire.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "chore", "arguments": {"n": 1, "ms": 0}}}));
    assert_eq!(wire.answer(99)["error"]["message"], "Missing required client capability", "{:?}", wire.seen);
    assert_eq!(wire.fence(100), before + 1);

    let mut tasks = StdioWire::serve(&env, json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    tasks.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}}}));
    assert!(tasks.answer(1).to_string().contains('x'), "{:?}", tasks.seen);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(answered_directly(&tasks.lines), 0, "a client that takes tasks is rmcp's");
}

/// Over stdio, a call answered directly stops at its client's `notifications/cancelled`, and
/// is not answered (as rmcp does not answer a request its client cancelled).
#[test]
fn a_stdio_call_answered_directly_stops_at_notifications_cancelled() {
    let env = env();
    let mut wire = StdioWire::serve(&env, json!({}));
    let trail = env.workspace.path().join("trail.txt");
    wire.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "tick", "arguments": {"n": 100_000, "ms": 10, "trail": "trail.txt"}}}));
    let size = || std::fs::metadata(&trail).map_or(0, |m| m.len());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while size() < 3 {
        assert!(std::time::Instant::now() < until, "the trail does not grow");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(wait_directly(&wire.lines, 1), 1);
    wire.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the test cancels it"}}));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut stopped = size();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(300));
        if size() == stopped {
            break;
        }
        assert!(std::time::Instant::now() < until, "the plugin goes on after the cancel");
        stopped = size();
    }
    // The session goes on, and the cancelled call got no answer before the next one's.
    assert_eq!(wire.fence(8), 2);
    assert!(!wire.seen.iter().any(|m| m["id"] == json!(7)), "{:?}", wire.seen);
}

/// How many calls the server says it answered directly, once at least `n` (within 30 s).
fn wait_directly(lines: &std::sync::Mutex<Vec<String>>, n: usize) -> usize {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while answered_directly(lines) < n && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    answered_directly(lines)
}

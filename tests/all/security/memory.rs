//! What a client can make the host hold is bounded (#55 item 4): calls waiting for a call slot
//! (in all and per client, and dropped when their client leaves), and open 2025 sessions (in
//! all and per client). Request bodies are bounded by `[mcp] max_message_kb`
//! (`tests/all/message_limit.rs`).
//!
//! Each test drives a real `toolhost serve --mcp --http` with ten times its (small) caps, from
//! several loopback addresses (127.0.0.2 and up stand for other machines), with no `[mcp]
//! tokens` — anyone who reaches the port may call — and checks the server's resident memory
//! (`VmRSS`) and that `/healthz` and another client's MCP exchange still answer within a second.

use crate::support::http::{self, get, header, read_answer};
use crate::support::mcp_http::{
    INITIALIZE, echo_in, echo_over_mcp, json_rpc, mcp_headers, mcp_post, open_session_as,
};
use crate::support::{HttpServer, connect_from, poll, poll_showing};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The test's own client.
const HERE: [u8; 4] = [127, 0, 0, 1];

/// A value of the server's `/metrics` (served without a token when none are configured).
fn metric(addr: SocketAddr, name: &str) -> f64 {
    let (status, body) = get(addr, "/metrics", "");
    assert_eq!(status, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{body}"))
}

/// Wait until exactly `n` calls wait for a slot; past 30 s, fail with what the server shows:
/// its calls in flight and waiting, and its audit trail (a call that ran or failed instead).
#[track_caller]
fn waiting_reach(server: &HttpServer, n: usize) {
    let addr = server.addr;
    let waiting = || metric(addr, "toolhost_calls_waiting");
    poll_showing(
        30,
        &format!("{n} calls waiting for a slot"),
        || (waiting() == n as f64).then_some(()),
        || {
            let audit: Vec<String> = server.audit().iter().map(|l| l.to_string()).collect();
            format!(
                "{} waiting, {} in flight; audit:\n{}",
                waiting(),
                metric(addr, "toolhost_calls_in_flight"),
                audit.join("\n")
            )
        },
    );
}

/// `/healthz` answers within a second.
fn healthz_within_a_second(addr: SocketAddr) {
    let started = Instant::now();
    assert_eq!(get(addr, "/healthz", ""), (200, "ok\n".to_string()));
    assert!(started.elapsed() < Duration::from_secs(1), "/healthz took {:?}", started.elapsed());
}

/// A request written whole on a new connection from `from`, left open.
fn send(from: [u8; 4], addr: SocketAddr, head: &str, body: &str) -> TcpStream {
    let mut s = connect_from(from, addr);
    s.write_all(format!("{head}Content-Length: {}\r\n\r\n", body.len()).as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    s
}

/// How a call reaches the executor.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// A 2025 session's call answered by the front door (`mcp::direct`).
    Direct,
    /// A 2025 session's call through rmcp's session (a progress token keeps it off the direct path).
    Session,
    /// A 2026-07-28 stateless request.
    Stateless,
}

/// `tick(n, ms, trail)` of the `ticker` plugin sent on `path` (`session`: the 2025 session):
/// the request's head and body.
fn tick(addr: SocketAddr, path: Path, session: &str, n: u64, ms: u64, trail: &str) -> (String, String) {
    let arguments = serde_json::json!({ "n": n, "ms": ms, "trail": trail });
    let (params, head) = match path {
        Path::Direct => (
            serde_json::json!({ "name": "tick", "arguments": arguments }),
            mcp_headers(addr, None, Some(session)),
        ),
        Path::Session => (
            serde_json::json!({ "name": "tick", "arguments": arguments, "_meta": { "progressToken": "p" } }),
            mcp_headers(addr, None, Some(session)),
        ),
        Path::Stateless => (
            serde_json::json!({ "name": "tick", "arguments": arguments, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
            }}),
            format!(
                "{}MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: tick\r\n",
                mcp_headers(addr, None, None)
            ),
        ),
    };
    // Each request its own id: rmcp's session tells concurrent requests apart by it.
    static ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(10);
    let id = ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    (head, body.to_string())
}

/// A call from `from` that finds the slots taken and too many calls waiting: answered `busy`
/// at once, naming `setting`.
fn refused_at_once(from: [u8; 4], addr: SocketAddr, session: &str, setting: &str) {
    let (head, body) = tick(addr, Path::Direct, session, 1, 1, "");
    let started = Instant::now();
    let mut s = send(from, addr, &head, &body);
    let http::Answer { status, head, body } = read_answer(&mut s, Duration::from_secs(1))
        .unwrap_or_else(|| panic!("a call past {setting} was not answered within a second"));
    assert_eq!(status, 200, "{head}\n{body}");
    let text = json_rpc(&body).expect("a JSON-RPC answer")["result"]["content"][0]["text"].to_string();
    assert!(text.contains("[busy]") && text.contains(setting), "{text}");
    assert!(started.elapsed() < Duration::from_secs(1), "answered after {:?}", started.elapsed());
}

/// The audit lines of the calls with a long argument (the audit trail cuts it to a prefix and
/// its SHA-256).
fn long_calls(server: &HttpServer) -> Vec<serde_json::Value> {
    server.audit().into_iter().filter(|l| l["args"].to_string().contains("chars, sha256:")).collect()
}

/// Ten times the total cap of waiting calls on `path` — half from 127.0.0.2, half from ten other
/// addresses — each with the argument `arg`: each call, in turn, waits or is refused at once;
/// then all their clients leave, and each call is seen once, as never run — refused `busy`, or
/// dropped (`cancelled`) — not held until its deadline. `seen`: such calls audited so far.
fn abandon(server: &HttpServer, session: &str, path: Path, arg: &str, seen: &mut usize) {
    let addr = server.addr;
    let mut clients = Vec::new();
    for i in 0..40u8 {
        let from = if i % 2 == 0 { [127, 0, 0, 2] } else { [127, 0, 0, 10 + i / 2 % 10] };
        let (head, body) = tick(addr, path, session, 1, 1, arg);
        clients.push(send(from, addr, &head, &body));
        let taken = *seen + clients.len();
        poll(20, "the call to wait or be refused", || {
            let waiting = metric(addr, "toolhost_calls_waiting") as usize;
            (waiting + long_calls(server).len() == taken).then_some(())
        });
    }
    let waiting = metric(addr, "toolhost_calls_waiting");
    assert_eq!(waiting, 4.0, "{path:?}: 40 calls, [serve] max_waiting_calls = 4");
    drop(clients);
    *seen += 40;
    poll(20, "the calls whose clients left to be dropped", || {
        (metric(addr, "toolhost_calls_waiting") == 0.0 && long_calls(server).len() == *seen).then_some(())
    });
}

/// #55 item 4: 300 calls with 900 kB arguments whose clients closed their connections held
/// 278 MB (direct path) and 540 MB (through rmcp) until their deadlines while they waited for a
/// slot. Now at most `max_waiting_calls` wait (`…_per_peer` from one client), a call past
/// either is answered `busy` at once, and a waiting call whose client leaves is dropped before
/// it runs (audited `cancelled`), its memory freed.
#[test]
fn calls_waiting_for_a_slot_are_capped_and_dropped_when_their_client_leaves() {
    let config = "[plugin.ticker]\nconcurrency = 1\n\n\
                  [serve]\nmax_waiting_calls = 4\nmax_waiting_calls_per_peer = 2\n";
    let server = HttpServer::start(&[plugin_artifacts::TEXT, plugin_artifacts::TICKER], config, &[], &[]);
    let addr = server.addr;
    let session = open_session_as(&server.url, "", "2025-06-18", serde_json::json!({}), "raw");
    let quiet = || metric(addr, "toolhost_calls_waiting") == 0.0;
    // A plugin loaded from the warm compile cache links its code at its first call, before
    // that call takes a slot: a later call finding it linked could take the slot first. So the
    // first call is made here, and the holder below takes the slot as it is admitted.
    let (head, body) = tick(addr, Path::Direct, &session, 1, 1, "");
    assert_eq!(http::send(addr, &head, &body).status, 200);
    // `ticker`'s one slot is taken by a call that runs until its (2026-07-28) client leaves.
    let (head, body) = tick(addr, Path::Stateless, &session, 1000, 100, "");
    let holder = send(HERE, addr, &head, &body);
    poll(30, "the holder to run", || {
        (metric(addr, "toolhost_calls_in_flight") == 1.0 && quiet()).then_some(())
    });

    // Two calls of 127.0.0.2 wait; its third is refused at once. Two of 127.0.0.3 wait: the
    // total is reached, and a call of 127.0.0.4 is refused at once.
    let wait = |from: [u8; 4]| {
        let (head, body) = tick(addr, Path::Direct, &session, 1, 1, "");
        send(from, addr, &head, &body)
    };
    let mut waiting = vec![wait([127, 0, 0, 2]), wait([127, 0, 0, 2])];
    waiting_reach(&server, 2);
    refused_at_once([127, 0, 0, 2], addr, &session, "[serve] max_waiting_calls_per_peer = 2");
    waiting.push(wait([127, 0, 0, 3]));
    waiting.push(wait([127, 0, 0, 3]));
    waiting_reach(&server, 4);
    refused_at_once([127, 0, 0, 4], addr, &session, "[serve] max_waiting_calls = 4");
    // Their clients leave: the calls stop waiting.
    drop(waiting);
    waiting_reach(&server, 0);

    // Ten times the total cap on each path, with 900 kB arguments, and their clients leave. A
    // first round warms the allocator up: what it keeps for reuse is not what clients hold.
    let big = "x".repeat(900_000);
    let mut seen = 0;
    abandon(&server, &session, Path::Direct, &big, &mut seen);
    let rss_before = server.rss_kb();
    let paths = [Path::Direct, Path::Session, Path::Stateless];
    for path in paths {
        abandon(&server, &session, path, &big, &mut seen);
    }
    let outcomes: Vec<String> = long_calls(&server).iter().map(|l| l["outcome"].to_string()).collect();
    let count = |outcome: &str| outcomes.iter().filter(|o| o.trim_matches('"') == outcome).count();
    let rounds = paths.len() + 1;
    assert_eq!((count("busy"), count("cancelled")), (36 * rounds, 4 * rounds), "{outcomes:?}");
    let grown_mb = server.rss_kb().saturating_sub(rss_before) / 1024;
    eprintln!("memory: {} MiB before the abandoned calls, +{grown_mb} MiB after", rss_before / 1024);
    assert!(grown_mb < 40, "the server grew by {grown_mb} MiB holding calls whose clients left");
    healthz_within_a_second(addr);
    echo_over_mcp(addr, None, Duration::from_secs(1));

    // Once the holder's client leaves, its call stops, and the next call runs.
    drop(holder);
    let (head, body) = tick(addr, Path::Direct, &session, 1, 1, "");
    let answer = http::send(addr, &head, &body);
    assert_eq!(answer.status, 200);
    let answer = json_rpc(&answer.body).expect("an answer");
    assert_eq!(answer["result"]["content"][0]["text"], "counted to 1", "{answer}");
    // None of the abandoned calls ran meanwhile.
    assert!(long_calls(&server).iter().all(|l| l["outcome"] == "cancelled" || l["outcome"] == "busy"));
}

/// #55 item 4: 10,000 `initialize` requests on one connection opened 10,000 sessions (576 MB,
/// kept for `session_idle_s`). Now past `[mcp] max_sessions_per_peer` an `initialize` is
/// refused `429`, past `max_sessions` `503`, each with `Retry-After` and a JSON-RPC error
/// naming the setting (one the front door does not see, sent chunked, by the session manager);
/// a session ended (DELETE) frees its place.
#[test]
fn open_sessions_are_capped_in_all_and_per_client() {
    let config = "[mcp]\nmax_sessions = 60\nmax_sessions_per_peer = 30\n";
    let server = HttpServer::start(&[plugin_artifacts::TEXT], config, &[], &[]);
    let addr = server.addr;
    let mine = open_session_as(&server.url, "", "2025-06-18", serde_json::json!({}), "raw");
    let rss_before = server.rss_kb();

    // `count` initializes on one connection from `from`: the sessions opened, and the refusals
    // (status and error message) in order.
    let initialize = |from: [u8; 4], count: usize| {
        let mut s = connect_from(from, addr);
        let (mut opened, mut refused) = (Vec::new(), Vec::new());
        for _ in 0..count {
            let head = mcp_headers(addr, None, None);
            s.write_all(format!("{head}Content-Length: {}\r\n\r\n{INITIALIZE}", INITIALIZE.len()).as_bytes())
                .unwrap();
            let http::Answer { status, head, body } =
                read_answer(&mut s, Duration::from_secs(10)).expect("an answer");
            match header(&head, "mcp-session-id") {
                Some(id) if status == 200 => opened.push(id),
                _ => {
                    assert_eq!(header(&head, "retry-after").as_deref(), Some("1"), "{head}");
                    let error =
                        json_rpc(&body).unwrap_or_else(|| panic!("no JSON-RPC error: {head}\n{body}"));
                    refused
                        .push((status, error["error"]["message"].as_str().unwrap_or_default().to_string()));
                }
            }
        }
        (opened, refused)
    };

    // Ten times the per-client cap on one connection.
    let (opened, refused) = initialize([127, 0, 0, 2], 300);
    assert_eq!((opened.len(), refused.len()), (30, 270));
    for (status, message) in &refused {
        assert_eq!(*status, 429, "{message}");
        assert!(
            message.contains("[mcp] max_sessions_per_peer = 30") && message.contains("127.0.0.2"),
            "{message}"
        );
    }
    // One sent without a length (which the front door does not read) is refused too, by the
    // session manager: a JSON-RPC error naming the cap, its session closed at once.
    let mut s = connect_from([127, 0, 0, 2], addr);
    let head = mcp_headers(addr, None, None);
    let chunked = format!(
        "{head}Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{INITIALIZE}\r\n0\r\n\r\n",
        INITIALIZE.len()
    );
    s.write_all(chunked.as_bytes()).unwrap();
    let http::Answer { head, body, .. } = read_answer(&mut s, Duration::from_secs(10)).expect("an answer");
    let error = json_rpc(&body).unwrap_or_else(|| panic!("no JSON-RPC answer: {head}\n{body}"));
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("[mcp] max_sessions_per_peer = 30"), "{error}");
    let id = header(&head, "mcp-session-id").expect("rmcp names the session it made");
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let status = http::send(addr, &mcp_headers(addr, None, Some(&id)), list).status;
    assert_eq!(status, 404, "the refused session is not served");
    healthz_within_a_second(addr);
    echo_over_mcp(addr, None, Duration::from_secs(1));
    // A session ended frees its place.
    let ended = http::request(addr, "DELETE", "/mcp", &format!("Mcp-Session-Id: {}\r\n", opened[0]), "");
    assert_eq!(ended.status, 202);
    assert_eq!(initialize([127, 0, 0, 2], 1).0.len(), 1, "no place after a DELETE");

    // Ten times the total cap, from ten more addresses: 28 places were left.
    let mut open = 0;
    for i in 0..10u8 {
        let (opened, refused) = initialize([127, 0, 0, 20 + i], 60);
        open += opened.len();
        for (status, message) in &refused {
            let per_client = message.contains("[mcp] max_sessions_per_peer = 30");
            assert!(
                (*status == 503 && message.contains("[mcp] max_sessions = 60"))
                    || (*status == 429 && per_client),
                "{status}: {message}"
            );
        }
    }
    assert_eq!(open, 28, "60 sessions at most: 32 were open");
    let grown_mb = server.rss_kb().saturating_sub(rss_before) / 1024;
    eprintln!("memory: {} MiB before 900 initialize requests, +{grown_mb} MiB after", rss_before / 1024);
    assert!(grown_mb < 16, "the server grew by {grown_mb} MiB holding sessions");
    // The sessions open are still served, and so are the probes.
    healthz_within_a_second(addr);
    let started = Instant::now();
    echo_in(addr, None, &mine);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "a call in an open session took {:?}",
        started.elapsed()
    );
    let (status, _, _) = mcp_post(addr, None, None, INITIALIZE);
    assert_eq!(status, 503, "a new session past the total cap");
}

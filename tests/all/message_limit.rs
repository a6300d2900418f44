//! One limit on an MCP message, whatever the transport (issue #32): `[mcp] max_message_kb`
//! caps a stdio line and an HTTP request body alike. Over stdio, a line past it is read through
//! without being kept and answered at once with a JSON-RPC error naming the limit (with the
//! request's `id`, wherever it sits in the line, or `null`); the session goes on.

use crate::service::{Deployment, TOKEN, json_line};
use crate::support::server::exit_status;
use crate::support::wait_line;
use std::io::Write;
use std::process::ChildStdin;
use std::time::{Duration, Instant};

/// Write one line of about `mib` MiB: `head`, then `x`s, then `tail`, a newline — a MiB at a time.
fn write_big_line(stdin: &mut ChildStdin, head: &str, mib: usize, tail: &str) {
    stdin.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..mib {
        stdin.write_all(&chunk).unwrap();
    }
    stdin.write_all(tail.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
}

/// The server's peak resident memory (KiB), from /proc.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn an_oversized_stdio_message_is_answered_and_the_session_goes_on() {
    let d = Deployment::new(&[plugin_artifacts::TEXT], "");
    let (mut child, mut stdin, out) = d.serve_stdio();
    let mut seen = Vec::new();
    let send = |stdin: &mut ChildStdin, line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"big","version":"0"}}}"#,
    );
    wait_line(&out, r#""id":1"#, 60, &mut seen);
    send(&mut stdin, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let echo = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"alive {id}"}}}}}}"#
        )
    };
    send(&mut stdin, &echo(2));
    wait_line(&out, "alive 2", 30, &mut seen);
    let before = peak_rss_kb(child.id());

    // The id first (as most clients write it), the id last (as pydantic orders a request's
    // fields), and no id at all.
    let cases: [(usize, String, String, serde_json::Value); 3] = [
        (
            16,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":""#
                .into(),
            r#""}}}"#.into(),
            serde_json::json!(10),
        ),
        (
            100,
            r#"{"method":"tools/call","params":{"name":"echo","arguments":{"text":""#.into(),
            r#""}},"jsonrpc":"2.0","id":"last-11"}"#.into(),
            serde_json::json!("last-11"),
        ),
        (
            16,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":""#.into(),
            r#""}}"#.into(),
            serde_json::Value::Null,
        ),
    ];
    for (n, (mib, head, tail, id)) in cases.into_iter().enumerate() {
        write_big_line(&mut stdin, &head, mib, &tail);
        let written = Instant::now();
        let answer = json_line(&wait_line(&out, "message too large", 10, &mut seen));
        let took = written.elapsed();
        assert!(took < Duration::from_secs(1), "{mib} MiB: answered after {took:?}");
        assert_eq!(answer["id"], id, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("over the limit of 4096 KiB") && message.contains("[mcp] max_message_kb"),
            "{message}"
        );
        assert_eq!(answer["error"]["code"], -32600);
        // The session goes on.
        let next = 20 + n as u32;
        send(&mut stdin, &echo(next));
        let served = json_line(&wait_line(&out, &format!("alive {next}"), 10, &mut seen));
        assert_eq!(served["id"], next);
    }
    // Read through, never kept: a few MiB at most over the peak before (the limit is 4 MiB).
    let after = peak_rss_kb(child.id());
    assert!(after < before + 24 * 1024, "peak RSS went from {before} KiB to {after} KiB");
    drop(stdin);
    let status = exit_status(&mut child, 30);
    assert!(status.success(), "{status:?}");
}

/// A deployment whose `[mcp]` sets `max_message_kb`.
fn with_max_message_kb(kb: usize) -> Deployment {
    let d = Deployment::new(&[plugin_artifacts::TEXT], "");
    let config = std::fs::read_to_string(d.config()).unwrap();
    let config = config.replacen("[mcp]\n", &format!("[mcp]\nmax_message_kb = {kb}\n"), 1);
    std::fs::write(d.config(), config).unwrap();
    d
}

/// The same setting caps an HTTP body and a stdio line, and names itself in both refusals.
#[test]
fn max_message_kb_is_one_limit_for_stdio_and_http() {
    let d = with_max_message_kb(2048);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "y".repeat(3 * 1024 * 1024)
    );
    let (mut child, mut stdin, out) = d.serve_stdio();
    let mut seen = Vec::new();
    writeln!(stdin, "{body}").unwrap();
    let answer = json_line(&wait_line(&out, "message too large", 60, &mut seen));
    assert_eq!(answer["id"], 5);
    assert!(answer["error"]["message"].as_str().unwrap().contains("limit of 2048 KiB"), "{answer}");
    drop(stdin);
    let _ = exit_status(&mut child, 30);

    let server = d.serve_http();
    let headers = format!(
        "Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    );
    let answer = server.request("POST", "/mcp", &headers, &body);
    let (status, text) = (answer.status, answer.body);
    assert_eq!(status, 413, "{text}");
    assert!(text.contains(&format!("exceeds {} bytes", 2048 * 1024)), "{text}");

    // Below the per-call argument limit (and its envelope) the setting is refused.
    let bad = with_max_message_kb(512);
    let out = bad.command().args(["list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("mcp.max_message_kb = 512 is outside 1088"), "{err}");
}

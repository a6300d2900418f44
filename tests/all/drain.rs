//! Graceful drain with the official MCP clients (issue #32): both Python SDK generations, over
//! streamable HTTP in session mode and in 2026-07-28 stateless mode, and over stdio ended by
//! SIGTERM or by the client closing stdin. In every case a call in flight when the shutdown
//! begins completes and its answer reaches the client; a call still running at the end of the
//! grace period ends with the `unavailable` error in the client's hands; the session's own
//! traffic (its GET stream, a notification, a new call refused with `unavailable`, its DELETE)
//! is served meanwhile, so the client itself never fails; and the server exits 0. Each case
//! records a line in the reliability summary `cargo xtask test` prints.

use crate::service::{Deployed, Deployment, TOKEN, json_line};
use crate::support::lines::spawn_piped;
use crate::support::python::python;
use crate::support::server::{exit_status, sigterm};
use crate::support::{Server, poll, root, wait_line};
use std::io::Write;
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Transport {
    /// Streamable HTTP, ended by SIGTERM.
    Http,
    /// stdio, ended by SIGTERM.
    StdioSigterm,
    /// stdio, ended by the client closing the server's stdin.
    StdioEof,
}

/// `tests/service/drain.py` talking to a server, taking orders on its stdin.
struct Driver {
    child: Child,
    orders: Option<ChildStdin>,
    out: Receiver<String>,
    /// The server's stderr over HTTP; the driver's (and over stdio the server's) otherwise.
    seen: Vec<String>,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Driver {
    fn order(&mut self, order: serde_json::Value) {
        let stdin = self.orders.as_mut().expect("orders still open");
        writeln!(stdin, "{order}").unwrap();
        stdin.flush().unwrap();
    }

    /// The driver's next JSON line with `key` = `value`.
    #[track_caller]
    fn expect(&mut self, key: &str, value: &str, secs: u64) -> serde_json::Value {
        let what = format!("\"{key}\": {}", serde_json::Value::String(value.into()));
        let what = if value == "true" { format!("\"{key}\": true") } else { what };
        json_line(&wait_line(&self.out, &what, secs, &mut self.seen))
    }
}

/// One drain with one SDK generation, mode and transport.
fn drain(generation: u8, mode: &str, transport: Transport) {
    let label = match transport {
        Transport::Http if mode == "auto" => format!("sdk{generation} http stateless (2026-07-28)"),
        Transport::Http => format!("sdk{generation} http session"),
        Transport::StdioSigterm => format!("sdk{generation} {mode} stdio, SIGTERM"),
        Transport::StdioEof => format!("sdk{generation} {mode} stdio, stdin closed"),
    };
    let d = Deployment::new(
        &[plugin_artifacts::VERSIONED, plugin_artifacts::TEXT],
        "[serve]\nshutdown_grace_ms = 3000\n\n[limits]\ntimeout_ms = 120000\n",
    );
    let mut server = (transport == Transport::Http).then(|| d.serve_http());
    let mut cmd = Command::new(python(generation));
    cmd.arg(root().join("tests/service/drain.py")).arg(mode);
    match &server {
        Some(s) => {
            cmd.args(["http", &s.url, TOKEN]);
        }
        None => {
            // The server as `d.command()` would start it, but by the driver, on its pipes.
            let serve = d.command();
            cmd.arg("stdio").arg(serve.get_program()).args(serve.get_args()).args(["serve", "--mcp"]);
            for (k, v) in serve.get_envs() {
                if let Some(v) = v {
                    cmd.env(k, v);
                }
            }
            cmd.current_dir(d.dir.path());
        }
    }
    let (child, orders, out, err) = spawn_piped(&mut cmd);
    let mut driver = Driver { child, orders: Some(orders), out, seen: Vec::new() };
    let ready = driver.expect("ready", "true", 60);
    let mut err_seen = Vec::new();

    driver.order(serde_json::json!({ "tag": "quick", "call": "nap", "arguments": { "ms": 1500 } }));
    driver.order(serde_json::json!({ "tag": "slow", "call": "nap", "arguments": { "ms": 100000 } }));
    // Both calls in flight.
    match &server {
        Some(s) => poll(60, "two calls in flight", || {
            (s.metrics().value("toolhost_calls_in_flight", &[]) == 2.0).then_some(())
        }),
        None => {
            wait_line(&err, "call admitted", 60, &mut err_seen);
            wait_line(&err, "call admitted", 60, &mut err_seen);
        }
    }
    let signalled = Instant::now();
    let stopping = match transport {
        Transport::Http => {
            sigterm(&server.as_ref().unwrap().child);
            "SIGTERM: no new calls"
        }
        Transport::StdioSigterm => {
            let pid = ready["pid"].as_i64().expect("the server's pid") as i32;
            let pid = rustix::process::Pid::from_raw(pid).unwrap();
            rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
            "SIGTERM: no new calls"
        }
        Transport::StdioEof => {
            driver.order(serde_json::json!({ "eof": true }));
            "stdin closed: no new calls"
        }
    };
    match &mut server {
        Some(s) => drop(wait_line(&s.log, stopping, 10, &mut s.seen)),
        None => drop(wait_line(&err, stopping, 10, &mut err_seen)),
    }

    // The session goes on while its calls finish: a notification is accepted, a new call is
    // answered `unavailable` (in a session) or refused with 503 (stateless: no session).
    let mut during = Vec::new();
    if transport != Transport::StdioEof {
        if mode == "legacy" {
            driver.order(serde_json::json!({ "tag": "note", "notify": true }));
            driver.expect("tag", "note", 10);
            during.push("a notification accepted");
        }
        driver.order(serde_json::json!({ "tag": "late", "call": "echo", "arguments": { "text": "late" } }));
        let late = driver.expect("tag", "late", 10);
        let text = late["text"].as_str().or(late["error"].as_str()).unwrap_or_default();
        assert!(text.contains("toolhost is shutting down"), "{label}: {late}");
        if late.get("isError").is_some() {
            assert_eq!(late["isError"], true, "{label}: {late}");
            assert!(text.ends_with("[unavailable]"), "{label}: {text}");
            during.push("a new call answered `unavailable`");
        } else {
            during.push("a new call refused with 503");
        }
    }

    let quick = driver.expect("tag", "quick", 30);
    assert_eq!(quick["isError"], false, "{label}: {quick}");
    assert_eq!(quick["text"], "slept 1500 ms", "{label}");
    let slow = driver.expect("tag", "slow", 30);
    let server_log = |server: &mut Option<_>| match server {
        Some(s) => {
            let s: &mut Server = s;
            s.seen.extend(s.log.try_iter());
            s.seen.join("\n")
        }
        None => err_seen.join("\n"),
    };
    assert_eq!(slow["isError"], true, "{label}: {slow}\nthe server said:\n{}", server_log(&mut server));
    let text = slow["text"].as_str().unwrap();
    assert!(
        text.contains("did not finish within the grace period (3000 ms") && text.ends_with("[unavailable]"),
        "{label}: {text}"
    );
    assert!(signalled.elapsed() < Duration::from_secs(20), "{label}: {:?}", signalled.elapsed());

    // The client leaves (over HTTP with a DELETE of its session) and is none the worse.
    drop(driver.orders.take());
    let closed = driver.expect("closed", "true", 30);
    let status = exit_status(&mut driver.child, 30);
    let stderr: Vec<String> = err.try_iter().collect();
    assert!(status.success(), "{label}: the client failed ({status:?}):\n{}", stderr.join("\n"));
    match &mut server {
        Some(s) => {
            let status = exit_status(&mut s.child, 20);
            assert!(status.success(), "{label}: {status:?}\n{}", s.seen.join("\n"));
        }
        None => assert_eq!(closed["exit"], 0, "{label}: {closed}\n{}", err_seen.join("\n")),
    }
    let audit = d.audit();
    let mut outcomes: Vec<(&str, &str)> =
        audit.iter().map(|l| (l["tool"].as_str().unwrap(), l["outcome"].as_str().unwrap())).collect();
    outcomes.sort();
    let late = transport != Transport::StdioEof && mode == "legacy" || transport == Transport::StdioSigterm;
    let mut want = vec![("nap", "ok"), ("nap", "unavailable")];
    if late {
        want.insert(0, ("echo", "unavailable"));
    }
    assert_eq!(outcomes, want, "{label}: {audit:?}");

    let during = if during.is_empty() { String::new() } else { format!("; meanwhile {}", during.join(", ")) };
    crate::reliability::record_summary(
        &format!("drain-{}", label.replace([' ', ',', '(', ')'], "-")),
        &format!(
            "drain, {label}: the call in flight answered, the call past the grace period answered \
             `unavailable`{during}; the client exited cleanly, the server with 0"
        ),
    );
}

#[test]
fn drain_sdk1_http_session() {
    drain(1, "legacy", Transport::Http);
}

#[test]
fn drain_sdk2_http_session() {
    drain(2, "legacy", Transport::Http);
}

#[test]
fn drain_sdk2_http_stateless() {
    drain(2, "auto", Transport::Http);
}

#[test]
fn drain_sdk1_stdio_sigterm() {
    drain(1, "legacy", Transport::StdioSigterm);
}

#[test]
fn drain_sdk1_stdio_eof() {
    drain(1, "legacy", Transport::StdioEof);
}

#[test]
fn drain_sdk2_stdio_sigterm() {
    drain(2, "auto", Transport::StdioSigterm);
}

#[test]
fn drain_sdk2_stdio_eof() {
    drain(2, "auto", Transport::StdioEof);
}

/// A client that writes its requests and closes stdin at once (`printf … | toolhost serve
/// --mcp`) gets every answer: the requests read before the end of stdin are not refused as
/// new, and a call longer than rmcp's own five-second wind-down still completes.
#[test]
fn requests_read_before_the_end_of_stdin_are_answered() {
    let d = Deployment::new(&[plugin_artifacts::VERSIONED, plugin_artifacts::TEXT], "");
    let (mut child, mut stdin, out) = d.serve_stdio();
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nap","arguments":{"ms":5500}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"piped"}}}"#,
    ];
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    drop(stdin);
    let mut seen = Vec::new();
    let echo = json_line(&wait_line(&out, r#""id":3"#, 60, &mut seen));
    assert_eq!(echo["result"]["content"][0]["text"], "piped", "{echo}");
    let nap = json_line(&wait_line(&out, r#""id":2"#, 30, &mut seen));
    assert_eq!(nap["result"]["content"][0]["text"], "slept 5500 ms", "{nap}");
    let status = exit_status(&mut child, 20);
    assert!(status.success(), "{status:?}");
}

//! A fleet (#30), on real parts: several `serve --mcp --http 127.0.0.1:0` replicas sharing
//! `[mcp] approval_key` and a `redis-server` replay store (Debian's package; `cargo xtask test`
//! installs it when missing, or set TOOLHOST_TEST_REDIS_SERVER). The 2026-07-28 danger
//! confirmation is driven with raw JSON-RPC over HTTP: the question comes from one replica, the
//! answer goes to another, and a replay goes to a third.

use crate::mcp::{host_args, mcp_env, root};
use crate::support::Env;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The fleet's key (at least 32 bytes), given to every replica through the environment.
const FLEET_KEY: &str = "fleet-test-key-5d0c4e1b9a7f3c2e8b6a1d4f0e9c7b35";

/// `redis-server` on a free 127.0.0.1 port, killed on drop.
struct Redis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_server_bin() -> PathBuf {
    let bin = std::env::var_os("TOOLHOST_TEST_REDIS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/redis-server"));
    assert!(
        bin.is_file(),
        "the fleet tests need redis-server at {}: run `cargo xtask test` (it installs Debian's redis-server), \
         `apt-get install redis-server`, or set TOOLHOST_TEST_REDIS_SERVER",
        bin.display()
    );
    bin
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn redis() -> Redis {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = Command::new(redis_server_bin())
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let redis = Redis { child, port, _dir: dir };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pong = TcpStream::connect(("127.0.0.1", port)).ok().and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
            s.write_all(b"PING\r\n").ok()?;
            let mut buf = [0u8; 7];
            s.read_exact(&mut buf).ok()?;
            Some(buf == *b"+PONG\r\n")
        });
        if pong == Some(true) {
            return redis;
        }
        assert!(Instant::now() < deadline, "redis-server did not answer PING on 127.0.0.1:{port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One `serve --mcp --http` replica, killed on drop.
struct Replica {
    child: Child,
    url: String,
    /// Its stderr up to the URL line.
    start: Vec<String>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A replica of `env` on `addr` with `config` (written next to the workspace), extra `flags`
/// after `serve --mcp`, the fleet key in its environment.
fn replica(env: &Env, addr: &str, config: &str, flags: &[&str]) -> Replica {
    let path = env.plugins.path().parent().unwrap().join(format!("fleet-{}.toml", free_port()));
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&path)
        .args(host_args(env))
        .args(["--http", addr])
        .args(flags)
        .env("TOOLHOST_TEST_FLEET_KEY", FLEET_KEY)
        .current_dir(env.workspace.path())
        .env("XDG_CACHE_HOME", root().join("target/test-cache"))
        .env("XDG_STATE_HOME", root().join("target/test-state"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut r = Replica { child, url: String::new(), start: Vec::new() };
    while r.url.is_empty() {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no URL from serve: {:?}", r.start));
        if let Some(rest) = line.split("MCP over streamable HTTP at ").nth(1) {
            r.url = rest.split(',').next().unwrap().to_string();
        }
        r.start.push(line);
    }
    // An address bound to every interface is reached on loopback.
    r.url = r.url.replace("0.0.0.0", "127.0.0.1");
    r
}

fn fleet_config(redis_port: Option<u16>) -> String {
    let mut c = String::from(
        "[secrets.fleet]\nenv = \"TOOLHOST_TEST_FLEET_KEY\"\n\n[mcp]\napproval_key = { secret = \"fleet\" }\n",
    );
    if let Some(port) = redis_port {
        c.push_str(&format!("replay_store = \"redis://127.0.0.1:{port}\"\n"));
    }
    c
}

/// One stateless 2026-07-28 `tools/call` of `delete(path)` over raw HTTP/1.0 (the body ends
/// with the connection); returns the JSON-RPC response.
fn delete(url: &str, path: &str, state: Option<&str>, answer: Option<Value>) -> Value {
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut params = json!({
        "name": "delete",
        "arguments": {"path": path},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "0"},
        },
    });
    if let Some(s) = state {
        params["requestState"] = s.into();
    }
    if let Some(a) = answer {
        params["inputResponses"] = json!({ "confirm": a });
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let req = format!(
        "POST /mcp HTTP/1.0\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: delete\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP response: {raw:?}"));
    let messages: Vec<Value> = if body.trim_start().starts_with('{') {
        vec![serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {body:?}"))]
    } else {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    messages
        .into_iter()
        .find(|m| m.get("id") == Some(&json!(1)))
        .unwrap_or_else(|| panic!("no JSON-RPC response in: {head}\n{body}"))
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"approve": true}})
}

/// The `requestState` of an `input_required` answer (the question).
fn asked(response: &Value) -> String {
    let r = &response["result"];
    assert_eq!(r["resultType"], "input_required", "{response}");
    assert!(r["inputRequests"]["confirm"].is_object(), "{response}");
    r["requestState"].as_str().unwrap_or_else(|| panic!("no requestState: {response}")).to_string()
}

/// The error message of a refused call.
fn refused(response: &Value) -> String {
    response["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("expected an error: {response}"))
        .to_string()
}

fn ran(response: &Value) {
    let r = &response["result"];
    assert!(r["content"].is_array() && r["isError"] != json!(true), "expected a result: {response}");
}

#[test]
fn a_confirmation_asked_by_one_replica_is_answered_on_another_and_good_for_one_call() {
    let env = mcp_env();
    let redis = redis();
    let config = fleet_config(Some(redis.port));
    let fleet: Vec<Replica> = (0..3).map(|_| replica(&env, "127.0.0.1:0", &config, &[])).collect();
    for round in 0..3 {
        let (ask, answer, replay) = (&fleet[round], &fleet[(round + 1) % 3], &fleet[(round + 2) % 3]);
        let file = format!("doomed-{round}.txt");
        std::fs::write(env.ws(&file), "delete me").unwrap();
        let state = asked(&delete(&ask.url, &file, None, None));
        assert!(env.ws(&file).exists(), "asking ran nothing");
        ran(&delete(&answer.url, &file, Some(&state), Some(accept())));
        assert!(!env.ws(&file).exists(), "the answer on replica {} ran the call", (round + 1) % 3);
        // The same state again, on the third replica and on the two others: refused everywhere.
        std::fs::write(env.ws(&file), "again").unwrap();
        for r in [replay, ask, answer] {
            let e = refused(&delete(&r.url, &file, Some(&state), Some(accept())));
            assert!(e.contains("already used"), "{e}");
        }
        assert!(env.ws(&file).exists(), "no replay ran");
    }
    // Redis gone: a confirmation is refused (fail closed), never run.
    drop(redis);
    std::fs::write(env.ws("kept.txt"), "keep").unwrap();
    let state = asked(&delete(&fleet[0].url, "kept.txt", None, None));
    let e = refused(&delete(&fleet[1].url, "kept.txt", Some(&state), Some(accept())));
    assert!(e.contains("replay store") && e.contains("not run"), "{e}");
    assert!(env.ws("kept.txt").exists(), "nothing ran without the replay store");
}

#[test]
fn without_a_shared_key_another_replica_refuses_with_a_clear_error() {
    let env = mcp_env();
    let (a, b) = (replica(&env, "127.0.0.1:0", "", &[]), replica(&env, "127.0.0.1:0", "", &[]));
    std::fs::write(env.ws("doomed.txt"), "delete me").unwrap();
    let state = asked(&delete(&a.url, "doomed.txt", None, None));
    let e = refused(&delete(&b.url, "doomed.txt", Some(&state), Some(accept())));
    assert!(e.contains("not issued by this toolhost process") && e.contains("no [mcp] approval_key"), "{e}");
    assert!(env.ws("doomed.txt").exists());
    // Sticky routing still works: the replica that asked takes the answer.
    ran(&delete(&a.url, "doomed.txt", Some(&state), Some(accept())));
    assert!(!env.ws("doomed.txt").exists());
}

#[test]
fn a_server_others_can_reach_says_when_confirmations_need_sticky_routing() {
    let env = mcp_env();
    let open = ["--allow-unauthenticated-remote"];
    let warns =
        |r: &Replica| r.start.iter().any(|l| l.contains("confirmations only work with sticky routing"));
    let alone = replica(&env, "0.0.0.0:0", "", &open);
    assert!(warns(&alone), "{:?}", alone.start);
    let shared = replica(&env, "0.0.0.0:0", &fleet_config(Some(6379)), &open);
    assert!(!warns(&shared), "{:?}", shared.start);
    let on_loopback = replica(&env, "127.0.0.1:0", "", &[]);
    assert!(!warns(&on_loopback), "{:?}", on_loopback.start);
}

//! MCP over HTTP cannot be held down by slow clients; /metrics is guarded like /mcp.
//!
//! Each test runs the real `toolhost serve --mcp --http` on 127.0.0.1 (the slow clients come
//! from other loopback addresses, 127.0.0.2 and up, so the per-address cap can be seen apart
//! from the total one).

use crate::support::Env;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const TOKEN: &str = "security-suite-token-0123456789";

struct Served {
    child: Child,
    addr: SocketAddr,
    _log: Receiver<String>,
    _dir: tempfile::TempDir,
    _env: Env,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn cache() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-cache")
}

/// `serve --mcp --http 127.0.0.1:0` with `config` as its toolhost.toml and `args` after it.
fn serve(config: &str, args: &[&str]) -> Served {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(dir.path().join("toolhost.toml"))
        .arg("--plugins")
        .arg(env.plugins.path())
        .args(["serve", "--mcp", "--http", "127.0.0.1:0"])
        .args(args)
        .env("TOOLHOST_TEST_HTTP_TOKEN", TOKEN)
        .env("XDG_CACHE_HOME", cache())
        .env("XDG_STATE_HOME", dir.path())
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
    let deadline = Instant::now() + Duration::from_secs(60);
    let addr = loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("serve did not say where it listens");
        if let Some(rest) = line.split("MCP over streamable HTTP at http://").nth(1) {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    Served { child, addr, _log: rx, _dir: dir, _env: env }
}

/// One request on a fresh connection from 127.0.0.1; the status, head and body.
fn request(addr: SocketAddr, head_lines: &str, body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!("{head_lines}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status: {raw:?}"));
    (status, head.to_string(), body.to_string())
}

fn get(addr: SocketAddr, path: &str, extra: &str) -> (u16, String) {
    let (status, _, body) = request(addr, &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}"), "");
    (status, body)
}

/// An MCP POST with the token; the JSON-RPC message of the answer (plain JSON or one SSE event).
fn mcp_post(addr: SocketAddr, session: Option<&str>, body: &str) -> (u16, String, Option<serde_json::Value>) {
    let session = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    let (status, head, body) = request(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{session}"
        ),
        body,
    );
    let json = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(body.as_str()))
        .find_map(|l| {
            serde_json::from_str::<serde_json::Value>(l.trim()).ok().filter(|v| v.get("jsonrpc").is_some())
        });
    (status, head, json)
}

/// A whole MCP exchange with the token: initialize, initialized, `echo` — each answered in time.
fn echo_over_mcp(addr: SocketAddr, within: Duration) {
    let started = Instant::now();
    let (status, head, _) = mcp_post(
        addr,
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
    );
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.trim().to_string())
        })
        .expect("a session id");
    let (status, head, _) =
        mcp_post(addr, Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(status, 202, "{head}");
    let (status, head, answer) = mcp_post(
        addr,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still served"}}}"#,
    );
    assert_eq!(status, 200, "{head}");
    let answer = answer.expect("an answer to tools/call");
    assert_eq!(answer["result"]["content"][0]["text"], "still served", "{answer}");
    assert!(started.elapsed() < within, "the MCP call took {:?}", started.elapsed());
}

/// Raise this test process's open-file limit (it holds hundreds of sockets at once).
fn more_descriptors() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    let _ = setrlimit(Resource::Nofile, Rlimit { current: lim.maximum.or(Some(4096)), maximum: lim.maximum });
}

/// A client that sends a request's headers a byte at a time, from `from` (a loopback address).
async fn slow_client(from: [u8; 4], to: SocketAddr) -> std::io::Result<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((from, 0)))?;
    let stream = socket.connect(to).await?;
    stream.try_write(b"G")?;
    Ok(stream)
}

/// #26 item 5: 300 connections sending their headers a byte at a time used to keep `/healthz`
/// unanswered for a minute and exhaust descriptors. Now the probe and an authenticated MCP call
/// still answer within a second, a peer past its connection cap gets `503` at once, and the
/// slow connections are cut off at the header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_cannot_hold_the_server_down() {
    more_descriptors();
    let config = "[mcp]\ntokens = [{ name = \"ci\", env = \"TOOLHOST_TEST_HTTP_TOKEN\" }]\n\n\
                  [serve]\nheader_timeout_ms = 3000\nmax_connections_per_peer = 40\n";
    let server = serve(config, &[]);
    let addr = server.addr;
    // 300 slow clients: 30 from each of 127.0.0.2 … 127.0.0.11 (under the per-peer cap).
    let mut slow = Vec::new();
    for i in 0..300u16 {
        let from = [127, 0, 0, 2 + (i / 30) as u8];
        slow.push(slow_client(from, addr).await.expect("connect a slow client"));
    }
    // They trickle their headers, one byte each every 200 ms.
    let trickle = tokio::spawn(async move {
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            for s in &slow {
                let _ = s.try_write(b"E");
            }
        }
        slow
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let probe = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let (status, body) = get(addr, "/healthz", "");
        (status, body, started.elapsed())
    })
    .await
    .unwrap();
    assert_eq!((probe.0, probe.1.as_str()), (200, "ok\n"));
    assert!(probe.2 < Duration::from_secs(1), "/healthz took {:?} with 300 slow clients", probe.2);
    tokio::task::spawn_blocking(move || echo_over_mcp(addr, Duration::from_secs(1))).await.unwrap();

    // One address past its cap: answered 503 with Retry-After at once, nothing else held.
    let mut burst = Vec::new();
    for _ in 0..50 {
        burst.push(slow_client([127, 0, 0, 42], addr).await.expect("connect"));
    }
    let mut refused = 0;
    for s in &mut burst {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 128];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await
            && String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 503")
        {
            assert!(String::from_utf8_lossy(&buf[..n]).contains("Retry-After: 1"));
            refused += 1;
        }
    }
    assert_eq!(refused, 10, "50 connections from one address, 40 allowed: 10 refused at once");

    // The slow ones are cut off at the header timeout (3 s), well before the test's patience.
    let mut slow = trickle.await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut closed = 0;
    for s in &mut slow {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 256];
        let left = deadline.saturating_duration_since(Instant::now());
        // Closed (EOF or reset), possibly after a 408 the server wrote first.
        loop {
            match tokio::time::timeout(left, s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed += 1;
                    break;
                }
                Ok(Ok(_)) => continue,
                Err(_) => break,
            }
        }
    }
    assert_eq!(closed, 300, "every slow connection was closed by the server");
    // And the server still answers.
    let (status, _) = tokio::task::spawn_blocking(move || get(addr, "/healthz", "")).await.unwrap();
    assert_eq!(status, 200);
}

/// A request body sent a byte at a time is cut off at `[serve] body_timeout_ms`.
#[test]
fn a_slow_body_is_cut_off() {
    let config = "[mcp]\ntokens = [{ name = \"ci\", env = \"TOOLHOST_TEST_HTTP_TOKEN\" }]\n\n\
                  [serve]\nbody_timeout_ms = 1000\n";
    let server = serve(config, &[]);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{{",
        server.addr
    );
    s.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    // Keep trickling; the server must stop waiting on its own.
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let _ = s.write_all(b" ");
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
            }
            Err(_) => break,
        }
        if !raw.is_empty() && raw.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "the slow body was never cut off");
    }
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.starts_with("HTTP/1.1 200"), "a request whose body never came was served: {text}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "cut off before the timeout: {:?}",
        started.elapsed()
    );
}

/// #26 item 6: with no tokens, `/metrics` answered a request with a foreign Host or Origin (a
/// web page the operator visits could read it through DNS rebinding). Same checks as `/mcp` now.
#[test]
fn metrics_refuse_a_foreign_host_or_origin() {
    let server = serve("", &["--allow-origin", "http://localhost:3000"]);
    let addr = server.addr;
    assert_eq!(get(addr, "/metrics", "").0, 200);
    let foreign = |host: &str, extra: &str| {
        request(addr, &format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\n{extra}"), "").0
    };
    assert_eq!(foreign("rebound.example", ""), 403, "a rebound name");
    assert_eq!(foreign(&format!("rebound.example:{}", addr.port()), ""), 403);
    assert_eq!(foreign(&format!("localhost:{}", addr.port()), ""), 200, "localhost is allowed");
    assert_eq!(foreign(&addr.to_string(), "Origin: http://evil.example\r\n"), 403, "a foreign origin");
    assert_eq!(foreign(&addr.to_string(), "Origin: http://localhost:3000\r\n"), 200, "an allowed origin");
    // `/mcp` says the same about the same requests (rmcp's check).
    let mcp = |host: &str| {
        request(
            addr,
            &format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        )
        .0
    };
    assert_eq!(mcp("rebound.example"), 403);
}

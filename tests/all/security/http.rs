//! MCP over HTTP cannot be held down by slow clients; /metrics is guarded like /mcp.
//!
//! Each test runs the real `toolhost serve --mcp --http` on 127.0.0.1 (the slow clients come
//! from other loopback addresses, 127.0.0.2 and up, so the per-address cap can be seen apart
//! from the total one).

use crate::support::HttpServer;
use crate::support::http::{get, request};
use crate::support::mcp_http::echo_over_mcp;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const TOKEN: &str = "security-suite-token-0123456789";

/// `serve --mcp --http 127.0.0.1:0` with `config` as its toolhost.toml and `args` after it.
fn serve(config: &str, args: &[&str]) -> HttpServer {
    HttpServer::start(&[plugin_artifacts::TEXT], config, args, &[("TOOLHOST_TEST_HTTP_TOKEN", TOKEN)])
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
    tokio::task::spawn_blocking(move || echo_over_mcp(addr, Some(TOKEN), Duration::from_secs(1)))
        .await
        .unwrap();

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
        request(addr, "GET", "/metrics", &format!("Host: {host}\r\n{extra}"), "").status
    };
    assert_eq!(foreign("rebound.example", ""), 403, "a rebound name");
    assert_eq!(foreign(&format!("rebound.example:{}", addr.port()), ""), 403);
    assert_eq!(foreign(&format!("localhost:{}", addr.port()), ""), 200, "localhost is allowed");
    assert_eq!(foreign(&addr.to_string(), "Origin: http://evil.example\r\n"), 403, "a foreign origin");
    assert_eq!(foreign(&addr.to_string(), "Origin: http://localhost:3000\r\n"), 200, "an allowed origin");
    // `/mcp` says the same about the same requests (rmcp's check).
    let mcp = |host: &str| {
        let headers = format!(
            "Host: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        );
        request(addr, "POST", "/mcp", &headers, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).status
    };
    assert_eq!(mcp("rebound.example"), 403);
}

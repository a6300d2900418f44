//! MCP (issue #7), driven by the official MCP Python SDK over stdio and streamable HTTP. The
//! client script is `tests/mcp/client.py`; `cargo xtask test` installs the SDK into
//! `target/pyenv` (or set TOOLHOST_PYTHON to a Python that has `mcp` 1.x).

use crate::support::Env;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> PathBuf {
    let p = std::env::var_os("TOOLHOST_PYTHON")
        .map(PathBuf::from)
        .map(|p| if p.is_relative() && p.components().count() > 1 { root().join(p) } else { p })
        .unwrap_or_else(|| root().join("target/pyenv/bin/python"));
    let ok = Command::new(&p).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the MCP tests need Python with the `mcp` package at {}: run `cargo xtask test` (it installs it), \
         or set TOOLHOST_PYTHON",
        p.display()
    );
    p
}

fn mcp_env() -> Env {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    std::fs::write(env.ws("keep.txt"), "keep me").unwrap();
    std::fs::write(env.ws("other.txt"), "and me").unwrap();
    env
}

fn host_args(env: &Env) -> Vec<String> {
    vec![
        "--plugins".into(),
        env.plugins.path().display().to_string(),
        "--workspace".into(),
        env.workspace.path().display().to_string(),
        "--allow-write".into(),
        "files".into(),
        "serve".into(),
        "--mcp".into(),
        "--debounce-ms".into(),
        "100".into(),
    ]
}

fn client(env: &Env) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg(root().join("tests/mcp/client.py"))
        .arg("--plugins")
        .arg(env.plugins.path())
        .arg("--new-plugin")
        .arg(plugin_artifacts::VERSIONED)
        .current_dir(env.workspace.path())
        .env("XDG_CACHE_HOME", root().join("target/test-cache"));
    cmd
}

fn assert_passed(out: &std::process::Output, transport: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "MCP client over {transport} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("MCP checks passed ({transport})")), "{stdout}");
    assert!(stdout.lines().filter(|l| l.starts_with("ok: ")).count() >= 25, "{stdout}");
}

#[test]
fn official_python_client_over_stdio() {
    let env = mcp_env();
    let out = client(&env)
        .arg("stdio")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .args(host_args(&env))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_passed(&out, "stdio");
}

/// A running `serve --mcp --http 127.0.0.1:0`, killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
    log: std::sync::mpsc::Receiver<String>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server(env: &Env) -> HttpServer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(host_args(env))
        .args(["--http", "127.0.0.1:0"])
        .current_dir(env.workspace.path())
        .env("XDG_CACHE_HOME", root().join("target/test-cache"))
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
    // Owned from here on, so the process is killed and reaped on every path.
    let mut server = HttpServer { child, url: String::new(), log: rx };
    let mut seen = Vec::new();
    while server.url.is_empty() {
        let line = server
            .log
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no URL from serve: {seen:?}"));
        if let Some(rest) = line.split("MCP over streamable HTTP at ").nth(1) {
            server.url = rest.split(',').next().unwrap().to_string();
        }
        seen.push(line);
    }
    server
}

/// One raw HTTP request; returns the status code.
fn raw_post(url: &str, host_header: &str, origin: Option<&str>) -> u16 {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host_header}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn official_python_client_over_streamable_http() {
    let env = mcp_env();
    let server = http_server(&env);
    assert!(server.url.starts_with("http://127.0.0.1:"), "{}", server.url);
    let out = client(&env).arg("http").arg(&server.url).stdin(Stdio::null()).output().unwrap();
    if !out.status.success() {
        let log: Vec<String> = server.log.try_iter().collect();
        eprintln!("server log:\n{}", log.join("\n"));
    }
    assert_passed(&out, "http");

    // DNS-rebinding protection: a foreign Host or Origin is refused before any MCP handling.
    let authority = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    assert_eq!(raw_post(&server.url, &authority, None), 200, "a plain local request is served");
    assert_eq!(raw_post(&server.url, "evil.example.com", None), 403, "foreign Host header");
    assert_eq!(raw_post(&server.url, &authority, Some("http://evil.example.com")), 403, "foreign Origin");
}

/// Raw JSON-RPC over stdio, for what a well-behaved SDK never sends: a cancelled call stops
/// (the server logs it and answers the next request while the cancelled one would still be
/// sleeping), and a line of invalid UTF-8 or broken JSON does not end the session.
#[test]
fn cancellation_and_garbage_over_raw_stdio() {
    let env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::VERSIONED]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["-v", "--plugins"])
        .arg(env.plugins.path())
        .args(["serve", "--mcp"])
        .env("XDG_CACHE_HOME", root().join("target/test-cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (out_tx, out_rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = out_tx.send(line);
        }
    });
    let (err_tx, err_rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = err_tx.send(line);
        }
    });
    let mut send = |bytes: &[u8]| {
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let wait_for = |rx: &std::sync::mpsc::Receiver<String>, what: &str, secs: u64| -> Vec<String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(what);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(_) => break,
            }
        }
        panic!("no line containing {what:?} within {secs} s; saw:\n{}", seen.join("\n"));
    };
    send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
    wait_for(&out_rx, r#""id":1"#, 60);
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nap","arguments":{"ms":8000}}}"#,
    );
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user stopped it"}}"#);
    wait_for(&err_rx, "call cancelled by the client", 5);
    send(b"\xff\xfe this is not UTF-8 \xc3\x28");
    send(b"{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": ");
    send(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after the garbage"}}}"#);
    let lines = wait_for(&out_rx, "after the garbage", 5);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited for the cancelled call: {:?}",
        started.elapsed()
    );
    for line in &lines {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("stdout is not JSON-RPC ({e}): {line}"));
        assert_ne!(v["id"], 2, "a cancelled request must not be answered: {line}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

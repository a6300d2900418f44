//! MCP (issues #7 and #15), driven by the official MCP Python SDK over stdio and streamable
//! HTTP, in both generations: 1.x (`tests/mcp/client.py`, the handshake revisions) and 2.x
//! (`tests/mcp/client2.py`, in its default 2026-07-28 mode and in legacy mode). `cargo xtask
//! test` installs 1.x into `target/pyenv` and 2.x into `target/pyenv2` (or set TOOLHOST_PYTHON /
//! TOOLHOST_PYTHON2). Each run records its check count in `target/mcp-checks/` for the summary.

use crate::support::Env;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn python() -> PathBuf {
    python_with("TOOLHOST_PYTHON", "target/pyenv", "1.")
}

pub(crate) fn python2() -> PathBuf {
    python_with("TOOLHOST_PYTHON2", "target/pyenv2", "2.")
}

/// The Python named by `var` (or the venv under target/), checked to have `mcp` of `generation`.
fn python_with(var: &str, venv: &str, generation: &str) -> PathBuf {
    let p = std::env::var_os(var)
        .map(PathBuf::from)
        .map(|p| if p.is_relative() && p.components().count() > 1 { root().join(p) } else { p })
        .unwrap_or_else(|| root().join(venv).join("bin/python"));
    let version = Command::new(&p)
        .args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    assert!(
        version.starts_with(generation),
        "the MCP tests need Python with the `mcp` package {generation}x at {} (found {version:?}): run \
         `cargo xtask test` (it installs it), or set {var}",
        p.display()
    );
    p
}

/// Record a run's check count for the `cargo xtask test` summary.
fn record(label: &str, stdout: &str) {
    let n = stdout.lines().filter(|l| l.starts_with("ok: ")).count();
    let dir = root().join("target/mcp-checks");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(
        dir.join(format!("{}.txt", label.replace(' ', "-"))),
        format!("{label}: {n} checks\n"),
    );
}

pub(crate) fn mcp_env() -> Env {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    std::fs::write(env.ws("keep.txt"), "keep me").unwrap();
    std::fs::write(env.ws("other.txt"), "and me").unwrap();
    env
}

pub(crate) fn host_args(env: &Env) -> Vec<String> {
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

/// [`host_args`] for a server a Python client starts over stdio, in the workspace (its working
/// directory): with the operator's config named, so that no default `toolhost.toml` is looked
/// for in the workspace (which may not hold one: #55).
fn stdio_host_args(env: &Env) -> Vec<String> {
    let mut args = vec!["--config".to_string(), env.config_path().display().to_string()];
    args.extend(host_args(env));
    args
}

fn client(env: &Env) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg(root().join("tests/mcp/client.py"))
        .arg("--plugins")
        .arg(env.plugins.path())
        .arg("--new-plugin")
        .arg(plugin_artifacts::VERSIONED)
        .current_dir(env.workspace.path())
        .envs(crate::support::test_dirs());
    cmd
}

fn assert_passed(out: &std::process::Output, transport: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "MCP client over {transport} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("MCP checks passed ({transport})")), "{stdout}");
    assert!(stdout.lines().filter(|l| l.starts_with("ok: ")).count() >= 25, "{stdout}");
    record(&format!("sdk1 legacy {transport}"), &stdout);
}

#[test]
fn official_python_client_over_stdio() {
    let env = mcp_env();
    let out = client(&env)
        .arg("stdio")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .args(stdio_host_args(&env))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_passed(&out, "stdio");
}

/// A running `serve --mcp --http 127.0.0.1:0`, killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
    /// The local key it printed (no `[mcp] tokens`).
    key: Option<String>,
    log: std::sync::mpsc::Receiver<String>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server(env: &Env) -> HttpServer {
    http_server_with(env, &[], &[])
}

/// `serve --mcp --http 127.0.0.1:0` with `global` arguments before the subcommand and `vars` set.
fn http_server_with(env: &Env, global: &[&str], vars: &[(&str, &str)]) -> HttpServer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(global)
        .args(host_args(env))
        .args(["--http", "127.0.0.1:0"])
        .envs(vars.iter().copied())
        .current_dir(env.dir.path())
        .envs(crate::support::test_dirs())
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
    let mut server = HttpServer { child, url: String::new(), key: None, log: rx };
    let mut seen = Vec::new();
    while server.url.is_empty() {
        let line = server
            .log
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no URL from serve: {seen:?}"));
        if let Some(rest) = line.split("MCP over streamable HTTP at ").nth(1) {
            server.url = rest.split(',').next().unwrap().to_string();
        }
        server.key = server.key.take().or_else(|| crate::support::local_key(&line));
        seen.push(line);
    }
    server
}

/// One raw HTTP request; returns the status code.
fn raw_post(url: &str, host_header: &str, origin: Option<&str>) -> u16 {
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    raw_post_with(url, host_header, &origin).0
}

/// One raw `initialize` POST with `extra` header lines; returns the status and the response head.
fn raw_post_with(url: &str, host_header: &str, extra: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host_header}\r\n{extra}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).is_ok_and(|n| n == 1) {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let status =
        head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status: {head:?}"));
    (status, head)
}

#[test]
fn official_python_client_over_streamable_http() {
    let env = mcp_env();
    let server = http_server(&env);
    assert!(server.url.starts_with("http://127.0.0.1:"), "{}", server.url);
    // The operator's client: it sends the key printed at start, so it is asked to confirm.
    let key = server.key.clone().expect("a server without tokens prints its key");
    let out =
        client(&env).args(["--token", &key, "http", &server.url]).stdin(Stdio::null()).output().unwrap();
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

/// `toolhost GLOBAL… --plugins ENV serve --mcp`, spoken to in raw JSON-RPC lines: each line of
/// its stdout and of its stderr arrives on a channel of its own. Killed on drop.
struct RawStdio {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: std::sync::mpsc::Receiver<String>,
    err: std::sync::mpsc::Receiver<String>,
}

impl RawStdio {
    fn start(env: &Env, global: &[&str]) -> RawStdio {
        let mut child = env
            .command()
            .args(global)
            .args(["serve", "--mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = crate::service::lines(child.stdout.take().unwrap());
        let err = crate::service::lines(child.stderr.take().unwrap());
        let stdin = child.stdin.take().unwrap();
        RawStdio { child, stdin, out, err }
    }

    /// One line (`bytes` and a newline).
    fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(&[bytes, b"\n"].concat()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The lines `rx` gave until one containing `what` (the last), within `secs`.
    #[track_caller]
    fn wait_for(rx: &std::sync::mpsc::Receiver<String>, what: &str, secs: u64) -> Vec<String> {
        let mut seen = Vec::new();
        crate::service::wait_line(rx, what, secs, &mut seen);
        seen
    }

    /// The MCP handshake (2025-06-18), answered.
    fn initialize(&mut self) {
        self.send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
        Self::wait_for(&self.out, r#""id":1"#, 60);
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }
}

impl Drop for RawStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Raw JSON-RPC over stdio, for what a well-behaved SDK never sends: a cancelled call stops
/// (the server logs it and answers the next request while the cancelled one would still be
/// sleeping), and a line of invalid UTF-8 or broken JSON does not end the session.
#[test]
fn cancellation_and_garbage_over_raw_stdio() {
    let env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::VERSIONED]);
    let mut s = RawStdio::start(&env, &["-v"]);
    s.initialize();
    s.send(
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nap","arguments":{"ms":8000}}}"#,
    );
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user stopped it"}}"#);
    RawStdio::wait_for(&s.err, "call cancelled by the client", 5);
    s.send(b"\xff\xfe this is not UTF-8 \xc3\x28");
    s.send(b"{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": ");
    s.send(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after the garbage"}}}"#);
    let lines = RawStdio::wait_for(&s.out, "after the garbage", 5);
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
}

/// Serving MCP, the folder's watch starts only once a client has listed the tools (issue #33):
/// a plugin added after the first load, before that listing, is still picked up — the watch,
/// once up, compares the folder with what the read found — and the client is told.
#[test]
fn a_plugin_added_before_the_first_listing_is_seen_once_the_watch_starts() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let mut s = RawStdio::start(&env, &[]);
    s.initialize();
    // The first load is done (its additions printed) and nothing has listed the tools yet.
    RawStdio::wait_for(&s.err, "+ echo", 60);
    let tmp = env.plugins.path().join(".versioned.tmp");
    std::fs::copy(plugin_artifacts::VERSIONED, &tmp).unwrap();
    std::fs::rename(&tmp, env.plugins.path().join("versioned.wasm")).unwrap();
    s.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let first = RawStdio::wait_for(&s.out, r#""id":2"#, 60);
    assert!(first.last().unwrap().contains(r#""echo""#), "{first:?}");
    // The listing starts the watch, which finds the file the read did not have.
    RawStdio::wait_for(&s.out, "notifications/tools/list_changed", 60);
    s.send(br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    let after = RawStdio::wait_for(&s.out, r#""id":3"#, 60);
    assert!(after.last().unwrap().contains(r#""which""#), "the added plugin's tool is listed: {after:?}");
}

/// The bearer token the SDK 2.x HTTP runs use (set in the server's environment, named in its
/// config as `[mcp] tokens = [{ name = "ci", env = ... }]`).
const TEST_TOKEN: &str = "test-token-9f2c1e7a4b";

/// A config for the 2.x runs: a token from the environment and a 3 s approval lifetime (the
/// expiry check waits it out).
fn sdk2_config(env: &Env) -> PathBuf {
    let path = env.at("toolhost-mcp.toml");
    std::fs::write(
        &path,
        "[mcp]\napproval_ttl_s = 3\ntokens = [{ name = \"ci\", env = \"TOOLHOST_TEST_MCP_TOKEN\" }]\n",
    )
    .unwrap();
    path
}

fn client2(env: &Env, mode: &str) -> Command {
    let mut cmd = Command::new(python2());
    cmd.arg(root().join("tests/mcp/client2.py"))
        .args(["--mode", mode, "--expiry-s", "3", "--plugins"])
        .arg(env.plugins.path())
        .arg("--new-plugin")
        .arg(plugin_artifacts::VERSIONED)
        .current_dir(env.workspace.path())
        .envs(crate::support::test_dirs())
        .stdin(Stdio::null());
    cmd
}

fn assert_passed2(out: &std::process::Output, label: &str, server_log: &[String]) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "MCP client ({label}) failed:\n{stdout}\n{stderr}\nserver log:\n{}",
        server_log.join("\n")
    );
    assert!(stdout.contains(&format!("MCP checks passed ({label})")), "{stdout}");
    assert!(stdout.lines().filter(|l| l.starts_with("ok: ")).count() >= 35, "{stdout}");
    record(label, &stdout);
}

fn sdk2_over_stdio(mode: &str) {
    let env = mcp_env();
    let config = sdk2_config(&env);
    let out = client2(&env, mode)
        .arg("stdio")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&config)
        .args(host_args(&env))
        .env("TOOLHOST_TEST_MCP_TOKEN", TEST_TOKEN)
        .output()
        .unwrap();
    assert_passed2(&out, &format!("sdk2 {mode} stdio"), &[]);
}

fn sdk2_over_http(mode: &str) {
    let env = mcp_env();
    let config = sdk2_config(&env);
    let config = config.display().to_string();
    let server = http_server_with(
        &env,
        &["--config", &config],
        &[("TOOLHOST_TEST_MCP_TOKEN", TEST_TOKEN), ("TOOLHOST_LOG", "debug")],
    );
    let out =
        client2(&env, mode).args(["--token", TEST_TOKEN, "http", server.url.as_str()]).output().unwrap();
    let log: Vec<String> = server.log.try_iter().collect();
    assert_passed2(&out, &format!("sdk2 {mode} http"), &log);
    assert!(
        log.iter().any(|l| l.contains("token=\"ci\"") || l.contains("token=ci")),
        "the token name is logged:\n{}",
        log.join("\n")
    );
    assert!(
        !log.iter().any(|l| l.contains(TEST_TOKEN)),
        "the token value must never be logged:\n{}",
        log.join("\n")
    );
}

#[test]
fn official_python_sdk2_default_mode_over_stdio() {
    sdk2_over_stdio("auto");
}

#[test]
fn official_python_sdk2_legacy_mode_over_stdio() {
    sdk2_over_stdio("legacy");
}

#[test]
fn official_python_sdk2_default_mode_over_streamable_http_with_a_token() {
    sdk2_over_http("auto");
}

#[test]
fn official_python_sdk2_legacy_mode_over_streamable_http_with_a_token() {
    sdk2_over_http("legacy");
}

/// With `[mcp] tokens`, every request needs `Authorization: Bearer <token>`: 401 with a Bearer
/// challenge without one or with a wrong one; the Host/Origin checks still apply with a good one.
#[test]
fn streamable_http_requires_a_configured_bearer_token() {
    let env = mcp_env();
    let config = sdk2_config(&env).display().to_string();
    let server = http_server_with(&env, &["--config", &config], &[("TOOLHOST_TEST_MCP_TOKEN", TEST_TOKEN)]);
    let authority = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
    let good = format!("Authorization: Bearer {TEST_TOKEN}\r\n");

    let (status, head) = raw_post_with(&server.url, &authority, "");
    assert_eq!(status, 401, "{head}");
    assert!(head.to_lowercase().contains("www-authenticate: bearer"), "{head}");
    let (status, head) =
        raw_post_with(&server.url, &authority, "Authorization: Bearer wrong-token-0000000000\r\n");
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("invalid_token"), "{head}");
    let (status, _) =
        raw_post_with(&server.url, &authority, &format!("Authorization: Basic {TEST_TOKEN}\r\n"));
    assert_eq!(status, 401, "only the Bearer scheme");
    let (status, head) = raw_post_with(&server.url, &authority, &good);
    assert_eq!(status, 200, "{head}");
    let (status, _) = raw_post_with(&server.url, "evil.example.com", &good);
    assert_eq!(status, 403, "a foreign Host is refused even with a token");
    let (status, _) =
        raw_post_with(&server.url, &authority, &format!("{good}Origin: http://evil.example.com\r\n"));
    assert_eq!(status, 403, "a foreign Origin is refused even with a token");
}

/// Binding beyond loopback without a token is refused unless the operator says so explicitly;
/// a token value in the config file itself is not accepted.
#[test]
fn exposure_without_a_token_is_refused_and_tokens_stay_out_of_the_config() {
    let env = mcp_env();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(host_args(&env))
        .args(["--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("--allow-unauthenticated-remote") && stderr.contains("[mcp] tokens"), "{stderr}");

    let bad = env.at("literal.toml");
    std::fs::write(&bad, "[mcp]\ntokens = [{ name = \"ci\", value = \"abcdefghijklmnopqrstuvwxyz\" }]\n")
        .unwrap();
    let e = toolhost::Settings::load(Some(&bad)).unwrap_err().to_string();
    assert!(e.contains("value"), "{e}");
    std::fs::write(&bad, "[mcp]\ntokens = [{ name = \"ci\" }]\n").unwrap();
    let e = toolhost::Settings::load(Some(&bad)).unwrap_err().to_string();
    assert!(e.contains("mcp.tokens[0]") && e.contains("never goes in the config file"), "{e}");
    std::fs::write(&bad, "[mcp]\ntokens = [{ name = \"ci\", secret = \"nope\" }]\n").unwrap();
    let e = toolhost::Settings::load(Some(&bad)).unwrap_err().to_string();
    assert!(e.contains("no secret `nope`"), "{e}");
    std::fs::write(
        &bad,
        "[secrets.mcp_ci]\nenv = \"X\"\n[mcp]\ntokens = [{ name = \"ci\", secret = \"mcp_ci\" }]\n",
    )
    .unwrap();
    let cfg = toolhost::Settings::load(Some(&bad)).unwrap();
    assert_eq!(cfg.frontends.mcp.tokens[0].0, "ci");

    // A token too short to be one is refused at start.
    let short = env.at("short.toml");
    std::fs::write(&short, "[mcp]\ntokens = [{ name = \"ci\", env = \"TOOLHOST_TEST_SHORT\" }]\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&short)
        .args(host_args(&env))
        .args(["--http", "127.0.0.1:0"])
        .env("TOOLHOST_TEST_SHORT", "short-token")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("at least 16 characters"), "{stderr}");
    assert!(!stderr.contains("short-token"), "the value is not echoed: {stderr}");
}

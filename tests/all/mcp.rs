//! MCP (issues #7 and #15), driven by the official MCP Python SDK over stdio and streamable
//! HTTP, in both generations: 1.x (`tests/mcp/client.py`, the handshake revisions) and 2.x
//! (`tests/mcp/client2.py`, in its default 2026-07-28 mode and in legacy mode). `cargo xtask
//! test` installs 1.x into `target/pyenv` and 2.x into `target/pyenv2` (or set TOOLHOST_PYTHON /
//! TOOLHOST_PYTHON2). Each run records its check count in `target/mcp-checks/` for the summary.

use crate::support::lines::spawn_piped;
use crate::support::mcp_http::INITIALIZE;
use crate::support::python::mcp_script;
use crate::support::server::Killed;
use crate::support::{Env, Server, root, wait_line};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

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

/// After [`Env::command`]: `files` may write the workspace, `serve --mcp`, a short debounce.
pub(crate) const SERVE_ARGS: [&str; 6] = ["--allow-write", "files", "serve", "--mcp", "--debounce-ms", "100"];

/// `tests/mcp/client.py` (SDK 1.x), which adds `--new-plugin` to the folder.
fn client(env: &Env) -> Command {
    let mut cmd = mcp_script(1, "client.py", env);
    cmd.arg("--plugins").arg(env.plugins.path()).arg("--new-plugin").arg(plugin_artifacts::VERSIONED);
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
    let out = client(&env).arg("stdio").args(env.command_line()).args(SERVE_ARGS).output().unwrap();
    assert_passed(&out, "stdio");
}

fn http_server(env: &Env) -> Server {
    http_server_with(env, &[], &[])
}

/// `serve --mcp --http 127.0.0.1:0` with `global` arguments before the subcommand and `vars` set.
fn http_server_with(env: &Env, global: &[&str], vars: &[(&str, &str)]) -> Server {
    Server::start(
        env.command()
            .args(global)
            .args(SERVE_ARGS)
            .args(["--http", "127.0.0.1:0"])
            .envs(vars.iter().copied()),
    )
}

/// One raw `initialize` POST with `host` as its `Host` and the `extra` header lines; returns the
/// status and the response head.
fn raw_post_with(server: &Server, host: &str, extra: &str) -> (u16, String) {
    let headers = format!(
        "Host: {host}\r\n{extra}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    );
    let a = server.request("POST", "/mcp", &headers, INITIALIZE);
    (a.status, a.head)
}

/// [`raw_post_with`] with an `Origin`, if any: the status.
fn raw_post(server: &Server, host: &str, origin: Option<&str>) -> u16 {
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    raw_post_with(server, host, &origin).0
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
    let authority = server.addr.to_string();
    assert_eq!(raw_post(&server, &authority, None), 200, "a plain local request is served");
    assert_eq!(raw_post(&server, "evil.example.com", None), 403, "foreign Host header");
    assert_eq!(raw_post(&server, &authority, Some("http://evil.example.com")), 403, "foreign Origin");
}

/// `toolhost GLOBAL… --plugins ENV serve --mcp`, spoken to in raw JSON-RPC lines: each line of
/// its stdout and of its stderr arrives on a channel of its own. Killed on drop.
pub(crate) struct RawStdio {
    _process: Killed,
    stdin: std::process::ChildStdin,
    pub(crate) out: std::sync::mpsc::Receiver<String>,
    pub(crate) err: std::sync::mpsc::Receiver<String>,
}

impl RawStdio {
    pub(crate) fn start(env: &Env, global: &[&str]) -> RawStdio {
        let (child, stdin, out, err) = spawn_piped(env.command().args(global).args(["serve", "--mcp"]));
        RawStdio { _process: Killed(child), stdin, out, err }
    }

    /// One line (`bytes` and a newline).
    pub(crate) fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(&[bytes, b"\n"].concat()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The lines `rx` gave until one containing `what` (the last), within `secs`.
    #[track_caller]
    pub(crate) fn wait_for(rx: &std::sync::mpsc::Receiver<String>, what: &str, secs: u64) -> Vec<String> {
        let mut seen = Vec::new();
        wait_line(rx, what, secs, &mut seen);
        seen
    }

    /// The MCP handshake (2025-06-18), answered.
    pub(crate) fn initialize(&mut self) {
        self.send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
        Self::wait_for(&self.out, r#""id":1"#, 60);
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
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
/// Written as the operator's `toolhost.toml`: its path.
fn sdk2_config(env: &Env) -> PathBuf {
    let path = env.at("toolhost.toml");
    std::fs::write(
        &path,
        "[mcp]\napproval_ttl_s = 3\ntokens = [{ name = \"ci\", env = \"TOOLHOST_TEST_MCP_TOKEN\" }]\n",
    )
    .unwrap();
    path
}

/// `tests/mcp/client2.py` (SDK 2.x) in `mode`, which adds `--new-plugin` to the folder.
fn client2(env: &Env, mode: &str) -> Command {
    let mut cmd = mcp_script(2, "client2.py", env);
    cmd.args(["--mode", mode, "--expiry-s", "3", "--plugins"])
        .arg(env.plugins.path())
        .arg("--new-plugin")
        .arg(plugin_artifacts::VERSIONED);
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
    sdk2_config(&env);
    let out = client2(&env, mode)
        .arg("stdio")
        .args(env.command_line())
        .args(SERVE_ARGS)
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
    let authority = server.addr.to_string();
    let good = format!("Authorization: Bearer {TEST_TOKEN}\r\n");

    let (status, head) = raw_post_with(&server, &authority, "");
    assert_eq!(status, 401, "{head}");
    assert!(head.to_lowercase().contains("www-authenticate: bearer"), "{head}");
    let (status, head) =
        raw_post_with(&server, &authority, "Authorization: Bearer wrong-token-0000000000\r\n");
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("invalid_token"), "{head}");
    let (status, _) = raw_post_with(&server, &authority, &format!("Authorization: Basic {TEST_TOKEN}\r\n"));
    assert_eq!(status, 401, "only the Bearer scheme");
    let (status, head) = raw_post_with(&server, &authority, &good);
    assert_eq!(status, 200, "{head}");
    let (status, _) = raw_post_with(&server, "evil.example.com", &good);
    assert_eq!(status, 403, "a foreign Host is refused even with a token");
    let (status, _) =
        raw_post_with(&server, &authority, &format!("{good}Origin: http://evil.example.com\r\n"));
    assert_eq!(status, 403, "a foreign Origin is refused even with a token");
}

/// Binding beyond loopback without a token is refused unless the operator says so explicitly;
/// a token value in the config file itself is not accepted.
#[test]
fn exposure_without_a_token_is_refused_and_tokens_stay_out_of_the_config() {
    let env = mcp_env();
    let out =
        env.command().args(SERVE_ARGS).args(["--http", "0.0.0.0:0"]).stdin(Stdio::null()).output().unwrap();
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
    let out = env
        .command()
        .arg("--config")
        .arg(&short)
        .args(SERVE_ARGS)
        .args(["--http", "127.0.0.1:0"])
        .env("TOOLHOST_TEST_SHORT", "short-token")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("at least 16 characters"), "{stderr}");
    assert!(!stderr.contains("short-token"), "the value is not echoed: {stderr}");
}

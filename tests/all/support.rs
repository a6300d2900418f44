//! Shared set-up: one engine for the whole test binary, temp plugin folders and workspaces.

pub mod mcp_http;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use toolhost_core::engine::Runtime;
use toolhost_core::executor::{AlwaysConfirm, Confirm, NoConfirm};
use toolhost_core::settings::Config;
use toolhost_core::{Outcome, Registry, ToolCall, Toolhost};

/// The environment every `toolhost` (or MCP client) process a test starts gets: the compile
/// cache and the state folder (the audit trail) under `target/`, shared by the whole suite so a
/// plugin compiles once and nothing is written to the user's own folders.
pub fn test_dirs() -> [(&'static str, PathBuf); 2] {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    [("XDG_CACHE_HOME", target.join("test-cache")), ("XDG_STATE_HOME", target.join("test-state"))]
}

/// The `toolhost` binary with the test binary's own cache and state folders ([`test_dirs`]):
/// add the rest.
pub fn toolhost() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.envs(test_dirs());
    cmd
}

/// One engine per test process; compiled components are cached in it by content hash, so
/// each plugin is compiled once however many tests load it.
pub fn runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    // The production configuration: a pooling allocator (sized for the concurrency of the
    // test binary's hosts) in front of a semaphore.
    RT.get_or_init(|| {
        let pool = toolhost_core::engine::Pool { concurrent_calls: 256, max_memory_mb: 256 };
        Runtime::with_options(512, None, Some(pool)).expect("engine")
    })
    .clone()
}

/// A plugins folder, a workspace and the operator's folder, all temporary. The operator's
/// folder (`dir`) is where commands run and a test's `toolhost.toml` and the grants file live:
/// never the workspace, which may not hold the host's own files (#55).
pub struct Env {
    pub plugins: tempfile::TempDir,
    pub workspace: tempfile::TempDir,
    pub dir: tempfile::TempDir,
    pub config: Config,
}

impl Env {
    /// A folder holding copies of `wasm` files (paths from `plugin_artifacts`).
    pub fn with(wasm: &[&str]) -> Env {
        let plugins = tempfile::tempdir().unwrap();
        for w in wasm {
            let src = Path::new(w);
            std::fs::copy(src, plugins.path().join(src.file_name().unwrap())).unwrap();
        }
        let workspace = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        // The test binary's own cache (the folder index, compiled code), never the user's.
        let cache = test_dirs()[0].1.join("toolhost");
        let mut config = Config {
            plugins_dir: plugins.path().to_path_buf(),
            cache_dir: Some(cache),
            grants_file: dir.path().join(toolhost_core::settings::grants::GRANTS_FILE),
            ..Config::default()
        };
        config.set_workspace(workspace.path());
        Env { plugins, workspace, dir, config }
    }

    /// The `toolhost` binary with this folder and workspace (`--plugins`, `--workspace`), run
    /// in the operator's folder with the test binary's own cache and state folders: add the rest.
    pub fn command(&self) -> std::process::Command {
        let mut cmd = toolhost();
        cmd.arg("--plugins")
            .arg(self.plugins.path())
            .arg("--workspace")
            .arg(self.workspace.path())
            .current_dir(self.dir.path());
        cmd
    }

    pub fn ws(&self, rel: &str) -> PathBuf {
        self.workspace.path().join(rel)
    }

    /// The operator's `toolhost.toml` (created empty if a test wrote none), for `--config`: a
    /// command whose working directory is the workspace must not read or protect a default one
    /// there.
    pub fn config_path(&self) -> PathBuf {
        let path = self.at("toolhost.toml");
        if !path.exists() {
            std::fs::write(&path, "").unwrap();
        }
        path
    }

    /// A path in the operator's folder (`toolhost.toml`, the grants file, an audit trail).
    pub fn at(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The whole settings of a command run with this config (no front-end or registry
    /// sections).
    pub fn settings(&self) -> toolhost::Settings {
        toolhost::Settings {
            core: self.config.clone(),
            frontends: Default::default(),
            registries: Default::default(),
            flag_plugins: Vec::new(),
        }
    }

    pub fn registry(&self) -> Registry {
        Registry::load(&runtime(), &self.config).expect("scan plugins folder")
    }

    /// A host that denies dangerous calls (no one to ask).
    pub fn host(&self) -> Toolhost {
        self.host_with(Arc::new(NoConfirm))
    }

    /// A host whose operator confirmed dangerous calls up front.
    pub fn host_yes(&self) -> Toolhost {
        self.host_with(Arc::new(AlwaysConfirm))
    }

    pub fn host_with(&self, confirm: Arc<dyn Confirm>) -> Toolhost {
        Toolhost::from_parts(runtime(), Arc::new(self.config.clone()), self.registry(), confirm)
    }
}

pub async fn call(host: &Toolhost, name: &str, args: &[&str]) -> Outcome {
    host.call(&ToolCall::new(name, args.iter().copied())).await
}

/// Assert success and return the data.
#[track_caller]
pub fn ok(o: &Outcome) -> String {
    assert!(o.success, "expected success, got {o:?}");
    o.data.clone().unwrap()
}

/// Assert failure of `kind` and return the error text.
#[track_caller]
pub fn err(o: &Outcome, kind: toolhost_core::ErrorKind) -> String {
    assert!(!o.success, "expected failure {kind:?}, got {o:?}");
    assert_eq!(o.kind, Some(kind), "wrong kind: {o:?}");
    o.error.clone().unwrap()
}

/// A `.wasm` component built from WAT text, with an optional manifest section appended.
pub fn component(wat: &str, manifest: Option<&str>) -> Vec<u8> {
    let mut bytes = wat::parse_str(wat).expect("valid wat");
    if let Some(m) = manifest {
        append_custom_section(&mut bytes, toolhost_spec::manifest::SECTION, m.as_bytes());
    }
    bytes
}

pub fn append_custom_section(bytes: &mut Vec<u8>, name: &str, data: &[u8]) {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(data);
    bytes.push(0);
    leb(payload.len(), bytes);
    bytes.extend_from_slice(&payload);
}

/// A running `toolhost serve --mcp --http 127.0.0.1:0` (killed when dropped), with its own
/// config folder, which is also its state folder: the audit trail is `dir/toolhost/audit.jsonl`.
pub struct HttpServer {
    pub child: std::process::Child,
    pub addr: std::net::SocketAddr,
    /// Its stderr, line by line (kept: the server's log is not cut off).
    pub _log: std::sync::mpsc::Receiver<String>,
    pub dir: tempfile::TempDir,
    /// Its plugins folder and workspace, kept while it runs.
    pub _env: Env,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServer {
    /// With the plugins `wasm`, `config` as its toolhost.toml, `args` after `serve --mcp --http
    /// 127.0.0.1:0` and the variables `vars`; returns once it says where it listens.
    pub fn start(wasm: &[&str], config: &str, args: &[&str], vars: &[(&str, &str)]) -> HttpServer {
        use std::io::BufRead;
        let env = Env::with(wasm);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        let mut child = env
            .command()
            .arg("--config")
            .arg(dir.path().join("toolhost.toml"))
            .args(["serve", "--mcp", "--http", "127.0.0.1:0"])
            .args(args)
            .envs(vars.iter().copied())
            .env("XDG_STATE_HOME", dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, log) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let addr = loop {
            let line = log
                .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
                .expect("serve did not say where it listens");
            if let Some(rest) = line.split("MCP over streamable HTTP at http://").nth(1) {
                break rest.split('/').next().unwrap().parse().unwrap();
            }
        };
        HttpServer { child, addr, _log: log, dir, _env: env }
    }

    /// The server's resident memory now (`VmRSS`), in KiB.
    pub fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmRSS in:\n{status}"))
    }

    /// The lines of its audit trail written so far.
    pub fn audit(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir.path().join("toolhost/audit.jsonl")).unwrap_or_default();
        // A line being written has no newline yet.
        let whole = text.rfind('\n').map_or("", |end| &text[..end]);
        whole
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line is not JSON ({e}): {l}")))
            .collect()
    }
}

/// A TCP connection to `to` from the loopback address `from` (127.0.0.2 and up stand for other
/// machines: the server's per-address caps see them apart).
pub fn connect_from(from: [u8; 4], to: std::net::SocketAddr) -> std::net::TcpStream {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let rt = RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap());
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(std::net::SocketAddr::from((from, 0))).unwrap();
        let stream = socket.connect(to).await.unwrap();
        stream.into_std().unwrap()
    });
    stream.set_nonblocking(false).unwrap();
    stream
}

/// One request on a fresh connection from 127.0.0.1 (`head_lines`: the request line and
/// headers, each ending in CRLF); the status, head and body of the answer.
pub fn request(addr: std::net::SocketAddr, head_lines: &str, body: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let req = format!("{head_lines}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").map_or(raw.len(), |at| at + 4);
    let head = String::from_utf8_lossy(&raw[..at]).trim_end().to_string();
    let chunked = header(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let body = if chunked { dechunk(&raw[at..]).unwrap_or_default() } else { raw[at..].to_vec() };
    let status =
        head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("no status: {head:?}"));
    (status, head, String::from_utf8_lossy(&body).to_string())
}

/// `GET path` with the extra header lines `extra`; the status and body.
pub fn get(addr: std::net::SocketAddr, path: &str, extra: &str) -> (u16, String) {
    let (status, _, body) = request(addr, &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}"), "");
    (status, body)
}

/// The headers of an MCP `POST` (with the bearer `token`, if any, and the session, if any).
pub fn mcp_headers(addr: std::net::SocketAddr, token: Option<&str>, session: Option<&str>) -> String {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-06-18\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{session}"
    )
}

/// The JSON-RPC message of an MCP answer's body: plain JSON, or the one in an SSE event.
pub fn json_rpc(body: &str) -> Option<serde_json::Value> {
    body.lines().filter_map(|l| l.strip_prefix("data:")).chain(std::iter::once(body)).find_map(|l| {
        serde_json::from_str::<serde_json::Value>(l.trim()).ok().filter(|v| v.get("jsonrpc").is_some())
    })
}

/// An MCP POST (with `token`, in `session`); the status, head and JSON-RPC message of the answer.
pub fn mcp_post(
    addr: std::net::SocketAddr,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> (u16, String, Option<serde_json::Value>) {
    let (status, head, body) = request(addr, &mcp_headers(addr, token, session), body);
    (status, head, json_rpc(&body))
}

/// The value of header `name` in a response's head.
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
    })
}

/// A 2025-06-18 `initialize` (request id 1) from a client named `raw`.
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// A new MCP session (initialize, initialized) with `token`; its id.
pub fn open_session(addr: std::net::SocketAddr, token: Option<&str>) -> String {
    let (status, head, _) = mcp_post(addr, token, None, INITIALIZE);
    assert_eq!(status, 200, "{head}");
    let session = header(&head, "mcp-session-id").expect("a session id");
    let (status, head, _) =
        mcp_post(addr, token, Some(&session), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(status, 202, "{head}");
    session
}

/// A whole MCP exchange with `token`: initialize, initialized, `echo` (of the `text` plugin) —
/// all of it answered within `within`.
pub fn echo_over_mcp(addr: std::net::SocketAddr, token: Option<&str>, within: std::time::Duration) {
    let started = std::time::Instant::now();
    let session = open_session(addr, token);
    echo_in(addr, token, &session);
    assert!(started.elapsed() < within, "the MCP exchange took {:?}", started.elapsed());
}

/// `echo` in an open session, answered.
pub fn echo_in(addr: std::net::SocketAddr, token: Option<&str>, session: &str) {
    let (status, head, body) = request(
        addr,
        &mcp_headers(addr, token, Some(session)),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still served"}}}"#,
    );
    assert_eq!(status, 200, "{head}");
    let answer = json_rpc(&body).unwrap_or_else(|| panic!("no answer to tools/call: {head}\n{body}"));
    assert_eq!(answer["result"]["content"][0]["text"], "still served", "{answer}");
}

/// The next answer on a keep-alive connection (a body of known length or chunked): status,
/// head and body; `None` if none came within `within`.
pub fn read_answer(
    s: &mut std::net::TcpStream,
    within: std::time::Duration,
) -> Option<(u16, String, String)> {
    use std::io::Read;
    let deadline = std::time::Instant::now() + within;
    let mut raw: Vec<u8> = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..at]).to_string();
            let rest = &raw[at + 4..];
            let body = if let Some(n) = header(&head, "content-length").and_then(|v| v.parse::<usize>().ok())
            {
                (rest.len() >= n).then(|| rest[..n].to_vec())
            } else if header(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
                dechunk(rest)
            } else {
                Some(rest.to_vec())
            };
            if let Some(body) = body {
                let status = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
                return Some((status, head, String::from_utf8_lossy(&body).to_string()));
            }
        }
        let left = deadline.checked_duration_since(std::time::Instant::now())?;
        s.set_read_timeout(Some(left.max(std::time::Duration::from_millis(1)))).unwrap();
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
}

/// A whole chunked body, once all of it is in `raw`.
fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let at = raw.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..at]).ok()?.split(';').next()?.trim(), 16)
            .ok()?;
        raw = &raw[at + 2..];
        if size == 0 {
            return Some(out);
        }
        if raw.len() < size + 2 {
            return None;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// The local key a `serve --http` without `[mcp] tokens` printed at start, if `line` is the
/// line that carries it (`… Authorization: Bearer KEY …`).
pub fn local_key(line: &str) -> Option<String> {
    let rest = line.split("Authorization: Bearer ").nth(1)?;
    let key: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    (key.len() == 64).then_some(key)
}

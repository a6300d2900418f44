//! A `toolhost serve … --http ADDR` process, written once: started, where it serves MCP and the
//! local key it printed read from its log, its log drained on (so it never blocks on a full
//! pipe), killed when dropped.

use super::Env;
use super::http::{self, Answer};
use super::lines::{lines, poll, wait_line};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a server may take to say where it serves: a cold compile cache compiles every
/// plugin first (the Python one is 18 MiB).
const STARTUP: Duration = Duration::from_secs(300);

/// A server just started: where it serves, what it said so far, and its stderr, unread after the
/// line that named its URL. The caller owns the process (see [`Killed`]).
pub struct Started {
    pub child: Child,
    /// Its MCP endpoint, `http://ADDR/mcp` (an address bound to every interface is reached on
    /// loopback).
    pub url: String,
    pub addr: SocketAddr,
    /// The local key it printed (a server without `[mcp] tokens` draws one).
    pub key: Option<String>,
    /// Its stderr up to and with the line that named its URL.
    pub seen: Vec<String>,
    pub stderr: BufReader<ChildStderr>,
}

/// Spawn `cmd` (a `toolhost … serve … --http ADDR`; stdin and stdout to nothing, stderr piped)
/// and read its stderr until it says where it serves MCP.
#[track_caller]
pub fn launch(cmd: &mut Command) -> Started {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn toolhost");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let said = seen.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
            let l = line.trim_end_matches(['\r', '\n']).to_string();
            line.clear();
            let url = l
                .split("MCP over streamable HTTP at ")
                .nth(1)
                .map(|rest| rest.split(',').next().unwrap().trim().to_string());
            said.lock().unwrap().push(l);
            if let Some(url) = url {
                let _ = tx.send((url, stderr));
                return;
            }
        }
    });
    let Ok((url, stderr)) = rx.recv_timeout(STARTUP) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("serve did not say where it serves MCP; it said:\n{}", seen.lock().unwrap().join("\n"));
    };
    let url = url.replace("0.0.0.0", "127.0.0.1");
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let key = seen.iter().find_map(|l| local_key(l));
    Started { child, url, addr, key, seen, stderr }
}

/// The local key a `serve --http` without `[mcp] tokens` printed at start, if `line` is the
/// line that carries it (`… Authorization: Bearer KEY …`).
pub fn local_key(line: &str) -> Option<String> {
    let rest = line.split("Authorization: Bearer ").nth(1)?;
    let key: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    (key.len() == 64).then_some(key)
}

/// A running server (see [`launch`]), its stderr read on as it comes; killed when dropped (its
/// log shown if the test failed).
pub struct Server {
    pub child: Child,
    pub url: String,
    pub addr: SocketAddr,
    pub key: Option<String>,
    /// What it said up to its URL, and what [`Server::wait_line`] read since.
    pub seen: Vec<String>,
    /// The rest of its stderr, line by line.
    pub log: Receiver<String>,
}

impl Server {
    #[track_caller]
    pub fn start(cmd: &mut Command) -> Server {
        let Started { child, url, addr, key, seen, stderr } = launch(cmd);
        Server { child, url, addr, key, seen, log: lines(stderr) }
    }

    /// One request to it (see [`http::request`]).
    #[track_caller]
    pub fn request(&self, method: &str, path: &str, headers: &str, body: &str) -> Answer {
        http::request(self.addr, method, path, headers, body)
    }

    /// `GET path`: the status and body.
    #[track_caller]
    pub fn get(&self, path: &str) -> (u16, String) {
        http::get(self.addr, path, "")
    }

    /// The `Authorization` line of the operator's own client: the key the server printed, or
    /// nothing if it printed none.
    pub fn operator(&self) -> String {
        self.key.as_deref().map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default()
    }

    /// The next line of its log containing `what` within `secs` (kept in `seen`).
    #[track_caller]
    pub fn wait_line(&mut self, what: &str, secs: u64) -> String {
        wait_line(&self.log, what, secs, &mut self.seen)
    }

    /// SIGTERM, then its exit status once it has exited (within `secs`).
    #[track_caller]
    pub fn terminate(&mut self, secs: u64) -> ExitStatus {
        sigterm(&self.child);
        exit_status(&mut self.child, secs)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            let rest: Vec<String> = self.log.try_iter().collect();
            eprintln!("{} said:\n{}\n{}", self.url, self.seen.join("\n"), rest.join("\n"));
        }
    }
}

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn sigterm(child: &Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
}

/// Wait for `child` to exit within `secs`.
#[track_caller]
pub fn exit_status(child: &mut Child, secs: u64) -> ExitStatus {
    poll(secs, "the server to exit", || child.try_wait().unwrap())
}

/// A running `toolhost serve --mcp --http 127.0.0.1:0` in an environment of its own (killed when
/// dropped), with its own config folder, which is also its state folder: the audit trail is
/// `dir/toolhost/audit.jsonl`.
pub struct HttpServer {
    pub server: Server,
    pub dir: tempfile::TempDir,
    /// Its plugins folder and workspace, kept while it runs.
    pub _env: Env,
}

impl std::ops::Deref for HttpServer {
    type Target = Server;

    fn deref(&self) -> &Server {
        &self.server
    }
}

impl HttpServer {
    /// With the plugins `wasm`, `config` as its toolhost.toml, `args` after `serve --mcp --http
    /// 127.0.0.1:0` and the variables `vars`; returns once it says where it listens.
    #[track_caller]
    pub fn start(wasm: &[&str], config: &str, args: &[&str], vars: &[(&str, &str)]) -> HttpServer {
        let env = Env::with(wasm);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        let server = Server::start(
            env.command()
                .arg("--config")
                .arg(dir.path().join("toolhost.toml"))
                .args(["serve", "--mcp", "--http", "127.0.0.1:0"])
                .args(args)
                .envs(vars.iter().copied())
                .env("XDG_STATE_HOME", dir.path()),
        );
        HttpServer { server, dir, _env: env }
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

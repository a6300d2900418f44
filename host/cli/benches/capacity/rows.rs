//! `TOOLHOST_BENCH_ONLY=capacity` (#30): what one `serve --mcp --http` replica holds, and MCP
//! HTTP calls/s through nginx with one replica and with three.
//!
//! Capacity: CLIENTS MCP clients at once against one replica, half of them 2025 sessions
//! (`initialize`, then calls with their `Mcp-Session-Id`) and half 2026-07-28 stateless, each
//! calling `tick(1, 50 ms)` every 200–400 ms for DURATION, with `[limits] concurrency = 200`:
//! every answer must be a result or the documented overload answer (`503` + `Retry-After`, or a
//! call answered `[busy]`; a call waits for a slot within its own time limit, so an overloaded
//! replica answers later rather than busy: the answer times show it). Memory is the replica's RSS (`/proc/PID/status`): at rest, with the
//! sessions open and idle (per idle session), at the peak of calls in flight (per call in
//! flight, from `/metrics`), once `[mcp] session_idle_s` has closed the sessions (glibc keeps
//! freed pages, so RSS does not fall back), and after as many new sessions (which reuse them).
//! `TOOLHOST_BENCH_QUICK=1`: 100 clients for 8 s (a smoke run, also in a debug build:
//! `cargo test --workspace --bench bench` with `TOOLHOST_BENCH_ONLY=capacity`).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// A `serve --mcp --http` replica, killed on drop.
struct Replica {
    child: Child,
    url: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    fn start(dir: &Path, plugins: &Path, ws: &Path, config: &str, addr: &str) -> Replica {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = dir.join(format!("capacity-{}.toml", N.fetch_add(1, Relaxed)));
        std::fs::write(&path, config).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--config")
            .arg(&path)
            .arg("--plugins")
            .arg(plugins)
            .arg("--workspace")
            .arg(ws)
            .args(["--allow-write", "ticker", "serve", "--mcp", "--http", addr])
            .env("XDG_STATE_HOME", dir.join("state"))
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let l = err.next().expect("serve exited before listening").unwrap();
            if let Some(at) = l.find("http://").filter(|_| l.contains("/mcp,")) {
                break l[at..].split_whitespace().next().unwrap().trim_end_matches(',').to_string();
            }
        };
        std::thread::spawn(move || for _ in err.by_ref() {});
        Replica { child, url }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }
}

/// How the clients fared.
#[derive(Default)]
struct Tally {
    ok: AtomicUsize,
    /// `503` + `Retry-After`, or a call answered `[busy]`.
    busy: AtomicUsize,
    other: AtomicUsize,
    first_other: std::sync::Mutex<Option<String>>,
    /// Each answer's time, request to full answer.
    times: std::sync::Mutex<Vec<Duration>>,
}

impl Tally {
    fn other(&self, why: String) {
        self.other.fetch_add(1, Relaxed);
        self.first_other.lock().unwrap().get_or_insert(why);
    }

    /// Count one answer.
    fn count(&self, status: u16, retry_after: bool, body: &str) {
        if status == 503 && retry_after {
            self.busy.fetch_add(1, Relaxed);
        } else if status != 200 {
            self.other(format!("HTTP {status}: {body}"));
        } else if body.contains("[busy]") {
            self.busy.fetch_add(1, Relaxed);
        } else if body.contains("\"isError\":true") || body.contains("\"error\"") {
            self.other(body.to_string());
        } else {
            self.ok.fetch_add(1, Relaxed);
        }
    }
}

fn tick_call(id: u64, modern: bool) -> Value {
    let mut params = json!({"name": "tick", "arguments": {"n": 1, "ms": 50, "trail": ""}});
    if modern {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "capacity", "version": "0"},
        });
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    version: &str,
    session: Option<&str>,
    body: &Value,
) -> Result<(u16, bool, String, Option<String>), String> {
    let mut r = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version);
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    if version == "2026-07-28" {
        r = r.header("mcp-method", "tools/call").header("mcp-name", "tick");
    }
    let resp = r.body(body.to_string()).send().await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let retry_after = resp.headers().contains_key("retry-after");
    let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let text = resp.text().await.map_err(|e| e.to_string())?;
    Ok((status, retry_after, text, session))
}

/// A 2025 session opened on `url`: its id.
async fn open_session(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "capacity", "version": "0"}}});
    let (status, _, text, session) = post(client, url, "2025-06-18", None, &init).await?;
    let session = session.ok_or_else(|| format!("no session (HTTP {status}): {text}"))?;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(client, url, "2025-06-18", Some(&session), &note).await?;
    Ok(session)
}

/// `toolhost_calls_in_flight` (admitted, running or waiting for a slot) and
/// `toolhost_calls_waiting` from `/metrics`.
async fn in_flight(client: &reqwest::Client, base: &str) -> (usize, usize) {
    let Ok(r) = client.get(format!("{base}/metrics")).send().await else { return (0, 0) };
    let text = r.text().await.unwrap_or_default();
    let gauge = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as usize)
    };
    (gauge("toolhost_calls_in_flight"), gauge("toolhost_calls_waiting"))
}

pub fn rows(line: &mut impl FnMut(String), quick: bool) {
    let clients = if quick { 100 } else { 1000 };
    // A socket per client at once: more than the usual soft limit of open files.
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let lim = getrlimit(Resource::Nofile);
        let _ =
            setrlimit(Resource::Nofile, Rlimit { current: lim.maximum.or(Some(8192)), maximum: lim.maximum });
    }
    let duration = if quick { Duration::from_secs(8) } else { Duration::from_secs(60) };
    let idle_s = if quick { 2 } else { 10 };
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::copy(plugin_artifacts::TICKER, plugins.join("ticker.wasm")).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    let config = format!(
        "[limits]\nconcurrency = 200\nplugin_concurrency = 200\n\n[serve]\nmax_connections = 4096\n\
         max_connections_per_peer = 4096\n\n[audit]\nenabled = false\n\n[mcp]\nsession_idle_s = {idle_s}\n"
    );
    let replica = Replica::start(dir.path(), &plugins, &ws, &config, "127.0.0.1:0");
    let base = replica.url.trim_end_matches("/mcp").to_string();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let client = reqwest::Client::builder().pool_max_idle_per_host(usize::MAX).build().unwrap();
    let tally = Arc::new(Tally::default());

    line(format!(
        "## Capacity of one replica ({clients} MCP HTTP clients, half 2025 sessions, half 2026-07-28 stateless)"
    ));
    line(String::new());
    let (rss_rest, rss_sessions, sessions, peak, rss_peak, calls, rss_after, expired, rss_reopened) = rt
        .block_on(async {
            // Warm: one call of each kind.
            let s = open_session(&client, &replica.url).await.unwrap();
            let (_, _, t, _) =
                post(&client, &replica.url, "2025-06-18", Some(&s), &tick_call(1, false)).await.unwrap();
            assert!(t.contains("counted to 1"), "{t}");
            let (_, _, t, _) =
                post(&client, &replica.url, "2026-07-28", None, &tick_call(1, true)).await.unwrap();
            assert!(t.contains("counted to 1"), "{t}");
            tokio::time::sleep(Duration::from_millis(500)).await;
            let rss_rest = replica.rss_kib();
            // The sessions, opened and idle.
            let half = clients / 2;
            let mut sessions = Vec::with_capacity(half);
            let opened: Vec<_> = (0..half)
                .map(|_| {
                    let (client, url) = (client.clone(), replica.url.clone());
                    tokio::spawn(async move { open_session(&client, &url).await })
                })
                .collect();
            for o in opened {
                sessions.push(o.await.unwrap().unwrap());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            let rss_sessions = replica.rss_kib();
            // The load: every client calls every 200–400 ms until the end.
            let until = Instant::now() + duration;
            let mut tasks = Vec::new();
            for i in 0..clients {
                let session = sessions.get(i).cloned();
                let (client, url, tally) = (client.clone(), replica.url.clone(), tally.clone());
                tasks.push(tokio::spawn(async move {
                    let version = if session.is_some() { "2025-06-18" } else { "2026-07-28" };
                    let mut id = 1u64;
                    // Spread the clients' first calls over one period.
                    tokio::time::sleep(Duration::from_millis((i as u64 * 7919) % 300)).await;
                    while Instant::now() < until {
                        let began = Instant::now();
                        id += 1;
                        match post(
                            &client,
                            &url,
                            version,
                            session.as_deref(),
                            &tick_call(id, session.is_none()),
                        )
                        .await
                        {
                            Ok((status, retry_after, text, _)) => tally.count(status, retry_after, &text),
                            Err(e) => tally.other(e),
                        }
                        tally.times.lock().unwrap().push(began.elapsed());
                        let period = Duration::from_millis(200 + (id * 7919 + i as u64) % 200);
                        tokio::time::sleep(period.saturating_sub(began.elapsed())).await;
                    }
                }));
            }
            let (mut peak, mut rss_peak) = ((0usize, 0usize), 0u64);
            while Instant::now() < until {
                let n = in_flight(&client, &base).await;
                let rss = replica.rss_kib();
                if n.0 > peak.0 {
                    (peak, rss_peak) = (n, rss);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            for t in tasks {
                t.await.unwrap();
            }
            let calls = tally.ok.load(Relaxed) + tally.busy.load(Relaxed) + tally.other.load(Relaxed);
            // Idle now: past session_idle_s (and its sweep), every session is closed.
            tokio::time::sleep(Duration::from_secs(idle_s) + Duration::from_millis(idle_s * 250 + 1000))
                .await;
            let rss_after = replica.rss_kib();
            let mut expired = 0;
            for s in sessions.iter().take(20) {
                let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
                if let Ok((404, ..)) = post(&client, &replica.url, "2025-06-18", Some(s), &list).await {
                    expired += 1;
                }
            }
            // As many sessions again: the memory the closed ones freed is reused, RSS hardly grows.
            let reopened: Vec<_> = (0..sessions.len())
                .map(|_| {
                    let (client, url) = (client.clone(), replica.url.clone());
                    tokio::spawn(async move { open_session(&client, &url).await })
                })
                .collect();
            for o in reopened {
                o.await.unwrap().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            let rss_reopened = replica.rss_kib();
            (rss_rest, rss_sessions, sessions.len(), peak, rss_peak, calls, rss_after, expired, rss_reopened)
        });
    let (ok, busy, other) = (tally.ok.load(Relaxed), tally.busy.load(Relaxed), tally.other.load(Relaxed));
    let mib = |k: u64| format!("{:.1} MiB", k as f64 / 1024.0);
    line("| measure | value |".into());
    line("|---|---|".into());
    line(format!(
        "| calls in {} s (every 200–400 ms per client) | {calls} ({:.0}/s) |",
        duration.as_secs(),
        calls as f64 / duration.as_secs_f64()
    ));
    line(format!("| results | {ok} |"));
    line(format!("| overload answers (`503` + `Retry-After`, `[busy]`) | {busy} |"));
    line(format!(
        "| other errors | {other}{} |",
        tally
            .first_other
            .lock()
            .unwrap()
            .as_deref()
            .map(|e| format!(" (first: {})", e.chars().take(120).collect::<String>()))
            .unwrap_or_default()
    ));
    let mut times = std::mem::take(&mut *tally.times.lock().unwrap());
    times.sort();
    let pct =
        |p: f64| times.get(((times.len() as f64 * p) as usize).min(times.len().saturating_sub(1))).copied();
    let ms = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.0} ms", d.as_secs_f64() * 1000.0));
    line(format!(
        "| answer time p50 / p99 (the call itself takes 50 ms) | {} / {} |",
        ms(pct(0.5)),
        ms(pct(0.99))
    ));
    line(format!(
        "| peak calls in flight (`/metrics`; `[limits] concurrency = 200` run, the rest wait for a slot) | {} ({} waiting) |",
        peak.0, peak.1
    ));
    line(format!("| RSS at rest | {} |", mib(rss_rest)));
    line(format!(
        "| RSS with {sessions} idle sessions | {} ({:.1} KiB per idle session) |",
        mib(rss_sessions),
        rss_sessions.saturating_sub(rss_rest) as f64 / sessions.max(1) as f64
    ));
    line(format!(
        "| RSS at the peak of calls in flight | {} ({:.1} KiB per call in flight) |",
        mib(rss_peak),
        rss_peak.saturating_sub(rss_sessions) as f64 / peak.0.max(1) as f64
    ));
    line(format!(
        "| RSS after `session_idle_s = {idle_s}` | {} ({expired}/20 sampled sessions closed; the allocator keeps freed pages) |",
        mib(rss_after)
    ));
    line(format!(
        "| RSS after opening {sessions} new sessions (freed memory reused) | {} (+{:.1} KiB per session) |",
        mib(rss_reopened),
        rss_reopened.saturating_sub(rss_after) as f64 / sessions.max(1) as f64
    ));
    line(String::new());
    drop(replica);
    nginx_rows(line, quick, dir.path(), &plugins, &ws);
}

/// MCP HTTP calls/s (stateless `echo`, 32 clients) through nginx running deploy/nginx.conf,
/// with one replica behind it and with three.
fn nginx_rows(line: &mut impl FnMut(String), quick: bool, dir: &Path, plugins: &Path, ws: &Path) {
    let bin = std::env::var_os("TOOLHOST_TEST_NGINX")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/sbin/nginx".into());
    line("## MCP HTTP through nginx (deploy/nginx.conf), 1 vs 3 replicas".into());
    line(String::new());
    if !bin.is_file() {
        line(format!("(skipped: no nginx at {})", bin.display()));
        line(String::new());
        return;
    }
    let secs = if quick { 3 } else { 15 };
    let mut rates = Vec::new();
    let failed = Arc::new(Tally::default());
    // The replicas' per-address cap as deploy/toolhost.toml sets it: every connection comes from
    // nginx's address.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shipped = std::fs::read_to_string(root.join("deploy/toolhost.toml")).unwrap();
    let per_peer = shipped
        .lines()
        .find(|l| l.starts_with("max_connections_per_peer"))
        .and_then(|l| l.split('#').next())
        .expect("deploy/toolhost.toml sets [serve] max_connections_per_peer");
    let config = format!("[audit]\nenabled = false\n\n[serve]\n{}\n", per_peer.trim());
    for n in [1usize, 3] {
        let fleet: Vec<Replica> =
            (0..n).map(|_| Replica::start(dir, plugins, ws, &config, "127.0.0.1:0")).collect();
        let lb = Nginx::start(&bin, &fleet);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let failed = failed.clone();
        let done = rt.block_on(async {
            let client = reqwest::Client::new();
            let until = Instant::now() + Duration::from_secs(secs);
            let done = Arc::new(AtomicUsize::new(0));
            let tasks: Vec<_> = (0..32)
                .map(|i| {
                    let (client, url, done, failed) = (client.clone(), lb.url.clone(), done.clone(), failed.clone());
                    tokio::spawn(async move {
                        let mut id = 0u64;
                        while Instant::now() < until {
                            id += 1;
                            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                                "name": "echo", "arguments": {"text": format!("hello {i}")},
                                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                    "io.modelcontextprotocol/clientCapabilities": {},
                                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}}}});
                            let r = client
                                .post(&url)
                                .header("content-type", "application/json")
                                .header("accept", "application/json, text/event-stream")
                                .header("mcp-protocol-version", "2026-07-28")
                                .header("mcp-method", "tools/call")
                                .header("mcp-name", "echo")
                                .body(body.to_string())
                                .send()
                                .await
                                .unwrap();
                            let status = r.status().as_u16();
                            let text = r.text().await.unwrap();
                            if status == 200 && text.contains("hello") {
                                done.fetch_add(1, Relaxed);
                            } else {
                                failed.other(format!("{n} replica(s): HTTP {status}: {text}"));
                            }
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            done.load(Relaxed)
        });
        rates.push(done as f64 / secs as f64);
        drop(lb);
        drop(fleet);
    }
    line("| replicas behind nginx | calls/s (32 clients, stateless `echo`) | vs 1 replica |".into());
    line("|---|---|---|".into());
    line(format!("| 1 | {:.0} | 1.00× |", rates[0]));
    line(format!("| 3 | {:.0} | {:.2}× |", rates[1], rates[1] / rates[0]));
    line(String::new());
    let n = failed.other.load(Relaxed);
    if n > 0 {
        let first = failed.first_other.lock().unwrap().clone().unwrap_or_default();
        line(format!("**{n} calls failed** (first: {})", first.chars().take(160).collect::<String>()));
        line(String::new());
    }
}

/// nginx running deploy/nginx.conf in front of `replicas`, stopped on drop.
struct Nginx {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    fn start(bin: &Path, replicas: &[Replica]) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let shipped = std::fs::read_to_string(root.join("deploy/nginx.conf")).unwrap();
        let params = shipped
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("server toolhost-"))
            .and_then(|l| l.split_once(' '))
            .map_or(";", |(_, rest)| rest);
        let servers: String = replicas
            .iter()
            .map(|r| {
                format!(
                    "    server {} {params}\n",
                    r.url.trim_start_matches("http://").trim_end_matches("/mcp")
                )
            })
            .collect();
        let mut site = String::new();
        for l in shipped.lines() {
            if l.trim_start().starts_with("server toolhost-") {
                continue;
            }
            site.push_str(&l.replace("listen 80;", &format!("listen 127.0.0.1:{port};")));
            site.push('\n');
            if l.starts_with("upstream ") {
                site.push_str(&servers);
            }
        }
        let d = dir.path().display();
        let user = if rustix::process::geteuid().is_root() { "user root;" } else { "" };
        let conf = format!(
            "daemon off;\n{user}\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 1024; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  \
             proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  \
             scgi_temp_path {d}/scgi;\n{site}}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nginx is not listening on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Nginx { child, url: format!("http://127.0.0.1:{port}/mcp"), _dir: dir }
    }
}

//! A fleet (#30), on real parts: several `serve --mcp --http 127.0.0.1:0` replicas sharing
//! `[mcp] approval_key` and a `redis-server` replay store (Debian's package; `cargo xtask test`
//! installs it when missing, or set TOOLHOST_TEST_REDIS_SERVER). The 2026-07-28 danger
//! confirmation is driven with raw JSON-RPC over HTTP: the question comes from one replica, the
//! answer goes to another, and a replay goes to a third. In front of them, `nginx` (Debian's,
//! installed the same way, or TOOLHOST_TEST_NGINX) runs `deploy/nginx.conf`: round robin for
//! 2026-07-28, one replica per client for 2025 sessions. Confirmations are asked only of clients
//! that authenticate: with the replica's own local key when it is spoken to directly, with the
//! fleet's shared `[mcp] tokens` entry through the balancer (each replica draws its own key).

use crate::mcp::{SERVE_ARGS, mcp_env};
use crate::support::http::{self, header};
use crate::support::mcp_http::{Stateless, form, open_session_as, post, session_headers, try_post};
use crate::support::python::{mcp_script, run_passing};
use crate::support::redis::{Redis, redis, redis_on};
use crate::support::{Env, Server, free_port, root};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The fleet's key (at least 32 bytes), given to every replica through the environment.
const FLEET_KEY: &str = "fleet-test-key-5d0c4e1b9a7f3c2e8b6a1d4f0e9c7b35";
/// The fleet's bearer token (`[mcp] tokens` of [`fleet_config`]), in every replica's environment.
const FLEET_TOKEN: &str = "fleet-test-token-8c1e4a7d2b9f";

/// The `Authorization` line of a client that may be asked to confirm: the replica's local key,
/// or (configured with [`fleet_config`]) the fleet's token.
fn auth(replica: &Server) -> String {
    format!("Authorization: Bearer {}\r\n", replica.key.as_deref().unwrap_or(FLEET_TOKEN))
}

/// The `Authorization` line with the fleet's token, for requests through the balancer.
fn fleet_auth() -> String {
    format!("Authorization: Bearer {FLEET_TOKEN}\r\n")
}

/// A `serve --mcp --http` replica of `env` on `addr` with `config` (written into `dir`), extra
/// `flags` after `serve --mcp`, the fleet key in its environment.
fn replica(env: &Env, dir: &std::path::Path, addr: &str, config: &str, flags: &[&str]) -> Server {
    let path = dir.join(format!("fleet-{}.toml", free_port()));
    std::fs::write(&path, config).unwrap();
    Server::start(
        env.command()
            .arg("--config")
            .arg(&path)
            .args(SERVE_ARGS)
            .args(["--http", addr])
            .args(flags)
            .env("TOOLHOST_TEST_FLEET_KEY", FLEET_KEY)
            .env("TOOLHOST_TEST_FLEET_TOKEN", FLEET_TOKEN),
    )
}

/// Three replicas of `env` (their configs in `dir`) sharing the fleet's key and `redis`.
fn three_replicas(env: &Env, dir: &std::path::Path, redis: &Redis) -> Vec<Server> {
    let config = fleet_config(Some(redis.port));
    (0..3).map(|_| replica(env, dir, "127.0.0.1:0", &config, &[])).collect()
}

fn fleet_config(redis_port: Option<u16>) -> String {
    let mut c = String::from(
        "[secrets.fleet]\nenv = \"TOOLHOST_TEST_FLEET_KEY\"\n\n[mcp]\napproval_key = { secret = \"fleet\" }\n\
         tokens = [{ name = \"fleet\", env = \"TOOLHOST_TEST_FLEET_TOKEN\" }]\n",
    );
    if let Some(port) = redis_port {
        c.push_str(&format!("replay_store = \"redis://127.0.0.1:{port}\"\n"));
    }
    c
}

/// One stateless 2026-07-28 `tools/call` of `delete(path)` with `auth` (an `Authorization`
/// line), answering a question when given its state; returns the JSON-RPC response.
fn delete(url: &str, auth: &str, path: &str, state: Option<&str>, answer: Option<Value>) -> Value {
    let client = Stateless { url, auth, client: "fleet-test", capabilities: form() };
    let retry = state.zip(answer).map(|(state, answer)| (state, "confirm", answer));
    client.call("delete", json!({"path": path}), retry)
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
    let dir = tempfile::tempdir().unwrap();
    let redis = redis();
    let fleet = three_replicas(&env, dir.path(), &redis);
    for round in 0..3 {
        let (ask, answer, replay) = (&fleet[round], &fleet[(round + 1) % 3], &fleet[(round + 2) % 3]);
        let file = format!("doomed-{round}.txt");
        std::fs::write(env.ws(&file), "delete me").unwrap();
        let state = asked(&delete(&ask.url, &auth(ask), &file, None, None));
        assert!(env.ws(&file).exists(), "asking ran nothing");
        ran(&delete(&answer.url, &auth(answer), &file, Some(&state), Some(accept())));
        assert!(!env.ws(&file).exists(), "the answer on replica {} ran the call", (round + 1) % 3);
        // The same state again, on the third replica and on the two others: refused everywhere.
        std::fs::write(env.ws(&file), "again").unwrap();
        for r in [replay, ask, answer] {
            let e = refused(&delete(&r.url, &auth(r), &file, Some(&state), Some(accept())));
            assert!(e.contains("already used"), "{e}");
        }
        assert!(env.ws(&file).exists(), "no replay ran");
    }
    // Redis gone: a confirmation is refused (fail closed), never run.
    let port = redis.port;
    drop(redis);
    std::fs::write(env.ws("kept.txt"), "keep").unwrap();
    let state = asked(&delete(&fleet[0].url, &auth(&fleet[0]), "kept.txt", None, None));
    let e = refused(&delete(&fleet[1].url, &auth(&fleet[1]), "kept.txt", Some(&state), Some(accept())));
    assert!(e.contains("replay store") && e.contains("not run"), "{e}");
    assert!(env.ws("kept.txt").exists(), "nothing ran without the replay store");
    // Redis back (empty): the replica reconnects, and the refused answer, never recorded, runs.
    let _redis = redis_on(port);
    ran(&delete(&fleet[1].url, &auth(&fleet[1]), "kept.txt", Some(&state), Some(accept())));
    assert!(!env.ws("kept.txt").exists());
}

#[test]
fn without_a_shared_key_another_replica_refuses_with_a_clear_error() {
    let env = mcp_env();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        replica(&env, dir.path(), "127.0.0.1:0", "", &[]),
        replica(&env, dir.path(), "127.0.0.1:0", "", &[]),
    );
    std::fs::write(env.ws("doomed.txt"), "delete me").unwrap();
    let state = asked(&delete(&a.url, &auth(&a), "doomed.txt", None, None));
    let e = refused(&delete(&b.url, &auth(&b), "doomed.txt", Some(&state), Some(accept())));
    assert!(e.contains("not issued by this toolhost process") && e.contains("no [mcp] approval_key"), "{e}");
    assert!(env.ws("doomed.txt").exists());
    // Sticky routing still works: the replica that asked takes the answer.
    ran(&delete(&a.url, &auth(&a), "doomed.txt", Some(&state), Some(accept())));
    assert!(!env.ws("doomed.txt").exists());
}

#[test]
fn a_server_others_can_reach_says_when_confirmations_need_sticky_routing() {
    let env = mcp_env();
    let dir = tempfile::tempdir().unwrap();
    let open = ["--allow-unauthenticated-remote"];
    let warns = |r: &Server| r.seen.iter().any(|l| l.contains("confirmations only work with sticky routing"));
    let alone = replica(&env, dir.path(), "0.0.0.0:0", "", &open);
    assert!(warns(&alone), "{:?}", alone.seen);
    let shared = replica(&env, dir.path(), "0.0.0.0:0", &fleet_config(Some(6379)), &open);
    assert!(!warns(&shared), "{:?}", shared.seen);
    let on_loopback = replica(&env, dir.path(), "127.0.0.1:0", "", &[]);
    assert!(!warns(&on_loopback), "{:?}", on_loopback.seen);
}

/// nginx running `deploy/nginx.conf` in front of `replicas` on a free 127.0.0.1 port; stopped
/// on drop.
struct Nginx {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM to the master stops its workers too (SIGKILL would leave them serving).
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
    /// `(upstream, status, MCP-Protocol-Version)` of each proxied request, in order, once there
    /// are `n` (nginx writes a line as it finishes a request, just after the client has read it).
    fn log(&self, n: usize) -> Vec<(String, u16, String)> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let log: Vec<(String, u16, String)> = std::fs::read_to_string(self.dir.path().join("access.log"))
                .unwrap_or_default()
                .lines()
                .map(|l| {
                    let f: Vec<&str> = l.split(' ').collect();
                    (f[0].to_string(), f[1].parse().unwrap(), f.get(2).unwrap_or(&"").to_string())
                })
                .collect();
            if log.len() >= n || Instant::now() > deadline {
                assert_eq!(log.len(), n, "{log:?}");
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn nginx(replicas: &[Server]) -> Nginx {
    let bin = std::env::var_os("TOOLHOST_TEST_NGINX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/nginx"));
    assert!(
        bin.is_file(),
        "the fleet tests need nginx at {}: run `cargo xtask test` (it installs Debian's nginx), \
         `apt-get install nginx`, or set TOOLHOST_TEST_NGINX",
        bin.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let shipped = std::fs::read_to_string(root().join("deploy/nginx.conf")).unwrap();
    // The shipped servers' parameters (max_fails, fail_timeout), on the test's replicas.
    let params = shipped
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("server toolhost-"))
        .and_then(|l| l.split_once(' '))
        .map_or(";", |(_, rest)| rest);
    let servers: String = replicas.iter().map(|r| format!("    server {} {params}\n", r.addr)).collect();
    let mut site = String::new();
    for line in shipped.lines() {
        if line.trim_start().starts_with("server toolhost-") {
            continue;
        }
        site.push_str(&line.replace("listen 80;", &format!("listen 127.0.0.1:{port};")));
        site.push('\n');
        if line.starts_with("upstream ") {
            site.push_str(&servers);
        }
    }
    assert!(site.contains(&format!("listen 127.0.0.1:{port};")) && !site.contains("toolhost-0"), "{site}");
    let d = dir.path().display();
    // As root the workers would run as `nobody`, which cannot enter the test's directory.
    let user = if rustix::process::geteuid().is_root() { "user root;" } else { "" };
    let main = format!(
        "daemon off;\n{user}\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
         events {{ worker_connections 256; }}\nhttp {{\n  log_format fleet '$upstream_addr $status \
         $http_mcp_protocol_version $http_mcp_method';\n  access_log {d}/access.log fleet;\n  client_body_temp_path {d}/body;\n  \
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  \
         scgi_temp_path {d}/scgi;\n{site}}}\n"
    );
    std::fs::write(dir.path().join("nginx.conf"), main).unwrap();
    let child = Command::new(&bin)
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
    let mut n = Nginx { child, url: format!("http://127.0.0.1:{port}/mcp"), dir };
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        let log = std::fs::read_to_string(n.dir.path().join("error.log")).unwrap_or_default();
        assert!(n.child.try_wait().unwrap().is_none(), "nginx exited: {log}");
        assert!(Instant::now() < deadline, "nginx is not listening on {port}: {log}");
        std::thread::sleep(Duration::from_millis(50));
    }
    n
}

#[test]
fn behind_nginx_confirmations_run_once_on_any_replica_and_sessions_stay_on_one() {
    let env = mcp_env();
    let dir = tempfile::tempdir().unwrap();
    let redis = redis();
    let fleet = three_replicas(&env, dir.path(), &redis);
    let lb = nginx(&fleet);
    // 2026-07-28, stateless: every confirmation through the balancer runs its call once.
    let rounds = 30;
    let mut last = String::new();
    for round in 0..rounds {
        let file = format!("lb-{round}.txt");
        std::fs::write(env.ws(&file), "delete me").unwrap();
        last = asked(&delete(&lb.url, &fleet_auth(), &file, None, None));
        ran(&delete(&lb.url, &fleet_auth(), &file, Some(&last), Some(accept())));
        assert!(!env.ws(&file).exists(), "round {round}: the confirmed call ran");
    }
    let file = format!("lb-{}.txt", rounds - 1);
    std::fs::write(env.ws(&file), "again").unwrap();
    for _ in 0..3 {
        let e = refused(&delete(&lb.url, &fleet_auth(), &file, Some(&last), Some(accept())));
        assert!(e.contains("already used"), "{e}");
    }
    assert!(env.ws(&file).exists(), "no replay ran");
    let log = lb.log(2 * rounds + 3);
    let moved = log[..2 * rounds].chunks(2).filter(|pair| pair[0].0 != pair[1].0).count();
    assert!(moved >= 1, "no answer landed on another replica than its question: {log:?}");
    let replayed_on: std::collections::BTreeSet<&str> =
        log[2 * rounds..].iter().map(|l| l.0.as_str()).collect();
    assert_eq!(replayed_on.len(), 3, "the replay reached every replica: {log:?}");
    assert!(log.iter().all(|l| l.1 == 200 && l.2 == "2026-07-28"), "{log:?}");

    // A 2025 session: `initialize`, then requests carrying its Mcp-Session-Id, all on the
    // replica that created it (another would not know the id).
    let session = legacy_session(&lb.url, &fleet_auth());
    let in_session = format!("{}{}", fleet_auth(), session_headers(&session, "2025-06-18"));
    for id in 2..8 {
        let (status, head, messages) =
            post(&lb.url, &in_session, &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        assert_eq!(status, 200, "{head}");
        let listed = messages.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("{messages:?}"));
        assert!(listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{listed}");
    }
    let log = lb.log(2 * rounds + 3 + 8);
    let session_on: std::collections::BTreeSet<&str> =
        log[2 * rounds + 3..].iter().map(|l| l.0.as_str()).collect();
    assert_eq!(session_on.len(), 1, "the session stayed on one replica: {log:?}");
}

#[test]
fn the_official_python_sdk2_confirms_through_nginx_every_time() {
    let env = mcp_env();
    let dir = tempfile::tempdir().unwrap();
    let redis = redis();
    let fleet = three_replicas(&env, dir.path(), &redis);
    let lb = nginx(&fleet);
    run_passing(
        mcp_script(2, "fleet2.py", &env).args([
            "--rounds",
            "30",
            "--replays",
            "3",
            "--token",
            FLEET_TOKEN,
            &lb.url,
        ]),
        "fleet checks passed",
    );
    // Every `tools/call` through the balancer, in order: the 2026-07-28 ones went round robin,
    // so answers landed on other replicas than their questions, and the replays reached all three.
    let log = std::fs::read_to_string(lb.dir.path().join("access.log")).unwrap();
    let calls: Vec<&str> = log
        .lines()
        .filter(|l| l.ends_with(" 2026-07-28 tools/call"))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    // 30 rounds of two, the one by hand, then the replays.
    assert_eq!(calls.len(), 2 * 30 + 2 + 3, "{log}");
    let moved = calls[..62].chunks(2).filter(|pair| pair[0] != pair[1]).count();
    assert!(moved >= 1, "no answer landed on another replica than its question: {log}");
    let replayed_on: std::collections::BTreeSet<&str> = calls[62..].iter().copied().collect();
    assert_eq!(replayed_on.len(), 3, "the replay reached every replica: {log}");
}

/// A replica's config for the rolling restart: the fleet's, and its own audit file.
fn rolling_config(dir: &std::path::Path, port: u16, generation: usize) -> (String, PathBuf) {
    let audit = dir.join(format!("audit-{port}-{generation}.jsonl"));
    let config = format!("[audit]\nfile = \"{}\"\nfsync = \"never\"\n", audit.display());
    (config, audit)
}

/// How the rolling restart's clients fared.
#[derive(Default)]
struct Tally {
    done: std::sync::atomic::AtomicUsize,
    /// `503` + `Retry-After` answers, retried.
    refused_503: std::sync::atomic::AtomicUsize,
    /// Calls answered `[unavailable]` (admitted as the drain began, not run), retried.
    unavailable: std::sync::atomic::AtomicUsize,
    /// Anything else: a lost or half-run call.
    failures: std::sync::Mutex<Vec<String>>,
}

/// One call `rename(todo/ID, done/ID)` through `lb` until it has an answer, retrying what the
/// service documents as retryable: `503` with `Retry-After` (after that many seconds) and a
/// call answered `[unavailable]` before it ran.
fn rolling_call(lb: &str, id: usize, tally: &Tally) {
    use std::sync::atomic::Ordering::Relaxed;
    let client = Stateless { url: lb, auth: "", client: "rolling-test", capabilities: json!({}) };
    let arguments = json!({"from": format!("todo/{id}"), "to": format!("done/{id}")});
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": client.params("rename", arguments)});
    let fail = |why: String| tally.failures.lock().unwrap().push(format!("call {id}: {why}"));
    for _ in 0..20 {
        let (status, head, messages) = match try_post(lb, &client.headers("rename"), &body) {
            Ok(answer) => answer,
            Err(e) => return fail(e.to_string()),
        };
        if status == 503 {
            let retry_after = header(&head, "retry-after").and_then(|v| v.parse::<u64>().ok());
            let Some(secs) = retry_after else { return fail(format!("503 without Retry-After: {head}")) };
            tally.refused_503.fetch_add(1, Relaxed);
            std::thread::sleep(Duration::from_secs(secs));
            continue;
        }
        if status != 200 {
            return fail(format!("HTTP {status}: {head}"));
        }
        let Some(answer) = messages.iter().find(|m| m["id"] == id) else {
            return fail(format!("no JSON-RPC response: {head} {messages:?}"));
        };
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] == json!(true)
            && text.ends_with("[unavailable]")
            && !text.contains("may have partly run")
        {
            tally.unavailable.fetch_add(1, Relaxed);
            continue;
        }
        if !result["content"].is_array() || result["isError"] == json!(true) {
            return fail(format!("not a result: {answer}"));
        }
        tally.done.fetch_add(1, Relaxed);
        return;
    }
    fail("still refused after 20 tries".into())
}

#[test]
fn a_rolling_restart_behind_nginx_loses_and_repeats_no_call() {
    use std::sync::atomic::Ordering::Relaxed;
    const CALLS: usize = 2000;
    const CLIENTS: usize = 20;
    const PACE: Duration = Duration::from_millis(60);
    let env = mcp_env();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(env.ws("todo")).unwrap();
    std::fs::create_dir(env.ws("done")).unwrap();
    for id in 0..CALLS {
        std::fs::write(env.ws(&format!("todo/{id}")), id.to_string()).unwrap();
    }
    let mut audits = Vec::new();
    let mut fleet: Vec<Server> = (0..3)
        .map(|_| {
            let port = free_port();
            let (config, audit) = rolling_config(dir.path(), port, 0);
            audits.push(audit);
            replica(&env, dir.path(), &format!("127.0.0.1:{port}"), &config, &[])
        })
        .collect();
    let lb = nginx(&fleet);
    let tally = std::sync::Arc::new(Tally::default());
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (tally, next, url) = (tally.clone(), next.clone(), lb.url.clone());
            std::thread::spawn(move || {
                loop {
                    let id = next.fetch_add(1, Relaxed);
                    if id >= CALLS {
                        return;
                    }
                    // Each client calls at most every PACE: the load lasts long enough for three
                    // restarts a second apart (nginx's fail_timeout) on any machine.
                    let began = Instant::now();
                    rolling_call(&url, id, &tally);
                    std::thread::sleep(PACE.saturating_sub(began.elapsed()));
                }
            })
        })
        .collect();
    // Each replica in turn, as an operator does it: SIGTERM once a share of the calls is done
    // and the replica before has been back for nginx's fail_timeout (1 s), wait for its drain to
    // end the process (exit 0), start it again on the same port.
    let mut restarted_at = Vec::new();
    let mut back = Instant::now();
    for (i, replica) in fleet.iter_mut().enumerate() {
        while (tally.done.load(Relaxed) < (i + 1) * CALLS / 5 || back.elapsed() < Duration::from_millis(1100))
            && started.elapsed() < Duration::from_secs(120)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let addr = replica.addr.to_string();
        let port = replica.addr.port();
        let status = replica.terminate(30);
        assert!(status.success(), "replica {i} drained and exited 0: {status:?}");
        let (config, audit) = rolling_config(dir.path(), port, 1);
        audits.push(audit);
        *replica = self::replica(&env, dir.path(), &addr, &config, &[]);
        back = Instant::now();
        restarted_at.push(tally.done.load(Relaxed));
    }
    for c in clients {
        c.join().unwrap();
    }
    let elapsed = started.elapsed();
    let failures = tally.failures.lock().unwrap().clone();
    let nginx_errors = std::fs::read_to_string(lb.dir.path().join("error.log")).unwrap_or_default();
    assert!(
        failures.is_empty(),
        "{} calls lost or failed: {:?}\nnginx's error log:\n{nginx_errors}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert_eq!(tally.done.load(Relaxed), CALLS);
    // Side effects: every file moved once — none left, none missing.
    let left = std::fs::read_dir(env.ws("todo")).unwrap().count();
    let moved = std::fs::read_dir(env.ws("done")).unwrap().count();
    assert_eq!((left, moved), (0, CALLS), "every call ran: none lost");
    // Each process's audit trail: every `rename` ran once, successfully (a repeat would have
    // found its file gone), and each of the six processes served calls (the load spanned the
    // restarts).
    drop(fleet);
    let mut ran = std::collections::BTreeMap::<String, usize>::new();
    let mut not_run = 0;
    for audit in &audits {
        let text = std::fs::read_to_string(audit).unwrap_or_default();
        let mut here = 0;
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["tool"] != "rename" {
                continue;
            }
            // Refused by the executor as the drain began: not run, and retried.
            if v["outcome"] == "unavailable" {
                not_run += 1;
                continue;
            }
            assert_eq!(v["outcome"], "ok", "a call ran twice or failed: {line}");
            *ran.entry(v["args"][0].as_str().unwrap().to_string()).or_default() += 1;
            here += 1;
        }
        assert!(
            here > 0,
            "{} served no call: the restarts were not under load ({restarted_at:?})",
            audit.display()
        );
    }
    assert_eq!(ran.len(), CALLS);
    assert!(ran.values().all(|&n| n == 1), "no call ran twice");
    assert_eq!(not_run, tally.unavailable.load(Relaxed), "each call refused `unavailable` was retried");
    // What nginx passed on: answers and retryable refusals only.
    let log = std::fs::read_to_string(lb.dir.path().join("access.log")).unwrap();
    let statuses: Vec<u16> = log.lines().map(|l| l.rsplit(' ').nth(2).unwrap().parse().unwrap()).collect();
    assert!(statuses.iter().all(|&s| s == 200 || s == 503), "{log}");
    let n503 = statuses.iter().filter(|&&s| s == 503).count();
    assert_eq!(n503, tally.refused_503.load(Relaxed), "{log}");
    eprintln!(
        "rolling restart: {CALLS} calls from {CLIENTS} clients in {elapsed:?}; restarts done after {restarted_at:?} \
         calls; {n503} answered 503 + Retry-After and {} `[unavailable]`, all retried",
        tally.unavailable.load(Relaxed)
    );
}

/// A 2025 session opened at `url` with `auth` (`Authorization` lines, or nothing): its id.
fn legacy_session(url: &str, auth: &str) -> String {
    open_session_as(url, auth, "2025-06-18", json!({}), "fleet-legacy")
}

/// The HTTP status of a `tools/list` in `session`.
fn list_in(url: &str, session: &str) -> u16 {
    post(
        url,
        &session_headers(session, "2025-06-18"),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
    )
    .0
}

#[test]
fn a_legacy_session_unused_for_session_idle_s_is_closed() {
    let env = mcp_env();
    let dir = tempfile::tempdir().unwrap();
    let r = replica(&env, dir.path(), "127.0.0.1:0", "[mcp]\nsession_idle_s = 1\n", &[]);
    let (used, unused, streaming) =
        (legacy_session(&r.url, ""), legacy_session(&r.url, ""), legacy_session(&r.url, ""));
    // The third holds its GET stream open: a session with an open stream is in use.
    let headers = format!("Accept: text/event-stream\r\n{}", session_headers(&streaming, "2025-06-18"));
    let stream = http::stream(r.addr, "GET", "/mcp", &headers, "");
    assert_eq!(stream.status, 200, "the GET stream opened: {}", stream.head);
    // Well past the idle time, the first used every 300 ms.
    let until = Instant::now() + Duration::from_millis(2600);
    while Instant::now() < until {
        assert_eq!(list_in(&r.url, &used), 200);
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(list_in(&r.url, &used), 200, "a session in use stays");
    assert_eq!(list_in(&r.url, &streaming), 200, "a session with an open stream stays");
    assert_eq!(list_in(&r.url, &unused), 404, "an unused session is closed");
    drop(stream);
}

/// #60: `[rate_limits]` shared through the fleet's Redis. One identity's calls, spread by nginx
/// over three replicas, are counted once: exactly the limit runs, the rest are refused
/// `rate_limited` (on whichever replica they land), and another identity keeps its own buckets.
#[test]
fn three_replicas_behind_nginx_share_an_identitys_rate_limit() {
    let env = mcp_env();
    let dir = tempfile::tempdir().unwrap();
    let redis = redis();
    // A second identity: the token `other`, read from a file beside the config.
    const OTHER_TOKEN: &str = "fleet-test-other-token-3e9a1c7f";
    std::fs::write(dir.path().join("other.token"), OTHER_TOKEN).unwrap();
    let tokens = "tokens = [{ name = \"fleet\", env = \"TOOLHOST_TEST_FLEET_TOKEN\" }, \
                  { name = \"other\", file = \"other.token\" }]";
    let config = format!(
        "{}\n[rate_limits]\nper_identity_tool = 4\nredis_url = \"redis://127.0.0.1:{}\"\n",
        fleet_config(Some(redis.port))
            .replace("tokens = [{ name = \"fleet\", env = \"TOOLHOST_TEST_FLEET_TOKEN\" }]", tokens),
        redis.port
    );
    assert!(config.contains("other.token"), "{config}");
    let fleet: Vec<Server> = (0..3).map(|_| replica(&env, dir.path(), "127.0.0.1:0", &config, &[])).collect();
    let lb = nginx(&fleet);
    let auth = fleet_auth();
    let client = Stateless { url: &lb.url, auth: &auth, client: "fleet-rate", capabilities: json!({}) };
    let answers: Vec<Value> =
        (0..12).map(|i| client.call("echo", json!({"text": format!("call {i}")}), None)).collect();
    let ok = answers.iter().filter(|a| a["result"]["isError"] == json!(false)).count();
    let limited: Vec<&Value> = answers
        .iter()
        .filter(|a| a["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("[rate_limited]")))
        .collect();
    assert_eq!((ok, limited.len()), (4, 8), "4 calls a minute for the fleet, not per replica: {answers:?}");
    assert!(
        limited
            .iter()
            .all(|a| a["result"]["_meta"]["toolhost/retryAfterMs"].as_u64().is_some_and(|ms| ms > 0))
    );
    // The calls went to every replica (round robin for 2026-07-28), and the counts are shared.
    let upstreams: std::collections::BTreeSet<String> = lb.log(12).into_iter().map(|(up, _, _)| up).collect();
    assert_eq!(upstreams.len(), 3, "nginx spread the calls: {upstreams:?}");
    // Another identity has its own buckets.
    let auth = format!("Authorization: Bearer {OTHER_TOKEN}\r\n");
    let other = Stateless { url: &lb.url, auth: &auth, client: "fleet-rate", capabilities: json!({}) };
    let answer = other.call("echo", json!({"text": "mine"}), None);
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
}

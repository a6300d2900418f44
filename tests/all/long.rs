//! Long-running tools (#29): progress from the sandbox, cancellation that stops the work, the
//! time a tool may ask for, and an old plugin that still runs. The MCP side (progress
//! notifications, `notifications/cancelled`, tasks) is driven by `tests/mcp/long.py` (the
//! official Python SDK 1.x), `tests/mcp/long2.py` (2.x, 2026-07-28) and `tests/mcp/tasks.py`
//! (a raw JSON-RPC client: no official SDK speaks the tasks extension yet); the 2025-11-25
//! experimental tasks by `tests/mcp/tasks2025.py` (the SDK 1.x task client).

use crate::process::{all_gone, watch_for};
use crate::support::python::{mcp_script, run_passing};
use crate::support::{Env, Server, err, ok, root};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_core::ErrorKind;
use toolhost_core::executor::{
    CallContext, CallControl, Cancel, NoConfirm, Progress, ProgressSink, ToolCall,
};
use toolhost_core::settings::Config;
use toolhost_spec::manifest::FsMode;

/// `ticker` with the workspace writable (its trail files live there).
fn ticker() -> Env {
    let mut env = Env::with(&[plugin_artifacts::TICKER]);
    env.config.grant_workspace("ticker", FsMode::ReadWrite);
    env
}

/// A sink that keeps every report it gets.
fn collector() -> (Arc<dyn ProgressSink>, Arc<Mutex<Vec<Progress>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let sink: Arc<dyn ProgressSink> = Arc::new(move |p: &Progress| g.lock().unwrap().push(p.clone()));
    (sink, got)
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Wait (at most `secs`) until `cond` holds.
fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < until, "{what}: not within {secs} s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Assert `file` stops growing: unchanged over a bounded wait after the call ended.
#[track_caller]
fn assert_stopped(file: &Path) {
    let before = size(file);
    assert!(before > 0, "{} was never written", file.display());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(size(file), before, "{} is still growing: the work did not stop", file.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_built_before_progress_still_loads_and_runs() {
    // tests/fixtures/README.md: `painter` built against the WIT without `progress`.
    let fixture = root().join("tests/fixtures/painter-before-progress.wasm");
    let bytes = std::fs::read(&fixture).unwrap();
    // Names in a component's types are length-prefixed: `\x08progress` is the import's name
    // (a plugin that reports progress has it; std's "in progress" texts do not match).
    let named = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    assert!(named(b"\x03log") && !named(b"\x08progress"), "the fixture imports `log` and no `progress`");
    let ticker = std::fs::read(plugin_artifacts::TICKER).unwrap();
    assert!(ticker.windows(9).any(|w| w == b"\x08progress"), "the check above can see a `progress` import");
    let env = Env::with(&[fixture.to_str().unwrap()]);
    let host = env.host_yes();
    assert!(host.registry.load().failures().is_empty(), "{:?}", host.registry.load().failures());
    let o = crate::support::call(&host, "scrawl", &["hello from the past"]).await;
    assert_eq!(ok(&o), "logged", "its `log` import still links and runs");
    let e = err(&crate::support::call(&host, "smear", &["as told"]).await, ErrorKind::ToolError);
    assert_eq!(e, "as told");
    assert_eq!(ok(&crate::support::call(&host, "zap", &["abc"]).await), "zapped 3 characters");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_arrives_in_order_coalesced_and_ends_at_the_total() {
    let env = ticker();
    let host = env.host();
    let (sink, got) = collector();
    let control = CallControl::default().with_progress(sink);
    let started = Instant::now();
    let call = ToolCall::new("tick", ["30", "10", ""]);
    let o = host.executor.call_controlled(&call, &NoConfirm, &CallContext::default(), &control).await;
    let elapsed = started.elapsed();
    assert_eq!(ok(&o), "counted to 30");
    let got = got.lock().unwrap().clone();
    assert!(got.len() >= 2, "reports arrived while it ran: {got:?}");
    assert!(got.windows(2).all(|w| w[0].done < w[1].done), "in order, increasing: {got:?}");
    let last = got.last().unwrap();
    assert_eq!((last.done, last.total, last.message.as_str()), (30, Some(30), "step 30 of 30"));
    let most = elapsed.as_secs_f64() * 10.0 + 2.0;
    assert!((got.len() as f64) <= most, "at most ~10 a second: {} in {elapsed:?}", got.len());
    // Without a sink nothing is watched, and the call is the same.
    assert_eq!(ok(&crate::support::call(&host, "tick", &["3", "0", ""]).await), "counted to 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_progress_is_coalesced_and_other_calls_go_on() {
    let mut env = Env::with(&[plugin_artifacts::TICKER, plugin_artifacts::TEXT]);
    env.config.grant_workspace("ticker", FsMode::ReadWrite);
    let host = Arc::new(env.host());
    let (sink, got) = collector();
    let flood = tokio::spawn({
        let host = host.clone();
        async move {
            let control = CallControl::default().with_progress(sink);
            let started = Instant::now();
            let call = ToolCall::new("flood", ["1000000"]);
            let o = host.executor.call_controlled(&call, &NoConfirm, &CallContext::default(), &control).await;
            (o, started.elapsed())
        }
    });
    // While it floods, other calls are served: each finishes before the flood does.
    wait_until(30, "the flood's first report", || !got.lock().unwrap().is_empty());
    for i in 0..3 {
        let o = crate::support::call(&host, "echo", &[&format!("still here {i}")]).await;
        assert_eq!(ok(&o), format!("still here {i}"));
        assert!(!flood.is_finished(), "the flood should still be running (make it longer if not)");
    }
    let (o, elapsed) = flood.await.unwrap();
    assert_eq!(ok(&o), "reported 1000000 times");
    let got = got.lock().unwrap().clone();
    let most = elapsed.as_secs_f64() * 10.0 + 2.0;
    assert!((got.len() as f64) <= most, "{} reports forwarded in {elapsed:?}", got.len());
    assert_eq!(got.last().unwrap().done, 1_000_000, "the last report always arrives");
}

/// Start `tick` with a trail, wait for the trail to grow, cancel: the outcome is `cancelled`
/// and the trail stops growing.
async fn cancel_mid_run(ms: &str) {
    let env = ticker();
    let host = Arc::new(env.host());
    let trail = env.ws(&format!("trail-{ms}.txt"));
    let cancel = Cancel::new();
    let run = tokio::spawn({
        let (host, cancel) = (host.clone(), cancel.clone());
        let name = format!("trail-{ms}.txt");
        let ms = ms.to_string();
        async move {
            let control = CallControl::default().with_cancel(cancel);
            let call = ToolCall::new("tick", ["100000000".to_string(), ms, name]);
            host.executor.call_controlled(&call, &NoConfirm, &CallContext::default(), &control).await
        }
    });
    let t = trail.clone();
    tokio::task::spawn_blocking(move || wait_until(30, "the trail grows", || size(&t) >= 3)).await.unwrap();
    cancel.cancel("the test");
    // A bounded wait for the outcome (generous for a loaded machine; the benchmark measures it).
    let o = tokio::time::timeout(Duration::from_secs(5), run).await.expect("cancelled call ended").unwrap();
    let e = err(&o, ErrorKind::Cancelled);
    assert!(e.contains("cancelled by the test") && e.contains("may have partly run"), "{e}");
    tokio::task::spawn_blocking(move || assert_stopped(&trail)).await.unwrap();
    // The host goes on serving.
    assert_eq!(ok(&crate::support::call(&host, "tick", &["2", "0", ""]).await), "counted to 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_sleeping_plugin_stops_it() {
    cancel_mid_run("20").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_busy_plugin_stops_it() {
    // No pause between steps: the guest runs wasm and host calls flat out (epoch interruption).
    cancel_mid_run("0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_kills_the_program_a_plugin_runs() {
    let mut env = Env::with(&[plugin_artifacts::SYSTEM]);
    let sh = toolhost_core::capability::process::resolve_in_path("sh").unwrap();
    let mut cfg = Config::from_str_at(
        &format!("[plugin.sys]\nexec = [{{ program = \"{}\", env = [\"PATH\"] }}]\n", sh.display()),
        env.workspace.path(),
        None,
    )
    .unwrap();
    cfg.plugins_dir = env.plugins.path().to_path_buf();
    cfg.set_workspace(env.workspace.path());
    env.config = cfg;
    let host = Arc::new(env.host_yes());
    let watch = watch_for("29.803", 2, Duration::from_secs(10));
    let cancel = Cancel::new();
    let run = tokio::spawn({
        let (host, cancel) = (host.clone(), cancel.clone());
        async move {
            let control = CallControl::default().with_cancel(cancel);
            let call = ToolCall::new("run", ["sh", r#"["-c", "sleep 29.803 & wait"]"#]);
            let confirm = toolhost_core::executor::AlwaysConfirm;
            host.executor.call_controlled(&call, &confirm, &CallContext::default(), &control).await
        }
    });
    let seen = tokio::task::spawn_blocking(move || watch.join().unwrap()).await.unwrap();
    let pids: Vec<u32> = seen.iter().map(|(p, _)| *p).collect();
    assert_eq!(pids.len(), 2, "the shell and its sleep were seen running: {seen:?}");
    cancel.cancel("the test");
    let o = tokio::time::timeout(Duration::from_secs(5), run).await.expect("cancelled call ended").unwrap();
    err(&o, ErrorKind::Cancelled);
    assert!(
        tokio::task::spawn_blocking(move || all_gone(&pids)).await.unwrap(),
        "the process group was killed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_may_ask_for_more_time_up_to_the_cap() {
    // `tick` asks for 120 s; the host's default is 300 ms here.
    let mut env = ticker();
    env.config.limits.timeout_ms = 300;
    let host = env.host();
    assert_eq!(ok(&crate::support::call(&host, "tick", &["6", "100", ""]).await), "counted to 6");
    // Capped at 200 ms by the operator: the same call times out, naming the limit it got.
    env.config.max_timeout_ms = 200;
    let host = env.host();
    let e = err(&crate::support::call(&host, "tick", &["6", "100", ""]).await, ErrorKind::Timeout);
    assert!(e.contains("timed out after 200 ms"), "{e}");
    // A tool that asks for nothing keeps the default.
    let mut env = Env::with(&[plugin_artifacts::TICKER, plugin_artifacts::TEXT]);
    env.config.limits.timeout_ms = 300;
    let view = env.registry();
    let echo = view.get("echo").unwrap();
    assert_eq!(toolhost_core::view::ToolView::new(echo, &env.config).limits.timeout_ms, 300);
}

#[test]
fn call_prints_progress_as_lines_or_json_lines() {
    let env = ticker();
    let out =
        env.command().args(["--allow-write", "ticker", "call", "tick", "5", "20", ""]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "counted to 5");
    assert!(
        stderr.contains("progress: 5/5 step 5 of 5"),
        "plain lines on stderr when not a terminal: {stderr}"
    );
    let out = env
        .command()
        .args(["--allow-write", "ticker", "call", "--json", "tick", "5", "20", ""])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let progress: Vec<serde_json::Value> = lines
        .iter()
        .take_while(|l| l.starts_with("{\"progress\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!progress.is_empty(), "JSON lines of progress first: {stdout}");
    assert_eq!(
        progress.last().unwrap()["progress"],
        serde_json::json!({"done": 5, "total": 5, "message": "step 5 of 5"})
    );
    let rest = lines[progress.len()..].join("\n");
    let outcome: serde_json::Value = serde_json::from_str(&rest).unwrap();
    assert_eq!(outcome["data"], "counted to 5", "then the outcome: {stdout}");
}

/// On a terminal `toolhost call` draws an indicatif bar (percentage, the plugin's message, the
/// ETA) while the tool runs, takes it off, and prints the outcome.
#[cfg(unix)]
#[test]
fn call_draws_a_progress_bar_on_a_terminal() {
    let env = ticker();
    let mut cmd = env.command();
    cmd.args(["--allow-write", "ticker", "call", "tick", "40", "50", ""]);
    let pty = crate::security::terminal::Pty::spawn(cmd);
    let at = pty.wait_for("% step ", 0);
    pty.wait_for("(ETA ", at);
    let (status, raw) = pty.finish();
    let out = String::from_utf8_lossy(&raw);
    assert!(status.success(), "{out}");
    assert!(out.contains('\u{2588}'), "the bar's filled cells are drawn: {out:?}");
    assert!(!out.contains("progress: "), "no plain lines on a terminal: {out:?}");
    let outcome = out.rfind("counted to 40").expect("the outcome is printed");
    let last_bar = out.rfind("% step ").unwrap();
    assert!(last_bar < outcome, "the outcome comes after the bar: {out:?}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_cancels_a_call_which_is_audited_as_cancelled() {
    let env = ticker();
    let audit = env.at("audit.jsonl");
    let cfg = env.at("toolhost.toml");
    std::fs::write(&cfg, format!("[audit]\nfile = {:?}\n", audit.display().to_string())).unwrap();
    let trail = env.ws("trail.txt");
    let child = env
        .command()
        .args([
            "--config",
            cfg.to_str().unwrap(),
            "--allow-write",
            "ticker",
            "call",
            "tick",
            "100000",
            "10",
            "trail.txt",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(60, "the trail grows", || size(&trail) >= 3);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("error[cancelled]: call to `tick` was cancelled by Ctrl-C"), "{stderr}");
    assert_stopped(&trail);
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&audit).unwrap().trim()).unwrap();
    assert_eq!(
        (line["tool"].as_str(), line["outcome"].as_str()),
        (Some("tick"), Some("cancelled")),
        "{line}"
    );
}

#[test]
fn list_and_inspect_show_the_time_limit_a_tool_gets() {
    let env = Env::with(&[plugin_artifacts::TICKER, plugin_artifacts::TEXT]);
    let cfg = env.at("toolhost.toml");
    std::fs::write(&cfg, "[limits]\ntimeout_ms = 2000\nmax_timeout_ms = 60000\n").unwrap();
    let out = env.command().args(["--config", cfg.to_str().unwrap(), "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = |tool: &str| stdout.lines().find(|l| l.starts_with(tool)).unwrap_or_default().to_string();
    assert!(row("tick(").contains(" 60s "), "tick asks for 120 s, capped at 60 s: {stdout}");
    assert!(row("echo(").contains(" 2s "), "echo asks for nothing: {stdout}");
    let out = env.command().args(["--config", cfg.to_str().unwrap(), "list", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["timeoutMs"]["tick"], 60000);
    let out = env
        .command()
        .args(["--config", cfg.to_str().unwrap(), "inspect", plugin_artifacts::TICKER])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("asks for 120000 ms") && stdout.contains("task optional"), "{stdout}");
    assert!(stdout.contains("time limits here: tick 60000 ms, flood 60000 ms, chore 60000 ms"), "{stdout}");
}

/// After the env's command: `ticker` may write the workspace (its trail files live there),
/// `serve --mcp`.
const SERVE: [&str; 4] = ["--allow-write", "ticker", "serve", "--mcp"];

/// The arguments of a script that starts the server itself: `stdio`, then `serve --mcp` for
/// `ticker` with `config` as the operator's `toolhost.toml` (the scripts run the server in the
/// workspace, which may not hold a `toolhost.toml` a plugin could write).
fn stdio(env: &Env, config: &str) -> Vec<String> {
    std::fs::write(env.at("toolhost.toml"), config).unwrap();
    let mut args = vec!["stdio".to_string()];
    args.extend(env.command_line());
    args.extend(SERVE.map(String::from));
    args
}

/// Run a test script from tests/mcp with the SDK of `generation`, in the workspace; assert it
/// passed.
fn run_script(generation: u8, script: &str, args: &[String], env: &Env, passed: &str) -> String {
    run_passing(mcp_script(generation, script, env).args(args), passed)
}

/// `serve --mcp --http 127.0.0.1:0` for `ticker`, with `config` as the operator's `toolhost.toml`.
fn serve_http(env: &Env, config: &str) -> Server {
    Server::start(env.configured(config).args(SERVE).args(["--http", "127.0.0.1:0"]))
}

#[test]
fn mcp_progress_and_cancellation_with_the_official_sdk_over_stdio() {
    let env = ticker();
    let audit = env.at("audit.jsonl");
    let args = stdio(&env, &format!("[audit]\nfile = {:?}\n", audit.display().to_string()));
    run_script(1, "long.py", &args, &env, "MCP long checks passed (stdio)");
    // The cancelled call is in the audit trail as cancelled.
    let lines = std::fs::read_to_string(&audit).unwrap();
    assert!(
        lines.lines().any(|l| l.contains("\"tool\":\"tick\"") && l.contains("\"outcome\":\"cancelled\"")),
        "{lines}"
    );
}

#[test]
fn mcp_progress_and_cancellation_with_the_official_sdk_over_http() {
    let env = ticker();
    let server = serve_http(&env, "");
    run_script(1, "long.py", &["http".into(), server.url.clone()], &env, "passed (http)");
}

#[test]
fn mcp_2026_progress_with_the_official_sdk_2() {
    let env = ticker();
    let args = stdio(&env, "");
    run_script(2, "long2.py", &args, &env, "passed (sdk2 stdio)");
    let server = serve_http(&env, "");
    run_script(2, "long2.py", &["http".into(), server.url.clone()], &env, "passed (sdk2 http)");
}

#[test]
fn mcp_tasks_with_a_raw_2026_client() {
    let env = ticker();
    let config =
        "[mcp]\ntasks_max_running = 3\ntasks_max_running_per_client = 2\n[serve]\nshutdown_grace_ms = 200\n";
    let args = stdio(&env, config);
    run_script(1, "tasks.py", &args, &env, "MCP task checks passed (stdio)");
}

/// The 2025-11-25 experimental tasks, with the official SDK 1.x's task client over stdio and
/// HTTP (where a second client shows it cannot see or cancel the first one's task).
#[test]
fn mcp_2025_11_25_tasks_with_the_official_sdk() {
    let env = ticker();
    let args = stdio(&env, "");
    run_script(1, "tasks2025.py", &args, &env, "MCP 2025-11-25 task checks passed (stdio)");
    let server = serve_http(&env, "");
    run_script(
        1,
        "tasks2025.py",
        &["http".into(), server.url.clone()],
        &env,
        "MCP 2025-11-25 task checks passed (http)",
    );
}

#[test]
fn an_http_client_that_goes_away_stops_its_call() {
    let env = ticker();
    let server = serve_http(&env, "");
    run_script(1, "tasks.py", &["http-disconnect".into(), server.url.clone()], &env, "passed");
}

/// An observer that records the progress it is shown, by call id (what a live view of running
/// calls, such as a console, would use).
#[derive(Default)]
struct Watcher {
    ids: Mutex<Vec<u64>>,
    seen: Mutex<Vec<(u64, String, u64)>>,
}

impl toolhost_core::executor::CallObserver for Watcher {
    fn observe<'a>(
        &'a self,
        _call: &'a ToolCall,
        _ctx: &'a CallContext,
        record: toolhost_core::executor::observer::SharedRecord,
        run: toolhost_core::executor::observer::CallRun<'a>,
    ) -> toolhost_core::executor::observer::CallRun<'a> {
        self.ids.lock().unwrap().push(record.lock().unwrap().id);
        run
    }

    fn wants_progress(&self) -> bool {
        true
    }

    fn progress(&self, id: u64, call: &ToolCall, p: &Progress) {
        self.seen.lock().unwrap().push((id, call.name.clone(), p.done));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_sees_the_progress_of_every_call_by_its_id() {
    let env = ticker();
    let host = env.host();
    let watcher = Arc::new(Watcher::default());
    assert!(host.executor.attach_observer(watcher.clone()));
    // No front-end sink: the observer alone follows the call.
    assert_eq!(ok(&crate::support::call(&host, "tick", &["5", "10", ""]).await), "counted to 5");
    let ids = watcher.ids.lock().unwrap().clone();
    let seen = watcher.seen.lock().unwrap().clone();
    assert_eq!(ids.len(), 1);
    assert!(ids[0] > 0, "calls are numbered");
    assert!(!seen.is_empty() && seen.iter().all(|(id, tool, _)| *id == ids[0] && tool == "tick"), "{seen:?}");
    assert_eq!(seen.last().unwrap().2, 5, "the last report reaches the observer");
}

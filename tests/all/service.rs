//! toolhost as a service (#17): graceful shutdown on SIGTERM (HTTP and stdio), the probes,
//! `/metrics` read back with a Prometheus text-format parser, the audit trail (one line per
//! call, every outcome kind, no secret), a read-only plugins folder approved from the config,
//! and the deployment files kept true to the flags.

use crate::support::lines::{spawn_piped, spawn_reading};
use crate::support::mcp_http::INITIALIZE;
use crate::support::python::python;
use crate::support::server::{exit_status, sigterm};
use crate::support::{Env, Server, poll, root, runtime, wait_line};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use toolhost_core::ErrorKind;
use toolhost_core::executor::{AlwaysConfirm, NoConfirm, ToolCall};
use toolhost_frontends::service::Service;
use toolhost_frontends::service::audit::AuditLog;

pub(crate) const TOKEN: &str = "service-token-4c1d9e7f2a";
const SECRET: &str = "audit-secret-value-7e3b19";

/// A service folder: plugins, a config with a token, an audit file and the given extra TOML.
pub(crate) struct Deployment {
    pub(crate) env: Env,
    pub(crate) dir: tempfile::TempDir,
}

impl Deployment {
    pub(crate) fn new(plugins: &[&str], extra: &str) -> Deployment {
        let env = Env::with(plugins);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("toolhost.toml"),
            format!(
                "[mcp]\ntokens = [{{ name = \"ci\", env = \"TOOLHOST_TEST_SERVICE_TOKEN\" }}]\n\n\
                 [audit]\nfile = \"audit/audit.jsonl\"\n\n{extra}"
            ),
        )
        .unwrap();
        Deployment { env, dir }
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.dir.path().join("toolhost.toml")
    }

    pub(crate) fn audit(&self) -> Vec<serde_json::Value> {
        read_audit(&self.dir.path().join("audit/audit.jsonl"))
    }

    /// The env's command with this config, run in the service folder.
    pub(crate) fn command(&self) -> Command {
        let mut cmd = self.env.command();
        cmd.arg("--config")
            .arg(self.config())
            .env("TOOLHOST_TEST_SERVICE_TOKEN", TOKEN)
            .env("TOOLHOST_LOG", "toolhost=debug")
            .current_dir(self.dir.path());
        cmd
    }

    /// `serve --mcp` over stdio: the child, its stdin, and its stdout read line by line.
    pub(crate) fn serve_stdio(&self) -> (Child, std::process::ChildStdin, Receiver<String>) {
        let (child, stdin, out, _) = spawn_piped(self.command().args(["serve", "--mcp"]));
        (child, stdin, out)
    }

    /// `serve --mcp` over stdio, its session initialized (2025-06-18).
    pub(crate) fn stdio_session(&self) -> StdioSession {
        let (child, stdin, out) = self.serve_stdio();
        let mut s = StdioSession { child, stdin, out, seen: Vec::new() };
        s.ask(1, r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#);
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    /// `serve --mcp --http 127.0.0.1:0`.
    pub(crate) fn serve_http(&self) -> Server {
        Server::start(self.command().args(["serve", "--mcp", "--http", "127.0.0.1:0"]))
    }
}

/// A raw MCP client of a server over stdio: lines written, answers read as they come.
pub(crate) struct StdioSession {
    pub(crate) child: Child,
    stdin: std::process::ChildStdin,
    out: Receiver<String>,
    seen: Vec<String>,
}

impl StdioSession {
    pub(crate) fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send the request `line` (of `id`) and wait for its answer line.
    pub(crate) fn ask(&mut self, id: u64, line: &str) -> String {
        self.send(line);
        wait_line(&self.out, &format!(r#""id":{id}"#), 60, &mut self.seen)
    }

    /// `tools/call` of `tool` with `arguments`, as request `id`: its answer line.
    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: serde_json::Value) -> String {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        self.ask(id, &body.to_string())
    }
}

fn read_audit(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("audit line is not JSON ({e}): {l}")))
        .collect()
}

/// What a deployment's server is asked with its token.
pub(crate) trait Deployed {
    /// `/metrics` with the token, parsed.
    fn metrics(&self) -> Metrics;
    /// A new MCP session's `initialize`, as any client starts: the status and head.
    fn initialize(&self) -> (u16, String);
}

impl Deployed for Server {
    fn metrics(&self) -> Metrics {
        let a = self.request("GET", "/metrics", &format!("Authorization: Bearer {TOKEN}\r\n"), "");
        assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
        assert!(a.head.to_lowercase().contains("content-type: text/plain; version=0.0.4"), "{}", a.head);
        Metrics::parse(&a.body)
    }

    fn initialize(&self) -> (u16, String) {
        let headers = format!(
            "Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        );
        let a = self.request("POST", "/mcp", &headers, INITIALIZE);
        (a.status, a.head)
    }
}

/// A `/metrics` exposition, parsed by `prometheus-parse` (strictly: every line must parse).
pub(crate) struct Metrics {
    samples: Vec<prometheus_parse::Sample>,
    text: String,
}

impl Metrics {
    fn parse(text: &str) -> Metrics {
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = prometheus_parse::Scrape::parse(lines).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // Every data line went into a sample (histogram lines into their histogram's): nothing
        // was skipped as unparsable.
        for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            let family =
                ["_bucket", "_sum", "_count"].iter().fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
            assert!(
                scrape.samples.iter().any(|s| s.metric == name || s.metric == family),
                "the parser skipped {line:?}:\n{text}"
            );
        }
        Metrics { samples: scrape.samples, text: text.to_string() }
    }

    /// The value of `metric` with exactly `labels` (0 if there is no such series).
    pub(crate) fn value(&self, metric: &str, labels: &[(&str, &str)]) -> f64 {
        let want: BTreeMap<String, String> =
            labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let found: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.metric == metric)
            .filter(|s| {
                let have: BTreeMap<String, String> =
                    s.labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                have == want
            })
            .map(|s| match &s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => *v,
                other => panic!("{metric} is not a plain value: {other:?}"),
            })
            .collect();
        assert!(found.len() <= 1, "{metric} {labels:?} twice:\n{}", self.text);
        found.first().copied().unwrap_or(0.0)
    }

    /// Whether `metric` is exported at all (a value of 0 and an absent metric read alike).
    pub(crate) fn has(&self, metric: &str) -> bool {
        self.samples.iter().any(|s| s.metric == metric)
    }

    /// The observation count of histogram `metric` for `labels`.
    fn histogram_count(&self, metric: &str, labels: &[(&str, &str)]) -> u64 {
        let want: BTreeMap<String, String> =
            labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.samples
            .iter()
            .filter(|s| s.metric == metric)
            .find_map(|s| {
                let have: BTreeMap<String, String> =
                    s.labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                match &s.value {
                    prometheus_parse::Value::Histogram(h) if have == want => {
                        Some(h.iter().map(|b| b.count as u64).max().unwrap_or(0))
                    }
                    _ => None,
                }
            })
            .unwrap_or(0)
    }
}

/// `tests/service/calls.py`: MCP calls over HTTP with the official SDK; its stdout lines.
fn mcp_calls(server: &Server, client: &str, calls: serde_json::Value) -> (Child, Receiver<String>) {
    spawn_reading(Command::new(python(1)).arg(root().join("tests/service/calls.py")).args([
        server.url.as_str(),
        TOKEN,
        client,
        &calls.to_string(),
    ]))
}

pub(crate) fn json_line(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// The issue's scenario: a slow call over streamable HTTP, SIGTERM while it runs. The call
/// completes and its client gets the result; meanwhile the server is not ready, still alive,
/// and answers new MCP requests 503 with Retry-After; then it exits 0.
#[test]
fn sigterm_over_http_lets_the_call_in_flight_finish() {
    let d = Deployment::new(
        &[plugin_artifacts::VERSIONED, plugin_artifacts::TEXT],
        "[serve]\nshutdown_grace_ms = 20000\n",
    );
    let mut server = d.serve_http();
    assert_eq!(server.get("/healthz"), (200, "ok\n".to_string()));
    assert_eq!(server.get("/readyz"), (200, "ready\n".to_string()));
    assert_eq!(server.get("/metrics").0, 401, "/metrics is behind the MCP token");
    assert_eq!(server.get("/nothing").0, 404);

    let (mut client, out) = mcp_calls(
        &server,
        "slow-client",
        serde_json::json!([
            { "name": "echo", "arguments": { "text": "first" } },
            { "name": "nap", "arguments": { "ms": 2500 } },
        ]),
    );
    let mut seen = Vec::new();
    let first = json_line(&wait_line(&out, "\"echo\"", 60, &mut seen));
    assert_eq!(first["text"], "first");
    // The nap is running when the server is told to stop.
    poll(30, "the nap in flight", || {
        (server.metrics().value("toolhost_calls_in_flight", &[]) == 1.0).then_some(())
    });
    let signalled = Instant::now();
    sigterm(&server.child);
    poll(10, "/readyz to say not ready", || {
        (server.get("/readyz") == (503, "not ready\n".into())).then_some(())
    });
    assert_eq!(server.get("/healthz").0, 200, "alive while draining");
    let (status, head) = server.initialize();
    assert_eq!(status, 503, "{head}");
    assert!(head.to_lowercase().contains("retry-after: 1"), "{head}");

    let nap = json_line(&wait_line(&out, "\"nap\"", 30, &mut seen));
    assert_eq!(nap["isError"], false, "{nap}");
    assert_eq!(nap["text"], "slept 2500 ms");
    let status = exit_status(&mut server.child, 20);
    assert!(status.success(), "{status:?}; log:\n{}", server.seen.join("\n"));
    assert!(signalled.elapsed() < Duration::from_secs(15), "{:?}", signalled.elapsed());
    let _ = client.wait();
    let log: Vec<String> = server.log.try_iter().collect();
    assert!(log.iter().any(|l| l.contains("SIGTERM: no new calls")), "{log:?}");

    // Both calls are in the audit trail, with who made them.
    let audit = d.audit();
    let tools: Vec<(&str, &str)> =
        audit.iter().map(|l| (l["tool"].as_str().unwrap(), l["outcome"].as_str().unwrap())).collect();
    assert_eq!(tools, [("echo", "ok"), ("nap", "ok")]);
    for line in &audit {
        assert_eq!(line["front_end"], "mcp-http");
        assert_eq!(line["client"], "slow-client");
        assert_eq!(line["token"], "ci");
    }
    assert_eq!(audit[1]["plugin"], "versioned");
    assert_eq!(audit[1]["args"], serde_json::json!(["2500"]));
    assert!(audit[1]["duration_ms"].as_f64().unwrap() >= 2500.0, "{}", audit[1]);
}

/// A call still running at the end of the grace period is stopped: its client gets an
/// `unavailable` error saying so (not a hang), and the server exits 0 soon after.
#[test]
fn sigterm_cancels_a_call_past_the_grace_period_with_a_clear_error() {
    let d = Deployment::new(
        &[plugin_artifacts::VERSIONED],
        "[serve]\nshutdown_grace_ms = 300\n\n[limits]\ntimeout_ms = 60000\n",
    );
    let mut server = d.serve_http();
    let (mut client, out) =
        mcp_calls(&server, "patient", serde_json::json!([{ "name": "nap", "arguments": { "ms": 30000 } }]));
    poll(60, "the nap in flight", || {
        (server.metrics().value("toolhost_calls_in_flight", &[]) == 1.0).then_some(())
    });
    let signalled = Instant::now();
    sigterm(&server.child);
    let mut seen = Vec::new();
    // Generous for a loaded CI machine, and still short of the 30 s nap: an answer in time is
    // the cancellation, not the nap finishing.
    let nap = json_line(&wait_line(&out, "\"nap\"", 25, &mut seen));
    assert_eq!(nap["isError"], true, "{nap}");
    let text = nap["text"].as_str().unwrap();
    assert!(
        text.contains("shutting down")
            && text.contains("grace period (300 ms")
            && text.contains("stopped")
            && text.ends_with("[unavailable]"),
        "{text}"
    );
    let status = exit_status(&mut server.child, 15);
    assert!(status.success(), "{status:?}");
    assert!(signalled.elapsed() < Duration::from_secs(25), "{:?}", signalled.elapsed());
    let _ = client.wait();
    let audit = d.audit();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["outcome"], "unavailable");
}

/// Over stdio too: after SIGTERM a new call is refused at once, the call in flight finishes
/// and is answered, and the process exits 0.
#[test]
fn sigterm_over_stdio_refuses_new_calls_and_finishes_the_one_in_flight() {
    let d = Deployment::new(&[plugin_artifacts::VERSIONED, plugin_artifacts::TEXT], "");
    let (mut child, mut stdin, out, err) = spawn_piped(d.command().args(["serve", "--mcp"]));
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let (mut seen, mut seen_err) = (Vec::new(), Vec::new());
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stdio-client","version":"0"}}}"#,
    );
    wait_line(&out, r#""id":1"#, 60, &mut seen);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nap","arguments":{"ms":1500}}}"#);
    wait_line(&err, "call admitted", 10, &mut seen_err);
    sigterm(&child);
    wait_line(&err, "SIGTERM: no new calls", 10, &mut seen_err);
    send(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"late"}}}"#,
    );
    let refused = json_line(&wait_line(&out, r#""id":3"#, 10, &mut seen));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("shutting down and accepts no new calls") && text.ends_with("[unavailable]"),
        "{text}"
    );
    let nap = json_line(&wait_line(&out, r#""id":2"#, 10, &mut seen));
    assert_eq!(nap["result"]["content"][0]["text"], "slept 1500 ms", "{nap}");
    let status = exit_status(&mut child, 15);
    assert!(status.success(), "{status:?}");
    let audit = d.audit();
    let tools: Vec<(&str, &str, &str)> = audit
        .iter()
        .map(|l| {
            (l["tool"].as_str().unwrap(), l["outcome"].as_str().unwrap(), l["front_end"].as_str().unwrap())
        })
        .collect();
    assert_eq!(tools, [("echo", "unavailable", "mcp-stdio"), ("nap", "ok", "mcp-stdio")]);
    assert!(audit.iter().all(|l| l["client"] == "stdio-client" && l["token"].is_null()), "{audit:?}");
}

/// `/metrics`: a Prometheus text-format parser reads it, and the counts match the calls made
/// (by tool and outcome), the latency histograms count them, and a reload is counted.
#[test]
fn metrics_count_the_calls_made() {
    let d = Deployment::new(&[plugin_artifacts::VERSIONED, plugin_artifacts::TEXT], "");
    let server = d.serve_http();
    let before = server.metrics();
    assert_eq!(before.value("toolhost_plugins_loaded", &[]), 2.0);
    assert_eq!(before.value("toolhost_plugins_pending_approval", &[]), 0.0);
    assert_eq!(before.value("toolhost_calls_in_flight", &[]), 0.0);
    assert_eq!(before.value("toolhost_reloads_total", &[]), 0.0);
    let (mut client, out) = mcp_calls(
        &server,
        "counter",
        serde_json::json!([
            { "name": "echo", "arguments": { "text": "one" } },
            { "name": "echo", "arguments": { "text": "two" } },
            { "name": "which", "arguments": {} },
            { "name": "echo", "arguments": { "text": "three" } },
            { "name": "echo", "arguments": {} },
            { "name": "no_such_tool", "arguments": {} },
        ]),
    );
    let mut seen = Vec::new();
    wait_line(&out, "no_such_tool", 60, &mut seen);
    let _ = client.wait();
    let m = server.metrics();
    let calls = |tool, outcome| m.value("toolhost_calls_total", &[("tool", tool), ("outcome", outcome)]);
    assert_eq!(calls("echo", "ok"), 3.0, "{}", m.text);
    assert_eq!(calls("which", "ok"), 1.0);
    assert_eq!(calls("echo", "bad_arguments"), 1.0);
    assert_eq!(calls("(unknown)", "unknown_tool"), 1.0);
    let total: f64 = m
        .samples
        .iter()
        .filter(|s| s.metric == "toolhost_calls_total")
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) => v,
            _ => 0.0,
        })
        .sum();
    assert_eq!(total, 6.0, "one count per call made");
    assert_eq!(m.histogram_count("toolhost_call_duration_seconds", &[("tool", "echo")]), 4);
    assert_eq!(m.histogram_count("toolhost_call_duration_seconds", &[("tool", "which")]), 1);
    assert_eq!(m.value("toolhost_calls_in_flight", &[]), 0.0);
    assert_eq!(m.value("toolhost_calls_waiting", &[]), 0.0);
    assert_eq!(m.value("toolhost_tools_loaded", &[]), d.env.registry().tools().count() as f64);

    // A plugin dropped into the folder is a reload.
    std::fs::copy(plugin_artifacts::FILES, d.env.plugins.path().join("files.wasm")).unwrap();
    let m = poll(30, "the reload to be counted", || {
        let m = server.metrics();
        (m.value("toolhost_reloads_total", &[]) >= 1.0).then_some(m)
    });
    assert_eq!(m.value("toolhost_plugins_loaded", &[]), 3.0);
    assert_eq!(m.value("toolhost_reload_failures_total", &[]), 0.0);
    assert_eq!(d.audit().len(), 6, "one audit line per call");
}

/// The audit trail, written by the executor's service for every outcome kind: one line per
/// call, in the calls' order, with the plugin's name, version and SHA-256, the danger decision
/// and who made it, secrets redacted and long arguments cut and hashed. The metrics counted
/// the same calls.
#[tokio::test(flavor = "current_thread")]
async fn the_audit_trail_has_one_line_per_call_for_every_outcome_kind() {
    use toolhost_core::settings::{FsGrant, LimitOverrides, SecretFrom, SecretSource, ToolConfig};
    let mut env = Env::with(&[
        plugin_artifacts::HOSTILE,
        plugin_artifacts::TEXT,
        plugin_artifacts::FILES,
        plugin_artifacts::VERSIONED,
    ]);
    let secret_file = env.workspace.path().join("secret.txt");
    std::fs::write(&secret_file, SECRET).unwrap();
    env.config.secrets.insert(
        "api_token".into(),
        SecretSource { name: "api_token".into(), from: SecretFrom::File(secret_file), hosts: vec![] },
    );
    env.config.limits.memory_mb = 32;
    env.config.grant_workspace("text", toolhost_spec::manifest::FsMode::ReadOnly);
    // `files` is granted a directory that does not exist: its calls cannot be set up.
    env.config.plugins.entry("files".into()).or_default().fs.push(FsGrant {
        name: "workspace".into(),
        host_path: env.workspace.path().join("gone"),
        mode: toolhost_spec::manifest::FsMode::ReadWrite,
        create: false,
    });
    env.config.plugins.entry("versioned".into()).or_default().concurrency = Some(1);
    let tool = |timeout_ms: Option<u64>, output_limit: Option<usize>| ToolConfig {
        danger: None,
        policy: None,
        limits: LimitOverrides { timeout_ms, output_limit, ..LimitOverrides::default() },
    };
    env.config.tools.insert("spin".into(), tool(Some(300), None));
    env.config.tools.insert("which".into(), tool(Some(300), None));
    env.config.tools.insert("echo".into(), tool(None, Some(20)));
    let mut frontends = toolhost_frontends::Settings::default();
    frontends.serve.shutdown_grace = Duration::from_millis(200);
    let host = env.host();
    let dir = tempfile::tempdir().unwrap();
    let audit_path = dir.path().join("audit.jsonl");
    let service = Arc::new(Service::new(
        &host.config,
        &frontends,
        host.registry.clone(),
        "library",
        Some(AuditLog::open(&audit_path, 1 << 20, 1).unwrap()),
    ));
    assert!(host.executor.attach_observer(service.clone()));

    let long = format!("{SECRET} {}", "x".repeat(1000));
    let run = |name: &str, args: &[&str]| ToolCall::new(name, args.iter().copied());
    // (call, expected outcome); the kinds a service can see, each at least once.
    let sequential: Vec<(ToolCall, &str)> = vec![
        (run("echo", &["short"]), "ok"),
        (run("echo", &[&format!("token {SECRET} inside")]), "ok"),
        (run("echo", &[&long]), "ok"),
        (run("nope", &["a"]), "unknown_tool"),
        (run("nap", &["not json"]), "bad_arguments"),
        (run("net_probe", &["http://example.com/"]), "tool_error"),
        (run("spin", &[]), "timeout"),
        (run("hog", &[]), "memory_limit"),
        (run("recurse", &[]), "stack_overflow"),
        (run("crash", &[]), "trap"),
        (run("ls", &["."]), "host_error"),
        (run("delete", &["x"]), "denied"),
    ];
    let mut expected: Vec<(String, String)> = Vec::new();
    for (call, want) in &sequential {
        let o = host.executor.call_with(call, &NoConfirm).await;
        assert_eq!(o.kind.map(|k| k.to_string()).unwrap_or_else(|| "ok".into()), *want, "{call:?}: {o:?}");
        expected.push((call.name.clone(), want.to_string()));
    }
    // The operator's --yes allows the dangerous call (which then cannot be set up).
    let o = host.executor.call_with(&run("delete", &["x"]), &AlwaysConfirm).await;
    assert_eq!(o.kind, Some(ErrorKind::HostError), "{o:?}");
    expected.push(("delete".into(), "host_error".into()));

    // busy: `versioned` runs one call at a time; `which` waits past its 300 ms deadline. Its
    // code is linked first (a plugin from the compile cache is linked on first use, off the
    // async workers), so the nap holds its slot from the moment it is admitted.
    host.registry.load().get("nap").unwrap().plugin.code.get().unwrap();
    let nap = tokio::spawn({
        let exec = host.executor.clone();
        async move { exec.call(&ToolCall::new("nap", ["1000"])).await }
    });
    while service.lifecycle.in_flight() == 0 {
        tokio::task::yield_now().await; // current-thread: the nap runs until it sleeps, slot held
    }
    let o = host.executor.call(&run("which", &[])).await;
    assert_eq!(o.kind, Some(ErrorKind::Busy), "{o:?}");
    assert!(nap.await.unwrap().success);
    expected.push(("which".into(), "busy".into()));
    expected.push(("nap".into(), "ok".into()));

    // cancelled by its caller while it runs.
    let cancel = toolhost_core::executor::Cancel::new();
    let control = toolhost_core::executor::CallControl::default().with_cancel(cancel.clone());
    let call = ToolCall::new("nap", ["5000"]);
    let ctx = toolhost_core::executor::CallContext::default();
    let cancelled = host.executor.call_controlled(&call, &NoConfirm, &ctx, &control);
    let cancelled = async {
        tokio::join!(cancelled, async {
            while service.lifecycle.in_flight() == 0 {
                tokio::task::yield_now().await;
            }
            cancel.cancel("the test");
        })
        .0
    };
    let o = cancelled.await;
    assert_eq!(o.kind, Some(ErrorKind::Cancelled), "{o:?}");
    expected.push(("nap".into(), "cancelled".into()));

    // stopped at the end of the grace period, then refused: both unavailable.
    let slow = tokio::spawn({
        let exec = host.executor.clone();
        async move { exec.call(&ToolCall::new("nap", ["5000"])).await }
    });
    while service.lifecycle.in_flight() == 0 {
        tokio::task::yield_now().await;
    }
    let drained = service.shutdown().await;
    assert_eq!((drained.in_flight, drained.cancelled), (1, 1));
    let o = slow.await.unwrap();
    // Stopped by the shutdown, not by its client: to the client the service is unavailable.
    assert_eq!(o.kind, Some(ErrorKind::Unavailable), "{o:?}");
    assert!(o.error.as_deref().unwrap().contains("grace period (200 ms"), "{o:?}");
    let o = host.executor.call(&run("echo", &["after"])).await;
    assert_eq!(o.kind, Some(ErrorKind::Unavailable), "{o:?}");
    assert!(o.error.as_deref().unwrap().contains("accepts no new calls"), "{o:?}");
    expected.push(("nap".into(), "unavailable".into()));
    expected.push(("echo".into(), "unavailable".into()));

    // One line per call, in order.
    let text = std::fs::read_to_string(&audit_path).unwrap();
    assert!(!text.contains(SECRET), "a secret reached the audit trail:\n{text}");
    let audit = read_audit(&audit_path);
    let got: Vec<(String, String)> = audit
        .iter()
        .map(|l| (l["tool"].as_str().unwrap().to_string(), l["outcome"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got, expected);
    for kind in [
        "ok",
        "unknown_tool",
        "bad_arguments",
        "denied",
        "tool_error",
        "timeout",
        "memory_limit",
        "stack_overflow",
        "trap",
        "host_error",
        "busy",
        "cancelled",
        "unavailable",
    ] {
        assert!(audit.iter().any(|l| l["outcome"] == kind), "no {kind} line");
    }
    let echo = &audit[0];
    let text_plugin = host.registry.load().get("echo").unwrap().plugin.clone();
    assert_eq!(echo["front_end"], "library");
    assert_eq!(echo["plugin"], "text");
    assert_eq!(echo["version"], text_plugin.manifest.version.as_str());
    assert_eq!(echo["sha256"], hex::encode(&text_plugin.hash));
    assert_eq!(echo["args"], serde_json::json!(["short"]));
    assert!(echo["time"].as_str().unwrap().ends_with('Z') && echo["danger"].is_null());
    assert_eq!(audit[1]["args"], serde_json::json!(["token [secret api_token redacted] inside"]));
    let cut = audit[2]["args"][0].as_str().unwrap();
    let redacted_long = format!("[secret api_token redacted] {}", "x".repeat(1000));
    let hash = toolhost_spec::digest::sha256_hex(redacted_long.as_bytes());
    assert!(cut.starts_with("[secret api_token redacted] xxx"), "{cut}");
    assert!(cut.ends_with(&format!("[{} chars, sha256:{hash}]", redacted_long.chars().count())), "{cut}");
    assert!(cut.chars().count() < 200, "{cut}");
    assert_eq!(audit[2]["truncated"], true, "echo's output limit is 20");
    assert_eq!(audit[0]["truncated"], false);
    assert!(audit[3]["plugin"].is_null(), "no plugin for an unknown tool");
    assert_eq!(audit[11]["danger"], serde_json::json!({ "decision": "deny", "by": "no_one" }));
    assert_eq!(audit[12]["danger"], serde_json::json!({ "decision": "allow", "by": "flag" }));

    // The metrics counted the same calls.
    let m = Metrics::parse(&service.metrics_text());
    let mut by_label: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (tool, outcome) in &expected {
        let tool = if tool == "nope" { "(unknown)" } else { tool.as_str() };
        *by_label.entry((tool.to_string(), outcome.clone())).or_default() += 1.0;
    }
    for ((tool, outcome), n) in &by_label {
        assert_eq!(
            m.value("toolhost_calls_total", &[("tool", tool), ("outcome", outcome)]),
            *n,
            "{tool} {outcome}"
        );
    }
    assert_eq!(m.value("toolhost_danger_decisions_total", &[("decision", "deny"), ("by", "no_one")]), 1.0);
    assert_eq!(m.value("toolhost_danger_decisions_total", &[("decision", "allow"), ("by", "flag")]), 1.0);
}

/// A plugins folder nobody may write, approved from the config: `approve --print` gives the
/// entries, the host writes nothing into the folder, two replicas list the same registry, and
/// a plugin that is not in the lock (or whose file changed) is held.
#[test]
fn a_read_only_plugins_folder_is_approved_from_the_config() {
    let d = Deployment::new(&[plugin_artifacts::VERSIONED, plugin_artifacts::TEXT], "");
    let plugins = d.env.plugins.path();
    let toolhost = |args: &[&str]| {
        let out = d.command().args(args).stdin(Stdio::null()).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        (out.status.success(), stdout, stderr)
    };
    let (ok1, versioned_entry, e1) = toolhost(&["approve", "versioned", "--print", "--sha256"]);
    let (ok2, text_entry, e2) = toolhost(&["approve", "text", "--print"]);
    assert!(ok1 && ok2, "{e1}{e2}");
    assert!(
        versioned_entry.starts_with("[approvals.plugin.versioned]")
            && versioned_entry.contains("sha256 = \"")
    );
    assert!(
        text_entry.contains("request = { fs = [{ path = \"workspace\", mode = \"ro\" }]"),
        "{text_entry}"
    );
    assert!(!plugins.join(toolhost_core::registry::approvals::FILE).exists(), "--print writes nothing");
    let config = std::fs::read_to_string(d.config()).unwrap();
    std::fs::write(
        d.config(),
        format!("{config}\n[approvals]\nlocked = true\n\n{versioned_entry}\n{text_entry}"),
    )
    .unwrap();

    // Read-only (for anyone but root, who the test may be: then the listing proves it).
    let listing = |dir: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        names
    };
    let before = listing(plugins);
    #[cfg(unix)]
    std::fs::set_permissions(plugins, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let replica = || {
        let (ok, stdout, stderr) = toolhost(&["list", "--json"]);
        assert!(ok, "{stderr}");
        assert!(!stderr.contains("cannot record plugin approvals"), "{stderr}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    let (a, b) = (replica(), replica());
    assert_eq!(a, b, "two replicas serve the same registry");
    let names: Vec<&str> =
        a["plugins"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["text", "versioned"]);
    assert_eq!(a["pending"], serde_json::json!([]));
    assert_eq!(listing(plugins), before, "nothing was written into the plugins folder");
    let (ok, _, stderr) = toolhost(&["approve", "text"]);
    assert!(!ok && stderr.contains("approve text --print"), "{stderr}");

    // Not in the lock, or another file than the pinned one: held, and the folder untouched.
    #[cfg(unix)]
    std::fs::set_permissions(plugins, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::copy(plugin_artifacts::FILES, plugins.join("files.wasm")).unwrap();
    std::fs::copy(plugin_artifacts::VERSIONED_V2, plugins.join("versioned.wasm")).unwrap();
    let mut cfg = toolhost::Settings::load(Some(&d.config())).unwrap().core;
    cfg.plugins_dir = plugins.to_path_buf();
    let reg = toolhost_core::Registry::load(&runtime(), &cfg).unwrap();
    let loaded: Vec<&str> = reg.plugins().iter().map(|p| &*p.name).collect();
    assert_eq!(loaded, ["text"]);
    let pending: BTreeMap<&str, String> =
        reg.pending().iter().map(|p| (p.plugin.as_str(), p.extra.join("; "))).collect();
    assert!(pending["files"].contains("not in [approvals]"), "{pending:?}");
    assert!(
        pending["versioned"].contains("file sha256:") && pending["versioned"].contains("--print --sha256"),
        "{pending:?}"
    );
    assert!(!plugins.join(toolhost_core::registry::approvals::FILE).exists());
}

/// `deploy/`: the Kubernetes example, the systemd unit and the container recipe run toolhost
/// with flags it accepts and a config it parses; the probes, ports, the read-only plugins
/// volume and the grace periods agree with each other.
#[test]
fn the_deployment_files_agree_with_the_flags() {
    use clap::Parser;
    let deploy = root().join("deploy");
    let config_text = std::fs::read_to_string(deploy.join("toolhost.toml")).unwrap();
    let parse_config = |text: &str| {
        toolhost::Settings::from_str_at(text, Path::new("/etc/toolhost"), None)
            .unwrap_or_else(|e| panic!("deploy config does not parse: {e}"))
    };
    let config = parse_config(&config_text);
    let cli = |argv: &[String]| {
        toolhost::Cli::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{argv:?} is not a valid command line: {e}"))
    };
    // The serve command line: --config, --plugins, serve --mcp --http ADDR.
    let check_serve = |argv: &[String], what: &str| -> (toolhost::Cli, std::net::SocketAddr) {
        let parsed = cli(argv);
        let toolhost::Command::Serve(toolhost::commands::serve::Args { mcp, http, .. }) = &parsed.command
        else {
            panic!("{what}: not `serve`: {argv:?}")
        };
        assert!(*mcp, "{what}: serve without --mcp");
        let addr = http.unwrap_or_else(|| panic!("{what}: no --http"));
        (parsed, addr)
    };

    // Kubernetes: Deployment + Service (+ ConfigMap with the config).
    let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(
        &std::fs::read_to_string(deploy.join("kubernetes.yaml")).unwrap(),
    )
    .map(|doc| serde::Deserialize::deserialize(doc).expect("kubernetes.yaml is YAML"))
    .collect();
    let kind =
        |k: &str| docs.iter().find(|d| d["kind"] == k).unwrap_or_else(|| panic!("no {k} in kubernetes.yaml"));
    let (dep, svc, cm) = (kind("Deployment"), kind("Service"), kind("ConfigMap"));
    let cm_config = cm["data"]["toolhost.toml"].as_str().expect("ConfigMap data toolhost.toml");
    // The ConfigMap is deploy/toolhost.toml plus the lines only a fleet needs (`# fleet:`).
    let shared: Vec<&str> = cm_config.lines().filter(|l| !l.contains("# fleet:")).collect();
    assert_eq!(shared.join("\n").trim(), config_text.trim(), "the ConfigMap holds deploy/toolhost.toml");
    let fleet_config = parse_config(cm_config);
    let pod = &dep["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let argv: Vec<String> = std::iter::once("toolhost".to_string())
        .chain(c["args"].as_array().expect("container args").iter().map(|a| a.as_str().unwrap().to_string()))
        .collect();
    let (parsed, addr) = check_serve(&argv, "kubernetes.yaml");
    assert!(!addr.ip().is_loopback(), "a pod must listen beyond loopback: {addr}");
    let port = c["ports"][0]["containerPort"].as_u64().unwrap();
    assert_eq!(u64::from(addr.port()), port);
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        assert_eq!(c[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"].as_u64(), Some(port), "{probe}");
    }
    let plugins = parsed.global.plugins.clone().expect("--plugins");
    let mount = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| Path::new(m["mountPath"].as_str().unwrap()) == plugins)
        .expect("the plugins folder is a mounted volume");
    assert_eq!(mount["readOnly"], true, "plugins come from a read-only volume");
    let config_path = parsed.global.config.clone().expect("--config");
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| config_path.starts_with(m["mountPath"].as_str().unwrap())),
        "the config is mounted"
    );
    assert!(config.core.approvals.locked, "a read-only folder needs the approvals in the config");
    let grace_s = pod["terminationGracePeriodSeconds"].as_u64().expect("terminationGracePeriodSeconds");
    assert!(
        grace_s * 1000 >= config.frontends.serve.shutdown_grace.as_millis() as u64 + 7000,
        "Kubernetes must wait for serve.shutdown_grace_ms plus the cancel (5 s) and the last answers (2 s)"
    );
    assert_eq!(svc["spec"]["selector"], dep["spec"]["selector"]["matchLabels"]);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"].as_u64(), Some(port));
    // Rolling restarts and node drains take one replica at a time (#30); the Ingress keeps a
    // 2025 session client on one replica and replays nothing that reached one.
    let pdb = kind("PodDisruptionBudget");
    assert_eq!(pdb["spec"]["selector"], dep["spec"]["selector"], "the budget covers the replicas");
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert_eq!(dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 1);
    let ingress = kind("Ingress");
    let notes = &ingress["metadata"]["annotations"];
    assert_eq!(notes["nginx.ingress.kubernetes.io/upstream-hash-by"], "$remote_addr");
    assert_eq!(notes["nginx.ingress.kubernetes.io/proxy-next-upstream"], "error timeout");
    let backend = &ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"];
    assert_eq!(backend["name"], svc["metadata"]["name"]);
    assert_eq!(backend["port"]["name"], svc["spec"]["ports"][0]["name"]);
    // Tokens come from a Secret, as the config names them.
    let env_names: Vec<&str> = c["env"]
        .as_array()
        .map(|e| e.iter().filter_map(|v| v["name"].as_str()).collect())
        .unwrap_or_default();
    for (name, source) in &config.frontends.mcp.tokens {
        if let toolhost_core::settings::SecretFrom::Env(var) = &source.from {
            assert!(
                env_names.contains(&var.as_str()),
                "token `{name}` reads {var}, which the pod does not set"
            );
        }
    }
    // The replicas share the approval key and the replay store, each from a Secret (#30).
    let mcp = &fleet_config.frontends.mcp;
    let store = match &mcp.replay_store {
        Some(toolhost_frontends::mcp::StoreUrl::Secret(s)) => s,
        other => panic!("the fleet's replay_store comes from a secret: {other:?}"),
    };
    for (what, source) in
        [("approval_key", mcp.approval_key.as_ref().expect("a shared approval_key")), ("replay_store", store)]
    {
        let toolhost_core::settings::SecretFrom::Env(var) = &source.from else {
            panic!("{what} is read from the environment in the pod")
        };
        let set = c["env"].as_array().unwrap().iter().find(|v| v["name"] == var.as_str());
        assert!(
            set.is_some_and(|v| v["valueFrom"]["secretKeyRef"]["name"].is_string()),
            "{what} reads {var}, which the pod must set from a Secret"
        );
    }

    // systemd: ExecStart is a valid serve command line; stopping waits past the grace period.
    let unit = std::fs::read_to_string(deploy.join("toolhost.service")).unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("ExecStart=");
    let argv: Vec<String> = exec.split_whitespace().map(str::to_string).collect();
    assert!(argv[0].ends_with("/toolhost"), "{exec}");
    let (parsed, _) = check_serve(&argv, "toolhost.service");
    assert_eq!(parsed.global.config.as_deref(), Some(Path::new("/etc/toolhost/toolhost.toml")));
    assert!(unit.contains("KillSignal=SIGTERM") && unit.contains("KillMode=mixed"), "{unit}");
    let stop_s: u64 = unit
        .lines()
        .find_map(|l| l.strip_prefix("TimeoutStopSec="))
        .expect("TimeoutStopSec=")
        .trim()
        .parse()
        .unwrap();
    assert!(stop_s * 1000 > config.frontends.serve.shutdown_grace.as_millis() as u64 + 2000);

    // The container recipe: its ENTRYPOINT + CMD is a valid serve command line, its healthcheck
    // uses /readyz... through the port it serves.
    let recipe = std::fs::read_to_string(deploy.join("Containerfile")).unwrap();
    let json_array = |prefix: &str| -> Vec<String> {
        let line =
            recipe.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_else(|| panic!("no {prefix}"));
        serde_json::from_str(line.trim())
            .unwrap_or_else(|e| panic!("{prefix} is not an exec-form array: {e}"))
    };
    let argv: Vec<String> = json_array("ENTRYPOINT ").into_iter().chain(json_array("CMD ")).collect();
    let (_, addr) = check_serve(&argv, "Containerfile");
    assert!(recipe.contains(&format!("EXPOSE {}", addr.port())), "EXPOSE the --http port");
    assert!(recipe.contains("STOPSIGNAL SIGTERM"), "{recipe}");
}

/// `call` and `run` write the trail too when `[audit] file` is set (and not otherwise).
#[test]
fn one_off_commands_are_audited_when_a_file_is_configured() {
    let d = Deployment::new(&[plugin_artifacts::TEXT], "");
    let out = d.command().args(["call", "echo", "audited"]).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reply = d.dir.path().join("reply.txt");
    std::fs::write(&reply, "[TOOL] echo(one) [/TOOL] and [TOOL] nope() [/TOOL]").unwrap();
    let out = d.command().arg("run").arg(&reply).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let audit = d.audit();
    let got: Vec<(&str, &str, &str)> = audit
        .iter()
        .map(|l| {
            (l["front_end"].as_str().unwrap(), l["tool"].as_str().unwrap(), l["outcome"].as_str().unwrap())
        })
        .collect();
    assert_eq!(got, [("cli", "echo", "ok"), ("text", "echo", "ok"), ("text", "nope", "unknown_tool")]);

    std::fs::write(d.config(), "[audit]\nenabled = false\nfile = \"audit/other.jsonl\"\n").unwrap();
    let out = d.command().args(["call", "echo", "not audited"]).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success());
    assert!(!d.dir.path().join("audit/other.jsonl").exists(), "enabled = false writes nothing");
}

/// A second signal does not wait for the drain: the process exits at once, with the status of
/// a process killed by that signal.
#[test]
fn a_second_signal_exits_at_once() {
    let d = Deployment::new(
        &[plugin_artifacts::VERSIONED],
        "[serve]\nshutdown_grace_ms = 60000\n\n[limits]\ntimeout_ms = 60000\n",
    );
    let mut server = d.serve_http();
    let (mut client, _out) =
        mcp_calls(&server, "impatient", serde_json::json!([{ "name": "nap", "arguments": { "ms": 30000 } }]));
    poll(60, "the nap in flight", || {
        (server.metrics().value("toolhost_calls_in_flight", &[]) == 1.0).then_some(())
    });
    sigterm(&server.child);
    let mut seen = Vec::new();
    wait_line(&server.log, "SIGTERM: no new calls", 10, &mut seen);
    let again = Instant::now();
    sigterm(&server.child);
    let status = exit_status(&mut server.child, 10);
    assert!(again.elapsed() < Duration::from_secs(5), "{:?}", again.elapsed());
    assert_eq!(status.code(), Some(143), "{status:?}");
    wait_line(&server.log, "SIGTERM again: exiting now", 5, &mut seen);
    let _ = client.kill();
    let _ = client.wait();
}

//! OpenTelemetry (#30 item 3) on real parts, on loopback: `toolhost serve --mcp --http` with
//! `[telemetry] otlp_endpoint` exports to an OTLP/HTTP receiver built on the official
//! `opentelemetry-proto` Python package (`tests/otlp/receiver.py`, in target/pyenv2). A call
//! made with a W3C `traceparent` (in MCP `_meta`, or as the HTTP header) arrives as a span of
//! the caller's trace, the caller's span as its parent, with a child span for the plugin's HTTP
//! request to a local server (or for the program it runs); the console's Run continues a trace
//! too; the call metrics arrive; no argument value is in any of it. With
//! telemetry off, nothing connects to the receiver even with `OTEL_EXPORTER_OTLP_ENDPOINT` set.

use crate::support::mcp_http::Stateless;
use crate::support::python::python;
use crate::support::server::Killed;
use crate::support::{Env, Server, root};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the caller sends in `_meta` (its trace and span).
const META_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// What the caller sends as the HTTP header.
const HEADER_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
/// What the caller of a tool that runs a program sends in `_meta`.
const PROCESS_PARENT: &str = "00-6e0c63257de34c926f9efcd03899b0a1-2a9c7e3f5b1d4c60-01";
/// What the console's caller sends as the HTTP header.
const CONSOLE_PARENT: &str = "00-5b8aa5a2d2c872e8321cf37308d69df2-051581bf3cb55c13-01";
/// The caller of a code-mode script (#61): its inner calls are the script's children.
const SCRIPT_PARENT: &str = "00-7d1e4c2a9b3f5e6071829a3b4c5d6e7f-3c4d5e6f708192a3-01";
/// In the argument of every call: never in a span or a metric.
const MARKER: &str = "argument-value-7c41d2";

/// The receiver, killed on drop; every JSON line it printed.
struct Receiver {
    _process: Killed,
    port: u16,
    lines: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let mut child = Command::new(python(2))
            .arg(root().join("tests/otlp/receiver.py"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        let first: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first:?}"));
        let port = first["listening"].as_u64().unwrap_or_else(|| panic!("{first}")) as u16;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        Receiver { _process: Killed(child), port, lines }
    }

    fn lines(&self) -> Vec<Value> {
        self.lines.lock().unwrap().clone()
    }

    /// The lines once `done` holds for them (or after 20 s, whatever they are).
    fn wait_until(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let lines = self.lines();
            if done(&lines) || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `serve --mcp --http` of `env` with `config`, `hostile` granted loopback, and the variables
/// `vars`.
fn serve(env: &Env, config: &str, vars: &[(&str, String)]) -> Server {
    let config = format!("[plugin.hostile]\nnet = [\"127.0.0.1\"]\nnet_private = true\n\n{config}");
    let mut cmd = env.configured(&config);
    cmd.args(["serve", "--mcp", "--http", "127.0.0.1:0"]).envs(vars.iter().map(|(k, v)| (k, v)));
    Server::start(&mut cmd)
}

/// SIGTERM, then wait for the exit (the last spans and metrics are exported on the way out).
fn stop(mut server: Server) {
    server.terminate(30);
}

/// One stateless 2026-07-28 `tools/call` of `net_probe(url)`, with `meta` merged into `_meta`
/// and `headers` (whole lines) on the request; returns the JSON-RPC result.
fn net_probe(mcp: &str, url: &str, meta: Value, headers: &str) -> Value {
    tools_call(mcp, "net_probe", json!({ "url": url }), meta, headers)
}

/// One stateless 2026-07-28 `tools/call`, which must succeed (see [`net_probe`]).
fn tools_call(mcp: &str, tool: &str, arguments: Value, meta: Value, headers: &str) -> Value {
    let client = Stateless { url: mcp, auth: "", client: "telemetry-test", capabilities: json!({}) };
    let mut params = client.params(tool, arguments);
    params["_meta"].as_object_mut().unwrap().extend(meta.as_object().unwrap().clone());
    let (status, head, r) = client.call_with(params, headers);
    assert_eq!(status, 200, "{head}");
    assert_eq!(r["result"]["isError"], false, "{r}");
    r["result"].clone()
}

/// `net_probe(url)` through the web console's Run, with `traceparent` as the HTTP header,
/// signed in with the login link of the server's local key.
fn console_net_probe(server: &Server, url: &str, traceparent: &str) {
    let key = server.key.as_deref().expect("the local key is printed");
    let login = server.request("GET", &format!("/console/login?key={key}"), "", "");
    assert_eq!(login.status, 303, "{}", login.head);
    let cookie = login.header("set-cookie").unwrap_or_else(|| panic!("no session cookie: {}", login.head));
    let cookie = format!("Cookie: {}\r\n", cookie.split(';').next().unwrap());
    let session = server.request("GET", "/console/api/session", &cookie, "");
    assert_eq!(session.status, 200, "{}", session.body);
    let session = session.json();
    let csrf = session["csrf"].as_str().unwrap_or_else(|| panic!("{session}"));
    let body = json!({"tool": "net_probe", "arguments": {"url": url}}).to_string();
    let headers = format!(
        "{cookie}Content-Type: application/json\r\nX-CSRF-Token: {csrf}\r\ntraceparent: {traceparent}\r\n"
    );
    let answer = server.request("POST", "/console/api/call", &headers, &body);
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("\"success\":true"), "{}", answer.body);
}

fn spans_of<'a>(lines: &'a [Value], trace: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["span"].is_string() && l["trace_id"] == trace).collect()
}

fn named<'a>(spans: &[&'a Value], name: &str) -> &'a Value {
    spans.iter().find(|s| s["span"] == name).unwrap_or_else(|| panic!("no `{name}` span in {spans:#?}"))
}

#[test]
fn a_traced_call_continues_the_callers_trace_with_its_http_request_and_the_metrics_arrive() {
    let web = crate::net::server();
    let receiver = Receiver::start();
    let env = Env::with(&[plugin_artifacts::HOSTILE, plugin_artifacts::SYSTEM]);
    let echo = toolhost_core::capability::process::resolve_in_path("echo").unwrap();
    let config = format!(
        "[plugin.sys]\nexec = [{{ program = \"{}\" }}]\n[tool.run]\ndanger = false\n\n[code_mode]\nenabled = true\n\n[telemetry]\notlp_endpoint = \"http://127.0.0.1:{}\"\nservice_name = \"toolhost-test\"\nmetrics_interval_ms = 200\n",
        echo.display(),
        receiver.port
    );
    let server = serve(&env, &config, &[]);
    let mcp = server.url.clone();
    let target = web.url("127.0.0.1", &format!("/hello?q={MARKER}"));
    // The caller's span in `_meta` (SEP-414) …
    net_probe(&mcp, &target, json!({ "traceparent": META_PARENT }), "");
    // … or as the HTTP request's header.
    net_probe(&mcp, &target, json!({}), &format!("traceparent: {HEADER_PARENT}\r\n"));
    // … or as the header of the web console's Run.
    console_net_probe(&server, &target, CONSOLE_PARENT);
    // A program run for a plugin is a child span too.
    let run = json!({"program": "echo", "args": MARKER});
    tools_call(&mcp, "run", run, json!({ "traceparent": PROCESS_PARENT }), "");
    // A script's inner calls are its children.
    let code = json!({"code": "return await tools.run({program: 'echo', args: 'inner'})"});
    tools_call(&mcp, "run_script", code, json!({ "traceparent": SCRIPT_PARENT }), "");
    let metrics_in = |lines: &[Value]| {
        lines.iter().any(|l| {
            l["metric"] == "toolhost.calls"
                && l["points"].as_array().unwrap().iter().any(|p| {
                    p["attributes"]["toolhost.tool"] == "net_probe"
                        && p["attributes"]["toolhost.outcome"] == "ok"
                        && p["value"].as_u64() >= Some(2)
                })
        })
    };
    // Metrics are exported every 200 ms while it runs; the spans at the latest on the way out.
    let lines = receiver.wait_until(metrics_in);
    assert!(metrics_in(&lines), "no toolhost.calls = 2 for net_probe: {lines:#?}");
    stop(server);
    let parents = [META_PARENT, HEADER_PARENT, CONSOLE_PARENT, PROCESS_PARENT, SCRIPT_PARENT];
    let lines = receiver.wait_until(|l| parents.iter().all(|p| spans_of(l, &p[3..35]).len() >= 2));

    for (parent, front_end) in
        [(META_PARENT, "mcp-http"), (HEADER_PARENT, "mcp-http"), (CONSOLE_PARENT, "console")]
    {
        let (trace, parent_span) = (&parent[3..35], &parent[36..52]);
        let spans = spans_of(&lines, trace);
        let call = named(&spans, "tools/call net_probe");
        assert_eq!(call["parent_span_id"], parent_span, "the caller's span is the call's parent: {call}");
        let a = &call["attributes"];
        assert_eq!(a["toolhost.tool"], "net_probe", "{call}");
        assert_eq!(a["toolhost.plugin"], "hostile", "{call}");
        assert!(a["toolhost.plugin.version"].as_str().is_some_and(|v| !v.is_empty()), "{call}");
        assert_eq!(a["toolhost.front_end"], front_end, "{call}");
        assert_eq!(a["toolhost.outcome"], "ok", "{call}");
        assert_eq!(a["toolhost.usage.http_requests"], 1, "{call}");
        assert!(a["toolhost.usage.wall_us"].as_i64() > Some(0), "{call}");
        assert_eq!(call["resource"]["service.name"], "toolhost-test", "{call}");
        let http = named(&spans, "http");
        assert_eq!(http["parent_span_id"], call["span_id"], "the request is the call's child: {http}");
        assert_eq!(http["attributes"]["http.request.method"], "GET", "{http}");
        assert_eq!(http["attributes"]["server.address"], "127.0.0.1", "{http}");
        assert_eq!(http["attributes"]["server.port"], web.port as i64, "{http}");
        assert_eq!(http["attributes"]["http.response.status_code"], 404, "{http}");
    }
    let spans = spans_of(&lines, &PROCESS_PARENT[3..35]);
    let call = named(&spans, "tools/call run");
    assert_eq!(call["parent_span_id"], &PROCESS_PARENT[36..52], "{call}");
    assert_eq!(call["attributes"]["toolhost.plugin"], "sys", "{call}");
    let process = named(&spans, "process");
    assert_eq!(process["parent_span_id"], call["span_id"], "the program is the call's child: {process}");
    assert_eq!(process["attributes"]["process.executable.name"], "echo", "{process}");
    assert_eq!(process["attributes"]["process.exit.code"], 0, "{process}");
    let spans = spans_of(&lines, &SCRIPT_PARENT[3..35]);
    let script = named(&spans, "tools/call run_script");
    assert_eq!(script["parent_span_id"], &SCRIPT_PARENT[36..52], "{script}");
    let inner = named(&spans, "tools/call run");
    assert_eq!(inner["parent_span_id"], script["span_id"], "the inner call is the script's child: {inner}");
    assert!(
        lines.iter().any(|l| l["metric"] == "toolhost.call.duration"),
        "no duration histogram: {lines:#?}"
    );
    // No argument value by default: not in a span, not in a metric.
    let all = serde_json::to_string(&lines).unwrap();
    assert!(!all.contains(MARKER), "an argument value was exported: {all}");
}

#[test]
fn with_telemetry_off_nothing_connects_to_a_collector() {
    let web = crate::net::server();
    let receiver = Receiver::start();
    let env = Env::with(&[plugin_artifacts::HOSTILE]);
    // The SDK's own variables name the receiver: only `[telemetry] otlp_endpoint` turns it on.
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let server = serve(&env, "", &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)]);
    let target = web.url("127.0.0.1", "/hello");
    net_probe(
        &server.url,
        &target,
        json!({ "traceparent": META_PARENT }),
        &format!("traceparent: {HEADER_PARENT}\r\n"),
    );
    stop(server);
    // Give a stray exporter the time a 200 ms metrics interval would need, then look.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(receiver.lines(), Vec::<Value>::new(), "telemetry is off: nothing may connect");
}

#[test]
fn captured_arguments_go_on_the_span_without_secret_values() {
    let web = crate::net::server();
    let receiver = Receiver::start();
    let env = Env::with(&[plugin_artifacts::HOSTILE]);
    let secret = "s3cr3t-value-9e2b41";
    // The front ends' secrets too (#55): the audit trail redacts them, and so must telemetry.
    let token = "mcp-token-value-5c1d7e2a";
    let key = "approval-key-value-0f9a33c8e1-7d5b2c4a9e";
    let config = format!(
        "[secrets.token]\nenv = \"TOOLHOST_TEST_OTEL_SECRET\"\n\n[mcp]\ntokens = [{{ name = \"ci\", env = \"TOOLHOST_TEST_OTEL_TOKEN\" }}]\n\
         approval_key = {{ env = \"TOOLHOST_TEST_OTEL_KEY\" }}\n\n[telemetry]\notlp_endpoint = \"http://127.0.0.1:{}\"\ncapture_arguments = true\n",
        receiver.port
    );
    let vars = [
        ("TOOLHOST_TEST_OTEL_SECRET", secret.to_string()),
        ("TOOLHOST_TEST_OTEL_TOKEN", token.to_string()),
        ("TOOLHOST_TEST_OTEL_KEY", key.to_string()),
    ];
    let server = serve(&env, &config, &vars);
    // A client that pastes a secret's value, the token and the fleet's key into an argument.
    let target = web.url("127.0.0.1", &format!("/hello?q={MARKER}&key={secret}&t={token}&k={key}"));
    net_probe(
        &server.url,
        &target,
        json!({ "traceparent": META_PARENT }),
        &format!("Authorization: Bearer {token}\r\n"),
    );
    stop(server);
    let lines = receiver.wait_until(|l| !spans_of(l, &META_PARENT[3..35]).is_empty());
    let spans = spans_of(&lines, &META_PARENT[3..35]);
    let call = named(&spans, "tools/call net_probe");
    let args =
        call["attributes"]["toolhost.arguments"].as_str().unwrap_or_else(|| panic!("no arguments: {call}"));
    assert!(args.contains(MARKER) && args.contains("[secret token redacted]"), "{args}");
    assert!(args.contains("[secret mcp token `ci` redacted]"), "{args}");
    assert!(args.contains("[secret mcp approval_key redacted]"), "{args}");
    let all = serde_json::to_string(&lines).unwrap();
    for value in [secret, token, key] {
        assert!(!all.contains(value), "a secret value was exported: {all}");
    }
}

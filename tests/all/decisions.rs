//! Issue #56's decision matrix: a 2025 session's `tools/call`, or a 2026-07-28 stateless one,
//! that the HTTP front door answers itself (`mcp::direct`, `mcp::stateless`: "the direct path")
//! gets the decision rmcp gives the same call ("rmcp's path": its session, or its per-request
//! service), for every danger policy × `[tool.NAME] policy` × `on_missing` × task support ×
//! client capabilities.
//!
//! Each call is sent twice in one session: (a) as clients send it, which the direct path may
//! answer, and (b) with a `progressToken`, which only rmcp serves. Both must get the same
//! answer (but for its cost, and a task's id and times) after the same questions
//! (`elicitation/create`), answered the same way. Which path answered (a) is asserted too,
//! against today's routing ([`direct_today`]): a change of routing is then a change of that
//! function, made on purpose.

use crate::support::Env;
use crate::support::mcp_http::{
    ANSWERED_DIRECTLY, Killed, exchange, keep_reading, open_session, send, serve_mcp_http_keyed,
    session_headers, without_usage,
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DANGER: [&str; 3] = ["allow", "ask", "deny"];
const TOOL_POLICY: [Option<&str>; 4] = [None, Some("allow"), Some("ask"), Some("deny")];
const ON_MISSING: [Option<&str>; 3] = [None, Some("ask"), Some("refuse")];

/// One server's settings: `[danger] policy`, every tool's `[tool.NAME] policy` (every tool is
/// made dangerous, so the danger policy applies where no tool policy is set), and ticker's
/// `on_missing` (ticker requests the workspace, which is not granted).
#[derive(Debug, Clone, Copy)]
struct Config {
    danger: &'static str,
    tool: Option<&'static str>,
    on_missing: Option<&'static str>,
}

impl Config {
    fn all() -> Vec<Config> {
        let mut all = Vec::new();
        for danger in DANGER {
            for tool in TOOL_POLICY {
                for on_missing in ON_MISSING {
                    all.push(Config { danger, tool, on_missing });
                }
            }
        }
        all
    }

    fn toml(&self) -> String {
        let mut t = format!("[danger]\npolicy = \"{}\"\n", self.danger);
        if let Some(o) = self.on_missing {
            t.push_str(&format!("\n[plugin.ticker]\non_missing = \"{o}\"\n"));
        }
        for support in SUPPORTS {
            t.push_str(&format!("\n[tool.{}]\ndanger = true\n", support.tool()));
            if let Some(p) = self.tool {
                t.push_str(&format!("policy = \"{p}\"\n"));
            }
        }
        t
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Support {
    Forbidden,
    Optional,
    Required,
}

const SUPPORTS: [Support; 3] = [Support::Forbidden, Support::Optional, Support::Required];

impl Support {
    /// The ticker tool whose manifest says this `taskSupport`.
    fn tool(self) -> &'static str {
        match self {
            Support::Forbidden => "flood",
            Support::Optional => "tick",
            Support::Required => "chore",
        }
    }

    /// Its arguments: `tick` writes a trail in the workspace, which ticker is not granted, so
    /// its call needs a grant (a question under `on_missing = "ask"`).
    fn arguments(self) -> Value {
        match self {
            Support::Forbidden => json!({"n": 1}),
            Support::Optional => json!({"n": 1, "ms": 0, "trail": "trail.txt"}),
            Support::Required => json!({"n": 1, "ms": 0}),
        }
    }
}

/// How a client takes tasks: not at all, with the `io.modelcontextprotocol/tasks` extension
/// (which both paths read), or with the 2025-11-25 `tasks` capability (which rmcp does not
/// model: a client that declares it asks for a task with a `task` member, not sent here).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tasks {
    No,
    Extension,
    Capability2025,
}

/// What a session's `initialize` declared, and whether its requests carry the server's local
/// key (without `[mcp] tokens` only such a client is asked questions: #55).
#[derive(Debug, Clone, Copy)]
struct Client {
    revision: &'static str,
    elicitation: bool,
    tasks: Tasks,
    keyed: bool,
}

const fn client(revision: &'static str, elicitation: bool, tasks: Tasks) -> Client {
    Client { revision, elicitation, tasks, keyed: true }
}

/// Every kind of client, with and without the key.
fn clients() -> Vec<Client> {
    let keyless = CLIENTS.iter().map(|c| Client { keyed: false, ..*c });
    CLIENTS.iter().copied().chain(keyless).collect()
}

const CLIENTS: [Client; 15] = [
    client("2025-03-26", false, Tasks::No),
    client("2025-03-26", true, Tasks::No),
    client("2025-06-18", false, Tasks::No),
    client("2025-06-18", true, Tasks::No),
    client("2025-06-18", false, Tasks::Extension),
    client("2025-06-18", true, Tasks::Extension),
    client("2025-11-25", false, Tasks::No),
    client("2025-11-25", true, Tasks::No),
    client("2025-11-25", false, Tasks::Capability2025),
    client("2025-11-25", true, Tasks::Capability2025),
    client("2025-11-25", false, Tasks::Extension),
    client("2025-11-25", true, Tasks::Extension),
    // Stateless: no session, everything in each request's `_meta`; questions as MRTR answers.
    client(STATELESS, false, Tasks::No),
    client(STATELESS, true, Tasks::No),
    client(STATELESS, true, Tasks::Extension),
];

/// The revision without sessions.
const STATELESS: &str = "2026-07-28";

impl Client {
    fn capabilities(&self) -> Value {
        let mut caps = json!({});
        if self.elicitation {
            // 2025-11-25 names the form mode; before it, an empty object means form.
            caps["elicitation"] = if self.revision >= "2025-11-25" { json!({"form": {}}) } else { json!({}) };
        }
        match self.tasks {
            Tasks::No => {}
            Tasks::Extension => caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}}),
            Tasks::Capability2025 => caps["tasks"] = json!({"requests": {"tools": {"call": {}}}}),
        }
        caps
    }

    /// A request's `_meta` as this client sends it: on the stateless revision, who it is.
    fn meta(&self, name: &str) -> Value {
        if self.revision != STATELESS {
            return json!({});
        }
        json!({
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientCapabilities": self.capabilities(),
            "io.modelcontextprotocol/clientInfo": {"name": name, "version": "0"},
        })
    }

    /// Whether the person behind it approves a dangerous call: on 2025-11-25 yes (the call runs
    /// on, and may ask for a grant next), before it no (it is refused).
    fn approves(&self) -> bool {
        self.revision == "2025-11-25"
    }

    /// The answer to a question of the server's, the same on both paths. A grant question is
    /// allowed once: a denial would hold for the rest of the server's session (the executor's
    /// memory of denials), and the next call would not be asked.
    fn reply(&self, request: &Value) -> Value {
        let asked = &request["params"]["requestedSchema"]["properties"];
        if asked.get("approve").is_some() && self.approves() {
            json!({"action": "accept", "content": {"approve": true}})
        } else if asked.get("allow").is_some() {
            json!({"action": "accept", "content": {"allow": true, "always": false}})
        } else {
            json!({"action": "decline"})
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tasks = match self.tasks {
            Tasks::No => "",
            Tasks::Extension => "+tasks-ext",
            Tasks::Capability2025 => "+tasks-cap",
        };
        let elicit = if self.elicitation { "+elicit" } else { "" };
        let key = if self.keyed { "" } else { " no-key" };
        write!(f, "{}{elicit}{tasks}{key}", self.revision)
    }
}

/// Which path answers (a) (`Direct::session`, `mcp::call::plan` and `answered_directly`): the
/// direct path, unless the client takes tasks (the extension), the tool runs only as a task
/// (and its policy does not refuse it: a refused call is answered at once, never a task), a
/// confirmation may be asked (the tool's policy — `[tool.NAME] policy`, else `[danger]
/// policy`, every tool here being dangerous — is `ask`) or a grant question may be (`on_missing
/// = "ask"`). Whether the client could be asked (elicitation, the key) is not looked at.
fn direct_today(config: &Config, support: Support, client: &Client) -> bool {
    let policy = config.tool.unwrap_or(config.danger);
    client.tasks != Tasks::Extension
        && (support != Support::Required || policy == "deny")
        && policy != "ask"
        && config.on_missing != Some("ask")
}

/// What one request got: the HTTP status, the server's questions (method and params) in
/// order, and the answer (its cost, and a task's id and times, left out).
#[derive(Debug, PartialEq)]
struct Seen {
    status: u16,
    questions: Vec<Value>,
    answer: Value,
}

impl Seen {
    /// The decision, in a few words, for the table.
    fn label(&self) -> String {
        let mut words: Vec<String> = self
            .questions
            .iter()
            .map(|q| {
                let asked = &q["params"]["requestedSchema"]["properties"];
                if asked.get("approve").is_some() { "asked danger" } else { "asked grant" }.to_string()
            })
            .collect();
        let result = &self.answer["result"];
        words.push(if let Some(e) = self.answer.get("error") {
            format!("error {}", e["code"])
        } else if result["taskId"].is_string() || result["task"].is_object() {
            "task".to_string()
        } else if result["isError"] == json!(true) {
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            let kind = text.rsplit_once(" [").map_or("?", |(_, k)| k.trim_end_matches(']'));
            format!("isError [{kind}]")
        } else if result.is_object() {
            "ok".to_string()
        } else {
            format!("no answer: {}", self.answer)
        });
        if self.status != 200 {
            words.insert(0, format!("HTTP {}", self.status));
        }
        words.join(", ")
    }
}

/// A request of the server's as compared: its method and params, without the progress token
/// rmcp numbers its requests of a session with.
fn question(mut request: Value) -> Value {
    if let Some(meta) = request["params"]["_meta"].as_object_mut() {
        meta.remove("progressToken");
    }
    json!({"method": request["method"], "params": request["params"]})
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}", self.status)?;
        for q in &self.questions {
            write!(f, "\n  asked: {q}")?;
        }
        write!(f, "\n  answer: {}", self.answer)
    }
}

/// `value` with every task id and time, and every sealed `requestState` (its nonce differs),
/// replaced by a placeholder.
fn without_task_ids(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if ["taskId", "createdAt", "lastUpdatedAt", "requestState"].contains(&k.as_str()) {
                    *v = json!("…");
                } else {
                    without_task_ids(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(without_task_ids),
        _ => {}
    }
}

/// One combination: its settings, the two requests' decisions and who answered them.
struct Row {
    config: Config,
    support: Support,
    client: Client,
    /// Whether the direct path answered (a), and (b).
    direct: (bool, bool),
    a: Seen,
    b: Seen,
}

impl Row {
    fn agrees(&self) -> bool {
        self.a == self.b && self.direct == (direct_today(&self.config, self.support, &self.client), false)
    }

    fn line(&self) -> String {
        let c = &self.config;
        let path = |direct: bool| if direct { "direct" } else { "rmcp" };
        format!(
            "{} {:<6} {:<6} {:<6} {:<16} {:<30} {:<6}/{:<6} {:<40} | {}",
            if self.agrees() { " " } else { "✗" },
            c.danger,
            c.tool.unwrap_or("-"),
            c.on_missing.unwrap_or("-"),
            format!("{}({:?})", self.support.tool(), self.support),
            self.client.to_string(),
            path(direct_today(c, self.support, &self.client)),
            path(self.direct.0),
            self.a.label(),
            self.b.label(),
        ) + if self.direct.1 { " (answered directly!)" } else { "" }
    }
}

const HEADER: &str = "  danger tool   on_mis tool(support)    client                         (a) path want/got (a) decision                         | (b) decision (progressToken: rmcp)";

/// The server's stderr, read up to fences: a `notifications/cancelled` naming no call, whose
/// receipt rmcp logs (`-vv`) after everything the server logged before it.
struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    read: usize,
    fences: usize,
}

impl Log {
    /// The lines logged since the last fence, and whether they say a call was answered directly.
    fn direct_since_last(&mut self, url: &str, headers: &str) -> bool {
        self.fences += 1;
        let mark = format!("fence-{}", self.fences);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": mark, "reason": mark}});
        assert_eq!(send(url, headers, &note), 202);
        let quoted = format!("\"{mark}\"");
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            {
                let lines = self.lines.lock().unwrap();
                if let Some(i) = lines[self.read..].iter().position(|l| l.contains(&quoted)) {
                    let since = &lines[self.read..self.read + i];
                    let direct = since.iter().any(|l| l.contains(ANSWERED_DIRECTLY));
                    self.read += i + 1;
                    return direct;
                }
            }
            assert!(Instant::now() < until, "rmcp never logged the notification {mark} (-vv)");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Every combination of one server's settings: a server, a session per client, each tool
/// called both ways.
fn run(env: &Env, config: Config) -> Vec<Row> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("toolhost.toml");
    std::fs::write(&file, config.toml()).unwrap();
    let (child, url, err, key) = serve_mcp_http_keyed(env, &["-vv", "--config", file.to_str().unwrap()]);
    let key = key.expect("a server without tokens prints its local key");
    let _server = Killed(child);
    let mut log = Log { lines: keep_reading(err), read: 0, fences: 0 };
    let mut rows = Vec::new();
    // A stateless request's fences go to a session of their own.
    let fences = session_headers(&open_session(&url, "2025-06-18", json!({}), "fences"), "2025-06-18");
    for (n, client) in clients().iter().enumerate() {
        let name = format!("matrix-{n}");
        let stateless = client.revision == STATELESS;
        let mut headers = if stateless {
            format!("MCP-Protocol-Version: {STATELESS}\r\n")
        } else {
            session_headers(
                &open_session(&url, client.revision, client.capabilities(), &name),
                client.revision,
            )
        };
        if client.keyed {
            headers.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        let fence_headers = if stateless { &fences } else { &headers };
        for (id, support) in (1..).zip(SUPPORTS) {
            let mut params = json!({"name": support.tool(), "arguments": support.arguments()});
            if stateless {
                params["_meta"] = client.meta(&name);
            }
            let mut seen = |params: Value| {
                let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
                let headers = match stateless {
                    true => format!("{headers}Mcp-Method: tools/call\r\nMcp-Name: {}\r\n", support.tool()),
                    false => headers.clone(),
                };
                let (status, head, messages) = exchange(&url, &headers, &request, |r| client.reply(r));
                let (questions, answers): (Vec<Value>, Vec<Value>) = messages
                    .into_iter()
                    .filter(|m| m.get("id").is_some())
                    .partition(|m| m.get("method").is_some());
                let questions = questions.into_iter().map(question).collect();
                let mut answer = without_usage(answers.into_iter().next().unwrap_or_else(|| json!(head)));
                without_task_ids(&mut answer);
                let direct = log.direct_since_last(&url, fence_headers);
                (Seen { status, questions, answer }, direct)
            };
            let (a, direct_a) = seen(params.clone());
            let mut with_token = params;
            with_token["_meta"]["progressToken"] = json!(format!("p{id}"));
            let (b, direct_b) = seen(with_token);
            rows.push(Row { config, support, client: *client, direct: (direct_a, direct_b), a, b });
        }
    }
    rows
}

#[test]
fn the_direct_path_and_rmcp_take_the_same_decision_on_every_combination() {
    let env = Env::with(&[plugin_artifacts::TICKER]);
    let configs = Config::all();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let rows = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while let Some(config) = configs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let done = run(&env, *config);
                    rows.lock().unwrap().push(done);
                }
            });
        }
    });
    let mut rows: Vec<Row> = rows.into_inner().unwrap().into_iter().flatten().collect();
    rows.sort_by_key(|r| {
        let c = &r.config;
        (c.danger, c.tool, c.on_missing, r.support.tool(), r.client.to_string())
    });
    assert_eq!(rows.len(), configs.len() * clients().len() * SUPPORTS.len());
    let wrong: Vec<&Row> = rows.iter().filter(|r| !r.agrees()).collect();
    if !wrong.is_empty() {
        let table: Vec<String> = wrong.iter().map(|r| r.line()).collect();
        let detail = match wrong.iter().find(|r| r.a != r.b) {
            Some(r) => format!("the first that differs:\n{}\n(a) {}\n(b) {}", r.line(), r.a, r.b),
            None => String::new(),
        };
        panic!(
            "{} of {} combinations differ between the direct path and rmcp's, or are not routed as \
             `direct_today` says:\n{HEADER}\n{}\n{detail}",
            wrong.len(),
            rows.len(),
            table.join("\n"),
        );
    }
    // Not a comparison of one refusal with itself: the matrix holds every kind of decision.
    let labels: Vec<String> = rows.iter().map(|r| r.a.label()).collect();
    let table = || rows.iter().map(Row::line).collect::<Vec<_>>().join("\n");
    for kind in
        ["asked danger", "asked grant", "task", "ok", "isError [denied]", "isError [tool_error]", "error "]
    {
        assert!(labels.iter().any(|l| l.contains(kind)), "no decision `{kind}` in:\n{HEADER}\n{}", table());
    }
    let stateless = rows.iter().filter(|r| r.client.revision == STATELESS && r.direct.0).count();
    assert!(stateless > 0, "no stateless call answered directly:\n{}", table());
    let direct = rows.iter().filter(|r| r.direct.0).count();
    assert!(direct > 0 && direct < rows.len(), "{direct} of {} answered directly:\n{}", rows.len(), table());
}

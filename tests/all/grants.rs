//! Grants asked at the moment they are needed (#31): a call refused for a host its plugin's
//! manifest requested and the operator did not grant asks the human — allow once, always, or
//! deny — and never the model; `[tool.NAME] policy`. The executor is driven with a scripted
//! asker here, and the real binary in a pseudo-terminal at the end (`toolhost call` / `run`,
//! the question on `/dev/tty`).

use crate::security::terminal::{Pty, command};
use crate::support::http;
use crate::support::mcp_http::{Stateless, form};
use crate::support::python::{mcp_script, run_passing};
use crate::support::{Env, Server, call, err, ok};
use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};
use toolhost_core::ErrorKind;
use toolhost_core::executor::{AskGrant, DecidedBy, GrantAnswer, GrantRequest};
use toolhost_core::settings::{DangerPolicy, GrantItem, OnMissing, ToolConfig};

/// A loopback HTTP server answering every request with `hello from the test server` — or, for
/// a path ending in `.json`, `{"authorized": BOOL}`, whether it came with `Bearer s3cret`; its
/// port.
fn server() -> u16 {
    counted_server().0
}

/// [`server`], and how many requests it has been sent.
fn counted_server() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = seen.clone();
    let port = http::listen(move |got, out| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let json = got.line.to_ascii_lowercase().contains(".json ");
        let authorized = got.head.to_ascii_lowercase().contains("authorization: bearer s3cret");
        let answer = format!("{{\"authorized\": {authorized}}}");
        let body = if json { answer.as_bytes() } else { b"hello from the test server".as_slice() };
        http::reply(out, "200 OK", "Content-Type: text/plain\r\n", body);
    });
    (port, seen)
}

/// The test server, and a host of [`web_env`] whose operator answers `answers` in turn: its
/// port, the env, the host and the asker.
fn web_asking(answers: &[GrantAnswer]) -> (u16, Env, toolhost_core::Toolhost, Arc<Scripted>) {
    let port = server();
    let env = web_env();
    let host = env.host();
    let asker = Scripted::answering(answers);
    assert!(host.executor.attach_grant_asker(asker.clone()));
    (port, env, host, asker)
}

/// The audit trail `audit.jsonl` in the operator's folder, and the `grants` of each line.
fn audited_grants(env: &Env) -> (String, Vec<String>) {
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let grants = audit
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["grants"].to_string())
        .collect();
    (audit, grants)
}

/// Answers from a script, and remembers every question.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<GrantAnswer>>,
    asked: Mutex<Vec<GrantRequest>>,
}

impl Scripted {
    fn answering(answers: &[GrantAnswer]) -> Arc<Scripted> {
        Arc::new(Scripted { answers: Mutex::new(answers.iter().copied().collect()), ..Default::default() })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().iter().map(|r| format!("{} {} {}", r.plugin, r.tool, r.item)).collect()
    }
}

impl AskGrant for Scripted {
    fn ask<'a>(
        &'a self,
        req: &'a GrantRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = GrantAnswer> + Send + 'a>> {
        self.asked.lock().unwrap().push(req.clone());
        let a = self.answers.lock().unwrap().pop_front().expect("a question nobody scripted an answer for");
        Box::pin(async move { a })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::FrontEnd
    }
}

/// `web` (which requests any host) with nothing granted but private addresses, its grants
/// file in the workspace.
fn web_env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::WEB, plugin_artifacts::TEXT]);
    env.config.plugins.entry("web".into()).or_default().net.private = true;
    env.config.grants_file = env.at(toolhost_core::settings::grants::GRANTS_FILE);
    env
}

fn url(port: u16) -> String {
    format!("http://localhost:{port}/hello")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_once_runs_the_call_with_that_host_and_the_next_call_asks_again() {
    let (port, env, host, asker) = web_asking(&[GrantAnswer::Once, GrantAnswer::Once]);
    let out = ok(&call(&host, "fetch", &[&url(port)]).await);
    assert!(out.contains("hello from the test server"), "{out}");
    assert_eq!(asker.asked(), ["web fetch net localhost"], "the exact host, never the requested `*`");
    let req = asker.asked.lock().unwrap()[0].clone();
    assert_eq!(req.sentence(), "web wants to send a request to localhost");
    assert_eq!(req.args, [url(port)]);
    ok(&call(&host, "fetch", &[&url(port)]).await);
    assert_eq!(asker.asked().len(), 2, "once is for one call");
    assert!(!env.config.grants_file.exists(), "once writes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_is_written_to_the_grants_file_and_not_asked_again() {
    let (port, env, host, asker) = web_asking(&[GrantAnswer::Always]);
    ok(&call(&host, "fetch", &[&url(port)]).await);
    ok(&call(&host, "fetch", &[&url(port)]).await);
    assert_eq!(asker.asked().len(), 1, "always holds for the rest of the session");
    let written = toolhost_core::settings::grants::load(&env.config.grants_file).unwrap();
    assert_eq!(written.len(), 1);
    assert_eq!((written[0].plugin.as_str(), &written[0].item), ("web", &GrantItem::Net("localhost".into())));
    assert_eq!(written[0].by, "front_end");
    // A new host (the next process) reads it with the config: granted, nobody asked.
    let mut env2 = web_env();
    env2.config.asked = written;
    let host2 = env2.host();
    let nobody = Scripted::answering(&[]);
    host2.executor.attach_grant_asker(nobody.clone());
    ok(&call(&host2, "fetch", &[&url(port)]).await);
    assert!(nobody.asked().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_is_remembered_for_the_session() {
    let (port, _env, host, asker) = web_asking(&[GrantAnswer::Deny]);
    let e = err(&call(&host, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(e.contains("not granted") && e.contains("the operator denied plugin `web` net localhost"), "{e}");
    let e = err(&call(&host, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(e.contains("denied plugin `web` net localhost for this session"), "{e}");
    assert_eq!(asker.asked().len(), 1, "a denied item is not asked about again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_is_written_and_holds_in_the_next_session_until_revoked() {
    let (port, env, host, _asker) = web_asking(&[GrantAnswer::Never]);
    let e = err(&call(&host, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(e.contains("the operator denied plugin `web` net localhost"), "{e}");
    let written = toolhost_core::settings::grants::load(&env.config.grants_file).unwrap();
    assert_eq!(written.len(), 1);
    assert!(written[0].deny && written[0].item == GrantItem::Net("localhost".into()));
    // The next process: refused without a question.
    let mut env2 = web_env();
    env2.config.asked = written;
    let host2 = env2.host();
    let nobody = Scripted::answering(&[]);
    host2.executor.attach_grant_asker(nobody.clone());
    err(&call(&host2, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(nobody.asked().is_empty());
    // Revoked: asked again.
    let item = GrantItem::Net("localhost".into());
    assert!(toolhost_core::settings::grants::revoke(&env.config.grants_file, "web", &item).unwrap());
    let mut env3 = web_env();
    env3.config.asked = toolhost_core::settings::grants::load(&env.config.grants_file).unwrap();
    let host3 = env3.host();
    let asker3 = Scripted::answering(&[GrantAnswer::Once]);
    host3.executor.attach_grant_asker(asker3.clone());
    ok(&call(&host3, "fetch", &[&url(port)]).await);
    assert_eq!(asker3.asked().len(), 1);
}

/// An "always" answer survives a new file of the plugin by default; under `[plugin.NAME]
/// asked_grants = "this_version"` the new file is asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asked_grants_follow_a_new_plugin_file_only_when_the_operator_says_so() {
    use toolhost_core::settings::AskedGrants;
    let port = server();
    let env = web_env();
    let host = env.host();
    host.executor.attach_grant_asker(Scripted::answering(&[GrantAnswer::Always]));
    ok(&call(&host, "fetch", &[&url(port)]).await);
    let written = toolhost_core::settings::grants::load(&env.config.grants_file).unwrap();
    let hash = hex::encode(host.registry.load().get("fetch").unwrap().plugin.hash);
    assert_eq!(written[0].sha256.as_deref(), Some(hash.as_str()), "the file it was asked for");
    // A new build of the plugin: the same code, another file.
    let mut next = web_env();
    let mut bytes = std::fs::read(next.plugins.path().join("web.wasm")).unwrap();
    crate::support::append_custom_section(&mut bytes, "rebuilt", b"2");
    std::fs::write(next.plugins.path().join("web.wasm"), bytes).unwrap();
    next.config.asked = written;
    let kept = next.host();
    let nobody = Scripted::answering(&[]);
    kept.executor.attach_grant_asker(nobody.clone());
    ok(&call(&kept, "fetch", &[&url(port)]).await);
    assert!(nobody.asked().is_empty(), "kept by default");
    next.config.plugins.get_mut("web").unwrap().asked_grants = Some(AskedGrants::ThisVersion);
    let strict = next.host();
    let asker = Scripted::answering(&[GrantAnswer::Deny]);
    strict.executor.attach_grant_asker(asker.clone());
    err(&call(&strict, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert_eq!(asker.asked(), ["web fetch net localhost"], "asked again for the new file");
}

/// A secret the manifest requests and the operator defined but did not grant to the plugin is
/// asked about too (by name); allowed once, the call sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_and_defined_secret_is_asked_about_by_name() {
    use toolhost_core::capability::net::SecretOrigin;
    use toolhost_core::settings::{SecretFrom, SecretSource};
    let port = server();
    let mut env = web_env();
    env.config.grant_net("web", "localhost").unwrap();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "s3cret-value").unwrap();
    let origin = SecretOrigin::parse(&format!("http://localhost:{port}")).unwrap();
    env.config.secrets.insert(
        "api_token".into(),
        SecretSource {
            name: "api_token".into(),
            from: SecretFrom::File(file.path().into()),
            hosts: vec![origin],
        },
    );
    let host = env.host();
    let asker = Scripted::answering(&[GrantAnswer::Once, GrantAnswer::Deny]);
    host.executor.attach_grant_asker(asker.clone());
    let api = format!("http://localhost:{port}/me.json");
    let answer: serde_json::Value =
        serde_json::from_str(&ok(&call(&host, "api_get", &[&api]).await)).unwrap();
    assert_eq!(answer, serde_json::json!({"authorized": true}), "the secret was sent");
    assert_eq!(asker.asked(), ["web api_get secret api_token"]);
    assert_eq!(asker.asked.lock().unwrap()[0].sentence(), "web wants to use the secret api_token");
    let e = err(&call(&host, "api_get", &[&api]).await, ErrorKind::ToolError);
    assert!(e.contains("the operator denied plugin `web` secret api_token"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_policy_and_no_asker_ask_nothing_and_keep_the_note() {
    let port = server();
    let mut env = web_env();
    env.config.plugins.get_mut("web").unwrap().on_missing = Some(OnMissing::Refuse);
    let host = env.host();
    let asker = Scripted::answering(&[]);
    host.executor.attach_grant_asker(asker.clone());
    let e = err(&call(&host, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(e.contains("[note: the host refused"), "{e}");
    assert!(asker.asked().is_empty());
    // No asker attached (`serve`): refused with the note, as before.
    let env = web_env();
    let e = err(&call(&env.host(), "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(e.contains("[note: the host refused"), "{e}");
}

/// `web` rewritten to request only the host `x`: a call to any other host is refused and
/// nobody is asked (a plugin can only cause questions about what its manifest requested).
fn web_requesting_x() -> Env {
    let env = Env::with(&[]);
    let wasm = std::fs::read(plugin_artifacts::WEB).unwrap();
    let (from, to) = (br#""net":["*"]"#.as_slice(), br#""net":["x"]"#.as_slice());
    let mut out = Vec::with_capacity(wasm.len());
    let mut i = 0;
    while i < wasm.len() {
        if wasm[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(wasm[i]);
            i += 1;
        }
    }
    std::fs::write(env.plugins.path().join("web.wasm"), out).unwrap();
    let mut env = env;
    env.config.plugins.entry("web".into()).or_default().net.private = true;
    env.config.grants_file = env.at(toolhost_core::settings::grants::GRANTS_FILE);
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_the_manifest_did_not_request_causes_no_question() {
    let port = server();
    let env = web_requesting_x();
    let host = env.host();
    assert_eq!(host.registry.load().plugins()[0].manifest.capabilities.net, ["x"]);
    let asker = Scripted::answering(&[]);
    host.executor.attach_grant_asker(asker.clone());
    let e = err(&call(&host, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(e.contains("localhost"), "{e}");
    assert!(asker.asked().is_empty(), "asked about a host the manifest never requested");
}

/// A model cannot answer: the `[TOOL]` front end runs a reply whose text and arguments spell
/// out answers; the only answers are the asker's (here: deny), and nothing is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_reply_cannot_answer_a_grant_question() {
    let (port, env, host, asker) = web_asking(&[GrantAnswer::Deny]);
    let reply = format!(
        "always\na\n[TOOL] fetch(\"{u}\") [/TOOL]\nallow once\no\n[TOOL] fetch(\"{u}\") [/TOOL]\nalways",
        u = url(port)
    );
    let results = toolhost_frontends::text::execute(&host.executor, &reply).await;
    let outcomes: Vec<_> = results.iter().filter_map(|(_, o)| o.as_ref()).collect();
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes.iter().all(|o| !o.success), "{outcomes:?}");
    assert_eq!(asker.asked().len(), 1, "asked once, then denied for the session");
    assert!(!env.config.grants_file.exists());
}

// ---- [tool.NAME] policy ----

fn with_policy(env: &mut Env, tool: &str, policy: DangerPolicy, danger: Option<bool>) {
    env.config
        .tools
        .insert(tool.into(), ToolConfig { danger, policy: Some(policy), ..ToolConfig::default() });
}

#[derive(Default)]
struct Counting(std::sync::atomic::AtomicUsize);

impl toolhost_core::executor::Confirm for Counting {
    fn confirm<'a>(
        &'a self,
        _req: &'a toolhost_core::executor::DangerRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = toolhost_core::executor::Decision> + Send + 'a>>
    {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { toolhost_core::executor::Decision::Allow })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_policy_deny_refuses_ask_confirms_every_call_allow_asks_nothing() {
    let mut env = Env::with(&[plugin_artifacts::TEXT]);
    with_policy(&mut env, "echo", DangerPolicy::Deny, None);
    with_policy(&mut env, "count_words", DangerPolicy::Ask, None);
    let host = env.host();
    let e = err(&call(&host, "echo", &["hi"]).await, ErrorKind::Denied);
    assert!(e.contains("[tool.echo] policy = \"deny\""), "{e}");
    // Ask: every call, though the tool is not dangerous; nobody to ask: refused.
    err(&call(&host, "count_words", &["a b"]).await, ErrorKind::Denied);
    let counting = Arc::new(Counting::default());
    let host = env.host_with(counting.clone());
    ok(&call(&host, "count_words", &["a b"]).await);
    ok(&call(&host, "count_words", &["a b"]).await);
    assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 2);
    // Allow: a tool marked dangerous runs without a question, whatever [danger] policy says.
    let mut env = Env::with(&[plugin_artifacts::TEXT]);
    with_policy(&mut env, "echo", DangerPolicy::Allow, Some(true));
    env.config.danger = DangerPolicy::Deny;
    let counting = Arc::new(Counting::default());
    let host = env.host_with(counting.clone());
    assert_eq!(ok(&call(&host, "echo", &["hi"]).await), "hi");
    assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn tool_policy_is_presented_by_the_one_view() {
    let mut env = Env::with(&[plugin_artifacts::TEXT]);
    with_policy(&mut env, "echo", DangerPolicy::Ask, None);
    with_policy(&mut env, "count_words", DangerPolicy::Deny, None);
    let reg = env.registry();
    let view = |name: &str| toolhost_core::view::ToolView::new(reg.get(name).unwrap(), &env.config);
    let echo = view("echo");
    assert!(echo.dangerous && !echo.advertise_read_only(), "ask: clients are told to confirm");
    assert!(echo.flags().contains(&"policy:ask"));
    assert_eq!(echo.meta()["toolhost/policy"], "ask");
    assert!(echo.description_with_danger_note().contains("Every call needs a human's confirmation"));
    let count = view("count_words");
    assert!(count.flags().contains(&"policy:deny"));
    assert!(count.description_with_danger_note().contains("Disabled by the operator"));
    let listed = toolhost::commands::list::render_list(&reg, &env.config);
    assert!(listed.contains("policy:ask") && listed.contains("policy:deny"), "{listed}");
    let prompt = toolhost_frontends::text::prompt(&reg, &toolhost_core::view::listing(&reg, &env.config));
    assert!(prompt.contains("DISABLED by the operator"), "{prompt}");
}

// ---- the terminal ----

/// `web` in a pty-driven `toolhost`, with `toolhost.toml` in the workspace (the grants file
/// beside it) and an audit trail.
fn terminal_env() -> Env {
    let env = Env::with(&[plugin_artifacts::WEB]);
    std::fs::write(
        env.at("toolhost.toml"),
        "[plugin.web]\nnet_private = true\n[audit]\nfile = \"audit.jsonl\"\n[identity]\nlocal_user = \"ops-alice\"\n",
    )
    .unwrap();
    env
}

/// `toolhost call fetch URL` in a pty, answering the grant question with `answer` (`None`:
/// expect no question); exit status and what the terminal got.
fn call_answering(env: &Env, port: u16, answer: Option<&str>) -> (bool, String) {
    in_pty_answering(env, &["call", "fetch", &url(port)], "web wants to send a request to localhost", answer)
}

/// `toolhost ARGS` in a pty, answering the grant question (the one saying `question`) with
/// `answer` (`None`: expect no question); exit status and what the terminal got.
fn in_pty_answering(env: &Env, args: &[&str], question: &str, answer: Option<&str>) -> (bool, String) {
    let mut pty = Pty::spawn(command(env, args));
    if let Some(a) = answer {
        let at = pty.wait_for(question, 0);
        pty.wait_for("Allow? [o = once, a = always, d = deny, n = never] ", at);
        pty.send(&format!("{a}\n"));
    }
    let (status, out) = pty.finish();
    (status.success(), String::from_utf8_lossy(&out).into_owned())
}

fn plain(env: &Env, args: &[&str]) -> std::process::Output {
    command(env, args).stdin(std::process::Stdio::null()).output().unwrap()
}

#[test]
fn terminal_allow_once_always_list_revoke_and_deny() {
    let port = server();
    let env = terminal_env();
    // Once: runs; the next call asks again (denied this time).
    let (ok1, out) = call_answering(&env, port, Some("o"));
    assert!(ok1 && out.contains("hello from the test server"), "{out}");
    assert!(out.contains("tool `fetch` (plugin `web`)"), "{out}");
    let (ok2, out) = call_answering(&env, port, Some("d"));
    assert!(!ok2 && out.contains("the operator denied plugin `web` net localhost"), "{out}");
    assert!(!env.at("toolhost.grants.toml").exists());
    // Always: written beside the config; the next call is not asked.
    let (ok3, out) = call_answering(&env, port, Some("a"));
    assert!(ok3, "{out}");
    let file = std::fs::read_to_string(env.at("toolhost.grants.toml")).unwrap();
    assert!(file.contains("plugin = \"web\"") && file.contains("item = \"net localhost\""), "{file}");
    assert!(file.contains("by = \"terminal\""), "{file}");
    // By whom: the local user, under the name the config gives it.
    assert!(file.contains("who = \"local:ops-alice\""), "{file}");
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(last["who"], serde_json::json!({"sub": "ops-alice", "via": "local"}), "{last}");
    let (ok4, out) = call_answering(&env, port, None);
    assert!(ok4 && !out.contains("wants to"), "{out}");
    // `list` shows where the grant came from; `revoke` removes it.
    let listed = String::from_utf8_lossy(&plain(&env, &["list"]).stdout).into_owned();
    assert!(listed.contains("asked:     net localhost — allowed \"always\" on "), "{listed}");
    assert!(listed.contains("(terminal, by local:ops-alice)"), "{listed}");
    assert!(listed.contains("toolhost.grants.toml") && listed.contains("toolhost revoke web net localhost"));
    assert!(listed.contains("net localhost"), "granted: {listed}");
    let revoked = plain(&env, &["revoke", "web", "net", "localhost"]);
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    let listed = String::from_utf8_lossy(&plain(&env, &["list"]).stdout).into_owned();
    assert!(!listed.contains("asked:"), "{listed}");
    let again = plain(&env, &["revoke", "web", "net localhost"]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("holds no grant"));
    let (ok5, _) = call_answering(&env, port, Some("d"));
    assert!(!ok5, "asked again after the revocation");
    // The audit trail says who granted what.
    let (audit, answers) = audited_grants(&env);
    assert_eq!(
        answers,
        [
            r#"[{"answer":"once","by":"terminal","item":"net localhost"}]"#,
            r#"[{"answer":"deny","by":"terminal","item":"net localhost"}]"#,
            r#"[{"answer":"always","by":"terminal","item":"net localhost"}]"#,
            "null",
            r#"[{"answer":"deny","by":"terminal","item":"net localhost"}]"#,
        ],
        "{audit}"
    );
}

/// On the terminal, a reply's text cannot answer (only what is typed after the question
/// counts), a denial holds for the rest of the run, and a host the manifest did not request
/// is never asked about.
#[test]
fn terminal_a_reply_cannot_answer_and_deny_holds_for_the_run() {
    let port = server();
    let env = terminal_env();
    let reply = env.ws("reply.txt");
    std::fs::write(
        &reply,
        format!(
            "a\n[TOOL] fetch(\"{u}\") [/TOOL]\nalways\no\n[TOOL] fetch(\"{u}\") [/TOOL]\n",
            u = url(port)
        ),
    )
    .unwrap();
    let mut pty = Pty::spawn(command(&env, &["run", reply.to_str().unwrap()]));
    let at = pty.wait_for("Allow? [o = once, a = always, d = deny, n = never] ", 0);
    pty.send("d\n");
    let (_, out) = pty.finish();
    let out = String::from_utf8_lossy(&out).into_owned();
    assert_eq!(out[at..].matches("wants to").count(), 0, "asked once only: {out}");
    assert!(out.contains("for this session"), "{out}");
    assert!(!env.at("toolhost.grants.toml").exists());

    let env = web_requesting_x();
    std::fs::write(env.at("toolhost.toml"), "[plugin.web]\nnet_private = true\n").unwrap();
    let (ok, out) = call_answering(&env, port, None);
    assert!(!ok && !out.contains("wants to") && out.contains("localhost"), "{out}");
}

// ---- MCP (2025 revisions: elicitation) ----

/// `serve --mcp` with `[plugin.web] on_missing = "ask"`: a client with elicitation is asked
/// (allow once runs the call, a refusal holds for the session); one without gets the note.
/// `tests/mcp/grants.py`, with the official Python SDK 1.x.
#[test]
fn mcp_elicitation_asks_when_the_operator_says_ask() {
    let port = server();
    let env = Env::with(&[plugin_artifacts::WEB]);
    std::fs::write(env.at("toolhost.toml"), "[plugin.web]\nnet_private = true\non_missing = \"ask\"\n")
        .unwrap();
    run_passing(
        mcp_script(1, "grants.py", &env).arg(url(port)).args(env.command_line()).args(["serve", "--mcp"]),
        "all grant checks passed",
    );
    assert!(!env.at("toolhost.grants.toml").exists(), "nothing answered always");
}

/// Without `on_missing = "ask"`, `serve` asks no MCP client (the default there is refuse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_style_asker_asks_only_under_an_explicit_ask() {
    struct NotByDefault(Arc<Scripted>);
    impl AskGrant for NotByDefault {
        fn ask<'a>(
            &'a self,
            req: &'a GrantRequest,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = GrantAnswer> + Send + 'a>> {
            self.0.ask(req)
        }
        fn decided_by(&self) -> DecidedBy {
            DecidedBy::Elicitation
        }
        fn by_default(&self) -> bool {
            false
        }
    }
    let port = server();
    let mut env = web_env();
    let scripted = Scripted::answering(&[GrantAnswer::Once]);
    let host = env.host();
    host.executor.attach_grant_asker(Arc::new(NotByDefault(scripted.clone())));
    err(&call(&host, "fetch", &[&url(port)]).await, ErrorKind::ToolError);
    assert!(scripted.asked().is_empty(), "on_missing unset: not asked");
    env.config.plugins.get_mut("web").unwrap().on_missing = Some(OnMissing::Ask);
    let host = env.host();
    host.executor.attach_grant_asker(Arc::new(NotByDefault(scripted.clone())));
    ok(&call(&host, "fetch", &[&url(port)]).await);
    assert_eq!(scripted.asked().len(), 1);
}

// ---- MCP 2026-07-28 (MRTR: a sealed `requestState`) ----

const GRANT_KEY_SECRET: &str = "grants-test-key-1f9c3a7e5b2d4c6e8a0b1d3f5e7c9a2b";

/// A running `serve --mcp --http` over `env` with `config` (and the shared approval key in
/// its environment); it printed its local key.
fn serve_2026(env: &Env, web: &str, config: &str) -> Server {
    let config = format!(
        "[secrets.approvals]\nenv = \"TOOLHOST_TEST_GRANT_KEY\"\n\n[plugin.web]\nnet_private = true\n\
         on_missing = \"ask\"\n{web}\n{config}"
    );
    let served = Server::start(
        env.configured(&config)
            .args(["serve", "--mcp", "--http", "127.0.0.1:0"])
            .env("TOOLHOST_TEST_GRANT_KEY", GRANT_KEY_SECRET),
    );
    assert!(served.key.is_some(), "no local key printed: {:?}", served.seen);
    served
}

/// One stateless 2026-07-28 `tools/call` of `tool(url)`, with a `requestState` and an answer
/// to `inputRequests.grant` when given; the JSON-RPC response.
fn call_2026(
    served: &Server,
    tool: &str,
    url: &str,
    state: Option<&str>,
    answer: Option<serde_json::Value>,
) -> serde_json::Value {
    call_2026_with(served, tool, serde_json::json!({ "url": url }), state, answer)
}

/// [`call_2026`] with any `arguments`.
fn call_2026_with(
    served: &Server,
    tool: &str,
    arguments: serde_json::Value,
    state: Option<&str>,
    answer: Option<serde_json::Value>,
) -> serde_json::Value {
    // The operator's client: it sends the key printed at start, so it may be asked.
    let auth = served.operator();
    let client = Stateless { url: &served.url, auth: &auth, client: "grants-test", capabilities: form() };
    client.call(tool, arguments, state.zip(answer).map(|(state, answer)| (state, "grant", answer)))
}

/// The sealed state of a grant question, checking the question names the plugin and item.
fn grant_asked(response: &serde_json::Value, item: &str) -> String {
    let r = &response["result"];
    assert_eq!(r["resultType"], "input_required", "{response}");
    let message = r["inputRequests"]["grant"]["params"]["message"].as_str().unwrap_or_default();
    let message =
        if message.is_empty() { r["inputRequests"]["grant"].to_string() } else { message.to_string() };
    assert!(message.contains(item), "the question names {item}: {response}");
    r["requestState"].as_str().unwrap_or_else(|| panic!("no requestState: {response}")).to_string()
}

fn refused_with(response: &serde_json::Value, why: &str) {
    let e = response["error"]["message"].as_str().unwrap_or_else(|| panic!("expected an error: {response}"));
    assert!(e.contains(why), "expected {why:?} in: {e}");
}

fn allow(always: bool) -> serde_json::Value {
    serde_json::json!({"action": "accept", "content": {"allow": true, "always": always}})
}

fn tamper(state: &str) -> String {
    let c = if &state[2..3] == "a" { "b" } else { "a" };
    format!("{}{c}{}", &state[..2], &state[3..])
}

/// Under `on_missing = "ask"` a 2026-07-28 client gets a sealed grant question; allow once
/// runs the call with that host (and the next call asks again); a forged or replayed state,
/// or one from before the plugin file changed, is refused and the test server sees nothing.
#[test]
fn mcp_2026_grant_question_allow_once_forged_replayed_and_other_version_refused() {
    use std::sync::atomic::Ordering::SeqCst;
    let (port, seen) = counted_server();
    let env = Env::with(&[plugin_artifacts::WEB]);
    let audit = env.at("audit.jsonl");
    let key = format!(
        "[mcp]\napproval_key = {{ secret = \"approvals\" }}\n\n[audit]\nfile = {:?}\n",
        audit.display().to_string()
    );
    let key = key.as_str();
    // The last audit line: a call refused before the plugin ran asked no grant question.
    let last_ran_the_plugin = || {
        let lines = std::fs::read_to_string(&audit).unwrap();
        lines.lines().last().unwrap().contains("\"grants\"")
    };
    let served = serve_2026(&env, "", key);
    let target = url(port);
    let state = grant_asked(&call_2026(&served, "fetch", &target, None, None), "send a request to localhost");
    assert_eq!(seen.load(SeqCst), 0, "asking sends nothing");
    refused_with(
        &call_2026(&served, "fetch", &target, Some(&tamper(&state)), Some(allow(false))),
        "not issued by this toolhost fleet",
    );
    assert!(!last_ran_the_plugin(), "a forged state is refused before the plugin runs");
    refused_with(
        &call_2026(
            &served,
            "fetch",
            &url(port).replace("localhost", "127.0.0.1"),
            Some(&state),
            Some(allow(false)),
        ),
        "other arguments",
    );
    assert_eq!(seen.load(SeqCst), 0, "a forged state runs nothing");
    let ran = call_2026(&served, "fetch", &target, Some(&state), Some(allow(false)));
    assert!(ran.to_string().contains("hello from the test server"), "{ran}");
    assert_eq!(seen.load(SeqCst), 1);
    assert!(last_ran_the_plugin(), "the allowed call's audit line records the answer");
    let lines = std::fs::read_to_string(&audit).unwrap();
    assert!(lines.lines().last().unwrap().contains("\"answer\":\"once\""), "{lines}");
    refused_with(&call_2026(&served, "fetch", &target, Some(&state), Some(allow(false))), "already used");
    assert_eq!(seen.load(SeqCst), 1, "a replayed state runs nothing");
    // Once: the next call is asked again; a decline refuses.
    let again = grant_asked(&call_2026(&served, "fetch", &target, None, None), "send a request to localhost");
    let pending =
        grant_asked(&call_2026(&served, "fetch", &target, None, None), "send a request to localhost");
    let declined =
        call_2026(&served, "fetch", &target, Some(&again), Some(serde_json::json!({"action": "decline"})));
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert_eq!(seen.load(SeqCst), 1, "a declined question runs nothing");
    drop(served);
    // A new file of the plugin between the question and the answer.
    let wasm = env.plugins.path().join("web.wasm");
    let mut bytes = std::fs::read(&wasm).unwrap();
    crate::support::append_custom_section(&mut bytes, "rebuilt", b"2");
    std::fs::write(&wasm, bytes).unwrap();
    let served = serve_2026(&env, "", key);
    refused_with(&call_2026(&served, "fetch", &target, Some(&pending), Some(allow(true))), "changed since");
    assert!(!last_ran_the_plugin(), "a state for another plugin file is refused before the plugin runs");
    assert_eq!(seen.load(SeqCst), 1, "a state for another plugin version runs nothing");
    assert!(!env.at("toolhost.grants.toml").exists(), "nothing answered always");
}

/// A state answers only the exact item it asked about: a question about `net localhost`
/// cannot answer the later question about the secret `api_token` (the operator granted the
/// host meanwhile); an expired state is refused; "always" writes the grants file.
#[test]
fn mcp_2026_grant_state_for_another_item_or_expired_is_refused_and_always_is_written() {
    use std::sync::atomic::Ordering::SeqCst;
    let (port, seen) = counted_server();
    let env = Env::with(&[plugin_artifacts::WEB]);
    let token = env.ws("token.txt");
    std::fs::write(&token, "s3cret\n").unwrap();
    let secret = format!(
        "[secrets.api_token]\nfile = {:?}\nhosts = [\"http://localhost:{port}\"]\n",
        token.display().to_string()
    );
    let key = "[mcp]\napproval_key = { secret = \"approvals\" }\n";
    let api = format!("http://localhost:{port}/me.json");
    let served = serve_2026(&env, "", &format!("{key}{secret}"));
    let for_host =
        grant_asked(&call_2026(&served, "api_get", &api, None, None), "send a request to localhost");
    drop(served);
    let served = serve_2026(&env, "net = [\"localhost\"]\n", &format!("{key}{secret}"));
    refused_with(
        &call_2026(&served, "api_get", &api, Some(&for_host), Some(allow(true))),
        "answers a question about net localhost, not secret api_token",
    );
    let authorized = seen.load(SeqCst);
    drop(served);
    // Expiry, and "always".
    let ttl = "[mcp]\napproval_key = { secret = \"approvals\" }\napproval_ttl_s = 1\n";
    let served = serve_2026(&env, "", ttl);
    let target = url(port);
    let late = grant_asked(&call_2026(&served, "fetch", &target, None, None), "send a request to localhost");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    refused_with(&call_2026(&served, "fetch", &target, Some(&late), Some(allow(true))), "expired");
    assert_eq!(seen.load(SeqCst), authorized, "an expired state runs nothing");
    assert!(!env.at("toolhost.grants.toml").exists());
    let state = grant_asked(&call_2026(&served, "fetch", &target, None, None), "send a request to localhost");
    let ran = call_2026(&served, "fetch", &target, Some(&state), Some(allow(true)));
    assert!(ran.to_string().contains("hello from the test server"), "{ran}");
    let written = std::fs::read_to_string(env.at("toolhost.grants.toml")).unwrap();
    assert!(written.contains("localhost") && written.contains("web"), "{written}");
    let next = call_2026(&served, "fetch", &target, None, None);
    assert!(next.to_string().contains("hello from the test server"), "always: not asked again: {next}");
}

// ---- directories and programs ----

/// `files` (which requests the workspace read-write) with nothing granted, its grants file in
/// the workspace and `README.txt` there.
fn files_env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::FILES]);
    env.config.grants_file = env.at(toolhost_core::settings::grants::GRANTS_FILE);
    std::fs::write(env.ws("README.txt"), "read me").unwrap();
    env
}

/// The asked item for `env`'s workspace.
fn ws_item(env: &Env, write: bool) -> GrantItem {
    GrantItem::Fs { path: env.config.workspace.to_str().unwrap().to_string(), write }
}

/// `wasm` with every `from` replaced by `to` (the caller keeps each section's size).
fn replaced(wasm: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(wasm.len());
    let (mut i, mut n) = (0, 0);
    while i < wasm.len() {
        if wasm[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
            n += 1;
        } else {
            out.push(wasm[i]);
            i += 1;
        }
    }
    assert!(n > 0, "{} not found", String::from_utf8_lossy(from));
    out
}

/// `sys` rewritten to request the program `echo` by name (not `*`), nothing granted, `run`
/// allowed without a danger question.
fn sys_requesting_echo() -> Env {
    let env = Env::with(&[]);
    let wasm = std::fs::read(plugin_artifacts::SYSTEM).unwrap();
    // `exec = "*"` becomes `exec = "echo"`; a description in the same manifest gives back the
    // three bytes, so every section keeps its size.
    let wasm = replaced(&wasm, br#""exec":["*"]"#, br#""exec":["echo"]"#);
    let wasm = replaced(&wasm, b"X11 or XWayland", b"X11/XWayland");
    std::fs::write(env.plugins.path().join("system.wasm"), wasm).unwrap();
    let mut env = env;
    env.config.grants_file = env.at(toolhost_core::settings::grants::GRANTS_FILE);
    env.config.tools.entry("run".into()).or_default().policy = Some(DangerPolicy::Allow);
    env
}

fn echo_item(args: &[&str]) -> GrantItem {
    let program = toolhost_core::capability::process::resolve_in_path("echo").unwrap();
    GrantItem::Exec {
        program: program.to_str().unwrap().to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

/// A call that failed on a path because the workspace its plugin requested is not granted
/// asks about exactly the workspace, at the requested mode: once runs it (the next call asks
/// again), deny holds for the session, always is written and applied without a question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requested_workspace_is_asked_about_when_a_call_tried_a_path() {
    let env = files_env();
    let host = env.host();
    let asker = Scripted::answering(&[GrantAnswer::Once, GrantAnswer::Deny]);
    host.executor.attach_grant_asker(asker.clone());
    assert_eq!(ok(&call(&host, "read", &["README.txt"]).await), "read me");
    let item = ws_item(&env, true);
    assert_eq!(asker.asked(), [format!("files read {item}")]);
    let sentence = asker.asked.lock().unwrap()[0].sentence();
    assert_eq!(
        sentence,
        format!("files wants to read and write the directory {}", env.config.workspace.display())
    );
    let e = err(&call(&host, "read", &["README.txt"]).await, ErrorKind::ToolError);
    assert!(e.contains("has no access to `README.txt`") && e.contains("denied plugin `files` fs rw"), "{e}");
    err(&call(&host, "read", &["README.txt"]).await, ErrorKind::ToolError);
    assert_eq!(asker.asked().len(), 2, "a denial holds for the session");
    assert!(!env.config.grants_file.exists());

    let host = env.host();
    let asker = Scripted::answering(&[GrantAnswer::Always]);
    host.executor.attach_grant_asker(asker.clone());
    assert_eq!(ok(&call(&host, "read", &["README.txt"]).await), "read me");
    assert_eq!(ok(&call(&host, "read", &["README.txt"]).await), "read me");
    assert_eq!(asker.asked().len(), 1, "always: asked once");
    let file = std::fs::read_to_string(&env.config.grants_file).unwrap();
    assert!(file.contains(&format!("item = \"{item}\"")), "{file}");
    // In the next session the grants file grants it; another workspace is not granted by it.
    let mut next = env.config.clone();
    next.asked = toolhost_core::settings::grants::load(&next.grants_file).unwrap();
    assert!(next.plugin("files").fs.iter().any(|f| f.name == "workspace"), "{:?}", next.plugin("files"));
    let mut moved = next.clone();
    moved.set_workspace(std::env::temp_dir().as_path());
    assert!(moved.plugin("files").fs.is_empty(), "an answer about one workspace grants no other");
}

/// A refused `run` of a program the manifest requests by name asks about that program with
/// exactly those arguments: once runs it, other arguments are another question, always is
/// written and not asked again, and a program the manifest does not request causes no question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_program_is_asked_about_with_its_exact_arguments() {
    let env = sys_requesting_echo();
    let host = env.host();
    assert_eq!(host.registry.load().plugins()[0].manifest.capabilities.exec, ["echo"]);
    let asker = Scripted::answering(&[GrantAnswer::Once, GrantAnswer::Deny, GrantAnswer::Always]);
    host.executor.attach_grant_asker(asker.clone());
    assert_eq!(ok(&call(&host, "run", &["echo", "hello"]).await), "hello");
    let hello = echo_item(&["hello"]);
    assert_eq!(asker.asked(), [format!("sys run {hello}")]);
    let sentence = asker.asked.lock().unwrap()[0].sentence();
    assert!(sentence.starts_with("sys wants to run `echo hello` (/"), "{sentence}");
    let e = err(&call(&host, "run", &["echo", "bye"]).await, ErrorKind::ToolError);
    assert!(e.contains("denied plugin `sys` exec"), "{e}");
    assert_eq!(
        asker.asked()[1],
        format!("sys run {}", echo_item(&["bye"])),
        "other arguments: another question"
    );
    assert_eq!(ok(&call(&host, "run", &["echo", "hello"]).await), "hello");
    assert_eq!(ok(&call(&host, "run", &["echo", "hello"]).await), "hello");
    assert_eq!(asker.asked().len(), 3, "always: not asked again");
    let file = std::fs::read_to_string(&env.config.grants_file).unwrap();
    assert!(file.contains(&format!("item = \"{hello}\"")), "{file}");
    // Not requested, a pattern-looking or a spaced argument: refused, nobody asked.
    let e = err(&call(&host, "run", &["sh", "-c id"]).await, ErrorKind::ToolError);
    assert!(e.contains("not in plugin `sys`'s manifest request"), "{e}");
    err(&call(&host, "run", &["echo", "*"]).await, ErrorKind::ToolError);
    err(&call(&host, "run", &["echo", "'a b'"]).await, ErrorKind::ToolError);
    assert_eq!(asker.asked().len(), 3, "{:?}", asker.asked());
    // The next session: granted by the file, for exactly those arguments.
    let mut next = env.config.clone();
    next.asked = toolhost_core::settings::grants::load(&next.grants_file).unwrap();
    let exec = next.plugin("sys").exec;
    assert_eq!(exec.len(), 1);
    assert_eq!(exec[0].describe(), format!("{} (args: hello)", exec[0].program.display()));
}

/// On the terminal: the workspace `files` requests is asked about when `read` fails on a
/// path — always (written, listed, not asked again), revoked, then denied; the audit trail
/// records each answer.
#[test]
fn terminal_asks_about_the_workspace_lists_and_revokes_it() {
    let env = files_env();
    std::fs::write(env.at("toolhost.toml"), "[audit]\nfile = \"audit.jsonl\"\n").unwrap();
    let item = ws_item(&env, true).to_string();
    let read = |answer: Option<&str>| {
        let question = "files wants to read and write the directory ";
        in_pty_answering(&env, &["call", "read", "README.txt"], question, answer)
    };
    let (ok1, out) = read(Some("a"));
    assert!(ok1 && out.contains("read me"), "{out}");
    let file = std::fs::read_to_string(env.at("toolhost.grants.toml")).unwrap();
    assert!(file.contains(&format!("item = \"{item}\"")) && file.contains("by = \"terminal\""), "{file}");
    let (ok2, out) = read(None);
    assert!(ok2 && out.contains("read me") && !out.contains("wants to"), "{out}");
    let listed = String::from_utf8_lossy(&plain(&env, &["list"]).stdout).into_owned();
    assert!(listed.contains(&format!("asked:     {item} — allowed \"always\" on ")), "{listed}");
    let mut revoke = vec!["revoke", "files"];
    revoke.extend(item.split(' '));
    let revoked = plain(&env, &revoke);
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    let (ok3, out) = read(Some("d"));
    assert!(!ok3 && out.contains(&format!("the operator denied plugin `files` {item}")), "{out}");
    let (audit, answers) = audited_grants(&env);
    assert_eq!(
        answers,
        [
            format!(r#"[{{"answer":"always","by":"terminal","item":"{item}"}}]"#),
            "null".to_string(),
            format!(r#"[{{"answer":"deny","by":"terminal","item":"{item}"}}]"#),
        ],
        "{audit}"
    );
}

/// On the terminal: a program `sys` requests is asked about with its exact arguments; once
/// runs it, and the next run asks again.
#[test]
fn terminal_asks_about_a_program_with_its_arguments() {
    let env = sys_requesting_echo();
    std::fs::write(
        env.at("toolhost.toml"),
        "[tool.run]\npolicy = \"allow\"\n[audit]\nfile = \"audit.jsonl\"\n",
    )
    .unwrap();
    let item = echo_item(&["hello"]).to_string();
    for answer in ["o", "d"] {
        let question = "sys wants to run `echo hello` (/";
        let (ran, out) = in_pty_answering(&env, &["call", "run", "echo", "hello"], question, Some(answer));
        if answer == "o" {
            assert!(ran && out.contains("hello"), "{out}");
        } else {
            assert!(!ran && out.contains(&format!("denied plugin `sys` {item}")), "{out}");
        }
    }
    assert!(!env.at("toolhost.grants.toml").exists());
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    assert!(audit.contains(&format!(r#"{{"item":"{item}","answer":"once","by":"terminal"}}"#)), "{audit}");
}

/// Over MCP 2026-07-28 the workspace is asked about with a sealed question bound to the call
/// and the item: a forged state, one for other arguments and a replay are refused and read
/// nothing; allow once reads the file, and the audit line records the answer.
#[test]
fn mcp_2026_workspace_question_is_sealed_to_the_call_and_item() {
    let env = files_env();
    let audit = env.at("audit.jsonl");
    let config = format!(
        "[mcp]\napproval_key = {{ secret = \"approvals\" }}\n\n[audit]\nfile = {:?}\n\n[plugin.files]\non_missing = \"ask\"\n",
        audit.display().to_string()
    );
    let served = serve_2026(&env, "", &config);
    let read = serde_json::json!({"path": "README.txt"});
    let state = grant_asked(
        &call_2026_with(&served, "read", read.clone(), None, None),
        "files wants to read and write the directory",
    );
    refused_with(
        &call_2026_with(&served, "read", read.clone(), Some(&tamper(&state)), Some(allow(false))),
        "not issued by this toolhost fleet",
    );
    refused_with(
        &call_2026_with(
            &served,
            "read",
            serde_json::json!({"path": "other.txt"}),
            Some(&state),
            Some(allow(false)),
        ),
        "other arguments",
    );
    let ran = call_2026_with(&served, "read", read.clone(), Some(&state), Some(allow(false)));
    assert!(ran.to_string().contains("read me"), "{ran}");
    let item = ws_item(&env, true).to_string();
    let last = std::fs::read_to_string(&audit).unwrap().lines().last().unwrap().to_string();
    assert!(last.contains(r#""answer":"once""#) && last.contains(&item), "{last}");
    refused_with(
        &call_2026_with(&served, "read", read.clone(), Some(&state), Some(allow(false))),
        "already used",
    );
    // Once: the next call is asked again.
    grant_asked(&call_2026_with(&served, "read", read, None, None), "read and write the directory");
    assert!(!env.at("toolhost.grants.toml").exists());
}

/// Over MCP 2026-07-28 a program is asked about with its exact arguments: a state for
/// `echo hello` cannot run `echo bye`, an expired state runs nothing, "always" is written and
/// not asked again.
#[test]
fn mcp_2026_program_question_answers_only_its_arguments_and_expires() {
    let env = sys_requesting_echo();
    let config = "[mcp]\napproval_key = { secret = \"approvals\" }\napproval_ttl_s = 1\n\n\
                  [plugin.sys]\non_missing = \"ask\"\n\n[tool.run]\npolicy = \"allow\"\n";
    let served = serve_2026(&env, "", config);
    let hello = serde_json::json!({"program": "echo", "args": "hello"});
    let bye = serde_json::json!({"program": "echo", "args": "bye"});
    let state = grant_asked(&call_2026_with(&served, "run", hello.clone(), None, None), "run `echo hello`");
    refused_with(&call_2026_with(&served, "run", bye, Some(&state), Some(allow(true))), "other arguments");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    refused_with(&call_2026_with(&served, "run", hello.clone(), Some(&state), Some(allow(true))), "expired");
    assert!(!env.at("toolhost.grants.toml").exists(), "an expired state grants nothing");
    let state = grant_asked(&call_2026_with(&served, "run", hello.clone(), None, None), "run `echo hello`");
    let ran = call_2026_with(&served, "run", hello.clone(), Some(&state), Some(allow(true)));
    assert!(
        ran["result"]["content"].to_string().contains("hello") && ran["result"]["isError"] != true,
        "{ran}"
    );
    let written = std::fs::read_to_string(env.at("toolhost.grants.toml")).unwrap();
    assert!(written.contains(&echo_item(&["hello"]).to_string()), "{written}");
    let next = call_2026_with(&served, "run", hello, None, None);
    assert_eq!(next["result"]["isError"], false, "always: not asked again: {next}");
}

/// Over MCP 2025 elicitation (official Python SDK 1.x) the workspace is asked about like a host:
/// allow once reads the file, the next call is asked again and a refusal fails it.
/// `tests/mcp/grants_workspace.py`.
#[test]
fn mcp_elicitation_asks_about_the_workspace() {
    let env = files_env();
    std::fs::write(env.at("toolhost.toml"), "[plugin.files]\non_missing = \"ask\"\n").unwrap();
    run_passing(
        mcp_script(1, "grants_workspace.py", &env).args(env.command_line()).args(["serve", "--mcp"]),
        "all workspace grant checks passed",
    );
    assert!(!env.at("toolhost.grants.toml").exists(), "nothing answered always");
}

/// Issue #59: a key-value bucket the manifest requests and the operator has not granted is
/// asked about when a call opens it: "once" runs that call with it, "always" is written to the
/// grants file as `kv BUCKET` and holds for the next process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_bucket_is_asked_about_when_a_call_opens_it() {
    let mut env = Env::with(&[plugin_artifacts::KVPLAIN]);
    env.config.grants_file = env.at(toolhost_core::settings::grants::GRANTS_FILE);
    let host = env.host();
    let asker = Scripted::answering(&[GrantAnswer::Once, GrantAnswer::Always]);
    assert!(host.executor.attach_grant_asker(asker.clone()));
    assert_eq!(ok(&call(&host, "set", &["cache", "a", "1"]).await), "ok");
    assert_eq!(asker.asked(), ["kvplain set kv cache"]);
    let req = asker.asked.lock().unwrap()[0].clone();
    assert_eq!(req.sentence(), "kvplain wants to keep data between calls in its key-value bucket `cache`");
    assert_eq!(ok(&call(&host, "get", &["cache", "a"]).await), "1", "asked again, answered always");
    let written = toolhost_core::settings::grants::load(&env.config.grants_file).unwrap();
    assert_eq!(written[0].item, GrantItem::Kv("cache".into()));
    // A bucket the manifest does not request is never asked about.
    let e = err(&call(&host, "get", &["other", "a"]).await, ErrorKind::ToolError);
    assert!(e.contains("no such store"), "{e}");
    assert_eq!(asker.asked().len(), 2);
    let mut env2 = Env::with(&[plugin_artifacts::KVPLAIN]);
    env2.config.kv = env.config.kv.clone();
    env2.config.asked = written;
    let host2 = env2.host();
    let nobody = Scripted::answering(&[]);
    host2.executor.attach_grant_asker(nobody.clone());
    assert_eq!(ok(&call(&host2, "get", &["cache", "a"]).await), "1");
    assert!(nobody.asked().is_empty());
}

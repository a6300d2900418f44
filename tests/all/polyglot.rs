//! Tools written in Python and JavaScript (issue #13): the example plugins in
//! `plugins/python/notes` and `plugins/js/datakit` are built from source with `toolhost build`'s
//! library path (componentize-py, jco; the pinned toolchains are installed into
//! `target/toolchains` on first use) and called through the executor, the `[TOOL]` text
//! protocol, OpenAI tool_calls and MCP; `toolhost new` + `toolhost build` are driven as a
//! user would for every language. A Python and a JavaScript tool run a granted program through
//! `process.run` (#27), and the SDK conformance table (`tests/sdk-conformance`) is held against
//! the host's own manifest rules.

use crate::support::http;
use crate::support::lines::{next_line, spawn_reading};
use crate::support::{Env, call, err, ok, root, toolhost};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use toolhost::project::{Project, Toolchains};
use toolhost_core::ErrorKind;
use toolhost_core::capability::process::ExecGrant;
use toolhost_core::executor::{CallControl, ToolCall};
use toolhost_core::settings::{SecretFrom, SecretSource};
use toolhost_frontends::{openai, text};

mod skills;

/// The toolchains `cargo xtask test` installs (or these tests install on first use).
fn toolchains() -> Toolchains {
    let root = std::env::var_os("TOOLHOST_TOOLCHAINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| self::root().join("target/toolchains"));
    Toolchains { root }
}

/// Builds are serialised: they share the toolchain folder and two cores.
static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Build a project of `plugins/` once per test process (the console's tests list its tools too).
pub(crate) fn built(project: &str) -> PathBuf {
    static DONE: OnceLock<Mutex<std::collections::BTreeMap<String, PathBuf>>> = OnceLock::new();
    let done = DONE.get_or_init(Default::default);
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = done.lock().unwrap().get(project) {
        return p.clone();
    }
    let p = Project::locate(&root().join("plugins").join(project)).unwrap();
    let b = p.build(&toolchains()).unwrap_or_else(|e| panic!("building plugins/{project}: {e:#}"));
    let out = root().join("target/polyglot").join(format!("{}.wasm", b.manifest.name));
    b.write(&out).unwrap();
    done.lock().unwrap().insert(project.into(), out.clone());
    out
}

fn py() -> String {
    built("python/notes").display().to_string()
}
fn js() -> String {
    built("js/datakit").display().to_string()
}

/// A JSON API on 127.0.0.1 that answers only with the right bearer token.
fn api(token: &'static str) -> u16 {
    http::listen(move |got, out| {
        let authorized = got.head.lines().any(|l| {
            l.to_ascii_lowercase().starts_with("authorization:")
                && l.trim_end().ends_with(&format!("Bearer {token}"))
        });
        let (status, body) = if authorized {
            ("200 OK", r#"{"items":[{"name":"first"},{"name":"second"}]}"#)
        } else {
            ("401 Unauthorized", r#"{"error":"no token"}"#)
        };
        http::reply(out, status, "Content-Type: application/json\r\n", body.as_bytes());
    })
}

/// An env with `plugin` granted the workspace, `localhost` and the `api_token` secret (bound
/// to `http://localhost:PORT`, the test API).
fn api_env(wasm: &str, plugin: &str, port: u16) -> (Env, tempfile::NamedTempFile) {
    let mut env = Env::with(&[wasm]);
    env.config.grant_workspace(plugin, toolhost_spec::manifest::FsMode::ReadWrite);
    env.config.grant_kv(plugin, "default").unwrap();
    env.config.grant_net(plugin, "localhost").unwrap();
    env.config.plugins.get_mut(plugin).unwrap().net.private = true;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(TOKEN.as_bytes()).unwrap();
    env.config.secrets.insert(
        "api_token".into(),
        SecretSource {
            name: "api_token".into(),
            from: SecretFrom::File(file.path().into()),
            hosts: vec![
                toolhost_core::capability::net::SecretOrigin::parse(&format!("http://localhost:{port}"))
                    .unwrap(),
            ],
        },
    );
    env.config.plugins.get_mut(plugin).unwrap().net.secrets.push("api_token".into());
    (env, file)
}

const TOKEN: &str = "s3cret-polyglot-token";

/// The `notes` plugin's checklist as it keeps it: the JSON text under `notes` in bucket
/// `default` of its key-value store in `env`'s `[kv] dir` (empty when it has none yet).
fn notes_kept(env: &Env) -> String {
    let file = env.at("kv/notes.sqlite3");
    if !file.is_file() {
        return String::new();
    }
    let limits = toolhost_core::capability::kv::KvLimits::default();
    let store = toolhost_core::capability::kv::SqliteStore::open("notes", &file, false, limits).unwrap();
    String::from_utf8(store.get("default", "notes").unwrap().unwrap_or_default()).unwrap()
}

/// A progress sink that keeps what it gets.
fn progress_sink() -> (
    std::sync::Arc<dyn toolhost_core::executor::ProgressSink>,
    std::sync::Arc<std::sync::Mutex<Vec<toolhost_core::executor::Progress>>>,
) {
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = got.clone();
    let sink: std::sync::Arc<dyn toolhost_core::executor::ProgressSink> =
        std::sync::Arc::new(move |p: &toolhost_core::executor::Progress| g.lock().unwrap().push(p.clone()));
    (sink, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_plugin_through_the_executor() {
    let port = api(TOKEN);
    let (env, _secret) = api_env(&py(), "notes", port);
    let host = env.host_yes();
    // A `rest` tool: the commas stay in the one argument.
    assert_eq!(ok(&call(&host, "note", &["buy apples, pears", " plums"]).await), "noted as #1");
    // A JSON parameter decoded into a dataclass; `progress` through the host (#29).
    let (sink, reports) = progress_sink();
    let add = ToolCall::new("add", [r#"[{"text": "call Bob", "tags": ["work"]}]"#]);
    let control = CallControl::default().with_progress(sink);
    let o = host
        .executor
        .call_controlled(&add, &*host.executor.confirm().clone(), &Default::default(), &control)
        .await;
    let added = ok(&o);
    assert!(added.contains("\"added\": 1") || added.contains("\"added\":1"), "{added}");
    let last = reports.lock().unwrap().last().cloned().expect("a progress report");
    assert_eq!((last.done, last.total, last.message.as_str()), (1, Some(1), "checked 1 of 1 notes"));
    let shown = ok(&call(&host, "show", &["work"]).await);
    assert!(shown.contains("call Bob") && !shown.contains("apples"), "{shown}");
    let kept = notes_kept(&env);
    assert!(kept.contains("buy apples, pears, plums") && kept.contains("call Bob"), "{kept}");
    // A raised exception is the tool's error; bad JSON never reaches the code.
    let e = err(&call(&host, "add", &["[]"]).await, ErrorKind::ToolError);
    assert!(e.contains("`items` is empty"), "{e}");
    let e = err(&call(&host, "add", &["not json"]).await, ErrorKind::BadArguments);
    assert!(e.contains("JSON"), "{e}");
    let e = err(&call(&host, "done", &["99"]).await, ErrorKind::ToolError);
    assert!(e.contains("99"), "{e}");
    // `http` through the host, with the secret header the host fills in.
    let got = ok(&call(&host, "read_api", &[&format!("http://localhost:{port}/api"), "/items/1/name"]).await);
    assert_eq!(got.trim(), "\"second\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn js_plugin_through_the_executor() {
    let port = api(TOKEN);
    let (env, _secret) = api_env(&js(), "datakit", port);
    let host = env.host();
    let got = ok(&call(&host, "json_select", &[r#"{"a": [10, 20, 30]}"#, "/a/2"]).await);
    assert_eq!(got.trim(), "30");
    let e = err(&call(&host, "json_select", &["{oops"]).await, ErrorKind::BadArguments);
    assert!(e.contains("JSON"), "{e}");
    let (sink, reports) = progress_sink();
    let md = ToolCall::new("md_table", [r#"[{"name": "a", "n": 1}, {"name": "b", "n": 2}]"#]);
    let control = CallControl::default().with_progress(sink);
    let o = host
        .executor
        .call_controlled(&md, &*host.executor.confirm().clone(), &Default::default(), &control)
        .await;
    let table = ok(&o);
    assert!(table.contains("| name | n |") && table.contains("| b | 2 |"), "{table}");
    let last = reports.lock().unwrap().last().cloned().expect("a progress report");
    assert_eq!(
        (last.done, last.total, last.message.as_str()),
        (2, Some(2), "2 rows"),
        "`progress` through the host"
    );
    let freq = ok(&call(&host, "word_freq", &["apple, pear", " apple"]).await);
    assert!(freq.contains("apple"), "{freq}");
    // A thrown error is the tool's error.
    let e = err(&call(&host, "json_select", &[r#"{"a": 1}"#, "/missing"]).await, ErrorKind::ToolError);
    assert!(e.contains("/missing"), "{e}");
    let got = ok(&call(&host, "json_api", &[&format!("http://localhost:{port}/api"), "/items/0/name"]).await);
    assert_eq!(got.trim(), "\"first\"");
    // Without the secret granted, the host refuses and says which grant is missing.
    let mut env = Env::with(&[&js()]);
    env.config.grant_net("datakit", "localhost").unwrap();
    env.config.plugins.get_mut("datakit").unwrap().net.private = true;
    let e = err(
        &call(&env.host(), "json_api", &[&format!("http://localhost:{port}/api")]).await,
        ErrorKind::ToolError,
    );
    assert!(e.contains("secret api_token"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_js_tools_through_text_and_openai() {
    let (env, _secret) = api_env(&py(), "notes", api(TOKEN));
    std::fs::copy(js(), env.plugins.path().join("datakit.wasm")).unwrap();
    let host = env.host_yes();
    let reply = "I'll note it and check the data.\n\
        [TOOL] note(milk, eggs) [/TOOL]\n\
        [TOOL] json_select({\"x\": {\"y\": 7}}, \"/x/y\") [/TOOL]";
    let results = text::execute(&host.executor, reply).await;
    let outs: Vec<_> = results.iter().filter_map(|(_, o)| o.clone()).collect();
    assert_eq!(outs.len(), 2, "{results:?}");
    assert_eq!(ok(&outs[0]), "noted as #1");
    let notes = notes_kept(&env);
    assert!(notes.contains("milk") && notes.contains("eggs"), "{notes}");
    assert_eq!(ok(&outs[1]).trim(), "7");

    let prompt = text::prompt(
        &host.registry.load(),
        &toolhost_core::view::listing(&host.registry.load(), &host.config),
    );
    assert!(
        prompt.contains("- note(text…)") && prompt.contains("- json_select(document: json, pointer?)"),
        "{prompt}"
    );
    assert!(prompt.contains("clear() — ") && prompt.contains("DANGEROUS."), "{prompt}");

    let tools = openai::tools(&toolhost_core::view::listing(&host.registry.load(), &host.config)).unwrap();
    let names: Vec<&str> =
        tools.as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    for n in ["note", "add", "json_select", "md_table"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let msg = openai::parse_message(
        r#"{"role": "assistant", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "add", "arguments": "{\"items\": [{\"text\": \"from openai\"}]}"}},
            {"id": "b", "type": "function", "function": {"name": "md_table", "arguments": "{\"rows\": [{\"k\": 1}]}"}}
        ]}"#,
    )
    .unwrap();
    let results = openai::execute(&host.executor, &msg).await;
    assert!(results.iter().all(|(_, o)| o.success), "{results:?}");
    assert!(notes_kept(&env).contains("from openai"));
}

/// MCP over stdio with both plugins: list, a call each, an error.
#[test]
fn python_and_js_tools_over_mcp() {
    let env = Env::with(&[&py(), &js()]);
    let mut child = env
        .configured("[kv]\ndir = \"kv\"\n")
        .args(["--allow-kv", "notes=default", "serve", "--mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |id: u32, body: &str| -> serde_json::Value {
        writeln!(stdin, "{body}").unwrap();
        stdin.flush().unwrap();
        if id == 0 {
            return serde_json::Value::Null; // a notification: no answer
        }
        loop {
            let line = lines.next().expect("server closed stdout").unwrap();
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    ask(
        1,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
    );
    ask(0, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let list = ask(2, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for n in ["note", "add", "json_select", "word_freq"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    // A default is the schema's `default` (#35): `show(tag=None, open_only: bool = False)`.
    let show = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "show").unwrap();
    assert_eq!(show["inputSchema"]["properties"]["open_only"]["default"], false, "{show}");
    assert!(show["inputSchema"]["properties"]["tag"].get("default").is_none(), "{show}");
    // `add`'s TypedDict return annotation is its outputSchema, and its result is structured.
    let add = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!(add["outputSchema"]["required"], serde_json::json!(["added", "total"]), "{add}");
    let r = ask(
        3,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"note","arguments":{"text":"over mcp, with commas"}}}"#,
    );
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "noted as #1", "{r}");
    assert!(notes_kept(&env).contains("over mcp, with commas"));
    let r = ask(
        4,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"json_select","arguments":{"document":{"k":[1,2]},"pointer":"/k/1"}}}"#,
    );
    assert_eq!(r["result"]["content"][0]["text"].as_str().unwrap().trim(), "2", "{r}");
    let r = ask(
        6,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"add","arguments":{"items":[{"text":"structured"}]}}}"#,
    );
    assert_eq!(r["result"]["structuredContent"], serde_json::json!({"added": 1, "total": 2}), "{r}");
    let r = ask(
        5,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"items":[]}}}"#,
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("`items` is empty"), "{r}");
    let _ = child.kill();
    let _ = child.wait();
}

/// Changing a Python tool's signature changes its manifest, with no other edit.
#[test]
fn a_python_signature_change_changes_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let project =
        toolhost::project::scaffold::create(dir.path(), "sig", toolhost::project::Lang::Python, None)
            .unwrap();
    let tools = toolchains();
    let app = project.join("app.py");
    let code = |signature: &str| {
        format!(
            "from toolhost_sdk import plugin, tool\n\nplugin()\n\n\n@tool(read_only=True)\ndef greet({signature}) -> str:\n    \"\"\"Greet someone.\"\"\"\n    return \"hi\"\n"
        )
    };
    std::fs::write(&app, code("name: str")).unwrap();
    let before = Project::locate(&project).unwrap().manifest(&tools).unwrap();
    assert_eq!(before.tools[0].params.len(), 1, "{before:?}");
    std::fs::write(&app, code("name: str, times: int = 1")).unwrap();
    let after = Project::locate(&project).unwrap().manifest(&tools).unwrap();
    let t = &after.tools[0];
    assert_eq!(t.params.len(), 2, "{t:?}");
    let p = t.params.last().unwrap();
    assert_eq!((p.name.as_str(), p.optional), ("times", true), "{p:?}");
    assert!(t.is_json(1), "an int is a JSON parameter: {t:?}");
    assert_ne!(serde_json::to_value(&before).unwrap(), serde_json::to_value(&after).unwrap());
}

fn toolhost_cli(dir: &Path, args: &[&str]) -> std::process::Output {
    toolhost()
        .args(args)
        .current_dir(dir)
        .env("TOOLHOST_TOOLCHAINS", toolchains().root)
        // A Rust project's build shares one target dir across runs (the SDK's dependencies
        // are compiled once).
        .env("CARGO_TARGET_DIR", root().join("target/new-plugins-build"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `toolhost new x --lang L && toolhost build x` gives a `.wasm` that `inspect` shows and
/// whose tool answers a call, in every language.
#[test]
fn new_then_build_then_call_in_every_language() {
    // The examples' builds installed the toolchains (no concurrent first install).
    let _ = (py(), js());
    for (lang, tool, args, expect) in [
        ("python", "count_words", vec!["one two, three"], "\"words\": 3"),
        ("js", "word_count", vec!["one two, three"], "\"words\":3"),
        ("rust", "greet", vec!["World"], "Hello, World!"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("my-{lang}");
        let out = toolhost_cli(dir.path(), &["new", &name, "--lang", lang]);
        assert!(out.status.success(), "new --lang {lang}: {}", String::from_utf8_lossy(&out.stderr));
        // The hint writes nothing into the project; the scaffold ignores what builds write.
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("next: toolhost test ./{name}")));
        let ignored = std::fs::read_to_string(dir.path().join(&name).join(".gitignore")).unwrap();
        for line in ["*.wasm", ".toolhost-approvals.json", ".toolhost-dev/"] {
            assert!(ignored.lines().any(|l| l == line), "{lang}: .gitignore lacks {line}: {ignored}");
        }
        assert!(
            std::fs::read_to_string(dir.path().join(&name).join("README.md"))
                .unwrap()
                .contains("toolhost test")
        );
        let out = toolhost_cli(dir.path(), &["build", &name, "--install", "plugins"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "build {lang}: {stderr}");
        assert!(stderr.contains(&format!("{name} 0.1.0")), "{stderr}");
        let wasm = dir.path().join("plugins").join(format!("{name}.wasm"));
        let out = toolhost_cli(dir.path(), &["inspect", wasm.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "inspect {lang}: {}", String::from_utf8_lossy(&out.stderr));
        let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(m["name"], name.as_str(), "{m}");
        assert!(m["tools"].as_array().unwrap().iter().any(|t| t["name"] == tool), "{m}");
        // `build` compiled it into this host's compile cache: the first call does not compile.
        let mut call = vec!["-v", "--plugins", "plugins", "call", tool];
        call.extend(args.iter().copied());
        let out = toolhost_cli(dir.path(), &call);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "call {lang}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains(expect), "call {lang}: {stdout}");
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(!log.contains("compiling "), "call {lang} compiled the plugin again: {log}");
    }
}

/// A project `toolhost new NAME --lang LANG` writes, with `file` replaced by `code`, built into
/// a `.wasm` under `target/polyglot`.
fn built_new(
    lang: toolhost::project::Lang,
    name: &str,
    file: &str,
    code: &str,
) -> (PathBuf, toolhost_spec::manifest::Manifest) {
    // The examples' builds installed the toolchains (no concurrent first install).
    let _ = (py(), js());
    let dir = tempfile::tempdir().unwrap();
    let project = toolhost::project::scaffold::create(dir.path(), name, lang, None).unwrap();
    std::fs::write(project.join(file), code).unwrap();
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let b = Project::locate(&project)
        .unwrap()
        .build(&toolchains())
        .unwrap_or_else(|e| panic!("building {name}: {e:#}"));
    let out = root().join("target/polyglot").join(format!("{name}.wasm"));
    b.write(&out).unwrap();
    (out, b.manifest)
}

/// A program for `process.run` to run: prints each argument on stdout, their count on stderr,
/// and exits 0 if the first is `ok`, else 3.
fn greeter(dir: &Path) -> PathBuf {
    let path = dir.join("greeter");
    let script = "#!/bin/sh\nfor a in \"$@\"; do printf 'out:%s\\n' \"$a\"; done\nprintf 'err:%s\\n' \"$#\" >&2\n[ \"$1\" = ok ] && exit 0\nexit 3\n";
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

/// Call `run_it(program, args)` of `plugin` (built from `wasm`) with `greeter` and `yes`
/// granted, and check what `process.run` gave the tool, as the Rust SDK's `Output` has it:
/// the exit code (`null` when the host stopped the program), stdout, stderr, truncated.
async fn runs_granted_programs(wasm: &Path, plugin: &str) {
    let programs = tempfile::tempdir().unwrap();
    let mut env = Env::with(&[wasm.to_str().unwrap()]);
    let yes = toolhost_core::capability::process::resolve_in_path("yes").expect("yes in PATH");
    env.config.plugins.entry(plugin.into()).or_default().exec =
        vec![ExecGrant::new(greeter(programs.path())), ExecGrant::new(yes)];
    let host = env.host_yes();
    let run = |program: &'static str, args: &'static str| {
        let host = &host;
        async move {
            let out = ok(&call(host, "run_it", &[program, args]).await);
            serde_json::from_str::<serde_json::Value>(&out).unwrap_or_else(|e| panic!("{out}: {e}"))
        }
    };
    // Arguments arrive one by one, no shell between: spaces, `$` and `;` are characters.
    assert_eq!(
        run("greeter", r#"["a b", "$HOME;x"]"#).await,
        serde_json::json!({"code": 3, "stdout": "out:a b\nout:$HOME;x\n", "stderr": "err:2\n",
                           "truncated": false, "success": false}),
        "{plugin}"
    );
    let done = run("greeter", r#"["ok"]"#).await;
    assert_eq!(
        (&done["code"], &done["success"], &done["stdout"]),
        (&0.into(), &true.into(), &"out:ok\n".into())
    );
    // A flood of output: cut at the host's cap, the program stopped (no exit code).
    let flood = run("yes", "[]").await;
    assert_eq!((&flood["truncated"], &flood["code"]), (&true.into(), &serde_json::Value::Null), "{flood}");
    assert!(flood["stdout"].as_str().unwrap().starts_with("y\ny\n"), "{flood}");
    // A program the plugin did not request: the host refuses, and the SDK hands the reason on.
    let e = err(&call(&host, "run_it", &["sh", r#"["-c", "id"]"#]).await, ErrorKind::ToolError);
    assert!(e.contains("`sh`"), "{plugin}: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_tool_runs_a_granted_program() {
    let code = r#"from toolhost_sdk import plugin, process, tool

plugin(exec=["greeter", "yes"])


@tool
def run_it(program: str, args: list[str]) -> dict:
    """Run a granted program and say what it did."""
    out = process.run(program, args)
    return {"code": out.code, "stdout": out.stdout_text()[:40], "stderr": out.stderr_text(),
            "truncated": out.truncated, "success": out.success()}
"#;
    let (wasm, manifest) = built_new(toolhost::project::Lang::Python, "pyrunner", "app.py", code);
    assert_eq!(manifest.capabilities.exec, ["greeter", "yes"]);
    runs_granted_programs(&wasm, "pyrunner").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_js_tool_runs_a_granted_program() {
    let code = r#"import { definePlugin, defineTool, process } from 'toolhost-sdk';

definePlugin({ capabilities: { exec: ['greeter', 'yes'] } });

export const runIt = defineTool({
  name: 'run_it',
  description: 'Run a granted program and say what it did.',
  params: [{ name: 'program' }, { name: 'args', schema: { type: 'array', items: { type: 'string' } } }],
  run(program, args) {
    const out = process.run(program, args);
    return { code: out.code, stdout: out.stdoutText().slice(0, 40), stderr: out.stderrText(), truncated: out.truncated, success: out.success() };
  },
});
"#;
    let (wasm, manifest) = built_new(toolhost::project::Lang::Js, "jsrunner", "plugin.js", code);
    assert_eq!(manifest.capabilities.exec, ["greeter", "yes"]);
    runs_granted_programs(&wasm, "jsrunner").await;
}

/// The table's value with every `{"$repeat": [[piece, times], …]}` written out.
fn expand_repeats(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key("$repeat") => Value::String(
            o["$repeat"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[0].as_str().unwrap().repeat(p[1].as_u64().unwrap() as usize))
                .collect(),
        ),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), expand_repeats(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(expand_repeats).collect()),
        other => other.clone(),
    }
}

/// The SDK conformance table (`tests/sdk-conformance/cases.json`, run against each SDK by its
/// own tests) agrees with the host: every manifest it has the SDKs derive is one the host
/// loads, a case that mirrors a `tests/manifests` golden has that golden's outcome (an SDK
/// refuses what the host refuses), and every golden is mirrored or named as out of the SDKs'
/// reach.
#[test]
fn the_sdk_conformance_table_agrees_with_the_host() {
    let table: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/sdk-conformance/cases.json")).unwrap(),
    )
    .unwrap();
    let goldens: std::collections::BTreeSet<String> = std::fs::read_dir(root().join("tests/manifests"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut mirrored = std::collections::BTreeSet::new();
    let mut manifests = 0;
    for case in table["cases"].as_array().unwrap() {
        let case = expand_repeats(case);
        let id = case["id"].as_str().unwrap();
        if let Some(m) = case.get("manifest") {
            toolhost_spec::manifest::parse(m.to_string().as_bytes()).unwrap_or_else(|e| {
                panic!("case {id}: the host refuses the manifest the SDKs must derive: {e}")
            });
            manifests += 1;
        }
        if let Some(g) = case["golden"].as_str() {
            assert!(goldens.contains(g), "case {id} mirrors tests/manifests/{g}.json, which does not exist");
            let host_refuses = root().join(format!("tests/manifests/{g}.err")).exists();
            assert_eq!(
                case.get("error").is_some(),
                host_refuses,
                "case {id}: the SDKs must refuse what the host refuses in {g}, and only that"
            );
            mirrored.insert(g.to_string());
        }
    }
    assert!(manifests >= 10, "{manifests} manifests");
    let out_of_reach: std::collections::BTreeSet<String> =
        table["not_expressible"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(mirrored.intersection(&out_of_reach).count(), 0, "mirrored and out of reach at once");
    let missing: Vec<_> =
        goldens.iter().filter(|g| !mirrored.contains(*g) && !out_of_reach.contains(*g)).collect();
    assert!(missing.is_empty(), "goldens neither mirrored by a case nor in `not_expressible`: {missing:?}");
    assert!(out_of_reach.is_subset(&goldens), "`not_expressible` names goldens that do not exist");
}

/// Issue #35: two builds of unchanged sources are the same file in every language, and a test
/// file is not an input (Python and JavaScript: from the build cache keyed by the inputs, since
/// their toolchains' snapshots are not deterministic; Rust: cargo recompiles, identically).
#[test]
fn builds_of_unchanged_sources_are_byte_identical_in_every_language() {
    let _ = (py(), js());
    let sha = |p: &Path| toolhost_spec::digest::sha256_hex(&std::fs::read(p).unwrap());
    for lang in ["python", "js", "rust"] {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("same-{lang}");
        let out = toolhost_cli(dir.path(), &["new", &name, "--lang", lang]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let project = dir.path().join(&name);
        let build = |to: &str| {
            let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            let out = toolhost_cli(dir.path(), &["build", &name, "--no-test", "-o", to]);
            assert!(out.status.success(), "build {lang}: {}", String::from_utf8_lossy(&out.stderr));
            sha(&dir.path().join(to))
        };
        let first = build("a.wasm");
        // A test edited, and for Rust every source touched (cargo compiles the crate again).
        match lang {
            "python" => std::fs::write(project.join("test_app.py"), "# nothing to test\n").unwrap(),
            "js" => std::fs::write(project.join("plugin.test.js"), "// nothing to test\n").unwrap(),
            _ => {
                let lib = project.join("src/lib.rs");
                let text = std::fs::read_to_string(&lib).unwrap();
                std::fs::write(&lib, format!("{text}\n")).unwrap();
            }
        }
        assert_eq!(build("b.wasm"), first, "{lang}: two builds of the same sources differ");
    }
}

/// Issue #35: `toolhost dev`'s dev build of each example behaves exactly like the built plugin:
/// the same manifest, the same grants (plus its own sources, read-only), the same limits, and
/// the same outcome for every call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dev_build_behaves_like_the_built_plugin() {
    let port = api(TOKEN);
    let url = format!("http://localhost:{port}/api");
    let calls: Vec<(&str, &str, Vec<&str>)> = vec![
        ("python/notes", "note", vec!["buy apples, pears", " plums"]),
        ("python/notes", "add", vec![r#"[{"text": "call Bob", "tags": ["work"]}]"#]),
        ("python/notes", "show", vec!["work"]),
        ("python/notes", "add", vec!["[]"]),
        ("python/notes", "done", vec!["99"]),
        ("python/notes", "read_api", vec![&url, "/items/1/name"]),
        ("js/datakit", "json_select", vec![r#"{"a": [10, 20, 30]}"#, "/a/2"]),
        ("js/datakit", "json_select", vec![r#"{"a": 1}"#, "/missing"]),
        ("js/datakit", "md_table", vec![r#"[{"name": "a", "n": 1}]"#]),
        ("js/datakit", "word_freq", vec!["apple, pear", " apple"]),
        ("js/datakit", "json_api", vec![&url, "/items/0/name"]),
    ];
    for (example, plugin) in [("python/notes", "notes"), ("js/datakit", "datakit")] {
        let wasm = built(example);
        let (built_env, _s1) = api_env(wasm.to_str().unwrap(), plugin, port);
        let (dev_env, _s2) = api_env(wasm.to_str().unwrap(), plugin, port);
        std::fs::remove_file(dev_env.plugins.path().join(format!("{plugin}.wasm"))).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let project = Project::locate(&root().join("plugins").join(example)).unwrap();
        let installed = {
            let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            project.dev_install(&toolchains(), dev_env.plugins.path(), scratch.path(), &|_| Ok(())).unwrap()
        };
        assert!(matches!(installed, toolhost::project::dev::DevInstall::Installed { .. }), "{installed:?}");
        let (b, d) = (built_env.host_yes(), dev_env.host_yes());
        let (br, dr) = (b.registry.load_full(), d.registry.load_full());
        assert!(dr.failures().is_empty(), "{:?}", dr.failures());
        let (bp, dp) = (&br.plugins()[0], &dr.plugins()[0]);
        assert_eq!(bp.manifest, dp.manifest, "{example}: the manifests differ");
        let mut dev_grants = dp.grants.clone();
        let sources = dev_grants.fs.pop().expect("the dev build's sources");
        assert_eq!(sources.name, "toolhost-dev");
        assert_eq!(sources.mode, toolhost_spec::manifest::FsMode::ReadOnly);
        assert!(sources.host_path.starts_with(dev_env.plugins.path().join(".toolhost-dev")), "{sources:?}");
        let mut built_grants = bp.grants.clone();
        // The workspace differs by test env only: each has its own.
        for g in [&mut built_grants, &mut dev_grants] {
            for f in g.fs.iter_mut() {
                f.host_path = PathBuf::new();
            }
        }
        assert_eq!(built_grants, dev_grants, "{example}: the grants differ");
        for spec in &bp.manifest.tools {
            let (bv, dv) = (
                toolhost_core::view::ToolView::new(br.get(&spec.name).unwrap(), &b.config),
                toolhost_core::view::ToolView::new(dr.get(&spec.name).unwrap(), &d.config),
            );
            assert_eq!(format!("{:?}", bv.limits), format!("{:?}", dv.limits), "{}", spec.name);
            assert_eq!((bv.dangerous, bv.read_only), (dv.dangerous, dv.read_only), "{}", spec.name);
        }
        for (_, tool, args) in calls.iter().filter(|(e, ..)| *e == example) {
            let (bo, do_) = (call(&b, tool, args).await, call(&d, tool, args).await);
            assert_eq!(
                (bo.success, &bo.data, &bo.error, bo.kind),
                (do_.success, &do_.data, &do_.error, do_.kind),
                "{example}: {tool}{args:?}"
            );
        }
        assert_eq!(notes_kept(&built_env), notes_kept(&dev_env), "{example}: the stores differ");
    }
}

/// Issue #35: `toolhost test` runs a project's own tests, then calls each tool through the host,
/// and writes nothing into the project; `toolhost build` runs the tests first (`--no-test`
/// skips them).
#[test]
fn toolhost_test_runs_the_tests_then_calls_every_tool() {
    let _ = js();
    let dir = tempfile::tempdir().unwrap();
    assert!(toolhost_cli(dir.path(), &["new", "tested", "--lang", "js"]).status.success());
    let project = dir.path().join("tested");
    let listing = |p: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing(&project);
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = toolhost_cli(dir.path(), &["test", "tested"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("toolhost test: word_count(test): ok"), "{stderr}");
    assert!(stderr.contains("toolhost test: 1 tool answered, 0 failed (tested)"), "{stderr}");
    assert_eq!(listing(&project), before, "`toolhost test` wrote into the project");
    // A failing test fails `test` and `build`, naming the runner; --no-test builds.
    std::fs::write(
        project.join("plugin.test.js"),
        "import { test } from 'node:test';\nimport assert from 'node:assert';\ntest('fails', () => assert.equal(1, 2));\n",
    )
    .unwrap();
    let out = toolhost_cli(dir.path(), &["test", "tested"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("node --test failed in"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = toolhost_cli(dir.path(), &["build", "tested"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!project.join("tested.wasm").exists());
    let out = toolhost_cli(dir.path(), &["build", "tested", "--no-test"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Issue #35: `toolhost dev` on a JavaScript project: a dev build on every save of an input (not
/// of a test), change lines that say what changed, and nothing left behind when it stops.
#[test]
fn dev_on_a_js_project_says_what_changed_and_cleans_up() {
    let _ = js();
    let dir = tempfile::tempdir().unwrap();
    assert!(toolhost_cli(dir.path(), &["new", "livejs", "--lang", "js"]).status.success());
    let project = dir.path().join("livejs");
    let plugins = dir.path().join("plugins");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (mut child, rx) = spawn_reading(
        toolhost()
            .arg("--plugins")
            .arg(&plugins)
            .arg("dev")
            .arg(&project)
            .env("TOOLHOST_TOOLCHAINS", toolchains().root)
            .env("TMPDIR", &tmp),
    );
    let wait_for = |want: &str| {
        let mut seen = Vec::new();
        if next_line(&rx, 240, |l| l == want, &mut seen).is_none() {
            panic!("never saw {want:?}; saw {seen:?}");
        }
    };
    wait_for("+ word_count (livejs v0.1.0)");
    assert!(
        std::fs::read(plugins.join("livejs.wasm"))
            .is_ok_and(|b| toolhost_spec::sections::dev_marker(&b).unwrap().is_some())
    );
    let plugin = project.join("plugin.js");
    let text = std::fs::read_to_string(&plugin).unwrap();
    std::fs::write(&plugin, text.replace("Count the words, lines and characters of a text.", "Count words."))
        .unwrap();
    wait_for("~ word_count: description");
    let out =
        toolhost().arg("--plugins").arg(&plugins).args(["call", "word_count", "one two"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"words\":2"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    assert!(child.wait().unwrap().success());
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "dev left temporary files: {left:?}");
}

//! Code mode (`[code_mode]`, #61): `run_script` on every front end, its script in a sandbox of
//! its own whose only door is a tool call, each inner call the caller's own full call (catalog,
//! danger policy, audit with the script's call as parent), and hostile scripts that fail with a
//! clear error and leave the host unharmed.

use crate::support::mcp_http::{Stateless, form};
use crate::support::python::{mcp_script, run_passing};
use crate::support::{Env, Server, call, err, ok};
use toolhost_core::ErrorKind;
use toolhost_frontends::{mcp::McpServer, openai, text};

/// The config of the tests' hosts: code mode on with `code_mode` keys, the workspace
/// writable by `files`, and `extra`.
fn toml(code_mode: &str, extra: &str) -> String {
    format!(
        "[code_mode]\nenabled = true\n{code_mode}\n\n[plugin.files]\nfs = [{{ path = \"workspace\", mode = \"rw\" }}]\n{extra}"
    )
}

/// Files and text plugins configured by `toml`, and two files in the workspace.
fn code_env(toml: &str) -> Env {
    let env = Env::with_toml(&[plugin_artifacts::FILES, plugin_artifacts::TEXT], toml);
    std::fs::write(env.ws("a.txt"), "one two three\nfour").unwrap();
    std::fs::write(env.ws("b.txt"), "five six").unwrap();
    env
}

/// The meta-tool's answer as JSON.
#[track_caller]
fn answer(o: &toolhost_core::Outcome) -> serde_json::Value {
    serde_json::from_str(&ok(o)).unwrap()
}

async fn script(host: &toolhost_core::Toolhost, code: &str) -> toolhost_core::Outcome {
    call(host, "run_script", &[code]).await
}

#[tokio::test]
async fn a_script_chains_calls_and_returns_its_value_console_and_count() {
    let env = code_env(&toml("", ""));
    let host = env.host();
    let code = r#"
        const out = [];
        for (const path of ["a.txt", "b.txt"]) {
            const text = await tools.read({path});
            const counted = await tools.count_words({text});
            out.push({path, words: counted.words});
        }
        console.log("counted", out.length, "files");
        const [x, y] = await Promise.all([tools.echo("x"), tools.echo(["y"].join(""))]);
        return {out, echoed: x + y};
    "#;
    let o = script(&host, code).await;
    let a = answer(&o);
    assert_eq!(
        a["result"],
        serde_json::json!({"out": [{"path": "a.txt", "words": 4}, {"path": "b.txt", "words": 2}], "echoed": "xy"}),
        "{a}"
    );
    assert_eq!(a["console"], "counted 2 files");
    assert_eq!(a["calls"], 6);
    assert_eq!(o.usage.as_ref().unwrap().inner_calls, 6);

    // Helpers declared async, methods and arrows all await tool calls.
    let code = "async function words(path) { return (await tools.count_words({text: await tools.read({path})})).words }\n\
                const o = { async both() { return (await words('a.txt')) + (await words('b.txt')) } };\n\
                const twice = async (n) => n * 2;\n\
                return twice(await o.both());";
    assert_eq!(answer(&script(&host, code).await)["result"], 12);
}

#[tokio::test]
async fn every_front_end_offers_run_script_with_the_tools_declared() {
    let env = code_env(&toml("", ""));
    let host = env.host();
    let registry = host.registry.load();
    let views = toolhost_core::view::listing(&registry, &host.config);
    let meta_tool = views.iter().find(|v| v.name() == "run_script").expect("run_script listed");
    let d = &meta_tool.spec.description;
    assert!(d.contains("declare const tools: {"), "{d}");
    assert!(d.contains("read(args: {") && d.contains("path: string"), "{d}");
    assert!(d.contains("count_words(args: {") && d.contains("Promise<object>"), "{d}");
    assert!(text::prompt(&registry, &views).contains("run_script"), "the [TOOL] prompt");
    let tools = openai::tools(&views).unwrap();
    assert!(tools.as_array().unwrap().iter().any(|t| t["function"]["name"] == "run_script"), "OpenAI");
    let server = McpServer::new(host.executor.clone(), None).unwrap();
    assert!(server.tools(&Default::default()).iter().any(|t| t.name == "run_script"), "MCP");

    // The [TOOL] text and OpenAI function calling run it like any tool.
    let reply = "[TOOL] run_script(\"return (await tools.echo('hi')) + '!'\") [/TOOL]";
    let outcomes: Vec<_> =
        text::execute(&host.executor, reply).await.into_iter().filter_map(|(_, o)| o).collect();
    assert_eq!(answer(&outcomes[0])["result"], "hi!");
    let msg = openai::parse_message(
        &serde_json::json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "run_script", "arguments": serde_json::json!({"code": "return 40 + 2"}).to_string()}}]})
        .to_string(),
    )
    .unwrap();
    let outcomes = openai::execute(&host.executor, &msg).await;
    assert_eq!(answer(&outcomes[0].1)["result"], 42);

    // Off by default: no run_script anywhere.
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let host = env.host();
    let registry = host.registry.load();
    assert!(toolhost_core::view::listing(&registry, &host.config).iter().all(|v| v.name() != "run_script"));
    err(&script(&host, "return 1").await, ErrorKind::UnknownTool);
}

#[tokio::test]
async fn inner_calls_keep_the_catalog_and_the_danger_policy_and_refusals_stick() {
    let env = code_env(&toml("", "exclude = [\"write\"]\n"));
    let host = env.host();
    // A tool the catalog excludes is unknown inside a script too.
    let code =
        "try { await tools.write({path: 'w.txt', content: 'x'}) } catch (e) { return [e.name, e.kind] }";
    assert_eq!(
        answer(&script(&host, code).await)["result"],
        serde_json::json!(["ToolError", "unknown_tool"])
    );
    assert!(!env.ws("w.txt").exists());

    // A dangerous tool with no one to ask is refused, and asking again in the script is too.
    let code = "const kinds = [];\n\
                for (let i = 0; i < 3; i++) { try { await tools.delete({path: 'a.txt'}) } catch (e) { kinds.push(e.kind + ': ' + e.message) } }\n\
                return kinds;";
    let a = answer(&script(&host, code).await);
    let kinds = a["result"].as_array().unwrap();
    assert!(kinds[0].as_str().unwrap().starts_with("denied: delete:"), "{a}");
    assert!(kinds[1].as_str().unwrap().contains("refused earlier in this script"), "{a}");
    assert_eq!(a["calls"], 1, "the refused retries ran nothing: {a}");
    assert!(env.ws("a.txt").exists());

    // An operator who confirmed up front (--yes) lets it run.
    let host = env.host_yes();
    let a = answer(&script(&host, "return await tools.delete({path: 'a.txt'})").await);
    assert!(a["result"].as_str().unwrap().contains("a.txt"), "{a}");
    assert!(!env.ws("a.txt").exists());

    // An uncaught failure names the tool, its kind and the script's line.
    let e = err(&script(&host, "\n\nawait tools.read({path: 'nope.txt'})").await, ErrorKind::ToolError);
    assert!(e.starts_with("script line 3"), "{e}");
    assert!(e.contains("an uncaught failure of `read`: tool_error"), "{e}");

    // The column is the script's, where the rewrite of `async` and `await` moved the text.
    for (code, at) in [
        ("let a = 1; null.x", "script line 1, column 12:"),
        ("const a = await tools.echo('x'); null.y", "script line 1, column 34:"),
        (
            "let b = 1;\nconst f = async () => { await tools.echo('x'); null.y };\nawait f()",
            "script line 2, column 48:",
        ),
    ] {
        let e = err(&script(&host, code).await, ErrorKind::ToolError);
        assert!(e.starts_with(at), "{code}: {e}");
    }
}

#[tokio::test]
async fn hostile_scripts_fail_clearly_and_leave_the_host_unharmed() {
    let env = code_env(&toml("max_calls = 50\ntimeout_ms = 1500\nmemory_mb = 32", ""));
    let host = env.host();
    let cases: &[(&str, ErrorKind, &str)] = &[
        ("return (", ErrorKind::ToolError, "script line 2, column 1: SyntaxError"),
        ("while (true) {}", ErrorKind::Timeout, "time limit of 1500 ms ([code_mode] timeout_ms)"),
        (
            "const a = []; for (;;) a.push(new Array(1e6).fill(7));",
            ErrorKind::MemoryLimit,
            "[code_mode] memory_mb",
        ),
        ("await tools.nope()", ErrorKind::ToolError, "unknown tool `nope`"),
        (
            "for (let i = 0; i < 10000; i++) await tools.echo('x')",
            ErrorKind::ToolError,
            "at most 50 tool calls ([code_mode] max_calls)",
        ),
        ("const a = {}; a.self = a; return a", ErrorKind::ToolError, "result is not JSON"),
        ("await import('fs')", ErrorKind::ToolError, "cannot import modules"),
        ("return Date.now()", ErrorKind::ToolError, "no wall clock"),
        ("await tools.run_script({code: 'return 1'})", ErrorKind::ToolError, "a script cannot run a script"),
        ("for await (const x of []) {}", ErrorKind::ToolError, "`for await` is not supported"),
        ("throw 'plain'", ErrorKind::ToolError, "uncaught plain"),
        // The rewrite puts nothing before the script's first statement: strict mode holds.
        ("'use strict'; undeclared = 1", ErrorKind::ToolError, "ReferenceError: undeclared is not defined"),
    ];
    for (code, kind, says) in cases {
        let o = script(&host, code).await;
        let e = err(&o, *kind);
        assert!(e.contains(says), "{code}: {e}");
    }
    // The host's own reach is absent: no process, require, host binding or fetch; eval stays
    // inside the sandbox.
    let code =
        "return [typeof process, typeof require, typeof host, typeof fetch, typeof std, eval('6 * 7')]";
    assert_eq!(
        answer(&script(&host, code).await)["result"],
        serde_json::json!(["undefined", "undefined", "undefined", "undefined", "undefined", 42])
    );
    // And it still serves.
    assert_eq!(ok(&call(&host, "echo", &["still here"]).await), "still here");
    assert_eq!(answer(&script(&host, "return 1").await)["result"], 1);
}

#[test]
fn inner_calls_are_audited_with_the_script_as_their_parent() {
    let env = code_env(&toml("", ""));
    let toml = toml("", "\n[audit]\nfile = \"audit.jsonl\"\n");
    let code = "return (await tools.count_words({text: await tools.read({path: 'b.txt'})})).words";
    let out = env.configured(&toml).args(["call", "run_script", code]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("\"result\":2"), "{stdout}");
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let script = lines.iter().find(|l| l["tool"] == "run_script").expect("the script's line");
    let inner: Vec<&serde_json::Value> = lines.iter().filter(|l| l["parent"] == script["id"]).collect();
    let tools: Vec<&str> = inner.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["read", "count_words"], "{audit}");
    assert!(inner.iter().all(|l| l["who"] == script["who"] && l["outcome"] == "ok"), "{audit}");
    assert!(script.get("parent").is_none() && script["outcome"] == "ok", "the script's own line: {script}");
}

#[test]
fn an_official_mcp_client_runs_a_script_and_confirms_its_dangerous_call() {
    let env = code_env(&toml("", ""));
    std::fs::write(env.config_path(), toml("", "")).unwrap();
    let mut cmd = mcp_script(1, "code_mode.py", &env);
    cmd.arg("stdio").args(env.command_line()).args(["serve", "--mcp"]);
    run_passing(&mut cmd, "code mode checks passed");
    assert!(!env.ws("b.txt").exists(), "the confirmed delete ran");
    assert!(env.ws("a.txt").exists(), "the declined one did not");
}

/// A code-mode host served over streamable HTTP, and the `Authorization` line of its local key.
fn stateless_server() -> (Env, Server, String) {
    let env = code_env(&toml("", ""));
    let mut cmd = env.configured(&toml("", ""));
    cmd.args(["serve", "--mcp", "--http", "127.0.0.1:0"]);
    let server = Server::start(&mut cmd);
    let auth = format!("Authorization: Bearer {}\r\n", server.key.clone().expect("the local key"));
    (env, server, auth)
}

#[test]
fn a_stateless_request_is_not_asked_mid_script_and_the_model_is_told_to_call_the_tool() {
    let (env, mut server, auth) = stateless_server();
    let client = Stateless { url: &server.url, auth: &auth, client: "code-mode", capabilities: form() };
    // Asking would mean a retry of the whole request: the script's earlier calls again.
    let code =
        "const before = await tools.count_words({text: 'a b'}); return await tools.delete({path: 'a.txt'})";
    let r = client.call("run_script", serde_json::json!({"code": code}), None);
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("call `delete` directly (not from run_script)"), "{text}");
    assert!(env.ws("a.txt").exists());
    assert!(text.contains("// confirm: delete"), "the model is told how to declare it: {text}");
    // Called directly, the same client is asked.
    let r = client.call("delete", serde_json::json!({"path": "a.txt"}), None);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    server.terminate(10);
}

#[test]
fn a_stateless_script_that_declares_its_dangerous_tools_is_asked_about_them_before_it_runs() {
    use serde_json::json;
    let (env, mut server, auth) = stateless_server();
    let client = Stateless { url: &server.url, auth: &auth, client: "code-mode", capabilities: form() };
    let code = "// confirm: delete\nconst n = await tools.count_words({text: 'a b'});\n\
                await tools.delete({path: 'a.txt'}); return n";
    // Asked before anything runs: one question about the script, naming the declared tool.
    let r = client.call("run_script", json!({"code": code}), None);
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let question = r["result"]["inputRequests"]["confirm"].to_string();
    assert!(question.contains("delete") && question.contains("run_script"), "{question}");
    let state = r["result"]["requestState"].as_str().expect("a sealed state").to_string();
    assert!(env.ws("a.txt").exists(), "nothing ran before the answer");
    let accept = json!({"action": "accept", "content": {"approve": true}});
    // The approval is for that script: another script with the same state is refused.
    let other = code.replace("a.txt", "b.txt");
    let r = client.call("run_script", json!({"code": other}), Some((&state, "confirm", accept.clone())));
    assert!(r.get("error").is_some() || r["result"]["isError"] == true, "another script approved: {r}");
    assert!(env.ws("b.txt").exists());
    // Approved, the script runs and its declared call is not asked again.
    let state = {
        let r = client.call("run_script", json!({"code": code}), None);
        r["result"]["requestState"].as_str().expect("asked again").to_string()
    };
    let r = client.call("run_script", json!({"code": code}), Some((&state, "confirm", accept)));
    assert_ne!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|v| v["result"]["words"] == 2 && v["calls"] == 2),
        "{text}"
    );
    assert!(!env.ws("a.txt").exists(), "the declared, approved delete ran");
    // A declined question runs nothing.
    let undeclared = "// confirm: delete\nreturn await tools.delete({path: 'b.txt'})";
    let state = {
        let r = client.call("run_script", json!({"code": undeclared}), None);
        r["result"]["requestState"].as_str().expect("asked").to_string()
    };
    let decline = json!({"action": "decline"});
    let r = client.call("run_script", json!({"code": undeclared}), Some((&state, "confirm", decline)));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(env.ws("b.txt").exists(), "declined: nothing deleted");
    server.terminate(10);
}

#[tokio::test]
async fn a_script_reports_its_progress_and_cancelling_it_stops_it() {
    use std::sync::{Arc, Mutex};
    use toolhost_core::executor::{CallContext, CallControl, Cancel, NoConfirm, Progress};
    let env = code_env(&toml("", ""));
    let host = env.host();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = {
        let seen = seen.clone();
        Arc::new(move |p: &Progress| seen.lock().unwrap().push(p.message.clone()))
    };
    let cancel = Cancel::new();
    let control = CallControl::default().with_cancel(cancel.clone()).with_progress(sink);
    let call = toolhost_core::ToolCall::new(
        "run_script",
        ["await tools.echo('a'); await tools.count_words('b c'); for (;;) {}"],
    );
    let executor = host.executor.clone();
    let task = tokio::spawn(async move {
        executor.call_controlled(&call, &NoConfirm, &CallContext::local(None), &control).await
    });
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while seen.lock().unwrap().len() < 2 && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    cancel.cancel("the test");
    let o = task.await.unwrap();
    err(&o, ErrorKind::Cancelled);
    assert_eq!(
        *seen.lock().unwrap(),
        ["1 tool call made; the last: echo", "2 tool calls made; the last: count_words"]
    );
}

#[tokio::test]
async fn in_a_searched_catalog_a_script_finds_tools_with_find_tools() {
    let env = code_env(&toml("", "\n[catalog]\nmode = \"search\"\npin = [\"read\"]\n"));
    let host = env.host();
    let registry = host.registry.load();
    let views = toolhost_core::view::listing(&registry, &host.config);
    let d = &views.iter().find(|v| v.name() == "run_script").expect("listed").spec.description;
    assert!(d.contains("tools.find_tools({query:"), "{d}");
    assert!(
        d.contains("read(args:") && !d.contains("count_words(args:"),
        "only the pinned tools are declared: {d}"
    );
    let code = "const found = await tools.find_tools({query: 'count the words of a text'});\n\
                const name = found.tools[0].name;\n\
                return [name, (await tools[name]({text: 'a b c'})).words];";
    assert_eq!(answer(&script(&host, code).await)["result"], serde_json::json!(["count_words", 3]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_beyond_their_concurrency_wait_within_their_time_limit() {
    let env = code_env(&toml("concurrency = 1\ntimeout_ms = 1500", ""));
    let host = env.host();
    // The runner is made ready at the first script, before it takes a sandbox: made here, so
    // that the busy loop below takes the one sandbox first.
    assert_eq!(answer(&script(&host, "return 0").await)["result"], 0);
    let (busy_loop, waiting) = tokio::join!(script(&host, "for (;;) {}"), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        script(&host, "return 1").await
    });
    err(&busy_loop, ErrorKind::Timeout);
    // The second waited for the one sandbox (its wait counted in its wall time), then ran.
    assert_eq!(answer(&waiting)["result"], 1);
    assert!(waiting.usage.as_ref().unwrap().wall_us >= 1_000_000, "{waiting:?}");
    assert_eq!(answer(&script(&host, "return 2").await)["result"], 2, "the sandbox is free again");
}

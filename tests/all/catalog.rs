//! The tool catalog: two plugins claiming one name (never served silently, never taken over by
//! a hot reload), prefixes, renames, namespaces, selection with globs, full MCP metadata (checked
//! with the official Python SDK 2.x), search mode with `find_tools` on every front end, and the
//! registry `server.json`.

use crate::support::python::mcp_script;
use crate::support::{Env, Operator, call, err, ok, runtime};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_core::executor::{Decision, ErrorKind, ToolCall};
use toolhost_core::registry::Served;
use toolhost_core::settings::Config;
use toolhost_frontends::{mcp::McpServer, openai, text};

/// A folder of `wasm` plugins with the catalog and plugin sections of `toml` applied.
fn with_sections(wasm: &[&str], toml: &str) -> Env {
    let mut env = Env::with(wasm);
    let parsed = Config::from_str_at(toml, env.workspace.path(), None).expect("test config");
    env.config.plugins = parsed.plugins;
    env.config.tools = parsed.tools;
    env.config.catalog = parsed.catalog;
    env
}

fn text_and_hostile(toml: &str) -> Env {
    with_sections(&[plugin_artifacts::HOSTILE, plugin_artifacts::TEXT], toml)
}

fn openai_names(host: &toolhost_core::Toolhost) -> Vec<String> {
    let tools = openai::tools(&toolhost_core::view::listing(&host.registry.load(), &host.config)).unwrap();
    tools.as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

fn mcp_names(host: &toolhost_core::Toolhost) -> Vec<String> {
    let server = McpServer::new(host.executor.clone(), None).unwrap();
    server.tools(&Default::default()).into_iter().map(|t| t.name.to_string()).collect()
}

/// Each MCP tool's `inputSchema` (built once per plugin, or per registry for `find_tools`) is the
/// one OpenAI's `parameters` derives from the exposed spec at each listing, and there is one.
fn assert_listed_schemas_agree(host: &toolhost_core::Toolhost) {
    let openai = openai::tools(&toolhost_core::view::listing(&host.registry.load(), &host.config)).unwrap();
    let server = McpServer::new(host.executor.clone(), None).unwrap();
    let tools = server.tools(&Default::default());
    assert!(!tools.is_empty());
    for t in tools {
        let name = toolhost_core::catalog::openai_name(&t.name);
        let f = openai.as_array().unwrap().iter().find(|f| f["function"]["name"] == *name).unwrap();
        let mcp = serde_json::Value::Object((*t.input_schema).clone());
        assert_eq!(mcp, f["function"]["parameters"], "{}", t.name);
        assert!(mcp["properties"].as_object().is_some_and(|p| !p.is_empty()), "{}: {mcp}", t.name);
    }
}

async fn run_text(host: &toolhost_core::Toolhost, reply: &str) -> Vec<toolhost_core::Outcome> {
    text::execute(&host.executor, reply).await.into_iter().filter_map(|(_, o)| o).collect()
}

async fn run_openai(
    host: &toolhost_core::Toolhost,
    calls: &[(&str, serde_json::Value)],
) -> Vec<toolhost_core::Outcome> {
    let tool_calls: Vec<serde_json::Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            serde_json::json!({"id": format!("c{i}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    let msg = openai::parse_message(
        &serde_json::json!({"role": "assistant", "tool_calls": tool_calls}).to_string(),
    )
    .unwrap();
    openai::execute(&host.executor, &msg).await.into_iter().map(|(_, o)| o).collect()
}

#[tokio::test]
async fn two_plugins_claiming_one_name_serve_neither_and_every_listing_says_so() {
    let env = text_and_hostile("");
    let host = env.host();
    let reg = host.registry.load_full();
    assert!(reg.get("count_words").is_none(), "neither plugin is served under the name");
    let [conflict] = reg.conflicts() else { panic!("{:?}", reg.conflicts()) };
    assert_eq!(conflict.kept, None);
    let plugins: Vec<&str> = conflict.claims.iter().map(|c| &*c.plugin).collect();
    assert_eq!(plugins, ["hostile", "text"]);
    // The other tools of both plugins are served.
    assert_eq!(ok(&call(&host, "echo", &["still here"]).await), "still here");
    assert_eq!(&*reg.get("snoop").unwrap().plugin.name, "hostile");

    // Calling the name fails with both plugins and the config lines that resolve it.
    let e = err(&call(&host, "count_words", &["a b"]).await, ErrorKind::UnknownTool);
    for want in [
        "tool name `count_words` is claimed by plugin `hostile` (hostile.wasm) and plugin `text` (text.wasm)",
        "none of them is exposed under it",
        "[plugin.text] prefix = \"text_\"",
        "[plugin.text.tool.count_words] name = \"text_count_words\"",
        "[catalog] namespace = \"plugin\"",
        "[plugin.text] exclude = [\"count_words\"]",
    ] {
        assert!(e.contains(want), "missing {want:?} in: {e}");
    }
    let o = &run_text(&host, "[TOOL] count_words(\"a b\") [/TOOL]").await[0];
    assert!(o.error.as_deref().unwrap().contains("plugin `hostile`"), "{o:?}");
    let o = &run_openai(&host, &[("count_words", serde_json::json!({"text": "a b"}))]).await[0];
    assert!(o.error.as_deref().unwrap().contains("plugin `hostile`"), "{o:?}");

    // Every listing leaves it out and says why.
    let prompt = text::prompt(&reg, &toolhost_core::view::listing(&reg, &host.config));
    assert!(!prompt.contains("- count_words("), "{prompt}");
    assert!(prompt.contains("several plugins claim them): count_words."), "{prompt}");
    assert!(!openai_names(&host).contains(&"count_words".to_string()));
    let server = McpServer::new(host.executor.clone(), None).unwrap();
    let listed = server.tools_result(&Default::default(), true);
    assert!(listed.tools.iter().all(|t| t.name != "count_words"));
    let meta = serde_json::to_value(&listed).unwrap()["_meta"]["toolhost/conflicts"].clone();
    assert!(meta[0].as_str().unwrap().contains("plugin `text` (text.wasm)"), "{meta}");
    let list = toolhost::commands::list::render_list(&reg, &host.config);
    assert!(list.contains("CONFLICTS\n  ! tool name `count_words` is claimed by plugin `hostile`"), "{list}");
    let json = toolhost::commands::list::list_json(&reg);
    assert_eq!(json["conflicts"][0]["name"], "count_words");
    assert_eq!(json["conflicts"][0]["kept"], serde_json::Value::Null);
}

#[tokio::test]
async fn a_prefix_makes_both_callable_on_text_and_openai() {
    let env = text_and_hostile("[plugin.hostile]\nprefix = \"h_\"\n");
    let host = env.host();
    assert!(host.registry.load().conflicts().is_empty());
    let outs =
        run_text(&host, "[TOOL] h_count_words(\"a b\") [/TOOL] [TOOL] count_words(\"a b c\") [/TOOL]").await;
    assert_eq!(ok(&outs[0]), "42");
    assert!(ok(&outs[1]).contains("\"words\":3"), "{outs:?}");
    let outs = run_openai(
        &host,
        &[
            ("h_count_words", serde_json::json!({"text": "a b"})),
            ("count_words", serde_json::json!({"text": "a"})),
        ],
    )
    .await;
    assert_eq!(ok(&outs[0]), "42");
    assert!(ok(&outs[1]).contains("\"words\":1"), "{outs:?}");
    let names = openai_names(&host);
    assert!(names.contains(&"h_count_words".into()) && names.contains(&"count_words".into()), "{names:?}");
    let prompt = text::prompt(
        &host.registry.load(),
        &toolhost_core::view::listing(&host.registry.load(), &host.config),
    );
    assert!(prompt.contains("- h_count_words(text…)") && prompt.contains("- count_words(text…)"), "{prompt}");
    // Every hostile tool is prefixed; the plugin is still called by its own names.
    assert!(host.registry.load().get("snoop").is_none());
    assert!(ok(&call(&host, "h_snoop", &[]).await).contains("env"));
}

#[tokio::test]
async fn selection_and_exclusion_with_globs_hide_tools_and_list_says_why() {
    let env = with_sections(
        &[plugin_artifacts::FILES],
        "[plugin.files]\ntools = [\"re*\", \"l?\", \"write\", \"nothing*\"]\nexclude = [\"rename\"]\n",
    );
    let host = env.host_yes();
    let reg = host.registry.load_full();
    let exposed: Vec<&str> = reg.tools().map(|t| t.name()).collect();
    assert_eq!(exposed, ["ls", "read", "write"]);
    let hidden: Vec<(&str, &str)> = reg.hidden().iter().map(|h| (h.tool.as_str(), h.why.as_str())).collect();
    let why = |tool: &str| hidden.iter().find(|h| h.0 == tool).map(|h| h.1).unwrap_or_default();
    assert_eq!(why("rename"), "matches \"rename\" in [plugin.files] exclude");
    assert!(why("delete").starts_with("not in [plugin.files] tools = [\"re*\", \"l?\""), "{hidden:?}");
    assert_eq!(hidden.len(), 5, "{hidden:?}");
    assert!(
        reg.warnings().iter().any(|w| w == "[plugin.files] tools: \"nothing*\" matches none of its tools")
    );
    // Hidden tools are on no front end and cannot be called.
    err(&call(&host, "delete", &["x"]).await, ErrorKind::UnknownTool);
    assert_eq!(openai_names(&host), ["ls", "read", "write"]);
    assert_eq!(mcp_names(&host), ["ls", "read", "write"]);
    assert!(!text::prompt(&reg, &toolhost_core::view::listing(&reg, &host.config)).contains("delete"));
    let list = toolhost::commands::list::render_list(&reg, &host.config);
    assert!(
        list.contains("HIDDEN\n") && list.contains("  rename (files): hidden, matches \"rename\""),
        "{list}"
    );
    assert_eq!(toolhost::commands::list::list_json(&reg)["hidden"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn a_renamed_tool_keeps_danger_audit_and_metrics_under_its_exposed_name() {
    let mut env = with_sections(
        &[plugin_artifacts::FILES],
        "[plugin.files.tool.delete]\nname = \"remove\"\n[tool.remove]\ntimeout_ms = 4321\n",
    );
    env.config.grant_workspace("files", toolhost_spec::manifest::FsMode::ReadWrite);
    std::fs::write(env.ws("gone.txt"), "x").unwrap();
    let confirm = Operator::answering(Decision::Allow);
    let host = env.host_with(confirm.clone());
    assert_listed_schemas_agree(&host);
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let service = Arc::new(toolhost_frontends::service::Service::new(
        &host.config,
        &toolhost_frontends::Settings::default(),
        host.registry.clone(),
        "library",
        Some(toolhost_frontends::service::audit::AuditLog::open(&audit, 1 << 20, 1).unwrap()),
    ));
    assert!(host.executor.attach_observer(service.clone()));

    let reg = host.registry.load_full();
    let entry = reg.get("remove").unwrap();
    assert_eq!((entry.name(), entry.own_name()), ("remove", "delete"));
    assert!(reg.get("delete").is_none());
    // `[tool.NAME]` speaks of the exposed name.
    let view = toolhost_core::view::ToolView::new(entry, &host.config);
    assert_eq!(view.limits.timeout_ms, 4321);
    assert!(view.dangerous);

    // The plugin receives its own name (it knows no `remove`): the file is deleted.
    ok(&host.call(&ToolCall::new("remove", ["gone.txt"])).await);
    assert!(!env.ws("gone.txt").exists());
    let asked = confirm.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!((asked[0].tool.as_str(), asked[0].plugin.as_str()), ("remove", "files"));
    err(&host.call(&ToolCall::new("delete", ["x"])).await, ErrorKind::UnknownTool);

    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&audit).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["tool"], "remove", "{:?}", lines[0]);
    assert_eq!(lines[0]["plugin"], "files");
    let metrics = service.metrics_text();
    assert!(metrics.contains("toolhost_calls_total{tool=\"remove\",outcome=\"ok\"} 1"), "{metrics}");
    assert!(!metrics.contains("tool=\"delete\",outcome=\"ok\""), "{metrics}");
}

#[test]
fn a_hot_reload_never_takes_over_a_name_or_a_plugin_already_served() {
    let env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::FILES]);
    let (host, reloader) = reloading_host(&env);
    reloader.rescan().unwrap();
    assert_eq!(&*host.registry.load().get("count_words").unwrap().plugin.name, "text");

    // `hostile.wasm` sorts before `text.wasm` and claims `count_words`: text keeps it.
    std::fs::copy(plugin_artifacts::HOSTILE, env.plugins.path().join("hostile.wasm")).unwrap();
    let change = reloader.rescan().unwrap();
    let reg = host.registry.load_full();
    assert_eq!(&*reg.get("count_words").unwrap().plugin.name, "text");
    assert!(reg.get("snoop").is_some(), "the newcomer's other tools are served");
    let [conflict] = reg.conflicts() else { panic!("{:?}", reg.conflicts()) };
    assert_eq!(conflict.kept.as_deref(), Some("text"));
    let lines = change.lines().join("\n");
    assert!(
        lines.contains("! tool name `count_words` is claimed by plugin `hostile` (hostile.wasm) and plugin `text` (text.wasm); `text` keeps serving it"),
        "{lines}"
    );
    assert!(lines.contains("[plugin.hostile] prefix = \"hostile_\""), "the fix names the newcomer: {lines}");

    // A file that declares a loaded plugin's name and sorts first is refused, not promoted.
    std::fs::copy(plugin_artifacts::FILES, env.plugins.path().join("a-files.wasm")).unwrap();
    let change = reloader.rescan().unwrap();
    let reg = host.registry.load_full();
    let files = reg.plugins().iter().find(|p| &*p.name == "files").unwrap();
    assert_eq!(files.file.file_name().unwrap(), "files.wasm");
    let failure = reg.failures().iter().find(|f| f.file.ends_with("a-files.wasm")).unwrap();
    assert!(
        failure.reason.contains(
            "plugin name `files` is declared by a-files.wasm and files.wasm; it stays with files.wasm"
        ),
        "{failure:?}"
    );
    assert!(
        change.lines().iter().any(|l| l.starts_with("! a-files.wasm: plugin name `files`")),
        "{change:?}"
    );

    // From scratch (a restart) the same folder serves neither: nothing is decided by file name.
    let fresh = env.registry();
    assert!(fresh.get("count_words").is_none() && fresh.conflicts()[0].kept.is_none());
    assert!(fresh.plugins().iter().all(|p| &*p.name != "files"), "neither files file is loaded");
}

fn reloading_host(env: &Env) -> (toolhost_core::Toolhost, Arc<toolhost_core::registry::reload::Reloader>) {
    let host = toolhost_core::Toolhost::from_parts(
        runtime(),
        Arc::new(env.config.clone()),
        toolhost_core::Registry::default(),
        Arc::new(toolhost_core::executor::NoConfirm),
    );
    let reloader = toolhost_core::registry::reload::Reloader::new(
        host.runtime.clone(),
        host.config.clone(),
        host.registry.clone(),
    );
    (host, reloader)
}

#[tokio::test]
async fn a_namespace_gives_plugin_dot_tool_and_openai_double_underscores() {
    let env = text_and_hostile("[catalog]\nnamespace = \"plugin\"\n");
    let host = env.host();
    let reg = host.registry.load_full();
    assert!(reg.conflicts().is_empty());
    assert!(reg.get("text.count_words").is_some() && reg.get("hostile.count_words").is_some());
    let outs =
        run_text(&host, "[TOOL] hostile.count_words(\"x\") [/TOOL] [TOOL] text.count_words(\"x y\") [/TOOL]")
            .await;
    assert_eq!(ok(&outs[0]), "42");
    assert!(ok(&outs[1]).contains("\"words\":2"));
    assert!(openai_names(&host).contains(&"text__count_words".to_string()));
    assert!(mcp_names(&host).contains(&"text.count_words".to_string()));
    // OpenAI's name reaches the executor as the exposed name.
    let wire = openai::WireToolCall {
        id: "c".into(),
        kind: "function".into(),
        function: openai::WireFunction {
            name: "text__count_words".into(),
            arguments: "{\"text\":\"a\"}".into(),
        },
    };
    let ctx = toolhost_core::executor::CallContext::default();
    let prepared = host.executor.prepare(openai::request(&wire).unwrap(), &ctx).await.unwrap();
    assert_eq!(prepared.name(), "text.count_words");
    let outs = run_openai(&host, &[("text__count_words", serde_json::json!({"text": "a b c d"}))]).await;
    assert!(ok(&outs[0]).contains("\"words\":4"));
}

#[tokio::test]
async fn names_openai_would_see_as_one_conflict() {
    // `text.echo` is `text__echo` on OpenAI; a files tool renamed `text__echo` would be the same.
    let env = with_sections(
        &[plugin_artifacts::TEXT, plugin_artifacts::FILES],
        "[catalog]\nnamespace = \"plugin\"\n[plugin.files.tool.read]\nname = \"text__echo\"\n",
    );
    let reg = env.registry();
    let c = reg.conflicts().iter().find(|c| c.name == "text__echo").expect("a conflict");
    let m = c.message();
    assert!(m.contains("is claimed on OpenAI by") && m.contains("exposed as `text.echo`"), "{m}");
    assert!(reg.get("text.echo").is_none() && reg.get("text__echo").is_none());
}

#[tokio::test]
async fn search_mode_offers_find_tools_and_the_pinned_tools_on_every_front_end() {
    let env = with_sections(
        &[plugin_artifacts::FILES, plugin_artifacts::TEXT],
        "[catalog]\nmode = \"search\"\npin = [\"echo\"]\nresults = 3\n",
    );
    let host = env.host();
    let reg = host.registry.load_full();
    assert!(reg.search().is_some());
    assert_eq!(openai_names(&host), ["echo", "find_tools"]);
    assert_eq!(mcp_names(&host), ["echo", "find_tools"]);
    assert_listed_schemas_agree(&host);
    let prompt = text::prompt(&reg, &toolhost_core::view::listing(&reg, &host.config));
    assert!(prompt.contains("- find_tools(query…)") && prompt.contains("- echo(text…)"), "{prompt}");
    assert!(
        !prompt.contains("- read(") && prompt.contains("call find_tools(\"what you want to do\")"),
        "{prompt}"
    );

    // find_tools, through the executor on every front end.
    let found: serde_json::Value =
        serde_json::from_str(&ok(&call(&host, "find_tools", &["count the words in a text"]).await)).unwrap();
    let tools = found["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 3);
    assert_eq!(tools[0]["name"], "count_words", "{found}");
    assert_eq!(tools[0]["usage"], "count_words(text…)");
    assert_eq!(tools[0]["parameters"]["required"], serde_json::json!(["text"]));
    let outs = run_text(&host, "[TOOL] find_tools(delete a file, for good) [/TOOL]").await;
    assert!(ok(&outs[0]).contains("\"name\":\"delete\""), "{outs:?}");
    let outs = run_openai(&host, &[("find_tools", serde_json::json!({"query": "read a file"}))]).await;
    assert!(ok(&outs[0]).contains("\"name\":\"read\""), "{outs:?}");
    // A tool that is not listed is called by name as always.
    err(&call(&host, "read", &["missing.txt"]).await, ErrorKind::ToolError);
    let e = err(&call(&host, "frobnicate", &[]).await, ErrorKind::UnknownTool);
    assert!(e.contains("find_tools(\"what you want to do\")"), "{e}");

    // `auto` searches above `search_above` tools only; `all` never.
    let auto =
        with_sections(&[plugin_artifacts::FILES, plugin_artifacts::TEXT], "[catalog]\nsearch_above = 5\n");
    assert!(auto.registry().search().is_some());
    let all = with_sections(
        &[plugin_artifacts::FILES, plugin_artifacts::TEXT],
        "[catalog]\nmode = \"all\"\nsearch_above = 5\n",
    );
    assert!(all.registry().search().is_none());
    assert!(
        with_sections(&[plugin_artifacts::FILES, plugin_artifacts::TEXT], "").registry().search().is_none()
    );
}

#[test]
fn who_serves_and_clashes_answer_for_a_plugin_about_to_be_added() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let reg = env.registry();
    assert!(matches!(reg.who_serves("count_words"), Served::By(e) if &*e.plugin.name == "text"));
    assert!(matches!(reg.who_serves("nope"), Served::Nobody));
    let hostile =
        toolhost_core::registry::inspect_file(Path::new(plugin_artifacts::HOSTILE), 1 << 26).unwrap();
    let clashes = reg.clashes(&hostile, &env.config);
    assert_eq!(clashes.len(), 1, "{clashes:?}");
    assert!(
        clashes[0].contains("`count_words`, which plugin `text` (text.wasm) already serves"),
        "{clashes:?}"
    );
    let text = toolhost_core::registry::inspect_file(Path::new(plugin_artifacts::TEXT), 1 << 26).unwrap();
    assert!(reg.clashes(&text, &env.config).is_empty(), "a new version of a plugin is not a clash");
    let both = text_and_hostile("").registry();
    assert!(matches!(both.who_serves("count_words"), Served::Ambiguous(c) if c.claims.len() == 2));
}

#[test]
fn the_catalog_config_is_checked_and_named() {
    let parse = |t: &str| Config::from_str_at(t, Path::new("/b"), Some(PathBuf::from("/b/toolhost.toml")));
    let e = parse("[plugin.files]\nprefix = \"a.b\"\n").unwrap_err().to_string();
    assert!(e.contains("/b/toolhost.toml") && e.contains("plugin.files.prefix"), "{e}");
    let e = parse("[plugin.\"*\"]\nexclude = [\"delete\"]\n").unwrap_err().to_string();
    assert!(e.contains("plugin.*") && e.contains("namespace"), "{e}");
    let e = parse("[plugin.files.tool.read]\nname = \"x\"\ntitle = \"y\"\n").unwrap_err().to_string();
    assert!(e.contains("unknown field `title`"), "{e}");
    let e = parse("[catalog]\nmode = \"sometimes\"\n").unwrap_err().to_string();
    assert!(e.contains("catalog.mode") && e.contains("sometimes"), "{e}");
    let e = parse("[catalog]\nnamespaces = \"plugin\"\n").unwrap_err().to_string();
    assert!(e.contains("unknown field `namespaces`"), "{e}");
}

#[test]
fn server_json_describes_the_deployment_for_mcp_registries() {
    use toolhost::commands::export::{PUBLISHER_META, SERVER_SCHEMA, ServerInfo, server_json};
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    let reg = env.registry();
    let info = ServerInfo {
        name: "io.github.example/tools".into(),
        url: Some("https://tools.example.com/mcp".into()),
        version: "1.2.3".into(),
        description: None,
    };
    let doc = server_json(&reg, &env.config, &info).unwrap();
    assert_eq!(doc["$schema"], SERVER_SCHEMA);
    assert_eq!(doc["name"], "io.github.example/tools");
    assert_eq!(doc["version"], "1.2.3");
    let description = doc["description"].as_str().unwrap();
    assert!(description.len() <= 100 && description.ends_with("tools from 2 plugins"), "{description}");
    assert_eq!(
        doc["remotes"],
        serde_json::json!([{"type": "streamable-http", "url": "https://tools.example.com/mcp"}])
    );
    let meta = &doc["_meta"][PUBLISHER_META]["toolhost"];
    assert_eq!(meta["plugins"].as_array().unwrap().len(), 2);
    let echo = meta["tools"].as_array().unwrap().iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["title"], "Echo text");
    assert_eq!(echo["annotations"]["idempotentHint"], true);
    // What a registry would refuse is refused here, naming the option.
    let bad = ServerInfo { name: "toolhost".into(), ..info.clone() };
    assert!(server_json(&reg, &env.config, &bad).unwrap_err().to_string().contains("--name \"toolhost\""));
    let long = ServerInfo { description: Some("d".repeat(101)), ..info };
    assert!(server_json(&reg, &env.config, &long).unwrap_err().to_string().contains("--description is 101"));
}

// ---- the official MCP Python SDK 2.x ----

/// Run tests/mcp/catalog.py's `scenario` against `serve --mcp` over stdio, with `config` as the
/// operator's `toolhost.toml` and `flags` before the subcommand.
fn python_catalog_check(scenario: &str, env: &Env, config: &str, flags: &[&str]) {
    std::fs::write(env.at("toolhost.toml"), config).unwrap();
    let out = mcp_script(2, "catalog.py", env)
        .args([scenario, "stdio"])
        .args(env.command_line())
        .args(flags)
        .args(["serve", "--mcp"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "catalog checks ({scenario}) failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("catalog checks passed ({scenario})")), "{stdout}");
}

#[test]
fn mcp_tools_list_carries_titles_hints_icons_and_meta_for_the_official_sdk() {
    let env = Env::with(&[
        plugin_artifacts::FILES,
        plugin_artifacts::TEXT,
        plugin_artifacts::WEB,
        plugin_artifacts::HOSTILE,
    ]);
    python_catalog_check("metadata", &env, "", &["--allow-net", "web=example.com"]);
}

#[test]
fn mcp_prefixed_tools_are_both_callable_with_the_official_sdk() {
    let env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::HOSTILE]);
    python_catalog_check("prefix", &env, "[plugin.hostile]\nprefix = \"h_\"\n", &[]);
}

#[test]
fn mcp_search_mode_reveals_what_find_tools_found_with_the_official_sdk() {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    python_catalog_check(
        "search",
        &env,
        "[catalog]\nmode = \"search\"\npin = [\"echo\"]\n",
        &["--allow-read", "files"],
    );
}

//! Tools with a face (MCP Apps, #62), the server's half: a plugin's `toolhost-apps` section read
//! at load and checked against its tools; over MCP each linked tool carries
//! `_meta.ui.resourceUri`, an app-only tool `visibility: ["app"]` (and no model-facing list
//! offers it), and the `ui://` page is listed and read with the extension's MIME type and the
//! origins the operator allowed — never more than it declared. `toolhost build` embeds a
//! project's `apps/` folder (the JavaScript example `datakit` ships a chart).

use crate::support::mcp_http::{open_session_as, post, session_headers};
use crate::support::python::{mcp_script, run_passing};
use crate::support::{Env, Server, call, ok};
use std::path::Path;
use toolhost_frontends::{mcp::McpServer, openai, text};
use toolhost_spec::apps;

/// `text.wasm` with an apps section made from `apps/` folders written by `write`.
fn text_with_apps(dir: &Path, write: impl FnOnce(&Path)) -> Vec<u8> {
    let folder = dir.join("apps");
    write(&folder);
    let section = apps::collect_dir(&folder).expect("the test's apps follow the rules");
    apps::embed(&std::fs::read(plugin_artifacts::TEXT).unwrap(), &section).unwrap()
}

fn app(folder: &Path, name: &str, toml: &str) {
    let dir = folder.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), format!("<!doctype html><title>{name}</title><p>{name}</p>"))
        .unwrap();
    std::fs::write(dir.join("app.toml"), toml).unwrap();
}

/// A folder whose `text` plugin has the app `echo-view` (showing `echo`, calling the app-only
/// `count_words`, declaring two origins), configured by `toml`.
fn env_with_app(toml: &str) -> Env {
    let scratch = tempfile::tempdir().unwrap();
    let bytes = text_with_apps(scratch.path(), |folder| {
        app(
            folder,
            "echo-view",
            "description = \"Shows what echo said\"\ntools = [\"echo\"]\napp_only = [\"count_words\"]\n\
             prefers_border = false\n[csp]\nconnect_domains = [\"https://api.example.com\"]\n\
             resource_domains = [\"https://cdn.example.com\"]\n",
        )
    });
    let env = Env::with_toml(&[], toml);
    std::fs::write(env.plugins.path().join("text.wasm"), bytes).unwrap();
    env
}

#[tokio::test]
async fn an_app_is_served_by_the_spec_with_only_the_origins_the_operator_allows() {
    let env = env_with_app("[plugin.text]\napp_domains = [\"https://api.example.com\"]\n");
    let host = env.host();
    let server = McpServer::new(host.executor.clone(), None).unwrap();
    let tools = server.tools(&Default::default());
    let meta = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is listed over MCP"));
        serde_json::to_value(t.meta.as_ref().unwrap()).unwrap()
    };
    assert_eq!(meta("echo")["ui"], serde_json::json!({"resourceUri": "ui://text/echo-view"}));
    assert_eq!(meta("count_words")["ui"], serde_json::json!({"visibility": ["app"]}));
    assert!(meta("search").get("ui").is_none());

    // No model-facing list offers the app-only tool; it is still callable.
    let registry = host.registry.load();
    let views = toolhost_core::view::listing(&registry, &host.config);
    assert!(!text::prompt(&registry, &views).contains("count_words"));
    let functions = openai::tools(&views).unwrap();
    assert!(functions.as_array().unwrap().iter().all(|f| f["function"]["name"] != "count_words"));
    assert!(ok(&call(&host, "count_words", &["a b"]).await).contains("\"words\":2"));

    // The page: listed and read with the extension's MIME type and the allowed origins only.
    let listed = server.resources_result(None).unwrap();
    let page = listed.resources.iter().find(|r| r.uri == "ui://text/echo-view").expect("the page is listed");
    assert_eq!(page.mime_type.as_deref(), Some(apps::MIME_TYPE));
    let read = server.read_result("ui://text/echo-view", &Default::default()).await.unwrap();
    let contents = serde_json::to_value(&read.contents[0]).unwrap();
    assert_eq!(contents["mimeType"], apps::MIME_TYPE);
    assert!(contents["text"].as_str().unwrap().starts_with("<!doctype html>"), "{contents}");
    assert_eq!(
        contents["_meta"]["ui"],
        serde_json::json!({"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": false}),
        "the undeclared-by-the-operator cdn is left out: {contents}"
    );
    let unknown = server.read_result("ui://text/nope", &Default::default()).await.unwrap_err();
    assert!(unknown.message.contains("no loaded plugin has that app"), "{unknown:?}");
}

#[test]
fn an_app_naming_a_tool_its_plugin_lacks_refuses_the_plugin_and_says_which() {
    let scratch = tempfile::tempdir().unwrap();
    let bytes = text_with_apps(scratch.path(), |folder| {
        app(folder, "ghost", "description = \"Shows a tool that is not there\"\ntools = [\"no_such_tool\"]\n")
    });
    let env = Env::with_toml(&[], "");
    std::fs::write(env.plugins.path().join("text.wasm"), bytes).unwrap();
    let registry = env.registry();
    let failure = registry.failures().iter().find(|f| f.file.ends_with("text.wasm")).expect("refused");
    assert!(failure.reason.contains("app `ghost` names the tool `no_such_tool`"), "{}", failure.reason);
}

#[test]
fn toolhost_build_embeds_a_projects_apps_in_python_and_javascript() {
    // The same folder, embedded the same way, whatever the language: Python's `notes` too.
    let notes = std::fs::read(crate::polyglot::built("python/notes")).unwrap();
    let section = apps::read(&notes).unwrap().expect("notes carries its apps");
    assert_eq!(section.apps[0].name, "checklist");
    assert_eq!(section.apps[0].tools, ["show"]);
    let built = crate::polyglot::built("js/datakit");
    let bytes = std::fs::read(&built).unwrap();
    let section = apps::read(&bytes).unwrap().expect("datakit carries its apps");
    let chart = section.apps.iter().find(|a| a.name == "chart").expect("the chart");
    assert_eq!(chart.tools, ["word_freq"]);
    assert!(chart.html.contains("ui/notifications/tool-result"), "the page speaks the bridge");
    // `toolhost list` shows it.
    let env = Env::with(&[built.to_str().unwrap()]);
    let out = env.command().args(["list", "--json"]).output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listing}");
    assert!(listing.contains("ui://datakit/chart"), "{listing}");
}

#[test]
fn list_and_inspect_show_each_declared_origin_as_allowed_or_withheld() {
    let env = env_with_app("");
    let toml = "[plugin.text]\napp_domains = [\"https://api.example.com\"]\n";
    let out = env.configured(toml).args(["list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("app:       ui://text/echo-view — shows echo; calls count_words (app-only)"),
        "{text}"
    );
    assert!(text.contains("csp.connect_domains: https://api.example.com (allowed)"), "{text}");
    assert!(text.contains("withheld:  https://cdn.example.com"), "{text}");
    let out = env.configured(toml).arg("inspect").arg(env.plugins.path().join("text.wasm")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("withheld:  https://cdn.example.com"), "{text}");
    let bad = "[plugin.text]\napp_domains = [\"https://*\"]\n";
    let out = env.configured(bad).args(["list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("plugin.text.app_domains[0]"), "{err}");
}

#[test]
fn over_mcp_a_tool_for_apps_only_is_listed_only_to_clients_that_show_apps() {
    let env = env_with_app("");
    let mut cmd = env.configured("");
    cmd.args(["serve", "--mcp", "--http", "127.0.0.1:0"]);
    let mut server = Server::start(&mut cmd);
    let auth = format!("Authorization: Bearer {}\r\n", server.key.clone().expect("the local key"));
    let names = |capabilities: serde_json::Value| {
        let session = open_session_as(&server.url, &auth, "2025-11-25", capabilities, "apps-test");
        let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let headers = format!("{auth}{}", session_headers(&session, "2025-11-25"));
        let (status, head, messages) = post(&server.url, &headers, &list);
        assert_eq!(status, 200, "{head}");
        let tools = messages[0]["result"]["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let plain = names(serde_json::json!({}));
    assert!(plain.contains(&"echo".to_string()) && !plain.contains(&"count_words".to_string()), "{plain:?}");
    let apps_client =
        serde_json::json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [apps::MIME_TYPE]}}});
    let shown = names(apps_client);
    assert!(shown.contains(&"count_words".to_string()), "{shown:?}");
    server.terminate(10);
}

#[tokio::test]
async fn a_page_calls_its_plugins_tools_by_their_own_names_whatever_the_catalog_exposes() {
    let env = env_with_app("[catalog]\nnamespace = \"plugin\"\n");
    let host = env.host();
    // The catalog exposes `text.echo` and `text.count_words`; the page was built with `echo`
    // and `count_words`, and both run (as the exposed tools: the audit names those).
    let server = McpServer::new(host.executor.clone(), None).unwrap();
    let tools = server.tools(&Default::default());
    let echo = tools.iter().find(|t| t.name == "text.echo").expect("namespaced");
    assert_eq!(
        serde_json::to_value(echo.meta.as_ref().unwrap()).unwrap()["ui"]["resourceUri"],
        "ui://text/echo-view"
    );
    assert_eq!(ok(&call(&host, "echo", &["hi"]).await), "hi");
    assert!(ok(&call(&host, "count_words", &["a b"]).await).contains("\"words\":2"));
    // A tool no app names keeps its exposed name only.
    let search = call(&host, "search", &["x"]).await;
    assert_eq!(search.kind, Some(toolhost_core::ErrorKind::UnknownTool), "{search:?}");
}

#[test]
fn an_official_mcp_client_finds_and_reads_an_app() {
    let datakit = crate::polyglot::built("js/datakit");
    let env = Env::with(&[datakit.to_str().unwrap()]);
    let mut cmd = mcp_script(1, "apps.py", &env);
    cmd.arg("stdio").args(env.command_line()).args(["serve", "--mcp"]);
    run_passing(&mut cmd, "apps checks passed");
}

//! Plugins' prompts and completion (issue #58): prompts declared in the manifest, got by
//! running the plugin's `prompts.get` in its sandbox once their arguments passed the manifest's
//! check; arguments and template variables completed by `completion.complete` — through the one
//! way every front end goes (`Executor::get_prompt`, `Executor::complete`), over MCP
//! (`prompts/list`, `prompts/get`, `completion/complete`), `toolhost get-prompt`, `toolhost
//! complete` and `toolhost list`; bad input named, and what a plugin answers bounded.

use crate::mcp::RawStdio;
use crate::skills::{ask, request};
use crate::support::{Env, OK_COMPONENT, component};
use serde_json::{Value, json};
use toolhost_core::executor::{CallContext, CompleteError, PromptContent, PromptError, Role};
use toolhost_core::registry::prompts::Target;
use toolhost_spec::manifest::FsMode;

/// The text plugin (its prompt completes workspace paths), files (its template completes
/// them), and liar; text and files granted the workspace.
fn env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT, plugin_artifacts::LIAR]);
    env.config.grant_workspace("files", FsMode::ReadWrite);
    env.config.grant_workspace("text", FsMode::ReadOnly);
    std::fs::create_dir_all(env.ws("notes/daily")).unwrap();
    std::fs::write(env.ws("notes/a.md"), "# A\n").unwrap();
    std::fs::write(env.ws("notes/daily/b.md"), "# B\n").unwrap();
    std::fs::write(env.ws("readme.txt"), "hi\n").unwrap();
    env
}

fn args(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
}

async fn get(
    host: &toolhost_core::Toolhost,
    name: &str,
    given: Vec<(String, String)>,
) -> Result<toolhost_core::executor::GotPrompt, PromptError> {
    host.executor.get_prompt(name, &given, "test", &CallContext::default()).await
}

#[tokio::test]
async fn a_prompt_is_got_with_its_arguments_checked_first() {
    let env = env();
    let host = env.host();
    let got = get(&host, "summarise-file", args(&[("path", "notes/a.md")])).await.unwrap();
    assert_eq!(&*got.plugin, "text");
    assert_eq!(got.messages.len(), 2, "{:?}", got.messages);
    let PromptContent::Text(text) = &got.messages[0].content else { panic!("text first") };
    assert!(text.contains("Summarise the file `notes/a.md` of the workspace (short)"), "{text}");
    assert_eq!(got.messages[0].role, Role::User);
    assert!(
        matches!(&got.messages[1].content, PromptContent::Link { uri, .. } if uri == "file:///notes/a.md"),
        "{:?}",
        got.messages[1]
    );
    let got = get(&host, "summarise-file", args(&[("path", "a"), ("style", "bullets")])).await.unwrap();
    assert!(matches!(&got.messages[0].content, PromptContent::Text(t) if t.contains("(bullets)")));

    for (name, given, why) in [
        (
            "summarise-file",
            args(&[("path", "a"), ("colour", "red")]),
            "takes no argument `colour` (it takes: path, style)",
        ),
        ("summarise-file", args(&[("style", "short")]), "needs its argument `path`"),
        ("nope", args(&[]), "no prompt `nope`: no loaded plugin declares it"),
    ] {
        let e = get(&host, name, given).await.unwrap_err();
        assert!(matches!(e, PromptError::Arguments(_) | PromptError::NotFound(_)), "{e:?}");
        assert!(e.to_string().contains(why), "{e}");
    }
}

#[tokio::test]
async fn arguments_and_template_variables_complete_and_the_rest_completes_nothing() {
    let env = env();
    let host = env.host();
    let done = host.executor.complete(Target::Prompt("summarise-file"), "path", "notes/", &[]).await.unwrap();
    assert_eq!(done.values, ["notes/a.md", "notes/daily/b.md"]);
    let done =
        host.executor.complete(Target::Template("file:///{+path}"), "path", "notes/", &[]).await.unwrap();
    assert_eq!(done.values, ["notes/a.md", "notes/daily/"]);
    assert!(!done.has_more());
    for (target, argument, why) in [
        (
            Target::Prompt("summarise-file"),
            "style",
            "plugin `text` completes nothing for `style` of prompt `summarise-file`",
        ),
        (Target::Prompt("summarise-file"), "colour", "prompt `summarise-file` has no argument `colour`"),
        (Target::Template("file:///{path}"), "path", "no resource template file:///{path}"),
        (Target::Prompt("nope"), "path", "no prompt `nope`"),
    ] {
        let e = host.executor.complete(target, argument, "", &[]).await.unwrap_err();
        assert!(matches!(e, CompleteError::Nothing(_)), "{e:?}");
        assert!(e.to_string().contains(why), "{e}");
    }
}

#[tokio::test]
async fn what_a_plugin_answers_is_bounded() {
    let env = Env::with_toml(&[plugin_artifacts::LIAR], "[plugin.liar]\nresource_kb = 4\n");
    let host = env.host();
    let got = host
        .executor
        .get_prompt("flood", &args(&[("n", "1")]), "test", &CallContext::default())
        .await
        .unwrap();
    assert!(got.truncated, "cut at resource_kb");
    assert_eq!(got.messages.len(), 1, "the messages past the limit are dropped");
    let PromptContent::Text(t) = &got.messages[0].content else { panic!("text") };
    assert!(t.len() <= 4096 && t.ends_with("bytes]"), "{}", t.len());
    let done = host.executor.complete(Target::Prompt("flood"), "n", "v", &[]).await.unwrap();
    assert_eq!((done.values.len(), done.total), (100, 500));
    assert!(done.has_more());
    assert!(done.values.iter().all(|v| v.len() < 1024 && !v.contains('\u{7}')), "{:?}", &done.values[..3]);
}

/// A component of the world `plugin` whose manifest declares a prompt: it loads, and getting
/// the prompt is refused naming the missing export.
#[tokio::test]
async fn a_plugin_without_the_export_is_refused_by_name() {
    let manifest = r#"{"format":1,"name":"old","version":"1","tools":[{"name":"hi","description":"Says ok.","argCount":0}],"prompts":[{"name":"p"}]}"#;
    let env = Env::with(&[]);
    std::fs::write(env.plugins.path().join("old.wasm"), component(OK_COMPONENT, Some(manifest))).unwrap();
    let host = env.host();
    let e = host.executor.get_prompt("p", &[], "test", &CallContext::default()).await.unwrap_err();
    assert!(matches!(e, PromptError::Failed { .. }), "{e:?}");
    assert!(e.to_string().contains("exports no `prompts` interface"), "{e}");
}

const GRANTS: &str = "[plugin.files]\nfs = [{ path = \"workspace\", mode = \"rw\" }]\n\n[plugin.text]\nfs = [{ path = \"workspace\", mode = \"ro\" }]\n";

#[test]
fn mcp_lists_gets_and_completes_prompts() {
    let env = env();
    std::fs::write(env.at("toolhost.toml"), GRANTS).unwrap();
    let mut s = RawStdio::start(&env, &["--config", env.at("toolhost.toml").to_str().unwrap()]);
    s.send(crate::support::mcp_http::INITIALIZE.as_bytes());
    let lines = RawStdio::wait_for(&s.out, r#""id":1"#, 60);
    let init: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let caps = &init["result"]["capabilities"];
    assert!(caps["prompts"].is_object() && caps["completions"].is_object(), "{init}");
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let listed = ask(&mut s, request(2, "prompts/list", json!({})));
    let prompts = listed["result"]["prompts"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let p = prompts.iter().find(|p| p["name"] == "summarise-file").unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(p["title"], "Summarise a file");
    assert_eq!(
        p["arguments"][0],
        json!({"name": "path", "description": "the file, relative to the workspace", "required": true})
    );
    assert_eq!(p["arguments"][1]["required"], false);
    assert_eq!(p["_meta"]["toolhost/plugin"], "text");

    let got = ask(
        &mut s,
        request(3, "prompts/get", json!({"name": "summarise-file", "arguments": {"path": "readme.txt"}})),
    );
    let messages = got["result"]["messages"].as_array().unwrap_or_else(|| panic!("{got}"));
    assert_eq!(messages[0]["role"], "user");
    assert!(messages[0]["content"]["text"].as_str().unwrap().contains("`readme.txt`"), "{got}");
    assert_eq!(messages[1]["content"]["type"], "resource_link");
    assert_eq!(messages[1]["content"]["uri"], "file:///readme.txt");
    // The link reads: the files plugin serves it.
    let read = ask(&mut s, request(4, "resources/read", json!({"uri": "file:///readme.txt"})));
    assert_eq!(read["result"]["contents"][0]["text"], "hi\n");

    let bad = ask(&mut s, request(5, "prompts/get", json!({"name": "summarise-file", "arguments": {}})));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let unknown = ask(&mut s, request(6, "prompts/get", json!({"name": "nope"})));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    let complete = |s: &mut RawStdio, id, r#ref: Value, name: &str, value: &str| {
        ask(
            s,
            request(
                id,
                "completion/complete",
                json!({"ref": r#ref, "argument": {"name": name, "value": value}}),
            ),
        )
    };
    let done = complete(&mut s, 7, json!({"type": "ref/prompt", "name": "summarise-file"}), "path", "re");
    assert_eq!(
        done["result"]["completion"],
        json!({"values": ["readme.txt"], "total": 1, "hasMore": false}),
        "{done}"
    );
    let done =
        complete(&mut s, 8, json!({"type": "ref/resource", "uri": "file:///{+path}"}), "path", "notes/d");
    assert_eq!(done["result"]["completion"]["values"], json!(["notes/daily/"]), "{done}");
    let none = complete(&mut s, 9, json!({"type": "ref/prompt", "name": "summarise-file"}), "style", "");
    assert_eq!(none["result"]["completion"]["values"], json!([]), "nothing completes `style`: {none}");
}

#[test]
fn the_cli_gets_completes_and_lists_prompts() {
    let env = env();
    let out = env
        .configured(GRANTS)
        .args(["get-prompt", "summarise-file", "path=notes/a.md", "style=bullets"])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        printed.starts_with("[user]\nSummarise the file `notes/a.md` of the workspace (bullets)"),
        "{printed}"
    );
    assert!(printed.contains("[user] resource: file:///notes/a.md (notes/a.md)"), "{printed}");
    let out = env.configured(GRANTS).args(["get-prompt", "summarise-file", "colour"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("`colour` is not NAME=VALUE"), "{err}");

    let out = env
        .configured(GRANTS)
        .args(["complete", "template", "file:///{+path}", "path", "notes/"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "notes/a.md\nnotes/daily/\n");
    let out =
        env.configured(GRANTS).args(["complete", "prompt", "summarise-file", "style"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("completes nothing for `style`"), "{err}");

    let out = env.configured(GRANTS).arg("list").output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("  prompt:    summarise-file(path, style?) — Summarise a file"), "{listed}");
}

/// The catalog's rules apply to prompts and resources as to tools (issue #58): `[plugin.NAME]
/// prompts` and `resources` select (a pattern matching nothing is a warning), a prompt is
/// renamed (`[plugin.NAME.prompt.OLD] name`), prefixed or namespaced as a tool is — got and
/// completed by that name, while the plugin is asked with its own — and a bad name is an error
/// naming its key.
#[tokio::test]
async fn the_catalog_selects_and_names_prompts_and_resources() {
    use toolhost_core::registry::{prompts, resources};
    let configured = |toml: &str| {
        let mut env = env();
        let parsed = toolhost_core::settings::Config::from_str_at(toml, env.workspace.path(), None).unwrap();
        for (name, section) in parsed.plugins {
            env.config.plugins.entry(name).or_default().exposure = section.exposure;
        }
        env.config.catalog = parsed.catalog;
        env
    };
    // The text plugin's prompts as served (liar has one of its own).
    let served = |host: &toolhost_core::Toolhost| -> Vec<String> {
        let registry = host.executor.registry();
        prompts::all(registry.plugins()).filter(|p| p.plugin == "text").map(|p| p.name.to_string()).collect()
    };

    for (toml, name) in [
        ("[plugin.text.prompt.summarise-file]\nname = \"sum\"\n", "sum"),
        ("[plugin.text]\nprefix = \"t_\"\n", "t_summarise-file"),
        ("[catalog]\nnamespace = \"plugin\"\n", "text.summarise-file"),
    ] {
        let env = configured(toml);
        let host = env.host();
        assert_eq!(served(&host), [name], "{toml}");
        let got = get(&host, name, args(&[("path", "readme.txt")])).await.unwrap();
        assert!(matches!(&got.messages[0].content, PromptContent::Text(t) if t.contains("`readme.txt`")));
        let e = get(&host, "summarise-file", args(&[("path", "readme.txt")])).await.unwrap_err();
        assert!(e.to_string().contains("no prompt `summarise-file`"), "{toml}: {e}");
        let done = host.executor.complete(Target::Prompt(name), "path", "re", &[]).await.unwrap();
        assert_eq!(done.values, ["readme.txt"], "{toml}");
    }

    let env = configured("[plugin.text]\nprompts = []\n[plugin.files]\nresources = [\"docs://*\"]\n");
    let host = env.host();
    let registry = host.executor.registry();
    assert!(served(&host).is_empty());
    assert_eq!(resources::templates(registry.plugins()).filter(|(p, _)| *p == "files").count(), 0);
    let e = resources::find(registry.plugins(), "file:///readme.txt").unwrap_err();
    assert!(matches!(e, resources::NoResource::Unknown(_)), "{e:?}");
    let warning = "[plugin.files] resources: \"docs://*\" matches none of its resources or templates";
    assert!(registry.warnings().iter().any(|w| w == warning), "{:?}", registry.warnings());
    let e = host.executor.complete(Target::Template("file:///{+path}"), "path", "", &[]).await.unwrap_err();
    assert!(matches!(e, CompleteError::Nothing(_)), "{e:?}");

    let env = configured("[plugin.files]\nresources = [\"file:///*\"]\n");
    let registry = env.host().executor.registry();
    assert!(resources::find(registry.plugins(), "file:///readme.txt").is_ok(), "the template is selected");

    let e = toolhost_core::settings::Config::from_str_at(
        "[plugin.text.prompt.summarise-file]\nname = \"-x\"\n",
        std::path::Path::new("/b"),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("plugin.text.prompt.summarise-file.name") && e.contains("[A-Za-z0-9_-]"), "{e}");
}

/// The lists the specification paginates come a page at a time (`[mcp] page_size`): walking
/// the cursors of `resources/list`, `resources/templates/list`, `prompts/list` and
/// `skills/list` gives every item once, the last page has no `nextCursor`, and a cursor the
/// server did not give is invalid params (-32602).
#[test]
fn mcp_lists_come_a_page_at_a_time() {
    let env = env();
    std::fs::write(env.at("toolhost.toml"), format!("{GRANTS}\n[mcp]\npage_size = 1\n")).unwrap();
    let mut s = RawStdio::start(&env, &["--config", env.at("toolhost.toml").to_str().unwrap()]);
    s.send(crate::support::mcp_http::INITIALIZE.as_bytes());
    RawStdio::wait_for(&s.out, r#""id":1"#, 60);
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let mut id = 1;
    for (method, items, key) in [
        ("resources/list", "resources", "uri"),
        ("resources/templates/list", "resourceTemplates", "uriTemplate"),
        ("prompts/list", "prompts", "name"),
    ] {
        let (mut seen, mut cursor) = (Vec::new(), None::<String>);
        loop {
            id += 1;
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = ask(&mut s, request(id, method, params));
            let listed = page["result"][items].as_array().unwrap_or_else(|| panic!("{method}: {page}"));
            assert_eq!(listed.len(), 1, "{method}: {page}");
            seen.push(listed[0][key].as_str().unwrap().to_string());
            match page["result"]["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert!(seen.len() >= 2 && unique.len() == seen.len(), "{method}: {seen:?}");
        id += 1;
        let bad = ask(&mut s, request(id, method, json!({"cursor": "made-up"})));
        assert_eq!(bad["error"]["code"], -32602, "{method}: {bad}");
        assert!(bad["error"]["message"].as_str().unwrap().contains("unknown cursor"), "{bad}");
    }
}

/// `tests/mcp/served.py` against this file's plugins with `page_size = 1`: resources, templates,
/// reads, prompts, completion, pagination and subscriptions as the official MCP Python SDK of
/// `generation` sees them, in `mode`, over `transport` (issue #58).
fn served_by_the_official_sdk(generation: u8, mode: &str, transport: &str) {
    use crate::support::python::{mcp_script, run_passing};
    let env = env();
    let toml = format!("{GRANTS}\n[mcp]\npage_size = 1\n");
    let mut cmd = mcp_script(generation, "served.py", &env);
    cmd.args([generation.to_string().as_str(), mode, transport]);
    let label = format!("sdk{generation} {mode} {transport}");
    if transport == "stdio" {
        std::fs::write(env.at("toolhost.toml"), toml).unwrap();
        cmd.args(env.command_line()).args(["serve", "--mcp"]);
        run_passing(&mut cmd, &format!("served checks passed ({label})"));
    } else {
        let server = crate::support::Server::start(env.configured(&toml).args([
            "serve",
            "--mcp",
            "--http",
            "127.0.0.1:0",
        ]));
        cmd.arg(server.url.as_str());
        run_passing(&mut cmd, &format!("served checks passed ({label})"));
    }
}

#[test]
fn resources_and_prompts_with_the_official_sdk1_over_stdio_and_http() {
    served_by_the_official_sdk(1, "legacy", "stdio");
    served_by_the_official_sdk(1, "legacy", "http");
}

#[test]
fn resources_and_prompts_with_the_official_sdk2_over_stdio_and_http() {
    for mode in ["auto", "legacy"] {
        served_by_the_official_sdk(2, mode, "stdio");
        served_by_the_official_sdk(2, mode, "http");
    }
}

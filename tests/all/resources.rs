//! Plugins' resources (issue #58): static resources and templates declared in the manifest,
//! read by running the plugin's `resources.read` in its sandbox — under its grants and limits —
//! through the one read every front end uses (`Executor::read`), over MCP (`resources/list`,
//! `resources/templates/list`, `resources/read`), `toolhost read` and `toolhost list`; and every
//! kind of bad read named (unknown URI, a plugin's refusal, bytes where text was declared, a
//! body past `resource_kb`, a crash, a read out of time, a plugin without the export).

use crate::mcp::RawStdio;
use crate::skills::{ask, request};
use crate::support::{Env, OK_COMPONENT, component};
use serde_json::{Value, json};
use toolhost_core::ErrorKind;
use toolhost_core::executor::{Body, CallContext, Read, ReadError};
use toolhost_spec::manifest::FsMode;

/// The files, text and liar plugins; files granted the workspace (read-write), text none.
fn env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT, plugin_artifacts::LIAR]);
    env.config.grant_workspace("files", FsMode::ReadWrite);
    std::fs::write(env.ws("hello.txt"), "hi there").unwrap();
    std::fs::create_dir_all(env.ws("notes/daily")).unwrap();
    std::fs::write(env.ws("notes/daily/a b.md"), "# A\n").unwrap();
    std::fs::write(env.ws("logo.bin"), [0xff, 0x00, 0xfe]).unwrap();
    env
}

async fn read(env: &Env, uri: &str) -> Result<Read, ReadError> {
    env.host().executor.read(uri, "test", &CallContext::default()).await
}

fn text(r: &Read) -> &str {
    match &r.body {
        Body::Text(t) => t,
        Body::Blob(b) => panic!("text expected, got {} bytes", b.len()),
    }
}

#[tokio::test]
async fn a_template_reads_workspace_files_under_the_plugins_grant() {
    let env = env();
    let r = read(&env, "file:///hello.txt").await.unwrap();
    assert_eq!((text(&r), &*r.plugin, r.truncated), ("hi there", "files", false));
    assert!(r.usage.is_some(), "a plugin's read ran in a sandbox and says what it cost");
    // `{+path}` takes slashes; the variable is percent-decoded.
    let r = read(&env, "file:///notes/daily/a%20b.md").await.unwrap();
    assert_eq!(text(&r), "# A\n");
    let r = read(&env, "file:///logo.bin").await.unwrap();
    assert_eq!(r.body, Body::Blob([0xff, 0x00, 0xfe][..].into()));
    // The plugin's own rule, and the sandbox's: nothing outside the workspace.
    let e = read(&env, "file:///../etc/passwd").await.unwrap_err();
    assert!(matches!(&e, ReadError::Refused { plugin, .. } if plugin == "files"), "{e:?}");
    assert!(e.to_string().contains("`..` is not allowed"), "{e}");
    let e = read(&env, "file:///missing.txt").await.unwrap_err();
    assert!(
        e.to_string().starts_with("plugin `files` could not read file:///missing.txt: cannot read"),
        "{e}"
    );

    // Without the workspace grant the same read finds nothing to read.
    let bare = Env::with(&[plugin_artifacts::FILES]);
    std::fs::write(bare.ws("hello.txt"), "hi there").unwrap();
    let e = read(&bare, "file:///hello.txt").await.unwrap_err();
    assert!(matches!(e, ReadError::Refused { .. }), "{e:?}");
}

#[tokio::test]
async fn a_static_resource_is_served_as_declared() {
    let env = env();
    let r = read(&env, "text://split-task/subtask.schema.json").await.unwrap();
    assert_eq!(r.mime_type.as_deref(), Some("application/schema+json"));
    let schema: Value = serde_json::from_str(text(&r)).unwrap();
    assert_eq!(schema["required"], json!(["title"]));
    for (uri, why) in [
        ("text://nope", "no loaded plugin declares it"),
        ("nothing", "no loaded plugin declares it"),
        ("skill://text/guide/SKILL.md", "no loaded plugin has that skill file"),
    ] {
        let e = read(&env, uri).await.unwrap_err();
        assert!(matches!(e, ReadError::NotFound(_)), "{uri}: {e:?}");
        assert!(e.to_string().contains(why), "{uri}: {e}");
    }
}

#[tokio::test]
async fn bad_reads_are_named_and_nothing_else_comes_back() {
    let env = Env::with_toml(&[plugin_artifacts::LIAR], "[plugin.liar]\ntimeout_ms = 500\nresource_kb = 4\n");
    let e = read(&env, "liar://text").await.unwrap_err();
    assert!(matches!(e, ReadError::NotText { .. }), "{e:?}");
    assert!(e.to_string().contains("declares as `text/plain`"), "{e}");

    let r = read(&env, "liar://big").await.unwrap();
    let t = text(&r);
    assert!(r.truncated && t.len() <= 4096, "{} bytes", t.len());
    assert!(
        t.ends_with(&format!("…[truncated {} of {} bytes]", 2 * (1 << 20) - 4032, 2 * (1 << 20))),
        "{}",
        &t[4000..]
    );

    let e = read(&env, "liar://crash").await.unwrap_err();
    assert!(matches!(e, ReadError::Failed { kind: ErrorKind::Trap, .. }), "{e:?}");
    assert!(
        e.to_string().contains("resource liar://crash crashed") && e.to_string().contains("was read"),
        "{e}"
    );

    let e = read(&env, "liar://slow").await.unwrap_err();
    assert!(matches!(e, ReadError::Failed { kind: ErrorKind::Timeout, .. }), "{e:?}");
    assert!(e.to_string().contains("resource liar://slow timed out after 500 ms"), "{e}");

    let r = read(&env, "liar://echo/hello%20world").await.unwrap();
    assert_eq!(text(&r), "hello world");
    // `{word}` is one segment: a URI with a slash there matches no template.
    assert!(matches!(read(&env, "liar://echo/a/b").await, Err(ReadError::NotFound(_))));
}

/// A component of the world every plugin had before resources (it exports `tools` only), whose
/// manifest declares a resource anyway: it loads and runs its tools as before, and a read of
/// its resource is refused, naming the missing export.
#[tokio::test]
async fn a_plugin_of_the_old_world_runs_and_its_reads_are_refused() {
    let manifest = r#"{"format":1,"name":"old","version":"1","tools":[{"name":"hi","description":"Says hi.","argCount":0}],"resources":[{"uri":"old://a","name":"a"}]}"#;
    let env = Env::with(&[]);
    std::fs::write(env.plugins.path().join("old.wasm"), component(OK_COMPONENT, Some(manifest))).unwrap();
    let host = env.host();
    assert!(host.registry.load().failures().is_empty(), "{:?}", host.registry.load().failures());
    let call = toolhost_core::ToolCall { name: "hi".into(), args: vec![] };
    let outcome = host.executor.call(&call).await;
    assert_eq!(outcome.data.as_deref(), Some("ok"), "{outcome:?}");
    let e = read(&env, "old://a").await.unwrap_err();
    assert!(e.to_string().contains("exports no `resources` interface"), "{e}");
}

/// Two plugins declaring one URI serve neither: the registry warns, naming both, and a read
/// is refused naming both; a URI only one declares is served.
#[tokio::test]
async fn two_plugins_claiming_one_uri_serve_neither() {
    let env = Env::with(&[]);
    for (name, extra) in [("one", r#",{"uri":"one://own","name":"own"}"#), ("two", "")] {
        let manifest = format!(
            r#"{{"format":1,"name":"{name}","version":"1","tools":[{{"name":"{name}_hi","description":"Says ok.","argCount":0}}],"resources":[{{"uri":"dup://a","name":"a"}}{extra}]}}"#
        );
        std::fs::write(
            env.plugins.path().join(format!("{name}.wasm")),
            component(OK_COMPONENT, Some(&manifest)),
        )
        .unwrap();
    }
    let warnings = env.registry().warnings().to_vec();
    assert!(warnings.iter().any(|w| w.contains("dup://a") && w.contains("`one` and `two`")), "{warnings:?}");
    let e = read(&env, "dup://a").await.unwrap_err();
    assert!(e.to_string().contains("claimed by plugins `one` and `two`"), "{e}");
    // `one://own` is only `one`'s: found (and refused for want of the export, as above).
    let e = read(&env, "one://own").await.unwrap_err();
    assert!(matches!(e, ReadError::Failed { .. }), "{e:?}");
}

#[test]
fn mcp_lists_and_reads_the_plugins_resources() {
    let env = env();
    std::fs::write(
        env.at("toolhost.toml"),
        "[plugin.files]\nfs = [{ path = \"workspace\", mode = \"rw\" }]\n",
    )
    .unwrap();
    let mut s = RawStdio::start(&env, &["--config", env.at("toolhost.toml").to_str().unwrap()]);
    s.initialize();
    let listed = ask(&mut s, request(2, "resources/list", json!({})));
    let resources = listed["result"]["resources"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let schema = resources.iter().find(|r| r["uri"] == "text://split-task/subtask.schema.json");
    let schema = schema.unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(schema["name"], "subtask-schema");
    assert_eq!(schema["mimeType"], "application/schema+json");
    assert_eq!(schema["_meta"]["toolhost/plugin"], "text");
    let templates = ask(&mut s, request(3, "resources/templates/list", json!({})));
    let templates = templates["result"]["resourceTemplates"].as_array().unwrap();
    let file = templates.iter().find(|t| t["uriTemplate"] == "file:///{+path}").expect("files' template");
    assert_eq!(
        (file["name"].as_str(), file["title"].as_str()),
        (Some("workspace-file"), Some("Workspace file"))
    );

    let answer = ask(&mut s, request(4, "resources/read", json!({"uri": "file:///hello.txt"})));
    let contents = &answer["result"]["contents"][0];
    assert_eq!(
        (contents["uri"].as_str(), contents["text"].as_str()),
        (Some("file:///hello.txt"), Some("hi there"))
    );
    let answer = ask(&mut s, request(5, "resources/read", json!({"uri": "file:///logo.bin"})));
    assert_eq!(answer["result"]["contents"][0]["blob"], "/wD+");
    let answer = ask(&mut s, request(6, "resources/read", json!({"uri": "nothing://here"})));
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    let answer = ask(&mut s, request(7, "resources/read", json!({"uri": "liar://text"})));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let answer = ask(&mut s, request(8, "resources/read", json!({"uri": "liar://big"})));
    assert_eq!(answer["result"]["contents"][0]["_meta"]["toolhost/truncated"], true, "{answer}");
}

#[test]
fn the_cli_lists_and_reads_resources() {
    let env = env();
    let toml = "[plugin.files]\nfs = [{ path = \"workspace\", mode = \"rw\" }]\n";
    let out = env.configured(toml).args(["read", "file:///notes/daily/a%20b.md"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "# A\n");
    let out = env.configured(toml).args(["read", "liar://nope/x"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no resource liar://nope/x"), "{err}");

    let out = env.configured(toml).arg("list").output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("template:  file:///{+path} — workspace-file"), "{listed}");
    assert!(listed.contains("resource:  text://split-task/subtask.schema.json — subtask-schema"), "{listed}");
    let out = env.configured(toml).args(["list", "--json"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = doc["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "text").unwrap().clone();
    assert_eq!(text["resources"][0]["uri"], "text://split-task/subtask.schema.json");
}

/// `resources/subscribe` (2025 revisions): a URI followed is told `notifications/resources/updated`
/// once what serves it changes (here: its plugin removed); one unsubscribed is not; an unknown
/// URI cannot be followed.
#[test]
fn a_subscribed_resource_is_updated_when_its_plugin_changes() {
    let env = env();
    let mut s = RawStdio::start(&env, &[]);
    s.send(crate::support::mcp_http::INITIALIZE.as_bytes());
    let lines = RawStdio::wait_for(&s.out, r#""id":1"#, 60);
    let init: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(init["result"]["capabilities"]["resources"], json!({"listChanged": true, "subscribe": true}));
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let schema = "text://split-task/subtask.schema.json";
    for (id, uri) in [(2, schema), (3, "liar://text")] {
        let answer = ask(&mut s, request(id, "resources/subscribe", json!({"uri": uri})));
        assert_eq!(answer["result"], json!({}), "{uri}: {answer}");
    }
    let answer = ask(&mut s, request(4, "resources/subscribe", json!({"uri": "nothing://here"})));
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    let answer = ask(&mut s, request(5, "resources/unsubscribe", json!({"uri": "liar://text"})));
    assert_eq!(answer["result"], json!({}), "{answer}");
    // The listing starts the folder's watch.
    ask(&mut s, request(6, "tools/list", json!({})));

    std::fs::remove_file(env.plugins.path().join("liar.wasm")).unwrap();
    let mut seen = RawStdio::wait_for(&s.out, "notifications/resources/list_changed", 60);
    std::fs::remove_file(env.plugins.path().join("text.wasm")).unwrap();
    seen.extend(RawStdio::wait_for(&s.out, "notifications/resources/updated", 60));
    let updated: Vec<Value> = seen
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "notifications/resources/updated")
        .collect();
    assert_eq!(updated.len(), 1, "only the followed URI, once: {seen:?}");
    assert_eq!(updated[0]["params"]["uri"], schema);
}

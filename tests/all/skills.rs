//! Skills (issue #58, MCP's `io.modelcontextprotocol/skills`): a plugin carrying a
//! `toolhost-skills` section serves `skills/list`, `skills/get`, `resources/list` and
//! `resources/read` over stdio and HTTP (a 2025-06-18 session and 2026-07-28), `toolhost list`
//! shows them, a warm start (the folder index) keeps them, a section with a path escaping its
//! folder refuses the plugin at load, and a plugin without the section loads as before.
//!
//! The fixture is built here: an existing plugin, and a section collected from files written in
//! a temporary folder, the way `toolhost build` embeds them.

use crate::mcp::RawStdio;
use crate::support::Env;
use crate::support::mcp_http::{Killed, answer, open_session, post, serve_mcp_http, session_headers};
use serde_json::{Value, json};
use toolhost_spec::digest::sha256_hex;
use toolhost_spec::skills;

const SKILL_MD: &str = "---\nname: guide\ndescription: How to use the text tools well.\nmetadata:\n  version: \"1.2\"\n---\n# Guide\n\nCall `echo` first.\n";
const USAGE: &str = "# Usage\n\nMore detail.\n";
/// A PNG's first bytes, NUL included: served as a blob.
const PNG: &[u8] = &[0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', 0, 0, 0, 13];

/// The text plugin with a skill `guide` (SKILL.md, ref/usage.md, img/dot.png) embedded, and its
/// plugin name.
fn with_skills() -> (Vec<u8>, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("guide/ref")).unwrap();
    std::fs::create_dir_all(root.join("guide/img")).unwrap();
    std::fs::write(root.join("guide/SKILL.md"), SKILL_MD).unwrap();
    std::fs::write(root.join("guide/ref/usage.md"), USAGE).unwrap();
    std::fs::write(root.join("guide/img/dot.png"), PNG).unwrap();
    let section = skills::collect_dir(root).unwrap();
    let plugin = std::fs::read(plugin_artifacts::TEXT).unwrap();
    let name = toolhost_spec::manifest::read(&plugin).unwrap().name;
    (skills::embed(&plugin, &section).unwrap(), name)
}

/// A folder with the text plugin carrying skills, and the versioned plugin without any.
fn env() -> (Env, String) {
    let env = Env::with(&[plugin_artifacts::VERSIONED]);
    let (bytes, name) = with_skills();
    std::fs::write(env.plugins.path().join("text-skills.wasm"), bytes).unwrap();
    (env, name)
}

/// A JSON-RPC request (also for resources.rs and prompts.rs).
pub(crate) fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// What every transport and revision must answer about the fixture's skill, given `ask` (a
/// request → its JSON-RPC response). `not_found` is the code of an unknown resource's error.
fn check_skills(plugin: &str, not_found: i64, mut ask: impl FnMut(Value) -> Value) {
    let base = format!("skill://{plugin}/guide");
    let uri = format!("{base}/SKILL.md");

    let listed = ask(request(10, "skills/list", json!({})));
    let skills = listed["result"]["skills"].as_array().unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(skills.len(), 1, "only the text plugin has skills: {listed}");
    let skill = &skills[0];
    assert_eq!(skill["uri"], uri);
    assert_eq!(
        skill["frontmatter"],
        json!({"name": "guide", "description": "How to use the text tools well.", "metadata": {"version": "1.2"}})
    );
    let files: Vec<(String, String, u64)> = skill["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["uri"].as_str().unwrap().into(),
                r["digest"].as_str().unwrap().into(),
                r["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let expect = |path: &str, bytes: &[u8]| {
        (format!("{base}/{path}"), format!("sha256:{}", sha256_hex(bytes)), bytes.len() as u64)
    };
    assert_eq!(
        files,
        [
            expect("SKILL.md", SKILL_MD.as_bytes()),
            expect("img/dot.png", PNG),
            expect("ref/usage.md", USAGE.as_bytes())
        ]
    );

    let got = ask(request(11, "skills/get", json!({"uri": uri})));
    assert_eq!(got["result"]["skill"], *skill, "{got}");
    let unknown = ask(request(12, "skills/get", json!({"uri": format!("skill://{plugin}/nope/SKILL.md")})));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // The skill's SKILL.md first; then the text plugin's own static resource (see resources.rs).
    let resources = ask(request(13, "resources/list", json!({})));
    assert_eq!(
        resources["result"]["resources"][0],
        json!({"uri": uri, "name": "guide", "description": "How to use the text tools well.",
            "mimeType": "text/markdown", "size": SKILL_MD.len(), "_meta": {"toolhost/plugin": plugin}}),
        "{resources}"
    );
    let others = resources["result"]["resources"].as_array().unwrap()[1..].to_vec();
    assert!(
        others.iter().all(|r| !r["uri"].as_str().unwrap().starts_with("skill:")),
        "one skill: {resources}"
    );

    let read = |ask: &mut dyn FnMut(Value) -> Value, id: i64, path: &str| {
        let answer = ask(request(id, "resources/read", json!({"uri": format!("{base}/{path}")})));
        answer["result"]["contents"][0].clone()
    };
    let text = read(&mut ask, 14, "SKILL.md");
    assert_eq!(
        text,
        json!({"uri": uri, "mimeType": "text/markdown", "text": SKILL_MD, "_meta": {"toolhost/plugin": plugin}})
    );
    let usage = read(&mut ask, 15, "ref/usage.md");
    assert_eq!(usage["text"], USAGE);
    let blob = read(&mut ask, 16, "img/dot.png");
    assert_eq!(blob["mimeType"], "image/png");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(blob["blob"].as_str().unwrap()).unwrap();
    assert_eq!(bytes, PNG);
    assert_eq!(
        format!("sha256:{}", sha256_hex(&bytes)),
        files[1].1,
        "the digest listed is the bytes' digest"
    );
    for (id, missing) in [
        (17, format!("{base}/nope.md")),
        (18, "skill://versioned/x/SKILL.md".into()),
        (19, "file:///etc/passwd".into()),
    ] {
        let answer = ask(request(id, "resources/read", json!({"uri": missing})));
        assert_eq!(answer["error"]["code"], not_found, "{missing}: {answer}");
    }
}

/// A request over stdio, and its answer.
pub(crate) fn ask(s: &mut RawStdio, req: Value) -> Value {
    s.send(req.to_string().as_bytes());
    let lines = RawStdio::wait_for(&s.out, &format!(r#""id":{}"#, req["id"]), 60);
    serde_json::from_str(lines.last().unwrap()).unwrap()
}

/// Over stdio (2025-06-18): the capabilities are declared, the skills are served, the plugin
/// without a section still serves its tools, and a reload that drops the skills is announced.
#[test]
fn skills_over_stdio() {
    let (env, plugin) = env();
    let mut s = RawStdio::start(&env, &[]);
    s.send(crate::support::mcp_http::INITIALIZE.as_bytes());
    let lines = RawStdio::wait_for(&s.out, r#""id":1"#, 60);
    let init: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["resources"], json!({"listChanged": true, "subscribe": true}), "{init}");
    assert!(caps["extensions"]["io.modelcontextprotocol/skills"].is_object(), "{init}");
    s.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    check_skills(&plugin, -32002, |req| ask(&mut s, req));
    let tools = ask(&mut s, request(30, "tools/list", json!({})));
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo") && names.contains(&"which"), "both plugins serve their tools: {names:?}");

    // The listing started the folder's watch: the plugin removed, the client is told that the
    // resources changed too, and its skills are gone.
    std::fs::remove_file(env.plugins.path().join("text-skills.wasm")).unwrap();
    RawStdio::wait_for(&s.out, "notifications/resources/list_changed", 60);
    let listed = ask(&mut s, request(31, "skills/list", json!({})));
    assert_eq!(listed["result"]["skills"], json!([]), "{listed}");
}

/// Over HTTP: a 2025-06-18 session, and 2026-07-28 stateless requests (where rmcp turns the
/// unknown resource's -32002 into -32602, and the results carry their caching hints).
#[test]
fn skills_over_http_on_both_revisions() {
    let (env, plugin) = env();
    let (child, url, _stderr) = serve_mcp_http(&env, &[]);
    let _server = Killed(child);

    let session = open_session(&url, "2025-06-18", json!({}), "raw");
    let headers = session_headers(&session, "2025-06-18");
    check_skills(&plugin, -32002, |req| {
        let id = req["id"].as_i64().unwrap();
        let (status, head, messages) = post(&url, &headers, &req);
        assert_eq!(status, 200, "{head}");
        answer(&messages, id).clone()
    });

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    });
    let mut hints = Vec::new();
    check_skills(&plugin, -32602, |mut req| {
        let id = req["id"].as_i64().unwrap();
        req["params"]["_meta"] = meta.clone();
        let method = req["method"].as_str().unwrap().to_string();
        let mut headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
        if method == "resources/read" {
            headers.push_str(&format!("Mcp-Name: {}\r\n", req["params"]["uri"].as_str().unwrap()));
        }
        let (status, head, messages) = post(&url, &headers, &req);
        let response = answer(&messages, id).clone();
        assert!(status == 200 || response.get("error").is_some(), "{head}");
        if let Some(result) = response.get("result") {
            hints.push((method, result["ttlMs"].clone(), result["cacheScope"].clone()));
        }
        response
    });
    assert!(hints.len() >= 5, "{hints:?}");
    for (method, ttl, scope) in hints {
        assert!(ttl.as_u64().is_some_and(|t| t > 0) && scope == "public", "{method}: {ttl} {scope}");
    }
}

/// `toolhost list` shows each plugin's skills, in text and JSON; a warm start (the folder index,
/// which reads no plugin bytes) keeps them.
#[test]
fn list_shows_skills_and_a_warm_start_keeps_them() {
    use toolhost_core::registry::{FolderRead, Registry, index};
    let (env, plugin) = env();
    let out = env.command().arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let size = SKILL_MD.len() + USAGE.len() + PNG.len();
    assert!(text.contains(&format!("  skill:     guide — 3 files, {size} bytes")), "{text}");
    // `inspect` of the file shows the same line, from the file alone.
    let out = env.command().arg("inspect").arg(env.plugins.path().join("text-skills.wasm")).output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&format!("\nskill:     guide — 3 files, {size} bytes\n")), "{shown}");

    let out = env.command().args(["list", "--json"]).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let plugins = doc["plugins"].as_array().unwrap();
    let with = plugins.iter().find(|p| p["name"] == plugin.as_str()).unwrap();
    assert_eq!(
        with["skills"],
        json!([{"name": "guide", "uri": format!("skill://{plugin}/guide/SKILL.md"),
            "description": "How to use the text tools well.", "files": 3, "bytes": size}])
    );
    let without = plugins.iter().find(|p| p["name"] == "versioned").unwrap();
    assert_eq!(without["skills"], json!([]), "a plugin without the section loads, with no skills");

    // The folder index: a read once the files have settled makes the entries, the next start
    // takes the files from it unread, skills included.
    let cache = tempfile::tempdir().unwrap();
    let mut config = env.config.clone();
    config.cache_dir = Some(cache.path().to_path_buf());
    std::thread::sleep(index::SETTLED + std::time::Duration::from_millis(200));
    assert_eq!(FolderRead::inspect_all(&config).unwrap().from_index, 0);
    let warm = FolderRead::inspect_all(&config).unwrap();
    assert_eq!(warm.from_index, 2, "both files known by their stamps");
    let registry = Registry::load_read(&crate::support::runtime(), &config, warm).unwrap();
    let p = registry.plugins().iter().find(|p| *p.name == *plugin).unwrap();
    let names: Vec<(&str, usize)> = p.skills.iter().map(|s| (s.name.as_str(), s.files.len())).collect();
    assert_eq!(names, [("guide", 3)], "skills survive a warm start");
    assert_eq!(p.skills[0].files[1].digest, format!("sha256:{}", sha256_hex(PNG)));
    // And the binary's own warm start lists them too.
    let out = env.command().arg("list").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("  skill:     guide — 3 files"));
}

/// A section whose path escapes its folder (written by hand: `embed` refuses it) refuses the
/// plugin at load, naming the file and the path; the other plugin loads.
#[test]
fn a_section_with_an_escaping_path_refuses_the_plugin() {
    let env = Env::with(&[plugin_artifacts::VERSIONED]);
    let mut bytes = std::fs::read(plugin_artifacts::TEXT).unwrap();
    let section = json!({"format": 1, "files": [
        {"path": "guide/SKILL.md", "text": "---\nname: guide\ndescription: d\n---\n"},
        {"path": "guide/../../etc/passwd", "text": "x"},
    ]});
    crate::support::append_custom_section(&mut bytes, skills::SECTION, section.to_string().as_bytes());
    std::fs::write(env.plugins.path().join("escaping.wasm"), bytes).unwrap();
    let out = env.command().arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("escaping.wasm")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("skill file `guide/../../etc/passwd`") && line.contains("starting with `.`"),
        "{line}"
    );
    assert!(text.contains("NOT LOADED") && text.contains("which"), "{text}");
    // `inspect` says so of the file too.
    let out = env.command().arg("inspect").arg(env.plugins.path().join("escaping.wasm")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("skills:    refused, and with them the plugin:")
            && text.contains("guide/../../etc/passwd"),
        "{text}"
    );
}

/// `toolhost read URI` prints a skill's file (text as is, a blob through a pipe or `--out`), and
/// an unknown URI is an error naming it; nothing is printed then.
#[test]
fn read_prints_a_skill_file_and_names_an_unknown_uri() {
    let (env, plugin) = env();
    let read = |args: &[&str]| env.command().arg("read").args(args).output().unwrap();
    let out = read(&[&format!("skill://{plugin}/guide/SKILL.md")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), SKILL_MD);
    // A blob through a pipe is its bytes; `--out` writes them.
    let png = format!("skill://{plugin}/guide/img/dot.png");
    assert_eq!(read(&[&png]).stdout, PNG);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dot.png");
    let out = read(&[&png, "--out", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&file).unwrap(), PNG);
    for (uri, why) in [
        (format!("skill://{plugin}/guide/missing.md"), "no loaded plugin has that skill file"),
        ("skill://versioned/guide/SKILL.md".to_string(), "no loaded plugin has that skill file"),
        ("file:///etc/passwd".to_string(), "no loaded plugin declares it or a template it matches"),
    ] {
        let out = read(&[&uri]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && out.stdout.is_empty(), "{uri}: {err}");
        assert!(err.contains(&format!("no resource {uri}: {why}")), "{err}");
    }
}

/// `toolhost prompt --skills` adds the instructions of the listed tools' plugins' skills (after
/// the tools, markers defused); without the flag the prompt is as before.
#[test]
fn prompt_with_skills_adds_their_instructions() {
    let (env, plugin) = env();
    let prompt = |args: &[&str]| {
        let out = env.command().arg("prompt").args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = prompt(&[]);
    let with = prompt(&["--skills"]);
    assert!(!plain.contains("## Skills"), "{plain}");
    assert_eq!(&with[..plain.len()], plain, "the skills come after the tools");
    let section = &with[plain.len()..];
    assert!(
        section.contains(&format!("### Skill guide (plugin {plugin}): How to use the text tools well.\n\n# Guide\n\nCall `echo` first.\n")),
        "{section}"
    );
    assert!(!section.contains("metadata:"), "the front matter stays out: {section}");
}

/// Reads are audited and counted like calls: a `resources/read` of a skill file and of an
/// unknown URI each write a `"kind": "read"` line (who read what, from which plugin file, how
/// many bytes), and `toolhost_resource_reads_total` counts them by plugin, method and outcome.
#[test]
fn resource_reads_are_audited_and_counted() {
    use crate::service::{Deployed, Deployment, TOKEN};
    let d = Deployment::new(&[plugin_artifacts::FILES], "");
    let server = d.serve_http();
    let read = |id: i64, uri: &str| {
        let body = request(
            id,
            "resources/read",
            json!({"uri": uri, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "reader", "version": "0"},
            }}),
        );
        let headers = format!(
            "Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: resources/read\r\nMcp-Name: {uri}\r\n"
        );
        server.request("POST", "/mcp", &headers, &body.to_string())
    };
    let skill_md = "skill://files/workspace-files/SKILL.md";
    let ok = read(1, skill_md);
    assert!(ok.status == 200 && ok.body.contains("name: workspace-files"), "{}\n{}", ok.head, ok.body);
    let missing = read(2, "skill://files/nope/SKILL.md");
    assert!(missing.body.contains("\"error\""), "{}", missing.body);

    let reads: Vec<Value> = d.audit().into_iter().filter(|l| l["kind"] == "read").collect();
    assert_eq!(reads.len(), 2, "{reads:?}");
    let (hit, miss) = (&reads[0], &reads[1]);
    assert_eq!(
        (
            &hit["uri"],
            &hit["method"],
            &hit["outcome"],
            &hit["plugin"],
            &hit["front_end"],
            &hit["token"],
            &hit["client"]
        ),
        (
            &json!(skill_md),
            &json!("resources/read"),
            &json!("ok"),
            &json!("files"),
            &json!("mcp-http"),
            &json!("ci"),
            &json!("reader")
        ),
        "{hit}"
    );
    assert!(hit["bytes"].as_u64().is_some_and(|b| b > 1000), "{hit}");
    assert!(hit["sha256"].as_str().is_some_and(|h| h.len() == 64) && hit["version"].is_string(), "{hit}");
    assert_eq!(
        (&miss["outcome"], &miss["plugin"], &miss["bytes"]),
        (&json!("not_found"), &Value::Null, &json!(0)),
        "{miss}"
    );

    let metrics = server.metrics();
    let count = |plugin: &str, outcome: &str| {
        metrics.value(
            "toolhost_resource_reads_total",
            &[("plugin", plugin), ("method", "resources/read"), ("outcome", outcome)],
        )
    };
    assert_eq!((count("files", "ok"), count("", "not_found")), (1.0, 1.0));
}

/// `[plugin.NAME] skills` selects which of a plugin's skills are served (glob patterns; `[]`:
/// none): a skill left out is not listed and not read, by any front end; an empty pattern is an
/// error naming its key.
#[test]
fn the_operator_selects_the_skills_served() {
    let (env, plugin) = env();
    let run = |toml: &str, args: &[&str]| env.configured(toml).args(args).output().unwrap();
    let guide = format!("skill://{plugin}/guide/SKILL.md");
    for (toml, served) in [
        (format!("[plugin.{plugin}]\nskills = [\"gu*\"]\n"), true),
        (format!("[plugin.{plugin}]\nskills = []\n"), false),
        (format!("[plugin.{plugin}]\nskills = [\"other\"]\n"), false),
    ] {
        let list = run(&toml, &["list"]);
        let text = String::from_utf8_lossy(&list.stdout);
        assert!(list.status.success(), "{toml}: {}", String::from_utf8_lossy(&list.stderr));
        assert_eq!(text.contains("skill:     guide"), served, "{toml}: {text}");
        let read = run(&toml, &["read", &guide]);
        assert_eq!(read.status.success(), served, "{toml}: {}", String::from_utf8_lossy(&read.stderr));
        let prompt = String::from_utf8_lossy(&run(&toml, &["prompt", "--skills"]).stdout).into_owned();
        assert_eq!(prompt.contains("### Skill guide"), served, "{toml}");
        // A pattern matching none of the plugin's skills is a warning (a likely typo).
        let typo = format!("[plugin.{plugin}] skills: \"other\" matches none of its skills");
        assert_eq!(text.contains(&typo), toml.contains("other"), "{toml}: {text}");
    }
    let bad = run(&format!("[plugin.{plugin}]\nskills = [\"\"]\n"), &["list"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains(&format!("plugin.{plugin}.skills[0]")), "{err}");
}

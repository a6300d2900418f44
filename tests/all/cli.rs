//! The `toolhost` binary, driven as a user would.

use crate::support::lines::{next_line, output_with, spawn_reading};
use crate::support::{self, Env, component};
use std::process::{Command, Output, Stdio};

/// `toolhost --plugins <env> --workspace <env> ARGS…`, run in the operator's folder.
fn command(env: &Env, args: &[&str]) -> Command {
    let mut cmd = env.command();
    cmd.args(args);
    cmd
}

fn toolhost(env: &Env, args: &[&str]) -> Output {
    command(env, args).stdin(Stdio::null()).output().expect("run toolhost")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_explains_the_commands_and_grants() {
    let env = Env::with(&[]);
    let out = toolhost(&env, &["--help"]);
    let help = stdout(&out);
    for word in ["list", "inspect", "call", "--allow-write", "--config", "Nothing is granted"] {
        assert!(help.contains(word), "--help lacks {word}:\n{help}");
    }
}

/// A grant on the command line names a plugin: a name that is not in the folder (a file name,
/// a typo) is an error listing the plugins there, not a grant of nothing.
#[test]
fn a_grant_for_a_plugin_not_in_the_folder_is_an_error_naming_the_plugins() {
    let env = Env::with(&[plugin_artifacts::SYSTEM, plugin_artifacts::TEXT]);
    let out = toolhost(&env, &["--allow-run", "system=echo", "call", "-y", "run", "echo", "hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "toolhost: --allow-run names plugin `system`, which is not in {}; the plugins there: sys, text (a grant names the plugin, not its file)",
            env.plugins.path().display()
        )
    );
    let out = toolhost(&env, &["--allow-read", "txt", "list"]);
    assert!(stderr(&out).contains("--allow-read names plugin `txt`"), "{}", stderr(&out));
    // `*` and names that are there are fine.
    let out = toolhost(&env, &["--allow-read", "*", "--allow-env", "text=HOME", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn list_shows_tools_grants_and_failures() {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    std::fs::write(env.plugins.path().join("broken.wasm"), b"nope").unwrap();
    let out = toolhost(&env, &["--allow-read", "text", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("delete(path)") && text.contains("danger"), "{text}");
    assert!(text.contains("split_task(title, subtasks: json)"), "{text}");
    assert!(text.contains("missing:   fs workspace:rw"), "{text}");
    assert!(text.contains("fs workspace:ro →"), "{text}");
    assert!(text.contains("! broken.wasm: not a WebAssembly file"), "{text}");

    let out = toolhost(&env, &["list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["plugins"].as_array().unwrap().len(), 2);
    assert_eq!(v["failures"][0]["reason"].as_str().unwrap().split(' ').next(), Some("not"));
    let files = v["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "files").unwrap();
    assert_eq!(files["tools"].as_array().unwrap().len(), 8);
}

#[test]
fn inspect_reads_the_manifest_without_running_code() {
    let env = Env::with(&[]);
    // A component whose instantiation would trap immediately: inspect must not care.
    let trap = env.workspace.path().join("trap.wasm");
    let manifest = r#"{"format":1,"name":"trappy","version":"9.9.9","tools":[{"name":"boom","description":"Would trap on start.","argCount":0}]}"#;
    std::fs::write(
        &trap,
        component(
            "(component (core module $m (func $s unreachable) (start $s)) (core instance (instantiate $m)))",
            Some(manifest),
        ),
    )
    .unwrap();
    let out = toolhost(&env, &["inspect", trap.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("plugin trappy 9.9.9") && stdout(&out).contains("boom()"),
        "{}",
        stdout(&out)
    );
    let out = toolhost(&env, &["inspect", "--json", plugin_artifacts::FILES]);
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["name"], "files");
    assert_eq!(m["tools"][0]["argCount"], 1);

    let garbage = env.workspace.path().join("garbage.wasm");
    std::fs::write(&garbage, b"xx").unwrap();
    let out = toolhost(&env, &["inspect", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("garbage.wasm") && stderr(&out).contains("not a WebAssembly file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn call_with_quick_grants_and_exit_codes() {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    // No grant: the call fails and says how to grant.
    let out = toolhost(&env, &["call", "write", "notes.txt", "hello, world"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--allow-write files"), "{}", stderr(&out));
    assert!(!env.ws("notes.txt").exists());

    let out = toolhost(&env, &["--allow-write", "files", "call", "write", "notes.txt", "hello, world"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(env.ws("notes.txt")).unwrap(), "hello, world");

    // Dangerous without --yes and without a terminal: denied, exit 1, file kept.
    let out = toolhost(&env, &["--allow-write", "files", "call", "delete", "notes.txt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).lines().any(|l| l.starts_with("error[denied]")), "{}", stderr(&out));
    assert!(env.ws("notes.txt").exists());
    let out = toolhost(&env, &["--allow-write", "files", "call", "--yes", "delete", "notes.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!env.ws("notes.txt").exists());

    let out = toolhost(&env, &["call", "--json", "echo", "a", "b"]);
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // What the call cost, for the operator (issue #14).
    let usage = v.as_object_mut().unwrap().remove("usage").expect("usage in call --json");
    assert!(
        usage["wall_us"].as_u64().unwrap() > 0 && usage["peak_memory_kb"].as_u64().unwrap() > 0,
        "{usage}"
    );
    assert_eq!(v, serde_json::json!({"success": true, "data": "a,b"}));

    let out = toolhost(&env, &["call", "--json", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "unknown_tool");
}

#[test]
fn config_errors_name_the_file_and_key() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let cfg = env.at("toolhost.toml");
    std::fs::write(&cfg, "[limits]\ntimeout = 3\n").unwrap();
    let out = toolhost(&env, &["--config", cfg.to_str().unwrap(), "list"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("toolhost.toml") && e.contains("unknown field `timeout`"), "{e}");
}

fn toolhost_stdin(env: &Env, args: &[&str], input: &[u8]) -> Output {
    output_with(&mut command(env, args), input)
}

#[test]
fn run_reads_a_reply_and_prints_feedback() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let reply = "Counting: [TOOL] count_words(\"one two\") [/TOOL] and [TOOL] echo(a, b) [/TOOL]";
    let out = toolhost_stdin(&env, &["run"], reply.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with(reply), "{text}");
    assert!(
        text.contains(
            "[RESULT 1] count_words(\"one two\") success\n{\"chars\":7,\"lines\":1,\"words\":2}\n[/RESULT]"
        ),
        "{text}"
    );
    assert!(text.contains("[RESULT 2] echo(\"a\", \"b\") success\na,b\n[/RESULT]"), "{text}");

    // Invalid UTF-8 and a malformed call: a clear parse error, exit code 1, no crash.
    let out = toolhost_stdin(&env, &["run", "--json", "-"], b"\xff\xfe [TOOL] echo(\"x [/TOOL]");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["segments"][1]["type"], "error");

    let msg = r#"{"role":"assistant","tool_calls":[{"id":"c9","type":"function","function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}]}"#;
    let out = toolhost_stdin(&env, &["run", "--format", "openai"], msg.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!([{"role": "tool", "tool_call_id": "c9", "content": "{\"success\":true,\"data\":\"hi\"}"}])
    );
}

#[test]
fn prompt_and_schema_commands() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let out = toolhost(&env, &["prompt"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("- split_task(title, subtasks: json) — "), "{}", stdout(&out));
    let out = toolhost(&env, &["schema", "--format", "openai"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 4);
}

/// A Rust plugin crate `name` on the SDK, its `src/` empty, with the plugins' lock file (so no
/// dependency is fetched or rebuilt).
fn sdk_crate(name: &str) -> tempfile::TempDir {
    let root = support::root();
    let krate = tempfile::tempdir().unwrap();
    std::fs::create_dir(krate.path().join("src")).unwrap();
    std::fs::write(
        krate.path().join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n\
             [dependencies]\ntoolhost-sdk = {{ path = {:?} }}\n\n[workspace]\n",
            root.join("plugin-sdk").display().to_string()
        ),
    )
    .unwrap();
    std::fs::copy(root.join("plugins/Cargo.lock"), krate.path().join("Cargo.lock")).unwrap();
    krate
}

/// `toolhost dev`: an author saves, the plugin is rebuilt, and the new tool is announced; SIGTERM
/// ends it cleanly, as Ctrl-C does.
#[test]
fn dev_rebuilds_on_save_and_the_tool_appears() {
    let root = support::root();
    let krate = sdk_crate("devloop");
    let src = |attr: &str, body: &str| format!("#[toolhost_sdk::plugin{attr}]\nmod tools {{\n{body}\n}}\n");
    let hi = "    /// Say hi.\n    #[tool]\n    pub fn hi() -> String { \"hi\".into() }";
    std::fs::write(krate.path().join("src/lib.rs"), src("", hi)).unwrap();
    let plugins = tempfile::tempdir().unwrap();

    let (mut child, rx) = spawn_reading(
        support::toolhost()
            .arg("--plugins")
            .arg(plugins.path())
            .arg("dev")
            .arg(krate.path())
            .env("CARGO_TARGET_DIR", root.join("target/plugins-build")),
    );
    let wait_for = |want: &str| -> Result<String, String> {
        let mut seen = Vec::new();
        next_line(&rx, 240, |l| l.starts_with(want), &mut seen)
            .ok_or_else(|| format!("never saw {want:?}; saw {seen:?}"))
    };
    let first = wait_for("+ hi (devloop v0.1.0)");
    let second = first.clone().and_then(|_| {
        let bye = "    /// Say bye.\n    #[tool]\n    pub fn bye() -> String { \"bye\".into() }";
        // The new build also requests network access: in the dev loop the author approves it by
        // building it, so it goes live without `toolhost approve`.
        std::fs::write(
            krate.path().join("src/lib.rs"),
            src("(net = \"example.com\")", &format!("{hi}\n{bye}")),
        )
        .unwrap();
        wait_for("+ bye (devloop v0.1.0)")
    });
    // SIGTERM (a supervisor, an editor's task runner) ends the loop as Ctrl-C does: exit 0.
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let stopped = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    first.unwrap();
    second.unwrap();
    assert!(plugins.path().join("devloop.wasm").is_file());
    let stopped = stopped.expect("`toolhost dev` still running 30 s after SIGTERM");
    assert!(stopped.success(), "SIGTERM must end `toolhost dev` as Ctrl-C does: {stopped:?}");
}

#[test]
fn embed_manifest_gives_a_foreign_component_its_manifest() {
    let env = Env::with(&[]);
    let wasm = env.workspace.path().join("py.wasm");
    std::fs::write(&wasm, component("(component)", None)).unwrap();
    let manifest = env.workspace.path().join("tool.toml");
    std::fs::write(
        &manifest,
        r#"format = 1
name = "pytools"
version = "1.2.0"
description = "Tools written in Python"

[[tools]]
name = "shout"
description = "Upper-case a text."
argCount = 1
rest = true
params = [{ name = "text", type = "string", description = "the text" }]
"#,
    )
    .unwrap();
    let out =
        toolhost(&env, &["embed-manifest", wasm.to_str().unwrap(), "--manifest", manifest.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("embedded manifest of `pytools` (1 tool) into "), "{}", stderr(&out));
    let out = toolhost(&env, &["inspect", wasm.to_str().unwrap()]);
    assert!(
        stdout(&out).contains("plugin pytools 1.2.0") && stdout(&out).contains("shout(text…)"),
        "{}",
        stdout(&out)
    );

    // Twice: refused, file unchanged. A bad manifest: refused with the field named.
    let before = std::fs::read(&wasm).unwrap();
    let out = toolhost(&env, &["embed-manifest", wasm.to_str().unwrap(), "-m", manifest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already has"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&wasm).unwrap(), before);
    std::fs::write(
        &manifest,
        std::fs::read_to_string(&manifest).unwrap().replace("argCount = 1", "argCount = 2"),
    )
    .unwrap();
    let fresh = env.workspace.path().join("fresh.wasm");
    std::fs::write(&fresh, component("(component)", None)).unwrap();
    let out = toolhost(&env, &["embed-manifest", fresh.to_str().unwrap(), "-m", manifest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("tools[0].argCount"), "{}", stderr(&out));
}

/// `embed-manifest --skills DIR` embeds a skills folder beside the manifest, read back by the
/// host's reader; a folder breaking a rule is refused naming the file, and nothing is written.
#[test]
fn embed_manifest_embeds_a_skills_folder_too() {
    let env = Env::with(&[]);
    let ws = env.workspace.path();
    let manifest = ws.join("tool.toml");
    std::fs::write(
        &manifest,
        "format = 1\nname = \"pytools\"\nversion = \"1.0.0\"\ndescription = \"d\"\n\n[[tools]]\nname = \"shout\"\ndescription = \"Shout.\"\nargCount = 0\nparams = []\n",
    )
    .unwrap();
    let skill = "---\nname: loud\ndescription: When to shout.\n---\n\n# Loud\n";
    std::fs::create_dir_all(ws.join("skills/loud/img")).unwrap();
    std::fs::write(ws.join("skills/loud/SKILL.md"), skill).unwrap();
    std::fs::write(ws.join("skills/loud/img/a.png"), [0x89, b'P', b'N', b'G', 0, 1]).unwrap();
    let wasm = ws.join("py.wasm");
    std::fs::write(&wasm, component("(component)", None)).unwrap();
    let (w, m, s) = (wasm.to_str().unwrap(), manifest.to_str().unwrap(), ws.join("skills"));
    let out = toolhost(&env, &["embed-manifest", w, "-m", m, "--skills", s.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("embedded manifest of `pytools` (1 tool) and 1 skill into "),
        "{}",
        stderr(&out)
    );
    let bytes = std::fs::read(&wasm).unwrap();
    assert_eq!(toolhost_spec::manifest::read(&bytes).unwrap().name, "pytools");
    let section = toolhost_spec::skills::read(&bytes).unwrap().expect("a skills section");
    let files: Vec<(&str, &[u8])> = section.files.iter().map(|f| (f.path.as_str(), &f.bytes[..])).collect();
    assert_eq!(
        files,
        [("loud/SKILL.md", skill.as_bytes()), ("loud/img/a.png", &[0x89, b'P', b'N', b'G', 0, 1][..])]
    );

    // A skill whose front matter names another skill: refused naming the file, nothing written.
    std::fs::write(ws.join("skills/loud/SKILL.md"), skill.replace("name: loud", "name: quiet")).unwrap();
    let fresh = ws.join("fresh.wasm");
    std::fs::write(&fresh, component("(component)", None)).unwrap();
    let before = std::fs::read(&fresh).unwrap();
    let out = toolhost(
        &env,
        &["embed-manifest", fresh.to_str().unwrap(), "-m", m, "--skills", s.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("loud/SKILL.md") && stderr(&out).contains("quiet"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&fresh).unwrap(), before);
}

/// Guest stdout/stderr never reach the host's stdout (which carries results and, for MCP,
/// protocol messages): they are captured and written to the log on stderr.
#[test]
fn guest_stdio_is_captured_into_the_log_not_inherited() {
    let env = Env::with(&[plugin_artifacts::HOSTILE]);
    let out = toolhost(&env, &["-v", "call", "chatter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "said hello\n", "guest output leaked into the host's stdout");
    let log = stderr(&out);
    for line in ["hello from stdout", "hello from stderr", "hello from the log import"] {
        assert!(log.contains(line), "{line:?} missing from the log:\n{log}");
    }
    assert!(
        log.contains("plugin=\"hostile\"") || log.contains("plugin=hostile"),
        "log lines name the plugin:\n{log}"
    );
}

/// Each plugin file that failed to load is reported exactly once per command (issue #12, 3):
/// the registry returns failures and the command reports them, never both.
#[test]
fn each_skipped_file_is_reported_once() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    for i in 0..5 {
        std::fs::write(env.plugins.path().join(format!("broken{i}.wasm")), b"nope").unwrap();
    }
    for args in [&["call", "echo", "hi"][..], &["prompt"], &["schema"]] {
        let out = toolhost(&env, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        for i in 0..5 {
            let n = err.matches(&format!("broken{i}.wasm")).count();
            assert_eq!(n, 1, "{args:?}: broken{i}.wasm reported {n} times:\n{err}");
        }
    }
    // `list` reports them in its table and not again on stderr.
    let out = toolhost(&env, &["list"]);
    assert_eq!(stdout(&out).matches("broken0.wasm").count(), 1, "{}", stdout(&out));
    assert!(!stderr(&out).contains("broken0.wasm"), "{}", stderr(&out));
}

/// Issue #35: the CLI's argument errors are in the words every front end uses, `-5` is an
/// argument, and `--` after an argument is one too.
#[test]
fn argument_errors_name_the_type_and_negative_numbers_are_arguments() {
    let env = Env::with(&[plugin_artifacts::HOSTILE]);
    let out = toolhost(&env, &["call", "entropy", "ten"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error[bad_arguments]: argument 1 (`mb`) of `entropy` must be an integer, got `ten`; usage: entropy(mb: integer)\n"
    );
    let out = toolhost(&env, &["call", "entropy", "-5"]);
    assert!(!stderr(&out).contains("unexpected argument"), "{}", stderr(&out));
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let out = toolhost(&env, &["call", "echo", "abc", "--"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "abc,--\n", "`--` after an argument is an argument");
}

/// Issue #35: installing a plugin whose tool another plugin in the folder already has is
/// refused, naming both.
#[test]
fn an_install_that_would_shadow_a_tool_is_refused_naming_both_plugins() {
    let env = Env::with(&[plugin_artifacts::FILES]);
    let text = toolhost_spec::manifest::read(&std::fs::read(plugin_artifacts::TEXT).unwrap()).unwrap();
    assert!(toolhost::project::check_collisions(env.plugins.path(), &text).is_ok());
    let mut clash = text.clone();
    clash.tools[0].name = "read".into();
    let e = toolhost::project::check_collisions(env.plugins.path(), &clash).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "not installed into {}: tool `read` of plugin `text` is already a tool of plugin `files` (files.wasm); rename the tool in one of them, or remove files.wasm",
            env.plugins.path().display()
        )
    );
    // The same plugin under another file name is refused; its own file is replaced, not a clash.
    std::fs::copy(plugin_artifacts::TEXT, env.plugins.path().join("text-old.wasm")).unwrap();
    let e = toolhost::project::check_collisions(env.plugins.path(), &text).unwrap_err().to_string();
    assert!(e.contains("plugin `text` is already installed as text-old.wasm"), "{e}");
    std::fs::rename(env.plugins.path().join("text-old.wasm"), env.plugins.path().join("text.wasm")).unwrap();
    assert!(toolhost::project::check_collisions(env.plugins.path(), &text).is_ok());
}

/// Issue #35: a Rust plugin's mistakes are reported together, each at the author's line: a doc
/// line for a parameter the function lacks, a `pub fn` without `#[tool]`, a return type a tool
/// cannot have.
#[test]
fn rust_mistakes_are_reported_at_the_authors_lines() {
    let krate = sdk_crate("mistakes");
    let check = |src: &str| {
        std::fs::write(krate.path().join("src/lib.rs"), src).unwrap();
        let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "--target", "wasm32-wasip2", "--message-format", "short"])
            .current_dir(krate.path())
            .env("CARGO_TARGET_DIR", support::root().join("target/plugins-build"))
            // The SDK crate's own build, not linted as the host's workspace is.
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CLIPPY_ARGS")
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("{stderr}");
        stderr.lines().filter(|l| l.starts_with("src/lib.rs:")).map(str::to_string).collect::<Vec<_>>()
    };
    let errors = check(
        "#[toolhost_sdk::plugin]\nmod tools {\n    /// Add.\n    ///\n    /// - `b`: the other number\n    #[tool]\n    pub fn add(a: i64) -> String { a.to_string() }\n\n    pub fn helper() {}\n}\n",
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].starts_with("src/lib.rs:5:")
            && errors[0].contains("parameter `b` that this function does not have"),
        "{errors:?}"
    );
    assert!(errors[1].starts_with("src/lib.rs:9:") && errors[1].contains("`pub fn helper`"), "{errors:?}");
    let errors = check(
        "#[toolhost_sdk::plugin]\nmod tools {\n    /// Count.\n    #[tool]\n    pub fn count(a: i64) -> i32 { a as i32 }\n}\n",
    );
    assert!(
        errors.iter().any(|e| e.starts_with("src/lib.rs:5:") && e.contains("a tool cannot return `i32`")),
        "{errors:?}"
    );
}

/// #60: the local user has the name `[identity] local_user` gives it, and what a model is
/// offered for it — the `[TOOL]` prompt, OpenAI's `tools` — is what the operator's policy lets
/// it list; a call it may not make is refused as over MCP.
#[test]
fn the_local_users_prompt_and_schema_offer_only_what_the_policy_lets_it_list() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    std::fs::write(
        env.at("policy.toml"),
        "[[rule]]\nid = \"alice-echoes\"\neffect = \"allow\"\nactions = [\"list\", \"call\"]\n\
         when = 'principal.sub == \"ops-alice\" && principal.via == \"local\" && resource.name == \"echo\"'\n",
    )
    .unwrap();
    let config = "[identity]\nlocal_user = \"ops-alice\"\n[policy]\nfile = \"policy.toml\"\n";
    std::fs::write(env.at("toolhost.toml"), config).unwrap();
    let prompt = toolhost(&env, &["prompt"]);
    assert!(prompt.status.success(), "{}", stderr(&prompt));
    let prompt = stdout(&prompt);
    assert!(prompt.contains("- echo(") && !prompt.contains("count_words"), "{prompt}");
    let schema = toolhost(&env, &["schema"]);
    assert!(schema.status.success(), "{}", stderr(&schema));
    let tools: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    let names: Vec<&str> =
        tools.as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(names, ["echo"], "{tools}");
    let refused = toolhost(&env, &["call", "count_words", "a b"]);
    assert!(!refused.status.success());
    let said = stdout(&refused) + &stderr(&refused);
    assert!(said.contains("calling `count_words` may not be done by the local user `ops-alice`"), "{said}");
    // Someone else at the keyboard sees nothing.
    std::fs::write(env.at("toolhost.toml"), config.replace("ops-alice", "bob")).unwrap();
    let prompt = stdout(&toolhost(&env, &["prompt"]));
    assert!(!prompt.contains("- echo("), "{prompt}");
    // A name that is no user name is refused, naming the key.
    std::fs::write(env.at("toolhost.toml"), "[identity]\nlocal_user = \"two words\"\n").unwrap();
    let bad = toolhost(&env, &["list"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("identity.local_user = \"two words\" is not a user name"),
        "{}",
        stderr(&bad)
    );
}

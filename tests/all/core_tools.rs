//! Every example tool called through the executor, and the call semantics around them:
//! arity, JSON arguments, `rest`, danger policy, output limits, grants.

use crate::support::{Env, call, err, ok};
use toolhost_core::ErrorKind;
use toolhost_core::settings::DangerPolicy;
use toolhost_spec::manifest::FsMode;

fn files_env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    env.config.grant_workspace("files", FsMode::ReadWrite);
    env.config.grant_workspace("text", FsMode::ReadOnly);
    env
}

/// A FIFO in the workspace (a granted program may make one) is refused at open: opening it
/// would wait for a writer on the async worker, for good, past the call's time limit. The test
/// opens the FIFO's other end itself when the call has not answered, so a host that waits is
/// freed (and the test fails) rather than hung.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_in_the_workspace_is_refused_not_waited_on() {
    let env = files_env();
    let host = std::sync::Arc::new(env.host_yes());
    let fifo = env.ws("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let h = host.clone();
    let read = tokio::spawn(async move { call(&h, "read", &["pipe"]).await });
    let answered = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while !read.is_finished() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    if answered.is_err() {
        // Free the host's open (a writer arrives, then leaves).
        drop(std::fs::OpenOptions::new().write(true).open(&fifo));
    }
    let outcome = read.await.unwrap();
    assert!(answered.is_ok(), "the call waited on the FIFO: {outcome:?}");
    let e = err(&outcome, ErrorKind::ToolError);
    assert!(e.contains("pipe"), "{e}");
    // The host serves on.
    std::fs::write(env.ws("after.txt"), "still here").unwrap();
    assert_eq!(ok(&call(&host, "read", &["after.txt"]).await), "still here");
}

#[tokio::test]
async fn files_tools_work_inside_the_workspace() {
    let env = files_env();
    let host = env.host_yes();
    std::fs::write(env.ws("hello.txt"), "hi there").unwrap();

    assert_eq!(ok(&call(&host, "ls", &["."]).await), "hello.txt");
    assert_eq!(ok(&call(&host, "read", &["hello.txt"]).await), "hi there");
    ok(&call(&host, "mkdir", &["notes/daily"]).await);
    // `write` is a rest tool: extra args are the content's commas.
    ok(&call(&host, "write", &["notes/daily/a.txt", "apples", " pears", " plums"]).await);
    assert_eq!(std::fs::read_to_string(env.ws("notes/daily/a.txt")).unwrap(), "apples, pears, plums");
    ok(&call(&host, "copy", &["notes/daily/a.txt", "b.txt"]).await);
    assert_eq!(std::fs::read_to_string(env.ws("b.txt")).unwrap(), "apples, pears, plums");
    ok(&call(&host, "rename", &["b.txt", "c.txt"]).await);
    assert!(!env.ws("b.txt").exists() && env.ws("c.txt").exists());
    assert_eq!(ok(&call(&host, "ls", &["."]).await), "c.txt\nhello.txt\nnotes/");
    ok(&call(&host, "delete", &["notes"]).await);
    assert!(!env.ws("notes").exists());

    let e = err(&call(&host, "read", &["missing.txt"]).await, ErrorKind::ToolError);
    assert!(e.contains("missing.txt"), "{e}");
    let e = err(&call(&host, "read", &["../etc/passwd"]).await, ErrorKind::ToolError);
    assert!(e.contains("not allowed"), "{e}");
}

/// The granted directories are opened once and shared by calls; a workspace replaced under
/// the same path (or removed and made again) is what the next call sees, never the old one.
#[tokio::test]
async fn a_replaced_workspace_is_what_the_next_call_sees() {
    let env = files_env();
    let host = env.host_yes();
    std::fs::write(env.ws("old.txt"), "old").unwrap();
    assert_eq!(ok(&call(&host, "read", &["old.txt"]).await), "old");
    let ws = env.ws("");
    let aside = ws.with_extension("aside");
    std::fs::rename(&ws, &aside).unwrap();
    let e = err(&call(&host, "read", &["old.txt"]).await, ErrorKind::HostError);
    assert!(e.contains("cannot open granted directory"), "{e}");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(env.ws("new.txt"), "new").unwrap();
    assert_eq!(ok(&call(&host, "ls", &["."]).await), "new.txt");
    ok(&call(&host, "write", &["made.txt", "here"]).await);
    assert_eq!(std::fs::read_to_string(env.ws("made.txt")).unwrap(), "here");
    assert!(!aside.join("made.txt").exists());
    std::fs::remove_dir_all(&aside).unwrap();
}

#[tokio::test]
async fn text_tools() {
    let env = files_env();
    let host = env.host();
    assert_eq!(ok(&call(&host, "echo", &["a", " b"]).await), "a, b");
    let counts: serde_json::Value =
        serde_json::from_str(&ok(&call(&host, "count_words", &["one two", " three"]).await)).unwrap();
    assert_eq!(counts["words"], 3);

    std::fs::write(env.ws("fruit.txt"), "we sell apples, pears (ripe)\nand nothing else\n").unwrap();
    let hits = ok(&call(&host, "search", &["apples", " pears (ripe)"]).await).to_string();
    assert_eq!(hits, "fruit.txt:1: we sell apples, pears (ripe)");

    let plan = ok(&call(
        &host,
        "split_task",
        &[
            "Launch",
            r#"[{"title": "design, review", "days": 2}, {"title": "ship", "days": 1, "owner": "ana"}]"#,
        ],
    )
    .await)
    .to_string();
    assert!(plan.contains("1. design, review — 2 d"), "{plan}");
    assert!(plan.contains("2. ship (@ana) — 1 d, done by day 3"), "{plan}");
    assert!(plan.ends_with("total: 2 subtasks, 3 days"), "{plan}");
}

#[tokio::test]
async fn invalid_json_is_refused_before_the_plugin_runs() {
    let env = files_env();
    let host = env.host();
    let e =
        err(&call(&host, "split_task", &["Launch", "[{\"title\": \"a\",}]"]).await, ErrorKind::BadArguments);
    assert!(e.contains("argument 2 (`subtasks`)") && e.contains("line 1 column"), "{e}");
    // Valid JSON of another type than the param's is refused by the host, in the words every
    // front end uses (#35); of the right type but the wrong shape, it reaches the plugin, whose
    // SDK names the argument.
    let e = err(&call(&host, "split_task", &["Launch", "{\"title\": 1}"]).await, ErrorKind::BadArguments);
    assert!(
        e.contains("argument 2 (`subtasks`) of `split_task` must be an array, got `{\"title\": 1}`"),
        "{e}"
    );
    let e = err(&call(&host, "split_task", &["Launch", "[{\"title\": 1}]"]).await, ErrorKind::ToolError);
    assert!(e.contains("`subtasks`"), "{e}");
}

#[tokio::test]
async fn unknown_tool_and_wrong_arity_explain_themselves() {
    let env = files_env();
    let host = env.host();
    let e = err(&call(&host, "raed", &["x"]).await, ErrorKind::UnknownTool);
    assert!(e.contains("did you mean: read"), "{e}");
    let e = err(&call(&host, "copy", &["only-one"]).await, ErrorKind::BadArguments);
    assert!(e.contains("takes 2 arguments but got 1") && e.contains("copy(from, to)"), "{e}");
}

#[tokio::test]
async fn danger_policy() {
    let mut env = files_env();
    std::fs::write(env.ws("victim.txt"), "x").unwrap();
    // ask + no one to ask → denied with a way out.
    let e = err(&call(&env.host(), "delete", &["victim.txt"]).await, ErrorKind::Denied);
    assert!(e.contains("--yes") && e.contains("policy"), "{e}");
    assert!(env.ws("victim.txt").exists(), "a denied call must not run");
    // deny: even a confirmed call is refused.
    env.config.danger = DangerPolicy::Deny;
    err(&call(&env.host_yes(), "delete", &["victim.txt"]).await, ErrorKind::Denied);
    assert!(env.ws("victim.txt").exists());
    // allow: runs without asking.
    env.config.danger = DangerPolicy::Allow;
    ok(&call(&env.host(), "delete", &["victim.txt"]).await);
    assert!(!env.ws("victim.txt").exists());
}

#[tokio::test]
async fn operator_can_mark_any_tool_dangerous() {
    let mut env = files_env();
    let cfg =
        toolhost_core::Config::from_str_at("[tool.ls]\ndanger = true\n", env.workspace.path(), None).unwrap();
    env.config.tools = cfg.tools;
    let e = err(&call(&env.host(), "ls", &["."]).await, ErrorKind::Denied);
    assert!(e.contains("`ls`"), "{e}");
    ok(&call(&env.host_yes(), "ls", &["."]).await);
}

#[tokio::test]
async fn output_over_the_limit_is_truncated_and_marked() {
    let mut env = files_env();
    std::fs::write(env.ws("big.txt"), "é".repeat(30_000)).unwrap();
    // The manifest says 20000 for `read`.
    let o = call(&env.host(), "read", &["big.txt"]).await;
    assert!(o.truncated);
    let data = ok(&o);
    assert!(data.ends_with("…[truncated 10000 of 30000 chars]"), "{}", &data[data.len() - 60..]);
    // The operator's per-tool limit wins over the manifest.
    let cfg =
        toolhost_core::Config::from_str_at("[tool.read]\noutput_limit = 5\n", env.workspace.path(), None)
            .unwrap();
    env.config.tools = cfg.tools;
    let o = call(&env.host(), "read", &["big.txt"]).await;
    assert_eq!(ok(&o), "ééééé\n…[truncated 29995 of 30000 chars]");
}

#[tokio::test]
async fn nothing_is_granted_by_default() {
    let env = Env::with(&[plugin_artifacts::FILES]);
    std::fs::write(env.ws("secret.txt"), "s").unwrap();
    let host = env.host();
    let e = err(&call(&host, "read", &["secret.txt"]).await, ErrorKind::ToolError);
    assert!(e.contains("not granted") && e.contains("--allow-write files"), "{e}");
    let reg = host.registry.load();
    let files = &reg.plugins()[0];
    assert!(files.grants.fs.is_empty());
    assert_eq!(files.missing[0].what, "fs workspace:rw");
}

#[tokio::test]
async fn read_only_grant_refuses_writes() {
    let mut env = Env::with(&[plugin_artifacts::FILES]);
    env.config.grant_workspace("files", FsMode::ReadOnly);
    std::fs::write(env.ws("keep.txt"), "original").unwrap();
    let host = env.host_yes();
    assert_eq!(ok(&call(&host, "read", &["keep.txt"]).await), "original");
    err(&call(&host, "write", &["keep.txt", "changed"]).await, ErrorKind::ToolError);
    err(&call(&host, "write", &["new.txt", "x"]).await, ErrorKind::ToolError);
    err(&call(&host, "rename", &["keep.txt", "moved.txt"]).await, ErrorKind::ToolError);
    err(&call(&host, "delete", &["keep.txt"]).await, ErrorKind::ToolError);
    err(&call(&host, "mkdir", &["d"]).await, ErrorKind::ToolError);
    assert_eq!(std::fs::read_to_string(env.ws("keep.txt")).unwrap(), "original");
    assert!(!env.ws("new.txt").exists() && !env.ws("d").exists());
}

/// Issue #32: without a grant, `read README.txt` (the file exists) says first that the plugin
/// has no access to that path and how to grant it — not "no such file", and never a WASI
/// errno number.
#[tokio::test]
async fn a_path_outside_every_grant_says_the_plugin_has_no_access() {
    let env = Env::with(&[plugin_artifacts::FILES]);
    std::fs::write(env.ws("README.txt"), "exists").unwrap();
    let host = env.host_yes();
    let e = err(&call(&host, "read", &["README.txt"]).await, ErrorKind::ToolError);
    assert!(e.starts_with("`files` has no access to `README.txt`: not granted"), "{e}");
    assert!(e.contains("--allow-write files"), "{e}");
    assert!(!e.contains("os error") && !e.contains("No such file"), "{e}");
    let e = err(&call(&host, "write", &["new.txt", "x"]).await, ErrorKind::ToolError);
    assert!(e.starts_with("`files` has no access to `new.txt`"), "{e}");
    assert!(!env.ws("new.txt").exists());
    let e = err(&call(&host, "ls", &["."]).await, ErrorKind::ToolError);
    assert!(e.starts_with("`files` has no access to `.`"), "{e}");

    // Granted: a file that is not there is just missing, still without the errno.
    let granted = files_env();
    let host = granted.host_yes();
    let e = err(&call(&host, "read", &["missing.txt"]).await, ErrorKind::ToolError);
    assert!(e.contains("No such file or directory") && !e.contains("os error"), "{e}");
    assert!(!e.contains("no access"), "{e}");
}

/// Issue #32: a tool with an `outputSchema` has its result parsed once, by the executor's
/// check; the front ends reuse that parse (`Outcome::structured`).
#[tokio::test]
async fn an_output_schema_result_carries_the_executors_parse() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let o = call(&env.host(), "count_words", &["one two"]).await;
    let parsed: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(o.structured.as_deref(), Some(&parsed));
    assert_eq!(parsed["words"], 2);
    // A tool without one: nothing parsed.
    assert!(call(&env.host(), "echo", &["{\"a\": 1}"]).await.structured.is_none());
}

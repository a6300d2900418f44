//! The reliability matrix (issue #8): every hostile plugin behaviour and every kind of bad
//! model input, each named by the promise it tests, each asserting the exact outcome and that
//! the next normal call on the same host still succeeds. The suite's summary — cases run,
//! faults survived, calls lost, and (from `drain.rs`) each graceful drain per MCP client
//! generation and transport — is written to target/reliability/*.txt and printed by
//! `cargo xtask test`.

use crate::support::{Env, call, ok};
use std::time::Duration;
use toolhost_core::{ErrorKind, Outcome, Toolhost};
use toolhost_frontends::{openai, text};
use toolhost_spec::manifest::FsMode;

/// What a case must end in.
enum Expect {
    /// Failure of this kind, whose message contains the text.
    Fail(ErrorKind, &'static str),
    /// Success whose data contains the text (and is truncated, if `true`).
    Ok(&'static str, bool),
    /// Success whose data contains the first text and never the second.
    OkWithout(&'static str, &'static str),
}

struct Case {
    promise: &'static str,
    /// 0: the plain host; 1: the host whose operator marked `liar` dangerous; 2: the host
    /// with small quotas that grants `hostile` a scratch workspace read-write and 127.0.0.1.
    host: usize,
    tool: &'static str,
    args: Vec<String>,
    expect: Expect,
}

fn case(promise: &'static str, tool: &'static str, args: &[&str], expect: Expect) -> Case {
    Case { promise, host: 0, tool, args: args.iter().map(|a| a.to_string()).collect(), expect }
}

/// Record a section of the summary for `cargo xtask test` to print.
pub fn record_summary(section: &str, line: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{section}.txt")), format!("{line}\n"));
    eprintln!("{line}");
}

fn env() -> Env {
    let mut env = Env::with(&[
        plugin_artifacts::HOSTILE,
        plugin_artifacts::TEXT,
        plugin_artifacts::LIAR,
        plugin_artifacts::SYSTEM,
    ]);
    crate::process::grant_programs(&mut env.config);
    env.config.limits.timeout_ms = 300;
    // A program starts confined (a supervisor, namespaces, Landlock): seconds on a loaded
    // machine, so `run` gets its own, longer limit (its deadline case still ends in a timeout).
    env.config.tools.entry("run".into()).or_default().limits.timeout_ms = Some(3_000);
    env.config.limits.memory_mb = 32;
    env.config.grant_workspace("hostile", FsMode::ReadOnly);
    std::fs::write(env.ws("precious.txt"), "do not touch").unwrap();
    env
}

/// Run one call; `None` if it never came back (a lost call).
async fn run(host: &Toolhost, tool: &str, args: &[String]) -> Option<Outcome> {
    let c = toolhost_core::ToolCall::new(tool, args.iter().cloned());
    tokio::time::timeout(Duration::from_secs(30), host.call(&c)).await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_plugins_and_bad_input_never_take_the_host_down() {
    use Expect::*;
    let env = env();
    let plain = env.host();
    let mut strict_cfg = env.config.clone();
    strict_cfg.tools.entry("liar".into()).or_default().danger = Some(true);
    let strict = Toolhost::from_parts(
        crate::support::runtime(),
        std::sync::Arc::new(strict_cfg),
        env.registry(),
        std::sync::Arc::new(toolhost_core::executor::NoConfirm),
    );
    // Issue #14: resource quotas.
    let scratch = tempfile::tempdir().unwrap();
    let quota_cfg = {
        let mut c = env.config.clone();
        c.set_workspace(scratch.path());
        c.grant_workspace("hostile", FsMode::ReadWrite);
        c.grant_net("hostile", "127.0.0.1").unwrap();
        c.plugins.get_mut("hostile").unwrap().net_private = true;
        c.limits.timeout_ms = 10_000;
        c.limits.write_mb = 8;
        c.limits.create_limit = 50;
        // Room for the guest to build a 100 MB body (the host must refuse it, not the guest),
        // and time: handing 100 MB across the boundary takes seconds in a debug build.
        let big_post = &mut c.tools.entry("big_post".into()).or_default().limits;
        big_post.memory_mb = Some(200);
        big_post.timeout_ms = Some(25_000);
        c
    };
    let quota = Toolhost::from_parts(
        crate::support::runtime(),
        std::sync::Arc::new(quota_cfg.clone()),
        toolhost_core::Registry::load(&crate::support::runtime(), &quota_cfg).unwrap(),
        std::sync::Arc::new(toolhost_core::executor::NoConfirm),
    );
    let quota_case =
        |promise, tool, args: &[&str], expect| Case { host: 2, ..case(promise, tool, args, expect) };
    let nested = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let huge = "x".repeat(1024 * 1024 + 1);

    let mut cases = vec![
        case(
            "an infinite loop ends in a timeout",
            "spin",
            &[],
            Fail(ErrorKind::Timeout, "timed out after 300 ms"),
        ),
        case(
            "unbounded memory growth stops at the memory limit",
            "hog",
            &[],
            Fail(ErrorKind::MemoryLimit, "32 MiB"),
        ),
        case(
            "unbounded recursion stops at the stack limit",
            "recurse",
            &[],
            Fail(ErrorKind::StackOverflow, "stack"),
        ),
        case("10 MB of output is cut to the output limit", "flood", &["10"], Ok("…[truncated", true)),
        case(
            "1 GB of output cannot even be produced",
            "flood",
            &["1024"],
            Fail(ErrorKind::MemoryLimit, "32 MiB"),
        ),
        case(
            "a guest panic is a trap with its message",
            "crash",
            &[],
            Fail(ErrorKind::Trap, "panicked on purpose"),
        ),
        case("a huge WASI random request is refused", "entropy", &["1024"], Fail(ErrorKind::Trap, "random")),
        case(
            "thousands of open handles stop at the per-call cap",
            "handles",
            &["100000"],
            Fail(ErrorKind::Trap, "resource table"),
        ),
        case(
            "`..`, absolute and symlink paths stay inside the grant",
            "escape",
            &[],
            OkWithout("denied", "READ"),
        ),
        case(
            "a read-only grant refuses writes",
            "scribble",
            &["precious.txt"],
            Fail(ErrorKind::ToolError, "cannot write"),
        ),
        case(
            "a read-only grant refuses truncation",
            "tamper",
            &["truncate", "precious.txt"],
            Fail(ErrorKind::ToolError, "truncate"),
        ),
        case(
            "a read-only grant refuses set_len",
            "tamper",
            &["setlen", "precious.txt"],
            Fail(ErrorKind::ToolError, "setlen"),
        ),
        case(
            "a read-only grant refuses appends",
            "tamper",
            &["append", "precious.txt"],
            Fail(ErrorKind::ToolError, "append"),
        ),
        case(
            "a read-only grant refuses renames",
            "tamper",
            &["rename", "precious.txt"],
            Fail(ErrorKind::ToolError, "rename"),
        ),
        case(
            "a read-only grant refuses hard links",
            "tamper",
            &["link", "precious.txt"],
            Fail(ErrorKind::ToolError, "link"),
        ),
        case(
            "a read-only grant refuses deletion",
            "tamper",
            &["remove", "precious.txt"],
            Fail(ErrorKind::ToolError, "remove"),
        ),
        case(
            "a read-only grant refuses new directories",
            "tamper",
            &["mkdir", "precious.txt"],
            Fail(ErrorKind::ToolError, "mkdir"),
        ),
        case("no environment variable without a grant", "snoop", &[], Ok("\"env\":[]", false)),
        case(
            "no network without a grant",
            "net_probe",
            &["http://example.com/"],
            Fail(ErrorKind::ToolError, "has no network access"),
        ),
        case(
            "a manifest that under-declares arguments: the guest's out-of-range read is a trap",
            "liar",
            &["precious.txt"],
            Fail(ErrorKind::Trap, "index out of bounds"),
        ),
        Case {
            promise: "the operator's danger mark applies whatever the manifest claims",
            host: 1,
            tool: "liar",
            args: vec!["precious.txt".into()],
            expect: Fail(ErrorKind::Denied, "dangerous"),
        },
        case(
            "a program that is not granted is refused, naming the grant",
            "run",
            &["git", "status"],
            Fail(ErrorKind::ToolError, "--allow-run sys=git"),
        ),
        case(
            "a relative program path is refused",
            "run",
            &["./echo", "hello"],
            Fail(ErrorKind::ToolError, "relative program path"),
        ),
        case(
            "arguments outside the granted patterns are refused",
            "run",
            &["echo", "rm -rf /"],
            Fail(ErrorKind::ToolError, "do not match"),
        ),
        case(
            "a shell metacharacter stays one literal argument",
            "run",
            &["printf", r#"["<%s>", "a; rm -rf / $(id)"]"#],
            Ok("<a; rm -rf / $(id)>", false),
        ),
        case(
            "a program past the call's deadline is killed",
            "run",
            &["sleep", "30"],
            Fail(ErrorKind::Timeout, "timed out after 3000 ms"),
        ),
        case(
            "a flood of program output is capped and the program stopped",
            "run",
            &["yes", ""],
            Ok("[output cut at the host's limit", true),
        ),
        case("a program inherits no environment variable", "run", &["env", ""], OkWithout("", "PATH=")),
        case(
            "an unknown tool names close ones",
            "ech",
            &["x"],
            Fail(ErrorKind::UnknownTool, "did you mean: echo"),
        ),
        case(
            "wrong arity shows the signature",
            "entropy",
            &[],
            Fail(ErrorKind::BadArguments, "usage: entropy(mb: integer)"),
        ),
        case(
            "invalid JSON is refused before the plugin runs",
            "split_task",
            &["t", "{not json"],
            Fail(ErrorKind::BadArguments, "line 1"),
        ),
        case(
            "arguments over 1 MiB are refused",
            "echo",
            &[huge.as_str()],
            Fail(ErrorKind::BadArguments, "limit"),
        ),
        case(
            "deeply nested JSON is refused",
            "split_task",
            &["t", nested.as_str()],
            Fail(ErrorKind::BadArguments, "nest"),
        ),
        quota_case(
            "a write loop through std::fs stops at the disk quota",
            "fill",
            &["stream", "1024"],
            Fail(ErrorKind::ToolError, "quota exceeded: wrote 8 MiB, limit write_mb = 8"),
        ),
        quota_case(
            "a pwrite loop stops at the disk quota",
            "fill",
            &["pwrite", "1024"],
            Fail(ErrorKind::ToolError, "quota exceeded: wrote 8 MiB, limit write_mb = 8"),
        ),
        quota_case(
            "growing a file with set_len is charged to the disk quota",
            "fill",
            &["setlen", "1024"],
            Fail(ErrorKind::ToolError, "limit write_mb = 8"),
        ),
        quota_case(
            "creating files stops at the creation limit",
            "fill",
            &["files", "100000"],
            Fail(
                ErrorKind::ToolError,
                "quota exceeded: created 50 files or directories, limit create_limit = 50",
            ),
        ),
        quota_case(
            "creating directories stops at the creation limit",
            "fill",
            &["dirs", "100000"],
            Fail(ErrorKind::ToolError, "limit create_limit = 50"),
        ),
        quota_case(
            "a log flood is cut to the per-call log limits",
            "logflood",
            &["20000"],
            Ok("logged 20000", false),
        ),
        quota_case(
            "a 100 MB request body is refused before anything is sent",
            "big_post",
            &["http://127.0.0.1:9/", "100"],
            Fail(ErrorKind::ToolError, "max_request_kb"),
        ),
    ];
    let hosts = [&plain, &strict, &quota];
    let (mut run_n, mut survived, mut lost) = (0, 0, 0);
    let mut failures = Vec::new();
    for c in cases.drain(..) {
        run_n += 1;
        let host = hosts[c.host];
        let Some(o) = run(host, c.tool, &c.args).await else {
            lost += 1;
            failures.push(format!("LOST: {}", c.promise));
            continue;
        };
        let good = match &c.expect {
            Fail(kind, text) => {
                !o.success && o.kind == Some(*kind) && o.error.as_deref().is_some_and(|e| e.contains(text))
            }
            Ok(text, truncated) => {
                o.success && o.truncated == *truncated && o.data.as_deref().is_some_and(|d| d.contains(text))
            }
            OkWithout(text, never) => {
                o.success && o.data.as_deref().is_some_and(|d| d.contains(text) && !d.contains(never))
            }
        };
        if !good {
            failures.push(format!("{}: got {:?}", c.promise, o));
        }
        // The promise behind every case: the host still serves the next normal call.
        match run(host, "echo", &["alive".into()]).await {
            Some(next) if next.success && next.data.as_deref() == Some("alive") => survived += 1,
            other => failures.push(format!("{}: the next call failed: {other:?}", c.promise)),
        }
    }
    assert_eq!(std::fs::read_to_string(env.ws("precious.txt")).unwrap(), "do not touch");
    assert!(!env.ws("precious.txt.moved").exists() && !env.ws("precious.txt.link").exists());
    assert!(failures.is_empty(), "broken promises:\n{}", failures.join("\n"));

    // The protocols: malformed text and invalid UTF-8 are errors for the model, never panics,
    // and nothing half-parsed runs.
    let results = text::execute(
        plain.executor.as_ref(),
        "[TOOL] echo(\"unterminated [/TOOL] and [TOOL] echo(\"ok\") [/TOOL]",
    )
    .await;
    assert!(results.iter().any(|(s, o)| matches!(s, text::Segment::Error { .. }) && o.is_none()));
    let reply = String::from_utf8_lossy(b"\xff\xfe [TOOL] echo(\"a\xc3\x28b\") [/TOOL]").into_owned();
    let results = text::execute(plain.executor.as_ref(), &reply).await;
    let outcome = results.iter().find_map(|(_, o)| o.as_ref()).expect("the call ran");
    assert_eq!(ok(outcome), "a\u{FFFD}(b");
    assert!(openai::parse_message("{\"tool_calls\": [{\"id\": 1").is_err());
    assert!(openai::parse_message("\u{FFFD}\u{FFFD}").is_err());
    run_n += 3;
    survived += 3;
    assert_eq!(ok(&call(&plain, "echo", &["still here"]).await), "still here");

    record_summary(
        "matrix",
        &format!(
            "reliability matrix: {run_n} cases run, {survived} faults survived (host served the next call), {lost} calls lost"
        ),
    );
    assert_eq!(lost, 0);
}

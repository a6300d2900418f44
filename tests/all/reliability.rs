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
    let dir = crate::support::root().join("target/reliability");
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
        c.plugins.get_mut("hostile").unwrap().net.private = true;
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
    // Issue #61: hostile scripts, in code mode's own sandbox, calling the hostile plugin.
    let script_cfg = {
        let mut c = env.config.clone();
        c.code_mode = toolhost_core::script::CodeModeSettings {
            enabled: true,
            max_calls: 20,
            timeout_ms: 1_500,
            memory_mb: 32,
            ..Default::default()
        };
        c
    };
    let scripts = Toolhost::from_parts(
        crate::support::runtime(),
        std::sync::Arc::new(script_cfg.clone()),
        toolhost_core::Registry::load(&crate::support::runtime(), &script_cfg).unwrap(),
        std::sync::Arc::new(toolhost_core::executor::NoConfirm),
    );
    let script_case =
        |promise, code: &str, expect| Case { host: 3, ..case(promise, "run_script", &[code], expect) };
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
        script_case(
            "a script's syntax error names its line and column",
            "\n  return (1 +",
            Fail(ErrorKind::ToolError, "script line 3, column 1: SyntaxError"),
        ),
        script_case(
            "a script's busy loop stops at its own time limit",
            "for (;;) {}",
            Fail(ErrorKind::Timeout, "1500 ms ([code_mode] timeout_ms)"),
        ),
        script_case(
            "a script's 1 GiB allocation stops at its own memory limit",
            "const b = new ArrayBuffer(1 << 30); return b.byteLength",
            Fail(ErrorKind::MemoryLimit, "32 MiB ([code_mode] memory_mb)"),
        ),
        script_case(
            "a script's 10,000 inner calls stop at max_calls",
            "for (let i = 0; i < 10000; i++) await tools.echo('x')",
            Fail(ErrorKind::ToolError, "at most 20 tool calls ([code_mode] max_calls)"),
        ),
        script_case(
            "a tool that crashes inside a script is a ToolError the script can catch",
            "try { await tools.crash() } catch (e) { return e.kind + ' then ' + await tools.echo('on') }",
            Ok("trap then on", false),
        ),
        script_case(
            "a tool's infinite loop inside a script ends in that tool's timeout",
            "try { await tools.spin() } catch (e) { return e.kind }",
            Ok("timeout", false),
        ),
        script_case(
            "a script calling an unknown tool gets the tool's name in its error",
            "await tools.no_such_tool()",
            Fail(ErrorKind::ToolError, "unknown tool `no_such_tool`"),
        ),
        script_case(
            "a script returning a cyclic object gets a clear error",
            "const a = []; a.push(a); return a",
            Fail(ErrorKind::ToolError, "the script's result is not JSON"),
        ),
        script_case(
            "a script cannot import modules",
            "const fs = await import('node:fs'); return 1",
            Fail(ErrorKind::ToolError, "cannot import modules"),
        ),
        script_case(
            "a script's eval reaches nothing of the host's",
            "return eval('[typeof process, typeof require, typeof host, typeof fetch].join()')",
            Ok("undefined,undefined,undefined,undefined", false),
        ),
        script_case(
            "a script cannot run a script",
            "return await tools.run_script({code: 'return 1'})",
            Fail(ErrorKind::ToolError, "a script cannot run a script"),
        ),
    ];
    let hosts = [&plain, &strict, &quota, &scripts];
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
    // Grant refusals (#31): each row checks the outcome, how many questions the human was
    // asked, that nothing was granted, and (like every case) that the host serves the next call.
    let (grants_host, grants_cfg) = grants_host(&env);
    for (promise, row) in grant_rows(&grants_host).await {
        run_n += 1;
        if let Err(e) = row {
            failures.push(format!("{promise}: {e}"));
        }
        match run(&grants_host.0, "echo", &["alive".into()]).await {
            Some(next) if next.success && next.data.as_deref() == Some("alive") => survived += 1,
            other => failures.push(format!("{promise}: the next call failed: {other:?}")),
        }
    }
    assert!(!grants_cfg.grants_file.exists(), "no grant row wrote a grant");

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

/// A human who answers every grant question "deny", and counts them.
#[derive(Default)]
struct Denier(std::sync::atomic::AtomicUsize);

impl toolhost_core::executor::AskGrant for Denier {
    fn ask<'a>(
        &'a self,
        _: &'a toolhost_core::executor::GrantRequest,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = toolhost_core::executor::GrantAnswer> + Send + 'a>>
    {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { toolhost_core::executor::GrantAnswer::Deny })
    }

    fn decided_by(&self) -> toolhost_core::executor::DecidedBy {
        toolhost_core::executor::DecidedBy::FrontEnd
    }
}

/// The host of the grant rows: `hostile` (which requests any host) and `sys` (which requests
/// programs only through `*`) may be asked about (`on_missing = "ask"`, private addresses
/// allowed so that loopback hosts are refused only for want of a grant), nothing granted; the
/// grants file in a scratch directory. The human is a [`Denier`].
fn grants_host(
    env: &Env,
) -> ((Toolhost, std::sync::Arc<Denier>, tempfile::TempDir), toolhost_core::settings::Config) {
    let scratch = tempfile::tempdir().unwrap();
    let mut c = env.config.clone();
    c.grants_file = scratch.path().join(toolhost_core::settings::grants::GRANTS_FILE);
    for p in ["hostile", "sys"] {
        let p = c.plugins.entry(p.into()).or_default();
        p.on_missing = Some(toolhost_core::settings::OnMissing::Ask);
        p.net.private = true;
    }
    let host = Toolhost::from_parts(
        crate::support::runtime(),
        std::sync::Arc::new(c.clone()),
        toolhost_core::Registry::load(&crate::support::runtime(), &c).unwrap(),
        std::sync::Arc::new(toolhost_core::executor::NoConfirm),
    );
    let denier = std::sync::Arc::new(Denier::default());
    host.executor.attach_grant_asker(denier.clone());
    ((host, denier, scratch), c)
}

/// The grant rows of the matrix, each `(promise, Ok or what broke)`.
async fn grant_rows(
    (host, denier, _): &(Toolhost, std::sync::Arc<Denier>, tempfile::TempDir),
) -> Vec<(&'static str, Result<(), String>)> {
    use std::sync::atomic::Ordering::SeqCst;
    use toolhost_frontends::mcp::{Approvals, GRANT_KEY, Interrupt, MrtrConfirm};
    let asked = || denier.0.load(SeqCst);
    let call = |tool: &'static str, args: &[&str]| {
        let c = toolhost_core::ToolCall::new(tool, args.iter().map(|a| a.to_string()));
        async move {
            tokio::time::timeout(Duration::from_secs(30), host.call(&c)).await.map_err(|_| "lost".to_string())
        }
    };
    let refused = |o: &Outcome, text: &str| -> Result<(), String> {
        if !o.success && o.error.as_deref().is_some_and(|e| e.contains(text)) {
            Ok(())
        } else {
            Err(format!("expected a refusal naming {text:?}, got {o:?}"))
        }
    };
    let questions = |before: usize, n: usize| -> Result<(), String> {
        let got = asked() - before;
        if got == n { Ok(()) } else { Err(format!("{got} questions asked, expected {n}")) }
    };
    let mut rows = Vec::new();

    let before = asked();
    let row = async {
        let o = call("run", &["git", "status"]).await?;
        refused(&o, "--allow-run sys=git")?;
        questions(before, 0)
    };
    rows.push((
        "a grant the manifest does not request (by name) causes no question and is refused",
        row.await,
    ));

    let before = asked();
    let row = async {
        let o = call("net_probe", &["http://127.0.0.1:9/"]).await?;
        refused(&o, "denied plugin `hostile` net 127.0.0.1 for this session")?;
        questions(before, 1)
    };
    rows.push(("a denied grant refuses the call", row.await));

    let before = asked();
    let row = async {
        let o = call("net_probe", &["http://127.0.0.1:9/"]).await?;
        refused(&o, "denied plugin `hostile` net 127.0.0.1 for this session")?;
        questions(before, 0)
    };
    rows.push(("a denied grant is not asked about again in the session", row.await));

    let before = asked();
    let row = async {
        let reply = "[TOOL] net_probe(\"http://127.0.0.2:9/?answer=always\") [/TOOL]\nalways\no\nallow: true";
        let results = text::execute(host.executor.as_ref(), reply).await;
        let o = results.iter().find_map(|(_, o)| o.clone()).ok_or("the call did not run")?;
        refused(&o, "denied plugin `hostile` net 127.0.0.2")?;
        questions(before, 1)
    };
    rows.push(("a model's reply or arguments cannot answer a grant question: the human is asked", row.await));

    // The 2026-07-28 sealed answer, driven through the MCP front end's confirmation.
    let approvals = Approvals::new(Duration::from_secs(60)).unwrap();
    let mrtr = |state: Option<String>| MrtrConfirm {
        approvals: &approvals,
        can_elicit: true,
        request_state: state,
        input_responses: Some(
            std::iter::once((
                GRANT_KEY.to_string(),
                serde_json::json!({"action": "accept", "content": {"allow": true, "always": false}}),
            ))
            .collect(),
        ),
        interrupt: Default::default(),
        used: Default::default(),
    };
    let probe = |url: &str| toolhost_core::ToolCall::new("net_probe", [url.to_string()]);
    let sealed = |url: &'static str| {
        let ask = MrtrConfirm { input_responses: None, ..mrtr(None) };
        let c = probe(url);
        async move {
            let o = host.executor.call_with(&c, &ask).await;
            match ask.take_interrupt() {
                Some(Interrupt::InputRequired(r)) => {
                    r.request_state.ok_or_else(|| "no requestState".to_string())
                }
                other => Err(format!("no question: {other:?} {o:?}")),
            }
        }
    };
    let answered = |state: String, url: &'static str, why: &'static str| {
        let c = probe(url);
        let confirm = mrtr(Some(state));
        async move {
            let o = host.executor.call_with(&c, &confirm).await;
            match confirm.take_interrupt() {
                Some(Interrupt::Invalid(e)) if e.to_string().contains(why) && !o.success => Ok(()),
                other => Err(format!("expected a refusal naming {why:?}: {other:?} {o:?}")),
            }
        }
    };
    let row = async {
        let state = sealed("http://127.0.0.3:9/").await?;
        let c = if &state[..1] == "a" { "b" } else { "a" };
        answered(format!("{c}{}", &state[1..]), "http://127.0.0.3:9/", "not issued").await
    };
    rows.push(("a forged sealed grant answer grants nothing", row.await));
    let row = async {
        let state = sealed("http://127.0.0.4:9/").await?;
        let c = probe("http://127.0.0.4:9/");
        let first = mrtr(Some(state.clone()));
        let _ = host.executor.call_with(&c, &first).await;
        if let Some(i) = first.take_interrupt() {
            return Err(format!("the genuine answer was refused: {i:?}"));
        }
        answered(state, "http://127.0.0.4:9/", "already used").await
    };
    rows.push(("a replayed sealed grant answer grants nothing", row.await));
    let row = async {
        let short = Approvals::new(Duration::from_millis(1)).unwrap();
        let ask = MrtrConfirm { approvals: &short, input_responses: None, ..mrtr(None) };
        let c = probe("http://127.0.0.5:9/");
        let _ = host.executor.call_with(&c, &ask).await;
        let Some(Interrupt::InputRequired(r)) = ask.take_interrupt() else {
            return Err("no question".into());
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let late = MrtrConfirm { approvals: &short, ..mrtr(r.request_state) };
        let o = host.executor.call_with(&c, &late).await;
        match late.take_interrupt() {
            Some(Interrupt::Invalid(e)) if e.to_string().contains("expired") && !o.success => Ok(()),
            other => Err(format!("expected `expired`: {other:?} {o:?}")),
        }
    };
    rows.push(("an expired sealed grant answer grants nothing", row.await));
    rows
}

/// Issues #32 and #57: under every `[audit] fsync` setting a call's audit line is written
/// before its answer is sent, so killing the server outright (`SIGKILL`: no drain, no sync at
/// exit) after N answered calls leaves N lines.
#[test]
fn after_n_answered_calls_a_sigkill_leaves_n_audit_lines() {
    // No setting (the default, "interval"), then each other choice.
    for setting in ["", "fsync = \"always\"\n", "fsync = \"never\"\n"] {
        // The deployment's config ends in its `[audit]` table: the setting lands there.
        let d = crate::service::Deployment::new(&[plugin_artifacts::TEXT], setting);
        let mut session = d.stdio_session();
        const N: usize = 7;
        for i in 0..N {
            session.call(10 + i as u64, "echo", serde_json::json!({"text": format!("call {i}")}));
        }
        let mut child = session.child;
        child.kill().unwrap();
        let _ = child.wait();
        let audit = d.audit();
        assert_eq!(audit.len(), N, "{setting:?}: {audit:?}");
        for (i, line) in audit.iter().enumerate() {
            assert_eq!(line["args"], serde_json::json!([format!("call {i}")]), "{setting:?}");
        }
    }
}

/// Issue #57: the default `[audit] fsync = "interval"` syncs the trail in the background soon
/// after calls (`toolhost_audit_syncs_total` grows without a call waiting for it), and not
/// while nothing is written; `"always"` syncs once per sequential call; `"never"` not at all.
#[test]
fn the_audit_trail_is_synced_as_its_fsync_setting_says() {
    use crate::service::{Deployed, Deployment, TOKEN};
    use crate::support::mcp_http::{echo_in, open_session_as};
    const SYNCS: &str = "toolhost_audit_syncs_total";
    let calls = |server: &crate::support::Server, n: usize| {
        let auth = format!("Authorization: Bearer {TOKEN}\r\n");
        let session = open_session_as(&server.url, &auth, "2025-06-18", serde_json::json!({}), "sync");
        for _ in 0..n {
            echo_in(server.addr, Some(TOKEN), &session);
        }
    };
    // The default, with a short interval for the test.
    let d = Deployment::new(&[plugin_artifacts::TEXT], "fsync_interval_ms = 50\n");
    let server = d.serve_http();
    assert!(server.metrics().has(SYNCS), "the sync count is exported");
    assert_eq!(server.metrics().value(SYNCS, &[]), 0.0, "nothing written, nothing synced");
    calls(&server, 3);
    crate::support::poll(10, "a background sync after the calls", || {
        (server.metrics().value(SYNCS, &[]) >= 1.0).then_some(())
    });
    // A sync may have come between two calls: let the last lines' sync come too.
    std::thread::sleep(Duration::from_millis(300));
    let synced = server.metrics().value(SYNCS, &[]);
    assert!((1.0..=3.0).contains(&synced), "at most one sync per call: {synced}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.metrics().value(SYNCS, &[]), synced, "no line written since: no sync");
    assert_eq!(d.audit().len(), 3);

    let d = Deployment::new(&[plugin_artifacts::TEXT], "fsync = \"always\"\n");
    let server = d.serve_http();
    calls(&server, 4);
    assert_eq!(server.metrics().value(SYNCS, &[]), 4.0, "one sync per sequential call, before its answer");

    let d = Deployment::new(&[plugin_artifacts::TEXT], "fsync = \"never\"\n");
    let server = d.serve_http();
    calls(&server, 4);
    std::thread::sleep(Duration::from_millis(300));
    let m = server.metrics();
    assert!(m.has(SYNCS));
    assert_eq!(m.value(SYNCS, &[]), 0.0, "never synced by toolhost while it runs");
    assert_eq!(d.audit().len(), 4);
}

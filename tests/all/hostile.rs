//! The `hostile` plugin: each misbehaviour ends that call with the right kind of error, and
//! the next normal call on the same host succeeds.

use crate::support::{Env, call, err, ok};
use toolhost_core::ErrorKind;
use toolhost_spec::manifest::FsMode;

fn hostile_env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::HOSTILE, plugin_artifacts::TEXT]);
    env.config.limits.timeout_ms = 300;
    env.config.limits.memory_mb = 32;
    env.config.grant_workspace("hostile", FsMode::ReadWrite);
    env
}

/// The host still serves a normal call.
async fn still_serving(host: &toolhost_core::Toolhost) {
    assert_eq!(ok(&call(host, "echo", &["alive"]).await), "alive");
}

#[tokio::test]
async fn infinite_loop_times_out() {
    let env = hostile_env();
    let host = env.host();
    let e = err(&call(&host, "spin", &[]).await, ErrorKind::Timeout);
    assert!(e.contains("300 ms"), "{e}");
    still_serving(&host).await;
}

#[tokio::test]
async fn unbounded_allocation_hits_the_memory_limit() {
    let env = hostile_env();
    let host = env.host();
    let e = err(&call(&host, "hog", &[]).await, ErrorKind::MemoryLimit);
    assert!(e.contains("32 MiB"), "{e}");
    still_serving(&host).await;
}

#[tokio::test]
async fn unbounded_recursion_overflows_the_stack() {
    let env = hostile_env();
    let host = env.host();
    err(&call(&host, "recurse", &[]).await, ErrorKind::StackOverflow);
    still_serving(&host).await;
}

#[tokio::test]
async fn ten_megabytes_of_output_are_truncated() {
    let env = hostile_env();
    let host = env.host();
    let o = call(&host, "flood", &["10"]).await;
    assert!(o.truncated);
    let data = ok(&o);
    assert!(data.ends_with(&format!(
        "…[truncated {} of {} chars]",
        10 * 1024 * 1024 - 10_000,
        10 * 1024 * 1024
    )));
    assert!(data.len() < 10_100);
    // Output larger than the memory limit cannot even be produced.
    err(&call(&host, "flood", &["100"]).await, ErrorKind::MemoryLimit);
    still_serving(&host).await;
}

#[tokio::test]
async fn guest_panic_is_a_trap_with_its_message() {
    let env = hostile_env();
    let host = env.host();
    let e = err(&call(&host, "crash", &[]).await, ErrorKind::Trap);
    assert!(e.contains("panicked on purpose"), "{e}");
    still_serving(&host).await;
}

#[tokio::test]
async fn paths_outside_the_grant_are_unreachable() {
    let env = hostile_env();
    // A secret next to the workspace, and a symlink inside the workspace pointing at it.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    std::fs::write(env.workspace.path().parent().unwrap().join("secret.txt"), "top secret").ok();
    std::os::unix::fs::symlink(outside.path(), env.ws("link-out")).unwrap();
    let host = env.host();
    let report: serde_json::Value = serde_json::from_str(&ok(&call(&host, "escape", &[]).await)).unwrap();
    for (target, outcome) in report.as_object().unwrap() {
        let outcome = outcome.as_str().unwrap();
        // The guest's `/` resolves to the workspace preopen itself: listing it shows the
        // workspace, nothing of the host.
        if target == "/" && outcome == "LISTED link-out" {
            continue;
        }
        assert!(outcome.starts_with("denied"), "{target} was reachable: {outcome}");
    }
    assert!(
        !report["link-out/secret.txt"].as_str().unwrap().contains("READ"),
        "symlink followed out of the grant"
    );
    assert_eq!(report.as_object().unwrap().len(), 6);
}

#[tokio::test]
async fn no_environment_or_arguments_leak_in() {
    let env = hostile_env();
    let host = env.host();
    assert!(std::env::vars().count() > 0, "the test process has an environment");
    let seen: serde_json::Value = serde_json::from_str(&ok(&call(&host, "snoop", &[]).await)).unwrap();
    assert_eq!(seen["env"], serde_json::json!([]));
    assert_eq!(seen["args"], serde_json::json!([]));
}

/// On a single-threaded runtime, two guests spinning until their timeout do not stop a third
/// call from being served meanwhile: running guests yield to the runtime every few ticks.
#[tokio::test(flavor = "current_thread")]
async fn busy_guests_do_not_starve_other_calls() {
    let mut env = hostile_env();
    env.config.limits.timeout_ms = 3000;
    let host = std::sync::Arc::new(env.host());
    // Both plugins linked first (a plugin's code is linked at its first call, off this
    // thread): spinners still linking would spin nothing while the quick call is served.
    ok(&call(&host, "snoop", &[]).await);
    still_serving(&host).await;
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let h = host.clone();
            tokio::spawn(
                async move { h.call(&toolhost_core::ToolCall::new("spin", Vec::<String>::new())).await },
            )
        })
        .collect();
    tokio::task::yield_now().await;
    still_serving(&host).await;
    assert!(spinners.iter().all(|s| !s.is_finished()), "the quick call had to wait for the spinners");
    for s in spinners {
        err(&s.await.unwrap(), ErrorKind::Timeout);
    }
}

/// Nothing one call leaves in its instance is visible to the next: not a static counter, not
/// static memory, not heap pages grown past the pool slot's resident part — in sequence (the
/// same pool slot reused) and from concurrent calls.
#[tokio::test]
async fn nothing_a_call_leaves_behind_reaches_the_next() {
    let env = hostile_env();
    let host = env.host();
    let clean = serde_json::json!({"calls_before": 0, "statics_dirty": 0, "heap_dirty": 0});
    for _ in 0..5 {
        let seen: serde_json::Value = serde_json::from_str(&ok(&call(&host, "remember", &[]).await)).unwrap();
        assert_eq!(seen, clean);
    }
    let r = || call(&host, "remember", &[]);
    let (a, b, c, d) = tokio::join!(r(), r(), r(), r());
    for o in [a, b, c, d] {
        let seen: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
        assert_eq!(seen, clean);
    }
}

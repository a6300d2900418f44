//! Resource limits (issue #14): the disk quota of writable grants, the log cap, request bodies
//! and the transfer budget, each plugin's fair share of the call slots, and the cost of each
//! call in its outcome. The concurrent cases end with a summary line beside the matrix's.

use crate::reliability::record_summary;
use crate::support::http;
use crate::support::{Env, call, err, ok};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::{ErrorKind, Outcome, ToolCall, Toolhost};
use toolhost_spec::manifest::FsMode;

const MIB: u64 = 1024 * 1024;

fn quota_env(write_mb: u64) -> Env {
    let mut env = Env::with(&[plugin_artifacts::HOSTILE, plugin_artifacts::TEXT]);
    env.config.limits.timeout_ms = 10_000;
    env.config.limits.write_mb = write_mb;
    env.config.limits.create_limit = 20;
    env.config.grant_workspace("hostile", FsMode::ReadWrite);
    env
}

/// The guest's own part of an error (before the host's note).
fn guest_part(e: &str) -> &str {
    e.split("\n[note:").next().unwrap_or(e)
}

fn usage(o: &Outcome) -> &toolhost_core::usage::Usage {
    o.usage.as_ref().unwrap_or_else(|| panic!("no usage in {o:?}"))
}

#[tokio::test]
async fn the_write_quota_stops_writes_exactly_and_names_the_limit() {
    let env = quota_env(4);
    let host = env.host();
    for how in ["stream", "pwrite"] {
        let o = call(&host, "fill", &[how, "64"]).await;
        let e = err(&o, ErrorKind::ToolError);
        assert!(e.contains("quota exceeded: wrote 4 MiB, limit write_mb = 4"), "{how}: {e}");
        assert!(e.contains("[plugin.hostile] or [tool.fill] write_mb"), "{how}: says how to raise it: {e}");
        if how == "pwrite" {
            // `descriptor.write` returns `error-code.quota` itself; through output streams the
            // guest's libc (wasi-libc) reports any stream error as a plain EIO.
            assert!(guest_part(&e).contains("quota"), "{how}: the guest saw a quota error: {e}");
        }
        assert_eq!(std::fs::metadata(env.ws("fill.bin")).unwrap().len(), 4 * MIB, "{how}: not a byte more");
        assert_eq!(usage(&o).written_bytes, 4 * MIB);
        assert!(usage(&o).quota.as_deref().unwrap().contains("write_mb = 4"));
        std::fs::remove_file(env.ws("fill.bin")).unwrap();
    }
    // Growth by set_len is charged like writing: nothing happens beyond the quota.
    let e = err(&call(&host, "fill", &["setlen", "64"]).await, ErrorKind::ToolError);
    assert!(e.contains("limit write_mb = 4"), "{e}");
    assert_eq!(std::fs::metadata(env.ws("fill.bin")).unwrap().len(), 0);
    // Under the quota: success, and the cost is reported, not an error.
    let o = call(&host, "fill", &["stream", "3"]).await;
    ok(&o);
    assert_eq!((usage(&o).written_bytes, usage(&o).quota.as_ref()), (3 * MIB, None));
    // Each call has its own quota.
    ok(&call(&host, "fill", &["pwrite", "3"]).await);
    assert_eq!(ok(&call(&host, "echo", &["alive"]).await), "alive");
}

#[tokio::test]
async fn creating_entries_stops_at_the_creation_limit() {
    let env = quota_env(4);
    let host = env.host();
    for how in ["files", "dirs"] {
        let o = call(&host, "fill", &[how, "1000"]).await;
        let e = err(&o, ErrorKind::ToolError);
        assert!(
            e.contains("quota exceeded: created 20 files or directories, limit create_limit = 20"),
            "{e}"
        );
        let made = std::fs::read_dir(env.workspace.path())
            .unwrap()
            .filter(|d| d.as_ref().unwrap().file_name().to_string_lossy().starts_with(&format!("{how}-")))
            .count();
        assert_eq!(made, 20, "{how}");
        assert_eq!(usage(&o).created, 20);
    }
}

#[test]
fn quota_and_log_limits_follow_the_config_precedence() {
    let c = toolhost_core::Config::from_str_at(
        r#"
        [limits]
        write_mb = 10
        log_lines = 50
        plugin_concurrency = 3
        [plugin.hostile]
        write_mb = 6
        create_limit = 7
        concurrency = 1
        [tool.fill]
        write_mb = 2
        [net]
        max_request_kb = 64
        max_transfer_mb = 3
        "#,
        std::path::Path::new("/base"),
        None,
    )
    .unwrap();
    let l = c.limits_for("hostile", "fill", None);
    assert_eq!((l.write_mb, l.create_limit, l.log_lines), (2, 7, 50));
    assert_eq!(c.limits_for("hostile", "doze", None).write_mb, 6);
    assert_eq!(c.limits_for("text", "echo", None).write_mb, 10);
    assert_eq!((c.concurrency_for("hostile"), c.concurrency_for("text")), (1, 3));
    assert_eq!((c.net.max_request_bytes, c.net.max_transfer_bytes), (64 * 1024, 3 * MIB));
    let e =
        toolhost_core::Config::from_str_at("[plugin.x]\nconcurrency = 64", std::path::Path::new("/"), None)
            .unwrap_err()
            .to_string();
    assert!(e.contains("plugin.x.concurrency = 64 is outside 1..=32"), "{e}");
    let d = toolhost_core::Config::from_str_at("", std::path::Path::new("/"), None).unwrap();
    assert!(d.plugin_concurrency < d.concurrency, "by default one plugin cannot take every slot");
}

#[tokio::test]
async fn the_log_import_is_capped_per_call_and_rate_limited_per_plugin() {
    let env = quota_env(4);
    let host = env.host();
    let o = call(&host, "logflood", &["5000"]).await;
    assert_eq!(ok(&o), "logged 5000 lines");
    // 64 KiB of 1000-byte lines: 65 lines kept, the rest counted.
    assert_eq!((usage(&o).log_lines, usage(&o).log_dropped), (65, 5000 - 65));

    let mut env = quota_env(4);
    env.config.log_rate = 1;
    let host = env.host();
    let first = call(&host, "logflood", &["100"]).await;
    assert_eq!(usage(&first).log_lines, 10, "a burst of ten seconds' worth");
    let second = call(&host, "logflood", &["100"]).await;
    assert!(usage(&second).log_lines <= 2, "the plugin's rate holds across calls: {:?}", usage(&second));
    // Another plugin has its own budget.
    ok(&call(&host, "echo", &["alive"]).await);
}

/// A server on 127.0.0.1 answering every request with `body_mb` MiB, counting requests.
fn big_server(body_mb: u64) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = seen.clone();
    let port = http::listen(move |_, out| {
        count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        http::reply(out, "200 OK", "", &vec![b'y'; (body_mb * MIB) as usize]);
    });
    (port, seen)
}

fn net_env() -> Env {
    let mut env = quota_env(4);
    env.config.grant_net("hostile", "127.0.0.1").unwrap();
    env.config.plugins.get_mut("hostile").unwrap().net.private = true;
    env.config.tools.entry("big_post".into()).or_default().limits.memory_mb = Some(64);
    env
}

#[tokio::test]
async fn request_bodies_and_transfers_are_bounded() {
    let (port, seen) = big_server(3);
    let url = format!("http://127.0.0.1:{port}/");
    let mut env = net_env();
    env.config.net.max_transfer_bytes = MIB;
    let host = env.host();
    // Default cap 1 MiB: a 2 MiB body is refused, and the server sees nothing.
    let e = err(&call(&host, "big_post", &[url.as_str(), "2"]).await, ErrorKind::ToolError);
    assert!(e.contains("[net] max_request_kb = 1024") && e.contains("nothing was sent"), "{e}");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 0);
    // A 3 MiB response is cut at what is left of the call's 1 MiB transfer budget.
    let o = call(&host, "net_probe", &[url.as_str()]).await;
    let d = ok(&o);
    assert!(d.contains(&format!("bytes {} truncated true", MIB)), "{d}");
    assert_eq!((usage(&o).http_requests, usage(&o).http_received_bytes), (1, MIB));
    // Raised by the operator, the same body goes out.
    let mut env = net_env();
    env.config.net.max_request_bytes = 4 * MIB;
    let host = env.host();
    let o = call(&host, "big_post", &[url.as_str(), "2"]).await;
    assert_eq!(ok(&o), "status 200");
    assert_eq!(usage(&o).http_sent_bytes, 2 * MIB);
}

#[tokio::test]
async fn every_call_reports_what_it_cost() {
    let mut env = quota_env(4);
    env.config.limits.timeout_ms = 300;
    let host = env.host();
    let o = call(&host, "echo", &["x"]).await;
    let u = usage(&o);
    assert!(u.wall_us > 0 && u.peak_memory_kb > 0, "{u:?}");
    assert_eq!(
        serde_json::to_value(&o).unwrap()["usage"]["peak_memory_kb"],
        serde_json::json!(u.peak_memory_kb),
        "shown by `call --json`"
    );
    assert!(!o.model_json().contains("usage"), "not shown to the model");
    // A spinning guest burns CPU; a sleeping one does not.
    let spin = call(&host, "spin", &[]).await;
    let su = usage(&spin);
    assert!(su.busy_us >= 50_000 && su.busy_us <= su.wall_us + 10_000, "{su:?}");
    let nap = call(&host, "doze", &["250"]).await;
    let nu = usage(&nap);
    assert!(nu.wall_us >= 250_000 && nu.busy_us < 100_000, "{nu:?}");
}

async fn timed(host: &Toolhost, tool: &str, args: &[&str]) -> (Duration, Outcome) {
    let t = Instant::now();
    let o = host.call(&ToolCall::new(tool, args.iter().copied())).await;
    (t.elapsed(), o)
}

/// p99 of `n` sequential `echo` calls.
async fn echo_p99(host: &Toolhost, n: usize) -> Duration {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let (d, o) = timed(host, "echo", &["ping"]).await;
        assert_eq!(ok(&o), "ping");
        v.push(d);
    }
    v.sort();
    v[(n * 99 / 100).min(n - 1)]
}

fn share_env(plugin_concurrency: u32) -> Env {
    let mut env = Env::with(&[plugin_artifacts::HOSTILE, plugin_artifacts::TEXT]);
    env.config.concurrency = 4;
    env.config.plugin_concurrency = plugin_concurrency;
    env.config.limits.timeout_ms = 3000;
    env
}

/// Start `n` `doze(ms)` calls on `hostile` and give them time to take their slots. A first
/// `doze` is made before them: a plugin's code is linked at its first call, before the call
/// takes a slot, and naps still linking would let the calls under test take the slots.
async fn saturate(host: &Arc<Toolhost>, n: usize, ms: u32) -> Vec<tokio::task::JoinHandle<Outcome>> {
    let first = host.call(&ToolCall::new("doze", ["1"])).await;
    assert!(first.success, "{first:?}");
    let naps = (0..n)
        .map(|_| {
            let h = host.clone();
            tokio::spawn(async move { h.call(&ToolCall::new("doze", [ms.to_string()])).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    naps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_share_and_quota_cases_keep_other_plugins_served() {
    let (mut run_n, mut survived, mut lost) = (0, 0, 0);
    let mut check = |promise: &str, good: bool, detail: String| {
        run_n += 1;
        if good {
            survived += 1;
        } else {
            lost += 1;
            eprintln!("BROKEN: {promise}: {detail}");
        }
    };

    // 1. One plugin saturating its concurrency: the other plugin's p99 stays within 2× idle.
    let host = Arc::new(share_env(2).host());
    let idle = echo_p99(&host, 100).await;
    let naps = saturate(&host, 8, 2500).await;
    // Best of up to three rounds, each taken while every nap still holds its slot: the rest of
    // the suite shares these cores, and one preempted call is a p99 of 100. Starvation is not
    // noise — without fair share echo waits for the naps, every round (see the control below).
    let bound = idle * 2 + Duration::from_millis(2);
    let mut busy = Duration::MAX;
    for _ in 0..3 {
        busy = busy.min(echo_p99(&host, 100).await);
        if busy <= bound {
            break;
        }
    }
    check(
        "the naps still held their slots while echo was measured",
        naps.iter().all(|n| !n.is_finished()),
        "a nap ended before the measurement did".into(),
    );
    check(
        "a saturated plugin leaves the others their latency",
        busy <= bound,
        format!("idle p99 {idle:?}, best busy p99 {busy:?}"),
    );
    for n in naps {
        let o = n.await.unwrap();
        let fine = o.success || matches!(o.kind, Some(ErrorKind::Busy | ErrorKind::Timeout));
        check("the saturating calls end cleanly", fine, format!("{o:?}"));
    }
    eprintln!("fair share: echo p99 idle {idle:?}, while hostile saturates its slots {busy:?}");

    // The control: without a per-plugin cap below the global one, the same load starves echo.
    let host_unfair = Arc::new(share_env(4).host());
    assert!(host_unfair.call(&ToolCall::new("echo", ["linked"])).await.success);
    let naps = saturate(&host_unfair, 8, 1000).await;
    let (starved, _) = timed(&host_unfair, "echo", &["ping"]).await;
    check(
        "(control) with the plugin allowed every slot, echo waits for them",
        starved >= Duration::from_millis(500),
        format!("{starved:?}"),
    );
    for n in naps {
        let _ = n.await;
    }

    // 2. A waiting call is bounded by its own deadline and names the setting.
    let mut env = share_env(2);
    env.config.limits.timeout_ms = 300;
    env.config.tools.entry("doze".into()).or_default().limits.timeout_ms = Some(5000);
    let host = Arc::new(env.host());
    let naps = saturate(&host, 2, 1500).await;
    let (waited, o) = timed(&host, "spin", &[]).await;
    let good = o.kind == Some(ErrorKind::Busy)
        && o.error.as_deref().is_some_and(|e| e.contains("[plugin.hostile] concurrency = 2"))
        && waited < Duration::from_millis(1000);
    check("a queued call ends at its deadline with the limit named", good, format!("{waited:?} {o:?}"));
    let (_, next) = timed(&host, "echo", &["alive"]).await;
    check("then the next call is served", next.success, format!("{next:?}"));
    for n in naps {
        let o = n.await.unwrap();
        check("the naps finish", o.success, format!("{o:?}"));
    }

    // 3. A write loop stopped by the quota while another plugin's calls keep their latency.
    let env = quota_env(64);
    let host = Arc::new(env.host());
    let idle = echo_p99(&host, 100).await;
    let h = host.clone();
    let writer = tokio::spawn(async move { h.call(&ToolCall::new("fill", ["stream", "4096"])).await });
    let mut during = Vec::new();
    while !writer.is_finished() {
        let (d, o) = timed(&host, "echo", &["ping"]).await;
        during.push(d);
        check("echo during the write loop", o.success, format!("{o:?}"));
    }
    let o = writer.await.unwrap();
    check(
        "the write loop is stopped by the quota",
        o.error.as_deref().is_some_and(|e| e.contains("quota exceeded: wrote 64 MiB, limit write_mb = 64")),
        format!("{o:?}"),
    );
    during.sort();
    if !during.is_empty() {
        let p99 = during[(during.len() * 99 / 100).min(during.len() - 1)];
        // While the writer runs it yields every two epoch ticks (10 ms): a call landing on its
        // worker may wait for one slice.
        let bound = idle * 2 + SLICE;
        check(
            "echo latency during the write loop",
            p99 <= bound,
            format!("idle p99 {idle:?}, during {p99:?}"),
        );
        eprintln!("write loop: echo p99 idle {idle:?}, during the loop {p99:?} ({} calls)", during.len());
    }
    let (_, next) = timed(&host, "echo", &["alive"]).await;
    check("then the next call is served", next.success, format!("{next:?}"));

    record_summary(
        "shares",
        &format!(
            "reliability matrix (fair share, quota under load): {run_n} cases run, {survived} survived, {lost} broken"
        ),
    );
    assert_eq!(lost, 0, "see BROKEN lines above");
}

/// One scheduling slice of a busy guest (two epoch ticks).
const SLICE: Duration = Duration::from_millis(10);

//! Issue #59: a call that does one key-value operation — `get`, `set`, `increment` — as a ratio
//! to `echo` in the same run (targets: get ≤ 1.3×; a durable set ≤ 2× plus one fsync), on each
//! backend: SQLite (by default, and with `[kv] fsync = true`) and Redis (a `redis-server` of
//! the bench's own on loopback, when Debian's is installed).

use super::{AlwaysConfirm, host_case, interleaved, us};
use super::{Config, Registry, Runtime, ToolCall, Toolhost};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::capability::kv::Backend;

/// Rounds the durable backend's rows are measured in (see `rows`).
const DURABLE_ROUNDS: usize = 5;

/// A host over `plugins` with `kvplain`'s `default` bucket granted, its stores on `backend`.
fn host(plugins: &Path, backend: Backend, fsync: bool) -> Arc<Toolhost> {
    let mut config = Config { plugins_dir: plugins.to_path_buf(), cache_dir: None, ..Config::default() };
    config.kv.backend = backend;
    config.kv.fsync = fsync;
    config.grant_kv("kvplain", "default").unwrap();
    let runtime = Runtime::for_config(&config).unwrap();
    let registry = Registry::load(&runtime, &config).unwrap();
    Arc::new(Toolhost::from_parts(runtime, Arc::new(config), registry, Arc::new(AlwaysConfirm)))
}

/// What a durable `set` syncs, alone, as a case: one write-ahead-log frame (a 24-byte header
/// and a 4 KiB page) written where SQLite writes its frames (after the log's 32-byte header,
/// one after another, over a log already grown: in place) in a file of its own, then
/// `fdatasync`ed, as SQLite's commit does. Timed beside the durable writes, so both see the
/// disk as it is at that moment.
fn fsync_case<'a>(dir: &Path) -> super::Case<'a> {
    use std::os::unix::fs::FileExt;
    const FRAMES: u64 = 1000;
    const FRAME: u64 = 24 + 4096;
    let f = std::fs::File::create(dir.join("fsync-probe")).unwrap();
    f.write_all_at(&vec![0; (32 + FRAMES * FRAME) as usize], 0).unwrap();
    f.sync_all().unwrap();
    let mut frame = 0;
    Box::new(move || {
        frame = (frame + 1) % FRAMES;
        let at = 32 + frame * FRAME;
        f.write_all_at(&[1; 24], at).unwrap();
        f.write_all_at(&[frame as u8; 4096], at + 24).unwrap();
        f.sync_data().unwrap();
        Box::pin(std::future::ready(()))
    })
}

/// `redis-server` on a free loopback port, if Debian's is installed (killed by the caller).
pub(super) fn redis(work: &Path) -> Option<(std::process::Child, String)> {
    let bin = Path::new("/usr/bin/redis-server");
    if !bin.is_file() {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let child = Command::new(bin)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(work)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some((child, format!("redis://127.0.0.1:{port}")))
}

/// A `GET` of an absent key to the Redis server at `url` over a blocking TCP socket and its
/// answer (`$-1`, one line) read back: the median of 2000 round trips, after 200 of warm-up.
pub(super) fn redis_round_trip(url: &str) -> Duration {
    use std::io::{Read, Write};
    let port = url.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()).expect("redis://127.0.0.1:PORT");
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    let mut buf = [0u8; 64];
    let mut took: Vec<Duration> = (0..2200)
        .map(|_| {
            let t = Instant::now();
            s.write_all(b"GET toolhost-bench-absent\r\n").unwrap();
            let mut got = 0;
            while !buf[..got].ends_with(b"\r\n") {
                got += s.read(&mut buf[got..]).unwrap();
            }
            assert_eq!(&buf[..got], b"$-1\r\n");
            t.elapsed()
        })
        .skip(200)
        .collect();
    took.sort();
    took[took.len() / 2]
}

/// The section, on plugins of its own under `work`, `n` samples per case.
pub fn rows(line: &mut impl FnMut(String), rt: &tokio::runtime::Runtime, work: &Path, n: usize) {
    let plugins = work.join("kv-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    std::fs::copy(plugin_artifacts::KVPLAIN, plugins.join("kvplain.wasm")).unwrap();
    let dir = work.join("kv-stores");
    let mut backends = vec![
        ("SQLite", host(&plugins, Backend::Sqlite { dir: dir.join("normal") }, false)),
        ("SQLite, `fsync = true`", host(&plugins, Backend::Sqlite { dir: dir.join("durable") }, true)),
    ];
    let server = redis(work);
    if let Some((_, url)) = &server {
        backends.push(("Redis (loopback)", host(&plugins, Backend::Redis { url: url.clone() }, false)));
    }
    line(String::new());
    line("## The key-value store (issue #59)".into());
    line(String::new());
    line(format!(
        "A call of `kvplain` (plain `wit-bindgen`, no SDK) doing one operation on bucket `default`, beside `echo` of `text` in the same host, interleaved ({n} samples each; with `fsync = true`, {DURABLE_ROUNDS} rounds of {} shown from the median round). `get` reads one key again and again, answered from what the host kept (over SQLite while no connection has committed to the store since, over Redis while Redis has not said it changed); the row after it, a key never read before (the store asked: over Redis, the round trip). Targets: `get` ≤ 1.3× echo; a durable `set` (SQLite with `fsync = true`) ≤ 2× echo plus one `fdatasync` — of what the `set` must make durable, a write-ahead-log frame (24 + 4096 bytes written in place where SQLite writes its frames, in a file of its own), timed beside the calls: its row. The floor of a durable `set` call, beside it: the store's own durable `set` then `echo`, timed as one (a call's work after its thread slept in `fdatasync` runs on cold caches, so the parts timed apart understate it); and a bare `fdatasync` of the frame then `echo` (the floor with any store).{}",
        n / DURABLE_ROUNDS,
        if server.is_none() {
            " No `redis-server` on this machine: the Redis rows are left out."
        } else {
            ""
        }
    ));
    line(String::new());
    line("| backend | operation | p50 | p99 | ÷ echo | target |".into());
    line("|---|---|---|---|---|---|".into());
    for (name, h) in &backends {
        rt.block_on(async {
            let o = h.call(&ToolCall::new("set", ["default", "k", "v"])).await;
            assert!(o.success, "{name}: {o:?}");
        });
        // Each `set` writes a new value: SQLite skips writing a row that does not change, so a
        // repeated value would measure no write (and no fsync) at all.
        let next = std::sync::atomic::AtomicU64::new(0);
        let set: super::Case<'_> = Box::new(|| {
            let (h, next) = (h, &next);
            Box::pin(async move {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string();
                let o = h.call(&ToolCall::new("set", ["default", "k", n.as_str()])).await;
                assert!(o.success, "{o:?}");
            })
        });
        // The store alone: the same `get`, asked of the plugin's store in this process.
        let store_get: super::Case<'_> = Box::new(|| {
            Box::pin(async move {
                let store = h.executor.kv().of("kvplain").unwrap();
                assert!(store.get("default", "k").await.unwrap().is_some());
            })
        });
        // The store alone: a `set` of a new value, asked of the plugin's store in this process.
        let store_next = std::sync::atomic::AtomicU64::new(0);
        let store_set: super::Case<'_> = Box::new(|| {
            let next = &store_next;
            Box::pin(async move {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_string();
                let store = h.executor.kv().of("kvplain").unwrap();
                store.set("default", "alone", n.as_bytes()).await.unwrap();
            })
        });
        // A `get` of a key read for the first time: nothing kept from it (Redis: the round trip).
        let fresh = std::sync::atomic::AtomicU64::new(0);
        let first_get: super::Case<'_> = Box::new(|| {
            let (h, fresh) = (h, &fresh);
            Box::pin(async move {
                let key = format!("unread-{}", fresh.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
                let o = h.call(&ToolCall::new("get", ["default", key.as_str()])).await;
                assert!(o.success, "{o:?}");
            })
        });
        let mut cases = vec![
            host_case(h, ToolCall::new("echo", ["hello"])),
            host_case(h, ToolCall::new("get", ["default", "k"])),
            set,
            host_case(h, ToolCall::new("incr", ["n"])),
            // The component alone: a call of `kvplain` that opens no bucket, so the rows above
            // it split into the component's own cost and the store's.
            host_case(h, ToolCall::new("noop", Vec::<String>::new())),
            store_get,
            first_get,
            store_set,
        ];
        let durable = name.contains("fsync");
        if durable {
            cases.push(fsync_case(work));
            // The parts of a durable `set` call back to back, timed as one: the store's own
            // durable `set`, then `echo` — the call's work after a thread slept in `fdatasync`.
            let mut next = 0u64;
            let echo_call = ToolCall::new("echo", ["hello"]);
            cases.push(Box::new(move || {
                next += 1;
                let (n, echo_call) = (next.to_string(), echo_call.clone());
                Box::pin(async move {
                    let store = h.executor.kv().of("kvplain").unwrap();
                    store.set("default", "alone", n.as_bytes()).await.unwrap();
                    assert!(h.call(&echo_call).await.success);
                })
            }));
            // The least any store can do, then `echo`: the frame synced, then the call.
            let probe = work.join("probe-then-echo");
            std::fs::create_dir_all(&probe).unwrap();
            let mut sync = fsync_case(&probe);
            let echo_call = ToolCall::new("echo", ["hello"]);
            cases.push(Box::new(move || {
                let synced = sync();
                let echo_call = echo_call.clone();
                Box::pin(async move {
                    synced.await;
                    assert!(h.call(&echo_call).await.success);
                })
            }));
        }
        // A durable `set` less its fsync moves from run to run by more than the bound's margin
        // (the disk's latency is shared): its rows are measured in rounds, and shown from the
        // median round, the range of the rounds beside the verdict.
        let rounds = if durable { DURABLE_ROUNDS } else { 1 };
        let mut all: Vec<_> = (0..rounds).map(|_| interleaved(rt, &mut cases, n / rounds)).collect();
        let less_of = |m: &[super::Measured]| {
            (m[2].stats.p50.as_secs_f64() - m[8].stats.p50.as_secs_f64()).max(0.0)
                / m[0].stats.p50.as_secs_f64()
        };
        if durable {
            all.sort_by(|a, b| less_of(a).total_cmp(&less_of(b)));
        }
        let spread = if durable {
            format!(
                " (the median of {rounds} rounds; they ranged {:.2}–{:.2}×)",
                less_of(&all[0]),
                less_of(&all[rounds - 1])
            )
        } else {
            String::new()
        };
        let m = &all[rounds / 2];
        let echo = m[0].stats.p50.as_secs_f64();
        let mut ops = vec![
            (1, "get", "`get`"),
            (6, "", "`get` of a key never read before (Redis: nothing kept, the round trip)"),
            (2, "set", "`set`"),
            (3, "increment", "`increment`"),
            (4, "", "none (`noop`: the component alone, no bucket opened)"),
            (5, "", "the store's `get` alone, in this process (no call, no sandbox)"),
            (7, "", "the store's `set` alone, in this process (no call, no sandbox)"),
        ];
        if durable {
            ops.push((8, "", "one `fdatasync` of a log frame written in place (no call, no SQLite)"));
            ops.push((9, "", "the store's `set` alone, then `echo`, timed as one"));
            ops.push((10, "", "one `fdatasync` of a log frame, then `echo`, timed as one"));
        }
        for (i, op, label) in ops {
            let r = m[i].stats.p50.as_secs_f64() / echo;
            let target = match (op, durable) {
                ("get", _) => format!("≤ 1.3×: {}", if r <= 1.3 { "met" } else { "**not met**" }),
                ("set", true) => {
                    let sync = m[8].stats.p50.as_secs_f64();
                    let less = (m[i].stats.p50.as_secs_f64() - sync).max(0.0) / echo;
                    // What no call with this store can go under: the store's own durable `set`
                    // and `echo`, timed as one, less the same fsync (timed apart: less still,
                    // for the call's work after the sleep runs on cold caches).
                    let floor = (echo + m[7].stats.p50.as_secs_f64() - sync).max(0.0) / echo;
                    let together = (m[9].stats.p50.as_secs_f64() - sync).max(0.0) / echo;
                    let bare = (m[10].stats.p50.as_secs_f64() - sync).max(0.0) / echo;
                    format!(
                        "≤ 2× + fsync: {less:.2}× without it{spread}, {}; its floor less the fsync, the store's `set` and `echo`: {together:.2}× timed as one ({floor:.2}× timed apart; {bare:.2}× with a bare fsync instead of the store)",
                        if less <= 2.0 { "met" } else { "**not met**" }
                    )
                }
                _ => "—".into(),
            };
            line(format!(
                "| {name} | {label} | {} | {} | {r:.2}× | {target} |",
                us(m[i].stats.p50),
                us(m[i].stats.p99)
            ));
        }
    }
    if let Some((_, url)) = &server {
        let rtt = redis_round_trip(url);
        line(String::new());
        line(format!(
            "The Redis server's own round trip, the floor of every Redis row: a `GET` written to a plain TCP socket from this process and its answer read back (no client library, no async runtime), median of 2000: {}.",
            us(rtt)
        ));
    }
    if let Some((mut child, _)) = server {
        let _ = child.kill();
        let _ = child.wait();
    }
}

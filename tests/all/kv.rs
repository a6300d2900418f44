//! Issue #59: each plugin's key-value store (`wasi:keyvalue`), kept between calls and runs,
//! deny by default, bounded, durable, one store per plugin. `kvplain` reaches it through plain
//! `wit-bindgen` bindings (no toolhost SDK), `counter` through the Rust SDK's `kv`.

use crate::support::redis::{Redis, redis};
use crate::support::{Env, call, err, ok};
use std::sync::Arc;
use toolhost_core::ErrorKind;
use toolhost_core::capability::kv::Backend;
use toolhost_core::executor::NoConfirm;

/// `plugins` with the buckets granted to their plugins (`kvplain`: `default` only).
fn env(plugins: &[&str]) -> Env {
    let mut env = Env::with(plugins);
    for (plugin, bucket) in [("kvplain", "default"), ("counter", "default")] {
        env.config.grant_kv(plugin, bucket).unwrap();
    }
    env
}

/// The backends every behaviour is checked on: SQLite (the default; `None`) and a
/// `redis-server` of the test's own.
fn backends() -> [Option<Redis>; 2] {
    [None, Some(redis())]
}

/// [`env`] on `backend`.
fn env_on(plugins: &[&str], backend: &Option<Redis>) -> Env {
    let mut env = env(plugins);
    if let Some(r) = backend {
        env.config.kv.backend = Backend::Redis { url: r.url() };
    }
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_keeps_its_values_between_calls_and_hosts() {
    for backend in backends() {
        keeps_values(&backend).await;
    }
}

async fn keeps_values(backend: &Option<Redis>) {
    let env = env_on(&[plugin_artifacts::KVPLAIN], backend);
    let host = env.host();
    assert_eq!(ok(&call(&host, "get", &["default", "greeting"]).await), "(none)");
    assert_eq!(ok(&call(&host, "set", &["default", "greeting", "héllo"]).await), "ok");
    assert_eq!(ok(&call(&host, "get", &["default", "greeting"]).await), "héllo");
    assert_eq!(ok(&call(&host, "incr", &["calls"]).await), "1");
    assert_eq!(ok(&call(&host, "incr", &["calls"]).await), "2");
    let o = call(&host, "append", &["log", "ab"]).await;
    assert_eq!(ok(&o), "ab");
    let usage = o.usage.as_ref().expect("usage");
    assert!(usage.kv_ops >= 3 && usage.kv_written_bytes == 2, "{usage:?}");
    drop(host);
    // A new host (another executor, the store opened afresh) finds what the first one wrote.
    let host = env.host();
    assert_eq!(ok(&call(&host, "get", &["default", "greeting"]).await), "héllo");
    assert_eq!(ok(&call(&host, "keys", &["default"]).await), "calls\ngreeting\nlog");
    assert_eq!(ok(&call(&host, "append", &["log", "c"]).await), "abc");
    assert_eq!(ok(&call(&host, "drop_many", &["log,calls"]).await), "ok");
    assert_eq!(ok(&call(&host, "keys", &["default"]).await), "greeting");
    assert_eq!(env.at("kv/kvplain.sqlite3").is_file(), backend.is_none(), "one file per plugin in [kv] dir");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_not_granted_is_refused_and_the_grant_named() {
    let env = env(&[plugin_artifacts::KVPLAIN]);
    let host = env.host();
    // Requested by the manifest, not granted by the operator.
    let e = err(&call(&host, "get", &["cache", "a"]).await, ErrorKind::ToolError);
    assert!(e.contains("open cache: access denied"), "{e}");
    assert!(e.contains("[plugin.kvplain] kv = [\"cache\"]") && e.contains("--allow-kv kvplain=cache"), "{e}");
    // Not requested at all: no grant could give it.
    let e = err(&call(&host, "get", &["secrets", "a"]).await, ErrorKind::ToolError);
    assert!(e.contains("open secrets: no such store") && !e.contains("--allow-kv"), "{e}");
    let list = env.registry();
    let p = list.plugins().iter().find(|p| &*p.name == "kvplain").unwrap();
    assert_eq!(p.grants.kv.granted, ["default"]);
    assert_eq!(p.missing.iter().map(|m| m.what.as_str()).collect::<Vec<_>>(), ["kv cache"]);
}

/// Each bound refuses with its setting named, and nothing of a refused write is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bound_names_its_setting_and_keeps_nothing_of_the_write() {
    for backend in backends() {
        bounds(&backend).await;
    }
}

async fn bounds(backend: &Option<Redis>) {
    let mut env = env_on(&[plugin_artifacts::KVPLAIN], backend);
    let limits = &mut env.config.kv.limits;
    (limits.max_value_bytes, limits.max_keys, limits.max_key_bytes, limits.max_ops_per_call) =
        (1024, 4, 16, 50);
    let host = env.host();
    let e = err(&call(&host, "big", &["v", "2000"]).await, ErrorKind::ToolError);
    assert!(e.contains("2000 bytes") && e.contains("kv.max_value_kb"), "{e}");
    let e = err(&call(&host, "set", &["default", &"k".repeat(17), "x"]).await, ErrorKind::ToolError);
    assert!(e.contains("17 bytes") && e.contains("kv.max_key_bytes"), "{e}");
    let e = err(&call(&host, "many", &["5", "no"]).await, ErrorKind::ToolError);
    assert!(e.contains("5 keys") && e.contains("kv.max_keys"), "{e}");
    assert_eq!(ok(&call(&host, "keys", &["default"]).await), "", "the batch is all or nothing");
    let e = err(&call(&host, "many", &["60", "no"]).await, ErrorKind::ToolError);
    assert!(e.contains("kv.max_ops_per_call"), "{e}");
    assert_eq!(ok(&call(&host, "many", &["4", "no"]).await), "set 4");
}

/// A batch the host acknowledged is kept whole even when the plugin traps right after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_traps_after_a_batch_keeps_all_of_it() {
    for backend in backends() {
        let env = env_on(&[plugin_artifacts::KVPLAIN], &backend);
        let host = env.host();
        let o = call(&host, "many", &["5", "yes"]).await;
        assert!(!o.success, "{o:?}");
        assert_eq!(ok(&call(&host, "keys", &["default"]).await), "k0\nk1\nk2\nk3\nk4");
    }
}

/// With the Redis backend and the server gone, a call fails naming the server; nothing falls
/// back to another store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_unreachable_fails_the_call_naming_the_server() {
    let gone = Some(redis());
    let env = env_on(&[plugin_artifacts::KVPLAIN], &gone);
    let url = gone.as_ref().unwrap().url();
    drop(gone);
    let host = env.host();
    let e = err(&call(&host, "set", &["default", "a", "1"]).await, ErrorKind::ToolError);
    assert!(e.contains(&url) && e.contains("cannot be used"), "{e}");
    assert!(!env.at("kv").exists(), "no SQLite store instead");
}

/// With the Redis backend a `get` may be answered from the host's client-side cache, which
/// Redis keeps true: a value another host changes is read anew as soon as the server's
/// invalidation arrives (with the other host's own reply), and a host whose server went away
/// fails the call within moments instead of answering from what it remembered (the cache
/// would otherwise serve it for `CACHE_TTL`, 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_redis_value_follows_other_hosts_and_dies_with_the_server() {
    let server = Some(redis());
    let url = server.as_ref().unwrap().url();
    let env = env_on(&[plugin_artifacts::KVPLAIN], &server);
    let (a, b) = (env.host(), env.host());
    assert_eq!(read(&a).await, "(none)");
    for value in ["1", "2", "three"] {
        assert_eq!(read(&a).await, read(&a).await, "a value A keeps");
        assert_eq!(ok(&call(&b, "set", &["default", "k", value]).await), "ok");
        let since = std::time::Instant::now();
        while read(&a).await != value {
            assert!(since.elapsed() < std::time::Duration::from_secs(1), "A still reads a stale value of k");
        }
    }
    drop(server);
    let since = std::time::Instant::now();
    loop {
        let o = call(&a, "get", &["default", "k"]).await;
        if !o.success {
            let e = err(&o, ErrorKind::ToolError);
            assert!(e.contains(&url) && e.contains("cannot be used"), "{e}");
            break;
        }
        assert!(
            since.elapsed() < std::time::Duration::from_secs(1),
            "answered from the cache with Redis gone"
        );
    }
}

/// SQLite keeps true across processes: a value the host kept gives way at once to a change
/// another process commits to the store's file — here `toolhost kv`, as an operator's would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_sqlite_value_gives_way_to_another_processs_commit() {
    let env = env(&[plugin_artifacts::KVPLAIN]);
    let host = env.host();
    assert_eq!(ok(&call(&host, "set", &["default", "k", "one"]).await), "ok");
    assert_eq!(read(&host).await, "one");
    assert_eq!(read(&host).await, "one", "read again: from what the host kept");
    let kv = |args: &[&str]| {
        let o = env.configured("[kv]\ndir = \"kv\"\n").arg("kv").args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    kv(&["delete", "kvplain", "default", "k"]);
    assert_eq!(read(&host).await, "(none)");
    let file = env.at("in.jsonl");
    std::fs::write(&file, "{\"bucket\":\"default\",\"key\":\"k\",\"value\":\"two\"}\n").unwrap();
    kv(&["import", "kvplain", file.to_str().unwrap()]);
    assert_eq!(read(&host).await, "two");
}

/// A write that must wait for another process's (here a connection of the test's own holds
/// `BEGIN IMMEDIATE`, as a long `toolhost kv import` does) waits off the async workers: with
/// more such calls than workers, another plugin's call is still answered, and the writes go
/// through once the other transaction ends. Waiting on the workers, the writes held them until
/// SQLite gave up (`database is locked`), and nothing else ran meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_waiting_for_another_process_leave_the_workers_free() {
    let env = env(&[plugin_artifacts::KVPLAIN, plugin_artifacts::TEXT]);
    let host = Arc::new(env.host());
    // Both plugins linked first, the store created.
    assert_eq!(ok(&call(&host, "set", &["default", "k", "0"]).await), "ok");
    assert_eq!(ok(&call(&host, "echo", &["linked"]).await), "linked");
    let other = rusqlite::Connection::open(env.at("kv/kvplain.sqlite3")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let writes: Vec<_> = (1..=3)
        .map(|n| {
            let host = host.clone();
            tokio::spawn(async move { call(&host, "set", &["default", "k", &n.to_string()]).await })
        })
        .collect();
    // The writes reach SQLite within milliseconds; an echo sent before they did would prove
    // nothing (the test then passes either way, never fails for it).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let echo = {
        let host = host.clone();
        tokio::spawn(async move { call(&host, "echo", &["still served"]).await })
    };
    let asked = std::time::Instant::now();
    let echoed = tokio::time::timeout(std::time::Duration::from_secs(60), echo).await;
    let (writing, took) = (writes.iter().filter(|w| !w.is_finished()).count(), asked.elapsed());
    other.execute_batch("COMMIT").unwrap();
    assert_eq!(ok(&echoed.expect("the echo was answered").unwrap()), "still served");
    // (A write gives up after 5 s: an echo slower than that, on a very loaded machine, would
    // fail this too; the time says which.)
    assert_eq!(
        writing, 3,
        "the writes still waited for the other transaction when the echo was answered, {took:?} after it was sent"
    );
    for w in writes {
        assert_eq!(ok(&w.await.unwrap()), "ok", "a write made once the other transaction ended");
    }
}

/// A Redis that will not track keys for the host — here an ACL without `CLIENT`, as some
/// managed services have — still serves every operation: the host keeps nothing and asks the
/// server each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_will_not_track_is_used_keeping_nothing() {
    let server = redis();
    assert_eq!(server.command("ACL SETUSER default -client"), "+OK");
    let server = Some(server);
    let env = env_on(&[plugin_artifacts::KVPLAIN], &server);
    let (a, b) = (env.host(), env.host());
    for value in ["1", "2"] {
        assert_eq!(ok(&call(&b, "set", &["default", "k", value]).await), "ok");
        assert_eq!(read(&a).await, value, "read from the server at once");
        assert_eq!(read(&a).await, value);
    }
    assert_eq!(ok(&call(&a, "incr", &["n"]).await), "1");
}

/// `k` of bucket `default`, as `host`'s `kvplain` reads it.
async fn read(host: &toolhost_core::Toolhost) -> String {
    ok(&call(host, "get", &["default", "k"]).await)
}

/// Issue #59, item 5: 100 increments from 4 clients at once (each a host of its own, with its
/// own connection to the store) count exactly 100; appends by compare-and-swap lose none.
#[test]
fn concurrent_increments_from_four_clients_count_exactly() {
    for backend in backends() {
        concurrent_increments(&backend);
    }
}

fn concurrent_increments(backend: &Option<Redis>) {
    let env = env_on(&[plugin_artifacts::COUNTER, plugin_artifacts::KVPLAIN], backend);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    rt.block_on(async {
        let hosts: Vec<Arc<toolhost_core::Toolhost>> =
            (0..4).map(|_| Arc::new(env.host_with(Arc::new(NoConfirm)))).collect();
        let mut tasks = Vec::new();
        for host in &hosts {
            for _ in 0..25 {
                let host = host.clone();
                tasks.push(tokio::spawn(async move {
                    ok(&call(&host, "count", &["hits"]).await);
                    ok(&call(&host, "append", &["trail", "x"]).await);
                }));
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
        let counters = ok(&call(&hosts[0], "counters", &[]).await);
        assert_eq!(counters, "hits: 100");
        let trail = ok(&call(&hosts[1], "get", &["default", "trail"]).await);
        assert_eq!(trail, "x".repeat(100));
    });
}

/// Stores are per plugin: `counter` never sees `kvplain`'s keys, and a corrupt store fails
/// only its own plugin's calls, naming its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_store_fails_only_its_plugin_naming_the_file() {
    let env = env(&[plugin_artifacts::COUNTER, plugin_artifacts::KVPLAIN]);
    let host = env.host();
    ok(&call(&host, "set", &["default", "mine", "1"]).await);
    assert_eq!(ok(&call(&host, "counters", &[]).await), "no counters yet");
    drop(host);
    let file = env.at("kv/kvplain.sqlite3");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    std::fs::write(&file, vec![0x5a; 8192]).unwrap();
    let host = env.host();
    let e = err(&call(&host, "get", &["default", "mine"]).await, ErrorKind::ToolError);
    assert!(e.contains(&file.display().to_string()) && e.contains("not a database"), "{e}");
    assert_eq!(ok(&call(&host, "count", &["n"]).await), "1", "other plugins are unharmed");
    assert_eq!(std::fs::read(&file).unwrap(), vec![0x5a; 8192], "the file is left for the operator");
}

/// A write answered to an MCP client survives `SIGKILL` of the server (no drain, no sync at
/// exit): the next run reads it.
#[test]
fn an_answered_write_survives_a_sigkill() {
    let extra = "[kv]\ndir = \"kv\"\n\n[plugin.kvplain]\nkv = [\"default\"]\n";
    let d = crate::service::Deployment::new(&[plugin_artifacts::KVPLAIN], extra);
    let mut session = d.stdio_session();
    for i in 0..5u64 {
        let args = serde_json::json!({"bucket": "default", "key": format!("k{i}"), "value": format!("v{i}")});
        let line = session.call(10 + i, "set", args);
        assert!(line.contains(r#""text":"ok""#), "{line}");
    }
    let mut child = session.child;
    child.kill().unwrap();
    let _ = child.wait();
    let o = d.command().args(["call", "keys", "default"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout.trim(), "k0\nk1\nk2\nk3\nk4");
}

/// `list` shows the buckets requested, granted and missing; `--allow-kv` grants one.
#[test]
fn list_shows_buckets_and_allow_kv_grants_them() {
    let env = Env::with(&[plugin_artifacts::KVPLAIN]);
    let o = env
        .configured("[kv]\ndir = \"kv\"\n")
        .args(["--allow-kv", "kvplain=default", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("requested: kv default, kv cache"), "{text}");
    assert!(text.contains("granted:   kv default"), "{text}");
    assert!(text.contains("missing:   kv cache — grant with [plugin.kvplain] kv = [\"cache\"]"), "{text}");
    let o = env.configured("").args(["--allow-kv", "kvplain=bad bucket", "list"]).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("--allow-kv") && e.contains("is not a bucket name"), "{e}");
    let o = env.configured("[plugin.kvplain]\nkv = [\"ok\", \"../x\"]\n").arg("list").output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("plugin.kvplain.kv[1]") && e.contains("toolhost.toml"), "{e}");
}

/// `toolhost kv`: the operator lists, reads, exports, imports (all or nothing), deletes and
/// purges a plugin's store without loading the plugin.
#[test]
fn the_operator_lists_exports_imports_and_purges_a_store() {
    let env = Env::with(&[plugin_artifacts::KVPLAIN]);
    let kv = |args: &[&str]| {
        let o = env.configured("[kv]\ndir = \"kv\"\n").arg("kv").args(args).output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (okay, out, _) = kv(&["list"]);
    assert!(okay && out.contains("no key-value stores"), "{out}");
    let call = |args: &[&str]| {
        let o = env
            .configured("[kv]\ndir = \"kv\"\n")
            .args(["--allow-kv", "kvplain=default", "call"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    call(&["set", "default", "a", "one"]);
    call(&["big", "b", "3"]);
    let (okay, out, e) = kv(&["list"]);
    assert!(
        okay && out.contains("kvplain (2 keys, 8 bytes;") && out.contains("  default: 2 keys, 8 bytes"),
        "{out}{e}"
    );
    assert_eq!(kv(&["get", "kvplain", "default", "a"]).1, "one\n");
    let (okay, _, e) = kv(&["get", "kvplain", "default", "zz"]);
    assert!(!okay && e.contains("no key \"zz\""), "{e}");
    let (_, export, _) = kv(&["export", "kvplain"]);
    assert_eq!(
        export,
        "{\"bucket\":\"default\",\"key\":\"a\",\"value\":\"one\"}\n{\"bucket\":\"default\",\"key\":\"b\",\"value\":\"xxx\"}\n"
    );
    // A bad line imports nothing; a good file sets every line.
    let file = env.at("in.jsonl");
    std::fs::write(&file, "{\"bucket\":\"default\",\"key\":\"c\",\"base64\":\"AP8=\"}\n{\"bucket\":\"default\",\"key\":\"d\"}\n").unwrap();
    let (okay, _, e) = kv(&["import", "kvplain", file.to_str().unwrap()]);
    assert!(!okay && e.contains("in.jsonl line 2") && e.contains("\"value\""), "{e}");
    std::fs::write(&file, "{\"bucket\":\"default\",\"key\":\"c\",\"base64\":\"AP8=\"}\n{\"bucket\":\"other\",\"key\":\"d\",\"value\":\"4\"}\n").unwrap();
    let (okay, _, e) = kv(&["import", "kvplain", file.to_str().unwrap()]);
    assert!(okay && e.contains("imported 2 pairs"), "{e}");
    assert_eq!(kv(&["get", "kvplain", "default", "c"]).1, "AP8=\n", "bytes come back as base64");
    assert!(kv(&["list", "kvplain"]).1.contains("  other: 1 keys, 2 bytes"));
    let (okay, _, e) = kv(&["delete", "kvplain", "other", "d"]);
    assert!(okay && e.contains("deleted \"d\""), "{e}");
    let (okay, _, e) = kv(&["purge", "kvplain"]);
    assert!(okay && e.contains("deleted plugin `kvplain`'s key-value store"), "{e}");
    assert!(!env.at("kv/kvplain.sqlite3").exists());
    let (okay, _, e) = kv(&["purge", "kvplain"]);
    assert!(!okay && e.contains("has no key-value store"), "{e}");
}

/// A full disk fails the write in progress and keeps nothing of it; what was written before
/// is intact (a 256 KiB tmpfs, mounted in a user and mount namespace of the test's own).
#[test]
fn a_full_disk_fails_the_write_and_keeps_the_store_whole() {
    let probe = std::process::Command::new("unshare").args(["-Urm", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        panic!("this test needs `unshare -Urm` (user namespaces): the kernel or the sandbox refuses them");
    }
    let env = Env::with(&[plugin_artifacts::KVPLAIN]);
    let disk = env.at("disk");
    std::fs::create_dir_all(&disk).unwrap();
    std::fs::write(
        env.at("toolhost.toml"),
        format!("[kv]\ndir = {:?}\n\n[plugin.kvplain]\nkv = [\"default\"]\n", disk.join("kv")),
    )
    .unwrap();
    let line = |args: &str| {
        let cmd = env.command();
        let mut words: Vec<String> = vec![cmd.get_program().to_string_lossy().into_owned()];
        words.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
        words.extend(["--config".into(), env.at("toolhost.toml").display().to_string()]);
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        format!("{} {args}", quoted.join(" "))
    };
    let script = format!(
        "mount -t tmpfs -o size=256k none '{}' && {} && echo STEP1 && {} ; echo STEP2 $? && {} && {}",
        disk.display(),
        line("call set default a keep"),
        line("call big b 400000"),
        line("call get default a"),
        line("call keys default"),
    );
    let o = std::process::Command::new("unshare")
        .args(["-Urm", "sh", "-c", &script])
        .envs(crate::support::test_dirs())
        .current_dir(env.dir.path())
        .output()
        .unwrap();
    let (out, e) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{out}\n{e}");
    assert!(out.contains("STEP1") && out.contains("STEP2 1"), "the big write failed: {out}\n{e}");
    assert!(e.contains("disk is full") && e.contains("kvplain"), "{e}");
    let after: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("STEP2")).skip(1).collect();
    assert_eq!(after, ["keep", "a"], "the store is whole, without the failed write: {out}");
}

/// The console's plugins page shows a plugin's buckets with their sizes.
#[test]
fn the_console_shows_a_plugins_buckets_and_sizes() {
    use crate::console::{Server, json};
    let env = Env::with(&[plugin_artifacts::KVPLAIN]);
    let config = "[kv]\ndir = \"kv\"\n\n[plugin.kvplain]\nkv = [\"default\"]\n";
    let o = env.configured(config).args(["call", "set", "default", "a", "one"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let server = Server::start(&env, config);
    let plugins = json(&server.get("/console/api/plugins", None));
    let p = &plugins["plugins"][0];
    assert_eq!(p["name"], "kvplain", "{plugins}");
    assert_eq!(p["kv"], serde_json::json!({"buckets": [{"name": "default", "keys": 1, "bytes": 4}]}), "{p}");
}

/// Issue #59, item 4: with `kv_scope = "session"` each MCP session has buckets of its own (one
/// session never reads another's keys); a call outside any session cannot open them.
#[test]
fn buckets_scoped_per_session_keep_sessions_apart() {
    use crate::support::mcp_http::{open_session, post, session_headers};
    use serde_json::json;
    let env = Env::with(&[plugin_artifacts::KVPLAIN]);
    let config = "[kv]\ndir = \"kv\"\n\n[plugin.kvplain]\nkv = [\"default\"]\nkv_scope = \"session\"\n";
    let server = crate::support::Server::start(env.configured(config).args([
        "serve",
        "--mcp",
        "--http",
        "127.0.0.1:0",
    ]));
    let url = server.url.clone();
    let (a, b) =
        (open_session(&url, "2025-06-18", json!({}), "a"), open_session(&url, "2025-06-18", json!({}), "b"));
    let call = |session: &str, tool: &str, args: serde_json::Value| -> String {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let (status, head, messages) = post(&url, &session_headers(session, "2025-06-18"), &body);
        assert_eq!(status, 200, "{head}");
        let r = messages.iter().find(|m| m["id"] == 7).unwrap_or_else(|| panic!("{messages:?}"));
        r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{r}")).to_string()
    };
    assert_eq!(call(&a, "set", json!({"bucket": "default", "key": "pad", "value": "a's"})), "ok");
    assert_eq!(call(&b, "get", json!({"bucket": "default", "key": "pad"})), "(none)");
    assert_eq!(call(&b, "set", json!({"bucket": "default", "key": "pad", "value": "b's"})), "ok");
    assert_eq!(call(&a, "get", json!({"bucket": "default", "key": "pad"})), "a's");
    assert_eq!(call(&b, "get", json!({"bucket": "default", "key": "pad"})), "b's");
    drop(server);
    // The CLI belongs to no session: refused, naming the setting.
    let o = env.configured(config).args(["call", "get", "default", "pad"]).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("kv_scope = \"session\"") && e.contains("no session"), "{e}");
    // Stored apart, never under a session's id.
    let o = env.configured(config).args(["kv", "list", "kvplain"]).output().unwrap();
    let listed = String::from_utf8_lossy(&o.stdout);
    assert_eq!(listed.lines().filter(|l| l.trim_start().starts_with("default@")).count(), 2, "{listed}");
    assert!(!listed.contains(&a) && !listed.contains(&b), "{listed}");
}

/// Issue #59, item 4 (with #60's identities): with `kv_scope = "identity"` each identity has
/// buckets of its own — two `[mcp] tokens` never read each other's keys over HTTP, the local
/// user (the CLI) has its own — and a caller with no identity cannot open them.
#[test]
fn buckets_scoped_per_identity_keep_identities_apart() {
    use crate::support::mcp_http::{Stateless, form};
    use serde_json::json;
    let env = Env::with(&[plugin_artifacts::KVPLAIN]);
    let config = "[kv]\ndir = \"kv\"\n\n[plugin.kvplain]\nkv = [\"default\"]\nkv_scope = \"identity\"\n\n\
                  [mcp]\ntokens = [{ name = \"ann\", env = \"TOOLHOST_TEST_ANN\" }, { name = \"ben\", env = \"TOOLHOST_TEST_BEN\" }]\n";
    let (ann, ben) = ("ann-token-0123456789abcdef", "ben-token-0123456789abcdef");
    let server = crate::support::Server::start(
        env.configured(config)
            .args(["serve", "--mcp", "--http", "127.0.0.1:0"])
            .env("TOOLHOST_TEST_ANN", ann)
            .env("TOOLHOST_TEST_BEN", ben),
    );
    let call = |token: &str, tool: &str, args: serde_json::Value| -> String {
        let auth = format!("Authorization: Bearer {token}\r\n");
        let c = Stateless { url: &server.url, auth: &auth, client: "kv-identity", capabilities: form() };
        let r = c.call(tool, args, None);
        r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{r}")).to_string()
    };
    assert_eq!(call(ann, "set", json!({"bucket": "default", "key": "pad", "value": "ann's"})), "ok");
    assert_eq!(call(ben, "get", json!({"bucket": "default", "key": "pad"})), "(none)");
    assert_eq!(call(ben, "set", json!({"bucket": "default", "key": "pad", "value": "ben's"})), "ok");
    assert_eq!(call(ann, "get", json!({"bucket": "default", "key": "pad"})), "ann's");
    assert_eq!(call(ben, "get", json!({"bucket": "default", "key": "pad"})), "ben's");
    drop(server);
    // The local user (the CLI) is an identity of its own: it sees neither token's pad.
    let o = env.configured(config).args(["call", "get", "default", "pad"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "(none)", "{}", String::from_utf8_lossy(&o.stderr));
    let o = env.configured(config).args(["kv", "list", "kvplain"]).output().unwrap();
    let listed = String::from_utf8_lossy(&o.stdout);
    assert_eq!(listed.lines().filter(|l| l.trim_start().starts_with("default~")).count(), 2, "{listed}");
    assert!(!listed.contains("ann") && !listed.contains("ben"), "who someone is is never stored: {listed}");
}

/// A store that cannot be opened is said at start, naming its file; the server serves on.
#[test]
fn serve_names_a_corrupt_store_at_start_and_serves_on() {
    use crate::support::{lines::spawn_piped, wait_line};
    let env = Env::with(&[plugin_artifacts::KVPLAIN]);
    std::fs::create_dir_all(env.at("kv")).unwrap();
    std::fs::write(env.at("kv/kvplain.sqlite3"), vec![0x5a; 8192]).unwrap();
    let config = "[kv]\ndir = \"kv\"\n\n[plugin.kvplain]\nkv = [\"default\"]\n";
    let (mut child, _stdin, _out, err) = spawn_piped(env.configured(config).args(["serve", "--mcp"]));
    let mut seen = Vec::new();
    let line = wait_line(&err, "kvplain.sqlite3", 60, &mut seen);
    assert!(line.contains("not a database") && line.contains("other plugins are unaffected"), "{line}");
    assert!(child.try_wait().unwrap().is_none(), "it serves on");
    let _ = child.kill();
    let _ = child.wait();
}

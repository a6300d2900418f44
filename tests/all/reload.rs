//! Hot reload with a real file watcher: each editor/copy pattern ends in exactly one registry
//! change, failures never replace a working version, and calls in flight finish.

use crate::support::{Env, call, err, ok};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::Receiver;
use toolhost_core::ErrorKind;
use toolhost_core::registry::reload::{Change, Reloader, WatchHandle};

const DEBOUNCE: Duration = Duration::from_millis(250);
/// Long enough for any pending rescan (debounce + compile) to have happened.
const SETTLE: Duration = Duration::from_millis(1200);

struct Live {
    env: Env,
    host: toolhost_core::Toolhost,
    reloader: Arc<Reloader>,
    changes: Receiver<Arc<Change>>,
    _watch: WatchHandle,
}

async fn live() -> Live {
    let env = Env::with(&[]);
    let host = env.host();
    let reloader = Reloader::new(host.runtime.clone(), host.config.clone(), host.registry.clone());
    let watch = reloader.watch(DEBOUNCE).unwrap();
    let changes = reloader.subscribe();
    Live { env, host, reloader, changes, _watch: watch }
}

impl Live {
    fn path(&self, name: &str) -> std::path::PathBuf {
        self.env.plugins.path().join(name)
    }

    /// The next change (bounded wait, so a missing reload fails instead of hanging).
    async fn next(&mut self) -> Arc<Change> {
        tokio::time::timeout(Duration::from_secs(30), self.changes.recv())
            .await
            .expect("no registry change within 30 s")
            .expect("change channel open")
    }

    /// Exactly one change, then quiet.
    async fn exactly_one(&mut self) -> Arc<Change> {
        let c = self.next().await;
        tokio::time::sleep(SETTLE).await;
        assert!(
            self.changes.is_empty(),
            "more than one reload: first {c:?}, then {:?}",
            self.changes.try_recv()
        );
        c
    }

    async fn which(&self) -> String {
        ok(&call(&self.host, "which", &[]).await)
    }
}

fn v1() -> Vec<u8> {
    std::fs::read(plugin_artifacts::VERSIONED).unwrap()
}
fn v2() -> Vec<u8> {
    std::fs::read(plugin_artifacts::VERSIONED_V2).unwrap()
}

fn tools(c: &Change) -> Vec<String> {
    let mut t: Vec<String> = c.added.iter().map(|a| a.tool.clone()).collect();
    t.sort();
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_and_copy_patterns_each_reload_once() {
    let mut l = live().await;

    // Write in place (a new file).
    std::fs::write(l.path("versioned.wasm"), v1()).unwrap();
    let c = l.exactly_one().await;
    assert_eq!(tools(&c), ["nap", "which"]);
    assert_eq!(c.lines()[0], "+ nap (versioned v0.1.0)");
    assert_eq!(l.which().await, "v1");

    // Write-then-rename over it.
    std::fs::write(l.path(".versioned.wasm.tmp"), v2()).unwrap();
    std::fs::rename(l.path(".versioned.wasm.tmp"), l.path("versioned.wasm")).unwrap();
    let c = l.exactly_one().await;
    assert_eq!(tools(&c), ["added_in_v2"]);
    assert!(c.lines().contains(&"~ which (v0.1.0 → v0.2.0)".to_string()), "{:?}", c.lines());
    assert_eq!(l.which().await, "v2");

    // Copy over (truncate and write in place).
    std::fs::copy(plugin_artifacts::VERSIONED, l.path("versioned.wasm")).unwrap();
    let c = l.exactly_one().await;
    assert_eq!(c.removed, ["added_in_v2"]);
    assert_eq!(l.which().await, "v1");

    // Delete then create.
    std::fs::remove_file(l.path("versioned.wasm")).unwrap();
    std::fs::write(l.path("versioned.wasm"), v2()).unwrap();
    let c = l.exactly_one().await;
    assert!(c.removed.is_empty(), "{c:?}");
    assert_eq!(l.which().await, "v2");

    // Several files at once.
    std::fs::copy(plugin_artifacts::FILES, l.path("files.wasm")).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, l.path("text.wasm")).unwrap();
    let c = l.exactly_one().await;
    assert_eq!(c.added.len(), 12, "{:?}", c.lines());

    // Deleting unregisters.
    std::fs::remove_file(l.path("text.wasm")).unwrap();
    let c = l.exactly_one().await;
    assert_eq!(c.removed.len(), 4);
    err(&call(&l.host, "echo", &["x"]).await, ErrorKind::UnknownTool);
    // Touching a file without changing its content changes nothing.
    std::fs::write(l.path("files.wasm"), std::fs::read(plugin_artifacts::FILES).unwrap()).unwrap();
    tokio::time::sleep(SETTLE).await;
    assert!(l.changes.is_empty());
    assert_eq!(l.reloader.generation(), 6, "one swap per pattern");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_written_file_never_loads_and_the_complete_one_does() {
    let mut l = live().await;
    let bytes = v1();
    let (first, second) = bytes.split_at(bytes.len() / 2);
    std::fs::write(l.path("versioned.wasm"), first).unwrap();
    let c = l.next().await;
    assert!(c.added.is_empty());
    assert!(
        c.failures[0].reason.contains("not valid WebAssembly")
            || c.failures[0].reason.contains("cannot load"),
        "{c:?}"
    );
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(l.path("versioned.wasm"))
        .unwrap()
        .write_all(second)
        .unwrap();
    let c = l.next().await;
    assert_eq!(tools(&c), ["nap", "which"]);
    assert!(l.host.registry.load().failures().is_empty(), "the failure is cleared once the file loads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_replacement_keeps_the_old_version_serving() {
    let mut l = live().await;
    std::fs::write(l.path("versioned.wasm"), v1()).unwrap();
    l.next().await;
    std::fs::write(l.path("versioned.wasm"), b"\0asm garbage").unwrap();
    let c = l.next().await;
    assert!(c.failures[0].reason.ends_with("(still serving v0.1.0)"), "{c:?}");
    assert!(c.removed.is_empty());
    assert_eq!(l.which().await, "v1");
    let listed = toolhost::commands::list::render_list(&l.host.registry.load(), &l.host.config);
    assert!(listed.contains("! versioned.wasm: ") && listed.contains("still serving v0.1.0"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_finishes_when_its_file_is_deleted() {
    let mut l = live().await;
    std::fs::write(l.path("versioned.wasm"), v1()).unwrap();
    l.next().await;
    let host = Arc::new(l.host);
    let h = host.clone();
    let long = tokio::spawn(async move { h.call(&toolhost_core::ToolCall::new("nap", ["1500"])).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::remove_file(l.env.plugins.path().join("versioned.wasm")).unwrap();
    let c = tokio::time::timeout(Duration::from_secs(30), l.changes.recv()).await.unwrap().unwrap();
    assert_eq!(c.removed.len(), 2);
    let outcome = long.await.unwrap();
    assert_eq!(ok(&outcome), "slept 1500 ms");
    err(&call(&host, "nap", &["1"]).await, ErrorKind::UnknownTool);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_quick_writes_end_on_the_last_version() {
    let mut l = live().await;
    let (a, b) = (v1(), v2());
    for i in 0..20 {
        std::fs::write(l.path("versioned.wasm"), if i % 2 == 0 { &a } else { &b }).unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    l.next().await;
    tokio::time::sleep(SETTLE).await;
    while l.changes.try_recv().is_ok() {}
    assert_eq!(l.which().await, "v2");
    assert!(l.reloader.generation() <= 3, "{} reloads for one burst", l.reloader.generation());
    assert!(l.host.registry.load().failures().is_empty());
}

/// A new version asking for more capabilities than the approved one waits for the operator:
/// the old version keeps serving, `list` shows the pending request, `toolhost approve`
/// activates it in the running host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_requesting_more_waits_for_approval() {
    let mut l = live().await;
    std::fs::write(l.path("versioned.wasm"), v1()).unwrap();
    l.next().await;
    assert_eq!(l.which().await, "v1");

    // v3 requests network access that v1 did not.
    let v3 = std::fs::read(plugin_artifacts::VERSIONED_V3).unwrap();
    std::fs::write(l.path(".versioned.tmp"), &v3).unwrap();
    std::fs::rename(l.path(".versioned.tmp"), l.path("versioned.wasm")).unwrap();
    let c = l.next().await;
    assert!(c.added.is_empty() && c.changed.is_empty(), "{c:?}");
    assert_eq!(c.pending.len(), 1, "{c:?}");
    assert_eq!(c.pending[0].extra, ["net example.com"]);
    let line = c.lines().join("\n");
    assert!(
        line.contains("? plugin `versioned` v0.3.0") && line.contains("toolhost approve versioned"),
        "{line}"
    );
    assert_eq!(l.which().await, "v1", "the approved version keeps serving");

    // A separate `toolhost list` sees the same pending request.
    let dir = l.env.plugins.path().to_path_buf();
    let run =
        |args: &[&str]| crate::support::toolhost().arg("--plugins").arg(&dir).args(args).output().unwrap();
    let out = run(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PENDING APPROVAL") && text.contains("net example.com"), "{text}");
    assert!(!text.contains("which()"), "a pending plugin is not loaded by a fresh host:\n{text}");

    // Approving activates it in the running host, without touching the plugin file.
    let out = run(&["approve", "versioned"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("newly approved: net example.com"), "{said}");
    assert!(said.contains("not granted:    net example.com"), "approval is not a grant: {said}");
    // The record says by whom: the local user of the `approve` process.
    let record = std::fs::read_to_string(dir.join(toolhost_core::registry::approvals::FILE)).unwrap();
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    let by = &record["approved_by"]["versioned"];
    assert!(by["who"].as_str().is_some_and(|w| w.starts_with("local:")), "{record}");
    assert!(by["at"].as_str().is_some_and(|t| t.ends_with('Z')), "{record}");
    let c = l.next().await;
    assert_eq!(c.changed.len(), 2, "{c:?}");
    assert_eq!(l.which().await, "v3");
    assert!(l.reloader.generation() >= 3);

    // Going back to fewer capabilities needs no approval.
    std::fs::write(l.path(".versioned.tmp"), v1()).unwrap();
    std::fs::rename(l.path(".versioned.tmp"), l.path("versioned.wasm")).unwrap();
    let c = l.next().await;
    assert!(c.pending.is_empty() && !c.changed.is_empty(), "{c:?}");
    assert_eq!(l.which().await, "v1");

    let out = run(&["approve", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no plugin named `nosuch`"));
}

/// A start reads the plugins folder on its own thread while the engine is built, and starts
/// watching it before reading: a file added after that read, before the reloader's watch is set
/// up, is still picked up (a watch started only after the first load would never see it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_added_after_the_read_ahead_is_not_missed() {
    use toolhost_core::registry::{ReadAhead, Registry};
    let env = Env::with(&[]);
    let config = Arc::new(env.config.clone());
    let ahead = ReadAhead::start(config.clone(), toolhost_core::registry::reload::WatchFrom::Now);
    let host = toolhost_core::Toolhost::from_parts(
        crate::support::runtime(),
        config,
        Registry::default(),
        Arc::new(toolhost_core::executor::NoConfirm),
    );
    let reloader = Reloader::new(host.runtime.clone(), host.config.clone(), host.registry.clone());
    reloader.read_ahead(ahead);
    let mut changes = reloader.subscribe();
    // The first rescan takes the read-ahead's folder: empty.
    let first = reloader.rescan().unwrap();
    assert!(first.added.is_empty(), "{first:?}");

    std::fs::write(env.plugins.path().join("versioned.wasm"), v1()).unwrap();
    let _watch = reloader.watch(DEBOUNCE).unwrap();
    let c = tokio::time::timeout(Duration::from_secs(30), changes.recv())
        .await
        .expect("the file added before the watch was set up was never loaded")
        .unwrap();
    assert!(tools(&c).contains(&"which".to_string()), "{c:?}");
    assert_eq!(ok(&call(&host, "which", &[]).await), "v1");
}

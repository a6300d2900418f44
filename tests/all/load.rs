//! Load: 1,000 calls from 50 concurrent tasks on mixed tools while the plugins folder is being
//! rewritten. Every call gets its own correct answer (none lost, none crossed), and the host is
//! still serving at the end.

use crate::support::{Env, ok};
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::registry::reload::Reloader;
use toolhost_core::{Outcome, ToolCall};
use toolhost_spec::manifest::FsMode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_calls_while_the_folder_is_rewritten() {
    let mut env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::FILES, plugin_artifacts::VERSIONED]);
    env.config.grant_workspace("files", FsMode::ReadOnly);
    std::fs::write(env.ws("4k.txt"), "z".repeat(4096)).unwrap();
    let host = Arc::new(env.host());
    let reloader = Reloader::new(host.runtime.clone(), host.config.clone(), host.registry.clone());
    reloader.rescan().unwrap();
    let _watch = reloader.watch(Duration::from_millis(50)).unwrap();

    // Rewrite the folder the whole time: new versions, a no-op rewrite, a junk file.
    let dir = env.plugins.path().to_path_buf();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        tokio::task::spawn_blocking(move || {
            let (v1, v2) = (
                std::fs::read(plugin_artifacts::VERSIONED).unwrap(),
                std::fs::read(plugin_artifacts::VERSIONED_V2).unwrap(),
            );
            let text = std::fs::read(plugin_artifacts::TEXT).unwrap();
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let tmp = dir.join(".versioned.wasm.tmp");
                std::fs::write(&tmp, if i.is_multiple_of(2) { &v2 } else { &v1 }).unwrap();
                std::fs::rename(&tmp, dir.join("versioned.wasm")).unwrap();
                std::fs::write(dir.join("text.wasm"), &text).unwrap();
                std::fs::write(dir.join("junk.wasm"), b"\0asm junk").unwrap();
                // Longer than the debounce, so rescans really happen while calls run.
                std::thread::sleep(Duration::from_millis(120));
                let _ = std::fs::remove_file(dir.join("junk.wasm"));
                i += 1;
            }
            i
        })
    };

    let tasks: Vec<_> = (0..50)
        .map(|t| {
            let host = host.clone();
            tokio::spawn(async move {
                let mut results: Vec<(String, ToolCall, Outcome)> = Vec::new();
                for i in 0..20 {
                    let id = format!("t{t}-c{i}");
                    let call = match i % 5 {
                        0 => ToolCall::new("echo", [id.clone()]),
                        1 => ToolCall::new(
                            "split_task",
                            [id.clone(), r#"[{"title": "a", "days": 1}]"#.to_string()],
                        ),
                        2 => ToolCall::new("read", ["4k.txt"]),
                        3 => ToolCall::new("which", Vec::<String>::new()),
                        _ => ToolCall::new("count_words", [format!("{id} two three")]),
                    };
                    let outcome = host.call(&call).await;
                    results.push((id, call, outcome));
                    // Spread the calls over about a second of folder churn.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                results
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("a caller task panicked"));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rewrites = writer.await.unwrap();

    assert_eq!(all.len(), 1000, "calls lost");
    let mut ids: Vec<&String> = all.iter().map(|(id, _, _)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 1000, "calls duplicated");
    for (id, call, o) in &all {
        let data = o.data.as_deref().unwrap_or_else(|| panic!("{id} {call:?} failed: {o:?}"));
        match call.name.as_str() {
            "echo" => assert_eq!(data, id),
            "split_task" => assert!(data.starts_with(&format!("# {id}\n")), "{data}"),
            "read" => assert_eq!(data, "z".repeat(4096)),
            "which" => assert!(data == "v1" || data == "v2", "{data}"),
            _ => assert!(data.contains("\"words\":3"), "{data}"),
        }
    }
    assert_eq!(ok(&host.call(&ToolCall::new("echo", ["still here"])).await), "still here");
    let peak = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("0").parse::<u64>().unwrap_or(0) / 1024)
        .unwrap_or(0);
    crate::reliability::record_summary(
        "load",
        &format!(
            "load: 1000 calls from 50 tasks, 0 lost, 0 duplicated, 0 wrong, {rewrites} folder rewrites, {} registry swaps, peak RSS of the test process {peak} MiB",
            reloader.generation()
        ),
    );
    assert!(
        rewrites >= 3 && reloader.generation() >= 2,
        "the folder was not really rewritten during the run"
    );
}

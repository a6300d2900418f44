//! Issue #58: what a plugin serves besides tools — a resource read (static and through a
//! template), a prompt got, a completion — each beside a tool call of the same plugin, measured
//! side by side in this process through the one executor every front end uses (target: each
//! ≤ 1.2× that tool call).

use super::{AlwaysConfirm, host_case, interleaved, us};
use super::{CallContext, Case, Config, FsMode, Registry, Runtime, ToolCall, Toolhost};
use std::path::Path;
use std::sync::Arc;
use toolhost_core::executor::Body;
use toolhost_core::registry::prompts::Target;

/// The static resource the `text` plugin serves (its `split_task` subtasks' JSON Schema).
const SCHEMA: &str = "text://split-task/subtask.schema.json";
/// The `files` plugin's template, as listed.
const TEMPLATE: &str = "file:///{+path}";

/// A resource read as a case: it must come back whole, as text.
fn read_case<'a>(host: &'a Arc<Toolhost>, uri: &'a str) -> Case<'a> {
    Box::new(move || {
        Box::pin(async move {
            let r = host.executor.read(uri, "resources/read", &CallContext::default()).await;
            let r = r.unwrap_or_else(|e| panic!("{uri}: {e}"));
            assert!(matches!(r.body, Body::Text(_)) && !r.truncated, "{uri}");
        })
    })
}

/// The section, on plugins of its own under `work`, `n` samples per case.
pub fn rows(line: &mut impl FnMut(String), rt: &tokio::runtime::Runtime, work: &Path, n: usize) {
    let plugins = work.join("served-plugins");
    let ws = work.join("served-ws");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    std::fs::copy(plugin_artifacts::FILES, plugins.join("files.wasm")).unwrap();
    std::fs::write(ws.join("1k.txt"), "x".repeat(1024)).unwrap();
    let mut config = Config { plugins_dir: plugins, cache_dir: None, ..Config::default() };
    config.set_workspace(&ws);
    config.grant_workspace("files", FsMode::ReadOnly);
    let runtime = Runtime::for_config(&config).unwrap();
    let registry = Registry::load(&runtime, &config).unwrap();
    let host = Arc::new(Toolhost::from_parts(runtime, Arc::new(config), registry, Arc::new(AlwaysConfirm)));
    let schema_len = rt.block_on(async {
        match host.executor.read(SCHEMA, "resources/read", &CallContext::default()).await.map(|r| r.body) {
            Ok(Body::Text(t)) => t.len(),
            other => panic!("{SCHEMA}: {other:?}"),
        }
    });

    let prompt: Case<'_> = Box::new(|| {
        let host = &host;
        Box::pin(async move {
            let args = [("path".to_string(), "1k.txt".to_string())];
            let got = host
                .executor
                .get_prompt("summarise-file", &args, "prompts/get", &CallContext::default())
                .await;
            assert!(!got.expect("summarise-file").messages.is_empty());
        })
    });
    let complete: Case<'_> = Box::new(|| {
        let host = &host;
        Box::pin(async move {
            let c = host.executor.complete(Target::Template(TEMPLATE), "path", "1k", &[]).await;
            assert_eq!(c.expect("completion of file:///{+path}").values, ["1k.txt"]);
        })
    });
    let mut cases = vec![
        host_case(&host, ToolCall::new("echo", ["hello"])),
        read_case(&host, SCHEMA),
        prompt,
        host_case(&host, ToolCall::new("read", ["1k.txt"])),
        read_case(&host, "file:///1k.txt"),
        complete,
        host_case(&host, ToolCall::new("ls", ["."])),
    ];
    let m = interleaved(rt, &mut cases, n);
    let p50 = |i: usize| m[i].stats.p50;
    let ratio = |i: usize, base: usize| p50(i).as_secs_f64() / p50(base).as_secs_f64();

    line(String::new());
    line("## Resources, prompts and completion (issue #58)".into());
    line(String::new());
    line(format!(
        "Each through the executor every front end uses (`Executor::read`, `get_prompt`, `complete`: the plugin's export run in a fresh sandbox, with its grants and limits; no observer on either side), beside a tool call of the same plugin doing the guest's same work — `echo` for `text`'s, `read` of the same file for the template read, `ls` of the same folder for the completion — side by side ({n} samples each). Target: ≤ 1.2× that tool call."
    ));
    line(String::new());
    line("| what | p50 | p99 | ÷ the plugin's tool call | target ≤ 1.2× |".into());
    line("|---|---|---|---|---|".into());
    let rows: [(&str, usize, Option<usize>); 7] = [
        ("`text`: tool call `echo(\"hello\")` (the baseline)", 0, None),
        (&format!("`text`: `resources/read` of the static `{SCHEMA}` ({schema_len} bytes)"), 1, Some(0)),
        ("`text`: `prompts/get` of `summarise-file(path=1k.txt)`", 2, Some(0)),
        ("`files`: tool call `read(\"1k.txt\")` (the baseline, a 1 KiB file)", 3, None),
        ("`files`: `resources/read` of `file:///1k.txt` (template `file:///{+path}`)", 4, Some(3)),
        (
            "`files`: tool call `ls(\".\")` (the baseline of the completion below: the same listing of the workspace)",
            6,
            None,
        ),
        (
            "`files`: `completion/complete` of the template's `path` from `1k` (`complete_file` lists the workspace as `ls` does)",
            5,
            Some(6),
        ),
    ];
    for (what, i, base) in rows {
        let (r, met) = match base {
            Some(b) => {
                let r = ratio(i, b);
                (format!("{r:.2}×"), if r <= 1.2 { "met" } else { "**not met**" })
            }
            None => ("1.00×".into(), "—"),
        };
        line(format!("| {what} | {} | {} | {r} | {met} |", us(m[i].stats.p50), us(m[i].stats.p99)));
    }
}

//! The catalog rows (issue #34): a generated catalog of 1,000 tools from 100 plugins
//! (`catalog.json`: 100 services, each six tools made from templates over its entity and four
//! written out, exposed with `[catalog] namespace = "plugin"`), loaded, listed and searched.
//! Every plugin is the `text` component under a manifest of its own (the original section's name
//! blanked, the new one appended with `manifest::embed`), so each is compiled like any plugin;
//! its tools are never called.

use super::median;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::catalog::settings::{Mode, Namespace};
use toolhost_core::engine::Runtime;
use toolhost_core::executor::AlwaysConfirm;
use toolhost_core::registry::Registry;
use toolhost_core::settings::Config;
use toolhost_core::{ToolCall, Toolhost};

const DATA: &str = include_str!("catalog.json");

/// `(plugin, tools)` manifests of the generated catalog, and the 50 `(query, right tool)` pairs.
fn catalog() -> (Vec<Value>, Vec<(String, String)>) {
    let data: Value = serde_json::from_str(DATA).expect("catalog.json");
    let param = |name: &str, description: &str, optional: bool| json!({"name": name, "type": "string", "description": description, "optional": optional});
    let tool = |name: String, description: String, params: Vec<Value>| {
        let n = params.len();
        json!({"name": name, "description": description, "params": params, "argCount": n, "parseJson": vec![false; n]})
    };
    let mut manifests = Vec::new();
    for s in data["services"].as_array().unwrap() {
        let (plugin, about, one, many) =
            (s[0].as_str().unwrap(), s[1].as_str().unwrap(), s[2].as_str().unwrap(), s[3].as_str().unwrap());
        let mut tools = vec![
            tool(
                format!("list_{many}"),
                format!("List the {many} in {about}, newest first."),
                vec![
                    param("filter", "only those containing this text", true),
                    param("limit", "at most this many", true),
                ],
            ),
            tool(
                format!("get_{one}"),
                format!("Get one {one} of {about} by its id, with all its fields."),
                vec![param("id", &format!("the {one}'s id"), false)],
            ),
            tool(
                format!("create_{one}"),
                format!("Create a new {one} in {about}."),
                vec![
                    param("title", "its title or name", false),
                    param("details", "anything else to set", true),
                ],
            ),
            tool(
                format!("update_{one}"),
                format!("Change the fields of an existing {one} in {about}."),
                vec![
                    param("id", &format!("the {one}'s id"), false),
                    param("changes", "the fields to change", false),
                ],
            ),
            tool(
                format!("delete_{one}"),
                format!("Delete a {one} from {about} for good."),
                vec![param("id", &format!("the {one}'s id"), false)],
            ),
            tool(
                format!("search_{many}"),
                format!("Full-text search over the {many} of {about}."),
                vec![param("query", "words to look for", false)],
            ),
        ];
        for extra in s[4].as_array().unwrap() {
            let words = extra[1].as_str().unwrap();
            tools.push(tool(
                extra[0].as_str().unwrap().into(),
                format!("{words}."),
                vec![param("input", "what it acts on", true)],
            ));
        }
        manifests.push(json!({
            "format": 1, "name": plugin, "version": "1.0.0",
            "description": format!("Tools for {about}."), "tools": tools,
        }));
    }
    let queries = data["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| (q[0].as_str().unwrap().to_string(), q[1].as_str().unwrap().to_string()))
        .collect();
    (manifests, queries)
}

/// Write each manifest as a plugin file into `dir` (the `text` component, its own manifest
/// section's name blanked so `embed` can append the new one).
fn write_plugins(dir: &Path, manifests: &[Value]) {
    let mut template = std::fs::read(plugin_artifacts::TEXT).unwrap();
    let name = b"\x11toolhost-manifest";
    let at = template.windows(name.len()).position(|w| w == name).expect("the manifest section of text.wasm");
    template[at + name.len() - 1] = b'X';
    std::fs::create_dir_all(dir).unwrap();
    for m in manifests {
        let manifest: toolhost_spec::Manifest = serde_json::from_value(m.clone()).unwrap();
        let bytes = toolhost_spec::manifest::embed(&template, &manifest).expect("embed a generated manifest");
        std::fs::write(dir.join(format!("{}.wasm", manifest.name)), bytes).unwrap();
    }
}

fn config(dir: &Path, cache: &Path, mode: Mode) -> Config {
    let mut c =
        Config { plugins_dir: dir.to_path_buf(), cache_dir: Some(cache.to_path_buf()), ..Config::default() };
    c.catalog.namespace = Namespace::Plugin;
    c.catalog.mode = mode;
    c
}

/// Load `dir` with a fresh engine (so only the disk cache can be warm): the registry, and how long.
fn load(dir: &Path, cache: &Path, mode: Mode) -> (Arc<Runtime>, Config, Registry, Duration) {
    let cfg = config(dir, cache, mode);
    let runtime = Runtime::for_config(&cfg).unwrap();
    let t = Instant::now();
    let reg = Registry::load(&runtime, &cfg).unwrap();
    let took = t.elapsed();
    (runtime, cfg, reg, took)
}

fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub fn rows(
    line: &mut dyn FnMut(String),
    rt: &tokio::runtime::Runtime,
    baseline: &Arc<Toolhost>,
    quick: bool,
) {
    let (manifests, queries) = catalog();
    let work = tempfile::tempdir().unwrap();
    let all = work.path().join("all");
    let ten = work.path().join("ten");
    write_plugins(&all, &manifests);
    write_plugins(&ten, &manifests[..10]);
    let cache = work.path().join("cache");

    line(String::new());
    line("## A catalog of 1,000 tools (issue #34)".into());
    line(String::new());
    line(format!(
        "{} plugins of 10 tools each, generated from `host/cli/benches/catalog/catalog.json`, exposed as `plugin.tool` (`[catalog] namespace = \"plugin\"`). Load times use a fresh engine each (median of {} loads when warm).",
        manifests.len(),
        if quick { 1 } else { 5 }
    ));
    line(String::new());
    line("| what | time | ratio |".into());
    line("|---|---|---|".into());
    let (_, _, cold_reg, cold) = load(&all, &cache, Mode::All);
    assert_eq!(
        cold_reg.tools().count(),
        1000,
        "the generated catalog loads whole: {:?}",
        cold_reg.failures()
    );
    let runs = if quick { 1 } else { 5 };
    let warm = |dir: &Path, mode| median((0..runs).map(|_| load(dir, &cache, mode).3).collect());
    let (ten_warm, all_warm, search_warm) =
        (warm(&ten, Mode::All), warm(&all, Mode::All), warm(&all, Mode::Search));
    let x = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    line(format!(
        "| load 10 plugins / 100 tools, warm compile cache (baseline) | {} | 1.00× |",
        ms(ten_warm)
    ));
    line(format!(
        "| load 100 plugins / 1,000 tools, warm compile cache | {} | {:.2}× the baseline |",
        ms(all_warm),
        x(all_warm, ten_warm)
    ));
    line(format!(
        "| the same in search mode (BM25 index of the 1,000 tools built at load) | {} | {:.2}× listing mode |",
        ms(search_warm),
        x(search_warm, all_warm)
    ));
    line(format!(
        "| load 100 plugins / 1,000 tools, empty compile cache (each compiled) | {} | {:.2}× warm |",
        ms(cold),
        x(cold, all_warm)
    ));

    // tools/list and the OpenAI tools array: size and time to build and serialize, listing
    // every tool vs search mode (find_tools alone, nothing pinned).
    let host = |mode| {
        let (runtime, cfg, reg, _) = load(&all, &cache, mode);
        Arc::new(Toolhost::from_parts(runtime, Arc::new(cfg), reg, Arc::new(AlwaysConfirm)))
    };
    let (listing, searching) = (host(Mode::All), host(Mode::Search));
    let n = if quick { 20 } else { 200 };
    let measure = |h: &Arc<Toolhost>| {
        let server = toolhost_frontends::mcp::McpServer::new(h.executor.clone(), None).unwrap();
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..n {
            let t = Instant::now();
            let text = serde_json::to_string(&server.tools_result(&Default::default(), true)).unwrap();
            times.push(t.elapsed());
            size = text.len();
        }
        let openai =
            toolhost_frontends::openai::tools(&toolhost_core::view::listing(&h.registry.load(), &h.config))
                .unwrap()
                .to_string()
                .len();
        (size, median(times), openai)
    };
    let (all_size, all_time, all_openai) = measure(&listing);
    let (s_size, s_time, s_openai) = measure(&searching);
    line(String::new());
    line(format!("`tools/list` (built and serialized as JSON, median of {n}) and the OpenAI `tools` array:"));
    line(String::new());
    line("| what | every tool listed | search mode | search ÷ listed |".into());
    line("|---|---|---|---|".into());
    line(format!(
        "| MCP `tools/list` size | {} KiB | {:.1} KiB | {:.4}× |",
        all_size / 1024,
        s_size as f64 / 1024.0,
        s_size as f64 / all_size as f64
    ));
    line(format!(
        "| MCP `tools/list` time | {} | {} | {:.4}× |",
        ms(all_time),
        us(s_time),
        x(s_time, all_time)
    ));
    line(format!(
        "| OpenAI `tools` array size (what every request carries) | {} KiB | {:.1} KiB | {:.4}× |",
        all_openai / 1024,
        s_openai as f64 / 1024.0,
        s_openai as f64 / all_openai as f64
    ));

    // find_tools through the executor, beside an `echo` call of the baseline host.
    let rounds = if quick { 2 } else { 20 };
    let (mut find, mut echo) = (Vec::new(), Vec::new());
    rt.block_on(async {
        let echo_call = ToolCall::new("echo", ["hello"]);
        for _ in 0..rounds {
            for (q, _) in &queries {
                let call = ToolCall::new("find_tools", [q.as_str()]);
                let t = Instant::now();
                assert!(searching.call(&call).await.success);
                find.push(t.elapsed());
                let t = Instant::now();
                assert!(baseline.call(&echo_call).await.success);
                echo.push(t.elapsed());
            }
        }
    });
    line(String::new());
    line(format!(
        "`find_tools` over the 1,000 tools ({} calls through the executor, the 50 queries in turn, each beside an `echo` call):",
        find.len()
    ));
    line(String::new());
    line("| what | p50 | p99 | ÷ `echo` p50 |".into());
    line("|---|---|---|---|".into());
    let (fp50, ep50) = (median(find.clone()), median(echo.clone()));
    line(format!("| executor `echo(\"hello\")` (baseline) | {} | {} | 1.00× |", us(ep50), us(p99(echo))));
    line(format!(
        "| executor `find_tools(query)` | {} | {} | {:.2}× |",
        us(fp50),
        us(p99(find)),
        x(fp50, ep50)
    ));

    // Recall: is the right tool among the first 5 (and first) of find_tools' answer?
    let index = &searching.registry.load_full();
    let search = index.search().expect("search mode");
    let (mut at1, mut at5, mut rr) = (0, 0, 0.0);
    let mut misses = Vec::new();
    for (q, want) in &queries {
        let got = search.index.search(q, 5);
        match got.iter().position(|g| g == want) {
            Some(i) => {
                at5 += 1;
                at1 += usize::from(i == 0);
                rr += 1.0 / (i + 1) as f64;
            }
            None => {
                misses.push(format!("“{q}” → `{want}` (got {})", got.first().copied().unwrap_or("nothing")))
            }
        }
    }
    let total = queries.len();
    line(String::new());
    line(format!(
        "Ranking (BM25, `bm25` crate; names, titles, descriptions, parameters and plugin names; words split and Snowball-stemmed), {total} natural-language queries whose right tool is known:"
    ));
    line(String::new());
    line("| measure | value |".into());
    line("|---|---|".into());
    line(format!("| recall@5 | {at5}/{total} = {:.0}% |", 100.0 * at5 as f64 / total as f64));
    line(format!("| recall@1 | {at1}/{total} = {:.0}% |", 100.0 * at1 as f64 / total as f64));
    line(format!("| mean reciprocal rank (top 5) | {:.2} |", rr / total as f64));
    if !misses.is_empty() {
        line(String::new());
        line(format!("Missed at 5: {}.", misses.join("; ")));
    }
}

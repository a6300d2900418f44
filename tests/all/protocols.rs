//! The LLM front ends over the real plugins: the `[TOOL]` text protocol (feedback block and
//! prompt, against golden files) and OpenAI function calling (schema valid against the JSON
//! Schema meta-schema, `tool_calls` executed into `role: "tool"` messages).

use crate::support::Env;
use std::path::PathBuf;
use toolhost_frontends::{openai, text};
use toolhost_spec::manifest::FsMode;

fn golden(name: &str) -> PathBuf {
    crate::support::root().join("tests/protocol").join(name)
}

/// Compare with a golden file (`TOOLHOST_BLESS=1` rewrites it).
#[track_caller]
fn assert_golden(name: &str, actual: &str) {
    let path = golden(name);
    if std::env::var_os("TOOLHOST_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("missing golden {}", path.display()));
    assert!(
        expected == actual,
        "{} differs:\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

fn env() -> Env {
    let mut env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    env.config.grant_workspace("files", FsMode::ReadWrite);
    env
}

const REPLY: &str = "I'll plan it, then save a note.\n\
[TOOL] split_task(\"Launch\", [{\"title\": \"design, review\", \"days\": 2}]) [/TOOL]\n\
[TOOL] write(\"note.txt\", apples, pears) [/TOOL]\n\
[TOOL] read(\"note.txt\") [/TOOL]\n\
A broken one: [TOOL] read(\"oops) [/TOOL]\n\
[TOOL] raed(\"note.txt\") [/TOOL]\n\
[TOOL] delete(\"note.txt\") [/TOOL]\n\
[TOOL] copy(\"note.txt\") [/TOOL]\n\
Done.";

#[tokio::test]
async fn text_reply_runs_in_order_and_feeds_back() {
    let env = env();
    let host = env.host();
    let results = text::execute(&host.executor, REPLY).await;
    let feedback = text::feedback(REPLY, &results);
    assert_golden("feedback.golden", &feedback);
    // The write ran before the read, and the dangerous delete did not run.
    assert_eq!(std::fs::read_to_string(env.ws("note.txt")).unwrap(), "apples,pears");
    let json = text::results_json(&results);
    let segs = json["segments"].as_array().unwrap();
    assert_eq!(segs.iter().filter(|s| s["type"] == "call").count(), 6);
    assert_eq!(segs.iter().filter(|s| s["type"] == "error").count(), 1);
    assert!(
        segs.iter().filter(|s| s["type"] == "error").all(|s| s.get("outcome").is_none()),
        "parse errors never run"
    );
}

#[test]
fn prompt_lists_every_tool_from_the_registry() {
    let env = env();
    let prompt = text::prompt(&env.registry(), &toolhost_core::view::listing(&env.registry(), &env.config));
    assert_golden("prompt.golden", &prompt);
    for tool in ["ls", "read", "write", "split_task", "search", "count_words", "delete"] {
        assert!(prompt.contains(&format!("- {tool}(")), "{tool} missing from the prompt");
    }
    assert!(
        prompt.contains("delete(path) — Delete a file, or a directory with everything in it. DANGEROUS.")
    );
    // The model is told that a call inside code is an example (issue #21).
    assert!(prompt.contains("never inside a code block (```) or `backticks`"));
}

#[test]
fn openai_schema_is_valid_json_schema() {
    let env = env();
    let tools = openai::tools(&toolhost_core::view::listing(&env.registry(), &env.config)).unwrap();
    assert_golden("openai_tools.json", &(serde_json::to_string_pretty(&tools).unwrap() + "\n"));
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 12);
    for t in tools {
        assert_eq!(t["type"], "function");
        let params = &t["function"]["parameters"];
        if let Err(e) = jsonschema::meta::validate(params) {
            panic!("{} parameters are not a valid JSON Schema: {e}", t["function"]["name"]);
        }
        assert!(openai::is_openai_name(t["function"]["name"].as_str().unwrap()));
    }
    // The split_task schema accepts a real call and rejects a wrong one.
    let split = tools.iter().find(|t| t["function"]["name"] == "split_task").unwrap();
    let validator = jsonschema::validator_for(&split["function"]["parameters"]).unwrap();
    assert!(validator.is_valid(&serde_json::json!({"title": "x", "subtasks": [{"title": "a", "days": 1}]})));
    assert!(!validator.is_valid(&serde_json::json!({"title": "x", "subtasks": "nope"})));
    assert!(!validator.is_valid(&serde_json::json!({"title": "x"})));
}

#[tokio::test]
async fn openai_tool_calls_round_trip() {
    let env = env();
    let host = env.host();
    let message = openai::parse_message(
        &serde_json::json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "split_task",
                    "arguments": "{\"title\": \"Launch\", \"subtasks\": [{\"title\": \"ship\", \"days\": 1}]}"}},
                {"id": "call_2", "type": "function", "function": {"name": "write",
                    "arguments": "{\"path\": \"a.txt\", \"content\": \"x, y\"}"}},
                {"id": "call_3", "type": "function", "function": {"name": "split_task",
                    "arguments": "{\"title\": \"Launch\"}"}},
                {"id": "call_4", "type": "function", "function": {"name": "raed", "arguments": "{}"}},
                {"id": "call_5", "type": "function", "function": {"name": "read", "arguments": "not json"}}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let results = openai::execute(&host.executor, &message).await;
    let ids: Vec<&str> = results.iter().map(|(m, _)| m.tool_call_id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3", "call_4", "call_5"]);
    assert!(results.iter().all(|(m, _)| m.role == "tool"));
    let content = |i: usize| -> serde_json::Value { serde_json::from_str(&results[i].0.content).unwrap() };
    assert_eq!(content(0)["success"], true);
    assert!(content(0)["data"].as_str().unwrap().contains("1. ship"));
    assert_eq!(content(1)["success"], true);
    assert_eq!(std::fs::read_to_string(env.ws("a.txt")).unwrap(), "x, y");
    assert_eq!(content(2)["kind"], "bad_arguments");
    assert!(content(2)["error"].as_str().unwrap().contains("needs the argument `subtasks`"));
    assert_eq!(content(3)["kind"], "unknown_tool");
    assert!(content(3)["error"].as_str().unwrap().contains("did you mean: read"));
    assert_eq!(content(4)["kind"], "bad_arguments");
}

/// The operator's `[tool.X] danger = true` reaches every front end through the one
/// `ToolView`: the `[TOOL]` prompt, the OpenAI tools, MCP `tools/list` and `toolhost list`
/// all mark `read` dangerous, and MCP does not also call it read-only (issue #12, 1 and 2).
#[test]
fn an_operator_danger_marking_reaches_every_front_end() {
    let mut env = Env::with(&[plugin_artifacts::FILES]);
    env.config.tools.entry("read".into()).or_default().danger = Some(true);
    let registry = env.registry();

    let prompt = text::prompt(&registry, &toolhost_core::view::listing(&registry, &env.config));
    let line = prompt.lines().find(|l| l.starts_with("- read(")).expect("read in the prompt");
    assert!(line.ends_with("DANGEROUS."), "prompt line: {line}");

    let tools = openai::tools(&toolhost_core::view::listing(&registry, &env.config)).unwrap();
    let read = tools.as_array().unwrap().iter().find(|t| t["function"]["name"] == "read").unwrap();
    assert!(read["function"]["description"].as_str().unwrap().contains("Dangerous"), "{read}");

    let host = env.host();
    let server = toolhost_frontends::mcp::McpServer::new(host.executor.clone(), None).expect("mcp server");
    let tool = server.tools(&Default::default()).into_iter().find(|t| t.name == "read").unwrap();
    let a = tool.annotations.expect("annotations");
    assert_eq!(a.destructive_hint, Some(true), "{a:?}");
    assert_eq!(a.read_only_hint, Some(false), "a dangerous tool is not advertised read-only: {a:?}");
    // An unmarked read-only tool keeps its hints.
    let ls =
        server.tools(&Default::default()).into_iter().find(|t| t.name == "ls").unwrap().annotations.unwrap();
    assert_eq!((ls.read_only_hint, ls.destructive_hint), (Some(true), Some(false)));

    let listed = toolhost::commands::list::render_list(&registry, &env.config);
    let row = listed.lines().find(|l| l.starts_with("read(")).unwrap();
    assert!(row.contains("danger"), "list row: {row}");
}

/// A reply as a Chinese-writing model produces it (issue #21): full-width parentheses, markers
/// and commas mixed with ASCII, and the dangerous `delete` shown twice as an example in code.
const REPLY_FULL_WIDTH: &str = "好的，我先保存笔记：\n\
[TOOL] write（“笔记.txt”, “苹果，香蕉”）[/TOOL]\n\
【TOOL】read(\"笔记.txt\")【／TOOL】\n\
［TOOL］ echo（\"apples，pears\"）［/TOOL］\n\
[TOOL] copy(\"笔记.txt\"，\"副本.txt\") [/TOOL]\n\
删除文件的写法是这样的（只是示例）：\n\
```\n\
[TOOL] delete(\"笔记.txt\") [/TOOL]\n\
```\n\
或者写成一行：`【TOOL】delete（“笔记.txt”）【/TOOL】`。";

#[tokio::test]
async fn calls_in_code_are_examples_even_when_dangerous_tools_are_allowed() {
    let env = env();
    // The operator allows dangerous calls: only the example rule keeps `delete` from running.
    let host = env.host_yes();
    let results = text::execute(&host.executor, REPLY_FULL_WIDTH).await;
    let feedback = text::feedback(REPLY_FULL_WIDTH, &results);
    assert_golden("feedback_full_width.golden", &feedback);
    assert_eq!(
        std::fs::read_to_string(env.ws("笔记.txt")).unwrap(),
        "苹果，香蕉",
        "the examples did not run"
    );
    assert!(!env.ws("副本.txt").exists(), "a full-width comma is not a separator: copy did not parse");
    let kinds: Vec<&str> = results
        .iter()
        .filter_map(|(seg, outcome)| match (seg, outcome) {
            (text::Segment::Call { .. }, Some(o)) if o.success => Some("ok"),
            (text::Segment::Error { .. }, None) => Some("parse_error"),
            (text::Segment::Example { call, .. }, None) if call.name == "delete" => Some("example"),
            (text::Segment::Text { .. }, None) => None,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["ok", "ok", "ok", "parse_error", "example", "example"]);
    let json = text::results_json(&results);
    let examples: Vec<_> =
        json["segments"].as_array().unwrap().iter().filter(|s| s["type"] == "example").collect();
    assert_eq!(examples.len(), 2);
    assert_eq!(examples[0]["code"], serde_json::json!({"kind": "fenced_block", "line": 7, "column": 1}));
    assert_eq!(examples[1]["code"]["kind"], "span");
    assert!(examples.iter().all(|e| e.get("outcome").is_none()), "examples never run");
}

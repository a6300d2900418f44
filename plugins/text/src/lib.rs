//! `text`: tools over text — word counts, a workspace search whose query may contain commas,
//! and a planner that takes its subtasks as a JSON array.

use serde::Deserialize;

/// One subtask of `split_task`, as the model writes it in JSON.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subtask {
    pub title: String,
    #[serde(default)]
    pub days: Option<f64>,
    #[serde(default)]
    pub owner: Option<String>,
}

/// Walk `dir` (relative to the workspace) depth-first in name order, calling `f` per file.
fn walk(dir: &std::path::Path, f: &mut dyn FnMut(&std::path::Path) -> bool) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let ty = entry.file_type()?;
        if ty.is_dir() {
            walk(&path, f)?;
        } else if ty.is_file() && !f(&path) {
            return Ok(());
        }
    }
    Ok(())
}

#[toolhost_sdk::plugin(fs = "workspace:ro")]
mod tools {
    use super::{SUBTASK_SCHEMA, Subtask, uri_path, walk};

    /// Echo the text back unchanged (useful to test a setup).
    ///
    /// - `text`: any text; commas are part of it
    #[tool(
        category = "text",
        rest,
        read_only,
        title = "Echo text",
        idempotent,
        icon = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    )]
    pub fn echo(text: String) -> String {
        text
    }

    /// Count the words, lines and characters of a text.
    ///
    /// - `text`: the text; commas are part of it
    #[tool(
        category = "text",
        rest,
        read_only,
        output_schema = r#"{"type": "object", "required": ["words", "lines", "chars"],
            "properties": {"words": {"type": "integer"}, "lines": {"type": "integer"},
                           "chars": {"type": "integer"}}}"#
    )]
    pub fn count_words(text: String) -> serde_json::Value {
        serde_json::json!({
            "words": text.split_whitespace().count(),
            "lines": text.lines().count(),
            "chars": text.chars().count(),
        })
    }

    /// Search the workspace's text files for lines containing a phrase (case-insensitive).
    /// Prints `file:line: text` per match, at most 200 matches.
    ///
    /// - `query`: the phrase to find; commas are part of it
    #[tool(category = "text", rest, read_only, output_limit = 8000)]
    pub fn search(query: String) -> Result<String, String> {
        let needle = query.trim().to_lowercase();
        if needle.is_empty() {
            return Err("the search phrase is empty".into());
        }
        let mut hits = Vec::new();
        walk(std::path::Path::new("."), &mut |path| {
            if let Ok(text) = std::fs::read_to_string(path) {
                for (i, line) in text.lines().enumerate() {
                    if line.to_lowercase().contains(&needle) {
                        let shown = path.strip_prefix("./").unwrap_or(path).display();
                        hits.push(format!("{shown}:{}: {}", i + 1, line.trim()));
                        if hits.len() >= 200 {
                            return false;
                        }
                    }
                }
            }
            true
        })
        .map_err(|e| format!("cannot search the workspace: {e}"))?;
        if hits.is_empty() {
            return Ok(format!("no line contains `{}`", query.trim()));
        }
        Ok(hits.join("\n"))
    }

    /// Split a task into an ordered plan of subtasks with a running total of days.
    ///
    /// - `title`: the task
    /// - `subtasks`: JSON array of objects `{"title": string, "days"?: number, "owner"?: string}`
    #[tool(category = "task", read_only)]
    pub fn split_task(
        title: String,
        #[schema = r#"{"type":"array","minItems":1,"items":{"type":"object","required":["title"],"properties":{"title":{"type":"string"},"days":{"type":"number","minimum":0},"owner":{"type":"string"}},"additionalProperties":false}}"#]
        subtasks: Vec<Subtask>,
    ) -> Result<String, String> {
        if subtasks.is_empty() {
            return Err("`subtasks` is empty: give at least one subtask".into());
        }
        let mut out = format!("# {}\n", title.trim());
        let mut total = 0.0;
        for (i, s) in subtasks.iter().enumerate() {
            if s.title.trim().is_empty() {
                return Err(format!("subtask {} has an empty title", i + 1));
            }
            let days = s.days.unwrap_or(0.0);
            if !(days >= 0.0 && days.is_finite()) {
                return Err(format!("subtask {} has an invalid number of days", i + 1));
            }
            total += days;
            out.push_str(&format!("{}. {}", i + 1, s.title.trim()));
            if let Some(owner) = &s.owner {
                out.push_str(&format!(" (@{owner})"));
            }
            if s.days.is_some() {
                out.push_str(&format!(" — {days} d, done by day {total}"));
            }
            out.push('\n');
        }
        let n = subtasks.len();
        out.push_str(&format!("total: {n} subtask{}, {total} days", if n == 1 { "" } else { "s" }));
        Ok(out)
    }

    /// Ask the model for a summary of a file of the workspace, the file attached as a resource
    /// to read (the `files` plugin serves it).
    ///
    /// - `path`: the file, relative to the workspace
    /// - `style`: how to summarise it (`short`, `bullets`, `detailed`); short when left out
    #[prompt(name = "summarise-file", title = "Summarise a file")]
    pub fn summarise_file(path: String, style: Option<String>) -> Vec<toolhost_sdk::prompt::Message> {
        use toolhost_sdk::prompt;
        let style = style.unwrap_or_else(|| "short".into());
        vec![
            prompt::user(format!(
                "Summarise the file `{path}` of the workspace ({style}): read it first, it is attached."
            )),
            prompt::link(format!("file:///{}", uri_path(&path)), path),
        ]
    }

    /// The workspace's files whose path starts with what was typed (at most 100).
    #[complete(prompt = "summarise-file", argument = "path")]
    pub fn complete_path(value: String) -> Result<Vec<String>, String> {
        let mut found = Vec::new();
        walk(std::path::Path::new("."), &mut |p| {
            let rel = p.strip_prefix(".").unwrap_or(p).to_string_lossy().trim_start_matches('/').to_string();
            if rel.starts_with(&value) {
                found.push(rel);
            }
            found.len() < 100
        })
        .map_err(|e| format!("cannot list the workspace: {e}"))?;
        Ok(found)
    }

    /// The JSON Schema of one subtask of `split_task`: read it before writing a plan.
    #[resource(
        uri = "text://split-task/subtask.schema.json",
        name = "subtask-schema",
        title = "Subtask schema",
        mime_type = "application/schema+json"
    )]
    pub fn subtask_schema() -> &'static str {
        SUBTASK_SCHEMA
    }
}

/// `path` as the path of a `file:` URI: what a URI cannot hold as is percent-encoded.
fn uri_path(path: &str) -> String {
    path.chars()
        .map(|c| match c {
            '%' | ' ' | '?' | '#' | '"' | '<' | '>' => format!("%{:02X}", c as u32),
            c if c.is_control() => format!("%{:02X}", c as u32),
            c => c.to_string(),
        })
        .collect()
}

/// What `split_task` takes for each subtask (the one the tool's `#[schema]` requires, item by
/// item).
const SUBTASK_SCHEMA: &str = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Subtask","type":"object","required":["title"],"properties":{"title":{"type":"string","description":"what to do"},"days":{"type":"number","minimum":0,"description":"how long it takes"},"owner":{"type":"string","description":"who does it"}},"additionalProperties":false}"#;

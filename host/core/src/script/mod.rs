//! Code mode (`[code_mode]`): the host's own `run_script` tool. A model sends one JavaScript
//! program instead of many tool calls; it runs in a fresh sandbox of its own (the
//! `script-runner` component: QuickJS with no WASI at all, whose one door is "call a tool"),
//! and each `tools.NAME(args)` it makes is a full call through the executor, as the caller
//! (`executor/script.rs`, which also compiles and links the runner). This module owns what
//! is not the executor's: the settings, the meta-tool's entry and declarations (`declare`),
//! the runner component's bytes, what crosses its boundary and its answer.

mod declare;
pub mod settings;

pub use settings::{CodeModeSettings, RawCodeMode};

use toolhost_spec::manifest::ToolSpec;

/// The meta-tool's name.
pub const RUN_SCRIPT: &str = "run_script";

/// The runner component, built from `script-runner/runner.js` by `cargo xtask script-runner`.
pub const RUNNER: &[u8] = include_bytes!("../../script-runner/script-runner.wasm");
/// The custom section holding the SHA-256 of the runner's sources (`runner.js`, `script.wit`).
pub const SOURCE_SECTION: &str = "toolhost-script-source";

/// The `run_script` meta-tool's entry for a catalog offering `tools` (what every caller may be
/// shown): its description declares them as `tools` (typed, bounded by `[code_mode]
/// description_bytes`), or, when `declared` is false (a policy decides what each caller sees),
/// names none of them. `searched`: the catalog is searched (`find_tools`).
pub fn spec<'a>(
    tools: impl Iterator<Item = &'a ToolSpec>,
    settings: &CodeModeSettings,
    declared: bool,
    searched: bool,
) -> ToolSpec {
    let mut description = format!(
        "Run a JavaScript program that calls tools, and get back what it returns. Use it to chain several tool \
         calls or to filter, count or combine their results without passing each one through the conversation. \
         The code is the body of an async function: `const r = await tools.NAME({{param: value}})` calls a tool \
         (arguments by parameter name; `tools[\"a.b\"](…)` for a name with a dot) and gives its result (JSON \
         results as objects, text as a string); a failed call throws a ToolError with `.kind` and `.message`. \
         `return` the answer (JSON). console.log output comes back too. The script has no files, network, \
         modules or wall clock (performance.now() only): only the tools. At most {} tool calls, {} s. \
         A tool that needs a person's confirmation is asked about when the script calls it; where that cannot \
         be done during a script, it fails unless the script's first lines declare it (`// confirm: NAME, \
         NAME`): the person is then asked about those tools once, before the script runs.",
        settings.max_calls,
        settings.timeout_ms / 1000,
    );
    if searched {
        description.push_str(
            " Find other tools with `await tools.find_tools({query: \"what you want to do\"})` (their names and \
             parameters).",
        );
    }
    if declared {
        let budget = settings.description_bytes.saturating_sub(description.len());
        description.push_str("\n\n");
        description.push_str(&declare::declarations(tools, budget));
    } else {
        description
            .push_str(" The tools it can call are the ones you can call directly, with the same parameters.");
    }
    let about = "the script: the body of an async JavaScript function of `tools` and `console`";
    ToolSpec {
        timeout_ms: Some(settings.timeout_ms),
        ..ToolSpec::host_tool(RUN_SCRIPT, "Run a script", description, "code", about)
    }
}

/// The tools a script declares it will call that may need a person's confirmation: its leading
/// comment lines `// confirm: NAME, NAME` (names apart by commas or spaces), in order, once
/// each. Only the comments before the first line of code count.
pub fn declared_tools(code: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in code.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some(comment) = line.strip_prefix("//") else { break };
        let Some(names) = comment.trim().strip_prefix("confirm:") else { continue };
        for name in names.split([',', ' ']).map(str::trim).filter(|n| !n.is_empty()) {
            if !out.iter().any(|o| o == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// SHA-256 of the runner component: a confirmation of a script is bound to the runner that
/// will run it, as a tool's is to its plugin file.
pub fn runner_hash() -> [u8; 32] {
    use sha2::Digest;
    static HASH: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    *HASH.get_or_init(|| sha2::Sha256::digest(RUNNER).into())
}

/// One `tools.NAME(args)`: the tool and its arguments as JSON text.
pub struct InnerCall {
    pub name: String,
    pub args: String,
}

/// Why an inner call returned no value (the WIT `failure`): the outcome's kind and message.
#[derive(
    Debug, Clone, wasmtime::component::ComponentType, wasmtime::component::Lift, wasmtime::component::Lower,
)]
#[component(record)]
pub struct Failure {
    pub kind: String,
    pub message: String,
}

/// The runner's answer to `run(code)`, as its JSON says.
#[derive(Debug, serde::Deserialize)]
pub struct Answer {
    pub ok: bool,
    #[serde(default)]
    pub value: serde_json::Value,
    #[serde(default)]
    pub error: Option<ScriptError>,
    #[serde(default)]
    pub logs: Vec<String>,
}

/// A script that failed: where and why, as the runner saw it.
#[derive(Debug, serde::Deserialize)]
pub struct ScriptError {
    /// `syntax`, `unsupported`, `runtime`, `tool` (an inner call's failure, uncaught), `result`.
    pub kind: String,
    pub message: String,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub column: Option<u32>,
    /// For `tool`: the tool and its outcome's kind.
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default, rename = "toolKind")]
    pub tool_kind: Option<String>,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "script line {l}, column {c}: ")?,
            (Some(l), None) => write!(f, "script line {l}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

/// The SHA-256 (hex) the runner says its sources had, from its custom section.
pub fn runner_source_digest(wasm: &[u8]) -> Option<String> {
    let found = toolhost_spec::sections::find_named(wasm, SOURCE_SECTION).ok()?;
    found.last().and_then(|b| std::str::from_utf8(b).ok().map(str::to_string))
}

#[cfg(test)]
mod declared_tests {
    use super::declared_tools;

    #[test]
    fn only_the_leading_comments_declare() {
        let code = "// reads and deletes\n// confirm: delete_file, send_mail\n\n//confirm: send_mail rm\nawait tools.x()\n// confirm: late";
        assert_eq!(declared_tools(code), ["delete_file", "send_mail", "rm"]);
        assert!(declared_tools("await tools.x() // confirm: a").is_empty());
        assert!(declared_tools("").is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded runner was built from the sources beside it: editing `runner.js` or
    /// `script.wit` without `cargo xtask script-runner` fails here.
    #[test]
    fn the_runner_is_built_from_its_sources() {
        use sha2::Digest;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("script-runner");
        let mut h = sha2::Sha256::new();
        for f in ["runner.js", "script.wit"] {
            h.update(std::fs::read(dir.join(f)).unwrap());
        }
        let want = hex::encode(h.finalize());
        assert_eq!(
            runner_source_digest(RUNNER).as_deref(),
            Some(want.as_str()),
            "script-runner.wasm is stale: run `cargo xtask script-runner`"
        );
    }
}

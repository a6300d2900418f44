//! What a call came to: an [`Outcome`] — success with data, or failure with an [`ErrorKind`]
//! and a message for the model — its cost ([`crate::usage::Usage`]), and output truncation.

use crate::usage::Usage;
use serde::{Deserialize, Serialize};
use toolhost_spec::manifest::ToolSpec;

/// Why a call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No tool of that name is registered.
    UnknownTool,
    /// Wrong number of arguments, invalid JSON, or arguments too large.
    BadArguments,
    /// A dangerous tool was not confirmed.
    Denied,
    /// The operator's policy (`[policy] file`) does not let this caller do it. Nothing ran.
    Forbidden,
    /// The caller made more calls than `[rate_limits]` allow it; nothing ran. A
    /// [`Note::RetryAfter`] says when the next one would be let through.
    RateLimited,
    /// The tool returned an error.
    ToolError,
    /// The call ran past its time limit.
    Timeout,
    /// The plugin grew past its memory limit.
    MemoryLimit,
    /// The plugin exhausted its wasm stack.
    StackOverflow,
    /// The plugin trapped (a panic, `unreachable`, an out-of-bounds access…).
    Trap,
    /// The host could not set up the call (e.g. a granted directory is missing).
    HostError,
    /// No call slot became free before the call's deadline (the plugin's own
    /// `[plugin.X] concurrency`, or the host's `[limits] concurrency`).
    Busy,
    /// The host is shutting down and did not admit the call (see `service::shutdown`):
    /// nothing of it ran, so retrying elsewhere is safe.
    Unavailable,
    /// The call was stopped before it finished: by whoever made it (MCP
    /// `notifications/cancelled` or `tasks/cancel`, Ctrl-C in `call` or `chat`, an HTTP client
    /// that went away) or by a shutdown past its grace period. Its own kind, never reported
    /// as `denied`, `timeout` or `unavailable`; the call may have partly run.
    Cancelled,
}

impl ErrorKind {
    /// The kind as it appears in JSON (`unknown_tool`, `bad_arguments`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::BadArguments => "bad_arguments",
            ErrorKind::Denied => "denied",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::ToolError => "tool_error",
            ErrorKind::Timeout => "timeout",
            ErrorKind::MemoryLimit => "memory_limit",
            ErrorKind::StackOverflow => "stack_overflow",
            ErrorKind::Trap => "trap",
            ErrorKind::HostError => "host_error",
            ErrorKind::Busy => "busy",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one call, in the seed's `{success, data | error}` contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Set on failures: what kind of failure, for programs (the model reads `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    /// The output was cut at the tool's output limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// What the call cost (set when the plugin ran), for the operator, not the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// `data` as the JSON object the executor parsed it into to check it against the tool's
    /// `outputSchema`, so a front end that needs the structure (MCP's `structuredContent`)
    /// does not parse it again. Not serialized: it is `data`.
    #[serde(skip)]
    pub structured: Option<std::sync::Arc<serde_json::Value>>,
    /// What explains a failure, typed for programs (the console shows the grants to paste when
    /// one names a missing grant); each is also the `[note: …]` line at the end of `error`,
    /// which is all the model reads. Not serialized: it is in `error`.
    #[serde(skip)]
    pub notes: Vec<Note>,
}

/// A note the host adds to a failed call's error: why it failed and what would change that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The grant that would have allowed what the host refused (or, when it refused nothing,
    /// the grants the plugin requested and lacks, as candidates): the note's text.
    MissingGrant(String),
    /// The operator denied these items (`net api.github.com`) to `plugin` for this session.
    Denied { plugin: String, items: Vec<String> },
    /// A disk quota stopped a write of `plugin`'s `tool`: which limit (`write_mb`, …) and how far.
    Quota { plugin: String, tool: String, limit: String },
    /// A rate limit refused the call: the next one of this caller is let through after this.
    RetryAfter(std::time::Duration),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::MissingGrant(text) => f.write_str(text),
            Note::Denied { plugin, items } => {
                write!(f, "the operator denied plugin `{plugin}` {} for this session", items.join(", "))
            }
            Note::RetryAfter(d) => write!(f, "retry after {} ms", d.as_millis().max(1)),
            Note::Quota { plugin, tool, limit } => write!(
                f,
                "{limit}; the operator can raise it with [limits], [plugin.{plugin}] or [tool.{tool}] write_mb / create_limit in toolhost.toml"
            ),
        }
    }
}

impl Outcome {
    pub fn ok(data: String, truncated: bool) -> Outcome {
        Outcome {
            success: true,
            data: Some(data),
            error: None,
            kind: None,
            truncated,
            usage: None,
            structured: None,
            notes: Vec::new(),
        }
    }

    pub fn err(kind: ErrorKind, error: impl Into<String>) -> Outcome {
        Outcome {
            success: false,
            data: None,
            error: Some(error.into()),
            kind: Some(kind),
            truncated: false,
            usage: None,
            structured: None,
            notes: Vec::new(),
        }
    }

    /// Add `note` to a failure: to its notes and, as a `[note: …]` line, to its error text.
    pub fn add_note(&mut self, note: Note) {
        if let Some(e) = self.error.as_mut() {
            e.push_str(&format!("\n[note: {note}]"));
            self.notes.push(note);
        }
    }

    /// The outcome as JSON for the model: the seed contract, without the operator's `usage`.
    pub fn model_json(&self) -> String {
        let shown = Outcome { usage: None, structured: None, notes: Vec::new(), ..self.clone() };
        serde_json::to_string(&shown).unwrap_or_default()
    }

    /// The data or the error text.
    pub fn text(&self) -> &str {
        self.data.as_deref().or(self.error.as_deref()).unwrap_or("")
    }
}

/// The result of a tool that declared an `outputSchema` (compiled into `validator` when the
/// plugin was loaded): it must be a JSON object matching the schema, and it is never cut (half
/// an object is no object), so one over the output limit fails, naming the limit.
pub(crate) fn structured_outcome(
    spec: &ToolSpec,
    validator: &jsonschema::Validator,
    data: String,
    limit: usize,
) -> Outcome {
    let fail = |why: String| {
        Outcome::err(
            ErrorKind::ToolError,
            format!("tool `{}` declares an outputSchema, but its result {why}", spec.name),
        )
    };
    let chars = if data.len() <= limit { data.len() } else { data.chars().count() };
    if chars > limit {
        return fail(format!(
            "is {chars} characters, over its output limit of {limit}, and a JSON result cannot be cut; \
             the operator can raise it with [tool.{}] output_limit",
            spec.name
        ));
    }
    let value = match serde_json::from_str::<serde_json::Value>(&data) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(other) => return fail(format!("is JSON but not an object (it starts {:.40})", other.to_string())),
        Err(e) => return fail(format!("is not JSON ({e})")),
    };
    let mismatch = validator
        .iter_errors(&value)
        .next()
        .map(|e| format!("does not match it: at `{}`: {e}", e.instance_path()));
    match mismatch {
        None => Outcome { structured: Some(std::sync::Arc::new(value)), ..Outcome::ok(data, false) },
        Some(why) => fail(why),
    }
}

/// Cut `s` to at most `limit` characters at a UTF-8 boundary, marking the cut.
pub fn truncate(mut s: String, limit: usize) -> (String, bool) {
    // No more bytes than the limit: no more characters either (the common case, no scan).
    if s.len() <= limit {
        return (s, false);
    }
    let Some((cut, _)) = s.char_indices().nth(limit) else { return (s, false) };
    let total = limit + s[cut..].chars().count();
    s.truncate(cut);
    s.push_str(&format!("\n…[truncated {} of {total} chars]", total - limit));
    (s, true)
}

/// `message` without the ` (os error N)` a guest's standard library appends to an I/O error:
/// inside the sandbox N is a WASI errno (44 for "no such file"), which means nothing to a
/// reader and is not the host's errno either. The words before it stay.
pub fn without_os_error_numbers(message: &str) -> String {
    const MARK: &str = " (os error ";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find(MARK) {
        let after = &rest[i + MARK.len()..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(')') {
            out.push_str(&rest[..i]);
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..i + MARK.len()]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod errno_tests {
    #[test]
    fn wasi_errno_numbers_are_never_shown() {
        use super::without_os_error_numbers as w;
        assert_eq!(
            w("cannot read `README.txt`: No such file or directory (os error 44)"),
            "cannot read `README.txt`: No such file or directory"
        );
        assert_eq!(w("a (os error 2) b (os error 76)"), "a b");
        assert_eq!(w("kept: (os error x) and (os error 12"), "kept: (os error x) and (os error 12");
        assert_eq!(w("plain"), "plain");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_kind_reads_as_it_serializes() {
        use ErrorKind::*;
        let all = [
            UnknownTool,
            BadArguments,
            Denied,
            ToolError,
            Timeout,
            MemoryLimit,
            StackOverflow,
            Trap,
            HostError,
            Busy,
            Unavailable,
            Cancelled,
        ];
        for kind in all {
            assert_eq!(json!(kind), json!(kind.as_str()), "{kind:?}");
            assert_eq!(serde_json::from_value::<ErrorKind>(json!(kind.to_string())).unwrap(), kind);
        }
    }

    fn spec() -> ToolSpec {
        serde_json::from_value(json!({"name": "t", "description": "d", "argCount": 0})).unwrap()
    }

    #[test]
    fn a_result_is_checked_against_the_declared_output_schema() {
        let mut t = spec();
        let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        t.output_schema = Some(schema.clone());
        let validator = jsonschema::validator_for(&schema).unwrap();
        let run = |data: &str, limit| structured_outcome(&t, &validator, data.to_string(), limit);
        let passed = run(r#"{"n": 3}"#, 100);
        assert_eq!(passed.data.as_deref(), Some(r#"{"n": 3}"#));
        // Parsed once, here; the front ends reuse it (issue #32).
        assert_eq!(passed.structured.as_deref(), Some(&json!({"n": 3})));
        for (data, limit, says) in [
            (r#"{"n": "three"}"#, 100, "does not match it: at `/n`"),
            ("{}", 100, "\"n\" is a required property"),
            ("[1]", 100, "is JSON but not an object"),
            ("n=3", 100, "is not JSON"),
            (r#"{"n": 3}"#, 4, "over its output limit of 4, and a JSON result cannot be cut"),
        ] {
            let o = run(data, limit);
            assert_eq!(o.kind, Some(ErrorKind::ToolError), "{data}");
            let e = o.error.unwrap();
            assert!(
                e.starts_with("tool `t` declares an outputSchema, but its result") && e.contains(says),
                "{e}"
            );
        }
    }

    #[test]
    fn truncation_is_at_char_boundaries_and_marked() {
        assert_eq!(truncate("héllo".into(), 10), ("héllo".into(), false));
        let (t, cut) = truncate("héllo wörld".into(), 4);
        assert!(cut);
        assert_eq!(t, "héll\n…[truncated 7 of 11 chars]");
        let (t, _) = truncate("日本語テキスト".into(), 2);
        assert!(t.starts_with("日本\n"));
    }

    #[test]
    fn outcome_serializes_as_the_seed_contract() {
        let ok = serde_json::to_value(Outcome::ok("x".into(), false)).unwrap();
        assert_eq!(ok, json!({"success": true, "data": "x"}));
        let err = serde_json::to_value(Outcome::err(ErrorKind::Timeout, "slow")).unwrap();
        assert_eq!(err, json!({"success": false, "error": "slow", "kind": "timeout"}));
    }
}

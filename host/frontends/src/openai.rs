//! OpenAI-style function calling: the `tools` array with a JSON Schema per tool, generated
//! from the manifests, and the execution of an assistant message's `tool_calls` (arguments as
//! a JSON object mapped onto params by name) into `role: "tool"` messages.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_core::executor::{CallRequest, ErrorKind, Executor, Outcome};

/// A tool name OpenAI would refuse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "tool `{name}` (plugin `{plugin}`) cannot be offered to OpenAI: names must match ^[a-zA-Z0-9_-]{{1,64}}$"
)]
pub struct NameError {
    pub name: String,
    pub plugin: String,
}

/// `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_openai_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

pub use toolhost_spec::schema::{param_schema, parameters};

/// The `tools` array for a chat completion request: `tools` under OpenAI names — what the
/// caller is offered, [`Executor::listing`].
///
/// [`Executor::listing`]: toolhost_core::executor::Executor::listing
pub fn tools(tools: &[toolhost_core::view::ToolView<'_>]) -> Result<Value, NameError> {
    // A tool for its plugin's apps only is never offered to a model (MCP Apps visibility).
    let out: Result<Vec<Value>, NameError> = tools.iter().filter(|v| !v.app_only).map(function).collect();
    Ok(Value::Array(out?))
}

/// One tool's entry in the `tools` array.
pub fn function(view: &toolhost_core::view::ToolView<'_>) -> Result<Value, NameError> {
    let name = view.openai_name();
    if !is_openai_name(&name) {
        return Err(NameError { name: name.into_owned(), plugin: view.plugin.to_string() });
    }
    Ok(json!({
        "type": "function",
        "function": {
            "name": name,
            "description": view.description_with_danger_note(),
            "parameters": parameters(view.spec),
        }
    }))
}

/// An assistant message carrying tool calls.
#[derive(Debug, Clone, Deserialize)]
pub struct AssistantMessage {
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub tool_calls: Vec<WireToolCall>,
}

/// One entry of `tool_calls`, as the API carries it — read from a model's reply (`run --format
/// openai`, the agent loop) and written back into the conversation. The one wire type of a tool
/// call; [`request`] is what the executor prepares from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: WireFunction,
}

fn function_type() -> String {
    "function".into()
}

/// The function part of a tool call: `arguments` is a JSON string holding an object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireFunction {
    pub name: String,
    #[serde(default)]
    pub arguments: String,
}

/// The request a `tool_calls` entry makes, or the outcome that says why it cannot be one (a
/// type other than `function`). The executor prepares it like every request: its OpenAI name
/// (`notes__get`) becomes the exposed name (`notes.get`), which is what the executor, the audit
/// trail and metrics see, and its `arguments` are mapped onto the tool's parameters there.
pub fn request(tc: &WireToolCall) -> Result<CallRequest<'_>, Box<Outcome>> {
    if tc.kind != "function" {
        let why = format!("unsupported tool call type {:?}", tc.kind);
        return Err(Box::new(Outcome::err(ErrorKind::BadArguments, why)));
    }
    Ok(CallRequest::NamedJson { name: &tc.function.name, json: &tc.function.arguments })
}

/// The reply for one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolMessage {
    pub role: String,
    pub tool_call_id: String,
    /// The outcome as JSON text: `{"success": true, "data": …}` or `{"success": false, …}`.
    pub content: String,
}

/// Accept an assistant message, a `choices[0].message`-shaped completion, or a bare
/// `tool_calls` array.
pub fn parse_message(text: &str) -> Result<AssistantMessage, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let msg = if let Some(m) = v.pointer("/choices/0/message") {
        m.clone()
    } else if v.is_array() {
        json!({ "role": "assistant", "tool_calls": v })
    } else {
        v
    };
    let m: AssistantMessage =
        serde_json::from_value(msg).map_err(|e| format!("not an assistant message with tool_calls: {e}"))?;
    if let Some(role) = &m.role
        && role != "assistant"
    {
        return Err(format!("expected role \"assistant\", got {role:?}"));
    }
    Ok(m)
}

/// Execute every tool call of `message`, in order, through the executor: one `role: "tool"`
/// message per call (with its outcome, for callers that want the structured form).
pub async fn execute(executor: &Executor, message: &AssistantMessage) -> Vec<(ToolMessage, Outcome)> {
    let mut out = Vec::new();
    for tc in &message.tool_calls {
        let outcome = run_one(executor, tc).await;
        let msg =
            ToolMessage { role: "tool".into(), tool_call_id: tc.id.clone(), content: outcome.model_json() };
        out.push((msg, outcome));
    }
    out
}

async fn run_one(executor: &Executor, tc: &WireToolCall) -> Outcome {
    let ctx = toolhost_core::executor::CallContext::local(None);
    let prepared = match request(tc) {
        Ok(request) => executor.prepare(request, &ctx).await,
        Err(o) => return *o,
    };
    match prepared {
        Ok(prepared) => executor.run(&prepared, &**executor.confirm(), &ctx, &Default::default()).await,
        Err(o) => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_spec::manifest::ParamSpec;
    use toolhost_spec::manifest::ToolSpec;

    fn spec() -> ToolSpec {
        ToolSpec {
            name: "split_task".into(),
            description: "Split.".into(),
            params: vec![
                ParamSpec {
                    name: "title".into(),
                    ty: json!("string"),
                    description: "the task".into(),
                    optional: false,
                    default: None,
                },
                ParamSpec {
                    name: "subtasks".into(),
                    ty: json!("array"),
                    description: String::new(),
                    optional: false,
                    default: None,
                },
                ParamSpec {
                    name: "days".into(),
                    ty: json!("integer"),
                    description: String::new(),
                    optional: true,
                    default: None,
                },
                ParamSpec {
                    name: "note".into(),
                    ty: json!("string"),
                    description: String::new(),
                    optional: true,
                    default: None,
                },
            ],
            arg_count: 4,
            parse_json: vec![false, true, true, false],
            rest: false,
            output_limit: None,
            danger: false,
            read_only: false,
            category: None,
            output_schema: None,
            timeout_ms: None,
            task_support: None,
            title: None,
            idempotent: false,
            icons: Vec::new(),
        }
    }

    #[test]
    fn arguments_map_by_name_in_param_order() {
        let args = toolhost_core::executor::map_named_json(
            &spec(),
            r#"{"subtasks": [{"t": "a, b"}], "title": "Launch"}"#,
        )
        .unwrap();
        assert_eq!(args, vec!["Launch".to_string(), r#"[{"t":"a, b"}]"#.to_string()]);
        let args = toolhost_core::executor::map_named_json(
            &spec(),
            r#"{"subtasks": [], "title": "x", "days": 3, "note": "n"}"#,
        )
        .unwrap();
        assert_eq!(args, ["x", "[]", "3", "n"]);
    }

    #[test]
    fn argument_errors_are_for_the_model() {
        let cases = [
            (r#"{"title": "x"}"#, "needs the argument `subtasks`"),
            (r#"{"title": "x", "subtasks": [], "colour": 1}"#, "has no argument `colour`"),
            (r#"{"title": 5, "subtasks": []}"#, "`title` of `split_task` must be a string, got a number"),
            (
                r#"{"title": "x", "subtasks": {}}"#,
                "`subtasks` of `split_task` must be an array, got an object",
            ),
            (
                r#"{"title": "x", "subtasks": [], "days": 1.5}"#,
                "`days` of `split_task` must be an integer, got a number",
            ),
            (r#"{"title": "x", "subtasks": [], "note": "n"}"#, "earlier optional `days`"),
            (r#"["x"]"#, "must be a JSON object, got an array"),
            (r#"{"title": "x""#, "not valid JSON"),
        ];
        for (input, want) in cases {
            let e = toolhost_core::executor::map_named_json(&spec(), input).unwrap_err();
            assert!(e.contains(want), "{input}: {e}");
        }
    }

    #[test]
    fn a_default_and_a_number_type_reach_the_schema() {
        let mut t = spec();
        t.params[2].default = Some(json!(5));
        t.params[3].default = Some(json!("mi"));
        let p = parameters(&t);
        assert_eq!(p["properties"]["days"], json!({"type": "integer", "default": 5}));
        assert_eq!(p["properties"]["note"], json!({"type": "string", "default": "mi"}));
        assert_eq!(p["required"], json!(["title", "subtasks"]));
    }

    #[test]
    fn names_are_checked() {
        assert!(is_openai_name("split_task") && is_openai_name("a-b"));
        assert!(!is_openai_name("") && !is_openai_name("a.b") && !is_openai_name(&"x".repeat(65)));
    }

    #[test]
    fn message_shapes() {
        let m = parse_message(r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}"#).unwrap();
        assert_eq!(m.tool_calls[0].function.name, "ls");
        let m = parse_message(r#"{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c2","function":{"name":"x","arguments":""}}]}}]}"#).unwrap();
        assert_eq!(m.tool_calls[0].id, "c2");
        assert!(parse_message(r#"{"role":"user","content":"hi"}"#).unwrap_err().contains("assistant"));
    }
}

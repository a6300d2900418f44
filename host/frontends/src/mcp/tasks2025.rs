//! The 2025-11-25 *experimental* tasks (`basic/utilities/tasks` of that revision), on the same
//! task store as the 2026-07-28 extension (`tasks.rs`): same caps, retention, ownership,
//! cancellation and shutdown.
//!
//! rmcp 3.11 models only the 2026-07-28 extension: its `tools/call` parameters have no `task`
//! field (the member is dropped when the request is read), its `tasks/get` and `tasks/cancel`
//! answer only clients that declared the extension, its `Tool` and `ServerCapabilities` have no
//! `execution` or `tasks` member, and its HTTP service takes only a `ServerHandler`. So the
//! transports, which know a request's revision (stdio: from the `initialize` answer they wrote;
//! HTTP: the `MCP-Protocol-Version` header), do what rmcp's types cannot:
//!
//! - on a 2025-11-25 session, a `tools/call` with a `task` member, `tasks/get`, `tasks/result`,
//!   `tasks/list`, `tasks/cancel` and `tools/list` are renamed `toolhost/2025-11-25/…`
//!   ([`rename`]) before rmcp reads them, so that they reach [`McpServer::on_2025_11_25`] whole
//!   as custom requests, which answers them in that revision's shapes (and refuses them on any
//!   other revision);
//! - the answer to an `initialize` that negotiated 2025-11-25 gets `capabilities.tasks`
//!   (`list`, `cancel`, `requests.tools.call`) ([`declare_tasks`]).
//!
//! `tasks/result` blocks until the task ends and answers what the call would have;
//! `tasks/list` lists the client's own tasks in one page; `tasks/cancel` answers with the task
//! `cancelled`. `notifications/tasks/status` is optional in that revision and not sent: clients
//! poll. Every other revision is served by rmcp as before.

use super::tasks::status_name;
use super::{McpServer, owner};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, DetailedTask, ErrorCode, ProtocolVersion,
    ServerResult, TaskPayload,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

/// The prefix of the methods [`rename`] gives 2025-11-25's task requests.
const PREFIX: &str = "toolhost/2025-11-25/";

/// The revision these tasks belong to.
pub(crate) const REVISION: &str = "2025-11-25";

/// Whether `context`'s session negotiated 2025-11-25.
pub(crate) fn on_2025_11_25(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| v == ProtocolVersion::V_2025_11_25)
}

/// `message`, a JSON-RPC request on a 2025-11-25 session, renamed for [`McpServer::on_2025_11_25`]
/// if it is one of the requests rmcp cannot carry whole; `None` otherwise (the common case costs
/// a substring search or two).
pub(crate) fn rename(message: &[u8]) -> Option<Vec<u8>> {
    let find = |what: &[u8]| memchr::memmem::find(message, what).is_some();
    if !find(b"\"tasks/") {
        // Of the tools requests, only a list and a call with a `task` member are renamed: a
        // common call is not parsed twice.
        if !find(b"\"tools/") || !(find(b"\"task\"") || find(b"\"tools/list\"")) {
            return None;
        }
    }
    let mut v: Value = serde_json::from_slice(message).ok()?;
    v.get("id")?;
    let method = v.get("method")?.as_str()?;
    let renamed = match method {
        "tools/call" if v.pointer("/params/task").is_some_and(Value::is_object) => true,
        "tools/list" | "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" => true,
        _ => false,
    };
    if !renamed {
        return None;
    }
    v["method"] = format!("{PREFIX}{method}").into();
    serde_json::to_vec(&v).ok()
}

/// Add `capabilities.tasks` to `message` if it is the answer to a 2025-11-25 `initialize`;
/// true if it was.
pub(crate) fn declare_tasks(message: &mut Value) -> bool {
    let Some(result) = message.get_mut("result") else { return false };
    if result.get("protocolVersion").and_then(Value::as_str) != Some(REVISION)
        || result.get("serverInfo").is_none()
    {
        return false;
    }
    let Some(caps) = result.get_mut("capabilities").and_then(Value::as_object_mut) else { return false };
    caps.insert("tasks".into(), json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }));
    true
}

/// A task as 2025-11-25 writes it. A tool result with `isError: true` is a `failed` task there.
fn task_json(t: &DetailedTask) -> Value {
    let status = match &t.payload {
        TaskPayload::Completed { result } if result.get("isError") == Some(&Value::Bool(true)) => "failed",
        _ => status_name(t.status()),
    };
    let task = &t.task;
    let mut v = json!({
        "taskId": task.task_id,
        "status": status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttl": task.ttl_ms,
    });
    if let Some(m) = &task.status_message {
        v["statusMessage"] = m.clone().into();
    }
    if let Some(p) = task.poll_interval_ms {
        v["pollInterval"] = p.into();
    }
    v
}

fn task_id(params: Option<&Value>) -> Result<String, ErrorData> {
    params
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ErrorData::invalid_params("missing `taskId` (a string)", None))
}

/// What `tasks/result` answers for an ended task: what the call would have answered.
fn task_result(t: &DetailedTask) -> Result<Value, ErrorData> {
    let related = json!({ "io.modelcontextprotocol/related-task": { "taskId": t.task.task_id } });
    let mut result = match &t.payload {
        TaskPayload::Completed { result } => Value::Object(result.clone()),
        TaskPayload::Failed { error } => {
            let error: ErrorData = serde_json::from_value(Value::Object(error.clone()))
                .unwrap_or_else(|_| ErrorData::internal_error("the task failed", None));
            return Err(error);
        }
        _ => {
            let why = t.task.status_message.clone().unwrap_or_else(|| "cancelled".into());
            json!({ "content": [{ "type": "text", "text": why }], "isError": true })
        }
    };
    if let Some(o) = result.as_object_mut() {
        // The stored result is 2026-07-28's; this revision has no `resultType`.
        o.remove("resultType");
        match o.get_mut("_meta").and_then(Value::as_object_mut) {
            Some(m) => m.extend(related.as_object().cloned().unwrap_or_default()),
            None => {
                o.insert("_meta".into(), related);
            }
        }
    }
    Ok(result)
}

/// A result as a handshake peer gets it (no `resultType: "complete"`).
fn legacy(result: ServerResult) -> Result<Value, ErrorData> {
    let mut result = result;
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    serde_json::to_value(&result)
        .map_err(|e| ErrorData::internal_error(format!("cannot write the answer: {e}"), None))
}

impl McpServer {
    /// A custom request [`rename`] made: `None` if `request` is not one.
    pub(crate) async fn on_2025_11_25(
        &self,
        request: &CustomRequest,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<Value, ErrorData>> {
        let method = request.method.strip_prefix(PREFIX)?;
        if !on_2025_11_25(context) {
            return Some(Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method.clone(), None)));
        }
        let params = request.params.as_ref();
        let who = || owner(context);
        Some(match method {
            "tools/call" => self.call_as_task_2025(params, context).await,
            "tools/list" => {
                self.first_load().await;
                self.tools_2025(&super::call::caller(context), super::call::shows_apps(context))
            }
            "tasks/get" => {
                task_id(params).and_then(|id| self.tasks.detailed(&who(), &id)).map(|t| task_json(&t))
            }
            "tasks/cancel" => match task_id(params) {
                Ok(id) => self.tasks.cancel_now(&who(), &id).await.map(|t| task_json(&t)),
                Err(e) => Err(e),
            },
            "tasks/result" => match task_id(params) {
                Ok(id) => {
                    let owner = who();
                    tokio::select! {
                        t = self.tasks.ended(&owner, &id) => t.and_then(|t| task_result(&t)),
                        () = context.ct.cancelled() => {
                            Err(ErrorData::invalid_request("tasks/result cancelled by the client", None))
                        }
                    }
                }
                Err(e) => Err(e),
            },
            "tasks/list" => {
                if params.and_then(|p| p.get("cursor")).is_some_and(|c| !c.is_null()) {
                    Err(ErrorData::invalid_params(
                        "unknown cursor: toolhost lists every task in one page",
                        None,
                    ))
                } else {
                    let list: Vec<Value> = self.tasks.list(&who()).iter().map(task_json).collect();
                    Ok(json!({ "tasks": list }))
                }
            }
            _ => Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method.clone(), None)),
        })
    }

    /// A `tools/call` with a `task` member: `{ "task": … }` at once, or the refusal.
    async fn call_as_task_2025(
        &self,
        params: Option<&Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ErrorData> {
        let params: CallToolRequestParams =
            params.cloned().and_then(|p| serde_json::from_value(p).ok()).ok_or_else(|| {
                ErrorData::invalid_params("tools/call needs `name` (a string) and object `arguments`", None)
            })?;
        match self.call(params, context, Some(true)).await? {
            CallToolResponse::Task(created) => {
                let t = DetailedTask::new(created.task, TaskPayload::Working);
                Ok(json!({ "task": task_json(&t) }))
            }
            // Refused before it ran (its arguments): the client waits for a task, not a result.
            CallToolResponse::Complete(r) => {
                let text = r.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone());
                Err(ErrorData::invalid_params(text.unwrap_or_else(|| "the call was refused".into()), None))
            }
            other => legacy(ServerResult::from(other)),
        }
    }

    /// `tools/list`, each tool with the standard `execution.taskSupport` of 2025-11-25.
    fn tools_2025(&self, who: &toolhost_core::executor::CallContext, apps: bool) -> Result<Value, ErrorData> {
        let mut v = legacy(ServerResult::ListToolsResult(self.tools_result(who, apps)))?;
        for tool in v.get_mut("tools").and_then(Value::as_array_mut).into_iter().flatten() {
            let support = tool
                .pointer("/_meta/toolhost~1taskSupport")
                .and_then(Value::as_str)
                .unwrap_or("forbidden")
                .to_string();
            tool["execution"] = json!({ "taskSupport": support });
        }
        Ok(v)
    }
}

/// The error 2025-11-25 prescribes for a task request a tool refuses, or a plain request to a
/// tool that runs only as a task.
pub(crate) fn method_not_found(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_requests_are_renamed_and_nothing_else() {
        let m =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tick","task":{"ttl":5}}}"#;
        let v: Value = serde_json::from_slice(&rename(m).unwrap()).unwrap();
        assert_eq!(v["method"], "toolhost/2025-11-25/tools/call", "{v}");
        assert_eq!(v["params"]["task"]["ttl"], 5, "{v}");
        for method in ["tools/list", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel"] {
            let m = format!(r#"{{"jsonrpc":"2.0","id":"a","method":"{method}","params":{{"taskId":"1"}}}}"#);
            let v: Value = serde_json::from_slice(&rename(m.as_bytes()).unwrap()).unwrap();
            assert_eq!(v["method"], format!("toolhost/2025-11-25/{method}"));
        }
        // A plain call, a notification, another method: left alone.
        assert!(
            rename(br#"{"id":1,"method":"tools/call","params":{"name":"task","arguments":{"task":{}}}}"#)
                .is_none()
        );
        assert!(rename(br#"{"method":"tasks/get","params":{"taskId":"1"}}"#).is_none());
        assert!(rename(br#"{"id":1,"method":"prompts/list"}"#).is_none());
        assert!(rename(br#"{"id":1,"method":"tools/call","params":{"name":"echo"}}"#).is_none());
        // `tools/list` with no `task` anywhere is still renamed (checked above); so is a call
        // whose `task` member is the only mention of one.
        let v: Value = serde_json::from_slice(
            &rename(br#"{"id":1,"method":"tools/call","params":{"task":{}}}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(v["method"], "toolhost/2025-11-25/tools/call");
    }

    #[test]
    fn only_a_2025_11_25_initialize_answer_declares_tasks() {
        let mut init = json!({ "jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25", "capabilities": { "tools": {} }, "serverInfo": { "name": "t" } } });
        assert!(declare_tasks(&mut init));
        assert_eq!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"], json!({}));
        let mut older = json!({ "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": { "name": "t" } } });
        assert!(!declare_tasks(&mut older));
        assert!(older["result"]["capabilities"].get("tasks").is_none());
    }
}

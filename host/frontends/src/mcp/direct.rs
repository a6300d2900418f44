//! A handshake session's `tools/call` answered without rmcp's session machinery (issue #33).
//!
//! rmcp serves a request of a 2025 session through its session's tasks and channels: the
//! request goes to the session's worker, from it to the session's service loop, which spawns a
//! handler; the answer goes back through the worker to the request's event stream, which
//! `plain_json` turns back into a JSON body. Over loopback that took longer than the call
//! itself (BENCHMARKS.md: rmcp's service alone answering a call at once, against the same call
//! answered here).
//!
//! A call that can need nothing of its session is run here instead: the same executor call
//! for the same caller, its answer the JSON body the handler and `plain_json` give it. Such a
//! call comes from a session rmcp still serves, opened on a handshake revision (2025-11-25,
//! 2025-06-18, 2025-03-26) that the request names, by a client that takes no tasks (the
//! 2026-07-28 extension), with no `task` member (2025-11-25), from a client that accepts
//! the JSON answer, with no `progressToken` (progress needs the stream) and nothing in
//! `_meta` that names a protocol; and [`McpServer::direct_call`] finds it asks no one (no
//! confirmation or grant question, which go to the client as elicitations), is no task and not
//! `find_tools`. A `notifications/cancelled` for it, sent as usual to the session, cancels it.
//! Everything else — another method, another revision, an unknown session, a call that could
//! ask — goes to rmcp as before.

use super::McpServer;
use super::idle::{IdleSessions, SessionClient};
use rmcp::model::{
    CallToolRequestParams, ClientNotification, ClientRequest, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::session::SessionId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolhost_core::executor::{CallRequest, Cancel, PreparedCall};

/// The revisions whose sessions' calls are answered here: the handshake revisions rmcp serves
/// (a 2025-11-25 call asking for a task has a `task` member, which the one-pass decoder does
/// not read: rmcp, after `tasks2025::rename`, serves it).
const REVISIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The calls answered here, by session and request id, so a `notifications/cancelled` finds them
/// (each with a serial number: a client that reuses an id while its call runs has both found).
type Running = Mutex<HashMap<(SessionId, RequestId), Vec<(u64, Cancel)>>>;

pub(crate) struct Direct {
    server: McpServer,
    sessions: Arc<IdleSessions>,
    running: Running,
    serial: std::sync::atomic::AtomicU64,
}

/// A POST of a session whose calls may be answered here.
pub(crate) struct Session {
    id: SessionId,
    client: Arc<SessionClient>,
}

impl Direct {
    pub(crate) fn new(server: McpServer, sessions: Arc<IdleSessions>) -> Direct {
        Direct { server, sessions, running: Running::default(), serial: Default::default() }
    }

    /// The session of a POST whose body [`Direct::answer`] should see (the front door has
    /// checked that it accepts the JSON answer): sent with JSON, in a live session whose
    /// revision the request names and whose client takes no tasks.
    pub(crate) async fn session(&self, headers: &hyper::HeaderMap) -> Option<Session> {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let revision = header("mcp-protocol-version").filter(|r| REVISIONS.contains(r))?;
        let id: SessionId = header("mcp-session-id")?.to_string().into();
        let json = header(hyper::header::CONTENT_TYPE.as_str()).is_some_and(|t| {
            t.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json")
        });
        if !json {
            return None;
        }
        let client = self.sessions.client(&id).await?;
        (client.revision == revision && !client.tasks).then_some(Session { id, client })
    }

    /// The JSON answer to `body`, a POST of `session`, when it is a call answered here; `None`
    /// when rmcp must serve it (a `notifications/cancelled` for a call running here cancels it
    /// first, and is still passed on). A call is prepared here once: one this path does not
    /// answer is handed on to rmcp in `parts`' extensions, prepared (see `call::Prepared`).
    pub(crate) async fn answer(
        self: &Arc<Self>,
        session: &Session,
        parts: &mut hyper::http::request::Parts,
        body: &[u8],
    ) -> Option<Vec<u8>> {
        let Some(message) = super::decode::tools_call(body) else {
            self.cancel_if_asked(session, body);
            return None;
        };
        let JsonRpcMessage::Request(request) = message else { return None };
        let ClientRequest::CallToolRequest(mut call) = request.request else { return None };
        let meta = call.extensions.remove::<rmcp::model::RequestMetaObject>().unwrap_or_default();
        if meta.0.keys().any(|k| k == "progressToken" || k.starts_with("io.modelcontextprotocol/")) {
            return None;
        }
        if self.server.loaded.as_ref().is_some_and(|l| !*l.borrow()) {
            return None;
        }
        let params: CallToolRequestParams = call.params;
        let who = super::caller_of(Some(parts), Some(session.client.name.clone()), &meta);
        let empty = rmcp::model::JsonObject::new();
        let args = params.arguments.as_ref().unwrap_or(&empty);
        let result = match self
            .server
            .executor
            .prepare(CallRequest::Named { name: &params.name, args }, &who)
            .await
        {
            // Refused and audited: answered as rmcp's handler answers it.
            Err(outcome) => super::refused(outcome),
            Ok(prepared) => {
                let plan = super::plan(&prepared, session.client.tasks, None);
                if !super::answered_directly(&prepared, plan) {
                    let handed = super::Prepared(Arc::new(Mutex::new(Some(prepared.into_owned()))));
                    parts.extensions.insert(handed);
                    return None;
                }
                tracing::debug!(tool = %params.name, "tools/call answered without rmcp's session (see mcp::direct)");
                Ok(self.run(session, parts, prepared.into_owned(), who, request.id.clone()).await)
            }
        };
        let message = match result {
            Ok(result) => {
                // What the handler does to a result for a handshake revision.
                let mut result = ServerResult::CallToolResult(result);
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
                ServerJsonRpcMessage::response(result, request.id)
            }
            Err(e) => ServerJsonRpcMessage::error(e, Some(request.id)),
        };
        Some(serde_json::to_vec(&message).unwrap_or_else(|e| {
            format!(
                r#"{{"jsonrpc":"2.0","error":{{"code":-32603,"message":"cannot write the answer: {e}"}}}}"#
            )
            .into_bytes()
        }))
    }

    /// Run `prepared` on a task of its own: a client that goes away does not stop the call (as
    /// in rmcp's session, whose handler runs on), and its outcome is audited. The session is
    /// kept in use (never closed as idle) while it runs, and a `notifications/cancelled` for
    /// `id` finds it.
    async fn run(
        self: &Arc<Self>,
        session: &Session,
        parts: &hyper::http::request::Parts,
        prepared: PreparedCall<'static>,
        who: toolhost_core::executor::CallContext,
        id: RequestId,
    ) -> rmcp::model::CallToolResult {
        let cancel = Cancel::new();
        let key = (session.id.clone(), id);
        let held = self.sessions.hold(&session.id);
        let serial = self.serial.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.clone())
            .or_default()
            .push((serial, cancel.clone()));
        let gone = super::client_gone(Some(parts));
        let me = self.clone();
        let tool = prepared.name().to_string();
        let run = tokio::spawn(async move {
            let _held = held;
            let _forget = Forget { running: &me.running, key, serial };
            me.server.run_direct(&prepared, who, cancel, gone).await
        });
        // From here the call is answered here, whatever happens: never run again by rmcp.
        match run.await {
            Ok(result) => result,
            Err(e) => {
                tracing::error!(tool, "a call answered directly failed: {e}");
                rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                    "the call failed: {e} [host_error]"
                ))])
            }
        }
    }

    /// Cancel the call running here that `body`, if a `notifications/cancelled`, names.
    fn cancel_if_asked(&self, session: &Session, body: &[u8]) {
        if memchr::memmem::find(body, b"notifications/cancelled").is_none() {
            return;
        }
        let Ok(JsonRpcMessage::Notification(n)) =
            serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(body)
        else {
            return;
        };
        let ClientNotification::CancelledNotification(c) = n.notification else { return };
        let Some(id) = c.params.request_id else { return };
        let key = (session.id.clone(), id);
        for (_, cancel) in
            self.running.lock().unwrap_or_else(|e| e.into_inner()).get(&key).into_iter().flatten()
        {
            cancel.cancel("the client");
        }
    }
}

/// Drops a call from [`Running`] when it ends (or its request is dropped).
struct Forget<'a> {
    running: &'a Running,
    key: (SessionId, RequestId),
    serial: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(calls) = running.get_mut(&self.key) {
            calls.retain(|(serial, _)| *serial != self.serial);
            if calls.is_empty() {
                running.remove(&self.key);
            }
        }
    }
}

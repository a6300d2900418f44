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
//!
//! The decision itself ([`McpServer::decide_direct`]), the answer's encoding and the register
//! of running calls ([`Running`]) are shared with the stdio transport's path
//! (`stdio_direct.rs`), so both transports serve the same calls the same way.

use super::McpServer;
use super::call::Prepared;
use super::idle::{IdleSessions, SessionClient};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientNotification, ClientRequest, JsonRpcMessage, JsonRpcRequest,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::session::SessionId;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use toolhost_core::executor::{CallContext, CallRequest, Cancel, PreparedCall};

/// The revisions whose sessions' calls are answered here: the handshake revisions rmcp serves
/// (a 2025-11-25 call asking for a task has a `task` member, which the one-pass decoder does
/// not read: rmcp, after `tasks2025::rename`, serves it).
pub(crate) const REVISIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

pub(crate) struct Direct {
    server: McpServer,
    sessions: Arc<IdleSessions>,
    running: Arc<Running<(SessionId, RequestId)>>,
}

/// A POST of a session whose calls may be answered here.
pub(crate) struct Session {
    id: SessionId,
    client: Arc<SessionClient>,
}

impl Direct {
    pub(crate) fn new(server: McpServer, sessions: Arc<IdleSessions>) -> Direct {
        Direct { server, sessions, running: Arc::default() }
    }

    /// The session of a POST whose body [`Direct::answer`] should see (the front door has
    /// checked that it accepts the JSON answer): sent with JSON, in a live session whose
    /// revision the request names and whose client takes no tasks.
    pub(crate) async fn session(&self, headers: &hyper::HeaderMap) -> Option<Session> {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let revision = header("mcp-protocol-version").filter(|r| REVISIONS.contains(r))?;
        let id: SessionId = header("mcp-session-id")?.to_string().into();
        if !super::stateless::sends_json(headers) {
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
        let call = match self.decide(&request, &session.client, parts).await {
            Ok(call) => call,
            Err(answer) => return answer,
        };
        let id = call.id.clone();
        Some(encode(Ok(self.run(session, parts, call).await), id, &session.client.revision))
    }

    /// The call to run here, as `decide_direct` has it; `Err`: all there is to do — its answer,
    /// or `None` for rmcp (a call prepared here handed on with the request).
    async fn decide(
        &self,
        request: &JsonRpcRequest<ClientRequest>,
        client: &SessionClient,
        parts: &mut hyper::http::request::Parts,
    ) -> Result<DirectCall, Option<Vec<u8>>> {
        match self.server.decide_direct(request, client, Some(parts)).await {
            Decision::Rmcp(None) => Err(None),
            Decision::Rmcp(Some(prepared)) => {
                parts.extensions.insert(Prepared(Arc::new(Mutex::new(Some(prepared)))));
                Err(None)
            }
            Decision::Answer(answer) => Err(Some(answer)),
            Decision::Run(call) => Ok(call),
        }
    }

    /// The JSON answer to `body`, a 2026-07-28 stateless POST (see `stateless.rs`), when it is a
    /// call answered here; `None` when rmcp must serve it (prepared here once and handed on, as
    /// [`Direct::answer`] does).
    pub(crate) async fn answer_stateless(
        &self,
        parts: &mut hyper::http::request::Parts,
        body: &[u8],
    ) -> Option<Vec<u8>> {
        let JsonRpcMessage::Request(request) = super::decode::tools_call(body)? else { return None };
        let client = super::stateless::client(&parts.headers, &request)?;
        let call = match self.decide(&request, &client, parts).await {
            Ok(call) => call,
            Err(answer) => return answer,
        };
        let id = call.id.clone();
        Some(encode(Ok(self.run_stateless(parts, call).await), id, &client.revision))
    }

    /// Run a stateless call on a task of its own, cancelled if its client goes away (this
    /// request dropped, as rmcp cancels a stateless request's handler): it still ends with its
    /// outcome and its audit line.
    async fn run_stateless(&self, parts: &hyper::http::request::Parts, call: DirectCall) -> CallToolResult {
        let gone = super::client_gone(Some(parts));
        let cancel = Cancel::new();
        let _on_drop = CancelOnDrop(cancel.clone());
        let server = self.server.clone();
        let tool = call.prepared.name().to_string();
        let run =
            tokio::spawn(
                async move { Box::pin(server.run_direct(&call.prepared, call.who, cancel, gone)).await },
            );
        joined(run.await, &tool)
    }

    /// Run `prepared` on a task of its own: a client that goes away does not stop the call (as
    /// in rmcp's session, whose handler runs on), and its outcome is audited. The session is
    /// kept in use (never closed as idle) while it runs, and a `notifications/cancelled` for
    /// `id` finds it.
    async fn run(
        self: &Arc<Self>,
        session: &Session,
        parts: &hyper::http::request::Parts,
        call: DirectCall,
    ) -> CallToolResult {
        let held = self.sessions.hold(&session.id);
        let (cancel, forget) = self.running.enter((session.id.clone(), call.id.clone()));
        let gone = super::client_gone(Some(parts));
        let server = self.server.clone();
        let tool = call.prepared.name().to_string();
        let run = tokio::spawn(async move {
            let _held = held;
            let _forget = forget;
            // On the heap: the call's future is several KiB, and the task would otherwise hold
            // (and `spawn` copy) all of it.
            Box::pin(server.run_direct(&call.prepared, call.who, cancel, gone)).await
        });
        // From here the call is answered here, whatever happens: never run again by rmcp.
        joined(run.await, &tool)
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
        self.running.cancel(&(session.id.clone(), id), "the client");
    }
}

/// Cancels a stateless call when its request is dropped before the call ends (a no-op after).
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel("the client");
    }
}

/// The calls answered here, by key (a session's and a request's id), so a
/// `notifications/cancelled` finds them — each with a serial number: a client that reuses an id
/// while its call runs has both found.
pub(crate) struct Running<K> {
    calls: Mutex<HashMap<K, Vec<(u64, Cancel)>>>,
    serial: AtomicU64,
}

impl<K> Default for Running<K> {
    fn default() -> Self {
        Running { calls: Mutex::default(), serial: AtomicU64::default() }
    }
}

impl<K: Hash + Eq + Clone> Running<K> {
    /// A call under `key` starts: its cancel, and the guard that forgets it when dropped.
    pub(crate) fn enter(self: &Arc<Self>, key: K) -> (Cancel, Forget<K>) {
        let cancel = Cancel::new();
        let serial = self.serial.fetch_add(1, Ordering::Relaxed);
        self.lock().entry(key.clone()).or_default().push((serial, cancel.clone()));
        (cancel, Forget { running: self.clone(), key, serial })
    }

    /// Cancel the calls running under `key`, for `by`.
    pub(crate) fn cancel(&self, key: &K, by: &str) {
        for (_, cancel) in self.lock().get(key).into_iter().flatten() {
            cancel.cancel(by);
        }
    }

    /// Cancel every call running here, for `by`.
    pub(crate) fn cancel_all(&self, by: &str) {
        for (_, cancel) in self.lock().values().flatten() {
            cancel.cancel(by);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Vec<(u64, Cancel)>>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Drops a call from [`Running`] when it ends (or its request is dropped).
pub(crate) struct Forget<K: Hash + Eq + Clone> {
    running: Arc<Running<K>>,
    key: K,
    serial: u64,
}

impl<K: Hash + Eq + Clone> Drop for Forget<K> {
    fn drop(&mut self) {
        let mut running = self.running.lock();
        if let Some(calls) = running.get_mut(&self.key) {
            calls.retain(|(serial, _)| *serial != self.serial);
            if calls.is_empty() {
                running.remove(&self.key);
            }
        }
    }
}

/// What the direct path makes of a `tools/call` from a session it may serve.
pub(crate) enum Decision {
    /// rmcp serves it — prepared here once and handed on with it (see `call::Prepared`), or not
    /// prepared (not a call this path serves, or the host is still loading).
    Rmcp(Option<PreparedCall<'static>>),
    /// The executor refused it (and audited that): its JSON answer.
    Answer(Vec<u8>),
    /// Run here, and answered with [`encode`].
    Run(DirectCall),
}

/// A call run here: prepared, for its caller, answered under its request's id.
pub(crate) struct DirectCall {
    pub(crate) prepared: PreparedCall<'static>,
    pub(crate) who: CallContext,
    pub(crate) id: RequestId,
}

impl McpServer {
    /// The one decision of the direct path, for every transport: whether `request`, from
    /// `client`'s session (with its HTTP request's `parts`), is a call answered here. It is
    /// prepared once, planned as rmcp's handler plans it ([`super::plan`]), and answered here
    /// only when it runs at once and asks no one ([`super::answered_directly`]).
    pub(crate) async fn decide_direct(
        &self,
        request: &JsonRpcRequest<ClientRequest>,
        client: &SessionClient,
        parts: Option<&hyper::http::request::Parts>,
    ) -> Decision {
        let ClientRequest::CallToolRequest(call) = &request.request else { return Decision::Rmcp(None) };
        let empty_meta = rmcp::model::RequestMetaObject::default();
        let meta = call.extensions.get::<rmcp::model::RequestMetaObject>().unwrap_or(&empty_meta);
        let stateless = client.revision == super::stateless::REVISION;
        let protocol_field = |k: &str| {
            k.starts_with("io.modelcontextprotocol/")
                && !(stateless && super::stateless::LIFECYCLE_KEYS.contains(&k))
        };
        if meta.0.keys().any(|k| k == "progressToken" || protocol_field(k)) {
            return Decision::Rmcp(None);
        }
        if self.loaded.as_ref().is_some_and(|l| !*l.borrow()) {
            return Decision::Rmcp(None);
        }
        let params: &CallToolRequestParams = &call.params;
        let who = super::caller_of(parts, Some(client.name.clone()), meta);
        let empty = rmcp::model::JsonObject::new();
        let args = params.arguments.as_ref().unwrap_or(&empty);
        let prepared =
            match self.executor.prepare(CallRequest::Named { name: &params.name, args }, &who).await {
                Ok(prepared) => prepared.into_owned(),
                // Refused and audited: answered as rmcp's handler answers it.
                Err(outcome) => {
                    return Decision::Answer(encode(
                        super::refused(outcome),
                        request.id.clone(),
                        &client.revision,
                    ));
                }
            };
        if !super::answered_directly(&prepared, super::plan(&prepared, client.tasks, None)) {
            return Decision::Rmcp(Some(prepared));
        }
        tracing::debug!(tool = %params.name, "tools/call answered without rmcp's session (see mcp::direct)");
        Decision::Run(DirectCall { prepared, who, id: request.id.clone() })
    }
}

/// The JSON answer to request `id` of a client on `revision`, as rmcp's handler gives it: on a
/// handshake revision without what 2026-07-28 added (`resultType`, non-object structured
/// content), on 2026-07-28 as it is.
pub(crate) fn encode(result: Result<CallToolResult, ErrorData>, id: RequestId, revision: &str) -> Vec<u8> {
    let message = match result {
        Ok(result) => {
            let mut result = ServerResult::CallToolResult(result);
            if revision != super::stateless::REVISION {
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
            }
            ServerJsonRpcMessage::response(result, id)
        }
        Err(e) => ServerJsonRpcMessage::error(e, Some(id)),
    };
    serde_json::to_vec(&message).unwrap_or_else(|e| {
        format!(r#"{{"jsonrpc":"2.0","error":{{"code":-32603,"message":"cannot write the answer: {e}"}}}}"#)
            .into_bytes()
    })
}

/// The result of a call run on a task of its own, whatever became of the task.
fn joined(run: Result<CallToolResult, tokio::task::JoinError>, tool: &str) -> CallToolResult {
    run.unwrap_or_else(|e| {
        tracing::error!(tool, "a call answered directly failed: {e}");
        CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
            "the call failed: {e} [host_error]"
        ))])
    })
}

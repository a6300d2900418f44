//! A stdio session's `tools/call` answered without rmcp's service loop (issue #57).
//!
//! rmcp serves a stdio request through its service loop: the transport hands the message to
//! the loop, which spawns a handler task, whose answer goes back through a channel to the loop
//! and from it to the transport's writer. The stage breakdown (`mcp::stages`) puts those hops
//! at several microseconds of a call of about forty. A call this path may serve — the same
//! decision as the HTTP front door's ([`McpServer::decide_direct`], see `direct.rs`): a session
//! opened on a handshake revision whose client takes no tasks, no `progressToken` and no
//! protocol in `_meta`, a call that runs at once and asks no one — is run here on a task of
//! its own and its answer written by the transport's one writer. Everything else goes to rmcp,
//! a call already prepared handed on with it (so it is prepared once). A
//! `notifications/cancelled` for a call running here cancels it (and is still passed on).

use super::McpServer;
use super::direct::{Decision, DirectCall, Running, encode};
use super::idle::SessionClient;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, ContentBlock, JsonRpcMessage, RequestId, ServerResult,
};
use rmcp::service::RxJsonRpcMessage;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// What the direct path makes of a message read from stdin: still rmcp's message (with a
/// prepared call in its extensions), or answered here.
pub(crate) enum Read {
    Rmcp(RxJsonRpcMessage<RoleServer>),
    /// Answered at once (the executor refused it): the answer's line.
    Answered(Vec<u8>),
    /// Running here; its answer will be written when it ends.
    Running(DirectCall),
}

/// The direct path of one stdio session.
pub(crate) struct StdioDirect {
    server: McpServer,
    /// The client of the `initialize` read, until rmcp's answer to it is written.
    asked: Mutex<Option<SessionClient>>,
    /// The session's client, once rmcp answered its `initialize` on a revision served here.
    client: OnceLock<Arc<SessionClient>>,
    running: Arc<Running<RequestId>>,
    /// How many calls run here with their answers not written yet.
    unanswered: tokio::sync::watch::Sender<usize>,
}

impl StdioDirect {
    pub(crate) fn new(server: McpServer) -> Arc<StdioDirect> {
        Arc::new(StdioDirect {
            server,
            asked: Mutex::default(),
            client: OnceLock::new(),
            running: Arc::default(),
            unanswered: tokio::sync::watch::Sender::new(0),
        })
    }

    /// The session's client, when its calls may be answered here.
    pub(crate) fn client(&self) -> Option<Arc<SessionClient>> {
        self.client.get().filter(|c| !c.tasks).cloned()
    }

    /// Look at a message read (not a call in the usual shape, which [`StdioDirect::decide`]
    /// sees): remember an `initialize`'s client; cancel the call a `notifications/cancelled`
    /// names, if it runs here.
    pub(crate) fn saw(&self, message: &RxJsonRpcMessage<RoleServer>) {
        match message {
            JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_)) => {
                *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = SessionClient::of(message);
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.running.cancel(id, "the client");
                }
            }
            _ => {}
        }
    }

    /// rmcp's answer to `initialize` is being written: from now on the session's calls may be
    /// answered here, if it negotiated a revision served here (an error answer opens nothing).
    pub(crate) fn answering(&self, result: &ServerResult) {
        let ServerResult::InitializeResult(init) = result else { return };
        let Some(mut client) = self.asked.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        client.revision = init.protocol_version.as_str().to_string();
        if super::direct::REVISIONS.contains(&client.revision.as_str()) {
            let _ = self.client.set(Arc::new(client));
        }
    }

    /// The one decision for `message`, a call from `client`'s session.
    pub(crate) async fn decide(
        self: Arc<Self>,
        mut message: RxJsonRpcMessage<RoleServer>,
        client: Arc<SessionClient>,
    ) -> Read {
        let JsonRpcMessage::Request(request) = &mut message else { return Read::Rmcp(message) };
        match self.server.decide_direct(request, &client, None).await {
            Decision::Rmcp(None) => {}
            Decision::Rmcp(Some(prepared)) => {
                let handed = super::call::Prepared(Arc::new(Mutex::new(Some(prepared))));
                if let ClientRequest::CallToolRequest(call) = &mut request.request {
                    call.extensions.insert(handed);
                }
            }
            Decision::Answer(answer) => return Read::Answered(answer),
            Decision::Run(call) => return Read::Running(call),
        }
        Read::Rmcp(message)
    }

    /// Run `call` on a task of its own and write its answer with `write`, then count it off
    /// `pending` (also when it is cancelled, and so not answered). A client that closes stdin does not stop it: the
    /// session waits for it ([`StdioDirect::finished`]).
    pub(crate) fn run<W: AsyncWrite + Unpin + Send + 'static>(
        self: &Arc<Self>,
        call: DirectCall,
        write: Arc<tokio::sync::Mutex<W>>,
        pending: Arc<AtomicUsize>,
    ) {
        self.unanswered.send_modify(|n| *n += 1);
        let (cancel, forget) = self.running.enter(call.id.clone());
        let mut answer = Answer { id: Some(call.id), write, pending, direct: self.clone() };
        tokio::spawn(async move {
            let _forget = forget;
            let server = &answer.direct.server;
            // On the heap: the call's future is several KiB, and the task would otherwise hold
            // (and `spawn` copy) all of it.
            let run = Box::pin(server.run_direct(&call.prepared, call.who, cancel.clone(), None));
            let result = run.await;
            // A request its client cancelled is not answered (as rmcp does, and as the spec
            // asks); nor is one cut off by the end of the session.
            answer.write((!cancel.is_cancelled()).then_some(Ok(result))).await;
        });
    }

    /// Cancel the calls running here (the session ends with no one to drain them), for `by`.
    pub(crate) fn cancel_all(&self, by: &str) {
        self.running.cancel_all(by);
    }

    /// Until every call run here has its answer written.
    pub(crate) async fn finished(&self) {
        let mut rx = self.unanswered.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

/// One request of the transport's `pending` count answered (here, or by rmcp).
pub(crate) fn answered(pending: &AtomicUsize) {
    let _ =
        pending.fetch_update(std::sync::atomic::Ordering::SeqCst, std::sync::atomic::Ordering::SeqCst, |n| {
            n.checked_sub(1)
        });
}

/// The answer a call run here owes its client: written once, and if the task running it ends
/// without it (a panic), a `host_error` result is written for it still.
struct Answer<W: AsyncWrite + Unpin + Send + 'static> {
    id: Option<RequestId>,
    write: Arc<tokio::sync::Mutex<W>>,
    /// The transport's count of requests not answered yet.
    pending: Arc<AtomicUsize>,
    direct: Arc<StdioDirect>,
}

impl<W: AsyncWrite + Unpin + Send + 'static> Answer<W> {
    /// Write `result` as the answer (`None`: none is written), and count the call answered.
    async fn write(&mut self, result: Option<Result<CallToolResult, rmcp::ErrorData>>) {
        let Some(id) = self.id.take() else { return };
        if let Some(result) = result {
            let revision = self.direct.client.get().map_or("", |c| c.revision.as_str());
            let mut line = encode(result, id, revision);
            line.push(b'\n');
            let mut w = self.write.lock().await;
            if w.write_all(&line).await.is_ok() {
                let _ = w.flush().await;
            }
        }
        answered(&self.pending);
        self.direct.unanswered.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Drop for Answer<W> {
    fn drop(&mut self) {
        if self.id.is_none() {
            return;
        }
        tracing::error!("a call answered directly over stdio ended without its answer");
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let mut rest = Answer {
            id: self.id.take(),
            write: self.write.clone(),
            pending: self.pending.clone(),
            direct: self.direct.clone(),
        };
        let failed = CallToolResult::error(vec![ContentBlock::text("the call failed [host_error]")]);
        runtime.spawn(async move { rest.write(Some(Ok(failed))).await });
    }
}

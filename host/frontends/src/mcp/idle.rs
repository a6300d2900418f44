//! 2025 streamable HTTP sessions end after `[mcp] session_idle_s` without use, so the memory
//! of clients that went away (a closed laptop, a dropped connection, a crashed agent) returns.
//!
//! A session is in use while one of its streams is open (a request's answer on its way, which
//! covers a call in flight however long it runs, or its GET stream) and for `idle` after its
//! last request. rmcp's own keep-alive is turned off: it ends a session whose handler has been
//! quiet for that long even while a call is running, and leaves the ended session's id
//! registered. Here an idle session is closed through the session manager, which drops both.
//!
//! Sessions are capped (`[mcp] max_sessions`, in all and per client: see `service::places`):
//! past a cap an `initialize` is refused — by the front door with `503`/`429` and a JSON-RPC
//! error naming the setting, and here for one the front door did not recognize (a body sent
//! without a length), its session closed at once — so clients cannot make the host hold
//! sessions without bound (about 60 KiB each, kept for `session_idle_s`).

use crate::service::places::{Full, Peer, Place, Places};
use futures_core::Stream;
use rmcp::model::GetExtensions;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// When a session was last used, how many of its streams are open, and who opened it.
#[derive(Debug)]
struct Use {
    last: Instant,
    open: usize,
    client: Option<Arc<SessionClient>>,
    /// Its place under the caps, from its `initialize` on; freed when the session goes.
    place: Option<Place>,
}

/// What a session's `initialize` said: what [`super::direct`] needs to serve its calls
/// without rmcp's session (the revision, the client's name, whether it takes tasks).
#[derive(Debug, PartialEq)]
pub(crate) struct SessionClient {
    pub(crate) revision: String,
    pub(crate) name: String,
    pub(crate) tasks: bool,
}

impl SessionClient {
    pub(crate) fn of(message: &ClientJsonRpcMessage) -> Option<SessionClient> {
        let ClientJsonRpcMessage::Request(r) = message else { return None };
        let rmcp::model::ClientRequest::InitializeRequest(init) = &r.request else { return None };
        Some(SessionClient {
            revision: init.params.protocol_version.as_str().to_string(),
            name: init.params.client_info.name.clone(),
            tasks: init.params.capabilities.supports_tasks(),
        })
    }
}

type Uses = Arc<Mutex<HashMap<SessionId, Use>>>;

/// rmcp's in-memory sessions, ended after `idle` without use.
#[derive(Debug)]
pub(crate) struct IdleSessions {
    inner: LocalSessionManager,
    idle: Duration,
    uses: Uses,
    places: Arc<Places>,
}

impl IdleSessions {
    pub(crate) fn new(idle: Duration, caps: super::settings::SessionCaps) -> IdleSessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = None;
        IdleSessions { inner, idle, uses: Uses::default(), places: Places::new(caps.max, caps.max_per_peer) }
    }

    /// Whether `peer` may open one more session now.
    pub(crate) fn room(&self, peer: Option<&Peer>) -> Result<(), Full> {
        self.places.room(peer)
    }

    /// Who opened session `id`, while rmcp still serves it; `None` for a session unknown,
    /// closed, or not initialized (yet).
    pub(crate) async fn client(&self, id: &SessionId) -> Option<Arc<SessionClient>> {
        let client = self.uses.lock().unwrap_or_else(|e| e.into_inner()).get(id)?.client.clone()?;
        self.inner.has_session(id).await.ok()?.then_some(client)
    }

    fn touch(&self, id: &SessionId) {
        if let Some(u) = self.uses.lock().unwrap_or_else(|e| e.into_inner()).get_mut(id) {
            u.last = Instant::now();
        }
    }

    /// Keep session `id` in use (never closed for being idle) while the guard lives.
    pub(crate) fn hold(&self, id: &SessionId) -> Held {
        if let Some(u) = self.uses.lock().unwrap_or_else(|e| e.into_inner()).get_mut(id) {
            u.last = Instant::now();
            u.open += 1;
        }
        Held { uses: self.uses.clone(), id: id.clone() }
    }

    /// Close the sessions idle for `idle`, now and every fraction of it, until `stop`.
    pub(crate) async fn sweep(self: Arc<Self>, stop: impl Future<Output = ()>) {
        let mut stop = std::pin::pin!(stop);
        let every = (self.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = &mut stop => return,
            }
            let now = Instant::now();
            let expired: Vec<SessionId> = {
                let mut uses = self.uses.lock().unwrap_or_else(|e| e.into_inner());
                let ids: Vec<SessionId> = uses
                    .iter()
                    .filter(|(_, u)| u.open == 0 && now.duration_since(u.last) >= self.idle)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &ids {
                    uses.remove(id);
                }
                ids
            };
            for id in expired {
                tracing::info!(session = %id, "MCP session idle for {:?} (mcp.session_idle_s): closed", self.idle);
                if let Err(e) = self.inner.close_session(&id).await {
                    tracing::debug!(session = %id, "closing an idle MCP session: {e}");
                }
            }
        }
    }
}

/// Keeps its session in use while held (by an open stream, or a call answered directly).
pub(crate) struct Held {
    uses: Uses,
    id: SessionId,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(u) = self.uses.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&self.id) {
            u.open = u.open.saturating_sub(1);
            u.last = Instant::now();
        }
    }
}

/// A session's stream, holding the session in use until it ends.
struct HeldStream<S> {
    inner: Pin<Box<S>>,
    _held: Held,
}

impl<S: Stream> Stream for HeldStream<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl SessionManager for IdleSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.uses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), Use { last: Instant::now(), open: 0, client: None, place: None });
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let ClientJsonRpcMessage::Request(request) = &message else {
            return self.inner.initialize_session(id, message).await;
        };
        let peer = request
            .request
            .extensions()
            .get::<hyper::http::request::Parts>()
            .and_then(|p| p.extensions.get::<super::client::Client>()?.0.clone());
        let place = match self.places.take(peer.clone()) {
            Ok(place) => place,
            Err(full) => {
                let why = refusal(full, peer.as_ref());
                tracing::warn!(session = %id, "MCP session refused: {why}");
                let request_id = request.id.clone();
                self.uses.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
                if let Err(e) = self.inner.close_session(id).await {
                    tracing::debug!(session = %id, "closing a refused MCP session: {e}");
                }
                let code = rmcp::model::ErrorCode(super::UNAVAILABLE_CODE as i32);
                return Ok(ServerJsonRpcMessage::error(
                    rmcp::ErrorData::new(code, why, None),
                    Some(request_id),
                ));
            }
        };
        let _held = self.hold(id);
        let client = SessionClient::of(&message).map(Arc::new);
        let answer = self.inner.initialize_session(id, message).await?;
        let mut uses = self.uses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(u) = uses.get_mut(id) {
            u.place = Some(place);
            // Only a session whose handshake was answered (not refused) is served directly.
            if matches!(answer, rmcp::model::JsonRpcMessage::Response(_)) {
                u.client = client;
            }
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.uses.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let held = self.hold(id);
        let inner = self.inner.create_stream(id, message).await?;
        Ok(HeldStream { inner: Box::pin(inner), _held: held })
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let held = self.hold(id);
        let inner = self.inner.create_standalone_stream(id).await?;
        Ok(HeldStream { inner: Box::pin(inner), _held: held })
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let held = self.hold(id);
        let inner = self.inner.resume(id, last_event_id).await?;
        Ok(HeldStream { inner: Box::pin(inner), _held: held })
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let outcome = self.inner.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            self.uses
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, Use { last: Instant::now(), open: 0, client: None, place: None });
        }
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// Why an `initialize` of `peer` is refused: which cap, and the setting.
fn refusal(full: Full, peer: Option<&Peer>) -> String {
    match full {
        Full::Total { max } => format!(
            "too many open MCP sessions: {max} are open, the most [mcp] max_sessions = {max} allows; retry \
             later (a session unused for [mcp] session_idle_s is closed, and a client ends its own with DELETE) [busy]"
        ),
        Full::Peer { max } => format!(
            "this client ({}) has {max} open MCP sessions, the most [mcp] max_sessions_per_peer = {max} allows; \
             end one (DELETE) or retry once one has gone unused for [mcp] session_idle_s [busy]",
            peer.map(ToString::to_string).unwrap_or_default()
        ),
    }
}

/// The answer to an `initialize` past a cap: `503` when all sessions are taken, `429` when the
/// client's are, with `Retry-After` and a JSON-RPC error (`id: null`) saying which cap.
pub(crate) fn refused(
    full: Full,
    peer: Option<&Peer>,
) -> hyper::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>> {
    use http_body_util::{BodyExt, Full as FullBody};
    let why = refusal(full, peer);
    tracing::warn!("MCP session refused: {why}");
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": super::UNAVAILABLE_CODE, "message": why },
    });
    let mut resp = hyper::Response::new(FullBody::new(bytes::Bytes::from(body.to_string())).boxed());
    *resp.status_mut() = match full {
        Full::Total { .. } => hyper::StatusCode::SERVICE_UNAVAILABLE,
        Full::Peer { .. } => hyper::StatusCode::TOO_MANY_REQUESTS,
    };
    let headers = resp.headers_mut();
    headers.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    headers.insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from_static("1"));
    resp
}

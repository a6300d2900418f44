//! `GET /console/api/events`: the activity feed as Server-Sent Events — every registry change
//! (`reload`, with the lines `serve` prints: `+ tool`, `~ tool (v1 → v2)`, `- tool`,
//! `! file: reason`, `? …`), every call that starts or reports progress (`running`: its id,
//! tool, front end, start, done/total and message) and every finished call (`call`: its id,
//! tool, front end, duration, outcome, danger decision, usage).
//!
//! The feed never slows a call: calls are published on the service's bounded broadcast, and a
//! browser that reads slower than calls finish misses the oldest, which it is told as
//! `skipped` with their number — nothing it shows is wrong, and nothing missed goes unsaid.
//! Nor does it take the calls' CPU: at most [`MAX_RATE`] calls a second are written to one
//! browser (more than a person can read); past that the rest are counted as skipped, without
//! being serialized. Events that arrive together are written as one chunk. The stream ends
//! when the shutdown begins or the browser goes away.

use super::{Body, Console};
use crate::service::CallEvent;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::mpsc;

/// Chunks buffered for a browser before the feed stops reading calls (and starts counting
/// them as skipped).
const CHUNKS: usize = 16;
/// Calls written in one chunk at most.
const BATCH: usize = 512;
/// Calls written to one browser per second at most (a burst of up to a second's worth).
pub const MAX_RATE: f64 = 2000.0;
/// A comment line this often keeps proxies from closing a quiet stream.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// A response body fed from a channel (a chunk per batch of events).
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// One SSE event.
fn event(out: &mut String, name: &str, data: &impl serde::Serialize) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    // JSON has no raw newline, so the data is one `data:` line.
    out.push_str(&serde_json::to_string(data).unwrap_or_else(|_| "null".into()));
    out.push_str("\n\n");
}

/// Open the feed for one browser.
pub fn open(c: &Console) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Bytes>(CHUNKS);
    let mut calls = c.service.subscribe_calls();
    let mut changes = c.reloader.subscribe();
    let mut running = c.service.subscribe_running();
    let service = c.service.clone();
    let generation = c.reloader.generation();
    tokio::spawn(async move {
        let mut hello = String::new();
        event(&mut hello, "hello", &serde_json::json!({ "generation": generation }));
        if tx.send(Bytes::from(hello)).await.is_err() {
            return;
        }
        let stopping = service.lifecycle.stopping();
        let mut stopping = std::pin::pin!(stopping);
        let mut bucket = Bucket { tokens: MAX_RATE, refilled: std::time::Instant::now() };
        loop {
            let mut out = String::new();
            // Biased: a call's last progress report is published before its finished event, so
            // when both are waiting the report goes first and the page never shows a finished
            // call as running.
            tokio::select! {
                biased;
                () = &mut stopping => return,
                () = tx.closed() => return,
                () = tokio::time::sleep(KEEPALIVE) => out.push_str(": keep-alive\n\n"),
                change = changes.recv() => match change {
                    Ok(change) => reload(&mut out, &change),
                    Err(RecvError::Lagged(n)) => event(&mut out, "resync", &serde_json::json!({ "missed": n })),
                    Err(RecvError::Closed) => return,
                },
                // Only each call's latest state matters: a lagged reader just goes on.
                r = running.recv() => match r {
                    Ok(e) => event(&mut out, "running", &*e),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                },
                first = calls.recv() => if !write_calls(&mut out, first, &mut calls, &mut bucket) {
                    return;
                },
            }
            if tx.send(Bytes::from(out)).await.is_err() {
                return;
            }
        }
    });
    let mut resp = Response::new(ChannelBody(rx).boxed());
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// A token bucket: one token per call written, [`MAX_RATE`] a second.
struct Bucket {
    tokens: f64,
    refilled: std::time::Instant,
}

/// Write `first` and the calls waiting after it (up to [`BATCH`] in all) as `call` events, as
/// many as `bucket` allows; those left out, and those the reader missed by lagging, as one
/// `skipped` event. `false` when the calls' broadcast closed.
fn write_calls(
    out: &mut String,
    first: Result<Arc<CallEvent>, RecvError>,
    calls: &mut broadcast::Receiver<Arc<CallEvent>>,
    bucket: &mut Bucket,
) -> bool {
    let now = std::time::Instant::now();
    bucket.tokens =
        (bucket.tokens + now.duration_since(bucket.refilled).as_secs_f64() * MAX_RATE).min(MAX_RATE);
    bucket.refilled = now;
    let mut skipped = 0u64;
    let mut next = first;
    for i in 1.. {
        match next {
            Ok(_) if bucket.tokens < 1.0 => skipped += 1,
            Ok(e) => {
                bucket.tokens -= 1.0;
                event(out, "call", &*e);
            }
            Err(RecvError::Lagged(n)) => skipped += n,
            Err(RecvError::Closed) => return false,
        }
        if i == BATCH {
            break;
        }
        next = match calls.try_recv() {
            Ok(e) => Ok(e),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(_) => break,
        };
    }
    if skipped > 0 {
        event(out, "skipped", &serde_json::json!({ "count": skipped }));
    }
    true
}

/// A registry change as a `reload` event.
fn reload(out: &mut String, change: &Arc<toolhost_core::registry::reload::Change>) {
    event(
        out,
        "reload",
        &serde_json::json!({
            "generation": change.generation,
            "time": crate::service::audit::rfc3339(std::time::SystemTime::now()),
            "lines": change.lines(),
            "added": change.added,
            "changed": change.changed,
            "removed": change.removed,
            "failures": change.failures.len(),
            "pending": change.pending.len(),
        }),
    );
}

//! Plain `application/json` answers over streamable HTTP when no stream is needed (issue #33).
//!
//! rmcp answers a 2026-07-28 stateless request with JSON when its `json_response` is set, but
//! a request of a 2025 session always gets an event stream, even when the only event is the
//! answer. [`plain_json`] turns such a stream into a JSON body: it reads the stream's events
//! until the first one that carries a message; if that message is the answer (a response or an
//! error, no `method`), it is the whole body — nothing can follow it on a request's stream. If
//! the first message is a notification or a request (progress, an elicitation), the stream is
//! passed on unchanged, the events already read first: no message is ever lost.

use bytes::Bytes;
use http_body_util::BodyExt;

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// `resp` (the answer to a POST whose client accepts JSON) as a JSON body when its event
/// stream's first message is the answer; otherwise the stream as it was.
pub(crate) async fn plain_json(resp: hyper::Response<Body>) -> hyper::Response<Body> {
    let is_stream = resp
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !is_stream || resp.status() != hyper::StatusCode::OK {
        return resp;
    }
    let (mut parts, mut body) = resp.into_parts();
    let mut read: Vec<Bytes> = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let frame = match body.frame().await {
            Some(Ok(frame)) => frame,
            // The stream ended (or cannot fail: `Infallible`) before any message.
            Some(Err(never)) => match never {},
            None => break,
        };
        let Ok(data) = frame.into_data() else { continue };
        read.push(data.clone());
        pending.extend_from_slice(&data);
        while let Some(end) = event_end(&pending) {
            let event: Vec<u8> = pending.drain(..end).collect();
            let Some(message) = event_data(&event) else { continue };
            if !is_answer(&message) {
                // A notification or request first: the stream is needed.
                return stream_on(parts, read, body);
            }
            parts.headers.remove(hyper::header::CACHE_CONTROL);
            parts.headers.insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            parts.headers.insert(hyper::header::CONTENT_LENGTH, message.len().into());
            return hyper::Response::from_parts(
                parts,
                http_body_util::Full::new(Bytes::from(message)).boxed(),
            );
        }
    }
    stream_on(parts, read, body)
}

/// The stream again: the frames already read, then the rest.
fn stream_on(parts: hyper::http::response::Parts, read: Vec<Bytes>, rest: Body) -> hyper::Response<Body> {
    hyper::Response::from_parts(parts, ChainBody { read: read.into(), rest }.boxed())
}

/// Frames already read, then the rest of a body.
struct ChainBody {
    read: std::collections::VecDeque<Bytes>,
    rest: Body,
}

impl hyper::body::Body for ChainBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        if let Some(b) = self.read.pop_front() {
            return std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(b))));
        }
        std::pin::Pin::new(&mut self.rest).poll_frame(cx)
    }
}

/// The end (past the blank line) of the first complete event in `buf`.
fn event_end(buf: &[u8]) -> Option<usize> {
    let lf = memchr::memmem::find(buf, b"\n\n").map(|i| i + 2);
    let crlf = memchr::memmem::find(buf, b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The `data` of one event (its `data:` lines joined), `None` when it has none (a comment, a
/// keep-alive, the priming event that only sets `id` and `retry`).
fn event_data(event: &[u8]) -> Option<Vec<u8>> {
    let mut data: Option<Vec<u8>> = None;
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(value) = line.strip_prefix(b"data:") else { continue };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        match &mut data {
            Some(d) => {
                d.push(b'\n');
                d.extend_from_slice(value);
            }
            None => data = Some(value.to_vec()),
        }
    }
    data.filter(|d| !d.iter().all(u8::is_ascii_whitespace))
}

/// Whether a JSON-RPC message is an answer (has an `id`, no `method`), read without building it.
fn is_answer(message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        id: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(message).is_ok_and(|p| p.id.is_some() && p.method.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(frames: &[&str]) -> hyper::Response<Body> {
        let read = frames.iter().map(|f| Bytes::from(f.to_string())).collect();
        hyper::Response::builder()
            .header("content-type", "text/event-stream")
            .header("mcp-session-id", "s1")
            .body(ChainBody { read, rest: http_body_util::Empty::new().boxed() }.boxed())
            .unwrap()
    }

    async fn body_of(r: hyper::Response<Body>) -> (String, String) {
        let ct = r.headers().get("content-type").unwrap().to_str().unwrap().to_string();
        let b = r.into_body().collect().await.unwrap().to_bytes();
        (ct, String::from_utf8(b.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn an_answer_alone_becomes_json_and_a_notification_first_keeps_the_stream() {
        let answer = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        let r = plain_json(sse(&["id: 0\nretry: 3000\n\n", &format!("data: {answer}\n\n")])).await;
        assert_eq!(r.headers().get("mcp-session-id").unwrap(), "s1");
        assert_eq!(body_of(r).await, ("application/json".to_string(), answer.to_string()));

        // Split across frames, in two lines.
        let r = plain_json(sse(&["data: {\"jsonrpc\":\"2.0\",", "\ndata: \"id\":1,\"result\":{}}\n", "\n"]))
            .await;
        assert_eq!(body_of(r).await.0, "application/json");

        let progress = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        let last = format!("data: {answer}\n\n");
        let r = plain_json(sse(&[":keep-alive\n\n", progress, &last])).await;
        let (ct, body) = body_of(r).await;
        assert_eq!(ct, "text/event-stream");
        assert_eq!(body, format!(":keep-alive\n\n{progress}{last}"));
    }
}

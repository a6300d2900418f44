//! What the front door reads of an MCP request and answers without rmcp: `Accept` and length
//! checks, bodies read into memory, the 2025-11-25 task requests renamed, the draining rules,
//! and its plain answers (`503`, text, JSON).

use super::{Body, McpBody, SESSION_ID};

/// `Retry-After` (seconds) on a `503` while shutting down: a load balancer has usually routed
/// the client elsewhere by then.
pub(super) const RETRY_AFTER_S: &str = "1";

/// While draining: `req` back (its body read into memory, if it had to be read to decide)
/// when it may be served, or the `503` that refuses it. See the comment at the call.
pub(super) async fn admit_while_draining(
    req: hyper::Request<McpBody>,
    max_message: usize,
) -> Result<hyper::Request<McpBody>, hyper::Response<Body>> {
    use http_body_util::BodyExt;
    if req.headers().contains_key(SESSION_ID) {
        return Ok(req);
    }
    if req.method() != hyper::Method::POST {
        return Err(unavailable(false, false));
    }
    let (parts, body) = req.into_parts();
    let body = http_body_util::Limited::new(body, max_message);
    let Ok(bytes) = body.collect().await.map(|b| b.to_bytes()) else {
        return Err(unavailable(false, true));
    };
    let method = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_string));
    match method.as_deref() {
        Some(m) if m != "initialize" && m != "tools/call" => Ok(hyper::Request::from_parts(
            parts,
            http_body_util::Either::Right(http_body_util::Full::new(bytes)),
        )),
        _ => Err(unavailable(false, true)),
    }
}

/// The media types a request's `Accept` lists, without their parameters.
pub(super) fn accepted(headers: &hyper::HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.split(';').next().unwrap_or("").trim())
}

/// Whether a request's `Accept` takes `application/json` (or anything).
pub(super) fn accepts_json(headers: &hyper::HeaderMap) -> bool {
    accepted(headers).any(|t| {
        t.eq_ignore_ascii_case("application/json") || t == "*/*" || t.eq_ignore_ascii_case("application/*")
    })
}

/// Whether a request's `Accept` names both JSON and event streams, as rmcp requires of a
/// `POST` (exactly: no wildcards).
pub(super) fn accepts_both(headers: &hyper::HeaderMap) -> bool {
    let named = |essence: &str| accepted(headers).any(|t| t.eq_ignore_ascii_case(essence));
    named("application/json") && named("text/event-stream")
}

/// Whether a request declares a body (`Content-Length`) of at most `max` bytes: only then is
/// it read here before rmcp reads it.
pub(super) fn declared_within(headers: &hyper::HeaderMap, max: usize) -> bool {
    headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
        .is_some_and(|n| n <= max)
}

/// A request's body, of at most `max` bytes; a `400` when it cannot be read.
pub(super) async fn read_body(body: McpBody, max: usize) -> Result<bytes::Bytes, hyper::Response<Body>> {
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(body, max).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(_) => Err(text(hyper::StatusCode::BAD_REQUEST, "cannot read the request body\n")),
    }
}

/// A request rebuilt around its body, read into memory.
pub(super) fn with_body(parts: hyper::http::request::Parts, body: bytes::Bytes) -> hyper::Request<McpBody> {
    hyper::Request::from_parts(parts, http_body_util::Either::Right(http_body_util::Full::new(body)))
}

/// A `200` carrying one JSON-RPC message as `application/json`.
pub(super) fn json(message: Vec<u8>) -> hyper::Response<Body> {
    use http_body_util::{BodyExt, Full};
    let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from(message)).boxed());
    resp.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    resp
}

/// 2025-11-25 tasks over HTTP (see `tasks2025.rs`): the body of a `POST` of that revision (its
/// `MCP-Protocol-Version` header) or of no session yet (an `initialize`, whose answer then
/// declares `tasks`: the bool returned) is read here, if its declared length is within the
/// message limit, and a task request renamed. Any other body goes on as it came: rmcp reads and
/// limits it (so a task request sent without `Content-Length` is not seen as one).
pub(super) async fn rename_for_2025(
    req: hyper::Request<McpBody>,
    max_message: usize,
) -> Result<(hyper::Request<McpBody>, bool), hyper::Response<Body>> {
    let revision = req.headers().get("mcp-protocol-version").map(|v| v.as_bytes());
    let on_2025 = revision == Some(crate::mcp::tasks2025::REVISION.as_bytes());
    let opening = revision.is_none() && !req.headers().contains_key(SESSION_ID);
    if !(on_2025 || opening) || !declared_within(req.headers(), max_message) {
        return Ok((req, false));
    }
    let (mut parts, body) = req.into_parts();
    let bytes = read_body(body, max_message).await?;
    let initialize = opening && memchr::memmem::find(&bytes, b"\"initialize\"").is_some();
    let renamed = if on_2025 { crate::mcp::tasks2025::rename(&bytes) } else { None };
    let bytes = match renamed {
        Some(renamed) => {
            parts.headers.insert(hyper::header::CONTENT_LENGTH, renamed.len().into());
            bytes::Bytes::from(renamed)
        }
        None => bytes,
    };
    Ok((with_body(parts, bytes), initialize))
}

/// The answer to an `initialize`, with `capabilities.tasks` added if it negotiated 2025-11-25
/// (a JSON body or a `data:` line of an event stream; rmcp writes the answer in one frame).
pub(super) fn declare_tasks(mut resp: hyper::Response<Body>) -> hyper::Response<Body> {
    use http_body_util::BodyExt;
    resp.headers_mut().remove(hyper::header::CONTENT_LENGTH);
    resp.map(|body| {
        body.map_frame(|frame| match frame.into_data() {
            Ok(data) => hyper::body::Frame::data(declare_tasks_in(data)),
            Err(frame) => frame,
        })
        .boxed()
    })
}

pub(super) fn declare_tasks_in(data: bytes::Bytes) -> bytes::Bytes {
    use crate::mcp::tasks2025::declare_tasks;
    if memchr::memmem::find(&data, b"\"serverInfo\"").is_none() {
        return data;
    }
    let Ok(text) = std::str::from_utf8(&data) else { return data };
    if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text) {
        return if declare_tasks(&mut v) { bytes::Bytes::from(v.to_string()) } else { data };
    }
    let mut out = String::with_capacity(text.len() + 80);
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        if let Some(json) = body.strip_prefix("data:")
            && let Ok(mut v) = serde_json::from_str::<serde_json::Value>(json.trim_start())
            && declare_tasks(&mut v)
        {
            out.push_str("data: ");
            out.push_str(&v.to_string());
            out.push_str(&line[body.len()..]);
            changed = true;
            continue;
        }
        out.push_str(line);
    }
    if changed { bytes::Bytes::from(out) } else { data }
}

/// `503` with `Retry-After` while starting or shutting down. To a `POST` the body is also a
/// JSON-RPC error (`id: null`: the request is not read), which clients show as the reason.
pub(super) fn unavailable(starting: bool, post: bool) -> hyper::Response<Body> {
    use http_body_util::{BodyExt, Full};
    let why = if starting {
        "toolhost is starting: the plugins are loading; retry"
    } else {
        "toolhost is shutting down and accepts no new sessions or calls; retry (another replica will answer)"
    };
    let mut resp = if post {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": UNAVAILABLE_CODE, "message": format!("{why} [unavailable]") },
        });
        let mut resp = hyper::Response::new(Full::new(bytes::Bytes::from(body.to_string())).boxed());
        resp.headers_mut()
            .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
        *resp.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
        resp
    } else {
        let why: &'static str = if starting {
            "toolhost is starting: the plugins are loading; retry\n"
        } else {
            "toolhost is shutting down: retry (another replica will answer)\n"
        };
        text(hyper::StatusCode::SERVICE_UNAVAILABLE, why)
    };
    resp.headers_mut()
        .insert(hyper::header::RETRY_AFTER, hyper::header::HeaderValue::from_static(RETRY_AFTER_S));
    resp
}

pub(crate) use crate::mcp::UNAVAILABLE_CODE;

pub(super) fn text(status: hyper::StatusCode, body: impl Into<bytes::Bytes>) -> hyper::Response<Body> {
    use http_body_util::{BodyExt, Full};
    let mut resp = hyper::Response::new(Full::new(body.into()).boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut()
        .insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-store"));
    resp
}

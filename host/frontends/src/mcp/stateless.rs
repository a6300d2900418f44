//! A 2026-07-28 stateless `tools/call` answered without rmcp's per-request service (issue #57).
//!
//! rmcp serves each stateless request with a service of its own: a one-shot transport, a
//! service loop on a task of its own, a handler task, the answer back through a channel
//! (BENCHMARKS.md: about as much again as a session's call answered by `direct.rs`). The
//! front door answers such a call itself when rmcp would surely accept the request as it came
//! and its call needs nothing of rmcp: [`client`] is that check, the only one, and what it
//! does not accept goes to rmcp unchanged, which then accepts it or answers with its own error.
//! So no request is refused here that rmcp would serve, and none served that rmcp would refuse.
//!
//! rmcp's checks of a stateless request, and what [`client`] asks for so that each passes:
//! - the `MCP-Protocol-Version` header names a known revision, and the request's
//!   `_meta` protocol version is the header's: both are exactly 2026-07-28;
//! - `_meta` holds the per-request fields that revision requires (`protocolVersion`,
//!   `clientCapabilities`; `clientInfo` too here, so the caller is named as rmcp's handler names
//!   it);
//! - SEP-2243's headers agree with the body: one `Mcp-Method` of `tools/call`, one `Mcp-Name` of
//!   the tool's name as written (a Base64-encoded one is rmcp's to decode), and no
//!   `Mcp-Param-*` header (rmcp checks those against a tool schema);
//! - the handler's own: the version is one toolhost serves, and the call is answered as its
//!   handler answers a call that runs at once ([`super::McpServer::decide_direct`]): no
//!   task-capable client, no `progressToken`, no other `io.modelcontextprotocol/` field in
//!   `_meta`.
//!
//! A stateless call has no session, so a `notifications/cancelled` cannot name it: as in
//! rmcp, the client going away (the request dropped) cancels it. It runs on a task of its own,
//! so a call cancelled that way still ends with its outcome and its audit line.

use super::idle::SessionClient;
use rmcp::model::{ClientRequest, JsonRpcRequest, ProtocolVersion, RequestMetaObject};

/// The revision whose requests carry everything in `_meta`, with no session.
pub(crate) const REVISION: &str = "2026-07-28";

/// The `_meta` fields of that revision's per-request lifecycle, which a call answered here may
/// carry (any other `io.modelcontextprotocol/` field sends it to rmcp).
pub(crate) const LIFECYCLE_KEYS: [&str; 3] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
];

/// Whether a POST's headers make it a stateless request this path may read: no session, the
/// revision's `MCP-Protocol-Version`, a JSON body.
pub(crate) fn request(headers: &hyper::HeaderMap) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    header("mcp-session-id").is_none()
        && header("mcp-protocol-version") == Some(REVISION)
        && sends_json(headers)
}

/// Whether a request's body is JSON, by its `Content-Type` (a session's direct call asks too).
pub(crate) fn sends_json(headers: &hyper::HeaderMap) -> bool {
    headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"))
}

/// The client of a stateless `tools/call` that every check rmcp makes of it would accept (see
/// the module's documentation); `None` sends it to rmcp.
pub(crate) fn client(
    headers: &hyper::HeaderMap,
    request: &JsonRpcRequest<ClientRequest>,
) -> Option<SessionClient> {
    let ClientRequest::CallToolRequest(call) = &request.request else { return None };
    let meta = call.extensions.get::<RequestMetaObject>()?;
    let revision = ProtocolVersion::V_2026_07_28;
    if meta.protocol_version()? != revision || !meta.missing_required_keys(&revision).is_empty() {
        return None;
    }
    if only(headers, "mcp-method")? != "tools/call" || only(headers, "mcp-name")? != call.params.name {
        return None;
    }
    if headers.keys().any(|k| k.as_str().starts_with("mcp-param-")) {
        return None;
    }
    // A client that takes tasks: its calls may become tasks, rmcp's handler's to start (as a
    // session of such a client is rmcp's, `Direct::session`).
    if meta.client_capabilities().is_some_and(|c| c.supports_tasks()) {
        return None;
    }
    Some(SessionClient { revision: REVISION.into(), name: meta.client_info()?.name, tasks: false })
}

/// The one value of header `name`, as written; `None` if absent, repeated or not text.
fn only<'h>(headers: &'h hyper::HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"0"}}}}"#;

    fn headers(pairs: &[(&'static str, &'static str)]) -> hyper::HeaderMap {
        let mut h = hyper::HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, hyper::header::HeaderValue::from_static(v));
        }
        h
    }

    fn good() -> Vec<(&'static str, &'static str)> {
        vec![
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ]
    }

    fn request_of(text: &str) -> JsonRpcRequest<ClientRequest> {
        match super::super::decode::tools_call(text.as_bytes()) {
            Some(rmcp::model::JsonRpcMessage::Request(r)) => r,
            _ => panic!("not a call: {text}"),
        }
    }

    #[test]
    fn a_call_in_the_common_shape_is_answered_here() {
        let h = headers(&good());
        assert!(request(&h));
        let c = client(&h, &request_of(CALL)).expect("answered here");
        assert_eq!((c.revision.as_str(), c.name.as_str(), c.tasks), (REVISION, "c", false));
    }

    #[test]
    fn anything_rmcp_might_refuse_or_must_decide_goes_to_rmcp() {
        let with = |extra: (&'static str, &'static str)| {
            let mut h = good();
            h.push(extra);
            headers(&h)
        };
        let without =
            |name: &str| headers(&good().into_iter().filter(|(k, _)| *k != name).collect::<Vec<_>>());
        let call = request_of(CALL);
        // Headers rmcp checks against the body.
        assert!(client(&without("mcp-method"), &call).is_none());
        assert!(client(&without("mcp-name"), &call).is_none());
        assert!(client(&with(("mcp-name", "echo")), &call).is_none(), "a repeated header");
        assert!(client(&with(("mcp-param-text", "hi")), &call).is_none());
        let other = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZWNobw==?="),
        ]);
        assert!(client(&other, &call).is_none(), "a Base64 name is rmcp's to decode");
        // The per-request fields.
        for missing in LIFECYCLE_KEYS {
            let text = CALL.replace(&format!("\"{missing}\""), "\"x-other\"");
            assert!(client(&headers(&good()), &request_of(&text)).is_none(), "without {missing}");
        }
        let older = CALL.replace("\"2026-07-28\"", "\"2025-06-18\"");
        assert_ne!(older, CALL);
        assert!(client(&headers(&good()), &request_of(&older)).is_none(), "_meta names another revision");
        // A task-capable client: its call may become a task, which rmcp's handler decides.
        let tasks = CALL.replace(
            r#"clientCapabilities":{}"#,
            r#"clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#,
        );
        assert_ne!(tasks, CALL);
        assert!(client(&headers(&good()), &request_of(&tasks)).is_none());
        // Not a stateless request at all.
        assert!(!request(&with(("mcp-session-id", "s"))));
        assert!(!request(&headers(&[
            ("mcp-protocol-version", "2025-06-18"),
            ("content-type", "application/json")
        ])));
        assert!(!request(&headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("content-type", "text/plain")
        ])));
    }
}

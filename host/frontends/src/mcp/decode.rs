//! A `tools/call` read straight into rmcp's types (issue #33).
//!
//! rmcp reads every message through untagged enums: the message is buffered as serde
//! `Content`, then each of the twenty-two `ClientRequest` variants is tried on it in turn, and
//! `tools/call` is the fourteenth — for a call, about 2 µs more than one pass, the largest cost
//! of a stdio call after the tool itself. A call in the shape clients send (`jsonrpc`, `id`,
//! `method` and `params`, whose fields are `name`, `arguments` and `_meta`) is read here in one
//! pass into the message rmcp would have built. Anything else — another method, another field
//! anywhere, a value of the wrong type — returns `None` and goes through rmcp's decoder as
//! before, so what is accepted, what is refused and with which error does not change (a test
//! holds both decoders to the same message).

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, JsonObject, JsonRpcMessage, JsonRpcRequest, Request, RequestId,
    RequestMetaObject,
};
use rmcp::service::RxJsonRpcMessage;
use std::borrow::Cow;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Call<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: Params,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta", default)]
    meta: Option<JsonObject>,
}

/// `text` as rmcp's message if it is a `tools/call` in the common shape; otherwise `None`
/// (rmcp's decoder then reads it).
pub(crate) fn tools_call(text: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    // Most other messages are passed over without a parse (the searcher is built once).
    static METHOD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"tools/call\""));
    METHOD.find(text)?;
    let call: Call = serde_json::from_slice(text).ok()?;
    if call.jsonrpc != "2.0" || call.method != "tools/call" {
        return None;
    }
    let mut params = CallToolRequestParams::new(call.params.name);
    params.arguments = call.params.arguments;
    let mut request = Request::new(params);
    // Where rmcp keeps a request's `_meta`: in its extensions, not in `params.meta`.
    if let Some(meta) = call.params.meta {
        request.extensions.insert(RequestMetaObject::from(meta));
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(call.id, ClientRequest::CallToolRequest(request))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rmcp_reads(text: &str) -> Option<RxJsonRpcMessage<RoleServer>> {
        serde_json::from_str(text).ok()
    }

    fn params_of(m: &RxJsonRpcMessage<RoleServer>) -> (&CallToolRequestParams, Option<&RequestMetaObject>) {
        match m {
            JsonRpcMessage::Request(r) => match &r.request {
                ClientRequest::CallToolRequest(c) => (&c.params, c.extensions.get::<RequestMetaObject>()),
                other => panic!("not a call: {other:?}"),
            },
            other => panic!("not a request: {other:?}"),
        }
    }

    /// Every call this decoder reads, rmcp reads to the same message (the same JSON written
    /// back, the same params, the same `_meta`); what it passes over is rmcp's to read.
    #[test]
    fn a_call_read_here_is_the_message_rmcp_reads() {
        let read_here = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#,
            r#"{"method":"tools/call","params":{"arguments":{"a":[1,2.5,{"b":null}],"c":true},"name":"x"},"id":"s-1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"e\u0063ho","arguments":{"t":"\"q\" \\ \n"},"_meta":{"progressToken":"p1"}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":9},"name":"n","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"n","arguments":{"big":18446744073709551615,"neg":-1,"f":1e300}}}"#,
        ];
        for text in read_here {
            let fast = tools_call(text.as_bytes()).unwrap_or_else(|| panic!("not read here: {text}"));
            let rmcp = rmcp_reads(text).unwrap_or_else(|| panic!("rmcp refuses {text}"));
            assert_eq!(serde_json::to_value(&fast).unwrap(), serde_json::to_value(&rmcp).unwrap(), "{text}");
            let ((fp, fm), (rp, rm)) = (params_of(&fast), params_of(&rmcp));
            assert_eq!(fp, rp, "{text}");
            assert_eq!(fm.map(|m| &m.0), rm.map(|m| &m.0), "{text}");
            match (&fast, &rmcp) {
                (JsonRpcMessage::Request(f), JsonRpcMessage::Request(r)) => assert_eq!(f.id, r.id, "{text}"),
                _ => unreachable!(),
            }
        }
        let passed_over = [
            // Another method, or not a request.
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":"\"tools/call\""}}"#,
            // Fields rmcp reads (or ignores) that this decoder does not know.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
            // Wrong values: rmcp's error, not this decoder's.
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}"#,
        ];
        for text in passed_over {
            assert!(tools_call(text.as_bytes()).is_none(), "read here: {text}");
        }
    }
}

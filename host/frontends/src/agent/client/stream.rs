//! Reading a reply: streamed over SSE, `tool_calls` deltas reassembled by index, or a whole
//! JSON completion from a server that does not stream.

use super::error::snippet;
use super::{ClientEvent, ModelClient, ModelError, Reply, WireFunction, WireToolCall};
use crate::agent::sse::SseParser;
use serde_json::Value;
use std::collections::BTreeMap;

impl ModelClient {
    /// A reply the server did not stream: one JSON completion, its text passed to `on_event`.
    pub(super) async fn read_whole(
        &self,
        mut resp: reqwest::Response,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<Reply, ModelError> {
        let idle = self.options.idle_timeout;
        let mut bytes = Vec::new();
        loop {
            match tokio::time::timeout(idle, resp.chunk()).await.map_err(|_| self.timed_out())? {
                Ok(Some(c)) => bytes.extend_from_slice(&c),
                Ok(None) => break,
                Err(_) => return Err(ModelError::StreamCut { bytes: bytes.len(), tries: 1 }),
            }
        }
        let reply = self.whole_reply(&bytes)?;
        if !reply.content.is_empty() {
            on_event(ClientEvent::Token(reply.content.clone()));
        }
        Ok(reply)
    }

    /// A reply streamed over SSE, its text passed to `on_event` as it arrives.
    pub(super) async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        with_tools: bool,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<Reply, ModelError> {
        let idle = self.options.idle_timeout;
        let mut parser = SseParser::default();
        let mut acc = Accumulator::default();
        let mut received = 0usize;
        loop {
            let chunk = tokio::time::timeout(idle, resp.chunk()).await.map_err(|_| self.timed_out())?;
            let (events, ended) = match chunk {
                Ok(Some(c)) => {
                    received += c.len();
                    (parser.push(&c), false)
                }
                Ok(None) => (parser.finish().into_iter().collect(), true),
                Err(_) => return Err(ModelError::StreamCut { bytes: received, tries: 1 }),
            };
            for data in events {
                if data.trim() == "[DONE]" {
                    return Ok(acc.into_reply());
                }
                if let Some(text) = self.stream_event(&data, &mut acc, with_tools)? {
                    on_event(ClientEvent::Token(text));
                }
            }
            if ended {
                // Some servers end after the last chunk without `[DONE]`: a finish reason
                // tells a complete reply from a cut one.
                if acc.finish_reason.is_some() {
                    return Ok(acc.into_reply());
                }
                return Err(ModelError::StreamCut { bytes: received, tries: 1 });
            }
        }
    }

    /// One stream event's `data` merged into `acc`; its text, if any.
    fn stream_event(
        &self,
        data: &str,
        acc: &mut Accumulator,
        with_tools: bool,
    ) -> Result<Option<String>, ModelError> {
        if data.trim().is_empty() {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| ModelError::Malformed {
            detail: format!("a stream event is not JSON ({e}): {}", snippet(&self.scrub(data))),
        })?;
        if let Some(err) = v.get("error") {
            // An error inside a 200 stream: its `code` may be an HTTP status.
            let server_side = err.get("type").and_then(Value::as_str).is_some_and(|t| t.contains("server"));
            let status = err
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(if server_side { 500 } else { 400 });
            return Err(self.classify(status, data, None, with_tools));
        }
        acc.add(&v).map_err(|detail| ModelError::Malformed {
            detail: format!("{detail}: {}", snippet(&self.scrub(data))),
        })
    }

    fn whole_reply(&self, bytes: &[u8]) -> Result<Reply, ModelError> {
        let text = String::from_utf8_lossy(bytes);
        let v: Value = serde_json::from_str(&text).map_err(|e| ModelError::Malformed {
            detail: format!("the body is not JSON ({e}): {}", snippet(&self.scrub(&text))),
        })?;
        let Some(msg) = v.pointer("/choices/0/message") else {
            return Err(ModelError::Malformed {
                detail: format!("no `choices[0].message` in {}", snippet(&self.scrub(&text))),
            });
        };
        let content = msg.get("content").and_then(Value::as_str).unwrap_or("").to_string();
        let tool_calls: Vec<WireToolCall> = match msg.get("tool_calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(tc) => serde_json::from_value(tc.clone())
                .map_err(|e| ModelError::Malformed { detail: format!("bad `tool_calls`: {e}") })?,
        };
        let finish_reason = v.pointer("/choices/0/finish_reason").and_then(Value::as_str).map(str::to_string);
        Ok(Reply { content, tool_calls, finish_reason })
    }
}

/// Reassembles a streamed reply: text deltas appended, `tool_calls` deltas merged by `index`
/// (the id and name come once, the arguments in fragments to concatenate).
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    content: String,
    calls: BTreeMap<u64, WireToolCall>,
    finish_reason: Option<String>,
}

impl Accumulator {
    /// Merge one chunk; returns its text, if any.
    pub(crate) fn add(&mut self, chunk: &Value) -> Result<Option<String>, String> {
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            // Usage-only chunks (and other keep-alives) carry no choices.
            if chunk.get("usage").is_some() || chunk.get("object").is_some() {
                return Ok(None);
            }
            return Err("a stream event has no `choices`".into());
        };
        let Some(choice) = choices.first() else { return Ok(None) };
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(r.to_string());
        }
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else { return Ok(None) };
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, c) in calls.iter().enumerate() {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
                let next = self.calls.len();
                let entry = self.calls.entry(index).or_insert_with(|| WireToolCall {
                    id: String::new(),
                    kind: "function".into(),
                    function: WireFunction { name: String::new(), arguments: String::new() },
                });
                if let Some(id) = c.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    entry.id = id.to_string();
                }
                if entry.id.is_empty() {
                    entry.id = format!("call_{next}");
                }
                if let Some(f) = c.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str) {
                        entry.function.name.push_str(n);
                    }
                    match f.get("arguments") {
                        Some(Value::String(a)) => entry.function.arguments.push_str(a),
                        // A few servers send the arguments as an object, not JSON text.
                        Some(Value::Object(o)) => {
                            entry.function.arguments.push_str(&Value::Object(o.clone()).to_string())
                        }
                        _ => {}
                    }
                }
            }
        }
        match delta.get("content") {
            Some(Value::String(s)) if !s.is_empty() => {
                self.content.push_str(s);
                Ok(Some(s.clone()))
            }
            _ => Ok(None),
        }
    }

    pub(crate) fn into_reply(self) -> Reply {
        Reply {
            content: self.content,
            tool_calls: self.calls.into_values().filter(|c| !c.function.name.is_empty()).collect(),
            finish_reason: self.finish_reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_call_fragments_are_merged_by_index() {
        let mut acc = Accumulator::default();
        let chunks = [
            json!({"choices":[{"delta":{"role":"assistant","content":"Let me"}}]}),
            json!({"choices":[{"delta":{"content":" look."}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write","arguments":""}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"a"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"ls","arguments":"{\"path\":"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":".txt\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\".\"}"}}]}}]}),
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"total_tokens":5}}),
        ];
        let mut text = String::new();
        for c in &chunks {
            if let Some(t) = acc.add(c).unwrap() {
                text.push_str(&t);
            }
        }
        let r = acc.into_reply();
        assert_eq!(text, "Let me look.");
        assert_eq!(r.content, "Let me look.");
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!((r.tool_calls[0].id.as_str(), r.tool_calls[0].function.name.as_str()), ("c1", "write"));
        assert_eq!(r.tool_calls[0].function.arguments, "{\"path\": \"a.txt\"}");
        assert_eq!(r.tool_calls[1].function.arguments, "{\"path\":\".\"}");
        assert!(Accumulator::default().add(&json!({"nope": 1})).is_err());
    }
}

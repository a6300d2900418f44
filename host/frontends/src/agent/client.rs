//! A client for `POST {base}/chat/completions`, the API OpenAI defined and local servers
//! (Ollama, llama.cpp's server, vLLM, LM Studio) also speak: streamed replies over SSE with
//! `tool_calls` deltas reassembled by index, a whole JSON reply accepted too, retries with
//! backoff for rate limits and transient failures (honouring `Retry-After`), and every error a
//! user will meet turned into a sentence that says what to do.

use super::sse::SseParser;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// One message of a conversation, in the wire format of the chat completions API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text (empty for an assistant message that only calls tools).
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<WireToolCall>) -> Message {
        Message { role: "assistant".into(), content: content.into(), tool_calls, tool_call_id: None }
    }

    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            role: "tool".into(),
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.into()),
        }
    }
}

pub use crate::openai::{WireFunction, WireToolCall};

/// The model's complete reply for one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub content: String,
    pub tool_calls: Vec<WireToolCall>,
    /// `stop`, `tool_calls`, `length`, … when the server said.
    pub finish_reason: Option<String>,
}

/// An API key. Its `Debug` never shows the value, and error texts are scrubbed of it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(value: impl Into<String>) -> ApiKey {
        ApiKey(value.into())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// How failed requests are retried: rate limits (429), 500/502/503/504/529, a connection lost
/// or a stream cut midway. Others fail at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub max_tries: u32,
    /// Backoff without `Retry-After`: `base`, `2 × base`, `4 × base`, …
    pub base_delay: Duration,
    /// No wait is longer than this, whatever `Retry-After` says.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_tries: 4, base_delay: Duration::from_secs(1), max_delay: Duration::from_secs(60) }
    }
}

/// What the client tells its caller while a request is under way.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// Text of the reply as it streams in.
    Token(String),
    /// A try failed and the request will be sent again after `wait`; text streamed so far
    /// belongs to the failed try.
    Retrying { attempt: u32, max_tries: u32, wait: Duration, reason: String },
}

/// Why a request to the model failed, phrased for the person running toolhost.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error(
        "cannot reach the model server at {url}: {detail}; is it running? (Ollama: `ollama serve`, \
         base URL http://localhost:11434/v1; llama.cpp: `llama-server -m MODEL.gguf --port 8080 --jinja`, \
         base URL http://localhost:8080/v1)"
    )]
    Unreachable { url: String, detail: String },
    #[error("the model server at {url} refused the request ({status}): {detail}; check the API key ({key})")]
    Unauthorized { url: String, status: u16, detail: String, key: String },
    #[error(
        "model `{model}` not found at {url}: {detail}; check the name (--model or [model] model in \
         toolhost.toml; GET {url_models} lists the server's models; for Ollama, `ollama pull {model}`)"
    )]
    ModelNotFound { model: String, url: String, url_models: String, detail: String },
    #[error(
        "{url} does not exist (404): the base URL must be the API root, which usually ends in /v1 \
         (e.g. http://localhost:11434/v1 for Ollama, https://api.openai.com/v1)"
    )]
    EndpointNotFound { url: String },
    #[error(
        "the conversation no longer fits the model's context window: {detail}; start over with /clear \
         (or a new `toolhost chat`), or use a model or server setting with a larger context"
    )]
    ContextTooLong { detail: String },
    #[error("rate limited by the model server (429), {tries} tries: {detail}; wait a moment and ask again")]
    RateLimited { detail: String, retry_after: Option<Duration>, tries: u32 },
    #[error("the account behind the API key has no quota left (429): {detail}")]
    QuotaExceeded { detail: String },
    #[error(
        "the model server refused the `tools` parameter: {detail}; for a model without function \
         calling use --protocol text (or auto, which falls back by itself)"
    )]
    ToolsUnsupported { detail: String },
    #[error("the model server failed ({status}), {tries} tries: {detail}")]
    Server { status: u16, detail: String, retry_after: Option<Duration>, tries: u32 },
    #[error("the model server answered {status}: {detail}")]
    Http { status: u16, detail: String },
    #[error("the connection to the model server failed, {tries} tries: {detail}")]
    Network { detail: String, tries: u32 },
    #[error(
        "the model server closed the stream in the middle of a reply (after {bytes} bytes), {tries} tries; \
         the server may have crashed or run out of memory"
    )]
    StreamCut { bytes: usize, tries: u32 },
    #[error("the model server sent a malformed response: {detail}")]
    Malformed { detail: String },
    #[error(
        "the model server sent nothing for {secs} s (it may still be loading the model); raise \
         [model] timeout_s in toolhost.toml to wait longer"
    )]
    Timeout { secs: u64 },
    // The client could not be made ([`ModelClient::new`]): nothing was sent.
    #[error("model base URL {url:?} is not a URL: {detail}")]
    NotAUrl { url: String, detail: String },
    #[error("model base URL {url:?} must start with http:// or https://")]
    NotHttp { url: String },
    #[error("cannot build the HTTP client: {detail}")]
    NoClient { detail: String },
}

impl ModelError {
    fn retry(&self) -> Option<Option<Duration>> {
        match self {
            ModelError::RateLimited { retry_after, .. } | ModelError::Server { retry_after, .. } => {
                Some(*retry_after)
            }
            ModelError::StreamCut { .. } | ModelError::Network { .. } => Some(None),
            _ => None,
        }
    }

    fn set_tries(&mut self, n: u32) {
        match self {
            ModelError::RateLimited { tries, .. }
            | ModelError::Server { tries, .. }
            | ModelError::StreamCut { tries, .. }
            | ModelError::Network { tries, .. } => *tries = n,
            _ => {}
        }
    }

    fn short(&self) -> String {
        match self {
            ModelError::RateLimited { .. } => "rate limited (429)".into(),
            ModelError::Server { status, .. } => format!("server error {status}"),
            ModelError::StreamCut { .. } => "the stream was cut midway".into(),
            ModelError::Network { detail, .. } => format!("connection failed: {detail}"),
            other => other.to_string(),
        }
    }
}

/// Where the model is and how to talk to it.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    /// Where the key came from, for error messages (never the key itself).
    pub key_source: String,
    pub temperature: Option<f64>,
    /// Longest silence from the server (before the first byte or between two chunks).
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
}

impl ClientOptions {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> ClientOptions {
        ClientOptions {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            key_source: "no key is sent; set [model] api_key_env = \"VAR\" or api_key_secret in toolhost.toml, or pass --api-key-env VAR".into(),
            temperature: None,
            idle_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
        }
    }
}

/// The chat completions client.
#[derive(Debug, Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    options: ClientOptions,
}

impl ModelClient {
    pub fn new(options: ClientOptions) -> Result<ModelClient, ModelError> {
        let url = url::Url::parse(&options.base_url)
            .map_err(|e| ModelError::NotAUrl { url: options.base_url.clone(), detail: e.to_string() })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ModelError::NotHttp { url: options.base_url.clone() });
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::NoClient { detail: e.to_string() })?;
        Ok(ModelClient { http, options })
    }

    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// `{base}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.options.base_url.trim_end_matches('/'))
    }

    /// Send the conversation (system message included) and return the whole reply, streaming
    /// text through `on_event` as it arrives. Retries per the [`RetryPolicy`].
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: Option<&Value>,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<Reply, ModelError> {
        let mut body = json!({
            "model": self.options.model,
            "messages": messages,
            "stream": true,
        });
        if let Some(t) = tools {
            body["tools"] = t.clone();
        }
        if let Some(t) = self.options.temperature {
            body["temperature"] = json!(t);
        }
        let policy = self.options.retry;
        let mut attempt = 1;
        loop {
            match self.attempt(&body, tools.is_some(), on_event).await {
                Ok(r) => return Ok(r),
                Err(mut e) => {
                    let Some(after) = e.retry() else { return Err(e) };
                    if attempt >= policy.max_tries.max(1) {
                        e.set_tries(attempt);
                        return Err(e);
                    }
                    let backoff = policy.base_delay.saturating_mul(1 << (attempt - 1).min(16));
                    let wait = after.unwrap_or(backoff).min(policy.max_delay);
                    on_event(ClientEvent::Retrying {
                        attempt,
                        max_tries: policy.max_tries,
                        wait,
                        reason: e.short(),
                    });
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn attempt(
        &self,
        body: &Value,
        with_tools: bool,
        on_event: &mut (dyn FnMut(ClientEvent) + Send),
    ) -> Result<Reply, ModelError> {
        let url = self.endpoint();
        let mut req = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string());
        if let Some(k) = &self.options.api_key {
            req = req.bearer_auth(&k.0);
        }
        let idle = self.options.idle_timeout;
        let timeout = || ModelError::Timeout { secs: idle.as_secs().max(1) };
        let resp = tokio::time::timeout(idle, req.send()).await.map_err(|_| timeout())?.map_err(|e| {
            if e.is_connect() {
                ModelError::Unreachable { url: url.clone(), detail: self.scrub(&error_chain(&e)) }
            } else {
                ModelError::Network { detail: self.scrub(&error_chain(&e)), tries: 1 }
            }
        })?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = retry_after(resp.headers());
            let text = match tokio::time::timeout(idle, resp.text()).await {
                Ok(Ok(t)) => t,
                _ => String::new(),
            };
            return Err(self.classify(status.as_u16(), &text, retry_after, with_tools));
        }
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut resp = resp;
        if !is_sse {
            // A server that ignored `stream: true` answers with one JSON completion.
            let mut bytes = Vec::new();
            loop {
                match tokio::time::timeout(idle, resp.chunk()).await.map_err(|_| timeout())? {
                    Ok(Some(c)) => bytes.extend_from_slice(&c),
                    Ok(None) => break,
                    Err(_) => return Err(ModelError::StreamCut { bytes: bytes.len(), tries: 1 }),
                }
            }
            let reply = self.whole_reply(&bytes)?;
            if !reply.content.is_empty() {
                on_event(ClientEvent::Token(reply.content.clone()));
            }
            return Ok(reply);
        }
        let mut parser = SseParser::default();
        let mut acc = Accumulator::default();
        let mut received = 0usize;
        loop {
            let chunk = tokio::time::timeout(idle, resp.chunk()).await.map_err(|_| timeout())?;
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
                if data.trim().is_empty() {
                    continue;
                }
                let v: Value = serde_json::from_str(&data).map_err(|e| ModelError::Malformed {
                    detail: format!("a stream event is not JSON ({e}): {}", snippet(&self.scrub(&data))),
                })?;
                if let Some(err) = v.get("error") {
                    // An error inside a 200 stream: its `code` may be an HTTP status.
                    let server_side =
                        err.get("type").and_then(Value::as_str).is_some_and(|t| t.contains("server"));
                    let status = err
                        .get("code")
                        .and_then(Value::as_u64)
                        .and_then(|c| u16::try_from(c).ok())
                        .unwrap_or(if server_side { 500 } else { 400 });
                    return Err(self.classify(status, &data, None, with_tools));
                }
                if let Some(text) = acc.add(&v).map_err(|detail| ModelError::Malformed {
                    detail: format!("{detail}: {}", snippet(&self.scrub(&data))),
                })? {
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

    fn scrub(&self, s: &str) -> String {
        match &self.options.api_key {
            Some(k) if !k.0.is_empty() => s.replace(&k.0, "[api key redacted]"),
            _ => s.to_string(),
        }
    }

    fn classify(
        &self,
        status: u16,
        body: &str,
        retry_after: Option<Duration>,
        with_tools: bool,
    ) -> ModelError {
        let (message, code) = error_message(body);
        let detail = self.scrub(&message);
        let lower = format!("{} {}", message.to_lowercase(), code.to_lowercase());
        let url = self.endpoint();
        let base = self.options.base_url.trim_end_matches('/').to_string();
        match status {
            401 | 403 => {
                return ModelError::Unauthorized {
                    url,
                    status,
                    detail,
                    key: self.options.key_source.clone(),
                };
            }
            429 if lower.contains("insufficient_quota") => return ModelError::QuotaExceeded { detail },
            429 => return ModelError::RateLimited { detail, retry_after, tries: 1 },
            _ => {}
        }
        let context = [
            "context_length_exceeded",
            "context length",
            "context window",
            "maximum context",
            "exceed_context_size",
            "exceeds the available context",
            "too many tokens",
            "prompt is too long",
            "input is too long",
        ];
        if (400..500).contains(&status) && context.iter().any(|p| lower.contains(p)) {
            return ModelError::ContextTooLong { detail };
        }
        let model_missing = lower.contains("model")
            && [
                "not found",
                "does not exist",
                "no such model",
                "not loaded",
                "model_not_found",
                "unknown model",
            ]
            .iter()
            .any(|p| lower.contains(p));
        if (400..500).contains(&status) && model_missing {
            return ModelError::ModelNotFound {
                model: self.options.model.clone(),
                url,
                url_models: format!("{base}/models"),
                detail,
            };
        }
        if with_tools
            && matches!(status, 400 | 404 | 422 | 500 | 501)
            && (lower.contains("tool") || lower.contains("function"))
        {
            return ModelError::ToolsUnsupported { detail };
        }
        match status {
            404 => ModelError::EndpointNotFound { url },
            500 | 502 | 503 | 504 | 529 => ModelError::Server { status, detail, retry_after, tries: 1 },
            _ => ModelError::Http {
                status,
                detail: if detail.is_empty() { "(no body)".into() } else { detail },
            },
        }
    }
}

/// `message` and `code` of an error body in the shapes servers use: `{"error": {"message",
/// "code"|"type"}}`, `{"error": "…"}`, `{"message"|"detail": …}`, or plain text.
fn error_message(body: &str) -> (String, String) {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return (snippet(body.trim()), String::new());
    };
    let err = v.get("error").unwrap_or(&v);
    let text = |x: Option<&Value>| -> Option<String> {
        x.map(|m| match m {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    };
    let message = match err {
        Value::String(s) => s.clone(),
        _ => text(err.get("message").or_else(|| err.get("detail")).or_else(|| v.get("detail")))
            .unwrap_or_else(|| snippet(body.trim())),
    };
    let code =
        [err.get("code"), err.get("type")].into_iter().flatten().filter_map(|c| text(Some(c))).collect();
    (snippet(&message), code)
}

fn snippet(s: &str) -> String {
    let cut: String = s.chars().take(300).collect();
    if cut.len() < s.len() { format!("{cut}…") } else { cut }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        src = s.source();
    }
    parts.join(": ")
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. An HTTP-date value is not read
/// (the backoff applies instead).
fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get =
        |name: &str| h.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok());
    let d = get("retry-after-ms").map(|ms| ms / 1000.0).or_else(|| get("retry-after"))?;
    (d.is_finite() && d >= 0.0).then(|| Duration::from_secs_f64(d.min(86_400.0)))
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

    fn client() -> ModelClient {
        let mut o = ClientOptions::new("http://127.0.0.1:9/v1", "m1");
        o.api_key = Some(ApiKey::new("sk-very-secret-value"));
        o.key_source = "from the environment variable K".into();
        ModelClient::new(o).unwrap()
    }

    #[test]
    fn a_base_url_that_is_not_http_is_refused_before_anything_is_sent() {
        let new = |url: &str| ModelClient::new(ClientOptions::new(url, "m1")).unwrap_err();
        assert!(matches!(new("not a url"), ModelError::NotAUrl { .. }));
        let e = new("ftp://models.example/v1");
        assert_eq!(e, ModelError::NotHttp { url: "ftp://models.example/v1".into() });
        assert_eq!(
            e.to_string(),
            "model base URL \"ftp://models.example/v1\" must start with http:// or https://"
        );
    }

    #[test]
    fn errors_are_classified_and_scrubbed() {
        let c = client();
        let e = c.classify(
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-very-secret-value"}}"#,
            None,
            false,
        );
        assert!(matches!(e, ModelError::Unauthorized { .. }));
        let shown = e.to_string();
        assert!(!shown.contains("sk-very-secret-value") && shown.contains("[api key redacted]"), "{shown}");
        assert!(shown.contains("environment variable K"), "{shown}");
        let e = c.classify(
            404,
            r#"{"error":{"message":"model \"m1\" not found, try pulling it first"}}"#,
            None,
            false,
        );
        assert!(e.to_string().contains("ollama pull m1"), "{e}");
        assert!(matches!(
            c.classify(404, "404 page not found", None, false),
            ModelError::EndpointNotFound { .. }
        ));
        let e = c.classify(400, r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","code":"context_length_exceeded"}}"#, None, true);
        assert!(matches!(e, ModelError::ContextTooLong { .. }), "{e:?}");
        let e = c.classify(
            400,
            r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
            None,
            true,
        );
        assert!(matches!(e, ModelError::ToolsUnsupported { .. }), "{e:?}");
        let e = c.classify(
            400,
            r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
            None,
            false,
        );
        assert!(matches!(e, ModelError::Http { status: 400, .. }), "{e:?}");
        let e = c.classify(429, r#"{"error":{"message":"quota","type":"insufficient_quota"}}"#, None, false);
        assert!(matches!(e, ModelError::QuotaExceeded { .. }), "{e:?}");
        assert!(matches!(c.classify(503, "", None, false), ModelError::Server { status: 503, .. }));
        assert_eq!(format!("{:?}", ApiKey::new("x")), "ApiKey([redacted])");
    }

    #[test]
    fn retry_after_headers() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}

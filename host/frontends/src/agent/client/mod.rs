//! A client for `POST {base}/chat/completions`, the API OpenAI defined and local servers
//! (Ollama, llama.cpp's server, vLLM, LM Studio) also speak: streamed replies over SSE with
//! `tool_calls` deltas reassembled by index, a whole JSON reply accepted too, retries with
//! backoff for rate limits and transient failures (honouring `Retry-After`), and every error a
//! user will meet turned into a sentence that says what to do.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

mod error;
mod stream;

pub use error::ModelError;
use error::{error_chain, retry_after};

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
        let resp =
            tokio::time::timeout(idle, req.send()).await.map_err(|_| self.timed_out())?.map_err(|e| {
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
        if is_sse {
            self.read_stream(resp, with_tools, on_event).await
        } else {
            // A server that ignored `stream: true` answers with one JSON completion.
            self.read_whole(resp, on_event).await
        }
    }

    /// The idle timeout passed with nothing from the server.
    fn timed_out(&self) -> ModelError {
        ModelError::Timeout { secs: self.options.idle_timeout.as_secs().max(1) }
    }

    fn scrub(&self, s: &str) -> String {
        match &self.options.api_key {
            Some(k) if !k.0.is_empty() => s.replace(&k.0, "[api key redacted]"),
            _ => s.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

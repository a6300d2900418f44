//! Why a request to the model failed: the server's answer (status, error body, headers)
//! classified into a [`ModelError`] that says what to do, with the API key scrubbed from it.

use super::ModelClient;
use serde_json::Value;
use std::time::Duration;

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
    pub(super) fn retry(&self) -> Option<Option<Duration>> {
        match self {
            ModelError::RateLimited { retry_after, .. } | ModelError::Server { retry_after, .. } => {
                Some(*retry_after)
            }
            ModelError::StreamCut { .. } | ModelError::Network { .. } => Some(None),
            _ => None,
        }
    }

    pub(super) fn set_tries(&mut self, n: u32) {
        match self {
            ModelError::RateLimited { tries, .. }
            | ModelError::Server { tries, .. }
            | ModelError::StreamCut { tries, .. }
            | ModelError::Network { tries, .. } => *tries = n,
            _ => {}
        }
    }

    pub(super) fn short(&self) -> String {
        match self {
            ModelError::RateLimited { .. } => "rate limited (429)".into(),
            ModelError::Server { status, .. } => format!("server error {status}"),
            ModelError::StreamCut { .. } => "the stream was cut midway".into(),
            ModelError::Network { detail, .. } => format!("connection failed: {detail}"),
            other => other.to_string(),
        }
    }
}

impl ModelClient {
    pub(super) fn classify(
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

pub(super) fn snippet(s: &str) -> String {
    let cut: String = s.chars().take(300).collect();
    if cut.len() < s.len() { format!("{cut}…") } else { cut }
}

pub(super) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
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
pub(super) fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get =
        |name: &str| h.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok());
    let d = get("retry-after-ms").map(|ms| ms / 1000.0).or_else(|| get("retry-after"))?;
    (d.is_finite() && d >= 0.0).then(|| Duration::from_secs_f64(d.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::super::{ApiKey, ClientOptions};
    use super::*;

    fn client() -> ModelClient {
        let mut o = ClientOptions::new("http://127.0.0.1:9/v1", "m1");
        o.api_key = Some(ApiKey::new("sk-very-secret-value"));
        o.key_source = "from the environment variable K".into();
        ModelClient::new(o).unwrap()
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

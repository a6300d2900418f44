//! `[model]`: the model `toolhost chat` talks to (command-line flags override it). A leaf: it
//! imports nothing of the crate above the agent's protocol choice.

use super::Protocol;
use serde::Deserialize;
use std::collections::BTreeMap;
use toolhost_core::settings::{Invalid, Problem, SecretSource};

/// `[model]`: the model `toolhost chat` talks to.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    api_key_secret: Option<String>,
    protocol: Option<Protocol>,
    max_steps: Option<usize>,
    system: Option<String>,
    temperature: Option<f64>,
    timeout_s: Option<u64>,
}

/// `[model]`, resolved: the model `toolhost chat` talks to (command-line flags override it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelConfig {
    /// The API root, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The API key is read from this environment variable…
    pub api_key_env: Option<String>,
    /// …or from this `[secrets.NAME]` entry.
    pub api_key_secret: Option<String>,
    pub protocol: Option<Protocol>,
    pub max_steps: Option<usize>,
    pub system: Option<String>,
    pub temperature: Option<f64>,
    /// Longest silence from the server, in seconds.
    pub timeout_s: Option<u64>,
}

impl RawModel {
    /// Resolve `[model]`; `secrets` are the `[secrets]` entries an `api_key_secret` may name.
    pub fn resolve(self, secrets: &BTreeMap<String, SecretSource>) -> Result<ModelConfig, Invalid> {
        resolve_model(self, secrets)
    }
}

fn resolve_model(m: RawModel, secrets: &BTreeMap<String, SecretSource>) -> Result<ModelConfig, Invalid> {
    if let Some(u) = &m.base_url {
        let ok = url::Url::parse(u).is_ok_and(|p| matches!(p.scheme(), "http" | "https"));
        if !ok {
            return Err(Invalid::value(
                "model.base_url",
                format!("{u:?}"),
                "is not an http(s) URL; write the API root, e.g. \"http://localhost:11434/v1\"",
            ));
        }
    }
    if m.api_key_env.is_some() && m.api_key_secret.is_some() {
        return Err(Invalid::says("model", "give at most one of `api_key_env` and `api_key_secret`"));
    }
    if let Some(v) = &m.api_key_env
        && let Err(why) = toolhost_spec::env_name::check(v)
    {
        return Err(Invalid::value(
            "model.api_key_env",
            format!("{v:?}"),
            format!("is not a variable name ({why})"),
        ));
    }
    if let Some(s) = &m.api_key_secret
        && !secrets.contains_key(s)
    {
        return Err(Invalid::new("model.api_key_secret", Problem::NoSecret(s.clone())));
    }
    if let Some(n) = m.max_steps
        && !(1..=1000).contains(&n)
    {
        return Err(Invalid::out_of_range("model.max_steps", n, 1, 1000));
    }
    if let Some(t) = m.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(Invalid::out_of_range("model.temperature", t, 0, 2));
    }
    if m.timeout_s == Some(0) {
        return Err(Invalid::at_least_one("model.timeout_s"));
    }
    Ok(ModelConfig {
        base_url: m.base_url,
        model: m.model,
        api_key_env: m.api_key_env,
        api_key_secret: m.api_key_secret,
        protocol: m.protocol,
        max_steps: m.max_steps,
        system: m.system,
        temperature: m.temperature,
        timeout_s: m.timeout_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ModelConfig, toolhost_core::settings::ConfigError> {
        let file = toolhost_core::settings::ConfigFile::parse(text, std::path::Path::new("/base"), None)?;
        let core = toolhost_core::Config::from_file(&file)?;
        let raw: RawModel = file.section("model")?;
        raw.resolve(&core.secrets).map_err(|e| file.invalid_key(e))
    }

    #[test]
    fn model_section_resolves_and_is_checked() {
        let c = parse(
            "[secrets.openai]\nenv = \"OPENAI_API_KEY\"\n[model]\nbase_url = \"http://localhost:11434/v1\"\nmodel = \"qwen2.5\"\napi_key_secret = \"openai\"\nprotocol = \"text\"\nmax_steps = 5",
        )
        .unwrap();
        assert_eq!(c.model.as_deref(), Some("qwen2.5"));
        assert_eq!(c.protocol, Some(Protocol::Text));
        assert_eq!(c.max_steps, Some(5));
        let e = parse("[model]\nbase_url = \"localhost:11434\"").unwrap_err().to_string();
        assert!(e.contains("model.base_url"), "{e}");
        let e = parse("[model]\napi_key_secret = \"nope\"").unwrap_err();
        let toolhost_core::settings::ConfigError::Key { error, .. } = &e else { panic!("{e}") };
        assert!(matches!(&error.problem, Problem::NoSecret(s) if s == "nope"), "{e}");
        assert_eq!(error.key, "model.api_key_secret");
        let e = e.to_string();
        assert!(e.contains("no secret `nope`"), "{e}");
        let e = parse("[model]\napi_key = \"sk-123\"").unwrap_err().to_string();
        assert!(e.contains("unknown field `api_key`"), "{e}");
        let e = parse("[model]\nprotocol = \"smoke\"").unwrap_err().to_string();
        assert!(e.contains("smoke"), "{e}");
    }
}

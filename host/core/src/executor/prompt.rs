//! A prompt got and an argument completed, the one way every front end does either (MCP
//! `prompts/get` and `completion/complete`, `toolhost get-prompt`, the console, the chat's
//! slash commands). The prompt is looked up once and its arguments checked against the
//! manifest before the plugin runs (`prompts.get` or `completion.complete`, in its sandbox, as
//! a tool call runs); what it answered is bounded here (`resource_kb` of text, 100 values).
//! A prompt got is audited and counted like a read.

use super::export::{Answer, Export, RunFailure};
use super::*;
use crate::bindings::{completion, prompts as wit};
use crate::registry::prompts::{NoCompletion, NoPrompt, Target, completer, find};
use toolhost_spec::prompts::arguments_problem;

/// Completion values a plugin's answer keeps (MCP's maximum per response).
pub const MAX_COMPLETIONS: usize = 100;
/// A completion value, in characters: longer ones are dropped.
pub const MAX_COMPLETION_CHARS: usize = 1024;

/// Who a prompt's message speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptContent {
    Text(String),
    /// A resource for the client to read.
    Link {
        uri: String,
        name: String,
        description: Option<String>,
        mime_type: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptMessage {
    pub role: Role,
    pub content: PromptContent,
}

/// A prompt as got.
#[derive(Debug, Clone)]
pub struct GotPrompt {
    pub plugin: Arc<str>,
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
    /// Its text passed `resource_kb` and was cut (the last text message closes with a mark).
    pub truncated: bool,
    pub usage: Usage,
}

/// Why a prompt gave nothing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PromptError {
    /// No plugin serves the name (MCP: invalid params).
    #[error(transparent)]
    NotFound(#[from] NoPrompt),
    /// An argument it does not take, or a required one missing: the plugin did not run.
    #[error("{0}")]
    Arguments(String),
    #[error("plugin `{plugin}` could not give prompt `{name}`: {message}")]
    Refused { plugin: String, name: String, message: String },
    #[error("{message}")]
    Failed { kind: ErrorKind, message: String },
}

impl PromptError {
    /// The audit's and the metrics' word for it.
    pub fn kind(&self) -> &'static str {
        match self {
            PromptError::NotFound(_) => "not_found",
            PromptError::Arguments(_) => ErrorKind::BadArguments.as_str(),
            PromptError::Refused { .. } => ErrorKind::ToolError.as_str(),
            PromptError::Failed { kind, .. } => kind.as_str(),
        }
    }
}

impl From<RunFailure> for PromptError {
    fn from(f: RunFailure) -> PromptError {
        PromptError::Failed { kind: f.kind, message: f.message }
    }
}

/// The values completing an argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// At most [`MAX_COMPLETIONS`], as the plugin ordered them.
    pub values: Vec<String>,
    /// How many the plugin answered (before the cut).
    pub total: usize,
}

impl Completion {
    pub fn has_more(&self) -> bool {
        self.total > self.values.len()
    }
}

/// Why nothing completes an argument.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompleteError {
    /// Nothing to complete: no such prompt, template or argument, or the plugin completes
    /// nothing for it (MCP answers these with no values).
    #[error(transparent)]
    Nothing(#[from] NoCompletion),
    #[error("plugin `{plugin}` could not complete `{argument}`: {message}")]
    Refused { plugin: String, argument: String, message: String },
    #[error("{message}")]
    Failed { kind: ErrorKind, message: String },
}

impl From<RunFailure> for CompleteError {
    fn from(f: RunFailure) -> CompleteError {
        CompleteError::Failed { kind: f.kind, message: f.message }
    }
}

impl Executor {
    /// Get the prompt `name` with `arguments` for `ctx` (by `method`: `prompts/get`, …).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &[(String, String)],
        method: &'static str,
        ctx: &CallContext,
    ) -> Result<GotPrompt, PromptError> {
        let registry = self.registry();
        let found = find(registry.plugins(), name);
        let result = match &found {
            Err(e) => Err(PromptError::NotFound(e.clone())),
            Ok((plugin, _)) if let Err(message) = self.permit_read(name, &plugin.name, ctx) => {
                Err(PromptError::Failed { kind: ErrorKind::Forbidden, message })
            }
            Ok((plugin, spec)) => {
                match arguments_problem(spec, arguments.iter().map(|(k, _)| k.as_str()), |n| {
                    arguments.iter().any(|(k, _)| k == n)
                }) {
                    Some(problem) => Err(PromptError::Arguments(problem)),
                    None => self.get_from(plugin, &spec.name, arguments).await,
                }
            }
        };
        let outcome = result.as_ref().map_or_else(PromptError::kind, |_| "ok");
        let bytes = result.as_ref().map_or(0, |p| text_bytes(&p.messages) as u64);
        let plugin = found.as_ref().ok().map(|(p, _)| &***p);
        self.observe_read(ResourceRead { uri: name, method, plugin, bytes, outcome, ctx }).await;
        result
    }

    async fn get_from(
        &self,
        plugin: &Arc<LoadedPlugin>,
        name: &str,
        arguments: &[(String, String)],
    ) -> Result<GotPrompt, PromptError> {
        let what = format!("prompt `{name}`");
        let req = wit::GetRequest { name: name.to_string(), arguments: arguments.to_vec() };
        let ran = self.run_export(plugin, &what, name, Export::Get(req)).await?;
        let got = match ran.answer {
            Ok(Answer::Get(got)) => got,
            Ok(_) => return Err(RunFailure::mismatched(&what).into()),
            Err(message) => {
                return Err(PromptError::Refused {
                    plugin: plugin.name.to_string(),
                    name: name.into(),
                    message,
                });
            }
        };
        let cap =
            usize::try_from(self.config.limits_for_plugin(&plugin.name).resource_kb.saturating_mul(1024))
                .unwrap_or(usize::MAX);
        let (messages, truncated) = bounded(got.messages, cap, &ran.net);
        let description = got.description.map(|d| truncate(redact_owned(d, &ran.net), 1024).0);
        Ok(GotPrompt { plugin: plugin.name.clone(), description, messages, truncated, usage: ran.usage })
    }

    /// Complete `argument` of `target` from `value`, with the other arguments given
    /// (`context`).
    pub async fn complete(
        &self,
        target: Target<'_>,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> Result<Completion, CompleteError> {
        let registry = self.registry();
        let (plugin, own) = completer(registry.plugins(), target, argument)?;
        let wit_target = match own {
            Target::Prompt(name) => completion::Target::Prompt(name.to_string()),
            Target::Template(t) => completion::Target::ResourceTemplate(t.to_string()),
        };
        let req = completion::CompleteRequest {
            target: wit_target,
            argument: argument.to_string(),
            value: value.to_string(),
            context: context.to_vec(),
        };
        let what = format!("completion of `{argument}` of {target}");
        let ran = self.run_export(plugin, &what, argument, Export::Complete(req)).await?;
        let values = match ran.answer {
            Ok(Answer::Complete(values)) => values,
            Ok(_) => return Err(RunFailure::mismatched(&what).into()),
            Err(message) => {
                let (plugin, argument) = (plugin.name.to_string(), argument.to_string());
                return Err(CompleteError::Refused { plugin, argument, message });
            }
        };
        let total = values.len();
        let values = values
            .into_iter()
            .filter(|v| v.chars().count() <= MAX_COMPLETION_CHARS && !v.chars().any(char::is_control))
            .map(|v| redact_owned(v, &ran.net))
            .take(MAX_COMPLETIONS)
            .collect();
        Ok(Completion { values, total })
    }
}

/// The bytes of a prompt's text.
fn text_bytes(messages: &[PromptMessage]) -> usize {
    messages
        .iter()
        .map(|m| match &m.content {
            PromptContent::Text(t) => t.len(),
            PromptContent::Link { uri, .. } => uri.len(),
        })
        .sum()
}

/// The guest's messages as the host serves them: secrets redacted, at most `cap` bytes of text
/// (the message that passes it is cut with a mark, later ones are dropped), and whether any was
/// cut.
fn bounded(messages: Vec<wit::Message>, cap: usize, net: &NetGrant) -> (Vec<PromptMessage>, bool) {
    let mut left = cap;
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        if left == 0 {
            return (out, true);
        }
        let role = match m.role {
            wit::Role::User => Role::User,
            wit::Role::Assistant => Role::Assistant,
        };
        let content = match m.content {
            wit::Content::Text(text) => {
                let text = redact_owned(text, net);
                if text.len() > left {
                    let cut = super::read::cut(text, left);
                    out.push(PromptMessage { role, content: PromptContent::Text(cut) });
                    return (out, true);
                }
                left -= text.len();
                PromptContent::Text(text)
            }
            wit::Content::ResourceLink(l) => {
                left = left.saturating_sub(l.uri.len());
                PromptContent::Link {
                    uri: l.uri,
                    name: l.name,
                    description: l.description,
                    mime_type: l.mime_type,
                }
            }
        };
        out.push(PromptMessage { role, content });
    }
    (out, false)
}

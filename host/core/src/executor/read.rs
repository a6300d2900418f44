//! A resource read, the one way every front end reads a resource (MCP `resources/read`,
//! `toolhost read`, the console). A skill's file is served from what was read at load; a
//! plugin's resource runs the plugin's `resources.read` in a fresh sandbox as a tool call runs
//! (its grants, the operator's `[plugin.NAME]` limits, a slot of its share, its deadline; no
//! questions are asked). What came of it is a [`Read`] or a [`ReadError`]; the observer audits
//! and counts it either way.

use super::export::{Answer, Export, RunFailure};
use super::*;
use crate::bindings::resources::{Contents, ReadRequest};
use crate::registry::resources::{Declared, Found, NoResource, PluginResource, find};
use toolhost_spec::resources::is_textual;

/// A resource's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Text(String),
    /// Bytes (a skill's file is shared, not copied).
    Blob(Arc<[u8]>),
}

impl Body {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        match self {
            Body::Text(t) => t.len(),
            Body::Blob(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A resource as read.
#[derive(Debug, Clone)]
pub struct Read {
    /// The plugin that served it.
    pub plugin: Arc<str>,
    /// Its MIME type: the manifest's (or a skill file's, by extension); `None` when the
    /// manifest declares none.
    pub mime_type: Option<String>,
    pub body: Body,
    /// The body passed `resource_kb` and was cut there (text: with a closing mark).
    pub truncated: bool,
    /// What the plugin's run cost (`None`: nothing ran).
    pub usage: Option<Usage>,
    /// An app's page: its `_meta.ui` (the origins it may reach, its border), which MCP serves
    /// with the page.
    pub ui: Option<serde_json::Value>,
}

/// Why a read gave nothing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    /// Nothing serves the URI (MCP: resource not found, -32002).
    #[error(transparent)]
    NotFound(#[from] NoResource),
    /// The plugin answered with an error.
    #[error("plugin `{plugin}` could not read {uri}: {message}")]
    Refused { plugin: String, uri: String, message: String },
    /// The plugin returned bytes for a resource its manifest declares textual.
    #[error(
        "plugin `{plugin}` returned bytes for {uri}, which its manifest declares as `{mime}`: a textual resource is read as text"
    )]
    NotText { plugin: String, uri: String, mime: String },
    /// The run failed: out of time or memory, a trap, no slot, a plugin without the export.
    #[error("{message}")]
    Failed { kind: ErrorKind, message: String },
}

impl ReadError {
    /// The audit's and the metrics' word for it (an [`ErrorKind`]'s, or `not_found`).
    pub fn kind(&self) -> &'static str {
        match self {
            ReadError::NotFound(_) => "not_found",
            ReadError::Refused { .. } => ErrorKind::ToolError.as_str(),
            ReadError::NotText { .. } => "not_text",
            ReadError::Failed { kind, .. } => kind.as_str(),
        }
    }
}

impl From<RunFailure> for ReadError {
    fn from(f: RunFailure) -> ReadError {
        ReadError::Failed { kind: f.kind, message: f.message }
    }
}

impl Executor {
    /// Read `uri` for `ctx` (by `method`: `resources/read`, `toolhost read`, `console`).
    pub async fn read(&self, uri: &str, method: &'static str, ctx: &CallContext) -> Result<Read, ReadError> {
        let registry = self.registry();
        let found = find(registry.plugins(), uri);
        let forbidden = found.as_ref().ok().and_then(|f| self.permit_read(uri, &f.plugin().name, ctx).err());
        let result = match &found {
            Err(e) => Err(ReadError::NotFound(e.clone())),
            Ok(_) if let Some(message) = forbidden => {
                Err(ReadError::Failed { kind: ErrorKind::Forbidden, message })
            }
            Ok(Found::Skill(plugin, file)) => Ok(Read {
                plugin: plugin.name.clone(),
                mime_type: Some(file.mime.to_string()),
                body: match file.as_text() {
                    Some(t) => Body::Text(t.to_string()),
                    None => Body::Blob(file.bytes.clone()),
                },
                truncated: false,
                usage: None,
                ui: None,
            }),
            Ok(Found::App(plugin, app)) => Ok(Read {
                plugin: plugin.name.clone(),
                mime_type: Some(toolhost_spec::apps::MIME_TYPE.to_string()),
                body: Body::Text(app.spec.html.clone()),
                truncated: false,
                usage: None,
                ui: Some(app.ui_meta()),
            }),
            Ok(Found::Plugin(r)) => self.read_plugin(r, uri).await,
        };
        let outcome = result.as_ref().map_or_else(ReadError::kind, |_| "ok");
        let bytes = result.as_ref().map_or(0, |r| r.body.len() as u64);
        let plugin = found.as_ref().ok().map(Found::plugin);
        self.observe_read(ResourceRead { uri, method, plugin, bytes, outcome, ctx }).await;
        result
    }

    /// Run `r`'s plugin to read `uri`.
    async fn read_plugin(&self, r: &PluginResource<'_>, uri: &str) -> Result<Read, ReadError> {
        let request = ReadRequest {
            uri: uri.to_string(),
            template: r.declared.template().map(str::to_string),
            variables: r.variables.clone(),
        };
        let what = format!("resource {uri}");
        let ran =
            self.run_export(r.plugin, &what, &declared_name(&r.declared), Export::Read(request)).await?;
        let plugin = &r.plugin.name;
        let cap = usize::try_from(self.config.limits_for_plugin(plugin).resource_kb.saturating_mul(1024))
            .unwrap_or(usize::MAX);
        let contents = match ran.answer {
            Ok(Answer::Read(contents)) => contents,
            Ok(_) => return Err(RunFailure::mismatched(&what).into()),
            Err(message) => {
                return Err(ReadError::Refused { plugin: plugin.to_string(), uri: uri.into(), message });
            }
        };
        let (body, truncated) = match contents {
            Contents::Text(text) => cut_text(redact_owned(text, &ran.net), cap),
            Contents::Blob(bytes) => match r.declared.mime_type().filter(|m| is_textual(m)) {
                Some(mime) => {
                    let (plugin, uri, mime) = (plugin.to_string(), uri.to_string(), mime.to_string());
                    return Err(ReadError::NotText { plugin, uri, mime });
                }
                None => {
                    let truncated = bytes.len() > cap;
                    (Body::Blob(Arc::from(&bytes[..bytes.len().min(cap)])), truncated)
                }
            },
        };
        let mime_type = r.declared.mime_type().map(str::to_string);
        Ok(Read { plugin: plugin.clone(), mime_type, body, truncated, usage: Some(ran.usage), ui: None })
    }
}

/// A declared resource's name, for the log lines of its reads.
fn declared_name(d: &Declared<'_>) -> String {
    match d {
        Declared::Static(r) => r.name.clone(),
        Declared::Template(t) => t.name.clone(),
    }
}

/// `text` cut to at most `cap` bytes at a character boundary, with a mark saying how much was
/// cut, and whether it was.
fn cut_text(text: String, cap: usize) -> (Body, bool) {
    if text.len() <= cap {
        return (Body::Text(text), false);
    }
    (Body::Text(cut(text, cap)), true)
}

/// `text`, longer than `cap` bytes, cut to at most `cap` at a character boundary and closed by
/// `…[truncated N of T bytes]`.
pub(super) fn cut(mut text: String, cap: usize) -> String {
    let total = text.len();
    let mut cut = cap - 64.min(cap);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("\n…[truncated {} of {total} bytes]", total - cut));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_within_the_cap_at_a_character_and_marked() {
        let (body, cut) = cut_text("é".repeat(1000), 1024);
        let Body::Text(t) = body else { panic!("text") };
        assert!(cut && t.len() <= 1024, "{}", t.len());
        assert!(t.ends_with("…[truncated 1040 of 2000 bytes]"), "{t}");
        assert_eq!(cut_text("short".into(), 1024), (Body::Text("short".into()), false));
    }
}

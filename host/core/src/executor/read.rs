//! A resource read, the one way every front end reads a resource (MCP `resources/read`,
//! `toolhost read`, the console). A skill's file is served from what was read at load; a
//! plugin's resource runs the plugin's `resources.read` in a fresh sandbox as a tool call runs
//! (its grants, the operator's `[plugin.NAME]` limits, a slot of its share, its deadline; no
//! questions are asked). What came of it is a [`Read`] or a [`ReadError`]; the observer audits
//! and counts it either way.

use super::*;
use crate::bindings::resources::{self as wit, Contents, ReadRequest};
use crate::capability::{CallSetup, Calls};
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

    fn failed(o: Outcome) -> ReadError {
        ReadError::Failed { kind: o.kind.unwrap_or(ErrorKind::HostError), message: o.text().to_string() }
    }
}

/// What the guest's read returned, within its deadline.
type GuestRead = Result<wasmtime::Result<Result<Contents, String>>, tokio::time::error::Elapsed>;

impl Executor {
    /// Read `uri` for `ctx` (by `method`: `resources/read`, `toolhost read`, `console`).
    pub async fn read(&self, uri: &str, method: &'static str, ctx: &CallContext) -> Result<Read, ReadError> {
        let registry = self.registry();
        let found = find(registry.plugins(), uri);
        let result = match &found {
            Err(e) => Err(ReadError::NotFound(e.clone())),
            Ok(Found::Skill(plugin, file)) => Ok(Read {
                plugin: plugin.name.clone(),
                mime_type: Some(file.mime.to_string()),
                body: match file.as_text() {
                    Some(t) => Body::Text(t.to_string()),
                    None => Body::Blob(file.bytes.clone()),
                },
                truncated: false,
                usage: None,
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
        let plugin = r.plugin;
        let what = || format!("resource {uri}");
        let pre = self.linked(plugin, what).await.map_err(ReadError::failed)?;
        let Ok(indices) = wit::GuestIndices::new(pre.instance_pre()) else {
            let message =
                format!("plugin `{}` declares resources but exports no `resources` interface", plugin.name);
            return Err(ReadError::Failed { kind: ErrorKind::HostError, message });
        };
        let limits = self.config.limits_for_plugin(&plugin.name);
        let (stdout, stderr) = CappedPipe::pair(STDIO_CAPTURE_BYTES);
        let wasi = crate::sandbox::wasi_ctx(&plugin.grants, stdout.clone(), stderr.clone()).map_err(|e| {
            ReadError::Failed {
                kind: ErrorKind::HostError,
                message: format!("cannot set up the sandbox for {uri}: {e}"),
            }
        })?;
        let arrived = std::time::Instant::now();
        let deadline = arrived + Duration::from_millis(limits.timeout_ms);
        let share = self.shares.plugin(&plugin.name, &self.config);
        let slot = match self.shares.try_acquire(&share) {
            Some(slot) => slot,
            None => self.shares.acquire(&share, deadline.into()).await.map_err(|busy| ReadError::Failed {
                kind: ErrorKind::Busy,
                message: busy.message(&plugin.name, &what(), arrived.elapsed().as_millis()),
            })?,
        };
        let started = std::time::Instant::now();
        let label: Arc<str> = Arc::from(declared_name(&r.declared));
        let setup = CallSetup {
            plugin: &plugin.name,
            tool: &label,
            limits: &limits,
            deadline,
            config: &self.config,
            workspace: &self.workspace,
            log_bucket: Some(share.log.clone()),
        };
        let state = HostState::new(
            wasi,
            MemoryLimiter::new(limits.memory_mb),
            Calls::prepare(&plugin.grants, &setup),
        );
        let (mut store, _) = self.new_store(state, false);
        let request = ReadRequest {
            uri: uri.to_string(),
            template: r.declared.template().map(str::to_string),
            variables: r.variables.clone(),
        };
        let run = Box::pin(async {
            let instance = pre.instance_pre().instantiate_async(&mut store).await?;
            indices.load(&mut store, &instance)?.call_read(&mut store, &request).await
        });
        let guard = tokio::time::Instant::from_std(deadline + run::WALL_CLOCK_GRACE);
        let (result, busy, ended) = BusyTimed::new(std::pin::pin!(tokio::time::timeout_at(guard, run))).await;
        let usage = self.usage(store.data(), &limits, busy, started - arrived, ended - started);
        let memory_hit = store.data().limiter.hit;
        let net = store.data().calls.net.grant.clone();
        drop((store, slot));
        let (err, dropped) = stderr.take();
        run::log_stdio(&plugin.name, &label, "stderr", &redact_owned(err.clone(), &net), dropped);
        let (out, dropped) = stdout.take();
        run::log_stdio(&plugin.name, &label, "stdout", &redact_owned(out, &net), dropped);
        let read = Finished { r, uri, limits: &limits, net: &net, memory_hit, stderr: &err };
        let (body, truncated) = read.body(result)?;
        let mime_type = r.declared.mime_type().map(str::to_string);
        Ok(Read { plugin: plugin.name.clone(), mime_type, body, truncated, usage: Some(usage) })
    }
}

/// A declared resource's name, for the log lines of its reads.
fn declared_name(d: &Declared<'_>) -> String {
    match d {
        Declared::Static(r) => r.name.clone(),
        Declared::Template(t) => t.name.clone(),
    }
}

/// A plugin's finished read and what judging it needs.
struct Finished<'a> {
    r: &'a PluginResource<'a>,
    uri: &'a str,
    limits: &'a Limits,
    net: &'a NetGrant,
    memory_hit: bool,
    stderr: &'a str,
}

impl Finished<'_> {
    /// The body the guest returned (secrets redacted, cut at `resource_kb`), or why there is
    /// none.
    fn body(&self, result: GuestRead) -> Result<(Body, bool), ReadError> {
        let (plugin, uri) = (&*self.r.plugin.name, self.uri);
        let what = format!("resource {uri}");
        let cap = usize::try_from(self.limits.resource_kb.saturating_mul(1024)).unwrap_or(usize::MAX);
        match result {
            Err(_elapsed) => Err(ReadError::Failed {
                kind: ErrorKind::Timeout,
                message: run::timeout_message(&what, *self.limits),
            }),
            Ok(Err(trap)) => Err(ReadError::failed(run::classify_trap(
                &what,
                *self.limits,
                &trap,
                self.memory_hit,
                self.stderr,
            ))),
            Ok(Ok(Err(message))) => {
                let message = outcome::without_os_error_numbers(&redact_owned(message, self.net));
                let message = truncate(message, 1000).0;
                Err(ReadError::Refused { plugin: plugin.into(), uri: uri.into(), message })
            }
            Ok(Ok(Ok(Contents::Text(text)))) => Ok(cut_text(redact_owned(text, self.net), cap)),
            Ok(Ok(Ok(Contents::Blob(bytes)))) => {
                match self.r.declared.mime_type().filter(|m| is_textual(m)) {
                    Some(mime) => {
                        Err(ReadError::NotText { plugin: plugin.into(), uri: uri.into(), mime: mime.into() })
                    }
                    None => {
                        let truncated = bytes.len() > cap;
                        let bytes = if truncated { &bytes[..cap] } else { &bytes[..] };
                        Ok((Body::Blob(Arc::from(bytes)), truncated))
                    }
                }
            }
        }
    }
}

/// `text` cut to at most `cap` bytes at a character boundary, with a mark saying how much was
/// cut, and whether it was.
fn cut_text(mut text: String, cap: usize) -> (Body, bool) {
    if text.len() <= cap {
        return (Body::Text(text), false);
    }
    let total = text.len();
    let mark_room = 64.min(cap);
    let mut cut = cap - mark_room;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!("\n…[truncated {} of {total} bytes]", total - cut));
    (Body::Text(text), true)
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

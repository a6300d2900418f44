//! What a loaded plugin is: its file, manifest, grants, skills and per-tool schemas; its code (linked
//! while it loads, or on first use, or in the background once the tools are listed); and the
//! entry under which the registry serves each of its tools.

use super::approvals::Pending;
use super::chain;
use crate::capability::Grants;
use crate::capability::Missing;
use crate::discovery::Candidate;
use crate::engine::{Linked, Runtime};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use toolhost_spec::manifest::{Manifest, ToolSpec};

/// A validated plugin, ready to instantiate per call.
pub struct LoadedPlugin {
    pub file: PathBuf,
    pub name: Arc<str>,
    pub manifest: Manifest,
    pub grants: Grants,
    pub missing: Vec<Missing>,
    /// Its linked code (see [`Code`]).
    pub code: Code,
    /// SHA-256 of the file, to skip unchanged files on rescan.
    pub hash: [u8; 32],
    /// Who signed the file (`None`: unsigned), as judged by `[trust]`.
    pub signer: Option<crate::registry::signing::SignerInfo>,
    /// Its skills (its `toolhost-skills` section; empty without one), as `[plugin.NAME]
    /// skills` selects them.
    pub skills: super::skills::Skills,
    /// Its apps (its `toolhost-apps` section; empty without one), each with the origins the
    /// operator allows it.
    pub apps: super::apps::Apps,
    /// Per prompt of `manifest.prompts`: the name it is served under (see
    /// [`crate::catalog::expose_prompt`]). The manifest's `prompts`, `resources` and
    /// `resourceTemplates` hold only those `[plugin.NAME]` selects.
    pub prompt_names: Vec<String>,
    /// Per tool (manifest order): its `outputSchema` compiled on the tool's first result (the
    /// manifest reader has already checked that it compiles), kept for checking results.
    pub(super) output_validators: Vec<OnceLock<Result<jsonschema::Validator, String>>>,
    /// Per tool (manifest order): its schemas as listings show them.
    pub(super) schemas: Vec<ToolSchemas>,
}

/// A tool's JSON Schemas as the front ends list them (MCP `inputSchema` and `outputSchema`),
/// built once when its plugin is read, beside the engine's build at a start, rather than on
/// every listing.
#[derive(Debug)]
pub struct ToolSchemas {
    /// [`toolhost_spec::schema::input_schema`] of the tool.
    pub input: Arc<serde_json::Map<String, serde_json::Value>>,
    /// The manifest's `outputSchema`, when it is an object.
    pub output: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
}

impl ToolSchemas {
    pub fn of(spec: &ToolSpec) -> ToolSchemas {
        ToolSchemas {
            input: Arc::new(toolhost_spec::schema::input_schema(spec)),
            output: match &spec.output_schema {
                Some(serde_json::Value::Object(o)) => Some(Arc::new(o.clone())),
                _ => None,
            },
        }
    }
}

impl LoadedPlugin {
    /// This version, held back for requesting `extra` beyond what was approved.
    pub fn pending(&self, extra: Vec<String>) -> Pending {
        Pending {
            plugin: self.name.to_string(),
            version: self.manifest.version.clone(),
            file: self.file.clone(),
            extra,
        }
    }
}

/// A plugin's code, linked against the host's imports and ready to instantiate.
///
/// A plugin whose compiled code is not cached yet is compiled and linked while it loads, so a
/// component that does not compile or link is a load failure like any other. One whose compiled
/// code is already cached (in memory, or on disk under this engine's and toolhost version's key;
/// code is cached only once it has linked, so these exact bytes loaded before) is linked on
/// first use or by [`Code::prepare_in_background`]: a start with a warm cache answers
/// `tools/list` from the manifests alone, and a call waits only for its own plugin.
pub struct Code {
    pub(super) ready: OnceLock<Result<Linked, String>>,
    /// What linking needs, until it is done.
    pub(super) source: Mutex<Option<Source>>,
}

pub(super) struct Source {
    pub(super) runtime: Arc<Runtime>,
    /// The file, read again only if the cached code has become unusable.
    pub(super) candidate: Candidate,
    pub(super) max_bytes: u64,
}

impl Code {
    pub(super) fn ready(pre: Linked) -> Code {
        Code { ready: OnceLock::from(Ok(pre)), source: Mutex::new(None) }
    }

    /// The linked code, linking it first if that has not been done (blocking: deserializing
    /// cached code takes about a millisecond; should the cache entry have become unusable, the
    /// plugin is compiled again, which takes longer).
    pub fn get(&self) -> Result<&Linked, &str> {
        self.ready
            .get_or_init(|| {
                let source = self.source.lock().unwrap_or_else(|p| p.into_inner()).take();
                let Some(s) = source else {
                    return Err("the plugin's code was lost while linking it".into());
                };
                let file = s.candidate.file_name();
                let bytes =
                    || s.candidate.read_again(s.max_bytes).map(Into::into).map_err(anyhow::Error::msg);
                s.runtime.prepare_hashed(&file, &s.candidate.code, bytes).map_err(|e| {
                    let message = format!("cannot load component {file}: {}", chain(&e));
                    tracing::warn!("{message}");
                    message
                })
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether [`Code::get`] returns at once.
    pub fn is_ready(&self) -> bool {
        self.ready.get().is_some()
    }

    /// Link, on a thread of their own, the plugins of `plugins` not linked yet, so their first
    /// calls do not wait for it. The thread starts once a front end has listed the tools
    /// ([`Code::listed`], called by `view::listing`) or after [`LINK_AFTER`], whichever comes
    /// first, and after a listing [`LINK_SETTLE`] later (the listing is built before its answer
    /// is written): on a small machine, linking ten plugins beside the first `tools/list` would
    /// delay the answer, and a call never waits for it (it links its own plugin).
    pub fn prepare_in_background(plugins: Vec<Arc<LoadedPlugin>>) {
        let waiting: Vec<_> = plugins.into_iter().filter(|p| !p.code.is_ready()).collect();
        if waiting.is_empty() {
            return;
        }
        let spawned = std::thread::Builder::new().name("toolhost-link".into()).spawn(move || {
            if LISTED.wait(LINK_AFTER) {
                std::thread::sleep(LINK_SETTLE);
            }
            for p in waiting {
                let _ = p.code.get();
            }
        });
        if let Err(e) = spawned {
            tracing::debug!("plugins will be linked on first use (no thread: {e})");
        }
    }
}

/// Wait, as background linking does, for a front end's first listing and its answer (at most
/// [`LINK_AFTER`]): for work a start can do after it (see [`Code::prepare_in_background`]).
pub fn after_first_listing() {
    if LISTED.wait(LINK_AFTER) {
        std::thread::sleep(LINK_SETTLE);
    }
}

/// How long background linking waits for a front end's first listing (see
/// [`Code::prepare_in_background`]).
pub const LINK_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// How long background linking waits after a front end's first listing, for its answer to be
/// written (see [`Code::prepare_in_background`]).
pub const LINK_SETTLE: std::time::Duration = std::time::Duration::from_millis(5);

/// Set once any front end has listed the tools in this process.
static LISTED: Listed = Listed { done: Mutex::new(false), cond: std::sync::Condvar::new() };

struct Listed {
    done: Mutex<bool>,
    cond: std::sync::Condvar,
}

impl Listed {
    fn set(&self) {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if !*done {
            *done = true;
            self.cond.notify_all();
        }
    }

    /// Wait until set, for `at_most`; whether it was set.
    fn wait(&self, at_most: std::time::Duration) -> bool {
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        match self.cond.wait_timeout_while(done, at_most, |d| !*d) {
            Ok((done, _)) => *done,
            Err(p) => *p.into_inner().0,
        }
    }
}

impl Code {
    /// A front end has listed the tools: plugins waiting to be linked in the background may be
    /// linked now (the first listing no longer competes with them for the CPU).
    pub fn listed() {
        LISTED.set();
    }
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("file", &self.file)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A registered tool: the plugin serving it, its spec's index in that plugin's manifest, and
/// the name it is exposed under.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    pub plugin: Arc<LoadedPlugin>,
    pub(super) index: usize,
    /// The manifest entry under its exposed name, when that differs from its own.
    pub(super) renamed: Option<Arc<ToolSpec>>,
    /// The exposed name, shared by every call's store (no copy per call).
    pub(super) exposed: Arc<str>,
}

impl ToolEntry {
    /// The tool's manifest entry as exposed: `name` is the exposed name (everything else is the
    /// manifest's).
    pub fn spec(&self) -> &ToolSpec {
        self.renamed.as_deref().unwrap_or_else(|| self.own_spec())
    }

    /// The exposed name.
    pub fn name(&self) -> &str {
        &self.spec().name
    }

    /// The exposed name, shared.
    pub fn shared_name(&self) -> &Arc<str> {
        &self.exposed
    }

    /// The manifest entry as the plugin declares it.
    pub fn own_spec(&self) -> &ToolSpec {
        &self.plugin.manifest.tools[self.index]
    }

    /// The plugin's own name for the tool: what the plugin is called with.
    pub fn own_name(&self) -> &str {
        &self.own_spec().name
    }

    /// The tool's schemas as listings show them (a renamed tool's are its own: they do not
    /// name the tool).
    pub fn schemas(&self) -> &ToolSchemas {
        &self.plugin.schemas[self.index]
    }

    /// The tool's compiled `outputSchema`, if it declares one (compiled on first use: a start
    /// compiles no schema a second time). `Err` names the tool and says why it does not compile.
    pub fn output_validator(&self) -> Option<Result<&jsonschema::Validator, &str>> {
        let schema = self.own_spec().output_schema.as_ref()?;
        let slot = self.plugin.output_validators.get(self.index)?;
        let compiled = slot.get_or_init(|| {
            jsonschema::validator_for(schema).map_err(|e| {
                format!("tool `{}`: outputSchema is not a valid JSON Schema: {e}", self.own_name())
            })
        });
        Some(compiled.as_ref().map_err(String::as_str))
    }
}

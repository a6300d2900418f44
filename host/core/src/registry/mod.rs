//! The registry: exposed tool name → (plugin, spec), built from the plugins folder as one
//! immutable snapshot. Loading validates and compiles every plugin; a plugin that fails is
//! reported and skipped while the others load. Which tools are exposed, and under which names,
//! is the catalog's (`catalog::expose`).
//!
//! **Name conflicts are never resolved silently, and never by file name** (a file dropped into
//! the folder whose name sorts first must not take over a tool or a plugin):
//!
//! - Two plugins exposing one tool name: when the registry is built from scratch (at start),
//!   *neither* is served under it — calling it fails with an error naming both plugins and the
//!   config lines that resolve it, and every listing shows the conflict ([`Conflict`]). When a
//!   plugin arrives by hot reload, a name another plugin already serves stays with that plugin
//!   ([`Registry::build`] is given the previous snapshot), and the newcomer's tool is reported
//!   as the conflict. Two exposed names that OpenAI would see as one (`a.b` and `a__b`) conflict
//!   the same way.
//! - Two files declaring one *plugin* name (grants are per plugin name): at start neither is
//!   loaded; on a reload the file already serving it keeps it and the new file is a load
//!   failure.

pub mod approvals;
pub mod index;
pub mod reload;
pub mod signing;

use crate::capability::Missing;
use crate::capability::{GrantContext, Grants};
use crate::discovery::{self, Candidate, LoadFailure};
use crate::engine::{PluginPre, Runtime};
use crate::sandbox::HostState;
use crate::settings::Config;
use approvals::{Approvals, Pending};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use toolhost_spec::manifest::{self, Manifest, ToolSpec};

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
    /// Per tool (manifest order): its `outputSchema` compiled on the tool's first result (the
    /// manifest reader has already checked that it compiles), kept for checking results.
    output_validators: Vec<OnceLock<Result<jsonschema::Validator, String>>>,
    /// Per tool (manifest order): its schemas as listings show them.
    schemas: Vec<ToolSchemas>,
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
    ready: OnceLock<Result<PluginPre<HostState>, String>>,
    /// What linking needs, until it is done.
    source: Mutex<Option<Source>>,
}

struct Source {
    runtime: Arc<Runtime>,
    /// The file, read again only if the cached code has become unusable.
    candidate: Candidate,
    max_bytes: u64,
}

impl Code {
    fn ready(pre: PluginPre<HostState>) -> Code {
        Code { ready: OnceLock::from(Ok(pre)), source: Mutex::new(None) }
    }

    /// The linked code, linking it first if that has not been done (blocking: deserializing
    /// cached code takes about a millisecond; should the cache entry have become unusable, the
    /// plugin is compiled again, which takes longer).
    pub fn get(&self) -> Result<&PluginPre<HostState>, &str> {
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
    index: usize,
    /// The manifest entry under its exposed name, when that differs from its own.
    renamed: Option<Arc<ToolSpec>>,
    /// The exposed name, shared by every call's store (no copy per call).
    exposed: Arc<str>,
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

/// One plugin's claim on an exposed name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Claim {
    pub plugin: Arc<str>,
    pub file: PathBuf,
    /// The plugin's own name for the tool.
    pub tool: String,
    /// The name the catalog gives it.
    pub exposed: String,
}

/// An exposed name more than one plugin claims.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Conflict {
    /// The name (as OpenAI sees it, when the claims differ only there).
    pub name: String,
    /// In file-name order.
    pub claims: Vec<Claim>,
    /// The plugin that keeps serving the name because it served it before the others arrived
    /// (hot reload); `None`: nobody serves it.
    pub kept: Option<Arc<str>>,
}

impl Conflict {
    /// What went wrong and the config lines that resolve it, in one line.
    pub fn message(&self) -> String {
        let who: Vec<String> = self
            .claims
            .iter()
            .map(|c| {
                let mut s = format!("plugin `{}` ({}", c.plugin, discovery::file_name(&c.file));
                if c.tool != c.exposed {
                    s.push_str(&format!(", its tool `{}`", c.tool));
                }
                if c.exposed != self.name {
                    s.push_str(&format!(", exposed as `{}`", c.exposed));
                }
                s.push(')');
                s
            })
            .collect();
        let state = match &self.kept {
            Some(k) => format!(
                "`{k}` keeps serving it (it served it before the others arrived); the others' are not exposed"
            ),
            None => "none of them is exposed under it".to_string(),
        };
        let openai = if self.claims.iter().any(|c| c.exposed != self.name) { " on OpenAI" } else { "" };
        // The fix names the last claim that does not keep the name: the newcomer, or the file
        // that sorts last.
        let fix = self.claims.iter().rev().find(|c| self.kept.as_ref() != Some(&c.plugin)).map(|c| {
            format!(
                "; to expose both, give one another name in toolhost.toml: [plugin.{p}] prefix = \"{p}_\", or [plugin.{p}.tool.{t}] name = \"{p}_{t}\", or [catalog] namespace = \"plugin\"; or hide it: [plugin.{p}] exclude = [\"{t}\"]",
                p = c.plugin,
                t = c.tool
            )
        });
        format!(
            "tool name `{}` is claimed{openai} by {}; {state}{}",
            self.name,
            who.join(" and "),
            fix.unwrap_or_default()
        )
    }
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

/// A tool the operator's selection does not expose.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HiddenTool {
    pub plugin: Arc<str>,
    /// The plugin's own name for it.
    pub tool: String,
    /// Which setting hides it.
    pub why: String,
}

/// Who serves an exposed name ([`Registry::who_serves`]).
#[derive(Debug, Clone, Copy)]
pub enum Served<'a> {
    Nobody,
    /// Exactly this tool (also when other plugins claim the name but this one kept it).
    By(&'a ToolEntry),
    /// Several plugins claim it and none serves it.
    Ambiguous(&'a Conflict),
}

/// Search mode: the index `find_tools` answers from, and the meta-tool's own entry.
#[derive(Debug)]
pub struct Search {
    pub index: crate::catalog::search::Index,
    pub spec: ToolSpec,
    /// The meta-tool's listed schemas, as each plugin tool's.
    pub schemas: ToolSchemas,
}

/// One immutable snapshot of what is loaded.
#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<String, ToolEntry>,
    /// OpenAI function name → exposed name, where they differ (a namespace's `.`).
    openai: BTreeMap<String, String>,
    plugins: Vec<Arc<LoadedPlugin>>,
    failures: Vec<LoadFailure>,
    warnings: Vec<String>,
    conflicts: Vec<Conflict>,
    hidden: Vec<HiddenTool>,
    /// Set when the catalog is searched rather than listed.
    search: Option<Search>,
    /// Versions held back until the operator approves their larger request.
    pending: Vec<Pending>,
}

pub use crate::discovery::content_hash;

/// What loading a file finds out before its code is touched: the manifest read and checked, the
/// signature judged, the grants resolved. Needs no engine, so a start does it while the engine is
/// being built ([`ReadAhead`]).
pub struct Inspected {
    manifest: Manifest,
    schemas: Vec<ToolSchemas>,
    signer: Option<crate::registry::signing::SignerInfo>,
    grants: Grants,
    missing: Vec<Missing>,
}

/// The half of loading a file (`c`, whose bytes are `bytes`) that needs no engine ([`link`] is
/// the other).
pub fn inspect(config: &Config, c: &Candidate, bytes: &[u8]) -> Result<Inspected, LoadFailure> {
    inspect_indexing(config, c, bytes).map(|(inspected, _)| inspected)
}

/// [`inspect`], and how the folder index may know the file from now on: an unsigned file that
/// passed is an entry.
fn inspect_indexing(
    config: &Config,
    c: &Candidate,
    bytes: &[u8],
) -> Result<(Inspected, index::Indexed), LoadFailure> {
    let fail = |reason: String| LoadFailure { file: c.path.clone(), reason };
    let section = manifest::find_section(bytes).map_err(|e| fail(e.to_string()))?;
    let manifest = manifest::parse(&section).map_err(|e| fail(e.to_string()))?;
    // Signature policy ([trust]): checked before anything is compiled; a refusal is a load
    // failure like any other, so the last good version keeps serving.
    let signer = crate::registry::signing::check(&config.trust, &manifest.name, bytes)
        .map_err(|e| fail(e.to_string()))?;
    let marker = toolhost_spec::sections::dev_marker(bytes).map_err(fail)?;
    let entry = match signer {
        None => {
            index::Entry::new(c, section, marker.clone()).map_or(index::Indexed::Not, index::Indexed::New)
        }
        Some(_) => index::Indexed::Not,
    };
    Ok((checked(config, c, manifest, signer, marker)?, entry))
}

/// [`inspect`] of a file the folder index knows (`entry`), unread: its manifest read and
/// checked by the manifest rules again (its `outputSchema`s, compiled when the file was
/// indexed, are compiled on first use: [`manifest::parse_checked_before`]), and the policy for
/// an unsigned file applied (the index holds no signed file).
fn inspect_indexed(config: &Config, c: &Candidate, entry: &index::Entry) -> Result<Inspected, LoadFailure> {
    let fail = |reason: String| LoadFailure { file: c.path.clone(), reason };
    let manifest =
        manifest::parse_checked_before(entry.manifest.as_bytes()).map_err(|e| fail(e.to_string()))?;
    crate::registry::signing::check_unsigned(&config.trust, &manifest.name, &c.hash)
        .map_err(|e| fail(e.to_string()))?;
    checked(config, c, manifest, None, entry.dev.clone())
}

/// What [`inspect`] makes of a file's checked manifest, signer and dev marker: its grants,
/// and its dev build's sources (which must still be there).
fn checked(
    config: &Config,
    c: &Candidate,
    manifest: Manifest,
    signer: Option<crate::registry::signing::SignerInfo>,
    marker: Option<toolhost_spec::sections::DevMarker>,
) -> Result<Inspected, LoadFailure> {
    let dev_sources = dev_sources(config, &manifest.name, marker)
        .map_err(|reason| LoadFailure { file: c.path.clone(), reason })?;
    let grant = config.plugin_file(&manifest.name, &c.hash);
    let cx = GrantContext {
        plugin: &manifest.name,
        request: &manifest.capabilities,
        grant: &grant,
        secrets: &config.secrets,
    };
    let (mut grants, missing) = Grants::effective(&cx);
    grants.fs.extend(dev_sources);
    let schemas = manifest.tools.iter().map(ToolSchemas::of).collect();
    Ok(Inspected { manifest, schemas, signer, grants, missing })
}

/// The half of loading a file that needs the engine: the code compiled and linked now (so a
/// component that does not compile or link is a load failure), or, when it is cached, later
/// (see [`Code`]). The file is read again only to compile it.
fn link(
    runtime: &Arc<Runtime>,
    config: &Config,
    c: &Candidate,
    inspected: Inspected,
) -> Result<LoadedPlugin, LoadFailure> {
    let Inspected { manifest, schemas, signer, grants, missing } = inspected;
    let code = if runtime.is_cached(&c.code) {
        Code {
            ready: OnceLock::new(),
            source: Mutex::new(Some(Source {
                runtime: runtime.clone(),
                candidate: c.clone(),
                max_bytes: config.max_plugin_bytes,
            })),
        }
    } else {
        let bytes = || c.read_again(config.max_plugin_bytes).map(Into::into).map_err(anyhow::Error::msg);
        Code::ready(runtime.prepare_hashed(&c.file_name(), &c.code, bytes).map_err(|e| LoadFailure {
            file: c.path.clone(),
            reason: format!("cannot load component: {}", chain(&e)),
        })?)
    };
    // Each `outputSchema` is compiled on the tool's first result (`ToolEntry::output_validator`).
    let output_validators = manifest.tools.iter().map(|_| OnceLock::new()).collect();
    Ok(LoadedPlugin {
        output_validators,
        schemas,
        file: c.path.clone(),
        name: manifest.name.as_str().into(),
        manifest,
        grants,
        missing,
        code,
        hash: c.hash,
        signer,
    })
}

/// A file's manifest check, when it was done ahead of loading (`None`: not yet).
pub(crate) type Ahead = Option<Result<Inspected, LoadFailure>>;

/// The plugins folder as read before the engine is needed: every file read and hashed (or
/// known unchanged by the folder index), and the manifests of those to be loaded checked.
pub struct FolderRead {
    /// Each readable file, with its manifest's check when it was done ahead.
    pub(crate) found: Vec<(Candidate, Ahead)>,
    pub(crate) failures: Vec<LoadFailure>,
    /// How many files the folder index knew unchanged (not read).
    pub from_index: usize,
}

impl FolderRead {
    /// Read the folder and check every manifest (each right after its file is read).
    pub fn inspect_all(config: &Config) -> std::io::Result<FolderRead> {
        Self::inspect_changed(config, |_| true)
    }

    /// Read the folder, checking the manifests of the files `changed` picks (the others are
    /// not loaded again: a reload's unchanged files). A file the folder index knows unchanged
    /// is not read; the index is brought up to date afterwards.
    pub fn inspect_changed(
        config: &Config,
        changed: impl Fn(&Candidate) -> bool + Sync,
    ) -> std::io::Result<FolderRead> {
        let index = index::FolderIndex::open(config);
        let (found, failures) = discovery::scan_known(
            &config.plugins_dir,
            config.max_plugin_bytes,
            |path, stamp| {
                let (c, entry) = index.known(path, stamp)?;
                let ahead = changed(&c).then(|| inspect_indexed(config, &c, entry));
                // A file the index knows that no longer passes is read next time.
                let indexed = match &ahead {
                    Some(Err(_)) => index::Indexed::Dropped,
                    _ => index::Indexed::Kept,
                };
                Some((c, (ahead, indexed)))
            },
            |c, bytes| {
                if !changed(c) {
                    return (None, index::Indexed::Not);
                }
                match inspect_indexing(config, c, bytes) {
                    Ok((inspected, indexed)) => (Some(Ok(inspected)), indexed),
                    Err(f) => (Some(Err(f)), index::Indexed::Not),
                }
            },
        )?;
        index.update(found.iter().map(|(c, (_, indexed))| (c, indexed)));
        let from_index = found
            .iter()
            .filter(|(_, (_, i))| matches!(i, index::Indexed::Kept | index::Indexed::Dropped))
            .count();
        tracing::debug!("{from_index} of {} plugin files known unchanged by the folder index", found.len());
        let found = found.into_iter().map(|(c, (ahead, _))| (c, ahead)).collect();
        Ok(FolderRead { found, failures, from_index })
    }
}

/// The folder read on its own thread while the engine is built: at a warm start the two are
/// most of the work before the first answer, and neither needs the other. A read-ahead for a
/// host that follows the folder also watches it, so no change made after the read is missed
/// ([`reload::Reloader::watch`] takes that watch, a [`reload::EarlyWatch`]): the watch starts
/// on a thread of its own while the folder is read (starting it waits on notify's own thread,
/// which on a busy machine took longer than the read), and that thread, once the watch is up,
/// looks at the folder again against what the read found. The read does not wait for the
/// watch: only the reloader's watch does, after the first load.
pub struct ReadAhead(ReadAheadState);

type ReadAndWatch = (std::io::Result<FolderRead>, Option<reload::EarlyWatch>);

enum ReadAheadState {
    Running(std::thread::JoinHandle<ReadAndWatch>),
    Done(ReadAndWatch),
}

impl ReadAhead {
    /// Start reading `config.plugins_dir` (and checking its manifests) now; watch it too, from
    /// `watch` (see [`ReadAhead`]: no change made after the read is missed).
    pub fn start(config: Arc<Config>, watch: reload::WatchFrom) -> ReadAhead {
        let work = move |config: &Config| {
            let (watch, found) = (watch != reload::WatchFrom::Never)
                .then(|| reload::EarlyWatch::start(config.plugins_dir.clone(), watch))
                .unzip();
            let read = FolderRead::inspect_all(config);
            if let (Ok(read), Some(found)) = (&read, found) {
                // A read with failures counts as a change: a rescan retries its files.
                let _ = found.send(
                    read.failures.is_empty().then(|| read.found.iter().map(|(c, _)| c.clone()).collect()),
                );
            }
            (read, watch)
        };
        let spawned = std::thread::Builder::new().name("toolhost-read".into()).spawn({
            let config = config.clone();
            move || work(&config)
        });
        ReadAhead(match spawned {
            Ok(handle) => ReadAheadState::Running(handle),
            // No thread to be had: read here, before the engine, as a start without read-ahead would.
            Err(_) => ReadAheadState::Done(work(&config)),
        })
    }

    /// What was read, and the watch if one was asked for (not waiting for the watch). A panic
    /// while reading is re-raised here.
    pub fn finish(self) -> ReadAndWatch {
        match self.0 {
            ReadAheadState::Running(handle) => handle.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            ReadAheadState::Done(done) => done,
        }
    }
}

/// The guest path of a `toolhost dev` build's sources.
pub const DEV_SOURCES: &str = "toolhost-dev";

/// A `toolhost dev` build's sources, read-only at `/toolhost-dev`: the plugins folder's
/// `.toolhost-dev/NAME-ID/`, the folder named by the plugin's own name and the snapshot id its
/// `toolhost-dev` section holds. Nothing else is ever mapped this way: the path is the host's,
/// under its own plugins folder, and only `toolhost dev` writes there. A dev build whose
/// sources are gone does not load.
fn dev_sources(
    config: &Config,
    name: &str,
    marker: Option<toolhost_spec::sections::DevMarker>,
) -> Result<Option<crate::capability::fs::FsGrant>, String> {
    let Some(marker) = marker else { return Ok(None) };
    let dir = config.plugins_dir.join(marker.folder(name));
    if !dir.is_dir() {
        return Err(format!(
            "is a `toolhost dev` build whose sources ({}) are gone; run `toolhost dev` again, or install a `toolhost build`",
            dir.display()
        ));
    }
    Ok(Some(crate::capability::fs::FsGrant {
        name: DEV_SOURCES.into(),
        host_path: dir,
        mode: toolhost_spec::manifest::FsMode::ReadOnly,
        create: false,
    }))
}

/// An error and its causes on one line.
pub fn chain(e: &anyhow::Error) -> String {
    e.chain().map(|c| c.to_string()).collect::<Vec<_>>().join(": ")
}

impl Registry {
    /// The notes a danger question about `plugin`'s tools carries: each program it may run
    /// over a directory another loaded plugin may write (`git runs over files plugins can
    /// write (files: /home/me/ws)`).
    pub fn shared_write_notes(&self, plugin: &LoadedPlugin, workspace: &Path) -> Vec<String> {
        let writable = self.plugins().iter().flat_map(|p| p.grants.fs.iter().map(move |f| (&*p.name, f)));
        crate::capability::process::shared_write_notes(&plugin.grants.exec, writable, workspace)
    }

    /// Scan `config.plugins_dir`, load every plugin (compiling in parallel), build a snapshot.
    pub fn load(runtime: &Arc<Runtime>, config: &Config) -> std::io::Result<Registry> {
        Self::load_read(runtime, config, FolderRead::inspect_all(config)?)
    }

    /// [`Registry::load`] of a folder already read (a [`ReadAhead`]'s, say).
    pub fn load_read(runtime: &Arc<Runtime>, config: &Config, read: FolderRead) -> std::io::Result<Registry> {
        let FolderRead { found, mut failures, .. } = read;
        let results = load_all(runtime, config, found).into_iter().map(|(_, r)| r);
        let mut approvals = Approvals::for_folder(&config.plugins_dir, &config.approvals);
        let mut plugins = Vec::new();
        let mut pending = Vec::new();
        for r in results {
            match r {
                Ok(p) => match approvals.check_file(&p.manifest, &p.hash) {
                    Ok(()) => plugins.push(Arc::new(p)),
                    Err(extra) => pending.push(p.pending(extra)),
                },
                Err(f) => failures.push(f),
            }
        }
        approvals.save_or_warn();
        for p in &pending {
            tracing::warn!("{p}");
        }
        Ok(Registry::build(plugins, failures, config, None).with_pending(pending))
    }

    /// Attach the versions held for approval.
    pub fn with_pending(mut self, mut pending: Vec<Pending>) -> Registry {
        pending.sort_by(|a, b| a.file.cmp(&b.file));
        self.pending = pending;
        self
    }

    /// Versions held back until approved.
    pub fn pending(&self) -> &[Pending] {
        &self.pending
    }

    /// Apply the catalog (`config`) and the conflict rules (see the module docs) to
    /// already-loaded plugins. `previous` is the snapshot this one replaces (hot reload): names
    /// and plugin names it served stay with whoever served them.
    pub fn build(
        mut plugins: Vec<Arc<LoadedPlugin>>,
        mut failures: Vec<LoadFailure>,
        config: &Config,
        previous: Option<&Registry>,
    ) -> Registry {
        plugins.sort_by(|a, b| a.file.cmp(&b.file));
        let mut reg = Registry::default();

        // Plugin names: one file each.
        let mut by_name: BTreeMap<Arc<str>, Vec<Arc<LoadedPlugin>>> = BTreeMap::new();
        for p in plugins {
            by_name.entry(p.name.clone()).or_default().push(p);
        }
        let mut accepted = Vec::new();
        for (name, files) in by_name {
            if files.len() == 1 {
                accepted.extend(files);
                continue;
            }
            let serving = previous.and_then(|old| old.plugins.iter().find(|p| p.name == name));
            let keeper = serving.and_then(|old| files.iter().position(|p| p.file == old.file));
            let all: Vec<String> = files.iter().map(|p| discovery::file_name(&p.file)).collect();
            for (i, p) in files.iter().enumerate() {
                if Some(i) == keeper {
                    continue;
                }
                let state = match keeper {
                    Some(k) => format!("it stays with {}, which served it first", all[k]),
                    None => "none of them is loaded".to_string(),
                };
                reg.failures.push(LoadFailure {
                    file: p.file.clone(),
                    reason: format!(
                        "plugin name `{name}` is declared by {}; {state}: rename or remove one",
                        all.join(" and ")
                    ),
                });
            }
            accepted.extend(keeper.map(|k| files[k].clone()));
        }
        accepted.sort_by(|a, b| a.file.cmp(&b.file));
        reg.failures.append(&mut failures);
        reg.failures.sort_by(|a, b| a.file.cmp(&b.file));

        // Every tool's exposed name, grouped by what OpenAI sees (the strictest front end).
        let mut claims: BTreeMap<String, Vec<(String, Arc<LoadedPlugin>, usize)>> = BTreeMap::new();
        for plugin in &accepted {
            reg.warnings.extend(selection_warnings(plugin, config));
            for (index, spec) in plugin.manifest.tools.iter().enumerate() {
                match crate::catalog::expose(config, &plugin.name, &spec.name) {
                    crate::catalog::Exposed::As(name) => {
                        let key = crate::catalog::openai_name(&name).into_owned();
                        claims.entry(key).or_default().push((name, plugin.clone(), index));
                    }
                    crate::catalog::Exposed::Hidden(why) => reg.hidden.push(HiddenTool {
                        plugin: plugin.name.clone(),
                        tool: spec.name.clone(),
                        why,
                    }),
                }
            }
        }
        let searching = config.catalog.searching(claims.len());
        let entry = |name: String, plugin: &Arc<LoadedPlugin>, index: usize| {
            let own = &plugin.manifest.tools[index];
            let renamed =
                (own.name != name).then(|| Arc::new(ToolSpec { name: name.clone(), ..own.clone() }));
            let exposed = Arc::from(name.as_str());
            (name, ToolEntry { plugin: plugin.clone(), index, renamed, exposed })
        };
        for (key, mut claimants) in claims {
            if searching && key == crate::catalog::FIND_TOOLS {
                for (_, p, i) in claimants {
                    let tool = p.manifest.tools[i].name.clone();
                    reg.hidden.push(HiddenTool {
                        why: format!(
                            "`{}` is the host's catalog search in search mode; give it another name with [plugin.{}.tool.{tool}] name = \"…\"",
                            crate::catalog::FIND_TOOLS,
                            p.name
                        ),
                        plugin: p.name.clone(),
                        tool,
                    });
                }
                continue;
            }
            if claimants.len() == 1 {
                let Some((name, p, i)) = claimants.pop() else { continue };
                let (name, e) = entry(name, &p, i);
                if name != key {
                    reg.openai.insert(key, name.clone());
                }
                reg.tools.insert(name, e);
                continue;
            }
            // Who served this name before (hot reload), if among the claimants.
            let served = previous.and_then(|old| old.lookup(&key)).map(|e| e.plugin.name.clone());
            let kept = claimants.iter().position(|(_, p, _)| Some(&p.name) == served.as_ref());
            let conflict = Conflict {
                name: if claimants.iter().all(|(n, _, _)| *n == claimants[0].0) {
                    claimants[0].0.clone()
                } else {
                    key.clone()
                },
                claims: claimants
                    .iter()
                    .map(|(n, p, i)| Claim {
                        plugin: p.name.clone(),
                        file: p.file.clone(),
                        tool: p.manifest.tools[*i].name.clone(),
                        exposed: n.clone(),
                    })
                    .collect(),
                kept: kept.map(|k| claimants[k].1.name.clone()),
            };
            // Reported by each front end once (`list`, `serve`'s `!` lines, warnings elsewhere).
            reg.conflicts.push(conflict);
            if let Some(k) = kept {
                let (name, p, i) = claimants.swap_remove(k);
                let (name, e) = entry(name, &p, i);
                if name != key {
                    reg.openai.insert(key, name.clone());
                }
                reg.tools.insert(name, e);
            }
        }
        if searching {
            let index = crate::catalog::search::Index::build(reg.tools.values().map(|e| {
                (
                    e.name().to_string(),
                    crate::catalog::search::document_text(e.name(), e.spec(), &e.plugin.name),
                )
            }));
            let spec = crate::catalog::find_tools_spec(reg.tools.len(), config.catalog.results);
            let schemas = ToolSchemas::of(&spec);
            reg.search = Some(Search { index, spec, schemas });
        }
        reg.plugins = accepted;
        reg
    }

    /// Who serves the exposed name `name` in this snapshot: one tool, nobody, or nobody
    /// because several plugins claim it. The one answer to "may this name be taken?" (also for
    /// `build --install` and `dev`, which refuse a plugin whose names another plugin serves).
    pub fn who_serves(&self, name: &str) -> Served<'_> {
        if let Some(e) = self.get(name) {
            return Served::By(e);
        }
        let key = crate::catalog::openai_name(name);
        match self.conflicts.iter().find(|c| c.name == name || c.name == key) {
            Some(c) => Served::Ambiguous(c),
            None => Served::Nobody,
        }
    }

    /// The names `manifest`'s tools would be exposed under (with `config`) that another plugin
    /// already serves or claims here, one message each; empty when the plugin can be added
    /// without a conflict. A plugin of the same name is a new version of itself, not a clash.
    pub fn clashes(&self, manifest: &Manifest, config: &Config) -> Vec<String> {
        let mut out = Vec::new();
        for t in &manifest.tools {
            let crate::catalog::Exposed::As(name) = crate::catalog::expose(config, &manifest.name, &t.name)
            else {
                continue;
            };
            let key = crate::catalog::openai_name(&name).into_owned();
            match self.who_serves(&name) {
                Served::By(e) if *e.plugin.name != *manifest.name => out.push(format!(
                    "tool `{}` of plugin `{}` would be exposed as `{name}`, which plugin `{}` ({}) already serves; give it another name with [plugin.{}] prefix = \"…\" or [plugin.{}.tool.{}] name = \"…\"",
                    t.name,
                    manifest.name,
                    e.plugin.name,
                    discovery::file_name(&e.plugin.file),
                    manifest.name,
                    manifest.name,
                    t.name
                )),
                Served::Ambiguous(c) if c.claims.iter().any(|cl| *cl.plugin != *manifest.name) => {
                    out.push(c.message())
                }
                _ => {
                    // `a.b` and `a__b` are one name on OpenAI.
                    if let Some(e) = self.lookup(&key).filter(|e| *e.plugin.name != *manifest.name) {
                        out.push(format!(
                            "tool `{}` of plugin `{}` would be `{key}` on OpenAI, as plugin `{}`'s `{}` is",
                            t.name,
                            manifest.name,
                            e.plugin.name,
                            e.name()
                        ));
                    }
                }
            }
        }
        out
    }

    /// Exposed names several plugins claim.
    pub fn conflicts(&self) -> &[Conflict] {
        &self.conflicts
    }

    /// Tools the operator's selection hides.
    pub fn hidden(&self) -> &[HiddenTool] {
        &self.hidden
    }

    /// Set when the catalog is searched (`find_tools`) rather than listed.
    pub fn search(&self) -> Option<&Search> {
        self.search.as_ref()
    }

    /// A tool by its exposed name or, for a namespaced tool, by its OpenAI function name.
    pub fn lookup(&self, name: &str) -> Option<&ToolEntry> {
        self.get(name).or_else(|| self.tools.get(self.openai.get(name)?))
    }

    pub fn get(&self, tool: &str) -> Option<&ToolEntry> {
        self.tools.get(tool)
    }

    /// Tools in name order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolEntry> {
        self.tools.values()
    }

    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    pub fn failures(&self) -> &[LoadFailure] {
        &self.failures
    }

    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Registered tool names close to `name`, best first.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        let lower = name.to_lowercase();
        let mut scored: Vec<(usize, &String)> = self
            .tools
            .keys()
            .filter_map(|k| {
                let kl = k.to_lowercase();
                let d = edit_distance(&lower, &kl);
                let close =
                    d <= (name.chars().count() / 3).max(2) || kl.contains(&lower) || lower.contains(&kl);
                close.then_some((d, k))
            })
            .collect();
        scored.sort();
        scored.into_iter().take(5).map(|(_, k)| k.clone()).collect()
    }
}

/// Load files on a few threads (wasmtime also parallelises inside each compile); a file whose
/// manifest was checked ahead is not checked again.
pub(crate) fn load_all(
    runtime: &Arc<Runtime>,
    config: &Config,
    found: Vec<(Candidate, Ahead)>,
) -> Vec<(Candidate, Result<LoadedPlugin, LoadFailure>)> {
    let total = found.len();
    // Files checked ahead whose code is cached need only a few allocations each here (their
    // linking is deferred): threads would cost more than they share out.
    let light = found.iter().all(|(c, ahead)| ahead.is_some() && runtime.is_cached(&c.code));
    let found: Vec<(usize, Candidate, Mutex<Ahead>)> =
        found.into_iter().enumerate().map(|(i, (c, ahead))| (i, c, Mutex::new(ahead))).collect();
    let load = |(i, c, ahead): &(usize, Candidate, Mutex<Ahead>)| {
        tracing::debug!("loading {} ({} of {total})", c.file_name(), i + 1);
        // Failures are returned, not logged: each front end reports them once
        // (`list` in its table, `serve` as `!` lines, other commands as warnings).
        let ahead = ahead.lock().unwrap_or_else(|p| p.into_inner()).take();
        ahead
            .unwrap_or_else(|| {
                let bytes = c.read_again(config.max_plugin_bytes);
                bytes
                    .map_err(|e| LoadFailure { file: c.path.clone(), reason: e.to_string() })
                    .and_then(|b| inspect(config, c, &b))
            })
            .and_then(|inspected| link(runtime, config, c, inspected))
    };
    let loaded = if light { found.iter().map(load).collect() } else { crate::parallel::map(&found, load) };
    found.into_iter().zip(loaded).map(|((_, c, _), r)| (c, r)).collect()
}

/// Patterns and renames in `plugin`'s section that name none of its tools (likely typos).
fn selection_warnings(plugin: &LoadedPlugin, config: &Config) -> Vec<String> {
    let Some(e) = config.plugins.get(&*plugin.name).map(|p| &p.exposure) else { return Vec::new() };
    let declared = |n: &str| plugin.manifest.tools.iter().any(|t| t.name == n);
    let unmatched =
        |g: &crate::catalog::settings::Glob| !plugin.manifest.tools.iter().any(|t| g.matches(&t.name));
    let mut out = Vec::new();
    for (key, globs) in [("tools", e.tools.as_deref().unwrap_or_default()), ("exclude", &e.exclude)] {
        for g in globs.iter().filter(|g| unmatched(g)) {
            out.push(format!("[plugin.{}] {key}: {g} matches none of its tools", plugin.name));
        }
    }
    for old in e.rename.keys().filter(|o| !declared(o)) {
        out.push(format!(
            "[plugin.{}.tool.{old}]: plugin `{}` has no tool `{old}`",
            plugin.name, plugin.name
        ));
    }
    out
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Why [`inspect_file`] read no manifest (the file is named by the caller).
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error(transparent)]
    Read(#[from] discovery::ReadError),
    #[error("not a file")]
    NotAFile,
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
}

/// Read one file's manifest for `inspect`: no compilation, no execution.
pub fn inspect_file(path: &Path, max_bytes: u64) -> Result<Manifest, InspectError> {
    let bytes = discovery::read_capped(path, max_bytes)?.ok_or(InspectError::NotAFile)?;
    Ok(manifest::read(&bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_and_hash() {
        assert_eq!(edit_distance("read", "reed"), 1);
        assert_eq!(edit_distance("", "ls"), 2);
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
    }
}

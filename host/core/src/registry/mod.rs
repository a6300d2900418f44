//! The registry: tool name → (plugin, spec), built from the plugins folder as one immutable
//! snapshot. Loading validates and compiles every plugin; a plugin that fails is reported
//! and skipped while the others load.
//!
//! **Name conflicts** are resolved deterministically by file name: plugins are taken in
//! byte order of their file names, and the first one to declare a tool name keeps it. A later
//! plugin's tool of the same name is not registered and a warning names both files. Two files
//! declaring the same *plugin* name: the later file is not loaded (grants are per plugin
//! name, so two plugins must never share one).

pub mod approvals;
pub mod reload;
pub mod signing;

use crate::capability::Missing;
use crate::discovery::{self, Candidate, LoadFailure};
use crate::engine::{PluginPre, Runtime};
use crate::sandbox::{Grants, HostState};
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
    /// Per tool (manifest order): its `outputSchema` compiled once, for checking results.
    pub output_validators: Vec<Option<Arc<jsonschema::Validator>>>,
}

impl LoadedPlugin {
    /// The compiled `outputSchema` of one of this plugin's tools, if it declares one.
    pub fn output_validator(&self, spec: &ToolSpec) -> Option<&jsonschema::Validator> {
        let i = self.manifest.tools.iter().position(|t| t.name == spec.name)?;
        self.output_validators.get(i)?.as_deref()
    }

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
    file: String,
    hash: [u8; 32],
    bytes: Arc<Vec<u8>>,
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
                s.runtime.prepare_hashed(&s.file, &s.hash, &s.bytes).map_err(|e| {
                    let message = format!("cannot load component {}: {}", s.file, chain(&e));
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
    /// calls do not wait for it.
    pub fn prepare_in_background(plugins: Vec<Arc<LoadedPlugin>>) {
        let waiting: Vec<_> = plugins.into_iter().filter(|p| !p.code.is_ready()).collect();
        if waiting.is_empty() {
            return;
        }
        let spawned = std::thread::Builder::new().name("toolhost-link".into()).spawn(move || {
            for p in waiting {
                let _ = p.code.get();
            }
        });
        if let Err(e) = spawned {
            tracing::debug!("plugins will be linked on first use (no thread: {e})");
        }
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

/// A registered tool: the plugin serving it and its spec's index in that plugin's manifest.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    pub plugin: Arc<LoadedPlugin>,
    index: usize,
}

impl ToolEntry {
    pub fn spec(&self) -> &ToolSpec {
        &self.plugin.manifest.tools[self.index]
    }
}

/// One immutable snapshot of what is loaded.
#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<String, ToolEntry>,
    plugins: Vec<Arc<LoadedPlugin>>,
    failures: Vec<LoadFailure>,
    warnings: Vec<String>,
    /// Versions held back until the operator approves their larger request.
    pending: Vec<Pending>,
}

pub use crate::discovery::content_hash;

/// Validate and compile one candidate file (or, when its compiled code is cached, defer linking
/// it: see [`Code`]).
pub fn load_plugin(
    runtime: &Arc<Runtime>,
    config: &Config,
    c: &Candidate,
) -> Result<LoadedPlugin, LoadFailure> {
    let fail = |reason: String| LoadFailure { file: c.path.clone(), reason };
    let manifest = manifest::read(&c.bytes).map_err(|e| fail(e.to_string()))?;
    // Signature policy ([trust]): checked before anything is compiled; a refusal is a load
    // failure like any other, so the last good version keeps serving.
    let signer = crate::registry::signing::check(&config.trust, &manifest.name, &c.bytes).map_err(fail)?;
    let dev_sources = dev_sources(config, &manifest.name, &c.bytes).map_err(fail)?;
    let code = if runtime.is_cached(&c.code) {
        Code {
            ready: OnceLock::new(),
            source: Mutex::new(Some(Source {
                runtime: runtime.clone(),
                file: c.file_name(),
                hash: c.code,
                bytes: c.bytes.clone(),
            })),
        }
    } else {
        Code::ready(
            runtime
                .prepare_hashed(&c.file_name(), &c.code, &c.bytes)
                .map_err(|e| fail(format!("cannot load component: {}", chain(&e))))?,
        )
    };
    let (mut grants, missing) = Grants::effective(
        &manifest.name,
        &manifest.capabilities,
        &config.plugin(&manifest.name),
        &config.secrets,
    );
    grants.fs.extend(dev_sources);
    // Each `outputSchema` compiled once (the manifest reader has already checked it compiles).
    let output_validators = manifest
        .tools
        .iter()
        .map(|t| {
            t.output_schema
                .as_ref()
                .map(|s| jsonschema::validator_for(s).map(Arc::new))
                .transpose()
                .map_err(|e| fail(format!("tool `{}`: outputSchema is not a valid JSON Schema: {e}", t.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LoadedPlugin {
        output_validators,
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
    bytes: &[u8],
) -> Result<Option<crate::capability::fs::FsGrant>, String> {
    let Some(marker) = toolhost_spec::sections::dev_marker(bytes)? else { return Ok(None) };
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
        let (candidates, mut failures) = discovery::scan(&config.plugins_dir, config.max_plugin_bytes)?;
        let results = load_all(runtime, config, &candidates);
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
        let reg = Registry::build(plugins, failures).with_pending(pending);
        // Once per load; a live registry reports a warning once, when it appears (`Change`).
        for w in reg.warnings() {
            tracing::warn!("{w}");
        }
        Ok(reg)
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

    /// Apply the conflict rules (see the module docs) to already-loaded plugins.
    pub fn build(mut plugins: Vec<Arc<LoadedPlugin>>, mut failures: Vec<LoadFailure>) -> Registry {
        plugins.sort_by(|a, b| a.file.cmp(&b.file));
        failures.sort_by(|a, b| a.file.cmp(&b.file));
        let mut reg = Registry { failures, ..Registry::default() };
        let mut by_name: BTreeMap<Arc<str>, PathBuf> = BTreeMap::new();
        for plugin in plugins {
            if let Some(first) = by_name.get(&plugin.name) {
                reg.failures.push(LoadFailure {
                    file: plugin.file.clone(),
                    reason: format!(
                        "plugin name `{}` is already loaded from {}; rename one of them",
                        plugin.name,
                        discovery::file_name(first)
                    ),
                });
                continue;
            }
            by_name.insert(plugin.name.clone(), plugin.file.clone());
            for (index, spec) in plugin.manifest.tools.iter().enumerate() {
                if let Some(existing) = reg.tools.get(&spec.name) {
                    let msg = format!(
                        "tool `{}` of plugin `{}` ({}) is shadowed by plugin `{}` ({}), which comes first by file name",
                        spec.name,
                        plugin.name,
                        discovery::file_name(&plugin.file),
                        existing.plugin.name,
                        discovery::file_name(&existing.plugin.file),
                    );
                    reg.warnings.push(msg);
                    continue;
                }
                reg.tools.insert(spec.name.clone(), ToolEntry { plugin: plugin.clone(), index });
            }
            reg.plugins.push(plugin);
        }
        reg
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

/// Load candidates on a few threads (wasmtime also parallelises inside each compile).
pub(crate) fn load_all(
    runtime: &Arc<Runtime>,
    config: &Config,
    candidates: &[Candidate],
) -> Vec<Result<LoadedPlugin, LoadFailure>> {
    let workers =
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).min(candidates.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(c) = candidates.get(i) else { break mine };
            tracing::debug!("loading {} ({} of {})", c.file_name(), i + 1, candidates.len());
            // Failures are returned, not logged: each front end reports them once
            // (`list` in its table, `serve` as `!` lines, other commands as warnings).
            mine.push((i, load_plugin(runtime, config, c)));
        }
    };
    // This thread is one of the workers (a single plugin spawns no thread).
    let mut done: Vec<(usize, Result<LoadedPlugin, LoadFailure>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
        let mut all = work();
        all.extend(handles.into_iter().flat_map(|h| h.join().unwrap_or_default()));
        all
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
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

/// Read one file's manifest for `inspect`: no compilation, no execution.
pub fn inspect_file(path: &Path, max_bytes: u64) -> Result<Manifest, String> {
    let bytes = discovery::read_capped(path, max_bytes)?.ok_or_else(|| "not a file".to_string())?;
    manifest::read(&bytes).map_err(|e| e.to_string())
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

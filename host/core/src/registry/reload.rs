//! Hot reload: the plugins folder changes while the host runs.
//!
//! File-system events are only hints: after a burst of events settles (the debounce interval)
//! the folder is rescanned, whole files are read, unchanged files (same SHA-256) are skipped,
//! new or changed ones are validated and compiled off the call path, and the registry snapshot
//! is swapped atomically. A file that fails to load never replaces a working version: the last
//! good version keeps serving and the failure is reported. Calls in flight keep the snapshot
//! (and compiled code) they started with. Every change is published to subscribers.

use crate::discovery::{self, LoadFailure};
use crate::engine::Runtime;
use crate::registry::approvals::{Approvals, Pending};
use crate::registry::folder::{FolderRead, ReadAhead};
use crate::registry::{self, LoadedPlugin, Registry};
use crate::settings::Config;
use arc_swap::ArcSwap;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

pub use super::watch::{EarlyWatch, FolderWatch, ReadFound, WatchFrom, is_change};

/// Default quiet time after the last file event before rescanning.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(150);

/// What one rescan changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// Counts registry swaps since start.
    pub generation: u64,
    /// `tool (plugin version)` newly registered.
    pub added: Vec<ToolVersion>,
    /// Tools whose plugin file changed.
    pub changed: Vec<ToolChange>,
    pub removed: Vec<String>,
    /// New load failures (the file keeps its last good version, if it had one).
    pub failures: Vec<LoadFailure>,
    /// Versions newly held for approval (the last approved version keeps serving).
    pub pending: Vec<Pending>,
    /// New name conflicts (see `registry`): a plugin that arrived claims a name another serves.
    pub conflicts: Vec<String>,
    /// New warnings (a tool shadowed by another plugin's): each reported once, when it appears.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolVersion {
    pub tool: String,
    pub plugin: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ToolChange {
    pub tool: String,
    /// The versions before and after.
    pub from: String,
    pub to: String,
    /// The plugins before and after (different when another plugin now serves the tool).
    pub from_plugin: String,
    pub to_plugin: String,
    /// What differs in the tool's spec (`description`, `params`, `danger`, …); empty when only
    /// the code changed.
    pub what: Vec<String>,
}

impl ToolChange {
    /// `~ slugify: slug_js → geo_rs`, `~ convert (v0.1.0 → v0.2.0): params`,
    /// `~ convert: description`, `~ convert: code`.
    pub fn line(&self) -> String {
        let what = self.what.join(", ");
        if self.from_plugin != self.to_plugin {
            return format!("~ {}: {} → {}", self.tool, self.from_plugin, self.to_plugin);
        }
        match (self.from == self.to, what.is_empty()) {
            (true, true) => format!("~ {}: code", self.tool),
            (true, false) => format!("~ {}: {what}", self.tool),
            (false, true) => format!("~ {} (v{} → v{})", self.tool, self.from, self.to),
            (false, false) => format!("~ {} (v{} → v{}): {what}", self.tool, self.from, self.to),
        }
    }
}

/// The parts of a tool's spec that differ, by name.
fn spec_changes(a: &toolhost_spec::ToolSpec, b: &toolhost_spec::ToolSpec) -> Vec<String> {
    let mut what = Vec::new();
    let mut differs = |name: &str, same: bool| {
        if !same {
            what.push(name.to_string());
        }
    };
    differs("description", a.description == b.description);
    differs("params", a.params == b.params && a.parse_json == b.parse_json && a.rest == b.rest);
    differs("danger", a.danger == b.danger);
    differs("read-only", a.read_only == b.read_only);
    differs("output limit", a.output_limit == b.output_limit);
    differs("category", a.category == b.category);
    differs("output schema", a.output_schema == b.output_schema);
    what
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.changed.is_empty()
            && self.removed.is_empty()
            && self.failures.is_empty()
            && self.pending.is_empty()
            && self.conflicts.is_empty()
            && self.warnings.is_empty()
    }

    /// One line per change: `+ tool`, `~ tool (v0.1.0 → v0.2.0)`, `- tool`, `! file: reason`,
    /// `? held version`, `! tool name conflict`, `! warning`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.added {
            out.push(format!("+ {} ({} v{})", a.tool, a.plugin, a.version));
        }
        // A tool whose spec and version are as they were changed only in code: one line per
        // plugin for those, not one per tool.
        let mut code_only: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for c in &self.changed {
            if c.what.is_empty() && c.from == c.to && c.from_plugin == c.to_plugin {
                code_only.entry(&c.to_plugin).or_default().push(&c.tool);
            } else {
                out.push(c.line());
            }
        }
        for (plugin, tools) in code_only {
            out.push(format!("~ {plugin}: code ({})", tools.join(", ")));
        }
        for r in &self.removed {
            out.push(format!("- {r}"));
        }
        for f in &self.failures {
            out.push(format!("! {}: {}", discovery::file_name(&f.file), f.reason));
        }
        for p in &self.pending {
            out.push(format!("? {p}"));
        }
        for c in &self.conflicts {
            out.push(format!("! {c}"));
        }
        for w in &self.warnings {
            out.push(format!("! {w}"));
        }
        out
    }
}

/// Per file: the content last seen, the version serving, the last failure.
#[derive(Default)]
struct FileState {
    hash: [u8; 32],
    good: Option<Arc<LoadedPlugin>>,
    failure: Option<LoadFailure>,
    /// A loaded version waiting for approval of its larger request.
    held: Option<Arc<LoadedPlugin>>,
}

/// Keeps a registry in step with its plugins folder.
pub struct Reloader {
    runtime: Arc<Runtime>,
    config: Arc<Config>,
    registry: Arc<ArcSwap<Registry>>,
    files: Mutex<BTreeMap<PathBuf, FileState>>,
    changes: broadcast::Sender<Arc<Change>>,
    generation: AtomicU64,
    /// The folder being read for the first rescan (see [`Reloader::read_ahead`]).
    ahead: Mutex<Option<ReadAhead>>,
    /// The watch that read-ahead started beside its read, for [`Reloader::watch`].
    early_watch: Mutex<Option<EarlyWatch>>,
}

impl Reloader {
    /// A reloader for `registry` (initially whatever it holds; call [`Reloader::rescan`]).
    pub fn new(
        runtime: Arc<Runtime>,
        config: Arc<Config>,
        registry: Arc<ArcSwap<Registry>>,
    ) -> Arc<Reloader> {
        let (changes, _) = broadcast::channel(64);
        Arc::new(Reloader {
            runtime,
            config,
            registry,
            files: Mutex::default(),
            changes,
            generation: AtomicU64::new(0),
            ahead: Mutex::default(),
            early_watch: Mutex::default(),
        })
    }

    /// Let the next rescan take the folder as `ahead` reads it, instead of reading it again: a
    /// start begins reading before it builds the engine the reloader needs.
    pub fn read_ahead(&self, ahead: ReadAhead) {
        *self.ahead.lock().unwrap_or_else(|p| p.into_inner()) = Some(ahead);
    }

    /// Registry changes, as they happen.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.changes.subscribe()
    }

    /// How many times the registry was swapped.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Rescan the folder now (blocking: compiles changed plugins). Returns what changed; an
    /// empty change means nothing was swapped.
    pub fn rescan(&self) -> std::io::Result<Arc<Change>> {
        let read = self.read()?;
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        self.take_in(&mut files, read);
        let pending = self.approve(&mut files);

        let plugins: Vec<Arc<LoadedPlugin>> = files.values().filter_map(|f| f.good.clone()).collect();
        let failures: Vec<LoadFailure> = files.values().filter_map(|f| f.failure.clone()).collect();
        let old = self.registry.load_full();
        // The old snapshot is passed on: a name (or plugin name) it served stays with whoever
        // served it, so a newcomer never takes one over.
        let new = Registry::build(plugins, failures, &self.config, Some(&old)).with_pending(pending);
        let mut change = diff(&old, &new);
        if change.is_empty()
            && same_failures(&old, &new)
            && old.pending() == new.pending()
            && old.conflicts() == new.conflicts()
            && same_plugins(&old, &new)
        {
            return Ok(Arc::new(change));
        }
        change.generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        // Plugins loaded from the warm compile cache are linked after the swap, in the
        // background: the new registry answers `tools/list` at once.
        registry::Code::prepare_in_background(new.plugins().to_vec());
        self.registry.store(Arc::new(new));
        drop(files);
        let change = Arc::new(change);
        for line in change.lines() {
            tracing::info!("{line}");
        }
        let _ = self.changes.send(change.clone());
        Ok(change)
    }

    /// The folder as a rescan sees it: the first rescan takes it as the read-ahead found it, if
    /// one was started; later ones read it, checking only changed files (right after each is
    /// read).
    fn read(&self) -> std::io::Result<FolderRead> {
        let ahead = self.ahead.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(ahead) = ahead {
            let (read, watch) = ahead.finish();
            *self.early_watch.lock().unwrap_or_else(|p| p.into_inner()) = watch;
            return read;
        }
        let known: BTreeMap<PathBuf, [u8; 32]> = self
            .files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(p, f)| (p.clone(), f.hash))
            .collect();
        FolderRead::inspect_changed(&self.config, |c| known.get(&c.path) != Some(&c.hash))
    }

    /// Bring `files` up to date with `read`: changed files loaded (held until approved, see
    /// [`Reloader::approve`]), failures recorded beside the version still serving, and files no
    /// longer in the folder forgotten.
    fn take_in(&self, files: &mut BTreeMap<PathBuf, FileState>, read: FolderRead) {
        let FolderRead { found, failures: scan_failures, .. } = read;
        let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
        let mut to_load = Vec::new();
        for (c, ahead) in found {
            seen.insert(c.path.clone());
            if files.get(&c.path).is_some_and(|f| f.hash == c.hash) {
                continue; // unchanged content: nothing to do
            }
            to_load.push((c, ahead));
        }
        for (c, result) in registry::load_all(&self.runtime, &self.config, to_load) {
            let state = files.entry(c.path.clone()).or_default();
            state.hash = c.hash;
            match result {
                Ok(p) => {
                    // Activated by `approve`, once its request is checked against the approvals.
                    state.held = Some(Arc::new(p));
                    state.failure = None;
                }
                Err(mut f) => {
                    if let Some(good) = &state.good {
                        f.reason = format!("{} (still serving v{})", f.reason, good.manifest.version);
                    }
                    state.failure = Some(f);
                }
            }
        }
        for f in scan_failures {
            seen.insert(f.file.clone());
            let state = files.entry(f.file.clone()).or_default();
            let mut f = f;
            if let Some(good) = &state.good {
                f.reason = format!("{} (still serving v{})", f.reason, good.manifest.version);
            }
            // Force a reload next time the file is readable.
            state.hash = [0; 32];
            state.failure = Some(f);
        }
        files.retain(|path, _| seen.contains(path));
    }

    /// New versions (and versions still waiting) go live only if their request is approved;
    /// the approvals are re-read every time, so `toolhost approve` takes effect here. The
    /// versions still held back.
    fn approve(&self, files: &mut BTreeMap<PathBuf, FileState>) -> Vec<Pending> {
        let mut approvals = Approvals::for_folder(&self.config.plugins_dir, &self.config.approvals);
        let mut pending = Vec::new();
        for state in files.values_mut() {
            let Some(held) = state.held.clone() else { continue };
            match approvals.check_file(&held.manifest, &held.hash) {
                Ok(()) => {
                    state.good = Some(held);
                    state.held = None;
                }
                Err(extra) => pending.push(held.pending(extra)),
            }
        }
        approvals.save_or_warn();
        pending
    }

    /// Watch the folder and rescan after each burst of events. Keep the handle alive; dropping
    /// it stops watching. When the first rescan took a [`ReadAhead`] that started watching
    /// before it read, that watch is the one kept: nothing changed since the read is missed.
    pub fn watch(self: &Arc<Self>, debounce: Duration) -> notify::Result<WatchHandle> {
        let early = self.early_watch.lock().unwrap_or_else(|p| p.into_inner()).take();
        let FolderWatch { watcher, mut rx, .. } = match early {
            Some(early) => early.wait()?,
            None => FolderWatch::start(&self.config.plugins_dir)?,
        };
        let me = self.clone();
        let task = tokio::spawn(async move {
            while rx.recv().await.is_some() {
                // Debounce: wait until the folder has been quiet for `debounce`.
                loop {
                    match tokio::time::timeout(debounce, rx.recv()).await {
                        Ok(Some(())) => continue,
                        Ok(None) => return,
                        Err(_) => break,
                    }
                }
                let me2 = me.clone();
                match tokio::task::spawn_blocking(move || me2.rescan()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!("rescan failed: {e}"),
                    Err(e) => tracing::error!("rescan task failed: {e}"),
                }
            }
        });
        Ok(WatchHandle { _watcher: watcher, task })
    }
}

/// Keeps a folder watch running; dropping it stops the watch.
pub struct WatchHandle {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn same_failures(a: &Registry, b: &Registry) -> bool {
    a.failures() == b.failures()
}

/// The same plugin versions serve (one whose tools are all hidden or in conflict counts too).
fn same_plugins(a: &Registry, b: &Registry) -> bool {
    a.plugins().len() == b.plugins().len()
        && a.plugins().iter().zip(b.plugins()).all(|(x, y)| Arc::ptr_eq(x, y))
}

/// What differs between two snapshots.
pub fn diff(old: &Registry, new: &Registry) -> Change {
    let mut change = Change {
        conflicts: new
            .conflicts()
            .iter()
            .filter(|c| !old.conflicts().contains(c))
            .map(|c| c.message())
            .collect(),
        ..Change::default()
    };
    for entry in new.tools() {
        let spec = entry.spec();
        match old.get(&spec.name) {
            None => change.added.push(ToolVersion {
                tool: spec.name.clone(),
                plugin: entry.plugin.name.to_string(),
                version: entry.plugin.manifest.version.clone(),
            }),
            Some(prev)
                if !Arc::ptr_eq(&prev.plugin, &entry.plugin) && prev.plugin.hash != entry.plugin.hash =>
            {
                change.changed.push(ToolChange {
                    tool: spec.name.clone(),
                    from: prev.plugin.manifest.version.clone(),
                    to: entry.plugin.manifest.version.clone(),
                    from_plugin: prev.plugin.name.to_string(),
                    to_plugin: entry.plugin.name.to_string(),
                    what: spec_changes(prev.spec(), spec),
                })
            }
            Some(_) => {}
        }
    }
    for entry in old.tools() {
        if new.get(&entry.spec().name).is_none() {
            change.removed.push(entry.spec().name.clone());
        }
    }
    let old_failures: BTreeSet<(&PathBuf, &String)> =
        old.failures().iter().map(|f| (&f.file, &f.reason)).collect();
    change.failures =
        new.failures().iter().filter(|f| !old_failures.contains(&(&f.file, &f.reason))).cloned().collect();
    change.pending = new.pending().iter().filter(|p| !old.pending().contains(p)).cloned().collect();
    change.warnings = new.warnings().iter().filter(|w| !old.warnings().contains(w)).cloned().collect();
    change
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An early watch reports what its folder's read missed (a file added after the read, before
    /// the watch began), a read with failures as a change, and nothing for a folder as read.
    #[test]
    fn an_early_watch_reports_what_changed_between_the_read_and_its_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"a").unwrap();
        let read = || -> ReadFound {
            Some(
                discovery::scan(dir.path(), 100, |_, _| ()).unwrap().0.into_iter().map(|(c, ())| c).collect(),
            )
        };
        let reported = |found: Option<ReadFound>| {
            let (early, tx) = EarlyWatch::start(dir.path().to_path_buf(), WatchFrom::Now);
            match found {
                Some(found) => tx.send(found).unwrap(),
                None => drop(tx), // the read failed: it sends nothing
            }
            early.wait().unwrap().rx.try_recv().is_ok()
        };
        assert!(!reported(Some(read())), "the folder as read");
        let before = read();
        std::fs::write(dir.path().join("b.wasm"), b"b").unwrap();
        assert!(reported(Some(before)), "a file added after the read");
        assert!(reported(Some(None)), "a read with failures");
        assert!(!reported(None), "no read to compare with");
    }

    fn spec(description: &str, params: usize) -> toolhost_spec::ToolSpec {
        serde_json::from_value(serde_json::json!({
            "name": "convert", "description": description, "argCount": params,
            "params": (0..params).map(|i| serde_json::json!({"name": format!("p{i}"), "type": "string"})).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    fn change(from: (&str, &str), to: (&str, &str), what: Vec<String>) -> String {
        ToolChange {
            tool: "convert".into(),
            from_plugin: from.0.into(),
            from: from.1.into(),
            to_plugin: to.0.into(),
            to: to.1.into(),
            what,
        }
        .line()
    }

    #[test]
    fn a_change_line_names_what_changed() {
        assert_eq!(change(("slug_js", "0.1.0"), ("geo_rs", "0.3.0"), vec![]), "~ convert: slug_js → geo_rs");
        assert_eq!(change(("u", "0.1.0"), ("u", "0.1.0"), vec![]), "~ convert: code");
        let what = spec_changes(&spec("Convert.", 1), &spec("Convert units.", 1));
        assert_eq!(change(("u", "0.1.0"), ("u", "0.1.0"), what), "~ convert: description");
        let what = spec_changes(&spec("Convert.", 1), &spec("Convert units.", 2));
        assert_eq!(
            change(("u", "0.1.0"), ("u", "0.2.0"), what),
            "~ convert (v0.1.0 → v0.2.0): description, params"
        );
        assert_eq!(change(("u", "0.1.0"), ("u", "0.2.0"), vec![]), "~ convert (v0.1.0 → v0.2.0)");
    }

    #[test]
    fn tools_changed_only_in_code_share_a_line() {
        let code = |tool: &str| ToolChange {
            tool: tool.into(),
            from: "0.1.0".into(),
            to: "0.1.0".into(),
            from_plugin: "notes".into(),
            to_plugin: "notes".into(),
            what: vec![],
        };
        let mut described = code("show");
        described.what = vec!["description".into()];
        let c = Change { changed: vec![code("add"), described, code("note")], ..Change::default() };
        assert_eq!(c.lines(), ["~ show: description", "~ notes: code (add, note)"]);
    }
}

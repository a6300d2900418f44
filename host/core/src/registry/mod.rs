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
pub mod apps;
mod build;
mod conflict;
mod dev;
mod folder;
pub mod index;
mod inspect;
mod load;
mod plugin;
pub mod prompts;
pub mod reload;
pub mod resources;
pub mod signing;
pub mod skills;
mod suggest;
mod watch;

pub use crate::discovery::content_hash;
pub use conflict::{Claim, Conflict, HiddenTool, Served};
pub use dev::DEV_SOURCES;
pub use folder::{FolderRead, ReadAhead};
pub use inspect::{InspectError, Inspected, inspect, inspect_file};
pub(crate) use load::load_all;
pub use plugin::{Code, LINK_AFTER, LINK_SETTLE, LoadedPlugin, ToolEntry, ToolSchemas, after_first_listing};

use crate::discovery::LoadFailure;
use approvals::Pending;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use toolhost_spec::manifest::ToolSpec;

/// Search mode: the index `find_tools` answers from, and the meta-tool's own entry.
#[derive(Debug)]
pub struct Search {
    pub index: crate::catalog::search::Index,
    pub spec: ToolSpec,
    /// The meta-tool's listed schemas, as each plugin tool's.
    pub schemas: ToolSchemas,
}

/// Code mode: the host's `run_script` entry (`crate::script::spec`).
#[derive(Debug)]
pub struct ScriptTool {
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
    /// Set when code mode is on (`[code_mode] enabled`): the host's `run_script`.
    script: Option<ScriptTool>,
    /// Versions held back until the operator approves their larger request.
    pending: Vec<Pending>,
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

    /// Set when code mode is on: the host's `run_script`.
    pub fn script(&self) -> Option<&ScriptTool> {
        self.script.as_ref()
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

    /// The tool an app's page calls by the name its plugin gave it (`own`), when the catalog
    /// exposes it under another (a prefix, a namespace, a rename): a page calls the names it was
    /// built with. Only a tool some app of its plugin names, and only when one plugin has it.
    pub fn app_tool(&self, own: &str) -> Option<&ToolEntry> {
        let mut found = self.tools.values().filter(|e| {
            e.own_name() == own
                && e.name() != own
                && e.plugin.apps.iter().any(|a| a.spec.tools.iter().chain(&a.spec.app_only).any(|t| t == own))
        });
        let one = found.next()?;
        found.next().is_none().then_some(one)
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
}

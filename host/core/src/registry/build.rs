//! Building a snapshot from loaded plugins: one file per plugin name, the catalog's exposed
//! names, and the conflict rules (see the registry's module docs).

use super::conflict::{Claim, Conflict, HiddenTool};
use super::plugin::{LoadedPlugin, ToolEntry, ToolSchemas};
use super::{Registry, Search};
use crate::discovery::{self, LoadFailure};
use crate::settings::Config;
use std::collections::BTreeMap;
use std::sync::Arc;
use toolhost_spec::manifest::ToolSpec;

/// A tool's claim on an exposed name while the snapshot is built: the exposed name, the plugin,
/// and the tool's index in its manifest.
type Claimant = (String, Arc<LoadedPlugin>, usize);

impl Registry {
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
        let accepted = reg.one_file_per_name(plugins, previous);
        reg.failures.append(&mut failures);
        reg.failures.sort_by(|a, b| a.file.cmp(&b.file));

        let claims = reg.claims(&accepted, config);
        let searching = config.catalog.searching(claims.len());
        for (key, claimants) in claims {
            if searching && key == crate::catalog::FIND_TOOLS {
                reg.hide_host_tool(claimants, "the host's catalog search in search mode");
            } else if config.code_mode.enabled && key == crate::script::RUN_SCRIPT {
                reg.hide_host_tool(claimants, "the host's code mode (`[code_mode] enabled`)");
            } else {
                reg.serve(key, claimants, previous);
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
        if config.code_mode.enabled {
            reg.script = Some(reg.script_tool(config));
        }
        reg.plugins = accepted;
        reg
    }

    /// Plugin names: one file each. Of several files declaring one name, the one `previous`
    /// loaded from keeps it (hot reload), else none is accepted; the others are load failures.
    /// The accepted plugins, in file-name order.
    fn one_file_per_name(
        &mut self,
        plugins: Vec<Arc<LoadedPlugin>>,
        previous: Option<&Registry>,
    ) -> Vec<Arc<LoadedPlugin>> {
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
                self.failures.push(LoadFailure {
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
        accepted
    }

    /// Every tool's exposed name, grouped by what OpenAI sees (the strictest front end); the
    /// tools the catalog hides, and the selection's warnings, are noted here.
    fn claims(&mut self, accepted: &[Arc<LoadedPlugin>], config: &Config) -> BTreeMap<String, Vec<Claimant>> {
        let mut claims: BTreeMap<String, Vec<Claimant>> = BTreeMap::new();
        self.warnings.extend(super::resources::conflicts(accepted));
        self.warnings.extend(super::prompts::conflicts(accepted));
        for plugin in accepted {
            self.warnings.extend(selection_warnings(plugin, config));
            for (index, spec) in plugin.manifest.tools.iter().enumerate() {
                match crate::catalog::expose(config, &plugin.name, &spec.name) {
                    crate::catalog::Exposed::As(name) => {
                        let key = crate::catalog::openai_name(&name).into_owned();
                        claims.entry(key).or_default().push((name, plugin.clone(), index));
                    }
                    crate::catalog::Exposed::Hidden(why) => self.hidden.push(HiddenTool {
                        plugin: plugin.name.clone(),
                        tool: spec.name.clone(),
                        why,
                    }),
                }
            }
        }
        claims
    }

    /// Code mode's `run_script`, declaring the tools the front ends list (in search mode the
    /// pinned ones, the others found with `find_tools`). Under a policy (`[policy] file`) each
    /// caller may list other tools, so the description names none.
    fn script_tool(&self, config: &Config) -> super::ScriptTool {
        let searched = self.search.is_some();
        let offered = |e: &&ToolEntry| !super::apps::app_only(&e.plugin, e.own_name());
        let listed =
            self.tools.values().filter(|e| !searched || config.catalog.pinned(e.name())).filter(offered);
        let declared = config.policy_file.is_none();
        let spec = crate::script::spec(listed.map(|e| e.spec()), &config.code_mode, declared, searched);
        let schemas = ToolSchemas::of(&spec);
        super::ScriptTool { spec, schemas }
    }

    /// In search mode `find_tools`, in code mode `run_script`, is the host's (`whose`): the
    /// plugin tools exposed under it are hidden.
    fn hide_host_tool(&mut self, claimants: Vec<Claimant>, whose: &str) {
        for (name, p, i) in claimants {
            let tool = p.manifest.tools[i].name.clone();
            self.hidden.push(HiddenTool {
                why: format!(
                    "`{name}` is {whose}; give it another name with [plugin.{}.tool.{tool}] name = \"…\"",
                    p.name
                ),
                plugin: p.name.clone(),
                tool,
            });
        }
    }

    /// Serve the name OpenAI sees as `key`: its one claimant's tool, or, when several claim it,
    /// a [`Conflict`] and the tool of the claimant that served it in `previous` (if any).
    fn serve(&mut self, key: String, mut claimants: Vec<Claimant>, previous: Option<&Registry>) {
        if claimants.len() == 1 {
            if let Some((name, p, i)) = claimants.pop() {
                self.insert(key, name, &p, i);
            }
            return;
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
        self.conflicts.push(conflict);
        if let Some(k) = kept {
            let (name, p, i) = claimants.swap_remove(k);
            self.insert(key, name, &p, i);
        }
    }

    /// Serve `plugin`'s tool `index` as `name` (`key` on OpenAI).
    fn insert(&mut self, key: String, name: String, plugin: &Arc<LoadedPlugin>, index: usize) {
        let own = &plugin.manifest.tools[index];
        let renamed = (own.name != name).then(|| Arc::new(ToolSpec { name: name.clone(), ..own.clone() }));
        let exposed = Arc::from(name.as_str());
        if name != key {
            self.openai.insert(key, name.clone());
        }
        self.tools.insert(name, ToolEntry { plugin: plugin.clone(), index, renamed, exposed });
    }
}

/// Patterns and renames in `plugin`'s section that name none of its tools, skills, resources
/// or prompts (likely typos).
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
    // The skills served are those a pattern matched: a pattern matching none of them matched none.
    for g in e.skills.iter().flatten().filter(|g| !plugin.skills.iter().any(|s| g.matches(&s.name))) {
        out.push(format!("[plugin.{}] skills: {g} matches none of its skills", plugin.name));
    }
    // The same for resources (by URI or template) and prompts, which the manifest holds as served.
    let m = &plugin.manifest;
    let uris: Vec<&str> = m
        .resources
        .iter()
        .map(|r| r.uri.as_str())
        .chain(m.resource_templates.iter().map(|t| t.uri_template.as_str()))
        .collect();
    for g in e.resources.iter().flatten().filter(|g| !uris.iter().any(|u| g.matches(u))) {
        out.push(format!(
            "[plugin.{}] resources: {g} matches none of its resources or templates",
            plugin.name
        ));
    }
    for g in e.prompts.iter().flatten().filter(|g| !m.prompts.iter().any(|p| g.matches(&p.name))) {
        out.push(format!("[plugin.{}] prompts: {g} matches none of its prompts", plugin.name));
    }
    for old in e.prompt_rename.keys().filter(|o| !m.prompts.iter().any(|p| &p.name == *o)) {
        out.push(format!(
            "[plugin.{}.prompt.{old}]: plugin `{}` serves no prompt `{old}`",
            plugin.name, plugin.name
        ));
    }
    for old in e.rename.keys().filter(|o| !declared(o)) {
        out.push(format!(
            "[plugin.{}.tool.{old}]: plugin `{}` has no tool `{old}`",
            plugin.name, plugin.name
        ));
    }
    out
}

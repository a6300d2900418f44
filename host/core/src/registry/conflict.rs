//! Name conflicts: who claims an exposed name, who serves it, and whether a new plugin's names
//! would clash with those served (see the registry's module docs for the rules).

use super::Registry;
use super::plugin::ToolEntry;
use crate::discovery;
use crate::settings::Config;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_spec::manifest::Manifest;

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

impl Registry {
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
}

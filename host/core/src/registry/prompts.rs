//! Which plugin offers a prompt, and which completes an argument: the one lookup of each, for
//! every front end. A prompt is found by the name it is served under (the catalog's, see
//! [`crate::catalog::expose_prompt`]); two plugins serving one name serve neither (the
//! registry warns, a lookup says so naming both).

use super::LoadedPlugin;
use std::sync::Arc;
use toolhost_spec::prompts::PromptSpec;

/// Why a name names no prompt the host serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPrompt {
    #[error("no prompt `{0}`: no loaded plugin declares it")]
    Unknown(String),
    #[error("prompt `{name}` is declared by plugins {}: neither serves it", .plugins.join(" and "))]
    Conflict { name: String, plugins: Vec<String> },
}

/// The prompts `manifest` serves under `config`, and their names (the rest are dropped).
pub(super) fn served(
    manifest: &mut toolhost_spec::Manifest,
    config: &crate::settings::Config,
) -> Vec<String> {
    let (mut names, plugin) = (Vec::new(), manifest.name.clone());
    manifest.prompts.retain(|p| match crate::catalog::expose_prompt(config, &plugin, &p.name) {
        crate::catalog::Exposed::As(name) => {
            names.push(name);
            true
        }
        crate::catalog::Exposed::Hidden(_) => false,
    });
    names
}

/// The plugin serving the prompt `name`, and its declaration (whose `name` is the plugin's own).
pub fn find<'r>(
    plugins: &'r [Arc<LoadedPlugin>],
    name: &str,
) -> Result<(&'r Arc<LoadedPlugin>, &'r PromptSpec), NoPrompt> {
    let found: Vec<_> = plugins
        .iter()
        .filter_map(|p| {
            let i = p.prompt_names.iter().position(|n| n == name)?;
            Some((p, &p.manifest.prompts[i]))
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(NoPrompt::Unknown(name.to_string())),
        more => Err(NoPrompt::Conflict {
            name: name.to_string(),
            plugins: more.iter().map(|(p, _)| format!("`{}`", p.name)).collect(),
        }),
    }
}

/// One prompt as served.
#[derive(Debug, Clone, Copy)]
pub struct Served<'r> {
    pub plugin: &'r str,
    /// The name it is served under.
    pub name: &'r str,
    pub spec: &'r PromptSpec,
}

/// Every prompt of `plugins`, by plugin, in manifest order.
pub fn all(plugins: &[Arc<LoadedPlugin>]) -> impl Iterator<Item = Served<'_>> {
    plugins.iter().flat_map(|p| {
        p.prompt_names.iter().zip(&p.manifest.prompts).map(|(name, spec)| Served {
            plugin: &p.name,
            name,
            spec,
        })
    })
}

/// What a completion asks about: a prompt's argument or a resource template's variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    Prompt(&'a str),
    /// By its `uriTemplate`, exactly as listed.
    Template(&'a str),
}

impl std::fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Prompt(name) => write!(f, "prompt `{name}`"),
            Target::Template(t) => write!(f, "resource template {t}"),
        }
    }
}

/// Why nothing completes an argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoCompletion {
    #[error(transparent)]
    Prompt(#[from] NoPrompt),
    #[error("no resource template {0}: no loaded plugin declares it")]
    Template(String),
    #[error("{target} has no argument `{argument}`")]
    NoArgument { target: String, argument: String },
    #[error("plugin `{plugin}` completes nothing for `{argument}` of {target}")]
    NotCompleted { plugin: String, target: String, argument: String },
}

/// The plugin that completes `argument` of `target`, and the target as that plugin names it
/// (a prompt by its own name), or why none does.
pub fn completer<'r>(
    plugins: &'r [Arc<LoadedPlugin>],
    target: Target<'_>,
    argument: &str,
) -> Result<(&'r Arc<LoadedPlugin>, Target<'r>), NoCompletion> {
    let no_argument = || NoCompletion::NoArgument { target: target.to_string(), argument: argument.into() };
    let (plugin, own, completes) = match target {
        Target::Prompt(name) => {
            let (plugin, prompt) = find(plugins, name)?;
            let arg = prompt.arguments.iter().find(|a| a.name == argument).ok_or_else(no_argument)?;
            (plugin, Target::Prompt(&prompt.name), arg.complete)
        }
        Target::Template(uri_template) => {
            let (plugin, t) = plugins
                .iter()
                .find_map(|p| {
                    Some((p, p.manifest.resource_templates.iter().find(|t| t.uri_template == uri_template)?))
                })
                .ok_or_else(|| NoCompletion::Template(uri_template.to_string()))?;
            let variables = toolhost_spec::resources::Template::parse(&t.uri_template)
                .map(|p| p.variables().any(|v| v == argument))
                .unwrap_or(false);
            if !variables {
                return Err(no_argument());
            }
            (plugin, Target::Template(&t.uri_template), t.complete.iter().any(|v| v == argument))
        }
    };
    if !completes {
        let (plugin, target) = (plugin.name.to_string(), target.to_string());
        return Err(NoCompletion::NotCompleted { plugin, target, argument: argument.into() });
    }
    Ok((plugin, own))
}

/// A warning for each prompt name more than one of `plugins` declares (no one serves it).
pub(super) fn conflicts(plugins: &[Arc<LoadedPlugin>]) -> Vec<String> {
    let mut by_name: std::collections::BTreeMap<&str, Vec<String>> = std::collections::BTreeMap::new();
    for p in all(plugins) {
        by_name.entry(p.name).or_default().push(format!("`{}`", p.plugin));
    }
    by_name
        .into_iter()
        .filter(|(_, who)| who.len() > 1)
        .map(|(name, who)| {
            format!("prompt `{name}` is declared by plugins {}: neither serves it", who.join(" and "))
        })
        .collect()
}

//! Which plugin offers a prompt, and which completes an argument: the one lookup of each, for
//! every front end. A prompt is found by its name; two plugins declaring one name serve
//! neither (the registry warns, a lookup says so naming both).

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

/// The plugin declaring the prompt `name`, and its declaration.
pub fn find<'r>(
    plugins: &'r [Arc<LoadedPlugin>],
    name: &str,
) -> Result<(&'r Arc<LoadedPlugin>, &'r PromptSpec), NoPrompt> {
    let found: Vec<_> = plugins
        .iter()
        .filter_map(|p| Some((p, p.manifest.prompts.iter().find(|s| s.name == name)?)))
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

/// Every prompt of `plugins`, by plugin, in manifest order.
pub fn all(plugins: &[Arc<LoadedPlugin>]) -> impl Iterator<Item = (&str, &PromptSpec)> {
    plugins.iter().flat_map(|p| p.manifest.prompts.iter().map(move |s| (&*p.name, s)))
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

/// The plugin that completes `argument` of `target`, or why none does.
pub fn completer<'r>(
    plugins: &'r [Arc<LoadedPlugin>],
    target: Target<'_>,
    argument: &str,
) -> Result<&'r Arc<LoadedPlugin>, NoCompletion> {
    let no_argument = || NoCompletion::NoArgument { target: target.to_string(), argument: argument.into() };
    let (plugin, completes) = match target {
        Target::Prompt(name) => {
            let (plugin, prompt) = find(plugins, name)?;
            let arg = prompt.arguments.iter().find(|a| a.name == argument).ok_or_else(no_argument)?;
            (plugin, arg.complete)
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
            (plugin, t.complete.iter().any(|v| v == argument))
        }
    };
    if !completes {
        let (plugin, target) = (plugin.name.to_string(), target.to_string());
        return Err(NoCompletion::NotCompleted { plugin, target, argument: argument.into() });
    }
    Ok(plugin)
}

/// A warning for each prompt name more than one of `plugins` declares (no one serves it).
pub(super) fn conflicts(plugins: &[Arc<LoadedPlugin>]) -> Vec<String> {
    let mut by_name: std::collections::BTreeMap<&str, Vec<String>> = std::collections::BTreeMap::new();
    for (plugin, prompt) in all(plugins) {
        by_name.entry(&prompt.name).or_default().push(format!("`{plugin}`"));
    }
    by_name
        .into_iter()
        .filter(|(_, who)| who.len() > 1)
        .map(|(name, who)| {
            format!("prompt `{name}` is declared by plugins {}: neither serves it", who.join(" and "))
        })
        .collect()
}

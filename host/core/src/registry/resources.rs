//! Which plugin serves a URI: the one lookup of a resource, for every front end. A `skill://`
//! URI is a skill's file (`skills.rs`), a `ui://` URI an app's page (`apps.rs`); any other is a plugin's static resource or matches one
//! of its templates, as its manifest declares them. Two plugins claiming one URI serve neither:
//! the lookup says so, naming both.

use super::LoadedPlugin;
use super::skills::{self, SkillFile};
use std::sync::Arc;
use toolhost_spec::resources::{ResourceSpec, ResourceTemplateSpec, Template};

/// What a plugin declares a URI to be.
#[derive(Debug, Clone, Copy)]
pub enum Declared<'r> {
    Static(&'r ResourceSpec),
    Template(&'r ResourceTemplateSpec),
}

impl<'r> Declared<'r> {
    /// The MIME type the manifest declares, if any.
    pub fn mime_type(&self) -> Option<&'r str> {
        match self {
            Declared::Static(r) => r.mime_type.as_deref(),
            Declared::Template(t) => t.mime_type.as_deref(),
        }
    }

    /// The template the URI matched (`None`: a static resource).
    pub fn template(&self) -> Option<&'r str> {
        match self {
            Declared::Static(_) => None,
            Declared::Template(t) => Some(&t.uri_template),
        }
    }
}

/// A resource a plugin's code reads: the plugin, what its manifest declares, and the
/// template's variables (percent-decoded, in order; empty for a static resource).
#[derive(Debug, Clone)]
pub struct PluginResource<'r> {
    pub plugin: &'r Arc<LoadedPlugin>,
    pub declared: Declared<'r>,
    pub variables: Vec<(String, String)>,
}

/// What serves a URI.
#[derive(Debug, Clone)]
pub enum Found<'r> {
    /// A skill's file: served from the plugin's section, nothing runs.
    Skill(&'r LoadedPlugin, &'r SkillFile),
    /// An app's page (`ui://`): served from the plugin's section, nothing runs.
    App(&'r LoadedPlugin, &'r super::apps::LoadedApp),
    /// Read by running the plugin.
    Plugin(PluginResource<'r>),
}

impl Found<'_> {
    /// The plugin serving it.
    pub fn plugin(&self) -> &LoadedPlugin {
        match self {
            Found::Skill(p, _) | Found::App(p, _) => p,
            Found::Plugin(r) => r.plugin,
        }
    }
}

/// Why a URI names nothing the host serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoResource {
    #[error(transparent)]
    Skill(#[from] skills::NoResource),
    #[error("no resource {0}: no loaded plugin declares it or a template it matches")]
    Unknown(String),
    #[error("no resource {0}: no loaded plugin has that app (ui://PLUGIN/APP)")]
    UnknownApp(String),
    #[error("resource {uri} is claimed by plugins {}: neither serves it (rename one in its plugin, or deselect it)", .plugins.join(" and "))]
    Conflict { uri: String, plugins: Vec<String> },
}

/// The URI scheme of apps' pages (MCP Apps reserves it).
pub const APP_SCHEME: &str = "ui://";

/// What serves `uri` among `plugins`: a plugin's static resource wins over templates (its own
/// and others'); one plugin's first matching template serves it; two plugins claiming it serve
/// neither.
pub fn find<'r>(plugins: &'r [Arc<LoadedPlugin>], uri: &str) -> Result<Found<'r>, NoResource> {
    if uri.get(..skills::SCHEME.len()).is_some_and(|s| s.eq_ignore_ascii_case(skills::SCHEME)) {
        let (plugin, file) = skills::resource(plugins, uri)?;
        return Ok(Found::Skill(plugin, file));
    }
    if uri.get(..APP_SCHEME.len()).is_some_and(|s| s.eq_ignore_ascii_case(APP_SCHEME)) {
        let (plugin, app) =
            super::apps::find(plugins, uri).ok_or_else(|| NoResource::UnknownApp(uri.to_string()))?;
        return Ok(Found::App(plugin, app));
    }
    let statics: Vec<PluginResource<'r>> = plugins
        .iter()
        .filter_map(|p| {
            let r = p.manifest.resources.iter().find(|r| r.uri == uri)?;
            Some(PluginResource { plugin: p, declared: Declared::Static(r), variables: Vec::new() })
        })
        .collect();
    let found = if statics.is_empty() { matching_templates(plugins, uri) } else { statics };
    match <[_; 1]>::try_from(found) {
        Ok([one]) => Ok(Found::Plugin(one)),
        Err(v) if v.is_empty() => Err(NoResource::Unknown(uri.to_string())),
        Err(v) => Err(NoResource::Conflict {
            uri: uri.to_string(),
            plugins: v.iter().map(|r| format!("`{}`", r.plugin.name)).collect(),
        }),
    }
}

/// Each plugin's first template `uri` matches.
fn matching_templates<'r>(plugins: &'r [Arc<LoadedPlugin>], uri: &str) -> Vec<PluginResource<'r>> {
    plugins
        .iter()
        .filter_map(|p| {
            p.manifest.resource_templates.iter().find_map(|t| {
                // The manifest's templates parsed when it was read: this cannot fail.
                let variables = Template::parse(&t.uri_template).ok()?.matches(uri)?;
                Some(PluginResource { plugin: p, declared: Declared::Template(t), variables })
            })
        })
        .collect()
}

/// Every static resource of `plugins`, by plugin, in manifest order.
pub fn all(plugins: &[Arc<LoadedPlugin>]) -> impl Iterator<Item = (&str, &ResourceSpec)> {
    plugins.iter().flat_map(|p| p.manifest.resources.iter().map(move |r| (&*p.name, r)))
}

/// Every resource template of `plugins`, by plugin, in manifest order.
pub fn templates(plugins: &[Arc<LoadedPlugin>]) -> impl Iterator<Item = (&str, &ResourceTemplateSpec)> {
    plugins.iter().flat_map(|p| p.manifest.resource_templates.iter().map(move |t| (&*p.name, t)))
}

/// Keep only the resources and templates of `manifest` that `exposure` serves.
pub(super) fn served(manifest: &mut toolhost_spec::Manifest, exposure: &crate::catalog::settings::Exposure) {
    manifest.resources.retain(|r| exposure.serves_resource(&r.uri));
    manifest.resource_templates.retain(|t| exposure.serves_resource(&t.uri_template));
}

/// A warning for each URI or template that more than one of `plugins` declares (no one
/// serves a static one then; a URI that two plugins' templates match is refused when read).
pub(super) fn conflicts(plugins: &[Arc<LoadedPlugin>]) -> Vec<String> {
    let mut by_uri: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
    for p in plugins {
        let declared = p.manifest.resources.iter().map(|r| r.uri.as_str());
        for uri in declared.chain(p.manifest.resource_templates.iter().map(|t| t.uri_template.as_str())) {
            by_uri.entry(uri).or_default().push(&p.name);
        }
    }
    by_uri
        .into_iter()
        .filter(|(_, who)| who.len() > 1)
        .map(|(uri, who)| {
            let who: Vec<String> = who.iter().map(|p| format!("`{p}`")).collect();
            format!("resource {uri} is declared by plugins {}: neither serves it", who.join(" and "))
        })
        .collect()
}

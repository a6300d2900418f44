//! A loaded plugin's apps (MCP Apps): its `toolhost-apps` section read (from the file, or from
//! the folder index's copy of it), checked by the spec's rules and against its manifest's tools,
//! and each page's policy worked out once with the operator's `[plugin.NAME] app_domains`:
//! a declared origin the operator did not allow is left out, never added.

use super::LoadedPlugin;
use std::sync::Arc;
use toolhost_spec::apps::{self, AppCsp, AppSpec, AppsError};
use toolhost_spec::manifest::Manifest;

/// One app of a loaded plugin, as served.
#[derive(Debug, Clone)]
pub struct LoadedApp {
    /// What the section says (its `csp` as declared).
    pub spec: AppSpec,
    /// `ui://PLUGIN/APP`.
    pub uri: String,
    /// The origins served: the declared ones the operator allows.
    pub csp: AppCsp,
    /// Declared origins the operator did not allow (left out of `csp`), for `list` and `inspect`.
    pub withheld: Vec<String>,
    /// The Content-Security-Policy of `csp` ([`apps::content_security_policy`]).
    pub policy: String,
}

/// A plugin's apps (empty: none).
pub type Apps = Arc<Vec<LoadedApp>>;

impl LoadedApp {
    /// The `_meta.ui` of its resource: the origins it may reach, and its border preference.
    pub fn ui_meta(&self) -> serde_json::Value {
        let mut ui = serde_json::Map::new();
        if !self.csp.is_empty() {
            ui.insert("csp".into(), serde_json::to_value(&self.csp).unwrap_or_default());
        }
        if let Some(b) = self.spec.prefers_border {
            ui.insert("prefersBorder".into(), b.into());
        }
        serde_json::Value::Object(ui)
    }
}

/// The section's apps of a plugin file's bytes, and the section's text for the folder index
/// (`None`: no section).
pub(super) fn from_file(bytes: &[u8]) -> Result<(Vec<AppSpec>, Option<String>), AppsError> {
    match apps::read(bytes)? {
        None => Ok((Vec::new(), None)),
        Some(section) => {
            let text = String::from_utf8(apps::encode(&section)).ok();
            Ok((section.apps, text))
        }
    }
}

/// The apps of a section's text (the folder index's copy).
pub(super) fn from_section(text: &[u8]) -> Result<Vec<AppSpec>, AppsError> {
    Ok(apps::decode(text)?.apps)
}

/// `specs` of `manifest`'s plugin, served with the origins `allowed` grants: every tool an app
/// names must be one of the manifest's (the refusal names the app and the tool).
pub(super) fn loaded(specs: Vec<AppSpec>, manifest: &Manifest, allowed: &[String]) -> Result<Apps, String> {
    let mut out = Vec::with_capacity(specs.len());
    for spec in specs {
        for tool in spec.tools.iter().chain(&spec.app_only) {
            if !manifest.tools.iter().any(|t| &t.name == tool) {
                return Err(format!(
                    "app `{}` names the tool `{tool}`, which the plugin's manifest does not declare",
                    spec.name
                ));
            }
        }
        let (csp, withheld) = granted(&spec.csp, allowed);
        let policy = apps::content_security_policy(&csp);
        out.push(LoadedApp { uri: apps::uri(&manifest.name, &spec.name), spec, csp, withheld, policy });
    }
    Ok(Arc::new(out))
}

/// The apps of a plugin file's `bytes` (its manifest `manifest`) as a host allowing the origins
/// `allowed` would serve them (`inspect`), or why the host would refuse the plugin.
pub fn of_file(bytes: &[u8], manifest: &Manifest, allowed: &[String]) -> Result<Apps, String> {
    let (specs, _) = from_file(bytes).map_err(|e| e.to_string())?;
    loaded(specs, manifest, allowed)
}

/// The origins of `declared` that `allowed` holds, and the others.
fn granted(declared: &AppCsp, allowed: &[String]) -> (AppCsp, Vec<String>) {
    let mut withheld = Vec::new();
    let mut keep = |list: &[String]| -> Vec<String> {
        let (ok, no): (Vec<String>, Vec<String>) = list.iter().cloned().partition(|d| allowed.contains(d));
        withheld.extend(no);
        ok
    };
    let csp = AppCsp {
        connect_domains: keep(&declared.connect_domains),
        resource_domains: keep(&declared.resource_domains),
        frame_domains: keep(&declared.frame_domains),
        base_uri_domains: keep(&declared.base_uri_domains),
    };
    withheld.sort();
    withheld.dedup();
    (csp, withheld)
}

/// The app `uri` names among `plugins`, with its plugin.
pub fn find<'a>(plugins: &'a [Arc<LoadedPlugin>], uri: &str) -> Option<(&'a LoadedPlugin, &'a LoadedApp)> {
    let plugins = plugins.iter();
    plugins.flat_map(|p| p.apps.iter().map(move |a| (&**p, a))).find(|(_, a)| a.uri == uri)
}

/// The app linked to `plugin`'s tool `tool` (its manifest name), if any.
pub fn of_tool<'a>(plugin: &'a LoadedPlugin, tool: &str) -> Option<&'a LoadedApp> {
    plugin.apps.iter().find(|a| a.spec.tools.iter().any(|t| t == tool))
}

/// Whether `plugin`'s tool `tool` (its manifest name) is for its apps only: callable, never
/// offered to a model.
pub fn app_only(plugin: &LoadedPlugin, tool: &str) -> bool {
    plugin.apps.iter().any(|a| a.spec.app_only.iter().any(|t| t == tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csp(connect: &[&str], resource: &[&str]) -> AppCsp {
        AppCsp {
            connect_domains: connect.iter().map(|s| s.to_string()).collect(),
            resource_domains: resource.iter().map(|s| s.to_string()).collect(),
            ..AppCsp::default()
        }
    }

    #[test]
    fn only_the_declared_origins_the_operator_allows_are_served() {
        let declared =
            csp(&["https://api.example.com", "https://evil.example"], &["https://cdn.example.com"]);
        let allowed = ["https://api.example.com".to_string(), "https://other.example".to_string()];
        let (served, withheld) = granted(&declared, &allowed);
        assert_eq!(served, csp(&["https://api.example.com"], &[]));
        assert_eq!(withheld, ["https://cdn.example.com", "https://evil.example"]);
        let policy = apps::content_security_policy(&served);
        assert!(policy.contains("connect-src https://api.example.com;"), "{policy}");
        assert!(!policy.contains("other.example") && !policy.contains("cdn.example.com"), "{policy}");
        // Nothing allowed: the strictest policy.
        let (served, _) = granted(&declared, &[]);
        assert!(served.is_empty());
        assert!(apps::content_security_policy(&served).contains("connect-src 'none'"));
    }
}

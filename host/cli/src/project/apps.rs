//! A project's `apps/` folder (issue #62): its pages (MCP Apps), collected with the host's rules
//! ([`toolhost_spec::apps`]) and carried in the component as its `toolhost-apps` section.
//!
//! `toolhost build` and `toolhost dev` embed it after the language's own build, the same way for
//! Rust, Python and JavaScript: each app is a folder `apps/NAME/` holding `index.html` (its
//! scripts and styles inlined or bundled into it) and `app.toml` (the tools it shows, those only
//! it may call, the origins it needs). Every tool an app names must be one of the plugin's:
//! checked here against the manifest just built, as the host checks it when it loads.

use anyhow::{Result, anyhow, bail};
use std::path::Path;
use toolhost_spec::Manifest;
use toolhost_spec::apps::{self, AppsSection};

/// The folder of a project that holds its apps (`apps/NAME/index.html`, `apps/NAME/app.toml`).
pub const DIR: &str = "apps";

/// The apps in `project/apps`, with the host's rules applied; `None` when the project has no
/// such folder. Errors name the folder, the app and the file.
pub fn collect(project: &Path) -> Result<Option<AppsSection>> {
    let dir = project.join(DIR);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(None);
    }
    let section = apps::collect_dir(&dir).map_err(|e| anyhow!("the apps in {}: {e}", dir.display()))?;
    Ok(Some(section))
}

/// `component` (built from `project`, whose manifest is `manifest`) with the project's apps
/// embedded: unchanged without an `apps/` folder, or when it already carries exactly these apps.
pub fn embed_project(component: Vec<u8>, project: &Path, manifest: &Manifest) -> Result<Vec<u8>> {
    let Some(section) = collect(project)? else { return Ok(component) };
    check_tools(&section, manifest)?;
    match apps::read(&component).map_err(|e| anyhow!("the built component's apps: {e}"))? {
        Some(have) if have == section => Ok(component),
        Some(_) => {
            bail!("the built component already carries apps that differ from the project's {DIR}/ folder")
        }
        None => apps::embed(&component, &section).map_err(|e| anyhow!("cannot embed the apps: {e}")),
    }
}

/// Every tool the apps name is one of `manifest`'s.
fn check_tools(section: &AppsSection, manifest: &Manifest) -> Result<()> {
    for app in &section.apps {
        for tool in app.tools.iter().chain(&app.app_only) {
            if !manifest.tools.iter().any(|t| &t.name == tool) {
                let known: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
                bail!(
                    "{DIR}/{}/{}: the tool `{tool}` is not one of the plugin's ({})",
                    app.name,
                    apps::APP_TOML,
                    known.join(", ")
                );
            }
        }
    }
    Ok(())
}

/// Whether `rel` (a path relative to the project) is in its apps folder.
pub fn is_app_file(rel: &Path) -> bool {
    rel.starts_with(DIR)
}

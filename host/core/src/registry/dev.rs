//! A `toolhost dev` build's sources, mapped read-only into the plugin built from them.

use crate::settings::Config;

/// The guest path of a `toolhost dev` build's sources.
pub const DEV_SOURCES: &str = "toolhost-dev";

/// A `toolhost dev` build's sources, read-only at `/toolhost-dev`: the plugins folder's
/// `.toolhost-dev/NAME-ID/`, the folder named by the plugin's own name and the snapshot id its
/// `toolhost-dev` section holds. Nothing else is ever mapped this way: the path is the host's,
/// under its own plugins folder, and only `toolhost dev` writes there. A dev build whose
/// sources are gone does not load.
pub(super) fn dev_sources(
    config: &Config,
    name: &str,
    marker: Option<toolhost_spec::sections::DevMarker>,
) -> Result<Option<crate::capability::fs::FsGrant>, String> {
    let Some(marker) = marker else { return Ok(None) };
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
        create: false,
    }))
}

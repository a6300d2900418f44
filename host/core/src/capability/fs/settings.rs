//! The filesystem capability's settings: a directory granted to a plugin
//! (`[plugin.X] fs = [{ path, mode, name }]`). A leaf: it imports nothing of the crate but the
//! config's error ([`Invalid`]).

use crate::settings::invalid::Invalid;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toolhost_spec::manifest::FsMode;

/// One entry of `[plugin.X] fs`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFs {
    path: String,
    mode: FsMode,
    /// Logical name the plugin requests this directory by (default: `workspace` for the
    /// workspace, else the path as written).
    name: Option<String>,
}

/// A directory the operator grants to a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsGrant {
    /// The logical name a plugin requests it by (`workspace`, `docs`, …).
    pub name: String,
    /// Absolute host path.
    pub host_path: PathBuf,
    pub mode: FsMode,
    /// The directory is created on first use, when missing: only the default workspace (a
    /// folder of its own beside the config, never the config's folder itself).
    pub create: bool,
}

impl FsGrant {
    /// Where the plugin sees the directory: the workspace is the guest's `.`, other
    /// directories are `/NAME`.
    pub fn guest_path(&self) -> String {
        if self.name == "workspace" { ".".to_string() } else { format!("/{}", self.name) }
    }
}

impl RawFs {
    /// Resolve the entry `key` (`plugin.X.fs[0]`) against the workspace (for `path =
    /// "workspace"`: `workspace` is its grant, whose mode is replaced) or `base` (the config
    /// file's directory); `normalize` makes a path canonical where it exists.
    pub fn resolve(
        self,
        key: &str,
        workspace: &FsGrant,
        base: &Path,
        normalize: fn(&Path) -> PathBuf,
    ) -> Result<FsGrant, Invalid> {
        let RawFs { path, mode, name } = self;
        if path == "workspace" {
            if let Some(n) = &name
                && n != "workspace"
            {
                return Err(Invalid::says(
                    key,
                    format!("the workspace is always requested as `workspace`, not {n:?}"),
                ));
            }
            return Ok(FsGrant { mode, ..workspace.clone() });
        }
        let name = name.unwrap_or_else(|| path.clone());
        let plain = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            && name != "."
            && name != "..";
        if !plain {
            return Err(Invalid::says(
                key,
                format!(
                    "{name:?} is not a plain name a plugin can request; add `name = \"docs\"` (letters, digits, `_`, `-`, `.`)"
                ),
            ));
        }
        Ok(FsGrant { name, host_path: normalize(&base.join(path)), mode, create: false })
    }
}

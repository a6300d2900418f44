//! The host's own files: what configures toolhost or records what it did, and so what no grant
//! may let a plugin or a program it runs write. A model that could write `toolhost.toml`
//! through the `files` plugin could grant itself anything at the next start.
//!
//! The list ([`super::Config::host_files`]) is the config file (or, without one, the file that
//! would be read as one), the grants file, the plugins folder (with its approvals record and
//! `toolhost dev`'s sources), the compile cache and the state folder, trust key files, secret
//! files, and what the front ends add (the audit trail, token files). A writable grant — a
//! directory granted `rw`, a program's working directory with `write = true` or its `rw` paths
//! — that holds one of them, or lies inside one of the folders, is refused when the host
//! starts ([`check`]), naming both paths. Landlock cannot take a path out of a granted
//! directory, so there is no carving out: the operator grants another folder.

use super::{Config, DEFAULT_FILE, SecretFrom};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toolhost_spec::manifest::FsMode;

/// One of the host's own files or folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFile {
    /// What it is, as a message names it (`the config file`).
    pub what: String,
    pub path: PathBuf,
    /// A folder: a grant inside it is refused too.
    pub dir: bool,
}

impl HostFile {
    pub fn file(what: impl Into<String>, path: impl Into<PathBuf>) -> HostFile {
        HostFile { what: what.into(), path: path.into(), dir: false }
    }

    pub fn dir(what: impl Into<String>, path: impl Into<PathBuf>) -> HostFile {
        HostFile { what: what.into(), path: path.into(), dir: true }
    }

    /// Whether writing anywhere under `granted` could write this file (or into this folder).
    pub fn under(&self, granted: &Path) -> bool {
        let (mine, granted) = (real(&self.path), real(granted));
        mine.starts_with(&granted) || (self.dir && granted.starts_with(&mine))
    }
}

/// A directory a plugin or a program may write, and who may write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableDir {
    pub plugin: String,
    /// The grant, as the operator wrote it (`fs workspace`, `exec git (write = true)`).
    pub grant: String,
    pub path: PathBuf,
}

/// A writable grant over one of the host's own files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "plugin `{plugin}` may write {dir} ({grant}), which holds {what} {path}: no grant may let a plugin or a program write toolhost's own files; grant a folder that holds none of them{hint}",
    dir = .dir.display(),
    path = .path.display(),
    hint = if *.workspace { " (e.g. `workspace = \"workspace\"` in toolhost.toml, or --workspace DIR)" } else { "" }
)]
pub struct OverHostFile {
    pub plugin: String,
    pub grant: String,
    pub dir: PathBuf,
    pub what: String,
    pub path: PathBuf,
    /// The grant is the workspace's.
    pub workspace: bool,
}

/// The first writable directory that holds one of `files` (or lies inside one of the folders).
pub fn check(
    writable: impl IntoIterator<Item = WritableDir>,
    files: &[HostFile],
    workspace: &Path,
) -> Result<(), Box<OverHostFile>> {
    for w in writable {
        if let Some(f) = files.iter().find(|f| f.under(&w.path)) {
            return Err(Box::new(OverHostFile {
                workspace: w.path == workspace,
                plugin: w.plugin,
                grant: w.grant,
                dir: w.path,
                what: f.what.clone(),
                path: f.path.clone(),
            }));
        }
    }
    Ok(())
}

impl Config {
    /// The host's own files and folders (see the module docs).
    pub fn host_files(&self) -> Vec<HostFile> {
        let config = self.source.clone().unwrap_or_else(|| self.grants_file.with_file_name(DEFAULT_FILE));
        let mut out = vec![
            HostFile::file("the config file", config),
            HostFile::file("the grants file", &self.grants_file),
            HostFile::dir("the plugins folder", &self.plugins_dir),
        ];
        let cache = self.cache_dir.iter().cloned().chain(crate::files::cache_dir());
        out.extend(cache.map(|d| HostFile::dir("toolhost's cache folder", d)));
        out.extend(crate::files::state_dir().map(|d| HostFile::dir("toolhost's state folder", d)));
        if let crate::capability::kv::Backend::Sqlite { dir } = &self.kv.backend {
            out.push(HostFile::dir("the plugins' key-value stores ([kv] dir)", dir));
        }
        out.extend(self.trust.key_files.iter().map(|k| HostFile::file("the trusted key", k)));
        out.extend(self.policy_file.iter().map(|f| HostFile::file("the policy file ([policy] file)", f)));
        for s in self.secrets.values() {
            if let SecretFrom::File(path) = &s.from {
                out.push(HostFile::file(format!("the file of secret `{}`", s.name), path));
            }
        }
        out.extend(self.extra_host_files.iter().cloned());
        out
    }

    /// Every directory a grant of the config, the command line or the grants file lets a
    /// plugin or one of its programs write.
    pub fn writable_dirs(&self) -> Vec<WritableDir> {
        let names: BTreeSet<&str> = self
            .plugins
            .keys()
            .map(String::as_str)
            .chain(self.asked.iter().map(|g| g.plugin.as_str()))
            .collect();
        let mut out = Vec::new();
        for name in names {
            let p = self.plugin(name);
            let plugin = || name.to_string();
            for f in p.fs.iter().filter(|f| f.mode == FsMode::ReadWrite) {
                let grant = format!("fs {} rw", f.name);
                out.push(WritableDir { plugin: plugin(), grant, path: f.host_path.clone() });
            }
            for e in &p.exec {
                if e.write {
                    let grant = format!("exec {} with write = true", e.name);
                    let path = e.cwd.clone().unwrap_or_else(|| self.workspace.clone());
                    out.push(WritableDir { plugin: plugin(), grant, path });
                }
                for f in e.fs.iter().filter(|f| f.mode == FsMode::ReadWrite) {
                    let grant = format!("exec {} fs {} rw", e.name, f.path.display());
                    out.push(WritableDir { plugin: plugin(), grant, path: f.path.clone() });
                }
            }
        }
        out
    }

    /// Refuse a writable grant over one of the host's own files (see the module docs).
    pub fn check_host_files(&self) -> Result<(), Box<OverHostFile>> {
        check(self.writable_dirs(), &self.host_files(), &self.workspace)
    }

    /// Whether the workspace holds none of the host's own files, so that a human's answer may
    /// make it writable.
    pub fn workspace_writable(&self) -> bool {
        !self.host_files().iter().any(|f| f.under(&self.workspace))
    }
}

/// `path` with symbolic links resolved as far as it exists (a file not written yet, the grants
/// file say, is named by its folder's real path), so that a link cannot hide where it is.
fn real(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(r) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(r, |p: PathBuf, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_or_folder_under_a_writable_dir_is_found_through_links() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path();
        std::fs::create_dir_all(top.join("ws/sub")).unwrap();
        std::fs::create_dir_all(top.join("plugins")).unwrap();
        std::os::unix::fs::symlink(top.join("ws"), top.join("link")).unwrap();
        let config = HostFile::file("the config file", top.join("toolhost.toml"));
        let inside = HostFile::file("the audit trail", top.join("link/sub/audit.jsonl"));
        let plugins = HostFile::dir("the plugins folder", top.join("plugins"));
        assert!(config.under(top), "the config's own folder");
        assert!(!config.under(&top.join("ws")), "a subfolder of it");
        assert!(inside.under(&top.join("ws")), "through a link, and not written yet");
        assert!(plugins.under(&top.join("plugins/more")), "a folder inside a protected folder");
        assert!(!plugins.under(&top.join("ws")));
        assert!(!HostFile::file("x", top.join("ws2/f")).under(&top.join("ws")), "a prefix is not a parent");
    }

    #[test]
    fn the_refusal_names_both_paths_and_the_grant() {
        let files = [HostFile::file("the config file", "/srv/th/toolhost.toml")];
        let w = |path: &str| WritableDir {
            plugin: "files".into(),
            grant: "fs workspace".into(),
            path: path.into(),
        };
        assert_eq!(check([w("/srv/th/ws")], &files, Path::new("/srv/th/ws")), Ok(()));
        let e = check([w("/srv/th")], &files, Path::new("/srv/th")).unwrap_err();
        assert!(e.workspace);
        let m = e.to_string();
        assert!(m.contains("plugin `files` may write /srv/th (fs workspace)"), "{m}");
        assert!(m.contains("the config file /srv/th/toolhost.toml"), "{m}");
        assert!(m.contains("workspace = \"workspace\""), "{m}");
    }
}

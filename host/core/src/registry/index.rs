//! The folder index: what the last read of a plugins folder found in each unsigned file that
//! passed its checks — the file's [`Stamp`], its two hashes, its manifest and skills sections
//! and its dev marker — so that a start (or a reload) takes a file whose stamp is unchanged from here
//! instead of reading and hashing it. A warm start of a folder of ten plugins reads no plugin
//! bytes at all.
//!
//! Like the compile cache, the index is toolhost's own: it lives in the cache directory (made
//! readable only by its user), never in the plugins folder, one file per plugins folder and
//! toolhost version. Nothing taken from it skips a check the load makes: the manifest is parsed
//! and validated again, and the signature policy, grants and dev sources are the current
//! configuration's. A signed file is never in it (its signature is verified over its bytes on
//! every load). An entry is made only once the file's times have settled ([`SETTLED`]), so a
//! write in the same clock tick as the read cannot hide behind an unchanged stamp. A missing,
//! unreadable or foreign index is simply rebuilt.

use crate::discovery::{Candidate, Stamp};
use crate::settings::Config;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use toolhost_spec::sections::DevMarker;

/// How long a file's modification and change times must lie in the past before its entry is
/// made: far longer than any file-system clock tick, shorter than the time between a build
/// and the next start but one.
pub const SETTLED: Duration = Duration::from_secs(2);

/// What the index knows of one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    stamp: Stamp,
    /// SHA-256 of the file, hex.
    hash: String,
    /// SHA-256 of its code, hex ([`Candidate::code`]).
    code: String,
    /// Its `toolhost-manifest` section, as embedded.
    pub(crate) manifest: String,
    /// Its `toolhost-skills` section, as embedded, if it has one. Required in the stored JSON
    /// (`deserialize_with` turns off serde's "a missing `Option` is `None`"): an index written
    /// before skills were read is rebuilt, rather than taken to say "no skills".
    #[serde(deserialize_with = "serde::Deserialize::deserialize")]
    pub(crate) skills: Option<String>,
    /// Its `toolhost-apps` section, if it has one; required like `skills`.
    #[serde(deserialize_with = "serde::Deserialize::deserialize")]
    pub(crate) apps: Option<String>,
    /// Its `toolhost-dev` section, if it is a `toolhost dev` build.
    pub(crate) dev: Option<DevMarker>,
}

impl Entry {
    /// The entry for a file just read and checked: `None` unless it can be one (its stamp
    /// known, its manifest section text).
    pub(crate) fn new(
        c: &Candidate,
        manifest: Vec<u8>,
        (skills, apps): (Option<String>, Option<String>),
        dev: Option<DevMarker>,
    ) -> Option<Entry> {
        Some(Entry {
            stamp: c.stamp?,
            hash: hex::encode(c.hash),
            code: hex::encode(c.code),
            manifest: String::from_utf8(manifest).ok()?,
            skills,
            apps,
            dev,
        })
    }
}

/// The file as stored.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    /// The toolhost version that wrote it: another version's index is not read (what a
    /// manifest may say can change between versions).
    toolhost: String,
    /// The plugins folder it describes.
    folder: PathBuf,
    /// By file name.
    files: BTreeMap<String, Entry>,
}

/// One folder's index, as read at the start of a scan.
#[derive(Debug, Default)]
pub struct FolderIndex {
    /// Where it is kept (`None`: no cache directory, no index).
    path: Option<PathBuf>,
    /// The plugins folder it describes.
    folder: PathBuf,
    files: BTreeMap<String, Entry>,
}

/// How a file of a scan stands with the index.
pub(crate) enum Indexed {
    /// Taken from the index, unread.
    Kept,
    /// Read, and can be known from now on.
    New(Entry),
    /// Taken from the index, unread, and refused by the load's checks: dropped from it (read
    /// next time).
    Dropped,
    /// Read, and not to be indexed (signed, refused, or not checked).
    Not,
}

impl FolderIndex {
    /// The index of `config.plugins_dir` (empty when there is none yet, or it cannot be used).
    pub fn open(config: &Config) -> FolderIndex {
        let Some(path) = index_path(config) else { return FolderIndex::default() };
        let files = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Stored>(&bytes) {
                Ok(s) if s.toolhost == env!("CARGO_PKG_VERSION") && s.folder == config.plugins_dir => s.files,
                Ok(_) => BTreeMap::new(),
                Err(e) => {
                    tracing::debug!("folder index {} unreadable ({e}): rebuilding it", path.display());
                    BTreeMap::new()
                }
            },
            Err(_) => BTreeMap::new(),
        };
        FolderIndex { path: Some(path), folder: config.plugins_dir.clone(), files }
    }

    /// The candidate the index knows at `path` with exactly this stamp, and its entry.
    pub(crate) fn known(&self, path: &Path, stamp: &Stamp) -> Option<(Candidate, &Entry)> {
        let e = self.files.get(path.file_name()?.to_str()?)?;
        if e.stamp != *stamp {
            return None;
        }
        let mut hash = [0; 32];
        let mut code = [0; 32];
        hex::decode_to_slice(&e.hash, &mut hash).ok()?;
        hex::decode_to_slice(&e.code, &mut code).ok()?;
        Some((Candidate { path: path.to_path_buf(), stamp: Some(*stamp), hash, code }, e))
    }

    /// Keep what this scan found (`found`: each file and how it stands), writing the index
    /// only if it changed: entries of files gone, changed or refused are dropped, and files
    /// read whose times have settled are added.
    pub(crate) fn update<'a>(&self, found: impl Iterator<Item = (&'a Candidate, &'a Indexed)>) {
        let Some(path) = &self.path else { return };
        let now = SystemTime::now();
        let mut files = BTreeMap::new();
        for (c, indexed) in found {
            let Some(name) = c.path.file_name().and_then(|n| n.to_str()) else { continue };
            let entry = match indexed {
                Indexed::Kept => self.files.get(name).cloned(),
                Indexed::New(e) => Some(e.clone()).filter(|e| e.stamp.settled(now, SETTLED)),
                Indexed::Dropped | Indexed::Not => None,
            };
            if let Some(e) = entry {
                files.insert(name.to_string(), e);
            }
        }
        if files == self.files {
            return;
        }
        let Some(dir) = path.parent() else { return };
        let stored =
            Stored { toolhost: env!("CARGO_PKG_VERSION").to_string(), folder: self.folder.clone(), files };
        let written = serde_json::to_vec(&stored).map_err(std::io::Error::other).and_then(|bytes| {
            crate::files::create_private_dir(dir)?;
            crate::files::write_atomic(path, &bytes)
        });
        if let Err(e) = written {
            tracing::warn!("cannot write the folder index {}: {e}", path.display());
        }
    }
}

/// `CACHE/folders/SHA256-OF-THE-FOLDER-PATH.json`.
fn index_path(config: &Config) -> Option<PathBuf> {
    let cache = config.cache_dir.as_ref()?;
    let key = toolhost_spec::digest::sha256_hex(config.plugins_dir.as_os_str().as_encoded_bytes());
    Some(cache.join("folders").join(format!("{key}.json")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry written before skills were read is not taken to say "no skills": the index it
    /// is in does not read, and is rebuilt.
    #[test]
    fn an_entry_without_its_skills_field_does_not_read() {
        let entry = Entry {
            stamp: Stamp { dev: 1, ino: 1, len: 1, mtime: (1, 0), ctime: (1, 0) },
            hash: "00".into(),
            code: "00".into(),
            manifest: "{}".into(),
            skills: None,
            apps: None,
            dev: None,
        };
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(serde_json::from_value::<Entry>(json.clone()).unwrap(), entry);
        for field in ["skills", "apps"] {
            let mut old = json.clone();
            old.as_object_mut().unwrap().remove(field);
            assert!(serde_json::from_value::<Entry>(old).is_err(), "{field}");
        }
    }
}

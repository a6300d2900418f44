//! Reading the plugins folder before the engine is needed: every file read and hashed (or known
//! unchanged by the folder index) and the manifests to be loaded checked, on a thread of its
//! own while the engine is built.

use super::index;
use super::inspect::{Inspected, inspect_indexed, inspect_indexing};
use super::watch::{EarlyWatch, WatchFrom};
use crate::discovery::{self, Candidate, LoadFailure};
use crate::settings::Config;
use std::sync::Arc;

/// A file's manifest check, when it was done ahead of loading (`None`: not yet).
pub(crate) type Ahead = Option<Result<Inspected, LoadFailure>>;

/// The plugins folder as read before the engine is needed: every file read and hashed (or
/// known unchanged by the folder index), and the manifests of those to be loaded checked.
pub struct FolderRead {
    /// Each readable file, with its manifest's check when it was done ahead.
    pub(crate) found: Vec<(Candidate, Ahead)>,
    pub(crate) failures: Vec<LoadFailure>,
    /// How many files the folder index knew unchanged (not read).
    pub from_index: usize,
}

impl FolderRead {
    /// Read the folder and check every manifest (each right after its file is read).
    pub fn inspect_all(config: &Config) -> std::io::Result<FolderRead> {
        Self::inspect_changed(config, |_| true)
    }

    /// Read the folder, checking the manifests of the files `changed` picks (the others are
    /// not loaded again: a reload's unchanged files). A file the folder index knows unchanged
    /// is not read; the index is brought up to date afterwards.
    pub fn inspect_changed(
        config: &Config,
        changed: impl Fn(&Candidate) -> bool + Sync,
    ) -> std::io::Result<FolderRead> {
        let index = index::FolderIndex::open(config);
        let (found, failures) = discovery::scan_known(
            &config.plugins_dir,
            config.max_plugin_bytes,
            |path, stamp| {
                let (c, entry) = index.known(path, stamp)?;
                let ahead = changed(&c).then(|| inspect_indexed(config, &c, entry));
                // A file the index knows that no longer passes is read next time.
                let indexed = match &ahead {
                    Some(Err(_)) => index::Indexed::Dropped,
                    _ => index::Indexed::Kept,
                };
                Some((c, (ahead, indexed)))
            },
            |c, bytes| {
                if !changed(c) {
                    return (None, index::Indexed::Not);
                }
                match inspect_indexing(config, c, bytes) {
                    Ok((inspected, indexed)) => (Some(Ok(inspected)), indexed),
                    Err(f) => (Some(Err(f)), index::Indexed::Not),
                }
            },
        )?;
        index.update(found.iter().map(|(c, (_, indexed))| (c, indexed)));
        let from_index = found
            .iter()
            .filter(|(_, (_, i))| matches!(i, index::Indexed::Kept | index::Indexed::Dropped))
            .count();
        tracing::debug!("{from_index} of {} plugin files known unchanged by the folder index", found.len());
        let found = found.into_iter().map(|(c, (ahead, _))| (c, ahead)).collect();
        Ok(FolderRead { found, failures, from_index })
    }
}

/// The folder read on its own thread while the engine is built: at a warm start the two are
/// most of the work before the first answer, and neither needs the other. A read-ahead for a
/// host that follows the folder also watches it, so no change made after the read is missed
/// ([`Reloader::watch`](super::reload::Reloader::watch) takes that watch, an [`EarlyWatch`]):
/// the watch starts on a thread of its own while the folder is read (starting it waits on
/// notify's own thread, which on a busy machine took longer than the read), and that thread,
/// once the watch is up, looks at the folder again against what the read found. The read does
/// not wait for the watch: only the reloader's watch does, after the first load.
pub struct ReadAhead(ReadAheadState);

type ReadAndWatch = (std::io::Result<FolderRead>, Option<EarlyWatch>);

enum ReadAheadState {
    Running(std::thread::JoinHandle<ReadAndWatch>),
    Done(ReadAndWatch),
}

impl ReadAhead {
    /// Start reading `config.plugins_dir` (and checking its manifests) now; watch it too, from
    /// `watch` (see [`ReadAhead`]: no change made after the read is missed).
    pub fn start(config: Arc<Config>, watch: WatchFrom) -> ReadAhead {
        let work = move |config: &Config| {
            let (watch, found) = (watch != WatchFrom::Never)
                .then(|| EarlyWatch::start(config.plugins_dir.clone(), watch))
                .unzip();
            let read = FolderRead::inspect_all(config);
            if let (Ok(read), Some(found)) = (&read, found) {
                // A read with failures counts as a change: a rescan retries its files.
                let _ = found.send(
                    read.failures.is_empty().then(|| read.found.iter().map(|(c, _)| c.clone()).collect()),
                );
            }
            (read, watch)
        };
        let spawned = std::thread::Builder::new().name("toolhost-read".into()).spawn({
            let config = config.clone();
            move || work(&config)
        });
        ReadAhead(match spawned {
            Ok(handle) => ReadAheadState::Running(handle),
            // No thread to be had: read here, before the engine, as a start without read-ahead would.
            Err(_) => ReadAheadState::Done(work(&config)),
        })
    }

    /// What was read, and the watch if one was asked for (not waiting for the watch). A panic
    /// while reading is re-raised here.
    pub fn finish(self) -> ReadAndWatch {
        match self.0 {
            ReadAheadState::Running(handle) => handle.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            ReadAheadState::Done(done) => done,
        }
    }
}

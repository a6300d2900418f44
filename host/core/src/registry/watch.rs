//! Watching the plugins folder: its change events (hints to rescan), and a watch started
//! beside the first read of the folder that misses no change made after that read.

use crate::discovery;
use std::path::PathBuf;

/// A folder's change events, collected from the moment it starts (each only a hint to rescan)
/// until a [`Reloader::watch`](super::reload::Reloader::watch) acts on them.
pub struct FolderWatch {
    pub(super) watcher: notify::RecommendedWatcher,
    pub(super) rx: tokio::sync::mpsc::UnboundedReceiver<()>,
    tx: tokio::sync::mpsc::UnboundedSender<()>,
}

impl FolderWatch {
    /// Start watching `dir` (not its subfolders).
    pub fn start(dir: &std::path::Path) -> notify::Result<FolderWatch> {
        use notify::Watcher;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let events = tx.clone();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            match &res {
                // Reads (ours included: a rescan opens every file) are not changes.
                Ok(ev) if !is_change(ev) => return,
                Ok(_) => {}
                Err(e) => tracing::warn!("file watcher: {e}"),
            }
            let _ = events.send(());
        })?;
        watcher.watch(dir, notify::RecursiveMode::NonRecursive)?;
        Ok(FolderWatch { watcher, rx, tx })
    }

    /// Report a change as the watch would: the folder may have changed before the watch began
    /// (see [`crate::registry::ReadAhead`]).
    pub fn changed(&self) {
        let _ = self.tx.send(());
    }
}

/// A [`FolderWatch`] started beside a read of its folder ([`crate::registry::ReadAhead`]):
/// once the watch is up, the folder is looked at again against what the read found (sent on
/// `found`: `None` for a read with failures), and a file added, removed or changed since, or
/// any failure, is reported as a change the watch saw. A read that sends nothing (it failed)
/// leaves nothing to compare.
pub struct EarlyWatch(EarlyWatchState);

/// When a start's watch of its folder begins (see [`crate::registry::ReadAhead::start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// Not watched.
    Never,
    /// At once, beside the read.
    Now,
    /// Once a front end has listed the tools (or [`crate::registry::LINK_AFTER`] has passed):
    /// the watch's own start (notify's thread, the inotify set-up) then does not compete with
    /// the first `tools/list` for the CPU — about a sixth of a warm start of ten plugins on two
    /// CPUs. What changes before it begins is still seen: the watch compares the folder with
    /// what the read found.
    FirstListing,
}

/// What a read found, for an [`EarlyWatch`] to compare the folder with.
pub type ReadFound = Option<Vec<discovery::Candidate>>;

enum EarlyWatchState {
    Starting(std::thread::JoinHandle<notify::Result<FolderWatch>>),
    /// No thread to be had: started before the read, compared when waited for.
    Started(notify::Result<FolderWatch>, PathBuf, std::sync::mpsc::Receiver<ReadFound>),
}

impl EarlyWatch {
    /// Start watching `dir` on a thread of its own (from `from`); send what the read found on
    /// the sender.
    pub fn start(dir: PathBuf, from: WatchFrom) -> (EarlyWatch, std::sync::mpsc::Sender<ReadFound>) {
        let (tx, found) = std::sync::mpsc::channel();
        let on_thread = dir.clone();
        let spawned = std::thread::Builder::new().name("toolhost-watch".into()).spawn(move || {
            if from == WatchFrom::FirstListing {
                super::plugin::after_first_listing();
            }
            let watch = FolderWatch::start(&on_thread);
            Self::compare(&watch, &on_thread, &found);
            watch
        });
        match spawned {
            Ok(thread) => (EarlyWatch(EarlyWatchState::Starting(thread)), tx),
            Err(_) => {
                let (tx, found) = std::sync::mpsc::channel();
                (EarlyWatch(EarlyWatchState::Started(FolderWatch::start(&dir), dir, found)), tx)
            }
        }
    }

    /// The watch, once started and compared (a panic on its thread is re-raised here).
    pub fn wait(self) -> notify::Result<FolderWatch> {
        match self.0 {
            EarlyWatchState::Starting(thread) => {
                thread.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            }
            EarlyWatchState::Started(watch, dir, found) => {
                Self::compare(&watch, &dir, &found);
                watch
            }
        }
    }

    fn compare(
        watch: &notify::Result<FolderWatch>,
        dir: &std::path::Path,
        found: &std::sync::mpsc::Receiver<ReadFound>,
    ) {
        let (Ok(watch), Ok(found)) = (watch, found.recv()) else { return };
        if !found.is_some_and(|found| discovery::unchanged(dir, found.iter())) {
            watch.changed();
        }
    }
}

/// Whether a file-system event can change what is in a folder (access events cannot).
pub fn is_change(ev: &notify::Event) -> bool {
    use notify::EventKind;
    !matches!(ev.kind, EventKind::Access(_))
}

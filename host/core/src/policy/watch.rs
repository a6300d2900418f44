//! The policy in force, and its reload: the file is read again when it changes (its folder is
//! watched: editors replace a file rather than write it in place), and a file with an error
//! keeps the last good policy, saying where the error is.

use super::{Policy, PolicyError};
use arc_swap::ArcSwapOption;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The policy in force (`None`: no `[policy] file`, everything allowed).
#[derive(Debug, Default)]
pub struct Policies {
    file: Option<PathBuf>,
    current: ArcSwapOption<Policy>,
}

impl Policies {
    /// The policy of `file` (none without one); an error in it is the caller's to report: with
    /// a policy configured and not readable, nothing would be allowed.
    pub fn load(file: Option<&Path>) -> Result<Policies, PolicyError> {
        let current = match file {
            Some(f) => Some(Arc::new(Policy::load(f)?)),
            None => None,
        };
        Ok(Policies { file: file.map(Path::to_path_buf), current: ArcSwapOption::new(current) })
    }

    /// The policy in force now.
    pub fn current(&self) -> Option<Arc<Policy>> {
        self.current.load_full()
    }

    /// Read the file again: the new policy is in force, or (on an error) the last good one
    /// stays and the error says where.
    pub fn reload(&self) -> Result<(), PolicyError> {
        let Some(file) = &self.file else { return Ok(()) };
        let policy = Policy::load(file)?;
        tracing::info!("policy {}: {} rules in force", file.display(), policy.len());
        self.current.store(Some(Arc::new(policy)));
        Ok(())
    }

    /// Reload on every change of the file, `debounce` after the last event of a burst. Keep
    /// the handle: dropping it stops the watch. `None` without a policy file.
    pub fn watch(self: &Arc<Self>, debounce: Duration) -> notify::Result<Option<PolicyWatch>> {
        use notify::Watcher;
        let Some(file) = self.file.clone() else { return Ok(None) };
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let name = file.file_name().map(|n| n.to_os_string());
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let ours = res.is_ok_and(|ev| {
                !matches!(ev.kind, notify::EventKind::Access(_))
                    && ev.paths.iter().any(|p| p.file_name().map(|n| n.to_os_string()) == name)
            });
            if ours {
                let _ = tx.send(());
            }
        })?;
        watcher.watch(&dir, notify::RecursiveMode::NonRecursive)?;
        let me = self.clone();
        let task = tokio::spawn(async move {
            while rx.recv().await.is_some() {
                while let Ok(Some(())) = tokio::time::timeout(debounce, rx.recv()).await {}
                if let Err(e) = me.reload() {
                    tracing::warn!("{e}; the policy loaded before stays in force");
                }
            }
        });
        Ok(Some(PolicyWatch { _watcher: watcher, task }))
    }
}

/// Keeps a policy file watched; dropping it stops the watch.
pub struct PolicyWatch {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PolicyWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

//! Writing files so that nobody sees half of one, and where toolhost keeps its own files.
//!
//! Every file toolhost writes where something may be reading or watching — a plugin into a
//! plugins folder, the approvals record, the compile cache (whose entries are mapped by running
//! hosts), the lock file, a built component — goes through [`write_atomic`]; a folder of
//! several files (an installed toolchain, the bundled SDKs) through [`rename_dir_into_place`].

use std::io::Write;
use std::path::{Path, PathBuf};

/// Write `bytes` to `path` through a hidden temporary file in the same folder (`.NAME.PID.N.tmp`:
/// discovery skips dotfiles and `.tmp` files) and a rename, so a reader or watcher never sees
/// half a file and a failure leaves nothing behind. Each write has a temporary file of its own
/// (`N` counts this process's writes): two writes of one file at once each rename a whole one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Changes of read-changed-written files in this process, one at a time.
static CHANGING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A change of a file that is read, changed and written whole (the grants file, the approvals
/// record) under way: while it lasts no other change is, in this process (a lock) or another
/// (`toolhost revoke` or `approve` beside a server: an exclusive lock on the file's folder —
/// the file itself is replaced by each write, so it cannot hold one, and a lock file of its own
/// would be left behind in the operator's folder). Each change then reads the file as the last
/// one left it: two at once would each write it without the other's. Where the folder cannot
/// be opened (not on Unix) changes wait for each other in this process only.
pub struct Changing {
    _in_process: std::sync::MutexGuard<'static, ()>,
    _across: Option<std::fs::File>,
}

/// Begin a change of the file at `path` (see [`Changing`]); it ends when the value is dropped.
pub fn changing(path: &Path) -> Changing {
    let in_process = CHANGING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let across = std::fs::File::open(dir).ok();
    if let Some(d) = &across {
        // Released when the folder is closed, at the end of the change.
        let _ = d.lock();
    }
    Changing { _in_process: in_process, _across: across }
}

/// Move the finished folder `tmp` to `dir`. When another process put the same content there
/// first (the folder names a version or a content hash), theirs is kept and `tmp` removed.
pub fn rename_dir_into_place(tmp: &Path, dir: &Path) -> std::io::Result<()> {
    match std::fs::rename(tmp, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.is_dir() => {
            let _ = std::fs::remove_dir_all(tmp);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(tmp);
            Err(e)
        }
    }
}

/// Create `dir` (and parents) readable only by this user: toolhost's own caches (compiled
/// code, the folder index), which it trusts as it trusts itself.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// `$VAR/toolhost` when the XDG variable `var` is set (and not empty), else
/// `$HOME/HOME_FALLBACK/toolhost`: the one lookup of toolhost's cache and state folders.
fn xdg(var: &str, home_fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(home_fallback))
        })
        .map(|d| d.join("toolhost"))
}

/// `$XDG_CACHE_HOME/toolhost`, else `$HOME/.cache/toolhost` (compiled code, toolchains).
pub fn cache_dir() -> Option<PathBuf> {
    xdg("XDG_CACHE_HOME", ".cache")
}

/// `$XDG_STATE_HOME/toolhost`, else `$HOME/.local/state/toolhost` (the audit trail).
pub fn state_dir() -> Option<PathBuf> {
    xdg("XDG_STATE_HOME", ".local/state")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_leaves_only_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.wasm");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.wasm"]);
        assert!(write_atomic(&dir.path().join("missing/a.wasm"), b"x").is_err());
    }

    #[test]
    fn a_folder_already_in_place_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (tmp, to) = (dir.path().join(".tmp1"), dir.path().join("v1"));
        std::fs::create_dir(&tmp).unwrap();
        rename_dir_into_place(&tmp, &to).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        std::fs::write(tmp.join("x"), b"").unwrap();
        std::fs::write(to.join("mine"), b"").unwrap();
        rename_dir_into_place(&tmp, &to).unwrap();
        assert!(to.join("mine").exists() && !tmp.exists());
    }
}

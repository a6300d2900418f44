//! Finding plugin files: `*.wasm` in the plugins folder, dotfiles and editor/temp files ignored,
//! oversized files refused, results in file-name order so every later rule is deterministic.

use std::path::{Path, PathBuf};

/// A plugin file as read from the folder: where it is and what its bytes hash to. The bytes
/// themselves are not kept (a warm start needs only the manifest, read while they are in hand:
/// [`scan`]); what needs them later reads them again ([`Candidate::read_again`]).
#[derive(Debug, Clone)]
pub struct Candidate {
    pub path: PathBuf,
    /// How the file stood just before it was read (`None` where the platform has no change
    /// time): what the folder index ([`crate::registry::index`]) knows it by.
    pub stamp: Option<Stamp>,
    /// SHA-256 of the file's bytes, computed once: it keys the approvals and the reload's
    /// unchanged-file check.
    pub hash: [u8; 32],
    /// SHA-256 of the code alone (toolhost's own custom sections left out,
    /// [`toolhost_spec::sections::code_sha256`]): it keys the compile cache, so a new manifest
    /// or signature on the same code is not compiled again.
    pub code: [u8; 32],
}

impl Candidate {
    /// The file name, for messages.
    pub fn file_name(&self) -> String {
        file_name(&self.path)
    }

    /// The file's bytes, read again (to compile them, say): they must still hash to
    /// [`Candidate::hash`], so what is compiled is what was checked. A file changed or removed
    /// since is an error saying so (the folder's watch reloads it).
    pub fn read_again(&self, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
        let bytes = read_capped(&self.path, max_bytes)?.ok_or(ReadError::Removed)?;
        if content_hash(&bytes) != self.hash {
            return Err(ReadError::Changed);
        }
        Ok(bytes)
    }
}

/// Why a plugin file could not be read (the file is named by the caller: [`LoadFailure`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read: {0}")]
    Io(std::io::Error),
    /// Over `limits.max_plugin_mb` (`len`, `limit`: bytes).
    #[error(
        "file is {} MiB, over the {} MiB limit (limits.max_plugin_mb)",
        .len.div_ceil(1024 * 1024), .limit / (1024 * 1024)
    )]
    TooLarge { len: u64, limit: u64 },
    #[error("file grew over the {} MiB limit while being read", .limit / (1024 * 1024))]
    Grew { limit: u64 },
    #[error("was removed while loading")]
    Removed,
    #[error("changed while loading; the new version is read on its next change")]
    Changed,
}

/// What tells one version of a file from another without reading it: its device, inode and
/// size, and its modification and change times. The change time moves on every write, rename
/// and `chmod`, and no program can set it (only the clock can: a clock set back is the one way
/// to fool it), so a file whose stamp is unchanged holds the bytes it held when stamped — once
/// the change time has *settled* (the kernel's clock for it ticks coarsely: a write in the same
/// tick as the stamp would keep it; see [`Stamp::settled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    /// Modification time, seconds and nanoseconds since the epoch.
    pub mtime: (i64, i64),
    /// Change time, seconds and nanoseconds since the epoch.
    pub ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of a file's metadata (`None` off Unix: no change time there).
    pub fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(Stamp {
                dev: meta.dev(),
                ino: meta.ino(),
                len: meta.len(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ctime: (meta.ctime(), meta.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }

    /// Whether both times are at least `margin` before `now`: no write since can have left
    /// them as they are (the kernel's file clock ticks in milliseconds; `margin` is seconds).
    pub fn settled(&self, now: std::time::SystemTime, margin: std::time::Duration) -> bool {
        let Ok(now) = now.duration_since(std::time::UNIX_EPOCH) else { return false };
        let before = |(secs, nanos): (i64, i64)| {
            let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) else { return false };
            std::time::Duration::new(secs, 0).saturating_add(std::time::Duration::from_nanos(nanos.into()))
                + margin
                <= now
        };
        before(self.mtime) && before(self.ctime)
    }
}

/// A plugin file that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LoadFailure {
    pub file: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.reason)
    }
}

/// SHA-256 of a plugin file's bytes.
pub use toolhost_spec::digest::sha256 as content_hash;

pub fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string())
}

/// Whether a directory entry name is a plugin candidate.
pub fn is_candidate_name(name: &str) -> bool {
    name.ends_with(".wasm")
        && name.len() > ".wasm".len()
        && !name.starts_with('.')
        && !name.starts_with('#')
        && !name.starts_with('~')
        && !name.contains(".tmp")
        && !name.contains(".part")
}

/// What [`scan`] found: each readable file with what `then` made of it, and the failures.
pub type Scanned<T> = (Vec<(Candidate, T)>, Vec<LoadFailure>);

/// [`scan`], asking `known` first about each file by its path and stamp: a file it knows is
/// not read (its candidate and result are `known`'s).
pub fn scan_known<T: Send>(
    dir: &Path,
    max_bytes: u64,
    known: impl Fn(&Path, &Stamp) -> Option<(Candidate, T)>,
    then: impl Fn(&Candidate, &[u8]) -> T + Sync,
) -> std::io::Result<Scanned<T>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot read plugins folder {}: {e}", dir.display()))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| is_candidate_name(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    // A file `known` knows costs a `stat` and what `known` does: asked here, in order, on this
    // thread (at a warm start every file is known, and a thread would cost more than it saves).
    // The rest are read and hashed, which is most of a cold start's work: those are shared out
    // over the cores.
    let mut results: Vec<Option<Result<(Candidate, T), LoadFailure>>> = Vec::with_capacity(paths.len());
    let mut to_read = Vec::new();
    for path in &paths {
        let meta = match regular_capped(path, max_bytes) {
            Ok(Some(meta)) => meta,
            Ok(None) => continue, // a directory named *.wasm, or a file that vanished
            Err(e) => {
                results.push(Some(Err(LoadFailure { file: path.clone(), reason: e.to_string() })));
                continue;
            }
        };
        let stamp = Stamp::of(&meta);
        match stamp.as_ref().and_then(|s| known(path, s)) {
            Some(hit) => results.push(Some(Ok(hit))),
            None => {
                to_read.push((results.len(), path, meta, stamp));
                results.push(None);
            }
        }
    }
    let read = crate::parallel::map(&to_read, |(_, path, meta, stamp)| {
        BUFFER.with_borrow_mut(|bytes| match read_into(path, meta, max_bytes, bytes) {
            Ok(()) => {
                let hash = content_hash(bytes);
                let code = toolhost_spec::sections::code_sha256(bytes, hash);
                let c = Candidate { hash, code, stamp: *stamp, path: (*path).clone() };
                let t = then(&c, bytes);
                Ok((c, t))
            }
            Err(e) => Err(LoadFailure { file: (*path).clone(), reason: e.to_string() }),
        })
    });
    for ((slot, ..), r) in to_read.iter().zip(read) {
        results[*slot] = Some(r);
    }
    let mut found = Vec::new();
    let mut failures = Vec::new();
    for r in results.into_iter().flatten() {
        match r {
            Ok(c) => found.push(c),
            Err(f) => failures.push(f),
        }
    }
    Ok((found, failures))
}

/// Whether `dir` holds exactly the regular candidate files of `found`, each with the same stamp
/// (`false` when that cannot be told: a file without a stamp, or a folder not readable).
pub fn unchanged<'a>(dir: &Path, found: impl Iterator<Item = &'a Candidate>) -> bool {
    let mut stamps: std::collections::BTreeMap<&Path, Option<Stamp>> =
        found.map(|c| (c.path.as_path(), c.stamp)).collect();
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        if !is_candidate_name(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        let meta = match std::fs::metadata(&path) {
            Ok(meta) if !meta.is_file() => continue, // a directory named *.wasm, as the scan skips
            Ok(meta) => meta,
            Err(_) => return false,
        };
        match stamps.remove(path.as_path()) {
            Some(Some(stamp)) if Stamp::of(&meta) == Some(stamp) => {}
            _ => return false,
        }
    }
    stamps.is_empty()
}

/// Read every candidate in `dir`, in file-name order, and give each to `then` with its bytes
/// right after it is read, on the same core (while the bytes are in the cache: the manifest
/// check at start-up). Files over `max_bytes` and unreadable files become failures; a missing
/// folder is an error naming it. The bytes are read into one buffer per thread and not kept: a
/// fresh buffer per file costs a page fault per 4 KiB, which was most of a warm start's reading.
pub fn scan<T: Send>(
    dir: &Path,
    max_bytes: u64,
    then: impl Fn(&Candidate, &[u8]) -> T + Sync,
) -> std::io::Result<Scanned<T>> {
    scan_known(dir, max_bytes, |_, _| None, then)
}

/// Read a whole file if it is a regular file no larger than `max_bytes`.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Option<Vec<u8>>, ReadError> {
    let mut bytes = Vec::new();
    Ok(read_capped_into(path, max_bytes, &mut bytes)?.then_some(bytes))
}

/// [`read_capped`] into `bytes` (its old contents replaced, its capacity reused); `false`: not
/// a regular file, or gone.
fn read_capped_into(path: &Path, max_bytes: u64, bytes: &mut Vec<u8>) -> Result<bool, ReadError> {
    let Some(meta) = regular_capped(path, max_bytes)? else { return Ok(false) };
    read_into(path, &meta, max_bytes, bytes)?;
    Ok(true)
}

/// The metadata of `path` if it is a regular file no larger than `max_bytes` (`None`: not a
/// regular file, or gone).
fn regular_capped(path: &Path, max_bytes: u64) -> Result<Option<std::fs::Metadata>, ReadError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::Io(e)),
    };
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > max_bytes {
        return Err(ReadError::TooLarge { len: meta.len(), limit: max_bytes });
    }
    Ok(Some(meta))
}

/// Read the file `meta` describes into `bytes`, at most `max_bytes`.
fn read_into(
    path: &Path,
    meta: &std::fs::Metadata,
    max_bytes: u64,
    bytes: &mut Vec<u8>,
) -> Result<(), ReadError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    bytes.clear();
    bytes.reserve(meta.len() as usize);
    // Read at most one byte past the cap, so a file growing while we read is still bounded.
    file.take(max_bytes + 1).read_to_end(bytes).map_err(ReadError::Io)?;
    if bytes.len() as u64 > max_bytes {
        bytes.clear();
        return Err(ReadError::Grew { limit: max_bytes });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_names() {
        for ok in ["files.wasm", "a-b_c.wasm"] {
            assert!(is_candidate_name(ok), "{ok}");
        }
        for no in [
            ".files.wasm",
            ".#files.wasm",
            "files.wasm~",
            "files.wasm.tmp",
            "files.tmp.wasm",
            "x.part.wasm",
            ".wasm",
            "files.cwasm",
            "files.wat",
            "#files.wasm#",
        ] {
            assert!(!is_candidate_name(no), "{no}");
        }
    }

    #[test]
    fn scan_orders_filters_and_caps() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.wasm"), b"bbbb").unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"aa").unwrap();
        std::fs::write(dir.path().join(".hidden.wasm"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("dir.wasm")).unwrap();
        let (found, failures) = scan(dir.path(), 3, |_, bytes| bytes.to_vec()).unwrap();
        let names: Vec<_> = found.iter().map(|(c, bytes)| (c.file_name(), bytes.as_slice())).collect();
        assert_eq!(names, [("a.wasm".to_string(), &b"aa"[..])]);
        assert_eq!(failures.len(), 1);
        assert!(failures[0].reason.contains("limit"), "{}", failures[0]);
        let err = scan(&dir.path().join("missing"), 3, |_, _| ()).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[test]
    fn a_folder_is_unchanged_only_while_it_holds_exactly_the_files_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"aa").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("dir.wasm")).unwrap();
        let read = || scan(dir.path(), 100, |_, _| ()).unwrap().0;
        let found = read();
        let unchanged = |found: &[(Candidate, ())]| unchanged(dir.path(), found.iter().map(|(c, _)| c));
        assert!(unchanged(&found), "nothing changed: a directory and other names are not files");
        std::fs::write(dir.path().join("b.wasm"), b"b").unwrap();
        assert!(!unchanged(&found), "a file added");
        let found = read();
        assert!(unchanged(&found));
        std::fs::write(dir.path().join("a.wasm"), b"changed").unwrap();
        assert!(!unchanged(&found), "a file rewritten");
        let found = read();
        std::fs::remove_file(dir.path().join("b.wasm")).unwrap();
        assert!(!unchanged(&found), "a file removed");
        assert!(!unchanged(&read()[..0]), "a file the read did not see");
        assert!(!super::unchanged(&dir.path().join("missing"), std::iter::empty()), "no folder to look at");
    }

    #[test]
    fn a_reused_buffer_holds_only_the_last_file() {
        let dir = tempfile::tempdir().unwrap();
        let (long, short) = (dir.path().join("long.wasm"), dir.path().join("short.wasm"));
        std::fs::write(&long, vec![7u8; 10_000]).unwrap();
        std::fs::write(&short, b"ab").unwrap();
        let mut buffer = Vec::new();
        assert!(read_capped_into(&long, 1 << 20, &mut buffer).unwrap());
        assert!(read_capped_into(&short, 1 << 20, &mut buffer).unwrap());
        assert_eq!(buffer, b"ab");
        assert!(!read_capped_into(&dir.path().join("gone.wasm"), 1 << 20, &mut buffer).unwrap());
    }

    #[test]
    fn a_stamp_settles_once_both_times_are_old_enough() {
        let stamp = Stamp { dev: 1, ino: 2, len: 3, mtime: (1_000, 5), ctime: (1_000, 5) };
        let at = |secs| std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let margin = std::time::Duration::from_secs(2);
        assert!(!stamp.settled(at(1_000), margin));
        assert!(!stamp.settled(at(1_002), margin), "5 ns short of the margin");
        assert!(stamp.settled(at(1_003), margin));
        assert!(!Stamp { ctime: (1_002, 0), ..stamp }.settled(at(1_003), margin), "a recent change time");
        assert!(!Stamp { mtime: (-1, 0), ..stamp }.settled(at(1_003), margin), "a time before the epoch");
    }

    #[test]
    fn reading_again_refuses_a_changed_or_removed_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"one").unwrap();
        let (found, _) = scan(dir.path(), 1 << 20, |_, _| ()).unwrap();
        let c = &found[0].0;
        assert_eq!(c.read_again(1 << 20).unwrap(), b"one");
        std::fs::write(&c.path, b"two").unwrap();
        let e = c.read_again(1 << 20).unwrap_err();
        assert!(matches!(e, ReadError::Changed), "{e}");
        std::fs::remove_file(&c.path).unwrap();
        let e = c.read_again(1 << 20).unwrap_err();
        assert!(matches!(e, ReadError::Removed), "{e}");
    }
}

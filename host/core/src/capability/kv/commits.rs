//! What a SQLite store's `get`s read, kept while no one has committed to the store since.
//!
//! In WAL mode every connection to a database — in this process or any other — shares the
//! *wal-index*, the `-shm` file beside it, and every commit rewrites the wal-index header at its
//! start: two copies of 48 bytes, the second written first, holding a change counter, the last
//! valid frame, the log's checksums and salts (<https://sqlite.org/walformat.html>). A header
//! read whole, with its two copies equal, that is byte for byte the one read before means that
//! nothing was committed in between. So a `get` first reads those 96 bytes with one `pread` of
//! the file (SQLite maps it shared; a read of the file sees the same pages): if they are what
//! they were when the value was kept, the value is still the store's. Otherwise everything
//! kept goes and the store is asked, and its answer is kept under the header read before the
//! query. That is true: the query read the state of that header or a later one, and a later
//! one has a header of its own, which the next `get` finds changed (and so forgets what was
//! kept) — a kept value is served only while the header is the one read before its query,
//! that is while the store is in the very state the query read. A header being written (its
//! copies differ) or unreadable keeps nothing and asks. Writes go to SQLite as ever; this
//! process's own commits change the header like anyone's.

use crate::kept::Kept;
use std::fs::File;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// The wal-index header: two copies of 48 bytes.
const HEADER: usize = 96;

/// The header's `isInit` byte (offset 12 of each copy): 0 until the wal-index is built.
const IS_INIT: usize = 12;

/// A SQLite store's wal-index, watched, and the values read while it did not change.
pub(super) struct Commits {
    shm: File,
    /// The header last read, and the cache it stands for.
    seen: Mutex<[u8; HEADER]>,
    kept: Kept,
}

impl Commits {
    /// Watch the wal-index of the database at `db`, keeping at most `budget` bytes. `None` when
    /// it has none (not in WAL mode) or cannot be read: every `get` then asks SQLite.
    pub(super) fn open(db: &Path, budget: usize) -> Option<Commits> {
        let mut shm = db.as_os_str().to_owned();
        shm.push("-shm");
        let shm = File::open(shm).ok()?;
        Some(Commits { shm, seen: Mutex::new([0; HEADER]), kept: Kept::new(budget, Duration::MAX) })
    }

    /// The epoch of what is kept, for the store as it is now; `None` if that cannot be told.
    fn now(&self) -> Option<u64> {
        let mut header = [0u8; HEADER];
        read_at(&self.shm, &mut header)?;
        let (first, second) = header.split_at(HEADER / 2);
        if first != second || first[IS_INIT] == 0 {
            return None;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if *seen != header {
            *seen = header;
            self.kept.invalidate(None);
        }
        Some(self.kept.epoch())
    }

    /// `key` of `bucket`: kept, or `read` from the store and kept under the header read before.
    pub(super) fn get<E>(
        &self,
        bucket: &str,
        key: &str,
        read: impl FnOnce() -> Result<Option<Vec<u8>>, E>,
    ) -> Result<Option<Vec<u8>>, E> {
        let Some(epoch) = self.now() else { return read() };
        if let Some(value) = self.kept.get(bucket, key) {
            return Ok(value);
        }
        let value = read()?;
        self.kept.keep(bucket, key, &value, epoch);
        Ok(value)
    }
}

#[cfg(unix)]
fn read_at(file: &File, into: &mut [u8]) -> Option<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, into, 0).ok()
}

/// Elsewhere nothing is kept.
#[cfg(not(unix))]
fn read_at(_: &File, _: &mut [u8]) -> Option<()> {
    None
}

impl std::fmt::Debug for Commits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Commits")
    }
}

#[cfg(test)]
mod tests {
    use super::super::settings::KvLimits;
    use super::super::sqlite::SqliteStore;

    /// Two connections to one file, as two hosts (or a host and `toolhost kv`) have: what one
    /// commits, the other reads at its next `get`, whatever it kept.
    #[test]
    fn a_kept_value_gives_way_to_any_connections_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.sqlite3");
        let open = || SqliteStore::open("notes", &path, false, KvLimits::default()).unwrap();
        let (a, b) = (open(), open());
        let kept = |s: &SqliteStore| {
            s.commits().expect("a store in WAL mode keeps what it read").kept.get("default", "k")
        };
        for n in 0..50 {
            let value = n.to_string();
            b.set("default", "k", value.as_bytes()).unwrap();
            assert_eq!(a.get("default", "k").unwrap().as_deref(), Some(value.as_bytes()));
            assert_eq!(kept(&a), Some(Some(value.clone().into_bytes())), "kept");
            assert_eq!(a.get("default", "k").unwrap().as_deref(), Some(value.as_bytes()));
            a.set("default", "k", b"a's").unwrap();
            assert_eq!(b.get("default", "k").unwrap().as_deref(), Some(&b"a's"[..]));
            b.delete("default", "k").unwrap();
            assert_eq!(a.get("default", "k").unwrap(), None);
        }
        // Another connection writing while this one reads: a `get` begun after a write was
        // acknowledged never answers with a value from before it.
        let done = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for n in 1..=300u64 {
                    b.set("race", "k", n.to_string().as_bytes()).unwrap();
                    done.store(n, std::sync::atomic::Ordering::SeqCst);
                }
            });
            while done.load(std::sync::atomic::Ordering::SeqCst) < 300 {
                let acknowledged = done.load(std::sync::atomic::Ordering::SeqCst);
                let read =
                    a.get("race", "k").unwrap().map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                assert!(read >= acknowledged, "read {read} after {acknowledged} was acknowledged");
            }
        });
        assert_eq!(a.get("race", "k").unwrap().as_deref(), Some(&b"300"[..]));
        // A write that changes nothing commits nothing, and what was kept is still true.
        a.set("other", "x", b"1").unwrap();
        assert_eq!(b.get("other", "x").unwrap().as_deref(), Some(&b"1"[..]));
        a.set("other", "x", b"1").unwrap();
        assert_eq!(b.get("other", "x").unwrap().as_deref(), Some(&b"1"[..]));
    }
}

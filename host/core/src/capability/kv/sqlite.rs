//! The embedded backend: one SQLite file per plugin (`DIR/PLUGIN.sqlite3`), in WAL mode.
//!
//! Why SQLite: every write is one transaction, so an acknowledged write survives a kill of the
//! host (the WAL holds it before `COMMIT` returns) and a batch is all or nothing; a file that
//! is not a database is refused when it is opened, naming it; a full disk fails the write and
//! rolls it back. `synchronous = NORMAL` by default (a power failure may lose the last
//! writes), `FULL` under `[kv] fsync = true` (each write synced before it is acknowledged).
//!
//! The store's usage (keys, bytes of keys and values) is kept in a row of its own, updated in
//! the write's transaction, so the bounds are checked without a scan and hold across
//! processes sharing the file. A `get` is answered from what an earlier one read while no
//! connection has committed since, as the store's wal-index tells (`commits.rs`).
//!
//! An operation runs on the async worker that serves its call only while it need not wait
//! ([`SqliteStore::with_conn`]): one that must wait — for this host's connection, held by
//! another call, or for another connection's write (a second host, `toolhost kv import`) —
//! waits off the workers, so a store that is busy holds up its own calls and no others.

use super::commits::Commits;
use super::error::KvError;
use super::settings::{KvLimits, Limit};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Statements a store's connection keeps prepared: more than its operations use.
const STATEMENT_CACHE: usize = 32;

/// Keys returned by one `list-keys` page.
pub const KEYS_PER_PAGE: usize = 1000;

/// Pages in the write-ahead log past which a commit checkpoints it (SQLite's default).
const CHECKPOINT_PAGES: i32 = 1000;

/// How long an operation waits for another connection's write (SQLite's busy timeout) before
/// it fails, `database is locked`.
const BUSY_WAIT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kv (
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (bucket, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    keys INTEGER NOT NULL,
    bytes INTEGER NOT NULL
);
INSERT OR IGNORE INTO usage (id, keys, bytes) VALUES (1, 0, 0);
";

/// A key and its value.
pub type Pair = (String, Vec<u8>);

/// What a compare-and-swap came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    Done,
    /// Not swapped: the key holds this now (`None`: absent).
    Holds(Option<Vec<u8>>),
}

/// A bucket of a store, for the operator.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BucketInfo {
    pub name: String,
    pub keys: u64,
    /// Bytes of its keys and values.
    pub bytes: u64,
}

/// One plugin's SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    plugin: String,
    path: PathBuf,
    limits: KvLimits,
    conn: Mutex<Connection>,
    /// What `get`s read, while no one commits (`None`: every `get` asks SQLite).
    commits: Option<Commits>,
}

/// What a write changes in the store's usage.
#[derive(Default)]
struct Delta {
    keys: i64,
    bytes: i64,
}

impl SqliteStore {
    /// Open (or create) the store of `plugin` at `path`. A file that is not a store is refused
    /// here, naming it, and left as it is.
    pub fn open(plugin: &str, path: &Path, fsync: bool, limits: KvLimits) -> Result<SqliteStore, KvError> {
        let unavailable =
            |why: String| KvError::Unavailable { plugin: plugin.into(), at: path.display().to_string(), why };
        if let Some(dir) = path.parent() {
            create_private_dir(dir)
                .map_err(|e| unavailable(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut conn = Connection::open(path).map_err(|e| unavailable(e.to_string()))?;
        // Every statement of an operation is cached (a dozen, with a transaction's own).
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // Whether the store is in WAL mode.
        let setup = || -> rusqlite::Result<bool> {
            conn.busy_timeout(BUSY_WAIT)?;
            let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            let wal = mode.eq_ignore_ascii_case("wal");
            if !wal {
                tracing::warn!("{}: SQLite kept journal mode {mode}", path.display());
            }
            conn.execute_batch(if fsync {
                "PRAGMA synchronous = FULL;"
            } else {
                "PRAGMA synchronous = NORMAL;"
            })?;
            conn.execute_batch(SCHEMA)?;
            Ok(wal)
        };
        // Hosts opening one new store at once (a fleet on one disk, tests) may find it locked
        // where SQLite does not wait (the switch to WAL, a schema read turned write): setup
        // is idempotent, so it is tried again for as long as the busy timeout.
        let since = std::time::Instant::now();
        let mut done = setup();
        while let Err(e) = &done
            && e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
            && since.elapsed() < BUSY_WAIT
        {
            std::thread::sleep(Duration::from_millis(5));
            done = setup();
        }
        let wal = done.map_err(|e| {
            let hint = match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
                    "; move the file away (it may be restored from a backup) and the plugin starts with an empty store"
                }
                _ => "",
            };
            unavailable(format!("{e}{hint}"))
        })?;
        // From here SQLite never waits on a worker: an operation that finds the lock taken
        // waits off the workers, the busy timeout set for that wait alone (`with_conn`).
        conn.busy_timeout(Duration::ZERO).map_err(|e| unavailable(e.to_string()))?;
        // SQLite's own checkpoint of a grown log would run in the commit that grew it, on the
        // worker: writing the log's pages into the database and syncing it, milliseconds, or
        // seconds after a large import. This hook replaces it, the same checkpoint at the same
        // size, off the workers.
        let name = plugin.to_string();
        conn.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages| {
            if pages >= CHECKPOINT_PAGES
                && let Err(e) = super::off_the_worker(|| wal.checkpoint())
            {
                // The commit stands: a checkpoint not made now is made at a later commit.
                tracing::warn!(plugin = name, "the key-value store's checkpoint failed: {e}");
            }
            Ok(())
        }))
        .map_err(|e| unavailable(e.to_string()))?;
        // Out of WAL mode a `-shm` file left from before is no one's index: nothing is kept.
        let commits = if wal { Commits::open(path, super::KEPT_BYTES) } else { None };
        Ok(SqliteStore { plugin: plugin.into(), path: path.into(), limits, conn: Mutex::new(conn), commits })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn failed(&self, e: rusqlite::Error) -> KvError {
        KvError::Unavailable {
            plugin: self.plugin.clone(),
            at: self.path.display().to_string(),
            why: e.to_string(),
        }
    }

    /// [`Self::with_conn`] off the async workers from the start: for the operator's reads of a
    /// whole store (the console's sizes, an export), milliseconds or more.
    fn scan<T>(&self, f: impl Fn(&Connection) -> Result<T, Failure>) -> Result<T, KvError> {
        super::off_the_worker(|| self.with_conn(f))
    }

    /// Run `f` on the connection: at once when the connection is free and SQLite need not wait
    /// for another connection's write (here its busy timeout is 0) — the usual case, a few
    /// microseconds on the worker. Otherwise off the async workers (`block_in_place`): waiting
    /// for the connection, then for up to [`BUSY_WAIT`] for the other write, and running `f`
    /// again from the start (what SQLite refused as busy did nothing: a write's transaction
    /// is rolled back). A durable write's `fdatasync` (`[kv] fsync = true`) is waited for on
    /// the worker: a bounded few milliseconds, where moving off the worker would cost every
    /// write several microseconds.
    fn with_conn<T>(&self, f: impl Fn(&Connection) -> Result<T, Failure>) -> Result<T, KvError> {
        if let Ok(conn) = self.conn.try_lock() {
            match f(&conn) {
                Err(Failure::Sql(e)) if busy(&e) => {}
                done => return done.map_err(|e| self.failure(e)),
            }
        }
        super::off_the_worker(|| {
            let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
            let waited = conn.busy_timeout(BUSY_WAIT).map_err(Failure::Sql).and_then(|()| f(&conn));
            let _ = conn.busy_timeout(Duration::ZERO);
            waited.map_err(|e| self.failure(e))
        })
    }

    /// The value of `key`: kept from an earlier `get` while no one committed since (see
    /// `commits.rs`), or read.
    pub fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        match &self.commits {
            Some(commits) => commits.get(bucket, key, || self.select(bucket, key)),
            None => self.select(bucket, key),
        }
    }

    /// What `get`s keep, if they do.
    #[cfg(test)]
    pub(super) fn commits(&self) -> Option<&Commits> {
        self.commits.as_ref()
    }

    fn select(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.with_conn(|conn| read(conn, bucket, key))
    }

    pub fn exists(&self, bucket: &str, key: &str) -> Result<bool, KvError> {
        self.with_conn(|conn| {
            let mut st = conn.prepare_cached("SELECT 1 FROM kv WHERE bucket = ?1 AND key = ?2")?;
            Ok(st.exists(params![bucket, key])?)
        })
    }

    /// Up to `limit` keys of `bucket` after `after`, in order, and the cursor of the next
    /// page (the last key given) when there may be more.
    pub fn list_keys(
        &self,
        bucket: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>), KvError> {
        let mut keys = self.with_conn(|conn| {
            let mut st = conn.prepare_cached(
                "SELECT key FROM kv WHERE bucket = ?1 AND (?2 IS NULL OR key > ?2) ORDER BY key LIMIT ?3",
            )?;
            let rows = st.query_map(params![bucket, after, limit as i64 + 1], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        let more = keys.len() > limit;
        keys.truncate(limit);
        let cursor = if more { keys.last().cloned() } else { None };
        Ok((keys, cursor))
    }

    pub fn set(&self, bucket: &str, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.write(|tx, d| put(tx, d, bucket, key, value))
    }

    pub fn delete(&self, bucket: &str, key: &str) -> Result<(), KvError> {
        self.write(|tx, d| remove(tx, d, bucket, key))
    }

    pub fn get_many(&self, bucket: &str, keys: &[String]) -> Result<Vec<Option<Pair>>, KvError> {
        keys.iter().map(|k| Ok(self.get(bucket, k)?.map(|v| (k.clone(), v)))).collect()
    }

    /// Every pair or none.
    pub fn set_many(&self, bucket: &str, pairs: &[Pair]) -> Result<(), KvError> {
        self.write(|tx, d| pairs.iter().try_for_each(|(k, v)| put(tx, d, bucket, k, v)))
    }

    /// Every key or none.
    pub fn delete_many(&self, bucket: &str, keys: &[String]) -> Result<(), KvError> {
        self.write(|tx, d| keys.iter().try_for_each(|k| remove(tx, d, bucket, k)))
    }

    /// Add `delta` to the counter at `key` (absent: 0), kept as decimal text.
    pub fn increment(&self, bucket: &str, key: &str, delta: i64) -> Result<i64, KvError> {
        self.write(|tx, d| {
            let now = match read(tx, bucket, key)? {
                None => 0,
                Some(v) => super::counter(key, &v)?,
            };
            let next = now.checked_add(delta).ok_or_else(|| KvError::Overflow { key: key.into(), delta })?;
            put(tx, d, bucket, key, next.to_string().as_bytes())?;
            Ok(next)
        })
    }

    /// Set `key` to `value` if it still holds `expected` (`None`: still absent).
    pub fn swap(
        &self,
        bucket: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<Swapped, KvError> {
        self.write(|tx, d| {
            let now = read(tx, bucket, key)?;
            if now.as_deref() != expected {
                return Ok(Swapped::Holds(now));
            }
            put(tx, d, bucket, key, value)?;
            Ok(Swapped::Done)
        })
    }

    /// The buckets that hold keys, with their sizes.
    pub fn buckets(&self) -> Result<Vec<BucketInfo>, KvError> {
        self.scan(|conn| {
            let mut st = conn.prepare(
                "SELECT bucket, count(*), sum(length(CAST(key AS BLOB)) + length(value)) FROM kv GROUP BY bucket ORDER BY bucket",
            )?;
            let rows = st.query_map([], |r| {
                Ok(BucketInfo {
                    name: r.get(0)?,
                    keys: r.get::<_, i64>(1)? as u64,
                    bytes: r.get::<_, i64>(2)? as u64,
                })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// Every pair of `bucket` (or of every bucket), in order, with its bucket.
    pub fn entries(&self, bucket: Option<&str>) -> Result<Vec<(String, Pair)>, KvError> {
        self.scan(|conn| {
            let mut st = conn.prepare(
                "SELECT bucket, key, value FROM kv WHERE ?1 IS NULL OR bucket = ?1 ORDER BY bucket, key",
            )?;
            let rows = st.query_map(params![bucket], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// Set every entry (bucket, key, value), in one transaction: all or none (`toolhost kv
    /// import`). The bounds hold as for a plugin's writes.
    pub fn import(&self, entries: &[(String, Pair)]) -> Result<(), KvError> {
        super::off_the_worker(|| {
            self.write(|tx, d| entries.iter().try_for_each(|(b, (k, v))| put(tx, d, b, k, v)))
        })
    }

    /// Keys and bytes the store holds.
    pub fn usage(&self) -> Result<(u64, u64), KvError> {
        self.with_conn(|conn| {
            Ok(conn.query_row("SELECT keys, bytes FROM usage WHERE id = 1", [], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
            })?)
        })
    }

    /// Run `f` in one immediate transaction, then check and record what it changed: over a
    /// bound, nothing of it is kept.
    fn write<T>(&self, f: impl Fn(&Connection, &mut Delta) -> Result<T, Failure>) -> Result<T, KvError> {
        self.with_conn(|conn| self.write_on(conn, &f))
    }

    fn write_on<T>(
        &self,
        conn: &Connection,
        f: &impl Fn(&Connection, &mut Delta) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        let tx = Immediate::begin(conn)?;
        let mut delta = Delta::default();
        let out = f(&tx, &mut delta)?;
        if delta.keys != 0 || delta.bytes != 0 {
            let (keys, bytes): (i64, i64) =
                tx.prepare_cached("SELECT keys, bytes FROM usage WHERE id = 1")
                    .and_then(|mut st| st.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))?;
            let (keys, bytes) = (keys + delta.keys, bytes + delta.bytes);
            let l = &self.limits;
            if delta.keys > 0 && keys as u64 > l.max_keys {
                let what = format!(
                    "plugin `{}`'s store would hold {keys} keys, over its limit of {}",
                    self.plugin, l.max_keys
                );
                return Err(KvError::Limit { limit: Limit::Keys, what }.into());
            }
            if delta.bytes > 0 && bytes as u64 > l.max_total_bytes {
                let what = format!(
                    "plugin `{}`'s store would hold {bytes} bytes, over its limit of {}",
                    self.plugin, l.max_total_bytes
                );
                return Err(KvError::Limit { limit: Limit::TotalBytes, what }.into());
            }
            tx.prepare_cached("UPDATE usage SET keys = ?1, bytes = ?2 WHERE id = 1")
                .and_then(|mut st| st.execute(params![keys.max(0), bytes.max(0)]))?;
        }
        tx.commit()?;
        Ok(out)
    }

    fn failure(&self, f: Failure) -> KvError {
        match f {
            Failure::Sql(e) => self.failed(e),
            Failure::Kv(e) => e,
        }
    }
}

/// One `BEGIN IMMEDIATE` transaction, rolled back when dropped uncommitted. Its statements
/// (`BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`) come from the connection's statement cache, as
/// every statement of a call's operation does (rusqlite's `Transaction` parses them again on
/// each use).
struct Immediate<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Immediate<'c> {
    fn begin(conn: &'c Connection) -> rusqlite::Result<Immediate<'c>> {
        run_cached(conn, "BEGIN IMMEDIATE")?;
        Ok(Immediate { conn, open: true })
    }

    /// Commit; on failure the transaction is rolled back when dropped (if still open).
    fn commit(mut self) -> rusqlite::Result<()> {
        run_cached(self.conn, "COMMIT")?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Immediate<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Immediate<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            let _ = run_cached(self.conn, "ROLLBACK");
        }
    }
}

/// SQLite refused for now: another connection holds the lock.
fn busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Run a statement of no parameters and no rows, prepared once per connection.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// A write's failure inside its transaction.
enum Failure {
    Sql(rusqlite::Error),
    Kv(KvError),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        Failure::Sql(e)
    }
}

impl From<KvError> for Failure {
    fn from(e: KvError) -> Failure {
        Failure::Kv(e)
    }
}

fn read(tx: &Connection, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, Failure> {
    let mut st = tx.prepare_cached("SELECT value FROM kv WHERE bucket = ?1 AND key = ?2")?;
    Ok(st.query_row(params![bucket, key], |r| r.get(0)).optional()?)
}

fn put(tx: &Connection, d: &mut Delta, bucket: &str, key: &str, value: &[u8]) -> Result<(), Failure> {
    let old: Option<i64> = tx
        .prepare_cached("SELECT length(value) FROM kv WHERE bucket = ?1 AND key = ?2")?
        .query_row(params![bucket, key], |r| r.get(0))
        .optional()?;
    tx.prepare_cached(
        "INSERT INTO kv (bucket, key, value) VALUES (?1, ?2, ?3) ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![bucket, key, value])?;
    match old {
        None => {
            d.keys += 1;
            d.bytes += (key.len() + value.len()) as i64;
        }
        Some(old) => d.bytes += value.len() as i64 - old,
    }
    Ok(())
}

fn remove(tx: &Connection, d: &mut Delta, bucket: &str, key: &str) -> Result<(), Failure> {
    let old: Option<i64> = tx
        .prepare_cached("SELECT length(value) FROM kv WHERE bucket = ?1 AND key = ?2")?
        .query_row(params![bucket, key], |r| r.get(0))
        .optional()?;
    if let Some(old) = old {
        tx.prepare_cached("DELETE FROM kv WHERE bucket = ?1 AND key = ?2")?.execute(params![bucket, key])?;
        d.keys -= 1;
        d.bytes -= key.len() as i64 + old;
    }
    Ok(())
}

/// `dir` and its parents, the last one readable by its owner only.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, limits: KvLimits) -> SqliteStore {
        SqliteStore::open("notes", &dir.join("notes.sqlite3"), false, limits).unwrap()
    }

    #[test]
    fn writes_are_kept_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), KvLimits::default());
        s.set("default", "a", b"one").unwrap();
        s.set("default", "a", b"three").unwrap();
        s.set("other", "a", b"x").unwrap();
        assert_eq!(s.get("default", "a").unwrap().as_deref(), Some(&b"three"[..]));
        assert_eq!(s.usage().unwrap(), (2, 1 + 5 + 1 + 1));
        s.delete("default", "a").unwrap();
        s.delete("default", "missing").unwrap();
        assert_eq!(s.usage().unwrap(), (1, 2));
        assert!(!s.exists("default", "a").unwrap() && s.exists("other", "a").unwrap());
        drop(s);
        let s = store(dir.path(), KvLimits::default());
        assert_eq!(s.get("other", "a").unwrap().as_deref(), Some(&b"x"[..]), "kept when reopened");
    }

    #[test]
    fn counters_and_swaps() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), KvLimits::default());
        assert_eq!(s.increment("b", "n", 5).unwrap(), 5);
        assert_eq!(s.increment("b", "n", -7).unwrap(), -2);
        assert_eq!(s.get("b", "n").unwrap().as_deref(), Some(&b"-2"[..]));
        s.set("b", "text", b"hello").unwrap();
        assert!(matches!(s.increment("b", "text", 1), Err(KvError::NotANumber { .. })));
        s.set("b", "max", i64::MAX.to_string().as_bytes()).unwrap();
        assert!(matches!(s.increment("b", "max", 1), Err(KvError::Overflow { .. })));
        assert_eq!(s.swap("b", "c", None, b"1").unwrap(), Swapped::Done);
        assert_eq!(s.swap("b", "c", None, b"2").unwrap(), Swapped::Holds(Some(b"1".to_vec())));
        assert_eq!(s.swap("b", "c", Some(b"1"), b"2").unwrap(), Swapped::Done);
        assert_eq!(s.get("b", "c").unwrap().as_deref(), Some(&b"2"[..]));
    }

    #[test]
    fn bounds_keep_nothing_of_a_write_over_them() {
        let dir = tempfile::tempdir().unwrap();
        let limits = KvLimits { max_keys: 2, max_total_bytes: 100, ..KvLimits::default() };
        let s = store(dir.path(), limits);
        let pairs: Vec<(String, Vec<u8>)> = (0..3).map(|i| (format!("k{i}"), vec![b'x'])).collect();
        let e = s.set_many("b", &pairs).unwrap_err();
        assert!(e.to_string().contains("kv.max_keys"), "{e}");
        assert_eq!(s.usage().unwrap(), (0, 0), "the batch is all or nothing");
        assert_eq!(s.get("b", "k0").unwrap(), None, "rolled back, not left open");
        s.set("b", "k", &[0; 90]).unwrap();
        let e = s.set("b", "j", &[0; 20]).unwrap_err();
        assert!(e.to_string().contains("kv.max_total_mb"), "{e}");
        s.set("b", "k", &[0; 10]).unwrap();
        s.set("b", "j", &[0; 20]).unwrap();
    }

    #[test]
    fn keys_come_a_page_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), KvLimits::default());
        for k in ["", "a", "b", "c"] {
            s.set("b", k, b"v").unwrap();
        }
        let (page, cursor) = s.list_keys("b", None, 2).unwrap();
        assert_eq!(page, ["", "a"]);
        let (page, cursor) = s.list_keys("b", cursor.as_deref(), 2).unwrap();
        assert_eq!((page, cursor), (vec!["b".to_string(), "c".into()], None));
        assert_eq!(s.buckets().unwrap()[0].keys, 4);
    }

    /// On the quick path SQLite does not wait (its busy timeout is 0): an operation that finds
    /// another connection's write in progress is made again, waiting for it, and then done.
    #[test]
    fn an_operation_waits_for_another_connections_write() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), KvLimits::default());
        s.set("b", "k", b"before").unwrap();
        let other = Connection::open(dir.path().join("notes.sqlite3")).unwrap();
        other
            .execute_batch("BEGIN IMMEDIATE; UPDATE kv SET value = CAST('theirs' AS BLOB) WHERE key = 'k'")
            .unwrap();
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| s.increment("b", "n", 1));
            // The write is tried at once, refused as busy, and waits; the other write ends.
            std::thread::sleep(Duration::from_millis(300));
            assert!(!writer.is_finished(), "the write waited for the other connection's");
            other.execute_batch("COMMIT").unwrap();
            assert_eq!(writer.join().unwrap().unwrap(), 1);
        });
        assert_eq!(s.get("b", "k").unwrap().as_deref(), Some(&b"theirs"[..]));
        assert_eq!(s.usage().unwrap(), (2, 1 + 6 + 1 + 1), "`k` as first counted, and `n`");
    }

    /// The log is checkpointed as it grows past [`CHECKPOINT_PAGES`], by the hook that takes
    /// SQLite's place, here from a task on an async worker (the checkpoint moves off it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_is_checkpointed_as_it_grows() {
        let dir = tempfile::tempdir().unwrap();
        let s = std::sync::Arc::new(store(dir.path(), KvLimits::default()));
        let writer = s.clone();
        tokio::spawn(async move {
            for n in 0..1500 {
                writer.set("b", &format!("k{n}"), &[7; 2000]).unwrap();
            }
        })
        .await
        .unwrap();
        let other = Connection::open(dir.path().join("notes.sqlite3")).unwrap();
        let (_, in_log): (i64, i64) =
            other.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert!(in_log < i64::from(CHECKPOINT_PAGES), "{in_log} pages in the log after 1500 writes");
        assert_eq!(s.usage().unwrap().0, 1500);
    }

    #[test]
    fn a_file_that_is_not_a_store_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.sqlite3");
        std::fs::write(&path, vec![0x5a; 8192]).unwrap();
        let e = SqliteStore::open("notes", &path, false, KvLimits::default()).unwrap_err().to_string();
        assert!(e.contains("notes.sqlite3") && e.contains("move the file away"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), vec![0x5a; 8192], "left as it is");
    }
}

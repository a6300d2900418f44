//! State between calls: each plugin's key-value store, served through `wasi:keyvalue`
//! 0.2.0-draft2 (`store`, `atomics`, `batch`; the interface Spin and wasmCloud serve, so a
//! component written for them runs unchanged).
//!
//! - **Buckets, deny by default.** A plugin's manifest requests buckets by name
//!   (`capabilities.kv`); the operator grants them (`[plugin.NAME] kv = ["default"]`,
//!   `--allow-kv NAME=BUCKET`). `open` of a bucket not requested, or not granted, is
//!   `access-denied`, and the call's failure names the grant that would allow it.
//! - **One store per plugin.** Every bucket of a plugin lives in its own store ([`Stores::of`]:
//!   an SQLite file `DIR/PLUGIN.sqlite3`, see [`sqlite`]); no plugin can name another's.
//!   Opened at a plugin's first use and kept; a store that cannot be opened (a corrupt file)
//!   fails that plugin's calls with a message naming the file, and no other plugin's.
//! - **Bounded** ([`KvLimits`], `[kv]`): a key's and a value's size, checked before anything
//!   is written; the keys and bytes of a plugin's store, checked in the write's transaction;
//!   the operations of one call. Each refusal names its setting. A batch is all or nothing.
//! - **Durable**: a write is acknowledged to the guest only once committed (a kill of the host
//!   loses nothing acknowledged); `[kv] fsync = true` also syncs it to the disk first.
//! - Counters (`increment`) are kept as decimal text (`b"42"`), so a value set as text can be
//!   counted and a counter read as text.

mod call;
mod commits;
mod error;
pub mod redis;
pub mod settings;
pub mod sqlite;

/// Bytes of values one plugin's store may keep from its `get`s, on either backend (see
/// [`crate::kept`]).
const KEPT_BYTES: usize = 16 * 1024 * 1024;

pub use call::KvCall;
pub use error::KvError;
pub use settings::{Backend, KvLimits, KvScope, KvSettings, Limit};
pub use sqlite::{BucketInfo, Pair, SqliteStore, Swapped};

use crate::capability::{
    Asked, CallSetup, CallState, Capability, GrantContext, LinkOptions, Missing, MissingKind,
};
use crate::settings::grants::GrantItem;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use wasmtime::component::{HasSelf, Linker};

/// What one plugin may open: the buckets it requested and those of them the operator granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvGrant {
    pub requested: Vec<String>,
    pub granted: Vec<String>,
    pub scope: KvScope,
}

/// Request ∩ grant: a bucket is given only if the manifest requests it.
pub fn effective(plugin: &str, requested: &[String], granted: &[String]) -> (KvGrant, Vec<Missing>) {
    let mut out = KvGrant { requested: requested.to_vec(), granted: Vec::new(), scope: KvScope::Shared };
    let mut missing = Vec::new();
    for b in requested {
        if granted.contains(b) {
            out.granted.push(b.clone());
        } else {
            missing.push(Missing {
                kind: MissingKind::Kv(b.clone()),
                what: format!("kv {b}"),
                how: format!("[plugin.{plugin}] kv = [\"{b}\"]  (or --allow-kv {plugin}={b})"),
            });
        }
    }
    (out, missing)
}

/// One plugin's store, on the backend `[kv]` names.
#[derive(Debug)]
pub enum PluginStore {
    Sqlite(SqliteStore),
    Redis(redis::RedisStore),
}

/// Run `f`, which may block, without holding up an async worker: on a multi-threaded runtime
/// the worker hands its other tasks to another thread first (`block_in_place`, some
/// microseconds); elsewhere (a command's own runtime of one thread, no runtime) `f` just runs.
fn off_the_worker<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// `PluginStore::$name(args…)` on either backend (SQLite's are synchronous: quick, or waiting
/// off the workers, see [`SqliteStore`]).
macro_rules! both {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        impl PluginStore {
            $(pub async fn $name(&self, $($arg: $ty),*) -> Result<$out, KvError> {
                match self {
                    PluginStore::Sqlite(s) => s.$name($($arg),*),
                    PluginStore::Redis(r) => r.$name($($arg),*).await,
                }
            })*
        }
    };
}

both! {
    get(bucket: &str, key: &str) -> Option<Vec<u8>>;
    exists(bucket: &str, key: &str) -> bool;
    set(bucket: &str, key: &str, value: &[u8]) -> ();
    delete(bucket: &str, key: &str) -> ();
    get_many(bucket: &str, keys: &[String]) -> Vec<Option<Pair>>;
    set_many(bucket: &str, pairs: &[Pair]) -> ();
    delete_many(bucket: &str, keys: &[String]) -> ();
    increment(bucket: &str, key: &str, delta: i64) -> i64;
    swap(bucket: &str, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Swapped;
    buckets() -> Vec<BucketInfo>;
    entries(bucket: Option<&str>) -> Vec<(String, Pair)>;
    import(entries: &[(String, Pair)]) -> ();
    usage() -> (u64, u64);
}

impl PluginStore {
    /// A page of `bucket`'s keys after `cursor`, and the next page's cursor.
    pub async fn list_keys(
        &self,
        bucket: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<String>, Option<String>), KvError> {
        match self {
            PluginStore::Sqlite(s) => s.list_keys(bucket, cursor, sqlite::KEYS_PER_PAGE),
            PluginStore::Redis(r) => r.list_keys(bucket, cursor).await,
        }
    }

    /// Where it is: the file, or the Redis server.
    pub fn location(&self) -> String {
        match self {
            PluginStore::Sqlite(s) => s.path().display().to_string(),
            PluginStore::Redis(r) => r.shown().to_string(),
        }
    }
}

/// Every plugin's store, opened at its first use and kept (one per plugin name).
pub struct Stores {
    settings: KvSettings,
    open: Mutex<HashMap<String, Arc<PluginStore>>>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl Stores {
    pub fn new(settings: KvSettings) -> Stores {
        Stores { settings, open: Mutex::new(HashMap::new()) }
    }

    pub fn settings(&self) -> &KvSettings {
        &self.settings
    }

    /// Where `plugin`'s store is (its file, for the SQLite backend).
    pub fn location(&self, plugin: &str) -> PathBuf {
        match &self.settings.backend {
            Backend::Sqlite { dir } => dir.join(format!("{plugin}.sqlite3")),
            Backend::Redis { .. } => PathBuf::new(),
        }
    }

    /// `plugin`'s store, opened now if it is not yet. A store that cannot be opened is not
    /// kept: the next use tries again (the operator may have moved a corrupt file away).
    ///
    /// The map of open stores is not held while one opens (which may wait for another process's
    /// lock): other plugins' calls find their stores meanwhile. Two calls opening one store at
    /// once each open it, and the first kept is the one used.
    pub fn of(&self, plugin: &str) -> Result<Arc<PluginStore>, KvError> {
        let open = || self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = open().get(plugin) {
            return Ok(s.clone());
        }
        let limits = self.settings.limits;
        let store = Arc::new(match &self.settings.backend {
            // Opening may wait for another connection (its setup, a lock): off the workers.
            Backend::Sqlite { .. } => PluginStore::Sqlite(off_the_worker(|| {
                SqliteStore::open(plugin, &self.location(plugin), self.settings.fsync, limits)
            })?),
            Backend::Redis { url } => PluginStore::Redis(redis::RedisStore::open(plugin, url, limits)?),
        });
        Ok(open().entry(plugin.to_string()).or_insert(store).clone())
    }

    /// Open the existing stores of `plugins` now (at start), and say which cannot be: each
    /// such plugin's calls fail on its store, naming the file, and no other plugin's.
    pub fn check<'a>(&self, plugins: impl IntoIterator<Item = &'a str>) -> Vec<KvError> {
        plugins.into_iter().filter_map(|p| self.existing(p).err()).collect()
    }

    /// `plugin`'s store if it exists (never created: for the operator's commands).
    pub fn existing(&self, plugin: &str) -> Result<Option<Arc<PluginStore>>, KvError> {
        if matches!(self.settings.backend, Backend::Sqlite { .. }) && !self.location(plugin).is_file() {
            return Ok(None);
        }
        self.of(plugin).map(Some)
    }

    /// The plugins that have a store (a file, or keys on the Redis server), in order.
    pub async fn plugins(&self) -> Result<Vec<String>, KvError> {
        let dir = match &self.settings.backend {
            Backend::Sqlite { dir } => dir,
            Backend::Redis { url } => return redis::plugins(url).await,
        };
        let failed = |e: std::io::Error| KvError::Unavailable {
            plugin: "*".into(),
            at: dir.display().to_string(),
            why: e.to_string(),
        };
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(failed(e)),
        };
        let mut out = Vec::new();
        for e in entries {
            let name = e.map_err(failed)?.file_name();
            if let Some(plugin) = name.to_str().and_then(|n| n.strip_suffix(".sqlite3")) {
                out.push(plugin.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Forget `plugin`'s open store and delete its data (`toolhost kv purge`); whether it had
    /// any.
    pub async fn purge(&self, plugin: &str) -> Result<bool, KvError> {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).remove(plugin);
        if let Backend::Redis { url } = &self.settings.backend {
            return redis::RedisStore::open(plugin, url, self.settings.limits)?.purge().await;
        }
        let path = self.location(plugin);
        let mut any = false;
        for suffix in ["", "-wal", "-shm"] {
            let p = PathBuf::from(format!("{}{suffix}", path.display()));
            match std::fs::remove_file(&p) {
                Ok(()) => any = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    let (plugin, at) = (plugin.to_string(), p.display().to_string());
                    return Err(KvError::Unavailable { plugin, at, why: e.to_string() });
                }
            }
        }
        Ok(any)
    }
}

/// A counter's value: decimal text of a 64-bit integer.
fn counter(key: &str, value: &[u8]) -> Result<i64, KvError> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| KvError::NotANumber { key: key.into() })
}

/// The key-value capability (`wasi:keyvalue`).
pub struct Kv;

impl Capability for Kv {
    type Grant = Arc<KvGrant>;
    type Call = KvCall;

    fn effective(cx: &GrantContext<'_>) -> (Arc<KvGrant>, Vec<Missing>) {
        let (mut grant, missing) = effective(cx.plugin, &cx.request.kv, &cx.grant.kv);
        grant.scope = cx.grant.kv_scope.unwrap_or_default();
        (Arc::new(grant), missing)
    }

    /// Each bucket answered about that the manifest requests, for this call.
    fn with_asked(grant: &Arc<KvGrant>, asked: &Asked<'_>) -> Option<Arc<KvGrant>> {
        let adds: Vec<&String> = asked
            .items
            .iter()
            .filter_map(|i| match i {
                GrantItem::Kv(b) if grant.requested.contains(b) && !grant.granted.contains(b) => Some(b),
                _ => None,
            })
            .collect();
        if adds.is_empty() {
            return None;
        }
        let mut g = (**grant).clone();
        g.granted.extend(adds.into_iter().cloned());
        Some(Arc::new(g))
    }

    fn prepare(grant: &Arc<KvGrant>, setup: &CallSetup<'_>) -> KvCall {
        // What a scoped bucket is keyed by: the session, or the identity (its key, made only
        // for a plugin whose buckets are scoped so).
        let owner = match grant.scope {
            KvScope::Shared => None,
            KvScope::Session => setup.session.cloned(),
            KvScope::Identity => setup.principal.map(|p| Arc::from(p.key())),
        };
        KvCall::new(setup.plugin.clone(), grant.clone(), setup.kv.clone(), owner)
    }

    fn add_to_linker<S: CallState>(linker: &mut Linker<S>, _: LinkOptions) -> wasmtime::Result<()> {
        use crate::bindings::{atomics, batch, store};
        store::add_to_linker::<S, HasSelf<KvCall>>(linker, |s| &mut s.calls().kv)?;
        atomics::add_to_linker::<S, HasSelf<KvCall>>(linker, |s| &mut s.calls().kv)?;
        batch::add_to_linker::<S, HasSelf<KvCall>>(linker, |s| &mut s.calls().kv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_is_given_only_when_requested_and_granted() {
        let (g, missing) =
            effective("notes", &["default".into(), "cache".into()], &["default".into(), "other".into()]);
        assert_eq!(g.granted, ["default"]);
        assert_eq!(missing.len(), 1);
        assert!(missing[0].how.contains("--allow-kv notes=cache"), "{}", missing[0].how);
    }

    /// A store waiting to open (here for another connection's write lock, met by its setup)
    /// does not hold up another plugin's store.
    #[test]
    fn a_store_opening_slowly_holds_up_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let settings =
            KvSettings { backend: Backend::Sqlite { dir: dir.path().into() }, ..KvSettings::default() };
        let stores = Stores::new(settings.clone());
        // `slow`'s store exists; another connection holds its write lock.
        drop(Stores::new(settings).of("slow").unwrap());
        let other = rusqlite::Connection::open(dir.path().join("slow.sqlite3")).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        std::thread::scope(|scope| {
            let slow = scope.spawn(|| stores.of("slow").map(drop));
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(stores.of("quick").unwrap());
            assert!(!slow.is_finished(), "`quick` opened while `slow` still waited");
            other.execute_batch("COMMIT").unwrap();
            slow.join().unwrap().unwrap();
        });
    }

    #[test]
    fn counters_are_decimal_text() {
        assert_eq!(counter("n", b"42").unwrap(), 42);
        assert_eq!(counter("n", b"-7").unwrap(), -7);
        assert!(counter("n", b"4x").is_err() && counter("n", &[0xff]).is_err());
    }
}

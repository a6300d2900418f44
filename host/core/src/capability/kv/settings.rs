//! The key-value capability's settings: `[kv]` (where every plugin's store lives and its
//! bounds) and the operator's bucket grants (`[plugin.NAME] kv`, `--allow-kv`). A leaf: it
//! imports nothing of the crate but the config's error ([`Invalid`]).

use crate::settings::invalid::Invalid;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `[kv]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKv {
    /// `sqlite` (the default: one file per plugin under `dir`) or `redis`.
    backend: Option<String>,
    /// The SQLite files' folder (default: `kv/` in toolhost's state folder).
    dir: Option<PathBuf>,
    /// The Redis server of `backend = "redis"` (`redis://HOST:PORT/DB`).
    redis_url: Option<String>,
    /// Every write synced to the disk before the plugin hears it is done (SQLite
    /// `synchronous = FULL`); default false: written before it is acknowledged, synced by
    /// SQLite's checkpoints (a crash of toolhost loses nothing; a power failure may lose the
    /// last writes).
    fsync: Option<bool>,
    max_key_bytes: Option<u64>,
    max_value_kb: Option<u64>,
    max_keys: Option<u64>,
    max_total_mb: Option<u64>,
    max_ops_per_call: Option<u64>,
}

/// Whose a plugin's buckets are (`[plugin.NAME] kv_scope`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvScope {
    /// Every caller's: one bucket of each name.
    #[default]
    Shared,
    /// Each MCP session's own: a session never sees another's keys; a call outside a session
    /// (the CLI, a stateless request, a resource read) cannot open them.
    Session,
    /// Each identity's own (a static token, an OAuth principal, the local user): one user's
    /// scratchpad is never another's; a call with no identity (a tokenless HTTP server, a
    /// resource read) cannot open them.
    Identity,
}

/// Where the stores live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// One SQLite file per plugin in this folder (`PLUGIN.sqlite3`).
    Sqlite { dir: PathBuf },
    /// One Redis server for every plugin, keys prefixed by plugin and bucket.
    Redis { url: String },
}

/// A plugin store's bounds (the same for every plugin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLimits {
    /// A key's length in bytes (UTF-8).
    pub max_key_bytes: usize,
    /// A value's length in bytes.
    pub max_value_bytes: usize,
    /// Keys in one plugin's store, every bucket together.
    pub max_keys: u64,
    /// Bytes of keys and values in one plugin's store.
    pub max_total_bytes: u64,
    /// Store operations one call may make (each key of a batch counts).
    pub max_ops_per_call: u64,
}

impl Default for KvLimits {
    fn default() -> Self {
        KvLimits {
            max_key_bytes: 256,
            max_value_bytes: 1024 * 1024,
            max_keys: 100_000,
            max_total_bytes: 256 * 1024 * 1024,
            max_ops_per_call: 10_000,
        }
    }
}

/// `[kv]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvSettings {
    pub backend: Backend,
    pub fsync: bool,
    pub limits: KvLimits,
}

impl Default for KvSettings {
    /// SQLite under the state folder (or `./.toolhost-kv` when there is no home to hold it).
    fn default() -> Self {
        let dir = crate::files::state_dir().map_or_else(|| PathBuf::from(".toolhost-kv"), |d| d.join("kv"));
        KvSettings { backend: Backend::Sqlite { dir }, fsync: false, limits: KvLimits::default() }
    }
}

impl KvSettings {
    /// The setting that would raise a limit, for the error that names it.
    pub fn key_of(limit: Limit) -> &'static str {
        match limit {
            Limit::KeyBytes => "kv.max_key_bytes",
            Limit::ValueBytes => "kv.max_value_kb",
            Limit::Keys => "kv.max_keys",
            Limit::TotalBytes => "kv.max_total_mb",
            Limit::OpsPerCall => "kv.max_ops_per_call",
        }
    }
}

/// One of the bounds of [`KvLimits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    KeyBytes,
    ValueBytes,
    Keys,
    TotalBytes,
    OpsPerCall,
}

impl RawKv {
    /// Check and resolve (a relative `dir` is relative to `base`, the config file's folder).
    pub fn resolve(self, base: &Path) -> Result<KvSettings, Invalid> {
        let d = KvSettings::default();
        let backend = match self.backend.as_deref() {
            None | Some("sqlite") => {
                if self.redis_url.is_some() {
                    return Err(Invalid::is("kv.redis_url", "is only read with backend = \"redis\""));
                }
                match self.dir {
                    Some(dir) => Backend::Sqlite { dir: base.join(dir) },
                    None => d.backend,
                }
            }
            Some("redis") => {
                let Some(url) = self.redis_url else {
                    return Err(Invalid::is(
                        "kv.redis_url",
                        "must be set with backend = \"redis\" (e.g. \"redis://127.0.0.1:6379/0\")",
                    ));
                };
                if !(url.starts_with("redis://")
                    || url.starts_with("rediss://")
                    || url.starts_with("redis+unix://"))
                {
                    return Err(Invalid::value("kv.redis_url", format!("{url:?}"), "is not a redis:// URL"));
                }
                if self.dir.is_some() {
                    return Err(Invalid::is("kv.dir", "is only read with backend = \"sqlite\""));
                }
                Backend::Redis { url }
            }
            Some(other) => {
                return Err(Invalid::value(
                    "kv.backend",
                    format!("{other:?}"),
                    "is neither \"sqlite\" nor \"redis\"",
                ));
            }
        };
        let l = KvLimits::default();
        let bounded = |key: &str, v: Option<u64>, lo: u64, hi: u64, default: u64| match v {
            None => Ok(default),
            Some(v) if (lo..=hi).contains(&v) => Ok(v),
            Some(v) => Err(Invalid::out_of_range(key, v, lo, hi)),
        };
        let limits = KvLimits {
            max_key_bytes: bounded("kv.max_key_bytes", self.max_key_bytes, 1, 4096, l.max_key_bytes as u64)?
                as usize,
            max_value_bytes: bounded(
                "kv.max_value_kb",
                self.max_value_kb,
                1,
                64 * 1024,
                l.max_value_bytes as u64 / 1024,
            )? as usize
                * 1024,
            max_keys: bounded("kv.max_keys", self.max_keys, 1, 1 << 40, l.max_keys)?,
            max_total_bytes: bounded(
                "kv.max_total_mb",
                self.max_total_mb,
                1,
                1 << 20,
                l.max_total_bytes >> 20,
            )? << 20,
            max_ops_per_call: bounded(
                "kv.max_ops_per_call",
                self.max_ops_per_call,
                1,
                1 << 32,
                l.max_ops_per_call,
            )?,
        };
        Ok(KvSettings { backend, fsync: self.fsync.unwrap_or(false), limits })
    }
}

/// `[plugin.NAME] kv`: the buckets granted, each checked by the manifest's bucket rule.
pub fn resolve_buckets(key: &str, raw: Vec<String>) -> Result<Vec<String>, Invalid> {
    for (i, b) in raw.iter().enumerate() {
        if !toolhost_spec::manifest::is_bucket_name(b) {
            return Err(Invalid::value(
                format!("{key}[{i}]"),
                format!("{b:?}"),
                toolhost_spec::manifest::BUCKET_RULE,
            ));
        }
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(toml_text: &str) -> Result<KvSettings, String> {
        let raw: RawKv = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        raw.resolve(Path::new("/etc/th")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_sqlite_under_the_state_folder() {
        let s = resolve("").unwrap();
        assert!(matches!(s.backend, Backend::Sqlite { .. }));
        assert_eq!(s.limits, KvLimits::default());
        assert!(!s.fsync);
        let s = resolve("dir = \"kv\"\nmax_value_kb = 4\nmax_total_mb = 2").unwrap();
        assert_eq!(s.backend, Backend::Sqlite { dir: "/etc/th/kv".into() });
        assert_eq!((s.limits.max_value_bytes, s.limits.max_total_bytes), (4096, 2 << 20));
    }

    #[test]
    fn bad_values_name_their_key() {
        assert!(resolve("backend = \"redis\"").unwrap_err().contains("kv.redis_url"));
        assert!(resolve("backend = \"memcached\"").unwrap_err().contains("kv.backend"));
        assert!(
            resolve("backend = \"redis\"\nredis_url = \"http://x\"").unwrap_err().contains("kv.redis_url")
        );
        assert!(resolve("max_keys = 0").unwrap_err().contains("kv.max_keys"));
        assert!(resolve("max_key_bytes = 99999").unwrap_err().contains("kv.max_key_bytes"));
        assert!(resolve("redis_url = \"redis://x\"").unwrap_err().contains("only read with backend"));
        let r = resolve_buckets("plugin.notes.kv", vec!["default".into(), "bad bucket".into()]);
        assert!(r.unwrap_err().to_string().contains("plugin.notes.kv[1]"));
    }
}

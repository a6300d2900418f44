//! The plugin's key-value store, kept between calls (`wasi:keyvalue`, served by the host).
//!
//! Request the buckets in the plugin attribute (`#[toolhost_sdk::plugin(kv = "default")]`);
//! the operator grants them (`[plugin.NAME] kv = ["default"]` or `--allow-kv NAME=default`).
//! Each plugin has a store of its own: no other plugin sees its keys.
//!
//! ```ignore
//! use toolhost_sdk::kv;
//! let notes = kv::open("default")?;
//! notes.set("greeting", "hello")?;
//! let calls = notes.increment("calls", 1)?;            // atomic, kept as decimal text
//! notes.set_json("todo", &vec!["milk", "eggs"])?;
//! let todo: Option<Vec<String>> = notes.get_json("todo")?;
//! ```

use crate::__bindings::wasi::keyvalue::{atomics, batch, store};
use std::fmt;

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvError {
    pub kind: KvErrorKind,
    /// The bucket it was about.
    pub bucket: String,
    /// The host's words (for [`KvErrorKind::Other`]).
    pub message: String,
}

/// The kinds of [`KvError`], as `wasi:keyvalue` has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvErrorKind {
    /// The plugin's manifest does not request the bucket.
    NoSuchStore,
    /// The operator has not granted the bucket.
    AccessDenied,
    /// Anything else: a limit, a full disk, a value that is not a counter, bad JSON, …
    Other,
}

impl fmt::Display for KvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            KvErrorKind::NoSuchStore => write!(
                f,
                "key-value bucket `{}`: no such store (request it in the plugin's manifest: #[toolhost_sdk::plugin(kv = \"{}\")])",
                self.bucket, self.bucket
            ),
            KvErrorKind::AccessDenied => write!(
                f,
                "key-value bucket `{}` is not granted to this plugin (the operator grants it with [plugin.NAME] kv = [\"{}\"] or --allow-kv NAME={})",
                self.bucket, self.bucket, self.bucket
            ),
            KvErrorKind::Other => write!(f, "key-value bucket `{}`: {}", self.bucket, self.message),
        }
    }
}

impl std::error::Error for KvError {}

impl From<KvError> for String {
    fn from(e: KvError) -> String {
        e.to_string()
    }
}

/// An open bucket of the plugin's store.
pub struct Bucket {
    name: String,
    inner: store::Bucket,
}

/// Open the bucket `name` (one the plugin requests).
pub fn open(name: &str) -> Result<Bucket, KvError> {
    store::open(name).map(|inner| Bucket { name: name.to_string(), inner }).map_err(|e| error(name, e))
}

fn error(bucket: &str, e: store::Error) -> KvError {
    let (kind, message) = match e {
        store::Error::NoSuchStore => (KvErrorKind::NoSuchStore, String::new()),
        store::Error::AccessDenied => (KvErrorKind::AccessDenied, String::new()),
        store::Error::Other(m) => (KvErrorKind::Other, m),
    };
    KvError { kind, bucket: bucket.to_string(), message }
}

impl Bucket {
    pub fn name(&self) -> &str {
        &self.name
    }

    fn err(&self, e: store::Error) -> KvError {
        error(&self.name, e)
    }

    fn other(&self, message: String) -> KvError {
        KvError { kind: KvErrorKind::Other, bucket: self.name.clone(), message }
    }

    /// The value at `key`, if there is one.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.inner.get(key).map_err(|e| self.err(e))
    }

    /// The value at `key` as text (invalid UTF-8 replaced).
    pub fn get_text(&self, key: &str) -> Result<Option<String>, KvError> {
        Ok(self.get(key)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// The value at `key`, parsed from JSON.
    pub fn get_json<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KvError> {
        match self.get(key)? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v)
                .map(Some)
                .map_err(|e| self.other(format!("`{key}` is not the JSON expected: {e}"))),
        }
    }

    /// Set `key` to `value` (text is stored as UTF-8).
    pub fn set(&self, key: &str, value: impl AsRef<[u8]>) -> Result<(), KvError> {
        self.inner.set(key, value.as_ref()).map_err(|e| self.err(e))
    }

    /// Set `key` to `value` as JSON.
    pub fn set_json<T: serde::Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<(), KvError> {
        let text = serde_json::to_vec(value)
            .map_err(|e| self.other(format!("cannot write `{key}` as JSON: {e}")))?;
        self.set(key, text)
    }

    /// Delete `key` (nothing happens if it is not there).
    pub fn delete(&self, key: &str) -> Result<(), KvError> {
        self.inner.delete(key).map_err(|e| self.err(e))
    }

    pub fn exists(&self, key: &str) -> Result<bool, KvError> {
        self.inner.exists(key).map_err(|e| self.err(e))
    }

    /// Every key of the bucket, in order (read a page at a time from the host).
    pub fn keys(&self) -> Result<Vec<String>, KvError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.inner.list_keys(cursor.as_deref()).map_err(|e| self.err(e))?;
            out.extend(page.keys);
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(out),
            }
        }
    }

    /// Add `delta` to the counter at `key` (0 when absent), atomically; the new value.
    pub fn increment(&self, key: &str, delta: i64) -> Result<i64, KvError> {
        atomics::increment(&self.inner, key, delta).map_err(|e| self.err(e))
    }

    /// Replace the value at `key` with `f(current)`, atomically: retried (at most 100 times)
    /// while another call changes the key in between. The value written.
    pub fn update(&self, key: &str, mut f: impl FnMut(Option<&[u8]>) -> Vec<u8>) -> Result<Vec<u8>, KvError> {
        let mut cas = atomics::Cas::new(&self.inner, key).map_err(|e| self.err(e))?;
        for _ in 0..100 {
            let current = cas.current().map_err(|e| self.err(e))?;
            let next = f(current.as_deref());
            match atomics::swap(cas, &next) {
                Ok(()) => return Ok(next),
                Err(atomics::CasError::CasFailed(again)) => cas = again,
                Err(atomics::CasError::StoreError(e)) => return Err(self.err(e)),
            }
        }
        Err(self.other(format!("`{key}` kept changing: gave up after 100 tries")))
    }

    /// The values of `keys` that exist, as (key, value) pairs in the order asked.
    pub fn get_many(&self, keys: &[&str]) -> Result<Vec<(String, Vec<u8>)>, KvError> {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        Ok(batch::get_many(&self.inner, &keys).map_err(|e| self.err(e))?.into_iter().flatten().collect())
    }

    /// Set every pair, or none of them.
    pub fn set_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        let pairs: Vec<(String, Vec<u8>)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
        batch::set_many(&self.inner, &pairs).map_err(|e| self.err(e))
    }

    /// Delete every key, or none of them.
    pub fn delete_many(&self, keys: &[&str]) -> Result<(), KvError> {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        batch::delete_many(&self.inner, &keys).map_err(|e| self.err(e))
    }
}

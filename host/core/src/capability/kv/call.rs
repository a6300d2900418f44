//! One call's side of the key-value capability: the buckets it opened, its compare-and-swap
//! handles, its operation count, and the `wasi:keyvalue` imports served from them. Every
//! operation is checked here (a bucket granted, the key's and value's size, the call's
//! operation budget) before its store sees it.

use super::sqlite::{Pair, Swapped};
use super::{KvError, KvGrant, KvScope, PluginStore, Stores};
use crate::bindings::atomics::{self, Cas, CasError};
use crate::bindings::batch;
use crate::bindings::store::{self, Bucket, Error, KeyResponse};
use crate::capability::Refusal;
use std::sync::Arc;
use wasmtime::component::Resource;

/// A compare-and-swap handle: the key, and the value it held when the handle was made.
struct CasState {
    bucket: Arc<str>,
    key: String,
    current: Option<Vec<u8>>,
}

/// The key-value side of one call's store.
pub struct KvCall {
    plugin: Arc<str>,
    grant: Arc<KvGrant>,
    stores: Arc<Stores>,
    /// What a scoped bucket is keyed by: the call's MCP session or its identity (`None`:
    /// shared buckets, or a call that has none).
    owner: Option<Arc<str>>,
    /// The plugin's store, once a bucket was opened.
    store: Option<Arc<PluginStore>>,
    /// Open buckets by handle, by their stored names (`None`: dropped).
    buckets: Vec<Option<Arc<str>>>,
    cas: Vec<Option<CasState>>,
    /// Operations made (each key of a batch counts).
    pub ops: u64,
    /// Bytes of values written.
    pub written_bytes: u64,
    /// Buckets the plugin requested and was refused (a grant would have allowed them).
    pub refused: Vec<Refusal>,
}

impl KvCall {
    pub fn new(
        plugin: Arc<str>,
        grant: Arc<KvGrant>,
        stores: Arc<Stores>,
        owner: Option<Arc<str>>,
    ) -> KvCall {
        KvCall {
            plugin,
            grant,
            stores,
            owner,
            store: None,
            buckets: Vec::new(),
            cas: Vec::new(),
            ops: 0,
            written_bytes: 0,
            refused: Vec::new(),
        }
    }

    /// Open `bucket`: requested, granted, and the plugin's store usable.
    pub fn open(&mut self, bucket: &str) -> Result<u32, KvError> {
        self.charge(1)?;
        let named = || (self.plugin.to_string(), bucket.to_string());
        if !self.grant.requested.iter().any(|r| r == bucket) {
            let (plugin, bucket) = named();
            return Err(KvError::NotRequested { plugin, bucket });
        }
        if !self.grant.granted.iter().any(|g| g == bucket) {
            let (plugin, bucket) = named();
            self.refused.push(Refusal::Bucket(bucket.clone()));
            return Err(KvError::NotGranted { plugin, bucket });
        }
        let stored = match (self.grant.scope, &self.owner) {
            (KvScope::Shared, _) => Arc::from(bucket),
            (KvScope::Session, Some(s)) => Arc::from(scoped(bucket, '@', s)),
            (KvScope::Session, None) => return Err(KvError::NoSession { plugin: self.plugin.to_string() }),
            (KvScope::Identity, Some(who)) => Arc::from(scoped(bucket, '~', who)),
            (KvScope::Identity, None) => return Err(KvError::NoIdentity { plugin: self.plugin.to_string() }),
        };
        if self.store.is_none() {
            self.store = Some(self.stores.of(&self.plugin)?);
        }
        self.buckets.push(Some(stored));
        Ok((self.buckets.len() - 1) as u32)
    }

    /// Count `n` operations against the call's budget.
    fn charge(&mut self, n: usize) -> Result<(), KvError> {
        let max = self.stores.settings().limits.max_ops_per_call;
        self.ops = self.ops.saturating_add(n as u64);
        if self.ops > max {
            let what = format!("this call made more than {max} key-value operations, its limit");
            return Err(KvError::Limit { limit: super::Limit::OpsPerCall, what });
        }
        Ok(())
    }

    fn check_key(&self, key: &str) -> Result<(), KvError> {
        let max = self.stores.settings().limits.max_key_bytes;
        if key.len() > max {
            let what = format!("a key of {} bytes is longer than the limit of {max}", key.len());
            return Err(KvError::Limit { limit: super::Limit::KeyBytes, what });
        }
        Ok(())
    }

    fn check_value(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let max = self.stores.settings().limits.max_value_bytes;
        if value.len() > max {
            let what =
                format!("the value of `{key}` ({} bytes) is larger than the limit of {max}", value.len());
            return Err(KvError::Limit { limit: super::Limit::ValueBytes, what });
        }
        Ok(())
    }

    /// The open bucket behind handle `rep`, and the store, for `n` operations on `keys`.
    fn bucket<'k>(
        &mut self,
        rep: u32,
        n: usize,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<(Arc<PluginStore>, Arc<str>), KvError> {
        self.charge(n)?;
        for k in keys {
            self.check_key(k)?;
        }
        let bucket = self.buckets.get(rep as usize).cloned().flatten();
        match (bucket, &self.store) {
            (Some(b), Some(s)) => Ok((s.clone(), b)),
            // The component model hands the host only live handles of this instance.
            _ => Err(KvError::Unavailable {
                plugin: self.plugin.to_string(),
                at: "this call".into(),
                why: "no such bucket handle".into(),
            }),
        }
    }

    async fn get(&mut self, rep: u32, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let (s, b) = self.bucket(rep, 1, [key])?;
        s.get(&b, key).await
    }

    async fn set(&mut self, rep: u32, key: &str, value: &[u8]) -> Result<(), KvError> {
        let (s, b) = self.bucket(rep, 1, [key])?;
        self.check_value(key, value)?;
        s.set(&b, key, value).await?;
        self.written_bytes += value.len() as u64;
        Ok(())
    }

    async fn set_many(&mut self, rep: u32, pairs: &[Pair]) -> Result<(), KvError> {
        let (s, b) = self.bucket(rep, pairs.len().max(1), pairs.iter().map(|(k, _)| k.as_str()))?;
        for (k, v) in pairs {
            self.check_value(k, v)?;
        }
        s.set_many(&b, pairs).await?;
        self.written_bytes += pairs.iter().map(|(_, v)| v.len() as u64).sum::<u64>();
        Ok(())
    }
}

/// The stored name of `bucket` for `owner`: `BUCKET@` (a session) or `BUCKET~` (an identity)
/// and 16 hex digits of the owner's SHA-256 (a session id, a bearer of the session over HTTP,
/// is never stored, nor is who someone is). Neither `@` nor `~` is in any bucket name a plugin
/// can open, so no plugin reaches another owner's bucket by name.
fn scoped(bucket: &str, mark: char, owner: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(owner.as_bytes());
    format!("{bucket}{mark}{}", hex::encode(&digest[..8]))
}

/// What the guest is told: a bucket its manifest does not request is `no-such-store`, one the
/// operator has not granted `access-denied` (the call's failure names the grant), anything
/// else `other` with the whole message.
fn wit(e: KvError) -> Error {
    match e {
        KvError::NotRequested { .. } => {
            tracing::debug!("{e}");
            Error::NoSuchStore
        }
        KvError::NotGranted { .. } => {
            tracing::debug!("{e}");
            Error::AccessDenied
        }
        e => Error::Other(e.to_string()),
    }
}

fn own<T: 'static>(rep: u32) -> Resource<T> {
    Resource::new_own(rep)
}

impl store::Host for KvCall {
    fn open(&mut self, identifier: String) -> wasmtime::Result<Result<Resource<Bucket>, Error>> {
        Ok(self.open(&identifier).map(own).map_err(wit))
    }
}

impl store::HostBucket for KvCall {
    async fn get(&mut self, b: Resource<Bucket>, key: String) -> Result<Option<Vec<u8>>, Error> {
        KvCall::get(self, b.rep(), &key).await.map_err(wit)
    }

    async fn set(&mut self, b: Resource<Bucket>, key: String, value: Vec<u8>) -> Result<(), Error> {
        KvCall::set(self, b.rep(), &key, &value).await.map_err(wit)
    }

    async fn delete(&mut self, b: Resource<Bucket>, key: String) -> Result<(), Error> {
        let (s, bucket) = self.bucket(b.rep(), 1, [key.as_str()]).map_err(wit)?;
        s.delete(&bucket, &key).await.map_err(wit)
    }

    async fn exists(&mut self, b: Resource<Bucket>, key: String) -> Result<bool, Error> {
        let (s, bucket) = self.bucket(b.rep(), 1, [key.as_str()]).map_err(wit)?;
        s.exists(&bucket, &key).await.map_err(wit)
    }

    async fn list_keys(&mut self, b: Resource<Bucket>, cursor: Option<String>) -> Result<KeyResponse, Error> {
        let (s, bucket) = self.bucket(b.rep(), 1, []).map_err(wit)?;
        let (keys, cursor) = s.list_keys(&bucket, cursor.as_deref()).await.map_err(wit)?;
        Ok(KeyResponse { keys, cursor })
    }

    fn drop(&mut self, b: Resource<Bucket>) -> wasmtime::Result<()> {
        if let Some(slot) = self.buckets.get_mut(b.rep() as usize) {
            *slot = None;
        }
        Ok(())
    }
}

impl atomics::Host for KvCall {
    async fn increment(&mut self, b: Resource<Bucket>, key: String, delta: i64) -> Result<i64, Error> {
        let (s, bucket) = self.bucket(b.rep(), 1, [key.as_str()]).map_err(wit)?;
        s.increment(&bucket, &key, delta).await.map_err(wit)
    }

    async fn swap(&mut self, cas: Resource<Cas>, value: Vec<u8>) -> Result<(), CasError> {
        let Some(state) = self.cas.get_mut(cas.rep() as usize).and_then(Option::take) else {
            return Err(CasError::StoreError(Error::Other("no such compare-and-swap handle".into())));
        };
        let rep = self.buckets.iter().position(|b| b.as_deref() == Some(&*state.bucket));
        let checked = match rep {
            Some(rep) => self.bucket(rep as u32, 1, [state.key.as_str()]).and_then(|sb| {
                self.check_value(&state.key, &value)?;
                Ok(sb)
            }),
            None => Err(KvError::Unavailable {
                plugin: self.plugin.to_string(),
                at: "this call".into(),
                why: format!("bucket `{}` was closed", state.bucket),
            }),
        };
        let (s, bucket) = checked.map_err(|e| CasError::StoreError(wit(e)))?;
        match s.swap(&bucket, &state.key, state.current.as_deref(), &value).await {
            Ok(Swapped::Done) => {
                self.written_bytes += value.len() as u64;
                Ok(())
            }
            Ok(Swapped::Holds(now)) => {
                // A new handle holding what the key holds now, for the guest's next try.
                self.cas.push(Some(CasState { current: now, ..state }));
                Err(CasError::CasFailed(own((self.cas.len() - 1) as u32)))
            }
            Err(e) => Err(CasError::StoreError(wit(e))),
        }
    }
}

impl atomics::HostCas for KvCall {
    async fn new(&mut self, b: Resource<Bucket>, key: String) -> Result<Resource<Cas>, Error> {
        let (s, bucket) = self.bucket(b.rep(), 1, [key.as_str()]).map_err(wit)?;
        let current = s.get(&bucket, &key).await.map_err(wit)?;
        self.cas.push(Some(CasState { bucket, key, current }));
        Ok(own((self.cas.len() - 1) as u32))
    }

    async fn current(&mut self, cas: Resource<Cas>) -> Result<Option<Vec<u8>>, Error> {
        match self.cas.get(cas.rep() as usize) {
            Some(Some(state)) => Ok(state.current.clone()),
            _ => Err(Error::Other("no such compare-and-swap handle".into())),
        }
    }

    async fn drop(&mut self, cas: Resource<Cas>) -> wasmtime::Result<()> {
        if let Some(slot) = self.cas.get_mut(cas.rep() as usize) {
            *slot = None;
        }
        Ok(())
    }
}

impl batch::Host for KvCall {
    async fn get_many(&mut self, b: Resource<Bucket>, keys: Vec<String>) -> Result<Vec<Option<Pair>>, Error> {
        let (s, bucket) =
            self.bucket(b.rep(), keys.len().max(1), keys.iter().map(String::as_str)).map_err(wit)?;
        s.get_many(&bucket, &keys).await.map_err(wit)
    }

    async fn set_many(&mut self, b: Resource<Bucket>, key_values: Vec<Pair>) -> Result<(), Error> {
        KvCall::set_many(self, b.rep(), &key_values).await.map_err(wit)
    }

    async fn delete_many(&mut self, b: Resource<Bucket>, keys: Vec<String>) -> Result<(), Error> {
        let (s, bucket) =
            self.bucket(b.rep(), keys.len().max(1), keys.iter().map(String::as_str)).map_err(wit)?;
        s.delete_many(&bucket, &keys).await.map_err(wit)
    }
}

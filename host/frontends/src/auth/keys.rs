//! An authorization server's signing keys: found from its metadata (RFC 8414, or OpenID
//! discovery), fetched from its `jwks_uri`, kept for `[auth] jwks_max_age_s`, and fetched again
//! at once when a token names a key not among them (a rotation) — at most once per
//! [`MIN_REFETCH`], so that tokens naming made-up keys cannot make the host hammer the server.
//! Only public asymmetric signing keys are kept: a symmetric key in a key set is ignored (it
//! could only serve to forge tokens), and so is one meant for encryption.

use super::fetch::{Fetch, FetchError};
use super::settings::IssuerSettings;
use arc_swap::ArcSwapOption;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The least time between two fetches of one issuer's keys prompted by unknown key ids.
pub const MIN_REFETCH: Duration = Duration::from_secs(5);

/// One usable key.
pub(super) struct Key {
    pub decoding: DecodingKey,
    /// The algorithm the key set says the key is for, if it says.
    pub alg: Option<Algorithm>,
}

/// The keys of one fetch, by key id (`""` for a key without one).
struct KeySet {
    keys: HashMap<String, Arc<Key>>,
    fetched: Instant,
}

/// Why no key could be found for a token.
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyError {
    /// The key set was fetched (or is fresh) and has no such key.
    #[error("no signing key `{0}` at the authorization server")]
    Unknown(String),
    /// The keys could not be fetched and none are held: nothing can be verified.
    #[error("the authorization server's keys could not be fetched: {0}")]
    Unreachable(FetchError),
}

/// The keys of one trusted issuer.
pub(super) struct IssuerKeys {
    pub settings: IssuerSettings,
    max_age: Duration,
    held: ArcSwapOption<KeySet>,
    /// Held while fetching: one fetch at a time per issuer; its time, for [`MIN_REFETCH`].
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

impl IssuerKeys {
    pub fn new(settings: IssuerSettings, max_age: Duration) -> IssuerKeys {
        IssuerKeys {
            settings,
            max_age,
            held: ArcSwapOption::empty(),
            fetching: tokio::sync::Mutex::new(None),
        }
    }

    /// The key `kid` names (`None`: the token names none, which is fine when the set holds one
    /// key), fetching the set when it is not held, stale, or lacks that key.
    pub async fn key(&self, kid: Option<&str>, fetch: &Fetch) -> Result<Arc<Key>, KeyError> {
        let held = self.held.load_full();
        if let Some(set) = &held
            && set.fetched.elapsed() < self.max_age
            && let Some(k) = find(set, kid)
        {
            return Ok(k);
        }
        let set = self.refetch(held.as_ref().map(|s| s.fetched), fetch).await?;
        find(&set, kid).ok_or_else(|| KeyError::Unknown(kid.unwrap_or("(none)").to_string()))
    }

    /// The key set after a fetch, unless one happened since `seen` (then that one's result) or
    /// one happened less than [`MIN_REFETCH`] ago (then the keys held, however old: a server
    /// that went away must not make tokens it signed before fail between its keys' fetches).
    async fn refetch(&self, seen: Option<Instant>, fetch: &Fetch) -> Result<Arc<KeySet>, KeyError> {
        let mut last = self.fetching.lock().await;
        let held = self.held.load_full();
        let newer = held.as_ref().is_some_and(|s| Some(s.fetched) != seen);
        let recent = last.is_some_and(|t| t.elapsed() < MIN_REFETCH);
        if let Some(set) = held.as_ref().filter(|_| newer || recent) {
            return Ok(set.clone());
        }
        *last = Some(Instant::now());
        match self.fetch_set(fetch).await {
            Ok(set) => {
                let set = Arc::new(set);
                self.held.store(Some(set.clone()));
                Ok(set)
            }
            Err(e) => {
                tracing::warn!("[auth] keys of {}: {e}", self.settings.issuer);
                // Keys held from before are still the server's: a token they verify is good.
                held.ok_or(KeyError::Unreachable(e))
            }
        }
    }

    /// Hold the keys of JWK set `doc` as if just fetched (the verifier's unit tests).
    #[cfg(test)]
    pub fn preload(&self, doc: &serde_json::Value) {
        self.held.store(Some(Arc::new(KeySet { keys: usable_keys(doc), fetched: Instant::now() })));
    }

    async fn fetch_set(&self, fetch: &Fetch) -> Result<KeySet, FetchError> {
        let uri = match &self.settings.jwks_uri {
            Some(u) => u.clone(),
            None => fetch
                .metadata(&self.settings.issuer)
                .await?
                .jwks_uri
                .ok_or_else(|| FetchError::NoJwks { issuer: self.settings.issuer.clone() })?,
        };
        let doc = fetch.json(&uri).await?;
        let keys = usable_keys(&doc);
        tracing::debug!("[auth] {} keys of {} from {uri}", keys.len(), self.settings.issuer);
        Ok(KeySet { keys, fetched: Instant::now() })
    }
}

/// The key `kid` names; without a kid, the one key when the set holds exactly one.
fn find(set: &KeySet, kid: Option<&str>) -> Option<Arc<Key>> {
    match kid {
        Some(k) => set.keys.get(k).cloned(),
        None if set.keys.len() == 1 => set.keys.values().next().cloned(),
        None => None,
    }
}

/// The public signing keys of a JWK set document, each read on its own so that one key of a
/// kind this host does not know does not hide the others.
fn usable_keys(doc: &serde_json::Value) -> HashMap<String, Arc<Key>> {
    let Some(list) = doc.get("keys").and_then(|k| k.as_array()) else { return HashMap::new() };
    let mut out = HashMap::new();
    for value in list {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else { continue };
        if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_))
            || matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption))
        {
            continue;
        }
        // A key for encryption (`RSA-OAEP`, …) has an `alg` no signature uses.
        let alg = match jwk.common.key_algorithm.map(|a| a.to_string().parse::<Algorithm>()) {
            None => None,
            Some(Ok(a)) => Some(a),
            Some(Err(_)) => continue,
        };
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else { continue };
        out.insert(jwk.common.key_id.clone().unwrap_or_default(), Arc::new(Key { decoding, alg }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_signing_keys_are_kept() {
        let doc = serde_json::json!({"keys": [
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0c2VjcmV0c2VjcmV0"},
            {"kty": "EC", "kid": "enc", "use": "enc", "crv": "P-256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "EC", "kid": "sig", "alg": "ES256", "crv": "P-256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "weird", "kid": "unknown"},
            {"kty": "RSA", "kid": "oaep", "alg": "RSA-OAEP", "n": "AQAB", "e": "AQAB"}
        ]});
        let keys = usable_keys(&doc);
        assert_eq!(keys.keys().collect::<Vec<_>>(), vec!["sig"]);
        assert_eq!(keys["sig"].alg, Some(Algorithm::ES256));
        assert!(usable_keys(&serde_json::json!({"no": "keys"})).is_empty());
    }
}

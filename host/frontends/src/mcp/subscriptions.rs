//! Resource subscriptions: `resources/subscribe` and `unsubscribe` in a 2025 session, the
//! `resourceSubscriptions` of a 2026-07-28 `subscriptions/listen`. A resource's content is its
//! plugin's to give, so the host's one sign that it may read differently is that what serves it
//! changed: after a reload, each followed URI whose server is another plugin file (a new
//! version, another plugin, or none) gets `notifications/resources/updated`, once per change.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use toolhost_core::registry::LoadedPlugin;
use toolhost_core::registry::resources::{NoResource, find};

/// The most URIs one session or subscription follows (each costs a lookup per reload).
pub(crate) const MAX_WATCHED: usize = 256;

/// What served a URI: its plugin's name and file.
type Served = (Arc<str>, [u8; 32]);

fn served(plugins: &[Arc<LoadedPlugin>], uri: &str) -> Option<Served> {
    find(plugins, uri).ok().map(|f| of(f.plugin()))
}

fn of(plugin: &LoadedPlugin) -> Served {
    (plugin.name.clone(), plugin.hash)
}

/// Why a URI cannot be followed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotWatched {
    #[error(transparent)]
    Unknown(#[from] NoResource),
    #[error("this session follows {MAX_WATCHED} resources already: unsubscribe from one first")]
    Full,
}

/// The URIs a client follows, each with what served it when the client was last told.
#[derive(Default, Debug)]
pub(crate) struct Watched {
    uris: Mutex<BTreeMap<String, Option<Served>>>,
}

impl Watched {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Option<Served>>> {
        self.uris.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follow `uri`, which `plugins` must serve now (following it again changes nothing).
    pub(crate) fn add(&self, plugins: &[Arc<LoadedPlugin>], uri: &str) -> Result<(), NotWatched> {
        let now = of(find(plugins, uri)?.plugin());
        let mut uris = self.lock();
        if !uris.contains_key(uri) && uris.len() >= MAX_WATCHED {
            return Err(NotWatched::Full);
        }
        uris.insert(uri.to_string(), Some(now));
        Ok(())
    }

    /// Stop following `uri` (one not followed is no error, as the spec's clients expect).
    pub(crate) fn remove(&self, uri: &str) {
        self.lock().remove(uri);
    }

    /// The followed URIs whose server in `plugins` is not the one last told of; each is
    /// recorded as told.
    pub(crate) fn updated(&self, plugins: &[Arc<LoadedPlugin>]) -> Vec<String> {
        let mut uris = self.lock();
        let mut out = Vec::new();
        for (uri, last) in uris.iter_mut() {
            let now = served(plugins, uri);
            if now != *last {
                *last = now;
                out.push(uri.clone());
            }
        }
        out
    }

    /// Of `requested`, the URIs `plugins` serve now (at most [`MAX_WATCHED`]), followed.
    pub(crate) fn accept(&self, plugins: &[Arc<LoadedPlugin>], requested: &[String]) -> Vec<String> {
        requested.iter().filter(|uri| self.add(plugins, uri).is_ok()).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_whose_server_changed_is_updated_once_and_an_unknown_one_is_not_followed() {
        let w = Watched::default();
        assert!(matches!(w.add(&[], "docs://new"), Err(NotWatched::Unknown(_))));
        assert!(w.lock().is_empty());
        // Served by plugin `p` when last told; no plugin serves it now.
        w.lock().insert("docs://a".into(), Some(("p".into(), [0; 32])));
        w.lock().insert("docs://b".into(), None);
        assert_eq!(w.updated(&[]), ["docs://a"]);
        assert!(w.updated(&[]).is_empty(), "told once per change");
        w.remove("docs://a");
        assert_eq!(w.lock().len(), 1);
    }
}

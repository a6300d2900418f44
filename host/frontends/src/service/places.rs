//! Places clients may hold in the host's memory — calls waiting for a slot (`[serve]
//! max_waiting_calls…`), 2025 MCP sessions (`[mcp] max_sessions…`) — counted in all and per
//! client, so that no client, and no crowd of them, can make the host hold more than the caps.
//!
//! A client ([`Peer`]) is the token it authenticated with when `[mcp] tokens` are configured
//! (behind a proxy every client has the proxy's address, and a token names who it was given
//! to), else its IP address. A place with no client (stdio, the console) counts only in all.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Who holds a place, for the per-client cap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Peer {
    /// The name of the `[mcp] tokens` entry the requests authenticated with.
    Token(String),
    /// The key of the OAuth principal the requests authenticated as (`Principal::key`).
    Principal(String),
    /// The IP address an unauthenticated request came from.
    Address(IpAddr),
}

impl Peer {
    /// The client of a call: the static token it authenticated with, else the OAuth principal
    /// it authenticated as, else the address it came from (if known).
    pub fn of(ctx: &toolhost_core::executor::CallContext) -> Option<Peer> {
        match (&ctx.token, ctx.principal.as_ref().filter(|p| !p.is_local()), ctx.peer) {
            (Some(t), _, _) => Some(Peer::Token(t.clone())),
            (None, Some(p), _) => Some(Peer::Principal(p.key())),
            (None, None, Some(a)) => Some(Peer::Address(a)),
            (None, None, None) => None,
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Token(name) => write!(f, "token `{name}`"),
            Peer::Principal(key) => write!(f, "principal `{key}`"),
            Peer::Address(a) => write!(f, "{a}"),
        }
    }
}

/// Which cap a refused place hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// `max` places are held, all clients together.
    Total { max: usize },
    /// The client holds `max` places already.
    Peer { max: usize },
}

/// The places of one kind, against their caps.
#[derive(Debug)]
pub struct Places {
    max_total: usize,
    max_per_peer: usize,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    by_peer: HashMap<Peer, usize>,
}

/// One place taken; dropping it frees it.
#[derive(Debug)]
pub struct Place {
    places: Arc<Places>,
    peer: Option<Peer>,
}

impl Places {
    pub fn new(max_total: usize, max_per_peer: usize) -> Arc<Places> {
        Arc::new(Places { max_total, max_per_peer: max_per_peer.min(max_total), held: Default::default() })
    }

    /// Whether `peer` could take a place now (nothing is taken: see [`Places::take`]).
    pub fn room(&self, peer: Option<&Peer>) -> Result<(), Full> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        self.check(&held, peer)
    }

    /// A place for `peer`, or the cap it hits.
    pub fn take(self: &Arc<Self>, peer: Option<Peer>) -> Result<Place, Full> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        self.check(&held, peer.as_ref())?;
        held.total += 1;
        if let Some(p) = &peer {
            *held.by_peer.entry(p.clone()).or_default() += 1;
        }
        Ok(Place { places: self.clone(), peer })
    }

    fn check(&self, held: &Held, peer: Option<&Peer>) -> Result<(), Full> {
        if held.total >= self.max_total {
            return Err(Full::Total { max: self.max_total });
        }
        if let Some(p) = peer
            && held.by_peer.get(p).copied().unwrap_or(0) >= self.max_per_peer
        {
            return Err(Full::Peer { max: self.max_per_peer });
        }
        Ok(())
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut held = self.places.held.lock().unwrap_or_else(|p| p.into_inner());
        held.total -= 1;
        if let Some(p) = &self.peer
            && let Some(n) = held.by_peer.get_mut(p)
        {
            *n -= 1;
            if *n == 0 {
                held.by_peer.remove(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_capped_in_all_and_per_client_and_freed_when_dropped() {
        let places = Places::new(3, 2);
        let from = |ip: &str| toolhost_core::executor::CallContext {
            peer: Some(ip.parse().unwrap()),
            ..Default::default()
        };
        let a = Peer::of(&from("127.0.0.2"));
        let b = Peer::of(&from("127.0.0.3"));
        let a1 = places.take(a.clone()).unwrap();
        let _a2 = places.take(a.clone()).unwrap();
        assert_eq!(places.take(a.clone()).unwrap_err(), Full::Peer { max: 2 });
        assert_eq!(places.room(a.as_ref()), Err(Full::Peer { max: 2 }));
        let _b1 = places.take(b.clone()).unwrap();
        assert_eq!(places.take(b.clone()).unwrap_err(), Full::Total { max: 3 });
        assert_eq!(places.take(None).unwrap_err(), Full::Total { max: 3 }, "no client: the total only");
        drop(a1);
        assert!(places.room(a.as_ref()).is_ok());
        let _a3 = places.take(a).unwrap();
        let token =
            Peer::of(&toolhost_core::executor::CallContext { token: Some("ci".into()), ..from("127.0.0.2") });
        assert_eq!(token, Some(Peer::Token("ci".into())), "a token names the client, not its address");
        let alice = toolhost_core::identity::Principal {
            issuer: Some("https://as".into()),
            via: toolhost_core::identity::Via::Oauth,
            ..toolhost_core::identity::Principal::token("alice")
        };
        let oauth = Peer::of(&toolhost_core::executor::CallContext {
            principal: Some(std::sync::Arc::new(alice)),
            ..from("127.0.0.2")
        });
        assert_eq!(oauth, Some(Peer::Principal("oauth:https://as#alice".into())), "an OAuth principal too");
    }
}

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
    /// The IP address an unauthenticated request came from.
    Address(IpAddr),
}

impl Peer {
    /// The client of a request that authenticated with `token` (if any) from `address` (if
    /// known).
    pub fn of(token: Option<&str>, address: Option<IpAddr>) -> Option<Peer> {
        match (token, address) {
            (Some(t), _) => Some(Peer::Token(t.to_string())),
            (None, Some(a)) => Some(Peer::Address(a)),
            (None, None) => None,
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Token(name) => write!(f, "token `{name}`"),
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
        let a = Peer::of(None, Some("127.0.0.2".parse().unwrap()));
        let b = Peer::of(None, Some("127.0.0.3".parse().unwrap()));
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
        let token = Peer::of(Some("ci"), Some("127.0.0.2".parse().unwrap()));
        assert_eq!(token, Some(Peer::Token("ci".into())), "a token names the client, not its address");
    }
}

//! The host's own listening sockets, which no plugin's HTTP request may reach, whatever its
//! grant (`net_private` included): a plugin that could talk to `serve --http` could answer its
//! own danger questions, grant itself secrets through the console or approve its own held
//! version.
//!
//! Whoever opens a listener registers the address it bound ([`register`]; the guard unregisters
//! it when dropped). The `http` import checks every destination against the registry twice:
//! an IP literal in the URL before anything is sent, and the connected socket's peer address
//! before a byte of the request is written ([`PeerCheckLayer`], a layer around reqwest's
//! connector). The second check is what makes a name useless for getting around the first
//! (DNS rebinding, a name resolving to `127.0.0.1`): it looks at the address the kernel
//! actually connected to.
//!
//! A listener bound to an unspecified address (`0.0.0.0`, `::`) is reached on every address of
//! the machine, so on its port every local address counts: loopback, and any address this
//! machine can bind (the test is a `bind` of a UDP socket to it, which succeeds only for a local
//! address). An IPv4-mapped IPv6 address is the IPv4 address.
//!
//! What this cannot see: a path to a listener through another machine or another program — a
//! NAT that forwards a public address back here, a reverse proxy, a port forward. The console
//! and the MCP endpoint's questions are locked by a token or the process's local key for
//! those (see the front ends).

use hyper_util::client::legacy::connect::{Connection, HttpInfo};
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// A request refused because its destination is one of the host's own listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{addr} is toolhost's own listener (it serves on {listener}): no plugin may reach the host's own servers, whatever its grant (net_private included)"
)]
pub struct OwnListener {
    /// The destination the plugin tried.
    pub addr: SocketAddr,
    /// The listener it would have reached, as registered.
    pub listener: SocketAddr,
}

/// The registered listeners, by registration number.
static LISTENERS: Mutex<Vec<(u64, SocketAddr)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One registered listener; dropping it unregisters the address.
#[derive(Debug)]
#[must_use = "the listener is unregistered when this is dropped"]
pub struct Registered {
    id: u64,
    addr: SocketAddr,
}

impl Registered {
    /// The address registered.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut all = LISTENERS.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|(id, _)| *id != self.id);
    }
}

/// Register `addr` (a listening socket's local address) as the host's own, until the returned
/// guard is dropped.
pub fn register(addr: SocketAddr) -> Registered {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    LISTENERS.lock().unwrap_or_else(|p| p.into_inner()).push((id, addr));
    Registered { id, addr }
}

/// The listener a connection to `dest` would reach, if it is one of the host's own.
pub fn check(dest: SocketAddr) -> Result<(), OwnListener> {
    let all: Vec<SocketAddr> =
        LISTENERS.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(_, a)| *a).collect();
    match all.into_iter().find(|l| reaches(*l, dest, is_local)) {
        Some(listener) => Err(OwnListener { addr: dest, listener }),
        None => Ok(()),
    }
}

/// Whether a connection to `dest` reaches `listener`, `is_local` telling whether an address
/// is one of this machine's.
fn reaches(listener: SocketAddr, dest: SocketAddr, is_local: impl Fn(IpAddr) -> bool) -> bool {
    if listener.port() != dest.port() {
        return false;
    }
    let (l, d) = (listener.ip().to_canonical(), dest.ip().to_canonical());
    // Connecting to an unspecified address connects to this machine.
    if d.is_unspecified() {
        return true;
    }
    if l.is_unspecified() {
        return d.is_loopback() || is_local(d);
    }
    l == d
}

/// Whether `ip` is an address of this machine: only those can be bound.
fn is_local(ip: IpAddr) -> bool {
    std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// A layer for reqwest's connector (`ClientBuilder::connector_layer`) that refuses a
/// connection whose peer is one of the host's own listeners, once connected and before the
/// request is written, and one whose peer address cannot be known.
#[derive(Debug, Clone, Copy, Default)]
pub struct PeerCheckLayer;

impl<S> tower_layer::Layer<S> for PeerCheckLayer {
    type Service = PeerCheck<S>;

    fn layer(&self, inner: S) -> PeerCheck<S> {
        PeerCheck { inner }
    }
}

/// The service [`PeerCheckLayer`] wraps around the connector.
#[derive(Debug, Clone)]
pub struct PeerCheck<S> {
    inner: S,
}

/// Why a connection was refused by [`PeerCheck`].
#[derive(Debug, thiserror::Error)]
pub enum PeerRefused {
    #[error(transparent)]
    OwnListener(#[from] OwnListener),
    /// The connection does not say which address it reached (never for TCP).
    #[error("the connection does not say which address it reached, so it cannot be checked")]
    UnknownPeer,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, R> tower_service::Service<R> for PeerCheck<S>
where
    S: tower_service::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: R) -> Self::Future {
        let connecting = self.inner.call(dst);
        Box::pin(async move {
            let conn = connecting.await.map_err(Into::into)?;
            let mut extensions = http::Extensions::new();
            conn.connected().get_extras(&mut extensions);
            let info = extensions.get::<HttpInfo>().ok_or(PeerRefused::UnknownPeer)?;
            check(info.remote_addr()).map_err(PeerRefused::from)?;
            Ok(conn)
        })
    }
}

/// The [`OwnListener`] refusal somewhere in `e`'s chain of sources, if that is why it failed.
pub fn refusal_in(e: &(dyn std::error::Error + 'static)) -> Option<OwnListener> {
    let mut src = Some(e);
    while let Some(s) = src {
        if let Some(PeerRefused::OwnListener(o)) = s.downcast_ref::<PeerRefused>() {
            return Some(*o);
        }
        if let Some(o) = s.downcast_ref::<OwnListener>() {
            return Some(*o);
        }
        src = s.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_listener_is_reached_on_its_address_and_port_only() {
        let none = |_| false;
        assert!(reaches(a("127.0.0.1:8765"), a("127.0.0.1:8765"), none));
        assert!(!reaches(a("127.0.0.1:8765"), a("127.0.0.1:8766"), none), "another port is allowed");
        assert!(!reaches(a("127.0.0.1:8765"), a("127.0.0.2:8765"), none), "another loopback address");
        assert!(!reaches(a("127.0.0.1:8765"), a("[::1]:8765"), none));
        assert!(reaches(a("[::1]:8765"), a("[::1]:8765"), none));
        // An IPv4-mapped IPv6 address is the IPv4 address, on either side.
        assert!(reaches(a("127.0.0.1:8765"), a("[::ffff:127.0.0.1]:8765"), none));
        assert!(reaches(a("[::ffff:10.0.0.5]:80"), a("10.0.0.5:80"), none));
        // Connecting to an unspecified address connects to this machine.
        assert!(reaches(a("127.0.0.1:8765"), a("0.0.0.0:8765"), none));
        assert!(reaches(a("[::1]:8765"), a("[::]:8765"), none));
    }

    #[test]
    fn a_wildcard_listener_covers_every_local_address_on_its_port() {
        let local = |ip: IpAddr| ip == "192.0.2.10".parse::<IpAddr>().unwrap();
        for listener in ["0.0.0.0:8765", "[::]:8765"] {
            let l = a(listener);
            assert!(reaches(l, a("127.0.0.1:8765"), local), "{listener}: loopback");
            assert!(reaches(l, a("127.0.0.53:8765"), local), "{listener}: all of 127/8");
            assert!(reaches(l, a("[::1]:8765"), local), "{listener}: IPv6 loopback");
            assert!(reaches(l, a("[::ffff:127.0.0.1]:8765"), local), "{listener}: v4-mapped");
            assert!(reaches(l, a("192.0.2.10:8765"), local), "{listener}: an interface's address");
            assert!(reaches(l, a("[::ffff:192.0.2.10]:8765"), local), "{listener}: mapped interface");
            assert!(!reaches(l, a("192.0.2.11:8765"), local), "{listener}: another machine");
            assert!(!reaches(l, a("127.0.0.1:8766"), local), "{listener}: another port");
        }
    }

    #[test]
    fn local_addresses_are_those_this_machine_can_bind() {
        assert!(is_local("127.0.0.1".parse().unwrap()));
        assert!(is_local("127.0.0.2".parse().unwrap()));
        // TEST-NET-3 is never assigned to a machine.
        assert!(!is_local("203.0.113.77".parse().unwrap()));
    }

    #[test]
    fn registered_listeners_are_refused_until_dropped() {
        // A port no other test registers.
        let addr = a("127.0.0.1:1");
        assert_eq!(check(addr), Ok(()));
        let r = register(addr);
        let e = check(addr).unwrap_err();
        assert_eq!(e, OwnListener { addr, listener: addr });
        let text = e.to_string();
        assert!(
            text.contains("127.0.0.1:1 is toolhost's own listener") && text.contains("net_private"),
            "{text}"
        );
        assert_eq!(check(a("127.0.0.1:2")), Ok(()));
        let boxed: BoxError = Box::new(PeerRefused::from(e));
        assert_eq!(refusal_in(&*boxed), Some(e));
        drop(r);
        assert_eq!(check(addr), Ok(()));
    }
}

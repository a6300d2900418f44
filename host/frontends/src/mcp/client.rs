//! Who an MCP request over HTTP comes from, and whether they are still there: what the front
//! door (`http.rs`) puts in each request's extensions for the handler, the direct path and the
//! session manager (which read them back from rmcp's `http::request::Parts`).

use crate::service::places::Peer;
use std::sync::Arc;
use toolhost_core::executor::Cancel;
use toolhost_core::identity::Principal;

/// The name of the `[mcp] tokens` entry a request authenticated with, put in the request's
/// extensions for the MCP handler (which reads it back from rmcp's `http::request::Parts`).
#[derive(Debug, Clone)]
pub struct TokenName(pub String);

/// Who a request authenticated as (a static token's principal or an OAuth access token's), put
/// in its extensions for the handler, the direct path and the caps.
#[derive(Debug, Clone)]
pub struct Identity(pub std::sync::Arc<toolhost_core::identity::Principal>);

/// Put in a request's extensions, without `[mcp] tokens`, when it carries the process's local
/// key as its bearer token: only such a client is asked (and may answer) a danger or grant
/// question (see `keyless.rs`).
#[derive(Debug, Clone, Copy)]
pub struct LocalOperator;

/// Who a request proved it is, as the front door found (`http::FrontDoor::identify`).
#[derive(Debug, Clone)]
pub(crate) enum Who {
    /// One of `[mcp] tokens`, by name, and its principal.
    Token(String, Arc<Principal>),
    /// An OAuth access token's principal (`[auth]`).
    Oauth(Arc<Principal>),
    /// Without tokens or `[auth]`: the process's local key.
    LocalOperator,
}

/// The IP address the request came from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerAddr(pub std::net::IpAddr);

/// The client the caps on what one client may hold count the request against (its token's
/// name, else its address: see `service::places`).
#[derive(Debug, Clone)]
pub(crate) struct Client(pub Option<Peer>);

/// Fires once the request's answer is dropped — sent, or its connection closed first (hyper
/// drops a request's future and its response when the client closes). A call of the request
/// still waiting for a slot is then dropped before it runs, its arguments freed
/// (`CallControl::gone`); a call already running is not stopped by it.
#[derive(Debug, Clone)]
pub(crate) struct ClientGone(pub Cancel);

/// Fires its [`ClientGone`] when dropped: held by the request's future, then by its answer's
/// body until hyper is done with it.
pub(crate) struct GoneOnDrop(Cancel);

impl Drop for GoneOnDrop {
    fn drop(&mut self) {
        self.0.cancel("its client");
    }
}

/// Put who the request comes from (`ip`, and `who` it proved it is) in its extensions, and for a
/// `post` what fires when its client is gone: the guard to hold until its answer is done.
pub(crate) fn mark(
    extensions: &mut hyper::http::Extensions,
    ip: std::net::IpAddr,
    who: Option<Who>,
    post: bool,
) -> Option<GoneOnDrop> {
    extensions.insert(PeerAddr(ip));
    let peer = match &who {
        Some(Who::Token(name, _)) => Peer::Token(name.clone()),
        Some(Who::Oauth(p)) => Peer::Principal(p.key()),
        Some(Who::LocalOperator) | None => Peer::Address(ip),
    };
    extensions.insert(Client(Some(peer)));
    match who {
        Some(Who::Token(name, p)) => {
            extensions.insert(TokenName(name));
            extensions.insert(Identity(p));
        }
        Some(Who::Oauth(p)) => {
            extensions.insert(Identity(p));
        }
        Some(Who::LocalOperator) => {
            extensions.insert(LocalOperator);
        }
        None => {}
    }
    post.then(|| {
        let gone = Cancel::new();
        extensions.insert(ClientGone(gone.clone()));
        GoneOnDrop(gone)
    })
}

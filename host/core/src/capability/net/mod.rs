//! Outbound HTTP for plugins: the host side of the `toolhost:plugin/http` import, served with
//! `reqwest` on the host's tokio runtime.
//!
//! Plugins never get sockets (WASI `allow_tcp/udp/ip_name_lookup` are off). Every request a
//! plugin makes through this import is checked here, in this order:
//! 1. the per-call request budget (`[net] max_requests_per_call`);
//! 2. the method (GET, HEAD, POST, PUT, PATCH, DELETE) and the scheme (http, https only);
//! 3. the host, after URL parsing, against both the plugin's manifest request and the
//!    operator's grant (`[plugin.NAME] net = [...]`);
//! 4. the addresses the name resolves to (or the IP literal): loopback, private, link-local,
//!    CGNAT, multicast and unspecified ranges are refused unless the operator set
//!    `net_private = true` for that plugin — so a granted name that resolves to 127.0.0.1
//!    cannot reach the host's own services. Resolution happens in the client's resolver, so
//!    the address checked is the address connected to;
//! 5. the host's own listeners ([`listeners`]: `serve --http`'s port) are refused to every
//!    plugin, whatever its grant: an IP literal before anything is sent, and the connected
//!    socket's peer address before the request is written;
//! 6. redirects are followed by this module (never by reqwest), each hop checked as above;
//!    secret headers (and `Authorization`, `Cookie`) are dropped as soon as a redirect changes
//!    the origin — scheme, host or port;
//! 7. a timeout (the sooner of `[net] timeout_ms` and the call's own deadline) and a response
//!    size cap (the body is cut and marked `truncated`);
//! 8. a request body cap (`[net] max_request_kb`, refused before anything is sent) and a
//!    per-call transfer budget (`[net] max_transfer_mb`, request bodies sent plus response
//!    bodies received; a response is cut at what is left, a request that does not fit is
//!    refused).
//!
//! # Secrets
//!
//! A secret is injected as a header the plugin names, only on a request to an origin the
//! operator bound it to ([`SecretOrigin`]: `[secrets.NAME] hosts`, https on port 443 unless an
//! entry says otherwise). Its value never enters the guest. What a server sends back is the
//! risk: a server that echoes request headers would hand the value to the plugin. So, for a
//! plugin that holds any secret (whether or not this request carries one — a server may store
//! what an earlier request sent):
//!
//! - **No redaction, refusal.** A response that contains the value of one of the plugin's
//!   secrets — in a header of any hop, in the final URL, in the body — is refused as a whole
//!   (an `Err` naming the secret and where it was), never returned masked. Masking is an
//!   oracle: a plugin that sends a guess in a header and sees it come back masked or not
//!   learns whether it guessed right, and a masked response still shows where the value
//!   stood and how long it was. An error the host would return is checked the same way.
//! - **Truncation cannot cut a secret.** A body cut at the response cap or at the end of the
//!   transfer budget could end inside a reflected value, and a cut value is not the value:
//!   the whole-value check would not see it, and the plugin would read its first bytes. So the
//!   host reads `L - 1` bytes past the cut (`L`: the length of the plugin's longest secret),
//!   checks that whole window for whole values, and only then cuts. Any occurrence that
//!   starts before the cut ends inside the window, so it is seen and the response refused;
//!   an occurrence that starts at or after the cut is not returned at all. The read-ahead stays
//!   inside the transfer budget (when the budget is what cuts the body, the cut comes `L - 1`
//!   bytes earlier), so the budget still holds exactly.
//!
//!   Why not check the cut itself (refuse when the body ends with the start of a secret)?
//!   Because the plugin controls what the server echoes: it would put a guess at the cut and
//!   learn from the refusal whether the guess is the start of the secret, one character at a
//!   time. With the read-ahead, the only thing that decides a refusal is whether a *complete*
//!   value occurs in bytes the host read, so a guess teaches the plugin exactly one thing:
//!   whether that complete guess is the secret — no more than it could learn by sending the
//!   guess to the server as a password.
//! - **The host owns the encoding.** A gzip'd echo carries the value in a form no byte check
//!   can see. The host sends `Accept-Encoding: identity` (whatever the plugin set), refuses
//!   plugin-set `Range`, `If-Range` and `TE` (a partial body is a cut the host did not make),
//!   and refuses a response that is content-encoded anyway, uses a transfer coding other
//!   than `chunked`, or is partial content (206 or `Content-Range`).
//!
//! What cannot be caught: a server that transforms the value before echoing it (base64, hex,
//! percent-encoding, case folding, compression without saying so, an excerpt it cuts itself)
//! hands the plugin the secret in a form no check recognises. The value's *length* is not
//! hidden either (a reflecting server's `Content-Length` shows it). Bind each secret to the
//! origins that need it and grant it only to plugins whose servers do not reflect it.
//!
//! Values are still redacted from everything a call returns and from the plugin's log lines
//! ([`redact`]): the guest never sees those, so the difference cannot teach it anything.

mod call;
mod capability;
mod client;
mod error;
mod grant;
pub mod listeners;
pub mod settings;

pub use call::NetCall;
pub use capability::Net;
pub use client::non_public;
pub use error::{NetError, Place, ResolvedPrivate};
pub use grant::{GrantedSecret, NetGrant, effective, redact, redact_owned, redaction_set};
pub use settings::{NetConfig, NetSettings, Origin, SecretOrigin};

/// What the host refused a call for want of a grant (see [`crate::capability::Refusal`]).
pub use crate::capability::Refusal;

#[cfg(test)]
mod tests;

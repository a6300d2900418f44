//! Why the host refused or could not serve a plugin's HTTP request ([`NetError`]): one variant
//! per reason, so the host tells a missing grant from a failure by its variant; the plugin gets
//! the text, at the WIT boundary only.

use super::call::METHODS;
use super::listeners::OwnListener;
use super::{Origin, SecretOrigin};
use crate::capability::Refusal;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// Why one request of a plugin was refused or failed. The text names the grant or setting
/// that would allow it, as the plugin (and its caller) reads it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NetError {
    /// The destination is one of the host's own listeners (whatever the grant).
    #[error("request to {url} refused: {own}")]
    OwnListener { url: String, own: OwnListener },
    /// No host is granted, and the manifest requests none. `host`: the one tried (or `HOST`).
    #[error(
        "plugin `{plugin}` has no network access: its manifest requests no hosts (add `net = \"host\"` to its #[toolhost_sdk::plugin(...)])"
    )]
    NothingRequested { plugin: Arc<str>, host: String },
    /// The manifest requests hosts, but the operator granted none.
    #[error(
        "plugin `{plugin}` has no network access: it requests {} but no host is granted; the operator can add [plugin.{plugin}] net = [\"{host}\"] in toolhost.toml (or --allow-net {plugin}={host})",
        .requested.join(", ")
    )]
    NothingGranted { plugin: Arc<str>, host: String, requested: Vec<String> },
    #[error("too many HTTP requests in one call (limit {limit}: [net] max_requests_per_call)")]
    TooManyRequests { limit: u32 },
    /// A request body over `[net] max_request_kb` (`limit`, in bytes).
    #[error(
        "request body of {} KiB is over the limit of {} KiB per request ([net] max_request_kb = {} in toolhost.toml); nothing was sent",
        .bytes.div_ceil(1024), .limit / 1024, .limit / 1024
    )]
    BodyTooLarge { bytes: u64, limit: u64 },
    #[error("HTTP method {method:?} is not supported; use one of {}", METHODS.join(", "))]
    Method { method: String },
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: url::ParseError },
    #[error("scheme `{scheme}` is not allowed (http and https only): {url}")]
    Scheme { scheme: String, url: String },
    #[error("URL has no host: {url}")]
    NoHost { url: String },
    /// The host matches none of the manifest's requested patterns.
    #[error(
        "host `{host}` is not in plugin `{plugin}`'s manifest request (it asks for: {})",
        list_or_none(.requested)
    )]
    HostNotRequested { plugin: Arc<str>, host: String, requested: Vec<String> },
    /// Requested, but not granted by the operator.
    #[error(
        "host `{host}` is not granted to plugin `{plugin}`; the operator can add it with [plugin.{plugin}] net = [\"{host}\"] in toolhost.toml (or --allow-net {plugin}={host})"
    )]
    HostNotGranted { plugin: Arc<str>, host: String },
    /// An IP literal in a non-public range, without `net_private`.
    #[error("{host} is a {kind} address; private addresses need net_private = true in [plugin.{plugin}]")]
    PrivateAddress { plugin: Arc<str>, host: String, kind: &'static str },
    /// A name that resolves to a non-public address, without `net_private`.
    #[error(
        "request to {url} failed: {} resolves to {}, a {} address; private addresses need net_private = true in [plugin.{plugin}] of toolhost.toml",
        .resolved.host, .resolved.addr, .resolved.kind
    )]
    ResolvesPrivate { plugin: Arc<str>, url: String, resolved: ResolvedPrivate },
    #[error("header `{name}` is set by the host and cannot be set by a plugin")]
    ReservedHeader { name: String },
    /// `Range`, `If-Range` or `TE` from a plugin that holds secrets.
    #[error(
        "header `{name}` cannot be set by plugin `{plugin}`: it holds secrets, so the host asks for whole, unencoded responses, which it checks for them"
    )]
    PartialHeader { plugin: Arc<str>, name: String },
    #[error("secret `{secret}` cannot be sent as `{name}`: the host sets that header")]
    SecretAsHostHeader { secret: String, name: String },
    #[error("invalid header name {name:?}")]
    HeaderName { name: String },
    #[error("invalid value for header `{name}`")]
    HeaderValue { name: String },
    #[error(
        "secret `{secret}` is not granted to plugin `{plugin}`; the operator can add [plugin.{plugin}] secrets = [\"{secret}\"] and define [secrets.{secret}] in toolhost.toml"
    )]
    SecretNotGranted { plugin: Arc<str>, secret: String },
    /// The secret is not bound to the request's origin (`hosts`: where it may go; empty: https
    /// on port 443 anywhere).
    #[error("{}", secret_origin_refusal(.secret, .hosts, .origin))]
    SecretOrigin { secret: String, hosts: Vec<SecretOrigin>, origin: Origin },
    #[error("secret `{secret}` cannot be sent in a header (invalid characters)")]
    SecretValue { secret: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// Sending `bytes` would pass `[net] max_transfer_mb` (`limit`, in bytes).
    #[error(
        "sending {} KiB would pass this call's HTTP transfer budget of {} MiB (already sent {} KiB, received {} KiB; [net] max_transfer_mb = {} in toolhost.toml)",
        .bytes.div_ceil(1024), .limit / (1024 * 1024), .sent / 1024, .received / 1024, .limit / (1024 * 1024)
    )]
    TransferBudget { bytes: u64, limit: u64, sent: u64, received: u64 },
    #[error("the call's time limit was reached before the request could be sent")]
    Deadline,
    #[error("request to {url} timed out after {} ms", .after.as_millis())]
    Timeout { url: String, after: Duration },
    /// The request could not be made (connection, TLS, resolution): `cause` is the innermost
    /// reason the client gave.
    #[error("request to {url} failed: {cause}")]
    Failed { url: String, cause: String },
    #[error("{url} redirected to an invalid Location")]
    RedirectLocation { url: String },
    #[error("{url} redirected to invalid URL {location:?}: {reason}")]
    RedirectUrl { url: String, location: String, reason: url::ParseError },
    #[error("too many redirects (more than {limit}: [net] max_redirects), last to {next}")]
    TooManyRedirects { limit: u32, next: String },
    /// A redirect's target is refused as a first request would be.
    #[error("redirect from {url} refused: {refused}")]
    RedirectRefused { url: String, refused: Box<NetError> },
    #[error(
        "the URL that answered (after redirects) contains the value of secret `{secret}`; the response is refused as a whole: nothing of it is returned to plugin `{plugin}`"
    )]
    SecretInUrl { plugin: Arc<str>, secret: String },
    #[error(
        "the response from {url} contains the value of secret `{secret}` in {place}; it is refused as a whole (a plugin never receives a response that reflects one of its secrets): nothing of it is returned to plugin `{plugin}`"
    )]
    SecretReflected { plugin: Arc<str>, url: String, secret: String, place: Place },
    #[error("the response from {url} is content-encoded ({coding}); refused: {}", unchecked(.plugin))]
    ContentEncoded { plugin: Arc<str>, url: String, coding: String },
    #[error("the response from {url} uses transfer coding {coding}; refused: {}", unchecked(.plugin))]
    TransferCoding { plugin: Arc<str>, url: String, coding: String },
    #[error("the response from {url} is partial content (a range of the body); refused: {}", unchecked(.plugin))]
    PartialContent { plugin: Arc<str>, url: String },
    #[error("reading {url}: {cause}")]
    Reading { url: String, cause: String },
    #[error("reading {url} timed out after {} ms", .after.as_millis())]
    ReadTimeout { url: String, after: Duration },
    /// The failure's own text would hold a secret's value: replaced whole.
    #[error(
        "the request failed, and the host's error would contain the value of secret `{secret}`; nothing of it is returned to plugin `{plugin}`"
    )]
    SecretInError { plugin: Arc<str>, secret: String },
}

impl NetError {
    /// The grant whose absence this refusal is (what a grant question or a failed call's note
    /// can be about), or the private address it refused; `None` for a request refused for a
    /// reason of its own (a bad URL, a header).
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            NetError::NothingRequested { host, .. }
            | NetError::NothingGranted { host, .. }
            | NetError::HostNotRequested { host, .. }
            | NetError::HostNotGranted { host, .. } => Some(Refusal::Host(host.clone())),
            NetError::SecretNotGranted { secret, .. } => Some(Refusal::Secret(secret.clone())),
            NetError::PrivateAddress { host, .. } => Some(Refusal::Private(host.clone())),
            NetError::ResolvesPrivate { resolved, .. } => Some(Refusal::Private(resolved.host.clone())),
            NetError::RedirectRefused { refused, .. } => refused.refusal(),
            _ => None,
        }
    }
}

/// Where in a response a secret's value was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A header (its name, as received).
    Header(String),
    Body,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Header(name) => write!(f, "its `{name}` header"),
            Place::Body => f.write_str("its body"),
        }
    }
}

/// The resolver's refusal of a name that resolves to a non-public address; it travels through
/// the HTTP client's error chain, where [`ResolvedPrivate::find_in`] finds it again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host} resolves to {addr}, a {kind} address; private addresses need net_private = true for the plugin"
)]
pub struct ResolvedPrivate {
    pub host: String,
    pub addr: IpAddr,
    pub kind: &'static str,
}

impl ResolvedPrivate {
    /// The resolver's refusal somewhere in `e`'s chain of sources, if that is why it failed.
    pub fn find_in(e: &(dyn std::error::Error + 'static)) -> Option<ResolvedPrivate> {
        let mut src = Some(e);
        while let Some(s) = src {
            if let Some(r) = s.downcast_ref::<ResolvedPrivate>() {
                return Some(r.clone());
            }
            src = s.source();
        }
        None
    }
}

/// Why a secret may not be sent to `origin`, with the line that would allow it.
fn secret_origin_refusal(name: &str, hosts: &[SecretOrigin], origin: &Origin) -> String {
    if hosts.is_empty() {
        format!(
            "secret `{name}` may only be sent over https on port 443 (it has no [secrets.{name}] hosts), not to {origin}; the operator can bind it there with [secrets.{name}] hosts = [\"{origin}\"]"
        )
    } else {
        let list: Vec<String> = hosts.iter().map(ToString::to_string).collect();
        format!(
            "secret `{name}` may only be sent to {} (not {origin}); see [secrets.{name}] hosts",
            list.join(", ")
        )
    }
}

/// Why a response a plugin with secrets receives must come whole and unencoded.
fn unchecked(plugin: &str) -> String {
    format!(
        "plugin `{plugin}` holds secrets, and the host returns only bodies it can check for them (it asked for `Accept-Encoding: identity` and no range)"
    )
}

pub(super) fn list_or_none(v: &[String]) -> String {
    if v.is_empty() { "no hosts".to_string() } else { v.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_for_want_of_a_grant_name_what_was_refused() {
        let plugin: Arc<str> = Arc::from("web");
        let url = "https://a.example/x".to_string();
        let host = NetError::HostNotGranted { plugin: plugin.clone(), host: "a.example".into() };
        assert_eq!(host.refusal(), Some(Refusal::Host("a.example".into())));
        let redirect = NetError::RedirectRefused { url: url.clone(), refused: Box::new(host) };
        assert_eq!(redirect.refusal(), Some(Refusal::Host("a.example".into())), "a redirect's target too");
        let secret = NetError::SecretNotGranted { plugin: plugin.clone(), secret: "gh".into() };
        assert_eq!(secret.refusal(), Some(Refusal::Secret("gh".into())));
        let private = NetError::PrivateAddress { plugin, host: "10.0.0.1".into(), kind: "private" };
        // Recorded (the failed call's note then lists no candidate grant: the error says why),
        // and never asked about: net_private is no grant a question can give (`askable`).
        assert_eq!(private.refusal(), Some(Refusal::Private("10.0.0.1".into())));
        assert_eq!(NetError::Timeout { url, after: Duration::from_millis(1500) }.refusal(), None);
    }

    #[test]
    fn sizes_are_shown_in_the_units_of_their_settings() {
        let e = NetError::BodyTooLarge { bytes: 2049, limit: 1024 };
        assert_eq!(
            e.to_string(),
            "request body of 3 KiB is over the limit of 1 KiB per request ([net] max_request_kb = 1 in toolhost.toml); nothing was sent"
        );
        let e = NetError::TransferBudget { bytes: 1025, limit: 2 << 20, sent: 4096, received: 1 << 20 };
        assert_eq!(
            e.to_string(),
            "sending 2 KiB would pass this call's HTTP transfer budget of 2 MiB (already sent 4 KiB, received 1024 KiB; [net] max_transfer_mb = 2 in toolhost.toml)"
        );
    }
}

//! The console's sign-in at an authorization server of `[auth]`: the authorization code flow
//! with PKCE (RFC 7636, `S256`), the console a public client (no secret). [`SignIn::start`]
//! keeps a fresh `state` and verifier ([`super::pending`]) and gives the address of the issuer's
//! `authorization_endpoint` (from its metadata) asking for a token for `[auth] resource`
//! (RFC 8707); [`SignIn::finish`] takes the person's return: the state must be one this host
//! started, unspent and not expired, and the one the browser that started it holds; then the
//! code is exchanged at the `token_endpoint`, and the access token is checked by the same
//! [`Verifier`] as every MCP request's, never taken unchecked. What passes is the person's
//! principal, good until the token expires.

use super::fetch::{FetchError, Metadata, printable};
use super::pending::{Pending, Unknown};
use super::settings::SignInSettings;
use super::verify::{Refusal, Verifier, unverified_claims};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use toolhost_core::identity::Principal;

/// How long an issuer's metadata is used before it is read again.
const METADATA_AGE: Duration = Duration::from_secs(300);

/// Why a sign-in did not open a session. Each says what to do, and none carries a token.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("the metadata of {issuer} cannot be read: {why}")]
    Metadata { issuer: String, why: FetchError },
    #[error("the metadata of {issuer} names no usable {which}")]
    NoEndpoint { issuer: String, which: &'static str },
    #[error("the return from the authorization server lacks `{0}`: start the sign-in again")]
    Missing(&'static str),
    #[error("this sign-in was started in another browser, or its cookie is gone: start it again here")]
    OtherBrowser,
    #[error("{0}: start the sign-in again")]
    State(Unknown),
    #[error("the return names issuer {found:?}, not {wanted:?}")]
    OtherIssuer { found: String, wanted: String },
    #[error("{issuer} did not sign you in: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused { issuer: String, error: String, description: Option<String> },
    #[error("the code could not be exchanged for a token at {issuer}: {why}")]
    Exchange { issuer: String, why: FetchError },
    #[error("the token endpoint of {issuer} answered without a bearer access token")]
    NoToken { issuer: String },
    #[error("the access token from {issuer} is not accepted: {why}")]
    Token { issuer: String, why: Refusal },
    #[error("the access token from {issuer} says nothing of when it expires (no `exp`, no `expires_in`)")]
    NoExpiry { issuer: String },
}

impl SignInError {
    /// Whether the authorization server, not the person's return, failed (a `502`).
    pub fn is_upstream(&self) -> bool {
        matches!(
            self,
            SignInError::Metadata { .. } | SignInError::NoEndpoint { .. } | SignInError::NoToken { .. }
        ) || matches!(self, SignInError::Exchange { why, .. } if !matches!(why, FetchError::Oauth { .. }))
    }
}

/// A sign-in begun: where to send the browser, and the state it must come back with.
#[derive(Debug)]
pub struct Started {
    pub url: url::Url,
    pub state: String,
}

/// A sign-in done: who, and until when (the access token's expiry).
#[derive(Debug)]
pub struct SignedIn {
    pub principal: Arc<Principal>,
    pub until: SystemTime,
}

/// The console's sign-in at one issuer.
pub struct SignIn {
    settings: SignInSettings,
    verifier: Arc<Verifier>,
    pending: Pending,
    metadata: Mutex<Option<(Arc<Metadata>, Instant)>>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn").field("settings", &self.settings).finish_non_exhaustive()
    }
}

/// The parameters of the person's return to the callback.
#[derive(Default)]
struct Return {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    description: Option<String>,
    iss: Option<String>,
}

impl Return {
    fn parse(query: &str) -> Return {
        let mut r = Return::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let slot = match &*k {
                "state" => &mut r.state,
                "code" => &mut r.code,
                "error" => &mut r.error,
                "error_description" => &mut r.description,
                "iss" => &mut r.iss,
                _ => continue,
            };
            slot.get_or_insert_with(|| v.into_owned());
        }
        r
    }
}

impl SignIn {
    /// The sign-in `settings` describe, its tokens checked by `verifier` (the MCP front door's).
    pub fn new(settings: SignInSettings, verifier: Arc<Verifier>) -> SignIn {
        SignIn { settings, verifier, pending: Pending::default(), metadata: Mutex::default() }
    }

    pub fn settings(&self) -> &SignInSettings {
        &self.settings
    }

    /// Begin a sign-in: the authorization endpoint's address for this one, and its state.
    pub async fn start(&self) -> Result<Started, SignInError> {
        let metadata = self.metadata().await?;
        let endpoint = metadata.authorization_endpoint.as_ref().ok_or_else(|| SignInError::NoEndpoint {
            issuer: self.settings.issuer.clone(),
            which: "authorization_endpoint",
        })?;
        let begun = self.pending.begin();
        let url = authorization_url(endpoint, &self.settings, &begun.state, &begun.challenge);
        Ok(Started { url, state: begun.state })
    }

    /// The person's return to the callback, with `query` its query string and `browser` the
    /// state the browser's sign-in cookie holds.
    pub async fn finish(&self, query: &str, browser: Option<&str>) -> Result<SignedIn, SignInError> {
        use subtle::ConstantTimeEq;
        let r = Return::parse(query);
        let state = r.state.ok_or(SignInError::Missing("state"))?;
        if !browser.is_some_and(|b| bool::from(b.as_bytes().ct_eq(state.as_bytes()))) {
            return Err(SignInError::OtherBrowser);
        }
        let verifier = self.pending.take(&state).map_err(SignInError::State)?;
        let issuer = &self.settings.issuer;
        // RFC 9207: an issuer that names itself must be the one asked (no mix-up).
        if let Some(iss) = r.iss.filter(|i| i != issuer) {
            return Err(SignInError::OtherIssuer { found: printable(&iss), wanted: issuer.clone() });
        }
        if let Some(error) = r.error {
            let description = r.description.as_deref().map(printable);
            return Err(SignInError::Refused {
                issuer: issuer.clone(),
                error: printable(&error),
                description,
            });
        }
        let code = r.code.ok_or(SignInError::Missing("code"))?;
        let answer = self.exchange(&code, &verifier).await?;
        self.signed_in(&answer).await
    }

    /// The token endpoint's answer to the code and its verifier.
    async fn exchange(&self, code: &str, verifier: &str) -> Result<serde_json::Value, SignInError> {
        let issuer = &self.settings.issuer;
        let metadata = self.metadata().await?;
        let endpoint = metadata
            .token_endpoint
            .as_ref()
            .ok_or_else(|| SignInError::NoEndpoint { issuer: issuer.clone(), which: "token_endpoint" })?;
        let s = &self.settings;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", s.redirect_uri.as_str()),
            ("client_id", s.client_id.as_str()),
            ("code_verifier", verifier),
            ("resource", s.resource.as_str()),
        ];
        self.verifier
            .fetch()
            .post_form_public(endpoint, &form)
            .await
            .map_err(|why| SignInError::Exchange { issuer: issuer.clone(), why })
    }

    /// The principal of the token endpoint's `answer`, checked as an MCP request's token is.
    async fn signed_in(&self, answer: &serde_json::Value) -> Result<SignedIn, SignInError> {
        let issuer = || self.settings.issuer.clone();
        let bearer = answer
            .get("token_type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.eq_ignore_ascii_case("bearer"));
        let token = answer.get("access_token").and_then(|t| t.as_str()).filter(|_| bearer);
        let token = token.ok_or_else(|| SignInError::NoToken { issuer: issuer() })?;
        let principal = self
            .verifier
            .verify(Some(format!("Bearer {token}").as_bytes()))
            .await
            .map_err(|why| SignInError::Token { issuer: issuer(), why })?;
        let now = SystemTime::now();
        // Checked above: a JWT's `exp` is the verified one.
        let exp = unverified_claims(token)
            .and_then(|c| c.get("exp").and_then(|e| e.as_u64()))
            .map(|e| SystemTime::UNIX_EPOCH + Duration::from_secs(e));
        let expires_in =
            answer.get("expires_in").and_then(|e| e.as_u64()).map(|s| now + Duration::from_secs(s));
        let until = match (exp, expires_in) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return Err(SignInError::NoExpiry { issuer: issuer() }),
        };
        Ok(SignedIn { principal, until })
    }

    /// The issuer's metadata, read again after [`METADATA_AGE`].
    async fn metadata(&self) -> Result<Arc<Metadata>, SignInError> {
        if let Some((m, at)) = &*self.metadata.lock().unwrap_or_else(|p| p.into_inner())
            && at.elapsed() < METADATA_AGE
        {
            return Ok(m.clone());
        }
        let issuer = &self.settings.issuer;
        let m = Arc::new(
            self.verifier
                .fetch()
                .metadata(issuer)
                .await
                .map_err(|why| SignInError::Metadata { issuer: issuer.clone(), why })?,
        );
        *self.metadata.lock().unwrap_or_else(|p| p.into_inner()) = Some((m.clone(), Instant::now()));
        Ok(m)
    }
}

/// The authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 8707 §2.1) at `endpoint`.
fn authorization_url(endpoint: &url::Url, s: &SignInSettings, state: &str, challenge: &str) -> url::Url {
    let mut url = endpoint.clone();
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &s.client_id)
            .append_pair("redirect_uri", s.redirect_uri.as_str())
            .append_pair("state", state)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &s.resource);
        if !s.scopes.is_empty() {
            q.append_pair("scope", &s.scopes.join(" "));
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign_in() -> SignIn {
        let raw: super::super::RawAuth = serde_json::from_value(serde_json::json!({
            "resource": "http://127.0.0.1:9/mcp", "scopes": ["mcp:tools"],
            "issuers": [{"issuer": "http://127.0.0.1:9"}]
        }))
        .unwrap();
        let auth = raw.resolve(&Default::default(), std::path::Path::new("/")).unwrap();
        let settings =
            super::super::settings::RawSignIn { client_id: Some("console".into()), ..Default::default() }
                .resolve(Some(&auth))
                .unwrap()
                .unwrap();
        SignIn::new(settings, Arc::new(Verifier::new(auth)))
    }

    #[test]
    fn the_authorization_request_asks_for_a_code_with_s256_for_this_resource() {
        let s = sign_in();
        let endpoint = url::Url::parse("https://as.example/auth?tenant=1").unwrap();
        let url = authorization_url(&endpoint, s.settings(), "st", "ch");
        let q: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(q["tenant"], "1", "the endpoint's own query is kept");
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], "console");
        assert_eq!(q["redirect_uri"], "http://127.0.0.1:9/console/callback");
        assert_eq!((q["state"].as_str(), q["code_challenge"].as_str()), ("st", "ch"));
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["resource"], "http://127.0.0.1:9/mcp");
        assert_eq!(q["scope"], "mcp:tools");
    }

    #[tokio::test]
    async fn a_return_is_refused_before_any_exchange_unless_its_state_is_this_browsers_and_pending() {
        let s = sign_in();
        let begun = s.pending.begin();
        let st = begun.state.as_str();
        let e = s.finish("code=c", Some(st)).await.unwrap_err();
        assert!(matches!(e, SignInError::Missing("state")), "{e}");
        let e = s.finish(&format!("code=c&state={st}"), None).await.unwrap_err();
        assert!(matches!(e, SignInError::OtherBrowser), "{e}");
        let e = s.finish(&format!("code=c&state={st}"), Some("another")).await.unwrap_err();
        assert!(matches!(e, SignInError::OtherBrowser), "{e}");
        let e = s.finish("code=c&state=made-up", Some("made-up")).await.unwrap_err();
        assert!(matches!(e, SignInError::State(Unknown::NotPending)), "{e}");
        let q = format!("error=access_denied&error_description=no%0Athanks&state={st}");
        let e = s.finish(&q, Some(st)).await.unwrap_err();
        assert!(matches!(&e, SignInError::Refused { error, .. } if error == "access_denied"), "{e}");
        assert!(e.to_string().contains("access_denied (nothanks)"), "{e}");
        let e = s.finish(&q, Some(st)).await.unwrap_err();
        assert!(matches!(e, SignInError::State(Unknown::NotPending)), "spent by the first return: {e}");
        let other = s.pending.begin();
        let q = format!("code=c&iss=https%3A%2F%2Fevil&state={}", other.state);
        let e = s.finish(&q, Some(&other.state)).await.unwrap_err();
        assert!(matches!(e, SignInError::OtherIssuer { .. }), "{e}");
    }
}

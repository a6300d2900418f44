//! An access token checked: a JWT against the keys of the issuer it names (signature, the
//! accepted algorithms, `iss`, `aud` = this resource, `exp`/`nbf` with the clock skew), or an
//! opaque token by introspection at an issuer configured for it; then the scopes every token
//! must grant. What passes becomes a [`Principal`]. A verified JWT is remembered by its
//! digest for at most [`REMEMBER`] (and never past its `exp`), so a client's next call costs a
//! hash and a lookup; introspection results are not remembered, so a revocation holds at once.

use super::fetch::Fetch;
use super::keys::{IssuerKeys, KeyError};
use super::settings::{AuthSettings, IssuerSettings};
use jsonwebtoken::errors::ErrorKind;
use sha2::Digest;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use toolhost_core::identity::{Principal, Via};

/// The longest `Authorization` value read: a JWT with many claims is a few KiB.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// How long a verified JWT is remembered at most.
pub const REMEMBER: Duration = Duration::from_secs(60);
/// Verified tokens remembered at most (past it, expired ones go, then all).
const REMEMBERED_MAX: usize = 4096;

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No bearer token at all: the client should discover how to get one.
    #[error("no bearer token")]
    Missing,
    /// A token that is not good (`401 invalid_token`).
    #[error("{0}")]
    Invalid(Why),
    /// A good token without a scope this server requires (`403 insufficient_scope`).
    #[error("the token does not grant scope `{missing}`")]
    InsufficientScope { missing: String },
    /// The token could not be checked now (its issuer's keys or introspection unreachable):
    /// refused, never accepted.
    #[error("the token cannot be checked now: {0}")]
    Unavailable(String),
}

/// What is wrong with a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Why {
    #[error("the token is not a well-formed JWT")]
    Malformed,
    #[error("the token is over {MAX_TOKEN_BYTES} bytes")]
    TooLong,
    #[error("the token is signed with {0}, which this server does not accept")]
    Algorithm(String),
    #[error("the token's issuer is not one this server trusts")]
    UnknownIssuer,
    #[error("the token names a signing key its issuer does not have")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was issued for another resource (its audience is not this server)")]
    Audience,
    #[error("the token lacks the `{0}` claim")]
    MissingClaim(String),
    #[error("the token is not active (revoked, expired or unknown to its issuer)")]
    Inactive,
}

/// Checks the access tokens of one `[auth]` section.
pub struct Verifier {
    settings: AuthSettings,
    issuers: Vec<IssuerKeys>,
    fetch: Fetch,
    remembered: Mutex<HashMap<[u8; 32], Remembered>>,
}

/// A verified token's principal, and until when it is taken without checking again.
type Remembered = (Arc<Principal>, Instant);

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").field("resource", &self.settings.resource).finish_non_exhaustive()
    }
}

impl Verifier {
    pub fn new(settings: AuthSettings) -> Verifier {
        let max_age = settings.jwks_max_age;
        let issuers = settings.issuers.iter().map(|i| IssuerKeys::new(i.clone(), max_age)).collect();
        Verifier { settings, issuers, fetch: Fetch::new(), remembered: Mutex::new(HashMap::new()) }
    }

    /// Hold JWK set `doc` as issuer `i`'s keys (unit tests).
    #[cfg(test)]
    fn preload(&self, i: usize, doc: &serde_json::Value) {
        self.issuers[i].preload(doc);
    }

    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// The one HTTP client of `[auth]` (the console's sign-in uses it too).
    pub(super) fn fetch(&self) -> &Fetch {
        &self.fetch
    }

    /// The principal an `Authorization` header value proves, or why it proves none.
    pub async fn verify(&self, authorization: Option<&[u8]>) -> Result<Arc<Principal>, Refusal> {
        let token = bearer(authorization)?;
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Refusal::Invalid(Why::TooLong));
        }
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let principal = match self.recall(&digest) {
            Some(p) => p,
            None if token.split('.').count() == 3 => {
                let (p, exp) = self.jwt(token).await?;
                self.remember(digest, p.clone(), exp);
                p
            }
            None => self.introspect(token).await?,
        };
        match self.settings.scopes.iter().find(|s| !principal.has_scope(s)) {
            Some(missing) => Err(Refusal::InsufficientScope { missing: missing.clone() }),
            None => Ok(principal),
        }
    }

    async fn jwt(&self, token: &str) -> Result<(Arc<Principal>, SystemTime), Refusal> {
        let invalid = Refusal::Invalid;
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid(Why::Malformed))?;
        if !self.settings.algorithms.contains(&header.alg) {
            return Err(invalid(Why::Algorithm(format!("{:?}", header.alg))));
        }
        // The issuer it claims picks the keys to check it with; the check then proves the claim.
        let claimed = unverified_claims(token).ok_or(invalid(Why::Malformed))?;
        let iss = claimed.get("iss").and_then(|i| i.as_str());
        let issuer = self.issuers.iter().find(|i| Some(i.settings.issuer.as_str()) == iss);
        let issuer = issuer.ok_or(invalid(Why::UnknownIssuer))?;
        let key = issuer.key(header.kid.as_deref(), &self.fetch).await.map_err(|e| match e {
            KeyError::Unknown(_) => invalid(Why::UnknownKey),
            KeyError::Unreachable(e) => Refusal::Unavailable(e.to_string()),
        })?;
        if key.alg.is_some_and(|a| a != header.alg) {
            return Err(invalid(Why::Algorithm(format!("{:?}", header.alg))));
        }
        let mut v = jsonwebtoken::Validation::new(header.alg);
        v.leeway = self.settings.clock_skew.as_secs();
        v.validate_nbf = true;
        v.set_audience(&[&self.settings.resource]);
        v.set_issuer(&[&issuer.settings.issuer]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data =
            jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(token, &key.decoding, &v)
                .map_err(|e| invalid(why(e.kind())))?;
        let exp = data.claims.get("exp").and_then(|e| e.as_u64()).unwrap_or(0);
        let principal = principal(&issuer.settings, &data.claims, &self.settings.groups_claim)?;
        Ok((Arc::new(principal), SystemTime::UNIX_EPOCH + Duration::from_secs(exp)))
    }

    /// An opaque token, asked about at each issuer configured for introspection (RFC 7662).
    async fn introspect(&self, token: &str) -> Result<Arc<Principal>, Refusal> {
        let mut unavailable = None;
        for issuer in &self.settings.issuers {
            let Some(at) = &issuer.introspection else { continue };
            let secret = at.secret.read().map_err(|e| Refusal::Unavailable(e.to_string()))?;
            let form = [("token", token), ("token_type_hint", "access_token")];
            let doc = match self.fetch.post_form(&at.endpoint, &form, &at.client_id, &secret).await {
                Ok(doc) => doc,
                Err(e) => {
                    tracing::warn!("[auth] introspection at {}: {e}", at.endpoint);
                    unavailable = Some(e.to_string());
                    continue;
                }
            };
            if doc.get("active").and_then(|a| a.as_bool()) != Some(true) {
                continue;
            }
            let claims = doc.as_object().cloned().unwrap_or_default();
            self.active_claims_hold(issuer, &claims)?;
            return Ok(Arc::new(principal(issuer, &claims, &self.settings.groups_claim)?));
        }
        Err(match unavailable {
            Some(e) => Refusal::Unavailable(e),
            None if self.settings.issuers.iter().any(|i| i.introspection.is_some()) => {
                Refusal::Invalid(Why::Inactive)
            }
            None => Refusal::Invalid(Why::Malformed),
        })
    }

    /// An active introspected token is still this server's only if it names this resource (and,
    /// when it says, the issuer asked) and has not expired.
    fn active_claims_hold(
        &self,
        issuer: &IssuerSettings,
        claims: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Refusal> {
        if claims.get("iss").and_then(|i| i.as_str()).is_some_and(|i| i != issuer.issuer) {
            return Err(Refusal::Invalid(Why::UnknownIssuer));
        }
        if !words(claims.get("aud")).iter().any(|a| *a == self.settings.resource) {
            return Err(Refusal::Invalid(Why::Audience));
        }
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        match claims.get("exp").and_then(|e| e.as_u64()) {
            Some(exp) if exp + self.settings.clock_skew.as_secs() < now.as_secs() => {
                Err(Refusal::Invalid(Why::Expired))
            }
            _ => Ok(()),
        }
    }

    fn recall(&self, digest: &[u8; 32]) -> Option<Arc<Principal>> {
        let held = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        held.get(digest).filter(|(_, until)| Instant::now() < *until).map(|(p, _)| p.clone())
    }

    fn remember(&self, digest: [u8; 32], p: Arc<Principal>, exp: SystemTime) {
        let left = exp.duration_since(SystemTime::now()).unwrap_or_default().min(REMEMBER);
        let mut held = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() >= REMEMBERED_MAX {
            let now = Instant::now();
            held.retain(|_, (_, until)| now < *until);
            if held.len() >= REMEMBERED_MAX {
                held.clear();
            }
        }
        held.insert(digest, (p, Instant::now() + left));
    }
}

/// A JWT's claims before its signature is checked: only to pick the issuer whose keys check it
/// (or, once [`Verifier::verify`] has accepted the token, to read a claim it checked).
pub(super) fn unverified_claims(token: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The token of an `Authorization: Bearer …` value (the scheme is case-insensitive).
fn bearer(authorization: Option<&[u8]>) -> Result<&str, Refusal> {
    let value = authorization.ok_or(Refusal::Missing)?;
    let value = std::str::from_utf8(value).map_err(|_| Refusal::Invalid(Why::Malformed))?;
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => {
            Ok(token.trim())
        }
        _ => Err(Refusal::Missing),
    }
}

fn why(kind: &ErrorKind) -> Why {
    match kind {
        ErrorKind::ExpiredSignature => Why::Expired,
        ErrorKind::ImmatureSignature => Why::NotYetValid,
        ErrorKind::InvalidAudience => Why::Audience,
        ErrorKind::InvalidIssuer => Why::UnknownIssuer,
        ErrorKind::InvalidSignature => Why::Signature,
        ErrorKind::InvalidAlgorithm => Why::Algorithm("a mismatched algorithm".into()),
        ErrorKind::MissingRequiredClaim(c) => Why::MissingClaim(c.clone()),
        _ => Why::Malformed,
    }
}

/// The principal a verified token's claims describe: `sub` (else `client_id`, a client acting
/// for itself), its scopes (`scope`, or `scp`), its groups (the configured claim).
fn principal(
    issuer: &IssuerSettings,
    claims: &serde_json::Map<String, serde_json::Value>,
    groups_claim: &str,
) -> Result<Principal, Refusal> {
    let text = |k: &str| claims.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let client_id = text("client_id").or_else(|| text("azp"));
    let subject =
        text("sub").or_else(|| client_id.clone()).ok_or(Refusal::Invalid(Why::MissingClaim("sub".into())))?;
    let scopes = claims.get("scope").or_else(|| claims.get("scp"));
    Ok(Principal {
        subject,
        issuer: Some(issuer.issuer.clone()),
        client_id,
        scopes: words(scopes).into_iter().map(str::to_string).collect(),
        groups: words(claims.get(groups_claim)).into_iter().map(str::to_string).collect(),
        via: Via::Oauth,
    })
}

/// A claim that is a space-separated string or an array of strings, as its words.
fn words(v: Option<&serde_json::Value>) -> Vec<&str> {
    match v {
        Some(serde_json::Value::String(s)) => s.split_ascii_whitespace().collect(),
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(|x| x.as_str()).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;

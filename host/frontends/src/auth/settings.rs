//! `[auth]`: MCP over HTTP as an OAuth 2.1 resource server — the authorization servers it
//! trusts, the resource it is, what a token must carry. A leaf: it imports nothing of the crate
//! but the secret sources `[mcp]` shares.

use crate::mcp::settings::{RawSecretRef, secret_source};
use jsonwebtoken::Algorithm;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use toolhost_core::settings::{Invalid, SecretSource};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    /// The canonical URI of this server's MCP endpoint (`https://tools.example.com/mcp`).
    resource: Option<String>,
    /// The authorization servers whose tokens are accepted.
    #[serde(default)]
    issuers: Vec<RawIssuer>,
    /// Scopes every token must grant.
    #[serde(default)]
    scopes: Vec<String>,
    /// Signature algorithms accepted (asymmetric only).
    algorithms: Option<Vec<String>>,
    /// Seconds of clock difference tolerated on `exp` and `nbf`.
    clock_skew_s: Option<u64>,
    /// The claim holding a principal's roles or groups.
    groups_claim: Option<String>,
    /// Seconds an issuer's keys are kept before they are fetched again.
    jwks_max_age_s: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIssuer {
    /// The issuer identifier (`iss`), an https URL (http on loopback).
    issuer: String,
    /// Where its keys are; found from its metadata when not given.
    jwks_uri: Option<String>,
    /// RFC 7662 introspection of opaque tokens: the endpoint, and the client the server
    /// authenticates as.
    introspection_endpoint: Option<String>,
    introspection_client: Option<String>,
    introspection_secret: Option<RawSecretRef>,
}

/// The algorithms accepted unless `[auth] algorithms` says otherwise: every asymmetric one.
pub const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The resolved `[auth]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthSettings {
    /// The canonical URI of this server's MCP endpoint, as the operator wrote it: a token's
    /// `aud` must hold exactly this string (RFC 8707).
    pub resource: String,
    pub issuers: Vec<IssuerSettings>,
    pub scopes: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    pub clock_skew: Duration,
    pub groups_claim: String,
    pub jwks_max_age: Duration,
}

/// One trusted authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerSettings {
    pub issuer: String,
    pub jwks_uri: Option<url::Url>,
    pub introspection: Option<Introspection>,
}

/// How opaque tokens are introspected at an issuer (RFC 7662).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Introspection {
    pub endpoint: url::Url,
    pub client_id: String,
    pub secret: SecretSource,
}

impl RawAuth {
    /// Resolve `[auth]`; an introspection secret may name a `[secrets]` entry, its file relative
    /// to `base`.
    pub fn resolve(
        self,
        secrets: &BTreeMap<String, SecretSource>,
        base: &Path,
    ) -> Result<AuthSettings, Invalid> {
        let resource = self.resource.ok_or_else(|| {
            Invalid::says(
                "auth.resource",
                "is missing: give the URL clients reach /mcp at (https://HOST/mcp)",
            )
        })?;
        endpoint_url("auth.resource", &resource)?;
        if self.issuers.is_empty() {
            return Err(Invalid::says(
                "auth.issuers",
                "is empty: name at least one authorization server ([[auth.issuers]] issuer = \"https://…\")",
            ));
        }
        let mut issuers: Vec<IssuerSettings> = Vec::new();
        for (i, raw) in self.issuers.into_iter().enumerate() {
            let issuer = resolve_issuer(i, raw, secrets, base)?;
            if issuers.iter().any(|o| o.issuer == issuer.issuer) {
                return Err(Invalid::says(format!("auth.issuers[{i}].issuer"), "is listed twice"));
            }
            issuers.push(issuer);
        }
        Ok(AuthSettings {
            resource,
            issuers,
            scopes: resolve_scopes("auth.scopes", self.scopes)?,
            algorithms: resolve_algorithms(self.algorithms)?,
            clock_skew: Duration::from_secs(range("clock_skew_s", self.clock_skew_s, 60, 0, 600)?),
            groups_claim: self.groups_claim.unwrap_or_else(|| "groups".into()),
            jwks_max_age: Duration::from_secs(range("jwks_max_age_s", self.jwks_max_age_s, 600, 10, 86_400)?),
        })
    }
}

/// The path the console's sign-in returns to (the `redirect_uri`'s path).
pub const CALLBACK_PATH: &str = "/console/callback";

/// The console's sign-in through an authorization server of `[auth]` (`[console] oauth_…`),
/// as the operator wrote it.
#[derive(Debug, Default)]
pub struct RawSignIn {
    pub client_id: Option<String>,
    pub issuer: Option<String>,
    pub scopes: Option<Vec<String>>,
    pub redirect_uri: Option<String>,
}

/// The console as a public OAuth client (authorization code + PKCE) of one trusted issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInSettings {
    /// Its client id at the authorization server (registered without a secret).
    pub client_id: String,
    /// The issuer people sign in at: one of `[auth] issuers`.
    pub issuer: String,
    /// The scopes asked for (by default `[auth] scopes`).
    pub scopes: Vec<String>,
    /// Where the authorization server sends the person back: `[console] oauth_redirect_uri`,
    /// else the origin of `[auth] resource` and [`CALLBACK_PATH`].
    pub redirect_uri: url::Url,
    /// `[auth] resource`: the token is asked for this resource (RFC 8707).
    pub resource: String,
}

impl RawSignIn {
    /// Resolve the console's sign-in against `[auth]`: `None` without `oauth_client_id`.
    pub fn resolve(self, auth: Option<&AuthSettings>) -> Result<Option<SignInSettings>, Invalid> {
        let Some(client_id) = self.client_id else {
            if self.issuer.is_some() || self.scopes.is_some() || self.redirect_uri.is_some() {
                return Err(Invalid::says(
                    "console.oauth_client_id",
                    "is missing: the other console.oauth_… keys need the console's client id at the authorization server",
                ));
            }
            return Ok(None);
        };
        if client_id.is_empty() || client_id.chars().any(|c| c.is_control()) {
            return Err(Invalid::value("console.oauth_client_id", client_id.as_str(), "is not a client id"));
        }
        let Some(auth) = auth else {
            return Err(Invalid::says(
                "console.oauth_client_id",
                "needs [auth]: the console signs people in at one of its issuers, and checks their tokens as MCP requests are checked",
            ));
        };
        let issuer = match self.issuer {
            None => auth.issuers[0].issuer.clone(),
            Some(i) if auth.issuers.iter().any(|o| o.issuer == i) => i,
            Some(i) => {
                return Err(Invalid::value(
                    "console.oauth_issuer",
                    i.as_str(),
                    "is not one of [auth] issuers",
                ));
            }
        };
        let redirect_uri = match self.redirect_uri {
            Some(u) => endpoint_url("console.oauth_redirect_uri", &u)?,
            None => {
                let mut u = endpoint_url("auth.resource", &auth.resource)?;
                u.set_path(CALLBACK_PATH);
                u.set_query(None);
                u
            }
        };
        if redirect_uri.path() != CALLBACK_PATH || redirect_uri.query().is_some() {
            return Err(Invalid::value(
                "console.oauth_redirect_uri",
                redirect_uri.as_str(),
                format!("must end in {CALLBACK_PATH}, without a query: the console answers there"),
            ));
        }
        let scopes = match self.scopes {
            Some(s) => resolve_scopes("console.oauth_scopes", s)?,
            None => auth.scopes.clone(),
        };
        Ok(Some(SignInSettings { client_id, issuer, scopes, redirect_uri, resource: auth.resource.clone() }))
    }
}

fn range(key: &str, v: Option<u64>, default: u64, lo: u64, hi: u64) -> Result<u64, Invalid> {
    match v {
        None => Ok(default),
        Some(v) if (lo..=hi).contains(&v) => Ok(v),
        Some(v) => Err(Invalid::out_of_range(format!("auth.{key}"), v, lo, hi)),
    }
}

fn resolve_issuer(
    i: usize,
    raw: RawIssuer,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<IssuerSettings, Invalid> {
    let key = |k: &str| format!("auth.issuers[{i}].{k}");
    endpoint_url(&key("issuer"), &raw.issuer)?;
    let jwks_uri = raw.jwks_uri.map(|u| endpoint_url(&key("jwks_uri"), &u)).transpose()?;
    let introspection = match (raw.introspection_endpoint, raw.introspection_client, raw.introspection_secret)
    {
        (None, None, None) => None,
        (Some(endpoint), Some(client_id), Some(secret)) => Some(Introspection {
            endpoint: endpoint_url(&key("introspection_endpoint"), &endpoint)?,
            client_id,
            secret: secret_source(
                &key("introspection_secret"),
                format!("auth introspection secret of {}", raw.issuer),
                "a client secret",
                secret,
                secrets,
                base,
            )?,
        }),
        _ => {
            return Err(Invalid::says(
                key("introspection_endpoint"),
                "introspection needs all of introspection_endpoint, introspection_client and introspection_secret",
            ));
        }
    };
    Ok(IssuerSettings { issuer: raw.issuer, jwks_uri, introspection })
}

/// An absolute URL without a fragment, over https — or http to a loopback address, where no
/// one else can see or change it.
fn endpoint_url(key: &str, value: &str) -> Result<url::Url, Invalid> {
    let url =
        url::Url::parse(value).map_err(|e| Invalid::value(key, value, format!("is not a URL ({e})")))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    };
    if url.fragment().is_some() {
        return Err(Invalid::value(key, value, "has a fragment (#…); give the URL without it"));
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(Invalid::value(key, value, "must be an https URL (plain http only to a loopback address)")),
    }
}

fn resolve_scopes(key: &str, scopes: Vec<String>) -> Result<Vec<String>, Invalid> {
    for (i, s) in scopes.iter().enumerate() {
        if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == '"' || c == '\\' || c.is_control()) {
            return Err(Invalid::value(
                format!("{key}[{i}]"),
                s.as_str(),
                "is not a scope token (RFC 6749 §3.3)",
            ));
        }
    }
    Ok(scopes)
}

fn resolve_algorithms(names: Option<Vec<String>>) -> Result<Vec<Algorithm>, Invalid> {
    let Some(names) = names else { return Ok(DEFAULT_ALGORITHMS.to_vec()) };
    if names.is_empty() {
        return Err(Invalid::says(
            "auth.algorithms",
            "is empty: leave it out to accept every asymmetric algorithm",
        ));
    }
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let key = format!("auth.algorithms[{i}]");
            let alg: Algorithm =
                n.parse().map_err(|_| Invalid::value(&key, n.as_str(), "is not a JWS algorithm name"))?;
            if DEFAULT_ALGORITHMS.contains(&alg) {
                Ok(alg)
            } else {
                Err(Invalid::value(
                    key,
                    n.as_str(),
                    "is symmetric: an authorization server's public keys cannot check it, and anyone holding \
                     the key could mint tokens",
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(v: serde_json::Value) -> Result<AuthSettings, Invalid> {
        let raw: RawAuth = serde_json::from_value(v).expect("the shape of [auth]");
        raw.resolve(&BTreeMap::new(), Path::new("/etc/toolhost"))
    }

    #[test]
    fn a_resource_server_needs_its_uri_and_an_issuer() {
        let e = resolve(serde_json::json!({"issuers": [{"issuer": "https://as"}]})).unwrap_err();
        assert!(e.to_string().contains("auth.resource"), "{e}");
        let e = resolve(serde_json::json!({"resource": "https://h/mcp"})).unwrap_err();
        assert!(e.to_string().contains("auth.issuers"), "{e}");
        let ok =
            resolve(serde_json::json!({"resource": "https://h/mcp", "issuers": [{"issuer": "https://as"}]}))
                .unwrap();
        assert_eq!(ok.algorithms, DEFAULT_ALGORITHMS.to_vec());
        assert_eq!(ok.clock_skew, Duration::from_secs(60));
    }

    #[test]
    fn plain_http_only_on_loopback_and_no_symmetric_algorithms() {
        let with = |issuer: &str, algs: serde_json::Value| {
            resolve(
                serde_json::json!({"resource": "http://127.0.0.1:1/mcp", "issuers": [{"issuer": issuer}], "algorithms": algs}),
            )
        };
        assert!(with("http://127.0.0.1:4000", serde_json::json!(["ES256"])).is_ok());
        let e = with("http://as.example.com", serde_json::json!(["ES256"])).unwrap_err();
        assert!(e.to_string().contains("auth.issuers[0].issuer") && e.to_string().contains("https"), "{e}");
        let e = with("https://as", serde_json::json!(["HS256"])).unwrap_err();
        assert!(e.to_string().contains("auth.algorithms[0]") && e.to_string().contains("symmetric"), "{e}");
        let e = with("https://as", serde_json::json!(["none"])).unwrap_err();
        assert!(e.to_string().contains("not a JWS algorithm"), "{e}");
    }

    #[test]
    fn the_consoles_sign_in_is_checked_against_auth() {
        let auth =
            resolve(serde_json::json!({"resource": "https://tools.example/mcp", "scopes": ["mcp:tools"],
            "issuers": [{"issuer": "https://as"}, {"issuer": "https://other"}]}))
            .unwrap();
        let raw = |id: Option<&str>| RawSignIn { client_id: id.map(str::to_string), ..Default::default() };
        assert_eq!(raw(None).resolve(Some(&auth)).unwrap(), None);
        let s = raw(Some("console")).resolve(Some(&auth)).unwrap().unwrap();
        assert_eq!(s.issuer, "https://as", "the first issuer by default");
        assert_eq!(s.redirect_uri.as_str(), "https://tools.example/console/callback");
        assert_eq!(
            (s.scopes, s.resource.as_str()),
            (vec!["mcp:tools".to_string()], "https://tools.example/mcp")
        );
        let e = raw(Some("console")).resolve(None).unwrap_err().to_string();
        assert!(e.contains("console.oauth_client_id") && e.contains("[auth]"), "{e}");
        let e = RawSignIn { scopes: Some(vec![]), ..Default::default() }.resolve(Some(&auth)).unwrap_err();
        assert!(e.to_string().contains("console.oauth_client_id"), "{e}");
        let with = |k: &str, v: &str| {
            let mut r = raw(Some("console"));
            match k {
                "issuer" => r.issuer = Some(v.into()),
                _ => r.redirect_uri = Some(v.into()),
            }
            r.resolve(Some(&auth))
        };
        assert_eq!(with("issuer", "https://other").unwrap().unwrap().issuer, "https://other");
        let e = with("issuer", "https://evil").unwrap_err().to_string();
        assert!(e.contains("console.oauth_issuer") && e.contains("https://evil"), "{e}");
        let e = with("redirect_uri", "http://tools.example/console/callback").unwrap_err().to_string();
        assert!(e.contains("console.oauth_redirect_uri") && e.contains("https"), "{e}");
        let e = with("redirect_uri", "https://tools.example/callback").unwrap_err().to_string();
        assert!(e.contains("console.oauth_redirect_uri") && e.contains(CALLBACK_PATH), "{e}");
        let ok = with("redirect_uri", "https://console.example/console/callback").unwrap().unwrap();
        assert_eq!(ok.redirect_uri.as_str(), "https://console.example/console/callback");
    }

    #[test]
    fn introspection_needs_its_endpoint_client_and_secret() {
        let e = resolve(serde_json::json!({"resource": "https://h/mcp",
            "issuers": [{"issuer": "https://as", "introspection_endpoint": "https://as/introspect"}]}))
        .unwrap_err();
        assert!(e.to_string().contains("introspection_client"), "{e}");
        let ok = resolve(serde_json::json!({"resource": "https://h/mcp",
            "issuers": [{"issuer": "https://as", "introspection_endpoint": "https://as/introspect",
                         "introspection_client": "rs", "introspection_secret": {"env": "RS_SECRET"}}]}))
        .unwrap();
        assert_eq!(ok.issuers[0].introspection.as_ref().unwrap().client_id, "rs");
    }
}

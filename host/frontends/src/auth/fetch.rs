//! What the host asks of an authorization server over HTTP: its metadata (RFC 8414, else
//! OpenID discovery), its key set, for opaque tokens an introspection (RFC 7662), and for the
//! console's sign-in the exchange of an authorization code at its token endpoint. Every
//! answer is bounded in time and size, and a document that names another issuer than the one
//! asked about is refused (RFC 8414 §3.3: otherwise one server could pass off another's keys).

use std::time::Duration;

/// The most an authorization server's answer may hold.
const MAX_BODY: usize = 256 * 1024;
/// How long one request to an authorization server may take, connecting included.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request to an authorization server gave nothing usable.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url}: {why}")]
    Request { url: String, why: String },
    #[error("{url}: answered {status}")]
    Status { url: String, status: u16 },
    /// An error answer in OAuth's shape (RFC 6749 §5.2): its `error` code and description.
    #[error("{url}: answered {status}: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Oauth { url: String, status: u16, error: String, description: Option<String> },
    #[error("{url}: the answer is over {MAX_BODY} bytes")]
    TooLarge { url: String },
    #[error("{url}: not a JSON object ({why})")]
    NotJson { url: String, why: String },
    #[error("{url}: the metadata names issuer {found:?}, not {wanted:?}")]
    OtherIssuer { url: String, found: String, wanted: String },
    #[error("the metadata of {issuer} has no usable jwks_uri")]
    NoJwks { issuer: String },
}

/// An issuer's metadata, as far as the host uses it: each endpoint the document names with a
/// usable URL (https, or the scheme the metadata came over).
#[derive(Debug, Clone)]
pub struct Metadata {
    pub jwks_uri: Option<url::Url>,
    pub authorization_endpoint: Option<url::Url>,
    pub token_endpoint: Option<url::Url>,
}

/// The one HTTP client of `[auth]`.
pub struct Fetch {
    client: reqwest::Client,
}

impl Fetch {
    pub fn new() -> Fetch {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("a reqwest client with a timeout builds");
        Fetch { client }
    }

    /// GET `url` as a JSON object.
    pub async fn json(&self, url: &url::Url) -> Result<serde_json::Value, FetchError> {
        self.send(url, self.client.get(url.clone())).await
    }

    /// POST `form` to `url` with HTTP basic authentication as `client`/`secret`, answered with
    /// a JSON object.
    pub async fn post_form(
        &self,
        url: &url::Url,
        form: &[(&str, &str)],
        client: &str,
        secret: &str,
    ) -> Result<serde_json::Value, FetchError> {
        let req = self.client.post(url.clone()).basic_auth(client, Some(secret)).form(form);
        self.send(url, req).await
    }

    /// POST `form` to `url` as a public client (its `client_id` in the form, no secret),
    /// answered with a JSON object.
    pub async fn post_form_public(
        &self,
        url: &url::Url,
        form: &[(&str, &str)],
    ) -> Result<serde_json::Value, FetchError> {
        self.send(url, self.client.post(url.clone()).form(form)).await
    }

    async fn send(
        &self,
        url: &url::Url,
        req: reqwest::RequestBuilder,
    ) -> Result<serde_json::Value, FetchError> {
        let shown = || url.to_string();
        let mut resp = req
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| FetchError::Request { url: shown(), why: e.without_url().to_string() })?;
        let status = resp.status().as_u16();
        let body = read_capped(&mut resp, &shown).await;
        if !(200..300).contains(&status) {
            return Err(match body.ok().and_then(|b| oauth_error(&b)) {
                Some((error, description)) => FetchError::Oauth { url: shown(), status, error, description },
                None => FetchError::Status { url: shown(), status },
            });
        }
        let body = body?;
        match serde_json::from_slice::<serde_json::Value>(&body) {
            Ok(v) if v.is_object() => Ok(v),
            Ok(_) => Err(FetchError::NotJson { url: shown(), why: "not an object".into() }),
            Err(e) => Err(FetchError::NotJson { url: shown(), why: e.to_string() }),
        }
    }

    /// The metadata of `issuer`: RFC 8414's well-known place first, then OpenID discovery's.
    pub async fn metadata(&self, issuer: &str) -> Result<Metadata, FetchError> {
        let mut last = None;
        for url in metadata_urls(issuer) {
            match self.json(&url).await {
                Ok(doc) => return read_metadata(issuer, &url, &doc),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(FetchError::NoJwks { issuer: issuer.to_string() }))
    }
}

/// Where `issuer`'s metadata may be: `/.well-known/oauth-authorization-server` inserted before
/// its path (RFC 8414 §3.1), then `/.well-known/openid-configuration` after it (OpenID
/// Connect Discovery §4).
fn metadata_urls(issuer: &str) -> Vec<url::Url> {
    let Ok(base) = url::Url::parse(issuer) else { return Vec::new() };
    let path = base.path().trim_end_matches('/').to_string();
    let mut rfc8414 = base.clone();
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut oidc = base;
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    vec![rfc8414, oidc]
}

/// A body, whole, up to [`MAX_BODY`].
async fn read_capped(
    resp: &mut reqwest::Response,
    shown: &impl Fn() -> String,
) -> Result<Vec<u8>, FetchError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| FetchError::Request { url: shown(), why: e.without_url().to_string() })?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(FetchError::TooLarge { url: shown() });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The `error` and `error_description` of an OAuth error answer, if the body is one (their
/// text kept short and printable: it is shown to a person).
fn oauth_error(body: &[u8]) -> Option<(String, Option<String>)> {
    let doc: serde_json::Value = serde_json::from_slice(body).ok()?;
    let text = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(printable);
    Some((text("error")?, text("error_description")))
}

/// At most 200 characters of `s`, without control characters.
pub fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(200).collect()
}

fn read_metadata(issuer: &str, url: &url::Url, doc: &serde_json::Value) -> Result<Metadata, FetchError> {
    let found = doc.get("issuer").and_then(|i| i.as_str()).unwrap_or_default();
    if found != issuer {
        return Err(FetchError::OtherIssuer {
            url: url.to_string(),
            found: found.into(),
            wanted: issuer.into(),
        });
    }
    let endpoint = |name: &str| {
        doc.get(name)
            .and_then(|u| u.as_str())
            .and_then(|u| url::Url::parse(u).ok())
            .filter(|u| u.scheme() == "https" || u.scheme() == url.scheme())
    };
    Ok(Metadata {
        jwks_uri: endpoint("jwks_uri"),
        authorization_endpoint: endpoint("authorization_endpoint"),
        token_endpoint: endpoint("token_endpoint"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_specs_put_it() {
        let urls: Vec<String> =
            metadata_urls("https://as.example/tenant1").iter().map(|u| u.to_string()).collect();
        assert_eq!(
            urls,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        let urls: Vec<String> =
            metadata_urls("http://127.0.0.1:4000").iter().map(|u| u.to_string()).collect();
        assert_eq!(urls[0], "http://127.0.0.1:4000/.well-known/oauth-authorization-server");
    }

    #[test]
    fn metadata_naming_another_issuer_is_refused() {
        let url = url::Url::parse("https://as/.well-known/openid-configuration").unwrap();
        let doc = serde_json::json!({"issuer": "https://evil", "jwks_uri": "https://evil/jwks"});
        assert!(matches!(read_metadata("https://as", &url, &doc), Err(FetchError::OtherIssuer { .. })));
        let doc = serde_json::json!({"issuer": "https://as", "jwks_uri": "https://as/jwks"});
        let m = read_metadata("https://as", &url, &doc).unwrap();
        assert_eq!(m.jwks_uri.unwrap().as_str(), "https://as/jwks");
        assert!(m.authorization_endpoint.is_none() && m.token_endpoint.is_none());
        let doc = serde_json::json!({"issuer": "https://as", "authorization_endpoint": "https://as/auth",
            "token_endpoint": "http://as/token"});
        let m = read_metadata("https://as", &url, &doc).unwrap();
        assert_eq!(m.authorization_endpoint.unwrap().as_str(), "https://as/auth");
        assert!(m.token_endpoint.is_none(), "plain http from https metadata is not used");
        assert_eq!(
            oauth_error(br#"{"error": "invalid_grant", "error_description": "grant\nrequest is invalid"}"#),
            Some(("invalid_grant".into(), Some("grantrequest is invalid".into())))
        );
    }
}

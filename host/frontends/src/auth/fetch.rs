//! What the host asks of an authorization server over HTTP: its metadata (RFC 8414, else
//! OpenID discovery), its key set, and — for opaque tokens — an introspection (RFC 7662). Every
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
    #[error("{url}: the answer is over {MAX_BODY} bytes")]
    TooLarge { url: String },
    #[error("{url}: not a JSON object ({why})")]
    NotJson { url: String, why: String },
    #[error("{url}: the metadata names issuer {found:?}, not {wanted:?}")]
    OtherIssuer { url: String, found: String, wanted: String },
    #[error("the metadata of {issuer} has no usable jwks_uri")]
    NoJwks { issuer: String },
}

/// An issuer's metadata, as far as the host uses it.
pub struct Metadata {
    pub jwks_uri: url::Url,
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
        if !resp.status().is_success() {
            return Err(FetchError::Status { url: shown(), status: resp.status().as_u16() });
        }
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

fn read_metadata(issuer: &str, url: &url::Url, doc: &serde_json::Value) -> Result<Metadata, FetchError> {
    let found = doc.get("issuer").and_then(|i| i.as_str()).unwrap_or_default();
    if found != issuer {
        return Err(FetchError::OtherIssuer {
            url: url.to_string(),
            found: found.into(),
            wanted: issuer.into(),
        });
    }
    let jwks_uri = doc
        .get("jwks_uri")
        .and_then(|u| u.as_str())
        .and_then(|u| url::Url::parse(u).ok())
        .filter(|u| u.scheme() == "https" || u.scheme() == url.scheme())
        .ok_or_else(|| FetchError::NoJwks { issuer: issuer.to_string() })?;
    Ok(Metadata { jwks_uri })
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
        assert_eq!(read_metadata("https://as", &url, &doc).unwrap().jwks_uri.as_str(), "https://as/jwks");
    }
}

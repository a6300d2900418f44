//! OAuth 2.1 for MCP over HTTP: toolhost as a *resource server* (MCP authorization, RFC 9728,
//! RFC 8707). `[auth]` names the authorization servers it trusts and the resource it is
//! ([`settings`]); their keys are fetched and kept ([`keys`], over [`fetch`]); an access token
//! becomes a [`Principal`](toolhost_core::identity::Principal) or a [`Refusal`] ([`verify`]);
//! the console's sign-in at one of those servers ([`signin`], its states in [`pending`]);
//! and here, what a client is told: the Protected Resource Metadata document and where it is
//! served, and the `WWW-Authenticate` challenge of each refusal.

mod fetch;
mod keys;
mod pending;
pub mod settings;
mod signin;
mod verify;

pub use pending::TTL as SIGN_IN_TTL;
pub use settings::{AuthSettings, RawAuth, SignInSettings};
pub use signin::{SignIn, SignInError, SignedIn, Started};
pub use verify::{MAX_TOKEN_BYTES, Refusal, Verifier, Why};

/// The well-known prefix of Protected Resource Metadata (RFC 9728 §3).
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// The paths the metadata is served at: the prefix with the resource's path after it (RFC 9728
/// §3.1), and the bare prefix (clients that look there first).
pub fn metadata_paths(settings: &AuthSettings) -> [String; 2] {
    let path = resource_path(settings);
    [format!("{METADATA_PREFIX}{path}"), METADATA_PREFIX.to_string()]
}

fn resource_path(settings: &AuthSettings) -> String {
    let url = url::Url::parse(&settings.resource).expect("[auth] resource was checked to be a URL");
    url.path().trim_end_matches('/').to_string()
}

/// Where a client finds the metadata: the `resource_metadata` of every challenge.
pub fn metadata_url(settings: &AuthSettings) -> String {
    let url = url::Url::parse(&settings.resource).expect("[auth] resource was checked to be a URL");
    format!("{}{METADATA_PREFIX}{}", url.origin().ascii_serialization(), resource_path(settings))
}

/// The Protected Resource Metadata document (RFC 9728 §2).
pub fn metadata(settings: &AuthSettings) -> serde_json::Value {
    let servers: Vec<&str> = settings.issuers.iter().map(|i| i.issuer.as_str()).collect();
    let algs: Vec<String> = settings.algorithms.iter().map(|a| format!("{a:?}")).collect();
    serde_json::json!({
        "resource": settings.resource,
        "authorization_servers": servers,
        "scopes_supported": settings.scopes,
        "bearer_methods_supported": ["header"],
        "resource_signing_alg_values_supported": algs,
        "resource_name": "toolhost",
    })
}

/// The HTTP status and `WWW-Authenticate` value a refusal is answered with (RFC 6750 §3,
/// RFC 9728 §5.1): `401` asking for a token (or saying it is bad), `403` asking for the scope
/// it lacks (step-up), `503` when it cannot be checked now.
pub fn challenge(settings: &AuthSettings, refusal: &Refusal) -> (u16, String) {
    let metadata = metadata_url(settings);
    let scope = settings.scopes.join(" ");
    let scope = if scope.is_empty() { String::new() } else { format!(", scope=\"{scope}\"") };
    match refusal {
        Refusal::Missing => (401, format!("Bearer resource_metadata=\"{metadata}\"{scope}")),
        Refusal::Invalid(why) => (
            401,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{why}\", resource_metadata=\"{metadata}\"{scope}"
            ),
        ),
        Refusal::InsufficientScope { .. } => {
            (403, format!("Bearer error=\"insufficient_scope\", resource_metadata=\"{metadata}\"{scope}"))
        }
        Refusal::Unavailable(_) => (503, format!("Bearer resource_metadata=\"{metadata}\"{scope}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(resource: &str) -> AuthSettings {
        let raw: RawAuth = serde_json::from_value(serde_json::json!({
            "resource": resource, "scopes": ["mcp:tools"], "issuers": [{"issuer": "https://as.example"}]
        }))
        .unwrap();
        raw.resolve(&Default::default(), std::path::Path::new("/")).unwrap()
    }

    #[test]
    fn the_metadata_is_found_where_rfc_9728_puts_it() {
        let s = settings("https://tools.example/mcp");
        assert_eq!(metadata_url(&s), "https://tools.example/.well-known/oauth-protected-resource/mcp");
        assert_eq!(metadata_paths(&s), ["/.well-known/oauth-protected-resource/mcp", METADATA_PREFIX]);
        let doc = metadata(&s);
        assert_eq!(doc["resource"], "https://tools.example/mcp");
        assert_eq!(doc["authorization_servers"], serde_json::json!(["https://as.example"]));
        assert_eq!(doc["scopes_supported"], serde_json::json!(["mcp:tools"]));
    }

    #[test]
    fn each_refusal_has_its_status_and_challenge() {
        let s = settings("http://127.0.0.1:8765/mcp");
        let meta = "resource_metadata=\"http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp\"";
        let (status, h) = challenge(&s, &Refusal::Missing);
        assert_eq!(status, 401);
        assert!(h.starts_with("Bearer ") && h.contains(meta) && h.contains("scope=\"mcp:tools\""), "{h}");
        let (status, h) = challenge(&s, &Refusal::Invalid(Why::Expired));
        assert!(status == 401 && h.contains("error=\"invalid_token\"") && h.contains("expired"), "{h}");
        let (status, h) = challenge(&s, &Refusal::InsufficientScope { missing: "mcp:tools".into() });
        assert!(status == 403 && h.contains("error=\"insufficient_scope\"") && h.contains(meta), "{h}");
        assert_eq!(challenge(&s, &Refusal::Unavailable("down".into())).0, 503);
    }
}

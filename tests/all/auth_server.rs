//! The OAuth tests' authorization server (`support::oauth`: oidc-provider run by node) gives what
//! those tests build on: JWTs that name their audience, issuer, client and scope, signed by a key
//! its JWKS publishes; short-lived tokens; opaque tokens that introspect until revoked; OAuth
//! errors; key rotation. If one of these fails, the OAuth tests' failures say nothing of toolhost.

use crate::support::oauth::{
    AuthServer, CLIENT, OPAQUE_CLIENT, OPAQUE_RESOURCE, RS256_CLIENT, SHORT_CLIENT, auth_server,
    auth_server_on, jwt_claims, jwt_header,
};
use serde_json::{Value, json};

const RESOURCE: &str = "http://127.0.0.1:9999/mcp";

/// The kids of the server's JWKS.
fn kids(server: &AuthServer) -> Vec<String> {
    let jwks = server.jwks();
    jwks["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_client_credentials_jwt_names_audience_issuer_client_and_scope() {
    let server = auth_server();
    let jwt = server.token(CLIENT, RESOURCE, "mcp:tools");
    let header = jwt_header(&jwt);
    assert_eq!((header["alg"].as_str(), header["typ"].as_str()), (Some("ES256"), Some("at+jwt")), "{header}");
    assert!(kids(&server).contains(&header["kid"].as_str().unwrap().to_string()), "{header}");
    let claims = jwt_claims(&jwt);
    let want = json!({"aud": RESOURCE, "iss": server.issuer, "scope": "mcp:tools", "client_id": CLIENT, "sub": CLIENT});
    for (name, value) in want.as_object().unwrap() {
        assert_eq!(&claims[name], value, "{name} of {claims}");
    }
    assert!(claims["jti"].is_string(), "{claims}");
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 600, "{claims}");
    // Both scopes when both are asked for; one the resource does not know is dropped.
    let both = jwt_claims(&server.token(CLIENT, RESOURCE, "mcp:tools mcp:admin mcp:unknown"));
    assert_eq!(both["scope"], "mcp:tools mcp:admin");
    assert_eq!(jwt_header(&server.token(RS256_CLIENT, RESOURCE, "mcp:tools"))["alg"], "RS256");
}

#[test]
fn the_short_clients_tokens_live_two_seconds() {
    let claims = jwt_claims(&auth_server().token(SHORT_CLIENT, RESOURCE, "mcp:tools"));
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 2, "{claims}");
}

#[test]
fn opaque_tokens_introspect_as_active_until_revoked() {
    let server = auth_server();
    let token = server.token(CLIENT, OPAQUE_RESOURCE, "mcp:tools");
    assert!(!token.contains('.'), "not opaque: {token}");
    let active = server.introspect(&token);
    assert_eq!(active["active"], true, "{active}");
    assert_eq!((&active["aud"], &active["client_id"]), (&json!(OPAQUE_RESOURCE), &json!(CLIENT)), "{active}");
    server.revoke(CLIENT, &token);
    assert_eq!(server.introspect(&token), json!({"active": false}));
    // The opaque client's tokens for a loopback resource are opaque too, its audience that resource.
    let token = server.token(OPAQUE_CLIENT, RESOURCE, "mcp:tools");
    assert!(!token.contains('.'), "not opaque: {token}");
    assert_eq!(server.introspect(&token)["aud"], RESOURCE);
}

#[test]
fn refusals_are_oauth_errors() {
    let server = auth_server();
    let error =
        |(status, body): (u16, Value)| (status, body["error"].as_str().unwrap_or_default().to_string());
    let form = [("grant_type", "client_credentials"), ("resource", RESOURCE), ("scope", "mcp:tools")];
    let mut wrong_secret = form.to_vec();
    wrong_secret.push(("client_secret", "not-the-secret"));
    assert_eq!(error(server.token_response(CLIENT, &wrong_secret)), (401, "invalid_client".into()));
    let foreign = [("grant_type", "client_credentials"), ("resource", "https://elsewhere.example/mcp")];
    assert_eq!(error(server.token_response(CLIENT, &foreign)), (400, "invalid_target".into()));
}

#[test]
fn a_rotation_publishes_a_new_key_and_takes_the_old_one_out() {
    let server = auth_server();
    let old = jwt_header(&server.token(CLIENT, RESOURCE, "mcp:tools"))["kid"].as_str().unwrap().to_string();
    let new = server.rotate();
    assert_ne!(new, old);
    let published = kids(&server);
    assert!(published.contains(&new) && !published.contains(&old), "{published:?}");
    assert_eq!(jwt_header(&server.token(CLIENT, RESOURCE, "mcp:tools"))["kid"], new.as_str());
    let newer = server.rotate_keeping_old();
    let published = kids(&server);
    assert!(published.contains(&newer) && published.contains(&new), "{published:?}");
}

#[test]
fn a_restart_on_the_same_port_is_the_same_issuer_with_new_keys() {
    let first = auth_server();
    let (issuer, port, before) = (first.issuer.clone(), first.port, kids(&first));
    drop(first);
    let second = auth_server_on(port);
    assert_eq!(second.issuer, issuer);
    assert!(kids(&second).iter().all(|kid| !before.contains(kid)), "{before:?} and {:?}", kids(&second));
}

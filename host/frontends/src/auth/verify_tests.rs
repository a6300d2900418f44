//! The verifier against tokens signed here with Ed25519 keys made from fixed seeds: each way a
//! token can be wrong is refused with its reason. (The integration tests do the same against a
//! real authorization server's tokens.)

use super::*;
use crate::auth::settings::IssuerSettings;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

const ISSUER: &str = "https://as.example";
const RESOURCE: &str = "https://tools.example/mcp";

/// The Ed25519 key pairs of RFC 8032 §7.1, tests 1 and 2: (secret, public), in hex.
const KEYS: [(&str, &str); 2] = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    ),
];

/// Key pair `n` (1 or 2)'s private key, as PKCS#8 DER.
fn key(n: usize) -> EncodingKey {
    let mut der = hex::decode("302e020100300506032b657004220420").unwrap();
    der.extend(hex::decode(KEYS[n - 1].0).unwrap());
    EncodingKey::from_ed_der(&der)
}

/// Key pair `n`'s public key as a JWK with key id `kid`.
fn jwk(n: usize, kid: &str) -> serde_json::Value {
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hex::decode(KEYS[n - 1].1).unwrap());
    json!({"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "kid": kid, "x": x})
}

fn now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

fn claims() -> serde_json::Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "client_id": "agent",
           "scope": "mcp:tools openid", "groups": ["ops"], "exp": now() + 300, "iat": now()})
}

fn sign(seed: usize, kid: &str, claims: &serde_json::Value) -> String {
    let mut h = Header::new(Algorithm::EdDSA);
    h.kid = Some(kid.into());
    jsonwebtoken::encode(&h, claims, &key(seed)).unwrap()
}

/// A verifier trusting [`ISSUER`] (whose keys are key 1, `k1`), requiring `mcp:tools`, with no
/// clock skew. Its issuer cannot be reached: anything not preloaded stays unknown.
fn verifier() -> Verifier {
    let v = Verifier::new(AuthSettings {
        resource: RESOURCE.into(),
        issuers: vec![IssuerSettings {
            issuer: ISSUER.into(),
            jwks_uri: Some(url::Url::parse("http://127.0.0.1:9/jwks").unwrap()),
            introspection: None,
        }],
        scopes: vec!["mcp:tools".into()],
        algorithms: crate::auth::settings::DEFAULT_ALGORITHMS.to_vec(),
        clock_skew: Duration::ZERO,
        groups_claim: "groups".into(),
        jwks_max_age: Duration::from_secs(600),
    });
    v.preload(0, &json!({"keys": [jwk(1, "k1")]}));
    v
}

fn check(v: &Verifier, token: &str) -> Result<Arc<Principal>, Refusal> {
    let header = format!("Bearer {token}");
    block_on(v.verify(Some(header.as_bytes())))
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[test]
fn a_good_token_is_its_principal() {
    let v = verifier();
    let p = check(&v, &sign(1, "k1", &claims())).unwrap();
    assert_eq!((p.subject.as_str(), p.client_id.as_deref()), ("alice", Some("agent")));
    assert_eq!(p.issuer.as_deref(), Some(ISSUER));
    assert_eq!(p.scopes, ["mcp:tools", "openid"]);
    assert_eq!(p.groups, ["ops"]);
    // Remembered: the same token again is the same principal.
    assert!(Arc::ptr_eq(&p, &check(&v, &sign(1, "k1", &claims())).unwrap()));
}

#[test]
fn each_wrong_token_is_refused_with_its_reason() {
    let v = verifier();
    let with = |k: &str, val: serde_json::Value| {
        let mut c = claims();
        c[k] = val;
        c
    };
    let refused = |token: String| check(&v, &token).unwrap_err();
    let invalid = Refusal::Invalid;
    assert_eq!(refused(sign(1, "k1", &with("exp", json!(now() - 10)))), invalid(Why::Expired));
    assert_eq!(refused(sign(1, "k1", &with("nbf", json!(now() + 100)))), invalid(Why::NotYetValid));
    assert_eq!(refused(sign(1, "k1", &with("aud", json!("https://other/mcp")))), invalid(Why::Audience));
    assert_eq!(refused(sign(1, "k1", &with("iss", json!("https://evil")))), invalid(Why::UnknownIssuer));
    assert_eq!(
        refused(sign(1, "k1", &with("scope", json!("openid")))),
        Refusal::InsufficientScope { missing: "mcp:tools".into() }
    );
    // Signed by another key under the trusted key's id, or under an id the issuer lacks.
    assert_eq!(refused(sign(2, "k1", &claims())), invalid(Why::Signature));
    assert_eq!(refused(sign(2, "k2", &claims())), invalid(Why::UnknownKey));
    // The payload changed after signing.
    let good = sign(1, "k1", &claims());
    let parts: Vec<&str> = good.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let forged = b64.encode(serde_json::to_vec(&with("sub", json!("root"))).unwrap());
    assert_eq!(refused(format!("{}.{forged}.{}", parts[0], parts[2])), invalid(Why::Signature));
    // `alg: none`, and HS256 keyed with the public key (key confusion).
    let none = b64.encode(br#"{"alg":"none","typ":"JWT"}"#);
    assert_eq!(refused(format!("{none}.{}.", parts[1])), invalid(Why::Malformed));
    let public = jwk(1, "k1")["x"].as_str().unwrap().to_string();
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("k1".into());
    let confused = jsonwebtoken::encode(&h, &claims(), &EncodingKey::from_secret(public.as_bytes())).unwrap();
    assert_eq!(refused(confused), invalid(Why::Algorithm("HS256".into())));
    assert_eq!(refused("x".repeat(MAX_TOKEN_BYTES + 1)), invalid(Why::TooLong));
    assert_eq!(refused("not-a-token".into()), invalid(Why::Malformed));
    assert_eq!(block_on(v.verify(None)).unwrap_err(), Refusal::Missing);
    assert_eq!(block_on(v.verify(Some(b"Basic abc"))).unwrap_err(), Refusal::Missing);
}

#[test]
fn a_token_without_a_subject_is_its_client_and_without_either_refused() {
    let v = verifier();
    let mut c = claims();
    c.as_object_mut().unwrap().remove("sub");
    assert_eq!(check(&v, &sign(1, "k1", &c)).unwrap().subject, "agent");
    c.as_object_mut().unwrap().remove("client_id");
    assert_eq!(check(&v, &sign(1, "k1", &c)).unwrap_err(), Refusal::Invalid(Why::MissingClaim("sub".into())));
}

#[test]
fn keys_that_cannot_be_fetched_refuse_rather_than_accept() {
    let v = Verifier::new(AuthSettings { ..verifier().settings().clone() });
    let e = check(&v, &sign(1, "k1", &claims())).unwrap_err();
    assert!(matches!(e, Refusal::Unavailable(_)), "{e:?}");
}

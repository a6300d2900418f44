//! An OAuth 2.1 authorization server of a test's own (#60): panva's `oidc-provider` from npm, run
//! by node from `tests/oauth/server.mjs` on 127.0.0.1 and killed when dropped. Every token a test
//! presents comes out of its endpoints; none is minted by hand. `cargo xtask test` installs the
//! pinned oidc-provider into target/oauth-server and names it in TOOLHOST_TEST_OIDC_PROVIDER.
//!
//! What the server knows (see the top of server.mjs): the clients below with their secrets,
//! resources `http://127.0.0.1…`/`http://localhost…` with scopes `mcp:tools mcp:admin` (ES256
//! JWTs whose `aud` is the resource) and [`OPAQUE_RESOURCE`] (opaque tokens, for introspection).

use super::http::{self, Answer};
use super::lines::lines;
use super::root;
use super::server::Killed;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::Value;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Client credentials; ES256 JWTs that live 10 minutes.
pub const CLIENT: &str = "toolhost-test";
/// As [`CLIENT`], but its tokens live 2 seconds (the expired-token tests).
pub const SHORT_CLIENT: &str = "toolhost-short";
/// As [`CLIENT`], but its JWTs are signed RS256.
pub const RS256_CLIENT: &str = "toolhost-rs256";
/// As [`CLIENT`], but its tokens are opaque (introspected) whatever the resource.
pub const OPAQUE_CLIENT: &str = "toolhost-opaque";
/// The client a resource server introspects with (`client_secret_basic`; the same secret with
/// `client_secret_post` is `toolhost-introspector-post`).
pub const INTROSPECTOR: &str = "toolhost-introspector";
/// The resource whose tokens are opaque, whoever asks.
pub const OPAQUE_RESOURCE: &str = "urn:toolhost:opaque";

/// The confidential clients' secrets, as tests/oauth/server.mjs registers them.
const SECRETS: [(&str, &str); 6] = [
    (CLIENT, "toolhost-test-secret-0123456789"),
    (SHORT_CLIENT, "toolhost-short-secret-0123456789"),
    (RS256_CLIENT, "toolhost-rs256-secret-0123456789"),
    (OPAQUE_CLIENT, "toolhost-opaque-secret-0123456789"),
    (INTROSPECTOR, "toolhost-introspector-secret-0123456789"),
    ("toolhost-introspector-post", "toolhost-introspector-secret-0123456789"),
];

/// How long node may take to load oidc-provider and listen (it takes well under a second idle;
/// a loaded CI machine is slower).
const STARTUP: Duration = Duration::from_secs(30);

/// A client's secret.
#[track_caller]
pub fn secret(client: &str) -> &'static str {
    SECRETS.iter().find(|(id, _)| *id == client).map(|(_, s)| *s).unwrap_or_else(|| {
        let known: Vec<_> = SECRETS.iter().map(|(id, _)| *id).collect();
        panic!("{client:?} is no confidential client of tests/oauth/server.mjs; it knows {known:?}")
    })
}

/// oidc-provider's authorization server on a 127.0.0.1 port, killed on drop.
pub struct AuthServer {
    /// node, its stdin an open pipe held by the child handle: the server also exits when that
    /// closes, so a test process that dies without dropping this leaves no server behind.
    _process: Killed,
    /// `http://127.0.0.1:PORT`, as the server printed it.
    pub issuer: String,
    pub port: u16,
    /// Its discovery document (`/.well-known/openid-configuration`).
    pub metadata: Value,
}

/// The authorization server on a free port.
#[track_caller]
pub fn auth_server() -> AuthServer {
    auth_server_on(0)
}

/// The authorization server on `port` (0: a free one). Started again on the port of one that
/// was dropped, it is the same issuer with new keys: a rotation a resource server cannot have
/// seen coming.
#[track_caller]
pub fn auth_server_on(port: u16) -> AuthServer {
    let modules = oidc_provider_modules();
    let mut child = spawn_node(&modules, port);
    let out = lines(child.stdout.take().unwrap());
    let err = lines(child.stderr.take().unwrap());
    let issuer = wait_listening(&mut child, &out, &err);
    let port = issuer.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port in the issuer");
    let mut server = AuthServer { _process: Killed(child), issuer, port, metadata: Value::Null };
    server.metadata = server.get_json("/.well-known/openid-configuration");
    server
}

/// The node_modules folder holding oidc-provider (xtask's, or TOOLHOST_TEST_OIDC_PROVIDER's).
#[track_caller]
fn oidc_provider_modules() -> PathBuf {
    let modules = std::env::var_os("TOOLHOST_TEST_OIDC_PROVIDER")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/oauth-server/node_modules"));
    assert!(
        modules.join("oidc-provider/package.json").is_file(),
        "the OAuth tests need oidc-provider (npm) in {}: run `cargo xtask test` (it installs the pinned \
         version into target/oauth-server), or set TOOLHOST_TEST_OIDC_PROVIDER to a node_modules folder \
         holding it",
        modules.display()
    );
    modules
}

#[track_caller]
fn spawn_node(modules: &std::path::Path, port: u16) -> Child {
    Command::new("node")
        .arg(root().join("tests/oauth/server.mjs"))
        .arg(port.to_string())
        .env("TOOLHOST_TEST_OIDC_PROVIDER", modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| match e.kind() {
            ErrorKind::NotFound => panic!(
                "the OAuth tests run their authorization server with node, which is not on PATH: \
                 `apt-get install nodejs` (Node 20 or later)"
            ),
            _ => panic!("spawn node tests/oauth/server.mjs: {e}"),
        })
}

/// The issuer from the server's `listening http://127.0.0.1:PORT` line; if it exits or stays
/// silent instead, a panic with what it wrote on stderr.
#[track_caller]
fn wait_listening(child: &mut Child, out: &Receiver<String>, err: &Receiver<String>) -> String {
    let deadline = Instant::now() + STARTUP;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match out.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => match line.strip_prefix("listening ") {
                Some(issuer) => return issuer.to_string(),
                None => seen.push(line),
            },
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    // What it wrote on stderr up to its end (a second of quiet is the end if it hangs).
    seen.extend(std::iter::from_fn(|| err.recv_timeout(Duration::from_secs(1)).ok()));
    panic!("tests/oauth/server.mjs did not start ({status}); it wrote:\n{}", seen.join("\n"))
}

impl AuthServer {
    /// `127.0.0.1:PORT`, for the raw HTTP client.
    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The path on this server of the endpoint its discovery document names `name`.
    #[track_caller]
    fn endpoint(&self, name: &str) -> String {
        let url = self.metadata[name].as_str().unwrap_or_else(|| panic!("no {name} in {}", self.metadata));
        url.strip_prefix(&self.issuer)
            .unwrap_or_else(|| panic!("{name} {url} is not on {}", self.issuer))
            .into()
    }

    #[track_caller]
    fn get_json(&self, path: &str) -> Value {
        let answer = http::request(self.addr(), "GET", path, "", "");
        assert_eq!(answer.status, 200, "GET {path} on the authorization server: {}", answer.body);
        answer.json()
    }

    /// A form POST to `path` as `client`: its id and secret in the form (`client_secret_post`),
    /// or for [`INTROSPECTOR`] in an `Authorization: Basic` line; a form that names its own
    /// `client_secret` (a wrong one) is sent as it is.
    #[track_caller]
    fn post_as(&self, path: &str, client: &str, form: &[(&str, &str)]) -> Answer {
        let mut headers = "Content-Type: application/x-www-form-urlencoded\r\n".to_string();
        let mut pairs = form.to_vec();
        if client == INTROSPECTOR {
            let basic =
                STANDARD.encode(format!("{}:{}", form_encode_one(client), form_encode_one(secret(client))));
            headers.push_str(&format!("Authorization: Basic {basic}\r\n"));
        } else if !form.iter().any(|(k, _)| *k == "client_secret") {
            pairs.extend([("client_id", client), ("client_secret", secret(client))]);
        } else if !form.iter().any(|(k, _)| *k == "client_id") {
            pairs.push(("client_id", client));
        }
        http::request(self.addr(), "POST", path, &headers, &form_encode(&pairs))
    }

    /// A client-credentials access token of `client` for `resource` with `scope` (space
    /// separated; scopes the resource does not know are dropped, as the server does).
    #[track_caller]
    pub fn token(&self, client: &str, resource: &str, scope: &str) -> String {
        let form = [("grant_type", "client_credentials"), ("resource", resource), ("scope", scope)];
        let (status, body) = self.token_response(client, &form);
        assert_eq!(status, 200, "no token for {client} (resource {resource}, scope {scope}): {body}");
        body["access_token"].as_str().expect("an access_token").to_string()
    }

    /// The token endpoint's answer to `form` sent as `client` (see [`AuthServer::token`]); the
    /// form carries everything but the client's credentials, unless it names a `client_secret`.
    #[track_caller]
    pub fn token_response(&self, client: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let answer = self.post_as(&self.endpoint("token_endpoint"), client, form);
        (answer.status, answer.json())
    }

    /// RFC 7662 introspection of `token`, as the resource servers' client [`INTROSPECTOR`].
    #[track_caller]
    pub fn introspect(&self, token: &str) -> Value {
        let answer =
            self.post_as(&self.endpoint("introspection_endpoint"), INTROSPECTOR, &[("token", token)]);
        assert_eq!(answer.status, 200, "introspection: {}", answer.body);
        answer.json()
    }

    /// Revoke `token` (RFC 7009) as `client`, the client it was issued to. Only opaque tokens
    /// can be revoked: a JWT is checked by its signature alone, and the server refuses it.
    #[track_caller]
    pub fn revoke(&self, client: &str, token: &str) {
        let answer = self.post_as(&self.endpoint("revocation_endpoint"), client, &[("token", token)]);
        assert_eq!(answer.status, 200, "revocation by {client}: {}", answer.body);
    }

    /// A public client (no secret; authorization code with PKCE) registered now (RFC 7591, the
    /// server's open registration), sending people back to `redirect_uri`: its client id. A
    /// test registers its own, with its own port.
    #[track_caller]
    pub fn register_public_client(&self, redirect_uri: &str) -> String {
        let body = serde_json::json!({
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        });
        let headers = "Content-Type: application/json\r\n";
        let answer = http::request(
            self.addr(),
            "POST",
            &self.endpoint("registration_endpoint"),
            headers,
            &body.to_string(),
        );
        assert_eq!(answer.status, 201, "registration of a public client: {}", answer.body);
        answer.json()["client_id"].as_str().expect("a client_id").to_string()
    }

    /// The key set at the `jwks_uri` of the discovery document.
    #[track_caller]
    pub fn jwks(&self) -> Value {
        self.get_json(&self.endpoint("jwks_uri"))
    }

    /// Sign with a new ES256 key from now on, the old one taken out of the JWKS (tokens signed
    /// with it no longer verify); the new kid.
    #[track_caller]
    pub fn rotate(&self) -> String {
        self.rotate_at("/test/rotate")
    }

    /// [`AuthServer::rotate`], the old key kept in the JWKS beside the new one (as an issuer
    /// does for a while after a rotation, so tokens already out still verify); the new kid.
    #[track_caller]
    pub fn rotate_keeping_old(&self) -> String {
        self.rotate_at("/test/rotate?keep=1")
    }

    #[track_caller]
    fn rotate_at(&self, path: &str) -> String {
        let answer = http::request(self.addr(), "POST", path, "", "");
        assert_eq!(answer.status, 200, "POST {path}: {}", answer.body);
        answer.json()["kid"].as_str().expect("the new kid").to_string()
    }
}

/// The header of a JWT (not verified: the resource server under test does that).
#[track_caller]
pub fn jwt_header(jwt: &str) -> Value {
    jwt_part(jwt, 0)
}

/// The claims of a JWT (not verified).
#[track_caller]
pub fn jwt_claims(jwt: &str) -> Value {
    jwt_part(jwt, 1)
}

#[track_caller]
fn jwt_part(jwt: &str, index: usize) -> Value {
    let part = jwt.split('.').nth(index).unwrap_or_else(|| panic!("not a JWT: {jwt}"));
    let bytes = URL_SAFE_NO_PAD.decode(part).unwrap_or_else(|e| panic!("not base64url ({e}): {jwt}"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {jwt}"))
}

/// `application/x-www-form-urlencoded` of `pairs`.
fn form_encode(pairs: &[(&str, &str)]) -> String {
    let pairs: Vec<_> =
        pairs.iter().map(|(k, v)| format!("{}={}", form_encode_one(k), form_encode_one(v))).collect();
    pairs.join("&")
}

/// One name or value, every byte but the unreserved ones percent-encoded (also what RFC 6749
/// §2.3.1 asks of a client id and secret in a Basic header).
fn form_encode_one(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

//! Issue #60: MCP over HTTP as an OAuth 2.1 resource server, against a real authorization
//! server (`oidc-provider` from npm, started by the test on 127.0.0.1: see `support::oauth`).
//! The Protected Resource Metadata is served where RFC 9728 puts it; a request without a token
//! is told where to get one; a token the server issued for this resource is its principal in the
//! audit trail; every way a token can be wrong is refused with its status and challenge, and
//! nothing runs.

use crate::support::http::header;
use crate::support::mcp_http::{INITIALIZE, Stateless, echo_in, form, mcp_post, open_session_as};
use crate::support::oauth::{
    AuthServer, CLIENT, INTROSPECTOR, OPAQUE_CLIENT, RS256_CLIENT, SHORT_CLIENT, auth_server, secret,
};
use crate::support::python::mcp_script;
use crate::support::{Env, Server, free_port};
use base64::Engine;
use serde_json::{Value, json};

const SCOPE: &str = "mcp:tools";

/// `toolhost serve --mcp --http 127.0.0.1:PORT` trusting `issuers`, its resource
/// `http://127.0.0.1:PORT/mcp`, requiring [`SCOPE`], with `extra` config lines; and its
/// resource URI.
struct Protected {
    server: Server,
    resource: String,
    dir: tempfile::TempDir,
    _env: Env,
}

impl Protected {
    fn start(issuers: &[&str], extra: &str) -> Protected {
        let issuers: String =
            issuers.iter().map(|i| format!("[[auth.issuers]]\nissuer = \"{i}\"\n")).collect();
        Protected::start_config(extra, &issuers)
    }

    /// [`Protected::start`] with `issuers` written out (`[[auth.issuers]]` tables).
    fn start_with_issuers(issuers: &str) -> Protected {
        Protected::start_config("", issuers)
    }

    fn start_config(extra: &str, issuers: &str) -> Protected {
        Protected::start_in(tempfile::tempdir().unwrap(), extra, issuers)
    }

    /// [`Protected::start`] in `dir` (which may hold files the config names).
    fn start_in(dir: tempfile::TempDir, extra: &str, issuers: &str) -> Protected {
        Protected::start_with(&[plugin_artifacts::TEXT], dir, extra, issuers)
    }

    /// [`Protected::start_in`] with the plugins `wasm`.
    fn start_with(wasm: &[&str], dir: tempfile::TempDir, extra: &str, issuers: &str) -> Protected {
        let env = Env::with(wasm);
        let port = free_port();
        let resource = format!("http://127.0.0.1:{port}/mcp");
        let config = format!(
            "{extra}\n[auth]\nresource = \"{resource}\"\nscopes = [\"{SCOPE}\"]\nclock_skew_s = 0\n{issuers}"
        );
        std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
        let server = Server::start(
            env.command()
                .arg("--config")
                .arg(dir.path().join("toolhost.toml"))
                .args(["serve", "--mcp", "--http", &format!("127.0.0.1:{port}")])
                .env("XDG_STATE_HOME", dir.path())
                .env("TOOLHOST_TEST_STATIC_TOKEN", STATIC_TOKEN)
                .env("TOOLHOST_TEST_INTROSPECTION_SECRET", secret(INTROSPECTOR))
                .env("TOOLHOST_LOG", "info"),
        );
        Protected { server, resource, dir, _env: env }
    }

    /// An `initialize` with `token`: the status and head.
    fn initialize(&self, token: Option<&str>) -> (u16, String) {
        let (status, head, _) = mcp_post(self.server.addr, token, None, INITIALIZE);
        (status, head)
    }

    fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("toolhost/audit.jsonl")).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

const STATIC_TOKEN: &str = "static-token-7c1d9e2f4a";

/// The `WWW-Authenticate` of an answer.
fn challenge(head: &str) -> String {
    header(head, "www-authenticate").unwrap_or_else(|| panic!("no WWW-Authenticate: {head}"))
}

/// An `echo` in a new session opened with `token`: answered.
fn echo_with(p: &Protected, token: &str) {
    let auth = format!("Authorization: Bearer {token}\r\n");
    let session = open_session_as(&p.server.url, &auth, "2025-06-18", json!({}), "oauth-test");
    echo_in(p.server.addr, Some(token), &session);
}

#[test]
fn a_token_from_the_trusted_server_for_this_resource_is_its_principal() {
    let a = auth_server();
    let p = Protected::start(&[&a.issuer], "");
    // Discovery: the metadata at both well-known places, naming the authorization server.
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let (status, body) = p.server.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["resource"], p.resource.as_str(), "{doc}");
        assert_eq!(doc["authorization_servers"], json!([a.issuer]), "{doc}");
        assert_eq!(doc["scopes_supported"], json!([SCOPE]), "{doc}");
    }
    // No token: 401 pointing at the metadata.
    let (status, head) = p.initialize(None);
    assert_eq!(status, 401, "{head}");
    let metadata = p.resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let c = challenge(&head);
    assert!(c.starts_with("Bearer ") && c.contains(&format!("resource_metadata=\"{metadata}\"")), "{c}");
    assert!(c.contains(&format!("scope=\"{SCOPE}\"")), "{c}");
    // A token minted for this resource: calls are served, and the audit says who.
    let token = a.token(CLIENT, &p.resource, SCOPE);
    echo_with(&p, &token);
    let line = p.audit().into_iter().find(|l| l["tool"] == "echo").expect("the call's audit line");
    assert_eq!(line["who"]["iss"], a.issuer.as_str(), "{line}");
    assert_eq!(line["who"]["via"], "oauth", "{line}");
    assert_eq!(line["who"]["client_id"], CLIENT, "{line}");
    assert!(line["who"]["scopes"].as_array().unwrap().contains(&json!(SCOPE)), "{line}");
    assert_eq!(line["token"], Value::Null, "no static token: {line}");
    // /metrics (behind the same door) counts the call under its identity.
    let auth = format!("Authorization: Bearer {token}\r\n");
    let metrics = p.server.request("GET", "/metrics", &auth, "");
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    let series =
        format!("toolhost_identity_calls_total{{identity=\"oauth:{}#{CLIENT}\",outcome=\"ok\"}} 1", a.issuer);
    assert!(metrics.body.contains(&series), "{series} in:\n{}", metrics.body);
}

#[test]
fn static_tokens_keep_working_beside_oauth_as_named_identities() {
    let a = auth_server();
    let p = Protected::start(
        &[&a.issuer],
        "[mcp]\ntokens = [{ name = \"ci\", env = \"TOOLHOST_TEST_STATIC_TOKEN\" }]\n",
    );
    echo_with(&p, STATIC_TOKEN);
    let line = p.audit().into_iter().find(|l| l["tool"] == "echo").expect("the call's audit line");
    assert_eq!(line["token"], "ci", "{line}");
    assert_eq!(line["who"], json!({"sub": "ci", "via": "token"}), "{line}");
    echo_with(&p, &a.token(CLIENT, &p.resource, SCOPE));
}

#[test]
fn every_wrong_token_is_refused_with_its_status_and_nothing_runs() {
    let a = auth_server();
    let other = auth_server();
    let p = Protected::start(&[&a.issuer], "");
    let good = a.token(CLIENT, &p.resource, SCOPE);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = good.split('.').collect();
    let mut claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    let header_of: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
    claims["sub"] = json!("root");
    let tampered = format!("{}.{}.{}", parts[0], b64.encode(claims.to_string()), parts[2]);
    let none = format!("{}.{}.", b64.encode(r#"{"alg":"none","typ":"at+jwt"}"#), parts[1]);
    // Key confusion: HS256 keyed with the server's public key (its JWK's `x`, or the whole JWK).
    let jwks = a.jwks();
    let public = jwks["keys"].as_array().unwrap().iter().find(|k| k["kid"] == header_of["kid"]).unwrap();
    let hs_header = json!({"alg": "HS256", "typ": "at+jwt", "kid": header_of["kid"]});
    let signing_input = format!("{}.{}", b64.encode(hs_header.to_string()), parts[1]);
    let confused = {
        use hmac::Mac;
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(public.to_string().as_bytes()).unwrap();
        mac.update(signing_input.as_bytes());
        format!("{signing_input}.{}", b64.encode(mac.finalize().into_bytes()))
    };
    let unknown_kid = {
        let h = json!({"alg": header_of["alg"], "typ": "at+jwt", "kid": "not-a-key-of-the-server"});
        format!("{}.{}.{}", b64.encode(h.to_string()), parts[1], parts[2])
    };
    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "another resource's token",
            a.token(CLIENT, "http://127.0.0.1:1/mcp", SCOPE),
            401,
            "another resource",
        ),
        ("an untrusted issuer's token", other.token(CLIENT, &p.resource, SCOPE), 401, "issuer"),
        ("a token without the scope", a.token(CLIENT, &p.resource, "mcp:admin"), 403, "insufficient_scope"),
        ("a tampered payload", tampered, 401, "signature"),
        ("alg none", none, 401, "invalid_token"),
        ("HS256 keyed with the public key", confused, 401, "HS256"),
        ("an unknown kid", unknown_kid, 401, "signing key"),
        ("an oversized token", "a".repeat(9000), 401, "invalid_token"),
        ("garbage", "not.a.jwt".into(), 401, "invalid_token"),
    ];
    for (what, token, status, says) in &cases {
        let (got, head) = p.initialize(Some(token));
        assert_eq!(got, *status, "{what}: {head}");
        let c = challenge(&head);
        assert!(c.contains(says), "{what}: {c}");
        assert!(c.contains("resource_metadata="), "{what}: {c}");
    }
    // The good one still works, and nothing ran for the refused ones.
    echo_with(&p, &good);
    let calls: Vec<Value> = p.audit().into_iter().filter(|l| l["tool"] == "echo").collect();
    assert_eq!(calls.len(), 1, "only the good token's call ran: {calls:?}");
    assert!(!p.server.log.try_iter().any(|l| l.contains(&good)), "a token is never logged");
}

#[test]
fn an_expired_token_is_refused() {
    let a = auth_server();
    let p = Protected::start(&[&a.issuer], "");
    let short = a.token(SHORT_CLIENT, &p.resource, SCOPE);
    echo_with(&p, &short);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let (status, head) = p.initialize(Some(&short));
    assert_eq!(status, 401, "{head}");
    assert!(challenge(&head).contains("expired"), "{head}");
}

#[test]
fn unreachable_keys_refuse_every_token_and_accept_none() {
    // The authorization server issues a token for the resource, then goes away before the
    // resource server ever fetched its keys.
    let a: AuthServer = auth_server();
    let p = Protected::start(&[&a.issuer], "");
    let token = a.token(CLIENT, &p.resource, SCOPE);
    drop(a);
    let (status, head) = p.initialize(Some(&token));
    assert_eq!(status, 503, "keys unreachable: refused, never accepted: {head}");
    assert!(header(&head, "retry-after").is_some(), "{head}");
    assert!(p.audit().is_empty(), "nothing ran");
}

/// A rotation at the authorization server: a token signed with the new key (an unknown `kid`)
/// makes the resource server fetch the keys again and is accepted; a token signed with the key
/// taken out of the key set is refused once the set is fetched again.
#[test]
fn a_key_rotation_is_followed_and_a_withdrawn_key_refused() {
    let a = auth_server();
    let p = Protected::start(&[&a.issuer], "");
    echo_with(&p, &a.token(CLIENT, &p.resource, SCOPE));
    let old = a.token(CLIENT, &p.resource, SCOPE);
    a.rotate();
    // Fetched again at most every few seconds, however many unknown kids come.
    std::thread::sleep(std::time::Duration::from_millis(5500));
    echo_with(&p, &a.token(CLIENT, &p.resource, SCOPE));
    let (status, head) = p.initialize(Some(&old));
    assert_eq!(status, 401, "a token of the withdrawn key: {head}");
    assert!(challenge(&head).contains("signing key"), "{head}");
}

/// An opaque token is introspected (RFC 7662) at each request: active, it is its principal;
/// revoked, it is refused at once.
#[test]
fn an_opaque_token_is_introspected_and_its_revocation_holds_at_once() {
    let a = auth_server();
    let introspection = a.metadata["introspection_endpoint"].as_str().unwrap().to_string();
    let extra = format!(
        "[[auth.issuers]]\nissuer = \"{}\"\nintrospection_endpoint = \"{introspection}\"\n\
         introspection_client = \"{INTROSPECTOR}\"\nintrospection_secret = {{ env = \"TOOLHOST_TEST_INTROSPECTION_SECRET\" }}\n",
        a.issuer
    );
    let p = Protected::start_with_issuers(&extra);
    let opaque = a.token(OPAQUE_CLIENT, &p.resource, SCOPE);
    assert_eq!(opaque.split('.').count(), 1, "an opaque token: {opaque}");
    echo_with(&p, &opaque);
    let line = p.audit().into_iter().find(|l| l["tool"] == "echo").expect("the call's audit line");
    assert_eq!(line["who"]["client_id"], OPAQUE_CLIENT, "{line}");
    a.revoke(OPAQUE_CLIENT, &opaque);
    let (status, head) = p.initialize(Some(&opaque));
    assert_eq!(status, 401, "revoked: {head}");
    assert!(challenge(&head).contains("not active"), "{head}");
    // JWTs of the same issuer are still checked by their signature.
    echo_with(&p, &a.token(CLIENT, &p.resource, SCOPE));
}

/// The official MCP Python SDK's OAuth client, end to end: the 401, this server's metadata, the
/// authorization server's, dynamic registration, a user signing in (authorization code with
/// PKCE and the `resource` parameter), the token — then `tools/list` and a call, audited as
/// that user.
#[test]
fn the_official_python_sdk_signs_in_and_calls_as_the_user() {
    let a = auth_server();
    let p = Protected::start(&[&a.issuer], "");
    let env = Env::with(&[]);
    let out = mcp_script(1, "oauth_flow.py", &env)
        .args([
            p.resource.as_str(),
            a.issuer.as_str(),
            "echo",
            r#"{"text": "signed in"}"#,
            "--login",
            "alice",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "oauth_flow.py failed:\n{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(report["result"]["text"], "signed in", "{report}");
    assert_eq!(report["claims"]["aud"], p.resource.as_str(), "the token is for this resource: {report}");
    assert!(report["tools"].as_array().unwrap().contains(&json!("echo")), "{report}");
    let line = p.audit().into_iter().find(|l| l["tool"] == "echo").expect("the call's audit line");
    assert_eq!(line["who"]["sub"], "alice", "{line}");
    assert_eq!(line["who"]["groups"], json!(["ops"]), "{line}");
}

/// The tools `token` is shown by `tools/list` in a new session.
fn listed(p: &Protected, token: &str) -> Vec<String> {
    let auth = format!("Authorization: Bearer {token}\r\n");
    let session = open_session_as(&p.server.url, &auth, "2025-06-18", json!({}), "policy-test");
    let list = r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#;
    let (status, head, answer) = mcp_post(p.server.addr, Some(token), Some(&session), list);
    assert_eq!(status, 200, "{head}");
    let answer = answer.unwrap_or_else(|| panic!("no answer: {head}"));
    let tools = answer["result"]["tools"].as_array().unwrap_or_else(|| panic!("{answer}")).clone();
    tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

/// A call of `tool` with `token` in a new session: the JSON-RPC answer.
fn call_as(p: &Protected, token: &str, tool: &str, args: Value) -> Value {
    let auth = format!("Authorization: Bearer {token}\r\n");
    let session = open_session_as(&p.server.url, &auth, "2025-06-18", json!({}), "policy-test");
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let (status, head, answer) = mcp_post(p.server.addr, Some(token), Some(&session), &body.to_string());
    assert_eq!(status, 200, "{head}");
    answer.unwrap_or_else(|| panic!("no answer: {head}"))
}

/// The operator's policy decides per identity: one client sees and calls only `echo`, another
/// everything; a refused call is `forbidden` without naming the rule (the log names it), runs
/// nothing, and is audited; an edit of the policy file with an error keeps the rules in force,
/// and a good edit takes effect without a restart.
#[test]
fn a_policy_decides_per_identity_what_is_listed_and_called() {
    let a = auth_server();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    let rules = format!(
        "[[rule]]\nid = \"echo-for-all\"\neffect = \"allow\"\nactions = [\"list\", \"call\"]\n\
         when = 'resource.name == \"echo\"'\n\n\
         [[rule]]\nid = \"rs256-client-anything\"\neffect = \"allow\"\nactions = [\"list\", \"call\"]\n\
         when = 'principal.client_id == \"{RS256_CLIENT}\"'\n"
    );
    std::fs::write(&policy, &rules).unwrap();
    let issuer = format!("[[auth.issuers]]\nissuer = \"{}\"\n", a.issuer);
    let mut p = Protected::start_in(dir, "[policy]\nfile = \"policy.toml\"\n", &issuer);
    let limited = a.token(CLIENT, &p.resource, SCOPE);
    let trusted = a.token(RS256_CLIENT, &p.resource, SCOPE);
    assert_eq!(listed(&p, &limited), ["echo"], "a caller sees only what it may call");
    assert!(listed(&p, &trusted).len() > 2, "{:?}", listed(&p, &trusted));
    let refused = call_as(&p, &limited, "count_words", json!({"text": "a b"}));
    let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        text.contains("calling `count_words` may not be done") && !text.contains("rs256-client"),
        "{text}"
    );
    let ok = call_as(&p, &trusted, "count_words", json!({"text": "a b"}));
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    let refusal =
        p.audit().into_iter().find(|l| l["outcome"] == "forbidden").expect("the refusal is audited");
    assert_eq!(refusal["tool"], "count_words", "{refusal}");
    p.server.wait_line("no rule allows it", 10);
    // A broken edit keeps the rules in force, and says where the error is.
    let broken =
        "[[rule]]\nid = \"x\"\neffect = \"allow\"\nactions = [\"call\"]\nwhen = 'resource.name =='\n";
    std::fs::write(&policy, broken).unwrap();
    p.server.wait_line("policy.toml:5:", 20);
    assert_eq!(listed(&p, &limited), ["echo"], "the last good rules stay in force");
    // A good edit takes effect without a restart: now every client may call everything.
    std::fs::write(&policy, "[[rule]]\nid = \"all\"\neffect = \"allow\"\nactions = [\"list\", \"call\"]\n")
        .unwrap();
    p.server.wait_line("1 rules in force", 20);
    assert_eq!(call_as(&p, &limited, "count_words", json!({"text": "a b"}))["result"]["isError"], false);
}

/// `[rate_limits]`: an identity over its calls a minute is refused (`rate_limited`, nothing run,
/// a retry hint in `_meta`), and another identity is not slowed by it.
#[test]
fn an_identity_over_its_rate_limit_is_refused_and_another_is_not() {
    let a = auth_server();
    let p = Protected::start(
        &[&a.issuer],
        "[rate_limits]\nper_identity_tool = 3\n\n[mcp]\ntokens = [{ name = \"ci\", env = \"TOOLHOST_TEST_STATIC_TOKEN\" }]\n",
    );
    let oauth = a.token(CLIENT, &p.resource, SCOPE);
    for _ in 0..3 {
        assert_eq!(call_as(&p, &oauth, "echo", json!({"text": "x"}))["result"]["isError"], false);
    }
    let refused = call_as(&p, &oauth, "echo", json!({"text": "x"}));
    let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(text.contains("rate_limits.per_identity_tool") && text.contains("[rate_limited]"), "{text}");
    let retry = refused["result"]["_meta"]["toolhost/retryAfterMs"].as_u64().unwrap_or(0);
    assert!(retry > 0 && retry <= 20_000, "a retry hint: {refused}");
    // Another identity, and the same identity's other tool, are not held back.
    assert_eq!(call_as(&p, STATIC_TOKEN, "echo", json!({"text": "x"}))["result"]["isError"], false);
    assert_eq!(call_as(&p, &oauth, "count_words", json!({"text": "x"}))["result"]["isError"], false);
    let audited = p.audit().into_iter().filter(|l| l["outcome"] == "rate_limited").count();
    assert_eq!(audited, 1, "the refusal is audited, and nothing ran");
}

/// The `answer` action: only a caller the policy lets answer is asked to confirm a dangerous
/// call (a 2026-07-28 question); another caller's call is refused as when no one can be asked,
/// and nothing runs.
#[test]
fn only_a_caller_the_policy_lets_answer_is_asked_to_confirm() {
    let a = auth_server();
    let dir = tempfile::tempdir().unwrap();
    let rules = format!(
        "[[rule]]\nid = \"everyone-calls\"\neffect = \"allow\"\nactions = [\"list\", \"call\"]\n\n\
         [[rule]]\nid = \"rs256-confirms\"\neffect = \"allow\"\nactions = [\"answer\"]\n\
         when = 'principal.client_id == \"{RS256_CLIENT}\"'\n"
    );
    std::fs::write(dir.path().join("policy.toml"), rules).unwrap();
    let issuer = format!("[[auth.issuers]]\nissuer = \"{}\"\n", a.issuer);
    let extra = "[policy]\nfile = \"policy.toml\"\n\n[plugin.files]\nfs = [{ path = \"workspace\", mode = \"rw\" }]\n";
    let p = Protected::start_with(&[plugin_artifacts::FILES], dir, extra, &issuer);
    let ask = |client: &str| {
        let auth = format!("Authorization: Bearer {}\r\n", a.token(client, &p.resource, SCOPE));
        let c = Stateless { url: &p.server.url, auth: &auth, client: "policy-answer", capabilities: form() };
        c.call("delete", json!({"path": "nothing-here.txt"}), None)
    };
    let asked = ask(RS256_CLIENT);
    assert_eq!(asked["result"]["resultType"], "input_required", "the confirmer is asked: {asked}");
    let refused = ask(CLIENT);
    let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(text.contains("does not let this caller give"), "{text}");
}

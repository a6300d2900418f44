//! #60 item 5: the console signs people in at the authorization server of `[auth]`
//! (`[console] oauth_client_id`): the authorization code flow with PKCE, the console a public
//! client, against a real authorization server (`oidc-provider`, `support::oauth`) and in a
//! real browser (Chromium driven by Playwright, `tests/console/browser.py`). The person's
//! session is their principal: the operator's policy decides what they see and run, and the
//! audit trail says who. Every return the host did not ask for is refused, and opens nothing.

use crate::console::{Server, TOKEN, json, run_browser};
use crate::support::oauth::{AuthServer, auth_server};
use crate::support::{Env, free_port};
use std::collections::HashMap;

/// Everyone may list and call every tool but `split_task`; `ops` may do anything.
const POLICY: &str = "[[rule]]\nid = \"ops-may-do-anything\"\neffect = \"allow\"\n\
    actions = [\"list\", \"call\", \"read\", \"answer\"]\nwhen = '\"ops\" in principal.groups'\n\n\
    [[rule]]\nid = \"not-split-task\"\neffect = \"allow\"\nactions = [\"list\", \"call\"]\n\
    when = 'resource.name != \"split_task\"'\n";

/// `serve --http` on a port of its own with `[auth]` trusting `a`, the console a client of `a`
/// registered for that port, the policy above and `extra` config lines; and its URL. It is
/// `http://localhost:PORT/`: another site than the authorization server's `127.0.0.1` (a port
/// does not make a site), as in production, so the browser treats the return as cross-site.
fn start(a: &AuthServer, extra: &str) -> (Env, Server, String) {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let port = free_port();
    let base = format!("http://localhost:{port}");
    let client = a.register_public_client(&format!("{base}/console/callback"));
    let policy = env.at("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let config = format!(
        "{extra}\n[audit]\nfile = \"audit.jsonl\"\n\n[policy]\nfile = {:?}\n\n\
         [console]\noauth_client_id = \"{client}\"\n\n\
         [auth]\nresource = \"{base}/mcp\"\nscopes = [\"mcp:tools\"]\n\n[[auth.issuers]]\nissuer = \"{}\"\n",
        policy.display().to_string(),
        a.issuer
    );
    let server = Server::spawn(&env, &config, &[], &["serve", "--http", &format!("127.0.0.1:{port}")]);
    (env, server, format!("{base}/"))
}

/// Every `Set-Cookie` of an answer's head.
fn set_cookies(head: &str) -> Vec<String> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.trim().to_string())
        .collect()
}

fn opens_session(head: &str) -> bool {
    set_cookies(head).iter().any(|c| c.starts_with("toolhost_console=") && !c.contains("Max-Age=0"))
}

/// `GET /console/signin`: the authorization request's parameters, and the state cookie.
fn begin(server: &Server) -> (HashMap<String, String>, String) {
    let a = server.raw("GET", "/console/signin", "", "");
    assert_eq!(a.status, 303, "{}", a.head);
    let location = a.header("location").unwrap();
    let url = reqwest::Url::parse(&location).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    let cookie = set_cookies(&a.head).into_iter().find(|c| c.starts_with("toolhost_signin=")).unwrap();
    (query, cookie)
}

#[test]
fn people_sign_in_at_the_authorization_server_and_the_console_acts_as_them() {
    let a = auth_server();
    let (env, server, url) = start(&a, "");
    assert!(
        server.seen.iter().any(|l| l.contains(&format!("(sign in at {})", a.issuer))),
        "{:?}",
        server.seen
    );
    let person = |login: &str, expected: &str, absent: &str| {
        let vars = [
            ("LOGIN", login.to_string()),
            ("ISSUER", a.issuer.clone()),
            ("EXPECTED_TOOLS", expected.to_string()),
            ("ABSENT_TOOLS", absent.to_string()),
        ];
        run_browser("signin", &url, &vars);
    };
    // alice is in group ops, bob is not: the policy shows split_task to her only.
    person("alice", "count_words,split_task", "");
    person("bob", "count_words", "split_task");
    // Each one's run is theirs in the audit trail, as the authorization server vouched.
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (sub, group) in [("alice", "ops"), ("bob", "users")] {
        let line = lines
            .iter()
            .find(|l| l["tool"] == "count_words" && l["who"]["sub"] == sub)
            .unwrap_or_else(|| panic!("{sub}'s call is audited as theirs: {audit}"));
        let who = &line["who"];
        assert_eq!(
            (who["via"].as_str(), who["iss"].as_str()),
            (Some("oauth"), Some(a.issuer.as_str())),
            "{line}"
        );
        assert_eq!(who["groups"], serde_json::json!([group]), "{line}");
        assert_eq!(line["front_end"], "console", "{line}");
        assert_eq!(line["token"], serde_json::Value::Null, "{line}");
    }
}

#[test]
fn a_return_the_console_did_not_ask_for_opens_no_session() {
    let a = auth_server();
    let tokens = "[mcp]\ntokens = [{ name = \"ops\", env = \"TOOLHOST_TEST_CONSOLE_TOKEN\" }]\n";
    let (_env, server, _) = start(&a, tokens);
    let port = server.addr.port();
    // The login page offers both doors.
    let page = server.raw("GET", "/", "", "");
    assert_eq!(page.status, 401);
    assert!(
        page.body.contains(&format!(">Sign in with {}</a>", a.issuer)) && page.body.contains("[mcp] tokens")
    );
    let api = server.raw("GET", "/console/api/tools", "", "");
    assert!(api.status == 401 && api.body.contains("/console/signin"), "{}", api.body);
    // The authorization request: code, S256, this resource, this console's return.
    let (q, cookie) = begin(&server);
    let endpoint = a.metadata["authorization_endpoint"].as_str().unwrap();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"].len(), 43, "{q:?}");
    assert_eq!(q["resource"], format!("http://localhost:{port}/mcp"));
    assert_eq!(q["redirect_uri"], format!("http://localhost:{port}/console/callback"));
    assert_eq!(q["scope"], "mcp:tools");
    assert!(
        cookie.contains("Path=/console/callback")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let (located, _) = {
        let a = server.raw("GET", "/console/signin", "", "");
        (a.header("location").unwrap(), a)
    };
    assert!(located.starts_with(endpoint), "{located} is at {endpoint}");
    let state = q["state"].clone();
    let held = format!("Cookie: toolhost_signin={state}\r\n");
    let refused = |path: String, headers: &str, says: &str| {
        let r = server.raw("GET", &path, headers, "");
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert!(r.body.contains(says), "{path}: {says:?} in {}", r.body);
        assert!(r.body.contains("/console/signin"), "the page offers to start again: {}", r.body);
        assert!(!opens_session(&r.head), "{path}: {}", r.head);
    };
    // Another browser's return (no state cookie, or another sign-in's), a made-up state.
    refused(format!("/console/callback?code=c&state={state}"), "", "another browser");
    let (other, _) = begin(&server);
    refused(format!("/console/callback?code=c&state={}", other["state"]), &held, "another browser");
    refused(
        "/console/callback?code=c&state=made-up".into(),
        "Cookie: toolhost_signin=made-up\r\n",
        "already used",
    );
    refused("/console/callback?code=c".into(), &held, "lacks `state`");
    // The authorization server's refusal, said; and the state is spent with it.
    let denied = format!("/console/callback?error=access_denied&error_description=no%20thanks&state={state}");
    refused(denied.clone(), &held, "did not sign you in: access_denied (no thanks)");
    refused(denied, &held, "already used");
    // A code the authorization server never issued: its exchange fails, nothing opens.
    let held = format!("Cookie: toolhost_signin={}\r\n", other["state"]);
    refused(
        format!("/console/callback?code=forged&state={}", other["state"]),
        &held,
        "could not be exchanged",
    );
    // A static token still opens the console, as that token.
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    let ok = server.raw("POST", "/console/login", form, &format!("token={TOKEN}"));
    assert_eq!(ok.status, 303, "{}", ok.head);
    let session = set_cookies(&ok.head)[0].split(';').next().unwrap().to_string();
    let me = json(&server.raw("GET", "/console/api/session", &format!("Cookie: {session}\r\n"), ""));
    assert_eq!((me["token"].as_str(), me["who"].is_null()), (Some("ops"), true), "{me}");
}

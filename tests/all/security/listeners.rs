//! The host's own servers (#55, item 2). A plugin granted `127.0.0.1` (and `localhost`) with
//! `net_private = true`, on a `serve --http` without `[mcp] tokens`, tries what the report did
//! from inside a tool call, through the host's `http` import: run `delete` through the console
//! with `"confirm": true`, answer its own 2026-07-28 danger question over `/mcp`, grant itself
//! the workspace "always" through the console's grant card, and approve a held new version.
//! Each is refused as the host's own listener, whatever the grant, and nothing changes. Then
//! the same four from another local process (this test) without the key the server printed:
//! refused; and with it (the operator's browser and client): allowed. Last, the front door's
//! `Host: [::1]:PORT`, which `::1` being allowed must accept.

use crate::console::{Server, json};
use crate::support::Env;
use crate::support::mcp_http::{Stateless, form, open_session_as, post, session_headers};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// One stateless 2026-07-28 `tools/call` of `tool` with `arguments` (a client that can be
/// asked by form), with `auth` (`Authorization` lines, or nothing) and, on a retry, the
/// `requestState` and the answer to `inputRequests.confirm`; the JSON-RPC response.
fn call_2026(
    server: &Server,
    auth: &str,
    tool: &str,
    arguments: Value,
    retry: Option<(&str, Value)>,
) -> Value {
    let client = Stateless { url: &server.url, auth, client: "listeners-test", capabilities: form() };
    client.call(tool, arguments, retry.map(|(state, answer)| (state, "confirm", answer)))
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"approve": true}})
}

/// The plugin's request, made inside a tool call the model asked for (through the operator's
/// MCP client): `Ok` with what came back (`status N`, the headers, a blank line, the body), or
/// `Err` with the refusal the plugin got.
fn from_plugin(
    server: &Server,
    method: &str,
    url: &str,
    headers: &str,
    body: &Value,
) -> Result<String, String> {
    let mut arguments = json!({"method": method, "url": url, "headers": headers});
    if !body.is_null() {
        arguments["body"] = body.to_string().into();
    }
    let r = call_2026(server, &server.operator(), "http_request", arguments, None);
    let result = &r["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    if result["isError"] == true { Err(text) } else { Ok(text) }
}

/// The JSON body of what the plugin got back.
fn body_of(got: &str) -> Value {
    serde_json::from_str(got.split_once("\n\n").map_or("", |(_, b)| b)).unwrap_or(Value::Null)
}

/// Why the plugin's request was not refused as the host's own listener at `addr`, if it was not.
fn not_refused_as_own(got: &Result<String, String>, addr: &str, what: &str) -> Option<String> {
    match got {
        Err(e)
            if e.contains(&format!("{addr} is toolhost's own listener"))
                && e.contains("whatever its grant") =>
        {
            None
        }
        Err(e) => Some(format!("{what}: refused, but not as the host's own listener: {e}")),
        Ok(answer) => Some(format!("{what}: the plugin reached the host's own server:\n{answer}")),
    }
}

/// The plugin's request must have been refused as the host's own listener at `addr`.
#[track_caller]
fn refused_as_own(got: Result<String, String>, addr: &str, what: &str) {
    if let Some(why) = not_refused_as_own(&got, addr, what) {
        panic!("{why}");
    }
}

/// A running server over `hostile` (the attacker, granted loopback with `net_private`, and
/// asking for grants in the console), `files` (workspace writable: `delete`) and `versioned`.
fn host_under_attack(env: &Env) -> Server {
    let config = "[plugin.hostile]\nnet = [\"127.0.0.1\", \"localhost\"]\nnet_private = true\n\
                  on_missing = \"ask\"\n";
    Server::start_with(env, config, &["--allow-write", "files"])
}

/// A new version of `versioned` that requests more, dropped into the folder: held.
fn hold_a_new_version(env: &Env, server: &Server) -> String {
    std::fs::copy(plugin_artifacts::VERSIONED_V3, env.plugins.path().join("versioned-next.wasm")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let plugins = json(&server.get("/console/api/plugins", None));
        if let Some(held) = plugins["pending"].as_array().unwrap().first() {
            return held["sha256"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the new version was never held: {plugins}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn still_held(server: &Server) -> bool {
    json(&server.get("/console/api/plugins", None))["pending"].as_array().is_some_and(|p| p.len() == 1)
}

fn env() -> Env {
    let env = Env::with(&[plugin_artifacts::HOSTILE, plugin_artifacts::FILES, plugin_artifacts::VERSIONED]);
    for f in ["doomed.txt", "doomed-mcp.txt"] {
        std::fs::write(env.ws(f), "delete me").unwrap();
    }
    env
}

#[test]
fn a_plugin_cannot_drive_the_hosts_own_server() {
    let env = env();
    let server = host_under_attack(&env);
    let sha = hold_a_new_version(&env, &server);
    let approvals = std::fs::read(env.plugins.path().join(".toolhost-approvals.json")).ok();
    let base = server.base();
    let json_type = "Content-Type: application/json";
    // The plugin's HTTP works (another loopback port), so every refusal below is the listener's.
    let web = crate::net::server();
    let hello =
        from_plugin(&server, "GET", &format!("http://127.0.0.1:{}/hello", web.port), "", &Value::Null);
    assert!(hello.as_ref().is_ok_and(|t| t.starts_with("status 200")), "{hello:?}");

    // Every step is tried, as the report did, and what got through is listed at the end.
    let mut got_through = Vec::new();
    let mut check = |got: &Result<String, String>, what: &str| {
        got_through.extend(not_refused_as_own(got, &server.addr.to_string(), what));
    };
    // The console's CSRF token, as the report read it (any loopback peer got it).
    let session = from_plugin(&server, "GET", &format!("{base}console/api/session"), "", &Value::Null);
    check(&session, "reading the console's session");
    let csrf = session.as_deref().map(body_of).ok().and_then(|s| s["csrf"].as_str().map(str::to_string));
    let csrf = format!("X-CSRF-Token: {}", csrf.unwrap_or_default());
    let console = |path: &str, body: Value| {
        from_plugin(&server, "POST", &format!("{base}{path}"), &format!("{json_type}\n{csrf}"), &body)
    };

    // 1. `delete` through the console, confirmed by the plugin.
    let delete = json!({"tool": "delete", "arguments": {"path": "doomed.txt"}, "confirm": true});
    check(&console("console/api/call", delete), "delete through the console");

    // 2. Its own 2026-07-28 danger question, asked and answered over /mcp — by name this time
    // (`localhost`): the address connected to is what is checked.
    let mcp = format!("http://localhost:{}/mcp", server.addr.port());
    let mcp_headers = format!(
        "{json_type}\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\n\
         Mcp-Method: tools/call\nMcp-Name: delete"
    );
    let ask = |retry: Option<(String, Value)>| {
        let mut params = json!({"name": "delete", "arguments": {"path": "doomed-mcp.txt"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "plugin", "version": "0"}}});
        if let Some((state, answer)) = retry {
            params["requestState"] = state.into();
            params["inputResponses"] = json!({ "confirm": answer });
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        from_plugin(&server, "POST", &mcp, &mcp_headers, &body)
    };
    let asked = ask(None);
    check(&asked, "asking its own danger question over /mcp");
    let state = asked
        .as_deref()
        .map(body_of)
        .ok()
        .and_then(|q| q["result"]["requestState"].as_str().map(str::to_string));
    check(&ask(Some((state.unwrap_or_default(), accept()))), "answering its own danger question over /mcp");

    // 3. The workspace "always", through the console's grant card.
    let scribble = json!({"tool": "scribble", "arguments": {"path": "note.txt"}});
    let card = console("console/api/call", scribble.clone());
    check(&card, "calling for the grant card");
    let question = card.as_deref().map(body_of).unwrap_or(Value::Null)["grantQuestion"].clone();
    let mut always = scribble;
    always["grant"] = json!({"item": question["item"], "sha256": question["sha256"], "answer": "always"});
    check(&console("console/api/call", always), "answering the grant card");

    // 4. The held version, approved.
    check(&console("console/api/approve", json!({"plugin": "versioned", "sha256": sha})), "approving");

    // Nothing changed.
    if !env.ws("doomed.txt").exists() {
        got_through.push("delete ran (through the console)".into());
    }
    if !env.ws("doomed-mcp.txt").exists() {
        got_through.push("delete ran (its own answer over /mcp)".into());
    }
    if let Ok(grants) = std::fs::read_to_string(env.at("toolhost.grants.toml")) {
        got_through.push(format!("a grant was written:\n{grants}"));
    }
    if !still_held(&server) {
        got_through.push("the held version was approved".into());
    }
    if std::fs::read(env.plugins.path().join(".toolhost-approvals.json")).ok() != approvals {
        got_through.push("the approvals file changed".into());
    }
    assert!(got_through.is_empty(), "the plugin drove the host's own server:\n{}", got_through.join("\n"));
}

/// The same four from another local process that does not hold the key: the console does not
/// let it in, and `/mcp` neither asks it nor takes its answers — while the operator, with the
/// key, does each of them.
#[test]
fn another_local_process_without_the_key_cannot_either() {
    let env = env();
    let server = host_under_attack(&env);
    let sha = hold_a_new_version(&env, &server);
    let post = |path: &str, headers: &str, body: &Value| server.raw("POST", path, headers, &body.to_string());
    let json_type = "Content-Type: application/json\r\n";

    // Every step is tried as the plugin tried it; what got through is listed at the end.
    let mut got_through = Vec::new();
    let mut expect = |ok: bool, what: String| {
        if !ok {
            got_through.push(what);
        }
    };
    // The console: nothing without the session the key's link opens — not even its CSRF token.
    let session = server.raw("GET", "/console/api/session", "", "");
    expect(
        session.status == 401 && session.body.contains("the link toolhost printed"),
        format!("the console's session: {} {}", session.status, session.body),
    );
    let page = server.raw("GET", "/", "", "");
    expect(
        page.status == 401 && page.body.contains("/console/login?key="),
        format!("the page, which should say how to get in: {}", page.status),
    );
    let wrong = server.raw("GET", "/console/login?key=0123456789abcdef", "", "");
    expect(wrong.status == 401, format!("a wrong key signs in: {}", wrong.status));
    let csrf = serde_json::from_str::<Value>(&session.body)
        .ok()
        .and_then(|s| s["csrf"].as_str().map(str::to_string));
    let csrf = format!("{json_type}X-CSRF-Token: {}\r\n", csrf.unwrap_or_default());
    let console = |path: &str, body: &Value| {
        let a = post(path, &csrf, body);
        (
            a.status == 401,
            format!("{path} {body}: {} {}", a.status, a.body),
            serde_json::from_str::<Value>(&a.body),
        )
    };
    // 1. `delete` through the console, confirmed.
    let delete = json!({"tool": "delete", "arguments": {"path": "doomed.txt"}, "confirm": true});
    let (refused, what, _) = console("/console/api/call", &delete);
    expect(refused, what);
    // 3. The grant card, answered "always".
    let scribble = json!({"tool": "scribble", "arguments": {"path": "note.txt"}});
    let (refused, what, card) = console("/console/api/call", &scribble);
    expect(refused, what);
    let card = card.unwrap_or(Value::Null)["grantQuestion"].clone();
    let mut always = scribble.clone();
    always["grant"] = json!({"item": card["item"], "sha256": card["sha256"], "answer": "always"});
    let (refused, what, _) = console("/console/api/call", &always);
    expect(refused, what);
    // 4. The held version, approved.
    let approve = json!({"plugin": "versioned", "sha256": sha});
    let (refused, what, _) = console("/console/api/approve", &approve);
    expect(refused, what);

    // 2. /mcp: a call that asks nothing is served to anyone, as documented without tokens…
    let listed = call_2026(&server, "", "ls", json!({"path": "."}), None);
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    // …but no danger question is asked of a client without the key,
    let refused = call_2026(&server, "", "delete", json!({"path": "doomed-mcp.txt"}), None);
    let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default();
    expect(
        refused["result"]["isError"] == true && text.contains("cannot be asked") && text.contains("Bearer"),
        format!("a danger question asked of a client without the key: {refused}"),
    );
    // nor is one the operator's client was asked answered by it,
    let asked = call_2026(&server, &server.operator(), "delete", json!({"path": "doomed-mcp.txt"}), None);
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].as_str().unwrap().to_string();
    let answered =
        call_2026(&server, "", "delete", json!({"path": "doomed-mcp.txt"}), Some((&state, accept())));
    let e = answered["error"]["message"].as_str().unwrap_or_default();
    expect(
        e.contains("carries answers") && e.contains("Bearer"),
        format!("the operator's question answered without the key: {answered}"),
    );
    // nor one of a 2025 session (which would wait for the answer: a time limit says it did).
    if env.ws("doomed-mcp.txt").exists() {
        let refused = legacy_delete(&server, "doomed-mcp.txt");
        expect(refused.contains("cannot be asked"), format!("a 2025 session without the key: {refused}"));
    }

    // Nothing changed.
    for (changed, what) in [
        (!env.ws("doomed.txt").exists(), "delete ran (through the console)"),
        (!env.ws("doomed-mcp.txt").exists(), "delete ran (over /mcp)"),
        (env.at("toolhost.grants.toml").exists(), "a grant was written"),
        (!still_held(&server), "the held version was approved"),
    ] {
        expect(!changed, what.to_string());
    }
    assert!(got_through.is_empty(), "another local process drove the server:\n{}", got_through.join("\n"));

    the_operator_does_all_four(&env, &server, &state, [&delete, &scribble, &approve]);
}

/// The control: the operator — the browser signed in with the printed link, the MCP client with
/// the key — does each of the four (`state`: a question its client was asked).
fn the_operator_does_all_four(
    env: &Env,
    server: &Server,
    state: &str,
    [delete, scribble, approve]: [&Value; 3],
) {
    let json_type = "Content-Type: application/json\r\n";
    let ran = call_2026(
        server,
        &server.operator(),
        "delete",
        json!({"path": "doomed-mcp.txt"}),
        Some((state, accept())),
    );
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert!(!env.ws("doomed-mcp.txt").exists(), "the operator's answer ran the call");
    let csrf = json(&server.get("/console/api/session", None))["csrf"].as_str().unwrap().to_string();
    let with_csrf = format!("{json_type}X-CSRF-Token: {csrf}\r\n");
    let a = server.post_json("/console/api/call", &format!("X-CSRF-Token: {csrf}\r\n"), delete);
    assert_eq!(json(&a)["outcome"]["success"], true, "{}", a.body);
    assert!(!env.ws("doomed.txt").exists());
    let card = json(&server.request("POST", "/console/api/call", &with_csrf, &scribble.to_string()))["grantQuestion"].clone();
    assert!(card["item"].as_str().is_some_and(|i| i.starts_with("fs rw ")), "{card}");
    let mut always = scribble.clone();
    always["grant"] = json!({"item": card["item"], "sha256": card["sha256"], "answer": "always"});
    let a = server.request("POST", "/console/api/call", &with_csrf, &always.to_string());
    assert_eq!(json(&a)["outcome"]["success"], true, "{}", a.body);
    let grants = std::fs::read_to_string(env.at("toolhost.grants.toml")).unwrap();
    assert!(grants.contains("by = \"console\""), "{grants}");
    let a = server.request("POST", "/console/api/approve", &with_csrf, &approve.to_string());
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(!still_held(server), "approved");
    // The key is in no answer, and in the server's log only on the line that gave it.
    let key = server.key.clone().unwrap();
    assert!(!a.body.contains(&key));
    assert_eq!(server.seen.iter().filter(|l| l.contains(&key)).count(), 1, "{:?}", server.seen);
}

/// A 2025 session without the key whose client declares elicitation: `delete(path)` in it; the
/// text of the result.
fn legacy_delete(server: &Server, path: &str) -> String {
    let session = open_session_as(&server.url, "", "2025-06-18", json!({"elicitation": {}}), "keyless");
    let in_session = session_headers(&session, "2025-06-18");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "delete", "arguments": {"path": path}}});
    let (_, head, messages) = post(&server.url, &in_session, &call);
    let r = messages.into_iter().find(|m| m["id"] == 2).unwrap_or_else(|| panic!("no response: {head}"));
    assert_eq!(r["result"]["isError"], true, "{r}");
    r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

/// A server bound to every address (`0.0.0.0`) is the host's own on every local address of
/// its port: loopback aliases and the machine's own address included.
#[test]
fn a_listener_on_every_address_is_refused_on_each() {
    let env = env();
    let config = "[plugin.hostile]\nnet = [\"127.0.0.1\", \"127.0.0.2\", \"*\"]\nnet_private = true\n";
    let server =
        Server::spawn(&env, config, &[], &["serve", "--http", "0.0.0.0:0", "--allow-unauthenticated-remote"]);
    let port = server.addr.port().to_string();
    let mut targets = vec![format!("127.0.0.1:{port}"), format!("127.0.0.2:{port}")];
    // The machine's address on its default route, if it has one.
    let own = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").and_then(|()| s.local_addr()))
        .ok()
        .map(|a| a.ip())
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    targets.extend(own.map(|ip| format!("{ip}:{port}")));
    for target in &targets {
        let got = from_plugin(&server, "GET", &format!("http://{target}/healthz"), "", &Value::Null);
        refused_as_own(got, target, &format!("GET {target}/healthz"));
    }
    // Another port of the same addresses is not the host's.
    let web = crate::net::server();
    let hello =
        from_plugin(&server, "GET", &format!("http://127.0.0.2:{}/hello", web.port), "", &Value::Null);
    assert!(
        hello.as_ref().is_err_and(|e| !e.contains("own listener")),
        "127.0.0.2 has no test server: {hello:?}"
    );
    let hello =
        from_plugin(&server, "GET", &format!("http://127.0.0.1:{}/hello", web.port), "", &Value::Null);
    assert!(hello.as_ref().is_ok_and(|t| t.starts_with("status 200")), "{hello:?}");
}

/// `::1` is an allowed host: `Host: [::1]:PORT` (and `[::1]`) is accepted by every endpoint the
/// front door checks itself (`/metrics`, the console), as `127.0.0.1:PORT` is.
#[test]
fn a_bracketed_ipv6_loopback_host_is_accepted() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let server = Server::start(&env, "");
    let port = server.addr.port().to_string();
    let get = |host: &str, path: &str| {
        let cookie = server.session.as_deref().map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
        server.raw("GET", path, &format!("Host: {host}\r\n{cookie}"), "")
    };
    for host in [format!("[::1]:{port}"), "[::1]".to_string()] {
        for path in ["/metrics", "/", "/console/api/session"] {
            let a = get(&host, path);
            assert_eq!(a.status, 200, "Host: {host} {path}: {}", a.body);
        }
    }
    let a = get(&format!("[::2]:{port}"), "/metrics");
    assert_eq!(a.status, 403, "another IPv6 address is not allowed");
}

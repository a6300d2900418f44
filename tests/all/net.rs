//! Network and secrets (issue #6): a real HTTP server on 127.0.0.1, reached only through the
//! host's `http` import, with each refusal naming what is missing.

use crate::support::http::{self, reply};
use crate::support::{Env, call, err, ok};
use std::io::Write;
use std::time::{Duration, Instant};
use toolhost_core::ErrorKind;
use toolhost_core::capability::net::SecretOrigin;
use toolhost_core::settings::{SecretFrom, SecretSource};

/// A small HTTP/1.1 server on loopback, one thread per connection.
///
/// - `/hello`: 200, a short text
/// - `/big`: 200, 5 MiB
/// - `/slow`: answers after 3 s
/// - `/redirect-in`: 302 to `/hello` on the same host
/// - `/redirect-out`: 302 to `http://127.0.0.1:PORT/hello` (another host name)
/// - `/echo-headers`: 200, the request's headers as the body
/// - `/json`: 200, a JSON document
pub(crate) struct Server {
    pub(crate) port: u16,
}

pub(crate) fn server() -> Server {
    let port = http::listen(|got, out| {
        let (port, headers) = (got.port, got.head.as_str());
        match got.path() {
            "/hello" => reply(out, "200 OK", "Content-Type: text/plain\r\n", b"hello from the test server"),
            "/big" => reply(out, "200 OK", "Content-Type: text/plain\r\n", &vec![b'x'; 5 * 1024 * 1024]),
            "/slow" => {
                std::thread::sleep(Duration::from_secs(3));
                reply(out, "200 OK", "", b"finally")
            }
            "/redirect-in" => reply(out, "302 Found", "Location: /hello\r\n", b""),
            "/redirect-out" => {
                reply(out, "302 Found", &format!("Location: http://127.0.0.1:{port}/hello\r\n"), b"")
            }
            "/echo-headers" => reply(out, "200 OK", "Content-Type: text/plain\r\n", headers.as_bytes()),
            "/json" => reply(
                out,
                "200 OK",
                "Content-Type: application/json\r\n",
                br#"{"items": [{"name": "first"}, {"name": "second"}]}"#,
            ),
            "/page" => reply(
                out,
                "200 OK",
                "Content-Type: text/html; charset=utf-8\r\n",
                b"<html><head><title>Test page</title><script>var x = 1;</script></head><body><h1>Welcome</h1><p>Fish &amp; chips</p></body></html>",
            ),
            _ => reply(out, "404 Not Found", "", b"no such page"),
        }
    });
    Server { port }
}

impl Server {
    pub(crate) fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }
}

/// `hostile` (which requests any host and the secret `token`) with `hosts` granted.
fn env_granting(hosts: &[&str], private: bool) -> Env {
    let mut env = Env::with(&[plugin_artifacts::HOSTILE, plugin_artifacts::TEXT]);
    for h in hosts {
        env.config.grant_net("hostile", h).unwrap();
    }
    env.config.plugins.entry("hostile".into()).or_default().net_private = private;
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn granted_host_is_fetched_and_redirects_within_it_followed() {
    let s = server();
    let env = env_granting(&["localhost"], true);
    let host = env.host();
    let got = ok(&call(&host, "net_probe", &[&s.url("localhost", "/hello")]).await);
    assert!(got.starts_with("status 200 bytes 26 truncated false"), "{got}");
    assert!(got.ends_with("body hello from the test server"), "{got}");
    let got = ok(&call(&host, "net_probe", &[&s.url("localhost", "/redirect-in")]).await);
    assert!(
        got.contains("status 200") && got.contains(&format!("url {}", s.url("localhost", "/hello"))),
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_not_granted_is_refused_with_the_grant_to_add() {
    let s = server();
    let env = env_granting(&["localhost"], true);
    let host = env.host();
    let e = err(&call(&host, "net_probe", &[&s.url("127.0.0.1", "/hello")]).await, ErrorKind::ToolError);
    assert!(e.contains("host `127.0.0.1` is not granted to plugin `hostile`"), "{e}");
    assert!(
        e.contains("[plugin.hostile] net = [\"127.0.0.1\"]") && e.contains("--allow-net hostile=127.0.0.1"),
        "{e}"
    );
    for bad in ["file:///etc/passwd", "ftp://localhost/x", "not a url"] {
        let e = err(&call(&host, "net_probe", &[bad]).await, ErrorKind::ToolError);
        assert!(e.contains("not allowed (http and https only)") || e.contains("invalid URL"), "{bad}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_to_a_host_not_granted_is_refused() {
    let s = server();
    let env = env_granting(&["localhost"], true);
    let e = err(
        &call(&env.host(), "net_probe", &[&s.url("localhost", "/redirect-out")]).await,
        ErrorKind::ToolError,
    );
    assert!(e.contains("redirect from") && e.contains("host `127.0.0.1` is not granted"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn granted_name_resolving_to_loopback_is_refused_without_net_private() {
    let s = server();
    let env = env_granting(&["localhost", "127.0.0.1"], false);
    let host = env.host();
    let e = err(&call(&host, "net_probe", &[&s.url("localhost", "/hello")]).await, ErrorKind::ToolError);
    assert!(e.contains("localhost resolves to") && e.contains("loopback address"), "{e}");
    // The resolver's refusal, found in the client's error chain, names the plugin's section.
    assert!(e.contains("net_private = true in [plugin.hostile] of toolhost.toml"), "{e}");
    let e = err(&call(&host, "net_probe", &[&s.url("127.0.0.1", "/hello")]).await, ErrorKind::ToolError);
    assert!(e.contains("127.0.0.1 is a loopback address"), "{e}");
    // Cloud metadata and private ranges, as IP literals.
    let env = env_granting(&["169.254.169.254", "10.0.0.1"], false);
    let host = env.host();
    for url in ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"] {
        let e = err(&call(&host, "net_probe", &[url]).await, ErrorKind::ToolError);
        assert!(e.contains("link-local address") || e.contains("private address"), "{url}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_response_is_capped() {
    let s = server();
    let mut env = env_granting(&["localhost"], true);
    env.config.net.max_response_bytes = 1024 * 1024;
    let got = ok(&call(&env.host(), "net_probe", &[&s.url("localhost", "/big")]).await);
    assert!(got.starts_with("status 200 bytes 1048576 truncated true"), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_server_hits_the_timeout_while_the_host_keeps_serving() {
    let s = server();
    let mut env = env_granting(&["localhost"], true);
    env.config.net.timeout_ms = 400;
    let host = env.host();
    let url = s.url("localhost", "/slow");
    let args = [url.as_str()];
    let slow = call(&host, "net_probe", &args);
    let other = async {
        let started = Instant::now();
        let o = call(&host, "echo", &["still serving"]).await;
        (o, started.elapsed())
    };
    let (slow, (other, took)) = tokio::join!(slow, other);
    let e = err(&slow, ErrorKind::ToolError);
    assert!(e.contains("timed out after 400 ms"), "{e}");
    assert_eq!(ok(&other), "still serving");
    assert!(took < Duration::from_secs(2), "a call waited behind the slow request: {took:?}");

    // The call's own deadline bounds a request too: a 300 ms tool timeout ends the call.
    env.config.net.timeout_ms = 10_000;
    env.config.plugins.get_mut("hostile").unwrap().limits.timeout_ms = Some(300);
    let started = Instant::now();
    let e = err(&call(&env.host(), "net_probe", &[&url]).await, ErrorKind::Timeout);
    assert!(e.contains("timed out after 300 ms"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_network_without_a_grant() {
    let s = server();
    let mut env = env_granting(&[], true);
    let e =
        err(&call(&env.host(), "net_probe", &[&s.url("localhost", "/hello")]).await, ErrorKind::ToolError);
    assert!(e.contains("plugin `hostile` has no network access"), "{e}");
    assert!(
        e.contains("[plugin.hostile] net = [\"localhost\"]") && e.contains("--allow-net hostile=localhost"),
        "{e}"
    );
    env.config.grant_net("text", "*").unwrap();
    // `text` requests no hosts at all: even a wildcard grant gives it nothing (nothing to call
    // the import with, and a grant it did not ask for is not given).
    let list = toolhost::commands::list::list_json(&env.registry());
    let text = list["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "text").unwrap();
    assert_eq!(text["granted"]["net"], serde_json::json!([]));
}

/// `hostile` granted `localhost` and the secret `token`, bound to the test server's origin
/// (plain http on its port: without `hosts` a secret goes over https on port 443 only).
fn secret_env(s_value: &str, s: &Server) -> (Env, tempfile::NamedTempFile) {
    let mut env = env_granting(&["localhost"], true);
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "{s_value}").unwrap();
    let origin = SecretOrigin::parse(&format!("http://localhost:{}", s.port)).unwrap();
    env.config.secrets.insert(
        "token".into(),
        SecretSource {
            name: "token".into(),
            from: SecretFrom::File(file.path().into()),
            hosts: vec![origin],
        },
    );
    env.config.plugins.get_mut("hostile").unwrap().secrets.push("token".into());
    (env, file)
}

fn unhex(s: &str) -> String {
    let bytes: Vec<u8> =
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_is_sent_as_a_header_but_never_enters_the_guest() {
    const VALUE: &str = "s3cret-VALUE-4f9a1c";
    let s = server();
    let (env, _file) = secret_env(VALUE, &s);
    let host = env.host();
    // The server echoes the request headers: the value was sent, came back, and the whole
    // response is refused (never returned masked); the error names the secret, not its value.
    let e =
        err(&call(&host, "peek_secret", &[&s.url("localhost", "/echo-headers")]).await, ErrorKind::ToolError);
    assert!(e.contains("contains the value of secret `token` in its body") && !e.contains(VALUE), "{e}");
    // A response that does not reflect it reaches the guest, which returns everything it saw,
    // hex-encoded so that output redaction could not hide a leak.
    let seen = unhex(&ok(&call(&host, "peek_secret", &[&s.url("localhost", "/hello")]).await));
    assert!(!seen.contains(VALUE), "the secret reached the guest:\n{seen}");
    assert!(seen.contains("hello from the test server"), "{seen}");

    // Whatever a plugin returns is redacted too (here the model itself passes the value in).
    let e = call(&host, "scribble", &[&format!("/nowhere/{VALUE}")]).await;
    let text = e.text().to_string();
    assert!(!text.contains(VALUE) && text.contains("[secret token redacted]"), "{text}");

    // Not granted: the request is refused, naming the config to add.
    let env = env_granting(&["localhost"], true);
    let e = err(
        &call(&env.host(), "peek_secret", &[&s.url("localhost", "/echo-headers")]).await,
        ErrorKind::ToolError,
    );
    assert!(e.contains("secret `token` is not granted to plugin `hostile`"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_bound_to_hosts_is_not_sent_elsewhere() {
    let s = server();
    let (mut env, _file) = secret_env("another-secret-value", &s);
    env.config.secrets.get_mut("token").unwrap().hosts =
        vec![SecretOrigin::parse("api.example.com").unwrap()];
    let e = err(
        &call(&env.host(), "peek_secret", &[&s.url("localhost", "/echo-headers")]).await,
        ErrorKind::ToolError,
    );
    let to = s.url("localhost", "");
    assert!(
        e.contains(&format!("secret `token` may only be sent to https://api.example.com (not {to})")),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_plugin_fetches_readable_text_and_json() {
    let s = server();
    let mut env = Env::with(&[plugin_artifacts::WEB]);
    env.config.grant_net("web", "localhost").unwrap();
    env.config.plugins.get_mut("web").unwrap().net_private = true;
    let host = env.host();
    let page = ok(&call(&host, "fetch", &[&s.url("localhost", "/page")]).await);
    assert_eq!(page, "# Test page\n\nWelcome\n\nFish & chips");
    let json = ok(&call(&host, "http_json", &[&s.url("localhost", "/json"), "/items/1/name"]).await);
    assert_eq!(json, "\"second\"");
    let e = err(&call(&host, "fetch", &[&s.url("localhost", "/missing")]).await, ErrorKind::ToolError);
    assert!(e.contains("answered HTTP 404"), "{e}");
    let e = err(&call(&host, "fetch", &["https://example.org/"]).await, ErrorKind::ToolError);
    assert!(e.contains("host `example.org` is not granted to plugin `web`"), "{e}");
}

/// A failed call's note names only the grant the failure points at (issue #12, 5): a network
/// refusal names the `net` grant and not the unrelated `api_token` secret, and a refused
/// secret names the secret and not the network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_note_names_only_the_grant_it_points_at() {
    let s = server();
    // Nothing granted: `fetch` is refused for want of a host grant.
    let env = Env::with(&[plugin_artifacts::WEB]);
    let host = env.host();
    let e = err(
        &call(&host, "fetch", &[&format!("http://localhost:{}/hello", s.port)]).await,
        ErrorKind::ToolError,
    );
    assert!(e.contains("[note: the host refused") && e.contains("net *"), "{e}");
    assert!(!e.contains("api_token"), "the secret has nothing to do with this failure: {e}");

    // The host granted, the secret not: `api_get` is refused for want of the secret.
    let mut env = Env::with(&[plugin_artifacts::WEB]);
    env.config.grant_net("web", "localhost").unwrap();
    env.config.plugins.get_mut("web").unwrap().net_private = true;
    let host = env.host();
    let e = err(
        &call(&host, "api_get", &[&format!("http://localhost:{}/json", s.port)]).await,
        ErrorKind::ToolError,
    );
    assert!(e.contains("[note: the host refused") && e.contains("secret api_token"), "{e}");
    assert!(!e.contains("net *"), "the network grant has nothing to do with this failure: {e}");
}

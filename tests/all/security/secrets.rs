//! An injected secret cannot be recovered through what the server echoes back (#26, item 2).
//!
//! The `spy` plugin holds the secret `token` (granted, sent as `Authorization: Bearer …`) and
//! attacks it through a server on 127.0.0.1 that echoes request headers, the way the issue
//! did: cutting the echo inside the value with the transfer budget, guessing against the
//! host's treatment of echoed guesses (at the cut too), following redirects to another port
//! and asking for gzip. Each attack returns what it learned, hex-encoded so the host's
//! redaction of outputs cannot hide a success; every test asserts that it learned nothing
//! (and, where the server can tell, that the value never reached where it must not go).

use crate::support::http;
use crate::support::{Env, call, ok};
use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use toolhost_core::capability::net::SecretOrigin;
use toolhost_core::settings::{SecretFrom, SecretSource};

/// The secret: only characters the `guess` attack tries, so it could find every one of them.
const SECRET: &str = "k7Q2-x9Zp4mW-Tq8v";
/// The spy's transfer budget in the truncation attacks (`[net] max_transfer_mb = 1`).
const BUDGET: u64 = 1024 * 1024;
/// The characters `guess` tries (as in `plugins/spy`).
const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// An HTTP/1.1 server on 127.0.0.1 that records the head of every request it gets.
///
/// - `/echo`: 200, the request's headers as the body
/// - `/echo-gzip`: the same, gzip'd (`Content-Encoding: gzip`) when the request accepts gzip
/// - `/gzip-always`: the echo gzip'd whatever the request accepts
/// - `/echo-in-header`: 200, the `Authorization` it got in an `X-Echo` response header
/// - `/last`: 200, the `Authorization` of the previous request (a server that stores it)
/// - `/sink`: reads the body, answers with an empty one
/// - `/to/PORT/PATH`: 302 to `http://127.0.0.1:PORT/PATH`
struct Server {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start() -> Server {
        let heads = Arc::new(Mutex::new(Vec::new()));
        let last = Arc::new(Mutex::new(String::new()));
        let h = heads.clone();
        let port = http::listen(move |got, out| handle(got, out, &h, &last));
        Server { port, heads }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Whether any request this server got carried the secret.
    fn got_the_secret(&self) -> bool {
        self.heads.lock().unwrap().iter().any(|h| h.contains(SECRET))
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

fn handle(got: http::Got, out: &mut TcpStream, heads: &Mutex<Vec<String>>, last: &Mutex<String>) {
    // The last `Authorization` it got, and whether any `Accept-Encoding` takes gzip.
    let values = |name: &str| {
        got.head
            .lines()
            .filter_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)))
            .map(|(_, v)| v.trim().to_string())
            .collect::<Vec<_>>()
    };
    let auth = values("authorization").pop().unwrap_or_default();
    let accepts_gzip = values("accept-encoding").iter().any(|v| v.to_ascii_lowercase().contains("gzip"));
    let (request_line, headers) = (format!("{}\r\n", got.line), got.head.clone());
    heads.lock().unwrap().push(format!("{request_line}{headers}"));
    let previous = std::mem::replace(&mut *last.lock().unwrap(), auth.clone());
    let path = got.path();
    let gzip = |data: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let (status, extra, body): (&str, String, Vec<u8>) = match path {
        "/echo" => ("200 OK", String::new(), headers.into_bytes()),
        "/echo-gzip" if accepts_gzip => {
            ("200 OK", "Content-Encoding: gzip\r\n".into(), gzip(headers.as_bytes()))
        }
        "/echo-gzip" => ("200 OK", String::new(), headers.into_bytes()),
        "/gzip-always" => ("200 OK", "Content-Encoding: gzip\r\n".into(), gzip(headers.as_bytes())),
        "/echo-in-header" => ("200 OK", format!("X-Echo: {auth}\r\n"), b"see the headers".to_vec()),
        "/last" => ("200 OK", String::new(), previous.into_bytes()),
        "/sink" | "/hello" => ("200 OK", String::new(), Vec::new()),
        p if p.starts_with("/to/") => {
            let (port, rest) = p["/to/".len()..].split_once('/').unwrap_or((&p[4..], ""));
            ("302 Found", format!("Location: http://127.0.0.1:{port}/{rest}\r\n"), Vec::new())
        }
        _ => ("404 Not Found", String::new(), b"no such page".to_vec()),
    };
    http::reply(out, status, &format!("Content-Type: text/plain\r\n{extra}"), &body);
}

/// `spy` granted 127.0.0.1 (with `net_private`) and the secret `token`, bound to `hosts`.
fn spy(hosts: &[String]) -> (Env, tempfile::NamedTempFile) {
    let mut env = Env::with(&[plugin_artifacts::SPY]);
    env.config.grant_net("spy", "127.0.0.1").unwrap();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "{SECRET}").unwrap();
    let hosts = hosts.iter().map(|h| SecretOrigin::parse(h).unwrap()).collect();
    env.config.secrets.insert(
        "token".into(),
        SecretSource { name: "token".into(), from: SecretFrom::File(file.path().into()), hosts },
    );
    let p = env.config.plugins.get_mut("spy").unwrap();
    p.net_private = true;
    p.secrets.push("token".into());
    p.limits.timeout_ms = Some(60_000);
    env.config.net.max_transfer_bytes = BUDGET;
    env.config.net.max_requests_per_call = 1000;
    (env, file)
}

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

/// Split a spy answer `WORD HEX` into the word and the decoded text.
fn answer(out: &str) -> (&str, String) {
    let (word, rest) = out.split_once(' ').unwrap_or((out, ""));
    (word, String::from_utf8_lossy(&unhex(rest)).into_owned())
}

/// Whether `seen` holds any piece of the secret of 4 characters or more.
fn holds_a_piece(seen: &[u8]) -> bool {
    (0..=SECRET.len() - 4).any(|i| seen.windows(4).any(|w| w == &SECRET.as_bytes()[i..i + 4]))
}

/// The attack, whole: cut the echo of the secret-bearing request one byte (and every
/// other number of bytes) into the value, keep the longest part that came back, then guess the
/// rest one character at a time. It used to recover the entire secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_truncation_oracle_then_the_guess_oracle_recover_nothing() {
    let s = Server::start();
    let (env, _file) = spy(&[format!("http://127.0.0.1:{}", s.port)]);
    let host = env.host();
    let echo = s.url("/echo");
    let mut best = String::new();
    let mut refused = 0;
    for cut in 1..=SECRET.len() as u64 + 2 {
        let out = ok(&call(&host, "truncation", &[&echo, &BUDGET.to_string(), &cut.to_string()]).await);
        let (word, text) = answer(&out);
        assert!(!text.contains(SECRET) && !holds_a_piece(text.as_bytes()), "cut {cut}: {text}");
        match word {
            "learned" => {
                if !text.contains("redacted") && text.len() > best.len() {
                    best = text;
                }
            }
            "refused" => {
                assert!(text.contains("contains the value of secret `token` in its body"), "{text}");
                assert!(text.contains("refused as a whole"), "{text}");
                refused += 1;
            }
            other => panic!("unexpected answer {other}: {out}"),
        }
    }
    assert_eq!(best, "", "the cut let part of the secret through");
    assert!(refused > 0, "the secret was never even reflected: the test proves nothing");
    assert!(s.got_the_secret(), "the secret was sent to its origin");

    let out = ok(&call(&host, "guess", &[&echo, &hex::encode(&best)]).await);
    let (_, learned) = answer(&out);
    assert_eq!(learned, "", "guessing found something");
}

/// Guesses put exactly where the host cuts an echo (no secret on those requests): a host that
/// refused bodies ending with the start of a secret would single out the right character. The
/// spy aims at the cut both as if the host read nothing ahead and as if it read `L - 1` bytes
/// ahead (the length is no secret: see SECURITY.md). Every candidate is treated alike; only the
/// complete value stands out (the one thing a guess can ever teach: this complete guess is the
/// secret).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guess_at_the_cut_is_no_oracle() {
    let s = Server::start();
    let (env, _file) = spy(&[format!("http://127.0.0.1:{}", s.port)]);
    let host = env.host();
    let echo = s.url("/echo");
    let budget = BUDGET.to_string();
    for ahead in [0, SECRET.len() - 1].map(|n| n.to_string()) {
        for known in ["", &SECRET[..SECRET.len() / 2]] {
            let mut outcomes = std::collections::BTreeMap::new();
            for c in ALPHABET.chars() {
                let candidate = hex::encode(format!("{known}{c}"));
                let out = ok(&call(&host, "guess_at_cut", &[&echo, &budget, &candidate, &ahead]).await);
                outcomes.entry(out).or_insert_with(Vec::new).push(c);
            }
            assert_eq!(
                outcomes.len(),
                1,
                "after {known:?} ({ahead} ahead), some candidates stand out: {outcomes:?}"
            );
            assert!(outcomes.keys().next().unwrap().starts_with("ok "), "{outcomes:?}");
        }
        let whole = ok(&call(&host, "guess_at_cut", &[&echo, &budget, &hex::encode(SECRET), &ahead]).await);
        assert_eq!(whole, "refused", "the complete value is refused wherever it is cut");
    }
}

/// The secret does not follow a redirect to another origin: the same host on another port,
/// even when the secret is bound to both ports. A redirect within the origin keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_port_of_the_same_host_drops_the_secret() {
    let (a, b) = (Server::start(), Server::start());
    for bound in [vec![a.url("")], vec![a.url(""), b.url("")]] {
        let (env, _file) = spy(&bound);
        let host = env.host();
        let out = ok(&call(&host, "peek", &[&a.url(&format!("/to/{}/echo", b.port))]).await);
        let (word, seen) = answer(&out);
        assert_eq!(word, "ok", "{seen}");
        assert!(seen.contains(&format!("url {}", b.url("/echo"))), "{seen}");
        assert!(!holds_a_piece(seen.as_bytes()), "{seen}");
        assert!(!seen.to_ascii_lowercase().contains("authorization"), "{seen}");
        assert!(a.got_the_secret(), "sent to its origin");
        assert!(!b.got_the_secret(), "followed the redirect to port {}: {:?}", b.port, b.heads());
    }
    // Within the origin, the secret goes on to the next hop.
    let (env, _file) = spy(&[a.url("")]);
    let before = a.heads().len();
    let out = ok(&call(&env.host(), "peek", &[&a.url(&format!("/to/{}/hello", a.port))]).await);
    assert!(out.starts_with("ok "), "{out}");
    let heads = a.heads();
    assert!(heads[before..].iter().all(|h| h.contains(SECRET)) && heads.len() == before + 2, "{heads:?}");
}

/// Secrets are bound to scheme, host and port: without `hosts` a secret goes over https on
/// port 443 only, `127.0.0.1` means https too, and `http://127.0.0.1:PORT` is that port
/// alone. A refused request sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_and_other_ports_get_no_secret_unless_bound() {
    let (a, b) = (Server::start(), Server::start());
    for (bound, says) in [
        (vec![], "may only be sent over https on port 443".to_string()),
        (vec!["127.0.0.1".to_string()], "may only be sent to https://127.0.0.1 (not".to_string()),
        (vec![b.url("")], format!("may only be sent to {} (not {})", b.url(""), a.url(""))),
    ] {
        let (env, _file) = spy(&bound);
        let out = ok(&call(&env.host(), "peek", &[&a.url("/hello")]).await);
        let (word, e) = answer(&out);
        assert_eq!(word, "err", "{e}");
        assert!(e.contains("secret `token` ") && e.contains(&says), "{bound:?}: {e}");
        assert!(a.heads().is_empty(), "a refused request reached the server: {:?}", a.heads());
    }
    // The refusal of the default names the line that binds this origin.
    let (env, _file) = spy(&[]);
    let out = ok(&call(&env.host(), "peek", &[&a.url("/hello")]).await);
    assert!(answer(&out).1.contains(&format!("[secrets.token] hosts = [\"{}\"]", a.url(""))), "{out}");
}

/// The host owns content decoding: a plugin's `Accept-Encoding: gzip` becomes `identity` (so
/// the echo comes back plain, with the value, and is refused), a body gzip'd anyway is
/// refused, and a plugin may not ask for a range of the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_cannot_carry_the_secret_out() {
    let s = Server::start();
    let (env, _file) = spy(&[s.url("")]);
    let host = env.host();
    let out = ok(&call(&host, "peek", &[&s.url("/echo-gzip"), "accept-encoding: gzip"]).await);
    let (word, text) = answer(&out);
    assert_eq!(word, "err", "{text}");
    assert!(text.contains("contains the value of secret `token` in its body"), "{text}");
    let last = s.heads().pop().unwrap().to_ascii_lowercase();
    let encodings: Vec<&str> = last.lines().filter(|l| l.starts_with("accept-encoding:")).collect();
    assert_eq!(encodings, ["accept-encoding: identity"], "{last}");

    let out = ok(&call(&host, "peek", &[&s.url("/gzip-always")]).await);
    let (word, text) = answer(&out);
    assert_eq!(word, "err", "{text}");
    assert!(
        text.contains("is content-encoded (gzip)") && text.contains("plugin `spy` holds secrets"),
        "{text}"
    );

    let out = ok(&call(&host, "peek", &[&s.url("/echo"), "range: bytes=40-44"]).await);
    let (word, text) = answer(&out);
    assert_eq!(word, "err", "{text}");
    assert!(text.contains("header `range` cannot be set by plugin `spy`: it holds secrets"), "{text}");
}

/// A reflection is refused wherever it is: in a response header, or in the answer to a request
/// that carried no secret at all (a server that stored what an earlier request sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_a_header_or_from_an_earlier_request_is_refused() {
    let s = Server::start();
    let (env, _file) = spy(&[s.url("")]);
    let host = env.host();
    let out = ok(&call(&host, "peek", &[&s.url("/echo-in-header")]).await);
    let (word, text) = answer(&out);
    assert_eq!(word, "err", "{text}");
    assert!(text.contains("contains the value of secret `token` in its `x-echo` header"), "{text}");

    let out = ok(&call(&host, "peek", &[&s.url("/hello")]).await);
    assert!(out.starts_with("ok "), "{out}");
    let out = ok(&call(&host, "fetch", &[&s.url("/last")]).await);
    let (word, text) = answer(&out);
    assert_eq!(word, "err", "{text}");
    assert!(text.contains("in its body") && !holds_a_piece(text.as_bytes()), "{text}");
}

//! The web console (#28) of `serve --http`: its doors checked over raw HTTP (the session, the
//! CSRF token, the security headers, `[console] enabled`/`read_only`, locked approvals, no
//! secret in any answer), and every page in a real browser — Debian's Chromium driven by
//! Playwright (`tests/console/browser.py`), with axe-core's accessibility check.
//!
//! `cargo xtask test` installs what the browser tests need: Chromium with apt when missing,
//! Playwright into `target/console-env` and axe-core into `target/console-npm`, at pinned
//! versions (or set TOOLHOST_CONSOLE_PYTHON, TOOLHOST_CHROMIUM, TOOLHOST_AXE). Screenshots of
//! each page are written to `target/console-shots/`.

use crate::support::http::{self, Answer};
use crate::support::{self, Env, lines, root, wait_line};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub(crate) const TOKEN: &str = "console-token-6f0e2b9d41c7";
const SECRET: &str = "console-secret-value-93ad7c";

fn from_env_or(var: &str, default: PathBuf) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .map(|p| if p.is_relative() && p.components().count() > 1 { root().join(p) } else { p })
        .unwrap_or(default)
}

/// What the browser tests run with, checked to be there (`cargo xtask test` installs it).
struct Browser {
    python: PathBuf,
    chromium: PathBuf,
    axe: PathBuf,
}

fn browser() -> Browser {
    let b = Browser {
        python: from_env_or("TOOLHOST_CONSOLE_PYTHON", root().join("target/console-env/bin/python")),
        chromium: from_env_or("TOOLHOST_CHROMIUM", PathBuf::from("/usr/bin/chromium")),
        axe: from_env_or("TOOLHOST_AXE", root().join("target/console-npm/node_modules/axe-core/axe.min.js")),
    };
    let has_playwright = Command::new(&b.python)
        .args(["-c", "import playwright.sync_api"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_playwright,
        "{} has no playwright: run `cargo xtask test` (it installs tests/console/requirements.txt into target/console-env) or set TOOLHOST_CONSOLE_PYTHON",
        b.python.display()
    );
    assert!(
        b.chromium.is_file(),
        "{} is missing: `apt-get install chromium` (cargo xtask test does) or set TOOLHOST_CHROMIUM",
        b.chromium.display()
    );
    assert!(
        b.axe.is_file(),
        "{} is missing: run `cargo xtask test` (it installs axe-core into target/console-npm) or set TOOLHOST_AXE",
        b.axe.display()
    );
    b
}

/// Run one scenario of `tests/console/browser.py` against `url`.
pub(crate) fn run_browser(scenario: &str, url: &str, env: &[(&str, String)]) {
    let b = browser();
    let shots = root().join("target/console-shots");
    let out = Command::new(&b.python)
        .arg(root().join("tests/console/browser.py"))
        .arg(scenario)
        .env("CONSOLE_URL", url)
        .env("CHROMIUM", &b.chromium)
        .env("AXE_JS", &b.axe)
        .env("SHOTS", &shots)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "browser scenario `{scenario}` failed:\n{stdout}\n{stderr}");
    eprintln!("{stdout}");
}

/// A `toolhost serve --http 127.0.0.1:0` with a config, killed when dropped. Without `[mcp]
/// tokens` it is the operator's browser: signed in with the printed login link, its requests
/// carry the session cookie (see [`Server::raw`] for another process's).
pub(crate) struct Server {
    pub(crate) server: support::Server,
    /// The console's URL as printed, if it is on (without tokens, the login link).
    pub(crate) console_url: Option<String>,
    /// `toolhost_console=ID`: the session the login link opened.
    pub(crate) session: Option<String>,
}

impl std::ops::Deref for Server {
    type Target = support::Server;

    fn deref(&self) -> &support::Server {
        &self.server
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut support::Server {
        &mut self.server
    }
}

impl Server {
    pub(crate) fn start(env: &Env, config: &str) -> Server {
        Server::start_with(env, config, &[])
    }

    pub(crate) fn start_with(env: &Env, config: &str, args: &[&str]) -> Server {
        Server::spawn(env, config, args, &["serve", "--http", "127.0.0.1:0"])
    }

    pub(crate) fn spawn(env: &Env, config: &str, args: &[&str], command: &[&str]) -> Server {
        let server = support::Server::start(
            env.configured(config)
                .args(args)
                .args(command)
                .env_remove("DISPLAY")
                .env_remove("WAYLAND_DISPLAY")
                .env("TOOLHOST_TEST_CONSOLE_TOKEN", TOKEN)
                .env("TOOLHOST_TEST_CONSOLE_SECRET", SECRET)
                .env("XDG_STATE_HOME", env.at("state")),
        );
        let bound = server
            .seen
            .iter()
            .find_map(|l| l.split("listening on http://").nth(1))
            .map(|rest| rest.split(' ').next().unwrap().to_string())
            .expect("it says where it listens");
        assert!(
            server.seen.iter().any(|l| l.contains("MCP over streamable HTTP at") && l.contains(&bound)),
            "{:?}",
            server.seen
        );
        let console_url = server
            .seen
            .iter()
            .find_map(|l| l.split("console at ").nth(1))
            .map(|u| u.split(' ').next().unwrap().to_string());
        let mut server = Server { server, console_url, session: None };
        if let (Some(url), Some(_)) = (&server.console_url, &server.key) {
            let path = url[url.find("/console/login").expect("a login link")..].to_string();
            let opened = server.raw("GET", &path, "", "");
            assert_eq!(opened.status, 303, "the login link signs in: {}", opened.head);
            let cookie = opened.header("set-cookie").unwrap();
            server.session = Some(cookie.split(';').next().unwrap().to_string());
        }
        server
    }

    /// The console's own address, `http://ADDR/`.
    pub(crate) fn base(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// One request as the operator's browser: with the session cookie, unless `headers` carry one.
    pub(crate) fn request(&self, method: &str, path: &str, headers: &str, body: &str) -> Answer {
        match &self.session {
            Some(c) if !headers.to_ascii_lowercase().contains("cookie:") => {
                self.raw(method, path, &format!("Cookie: {c}\r\n{headers}"), body)
            }
            _ => self.raw(method, path, headers, body),
        }
    }

    /// One request as any other local process: only `headers` (and `Host: ADDR` unless they
    /// name one), no session.
    pub(crate) fn raw(&self, method: &str, path: &str, headers: &str, body: &str) -> Answer {
        self.server.request(method, path, headers, body)
    }

    pub(crate) fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        let h = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
        self.request("GET", path, &h, "")
    }

    pub(crate) fn post_json(&self, path: &str, extra: &str, body: &serde_json::Value) -> Answer {
        let h = format!("Content-Type: application/json\r\n{extra}");
        self.request("POST", path, &h, &body.to_string())
    }
}

pub(crate) fn json(a: &Answer) -> serde_json::Value {
    a.json()
}

/// The tool names the plugins of `cargo xtask plugins` register.
fn xtask_plugins() -> Vec<String> {
    let mut wasm: Vec<String> =
        [plugin_artifacts::FILES, plugin_artifacts::TEXT, plugin_artifacts::WEB, plugin_artifacts::SYSTEM]
            .iter()
            .map(|s| s.to_string())
            .collect();
    wasm.push(crate::polyglot::built("python/notes").display().to_string());
    wasm.push(crate::polyglot::built("js/datakit").display().to_string());
    wasm
}

/// A tool's app (MCP Apps) in Chromium: running `word_freq` shows datakit's chart in a frame
/// sandboxed to an opaque origin, and from inside that frame the page can read neither the
/// console's cookie nor its page, fetch nothing (not the console's API, not another origin),
/// not navigate the console, and call through the bridge only its own plugin's tools.
#[test]
fn an_app_renders_in_the_console_and_reaches_nothing_else() {
    let datakit = crate::polyglot::built("js/datakit").display().to_string();
    let env = Env::with(&[datakit.as_str(), plugin_artifacts::FILES]);
    let server = Server::start_with(&env, "", &["--allow-write", "files"]);
    let url = server.console_url.clone().expect("the console's URL is printed");
    run_browser("apps", &server.base(), &[("LOGIN_URL", url)]);
}

/// A hostile app (`tests/fixtures/apps/inspector`, embedded in a copy of `files`, shown for
/// `ls`): from the console's frame its page can read neither the cookie, the console's page nor
/// storage, reach neither the console's API nor the network, open no window, call no other
/// plugin's tool, and run the dangerous `delete` only if the person confirms (here: declined,
/// the file stays); its app-only `mkdir` works through the bridge.
#[test]
fn a_hostile_app_in_the_console_fails_at_every_attempt() {
    let section = toolhost_spec::apps::collect_dir(&root().join("tests/fixtures/apps")).unwrap();
    let files = std::fs::read(plugin_artifacts::FILES).unwrap();
    let env = Env::with(&[plugin_artifacts::TEXT]);
    std::fs::write(
        env.plugins.path().join("files.wasm"),
        toolhost_spec::apps::embed(&files, &section).unwrap(),
    )
    .unwrap();
    std::fs::write(env.ws("precious.txt"), "keep me").unwrap();
    let server = Server::start_with(&env, "", &["--allow-write", "files"]);
    let url = server.console_url.clone().expect("the console's URL is printed");
    run_browser("hostile_app", &server.base(), &[("LOGIN_URL", url)]);
    assert_eq!(
        std::fs::read_to_string(env.ws("precious.txt")).unwrap(),
        "keep me",
        "the declined delete ran"
    );
    assert!(env.ws("made-by-app").is_dir(), "the app-only mkdir did not run");
}

/// Every page in Chromium: each loads clean and passes axe; the tools page lists every tool of
/// `cargo xtask plugins`; the try form runs `count_words`, refuses bad JSON in the page and
/// shows a refused call's config line; a dangerous tool waits for its confirmation; a new
/// version dropped into the folder shows in the feed and the list without reloading the page;
/// approving a held version from the plugins page makes its tools callable.
#[test]
fn console_in_a_browser() {
    let wasm = xtask_plugins();
    let mut all: Vec<&str> = wasm.iter().map(String::as_str).collect();
    let expected: Vec<String> = Env::with(&all).registry().tools().map(|t| t.spec().name.clone()).collect();
    assert!(expected.len() >= 25, "{expected:?}");
    all.push(plugin_artifacts::VERSIONED);
    let env = Env::with(&all);
    let config =
        "[audit]\nfile = \"audit.jsonl\"\n\n[plugin.web]\non_missing = \"ask\"\nnet_private = true\n";
    let server = Server::start_with(&env, config, &["--allow-write", "files"]);
    let url = server.console_url.clone().expect("the console's URL is printed");
    assert!(url.starts_with(&format!("{}console/login?key=", server.base())), "{url}");
    run_browser(
        "main",
        &server.base(),
        &[
            ("LOGIN_URL", url),
            ("EXPECTED_TOOLS", expected.join(",")),
            ("PLUGINS", env.plugins.path().display().to_string()),
            ("WORKSPACE", env.workspace.path().display().to_string()),
            ("V2", plugin_artifacts::VERSIONED_V2.to_string()),
            ("V3", plugin_artifacts::VERSIONED_V3.to_string()),
        ],
    );
    // The console's calls are audited like any front end's.
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let delete = lines.iter().find(|l| l["tool"] == "delete").expect("the confirmed delete is audited");
    assert_eq!(delete["front_end"], "console");
    assert_eq!(delete["danger"]["decision"], "allow");
    assert!(lines.iter().any(|l| l["tool"] == "which" && l["version"] == "0.3.0"), "the approved v3 ran");
    let answered = |answer: &str| {
        lines.iter().any(|l| {
            l["tool"] == "fetch" && l["grants"][0]["answer"] == answer && l["grants"][0]["by"] == "console"
        })
    };
    assert!(answered("deny") && answered("once"), "the card's answers are audited: {audit}");
}

/// With a token configured: no page or API answers without the session, signing in sets an
/// `HttpOnly`, `SameSite=Strict` cookie (`Secure` behind TLS), a POST without the CSRF token is
/// refused, another origin is refused, every answer carries the security headers, and no
/// token or secret value is in any answer. Then the same in the browser.
#[test]
fn console_doors_with_a_token() {
    let env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::WEB]);
    let server = Server::start(
        &env,
        "[mcp]\ntokens = [{ name = \"ops\", env = \"TOOLHOST_TEST_CONSOLE_TOKEN\" }]\n\n\
         [secrets.api_token]\nenv = \"TOOLHOST_TEST_CONSOLE_SECRET\"\n\n\
         [plugin.web]\nsecrets = [\"api_token\"]\n\n[audit]\nfile = \"audit.jsonl\"\n",
    );
    let mut bodies = Vec::new();
    // No session: the page is the login form, every API answers 401.
    let page = server.get("/", None);
    assert_eq!(page.status, 401);
    assert!(page.body.contains("name=\"token\"") && !page.body.contains("page-tools"), "{}", page.body);
    for path in [
        "/console/api/session",
        "/console/api/tools",
        "/console/api/plugins",
        "/console/api/events",
        "/console/api/audit",
        "/console/api/audit.jsonl",
        "/console/api/metrics",
    ] {
        let a = server.get(path, Some("toolhost_console=0123456789abcdef"));
        assert_eq!(a.status, 401, "{path} without a session: {}", a.body);
        bodies.push(a.body);
    }
    let a = server.post_json("/console/api/call", "", &serde_json::json!({"tool": "count_words"}));
    assert_eq!(a.status, 401, "a call without a session");
    // Every answer says what a browser may do with it.
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'")
            && !csp.contains("unsafe-inline")
            && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(page.header("x-frame-options").as_deref(), Some("DENY"));
    assert_eq!(page.header("x-content-type-options").as_deref(), Some("nosniff"));
    // The assets hold no data and are served to the login form too.
    assert_eq!(server.get("/console/assets/console.css", None).status, 200);
    // Signing in.
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    assert_eq!(server.request("POST", "/console/login", form, "token=wrong-token-0123456789").status, 401);
    let ok = server.request("POST", "/console/login", form, &format!("token={TOKEN}"));
    assert_eq!((ok.status, ok.header("location").as_deref()), (303, Some("/")), "{}", ok.head);
    let set = ok.header("set-cookie").unwrap();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && !set.contains("Secure"), "{set}");
    let behind_tls = server.request(
        "POST",
        "/console/login",
        &format!("{form}X-Forwarded-Proto: https\r\n"),
        &format!("token={TOKEN}"),
    );
    assert!(behind_tls.header("set-cookie").unwrap().ends_with("; Secure"), "{}", behind_tls.head);
    let cookie = set.split(';').next().unwrap().to_string();
    let session = server.get("/console/api/session", Some(&cookie));
    assert_eq!(session.status, 200);
    let csrf = json(&session)["csrf"].as_str().unwrap().to_string();
    assert_eq!(json(&session)["token"], "ops");
    assert_eq!(server.get("/", Some(&cookie)).status, 200);
    for path in ["/console/api/tools", "/console/api/plugins", "/console/api/metrics", "/console/api/audit"] {
        let a = server.get(path, Some(&cookie));
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        bodies.push(a.body);
    }
    // A POST needs the CSRF token.
    let call = serde_json::json!({"tool": "count_words", "arguments": {"text": "a b"}});
    let with_cookie = format!("Cookie: {cookie}\r\n");
    for extra in [String::new(), "X-CSRF-Token: nope\r\n".to_string()] {
        let a = server.post_json("/console/api/call", &format!("{with_cookie}{extra}"), &call);
        assert_eq!(a.status, 403, "{extra:?}: {}", a.body);
        assert!(a.body.contains("CSRF"), "{}", a.body);
    }
    let csrf_header = format!("{with_cookie}X-CSRF-Token: {csrf}\r\n");
    let a = server.post_json("/console/api/call", &csrf_header, &call);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(json(&a)["outcome"]["success"], true, "{}", a.body);
    bodies.push(a.body);
    // Another site's page cannot post, even with the cookie and token in hand.
    let a = server.post_json(
        "/console/api/call",
        &format!("{csrf_header}Origin: http://evil.example\r\n"),
        &call,
    );
    assert_eq!(a.status, 403, "{}", a.body);
    let own = format!("{csrf_header}Origin: http://{}\r\n", server.addr);
    assert_eq!(server.post_json("/console/api/call", &own, &call).status, 200);
    // The audit view: both calls match, the newest shown; the export gives them as written.
    let a = server.get("/console/api/audit?tool=count_words&limit=1", Some(&cookie));
    let page = json(&a);
    assert_eq!((page["matching"].as_u64(), page["shown"].as_u64()), (Some(2), Some(1)), "{}", a.body);
    assert_eq!(page["lines"][0]["tool"], "count_words", "{}", a.body);
    let written = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let exported = server.get("/console/api/audit.jsonl?tool=count_words", Some(&cookie));
    let expected: Vec<&str> = written.lines().filter(|l| l.contains("\"tool\":\"count_words\"")).collect();
    assert_eq!((expected.len(), exported.body.lines().collect::<Vec<_>>()), (2, expected.clone()));
    // No token or secret value anywhere.
    for b in &bodies {
        assert!(!b.contains(TOKEN) && !b.contains(SECRET), "a value leaked: {b}");
    }
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!((line["front_end"].as_str(), line["token"].as_str()), (Some("console"), Some("ops")));
    // Signing out ends the session.
    let a = server.post_json("/console/logout", &csrf_header, &serde_json::json!({}));
    assert_eq!(a.status, 200);
    assert_eq!(server.get("/console/api/session", Some(&cookie)).status, 401);

    let url = server.console_url.clone().unwrap();
    run_browser("login", &url, &[("TOKEN", TOKEN.to_string())]);
}

/// `[console] enabled = false` serves nothing at `/`; `read_only = true` refuses to run or
/// approve (and says so in its data); under `[approvals] locked = true` a held plugin shows
/// the entry to pin and approving writes nothing.
#[test]
fn console_off_read_only_and_locked() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let off = Server::start(&env, "[console]\nenabled = false\n");
    assert_eq!(off.console_url, None, "no console URL is printed");
    assert_eq!(off.get("/", None).status, 404);
    assert_eq!(off.get("/console/api/tools", None).status, 404);
    drop(off);

    let ro = Server::start(&env, "[console]\nread_only = true\n");
    let session = json(&ro.get("/console/api/session", None));
    assert_eq!(session["readOnly"], true);
    assert_eq!(json(&ro.get("/console/api/tools", None))["readOnly"], true);
    let csrf = format!("X-CSRF-Token: {}\r\n", session["csrf"].as_str().unwrap());
    let call = serde_json::json!({"tool": "count_words", "arguments": {"text": "a"}});
    let a = ro.post_json("/console/api/call", &csrf, &call);
    assert_eq!(a.status, 403);
    assert!(a.body.contains("read_only"), "{}", a.body);
    let a = ro.post_json("/console/api/approve", &csrf, &serde_json::json!({"plugin": "text"}));
    assert_eq!(a.status, 403);
    drop(ro);

    let env = Env::with(&[plugin_artifacts::TEXT, plugin_artifacts::VERSIONED]);
    let locked = Server::start(&env, "[approvals]\nlocked = true\n");
    let plugins = json(&locked.get("/console/api/plugins", None));
    assert_eq!(plugins["approvals"]["locked"], true);
    let held: Vec<&serde_json::Value> = plugins["pending"].as_array().unwrap().iter().collect();
    assert_eq!(held.len(), 2, "no trust on first sight: {plugins}");
    let text = held.iter().find(|p| p["plugin"] == "text").unwrap();
    let entry = text["entry"].as_str().unwrap();
    assert!(entry.starts_with("[approvals.plugin.text]") && entry.contains("request = {"), "{entry}");
    let csrf = format!(
        "X-CSRF-Token: {}\r\n",
        json(&locked.get("/console/api/session", None))["csrf"].as_str().unwrap()
    );
    let a = locked.post_json(
        "/console/api/approve",
        &csrf,
        &serde_json::json!({"plugin": "text", "sha256": text["sha256"]}),
    );
    assert_eq!(a.status, 409, "{}", a.body);
    assert_eq!(json(&a)["entry"].as_str(), Some(entry));
    assert!(!env.plugins.path().join(".toolhost-approvals.json").exists(), "nothing written");
    // A stale page (the file changed since) approves nothing either.
    let a = locked.post_json(
        "/console/api/approve",
        &csrf,
        &serde_json::json!({"plugin": "text", "sha256": "00".repeat(32)}),
    );
    assert_eq!(a.status, 409, "{}", a.body);
    assert!(a.body.contains("changed since the page showed it"), "{}", a.body);
}

/// The first plugin version the console shows held, once one is (within 30 s).
fn first_held(server: &Server) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let plugins = json(&server.get("/console/api/plugins", None));
        if let Some(p) = plugins["pending"].as_array().unwrap().first() {
            return p.clone();
        }
        assert!(Instant::now() < deadline, "the new version was never held: {plugins}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reject moves a held version's file out of the plugins folder (into `.rejected/`, named with
/// its hash); the approved version keeps serving.
#[test]
fn console_rejects_a_held_version() {
    let env = Env::with(&[plugin_artifacts::VERSIONED]);
    let server = Server::start(&env, "");
    let csrf = format!(
        "X-CSRF-Token: {}\r\n",
        json(&server.get("/console/api/session", None))["csrf"].as_str().unwrap()
    );
    let v3 = env.plugins.path().join("versioned-next.wasm");
    std::fs::copy(plugin_artifacts::VERSIONED_V3, &v3).unwrap();
    let held = first_held(&server);
    assert_eq!((held["plugin"].as_str(), held["version"].as_str()), (Some("versioned"), Some("0.3.0")));
    assert_eq!(held["alsoServing"], false);
    let a = server.post_json(
        "/console/api/reject",
        &csrf,
        &serde_json::json!({"plugin": "versioned", "sha256": held["sha256"]}),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(!v3.exists(), "the held file left the plugins folder");
    let sha = held["sha256"].as_str().unwrap();
    let moved = env.plugins.path().join(format!(".rejected/versioned-next.wasm.{}", &sha[..12]));
    assert!(moved.is_file(), "{}", a.body);
    let plugins = json(&server.get("/console/api/plugins", None));
    assert_eq!(plugins["pending"].as_array().unwrap().len(), 0, "{plugins}");
    assert_eq!(plugins["plugins"][0]["version"], "0.1.0", "the approved version keeps serving");
}

/// #60: the operator's policy decides who may approve or reject a held version (`approve`):
/// the console's local operator (who proved nothing but the key: `via` none) is refused with
/// 403 by a policy that lets only token holders approve, and the version stays held.
#[test]
fn the_policy_decides_who_may_approve_in_the_console() {
    let env = Env::with(&[plugin_artifacts::VERSIONED]);
    let rules = env.at("policy.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nid = \"all-see\"\neffect = \"allow\"\nactions = [\"list\", \"call\", \"read\"]\n\n\
         [[rule]]\nid = \"tokens-approve\"\neffect = \"allow\"\nactions = [\"approve\"]\nwhen = 'principal.via == \"token\"'\n",
    )
    .unwrap();
    let server = Server::start(&env, &format!("[policy]\nfile = {:?}\n", rules.display().to_string()));
    let csrf = format!(
        "X-CSRF-Token: {}\r\n",
        json(&server.get("/console/api/session", None))["csrf"].as_str().unwrap()
    );
    std::fs::copy(plugin_artifacts::VERSIONED_V3, env.plugins.path().join("versioned-next.wasm")).unwrap();
    let held = first_held(&server);
    for action in ["approve", "reject"] {
        let body = serde_json::json!({"plugin": "versioned", "sha256": held["sha256"]});
        let a = server.post_json(&format!("/console/api/{action}"), &csrf, &body);
        assert_eq!(a.status, 403, "{action}: {}", a.body);
        assert!(a.body.contains("approving or rejecting plugin `versioned` may not be done"), "{}", a.body);
    }
    let plugins = json(&server.get("/console/api/plugins", None));
    assert_eq!(plugins["pending"].as_array().unwrap().len(), 1, "still held: {plugins}");
}

/// `toolhost console` serves on a free loopback port, prints the login link (the only line
/// that carries the key), and says so when there is no desktop to open it on — with a one-time
/// link, good for one session, so the key never goes on a browser's command line.
#[test]
fn the_console_command_prints_its_url() {
    let env = Env::with(&[plugin_artifacts::TEXT]);
    let mut server = Server::spawn(&env, "", &[], &["console"]);
    let url = server.console_url.clone().expect("the URL is printed");
    let key = server.key.clone().expect("the key is printed");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with(&format!("/console/login?key={key}")),
        "{url}"
    );
    // Printed before the plugins finish loading, so usually already seen.
    let note = match server.seen.iter().find(|l| l.contains("no desktop here")) {
        Some(l) => l.clone(),
        None => server.wait_line("no desktop here", 10),
    };
    assert!(
        note.contains(&format!("{}console/login?once=", server.base())) && !note.contains(&key),
        "{note}"
    );
    assert_eq!(server.seen.iter().filter(|l| l.contains(&key)).count(), 1, "{:?}", server.seen);
    let once = &note[note.find("/console/login?once=").unwrap()..];
    let once = once.split_whitespace().next().unwrap();
    let opened = server.raw("GET", once, "", "");
    assert_eq!(opened.status, 303, "the one-time link signs in: {}", opened.head);
    let cookie = opened.header("set-cookie").unwrap().split(';').next().unwrap().to_string();
    assert_eq!(server.raw("GET", "/", &format!("Cookie: {cookie}\r\n"), "").status, 200);
    assert_eq!(server.raw("GET", once, "", "").status, 401, "a one-time link is spent");
    assert_eq!(server.raw("GET", "/", "", "").status, 401, "no session, no console");
    assert_eq!(server.get("/", None).status, 200);
}

/// #29 in the console: the activity feed shows a running call — when it starts, then its
/// progress (done of total, the plugin's message) — and the call's finished event carries the
/// same id, so the page removes the running row when it arrives.
#[test]
fn the_feed_shows_running_calls_with_their_progress() {
    let env = Env::with(&[plugin_artifacts::TICKER]);
    let server = Server::start(&env, "");
    // The feed, read on its own thread, line by line.
    let cookie = server.session.as_deref().expect("signed in with the printed link");
    let headers = format!("Cookie: {cookie}\r\nAccept: text/event-stream\r\n");
    let feed = http::stream(server.addr, "GET", "/console/api/events", &headers, "");
    let events = lines(feed.body);
    let mut seen = Vec::new();
    wait_line(&events, "event: hello", 30, &mut seen);
    let csrf = json(&server.get("/console/api/session", None))["csrf"].as_str().unwrap().to_string();
    let call = serde_json::json!({"tool": "tick", "arguments": {"n": 5, "ms": 150, "trail": ""}});
    let a = server.post_json("/console/api/call", &format!("X-CSRF-Token: {csrf}\r\n"), &call);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(json(&a)["outcome"]["success"], true, "{}", a.body);
    // Every event has been written by the time the call's answer is: read up to its `call`.
    let mut running = Vec::new();
    let finished = loop {
        let line = wait_line(&events, "data: ", 30, &mut seen);
        let data: serde_json::Value = serde_json::from_str(line.trim_start_matches("data: ")).unwrap();
        if data.get("outcome").is_some() {
            break data;
        }
        if data.get("done").is_some() {
            running.push(data);
        }
    };
    assert_eq!(finished["tool"], "tick", "{finished}");
    let id = finished["id"].as_u64().unwrap();
    assert!(
        running.iter().all(|r| r["id"] == id && r["tool"] == "tick" && r["plugin"] == "ticker"),
        "{running:?}"
    );
    assert_eq!(running[0]["done"], 0, "the call shows when it starts: {running:?}");
    assert_eq!(running[0]["front_end"], "console", "{running:?}");
    let last = running.last().unwrap();
    assert_eq!((last["done"].as_u64(), last["total"].as_u64()), (Some(5), Some(5)), "{running:?}");
    assert_eq!(last["message"], "step 5 of 5", "{running:?}");
    assert!(running.len() >= 3, "progress reports in between: {running:?}");
}

/// A call from the try form that needs a grant its plugin requested (`files` and the workspace,
/// under `on_missing = "ask"`) comes back with a pending-grant card naming plugin, tool and
/// the exact item; the page's answer (CSRF-protected like every POST) applies only to that item
/// of that plugin file: once runs the call, always writes the grant (by `console`), deny refuses
/// and holds for the session; the audit trail records each answer.
#[test]
fn a_call_needing_a_grant_shows_a_card_answered_in_the_page() {
    let env = Env::with(&[plugin_artifacts::FILES]);
    std::fs::write(env.workspace.path().join("README.txt"), "read me").unwrap();
    let config = "[plugin.files]\non_missing = \"ask\"\n\n[audit]\nfile = \"audit.jsonl\"\n";
    let server = Server::start(&env, config);
    let csrf = json(&server.get("/console/api/session", None))["csrf"].as_str().unwrap().to_string();
    let csrf = format!("X-CSRF-Token: {csrf}\r\n");
    let read = |grant: Option<serde_json::Value>, headers: &str| {
        let mut body = serde_json::json!({"tool": "read", "arguments": {"path": "README.txt"}});
        if let Some(g) = grant {
            body["grant"] = g;
        }
        let a = server.post_json("/console/api/call", headers, &body);
        (a.status, if a.status == 200 { json(&a) } else { serde_json::Value::String(a.body) })
    };
    let (status, first) = read(None, &csrf);
    assert_eq!(status, 200);
    assert_eq!(first["outcome"]["success"], false, "{first}");
    let card = first["grantQuestion"].clone();
    let ws = std::fs::canonicalize(env.workspace.path()).unwrap().display().to_string();
    assert_eq!((card["plugin"].as_str(), card["tool"].as_str()), (Some("files"), Some("read")), "{card}");
    assert_eq!(card["item"], format!("fs rw {ws}"), "{card}");
    assert_eq!(card["question"], format!("files wants to read and write the directory {ws}"), "{card}");
    let answer = |item: &serde_json::Value, sha: &serde_json::Value, a: &str| serde_json::json!({"item": item, "sha256": sha, "answer": a});
    let once = answer(&card["item"], &card["sha256"], "once");
    // Without the CSRF token the answer is refused before anything runs.
    assert_eq!(read(Some(once.clone()), "").0, 403);
    // An answer about another item, or another plugin file, answers nothing: the card again.
    for wrong in [
        answer(&format!("fs ro {ws}").into(), &card["sha256"], "once"),
        answer(&card["item"], &"00".repeat(32).into(), "once"),
    ] {
        let (_, r) = read(Some(wrong), &csrf);
        assert_eq!(r["outcome"]["success"], false, "{r}");
        assert_eq!(r["grantQuestion"]["item"], card["item"], "{r}");
    }
    let (_, bad) = read(Some(answer(&card["item"], &card["sha256"], "yes")), &csrf);
    assert!(bad.as_str().is_some_and(|b| b.contains("grant.answer")), "{bad}");
    // Once: runs; the next call shows the card again.
    let (_, ran) = read(Some(once), &csrf);
    assert_eq!(ran["outcome"]["success"], true, "{ran}");
    assert_eq!(ran["outcome"]["data"], "read me");
    assert!(ran["grantQuestion"].is_null(), "{ran}");
    let (_, again) = read(None, &csrf);
    assert_eq!(again["grantQuestion"]["item"], card["item"], "once: asked again: {again}");
    // Always: written by `console`; the next call needs no card.
    let (_, ran) = read(Some(answer(&card["item"], &card["sha256"], "always")), &csrf);
    assert_eq!(ran["outcome"]["success"], true, "{ran}");
    let grants = std::fs::read_to_string(env.at("toolhost.grants.toml")).unwrap();
    assert!(
        grants.contains(&format!("item = \"fs rw {ws}\"")) && grants.contains("by = \"console\""),
        "{grants}"
    );
    let (_, next) = read(None, &csrf);
    assert_eq!(next["outcome"]["success"], true, "{next}");
    assert!(next["grantQuestion"].is_null(), "{next}");
    drop(server);
    // Deny, in a fresh session without the grant: refused, and not asked again.
    std::fs::remove_file(env.at("toolhost.grants.toml")).unwrap();
    let server = Server::start(&env, config);
    let csrf = json(&server.get("/console/api/session", None))["csrf"].as_str().unwrap().to_string();
    let csrf = format!("X-CSRF-Token: {csrf}\r\n");
    let call = |grant: Option<serde_json::Value>| {
        let mut body = serde_json::json!({"tool": "read", "arguments": {"path": "README.txt"}});
        if let Some(g) = grant {
            body["grant"] = g;
        }
        json(&server.post_json("/console/api/call", &csrf, &body))
    };
    let card = call(None)["grantQuestion"].clone();
    let denied = call(Some(answer(&card["item"], &card["sha256"], "deny")));
    assert_eq!(denied["outcome"]["success"], false, "{denied}");
    assert!(denied["outcome"]["error"].as_str().unwrap().contains("denied plugin `files`"), "{denied}");
    let after = call(None);
    assert!(after["grantQuestion"].is_null() && after["outcome"]["success"] == false, "{after}");
    let audit = std::fs::read_to_string(env.at("audit.jsonl")).unwrap();
    let answers: Vec<String> = audit
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["grants"].is_array())
        .map(|v| format!("{} {} {}", v["front_end"], v["grants"][0]["answer"], v["grants"][0]["by"]))
        .collect();
    assert!(answers.contains(&r#""console" "once" "console""#.to_string()), "{answers:?}");
    assert!(answers.contains(&r#""console" "always" "console""#.to_string()), "{answers:?}");
    assert!(answers.contains(&r#""console" "deny" "console""#.to_string()), "{answers:?}");
}

/// The Resources page's API: each skill with its files, one read by its URI (text as text), an
/// unknown URI a 404 naming it, no `uri` a 400; another local process without the session gets
/// nothing.
#[test]
fn console_lists_and_reads_the_skills_files() {
    let env = Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    let server = Server::start(&env, "");
    let list = json(&server.get("/console/api/resources", None));
    let skills = list["skills"].as_array().unwrap_or_else(|| panic!("{list}"));
    let skill = skills.iter().find(|s| s["name"] == "workspace-files").unwrap_or_else(|| panic!("{list}"));
    assert_eq!(skill["plugin"], "files");
    assert_eq!(skill["uri"], "skill://files/workspace-files/SKILL.md");
    let files = skill["files"].as_array().unwrap();
    assert_eq!(files[0]["uri"], "skill://files/workspace-files/SKILL.md");
    assert!(
        files.iter().any(|f| f["uri"] == "skill://files/workspace-files/references/errors.md"
            && f["mimeType"] == "text/markdown"
            && f["text"] == true),
        "{list}"
    );
    let read = server.get("/console/api/resource?uri=skill%3A%2F%2Ffiles%2Fworkspace-files%2FSKILL.md", None);
    assert_eq!(read.status, 200, "{}", read.body);
    let r = json(&read);
    assert!(r["text"].as_str().unwrap().starts_with("---\nname: workspace-files\n"), "{r}");
    assert_eq!((&r["size"], &r["mimeType"]), (&files[0]["size"], &files[0]["mimeType"]));
    let missing = server.get("/console/api/resource?uri=skill://files/nope/SKILL.md", None);
    assert_eq!(missing.status, 404);
    let error = json(&missing)["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("no resource skill://files/nope/SKILL.md"), "{error}");
    assert_eq!(server.get("/console/api/resource", None).status, 400);
    assert_eq!(server.raw("GET", "/console/api/resources", "", "").status, 401);
}

//! Issue #60: what identities cost, each figure beside its baseline in the same run.
//!
//! - An MCP HTTP `tools/call` of `echo` with an OAuth access token (an ES256 JWT issued by a
//!   real authorization server: `oidc-provider`, run by node from `tests/oauth/server.mjs` as the
//!   tests run it) against the same call to a server without `[auth]` and no token (target ≤
//!   1.1×, the issuer's keys cached); also with a static `[mcp] tokens` bearer, and with a fresh
//!   token every call (its signature checked each time: no verified token remembered).
//! - One policy decision (`Policy::decide`) with 1 and with 100 rules, and a call through the
//!   executor with the 100-rule policy against none.
//! - One rate-limit check (`RateLimits::check`, both buckets of a call), in this process and in
//!   Redis (a `redis-server` of the bench's own on loopback), and a call through the executor with
//!   limits in each against none.

use super::kv::{redis, redis_round_trip};
use super::{AlwaysConfirm, Case, Config, Registry, Runtime, ToolCall, Toolhost, interleaved, us};
use std::io::{BufRead, BufReader};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::executor::{CallContext, CallControl};
use toolhost_core::identity::Principal;
use toolhost_core::policy::{Action, Policy, Request, Resource};
use toolhost_core::rate::{RateLimits, RateSettings};

/// The scope the authenticated server requires (tests/oauth/server.mjs grants it).
const SCOPE: &str = "mcp:tools";
/// A confidential client of tests/oauth/server.mjs (client credentials; ES256 JWTs that live 10
/// minutes) and its secret, as tests/all/support/oauth.rs names them.
const CLIENT: (&str, &str) = ("toolhost-test", "toolhost-test-secret-0123456789");
/// The static `[mcp] tokens` bearer of the authenticated server.
const STATIC_TOKEN: &str = "bench-static-token-4e7a1c9d2b";

/// The section: `n` samples per case (in process), `http` per case over HTTP.
pub fn rows(line: &mut impl FnMut(String), rt: &tokio::runtime::Runtime, work: &Path, n: usize, http: usize) {
    line(String::new());
    line("## Identities: OAuth, policies, rate limits (issue #60)".into());
    http_rows(line, work, http);
    policy_rows(line, rt, work, n);
    rate_rows(line, rt, work, n);
}

// --- An authenticated call over HTTP -------------------------------------------------------

/// The workspace's root (the bench runs from `host/cli`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `node_modules` folder holding oidc-provider: `TOOLHOST_TEST_OIDC_PROVIDER`, else
/// `oauth-server/node_modules` in the target folder this bench was built in (where `cargo xtask
/// test` installs it), else in the workspace's `target`.
fn oidc_provider() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().unwrap_or_default();
    let candidates: Vec<PathBuf> = std::env::var_os("TOOLHOST_TEST_OIDC_PROVIDER")
        .map(PathBuf::from)
        .into_iter()
        .chain(exe.ancestors().skip(1).map(|d| d.join("oauth-server/node_modules")))
        .chain([root().join("target/oauth-server/node_modules")])
        .collect();
    candidates.iter().find(|d| d.join("oidc-provider/package.json").is_file()).cloned().ok_or_else(|| {
        "no oidc-provider (run `cargo xtask test` once: it installs it into target/oauth-server, or set \
         TOOLHOST_TEST_OIDC_PROVIDER)"
            .to_string()
    })
}

/// A process killed (and reaped) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// tests/oauth/server.mjs on a free port (its stdin kept open: it exits when that closes): the
/// process and the issuer it printed.
fn auth_server() -> Result<(Killed, String), String> {
    let modules = oidc_provider()?;
    let mut child = Command::new("node")
        .arg(root().join("tests/oauth/server.mjs"))
        .arg("0")
        .env("TOOLHOST_TEST_OIDC_PROVIDER", &modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run node ({e}): the authorization server is a node program"))?;
    let out = child.stdout.take().unwrap();
    let child = Killed(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(issuer) = l.strip_prefix("listening ") {
                let _ = tx.send(issuer.to_string());
            }
        }
    });
    let issuer = rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| "tests/oauth/server.mjs did not say it was listening within 30 s".to_string())?;
    Ok((child, issuer))
}

/// `count` client-credentials access tokens for `resource` from the issuer's token endpoint
/// (each a distinct JWT), fetched 8 at a time.
async fn tokens(issuer: &str, resource: &str, count: usize) -> Vec<String> {
    let http = reqwest::Client::new();
    let meta: serde_json::Value = http
        .get(format!("{issuer}/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let endpoint = meta["token_endpoint"].as_str().expect("a token_endpoint").to_string();
    let form: Vec<(&'static str, String)> = vec![
        ("grant_type", "client_credentials".into()),
        ("resource", resource.into()),
        ("scope", SCOPE.into()),
        ("client_id", CLIENT.0.into()),
        ("client_secret", CLIENT.1.into()),
    ];
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let asks: Vec<_> = (0..(count - out.len()).min(8))
            .map(|_| {
                let (http, endpoint, form) = (http.clone(), endpoint.clone(), form.clone());
                tokio::spawn(async move {
                    let answer: serde_json::Value =
                        http.post(&endpoint).form(&form).send().await.unwrap().json().await.unwrap();
                    answer["access_token"]
                        .as_str()
                        .unwrap_or_else(|| panic!("no access_token: {answer}"))
                        .to_string()
                })
            })
            .collect();
        for ask in asks {
            out.push(ask.await.unwrap());
        }
    }
    out
}

/// `toolhost serve --mcp --http ADDR` (the release binary) over `plugins` with `config` (none:
/// the defaults), its state (the audit trail) in a folder of its own named after `config`: the
/// process and its MCP URL.
fn serve(plugins: &Path, config: Option<&Path>, addr: &str, vars: &[(&str, &str)]) -> (Killed, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    let name = config.and_then(Path::file_stem).map_or("defaults".into(), |n| n.to_string_lossy());
    let state =
        plugins.with_file_name(format!("{}-state-{name}", plugins.file_name().unwrap().to_string_lossy()));
    cmd.arg("--plugins")
        .arg(plugins)
        .args(["serve", "--mcp", "--http", addr])
        .env("XDG_STATE_HOME", state)
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let child = Killed(child);
    let url = loop {
        let l = err.next().expect("serve exited before listening").unwrap();
        if let Some(at) = l.find("http://").filter(|_| l.contains("/mcp,")) {
            break l[at..].split_whitespace().next().unwrap().trim_end_matches(',').to_string();
        }
    };
    // Keep reading what the server writes: a closed pipe would fail its writes.
    std::thread::spawn(move || err.for_each(drop));
    (child, url)
}

/// A stateless 2026-07-28 `tools/call` of `echo("hello")` to `url` with `token` (none: no
/// `Authorization`) on `client`'s kept-alive connection; it must be answered with a result.
async fn echo_over_http(client: &reqwest::Client, url: &str, token: Option<&str>) {
    const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"}}}}"#;
    let mut r = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo");
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    let answer = r.body(BODY).send().await.unwrap();
    let status = answer.status();
    let text = answer.text().await.unwrap();
    assert!(
        status.is_success()
            && text.contains("\"result\"")
            && text.contains("hello")
            && !text.contains("\"isError\":true"),
        "{status}: {text}"
    );
}

fn http_rows(line: &mut impl FnMut(String), work: &Path, n: usize) {
    line(String::new());
    line(format!(
        "An MCP HTTP `tools/call` of `echo(\"hello\")` (stateless 2026-07-28, one client on a kept-alive connection, default configuration: audited) to `toolhost serve --mcp --http` (the binary built with the bench: release under `cargo xtask bench`; not pinned), against the same call to a server without `[auth]` sent no token; the cases side by side in turns of 50 calls ({n} samples each). The OAuth token is an ES256 JWT from a real authorization server (`oidc-provider`, `tests/oauth/server.mjs`) for this resource; the issuer's keys are fetched at the first call and kept. The same token again is what a client sends for the token's life: its verification is remembered (a hash and a lookup). A fresh token each call has its signature checked each time. Target (the issue's): ≤ 1.1× the unauthenticated call, keys cached."
    ));
    line(String::new());
    line("| what | p50 | p99 | ÷ no token | target ≤ 1.1× |".into());
    line("|---|---|---|---|---|".into());
    let (_auth, issuer) = match auth_server() {
        Ok(a) => a,
        Err(why) => {
            line(format!("| every authenticated row | — | — | — | not measured: {why} |"));
            return;
        }
    };
    let plugins = work.join("identity-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    // The resource is the URL clients reach: the port is chosen before the server starts.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = work.join("identity-auth.toml");
    std::fs::write(
        &config,
        format!(
            "[auth]\nresource = \"{resource}\"\nscopes = [\"{SCOPE}\"]\n\n[[auth.issuers]]\nissuer = \"{issuer}\"\n\n\
             [mcp]\ntokens = [{{ name = \"bench\", env = \"TOOLHOST_BENCH_STATIC_TOKEN\" }}]\n"
        ),
    )
    .unwrap();
    let (_open, open_url) = serve(&plugins, None, "127.0.0.1:0", &[]);
    let (_authed, authed_url) = serve(
        &plugins,
        Some(&config),
        &format!("127.0.0.1:{port}"),
        &[("TOOLHOST_BENCH_STATIC_TOKEN", STATIC_TOKEN)],
    );
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // As many fresh tokens as the fresh-token case makes calls (see `interleaved`), and one more
    // for the same-token case.
    let calls = n / 10 + (n / 5).max(50) + n.div_ceil(super::BLOCK) * (super::BLOCK + 1);
    let fetched = Instant::now();
    let mut fresh = rt.block_on(tokens(&issuer, &resource, calls + 1));
    let fetched = fetched.elapsed();
    let same = fresh.pop().unwrap();
    let fresh = std::cell::RefCell::new(fresh.into_iter());
    let client = {
        let _in = rt.enter();
        reqwest::Client::new()
    };
    let (client, open_url, authed_url, same) =
        (&client, open_url.as_str(), authed_url.as_str(), same.as_str());
    let fresh = &fresh;
    let mut cases: Vec<Case<'_>> = vec![
        Box::new(move || Box::pin(echo_over_http(client, open_url, None))),
        Box::new(move || Box::pin(echo_over_http(client, authed_url, Some(STATIC_TOKEN)))),
        Box::new(move || Box::pin(echo_over_http(client, authed_url, Some(same)))),
        Box::new(move || {
            let token = fresh.borrow_mut().next().expect("a fresh token for every call");
            Box::pin(async move { echo_over_http(client, authed_url, Some(&token)).await })
        }),
    ];
    let m = interleaved(&rt, &mut cases, n);
    let base = m[0].stats.p50.as_secs_f64();
    let labels = [
        "no `[auth]`, no token (the baseline)",
        "a static `[mcp] tokens` bearer",
        "an OAuth JWT, the same token every call (**what a client does**; its verification remembered)",
        "an OAuth JWT, a fresh token every call (ES256 signature checked each time; keys cached)",
    ];
    for (i, label) in labels.iter().enumerate() {
        let r = m[i].stats.p50.as_secs_f64() / base;
        let target = match i {
            0 => "—",
            _ if r <= 1.1 => "met",
            _ => "**not met**",
        };
        line(format!("| {label} | {} | {} | {r:.2}× | {target} |", us(m[i].stats.p50), us(m[i].stats.p99)));
    }
    line(String::new());
    line(format!(
        "The {} tokens were fetched from the authorization server before measuring, in {} ({} each, 8 at a time).",
        calls + 1,
        super::ms(fetched),
        us(fetched / (calls + 1) as u32)
    ));
}

// --- A policy decision ----------------------------------------------------------------------

/// A policy of `rules` rules about `call`, of the kinds an operator writes (groups, scopes,
/// plugins, a tool's danger, arguments), every one evaluated for the request [`decision`] makes:
/// none but the last holds, and that last one allows (deny wins, so a decision reads them all).
fn policy_text(rules: usize) -> String {
    let mut text = String::new();
    for i in 0..rules.saturating_sub(1) {
        let (effect, when) = match i % 4 {
            0 => ("allow", format!(r#""team-{i}" in principal.groups && !resource.danger"#)),
            1 => ("deny", format!(r#"resource.plugin == "plugin-{i}" && principal.via != "local""#)),
            2 => {
                ("deny", format!(r#"has(context.args.path) && context.args.path.startsWith("/secret-{i}/")"#))
            }
            _ => ("allow", format!(r#"principal.sub == "user-{i}" && "mcp:admin" in principal.scopes"#)),
        };
        text.push_str(&format!(
            "[[rule]]\nid = \"rule-{i}\"\neffect = \"{effect}\"\nactions = [\"call\"]\nwhen = '{when}'\n\n"
        ));
    }
    text.push_str("[[rule]]\nid = \"ops-call\"\neffect = \"allow\"\nactions = [\"call\", \"list\"]\nwhen = '\"ops\" in principal.groups'\n");
    text
}

/// The principal the policy rows decide for: an OAuth user in group `ops`.
fn alice() -> Principal {
    Principal {
        subject: "alice".into(),
        issuer: Some("https://login.example.com".into()),
        client_id: Some("claude".into()),
        scopes: vec![SCOPE.into()],
        groups: vec!["users".into(), "ops".into()],
        via: toolhost_core::identity::Via::Oauth,
    }
}

/// One decision of `policy` about `alice` calling `echo`, which must be allowed.
fn decision<'a>(policy: &'a Policy, who: &'a Principal) -> Case<'a> {
    Box::new(move || {
        Box::pin(async move {
            let d = policy.decide(&Request {
                action: Action::Call,
                principal: Some(who),
                front_end: "mcp-http",
                resource: Resource::Tool { name: "echo", plugin: "text", danger: false, read_only: true },
                args: serde_json::json!({"text": "hello"}),
            });
            assert!(d.allowed() && d.rule() == "ops-call", "{d:?}");
        })
    })
}

/// A host over `plugins` with `policy` (a file) and `rates` in force.
fn host_with(plugins: &Path, policy: Option<&Path>, rates: RateSettings) -> Arc<Toolhost> {
    let mut config = Config { plugins_dir: plugins.to_path_buf(), cache_dir: None, ..Config::default() };
    config.policies = Arc::new(toolhost_core::policy::watch::Policies::load(policy).unwrap());
    config.rate_limits = rates;
    let runtime = Runtime::for_config(&config).unwrap();
    let registry = Registry::load(&runtime, &config).unwrap();
    Arc::new(Toolhost::from_parts(runtime, Arc::new(config), registry, Arc::new(AlwaysConfirm)))
}

/// `echo("hello")` through `host`'s executor by `who` over `mcp-http`, which must succeed.
fn call_as<'a>(host: &'a Arc<Toolhost>, who: &'a Arc<Principal>) -> Case<'a> {
    let call = ToolCall::new("echo", ["hello"]);
    Box::new(move || {
        let call = call.clone();
        Box::pin(async move {
            let ctx = CallContext {
                front_end: Some("mcp-http"),
                principal: Some(who.clone()),
                ..CallContext::default()
            };
            let o = host.executor.call_controlled(&call, &AlwaysConfirm, &ctx, &CallControl::default()).await;
            assert!(o.success, "{o:?}");
        })
    })
}

fn policy_rows(line: &mut impl FnMut(String), rt: &tokio::runtime::Runtime, work: &Path, n: usize) {
    let file = work.join("identity-policy-100.toml");
    std::fs::write(&file, policy_text(100)).unwrap();
    let hundred = Policy::load(&file).unwrap();
    let one = Policy::parse(&policy_text(1), Path::new("one.toml")).unwrap();
    assert_eq!((hundred.len(), one.len()), (100, 1));
    let plugins = work.join("identity-policy-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    let open = host_with(&plugins, None, RateSettings::default());
    let ruled = host_with(&plugins, Some(&file), RateSettings::default());
    let who = alice();
    let who_arc = Arc::new(alice());
    let mut cases = vec![
        decision(&one, &who),
        decision(&hundred, &who),
        call_as(&open, &who_arc),
        call_as(&ruled, &who_arc),
    ];
    let m = interleaved(rt, &mut cases, n);
    let ratio = |i: usize, b: usize| m[i].stats.p50.as_secs_f64() / m[b].stats.p50.as_secs_f64();
    line(String::new());
    line(format!(
        "A policy decision (`Policy::decide`: the request's CEL variables built, each rule about `call` evaluated) of an OAuth user calling `echo`, with 1 rule and with 100 (conditions on groups, scopes, plugins, danger and arguments, none holding but the last, an allow: deny wins, so every one is read); and `echo` through the executor by that user with the 100-rule policy in force against none ({n} samples each, side by side)."
    ));
    line(String::new());
    line("| what | p50 | p99 | ratio |".into());
    line("|---|---|---|---|".into());
    line(format!("| a policy decision, 1 rule | {} | {} | 1.00× |", us(m[0].stats.p50), us(m[0].stats.p99)));
    line(format!(
        "| a policy decision, 100 rules (µs per decision) | {} | {} | {:.1}× 1 rule |",
        us(m[1].stats.p50),
        us(m[1].stats.p99),
        ratio(1, 0)
    ));
    line(format!(
        "| executor `echo(\"hello\")`, no policy (baseline) | {} | {} | 1.00× |",
        us(m[2].stats.p50),
        us(m[2].stats.p99)
    ));
    line(format!(
        "| executor `echo(\"hello\")`, the 100-rule policy deciding it | {} | {} | {:.2}× no policy |",
        us(m[3].stats.p50),
        us(m[3].stats.p99),
        ratio(3, 2)
    ));
}

// --- A rate-limit check ---------------------------------------------------------------------

/// Limits no call of the bench reaches (both buckets checked and spent on every call).
fn high_limits(redis_url: Option<String>) -> RateSettings {
    RateSettings {
        per_identity: NonZeroU32::new(1_000_000),
        per_identity_tool: NonZeroU32::new(1_000_000),
        redis_url,
    }
}

/// One check of `limits` for the next of 1,000 identities calling `echo`, which must pass.
fn check<'a>(limits: &'a RateLimits, keys: &'a [String], next: &'a std::cell::Cell<usize>) -> Case<'a> {
    Box::new(move || {
        let i = next.get();
        next.set((i + 1) % keys.len());
        Box::pin(async move {
            limits.check(&keys[i], "echo").await.unwrap();
        })
    })
}

fn rate_rows(line: &mut impl FnMut(String), rt: &tokio::runtime::Runtime, work: &Path, n: usize) {
    let server = redis(work);
    let url = server.as_ref().map(|(_, url)| url.clone());
    let keys: Vec<String> = (0..1000).map(|i| Principal::token(format!("client-{i}")).key()).collect();
    let local = RateLimits::new(high_limits(None));
    let shared = url.as_ref().map(|u| RateLimits::new(high_limits(Some(u.clone()))));
    let plugins = work.join("identity-rate-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(plugin_artifacts::TEXT, plugins.join("text.wasm")).unwrap();
    let open = host_with(&plugins, None, RateSettings::default());
    let limited = host_with(&plugins, None, high_limits(None));
    let limited_shared = url.as_ref().map(|u| host_with(&plugins, None, high_limits(Some(u.clone()))));
    let who = Arc::new(Principal::token("bench"));
    let (next_local, next_shared) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let mut cases = vec![check(&local, &keys, &next_local), call_as(&open, &who), call_as(&limited, &who)];
    if let (Some(shared), Some(host)) = (&shared, &limited_shared) {
        cases.push(check(shared, &keys, &next_shared));
        cases.push(call_as(host, &who));
    }
    let m = interleaved(rt, &mut cases, n);
    let ratio = |i: usize, b: usize| m[i].stats.p50.as_secs_f64() / m[b].stats.p50.as_secs_f64();
    line(String::new());
    line(format!(
        "A rate-limit check (`RateLimits::check`: a call's two buckets, the identity's and the identity × tool's, checked and spent; 1,000 identities in turn, none over its limit), in this process (`governor`) and in Redis (the GCRA Lua script, one `EVAL` per check, on a `redis-server` of the bench's own on loopback); and `echo` through the executor by a static-token identity with each against no limits ({n} samples each, side by side).{}",
        if server.is_none() {
            " No `redis-server` on this machine: the Redis rows are left out."
        } else {
            ""
        }
    ));
    line(String::new());
    line("| what | p50 | p99 | ratio |".into());
    line("|---|---|---|---|".into());
    line(format!(
        "| a rate-limit check in process (µs per check) | {} | {} | {:.3}× executor `echo` |",
        us(m[0].stats.p50),
        us(m[0].stats.p99),
        ratio(0, 1)
    ));
    let rtt = url.as_deref().map(redis_round_trip);
    if let Some(rtt) = rtt {
        line(format!(
            "| a rate-limit check via Redis (µs per check) | {} | {} | {:.2}× a plain `GET` round trip ({}) |",
            us(m[3].stats.p50),
            us(m[3].stats.p99),
            m[3].stats.p50.as_secs_f64() / rtt.as_secs_f64(),
            us(rtt)
        ));
    }
    line(format!(
        "| executor `echo(\"hello\")`, no limits (baseline) | {} | {} | 1.00× |",
        us(m[1].stats.p50),
        us(m[1].stats.p99)
    ));
    line(format!(
        "| executor `echo(\"hello\")`, limits in process | {} | {} | {:.2}× no limits |",
        us(m[2].stats.p50),
        us(m[2].stats.p99),
        ratio(2, 1)
    ));
    if shared.is_some() {
        line(format!(
            "| executor `echo(\"hello\")`, limits in Redis | {} | {} | {:.2}× no limits |",
            us(m[4].stats.p50),
            us(m[4].stats.p99),
            ratio(4, 1)
        ));
    }
    drop(cases);
    // Redis answered every check (a replica that cannot reach it counts in its own buckets,
    // which would have been measured instead): a call's bucket is shared by two limiters.
    if let Some(u) = &url {
        let one = || {
            RateLimits::new(RateSettings {
                per_identity: NonZeroU32::new(1),
                per_identity_tool: None,
                redis_url: Some(u.clone()),
            })
        };
        let (a, b) = (one(), one());
        rt.block_on(async {
            a.check("token:probe", "echo").await.unwrap();
            assert!(
                b.check("token:probe", "echo").await.is_err(),
                "the Redis rows were not measured in Redis"
            );
        });
    }
    if let Some((mut child, _)) = server {
        let _ = child.kill();
        let _ = child.wait();
    }
}

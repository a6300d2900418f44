//! `toolhost serve`: the registry kept live while the plugins folder changes, each change
//! printed; with `--mcp`, the tools served to MCP clients over stdio or streamable HTTP, as a
//! service (graceful shutdown, probes, metrics, the audit trail); over HTTP also the web
//! console at `/`. `toolhost console` is `serve --http 127.0.0.1:0 --open`.

use crate::args::GlobalArgs;
use crate::session::{
    HostStart, eprint_change, first_loaded, live_host_with, print_change, unloaded_host, watch,
};
use crate::settings::Settings;
use crate::settings::unknown_flag_plugins;
use anyhow::{Context, Result, bail};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::registry::reload::WatchFrom;

pub const AFTER_HELP: &str = "\
MCP client configuration (e.g. Claude Desktop, VS Code, Cursor):
  {\"mcpServers\": {\"toolhost\": {\"command\": \"toolhost\",
      \"args\": [\"--config\", \"/path/to/toolhost.toml\", \"serve\", \"--mcp\"]}}}
Over HTTP: toolhost serve --http 127.0.0.1:8765, then point the client at http://127.0.0.1:8765/mcp
With [mcp] tokens in toolhost.toml, HTTP clients must send Authorization: Bearer <token>

The web console: the same server answers http://ADDR/ (the URL is printed at start; --open
opens it in a browser where there is a desktop, and `toolhost console` does both). Tools (with
a form to try each one), plugins (grants, approvals), the live activity feed, the audit trail
and metrics. With [mcp] tokens it asks for a token once and keeps a session cookie; without
tokens it opens with the login link printed at start (it carries a key drawn at start; loopback
only), and only MCP clients that send that key (Authorization: Bearer KEY) are asked to confirm
dangerous tools or grants. With [auth] and [console] oauth_client_id, people sign in at the
authorization server instead (code + PKCE) and the console acts as them. [console] enabled =
false turns it off, read_only = true hides Run, Approve and Reject.

As a service (--mcp): GET /healthz (alive), /readyz (loaded, not shutting down) and /metrics
(Prometheus text format, behind the token when tokens are configured) over HTTP. On SIGTERM or
SIGINT (over stdio also at the end of stdin) no new call is accepted (HTTP: 503 with
Retry-After for new sessions and stateless calls; an open session keeps being served), calls
in flight finish within [serve] shutdown_grace_ms (default 15000), the rest are cancelled with
an error to their clients, then new connections are stopped and the queued ones answered before
the port closes, and the process exits 0; a second signal exits at once. A 2025 HTTP session
with no request and no open stream for [mcp] session_idle_s (default 300) is closed.
[mcp] max_message_kb (default 4096) caps one MCP message, a stdio line or an HTTP body. Every call is appended to the
audit trail: [audit] file (default $XDG_STATE_HOME/toolhost/audit.jsonl). See deploy/ for a
systemd unit, a container recipe and a Kubernetes example.

OpenTelemetry: [telemetry] otlp_endpoint = \"http://COLLECTOR:4318\" exports a span per call (with
a child span per http and process host call; a W3C traceparent in MCP _meta or the HTTP header
continues the caller's trace) and the call metrics over OTLP/HTTP. Off by default: nothing is
built or connected. Argument values go into spans only with capture_arguments = true.

Several replicas behind a load balancer: give them the same [mcp] approval_key = { secret =
\"NAME\" } (or env/file; at least 32 bytes) so a 2026-07-28 danger confirmation asked by one is
answered on any, and replay_store = \"redis://HOST:PORT\" so its requestState is good for one
call across all of them (an unreachable Redis refuses the confirmation). Without the key a
server on a non-loopback address warns that confirmations need sticky routing. Restart them
one at a time: deploy/nginx.conf retries only what never reached a replica, and clients retry
a 503 with Retry-After.";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Quiet time after the last file event before the folder is rescanned
    #[arg(long, value_name = "MS", default_value_t = 150)]
    pub debounce_ms: u64,
    /// Speak MCP: over stdin/stdout (only protocol messages on stdout; changes and logs go to stderr)
    #[arg(long)]
    pub mcp: bool,
    /// Serve over HTTP instead of stdio (implies --mcp): MCP at http://ADDR/mcp and the web
    /// console at http://ADDR/ (use a loopback address such as 127.0.0.1:8765; port 0 picks a
    /// free port)
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// With --http: open the web console in a browser once it is listening (where there is a
    /// desktop; otherwise the URL is only printed)
    #[arg(long, requires = "http")]
    pub open: bool,
    /// With --http: also accept this Host header value (localhost, 127.0.0.1 and ::1 always are)
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_host: Vec<String>,
    /// With --http: accept requests from this browser origin (e.g. http://localhost:3000);
    /// by default any request with an Origin header is refused
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origin: Vec<String>,
    /// With --http: serve on a non-loopback address even though no `[mcp] tokens` are
    /// configured, so anyone who can reach the address can call the tools
    #[arg(long = "allow-unauthenticated-remote", requires = "http")]
    pub allow_unauthenticated_remote: bool,
}

/// `toolhost console`: `serve --http ADDR --open`.
#[derive(Debug, clap::Args)]
pub struct ConsoleArgs {
    /// Where to listen (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub http: std::net::SocketAddr,
    /// Only print the URL; do not open a browser
    #[arg(long)]
    pub no_open: bool,
    /// Quiet time after the last file event before the folder is rescanned
    #[arg(long, value_name = "MS", default_value_t = 150)]
    pub debounce_ms: u64,
}

/// `toolhost console`.
pub fn run_console(g: &GlobalArgs, a: ConsoleArgs) -> Result<ExitCode> {
    run(
        g,
        Args {
            debounce_ms: a.debounce_ms,
            mcp: true,
            http: Some(a.http),
            open: !a.no_open,
            allow_host: Vec::new(),
            allow_origin: Vec::new(),
            allow_unauthenticated_remote: false,
        },
    )
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let Args { debounce_ms, mcp, http, open, allow_host, allow_origin, allow_unauthenticated_remote } = a;
    let mcp = mcp || http.is_some();
    let settings = Settings::resolve(g)?;
    let cfg = &settings.core;
    if !cfg.plugins_dir.is_dir() {
        bail!("plugins folder {} does not exist (pass --plugins DIR)", cfg.plugins_dir.display());
    }
    // The folder is read and the engine built from here on, while the runtime and the front
    // end are set up.
    // Serving MCP, the watch starts once a client has listed the tools (they are listed before
    // it competes for the CPU; nothing changed meanwhile is missed).
    let watch_from = if mcp { WatchFrom::FirstListing } else { WatchFrom::Now };
    let start = HostStart::begin(cfg.clone(), watch_from);
    // `[telemetry]`: nothing is built unless `otlp_endpoint` is set.
    let telemetry = toolhost_core::telemetry::install(&cfg.telemetry).map_err(anyhow::Error::msg)?;
    if let Some(endpoint) = cfg.telemetry.otlp_endpoint.as_deref().filter(|_| telemetry.is_some()) {
        tracing::info!("telemetry: spans and metrics exported over OTLP to {endpoint}");
    }
    let rt = super::async_runtime()?;
    let debounce = Duration::from_millis(debounce_ms);
    let a = ServeArgs { http, open, allow_host, allow_origin, allow_unauthenticated_remote };
    let r = serve_on(rt, settings, start, debounce, mcp, a);
    // The last spans and metrics go out before the process ends (blocking, off the runtime).
    if let Some(t) = telemetry {
        t.shutdown();
    }
    r
}

/// What `serve` was asked besides the settings.
struct ServeArgs {
    http: Option<std::net::SocketAddr>,
    open: bool,
    allow_host: Vec<String>,
    allow_origin: Vec<String>,
    allow_unauthenticated_remote: bool,
}

fn serve_on(
    rt: tokio::runtime::Runtime,
    settings: Settings,
    start: HostStart,
    debounce: Duration,
    mcp: bool,
    a: ServeArgs,
) -> Result<ExitCode> {
    let ServeArgs { http, open, allow_host, allow_origin, allow_unauthenticated_remote } = a;
    if mcp {
        let tokens = if http.is_some() {
            toolhost_frontends::mcp::load_tokens(&settings.frontends.mcp)?
        } else {
            Vec::new()
        };
        let auth = settings
            .frontends
            .auth
            .clone()
            .filter(|_| http.is_some())
            .map(|a| Arc::new(toolhost_frontends::auth::Verifier::new(a)));
        let authenticated = !tokens.is_empty() || auth.is_some();
        if let Some(addr) = http {
            toolhost_frontends::mcp::check_exposure(addr, authenticated, allow_unauthenticated_remote)?;
        }
        // Without tokens or [auth], what only the person who started the server holds: the
        // console's login link and the bearer token of MCP clients that may be asked questions.
        let local_key = (http.is_some() && !authenticated)
            .then(|| Arc::new(toolhost_frontends::local_key::LocalKey::generate()));
        let options = toolhost_frontends::mcp::HttpOptions {
            allowed_hosts: allow_host,
            allowed_origins: allow_origin,
            tokens,
            auth,
            service: None,
            limits: settings.frontends.serve.http,
            console: None,
            local_key,
        };
        let r = rt.block_on(serve_mcp(settings, start, debounce, http, options, open));
        // The stdio transport's blocked read of stdin must not hold the exit.
        rt.shutdown_timeout(Duration::from_millis(500));
        r
    } else {
        rt.block_on(serve(settings, start, debounce))
    }
}

async fn serve_mcp(
    settings: Settings,
    start: HostStart,
    debounce: Duration,
    http: Option<std::net::SocketAddr>,
    options: toolhost_frontends::mcp::HttpOptions,
    open: bool,
) -> Result<ExitCode> {
    use toolhost_frontends::mcp::McpServer;
    // From the start, SIGTERM/SIGINT end the process cleanly: during the first load by stopping
    // it, later by draining the calls in flight (see `service::shutdown`).
    let signals = toolhost_frontends::service::shutdown::Signals::install()
        .context("cannot install signal handlers")?;
    let Settings { frontends, flag_plugins, .. } = settings;
    // The first load runs from here while the front end is set up.
    let (host, reloader, first) = unloaded_host(start)?;
    // The operator's rules are read again when their file changes; one with an error keeps the
    // rules in force and says where the error is.
    let _policy_watch = host.config.policies.watch(debounce).context("cannot watch the policy file")?;
    if let Some(p) = host.config.policies.current() {
        toolhost_frontends::say!(
            "toolhost: policy {} ({} rules) decides who may list, call and read",
            p.file().display(),
            p.len()
        );
    }
    let service = start_service(&host, &frontends, options.local_key.as_deref())?;
    let stopped = stop_on_signal(signals, service.clone());
    let private = http.is_some() && (!options.tokens.is_empty() || options.auth.is_some());
    let server =
        McpServer::from_settings(host.executor.clone(), Some(reloader.clone()), &frontends.mcp, private)?;
    let tasks = server.tasks();
    // Requests that need the tools wait for this (over stdio; HTTP waits for readiness).
    let (loaded_tx, loaded_rx) = tokio::sync::watch::channel(false);
    let load = async {
        first_loaded(&host, first, eprint_change).await?;
        unknown_flag_plugins(&flag_plugins, &host.registry.load(), &host.config.plugins_dir)?;
        let registry = host.registry.load();
        let with_kv = registry.plugins().iter().filter(|p| !p.grants.kv.granted.is_empty());
        for e in host.executor.kv().check(with_kv.map(|p| &*p.name)) {
            toolhost_frontends::say!(
                "toolhost: {e}; its calls that use the store fail until then, other plugins are unaffected"
            );
        }
        // Reloads are counted from here: the first load is not one.
        service.watch_reloads(&reloader);
        let mut changes = reloader.subscribe();
        tokio::spawn(async move {
            while let Ok(c) = changes.recv().await {
                eprint_change(&c);
            }
        });
        // The tools can be listed now (`/readyz`, and requests over stdio); the watch starts
        // after the first listing, and sees what changed before it.
        service.lifecycle.set_ready();
        let _ = loaded_tx.send(true);
        watch(&reloader, debounce).await
    };
    let plugins = host.config.plugins_dir.display().to_string();
    let served = match http {
        None => over_stdio(server.until_loaded(loaded_rx), service.clone(), load, stopped, &plugins).await?,
        Some(addr) => {
            let fleet = (frontends.mcp.approval_key.is_some(), frontends.mcp.replay_store.is_some());
            let serving = Serving {
                host: &host,
                reloader: &reloader,
                service: &service,
                console: frontends.console,
                sign_in: frontends.console_sign_in.clone(),
                fleet,
            };
            serving.over_http(server, addr, options, open, load, stopped, &plugins).await?
        }
    };
    if !served {
        return Ok(ExitCode::SUCCESS);
    }
    service.sync();
    // A task never outlives a shutdown unreported: those still running ended `cancelled`.
    let n = tasks.cancelled_by_shutdown(std::time::Duration::from_secs(1)).await;
    if n > 0 {
        toolhost_frontends::say!(
            "toolhost: {n} MCP task{} ended cancelled by the shutdown",
            if n == 1 { "" } else { "s" }
        );
    }
    toolhost_frontends::say!("toolhost: stopped");
    Ok(ExitCode::SUCCESS)
}

/// The service (`serve` as one: admission, metrics, the audit trail) observing every call of
/// `host`; the local key redacted like the secrets.
fn start_service(
    host: &toolhost_core::Toolhost,
    frontends: &toolhost_frontends::Settings,
    local_key: Option<&toolhost_frontends::local_key::LocalKey>,
) -> Result<Arc<toolhost_frontends::service::Service>> {
    let mut service = toolhost_frontends::service::Service::for_command(
        &host.config,
        frontends,
        host.registry.clone(),
        "mcp",
        true,
    )?;
    if let Some(key) = local_key {
        service = service.redacting("local key", key.value());
    }
    let service = Arc::new(service);
    host.executor.attach_observer(service.clone());
    if let Some(path) = service.audit_path() {
        toolhost_frontends::say!("toolhost: audit trail in {}", path.display());
    }
    Ok(service)
}

/// What a signal starts: no new calls, the calls in flight finished (a second signal exits at
/// once); the returned function's futures end then.
fn stop_on_signal(
    mut signals: toolhost_frontends::service::shutdown::Signals,
    service: Arc<toolhost_frontends::service::Service>,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Clone {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let (name, _) = signals.recv().await;
        service.lifecycle.stop_admitting();
        toolhost_frontends::say!("toolhost: {name}: no new calls; finishing the calls in flight");
        let s = service.clone();
        signals.exit_on_next(move || s.sync());
        let _ = stop_tx.send(true);
    });
    move || {
        let mut rx = stop_rx.clone();
        Box::pin(async move {
            let _ = rx.wait_for(|stop| *stop).await;
        })
    }
}

/// MCP over stdio: the session starts now, while the first load runs — the handshake is
/// answered at once, and requests that need the tools wait for the load (`until_loaded`).
/// `false` when the session ended (end of stdin, or a signal) before the first load did.
async fn over_stdio<W>(
    server: toolhost_frontends::mcp::McpServer,
    service: Arc<toolhost_frontends::service::Service>,
    load: impl std::future::Future<Output = Result<W>>,
    stopped: impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    plugins: &str,
) -> Result<bool> {
    let load = async {
        let watch = load.await?;
        toolhost_frontends::say!("toolhost: MCP over stdio, watching {plugins}");
        anyhow::Ok(watch)
    };
    let serving = toolhost_frontends::mcp::serve_stdio_until(server, stopped(), Some(service));
    let (mut load, mut serving) = (std::pin::pin!(load), std::pin::pin!(serving));
    let _watch = tokio::select! {
        w = &mut load => w?,
        r = &mut serving => return r.map(|()| false),
    };
    serving.await?;
    Ok(true)
}

/// What serving over HTTP needs of the host.
struct Serving<'a> {
    host: &'a toolhost_core::Toolhost,
    reloader: &'a Arc<toolhost_core::registry::reload::Reloader>,
    service: &'a Arc<toolhost_frontends::service::Service>,
    console: toolhost_frontends::console::settings::ConsoleSettings,
    /// `[console] oauth_client_id`: people sign in to the console at an issuer of `[auth]`.
    sign_in: Option<toolhost_frontends::auth::SignInSettings>,
    /// Whether `[mcp]` gives a shared approval key and a shared replay store.
    fleet: (bool, bool),
}

impl Serving<'_> {
    /// MCP over streamable HTTP, listening before the plugins are loaded: the probes answer
    /// (`/readyz` is 503 until they are) while a cold start compiles, and MCP requests get 503
    /// until then. `false` when a signal came before the first load ended.
    #[allow(clippy::too_many_arguments)] // one call site: the parts of `serve_mcp` it serves with
    async fn over_http<W>(
        self,
        server: toolhost_frontends::mcp::McpServer,
        addr: std::net::SocketAddr,
        options: toolhost_frontends::mcp::HttpOptions,
        open: bool,
        load: impl std::future::Future<Output = Result<W>>,
        stopped: impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
        plugins: &str,
    ) -> Result<bool> {
        let listener =
            tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
        announce_access(bound, &options, self.fleet);
        let console = self.start_console(&options);
        let local_key = options.local_key.clone();
        let options = toolhost_frontends::mcp::HttpOptions {
            service: Some(self.service.clone()),
            console: console.clone(),
            ..options
        };
        toolhost_frontends::say!(
            "toolhost: listening on http://{bound} (/healthz, /readyz; /mcp once the plugins are loaded)"
        );
        announce_console(bound, console.as_deref(), local_key.as_deref(), open);
        if console.as_ref().is_some_and(|c| c.sign_in_issuer().is_none())
            && options.tokens.is_empty()
            && options.auth.is_some()
        {
            tracing::warn!(
                "no one can sign in to the console: configure [console] oauth_client_id (people sign in at the \
                 authorization server of [auth]) or an [mcp] tokens entry"
            );
        }
        let serving = tokio::spawn(toolhost_frontends::mcp::serve_http(server, listener, options, stopped()));
        let _watch = tokio::select! {
            w = load => w?,
            () = stopped() => {
                serving.await??;
                return Ok(false);
            }
        };
        toolhost_frontends::say!(
            "toolhost: MCP over streamable HTTP at http://{bound}/mcp, watching {plugins} (Ctrl-C to stop)"
        );
        serving.await??;
        Ok(true)
    }

    /// The web console at `/`, unless `[console] enabled = false`.
    fn start_console(
        &self,
        options: &toolhost_frontends::mcp::HttpOptions,
    ) -> Option<Arc<toolhost_frontends::console::Console>> {
        use toolhost_frontends::console::{Access, Console};
        let access = match &options.local_key {
            Some(key) => Access::LocalKey(key.clone()),
            None => Access::Tokens(Arc::new(options.tokens.clone())),
        };
        let sign_in = match (&self.sign_in, &options.auth) {
            (Some(s), Some(verifier)) => {
                Some(Arc::new(toolhost_frontends::auth::SignIn::new(s.clone(), verifier.clone())))
            }
            _ => None,
        };
        self.console.enabled.then(|| {
            Console::start_signing_in(
                self.host.executor.clone(),
                self.reloader.clone(),
                self.service.clone(),
                self.console,
                access,
                sign_in,
                options.limits.body_timeout,
            )
        })
    }
}

/// Who may call over HTTP bound to `bound`: the tokens accepted, or a warning for a server
/// without them that others can reach, and a fleet's confirmations.
fn announce_access(
    bound: std::net::SocketAddr,
    options: &toolhost_frontends::mcp::HttpOptions,
    fleet: (bool, bool),
) {
    if let Some(auth) = &options.auth {
        let s = auth.settings();
        let issuers: Vec<&str> = s.issuers.iter().map(|i| i.issuer.as_str()).collect();
        toolhost_frontends::say!(
            "toolhost: MCP over HTTP requires an OAuth access token for {} from {} (metadata: {})",
            s.resource,
            issuers.join(", "),
            toolhost_frontends::auth::metadata_url(s)
        );
    }
    if !options.tokens.is_empty() {
        let names: Vec<&str> = options.tokens.iter().map(|t| t.name.as_str()).collect();
        toolhost_frontends::say!(
            "toolhost: MCP over HTTP requires a bearer token (accepting: {})",
            names.join(", ")
        );
    } else if options.auth.is_none() && !bound.ip().is_loopback() {
        tracing::warn!(
            "MCP over HTTP on {bound}, which is not a loopback address: anyone who can reach it can call the tools"
        );
    }
    if !bound.ip().is_loopback() {
        fleet_warnings(fleet.0, fleet.1);
    }
}

/// The console's URL, and the one line that carries the key (nothing else logs it); `--open`
/// opens a one-time link (the key itself never goes on a command line).
fn announce_console(
    bound: std::net::SocketAddr,
    console: Option<&toolhost_frontends::console::Console>,
    local_key: Option<&toolhost_frontends::local_key::LocalKey>,
    open: bool,
) {
    let base = console_url(bound);
    match (console, local_key) {
        (Some(_), Some(key)) => toolhost_frontends::say!(
            "toolhost: console at {base}console/login?key={key} (this link signs you in{}; MCP \
             clients that must confirm dangerous tools send Authorization: Bearer {key}, or configure \
             [mcp] tokens)",
            if bound.ip().is_loopback() { "" } else { ", on this machine only" },
            key = key.value()
        ),
        (Some(c), None) => match c.sign_in_issuer() {
            Some(issuer) => toolhost_frontends::say!("toolhost: console at {base} (sign in at {issuer})"),
            None => toolhost_frontends::say!("toolhost: console at {base} (sign in with an [mcp] token)"),
        },
        (None, Some(key)) => toolhost_frontends::say!(
            "toolhost: MCP clients that must confirm dangerous tools send Authorization: Bearer {} \
             (or configure [mcp] tokens)",
            key.value()
        ),
        (None, None) => {}
    }
    match console {
        Some(console) if open => {
            let link = match console.one_time_login() {
                Some(path) => format!("{}{}", base.trim_end_matches('/'), path),
                None => base.clone(),
            };
            open_browser(&link);
        }
        None if open => {
            toolhost_frontends::say!(
                "toolhost: the console is off ([console] enabled = false): nothing to open"
            )
        }
        _ => {}
    }
}

/// What a server reachable from other machines (so possibly one replica of several) says at
/// start about 2026-07-28 confirmations: without `[mcp] approval_key` a `requestState` opens only
/// on the process that issued it; without `[mcp] replay_store` a replay is caught only there.
fn fleet_warnings(shared_key: bool, shared_store: bool) {
    if !shared_key {
        toolhost_frontends::say!(
            "toolhost: warning: no [mcp] approval_key: 2026-07-28 danger confirmations only work with sticky \
             routing (the answer must reach the replica that asked); give every replica the same key to \
             confirm on any of them"
        );
    } else if !shared_store {
        toolhost_frontends::say!(
            "toolhost: warning: [mcp] approval_key without [mcp] replay_store: with several replicas one \
             requestState can be redeemed once on each of them; set replay_store = \"redis://…\" to make it \
             good for one call across the fleet"
        );
    }
}

/// The console's URL for a listener bound to `bound` (an unspecified address is reached on
/// loopback).
fn console_url(bound: std::net::SocketAddr) -> String {
    let ip = match bound.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
        }
        ip => ip,
    };
    format!("http://{}/", std::net::SocketAddr::new(ip, bound.port()))
}

/// Open `url` in the operator's browser where there is a desktop (`xdg-open` under X11 or
/// Wayland, `open` on macOS, `start` on Windows); elsewhere say so.
fn open_browser(url: &str) {
    use std::process::{Command, Stdio};
    let mut cmd = if cfg!(target_os = "macos") {
        Command::new("open")
    } else if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() {
        Command::new("xdg-open")
    } else {
        toolhost_frontends::say!(
            "toolhost: no desktop here (no DISPLAY or WAYLAND_DISPLAY): open {url} in a browser"
        );
        return;
    };
    let opened = cmd.arg(url).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    if let Err(e) = opened {
        toolhost_frontends::say!("toolhost: cannot open a browser ({e}): open {url} yourself");
    }
}

async fn serve(settings: Settings, start: HostStart, debounce: Duration) -> Result<ExitCode> {
    let (host, reloader, _watch) = live_host_with(start, debounce, print_change).await?;
    settings.check_flag_plugins(&host.registry.load())?;
    let mut changes = reloader.subscribe();
    let mut signals = toolhost_frontends::service::shutdown::Signals::install()
        .context("cannot install signal handlers")?;
    toolhost_frontends::say!("toolhost: watching {} (Ctrl-C to stop)", host.config.plugins_dir.display());
    loop {
        tokio::select! {
            _ = signals.recv() => return Ok(ExitCode::SUCCESS),
            change = changes.recv() => match change {
                Ok(c) => print_change(&c),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => toolhost_frontends::say!("toolhost: {n} changes not shown"),
                Err(_) => return Ok(ExitCode::SUCCESS),
            },
        }
    }
}

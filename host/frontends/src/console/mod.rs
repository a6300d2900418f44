//! The web console (`serve --http`, at `/`): every tool, plugin, grant, call and audit line of
//! the running host, where a person would rather look than read — and, unless `[console]
//! read_only`, a form to try a tool and buttons to approve or reject a held plugin version.
//!
//! A small no-build front end (ES modules, one stylesheet; `assets/`, embedded in the binary,
//! no CDN) over a JSON API under `/console/api/`:
//!
//! | path | what |
//! |---|---|
//! | `GET /` | the page (or, without a session, the login form) |
//! | `GET /console/login?key=…` | without tokens: the login link printed at start (or `once=…`) |
//! | `POST /console/login`, `/console/logout` | open or end a session (see [`auth`]) |
//! | `GET /console/signin`, `/console/callback` | with `[console] oauth_client_id`: sign in at the authorization server (`signin.rs`) |
//! | `GET /console/api/session` | who the caller is, the CSRF token, read-only or not |
//! | `GET /console/api/tools`, `plugins` | the registry as the executor sees it (`api.rs`) |
//! | `GET /console/app?uri=ui://…` | a tool's app (MCP Apps) for the page's sandboxed frame (`apps.rs`) |
//! | `POST /console/api/call` | run a tool through the executor (front end `console`) |
//! | `POST /console/api/approve`, `reject` | decide about a held plugin version |
//! | `GET /console/api/events` | Server-Sent Events: reloads, running calls with their progress, finished calls (`feed.rs`) |
//! | `GET /console/api/audit`, `audit.jsonl` | the audit trail, filtered (`audit_view.rs`) |
//! | `GET /console/api/metrics` | the `/metrics` counters over the last minutes (`charts.rs`) |
//!
//! The front door (`mcp::http`) has checked `Host` and `Origin` before a request gets here;
//! here the caller is let in ([`auth`]: a session cookie, opened with a token or, without
//! tokens, with the process's local key from loopback), every
//! `POST` must carry the CSRF token, and every answer says `Content-Security-Policy` without
//! inline script, `X-Frame-Options: DENY` and `no-store`. No secret's value is ever in an
//! answer: grants show names, audit arguments are redacted, call results are redacted by the
//! executor.

mod api;
mod apps;
mod assets;
mod audit_view;
pub mod auth;
mod charts;
mod feed;
mod prompts;
mod resources;
pub mod settings;
mod signin;

use crate::service::Service;
pub use auth::Access;
use auth::{Caller, Refused, Sessions};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use settings::ConsoleSettings;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use toolhost_core::Executor;
use toolhost_core::registry::reload::Reloader;

pub use auth::Tokens;

/// A response body: whole, or (the activity feed) a stream.
pub type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// A response that ends a request early (boxed: a `Response` is large for an `Err`).
type Early = Box<Response<Body>>;

/// Largest request body the console reads (a call's arguments are at most 1 MiB).
const MAX_BODY: usize = 2 * 1024 * 1024;

/// What every console answer says about itself: no inline script or style, no framing, no
/// caching, no sniffing, no referrer to other sites (an app's page says its own, see
/// [`apps`]).
/// The one frame it shows is an app's page, from `/console/app` (`frame-src 'self'`), which
/// answers with a policy of its own: a sandbox without its origin, and the page's origins.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-src 'self'; frame-ancestors 'none'; \
                   base-uri 'none'";

/// The console of one running host.
pub struct Console {
    executor: Arc<Executor>,
    reloader: Arc<Reloader>,
    service: Arc<Service>,
    settings: ConsoleSettings,
    sessions: Sessions,
    /// `[console] oauth_client_id`: people sign in at the authorization server.
    sign_in: Option<Arc<crate::auth::SignIn>>,
    charts: charts::Charts,
    body_timeout: Duration,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl Console {
    /// The console over `executor` (whose observer is `service`), following `reloader`'s
    /// changes, letting in whoever opens a session as `access` says. Starts the sampler behind
    /// the metrics charts, so it must be called inside a Tokio runtime.
    pub fn start(
        executor: Arc<Executor>,
        reloader: Arc<Reloader>,
        service: Arc<Service>,
        settings: ConsoleSettings,
        access: Access,
        body_timeout: Duration,
    ) -> Arc<Console> {
        Console::start_signing_in(executor, reloader, service, settings, access, None, body_timeout)
    }

    /// [`Console::start`], and with `sign_in` people also sign in at the authorization server
    /// (`GET /console/signin`), their session their principal.
    pub fn start_signing_in(
        executor: Arc<Executor>,
        reloader: Arc<Reloader>,
        service: Arc<Service>,
        settings: ConsoleSettings,
        access: Access,
        sign_in: Option<Arc<crate::auth::SignIn>>,
        body_timeout: Duration,
    ) -> Arc<Console> {
        let console = Arc::new(Console {
            executor,
            reloader,
            sign_in,
            sessions: Sessions::new(access, settings.session_idle),
            charts: charts::Charts::default(),
            service,
            settings,
            body_timeout,
        });
        charts::Charts::sample_every(&console, charts::INTERVAL);
        console
    }

    /// Without tokens, a login link good for one session (the path and query: `/console/login?once=…`),
    /// to hand a browser where the key itself should not go (a command line).
    pub fn one_time_login(&self) -> Option<String> {
        self.sessions.one_time_code().map(|code| format!("/console/login?once={code}"))
    }

    /// The issuer people sign in at (`[console] oauth_client_id`), if any.
    pub fn sign_in_issuer(&self) -> Option<&str> {
        self.sign_in.as_ref().map(|s| s.settings().issuer.as_str())
    }

    /// Whether `path` is the console's (the front door hands those over).
    pub fn serves(path: &str) -> bool {
        path == "/" || path == "/console" || path.starts_with("/console/")
    }

    /// Answer one request (its `Host` and `Origin` already checked by the front door).
    pub async fn handle(&self, req: Request<hyper::body::Incoming>, peer: SocketAddr) -> Response<Body> {
        let mut resp = self.route(req, peer).await;
        secure_headers(resp.headers_mut());
        resp
    }

    async fn route(&self, req: Request<hyper::body::Incoming>, peer: SocketAddr) -> Response<Body> {
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        if let Some(name) = path.strip_prefix("/console/assets/") {
            return match method {
                Method::GET | Method::HEAD => assets::serve(name, req.headers()),
                _ => status_text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
            };
        }
        let cookie = req.headers().get(header::COOKIE).and_then(|c| c.to_str().ok()).map(str::to_string);
        match (&method, path.as_str()) {
            (&Method::POST | &Method::GET, "/console/login") => return self.login(req, peer).await,
            (&Method::GET, "/console/signin") => return signin::start(self, req.headers(), peer).await,
            (&Method::GET, "/console/callback") => {
                return signin::finish(self, req.headers(), req.uri().query(), peer).await;
            }
            (&Method::GET, "/console") => return redirect("/"),
            _ => {}
        }
        let caller = match self.admit(peer, cookie.as_deref(), method == Method::GET && path == "/") {
            Ok(c) => c,
            Err(resp) => return *resp,
        };
        if method == Method::POST {
            let given = req.headers().get(auth::CSRF_HEADER).map(|v| v.as_bytes());
            if !auth::csrf_ok(&caller, given) {
                tracing::info!("console POST {path} from {peer} refused: missing or wrong CSRF token");
                return json_error(
                    StatusCode::FORBIDDEN,
                    "forbidden: missing or wrong CSRF token (reload the page)",
                );
            }
        }
        self.signed_in(req, &caller, cookie.as_deref()).await
    }

    /// A request of a signed-in `caller` (a POST's CSRF token checked).
    async fn signed_in(
        &self,
        req: Request<hyper::body::Incoming>,
        caller: &Caller,
        cookie: Option<&str>,
    ) -> Response<Body> {
        let path = req.uri().path().to_string();
        match (req.method().clone(), path.as_str()) {
            (Method::GET, "/") => assets::index_page(),
            (Method::POST, "/console/logout") => self.logout(&req, cookie),
            (Method::GET, "/console/api/session") => json(StatusCode::OK, &self.session_json(caller)),
            (Method::GET, "/console/api/tools") => json(StatusCode::OK, &api::tools(self, caller)),
            (Method::GET, "/console/app") => apps::page(self, caller, req.uri().query()).await,
            (Method::GET, "/console/api/plugins") => json(StatusCode::OK, &api::plugins(self).await),
            (Method::GET, "/console/api/resources") => json(StatusCode::OK, &resources::list(self)),
            (Method::GET, "/console/api/resource") => resources::read(self, caller, req.uri().query()).await,
            (Method::GET, "/console/api/prompts") => json(StatusCode::OK, &prompts::list(self)),
            (Method::GET, "/console/api/prompt") => prompts::get(self, caller, req.uri().query()).await,
            (Method::GET, "/console/api/complete") => prompts::complete(self, req.uri().query()).await,
            (Method::GET, "/console/api/events") => feed::open(self),
            (Method::GET, "/console/api/audit") => audit_view::page(self, req.uri().query()).await,
            (Method::GET, "/console/api/audit.jsonl") => audit_view::export(self, req.uri().query()).await,
            (Method::GET, "/console/api/metrics") => json(StatusCode::OK, &self.charts.series(self)),
            (Method::POST, "/console/api/call" | "/console/api/approve" | "/console/api/reject")
                if self.settings.read_only =>
            {
                json_error(
                    StatusCode::FORBIDDEN,
                    "forbidden: the console is read-only ([console] read_only = true)",
                )
            }
            (Method::POST, "/console/api/call") => {
                // The caller's span (a `traceparent` header), when telemetry is on.
                let parent = (toolhost_core::telemetry::enabled())
                    .then(|| req.headers().get("traceparent")?.to_str().ok())
                    .flatten()
                    .and_then(toolhost_core::telemetry::TraceParent::parse);
                match self.body_json(req).await {
                    Ok(v) => api::call(self, caller, parent, v).await,
                    Err(resp) => *resp,
                }
            }
            (Method::POST, "/console/api/approve") => match self.body_json(req).await {
                Ok(v) => api::approve(self, caller, v).await,
                Err(resp) => *resp,
            },
            (Method::POST, "/console/api/reject") => match self.body_json(req).await {
                Ok(v) => api::reject(self, caller, v).await,
                Err(resp) => *resp,
            },
            (
                _,
                "/"
                | "/console/logout"
                | "/console/api/session"
                | "/console/api/tools"
                | "/console/api/plugins"
                | "/console/api/resources"
                | "/console/api/resource",
            )
            | (_, "/console/api/prompts" | "/console/api/prompt" | "/console/api/complete")
            | (_, "/console/api/events" | "/console/api/audit" | "/console/api/audit.jsonl")
            | (
                _,
                "/console/api/metrics" | "/console/api/call" | "/console/api/approve" | "/console/api/reject",
            ) => json_error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
            _ => json_error(StatusCode::NOT_FOUND, "not found"),
        }
    }

    /// End the caller's session and clear its cookie.
    fn logout(&self, req: &Request<hyper::body::Incoming>, cookie: Option<&str>) -> Response<Body> {
        self.sessions.logout(cookie);
        let mut resp = json(StatusCode::OK, &serde_json::json!({ "signedOut": true }));
        let clear = auth::clear_cookie(self.secure(req.headers()));
        if let Ok(v) = HeaderValue::from_str(&clear) {
            resp.headers_mut().insert(header::SET_COOKIE, v);
        }
        resp
    }

    fn session_json(&self, caller: &Caller) -> serde_json::Value {
        let config = self.executor.config();
        serde_json::json!({
            "csrf": caller.csrf,
            "token": caller.token,
            "who": caller.principal.as_ref().map(|p| serde_json::json!({ "sub": p.subject, "iss": p.issuer })),
            "signIn": true,
            "readOnly": self.settings.read_only,
            "version": env!("CARGO_PKG_VERSION"),
            "plugins": config.plugins_dir,
            "danger": config.danger.to_string(),
            "audit": self.service.audit_path(),
        })
    }

    /// Whether the session cookie gets `Secure`.
    fn secure(&self, headers: &hyper::HeaderMap) -> bool {
        self.settings.secure_cookie
            || headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
    }

    /// The caller a request's session cookie names, or the answer that refuses it (`page`: the
    /// request is for the page, which gets the login form).
    fn admit(&self, peer: SocketAddr, cookie: Option<&str>, page: bool) -> Result<Caller, Early> {
        let refused = match self.sessions.caller(peer, cookie) {
            Ok(c) => return Ok(c),
            Err(refused) => refused,
        };
        Err(Box::new(match refused {
            Refused::NotLoopback => self.refused(refused, peer),
            Refused::Login if page => assets::login_page(StatusCode::UNAUTHORIZED, false, self.doors()),
            Refused::Login if self.sessions.by_key() => json_error(
                StatusCode::UNAUTHORIZED,
                "unauthorized: open the console with the link toolhost printed when it started \
                 (http://HOST:PORT/console/login?key=…)",
            ),
            Refused::Login if self.sign_in.is_some() => json_error(
                StatusCode::UNAUTHORIZED,
                "unauthorized: sign in to the console (/console/signin, at the authorization server)",
            ),
            Refused::Login => {
                json_error(StatusCode::UNAUTHORIZED, "unauthorized: sign in to the console with a token")
            }
        }))
    }

    /// What opens this console, for its login page.
    fn doors(&self) -> assets::Doors<'_> {
        assets::Doors {
            tokens: self.sessions.by_token(),
            key: self.sessions.by_key(),
            issuer: self.sign_in.as_ref().map(|s| s.settings().issuer.as_str()),
        }
    }

    /// The answer to a peer that may not use the console at all.
    fn refused(&self, why: Refused, peer: SocketAddr) -> Response<Body> {
        tracing::info!("console request from {peer} refused ({why:?}): no [mcp] tokens, not loopback");
        status_text(
            StatusCode::FORBIDDEN,
            "forbidden: without [mcp] tokens the console answers only on this machine (loopback); \
             configure a token to use it from elsewhere",
        )
    }

    /// Open a session: `POST /console/login` with a form field `token` (a configured token, or
    /// without tokens the local key), or without tokens `GET /console/login?key=KEY` (the link
    /// printed at start) or `?once=CODE` (a one-time link). A session cookie and back to `/`,
    /// so the key leaves the address bar.
    async fn login(&self, req: Request<hyper::body::Incoming>, peer: SocketAddr) -> Response<Body> {
        if let Err(why) = self.sessions.reachable_by(peer) {
            return self.refused(why, peer);
        }
        let secure = self.secure(req.headers());
        let opened = if req.method() == Method::GET {
            if !self.sessions.by_key() {
                return redirect("/");
            }
            let query = req.uri().query().unwrap_or("").to_string();
            let field = |name: &str| {
                url::form_urlencoded::parse(query.as_bytes())
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
            };
            match (field("key"), field("once")) {
                (Some(key), _) => self.sessions.login(&key),
                (None, Some(code)) => self.sessions.login_once(&code),
                (None, None) => return redirect("/"),
            }
        } else {
            let body = match self.body(req).await {
                Ok(b) => b,
                Err(resp) => return *resp,
            };
            let token = url::form_urlencoded::parse(&body)
                .find(|(k, _)| k == "token")
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            self.sessions.login(&token)
        };
        match opened {
            Some(id) => {
                let mut resp = redirect("/");
                if let Ok(v) =
                    HeaderValue::from_str(&auth::set_cookie(&id, secure, self.settings.session_idle))
                {
                    resp.headers_mut().insert(header::SET_COOKIE, v);
                }
                resp
            }
            None => {
                tracing::info!("console sign-in from {peer} refused: not a configured token or the key");
                assets::login_page(StatusCode::UNAUTHORIZED, true, self.doors())
            }
        }
    }

    /// The request body, whole, within the size cap and `[serve] body_timeout_ms`.
    async fn body(&self, req: Request<hyper::body::Incoming>) -> Result<Bytes, Early> {
        let limited = http_body_util::Limited::new(req.into_body(), MAX_BODY);
        let fail = |status, message: String| Box::new(json_error(status, &message));
        match tokio::time::timeout(self.body_timeout, limited.collect()).await {
            Ok(Ok(b)) => Ok(b.to_bytes()),
            Ok(Err(e)) => {
                Err(fail(StatusCode::PAYLOAD_TOO_LARGE, format!("cannot read the request body: {e}")))
            }
            Err(_) => Err(fail(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} ms ([serve] body_timeout_ms)",
                    self.body_timeout.as_millis()
                ),
            )),
        }
    }

    /// The request body as a JSON object.
    async fn body_json(&self, req: Request<hyper::body::Incoming>) -> Result<serde_json::Value, Early> {
        let bytes = self.body(req).await?;
        let fail = |message: String| Box::new(json_error(StatusCode::BAD_REQUEST, &message));
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(v @ serde_json::Value::Object(_)) => Ok(v),
            Ok(_) => Err(fail("the request body must be a JSON object".into())),
            Err(e) => Err(fail(format!("the request body is not JSON: {e}"))),
        }
    }
}

fn secure_headers(h: &mut hyper::HeaderMap) {
    // An app's page (`apps::page`) brings its own policy and framing rule; every other answer
    // gets the console's.
    h.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(CSP));
    h.entry(header::X_FRAME_OPTIONS).or_insert(HeaderValue::from_static("DENY"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    h.insert("cross-origin-resource-policy", HeaderValue::from_static("same-origin"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
}

fn full(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(Full::new(body.into()).boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    full(status, "application/json", serde_json::to_vec(value).unwrap_or_default())
}

fn json_error(status: StatusCode, message: &str) -> Response<Body> {
    json(status, &serde_json::json!({ "error": message }))
}

fn status_text(status: StatusCode, message: &str) -> Response<Body> {
    full(status, "text/plain; charset=utf-8", format!("{message}\n"))
}

fn redirect(to: &'static str) -> Response<Body> {
    let mut resp = full(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
    resp.headers_mut().insert(header::LOCATION, HeaderValue::from_static(to));
    resp
}

/// Add a `Set-Cookie` line to `resp` (a value that is not a header value is left out).
fn add_cookie(resp: &mut Response<Body>, cookie: &str) {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
}

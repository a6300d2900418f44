//! Signing in to the console at the authorization server (`[console] oauth_client_id`; the
//! flow itself is `auth::SignIn`'s):
//!
//! - `GET /console/signin` sends the browser to the issuer's authorization endpoint, and gives
//!   it a cookie holding the sign-in's `state` (`SameSite=Lax`, so the browser sends it back on
//!   the top-level return from the authorization server's site; `Path=/console/callback`), so
//!   a return is taken only from the browser that started the sign-in.
//! - `GET /console/callback` is that return: a session for the person the access token names,
//!   its cookie set on this answer (a `SameSite=Strict` cookie is not sent on the redirect back
//!   from another site, but it is kept), and a page that opens the console at once, by which
//!   time the browser sends it. Anything wrong: the sign-in page saying why, and no session.

use super::auth::set_cookie;
use super::{Body, Console, add_cookie, assets, full, status_text};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

/// The cookie holding the `state` of the browser's sign-in under way.
const STATE_COOKIE: &str = "toolhost_signin";

/// The console's sign-in, if it has one and `peer` may use the console: else the answer.
fn signing_in(c: &Console, peer: SocketAddr) -> Result<&crate::auth::SignIn, Box<Response<Body>>> {
    let Some(sign_in) = &c.sign_in else {
        return Err(Box::new(status_text(
            StatusCode::NOT_FOUND,
            "not found: this console has no [console] oauth_client_id",
        )));
    };
    c.sessions.reachable_by(peer).map_err(|why| Box::new(c.refused(why, peer)))?;
    Ok(sign_in)
}

/// `GET /console/signin`: to the authorization server.
pub async fn start(c: &Console, headers: &hyper::HeaderMap, peer: SocketAddr) -> Response<Body> {
    let sign_in = match signing_in(c, peer) {
        Ok(s) => s,
        Err(refused) => return *refused,
    };
    match sign_in.start().await {
        Ok(started) => {
            let mut resp = full(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
            if let Ok(to) = HeaderValue::from_str(started.url.as_str()) {
                resp.headers_mut().insert(header::LOCATION, to);
            }
            add_cookie(&mut resp, &state_cookie(&started.state, c.secure(headers)));
            resp
        }
        Err(e) => {
            tracing::warn!("console sign-in from {peer} cannot start: {e}");
            assets::sign_in_failed_page(StatusCode::BAD_GATEWAY, &e.to_string(), c.doors())
        }
    }
}

/// `GET /console/callback`: the return from the authorization server.
pub async fn finish(
    c: &Console,
    headers: &hyper::HeaderMap,
    query: Option<&str>,
    peer: SocketAddr,
) -> Response<Body> {
    let sign_in = match signing_in(c, peer) {
        Ok(s) => s,
        Err(refused) => return *refused,
    };
    let secure = c.secure(headers);
    let cookies = headers.get_all(header::COOKIE);
    let browser = cookies.iter().filter_map(|v| v.to_str().ok()).find_map(|h| cookie(h, STATE_COOKIE));
    let mut resp = match sign_in.finish(query.unwrap_or(""), browser).await {
        Ok(done) => {
            let left = done.until.duration_since(SystemTime::now()).unwrap_or_default();
            let id = c.sessions.signed_in(done.principal.clone(), Instant::now() + left);
            let p = &done.principal;
            tracing::info!(
                "console sign-in from {peer}: {} of {} until its token expires in {} s",
                p.subject,
                p.issuer.as_deref().unwrap_or("?"),
                left.as_secs()
            );
            let mut resp = assets::signed_in_page();
            add_cookie(&mut resp, &set_cookie(&id, secure, left.min(c.settings.session_idle)));
            resp
        }
        Err(e) => {
            tracing::info!("console sign-in from {peer} refused: {e}");
            let status = if e.is_upstream() { StatusCode::BAD_GATEWAY } else { StatusCode::BAD_REQUEST };
            assets::sign_in_failed_page(status, &e.to_string(), c.doors())
        }
    };
    add_cookie(&mut resp, &clear_state_cookie(secure));
    resp
}

/// The value of cookie `name` in a `Cookie` header.
fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name && !v.is_empty()).then_some(v)
    })
}

fn state_cookie(state: &str, secure: bool) -> String {
    let ttl = crate::auth::SIGN_IN_TTL.as_secs();
    format!(
        "{STATE_COOKIE}={state}; Path=/console/callback; HttpOnly; SameSite=Lax; Max-Age={ttl}{}",
        if secure { "; Secure" } else { "" }
    )
}

fn clear_state_cookie(secure: bool) -> String {
    format!(
        "{STATE_COOKIE}=; Path=/console/callback; HttpOnly; SameSite=Lax; Max-Age=0{}",
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_cookie_goes_only_to_the_callback_and_is_read_back() {
        let c = state_cookie("abc", true);
        assert!(c.starts_with("toolhost_signin=abc; Path=/console/callback; HttpOnly; SameSite=Lax"), "{c}");
        assert!(c.ends_with("; Secure"), "{c}");
        assert!(clear_state_cookie(false).contains("Max-Age=0"));
        assert_eq!(cookie("a=1; toolhost_signin=abc; toolhost_console=x", STATE_COOKIE), Some("abc"));
        assert_eq!(cookie("toolhost_signin=", STATE_COOKIE), None);
        assert_eq!(cookie("toolhost_signinx=abc", STATE_COOKIE), None);
    }
}

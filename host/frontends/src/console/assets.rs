//! The console's files, embedded in the binary (no CDN, nothing fetched at run time): the page,
//! the login form, one stylesheet, the ES modules and an icon. Served with an `ETag` (their
//! SHA-256) so a browser revalidates instead of downloading them again.

use super::{Body, full, status_text};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use std::sync::OnceLock;

/// (name, content type, bytes) of every asset under `/console/assets/`.
const FILES: &[(&str, &str, &[u8])] = &[
    ("console.css", "text/css; charset=utf-8", include_bytes!("assets/console.css")),
    ("icon.svg", "image/svg+xml", include_bytes!("assets/icon.svg")),
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("assets/app.js")),
    ("api.js", "text/javascript; charset=utf-8", include_bytes!("assets/api.js")),
    ("dom.js", "text/javascript; charset=utf-8", include_bytes!("assets/dom.js")),
    ("tools.js", "text/javascript; charset=utf-8", include_bytes!("assets/tools.js")),
    ("apps.js", "text/javascript; charset=utf-8", include_bytes!("assets/apps.js")),
    ("plugins.js", "text/javascript; charset=utf-8", include_bytes!("assets/plugins.js")),
    ("resources.js", "text/javascript; charset=utf-8", include_bytes!("assets/resources.js")),
    ("prompts.js", "text/javascript; charset=utf-8", include_bytes!("assets/prompts.js")),
    ("complete.js", "text/javascript; charset=utf-8", include_bytes!("assets/complete.js")),
    ("activity.js", "text/javascript; charset=utf-8", include_bytes!("assets/activity.js")),
    ("audit.js", "text/javascript; charset=utf-8", include_bytes!("assets/audit.js")),
    ("metrics.js", "text/javascript; charset=utf-8", include_bytes!("assets/metrics.js")),
];

const INDEX: &str = include_str!("assets/index.html");
const LOGIN: &str = include_str!("assets/login.html");
const SIGNED_IN: &str = include_str!("assets/signed-in.html");

/// What opens this console, for its login page to offer.
#[derive(Debug, Clone, Copy)]
pub struct Doors<'a> {
    /// `[mcp] tokens`: the form asks for one.
    pub tokens: bool,
    /// No tokens: the local key's link opens it (and the form asks for the key).
    pub key: bool,
    /// `[console] oauth_client_id`: "Sign in with" this issuer.
    pub issuer: Option<&'a str>,
}

fn etags() -> &'static Vec<String> {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        FILES.iter().map(|(_, _, b)| format!("\"{}\"", &toolhost_spec::digest::sha256_hex(b)[..16])).collect()
    })
}

/// `GET /console/assets/NAME`.
pub fn serve(name: &str, headers: &hyper::HeaderMap) -> Response<Body> {
    let Some(i) = FILES.iter().position(|(n, _, _)| *n == name) else {
        return status_text(StatusCode::NOT_FOUND, "not found");
    };
    let (_, content_type, bytes) = FILES[i];
    let tag = &etags()[i];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut resp = if fresh {
        let mut r = full(StatusCode::NOT_MODIFIED, content_type, "");
        r.headers_mut().remove(header::CONTENT_TYPE);
        r
    } else {
        full(StatusCode::OK, content_type, bytes)
    };
    if let Ok(v) = HeaderValue::from_str(tag) {
        resp.headers_mut().insert(header::ETAG, v);
    }
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// The console page.
pub fn index_page() -> Response<Body> {
    full(StatusCode::OK, "text/html; charset=utf-8", INDEX)
}

/// The sign-in page, offering what `doors` open (with the "not a token" message after a failed
/// attempt at the form).
pub fn login_page(status: StatusCode, failed: bool, doors: Doors) -> Response<Body> {
    full(status, "text/html; charset=utf-8", render_login(failed, None, doors))
}

/// The sign-in page after a sign-in at the authorization server failed, saying why.
pub fn sign_in_failed_page(status: StatusCode, reason: &str, doors: Doors) -> Response<Body> {
    full(status, "text/html; charset=utf-8", render_login(false, Some(reason), doors))
}

/// The page a sign-in at the authorization server lands on: it opens the console at once (a
/// navigation of the console's own page, so the browser sends its `SameSite=Strict` cookie,
/// which it does not on the redirect back from the authorization server's site).
pub fn signed_in_page() -> Response<Body> {
    full(StatusCode::OK, "text/html; charset=utf-8", SIGNED_IN)
}

fn render_login(failed: bool, reason: Option<&str>, doors: Doors) -> String {
    let mut page = LOGIN.to_string();
    let parts = [
        ("oauth", doors.issuer.is_some()),
        ("tokens", doors.tokens),
        ("key", doors.key && !doors.tokens),
        ("form", doors.tokens || doors.key || doors.issuer.is_none()),
    ];
    for (name, keep) in parts {
        page = if keep {
            page.replace(&format!("  <!-- {name} -->\n"), "").replace(&format!("  <!-- /{name} -->\n"), "")
        } else {
            without_part(&page, name)
        };
    }
    if doors.key && !doors.tokens {
        page = page
            .replace(">Token</label>", ">Key</label>")
            .replace("That is not a configured token.", "That is not the key of this toolhost process.");
    }
    if failed {
        page = page.replace("<p id=\"failed\" hidden", "<p id=\"failed\"");
    }
    if let Some(reason) = reason {
        page = page
            .replace("<p id=\"signin-failed\" hidden", "<p id=\"signin-failed\"")
            .replace(">REASON<", &format!(">Sign-in failed: {}<", escape_html(reason)));
    }
    page.replace("Sign in with ISSUER", &format!("Sign in with {}", escape_html(doors.issuer.unwrap_or(""))))
}

/// `s` as HTML text.
fn escape_html(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// `page` without the lines between `<!-- NAME -->` and `<!-- /NAME -->` (both included).
fn without_part(page: &str, name: &str) -> String {
    let (start, end) = (format!("  <!-- {name} -->\n"), format!("  <!-- /{name} -->\n"));
    match (page.find(&start), page.find(&end)) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &page[..a], &page[b + end.len()..]),
        _ => page.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn text(resp: Response<Body>) -> String {
        String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
    }

    const TOKENS: Doors = Doors { tokens: true, key: false, issuer: None };

    #[tokio::test]
    async fn the_login_page_says_what_opens_this_console() {
        let tokens = text(login_page(StatusCode::UNAUTHORIZED, false, TOKENS)).await;
        assert!(
            tokens.contains("[mcp] tokens")
                && !tokens.contains("console/login?key")
                && !tokens.contains("<!--")
                && !tokens.contains("/console/signin")
        );
        let key = text(login_page(
            StatusCode::UNAUTHORIZED,
            true,
            Doors { tokens: false, key: true, issuer: None },
        ))
        .await;
        assert!(key.contains("console/login?key=") && !key.contains("[mcp] tokens"), "{key}");
        assert!(
            key.contains(">Key</label>") && key.contains("<p id=\"failed\" role") && !key.contains("<!--")
        );
        let oauth = Doors { tokens: false, key: false, issuer: Some("https://login.example") };
        let page = text(login_page(StatusCode::UNAUTHORIZED, false, oauth)).await;
        assert!(
            page.contains(">Sign in with https://login.example</a>")
                && page.contains("href=\"/console/signin\"")
        );
        assert!(
            !page.contains("<form") && !page.contains("[mcp] tokens") && !page.contains("<!--"),
            "{page}"
        );
        assert!(page.contains("<p id=\"signin-failed\" hidden"), "no reason shown: {page}");
        let both = text(login_page(StatusCode::UNAUTHORIZED, false, Doors { tokens: true, ..oauth })).await;
        assert!(both.contains("/console/signin") && both.contains("<form") && both.contains("[mcp] tokens"));
    }

    #[tokio::test]
    async fn a_failed_sign_in_says_why_as_text() {
        let oauth = Doors { tokens: false, key: false, issuer: Some("https://login.example") };
        let page = text(sign_in_failed_page(StatusCode::BAD_REQUEST, "<b>no</b> & \"x\"", oauth)).await;
        assert!(
            page.contains("<p id=\"signin-failed\" role=\"alert\" class=\"error\">Sign-in failed: &lt;b&gt;no&lt;/b&gt; &amp; &quot;x&quot;</p>"),
            "{page}"
        );
    }
}

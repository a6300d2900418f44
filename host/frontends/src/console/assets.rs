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

/// The sign-in form (with the "not a token" message after a failed attempt), for a host with
/// `[mcp] tokens` or, `by_key`, for one that opens with its local key's link.
pub fn login_page(status: StatusCode, failed: bool, by_key: bool) -> Response<Body> {
    let (keep, drop) = if by_key { ("key", "tokens") } else { ("tokens", "key") };
    let mut page = without_part(LOGIN, drop);
    if by_key {
        page = page
            .replace(">Token</label>", ">Key</label>")
            .replace("That is not a configured token.", "That is not the key of this toolhost process.");
    }
    if failed {
        page = page.replace("<p id=\"failed\" hidden", "<p id=\"failed\"");
    }
    page = page.replace(&format!("  <!-- {keep} -->\n"), "").replace(&format!("  <!-- /{keep} -->\n"), "");
    full(status, "text/html; charset=utf-8", page)
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

    #[tokio::test]
    async fn the_login_page_says_what_opens_this_console() {
        let tokens = text(login_page(StatusCode::UNAUTHORIZED, false, false)).await;
        assert!(
            tokens.contains("[mcp] tokens")
                && !tokens.contains("console/login?key")
                && !tokens.contains("<!--")
        );
        let key = text(login_page(StatusCode::UNAUTHORIZED, true, true)).await;
        assert!(key.contains("console/login?key=") && !key.contains("[mcp] tokens"), "{key}");
        assert!(
            key.contains(">Key</label>") && key.contains("<p id=\"failed\" role") && !key.contains("<!--")
        );
    }
}

//! An app's page (MCP Apps) for the console's frame: `GET /console/app?uri=ui://PLUGIN/APP`,
//! read through the executor like every read (the caller's policy, the audit trail), answered
//! with the page's own Content-Security-Policy — its origins as the operator allows them
//! (`toolhost_spec::apps::content_security_policy`), `sandbox allow-scripts` (an opaque origin
//! even if the page is opened on its own: no cookie, no access to the console), and framed by
//! the console only. `assets/apps.js` is the other half: the frame and the bridge.

use super::{Body, Console, full, json_error};
use crate::console::auth::Caller;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use toolhost_core::executor::{Body as ReadBody, ReadError};

/// `GET /console/app?uri=…`.
pub async fn page(c: &Console, caller: &Caller, query: Option<&str>) -> Response<Body> {
    let uri = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "uri")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if !uri.starts_with(toolhost_core::registry::resources::APP_SCHEME) {
        return json_error(
            StatusCode::BAD_REQUEST,
            "missing or not an app's `uri`: /console/app?uri=ui://PLUGIN/APP",
        );
    }
    let policy = {
        let registry = c.executor.registry();
        match toolhost_core::registry::apps::find(registry.plugins(), &uri) {
            Some((_, app)) => app.policy.clone(),
            None => return json_error(StatusCode::NOT_FOUND, &format!("no loaded plugin has the app {uri}")),
        }
    };
    let read = match c.executor.read(&uri, "console", &caller.context()).await {
        Ok(read) => read,
        Err(e @ ReadError::NotFound(_)) => return json_error(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => return json_error(StatusCode::FORBIDDEN, &e.to_string()),
    };
    let ReadBody::Text(html) = read.body else {
        return json_error(StatusCode::INTERNAL_SERVER_ERROR, "an app's page is text");
    };
    let mut resp = full(StatusCode::OK, "text/html; charset=utf-8", html);
    let h = resp.headers_mut();
    let csp = format!("{policy}; frame-ancestors 'self'; sandbox allow-scripts");
    match HeaderValue::from_str(&csp) {
        Ok(v) => h.insert(header::CONTENT_SECURITY_POLICY, v),
        // The origins were checked when the plugin loaded: this cannot happen.
        Err(_) => {
            return json_error(StatusCode::INTERNAL_SERVER_ERROR, "the app's policy is not a header value");
        }
    };
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("SAMEORIGIN"));
    resp
}

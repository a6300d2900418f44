//! The console's Resources page: every resource the host serves — today the plugins' skills'
//! files (`skill://PLUGIN/SKILL/FILE`, as MCP's `resources/read` serves them) — listed, and one
//! read by its URI. Nothing runs: the files were read and checked when their plugins loaded.

use super::auth::Caller;
use super::{Body, Console, json, json_error};
use base64::Engine as _;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use toolhost_core::executor::{CallContext, ResourceRead};
use toolhost_core::registry::skills;
use toolhost_spec::skills::SKILL_MD;

/// `GET /console/api/resources`: each skill with its files (URI, mime type, size, digest).
pub fn list(c: &Console) -> Value {
    let registry = c.executor.registry();
    let skills: Vec<Value> = skills::all(registry.plugins())
        .into_iter()
        .map(|(plugin, s)| {
            let files: Vec<Value> = s
                .files
                .iter()
                .map(|f| {
                    json!({
                        "uri": skills::uri(plugin, &s.name, &f.path),
                        "path": f.path,
                        "mimeType": f.mime,
                        "size": f.size(),
                        "digest": f.digest,
                        "text": f.text,
                    })
                })
                .collect();
            json!({
                "plugin": plugin,
                "name": s.name,
                "description": s.description,
                "uri": skills::uri(plugin, &s.name, SKILL_MD),
                "files": files,
            })
        })
        .collect();
    json!({ "skills": skills })
}

/// `GET /console/api/resource?uri=URI`: the resource's contents — `text`, or `blob` (base64)
/// for a binary file — or 404 naming the URI. Audited and counted as the caller's read.
pub async fn read(c: &Console, caller: &Caller, query: Option<&str>) -> Response<Body> {
    let uri = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "uri")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if uri.is_empty() {
        return json_error(StatusCode::BAD_REQUEST, "missing `uri`: /console/api/resource?uri=skill://…");
    }
    let registry = c.executor.registry();
    let found = skills::resource(registry.plugins(), &uri);
    let ctx =
        CallContext { front_end: Some("console"), token: caller.token.clone(), ..CallContext::default() };
    let (plugin, bytes) = found.as_ref().map_or((None, 0), |(p, f)| (Some(*p), f.size()));
    c.executor.observe_read(ResourceRead { uri: &uri, method: "console", plugin, bytes, ctx: &ctx }).await;
    match found {
        Ok((_, file)) => {
            let mut v = json!({ "uri": uri, "mimeType": file.mime, "size": file.size() });
            match file.as_text() {
                Some(text) => v["text"] = text.into(),
                None => v["blob"] = base64::engine::general_purpose::STANDARD.encode(&file.bytes).into(),
            }
            json(StatusCode::OK, &v)
        }
        Err(e) => json_error(StatusCode::NOT_FOUND, &e.to_string()),
    }
}

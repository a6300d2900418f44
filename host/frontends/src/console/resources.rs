//! The console's Resources page: every resource the host serves — the plugins' skills' files
//! (`skill://PLUGIN/SKILL/FILE`), their static resources and templates, as MCP serves them —
//! listed, and one read by its URI (the executor's read: a plugin's resource runs in its
//! sandbox; a skill's file was read and checked when its plugin loaded).

use super::auth::Caller;
use super::{Body, Console, json, json_error};
use base64::Engine as _;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use toolhost_core::executor::{Body as ReadBody, ReadError};
use toolhost_core::registry::{resources, skills};
use toolhost_spec::skills::SKILL_MD;

/// `GET /console/api/resources`: each skill with its files (URI, mime type, size, digest), each
/// plugin's static resources and templates as its manifest declares them.
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
    let declared: Vec<Value> = resources::all(registry.plugins())
        .map(|(plugin, r)| json!({ "plugin": plugin, "resource": r }))
        .collect();
    let templates: Vec<Value> = resources::templates(registry.plugins())
        .map(|(plugin, t)| json!({ "plugin": plugin, "template": t }))
        .collect();
    json!({ "skills": skills, "resources": declared, "templates": templates })
}

/// `GET /console/api/resource?uri=URI`: the resource's contents — `text`, or `blob` (base64)
/// for a binary file — or 404 naming the URI. Audited and counted as the caller's read.
pub async fn read(c: &Console, caller: &Caller, query: Option<&str>) -> Response<Body> {
    let uri = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "uri")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if uri.is_empty() {
        return json_error(StatusCode::BAD_REQUEST, "missing `uri`: /console/api/resource?uri=URI");
    }
    let ctx = caller.context();
    match c.executor.read(&uri, "console", &ctx).await {
        Ok(read) => {
            let mut v = json!({ "uri": uri, "mimeType": read.mime_type, "size": read.body.len(),
                "plugin": &*read.plugin, "truncated": read.truncated });
            match read.body {
                ReadBody::Text(text) => v["text"] = text.into(),
                ReadBody::Blob(bytes) => {
                    v["blob"] = base64::engine::general_purpose::STANDARD.encode(&bytes).into()
                }
            }
            json(StatusCode::OK, &v)
        }
        Err(e @ ReadError::NotFound(_)) => json_error(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e @ (ReadError::Refused { .. } | ReadError::NotText { .. })) => {
            json_error(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string())
        }
        Err(e) => json_error(StatusCode::BAD_GATEWAY, &e.to_string()),
    }
}

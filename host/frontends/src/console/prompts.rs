//! The console's Prompts page, and completion for it and the Resources page's templates: the
//! plugins' prompts listed, one got with the arguments a person filled in, and what completes an
//! argument as they type — each through the executor, as MCP gets and completes them.

use super::auth::Caller;
use super::{Body, Console, json, json_error};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use toolhost_core::executor::{CompleteError, PromptContent, PromptError, Role};
use toolhost_core::registry::prompts::{self, Target};

/// A query string's pairs, decoded.
fn query(q: Option<&str>) -> Vec<(String, String)> {
    url::form_urlencoded::parse(q.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The value of `key`, and the pairs whose key starts with `prefix` (the prefix taken off).
fn split<'a>(
    pairs: &'a [(String, String)],
    key: &str,
    prefix: &str,
) -> (Option<&'a str>, Vec<(String, String)>) {
    let value = pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let rest =
        pairs.iter().filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.to_string(), v.clone()))).collect();
    (value, rest)
}

/// `GET /console/api/prompts`: each plugin's prompts as its manifest declares them, named as
/// they are served.
pub fn list(c: &Console) -> Value {
    let registry = c.executor.registry();
    let listed: Vec<Value> = prompts::all(registry.plugins())
        .map(|p| {
            // The prompt as the plugin declares it, named as it is served.
            let mut prompt = serde_json::to_value(p.spec).unwrap_or_default();
            prompt["name"] = json!(p.name);
            json!({ "plugin": p.plugin, "prompt": prompt })
        })
        .collect();
    json!({ "prompts": listed })
}

/// `GET /console/api/prompt?name=NAME&arg.ARG=VALUE…`: the prompt's messages, or why there are
/// none (400: its arguments; 404: no such prompt; 422: the plugin refused; 502: its run failed).
pub async fn get(c: &Console, caller: &Caller, q: Option<&str>) -> Response<Body> {
    let pairs = query(q);
    let (Some(name), arguments) = split(&pairs, "name", "arg.") else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "missing `name`: /console/api/prompt?name=NAME&arg.ARG=VALUE",
        );
    };
    let ctx = caller.context();
    match c.executor.get_prompt(name, &arguments, "console", &ctx).await {
        Ok(got) => {
            let messages: Vec<Value> = got
                .messages
                .iter()
                .map(|m| {
                    let role = if m.role == Role::User { "user" } else { "assistant" };
                    match &m.content {
                        PromptContent::Text(text) => json!({ "role": role, "text": text }),
                        PromptContent::Link { uri, name, .. } => {
                            json!({ "role": role, "link": { "uri": uri, "name": name } })
                        }
                    }
                })
                .collect();
            let v = json!({ "name": name, "plugin": &*got.plugin, "description": got.description,
                "messages": messages, "truncated": got.truncated });
            json(StatusCode::OK, &v)
        }
        Err(e @ PromptError::Arguments(_)) => json_error(StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e @ PromptError::NotFound(_)) => json_error(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e @ PromptError::Refused { .. }) => json_error(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string()),
        Err(e) => json_error(StatusCode::BAD_GATEWAY, &e.to_string()),
    }
}

/// `GET /console/api/complete?(prompt=NAME|template=T)&argument=ARG&value=V&with.ARG=VALUE…`:
/// the values; nothing to complete is no values, as over MCP, and so is a completion that
/// failed (with its `error`).
pub async fn complete(c: &Console, q: Option<&str>) -> Response<Body> {
    let pairs = query(q);
    let (argument, context) = split(&pairs, "argument", "with.");
    let value = pairs.iter().find(|(k, _)| k == "value").map_or("", |(_, v)| v.as_str());
    let find = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let target = match (find("prompt"), find("template")) {
        (Some(p), None) => Target::Prompt(p),
        (None, Some(t)) => Target::Template(t),
        _ => return json_error(StatusCode::BAD_REQUEST, "give one of `prompt` and `template`"),
    };
    let Some(argument) = argument else {
        return json_error(StatusCode::BAD_REQUEST, "missing `argument`");
    };
    match c.executor.complete(target, argument, value, &context).await {
        Ok(done) => json(StatusCode::OK, &json!({ "values": done.values, "total": done.total })),
        Err(CompleteError::Nothing(_)) => json(StatusCode::OK, &json!({ "values": [], "total": 0 })),
        // Completion helps a person type; a plugin that could not complete (not granted what it
        // reads, a crash) leaves the field as it is, and says why for whoever looks.
        Err(e) => json(StatusCode::OK, &json!({ "values": [], "total": 0, "error": e.to_string() })),
    }
}

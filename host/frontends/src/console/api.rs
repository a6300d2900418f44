//! The console's JSON views of the registry (tools, plugins with their grants, held versions,
//! load failures) and its three actions: run a tool through the executor, approve or reject a
//! held plugin version.

use super::{Body, Console, Early, json, json_error};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use toolhost_core::discovery::file_name;
use toolhost_core::executor::{
    AskGrant, CallContext, CallRequest, Confirm, DangerRequest, DecidedBy, Decision, GrantAnswer,
    GrantRequest,
};
use toolhost_core::registry::approvals::{Approvals, lock_entry};
use toolhost_core::registry::{LoadedPlugin, Registry};
use toolhost_core::view::ToolView;
use toolhost_spec::manifest::Manifest;

/// `GET /console/api/tools`: every tool as the executor presents and enforces it.
pub fn tools(c: &Console, caller: &super::auth::Caller) -> Value {
    let config = c.executor.config();
    let reg = c.executor.registry();
    let who = caller.context();
    let tools: Vec<Value> = reg
        .tools()
        .filter(|t| c.executor.may_list(&ToolView::new(t, config), &who))
        .map(|t| {
            let v = ToolView::new(t, config);
            let s = v.spec;
            let params: Vec<Value> = s
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    json!({
                        "name": p.name,
                        "schema": crate::openai::param_schema(s, i),
                        "json": s.is_json(i),
                        "optional": p.optional,
                        "rest": s.rest && i + 1 == s.params.len(),
                        "description": p.description,
                    })
                })
                .collect();
            json!({
                "name": s.name,
                "plugin": &*t.plugin.name,
                "version": t.plugin.manifest.version,
                "description": s.description,
                "signature": s.signature(),
                "category": s.category,
                "flags": v.flags(),
                "dangerous": v.dangerous,
                "readOnly": v.read_only,
                "app": v.app,
                "appOnly": v.app_only,
                "ownName": t.own_name(),
                "rest": s.rest,
                "params": params,
                "inputSchema": crate::openai::parameters(s),
                "outputSchema": s.output_schema,
                "dangerNotes": if v.dangerous { reg.shared_write_notes(&t.plugin, &config.workspace) } else { vec![] },
                "limits": {
                    "timeout_ms": v.limits.timeout_ms,
                    "memory_mb": v.limits.memory_mb,
                    "output_limit": v.limits.output_limit,
                    "write_mb": v.limits.write_mb,
                },
            })
        })
        .collect();
    json!({
        "generation": c.reloader.generation(),
        "danger": config.danger.to_string(),
        "readOnly": c.settings.read_only,
        "tools": tools,
    })
}

/// What a manifest requests, one line per item (`fs workspace:rw`, `net example.com`, …).
/// What a plugin is granted (request ∩ grant), one line per item; names only, never a value.
fn granted(p: &LoadedPlugin) -> Vec<String> {
    let net = &p.grants.net;
    let hosts: Vec<String> = net
        .granted
        .iter()
        .filter(|g| net.requested.iter().any(|r| toolhost_spec::host_pattern::overlaps(r, g)))
        .map(|h| format!("net {h}"))
        .collect();
    let private = (net.private && !hosts.is_empty()).then(|| "net private addresses".to_string());
    p.grants
        .fs
        .iter()
        .map(|f| format!("fs {}:{} → {}", f.name, f.mode, f.host_path.display()))
        .chain(p.grants.env.iter().map(|(k, _)| format!("env {k}")))
        .chain(hosts)
        .chain(private)
        .chain(net.secrets.iter().map(|s| format!("secret {}", s.name)))
        .chain(p.grants.exec.granted.iter().map(|g| format!("exec {}", g.grant.describe())))
        .chain(p.grants.kv.granted.iter().map(|b| format!("kv {b}")))
        .collect()
}

/// [`file_facts`] of each of `files`, read and hashed off the async workers (each may be as
/// large as `max_plugin_mb`).
async fn read_held(files: Vec<std::path::PathBuf>, max: u64) -> Vec<Option<(Vec<u8>, [u8; 32])>> {
    let n = files.len();
    tokio::task::spawn_blocking(move || files.iter().map(|f| file_facts(f, max)).collect())
        .await
        .unwrap_or_else(|_| vec![None; n])
}

/// A file's SHA-256 and size now (a held version's file is read again: it may have changed).
fn file_facts(path: &Path, max: u64) -> Option<(Vec<u8>, [u8; 32])> {
    let bytes = toolhost_core::discovery::read_capped(path, max).ok().flatten()?;
    let hash = toolhost_core::registry::content_hash(&bytes);
    Some((bytes, hash))
}

/// A plugin's key-value buckets with their keys and bytes (`[]`: no store yet), or what
/// keeps its store from opening.
async fn kv_buckets(c: &Console, plugin: &str) -> Value {
    let buckets = match c.executor.kv().existing(plugin) {
        Ok(None) => Ok(Vec::new()),
        Ok(Some(store)) => store.buckets().await,
        Err(e) => Err(e),
    };
    match buckets {
        Ok(b) => json!({ "buckets": b }),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// Whether the config, not the approvals file, decides about `plugin`.
fn pinned_in_config(c: &Console, plugin: &str) -> bool {
    let a = &c.executor.config().approvals;
    a.locked || a.plugins.contains_key(plugin)
}

/// `GET /console/api/plugins`: each plugin with its file, grants and signer; the versions held
/// for approval (with the config entry that would pin them); the files that failed to load.
pub async fn plugins(c: &Console) -> Value {
    let config = c.executor.config();
    let reg = c.executor.registry();
    let mut stores = std::collections::HashMap::new();
    for p in reg.plugins().iter().filter(|p| !p.grants.kv.granted.is_empty()) {
        stores.insert(p.name.clone(), kv_buckets(c, &p.name).await);
    }
    let plugins: Vec<Value> = reg
        .plugins()
        .iter()
        .map(|p| {
            let tools: Vec<&str> = p
                .manifest
                .tools
                .iter()
                .filter(|t| reg.get(&t.name).is_some_and(|e| Arc::ptr_eq(&e.plugin, p)))
                .map(|t| t.name.as_str())
                .collect();
            json!({
                "name": &*p.name,
                "version": p.manifest.version,
                "description": p.manifest.description,
                "file": p.file,
                "fileName": file_name(&p.file),
                "sha256": hex::encode(p.hash),
                "size": std::fs::metadata(&p.file).ok().map(|m| m.len()),
                "signer": p.signer.as_ref().map(|s| s.to_string()),
                "requested": p.manifest.capabilities.described(),
                "granted": granted(p),
                "missing": p.missing.iter().map(|m| json!({ "what": m.what, "grant": m.how })).collect::<Vec<_>>(),
                "warnings": reg.shared_write_notes(p, &config.workspace),
                "tools": tools,
                "kv": stores.get(&p.name),
            })
        })
        .collect();
    let held: Vec<std::path::PathBuf> = reg.pending().iter().map(|h| h.file.clone()).collect();
    let facts = read_held(held, config.max_plugin_bytes).await;
    let pending: Vec<Value> = reg
        .pending()
        .iter()
        .zip(facts)
        .map(|(held, facts)| {
            let manifest = facts.as_ref().and_then(|(b, _)| toolhost_spec::manifest::read(b).ok());
            let entry = match (&facts, &manifest) {
                (Some((_, hash)), Some(m)) => Some(lock_entry(m, &held.file, hash, false)),
                _ => None,
            };
            json!({
                "plugin": held.plugin,
                "version": held.version,
                "file": held.file,
                "fileName": file_name(&held.file),
                "sha256": facts.as_ref().map(|(_, h)| hex::encode(h)),
                "size": facts.as_ref().map(|(b, _)| b.len()),
                "extra": held.extra,
                "requested": manifest.as_ref().map(|m| m.capabilities.described()),
                "pinnedInConfig": pinned_in_config(c, &held.plugin),
                "entry": entry,
                "alsoServing": reg.plugins().iter().any(|p| p.file == held.file),
            })
        })
        .collect();
    let failures: Vec<Value> = reg
        .failures()
        .iter()
        .map(|f| json!({ "file": f.file, "fileName": file_name(&f.file), "reason": f.reason }))
        .collect();
    json!({
        "generation": c.reloader.generation(),
        "readOnly": c.settings.read_only,
        "approvals": {
            "locked": config.approvals.locked,
            "file": config.plugins_dir.join(toolhost_core::registry::approvals::FILE),
        },
        "plugins": plugins,
        "pending": pending,
        "failures": failures,
        "warnings": reg.warnings(),
    })
}

/// The console's answers for one call: to the danger question (the person confirmed in the
/// page, or not) and to at most one grant question (an answer the person gave on the card the
/// page showed for an earlier attempt of the same call).
struct PageConfirm {
    confirmed: bool,
    grant: Option<PageGrant>,
    /// Whether `grant` has answered a question of this call (it answers one).
    used: std::sync::atomic::AtomicBool,
    /// The grant question this call raised and the page must show as a card.
    pending: std::sync::Mutex<Option<Value>>,
}

/// `grant: {item, sha256, answer}` in a call's body: the answer to the card about `item` of the
/// plugin file `sha256`.
struct PageGrant {
    item: String,
    sha256: String,
    answer: GrantAnswer,
}

impl PageGrant {
    /// The body's `grant`, if any; errors name the field.
    fn parse(body: &Value) -> Result<Option<PageGrant>, String> {
        let Some(g) = body.get("grant").filter(|g| !g.is_null()) else { return Ok(None) };
        let field = |k: &str| g.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(item), Some(sha256), Some(answer)) = (field("item"), field("sha256"), field("answer"))
        else {
            return Err("`grant` must be {\"item\", \"sha256\", \"answer\"}, as the card sent it".into());
        };
        let answer = match answer.as_str() {
            "once" => GrantAnswer::Once,
            "always" => GrantAnswer::Always,
            "deny" => GrantAnswer::Deny,
            other => return Err(format!("grant.answer {other:?} is not `once`, `always` or `deny`")),
        };
        Ok(Some(PageGrant { item, sha256, answer }))
    }
}

/// A grant question in the console: answered by the person's answer on the card when it is
/// about exactly this item of exactly this plugin file (once per call); otherwise the call is
/// refused and the question goes back to the page as a card. The page never shows a question
/// the host did not raise, and a card's answer cannot answer another item or plugin version.
impl AskGrant for PageConfirm {
    fn ask<'a>(
        &'a self,
        req: &'a GrantRequest,
    ) -> Pin<Box<dyn std::future::Future<Output = GrantAnswer> + Send + 'a>> {
        Box::pin(async move {
            let item = req.item.to_string();
            let sha256 = hex::encode(req.plugin_hash);
            if let Some(g) = &self.grant
                && g.item == item
                && g.sha256 == sha256
                && !self.used.swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                return g.answer;
            }
            *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(json!({
                "plugin": req.plugin,
                "tool": req.tool,
                "item": item,
                "sha256": sha256,
                "question": req.sentence(),
            }));
            GrantAnswer::NoOne
        })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::Console
    }

    fn by_default(&self) -> bool {
        false
    }
}

impl Confirm for PageConfirm {
    fn confirm<'a>(
        &'a self,
        req: &'a DangerRequest,
    ) -> Pin<Box<dyn std::future::Future<Output = Decision> + Send + 'a>> {
        let confirmed = self.confirmed;
        Box::pin(async move {
            if confirmed {
                Decision::Allow
            } else {
                Decision::Deny(format!(
                    "tool `{}` is dangerous and was not confirmed in the console",
                    req.tool
                ))
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::FrontEnd
    }

    fn grants(&self) -> Option<&dyn AskGrant> {
        Some(self)
    }
}

/// `POST /console/api/call` `{tool, arguments: {name: value}, confirm, grant}`: one call through
/// the executor, as the front end `console`, answered with the outcome as the executor returned
/// it — and, when the call needs a grant its plugin requested and `[plugin.NAME] on_missing =
/// "ask"`, the question as `grantQuestion` `{plugin, tool, item, sha256, question}` for a card;
/// the page calls again with `grant: {item, sha256, answer: once|always|deny}`.
pub async fn call(
    c: &Console,
    caller: &super::auth::Caller,
    trace_parent: Option<toolhost_core::telemetry::TraceParent>,
    body: Value,
) -> Response<Body> {
    let Some(tool) = body.get("tool").and_then(Value::as_str).map(str::to_string) else {
        return json_error(StatusCode::BAD_REQUEST, "the request needs `tool`, the tool's name");
    };
    let confirmed = body.get("confirm").and_then(Value::as_bool).unwrap_or(false);
    let grant = match PageGrant::parse(&body) {
        Ok(g) => g,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e),
    };
    let empty = serde_json::Map::new();
    let arguments = match body.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => return json_error(StatusCode::BAD_REQUEST, "`arguments` must be a JSON object"),
    };
    let ctx = CallContext { trace_parent, ..caller.context() };
    let prepared = match c.executor.prepare(CallRequest::Named { name: &tool, args: arguments }, &ctx).await {
        Ok(p) => p,
        Err(outcome) => return json(StatusCode::OK, &json!({ "outcome": outcome })),
    };
    let missing = prepared.plugin().map(|p| p.missing.clone()).unwrap_or_default();
    let started = std::time::Instant::now();
    let page = PageConfirm { confirmed, grant, used: Default::default(), pending: Default::default() };
    let outcome = c.executor.run(&prepared, &page, &ctx, &Default::default()).await;
    let question = page.pending.lock().unwrap_or_else(|p| p.into_inner()).take();
    let took = started.elapsed();
    // A failure the host explained with a missing grant: the page shows the lines to paste.
    let explained = outcome.notes.iter().any(|n| matches!(n, toolhost_core::executor::Note::MissingGrant(_)));
    let grants: Vec<Value> = if explained {
        missing.iter().map(|m| json!({ "what": m.what, "grant": m.how })).collect()
    } else {
        Vec::new()
    };
    json(
        StatusCode::OK,
        &json!({
            "outcome": outcome,
            "structured": outcome.data.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()).filter(Value::is_object),
            "duration_ms": (took.as_secs_f64() * 1e6).round() / 1e3,
            "grants": grants,
            "grantQuestion": question,
        }),
    )
}

/// The held version `body` names (`plugin`, and the `sha256` the page showed), read again now:
/// its manifest, file and hash — or why the request cannot go on.
async fn held_version(
    c: &Console,
    reg: &Registry,
    body: &Value,
) -> Result<(Manifest, std::path::PathBuf, [u8; 32]), Early> {
    let plugin = body.get("plugin").and_then(Value::as_str).unwrap_or_default();
    let want = body.get("sha256").and_then(Value::as_str).unwrap_or_default();
    let Some(held) = reg.pending().iter().find(|p| p.plugin == plugin) else {
        return Err(Box::new(json_error(
            StatusCode::CONFLICT,
            &format!("plugin `{plugin}` has no version waiting for approval (reload the page)"),
        )));
    };
    let max = c.executor.config().max_plugin_bytes;
    let Some(Some((bytes, hash))) = read_held(vec![held.file.clone()], max).await.pop() else {
        return Err(Box::new(json_error(
            StatusCode::CONFLICT,
            &format!("cannot read {} any more (reload the page)", held.file.display()),
        )));
    };
    if hex::encode(hash) != want.trim_start_matches("sha256:") {
        return Err(Box::new(json_error(
            StatusCode::CONFLICT,
            &format!(
                "{} changed since the page showed it (now sha256:{}); reload the page and check it again",
                file_name(&held.file),
                hex::encode(hash)
            ),
        )));
    }
    let m = toolhost_spec::manifest::read(&bytes)
        .map_err(|e| json_error(StatusCode::CONFLICT, &format!("{}: {e}", file_name(&held.file))))?;
    if m.name != plugin {
        return Err(Box::new(json_error(
            StatusCode::CONFLICT,
            &format!("{} is now plugin `{}`, not `{plugin}`; reload the page", file_name(&held.file), m.name),
        )));
    }
    Ok((m, held.file.clone(), hash))
}

/// Rescan the folder now, off the async workers.
async fn rescan(c: &Console) -> Result<(), String> {
    let r = c.reloader.clone();
    match tokio::task::spawn_blocking(move || r.rescan()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("rescan failed: {e}")),
        Err(e) => Err(format!("rescan failed: {e}")),
    }
}

/// `POST /console/api/approve` `{plugin, sha256}`: what `toolhost approve PLUGIN` does, for the
/// exact file the page showed, then a rescan so it serves at once. Under `[approvals]` pins
/// nothing is written: the answer is the entry to paste into the config.
pub async fn approve(c: &Console, caller: &super::auth::Caller, body: Value) -> Response<Body> {
    let reg = c.executor.registry();
    let (m, file, hash) = match held_version(c, &reg, &body).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    if let Err(why) = c.executor.permit_approve(&m.name, &caller.context()) {
        return json_error(StatusCode::FORBIDDEN, &why);
    }
    drop(reg);
    let config = c.executor.config();
    if pinned_in_config(c, &m.name) {
        return json(
            StatusCode::CONFLICT,
            &json!({
                "error": format!(
                    "plugin `{}` is approved in [approvals] of the config, not in {}: paste this entry into {} and restart",
                    m.name,
                    toolhost_core::registry::approvals::FILE,
                    config.source.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "toolhost.toml".into())
                ),
                "entry": lock_entry(&m, &file, &hash, false),
            }),
        );
    }
    let mut approvals = Approvals::load(&config.plugins_dir);
    match &caller.context().principal {
        Some(who) => approvals.approve_by(&m, who),
        None => approvals.approve(&m),
    }
    if let Err(e) = approvals.save() {
        return json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!(
                "cannot write {}: {e}",
                config.plugins_dir.join(toolhost_core::registry::approvals::FILE).display()
            ),
        );
    }
    tracing::info!("console: approved plugin `{}` v{} ({})", m.name, m.version, file_name(&file));
    if let Err(e) = rescan(c).await {
        return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e);
    }
    let reg = c.executor.registry();
    let serving = reg.plugins().iter().find(|p| *p.name == *m.name).is_some_and(|p| p.hash == hash);
    json(StatusCode::OK, &json!({ "approved": m.name, "version": m.version, "serving": serving }))
}

/// Where a rejected file is moved: a dotfolder of the plugins folder, which discovery skips.
pub const REJECTED_DIR: &str = ".rejected";

/// `POST /console/api/reject` `{plugin, sha256}`: move the held file out of the plugins folder
/// (into `.rejected/`, named with its hash) and rescan, so it is no longer offered. Under
/// `[approvals]` pins the folder may be read-only: nothing is moved.
pub async fn reject(c: &Console, caller: &super::auth::Caller, body: Value) -> Response<Body> {
    let reg = c.executor.registry();
    let (m, file, hash) = match held_version(c, &reg, &body).await {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    if let Err(why) = c.executor.permit_approve(&m.name, &caller.context()) {
        return json_error(StatusCode::FORBIDDEN, &why);
    }
    drop(reg);
    if pinned_in_config(c, &m.name) {
        return json_error(
            StatusCode::CONFLICT,
            &format!(
                "plugin `{}` is decided by [approvals] in the config: remove or replace {} yourself",
                m.name,
                file.display()
            ),
        );
    }
    let dir = c.executor.config().plugins_dir.join(REJECTED_DIR);
    let to = dir.join(format!("{}.{}", file_name(&file), &hex::encode(hash)[..12]));
    let moved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::rename(&file, &to));
    if let Err(e) = moved {
        return json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot move {} to {}: {e}", file.display(), to.display()),
        );
    }
    tracing::info!(
        "console: rejected plugin `{}` v{}: moved {} to {}",
        m.name,
        m.version,
        file.display(),
        to.display()
    );
    if let Err(e) = rescan(c).await {
        return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e);
    }
    json(StatusCode::OK, &json!({ "rejected": m.name, "version": m.version, "movedTo": to }))
}

//! A call from its request to its outcome: the tool looked up, its arguments checked, the danger
//! policy applied, the sandbox run, grant questions asked and the notes of a failure added.

use super::notes::no_access_message;
use super::run::Watch;
use super::*;

impl Executor {
    /// The call itself (number `id`), noting in `rec` the plugin that served it and any danger
    /// decision (nothing to note without a record: nobody reads it).
    pub(super) async fn call_recorded(
        &self,
        call: &ToolCall,
        confirm: &dyn Confirm,
        ctx: &CallContext,
        id: u64,
        rec: Option<observer::SharedRecord>,
        control: &CallControl,
    ) -> Outcome {
        let note = |f: &dyn Fn(&mut CallRecord)| {
            if let Some(rec) = &rec {
                f(&mut rec.lock().unwrap_or_else(|p| p.into_inner()));
            }
        };
        // The snapshot is held for the whole call: a reload swaps the registry, and this call
        // finishes on the version it started with.
        let registry = self.registry.load_full();
        let entry = match registry.who_serves(&call.name) {
            Served::By(entry) => entry,
            // An ambiguous name never runs anything: the error names the plugins and the fix.
            Served::Ambiguous(conflict) => return Outcome::err(ErrorKind::UnknownTool, conflict.message()),
            Served::Nobody => {
                if let Some(search) = registry.search().filter(|_| call.name == crate::catalog::FIND_TOOLS) {
                    return self.find_tools(&registry, search, call);
                }
                return Outcome::err(ErrorKind::UnknownTool, unknown_tool_message(&registry, &call.name));
            }
        };
        let spec = entry.spec();
        let plugin = &entry.plugin;
        note(&|r| r.plugin = Some(plugin.clone()));
        let args = match check_args(spec, &call.args) {
            Ok(a) => a,
            Err(e) => return Outcome::err(ErrorKind::BadArguments, e),
        };
        if let Some(policy) = crate::view::call_policy(spec, plugin, &self.config) {
            let req = DangerRequest {
                tool: spec.name.clone(),
                plugin: plugin.name.to_string(),
                args: args.to_vec(),
                plugin_hash: plugin.hash,
                notes: registry.shared_write_notes(plugin, &self.config.workspace),
            };
            let decided = |decision, by| note(&|r| r.danger = Some(DangerRecord { decision, by }));
            let by_tool = self.config.tools.get(&spec.name).and_then(|t| t.policy).is_some();
            match policy {
                DangerPolicy::Allow => decided(DangerDecision::Allow, DecidedBy::Policy),
                DangerPolicy::Deny => {
                    decided(DangerDecision::Deny, DecidedBy::Policy);
                    let message = if by_tool {
                        format!(
                            "tool `{0}` is disabled by the operator ([tool.{0}] policy = \"deny\")",
                            spec.name
                        )
                    } else {
                        format!("tool `{}` is dangerous and the danger policy is `deny`", spec.name)
                    };
                    return Outcome::err(ErrorKind::Denied, message);
                }
                DangerPolicy::Ask => {
                    let decision = confirm.confirm(&req).await;
                    let by = confirm.decided_by();
                    if let Decision::Deny(why) = decision {
                        let decision =
                            if confirm.pending() { DangerDecision::Asked } else { DangerDecision::Deny };
                        decided(decision, by);
                        return Outcome::err(ErrorKind::Denied, why);
                    }
                    decided(DangerDecision::Allow, by);
                }
            }
        }
        let limits = self.config.limits_for_tool(&plugin.name, spec);
        let observer = self.observer.get().filter(|o| o.wants_progress());
        let watch =
            Watch { call, ctx, gone: control.gone.as_ref(), id, sink: control.progress.as_ref(), observer };
        let mut extra = self.session.allowed(&plugin.name);
        let (mut outcome, mut refused, mut outside) = self.run(entry, &args, limits, watch, &extra).await;
        let mut denied = Vec::new();
        for _ in 0..grant::MAX_QUESTIONS {
            if outcome.kind != Some(ErrorKind::ToolError) {
                break;
            }
            let Some((req, asker)) =
                self.grant_question(entry, confirm, &args, &refused, &outside, &mut denied)
            else {
                break;
            };
            let answer = asker.ask(&req).await;
            let record = GrantRecord { item: req.item.to_string(), answer, by: asker.decided_by() };
            tracing::info!(
                plugin = req.plugin,
                tool = req.tool,
                item = record.item,
                answer = answer.as_str(),
                by = record.by.as_str(),
                "grant question answered"
            );
            note(&|r| r.grants.push(record.clone()));
            match answer {
                GrantAnswer::Once => extra.push(req.item.clone()),
                GrantAnswer::Always | GrantAnswer::Never => {
                    let deny = answer == GrantAnswer::Never;
                    let g = crate::settings::AskedGrant {
                        plugin: plugin.name.to_string(),
                        item: req.item.clone(),
                        granted: crate::settings::grants::rfc3339(std::time::SystemTime::now()),
                        by: record.by.as_str().to_string(),
                        deny,
                        sha256: Some(hex::encode(plugin.hash)),
                    };
                    if let Err(e) = crate::settings::grants::add(&self.config.grants_file, g) {
                        tracing::warn!("{e}; the answer holds for this session only");
                    }
                    if deny {
                        self.session.deny(&plugin.name, &req.item);
                        denied.push(req.item);
                        break;
                    }
                    self.session.allow(&plugin.name, &req.item);
                    extra.push(req.item.clone());
                }
                GrantAnswer::Deny => {
                    self.session.deny(&plugin.name, &req.item);
                    denied.push(req.item);
                    break;
                }
                GrantAnswer::NoOne => break,
            }
            (outcome, refused, outside) = self.run(entry, &args, limits, watch, &extra).await;
        }
        if !denied.is_empty()
            && let Some(e) = outcome.error.as_mut()
        {
            let items: Vec<String> = denied.iter().map(ToString::to_string).collect();
            e.push_str(&format!(
                "\n[note: the operator denied plugin `{}` {} for this session]",
                plugin.name,
                items.join(", ")
            ));
        }
        if !outcome.success && !outside.is_empty() {
            // The failure is about a path the plugin has no access to: say so first.
            let mut o = outcome;
            let e = o.error.take().unwrap_or_default();
            let mut message = format!("{}\n{e}", no_access_message(plugin, &outside));
            let others: Vec<Missing> =
                plugin.missing.iter().filter(|m| !matches!(m.kind, MissingKind::Fs(_))).cloned().collect();
            if o.kind == Some(ErrorKind::ToolError)
                && let Some(note) = missing_grant_note(&plugin.name, &others, &refused)
            {
                message.push_str(&format!("\n[note: {note}]"));
            }
            o.error = Some(message);
            return o;
        }
        if outcome.kind == Some(ErrorKind::ToolError)
            && let Some(note) = missing_grant_note(&plugin.name, &plugin.missing, &refused)
        {
            let mut o = outcome;
            let e = o.error.take().unwrap_or_default();
            o.error = Some(format!("{e}\n[note: {note}]"));
            return o;
        }
        outcome
    }

}

pub(super) fn unknown_tool_message(registry: &Registry, name: &str) -> String {
    let close = registry.suggest(name);
    if !close.is_empty() {
        return format!("unknown tool `{name}`; did you mean: {}?", close.join(", "));
    }
    if registry.search().is_some() {
        return format!(
            "unknown tool `{name}`; search the catalog with {}(\"what you want to do\")",
            crate::catalog::FIND_TOOLS
        );
    }
    let all: Vec<&str> = registry.tools().map(ToolEntry::name).take(30).collect();
    if all.is_empty() {
        format!("unknown tool `{name}`; no tools are loaded")
    } else {
        format!("unknown tool `{name}`; available tools: {}", all.join(", "))
    }
}

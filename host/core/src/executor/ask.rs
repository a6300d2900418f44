//! Grant questions during a call (see `grant`): after a tool error the host can explain, the
//! next item to ask a human about, the answer applied (and an "always" or "never" kept in the
//! grants file), and the call run again with it.

use super::prepare::PreparedCall;
use super::run::{Ran, Watch};
use super::*;

impl Executor {
    /// Ask about what the failed run `ran` of `prepared` was refused, and run it again with
    /// each item granted (at most [`grant::MAX_QUESTIONS`] questions): the last run, and the
    /// items denied on the way (for the outcome's note).
    pub(super) async fn ask_and_run_again(
        &self,
        prepared: &PreparedCall<'_>,
        entry: &ToolEntry,
        confirm: &dyn Confirm,
        watch: Watch<'_>,
        note: &Noter<'_>,
        mut ran: Ran,
    ) -> (Ran, Vec<crate::settings::GrantItem>) {
        let plugin = &entry.plugin;
        let mut extra = self.session.allowed(&plugin.name);
        let mut denied = Vec::new();
        for _ in 0..grant::MAX_QUESTIONS {
            if ran.outcome.kind != Some(ErrorKind::ToolError) {
                break;
            }
            let Some((req, asker)) = self.grant_question(prepared, entry, confirm, &ran, &mut denied) else {
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
            if matches!(answer, GrantAnswer::Always | GrantAnswer::Never) {
                let who = watch.ctx.principal.as_deref().map(crate::identity::Principal::key);
                self.keep_answer(plugin, &req.item, answer, record.by, who);
            }
            match answer {
                GrantAnswer::Once => extra.push(req.item),
                GrantAnswer::Always => {
                    self.session.allow(&plugin.name, &req.item);
                    extra.push(req.item);
                }
                GrantAnswer::Deny | GrantAnswer::Never => {
                    self.session.deny(&plugin.name, &req.item);
                    denied.push(req.item);
                    break;
                }
                GrantAnswer::NoOne => break,
            }
            ran = self.run_sandbox(entry, &prepared.call.args, *prepared.limits(), watch, &extra).await;
        }
        (ran, denied)
    }

    /// An "always" or "never" answer, written to the grants file (beside the config) for the
    /// next sessions with who gave it (`who`: the caller's principal, who answered the
    /// question); a file that cannot be written leaves it to this session.
    fn keep_answer(
        &self,
        plugin: &LoadedPlugin,
        item: &crate::settings::GrantItem,
        answer: GrantAnswer,
        by: DecidedBy,
        who: Option<String>,
    ) {
        let g = crate::settings::AskedGrant {
            plugin: plugin.name.to_string(),
            item: item.clone(),
            granted: crate::settings::grants::rfc3339(std::time::SystemTime::now()),
            by: by.as_str().to_string(),
            who,
            deny: answer == GrantAnswer::Never,
            sha256: Some(hex::encode(plugin.hash)),
        };
        if let Err(e) = crate::settings::grants::add(&self.config.grants_file, g) {
            tracing::warn!("{e}; the answer holds for this session only");
        }
    }

    /// The next grant question about the failed run `ran` of `entry`, and who asks it: none
    /// when the prepared call may ask no one about grants (its plugin's `on_missing`), no asker
    /// is attached, or every askable item was denied (this session, or in `denied` for this
    /// call).
    fn grant_question<'a>(
        &'a self,
        prepared: &PreparedCall<'_>,
        entry: &ToolEntry,
        confirm: &'a dyn Confirm,
        ran: &Ran,
        denied: &mut Vec<crate::settings::GrantItem>,
    ) -> Option<(GrantRequest, &'a dyn AskGrant)> {
        let (plugin, args, refused, outside) =
            (&entry.plugin, &prepared.call.args, &ran.refused, &ran.outside);
        let asker: &dyn AskGrant = match confirm.grants() {
            Some(a) => a,
            None => &**self.asker.get()?,
        };
        if !prepared.may_ask_grants(asker.by_default()) || !prepared.answerable() {
            return None;
        }
        let this_version =
            self.config.plugin(&plugin.name).asked_grants == Some(crate::settings::AskedGrants::ThisVersion);
        let here = hex::encode(plugin.hash);
        let secrets = &plugin.manifest.capabilities.secrets;
        let defined = |name: &str| self.config.secrets.contains_key(name);
        let exec = &plugin.grants.exec;
        let program_granted = |name: &str| exec.granted.iter().any(|g| g.grant.name == name);
        let programs = grant::askable_programs(
            &exec.requested,
            &program_granted,
            &crate::capability::process::resolve_in_path,
            refused,
        );
        let workspace = grant::askable_workspace(
            &plugin.manifest.capabilities.fs,
            &plugin.grants.fs,
            &self.config.workspace,
            outside,
            self.config.workspace_writable(),
        );
        let buckets = grant::askable_buckets(&plugin.grants.kv.requested, refused);
        let items = grant::askable(&plugin.grants.net.requested, secrets, &defined, refused)
            .into_iter()
            .chain(programs)
            .chain(buckets)
            .chain(workspace);
        for item in items {
            let never = self.config.asked_for(&plugin.name).any(|g| {
                g.deny && g.item == item && (!this_version || g.sha256.as_deref() == Some(here.as_str()))
            });
            if never || self.session.denied(&plugin.name, &item) {
                if !denied.contains(&item) {
                    denied.push(item);
                }
                continue;
            }
            let req = GrantRequest {
                plugin: plugin.name.to_string(),
                tool: entry.spec().name.clone(),
                args: args.to_vec(),
                item,
                plugin_hash: plugin.hash,
            };
            return Some((req, asker));
        }
        None
    }
}

//! Grant questions during a call (see `grant`): the next item to ask a human about.

use super::*;

impl Executor {
    /// The next grant question about a failed call of `entry` that the host refused `refused`
    /// for, and who asks it: none when the plugin's `on_missing` is `refuse`, no asker is
    /// attached, or every askable item was denied (this session, or in `denied` for this call).
    pub(super) fn grant_question<'a>(
        &'a self,
        entry: &ToolEntry,
        confirm: &'a dyn Confirm,
        args: &[String],
        refused: &[Refusal],
        outside: &[String],
        denied: &mut Vec<crate::settings::GrantItem>,
    ) -> Option<(GrantRequest, &'a dyn AskGrant)> {
        let plugin = &entry.plugin;
        let asker: &dyn AskGrant = match confirm.grants() {
            Some(a) => a,
            None => &**self.asker.get()?,
        };
        match self.config.plugin(&plugin.name).on_missing {
            Some(crate::settings::OnMissing::Refuse) => return None,
            None if !asker.by_default() => return None,
            _ => {}
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
        let items = grant::askable(&plugin.grants.net.requested, secrets, &defined, refused)
            .into_iter()
            .chain(programs)
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

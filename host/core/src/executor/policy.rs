//! The danger policy of a prepared call, applied: run, refuse, or ask the front end's
//! [`Confirm`] (which may answer later: a 2026-07-28 client's retry).

use super::prepare::PreparedCall;
use super::*;

impl Executor {
    /// `None` when `prepared` may run under its policy, else its refusal; the decision and who
    /// made it go into the call's record through `note`.
    pub(super) async fn apply_policy(
        &self,
        prepared: &PreparedCall<'_>,
        entry: &ToolEntry,
        confirm: &dyn Confirm,
        note: &Noter<'_>,
    ) -> Option<Outcome> {
        let policy = prepared.policy()?;
        let decided = |decision, by| note(&|r| r.danger = Some(DangerRecord { decision, by }));
        let name = prepared.name();
        match policy {
            DangerPolicy::Allow => {
                decided(DangerDecision::Allow, DecidedBy::Policy);
                None
            }
            DangerPolicy::Deny => {
                decided(DangerDecision::Deny, DecidedBy::Policy);
                let message = if prepared.policy_by_tool() {
                    format!("tool `{name}` is disabled by the operator ([tool.{name}] policy = \"deny\")")
                } else {
                    format!("tool `{name}` is dangerous and the danger policy is `deny`")
                };
                Some(Outcome::err(ErrorKind::Denied, message))
            }
            DangerPolicy::Ask => {
                let plugin = &entry.plugin;
                let req = DangerRequest {
                    tool: name.to_string(),
                    plugin: plugin.name.to_string(),
                    args: prepared.call.args.clone(),
                    plugin_hash: plugin.hash,
                    notes: prepared.registry.shared_write_notes(plugin, &self.config.workspace),
                };
                // The operator's policy may not let this caller answer: no one is asked.
                let confirm: &dyn Confirm = if prepared.answerable() { confirm } else { &NotThisCaller };
                let decision = confirm.confirm(&req).await;
                let by = confirm.decided_by();
                if let Decision::Deny(why) = decision {
                    let decision =
                        if confirm.pending() { DangerDecision::Asked } else { DangerDecision::Deny };
                    decided(decision, by);
                    return Some(Outcome::err(ErrorKind::Denied, why));
                }
                decided(DangerDecision::Allow, by);
                None
            }
        }
    }
}

/// A caller the operator's policy does not let answer questions (`answer`): a confirmation is
/// refused as when no one can be asked.
pub(super) struct NotThisCaller;

impl Confirm for NotThisCaller {
    fn confirm<'a>(
        &'a self,
        req: &'a DangerRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            Decision::Deny(format!(
                "tool `{}` is dangerous and needs confirmation, which the operator's policy does not let this caller give",
                req.tool
            ))
        })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }
}

//! A prepared call from its policy to its outcome: the danger policy applied, the sandbox run,
//! grant questions asked (`ask`), and the notes of a failure added (`notes`).

use super::prepare::{PreparedCall, Target};
use super::run::Watch;
use super::*;

impl Executor {
    /// The prepared call (number `id`), noting in `rec` any danger decision and grant answer
    /// (nothing to note without a record: nobody reads it).
    pub(super) async fn call_recorded(
        &self,
        prepared: &PreparedCall<'_>,
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
        let entry = match &prepared.target {
            Target::Tool(entry) => entry,
            Target::FindTools => return self.find_tools(&prepared.registry, &prepared.call),
            Target::Script => {
                let approved = match self.confirm_declared(prepared, confirm, &note).await {
                    Ok(approved) => approved,
                    Err(refused) => return refused,
                };
                return self.run_script(prepared, confirm, ctx, id, control, approved).await;
            }
        };
        if let Some(refused) = self.apply_policy(prepared, entry, confirm, &note).await {
            return refused;
        }
        let observer = self.observer.get().filter(|o| o.wants_progress());
        let call = &*prepared.call;
        let watch =
            Watch { call, ctx, gone: control.gone.as_ref(), id, sink: control.progress.as_ref(), observer };
        let extra = self.session.allowed(&entry.plugin.name);
        let ran = self.run_sandbox(entry, &call.args, *prepared.limits(), watch, &extra).await;
        let (ran, denied) = self.ask_and_run_again(prepared, entry, confirm, watch, &note, ran).await;
        notes::explained(&entry.plugin, ran, &denied)
    }
}

//! The operator's policy (`[policy] file`, see [`crate::policy`]) applied once per request: to a
//! prepared call (`call`, and whether its caller may be asked about it: `answer`), a resource
//! read or prompt (`read`), each tool of a listing (`list`) and a plugin's approval (`approve`);
//! and the caller's rate limits. A refusal's text names what was refused and not the rule; the
//! rule that decided goes to the operator's log.

use super::{CallContext, PreparedCall};
use crate::policy::{Action, Decision, Request, Resource};
use crate::rate::Limited;
use crate::view::ToolView;

impl super::Executor {
    /// The policy's decision about `action` on `resource` by `ctx`'s caller (`None`: no policy,
    /// everything is allowed).
    fn policy_decision(
        &self,
        action: Action,
        resource: Resource<'_>,
        args: serde_json::Value,
        ctx: &CallContext,
    ) -> Option<Decision> {
        let policy = self.config.policies.current()?;
        let front_end = ctx.front_end.unwrap_or("embedded");
        Some(policy.decide(&Request {
            action,
            principal: ctx.principal.as_deref(),
            front_end,
            resource,
            args,
        }))
    }

    /// `Ok` when allowed; else the refusal `what` says, the rule logged.
    fn allowed(&self, decision: Option<Decision>, ctx: &CallContext, what: &str) -> Result<(), String> {
        match decision {
            None => Ok(()),
            Some(d) if d.allowed() => Ok(()),
            Some(d) => {
                let who = who(ctx);
                tracing::info!(rule = d.rule(), "refused by the policy for {who}: {what}");
                Err(format!("{what} may not be done by {who}: the operator's policy does not allow it"))
            }
        }
    }

    /// Whether the policy lets `ctx`'s caller call `prepared` (always, without a policy; the
    /// host's own `find_tools` is always callable: it only lists what may be listed): the
    /// refusal's text otherwise (its kind is `forbidden`).
    pub(super) fn permit_call(&self, prepared: &PreparedCall<'_>, ctx: &CallContext) -> Result<(), String> {
        let super::prepare::Target::Tool(entry) = &prepared.target else { return Ok(()) };
        if self.config.policies.current().is_none() {
            return Ok(());
        }
        let view = ToolView::new(entry, &self.config);
        let args: serde_json::Map<String, serde_json::Value> = (entry.spec().params.iter())
            .zip(&prepared.call.args)
            .map(|(p, a)| (p.name.clone(), serde_json::Value::String(a.clone())))
            .collect();
        let decision = self.policy_decision(Action::Call, tool(&view), serde_json::Value::Object(args), ctx);
        self.allowed(decision, ctx, &format!("calling `{}`", view.name()))
    }

    /// Whether the policy lets `ctx`'s caller answer a danger confirmation or a grant question
    /// about `prepared` (the `answer` action).
    pub(super) fn permit_answer(&self, prepared: &PreparedCall<'_>, ctx: &CallContext) -> bool {
        let super::prepare::Target::Tool(entry) = &prepared.target else { return true };
        let view = ToolView::new(entry, &self.config);
        self.policy_decision(Action::Answer, tool(&view), serde_json::Value::Null, ctx)
            .is_none_or(|d| d.allowed())
    }

    /// Whether `ctx`'s caller is within its `[rate_limits]` for a call of `prepared` (a caller
    /// with no identity, or the local user, always is): the limit it is over otherwise.
    pub(super) async fn within_rate(
        &self,
        prepared: &PreparedCall<'_>,
        ctx: &CallContext,
    ) -> Result<(), Limited> {
        let Some(who) = ctx.principal.as_ref().filter(|p| !self.rate.is_off() && !p.is_local()) else {
            return Ok(());
        };
        self.rate.check(&who.key(), prepared.name()).await.inspect_err(|l| {
            tracing::info!(
                tool = prepared.name(),
                limit = l.key,
                "call refused: {who} is over its rate limit"
            );
        })
    }

    /// What `ctx`'s caller is offered: the catalog's listing ([`crate::view::listing`]: every
    /// exposed tool, or in search mode `find_tools` and the pinned ones) without the tools the
    /// policy does not let it list. The `[TOOL]` prompt and OpenAI's `tools` are built from it.
    pub fn listing<'r>(
        &self,
        registry: &'r crate::registry::Registry,
        ctx: &CallContext,
    ) -> Vec<ToolView<'r>> {
        let mut views = crate::view::listing(registry, self.config());
        views.retain(|v| self.may_list(v, ctx));
        views
    }

    /// Whether the policy lets `ctx`'s caller see `view` in a list.
    pub fn may_list(&self, view: &ToolView<'_>, ctx: &CallContext) -> bool {
        self.policy_decision(Action::List, tool(view), serde_json::Value::Null, ctx)
            .is_none_or(|d| d.allowed())
    }

    /// Whether the policy lets `ctx`'s caller read `uri` (or get a prompt) of `plugin`: the
    /// refusal's text otherwise.
    pub(super) fn permit_read(&self, uri: &str, plugin: &str, ctx: &CallContext) -> Result<(), String> {
        let decision =
            self.policy_decision(Action::Read, Resource::Uri { uri, plugin }, serde_json::Value::Null, ctx);
        self.allowed(decision, ctx, &format!("reading `{uri}`"))
    }

    /// Whether the policy lets `ctx`'s caller approve or reject a held version of `plugin`:
    /// the refusal's text otherwise.
    pub fn permit_approve(&self, plugin: &str, ctx: &CallContext) -> Result<(), String> {
        let decision =
            self.policy_decision(Action::Approve, Resource::Plugin { plugin }, serde_json::Value::Null, ctx);
        self.allowed(decision, ctx, &format!("approving or rejecting plugin `{plugin}`"))
    }
}

fn tool<'a>(view: &'a ToolView<'a>) -> Resource<'a> {
    Resource::Tool {
        name: view.name(),
        plugin: view.plugin,
        danger: view.dangerous,
        read_only: view.advertise_read_only(),
    }
}

/// The caller as the refusal names it.
fn who(ctx: &CallContext) -> String {
    match &ctx.principal {
        Some(p) => p.to_string(),
        None => "this caller".to_string(),
    }
}

//! The operator's policy (`[policy] file`, see [`crate::policy`]) applied once per request: to a
//! prepared call (`call`), a resource read or prompt (`read`), and each tool of a listing
//! (`list`). A refusal is an outcome of kind `forbidden` whose text names the tool and not the
//! rule; the rule that decided goes to the operator's log.

use super::{CallContext, PreparedCall};
use crate::policy::{Action, Request, Resource};
use crate::rate::Limited;
use crate::view::ToolView;

impl super::Executor {
    /// Whether the policy lets `ctx`'s caller call `prepared` (always, without a policy; the
    /// host's own `find_tools` is always callable: it only lists what may be listed): the
    /// refusal's text otherwise (its kind is `forbidden`).
    pub(super) fn permit_call(&self, prepared: &PreparedCall<'_>, ctx: &CallContext) -> Result<(), String> {
        let Some(policy) = self.config.policies.current() else { return Ok(()) };
        let super::prepare::Target::Tool(entry) = &prepared.target else { return Ok(()) };
        let view = ToolView::new(entry, &self.config);
        let spec = entry.spec();
        let args: serde_json::Map<String, serde_json::Value> = spec
            .params
            .iter()
            .zip(&prepared.call.args)
            .map(|(p, a)| (p.name.clone(), serde_json::Value::String(a.clone())))
            .collect();
        let request = Request {
            action: Action::Call,
            principal: ctx.principal.as_deref(),
            front_end: ctx.front_end.unwrap_or("embedded"),
            resource: tool(&view),
            args: serde_json::Value::Object(args),
        };
        let decision = policy.decide(&request);
        if decision.allowed() {
            return Ok(());
        }
        let who = who(ctx);
        tracing::info!(tool = view.name(), rule = decision.rule(), "call refused by the policy for {who}");
        Err(format!("`{}` may not be called by {who}: the operator's policy does not allow it", view.name()))
    }

    /// Whether `ctx`'s caller is within its `[rate_limits]` for a call of `prepared` (a caller
    /// with no identity always is): the limit it is over otherwise.
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

    /// Whether the policy lets `ctx`'s caller answer a danger confirmation or a grant question
    /// about `prepared` (the `answer` action).
    pub(super) fn permit_answer(&self, prepared: &PreparedCall<'_>, ctx: &CallContext) -> bool {
        let Some(policy) = self.config.policies.current() else { return true };
        let super::prepare::Target::Tool(entry) = &prepared.target else { return true };
        let view = ToolView::new(entry, &self.config);
        let request = Request {
            action: Action::Answer,
            principal: ctx.principal.as_deref(),
            front_end: ctx.front_end.unwrap_or("embedded"),
            resource: tool(&view),
            args: serde_json::Value::Null,
        };
        policy.decide(&request).allowed()
    }

    /// Whether the policy lets `ctx`'s caller see `view` in a list.
    pub fn may_list(&self, view: &ToolView<'_>, ctx: &CallContext) -> bool {
        let Some(policy) = self.config.policies.current() else { return true };
        let request = Request {
            action: Action::List,
            principal: ctx.principal.as_deref(),
            front_end: ctx.front_end.unwrap_or("embedded"),
            resource: tool(view),
            args: serde_json::Value::Null,
        };
        policy.decide(&request).allowed()
    }

    /// Whether the policy lets `ctx`'s caller read `uri` (or get a prompt) of `plugin`: the
    /// refusal's text otherwise.
    pub(super) fn permit_read(&self, uri: &str, plugin: &str, ctx: &CallContext) -> Result<(), String> {
        let Some(policy) = self.config.policies.current() else { return Ok(()) };
        let request = Request {
            action: Action::Read,
            principal: ctx.principal.as_deref(),
            front_end: ctx.front_end.unwrap_or("embedded"),
            resource: Resource::Uri { uri, plugin },
            args: serde_json::Value::Null,
        };
        let decision = policy.decide(&request);
        if decision.allowed() {
            return Ok(());
        }
        let who = who(ctx);
        tracing::info!(uri, rule = decision.rule(), "read refused by the policy for {who}");
        Err(format!("`{uri}` may not be read by {who}: the operator's policy does not allow it"))
    }
}

impl super::Executor {
    /// Whether the policy lets `ctx`'s caller approve or reject a held version of `plugin`:
    /// the refusal's text otherwise.
    pub fn permit_approve(&self, plugin: &str, ctx: &CallContext) -> Result<(), String> {
        let Some(policy) = self.config.policies.current() else { return Ok(()) };
        let request = Request {
            action: Action::Approve,
            principal: ctx.principal.as_deref(),
            front_end: ctx.front_end.unwrap_or("embedded"),
            resource: Resource::Plugin { plugin },
            args: serde_json::Value::Null,
        };
        let decision = policy.decide(&request);
        if decision.allowed() {
            return Ok(());
        }
        let who = who(ctx);
        tracing::info!(plugin, rule = decision.rule(), "approval refused by the policy for {who}");
        Err(format!(
            "plugin `{plugin}` may not be approved or rejected by {who}: the operator's policy does not allow it"
        ))
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

//! Who is asked about a call, and how: the person behind a handshake-era client (an
//! `elicitation/create` request: [`ElicitConfirm`]), nobody inside a task ([`TaskConfirm`]) or on
//! the front door's direct path ([`NoOneToAsk`]); the 2026-07-28 round trip is `approval.rs`.

use super::*;

/// Inside a task nobody can answer a question: a dangerous call under `ask` is refused.
pub(super) struct TaskConfirm;

impl Confirm for TaskConfirm {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            refuse(
                req,
                "it runs as a task, where nobody can be asked; the tool's manifest requires tasks".into(),
            )
        })
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }
}

/// Asks the person behind a handshake-era MCP client (an `elicitation/create` request) whether
/// a dangerous call may run.
pub(super) struct ElicitConfirm {
    pub(super) peer: Peer<RoleServer>,
}

impl Confirm for ElicitConfirm {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
                return refuse(
                    req,
                    "this MCP client cannot be asked: it does not support elicitation".into(),
                );
            }
            let (message, schema) = match question(req) {
                Ok(q) => q,
                Err(e) => return refuse(req, e),
            };
            let params =
                ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
            match self.peer.create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT)).await {
                Ok(r) => decide(req, r.action, r.content.as_ref()),
                Err(e) => refuse(req, format!("asking the client failed: {e}")),
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        if self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            DecidedBy::Elicitation
        } else {
            DecidedBy::NoOne
        }
    }

    fn grants(&self) -> Option<&dyn toolhost_core::executor::AskGrant> {
        Some(self)
    }
}

/// A call answered without its session (see `direct.rs`) is one that asks nothing:
/// [`McpServer::direct_call`] leaves calls that could ask to rmcp. Were one to ask anyway, it
/// is refused, never allowed, and no grant question goes to the operator's terminal instead.
pub(super) struct NoOneToAsk;

impl Confirm for NoOneToAsk {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        toolhost_core::executor::NoConfirm.confirm(req)
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }

    fn grants(&self) -> Option<&dyn toolhost_core::executor::AskGrant> {
        Some(self)
    }
}

impl toolhost_core::executor::AskGrant for NoOneToAsk {
    fn ask<'a>(
        &'a self,
        _req: &'a toolhost_core::executor::GrantRequest,
    ) -> Pin<Box<dyn Future<Output = toolhost_core::executor::GrantAnswer> + Send + 'a>> {
        Box::pin(std::future::ready(toolhost_core::executor::GrantAnswer::NoOne))
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::NoOne
    }

    fn by_default(&self) -> bool {
        false
    }
}

/// A grant question (see `toolhost_core::executor::grant`) as an elicitation form, for a
/// plugin whose `on_missing` is `ask`: `allow` (required) and `always`; a client without
/// elicitation is not asked, and the call fails with its note.
impl toolhost_core::executor::AskGrant for ElicitConfirm {
    fn ask<'a>(
        &'a self,
        req: &'a toolhost_core::executor::GrantRequest,
    ) -> Pin<Box<dyn Future<Output = toolhost_core::executor::GrantAnswer> + Send + 'a>> {
        use toolhost_core::executor::GrantAnswer;
        Box::pin(async move {
            if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
                return GrantAnswer::NoOne;
            }
            let Ok((message, schema)) = grant_question(req) else {
                return GrantAnswer::NoOne;
            };
            let params =
                ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
            match self.peer.create_elicitation_with_timeout(params, Some(ELICITATION_TIMEOUT)).await {
                Ok(r) => grant_answer(r.action, r.content.as_ref()),
                Err(_) => GrantAnswer::NoOne,
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        Confirm::decided_by(self)
    }

    fn by_default(&self) -> bool {
        false
    }
}

/// Whether the client declared form elicitation (an empty `elicitation: {}` means form).
pub(super) fn supports_form(caps: Option<&ClientCapabilities>) -> bool {
    caps.and_then(|c| c.elicitation.as_ref()).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The question shown to the user about a dangerous call, and the form's schema.
pub(super) fn question(req: &DangerRequest) -> Result<(String, ElicitationSchema), String> {
    let schema = ElicitationSchema::builder()
        .required_bool("approve")
        .build()
        .map_err(|e| format!("cannot build the question: {e}"))?;
    let shown: Vec<String> =
        req.args.iter().map(|a| format!("{:?}", a.chars().take(200).collect::<String>())).collect();
    let message = format!(
        "Allow the dangerous tool `{}` (plugin `{}`) to run with arguments ({})?{} Set approve to true to allow.",
        req.tool,
        req.plugin,
        shown.join(", "),
        req.notes.iter().map(|n| format!(" Note: {n}.")).collect::<String>()
    );
    Ok((message, schema))
}

/// The grant question shown to the user (a form with `allow`, required, and `always`).
pub(super) fn grant_question(
    req: &toolhost_core::executor::GrantRequest,
) -> Result<(String, ElicitationSchema), String> {
    let schema = ElicitationSchema::builder()
        .required_bool("allow")
        .optional_bool("always", false)
        .build()
        .map_err(|e| format!("cannot build the question: {e}"))?;
    let shown: Vec<String> =
        req.args.iter().map(|a| format!("{:?}", a.chars().take(200).collect::<String>())).collect();
    let message = format!(
        "{} — tool `{}` (plugin `{}`) with arguments ({}). The plugin requests it and it is not granted. \
         Set allow to true to allow it for this call; also set always to true to grant it from now on.",
        req.sentence(),
        req.tool,
        req.plugin,
        shown.join(", ")
    );
    Ok((message, schema))
}

/// The user's answer to a grant question: `accept` with `allow: true` grants (with
/// `always: true`, from now on); anything else refuses.
pub(super) fn grant_answer(
    action: ElicitationAction,
    content: Option<&serde_json::Value>,
) -> toolhost_core::executor::GrantAnswer {
    use toolhost_core::executor::GrantAnswer;
    if action != ElicitationAction::Accept {
        return GrantAnswer::Deny;
    }
    let get = |k: &str| content.and_then(|c| c.get(k)).and_then(|v| v.as_bool());
    match (get("allow"), get("always")) {
        (Some(true), Some(true)) => GrantAnswer::Always,
        (Some(true), _) => GrantAnswer::Once,
        _ => GrantAnswer::Deny,
    }
}

/// The refusal of a dangerous call, with what the operator can do about it.
pub(super) fn refuse(req: &DangerRequest, why: String) -> Decision {
    Decision::Deny(format!(
        "tool `{}` is dangerous and was not confirmed ({why}); the operator can allow it with \
         `[danger] policy = \"allow\"` in toolhost.toml or `--danger allow`",
        req.tool
    ))
}

/// The user's answer to the question: only `accept` with `approve: true` allows.
pub(super) fn decide(
    req: &DangerRequest,
    action: ElicitationAction,
    content: Option<&serde_json::Value>,
) -> Decision {
    if action != ElicitationAction::Accept {
        return refuse(req, format!("the user answered {action:?}").to_lowercase());
    }
    let approved = content.and_then(|c| c.get("approve")).and_then(|v| v.as_bool()).unwrap_or(false);
    if approved { Decision::Allow } else { refuse(req, "the user did not approve".into()) }
}

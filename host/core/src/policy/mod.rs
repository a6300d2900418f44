//! Who may do what: the operator's rules (`[policy] file`). Each rule has an id, an effect
//! (`allow` or `deny`), the actions it is about (`list`, `call`, `read`, `answer`, `approve`) and
//! a condition in CEL
//! (Common Expression Language, the language of Kubernetes admission policies) over the request:
//!
//! - `principal`: `sub`, `iss`, `client_id`, `scopes`, `groups`, `via` (`token`, `oauth`,
//!   `local` for the operator's own process: stdio, the CLI; or `none` when the caller proved
//!   nothing: a tokenless HTTP server);
//! - `resource`: a tool's `name`, `plugin`, `danger`, `read_only`; a read's `uri` and `plugin`;
//! - `context`: `front_end`, and for a call its `args` (by parameter name).
//!
//! A request is allowed when some rule about its action allows it and none denies it (deny
//! overrides allow); with no rule allowing it, it is denied. A condition that cannot be
//! evaluated (an unknown field, a type error) counts as true for a deny rule and false for an
//! allow rule: an error never opens anything. Without a policy file everything is allowed,
//! as before policies existed.
//!
//! The executor decides every call and read from here, once, and the front ends filter their
//! lists through [`Policy::decide`] with [`Action::List`]. The policy is reloaded when its file
//! changes; a file with an error keeps the last good policy ([`watch`]).

mod file;
pub mod watch;

pub use file::{MAX_RULES, PolicyError};

use crate::identity::Principal;
use cel::{Context, Env, Program, Value};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a request asks to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// See a tool in a list (`tools/list`, the console, the `[TOOL]` prompt).
    List,
    /// Call a tool.
    Call,
    /// Read a resource (or get a prompt).
    Read,
    /// Be asked, and answer, a danger confirmation or a grant question about a tool's call.
    Answer,
    /// Approve or reject a held plugin version (the console).
    Approve,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::List => "list",
            Action::Call => "call",
            Action::Read => "read",
            Action::Answer => "answer",
            Action::Approve => "approve",
        }
    }
}

/// What a rule does when its condition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Allow,
    Deny,
}

/// One rule, its condition compiled.
struct Rule {
    id: Arc<str>,
    effect: Effect,
    actions: Vec<Action>,
    when: Option<Program>,
}

/// What a request is about.
#[derive(Debug, Clone)]
pub enum Resource<'a> {
    Tool {
        name: &'a str,
        plugin: &'a str,
        danger: bool,
        read_only: bool,
    },
    Uri {
        uri: &'a str,
        plugin: &'a str,
    },
    /// A plugin as a whole (`approve`).
    Plugin {
        plugin: &'a str,
    },
}

/// A request to decide.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub action: Action,
    pub principal: Option<&'a Principal>,
    pub front_end: &'a str,
    pub resource: Resource<'a>,
    /// A call's arguments by parameter name (`null` for other actions).
    pub args: serde_json::Value,
}

/// The answer, and the rule that gave it (`None`: no rule allowed the request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow { rule: Arc<str> },
    Deny { rule: Option<Arc<str>> },
}

impl Decision {
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }

    /// Which rule decided, for the operator's log (never the client's answer).
    pub fn rule(&self) -> &str {
        match self {
            Decision::Allow { rule } | Decision::Deny { rule: Some(rule) } => rule,
            Decision::Deny { rule: None } => "(no rule allows it)",
        }
    }
}

/// The operator's rules, read from one file.
pub struct Policy {
    file: PathBuf,
    env: Arc<Env>,
    rules: Vec<Rule>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy").field("file", &self.file).field("rules", &self.rules.len()).finish()
    }
}

impl Policy {
    /// The policy in `file`.
    pub fn load(file: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| PolicyError::Read { file: file.to_path_buf(), why: e.to_string() })?;
        Policy::parse(&text, file)
    }

    /// The policy `text` holds, as if read from `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Policy, PolicyError> {
        let env = Arc::new(Env::stdlib());
        let rules = file::parse(text, file, &env)?;
        Ok(Policy { file: file.to_path_buf(), env, rules })
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// How many rules it holds.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `request` is allowed, and by which rule.
    pub fn decide(&self, request: &Request<'_>) -> Decision {
        let mut about = self.rules.iter().filter(|r| r.actions.contains(&request.action)).peekable();
        if about.peek().is_none() {
            return Decision::Deny { rule: None };
        }
        let Some(ctx) = self.context(request) else { return Decision::Deny { rule: None } };
        let mut allowed: Option<&Arc<str>> = None;
        for rule in about {
            let holds = match &rule.when {
                None => Some(true),
                Some(p) => match p.execute(&ctx) {
                    Ok(Value::Bool(b)) => Some(b),
                    _ => None,
                },
            };
            match (rule.effect, holds) {
                (Effect::Deny, Some(true) | None) => return Decision::Deny { rule: Some(rule.id.clone()) },
                (Effect::Allow, Some(true)) => {
                    allowed.get_or_insert(&rule.id);
                }
                _ => {}
            }
        }
        match allowed {
            Some(rule) => Decision::Allow { rule: rule.clone() },
            None => Decision::Deny { rule: None },
        }
    }

    /// The CEL variables of `request`.
    fn context(&self, request: &Request<'_>) -> Option<Context<'_, '_>> {
        let principal = match request.principal {
            Some(p) => json!({
                "sub": p.subject, "iss": p.issuer.as_deref().unwrap_or(""),
                "client_id": p.client_id.as_deref().unwrap_or(""),
                "scopes": p.scopes, "groups": p.groups, "via": p.via,
            }),
            None => json!({"sub": "", "iss": "", "client_id": "", "scopes": [], "groups": [], "via": "none"}),
        };
        let resource = match &request.resource {
            Resource::Tool { name, plugin, danger, read_only } => {
                json!({"name": name, "plugin": plugin, "danger": danger, "read_only": read_only, "uri": ""})
            }
            Resource::Uri { uri, plugin } => {
                json!({"name": "", "plugin": plugin, "danger": false, "read_only": true, "uri": uri})
            }
            Resource::Plugin { plugin } => {
                json!({"name": "", "plugin": plugin, "danger": false, "read_only": false, "uri": ""})
            }
        };
        let context =
            json!({"front_end": request.front_end, "action": request.action.as_str(), "args": request.args});
        let mut ctx = Context::with_env(self.env.clone());
        for (name, value) in [("principal", principal), ("resource", resource), ("context", context)] {
            ctx.add_variable(name, value).ok()?;
        }
        Some(ctx)
    }
}

#[cfg(test)]
mod tests;

//! A request becomes one [`PreparedCall`], here and only here: the tool looked up once in one
//! registry snapshot, its arguments mapped and checked once ([`super::args`]), and everything a
//! front end decides from — the danger policy (the operator's per-tool policy included), task
//! support, the time limit and whether a grant may be asked about — resolved once. Front ends
//! decide only from the prepared call: none looks the tool up or reads the policy on its own,
//! so two of them cannot decide a call differently.

use super::*;
use crate::settings::OnMissing;
use std::borrow::Cow;
use toolhost_spec::manifest::TaskSupport;

/// What a front end asks to run, as it has it.
#[derive(Debug, Clone, Copy)]
pub enum CallRequest<'r> {
    /// A tool by name with positional arguments: the `[TOOL]` text, the command line, code.
    Positional(&'r ToolCall),
    /// A tool and its arguments by parameter name, parsed: MCP's `tools/call`, the console.
    Named { name: &'r str, args: &'r serde_json::Map<String, serde_json::Value> },
    /// A tool and its arguments by parameter name as JSON text: OpenAI's `tool_calls`.
    NamedJson { name: &'r str, json: &'r str },
}

impl CallRequest<'_> {
    /// The tool's name as the request gives it.
    pub fn name(&self) -> &str {
        match self {
            CallRequest::Positional(call) => &call.name,
            CallRequest::Named { name, .. } | CallRequest::NamedJson { name, .. } => name,
        }
    }

    /// The request as the audit trail keeps one that was refused: positional arguments as they
    /// are, named ones as their JSON text.
    fn as_call(&self) -> Cow<'_, ToolCall> {
        match self {
            CallRequest::Positional(call) => Cow::Borrowed(*call),
            CallRequest::Named { name, args } => Cow::Owned(ToolCall {
                name: name.to_string(),
                args: vec![serde_json::Value::Object((*args).clone()).to_string()],
            }),
            CallRequest::NamedJson { name, json } => {
                Cow::Owned(ToolCall { name: name.to_string(), args: vec![json.to_string()] })
            }
        }
    }
}

/// What a prepared call runs.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// A plugin's tool.
    Tool(ToolEntry),
    /// The host's own `find_tools` (search mode).
    FindTools,
    /// The host's own `run_script` (code mode).
    Script,
}

/// A call decided once (see the module docs): ready to run ([`Executor::run`]), or to be
/// refused by a front end's own rule ([`Executor::refuse`]). It holds the registry snapshot it
/// was prepared on, so it runs on the version it was decided for.
#[derive(Debug, Clone)]
pub struct PreparedCall<'r> {
    pub(super) registry: Arc<Registry>,
    pub(super) target: Target,
    /// The exposed name and the checked positional arguments (`rest` ones joined).
    pub(super) call: Cow<'r, ToolCall>,
    policy: Option<DangerPolicy>,
    by_tool: bool,
    task_support: TaskSupport,
    limits: Limits,
    on_missing: Option<OnMissing>,
    /// The operator's policy lets its caller be asked (and answer) a danger confirmation or a
    /// grant question about it (`answer`).
    answerable: bool,
}

impl PreparedCall<'_> {
    /// The call as it runs: the exposed name and the checked positional arguments.
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The exposed name.
    pub fn name(&self) -> &str {
        &self.call.name
    }

    /// The plugin serving it (`None`: the host's `find_tools` or `run_script`).
    pub fn plugin(&self) -> Option<&Arc<LoadedPlugin>> {
        match &self.target {
            Target::Tool(entry) => Some(&entry.plugin),
            Target::FindTools | Target::Script => None,
        }
    }

    /// Whether it is the host's own `find_tools`, whose result names tools.
    pub fn is_find_tools(&self) -> bool {
        matches!(self.target, Target::FindTools)
    }

    /// The policy that decides whether it runs (see `view::call_policy`): `None`, it runs.
    pub fn policy(&self) -> Option<DangerPolicy> {
        self.policy
    }

    /// The policy is the operator's `[tool.NAME] policy`, not `[danger] policy`.
    pub fn policy_by_tool(&self) -> bool {
        self.by_tool
    }

    /// A person must confirm it before it runs.
    pub fn needs_confirmation(&self) -> bool {
        self.policy == Some(DangerPolicy::Ask)
    }

    /// Whether a grant its plugin requested and was not given may be asked about, by an asker
    /// that asks when the plugin's `on_missing` is unset (`by_default`) or not.
    pub fn may_ask_grants(&self, by_default: bool) -> bool {
        match self.on_missing {
            Some(OnMissing::Ask) => true,
            Some(OnMissing::Refuse) => false,
            None => by_default && self.plugin().is_some(),
        }
    }

    /// Whether running it may ask a person anything, with an asker of grants that asks by
    /// default or not. A code-mode script may: its inner calls are asked like any call.
    pub fn may_ask(&self, by_default: bool) -> bool {
        self.needs_confirmation() || self.may_ask_grants(by_default) || matches!(self.target, Target::Script)
    }

    /// Whether the operator's policy lets its caller answer questions about it (the `answer`
    /// action): when not, a confirmation it needs is refused as when no one can be asked, and
    /// no grant question is asked.
    pub fn answerable(&self) -> bool {
        self.answerable
    }

    /// Whether it may run as a task (see `view::ToolView::task_support`; `find_tools`: never).
    pub fn task_support(&self) -> TaskSupport {
        self.task_support
    }

    /// Its limits (time, memory, output, …).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Its time limit.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.limits.timeout_ms)
    }

    /// The same call, holding what it borrowed from its request (to run on another task).
    pub fn into_owned(self) -> PreparedCall<'static> {
        PreparedCall { call: Cow::Owned(self.call.into_owned()), ..self }
    }
}

impl Executor {
    /// Prepare `request` (see the module docs), or refuse it: an unknown or ambiguous tool
    /// (`unknown_tool`), arguments that do not fit its parameters (`bad_arguments`). A refusal
    /// is counted and audited like every call (the observer sees it) before it is returned.
    pub async fn prepare<'r>(
        &self,
        request: CallRequest<'r>,
        ctx: &CallContext,
    ) -> Result<PreparedCall<'r>, Outcome> {
        let registry = self.registry.load_full();
        let decided = match self.decide(&registry, request) {
            Ok((target, call)) => {
                let mut prepared = self.prepared(registry, target, call);
                match self.refusal(&prepared, ctx).await {
                    None => {
                        prepared.answerable = self.permit_answer(&prepared, ctx);
                        Ok(prepared)
                    }
                    Some(refused) => Err(Box::new(Refused(prepared.plugin().cloned(), refused))),
                }
            }
            Err(refused) => Err(refused),
        };
        match decided {
            Ok(prepared) => Ok(prepared),
            Err(refused) => {
                let Refused(plugin, outcome) = *refused;
                // Boxed: the refusal's future is no part of a prepared call's.
                Err(Box::pin(self.observed(&request.as_call(), plugin.as_ref(), ctx, Work::Settled(outcome)))
                    .await)
            }
        }
    }

    /// The target and the checked call of `request` on `registry`, or the refusal (and the
    /// plugin it names, for the audit trail).
    fn decide<'r>(
        &self,
        registry: &Registry,
        request: CallRequest<'r>,
    ) -> Result<(Target, Cow<'r, ToolCall>), Box<Refused>> {
        let name = request.name();
        let served = match registry.who_serves(name) {
            // OpenAI writes a namespace's `.` as `__`: the exposed name is what runs. An app's page
            // calls its plugin's tools by their own names (`Registry::app_tool`).
            Served::Nobody => {
                (registry.lookup(name).or_else(|| registry.app_tool(name))).map_or(Served::Nobody, Served::By)
            }
            served => served,
        };
        let (target, spec) = match served {
            Served::By(entry) => (Target::Tool(entry.clone()), entry.spec()),
            // An ambiguous name never runs anything: the error names the plugins and the fix.
            Served::Ambiguous(c) => {
                return Err(Box::new(Refused(None, Outcome::err(ErrorKind::UnknownTool, c.message()))));
            }
            Served::Nobody => match (registry.search(), registry.script()) {
                (Some(search), _) if name == crate::catalog::FIND_TOOLS => (Target::FindTools, &search.spec),
                (_, Some(script)) if name == crate::script::RUN_SCRIPT => (Target::Script, &script.spec),
                _ => {
                    let outcome = Outcome::err(ErrorKind::UnknownTool, unknown_tool_message(registry, name));
                    return Err(Box::new(Refused(None, outcome)));
                }
            },
        };
        let plugin = || match &target {
            Target::Tool(entry) => Some(entry.plugin.clone()),
            Target::FindTools | Target::Script => None,
        };
        let refused = |e: String| Box::new(Refused(plugin(), Outcome::err(ErrorKind::BadArguments, e)));
        let call = match request {
            CallRequest::Positional(call) => match args::check_args(spec, &call.args).map_err(refused)? {
                Cow::Borrowed(_) if call.name == spec.name => Cow::Borrowed(call),
                args => Cow::Owned(ToolCall { name: spec.name.clone(), args: args.into_owned() }),
            },
            CallRequest::Named { args, .. } => Cow::Owned(ToolCall {
                name: spec.name.clone(),
                args: args::map_named(spec, args).map_err(refused)?,
            }),
            CallRequest::NamedJson { json, .. } => {
                let args = args::map_named_json(spec, json).map_err(refused)?;
                Cow::Owned(ToolCall { name: spec.name.clone(), args })
            }
        };
        Ok((target, call))
    }

    /// The decisions about a call of `target` under this executor's config.
    fn prepared<'r>(
        &self,
        registry: Arc<Registry>,
        target: Target,
        call: Cow<'r, ToolCall>,
    ) -> PreparedCall<'r> {
        let config = &*self.config;
        match &target {
            Target::Tool(entry) => {
                let view = crate::view::ToolView::new(entry, config);
                let (policy, task_support, limits) = (view.call_policy, view.task_support(), view.limits);
                let by_tool = view.policy.is_some();
                let on_missing = config.on_missing(&entry.plugin.name);
                PreparedCall {
                    registry,
                    target,
                    call,
                    policy,
                    by_tool,
                    task_support,
                    limits,
                    on_missing,
                    answerable: true,
                }
            }
            Target::FindTools | Target::Script => PreparedCall {
                registry,
                limits: match target {
                    Target::Script => Limits { timeout_ms: config.code_mode.timeout_ms, ..config.limits },
                    _ => config.limits,
                },
                target,
                call,
                policy: None,
                by_tool: false,
                task_support: TaskSupport::Forbidden,
                on_missing: None,
                answerable: true,
            },
        }
    }
}

impl Executor {
    /// Why `ctx`'s caller may not make the call `prepared` now (the operator's policy, then its
    /// rate limits), if it may not.
    async fn refusal(&self, prepared: &PreparedCall<'_>, ctx: &CallContext) -> Option<Outcome> {
        if let Err(why) = self.permit_call(prepared, ctx) {
            return Some(Outcome::err(ErrorKind::Forbidden, why));
        }
        self.within_rate(prepared, ctx).await.err().map(|limited| rate_limited(&limited, ctx))
    }
}

/// The refusal of a call over a rate limit: what the limit is, when to retry (also as a typed
/// note, which MCP answers carry as `_meta`).
fn rate_limited(limited: &crate::rate::Limited, ctx: &CallContext) -> Outcome {
    let who = ctx.principal.as_deref().map_or_else(|| "this caller".to_string(), |p| p.to_string());
    let mut outcome = Outcome::err(
        ErrorKind::RateLimited,
        format!("{who} made more than {} calls a minute ({})", limited.per_minute, limited.key),
    );
    outcome.add_note(super::Note::RetryAfter(limited.retry_after));
    outcome
}

/// A request refused before it was prepared: the plugin it names (if any) and the outcome.
struct Refused(Option<Arc<LoadedPlugin>>, Outcome);

/// Why a tool of this name cannot be found, with the closest names (or how to search).
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

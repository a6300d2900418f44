//! How a tool is presented: the one place that combines a tool's manifest entry with the
//! operator's configuration into what every front end shows and the executor enforces.
//!
//! The `[TOOL]` prompt, the OpenAI `tools` array, MCP `tools/list`, `find_tools` results and
//! `toolhost list` all build a [`ToolView`] and read its fields; none of them looks at
//! `spec.danger`, the grants or the config on its own, so they cannot disagree about whether a
//! tool is dangerous, read-only, open-world or limited. [`listing`] is the one list of what the
//! front ends offer (every exposed tool, or in search mode the pinned ones and `find_tools`).

use crate::registry::{LoadedPlugin, Registry, ToolEntry};
use crate::settings::{Config, DangerPolicy, Limits};
use std::sync::Arc;
use toolhost_spec::manifest::{Icon, TaskSupport, ToolSpec};

/// What a tool is, as the operator's host presents and enforces it.
#[derive(Debug, Clone)]
pub struct ToolView<'a> {
    /// The manifest entry, `name` being the exposed name.
    pub spec: &'a ToolSpec,
    pub plugin: &'a str,
    /// The plugin's version (`None`: the host's own `find_tools`).
    pub version: Option<&'a str>,
    /// Needs confirmation under the danger policy (see [`is_dangerous`]), or the operator's
    /// `[tool.NAME] policy = "ask"` confirms every call.
    pub dangerous: bool,
    /// The operator's `[tool.NAME] policy`, if set.
    pub policy: Option<DangerPolicy>,
    /// The policy that decides whether a call runs ([`call_policy`]): `None`, it runs.
    pub call_policy: Option<DangerPolicy>,
    /// The manifest declares the tool read-only. This is the author's claim about what the tool
    /// does; see [`ToolView::advertise_read_only`] for what clients are told.
    pub read_only: bool,
    /// The tool may reach outside the host: its plugin is granted network access to a host it
    /// requested (MCP `openWorldHint`).
    pub open_world: bool,
    /// Time, memory and output limits of a call, in the config's precedence (global <
    /// manifest time limit up to `max_timeout_ms` < plugin < manifest output limit < tool).
    pub limits: Limits,
    /// The schemas built when the plugin was read (or the registry was, for `find_tools`).
    schemas: &'a crate::registry::ToolSchemas,
    /// The page (MCP Apps) that shows its results: its `ui://` URI.
    pub app: Option<&'a str>,
    /// For its plugin's apps only: callable, never offered to a model (MCP Apps visibility
    /// `["app"]`).
    pub app_only: bool,
}

impl<'a> ToolView<'a> {
    /// The view of one registry entry under `config`.
    pub fn new(entry: &'a ToolEntry, config: &Config) -> ToolView<'a> {
        let spec = entry.spec();
        let net = &entry.plugin.grants.net;
        let open_world = net
            .granted
            .iter()
            .any(|g| net.requested.iter().any(|r| toolhost_spec::host_pattern::overlaps(r, g)));
        ToolView {
            spec,
            plugin: &entry.plugin.name,
            version: Some(&entry.plugin.manifest.version),
            dangerous: is_dangerous(spec, &entry.plugin, config)
                || tool_policy(spec, config) == Some(DangerPolicy::Ask),
            policy: tool_policy(spec, config),
            call_policy: call_policy(spec, &entry.plugin, config),
            read_only: spec.read_only,
            open_world,
            limits: config.limits_for_tool(&entry.plugin.name, spec),
            schemas: entry.schemas(),
            app: crate::registry::apps::of_tool(&entry.plugin, entry.own_name()).map(|a| a.uri.as_str()),
            app_only: crate::registry::apps::app_only(&entry.plugin, entry.own_name()),
        }
    }

    /// The view of the host's own `find_tools` (search mode).
    pub fn find_tools(search: &'a crate::registry::Search, config: &Config) -> ToolView<'a> {
        ToolView {
            spec: &search.spec,
            plugin: "toolhost",
            version: None,
            dangerous: false,
            policy: None,
            call_policy: None,
            read_only: true,
            open_world: false,
            limits: config.limits,
            schemas: &search.schemas,
            app: None,
            app_only: false,
        }
    }

    /// The view of the host's own `run_script` (code mode). Its time limit is the script's.
    pub fn script(script: &'a crate::registry::ScriptTool, config: &Config) -> ToolView<'a> {
        ToolView {
            spec: &script.spec,
            plugin: "toolhost",
            version: None,
            dangerous: false,
            policy: None,
            call_policy: None,
            read_only: false,
            open_world: false,
            limits: Limits { timeout_ms: config.code_mode.timeout_ms, ..config.limits },
            schemas: &script.schemas,
            app: None,
            app_only: false,
        }
    }

    /// Whether a call may run as a task (MCP tasks): the manifest's `taskSupport`, except that a
    /// call a person must confirm (its policy `ask`) never runs as an optional task, where nobody
    /// could be asked, and a call its policy refuses (`deny`) never as any task: it is refused
    /// at once. `find_tools` answers at once: never a task.
    pub fn task_support(&self) -> TaskSupport {
        let support = self.spec.task_support.unwrap_or_default();
        match self.call_policy {
            Some(DangerPolicy::Deny) => TaskSupport::Forbidden,
            Some(DangerPolicy::Ask) if support == TaskSupport::Optional => TaskSupport::Forbidden,
            _ if self.version.is_none() => TaskSupport::Forbidden,
            _ => support,
        }
    }

    /// The JSON Schema of the tool's arguments (MCP `inputSchema`).
    pub fn input_schema(&self) -> Arc<serde_json::Map<String, serde_json::Value>> {
        self.schemas.input.clone()
    }

    /// The manifest's `outputSchema`, when it declares one.
    pub fn output_schema(&self) -> Option<Arc<serde_json::Map<String, serde_json::Value>>> {
        self.schemas.output.clone()
    }

    /// The exposed name.
    pub fn name(&self) -> &'a str {
        &self.spec.name
    }

    /// The name OpenAI function calling uses (a namespace's `.` written `__`).
    pub fn openai_name(&self) -> std::borrow::Cow<'a, str> {
        crate::catalog::openai_name(&self.spec.name)
    }

    /// A human-readable name: the manifest's `title`, else the exposed name.
    pub fn title(&self) -> &'a str {
        self.spec.title.as_deref().unwrap_or(&self.spec.name)
    }

    /// Whether clients are told the tool is read-only (MCP `readOnlyHint`).
    ///
    /// A dangerous tool is never advertised as read-only, even when its manifest says it only
    /// reads: clients use `readOnlyHint: true` to skip their own confirmation, and the
    /// operator's `danger` marking says every call needs one. Such a tool is advertised as
    /// `readOnlyHint: false, destructiveHint: true`, which is the one consistent pair the MCP
    /// specification allows for "ask before running this" (`destructiveHint` is only
    /// meaningful when `readOnlyHint` is false).
    pub fn advertise_read_only(&self) -> bool {
        self.read_only && !self.dangerous
    }

    /// MCP `idempotentHint`: the manifest's `idempotent`.
    pub fn idempotent(&self) -> bool {
        self.spec.idempotent
    }

    /// The manifest's icons (validated `data:` URIs).
    pub fn icons(&self) -> &'a [Icon] {
        &self.spec.icons
    }

    /// What MCP's `_meta` carries about the tool: its limits and its plugin, under
    /// `toolhost/`-prefixed keys.
    pub fn meta(&self) -> serde_json::Map<String, serde_json::Value> {
        let l = &self.limits;
        let mut m = serde_json::Map::new();
        m.insert(
            "toolhost/limits".into(),
            serde_json::json!({
                "timeoutMs": l.timeout_ms,
                "memoryMb": l.memory_mb,
                "outputLimit": l.output_limit,
                "writeMb": l.write_mb,
                "createLimit": l.create_limit,
                "logKb": l.log_kb,
                "logLines": l.log_lines,
            }),
        );
        m.insert(
            "toolhost/plugin".into(),
            serde_json::json!({ "name": self.plugin, "version": self.version }),
        );
        if let Some(p) = self.policy {
            m.insert("toolhost/policy".into(), p.to_string().into());
        }
        // MCP Apps: the page that shows its results, and who may call it.
        let mut ui = serde_json::Map::new();
        if let Some(uri) = self.app {
            ui.insert("resourceUri".into(), uri.into());
        }
        if self.app_only {
            ui.insert("visibility".into(), serde_json::json!(["app"]));
        }
        if !ui.is_empty() {
            m.insert("ui".into(), ui.into());
        }
        m
    }

    /// The description with the danger note that function-calling front ends append.
    pub fn description_with_danger_note(&self) -> String {
        if self.policy == Some(DangerPolicy::Deny) {
            format!("{} (Disabled by the operator: every call is refused.)", self.spec.description)
        } else if self.policy == Some(DangerPolicy::Ask) {
            format!("{} (Every call needs a human's confirmation and may be refused.)", self.spec.description)
        } else if self.dangerous {
            format!("{} (Dangerous: needs a human's confirmation and may be refused.)", self.spec.description)
        } else {
            self.spec.description.clone()
        }
    }

    /// What the `[TOOL]` prompt says after a tool's description: ` DISABLED by the operator.`
    /// (`[tool.NAME] policy = "deny"`), ` DANGEROUS.` (every call confirmed), or nothing.
    pub fn prompt_note(&self) -> &'static str {
        if self.policy == Some(DangerPolicy::Deny) {
            " DISABLED by the operator."
        } else if self.dangerous {
            " DANGEROUS."
        } else {
            ""
        }
    }

    /// The flags `toolhost list` shows: `danger`, `read-only`, `idempotent`, `network`, `rest`.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.dangerous {
            flags.push("danger");
        }
        if self.read_only {
            flags.push("read-only");
        }
        if self.spec.idempotent {
            flags.push("idempotent");
        }
        if self.open_world {
            flags.push("network");
        }
        if self.spec.rest {
            flags.push("rest");
        }
        match self.policy {
            Some(DangerPolicy::Allow) => flags.push("policy:allow"),
            Some(DangerPolicy::Ask) => flags.push("policy:ask"),
            Some(DangerPolicy::Deny) => flags.push("policy:deny"),
            None => {}
        }
        flags
    }
}

/// What the front ends offer, in name order: every exposed tool — or, when the catalog is
/// searched, `find_tools` and the tools `[catalog] pin` names — and in code mode `run_script`.
pub fn listing<'a>(registry: &'a Registry, config: &Config) -> Vec<ToolView<'a>> {
    // Background linking waits for the first listing (see `registry::Code`).
    crate::registry::Code::listed();
    let mut out: Vec<ToolView<'a>> = match registry.search() {
        None => registry.tools().map(|e| ToolView::new(e, config)).collect(),
        Some(search) => {
            let mut out: Vec<ToolView<'a>> = registry
                .tools()
                .filter(|e| config.catalog.pinned(e.name()))
                .map(|e| ToolView::new(e, config))
                .collect();
            out.push(ToolView::find_tools(search, config));
            out
        }
    };
    if let Some(script) = registry.script() {
        out.push(ToolView::script(script, config));
    }
    if registry.search().is_some() || registry.script().is_some() {
        out.sort_by(|a, b| a.name().cmp(b.name()));
    }
    out
}

/// One line per exposed name several plugins claim, for a listing (empty: no conflict).
pub fn conflict_lines(registry: &Registry) -> Vec<String> {
    registry.conflicts().iter().map(|c| c.message()).collect()
}

/// Whether calls of `spec` (a tool of `plugin`, `spec.name` its exposed name) need
/// confirmation. The executor decides with this same function.
///
/// - the operator's `[tool.NAME] danger = true`, or the manifest's `danger`: dangerous (the
///   operator can add danger to a tool, never take away what its author declared);
/// - a tool of a plugin the operator granted programs to run (`exec`): dangerous, unless the
///   operator says `[tool.NAME] danger = false`;
/// - otherwise not.
pub fn is_dangerous(spec: &ToolSpec, plugin: &LoadedPlugin, config: &Config) -> bool {
    match config.tools.get(&spec.name).and_then(|t| t.danger) {
        Some(true) => true,
        _ if spec.danger => true,
        Some(false) => false,
        None => !plugin.grants.exec.is_empty(),
    }
}

/// The operator's `[tool.NAME] policy` for `spec` (by its exposed name).
fn tool_policy(spec: &ToolSpec, config: &Config) -> Option<DangerPolicy> {
    config.tools.get(&spec.name).and_then(|t| t.policy)
}

/// Which policy decides whether a call of `spec` runs: the operator's `[tool.NAME] policy`
/// when set (for every call of the tool, dangerous or not), else `[danger] policy` for a
/// dangerous tool, else none (the call runs). The executor decides with this same function.
pub fn call_policy(spec: &ToolSpec, plugin: &LoadedPlugin, config: &Config) -> Option<DangerPolicy> {
    tool_policy(spec, config).or_else(|| is_dangerous(spec, plugin, config).then_some(config.danger))
}

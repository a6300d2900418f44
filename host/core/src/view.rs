//! How a tool is presented: the one place that combines a tool's manifest entry with the
//! operator's configuration into what every front end shows and the executor enforces.
//!
//! The `[TOOL]` prompt, the OpenAI `tools` array, MCP `tools/list` and `toolhost list` all
//! build a [`ToolView`] and read its fields; none of them looks at `spec.danger` or the config
//! on its own, so they cannot disagree about whether a tool is dangerous, read-only or limited.

use crate::registry::{LoadedPlugin, ToolEntry};
use crate::settings::{Config, Limits};
use toolhost_spec::manifest::ToolSpec;

/// What a tool is, as the operator's host presents and enforces it.
#[derive(Debug, Clone)]
pub struct ToolView<'a> {
    pub spec: &'a ToolSpec,
    pub plugin: &'a str,
    /// Needs confirmation under the danger policy (see [`is_dangerous`]).
    pub dangerous: bool,
    /// The manifest declares the tool read-only. This is the author's claim about what the tool
    /// does; see [`ToolView::advertise_read_only`] for what clients are told.
    pub read_only: bool,
    /// Time, memory and output limits of a call, in the config's precedence (global <
    /// manifest time limit up to `max_timeout_ms` < plugin < manifest output limit < tool).
    pub limits: Limits,
}

impl<'a> ToolView<'a> {
    /// The view of one registry entry under `config`.
    pub fn new(entry: &'a ToolEntry, config: &Config) -> ToolView<'a> {
        let spec = entry.spec();
        ToolView {
            spec,
            plugin: &entry.plugin.name,
            dangerous: is_dangerous(spec, &entry.plugin, config),
            read_only: spec.read_only,
            limits: config.limits_for_tool(&entry.plugin.name, spec),
        }
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

    /// The description with the danger note that function-calling front ends append.
    pub fn description_with_danger_note(&self) -> String {
        if self.dangerous {
            format!("{} (Dangerous: needs a human's confirmation and may be refused.)", self.spec.description)
        } else {
            self.spec.description.clone()
        }
    }

    /// The flags `toolhost list` shows: `danger`, `read-only`, `rest`.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.dangerous {
            flags.push("danger");
        }
        if self.read_only {
            flags.push("read-only");
        }
        if self.spec.rest {
            flags.push("rest");
        }
        flags
    }
}

/// Whether calls of `spec` (a tool of `plugin`) need confirmation. The executor decides with
/// this same function.
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

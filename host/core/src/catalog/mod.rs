//! The catalog: which tools the front ends expose, under which names, and how a model finds one
//! in a large catalog.
//!
//! - **Selection**: `[plugin.NAME] tools = [...]` (only these) and `exclude = [...]` (never these),
//!   glob patterns over the plugin's own tool names. A hidden tool is in no front end's listing
//!   and cannot be called; `list` shows it as hidden, with why.
//! - **Names**: `[plugin.NAME.tool.OLD] name = "NEW"`, else `[plugin.NAME] prefix = "p_"` +
//!   the tool's name, else with `[catalog] namespace = "plugin"` `NAME.TOOL`, else the tool's
//!   own name. The exposed name is the one the `[TOOL]` prompt, MCP, the executor, the danger
//!   question, the audit trail, metrics and `[tool.NAME]` use; only OpenAI, whose function names
//!   cannot hold a dot, gets `NAME__TOOL` for `NAME.TOOL` ([`openai_name`]). The plugin is always
//!   called with its own tool name.
//! - **Resources and prompts** follow the same rules: `[plugin.NAME] resources = [...]` and
//!   `prompts = [...]` select; a prompt is named as a tool is ([`expose_prompt`]); a resource
//!   keeps its URI (a URI names itself, and the plugin reads it by that URI).
//! - **Conflicts** (two plugins exposing one name) are the registry's: see `registry`.
//! - **Search**: with `[catalog] mode = "search"` (or `auto` above `search_above` tools) the front
//!   ends list the pinned tools and [`FIND_TOOLS`], which the executor answers from a BM25 index
//!   ([`search`]).

pub mod search;
pub mod settings;

use crate::settings::Config;
use settings::{MAX_EXPOSED, Namespace};
use std::borrow::Cow;
use toolhost_spec::manifest::ToolSpec;

/// The meta-tool that searches the catalog in search mode.
pub const FIND_TOOLS: &str = "find_tools";

/// What becomes of one of a plugin's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exposed {
    /// Exposed under this name.
    As(String),
    /// Not exposed, and why (naming the setting).
    Hidden(String),
}

/// Whether, and as what, `plugin`'s tool `tool` (its own name) is exposed under `config`.
pub fn expose(config: &Config, plugin: &str, tool: &str) -> Exposed {
    let section = config.plugins.get(plugin).map(|p| &p.exposure);
    if let Some(e) = section {
        if let Some(only) = &e.tools
            && !only.iter().any(|g| g.matches(tool))
        {
            let list: Vec<String> = only.iter().map(ToString::to_string).collect();
            return Exposed::Hidden(format!("not in [plugin.{plugin}] tools = [{}]", list.join(", ")));
        }
        if let Some(g) = e.exclude.iter().find(|g| g.matches(tool)) {
            return Exposed::Hidden(format!("matches {g} in [plugin.{plugin}] exclude"));
        }
    }
    let name = named(config, plugin, tool, section.and_then(|e| e.rename.get(tool)).map(String::as_str));
    let wire = openai_name(&name);
    if wire.len() > MAX_EXPOSED {
        return Exposed::Hidden(format!(
            "its name `{wire}` is {} characters long and OpenAI takes at most {MAX_EXPOSED}; give it a shorter one with [plugin.{plugin}.tool.{tool}] name = \"…\"",
            wire.len()
        ));
    }
    Exposed::As(name)
}

/// Whether, and as what, `plugin`'s prompt `prompt` (its own name) is served under `config`:
/// `[plugin.NAME] prompts` selects, and it is named as a tool is — `[plugin.NAME.prompt.OLD]
/// name`, else `prefix` + its name, else with `[catalog] namespace = "plugin"` `NAME.PROMPT`,
/// else its own name. The plugin is always asked with its own name.
pub fn expose_prompt(config: &Config, plugin: &str, prompt: &str) -> Exposed {
    let section = config.plugins.get(plugin).map(|p| &p.exposure);
    if let Some(only) = section.and_then(|e| e.prompts.as_ref())
        && !only.iter().any(|g| g.matches(prompt))
    {
        let list: Vec<String> = only.iter().map(ToString::to_string).collect();
        return Exposed::Hidden(format!("not in [plugin.{plugin}] prompts = [{}]", list.join(", ")));
    }
    Exposed::As(named(
        config,
        plugin,
        prompt,
        section.and_then(|e| e.prompt_rename.get(prompt)).map(String::as_str),
    ))
}

/// The name `plugin`'s tool or prompt `own` is served under: its operator-given name
/// (`renamed`), else `[plugin.NAME] prefix` + its name, else with `[catalog] namespace =
/// "plugin"` `NAME.OWN`, else its own — the one rule for tools and prompts.
fn named(config: &Config, plugin: &str, own: &str, renamed: Option<&str>) -> String {
    let prefix = config.plugins.get(plugin).and_then(|p| p.exposure.prefix.as_deref());
    match (renamed, prefix) {
        (Some(name), _) => name.to_string(),
        (None, Some(prefix)) => format!("{prefix}{own}"),
        _ if config.catalog.namespace == Namespace::Plugin => format!("{plugin}.{own}"),
        _ => own.to_string(),
    }
}

/// The name OpenAI function calling uses for an exposed name: a namespace's `.` becomes `__`
/// (function names are `[a-zA-Z0-9_-]`).
pub fn openai_name(exposed: &str) -> Cow<'_, str> {
    if exposed.contains('.') { Cow::Owned(exposed.replace('.', "__")) } else { Cow::Borrowed(exposed) }
}

/// The `find_tools` meta-tool, for a catalog of `total` tools.
pub fn find_tools_spec(total: usize, results: usize) -> ToolSpec {
    let description = format!(
        "Search the {total} available tools by what you want to do, in plain words. Returns the {results} best \
         matches with their descriptions and parameters; then call the one you need by its name. Only a few \
         tools are listed directly: use this to find the others."
    );
    let about = "what you want to do, e.g. \"read a file\" or \"send an email\"";
    ToolSpec {
        read_only: true,
        idempotent: true,
        ..ToolSpec::host_tool(FIND_TOOLS, "Find tools", description, "query", about)
    }
}

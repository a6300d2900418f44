//! `[plugin.NAME]` (what the operator grants one plugin, its limits, and which of its tools are
//! exposed under which names) and `[tool.NAME]` (the operator's word on one tool, by the name it
//! is exposed under).

use super::DangerPolicy;
use super::invalid::{Invalid, Problem};
use super::limits::{LimitOverrides, for_each_limit, section_with_limits};
use crate::capability::env::settings::EnvConfig;
use crate::capability::fs::settings::{FsGrant, RawFs};
use crate::capability::net::settings::NetConfig;
use crate::capability::process::settings::{ExecGrant, RawExec};
use crate::catalog::settings::{Exposure, RawRename};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

for_each_limit!(section_with_limits; #[derive(Debug, Default, Deserialize)] #[serde(deny_unknown_fields)] pub(crate) struct RawPlugin {
    #[serde(default)]
    fs: Vec<RawFs>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    net: Vec<String>,
    /// Let this plugin's granted hosts resolve to loopback, private or link-local addresses.
    net_private: Option<bool>,
    #[serde(default)]
    secrets: Vec<String>,
    /// Programs it may run (see `capability::process`).
    #[serde(default)]
    exec: Vec<RawExec>,
    /// Key-value buckets it may open (see `capability::kv`).
    #[serde(default)]
    kv: Vec<String>,
    /// `shared` (default: every caller sees the same buckets) or `session` (each MCP session
    /// its own).
    kv_scope: Option<crate::capability::kv::settings::KvScope>,
    /// Values the operator gives the plugin, seen by it as environment variables of these
    /// names (only names its manifest requests with `env`).
    #[serde(default)]
    settings: BTreeMap<String, String>,
    /// At most this many calls of this plugin at once.
    concurrency: Option<u32>,
    /// Expose only the tools matching these patterns.
    tools: Option<Vec<String>>,
    /// Serve only the skills matching these patterns (`[]`: none).
    #[serde(default)]
    skills: Option<Vec<String>>,
    /// Serve only the resources and templates whose URI matches these patterns (`[]`: none).
    resources: Option<Vec<String>>,
    /// Serve only the prompts matching these patterns (`[]`: none).
    prompts: Option<Vec<String>>,
    /// `[plugin.NAME.prompt.OLD] name = "NEW"`.
    #[serde(default)]
    prompt: BTreeMap<String, RawRename>,
    /// Never expose the tools matching these patterns.
    #[serde(default)]
    exclude: Vec<String>,
    /// Expose each tool as `PREFIX` + its name.
    prefix: Option<String>,
    /// `[plugin.NAME.tool.OLD] name = "NEW"`.
    #[serde(default)]
    tool: BTreeMap<String, RawRename>,
    /// What a call does when it needs a grant the manifest requested and the operator did not
    /// give: ask a human (`ask`) or fail with a note (`refuse`).
    on_missing: Option<OnMissing>,
    /// Whether grants answered "always"/"never" survive a new file of the plugin.
    asked_grants: Option<AskedGrants>,
    /// Origins its apps (MCP Apps pages) may reach, of those their `csp` declares.
    #[serde(default)]
    app_domains: Vec<String>,
});

for_each_limit!(section_with_limits; #[derive(Debug, Default, Deserialize)] #[serde(deny_unknown_fields)] pub(crate) struct RawTool {
    danger: Option<bool>,
    /// `allow` | `ask` | `deny`: the operator's word on every call of this tool.
    policy: Option<DangerPolicy>,
});

/// Everything the operator grants one plugin, plus its limit overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginConfig {
    /// Directories (the filesystem capability's).
    pub fs: Vec<FsGrant>,
    /// Environment variables (the environment capability's).
    pub env: EnvConfig,
    /// Hosts, private addresses and secrets (the network capability's).
    pub net: NetConfig,
    /// Programs it may run (the process capability's).
    pub exec: Vec<ExecGrant>,
    /// Key-value buckets (the key-value capability's).
    pub kv: Vec<String>,
    /// Whose buckets they are: every caller's, or each MCP session's.
    pub kv_scope: Option<crate::capability::kv::settings::KvScope>,
    pub limits: LimitOverrides,
    /// At most this many calls of the plugin at once (default: `[limits] plugin_concurrency`).
    pub concurrency: Option<u32>,
    /// Which of its tools are exposed, under which names (never merged from `[plugin."*"]`).
    pub exposure: Exposure,
    /// `on_missing` (unset: ask where a human can be asked — the terminal commands — else
    /// refuse).
    pub on_missing: Option<OnMissing>,
    /// `asked_grants` (unset: `keep`).
    pub asked_grants: Option<AskedGrants>,
    /// Origins its apps may reach (normalized): a page's declared origin not among them is left
    /// out of the policy it is served with.
    pub app_domains: Vec<String>,
}

/// `[plugin.NAME] asked_grants`: what becomes of the answers in `toolhost.grants.toml` when the
/// plugin's file changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskedGrants {
    /// They hold for every version (its request list is approved separately).
    Keep,
    /// An answer holds only for the file (SHA-256) it was given for; a new file is asked again.
    ThisVersion,
}

/// `[plugin.NAME] on_missing`: what happens when a call needs a grant its plugin requested in
/// its manifest and the operator has not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnMissing {
    /// Ask the human at the terminal: allow once, always, or deny.
    Ask,
    /// Fail the call, with a note naming the grant.
    Refuse,
}

/// Operator settings for one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolConfig {
    /// `Some(true)`: dangerous whatever the manifest says.
    pub danger: Option<bool>,
    /// `[tool.NAME] policy`: `allow` runs every call without a question (even a dangerous
    /// tool's), `ask` confirms every call like a dangerous tool's, `deny` refuses every call;
    /// it replaces `[danger] policy` for this tool. Unset: the danger policy, for a dangerous
    /// tool only.
    pub policy: Option<DangerPolicy>,
    pub limits: LimitOverrides,
}

/// What resolving a plugin's section needs of the rest of the config.
pub(crate) struct Context<'a> {
    /// The workspace's grant (its mode replaced by each entry's).
    pub workspace: &'a FsGrant,
    pub base: &'a Path,
    pub concurrency: u32,
    pub has_secret: &'a dyn Fn(&str) -> bool,
    pub normalize: fn(&Path) -> PathBuf,
}

impl RawPlugin {
    /// Resolve `[plugin.NAME]` (`key` = `plugin.NAME`); errors name the key.
    pub(crate) fn resolve(self, key: &str, cx: &Context<'_>) -> Result<PluginConfig, Invalid> {
        let limits = self.limit_overrides();
        super::limits::check(key, &limits)?;
        let mut exposure =
            crate::catalog::settings::exposure(key, self.tools, self.exclude, self.prefix, self.tool)?;
        use crate::catalog::settings::selection;
        exposure.skills = selection(key, "skills", self.skills)?;
        exposure.resources = selection(key, "resources", self.resources)?;
        exposure.prompts = selection(key, "prompts", self.prompts)?;
        exposure.prompt_rename = crate::catalog::settings::prompt_renames(key, self.prompt)?;
        if key == "plugin.*" && !exposure.is_empty() {
            return Err(Invalid::says(
                key,
                "tools, exclude, prefix, tool.NAME, skills, resources, prompts and prompt.NAME belong to one plugin's section; to keep every plugin's tools apart use [catalog] namespace = \"plugin\"",
            ));
        }
        let mut grant = PluginConfig {
            exposure,
            limits,
            concurrency: self.concurrency,
            env: EnvConfig { vars: self.env, values: self.settings },
            net: NetConfig {
                hosts: self.net,
                private: self.net_private.unwrap_or(false),
                secrets: self.secrets,
            },
            fs: Vec::new(),
            exec: Vec::new(),
            kv: crate::capability::kv::settings::resolve_buckets(&format!("{key}.kv"), self.kv)?,
            kv_scope: self.kv_scope,
            on_missing: self.on_missing,
            asked_grants: self.asked_grants,
            app_domains: Vec::new(),
        };
        for (i, d) in self.app_domains.iter().enumerate() {
            let origin = toolhost_spec::apps::check_domain(d)
                .map_err(|why| Invalid::says(format!("{key}.app_domains[{i}]"), why))?;
            if !grant.app_domains.contains(&origin) {
                grant.app_domains.push(origin);
            }
        }
        for (i, e) in self.exec.into_iter().enumerate() {
            grant.exec.push(e.resolve(&format!("{key}.exec[{i}]"), cx.base)?);
        }
        for var in grant.env.values.keys() {
            Invalid::check_variable_name(|| format!("{key}.settings"), var)?;
        }
        for (i, var) in grant.env.vars.iter().enumerate() {
            Invalid::check_variable_name(|| format!("{key}.env[{i}]"), var)?;
        }
        for (i, h) in grant.net.hosts.iter().enumerate() {
            toolhost_spec::HostPattern::parse(h)
                .map_err(|e| Invalid::because(format!("{key}.net[{i}]"), e))?;
        }
        for (i, s) in grant.net.secrets.iter().enumerate() {
            if !(cx.has_secret)(s) {
                return Err(Invalid::new(format!("{key}.secrets[{i}]"), Problem::NoSecret(s.clone())));
            }
        }
        if let Some(c) = grant.concurrency
            && !(1..=cx.concurrency).contains(&c)
        {
            let bounds = (1, cx.concurrency.into());
            let note = " (limits.concurrency)";
            return Err(Invalid::out_of_range_noting(format!("{key}.concurrency"), c, bounds, note));
        }
        for (i, fs) in self.fs.into_iter().enumerate() {
            grant.fs.push(fs.resolve(&format!("{key}.fs[{i}]"), cx.workspace, cx.base, cx.normalize)?);
        }
        Ok(grant)
    }
}

impl RawTool {
    /// Resolve `[tool.NAME]` (`key` = `tool.NAME`).
    pub(crate) fn resolve(self, key: &str) -> Result<ToolConfig, Invalid> {
        let limits = self.limit_overrides();
        super::limits::check(key, &limits)?;
        Ok(ToolConfig { danger: self.danger, policy: self.policy, limits })
    }
}

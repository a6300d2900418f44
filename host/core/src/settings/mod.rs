//! `toolhost.toml`, the sections core owns: each read strictly from the one config file
//! ([`ConfigFile`]: unknown keys are errors naming the key and the file), then resolved into
//! absolute paths and checked values. The sections are defined by their owners — `[net]` and
//! secret origins by `capability::net`, `exec` grants and `[process]` by `capability::process`,
//! directories by `capability::fs`, `[kv]` and bucket grants by `capability::kv`, `[trust]` by `registry::signing`, `[approvals]` by
//! `registry::approvals`, `[catalog]` and the catalog keys of `[plugin.NAME]` by `catalog`, `[telemetry]` by `telemetry` — and
//! composed here; the front ends and the CLI take theirs (`[mcp]`,
//! `[serve]`, `[audit]`, `[model]`, `[registry]`) from the same file in their own crates. Each
//! owner refuses a value with an [`Invalid`] naming its key (`plugin.web.net[0]`) and the
//! [`Problem`]; [`ConfigFile`] adds the file ([`ConfigError::Key`]). With no config file and no
//! command-line grants, nothing is granted to any plugin.

mod file;
pub mod grants;
pub mod host_files;
pub(crate) mod invalid;
pub(crate) mod limits;
mod plugin;
mod secrets;

pub use file::{ConfigError, ConfigFile, DEFAULT_FILE};
pub use grants::{AskedGrant, GrantItem};
pub use host_files::{HostFile, OverHostFile};
pub use invalid::{Invalid, Problem};
pub use limits::{LimitOverrides, Limits};
pub use plugin::{AskedGrants, OnMissing, PluginConfig, ToolConfig};
pub use secrets::{MAX_SECRET_BYTES, SecretError, SecretFrom, SecretSource};

// The capabilities' own settings, re-exported where the config is read.
pub use crate::capability::fs::settings::FsGrant;
pub use crate::capability::kv::settings::KvSettings;
use crate::capability::kv::settings::RawKv;
pub use crate::capability::net::settings::NetSettings;
pub use crate::capability::process::settings::{ExecGrant, ProcessSettings};

use crate::capability::net::settings::RawNet;
use crate::capability::process::settings::RawProcess;
pub use crate::catalog::settings::CatalogSettings;
use crate::catalog::settings::RawCatalog;
use crate::registry::approvals::settings::{ApprovalLock, RawApprovals};
use crate::registry::signing::{RawTrust, Trust};
use crate::telemetry::settings::RawTelemetry;
pub use crate::telemetry::settings::TelemetrySettings;
use file::{absolute, normalize};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_spec::manifest::FsMode;

/// What happens when a `danger` tool is called (`[danger] policy`, `--danger`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DangerPolicy {
    /// Ask on the terminal (or through the front end); with no way to ask, deny.
    #[default]
    Ask,
    /// Run without asking.
    Allow,
    /// Never run.
    Deny,
}

impl std::fmt::Display for DangerPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DangerPolicy::Ask => "ask",
            DangerPolicy::Allow => "allow",
            DangerPolicy::Deny => "deny",
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDanger {
    policy: Option<DangerPolicy>,
}

/// `[cache]`: where compiled code is kept.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCache {
    /// Directory for compiled code; `false` in `enabled` turns the disk cache off.
    dir: Option<PathBuf>,
    enabled: Option<bool>,
}

/// `[policy]`: the operator's rules deciding who may list, call and read what.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    /// The rules file (relative to the config's folder).
    file: Option<PathBuf>,
}

/// The resolved core configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the config came from, if a file.
    pub source: Option<PathBuf>,
    pub plugins_dir: PathBuf,
    pub workspace: PathBuf,
    /// The workspace is the default one ([`DEFAULT_WORKSPACE`] beside the config, or in the
    /// current folder without one), created on first use, not one the operator named.
    pub workspace_is_default: bool,
    pub limits: Limits,
    /// Max wasm stack per call, for every plugin (it is an engine-wide setting).
    pub stack_kb: usize,
    /// Plugin files larger than this are skipped.
    pub max_plugin_bytes: u64,
    /// Calls that may run at once (more wait); sizes the instance pool.
    pub concurrency: u32,
    /// Calls of one plugin that may run at once, unless its section says otherwise; always
    /// below `concurrency` when that is above 1, so one plugin cannot occupy every slot.
    pub plugin_concurrency: u32,
    /// `log` lines per second one plugin may put in the host log across its calls.
    pub log_rate: u32,
    /// The longest time limit a tool's manifest may ask for (`timeoutMs`), in ms.
    pub max_timeout_ms: u64,
    pub danger: DangerPolicy,
    /// Compiled-code cache directory; `None` keeps compiled code in memory only.
    pub cache_dir: Option<PathBuf>,
    pub net: NetSettings,
    pub secrets: BTreeMap<String, SecretSource>,
    pub plugins: BTreeMap<String, PluginConfig>,
    pub tools: BTreeMap<String, ToolConfig>,
    /// `[trust]`: trusted signing keys and whether plugins must be signed.
    pub trust: Trust,
    /// `[approvals]`: approvals pinned in the config.
    pub approvals: ApprovalLock,
    /// `[process]`: how programs run for plugins are confined.
    pub process: Arc<ProcessSettings>,
    /// `[catalog]`: namespacing, search mode, pinned tools.
    pub catalog: CatalogSettings,
    /// `[telemetry]`: OpenTelemetry export (off unless `otlp_endpoint` is set).
    pub telemetry: TelemetrySettings,
    /// `[kv]`: where plugins' key-value stores live, and their bounds.
    pub kv: KvSettings,
    /// `[policy] file`: the rules deciding who may do what (`crate::policy`); `None`: all allowed.
    pub policy_file: Option<PathBuf>,
    /// The policy read from it (checked when the config is read), reloaded when it changes.
    pub policies: Arc<crate::policy::watch::Policies>,
    /// `[rate_limits]`: calls a minute per identity (`crate::rate`).
    pub rate_limits: crate::rate::RateSettings,
    /// `[identity]`: the local user's name (`crate::identity`).
    pub identity: crate::identity::IdentitySettings,
    /// `[code_mode]`: the host's `run_script` tool and a script's limits (`crate::script`).
    pub code_mode: crate::script::CodeModeSettings,
    /// Where "always" answers are written: `toolhost.grants.toml` beside the config.
    pub grants_file: PathBuf,
    /// The grants read from it, merged into each plugin's in [`Config::plugin`].
    pub asked: Vec<AskedGrant>,
    /// The host's own files that other owners of the config know of (the front ends' audit
    /// trail and token files), beside the ones [`Config::host_files`] finds here.
    pub extra_host_files: Vec<HostFile>,
    /// Secrets that other owners of the config read (MCP tokens, the approval key, the replay
    /// store's URL): redacted wherever arguments are kept, like `[secrets]` ([`Config::secret_sources`]).
    pub extra_secrets: Vec<SecretSource>,
}

/// The workspace's folder when the config names none: beside the config (in the current
/// folder without one), never that folder itself, which holds the config and the grants file.
pub const DEFAULT_WORKSPACE: &str = "workspace";

impl Default for Config {
    fn default() -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let l =
            limits::RawLimits::default().resolve().unwrap_or_else(|e| unreachable!("default limits: {e}"));
        Config {
            source: None,
            plugins_dir: cwd.join("plugins"),
            workspace: cwd.join(DEFAULT_WORKSPACE),
            workspace_is_default: true,
            limits: l.limits,
            stack_kb: l.stack_kb,
            max_plugin_bytes: l.max_plugin_bytes,
            concurrency: l.concurrency,
            plugin_concurrency: l.plugin_concurrency,
            log_rate: l.log_rate,
            max_timeout_ms: l.max_timeout_ms,
            danger: DangerPolicy::Ask,
            cache_dir: crate::files::cache_dir(),
            net: NetSettings::default(),
            secrets: BTreeMap::new(),
            plugins: BTreeMap::new(),
            tools: BTreeMap::new(),
            trust: Trust::default(),
            approvals: ApprovalLock::default(),
            process: Default::default(),
            catalog: CatalogSettings::default(),
            telemetry: TelemetrySettings::default(),
            kv: KvSettings::default(),
            policy_file: None,
            policies: Arc::default(),
            rate_limits: Default::default(),
            identity: Default::default(),
            code_mode: Default::default(),
            grants_file: PathBuf::from(grants::GRANTS_FILE),
            asked: Vec::new(),
            extra_host_files: Vec::new(),
            extra_secrets: Vec::new(),
        }
    }
}

impl Config {
    /// The core sections of `file` (claimed in it; the other owners take theirs, then
    /// [`ConfigFile::finish`] refuses what nobody claimed).
    pub fn from_file(file: &ConfigFile) -> Result<Config, ConfigError> {
        let invalid = |e: Invalid| file.invalid_key(e);
        let base = file.base.as_path();
        let mut cfg = Config { source: file.source.clone(), ..Config::default() };
        let plugins: Option<PathBuf> = file.section("plugins")?;
        let workspace: Option<PathBuf> = file.section("workspace")?;
        cfg.plugins_dir = base.join(plugins.unwrap_or_else(|| PathBuf::from("plugins")));
        cfg.workspace_is_default = workspace.is_none();
        cfg.workspace = normalize(&base.join(workspace.unwrap_or_else(|| PathBuf::from(DEFAULT_WORKSPACE))));
        let l = file.section::<limits::RawLimits>("limits")?.resolve().map_err(invalid)?;
        (cfg.limits, cfg.stack_kb, cfg.max_plugin_bytes) = (l.limits, l.stack_kb, l.max_plugin_bytes);
        (cfg.concurrency, cfg.plugin_concurrency, cfg.log_rate, cfg.max_timeout_ms) =
            (l.concurrency, l.plugin_concurrency, l.log_rate, l.max_timeout_ms);
        cfg.danger = file.section::<RawDanger>("danger")?.policy.unwrap_or_default();
        let cache: RawCache = file.section("cache")?;
        if let Some(dir) = cache.dir {
            cfg.cache_dir = Some(base.join(dir));
        }
        if cache.enabled == Some(false) {
            cfg.cache_dir = None;
        }
        cfg.net = file.section::<RawNet>("net")?.resolve().map_err(invalid)?;
        cfg.secrets = secrets::resolve(file.section("secrets")?, base).map_err(invalid)?;
        let raw_plugins: BTreeMap<String, plugin::RawPlugin> = file.section("plugin")?;
        let secrets = &cfg.secrets;
        let workspace = cfg.workspace_grant(FsMode::ReadWrite);
        let cx = plugin::Context {
            workspace: &workspace,
            base,
            concurrency: cfg.concurrency,
            has_secret: &|s: &str| secrets.contains_key(s),
            normalize,
        };
        let mut granted = BTreeMap::new();
        for (name, p) in raw_plugins {
            let grant = p.resolve(&format!("plugin.{name}"), &cx).map_err(invalid)?;
            granted.insert(name, grant);
        }
        cfg.plugins = granted;
        let raw_tools: BTreeMap<String, plugin::RawTool> = file.section("tool")?;
        for (name, t) in raw_tools {
            let tool = t.resolve(&format!("tool.{name}")).map_err(invalid)?;
            cfg.tools.insert(name, tool);
        }
        cfg.trust = Trust::resolve(file.section::<RawTrust>("trust")?, base)
            .map_err(|e| file.invalid(e.to_string()))?;
        cfg.approvals = ApprovalLock::resolve(file.section::<RawApprovals>("approvals")?).map_err(invalid)?;
        cfg.process = Arc::new(file.section::<RawProcess>("process")?.resolve().map_err(invalid)?);
        cfg.catalog = file.section::<RawCatalog>("catalog")?.resolve().map_err(invalid)?;
        cfg.telemetry = file.section::<RawTelemetry>("telemetry")?.resolve().map_err(invalid)?;
        cfg.kv = file.section::<RawKv>("kv")?.resolve(base).map_err(invalid)?;
        cfg.policy_file = file.section::<RawPolicy>("policy")?.file.map(|f| base.join(f));
        cfg.rate_limits =
            file.section::<crate::rate::RawRateLimits>("rate_limits")?.resolve().map_err(invalid)?;
        cfg.identity =
            file.section::<crate::identity::RawIdentity>("identity")?.resolve().map_err(invalid)?;
        cfg.code_mode =
            file.section::<crate::script::RawCodeMode>("code_mode")?.resolve().map_err(invalid)?;
        cfg.policies = Arc::new(
            crate::policy::watch::Policies::load(cfg.policy_file.as_deref())
                .map_err(|e| ConfigError::Flag(e.to_string()))?,
        );
        cfg.grants_file = base.join(grants::GRANTS_FILE);
        cfg.asked = grants::load(&cfg.grants_file).map_err(|e| ConfigError::Flag(e.to_string()))?;
        Ok(cfg)
    }

    /// Parse config text holding only core sections (other keys are refused); relative paths
    /// resolve against `base`. The whole file, every owner's sections, is read by the CLI.
    pub fn from_str_at(text: &str, base: &Path, source: Option<PathBuf>) -> Result<Config, ConfigError> {
        let file = ConfigFile::parse(text, base, source)?;
        let cfg = Config::from_file(&file)?;
        file.finish()?;
        Ok(cfg)
    }

    /// Grant `plugin` (or every plugin, for `*`) the workspace with `mode`, as
    /// `[plugin.NAME] fs = [{ path = "workspace", mode = … }]` would.
    pub fn grant_workspace(&mut self, plugin: &str, mode: FsMode) {
        let g = self.workspace_grant(mode);
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        match entry.fs.iter_mut().find(|f| f.name == "workspace") {
            Some(existing) => existing.mode = existing.mode.max(mode),
            None => entry.fs.push(g),
        }
    }

    /// Grant `plugin` (or `*`) the environment variable `var` (`--allow-env`).
    pub fn grant_env(&mut self, plugin: &str, var: &str) -> Result<(), ConfigError> {
        toolhost_spec::env_name::check(var).map_err(|why| {
            ConfigError::Flag(format!("--allow-env: {var:?} is not a variable name ({why})"))
        })?;
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        if !entry.env.vars.iter().any(|v| v == var) {
            entry.env.vars.push(var.to_string());
        }
        Ok(())
    }

    /// Grant `plugin` (or `*`) network access to hosts matching `pattern` (`--allow-net`).
    pub fn grant_net(&mut self, plugin: &str, pattern: &str) -> Result<(), ConfigError> {
        toolhost_spec::HostPattern::parse(pattern)
            .map_err(|m| ConfigError::Flag(format!("--allow-net: {m}")))?;
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        if !entry.net.hosts.iter().any(|v| v == pattern) {
            entry.net.hosts.push(pattern.to_string());
        }
        Ok(())
    }

    /// `--allow-run PLUGIN=PROGRAM`: grant `plugin` (or `*`) the program, with any arguments,
    /// no environment, in the workspace (read-only to it), no network. A bare name is resolved
    /// now, by the operator's `PATH` (the plugin never chooses the executable); `list` shows
    /// the absolute path.
    pub fn grant_run(&mut self, plugin: &str, program: &str) -> Result<(), ConfigError> {
        let path = if program.starts_with('/') {
            PathBuf::from(program)
        } else if program.contains('/') || program.is_empty() {
            return Err(ConfigError::Flag(format!(
                "--allow-run: {program:?} is neither a program name nor an absolute path"
            )));
        } else {
            crate::capability::process::resolve_in_path(program).ok_or_else(|| {
                ConfigError::Flag(format!(
                    "--allow-run: no executable `{program}` in PATH; give its absolute path (--allow-run {plugin}=/path/to/{program})"
                ))
            })?
        };
        let grant = ExecGrant::new(path);
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        if !entry.exec.iter().any(|g| g.program == grant.program) {
            entry.exec.push(grant);
        }
        Ok(())
    }

    /// `--allow-kv PLUGIN=BUCKET`: grant `plugin` (or `*`) the bucket.
    pub fn grant_kv(&mut self, plugin: &str, bucket: &str) -> Result<(), ConfigError> {
        if !toolhost_spec::manifest::is_bucket_name(bucket) {
            return Err(ConfigError::Flag(format!(
                "--allow-kv: {bucket:?} {}",
                toolhost_spec::manifest::BUCKET_RULE
            )));
        }
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        if !entry.kv.iter().any(|b| b == bucket) {
            entry.kv.push(bucket.to_string());
        }
        Ok(())
    }

    /// Each plugin section's name and its `exec` grants.
    pub fn exec_grants(&self) -> impl Iterator<Item = (&str, &[ExecGrant])> {
        self.plugins.iter().map(|(name, p)| (name.as_str(), p.exec.as_slice()))
    }

    /// Change the workspace; workspace grants follow it.
    pub fn set_workspace(&mut self, dir: &Path) {
        let ws = normalize(&absolute(dir));
        for p in self.plugins.values_mut() {
            for f in p.fs.iter_mut().filter(|f| f.name == "workspace") {
                (f.host_path, f.create) = (ws.clone(), false);
            }
        }
        self.workspace = ws;
        self.workspace_is_default = false;
    }

    /// Every secret the host reads: `[secrets]` and the front ends' ([`Config::extra_secrets`]);
    /// the one set redacted from audited and exported arguments
    /// (`capability::net::redaction_set`).
    pub fn secret_sources(&self) -> impl Iterator<Item = &SecretSource> {
        self.secrets.values().chain(&self.extra_secrets)
    }

    /// The workspace granted with `mode` (created on first use when it is the default one).
    pub fn workspace_grant(&self, mode: FsMode) -> FsGrant {
        FsGrant {
            name: "workspace".into(),
            host_path: self.workspace.clone(),
            mode,
            create: self.workspace_is_default,
        }
    }

    /// The operator's grants for `plugin`: its own section merged with the `*` section, and
    /// the answers of its grants file.
    pub fn plugin(&self, plugin: &str) -> PluginConfig {
        let mut out = self.plugin_without_asked(plugin);
        for g in self.asked.iter().filter(|g| g.plugin == plugin && !g.deny) {
            self.merge_asked(&mut out, &g.item);
        }
        out
    }

    /// The plugin's `on_missing` (its section's, else `[plugin."*"]`'s), read without building
    /// its whole [`Config::plugin`] (a call's preparation reads it).
    pub fn on_missing(&self, plugin: &str) -> Option<OnMissing> {
        let own = self.plugins.get(plugin).and_then(|p| p.on_missing);
        own.or_else(|| self.plugins.get("*").and_then(|p| p.on_missing))
    }

    /// [`Config::plugin`] without the grants file.
    fn plugin_without_asked(&self, plugin: &str) -> PluginConfig {
        let mut out = self.plugins.get(plugin).cloned().unwrap_or_default();
        if let Some(all) = self.plugins.get("*") {
            for g in &all.fs {
                match out.fs.iter_mut().find(|f| f.name == g.name) {
                    Some(f) => f.mode = f.mode.max(g.mode),
                    None => out.fs.push(g.clone()),
                }
            }
            out.env.merge(&all.env);
            out.net.merge(&all.net);
            for g in &all.exec {
                if !out.exec.iter().any(|e| e.program == g.program) {
                    out.exec.push(g.clone());
                }
            }
            for b in &all.kv {
                if !out.kv.contains(b) {
                    out.kv.push(b.clone());
                }
            }
            for d in &all.app_domains {
                if !out.app_domains.contains(d) {
                    out.app_domains.push(d.clone());
                }
            }
            out.on_missing = out.on_missing.or(all.on_missing);
            out.asked_grants = out.asked_grants.or(all.asked_grants);
            out.kv_scope = out.kv_scope.or(all.kv_scope);
        }
        out
    }

    /// One asked item added to a plugin's grants: a directory only while it is the workspace
    /// (an answer about another workspace grants nothing here), a program with exactly the
    /// arguments asked about.
    fn merge_asked(&self, out: &mut PluginConfig, item: &GrantItem) {
        match item {
            GrantItem::Net(host) if !out.net.hosts.contains(host) => out.net.hosts.push(host.clone()),
            GrantItem::Net(_) => {}
            GrantItem::Secret(name) if !out.net.secrets.contains(name) => out.net.secrets.push(name.clone()),
            GrantItem::Secret(_) => {}
            GrantItem::Fs { path, write } => {
                if Path::new(path) != self.workspace || out.fs.iter().any(|f| f.name == "workspace") {
                    return;
                }
                let mode = if *write { FsMode::ReadWrite } else { FsMode::ReadOnly };
                out.fs.push(self.workspace_grant(mode));
            }
            GrantItem::Kv(bucket) if !out.kv.contains(bucket) => out.kv.push(bucket.clone()),
            GrantItem::Kv(_) => {}
            GrantItem::Exec { program, args } => {
                let pattern = crate::capability::process::ArgPattern::new(&args.join(" "));
                let asked = crate::capability::process::ExecGrant {
                    args: Some(vec![pattern.clone()]),
                    ..crate::capability::process::ExecGrant::new(PathBuf::from(program))
                };
                match out.exec.iter_mut().find(|e| e.name == asked.name) {
                    // Another asked answer for the program: one more exact argument list. A
                    // grant of the operator's (other powers, or any arguments) decides alone:
                    // an answer never borrows its environment, directories or network.
                    Some(e) if ExecGrant { args: asked.args.clone(), ..e.clone() } == asked => {
                        let list = e.args.get_or_insert_with(Vec::new);
                        if !list.contains(&pattern) {
                            list.push(pattern);
                        }
                    }
                    Some(_) => {}
                    None => out.exec.push(asked),
                }
            }
        }
    }

    /// [`Config::plugin`] for the plugin file whose SHA-256 is `sha256`: under `asked_grants =
    /// "this_version"`, the answers given for another file are left out.
    pub fn plugin_file(&self, plugin: &str, sha256: &[u8; 32]) -> PluginConfig {
        let out = self.plugin(plugin);
        if out.asked_grants != Some(AskedGrants::ThisVersion) {
            return out;
        }
        let here = hex::encode(sha256);
        let mut out = self.plugin_without_asked(plugin);
        for g in self.asked_for(plugin).filter(|g| !g.deny && g.sha256.as_deref() == Some(&here)) {
            self.merge_asked(&mut out, &g.item);
        }
        out
    }

    /// The answers in the grants file about `plugin`.
    pub fn asked_for<'a>(&'a self, plugin: &'a str) -> impl Iterator<Item = &'a AskedGrant> {
        self.asked.iter().filter(move |g| g.plugin == plugin)
    }

    /// Effective limits for a tool: defaults ← plugin overrides ← manifest output limit ←
    /// tool overrides (the operator's word on a tool is last).
    pub fn limits_for(&self, plugin: &str, tool: &str, manifest_output_limit: Option<usize>) -> Limits {
        self.limits_with(plugin, tool, manifest_output_limit, None)
    }

    /// The limits of a call of `spec` (a tool of `plugin`), with what its manifest asks for:
    /// `timeoutMs` replaces `[limits] timeout_ms` up to `[limits] max_timeout_ms` (the
    /// operator's `[plugin.X]` and `[tool.X]` `timeout_ms` still win), `outputLimit` as in
    /// [`Config::limits_for`].
    pub fn limits_for_tool(&self, plugin: &str, spec: &toolhost_spec::manifest::ToolSpec) -> Limits {
        self.limits_with(plugin, &spec.name, spec.output_limit, spec.timeout_ms)
    }

    /// The limits of a run of `plugin`'s code that is no tool's (a resource read): the
    /// defaults and the operator's `[plugin.NAME]`.
    pub fn limits_for_plugin(&self, plugin: &str) -> Limits {
        let mut l = self.limits;
        if let Some(p) = self.plugins.get(plugin) {
            p.limits.apply(&mut l);
        }
        l
    }

    fn limits_with(
        &self,
        plugin: &str,
        tool: &str,
        manifest_output_limit: Option<usize>,
        manifest_timeout_ms: Option<u64>,
    ) -> Limits {
        let mut l = self.limits;
        if let Some(t) = manifest_timeout_ms {
            l.timeout_ms = t.min(self.max_timeout_ms);
        }
        if let Some(p) = self.plugins.get(plugin) {
            p.limits.apply(&mut l);
        }
        if let Some(o) = manifest_output_limit {
            l.output_limit = o;
        }
        if let Some(t) = self.tools.get(tool) {
            t.limits.apply(&mut l);
        }
        l
    }

    /// The largest memory limit any call can get (sizes the instance pool).
    pub fn max_memory_mb(&self) -> u64 {
        let overrides = self.plugins.values().filter_map(|p| p.limits.memory_mb);
        let tools = self.tools.values().filter_map(|t| t.limits.memory_mb);
        let scripts = self.code_mode.enabled.then_some(self.code_mode.memory_mb);
        overrides.chain(tools).chain(scripts).fold(self.limits.memory_mb, u64::max)
    }

    /// Sandboxes that may be live at once: `[limits] concurrency` tool calls, and in code mode
    /// `[code_mode] concurrency` scripts (what the instance pool is sized for).
    pub fn pool_calls(&self) -> u32 {
        let scripts = if self.code_mode.enabled { self.code_mode.concurrency } else { 0 };
        self.concurrency.saturating_add(scripts)
    }

    /// How many calls of `plugin` may run at once: its `[plugin.X] concurrency`, else
    /// `[limits] plugin_concurrency`.
    pub fn concurrency_for(&self, plugin: &str) -> u32 {
        self.plugins.get(plugin).and_then(|p| p.concurrency).unwrap_or(self.plugin_concurrency).max(1)
    }

    /// Whether the operator marked `tool` dangerous.
    pub fn tool_marked_dangerous(&self, tool: &str) -> bool {
        self.tools.get(tool).and_then(|t| t.danger).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests;

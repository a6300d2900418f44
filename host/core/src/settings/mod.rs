//! `toolhost.toml`: parsed strictly into a raw form (unknown keys are errors naming the key and
//! the file), then resolved into absolute paths and checked values. With no config file and no
//! command-line grants, nothing is granted to any plugin.

use crate::manifest::FsMode;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// File name looked up in the current directory when `--config` is not given.
pub const DEFAULT_FILE: &str = "toolhost.toml";

/// A config problem, naming the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{0}")]
    Flag(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    plugins: Option<PathBuf>,
    workspace: Option<PathBuf>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    danger: RawDanger,
    #[serde(default)]
    cache: RawCache,
    #[serde(default)]
    net: RawNet,
    #[serde(default)]
    secrets: BTreeMap<String, RawSecret>,
    #[serde(default)]
    plugin: BTreeMap<String, RawPlugin>,
    #[serde(default)]
    tool: BTreeMap<String, RawTool>,
    /// Signature policy (see `signing`).
    #[serde(default)]
    trust: crate::signing::RawTrust,
    /// Per-registry credentials and transport (see `oci`).
    #[serde(default)]
    registry: BTreeMap<String, crate::oci::RawRegistry>,
    #[serde(default)]
    model: RawModel,
    #[serde(default)]
    mcp: RawMcp,
    /// `serve` as a service: shutdown (see `service`).
    #[serde(default)]
    serve: crate::service::RawServe,
    /// The audit trail of calls (see `service::audit`).
    #[serde(default)]
    audit: crate::service::RawAudit,
    /// Approvals pinned in the config, for read-only plugin folders (see `approvals`).
    #[serde(default)]
    approvals: crate::approvals::RawApprovals,
    /// How programs run for plugins are confined (see `process::confine`).
    #[serde(default)]
    process: crate::process::confine::RawProcess,
}

/// `[model]`: the model `toolhost chat` talks to.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    api_key_secret: Option<String>,
    protocol: Option<crate::agent::Protocol>,
    max_steps: Option<usize>,
    system: Option<String>,
    temperature: Option<f64>,
    timeout_s: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    /// Bearer tokens accepted by `serve --mcp --http`.
    #[serde(default)]
    tokens: Vec<RawMcpToken>,
    /// Seconds a 2026-07-28 client has to answer a danger confirmation.
    approval_ttl_s: Option<u64>,
}

/// A token's value never appears in the config: it comes from a `[secrets.X]`, an env var or a file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcpToken {
    name: String,
    secret: Option<String>,
    env: Option<String>,
    file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNet {
    timeout_ms: Option<u64>,
    max_response_kb: Option<u64>,
    max_redirects: Option<u32>,
    max_requests_per_call: Option<u32>,
    /// Largest request body a plugin may send (KiB).
    max_request_kb: Option<u64>,
    /// Bytes one call may send and receive over HTTP in total (MiB).
    max_transfer_mb: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSecret {
    /// Read the value from this environment variable of the host.
    env: Option<String>,
    /// Or from this file (trailing newline removed).
    file: Option<PathBuf>,
    /// Send it only to these origins: `host` (https on 443), `host:port` (https),
    /// `http://host[:port]`; host patterns as in `net`. Default: https on port 443 of any host
    /// the plugin may reach.
    #[serde(default)]
    hosts: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    output_limit: Option<usize>,
    stack_kb: Option<usize>,
    max_plugin_mb: Option<u64>,
    concurrency: Option<u32>,
    /// Default cap on one plugin's concurrent calls (default: half of `concurrency`).
    plugin_concurrency: Option<u32>,
    /// Log lines per second per plugin, across its calls (burst: ten seconds' worth).
    log_rate: Option<u32>,
    write_mb: Option<u64>,
    create_limit: Option<u32>,
    log_kb: Option<u64>,
    log_lines: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDanger {
    policy: Option<DangerPolicy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCache {
    /// Directory for compiled code; `false` in `enabled` turns the disk cache off.
    dir: Option<PathBuf>,
    enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlugin {
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
    /// Programs it may run (see `crate::process`).
    #[serde(default)]
    exec: Vec<crate::process::RawExec>,
    /// Values the operator gives the plugin, seen by it as environment variables of these
    /// names (only names its manifest requests with `env`).
    #[serde(default)]
    settings: BTreeMap<String, String>,
    timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    output_limit: Option<usize>,
    write_mb: Option<u64>,
    create_limit: Option<u32>,
    log_kb: Option<u64>,
    log_lines: Option<u32>,
    /// At most this many calls of this plugin at once.
    concurrency: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFs {
    path: String,
    mode: FsMode,
    /// Logical name the plugin requests this directory by (default: `workspace` for the
    /// workspace, else the path as written).
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    danger: Option<bool>,
    timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    output_limit: Option<usize>,
    write_mb: Option<u64>,
    create_limit: Option<u32>,
    log_kb: Option<u64>,
    log_lines: Option<u32>,
}

fn resolve_mcp(
    raw: RawMcp,
    secrets: &BTreeMap<String, SecretSource>,
    base: &Path,
) -> Result<McpSettings, String> {
    let mut out = McpSettings::default();
    if let Some(s) = raw.approval_ttl_s {
        if !(1..=3600).contains(&s) {
            return Err(format!("mcp.approval_ttl_s = {s} is outside 1..=3600"));
        }
        out.approval_ttl = std::time::Duration::from_secs(s);
    }
    for (i, t) in raw.tokens.into_iter().enumerate() {
        let key = format!("mcp.tokens[{i}]");
        if t.name.is_empty() || out.tokens.iter().any(|(n, _)| *n == t.name) {
            return Err(format!(
                "{key}: name {:?} is empty or used twice; give each token its own name",
                t.name
            ));
        }
        let own = format!("mcp token `{}`", t.name);
        let source = match (t.secret, t.env, t.file) {
            (Some(s), None, None) => secrets.get(&s).cloned().ok_or_else(|| {
                format!("{key}: no secret `{s}` is defined; add [secrets.{s}] with env = \"VAR\" or file = \"path\"")
            })?,
            (None, Some(var), None) => SecretSource { name: own, from: SecretFrom::Env(var), hosts: vec![] },
            (None, None, Some(f)) => SecretSource { name: own, from: SecretFrom::File(base.join(f)), hosts: vec![] },
            _ => {
                return Err(format!(
                    "{key}: give exactly one of `secret = \"NAME\"` (a [secrets.NAME]), `env = \"VAR\"` or \
                     `file = \"path\"`; a token's value never goes in the config file"
                ));
            }
        };
        out.tokens.push((t.name, source));
    }
    Ok(out)
}

/// What happens when a `danger` tool is called.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
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

/// Per-call limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout_ms: u64,
    pub memory_mb: u64,
    pub output_limit: usize,
    /// Bytes one call may write to granted directories (writes, appends, `set-size` growth), MiB.
    pub write_mb: u64,
    /// Files and directories one call may create in granted directories.
    pub create_limit: u32,
    /// Bytes of `log` messages kept per call (KiB); the rest is counted and dropped.
    pub log_kb: u64,
    /// `log` lines kept per call; the rest is counted and dropped.
    pub log_lines: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: 10_000,
            memory_mb: 64,
            output_limit: 10_000,
            write_mb: 64,
            create_limit: 1000,
            log_kb: 64,
            log_lines: 1000,
        }
    }
}

/// Optional overrides of [`Limits`] for one plugin or tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    pub timeout_ms: Option<u64>,
    pub memory_mb: Option<u64>,
    pub output_limit: Option<usize>,
    pub write_mb: Option<u64>,
    pub create_limit: Option<u32>,
    pub log_kb: Option<u64>,
    pub log_lines: Option<u32>,
}

impl LimitOverrides {
    fn apply(&self, l: &mut Limits) {
        if let Some(v) = self.timeout_ms {
            l.timeout_ms = v;
        }
        if let Some(v) = self.memory_mb {
            l.memory_mb = v;
        }
        if let Some(v) = self.output_limit {
            l.output_limit = v;
        }
        if let Some(v) = self.write_mb {
            l.write_mb = v;
        }
        if let Some(v) = self.create_limit {
            l.create_limit = v;
        }
        if let Some(v) = self.log_kb {
            l.log_kb = v;
        }
        if let Some(v) = self.log_lines {
            l.log_lines = v;
        }
    }
}

/// A directory the operator grants to a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsGrant {
    /// The logical name a plugin requests it by (`workspace`, `docs`, …).
    pub name: String,
    /// Absolute host path.
    pub host_path: PathBuf,
    pub mode: FsMode,
}

impl FsGrant {
    /// Where the plugin sees the directory: the workspace is the guest's `.`, other
    /// directories are `/NAME`.
    pub fn guest_path(&self) -> String {
        if self.name == "workspace" { ".".to_string() } else { format!("/{}", self.name) }
    }
}

/// Everything the operator grants one plugin, plus its limit overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginConfig {
    pub fs: Vec<FsGrant>,
    pub env: Vec<String>,
    /// Host patterns: `example.com`, `*.example.com` (subdomains only), `*` (any host).
    pub net: Vec<String>,
    /// Granted hosts may resolve to loopback/private/link-local addresses.
    pub net_private: bool,
    /// Names of secrets (defined under `[secrets.NAME]`).
    pub secrets: Vec<String>,
    /// Programs it may run.
    pub exec: Vec<crate::process::ExecGrant>,
    /// Environment variables given by value in the config (`settings = { NAME = "value" }`).
    pub settings: BTreeMap<String, String>,
    pub limits: LimitOverrides,
    /// At most this many calls of the plugin at once (default: [`Config::plugin_concurrency`]).
    pub concurrency: Option<u32>,
}

/// Network settings for every plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetSettings {
    /// Upper bound for one request (the call's own deadline may be sooner).
    pub timeout_ms: u64,
    /// Response bodies are cut at this size.
    pub max_response_bytes: u64,
    pub max_redirects: u32,
    pub max_requests_per_call: u32,
    /// Request bodies larger than this are refused before anything is sent.
    pub max_request_bytes: u64,
    /// Bytes one call may send (bodies) and receive (bodies) over HTTP in total.
    pub max_transfer_bytes: u64,
}

impl Default for NetSettings {
    fn default() -> Self {
        NetSettings {
            timeout_ms: 10_000,
            max_response_bytes: 2 * 1024 * 1024,
            max_redirects: 5,
            max_requests_per_call: 32,
            max_request_bytes: 1024 * 1024,
            max_transfer_bytes: 16 * 1024 * 1024,
        }
    }
}

/// The longest secret value accepted (bytes).
pub const MAX_SECRET_BYTES: usize = 16 * 1024;

/// Where a secret's value comes from. The value is read when a plugin is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretSource {
    pub name: String,
    pub from: SecretFrom,
    /// Send only to these origins (empty: https on port 443 of any host the plugin may reach).
    pub hosts: Vec<crate::net::SecretOrigin>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretFrom {
    Env(String),
    File(PathBuf),
}

impl SecretSource {
    /// Read the value now.
    pub fn read(&self) -> Result<String, String> {
        let v = match &self.from {
            SecretFrom::Env(var) => std::env::var(var)
                .map_err(|_| format!("secret `{}`: environment variable {var} is not set", self.name))?,
            SecretFrom::File(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("secret `{}`: cannot read {}: {e}", self.name, path.display()))?
                .trim_end_matches(['\n', '\r'])
                .to_string(),
        };
        if v.len() > MAX_SECRET_BYTES {
            // Every response to a plugin holding it is read this far past its cut (see
            // `net`), and a header this long is refused by most servers anyway.
            return Err(format!(
                "secret `{}` is {} bytes long, more than the {MAX_SECRET_BYTES} a secret may have",
                self.name,
                v.len()
            ));
        }
        if v.chars().count() < 8 {
            // Redaction replaces every occurrence of the value in outputs: a very short value
            // would garble them, and is not much of a secret either.
            return Err(format!(
                "secret `{}` is shorter than 8 characters, too short to be redacted reliably",
                self.name
            ));
        }
        Ok(v)
    }
}

/// Operator settings for one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolConfig {
    /// `Some(true)`: dangerous whatever the manifest says.
    pub danger: Option<bool>,
    pub limits: LimitOverrides,
}

/// `[model]`, resolved: the model `toolhost chat` talks to (command-line flags override it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelConfig {
    /// The API root, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The API key is read from this environment variable…
    pub api_key_env: Option<String>,
    /// …or from this `[secrets.NAME]` entry.
    pub api_key_secret: Option<String>,
    pub protocol: Option<crate::agent::Protocol>,
    pub max_steps: Option<usize>,
    pub system: Option<String>,
    pub temperature: Option<f64>,
    /// Longest silence from the server, in seconds.
    pub timeout_s: Option<u64>,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the config came from, if a file.
    pub source: Option<PathBuf>,
    pub plugins_dir: PathBuf,
    pub workspace: PathBuf,
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
    pub danger: DangerPolicy,
    /// Compiled-code cache directory; `None` keeps compiled code in memory only.
    pub cache_dir: Option<PathBuf>,
    pub net: NetSettings,
    pub secrets: BTreeMap<String, SecretSource>,
    pub plugins: BTreeMap<String, PluginConfig>,
    pub tools: BTreeMap<String, ToolConfig>,
    /// `[trust]`: trusted signing keys and whether plugins must be signed.
    pub trust: crate::signing::Trust,
    /// `[registry."HOST"]`: credentials and transport for OCI registries.
    pub registries: BTreeMap<String, crate::oci::RegistryConfig>,
    pub model: ModelConfig,
    pub mcp: McpSettings,
    /// `[serve]`: how `serve` behaves as a service.
    pub serve: crate::service::ServeSettings,
    /// `[audit]`: where the audit trail goes.
    pub audit: crate::service::AuditSettings,
    /// `[approvals]`: approvals pinned in the config.
    pub approvals: crate::approvals::ApprovalLock,
    /// `[process]`: how programs run for plugins are confined.
    pub process: std::sync::Arc<crate::process::confine::ProcessSettings>,
}

/// The `[mcp]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// Bearer tokens for MCP over HTTP, by name (the name identifies the client in logs).
    pub tokens: Vec<(String, SecretSource)>,
    pub approval_ttl: std::time::Duration,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings { tokens: Vec::new(), approval_ttl: std::time::Duration::from_secs(300) }
    }
}

impl Default for Config {
    fn default() -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Config {
            source: None,
            plugins_dir: cwd.join("plugins"),
            workspace: cwd,
            limits: Limits::default(),
            stack_kb: 512,
            max_plugin_bytes: 64 * 1024 * 1024,
            concurrency: 32,
            plugin_concurrency: 16,
            log_rate: 100,
            danger: DangerPolicy::Ask,
            cache_dir: crate::runtime::default_cache_dir(),
            net: NetSettings::default(),
            secrets: BTreeMap::new(),
            plugins: BTreeMap::new(),
            tools: BTreeMap::new(),
            trust: crate::signing::Trust::default(),
            registries: BTreeMap::new(),
            model: ModelConfig::default(),
            mcp: McpSettings::default(),
            serve: crate::service::ServeSettings::default(),
            audit: crate::service::AuditSettings::default(),
            approvals: crate::approvals::ApprovalLock::default(),
            process: Default::default(),
        }
    }
}

impl Config {
    /// Load `path`, or `./toolhost.toml` if it exists, or the defaults.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        match path {
            Some(p) => Self::from_file(p),
            None => {
                let default = Path::new(DEFAULT_FILE);
                if default.is_file() { Self::from_file(default) } else { Ok(Config::default()) }
            }
        }
    }

    /// Parse a config file; relative paths in it are relative to the file's directory.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        let abs = absolute(path);
        let base = abs.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
        Self::from_str_at(&text, &base, Some(abs))
    }

    /// Parse config text; relative paths resolve against `base`.
    pub fn from_str_at(text: &str, base: &Path, source: Option<PathBuf>) -> Result<Config, ConfigError> {
        let shown = source.clone().unwrap_or_else(|| PathBuf::from("<config>"));
        let invalid = |message: String| ConfigError::Invalid { path: shown.clone(), message };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| invalid(e.to_string().trim_end().to_string()))?;
        let mut cfg = Config { source, ..Config::default() };
        cfg.plugins_dir = base.join(raw.plugins.unwrap_or_else(|| PathBuf::from("plugins")));
        cfg.workspace = normalize(&base.join(raw.workspace.unwrap_or_else(|| PathBuf::from("."))));
        let l = &raw.limits;
        let d = Limits::default();
        cfg.limits = Limits {
            timeout_ms: l.timeout_ms.unwrap_or(d.timeout_ms),
            memory_mb: l.memory_mb.unwrap_or(d.memory_mb),
            output_limit: l.output_limit.unwrap_or(d.output_limit),
            write_mb: l.write_mb.unwrap_or(d.write_mb),
            create_limit: l.create_limit.unwrap_or(d.create_limit),
            log_kb: l.log_kb.unwrap_or(d.log_kb),
            log_lines: l.log_lines.unwrap_or(d.log_lines),
        };
        cfg.stack_kb = l.stack_kb.unwrap_or(cfg.stack_kb);
        if let Some(mb) = l.max_plugin_mb {
            cfg.max_plugin_bytes = mb * 1024 * 1024;
        }
        check_limits(
            "limits",
            &LimitOverrides {
                timeout_ms: Some(cfg.limits.timeout_ms),
                memory_mb: Some(cfg.limits.memory_mb),
                output_limit: Some(cfg.limits.output_limit),
                write_mb: Some(cfg.limits.write_mb),
                create_limit: Some(cfg.limits.create_limit),
                log_kb: Some(cfg.limits.log_kb),
                log_lines: Some(cfg.limits.log_lines),
            },
        )
        .map_err(invalid)?;
        if !(64..=64 * 1024).contains(&cfg.stack_kb) {
            return Err(invalid(format!("limits.stack_kb = {} is outside 64..=65536", cfg.stack_kb)));
        }
        if let Some(c) = l.concurrency {
            if !(1..=1024).contains(&c) {
                return Err(invalid(format!("limits.concurrency = {c} is outside 1..=1024")));
            }
            cfg.concurrency = c;
        }
        cfg.plugin_concurrency = match l.plugin_concurrency {
            Some(c) if !(1..=cfg.concurrency).contains(&c) => {
                return Err(invalid(format!(
                    "limits.plugin_concurrency = {c} is outside 1..={} (limits.concurrency)",
                    cfg.concurrency
                )));
            }
            Some(c) => c,
            None => default_plugin_concurrency(cfg.concurrency),
        };
        if let Some(r) = l.log_rate {
            if r == 0 {
                return Err(invalid("limits.log_rate must be at least 1 (lines per second)".into()));
            }
            cfg.log_rate = r;
        }
        if cfg.max_plugin_bytes == 0 {
            return Err(invalid("limits.max_plugin_mb must be at least 1".into()));
        }
        cfg.danger = raw.danger.policy.unwrap_or_default();
        if let Some(dir) = raw.cache.dir {
            cfg.cache_dir = Some(base.join(dir));
        }
        if raw.cache.enabled == Some(false) {
            cfg.cache_dir = None;
        }
        let n = &raw.net;
        let dn = NetSettings::default();
        cfg.net = NetSettings {
            timeout_ms: n.timeout_ms.unwrap_or(dn.timeout_ms),
            max_response_bytes: n.max_response_kb.map(|kb| kb * 1024).unwrap_or(dn.max_response_bytes),
            max_redirects: n.max_redirects.unwrap_or(dn.max_redirects),
            max_requests_per_call: n.max_requests_per_call.unwrap_or(dn.max_requests_per_call),
            max_request_bytes: n.max_request_kb.map(|kb| kb * 1024).unwrap_or(dn.max_request_bytes),
            max_transfer_bytes: n.max_transfer_mb.map(|mb| mb * 1024 * 1024).unwrap_or(dn.max_transfer_bytes),
        };
        if cfg.net.timeout_ms == 0 || cfg.net.max_response_bytes == 0 || cfg.net.max_requests_per_call == 0 {
            return Err(invalid(
                "net.timeout_ms, net.max_response_kb and net.max_requests_per_call must be at least 1".into(),
            ));
        }
        if cfg.net.max_request_bytes == 0 || cfg.net.max_transfer_bytes == 0 {
            return Err(invalid("net.max_request_kb and net.max_transfer_mb must be at least 1".into()));
        }
        for (name, sec) in raw.secrets {
            let key = format!("secrets.{name}");
            let from = match (sec.env, sec.file) {
                (Some(var), None) => SecretFrom::Env(var),
                (None, Some(file)) => SecretFrom::File(base.join(file)),
                _ => {
                    return Err(invalid(format!(
                        "{key}: give exactly one of `env = \"VAR\"` or `file = \"path\"`"
                    )));
                }
            };
            let hosts = (sec.hosts.iter().enumerate())
                .map(|(i, h)| {
                    crate::net::SecretOrigin::parse(h).map_err(|m| invalid(format!("{key}.hosts[{i}]: {m}")))
                })
                .collect::<Result<_, _>>()?;
            cfg.secrets.insert(name.clone(), SecretSource { name, from, hosts });
        }
        cfg.mcp = resolve_mcp(raw.mcp, &cfg.secrets, base).map_err(invalid)?;
        for (name, p) in raw.plugin {
            let key = format!("plugin.{name}");
            let mut grant = PluginConfig {
                limits: LimitOverrides {
                    timeout_ms: p.timeout_ms,
                    memory_mb: p.memory_mb,
                    output_limit: p.output_limit,
                    write_mb: p.write_mb,
                    create_limit: p.create_limit,
                    log_kb: p.log_kb,
                    log_lines: p.log_lines,
                },
                concurrency: p.concurrency,
                env: p.env,
                net: p.net,
                net_private: p.net_private.unwrap_or(false),
                secrets: p.secrets,
                fs: Vec::new(),
                exec: Vec::new(),
                settings: p.settings,
            };
            for (i, e) in p.exec.into_iter().enumerate() {
                grant.exec.push(e.resolve(&format!("{key}.exec[{i}]"), base).map_err(&invalid)?);
            }
            for var in grant.settings.keys() {
                if var.is_empty() || var.contains('=') || var.contains('\0') {
                    return Err(invalid(format!("{key}.settings: {var:?} is not a variable name")));
                }
            }
            for (i, h) in grant.net.iter().enumerate() {
                check_host_pattern(h).map_err(|m| invalid(format!("{key}.net[{i}]: {m}")))?;
            }
            for (i, s) in grant.secrets.iter().enumerate() {
                if !cfg.secrets.contains_key(s) {
                    return Err(invalid(format!(
                        "{key}.secrets[{i}]: no secret `{s}` is defined; add [secrets.{s}] with env = \"VAR\" or file = \"path\""
                    )));
                }
            }
            check_limits(&key, &grant.limits).map_err(invalid)?;
            if let Some(c) = grant.concurrency
                && !(1..=cfg.concurrency).contains(&c)
            {
                return Err(invalid(format!(
                    "{key}.concurrency = {c} is outside 1..={} (limits.concurrency)",
                    cfg.concurrency
                )));
            }
            for (i, fs) in p.fs.into_iter().enumerate() {
                let g = resolve_fs(&cfg.workspace, base, &fs.path, fs.mode, fs.name)
                    .map_err(|m| invalid(format!("{key}.fs[{i}]: {m}")))?;
                grant.fs.push(g);
            }
            for (i, var) in grant.env.iter().enumerate() {
                if var.is_empty() || var.contains('=') {
                    return Err(invalid(format!("{key}.env[{i}]: {var:?} is not a variable name")));
                }
            }
            cfg.plugins.insert(name, grant);
        }
        for (name, t) in raw.tool {
            let limits = LimitOverrides {
                timeout_ms: t.timeout_ms,
                memory_mb: t.memory_mb,
                output_limit: t.output_limit,
                write_mb: t.write_mb,
                create_limit: t.create_limit,
                log_kb: t.log_kb,
                log_lines: t.log_lines,
            };
            check_limits(&format!("tool.{name}"), &limits).map_err(invalid)?;
            cfg.tools.insert(name, ToolConfig { danger: t.danger, limits });
        }
        cfg.trust = crate::signing::Trust::resolve(raw.trust, base).map_err(invalid)?;
        cfg.registries = crate::oci::RegistryConfig::resolve(raw.registry, &cfg.secrets).map_err(invalid)?;
        cfg.model = resolve_model(raw.model, &cfg.secrets).map_err(invalid)?;
        cfg.serve = crate::service::ServeSettings::resolve(raw.serve).map_err(&invalid)?;
        cfg.audit = crate::service::AuditSettings::resolve(raw.audit, base).map_err(&invalid)?;
        cfg.approvals = crate::approvals::ApprovalLock::resolve(raw.approvals).map_err(&invalid)?;
        cfg.process = std::sync::Arc::new(raw.process.resolve().map_err(&invalid)?);
        Ok(cfg)
    }

    /// Grant `plugin` (or every plugin, for `*`) the workspace with `mode`, as
    /// `[plugin.NAME] fs = [{ path = "workspace", mode = … }]` would.
    pub fn grant_workspace(&mut self, plugin: &str, mode: FsMode) {
        let g = FsGrant { name: "workspace".into(), host_path: self.workspace.clone(), mode };
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        match entry.fs.iter_mut().find(|f| f.name == "workspace") {
            Some(existing) => existing.mode = existing.mode.max(mode),
            None => entry.fs.push(g),
        }
    }

    /// Grant `plugin` (or `*`) the environment variable `var`.
    pub fn grant_env(&mut self, plugin: &str, var: &str) -> Result<(), ConfigError> {
        if var.is_empty() || var.contains('=') {
            return Err(ConfigError::Flag(format!("--allow-env: {var:?} is not a variable name")));
        }
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        if !entry.env.iter().any(|v| v == var) {
            entry.env.push(var.to_string());
        }
        Ok(())
    }

    /// Grant `plugin` (or `*`) network access to hosts matching `pattern`.
    pub fn grant_net(&mut self, plugin: &str, pattern: &str) -> Result<(), ConfigError> {
        check_host_pattern(pattern).map_err(|m| ConfigError::Flag(format!("--allow-net: {m}")))?;
        let entry = self.plugins.entry(plugin.to_string()).or_default();
        if !entry.net.iter().any(|v| v == pattern) {
            entry.net.push(pattern.to_string());
        }
        Ok(())
    }

    /// Change the workspace; workspace grants follow it.
    pub fn set_workspace(&mut self, dir: &Path) {
        let ws = normalize(&absolute(dir));
        for p in self.plugins.values_mut() {
            for f in p.fs.iter_mut().filter(|f| f.name == "workspace") {
                f.host_path = ws.clone();
            }
        }
        self.workspace = ws;
    }

    /// The operator's grants for `plugin`: its own section merged with the `*` section.
    pub fn plugin(&self, plugin: &str) -> PluginConfig {
        let mut out = self.plugins.get(plugin).cloned().unwrap_or_default();
        if let Some(all) = self.plugins.get("*") {
            for g in &all.fs {
                match out.fs.iter_mut().find(|f| f.name == g.name) {
                    Some(f) => f.mode = f.mode.max(g.mode),
                    None => out.fs.push(g.clone()),
                }
            }
            for v in &all.env {
                if !out.env.contains(v) {
                    out.env.push(v.clone());
                }
            }
            for v in &all.net {
                if !out.net.contains(v) {
                    out.net.push(v.clone());
                }
            }
            for v in &all.secrets {
                if !out.secrets.contains(v) {
                    out.secrets.push(v.clone());
                }
            }
            for g in &all.exec {
                if !out.exec.iter().any(|e| e.program == g.program) {
                    out.exec.push(g.clone());
                }
            }
            for (k, v) in &all.settings {
                out.settings.entry(k.clone()).or_insert_with(|| v.clone());
            }
            out.net_private |= all.net_private;
        }
        out
    }

    /// Effective limits for a tool: defaults ← plugin overrides ← manifest output limit ←
    /// tool overrides (the operator's word on a tool is last).
    pub fn limits_for(&self, plugin: &str, tool: &str, manifest_output_limit: Option<usize>) -> Limits {
        let mut l = self.limits;
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
        overrides.chain(tools).fold(self.limits.memory_mb, u64::max)
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

/// A host pattern: `example.com`, `*.example.com` or `*`; lower-case letters, digits, `-`, `.`,
/// or an IP address. No scheme, port or path.
pub fn check_host_pattern(p: &str) -> Result<(), String> {
    if p == "*" || p.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let name = p.strip_prefix("*.").unwrap_or(p);
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{p:?} is not a host pattern; write `example.com`, `*.example.com` (subdomains) or `*` (lower case, no scheme, port or path)"
        ))
    }
}

fn resolve_model(m: RawModel, secrets: &BTreeMap<String, SecretSource>) -> Result<ModelConfig, String> {
    if let Some(u) = &m.base_url {
        let ok = url::Url::parse(u).is_ok_and(|p| matches!(p.scheme(), "http" | "https"));
        if !ok {
            return Err(format!(
                "model.base_url = {u:?} is not an http(s) URL; write the API root, e.g. \"http://localhost:11434/v1\""
            ));
        }
    }
    if m.api_key_env.is_some() && m.api_key_secret.is_some() {
        return Err("model: give at most one of `api_key_env` and `api_key_secret`".into());
    }
    if let Some(v) = &m.api_key_env
        && (v.is_empty() || v.contains('='))
    {
        return Err(format!("model.api_key_env = {v:?} is not a variable name"));
    }
    if let Some(s) = &m.api_key_secret
        && !secrets.contains_key(s)
    {
        return Err(format!(
            "model.api_key_secret: no secret `{s}` is defined; add [secrets.{s}] with env = \"VAR\" or file = \"path\""
        ));
    }
    if let Some(n) = m.max_steps
        && !(1..=1000).contains(&n)
    {
        return Err(format!("model.max_steps = {n} is outside 1..=1000"));
    }
    if let Some(t) = m.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(format!("model.temperature = {t} is outside 0..=2"));
    }
    if m.timeout_s == Some(0) {
        return Err("model.timeout_s must be at least 1".into());
    }
    Ok(ModelConfig {
        base_url: m.base_url,
        model: m.model,
        api_key_env: m.api_key_env,
        api_key_secret: m.api_key_secret,
        protocol: m.protocol,
        max_steps: m.max_steps,
        system: m.system,
        temperature: m.temperature,
        timeout_s: m.timeout_s,
    })
}

fn check_limits(key: &str, l: &LimitOverrides) -> Result<(), String> {
    if l.timeout_ms == Some(0) {
        return Err(format!("{key}.timeout_ms must be at least 1"));
    }
    if let Some(mb) = l.memory_mb
        && !(1..=4096).contains(&mb)
    {
        return Err(format!("{key}.memory_mb = {mb} is outside 1..=4096"));
    }
    if l.output_limit == Some(0) {
        return Err(format!("{key}.output_limit must be at least 1"));
    }
    // Zero is a valid quota (a call may write nothing) for write_mb and create_limit; a
    // log cap of zero would hide even the line saying what was dropped, so it needs 1.
    if l.log_kb == Some(0) || l.log_lines == Some(0) {
        return Err(format!("{key}.log_kb and {key}.log_lines must be at least 1"));
    }
    Ok(())
}

/// One plugin may use half the call slots unless the operator says otherwise, so a saturated
/// plugin always leaves room for the others.
pub fn default_plugin_concurrency(concurrency: u32) -> u32 {
    (concurrency / 2).max(1)
}

fn resolve_fs(
    workspace: &Path,
    base: &Path,
    path: &str,
    mode: FsMode,
    name: Option<String>,
) -> Result<FsGrant, String> {
    if path == "workspace" {
        if let Some(n) = &name
            && n != "workspace"
        {
            return Err(format!("the workspace is always requested as `workspace`, not {n:?}"));
        }
        return Ok(FsGrant { name: "workspace".into(), host_path: workspace.to_path_buf(), mode });
    }
    let name = name.unwrap_or_else(|| path.to_string());
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        && name != "."
        && name != "..";
    if !plain {
        return Err(format!(
            "{name:?} is not a plain name a plugin can request; add `name = \"docs\"` (letters, digits, `_`, `-`, `.`)"
        ));
    }
    Ok(FsGrant { name, host_path: normalize(&base.join(path)), mode })
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map(|c| c.join(p)).unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Canonical path if it exists, else the lexically absolute one.
fn normalize(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_or_missing_secrets_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "abc\n").unwrap();
        let short = SecretSource { name: "t".into(), from: SecretFrom::File(file.clone()), hosts: vec![] };
        assert!(short.read().unwrap_err().contains("shorter than 8 characters"));
        std::fs::write(&file, "x".repeat(MAX_SECRET_BYTES + 1)).unwrap();
        assert!(short.read().unwrap_err().contains("more than the 16384"));
        std::fs::write(&file, "a-long-enough-value\n").unwrap();
        assert_eq!(short.read().unwrap(), "a-long-enough-value", "the trailing newline is not part of it");
        let unset = SecretSource {
            name: "e".into(),
            from: SecretFrom::Env("TOOLHOST_SURELY_UNSET_VARIABLE".into()),
            hosts: vec![],
        };
        assert!(unset.read().unwrap_err().contains("TOOLHOST_SURELY_UNSET_VARIABLE is not set"));
    }

    fn parse(text: &str) -> Result<Config, String> {
        Config::from_str_at(text, Path::new("/base"), Some(PathBuf::from("/base/toolhost.toml")))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_grant_nothing() {
        let c = parse("").unwrap();
        assert!(c.plugins.is_empty());
        assert_eq!(c.danger, DangerPolicy::Ask);
        assert_eq!(c.plugins_dir, PathBuf::from("/base/plugins"));
        assert_eq!(c.plugin("files"), PluginConfig::default());
    }

    #[test]
    fn unknown_key_names_key_and_file() {
        let e = parse("[limits]\ntimeout = 5").unwrap_err();
        assert!(e.contains("/base/toolhost.toml"), "{e}");
        assert!(e.contains("timeout"), "{e}");
        let e = parse("[plugin.files]\nnetwork = [\"x\"]").unwrap_err();
        assert!(e.contains("unknown field `network`"), "{e}");
        let e = parse("[plugin.web]\nnet = [\"https://example.com\"]").unwrap_err();
        assert!(e.contains("plugin.web.net[0]") && e.contains("not a host pattern"), "{e}");
        let e = parse("[plugin.web]\nsecrets = [\"gh\"]").unwrap_err();
        assert!(e.contains("no secret `gh` is defined"), "{e}");
        let e = parse("[secrets.gh]\nenv = \"A\"\nfile = \"b\"").unwrap_err();
        assert!(e.contains("secrets.gh: give exactly one"), "{e}");
        let e =
            parse("[secrets.gh]\nenv = \"A\"\nhosts = [\"api.github.com\", \"https://api.github.com/v3\"]")
                .unwrap_err();
        assert!(e.contains("secrets.gh.hosts[1]") && e.contains("not an origin"), "{e}");
        let e = parse("[secrets.gh]\nenv = \"A\"\nhosts = [\"ftp://x.org\"]").unwrap_err();
        assert!(e.contains("secrets.gh.hosts[0]") && e.contains("scheme `ftp` is not allowed"), "{e}");
    }

    #[test]
    fn secret_hosts_are_origins() {
        let c = parse(
            "[secrets.gh]\nenv = \"A\"\nhosts = [\"api.github.com\", \"http://127.0.0.1:8080\", \"*.example.com:8443\"]\n[secrets.any]\nenv = \"B\"",
        )
        .unwrap();
        let hosts: Vec<String> = c.secrets["gh"].hosts.iter().map(ToString::to_string).collect();
        assert_eq!(hosts, ["https://api.github.com", "http://127.0.0.1:8080", "https://*.example.com:8443"]);
        assert!(c.secrets["any"].hosts.is_empty(), "no hosts: https on 443, decided by `net`");
    }

    #[test]
    fn grants_and_overrides_resolve() {
        let c = parse(
            r#"
            workspace = "ws"
            [limits]
            timeout_ms = 500
            [danger]
            policy = "deny"
            [plugin.files]
            fs = [{ path = "workspace", mode = "rw" }, { path = "/srv/docs", mode = "ro", name = "docs" }]
            output_limit = 50
            [tool.read]
            output_limit = 70
            [tool.delete]
            danger = true
            "#,
        )
        .unwrap();
        assert_eq!(c.danger, DangerPolicy::Deny);
        let p = c.plugin("files");
        assert_eq!(p.fs[0].host_path, PathBuf::from("/base/ws"));
        assert_eq!(p.fs[0].guest_path(), ".");
        assert_eq!(p.fs[1].guest_path(), "/docs");
        assert_eq!(c.limits_for("files", "ls", None).output_limit, 50);
        assert_eq!(c.limits_for("files", "ls", Some(20)).output_limit, 20);
        assert_eq!(c.limits_for("files", "read", Some(20)).output_limit, 70);
        assert_eq!(c.limits_for("files", "read", None).timeout_ms, 500);
        assert!(c.tool_marked_dangerous("delete"));
        assert!(!c.tool_marked_dangerous("read"));
    }

    #[test]
    fn bad_values_are_named() {
        assert!(parse("[limits]\nmemory_mb = 0").unwrap_err().contains("limits.memory_mb"));
        assert!(parse("[tool.x]\ntimeout_ms = 0").unwrap_err().contains("tool.x.timeout_ms"));
        assert!(parse("[danger]\npolicy = \"maybe\"").unwrap_err().contains("maybe"));
        assert!(
            parse("[plugin.a]\nfs = [{ path = \"/a/b\", mode = \"rw\" }]")
                .unwrap_err()
                .contains("plugin.a.fs[0]")
        );
        assert!(parse("[plugin.a]\nfs = [{ path = \"x\", mode = \"rwx\" }]").unwrap_err().contains("rwx"));
    }

    #[test]
    fn model_section_resolves_and_is_checked() {
        let c = parse(
            "[secrets.openai]\nenv = \"OPENAI_API_KEY\"\n[model]\nbase_url = \"http://localhost:11434/v1\"\nmodel = \"qwen2.5\"\napi_key_secret = \"openai\"\nprotocol = \"text\"\nmax_steps = 5",
        )
        .unwrap();
        assert_eq!(c.model.model.as_deref(), Some("qwen2.5"));
        assert_eq!(c.model.protocol, Some(crate::agent::Protocol::Text));
        assert_eq!(c.model.max_steps, Some(5));
        let e = parse("[model]\nbase_url = \"localhost:11434\"").unwrap_err();
        assert!(e.contains("model.base_url"), "{e}");
        let e = parse("[model]\napi_key_secret = \"nope\"").unwrap_err();
        assert!(e.contains("no secret `nope`"), "{e}");
        let e = parse("[model]\napi_key = \"sk-123\"").unwrap_err();
        assert!(e.contains("unknown field `api_key`"), "{e}");
        let e = parse("[model]\nprotocol = \"smoke\"").unwrap_err();
        assert!(e.contains("smoke"), "{e}");
    }

    #[test]
    fn star_section_applies_to_every_plugin() {
        let mut c = parse("").unwrap();
        c.grant_workspace("*", FsMode::ReadOnly);
        c.grant_workspace("files", FsMode::ReadWrite);
        assert_eq!(c.plugin("files").fs[0].mode, FsMode::ReadWrite);
        assert_eq!(c.plugin("text").fs[0].mode, FsMode::ReadOnly);
        c.set_workspace(Path::new("/elsewhere"));
        assert_eq!(c.plugin("text").fs[0].host_path, PathBuf::from("/elsewhere"));
    }
}

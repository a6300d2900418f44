//! The settings a command runs with, in one place (ripgrep's raw → resolved): the config file
//! read once — core's sections (`toolhost_core::settings`), the front ends'
//! (`toolhost_frontends::Settings`) and the CLI's own `[registry]` — with unknown keys refused,
//! then the command line's options applied (`--plugins`, `--workspace`, `--allow-*`,
//! `--danger`, `--no-cache`).

use crate::args::GlobalArgs;
use crate::oci::settings::{RawRegistry, RegistryConfig};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toolhost_core::Config;
use toolhost_core::settings::{ConfigError, ConfigFile};
use toolhost_spec::manifest::FsMode;

/// Every section of `toolhost.toml`, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Core's: plugins, workspace, limits, grants, secrets, trust, approvals, `[process]`.
    pub core: Config,
    /// The front ends': `[mcp]`, `[serve]`, `[audit]`, `[model]`.
    pub frontends: toolhost_frontends::Settings,
    /// `[registry."HOST"]`: credentials and transport for OCI registries.
    pub registries: BTreeMap<String, RegistryConfig>,
    /// The plugins the command line's grants name (`--allow-run sys=git` → (`--allow-run`,
    /// `sys`)), `*` left out: each must be a plugin in the folder ([`Settings::check_flag_plugins`]).
    pub flag_plugins: Vec<(&'static str, String)>,
}

impl Settings {
    /// Every owner's sections of `file`; a key nobody claimed is an error naming it.
    pub fn from_file(file: &ConfigFile) -> Result<Settings, ConfigError> {
        let mut core = Config::from_file(file)?;
        let frontends = toolhost_frontends::Settings::from_file(file, &core)?;
        core.extra_host_files = frontends.host_files();
        core.extra_secrets = frontends.secret_sources().cloned().collect();
        let raw: BTreeMap<String, RawRegistry> = file.section("registry")?;
        let registries = RegistryConfig::resolve(raw, &core.secrets).map_err(|m| file.invalid(m))?;
        file.finish()?;
        Ok(Settings { core, frontends, registries, flag_plugins: Vec::new() })
    }

    /// `path`, or `./toolhost.toml` if it exists, or the defaults (which grant nothing).
    pub fn load(path: Option<&Path>) -> Result<Settings, ConfigError> {
        Self::from_file(&ConfigFile::load(path)?)
    }

    /// Parse config text; relative paths resolve against `base`.
    pub fn from_str_at(text: &str, base: &Path, source: Option<PathBuf>) -> Result<Settings, ConfigError> {
        Self::from_file(&ConfigFile::parse(text, base, source)?)
    }

    /// The config file `--config` names (or the default one) with the command line's options
    /// applied, and programs refused at once where the kernel cannot confine them.
    pub fn resolve(g: &GlobalArgs) -> Result<Settings> {
        let mut s = Settings::load(g.config.as_deref())?;
        let cfg = &mut s.core;
        if let Some(p) = &g.plugins {
            cfg.plugins_dir =
                std::path::absolute(p).with_context(|| format!("bad --plugins {}", p.display()))?;
        }
        if let Some(w) = &g.workspace {
            if !w.is_dir() {
                bail!("--workspace {}: not a directory", w.display());
            }
            cfg.set_workspace(w);
        }
        let mut named = Vec::new();
        for p in &g.allow_read {
            cfg.grant_workspace(p, FsMode::ReadOnly);
            named.push(("--allow-read", p.clone()));
        }
        for p in &g.allow_write {
            cfg.grant_workspace(p, FsMode::ReadWrite);
            named.push(("--allow-write", p.clone()));
        }
        for pv in &g.allow_env {
            let Some((plugin, var)) = pv.split_once('=') else {
                bail!("--allow-env takes PLUGIN=VAR, got {pv:?}");
            };
            cfg.grant_env(plugin, var)?;
            named.push(("--allow-env", plugin.to_string()));
        }
        for ph in &g.allow_net {
            let Some((plugin, host)) = ph.split_once('=') else {
                bail!("--allow-net takes PLUGIN=HOST, got {ph:?}");
            };
            cfg.grant_net(plugin, host)?;
            named.push(("--allow-net", plugin.to_string()));
        }
        for pp in &g.allow_run {
            let Some((plugin, program)) = pp.split_once('=') else {
                bail!("--allow-run takes PLUGIN=PROGRAM, got {pp:?}");
            };
            cfg.grant_run(plugin, program)?;
            named.push(("--allow-run", plugin.to_string()));
        }
        for pb in &g.allow_kv {
            let Some((plugin, bucket)) = pb.split_once('=') else {
                bail!("--allow-kv takes PLUGIN=BUCKET, got {pb:?}");
            };
            cfg.grant_kv(plugin, bucket)?;
            named.push(("--allow-kv", plugin.to_string()));
        }
        if let Some(d) = g.danger {
            cfg.danger = d.into();
        }
        named.retain(|(_, p)| p != "*");
        s.flag_plugins = named;
        let cfg = &mut s.core;
        if g.no_cache {
            cfg.cache_dir = None;
        }
        // No grant may let a plugin or a program write the host's own files.
        cfg.check_host_files()?;
        // The local user's name is the process's, fixed before its first call.
        if let Some(name) = &cfg.identity.local_user
            && let Err(named) = toolhost_core::identity::Principal::name_local_user(name)
        {
            bail!("identity.local_user = {name:?}: this process already calls as the local user {named:?}");
        }
        // Programs are run confined or not at all (unless the operator opts out): say so now.
        use toolhost_core::capability::process::confine;
        confine::check_support(confine::landlock_abi(), &cfg.process, cfg.exec_grants())
            .map_err(anyhow::Error::msg)?;
        Ok(s)
    }

    /// Each plugin a command-line grant names must be one of `loaded` (the plugins in the
    /// folder): a grant for a misspelt name would otherwise grant nothing, silently.
    pub fn check_flag_plugins(&self, registry: &toolhost_core::registry::Registry) -> Result<()> {
        unknown_flag_plugins(&self.flag_plugins, registry, &self.core.plugins_dir)
    }
}

/// [`Settings::check_flag_plugins`] on its parts.
pub fn unknown_flag_plugins(
    named: &[(&'static str, String)],
    registry: &toolhost_core::registry::Registry,
    plugins_dir: &Path,
) -> Result<()> {
    let held = registry.pending().iter().map(|p| p.plugin.as_str());
    let mut loaded: Vec<&str> = registry.plugins().iter().map(|p| &*p.name).chain(held).collect();
    loaded.sort_unstable();
    loaded.dedup();
    for (flag, plugin) in named {
        if !loaded.contains(&plugin.as_str()) {
            let have = if loaded.is_empty() { "none".to_string() } else { loaded.join(", ") };
            let failed = match registry.failures().len() {
                0 => String::new(),
                n => format!("; {} did not load (see `toolhost list`)", crate::term::count(n, "file")),
            };
            bail!(
                "{flag} names plugin `{}`, which is not in {}; the plugins there: {have} (a grant names the plugin, not its file){failed}",
                crate::term::line(plugin),
                plugins_dir.display()
            );
        }
    }
    Ok(())
}

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
}

impl Settings {
    /// Every owner's sections of `file`; a key nobody claimed is an error naming it.
    pub fn from_file(file: &ConfigFile) -> Result<Settings, ConfigError> {
        let core = Config::from_file(file)?;
        let frontends = toolhost_frontends::Settings::from_file(file, &core)?;
        let raw: BTreeMap<String, RawRegistry> = file.section("registry")?;
        let registries = RegistryConfig::resolve(raw, &core.secrets).map_err(|m| file.invalid(m))?;
        file.finish()?;
        Ok(Settings { core, frontends, registries })
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
        for p in &g.allow_read {
            cfg.grant_workspace(p, FsMode::ReadOnly);
        }
        for p in &g.allow_write {
            cfg.grant_workspace(p, FsMode::ReadWrite);
        }
        for pv in &g.allow_env {
            let Some((plugin, var)) = pv.split_once('=') else {
                bail!("--allow-env takes PLUGIN=VAR, got {pv:?}");
            };
            cfg.grant_env(plugin, var)?;
        }
        for ph in &g.allow_net {
            let Some((plugin, host)) = ph.split_once('=') else {
                bail!("--allow-net takes PLUGIN=HOST, got {ph:?}");
            };
            cfg.grant_net(plugin, host)?;
        }
        for pp in &g.allow_run {
            let Some((plugin, program)) = pp.split_once('=') else {
                bail!("--allow-run takes PLUGIN=PROGRAM, got {pp:?}");
            };
            cfg.grant_run(plugin, program)?;
        }
        if let Some(d) = g.danger {
            cfg.danger = d.into();
        }
        if g.no_cache {
            cfg.cache_dir = None;
        }
        // Programs are run confined or not at all (unless the operator opts out): say so now.
        use toolhost_core::capability::process::confine;
        confine::check_support(confine::landlock_abi(), &cfg.process, cfg.exec_grants())
            .map_err(anyhow::Error::msg)?;
        Ok(s)
    }
}

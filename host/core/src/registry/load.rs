//! Loading a folder: each file inspected (if it was not ahead) and linked, on a few threads,
//! the approvals applied, and the snapshot built.

use super::approvals::Approvals;
use super::folder::{Ahead, FolderRead};
use super::inspect::{Inspected, inspect};
use super::plugin::{Code, LoadedPlugin, Source};
use super::{Registry, chain};
use crate::discovery::{Candidate, LoadFailure};
use crate::engine::Runtime;
use crate::settings::Config;
use std::sync::{Arc, Mutex, OnceLock};

/// The half of loading a file that needs the engine: the code compiled and linked now (so a
/// component that does not compile or link is a load failure), or, when it is cached, later
/// (see [`Code`]). The file is read again only to compile it.
fn link(
    runtime: &Arc<Runtime>,
    config: &Config,
    c: &Candidate,
    inspected: Inspected,
) -> Result<LoadedPlugin, LoadFailure> {
    let Inspected { mut manifest, schemas, signer, grants, missing, skills, apps } = inspected;
    let plugin_config = config.plugin(&manifest.name);
    let apps = super::apps::loaded(apps, &manifest, &plugin_config.app_domains)
        .map_err(|reason| LoadFailure { file: c.path.clone(), reason })?;
    let exposure = plugin_config.exposure;
    let skills = super::skills::selected(skills, &exposure);
    let prompt_names = super::prompts::served(&mut manifest, config);
    super::resources::served(&mut manifest, &exposure);
    let code = if runtime.is_cached(&c.code) {
        Code {
            ready: OnceLock::new(),
            source: Mutex::new(Some(Source {
                runtime: runtime.clone(),
                candidate: c.clone(),
                max_bytes: config.max_plugin_bytes,
            })),
        }
    } else {
        let bytes = || c.read_again(config.max_plugin_bytes).map(Into::into).map_err(anyhow::Error::msg);
        Code::ready(runtime.prepare_hashed(&c.file_name(), &c.code, bytes).map_err(|e| LoadFailure {
            file: c.path.clone(),
            reason: format!("cannot load component: {}", chain(&e)),
        })?)
    };
    // Each `outputSchema` is compiled on the tool's first result (`ToolEntry::output_validator`).
    let output_validators = manifest.tools.iter().map(|_| OnceLock::new()).collect();
    Ok(LoadedPlugin {
        output_validators,
        schemas,
        file: c.path.clone(),
        name: manifest.name.as_str().into(),
        manifest,
        grants,
        missing,
        code,
        hash: c.hash,
        signer,
        skills,
        apps,
        prompt_names,
    })
}

impl Registry {
    /// Scan `config.plugins_dir`, load every plugin (compiling in parallel), build a snapshot.
    pub fn load(runtime: &Arc<Runtime>, config: &Config) -> std::io::Result<Registry> {
        Self::load_read(runtime, config, FolderRead::inspect_all(config)?)
    }

    /// [`Registry::load`] of a folder already read (a [`ReadAhead`](super::ReadAhead)'s, say).
    pub fn load_read(runtime: &Arc<Runtime>, config: &Config, read: FolderRead) -> std::io::Result<Registry> {
        let FolderRead { found, mut failures, .. } = read;
        let results = load_all(runtime, config, found).into_iter().map(|(_, r)| r);
        let mut approvals = Approvals::for_folder(&config.plugins_dir, &config.approvals);
        let mut plugins = Vec::new();
        let mut pending = Vec::new();
        for r in results {
            match r {
                Ok(p) => match approvals.check_file(&p.manifest, &p.hash) {
                    Ok(()) => plugins.push(Arc::new(p)),
                    Err(extra) => pending.push(p.pending(extra)),
                },
                Err(f) => failures.push(f),
            }
        }
        approvals.save_or_warn();
        for p in &pending {
            tracing::warn!("{p}");
        }
        Ok(Registry::build(plugins, failures, config, None).with_pending(pending))
    }
}

/// Load files on a few threads (wasmtime also parallelises inside each compile); a file whose
/// manifest was checked ahead is not checked again.
pub(crate) fn load_all(
    runtime: &Arc<Runtime>,
    config: &Config,
    found: Vec<(Candidate, Ahead)>,
) -> Vec<(Candidate, Result<LoadedPlugin, LoadFailure>)> {
    let total = found.len();
    // Files checked ahead whose code is cached need only a few allocations each here (their
    // linking is deferred): threads would cost more than they share out.
    let light = found.iter().all(|(c, ahead)| ahead.is_some() && runtime.is_cached(&c.code));
    let found: Vec<(usize, Candidate, Mutex<Ahead>)> =
        found.into_iter().enumerate().map(|(i, (c, ahead))| (i, c, Mutex::new(ahead))).collect();
    let load = |(i, c, ahead): &(usize, Candidate, Mutex<Ahead>)| {
        tracing::debug!("loading {} ({} of {total})", c.file_name(), i + 1);
        // Failures are returned, not logged: each front end reports them once
        // (`list` in its table, `serve` as `!` lines, other commands as warnings).
        let ahead = ahead.lock().unwrap_or_else(|p| p.into_inner()).take();
        ahead
            .unwrap_or_else(|| {
                let bytes = c.read_again(config.max_plugin_bytes);
                bytes
                    .map_err(|e| LoadFailure { file: c.path.clone(), reason: e.to_string() })
                    .and_then(|b| inspect(config, c, &b))
            })
            .and_then(|inspected| link(runtime, config, c, inspected))
    };
    let loaded = if light { found.iter().map(load).collect() } else { crate::parallel::map(&found, load) };
    found.into_iter().zip(loaded).map(|((_, c, _), r)| (c, r)).collect()
}

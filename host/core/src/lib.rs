//! toolhost-core: the engine and the sandbox — everything that names wasmtime.
//!
//! Tools ship as WebAssembly components carrying an embedded manifest. The host discovers them
//! in a folder ([`discovery`]), reads and validates their manifests without running them
//! (`toolhost_spec::manifest`), compiles them once on a shared engine ([`engine`]), publishes a
//! registry snapshot ([`registry`]), and runs every call through one [`executor`] in a fresh,
//! capability-limited sandbox ([`sandbox`], one folder per [`capability`]) configured from
//! `toolhost.toml` ([`settings`]). The front ends (`toolhost-frontends`) and the CLI
//! (`toolhost`) sit above this crate; nothing here names them. See `ARCHITECTURE.md`.

pub mod bindings;
pub mod capability;
pub mod catalog;
pub mod discovery;
pub mod engine;
pub mod executor;
pub mod files;
pub mod identity;
pub mod kept;
pub mod parallel;
pub mod policy;
pub mod rate;
pub mod redis_link;
pub mod registry;
pub mod sandbox;
pub mod script;
pub mod settings;
pub mod telemetry;
pub mod usage;
pub mod view;

pub use executor::{ErrorKind, Executor, Outcome, ToolCall};
pub use registry::Registry;
pub use settings::Config;
pub use toolhost_spec as spec;

use arc_swap::ArcSwap;
use std::sync::Arc;

/// A loaded host: engine, configuration, registry snapshot and executor, ready to serve calls.
pub struct Toolhost {
    pub runtime: Arc<engine::Runtime>,
    pub config: Arc<Config>,
    pub registry: Arc<ArcSwap<Registry>>,
    pub executor: Arc<Executor>,
}

impl Toolhost {
    /// Build the engine and load every plugin in `config.plugins_dir` (read while the engine is
    /// built: [`registry::ReadAhead`]).
    pub fn load(config: Config, confirm: Arc<dyn executor::Confirm>) -> anyhow::Result<Toolhost> {
        let config = Arc::new(config);
        let ahead = registry::ReadAhead::start(config.clone(), registry::reload::WatchFrom::Never);
        let runtime = engine::Runtime::for_config(&config)?;
        let registry = Registry::load_read(&runtime, &config, ahead.finish().0?)?;
        Ok(Self::from_parts(runtime, config, registry, confirm))
    }

    /// Assemble a host from an already-built registry.
    pub fn from_parts(
        runtime: Arc<engine::Runtime>,
        config: Arc<Config>,
        registry: Registry,
        confirm: Arc<dyn executor::Confirm>,
    ) -> Toolhost {
        let registry = Arc::new(ArcSwap::from_pointee(registry));
        let executor = Arc::new(Executor::new(runtime.clone(), config.clone(), registry.clone(), confirm));
        Toolhost { runtime, config, registry, executor }
    }

    /// Run one call.
    pub fn call<'a>(&'a self, call: &'a ToolCall) -> impl Future<Output = Outcome> + 'a {
        self.executor.call(call)
    }
}

//! toolhost: a dynamic plugin host for AI-agent tools.
//!
//! Tools ship as WebAssembly components carrying an embedded manifest. The host discovers them
//! in a folder ([`discovery`]), reads and validates their manifests without running them
//! ([`manifest`]), compiles them once on a shared engine ([`runtime`]), publishes a registry
//! snapshot ([`registry`]), and runs every call through one [`executor`] in a fresh,
//! capability-limited sandbox ([`sandbox`]) configured from `toolhost.toml` ([`config`]).
//! See `ARCHITECTURE.md` for the map.

pub mod agent;
pub mod approvals;
pub mod build;
pub mod call;
pub mod cli;
pub mod commands;
pub mod config;
pub mod dev;
pub mod discovery;
pub mod executor;
pub mod manifest;
pub mod net;
pub mod oci;
pub mod process;
pub mod protocol;
pub mod quota;
pub mod registry;
pub mod reload;
pub mod runtime;
pub mod sandbox;
pub mod scaffold;
pub mod sdk_files;
pub mod service;
pub mod share;
pub mod signing;
pub mod term;
pub mod usage;
pub mod view;

pub use config::Config;
pub use executor::{ErrorKind, Executor, Outcome, ToolCall};
pub use registry::Registry;

use arc_swap::ArcSwap;
use std::sync::Arc;

/// A loaded host: engine, configuration, registry snapshot and executor, ready to serve calls.
pub struct Toolhost {
    pub runtime: Arc<runtime::Runtime>,
    pub config: Arc<Config>,
    pub registry: Arc<ArcSwap<Registry>>,
    pub executor: Arc<Executor>,
}

impl Toolhost {
    /// Build the engine and load every plugin in `config.plugins_dir`.
    pub fn load(config: Config, confirm: Arc<dyn executor::Confirm>) -> anyhow::Result<Toolhost> {
        let runtime = runtime::Runtime::for_config(&config)?;
        let registry = Registry::load(&runtime, &config)?;
        Ok(Self::from_parts(runtime, Arc::new(config), registry, confirm))
    }

    /// Assemble a host from an already-built registry.
    pub fn from_parts(
        runtime: Arc<runtime::Runtime>,
        config: Arc<Config>,
        registry: Registry,
        confirm: Arc<dyn executor::Confirm>,
    ) -> Toolhost {
        let registry = Arc::new(ArcSwap::from_pointee(registry));
        let executor = Arc::new(Executor::new(runtime.clone(), config.clone(), registry.clone(), confirm));
        Toolhost { runtime, config, registry, executor }
    }

    /// Run one call.
    pub async fn call(&self, call: &ToolCall) -> Outcome {
        self.executor.call(call).await
    }
}

//! Integration tests for toolhost: one binary (wasmtime is linked once), a module per area.
//! The plugins under test are built from source by `plugin-artifacts`' build script.

mod cli;
mod core_tools;
mod distribution;
mod hostile;
mod load;
mod loading;
mod manifests;
mod mcp;
mod net;
mod protocols;
mod reliability;
mod reload;
mod support;

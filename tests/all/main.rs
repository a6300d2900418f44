//! Integration tests for toolhost: one binary (wasmtime is linked once), a module per area.
//! The plugins under test are built from source by `plugin-artifacts`' build script.

mod cli;
mod core_tools;
mod hostile;
mod load;
mod loading;
mod manifests;
mod protocols;
mod reload;
mod support;

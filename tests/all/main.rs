//! Integration tests for toolhost: one binary (wasmtime is linked once), a module per area.
//! The plugins under test are built from source by `plugin-artifacts`' build script.

mod auth_server;
mod catalog;
mod chat;
mod cli;
mod console;
mod core_tools;
mod decisions;
mod distribution;
mod docs;
mod drain;
mod fleet;
mod grants;
mod hostile;
mod kv;
mod limits;
mod load;
mod loading;
mod long;
mod manifests;
mod mcp;
mod mcp_wire;
mod message_limit;
mod net;
mod polyglot;
mod process;
mod prompts;
mod protocols;
mod reliability;
mod reload;
mod resources;
mod security;
mod service;
mod skills;
mod support;
mod telemetry;

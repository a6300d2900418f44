//! toolhost-frontends: the ways a model or a client reaches the tools, over the core's one
//! executor — the `[TOOL]` text protocol ([`text`]), OpenAI function calling ([`openai`]), MCP
//! over stdio and streamable HTTP ([`mcp`]) — plus `serve` as a service ([`service`]: shutdown,
//! probes, metrics, the audit trail), its web console ([`console`]), the secret that locks the
//! two without tokens ([`local_key`]) and the agent loop ([`agent`]) that talks to a model.
//! Embeddable by another Rust program; nothing here names the CLI.

pub mod agent;
pub mod auth;
pub mod console;
pub mod local_key;
pub mod mcp;
pub mod openai;
pub mod service;
mod settings;
pub mod text;

pub use settings::Settings;

//! The security suite (#26): what the host does *for* a plugin must not give back what the
//! sandbox took away. One module per attack surface; each test reproduces an attack end to end
//! and asserts that it fails.

mod exec;
mod host_files;
mod http;
mod listeners;
mod memory;
mod model_text;
mod promises;
mod secrets;
pub(crate) mod terminal;

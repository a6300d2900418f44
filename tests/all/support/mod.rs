//! The test kit, written once so that a test reads as its scenario: the environments
//! ([`Env`]: plugins folder, workspace, the operator's folder), the `toolhost` binary with the
//! suite's own cache and state folders ([`dirs`]), a server started and its address read
//! ([`server`]), one raw HTTP client and loopback server ([`http`]) and MCP over it
//! ([`mcp_http`]), free ports, child output read as it comes ([`lines`]), a scripted operator
//! ([`Operator`]), the Python MCP clients ([`python`]), a `redis-server` of a test's own ([`redis`]),
//! an OAuth authorization server of a test's own ([`oauth`]), and plugins made from WAT ([`wasm`]).
//! One engine serves every in-process host of the test binary.

pub mod dirs;
mod env;
pub mod http;
pub mod lines;
pub mod mcp_http;
pub mod oauth;
mod operator;
mod ports;
pub mod python;
pub mod redis;
pub mod server;
mod wasm;

pub use dirs::{BIN, cache_home, root, test_dirs, toolhost};
pub use env::Env;
pub use lines::{lines, poll, poll_showing, wait_line};
pub use operator::Operator;
pub use ports::{connect_from, free_port};
pub use server::{HttpServer, Server};
pub use wasm::{OK_COMPONENT, append_custom_section, component};

use std::sync::{Arc, OnceLock};
use toolhost_core::engine::Runtime;
use toolhost_core::{Outcome, ToolCall, Toolhost};

/// One engine per test process; compiled components are cached in it by content hash, so
/// each plugin is compiled once however many tests load it.
pub fn runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    // The production configuration: a pooling allocator (sized for the concurrency of the
    // test binary's hosts) in front of a semaphore.
    RT.get_or_init(|| {
        let pool = toolhost_core::engine::Pool { concurrent_calls: 256, max_memory_mb: 256 };
        Runtime::with_options(512, None, Some(pool)).expect("engine")
    })
    .clone()
}

pub async fn call(host: &Toolhost, name: &str, args: &[&str]) -> Outcome {
    host.call(&ToolCall::new(name, args.iter().copied())).await
}

/// Assert success and return the data.
#[track_caller]
pub fn ok(o: &Outcome) -> String {
    assert!(o.success, "expected success, got {o:?}");
    o.data.clone().unwrap()
}

/// Assert failure of `kind` and return the error text.
#[track_caller]
pub fn err(o: &Outcome, kind: toolhost_core::ErrorKind) -> String {
    assert!(!o.success, "expected failure {kind:?}, got {o:?}");
    assert_eq!(o.kind, Some(kind), "wrong kind: {o:?}");
    o.error.clone().unwrap()
}

//! The host's parsers, compiled from the host's own source files (not copies), so the fuzzers
//! exercise exactly the code the host runs without building wasmtime.
#![allow(dead_code)]

#[path = "../../host/src/call.rs"]
pub mod call;

#[path = "../../host/src/manifest.rs"]
pub mod manifest;

#[path = "../../host/src/protocol/text/parse.rs"]
pub mod text;

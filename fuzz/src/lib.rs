//! The host's parsers, from the crate the host itself uses (`toolhost-spec`: no wasmtime, no
//! async runtime), so the fuzzers exercise exactly the code the host runs.

pub use toolhost_spec::{call, manifest, skills, text};

//! Where the suite's files are: the workspace root, the binary under test, and the cache and
//! state folders every process a test starts shares.

use std::path::PathBuf;
use std::process::Command;

/// The `toolhost` binary under test, for a command line another program runs (a Python client
/// that starts the server over stdio, a shell script).
pub const BIN: &str = env!("CARGO_BIN_EXE_toolhost");

/// The workspace's root folder (`tests/`, `target/`, `deploy/` are under it).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The environment every `toolhost` (or MCP client) process a test starts gets: the compile
/// cache and the state folder (the audit trail) under `target/`, shared by the whole suite so a
/// plugin compiles once and nothing is written to the user's own folders.
pub fn test_dirs() -> [(&'static str, PathBuf); 2] {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    [("XDG_CACHE_HOME", cache_home()), ("XDG_STATE_HOME", target.join("test-state"))]
}

/// The suite's `XDG_CACHE_HOME` (see [`test_dirs`]), for a process that keeps its own state
/// folder.
pub fn cache_home() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-cache")
}

/// The `toolhost` binary with the test binary's own cache and state folders ([`test_dirs`]):
/// add the rest.
pub fn toolhost() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.envs(test_dirs());
    cmd
}

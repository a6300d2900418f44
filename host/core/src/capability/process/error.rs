//! Why a program was not run for a plugin ([`ProcessError`]): one variant per reason, so the host
//! tells a missing grant from a failure by its variant; the plugin gets the text, at the WIT
//! boundary only.

use super::confine::{ConfineError, OPT_OUT};
use super::{MAX_ARGS, MAX_ARGS_BYTES, MAX_RUNS_PER_CALL};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Why one `run` of a plugin was refused or failed. The text names the grant or setting that
/// would allow it.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// A store built without a deadline runs nothing.
    #[error("this call may not run programs")]
    NoDeadline,
    #[error("too many programs run in one call (limit {MAX_RUNS_PER_CALL})")]
    TooManyRuns,
    #[error("{program:?} is not a program name")]
    NotAName { program: String },
    /// The manifest requests no program.
    #[error(
        "plugin `{plugin}` cannot run programs: its manifest requests none (add `exec = \"{program}\"` to its #[toolhost_sdk::plugin(...)])"
    )]
    NothingRequested { plugin: Arc<str>, program: String },
    /// The manifest requests programs, but the operator granted none (`how`: the grant line).
    #[error(
        "plugin `{plugin}` cannot run programs: it requests {} but none is granted; the operator can add {how}",
        .requested.join(", ")
    )]
    NothingGranted { plugin: Arc<str>, program: String, requested: Vec<String>, how: String },
    /// `./x`, `bin/sh`: never looked up (`example`: a granted program's name).
    #[error(
        "relative program path {program:?} refused: name a granted program (e.g. `{example}`) or give its granted absolute path; programs are never looked up in PATH or the working directory"
    )]
    RelativePath { program: String, example: String },
    /// Not among the manifest's requested programs (`granted`: the grants, described).
    #[error(
        "program `{program}` is not in plugin `{plugin}`'s manifest request (it asks for: {}; granted: {})",
        .requested.join(", "), .granted.join(", ")
    )]
    NotRequested { plugin: Arc<str>, program: String, requested: Vec<String>, granted: Vec<String> },
    /// Requested, but not granted by the operator (`how`: the grant line).
    #[error(
        "program `{program}` is not granted to plugin `{plugin}` (granted: {}); the operator can add {how}",
        .granted.join(", ")
    )]
    NotGranted { plugin: Arc<str>, program: String, granted: Vec<String>, how: String },
    #[error("too many arguments ({count}, limit {MAX_ARGS})")]
    TooManyArgs { count: usize },
    #[error("arguments too large ({total} bytes, limit {MAX_ARGS_BYTES})")]
    ArgsTooLarge { total: usize },
    /// Argument `index` (from 0) holds a NUL.
    #[error("argument {} contains a NUL character", .index + 1)]
    NulInArg { index: usize },
    /// The arguments match none of the grant's patterns.
    #[error(
        "arguments {args:?} for `{name}` do not match what plugin `{plugin}` is granted ({}); the operator can add a pattern to [plugin.{plugin}] exec = [{{ program = \"{}\", args = [...] }}]",
        quoted(.patterns), .program.display()
    )]
    ArgsNotGranted {
        plugin: Arc<str>,
        name: String,
        program: PathBuf,
        args: Vec<String>,
        patterns: Vec<String>,
    },
    /// The default workspace could not be created.
    #[error("{0}")]
    Workspace(io::Error),
    #[error(transparent)]
    Confine(#[from] ConfineError),
    #[error(
        "cannot start {} (granted as `{name}`) in {}: {error}{}",
        .program.display(), .cwd.display(), unconfined_hint(.error)
    )]
    Spawn { program: PathBuf, name: String, cwd: PathBuf, error: io::Error },
    #[error("waiting for {} failed: {error}", .program.display())]
    Wait { program: PathBuf, error: io::Error },
}

fn quoted(patterns: &[String]) -> String {
    patterns.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
}

/// A refused spawn may be the kernel refusing the namespaces: name the opt-out.
fn unconfined_hint(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::PermissionDenied {
        format!(
            " (confined: if this kernel refuses user namespaces, the operator can run programs unconfined with `{OPT_OUT}`)"
        )
    } else {
        String::new()
    }
}

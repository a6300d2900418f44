//! Why granted programs cannot be run confined ([`ConfineError`]), at start or at a run.

use super::OPT_OUT;
use std::path::PathBuf;

/// Why granted programs cannot be run confined.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// At start: programs are granted (`granted`: each plugin and its programs), the kernel has
    /// no Landlock (`reason`), and the operator has not opted out.
    #[error(
        "{} granted programs to run, but {reason}, so they cannot be confined (their files, network and leftover processes would be the operator's); toolhost refuses to run programs unconfined unless toolhost.toml says `{OPT_OUT}`",
        .granted.join(", ")
    )]
    Unsupported { granted: Vec<String>, reason: &'static str },
    /// At a run: the same, for one program.
    #[error(
        "cannot run {} confined: {reason}; the operator can run programs unconfined with `{OPT_OUT}`",
        .program.display()
    )]
    NoLandlock { program: PathBuf, reason: &'static str },
    /// The program's Landlock ruleset could not be built.
    #[cfg(target_os = "linux")]
    #[error("cannot confine {}: {problem}", .program.display())]
    Ruleset { program: PathBuf, problem: RulesetProblem },
}

/// Why a Landlock ruleset could not be built.
#[cfg(target_os = "linux")]
#[derive(Debug, thiserror::Error)]
pub enum RulesetProblem {
    #[error("landlock: {0}")]
    Landlock(landlock::RulesetError),
    /// A path the grant names is missing (a system path may be, and is skipped).
    #[error("{} (named by its grant) does not exist", .0.display())]
    Missing(PathBuf),
    #[error("cannot open {}: {error}", .path.display())]
    Open { path: PathBuf, error: landlock::PathFdError },
    #[error("the kernel did not create a Landlock ruleset")]
    NotCreated,
}

//! The official MCP Python SDK, in both generations, and the test clients under `tests/mcp/`.
//! `cargo xtask test` installs 1.x into `target/pyenv` and 2.x into `target/pyenv2` (or set
//! TOOLHOST_PYTHON / TOOLHOST_PYTHON2).

use super::{Env, root, test_dirs};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The Python with the `mcp` package of `generation` (1 or 2): the one TOOLHOST_PYTHON (or
/// TOOLHOST_PYTHON2) names, or the venv under target/; checked once to have it.
#[track_caller]
pub fn python(generation: u8) -> PathBuf {
    static CHECKED: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    let (var, venv) = match generation {
        1 => ("TOOLHOST_PYTHON", "target/pyenv"),
        2 => ("TOOLHOST_PYTHON2", "target/pyenv2"),
        _ => panic!("the MCP Python SDK has generations 1 and 2, not {generation}"),
    };
    CHECKED[usize::from(generation - 1)]
        .get_or_init(|| {
            let p = std::env::var_os(var)
                .map(PathBuf::from)
                .map(|p| if p.is_relative() && p.components().count() > 1 { root().join(p) } else { p })
                .unwrap_or_else(|| root().join(venv).join("bin/python"));
            let version = Command::new(&p)
                .args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            assert!(
                version.starts_with(&format!("{generation}.")),
                "the MCP tests need Python with the `mcp` package {generation}.x at {} (found {version:?}): \
                 run `cargo xtask test` (it installs it), or set {var}",
                p.display()
            );
            p
        })
        .clone()
}

/// `tests/mcp/SCRIPT` under the Python of SDK `generation`, run in `env`'s workspace with the
/// suite's cache and state folders and nothing on its stdin: add its arguments.
pub fn mcp_script(generation: u8, script: &str, env: &Env) -> Command {
    let mut cmd = Command::new(python(generation));
    cmd.arg(root().join("tests/mcp").join(script))
        .current_dir(env.workspace.path())
        .envs(test_dirs())
        .stdin(Stdio::null());
    cmd
}

/// Run `cmd` (a test client) to its end: its stdout, once it has succeeded and printed `passed`.
#[track_caller]
pub fn run_passing(cmd: &mut Command, passed: &str) -> String {
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains(passed), "no {passed:?}:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

//! A plugin project's own tests, run as its language runs them, with the SDK on the path:
//! Python's `pytest` if it is installed, else `unittest`; `node --test` (through
//! `toolhost-js test`, which resolves `toolhost-sdk`); `cargo test`. `toolhost test` runs them
//! and then calls every tool through the host; `toolhost build` runs them before building.

use super::{Project, Toolchains, node, python3, scratch_env};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Command, Stdio};

/// The project's test files (Python, JavaScript), sorted; a Rust crate's tests live in its code.
pub fn test_files(project: &Project) -> Vec<String> {
    let mut out = Vec::new();
    let is_test = |name: &str| match project {
        Project::Python { .. } => super::dev::is_python_test(name),
        Project::Js { .. } => super::dev::is_js_test(name),
        Project::Rust(_) => false,
    };
    fn walk(root: &Path, dir: &Path, is_test: &dyn Fn(&str) -> bool, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || ["node_modules", "target", "__pycache__"].contains(&name.as_str()) {
                continue;
            }
            let path = e.path();
            if path.is_dir() {
                walk(root, &path, is_test, out);
            } else if is_test(&name) {
                out.push(path.strip_prefix(root).unwrap_or(&path).display().to_string());
            }
        }
    }
    walk(project.dir(), project.dir(), &is_test, &mut out);
    out.sort();
    out
}

/// Run the project's own tests, their output passed through. `Ok(false)`: it has none.
pub fn run_own_tests(project: &Project, tools: &Toolchains) -> Result<bool> {
    let dir = project.dir();
    let mut cmd = match project {
        Project::Rust(k) => {
            let mut c = super::cargo::cargo();
            c.args(["test", "--quiet", "--manifest-path"]).arg(&k.manifest);
            c
        }
        Project::Python { .. } => {
            if test_files(project).is_empty() {
                return Ok(false);
            }
            let sdk = tools.sdk()?;
            let mut c = Command::new(python3());
            let has_pytest = Command::new(python3())
                .args(["-c", "import pytest"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if has_pytest {
                c.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
            } else {
                c.args(["-m", "unittest", "discover", "-s", ".", "-p", "test_*.py"]);
            }
            c.env("PYTHONPATH", sdk.join("python")).env("PYTHONDONTWRITEBYTECODE", "1");
            c
        }
        Project::Js { .. } => {
            if test_files(project).is_empty() {
                return Ok(false);
            }
            let sdk = tools.sdk()?;
            let mut c = Command::new(node());
            c.arg(sdk.join("js/bin/toolhost-js.mjs")).arg("test").arg(dir);
            c
        }
    };
    let what = match project {
        Project::Rust(_) => "cargo test",
        Project::Python { .. } => "the Python tests",
        Project::Js { .. } => "node --test",
    };
    eprintln!("toolhost: running {what} in {} …", dir.display());
    let status = scratch_env(&mut cmd)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed in {} ({status}); see above (`--no-test` skips them)", dir.display());
    }
    Ok(true)
}

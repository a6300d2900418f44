//! `cargo xtask packages`: the three SDKs as their ecosystems would publish them, checked without
//! publishing anything — `cargo package` of the Rust SDK and the crates it needs, `pip install` of
//! the Python SDK into a fresh virtual environment, `npm pack --dry-run` of the JavaScript SDK.
//! Each must carry the same version, and each failure names the package.
//!
//! Everything it writes goes under `target/package-check/`. It builds no Rust code unless asked
//! to (`--verify`: cargo's own check that each packaged crate compiles alone, a few minutes).

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// The crates a Rust plugin author's `toolhost-sdk` pulls in by path, in publishing order: the
/// SDK's macro checks a plugin against the host's own rules in `toolhost-spec`.
const CRATES: [&str; 3] = ["toolhost-spec", "toolhost-sdk-macros", "toolhost-sdk"];

/// The build backend `plugin-sdk/python/pyproject.toml` asks for, pinned here and kept as a
/// wheel in `target/package-check/python-wheels`, so the check is offline after its first run.
const SETUPTOOLS: &str = "80.9.0";

/// Check the three packages; `verify` also compiles each packaged crate on its own.
pub fn run(root: &Path, verify: bool) -> Result<()> {
    let out = root.join("target/package-check");
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    let version = crate_version(root)?;
    timed("toolhost-sdk, toolhost-sdk-macros, toolhost-spec (crates.io)", || {
        crates(root, &out, &version, verify)
    })?;
    timed("toolhost-sdk (PyPI, plugin-sdk/python)", || python(root, &out, &version))?;
    timed("toolhost-sdk (npm, plugin-sdk/js)", || npm(root, &version))?;
    eprintln!("packages: the three SDKs package cleanly at version {version}");
    Ok(())
}

fn timed(what: &str, check: impl FnOnce() -> Result<()>) -> Result<()> {
    eprintln!("-- package {what}");
    let started = Instant::now();
    check().with_context(|| format!("package {what} is not ready to publish"))?;
    eprintln!("   ok ({:.1} s)", started.elapsed().as_secs_f64());
    Ok(())
}

fn cargo(root: &Path) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root);
    cmd
}

/// Run `cmd`, its output shown; an error names the command and how it ended.
fn run_shown(cmd: &mut Command) -> Result<()> {
    eprintln!("   $ {}", shown(cmd));
    let status = cmd.status().with_context(|| format!("cannot run {}", shown(cmd)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", shown(cmd));
    }
    Ok(())
}

/// Run `cmd` for its output; an error carries its stderr.
fn output(cmd: &mut Command) -> Result<Output> {
    let out = cmd.output().with_context(|| format!("cannot run {}", shown(cmd)))?;
    if !out.status.success() {
        bail!("`{}` failed ({}): {}", shown(cmd), out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out)
}

fn shown(cmd: &Command) -> String {
    std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The SDK's version: the one all three crates carry (`version.workspace`). Also refuses a path
/// dependency without a version, which `cargo package` cannot publish.
fn crate_version(root: &Path) -> Result<String> {
    let out = output(cargo(root).args(["metadata", "--no-deps", "--format-version", "1"]))?;
    let meta: Value = serde_json::from_slice(&out.stdout).context("cargo metadata: not JSON")?;
    let packages = meta["packages"].as_array().context("cargo metadata: no packages")?;
    let mut version = None::<String>;
    for name in CRATES {
        let package = packages
            .iter()
            .find(|p| p["name"] == name)
            .with_context(|| format!("{name} is not a member of the workspace"))?;
        let v = package["version"].as_str().unwrap_or_default().to_string();
        match &version {
            Some(first) if *first != v => {
                bail!(
                    "{name} is version {v} but {} is {first}: the SDK crates are published together",
                    CRATES[0]
                )
            }
            _ => version = Some(v.clone()),
        }
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let published = dep["kind"].is_null() || dep["kind"] == "build";
            if published && dep["path"].is_string() && dep["req"] == "*" {
                bail!(
                    "{name}: dependency {} is a path without a version; add `version = \"{v}\"` beside its path (cargo package needs it)",
                    dep["name"].as_str().unwrap_or("?")
                );
            }
        }
    }
    version.context("no SDK crates")
}

/// `cargo package` of the SDK crates together (so each finds the others in a local registry
/// instead of crates.io), then what is in each `.crate`: the SDK's WIT, and no JS or Python.
fn crates(root: &Path, target: &Path, version: &str, verify: bool) -> Result<()> {
    let mut cmd = cargo(root);
    cmd.arg("package");
    for name in CRATES {
        cmd.args(["-p", name]);
    }
    cmd.args(["--allow-dirty", "--quiet"]).env("CARGO_TARGET_DIR", target);
    if !verify {
        cmd.arg("--no-verify");
    }
    run_shown(&mut cmd)?;
    for name in CRATES {
        let file = target.join(format!("package/{name}-{version}.crate"));
        let listed = output(Command::new("tar").arg("-tzf").arg(&file))
            .with_context(|| format!("{name}: list {}", file.display()))?;
        let prefix = format!("{name}-{version}/");
        let files: Vec<String> = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
            .collect();
        if !files.iter().any(|f| f == "src/lib.rs") {
            bail!("{name}: the packaged crate has no src/lib.rs ({} files)", files.len());
        }
        if let Some(stray) = files.iter().find(|f| f.starts_with("js/") || f.starts_with("python/")) {
            bail!("{name}: the packaged crate holds {stray}, which belongs to another SDK (exclude it)");
        }
        eprintln!("   {name}-{version}.crate: {} files", files.len());
    }
    // The SDK's bindings are generated from `plugin-sdk/wit` (a link to `wit/`) at build time;
    // the packaged crate must hold that WIT itself, identical to the workspace's.
    let sdk = target.join(format!("package/toolhost-sdk-{version}.crate"));
    for rel in wit_files(&root.join("wit"))? {
        let wit = output(
            Command::new("tar").arg("-xzOf").arg(&sdk).arg(format!("toolhost-sdk-{version}/wit/{rel}")),
        )
        .with_context(|| {
            format!("toolhost-sdk: the packaged crate has no wit/{rel} (its bindings would not build)")
        })?;
        let ours = std::fs::read(root.join("wit").join(&rel)).with_context(|| format!("read wit/{rel}"))?;
        if wit.stdout != ours {
            bail!("toolhost-sdk: the packaged wit/{rel} differs from the workspace's wit/{rel}");
        }
    }
    Ok(())
}

/// Every `.wit` file under `dir`, relative to it (`toolhost.wit`, `deps/keyvalue/store.wit`).
fn wit_files(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("read {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "wit") {
                out.push(p.strip_prefix(dir)?.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The file names an SDK's `FILES` lists (as `host/cli/build.rs` reads them).
fn listed_files(sdk: &Path) -> Result<BTreeSet<String>> {
    let list = sdk.join("FILES");
    let text = std::fs::read_to_string(&list).with_context(|| format!("read {}", list.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

/// `pip install` of a copy of `plugin-sdk/python` (pip builds in the source folder) into a fresh
/// virtual environment, with the pinned setuptools from a local wheel folder; then the installed
/// package's version and files.
fn python(root: &Path, out: &Path, version: &str) -> Result<()> {
    let sdk = root.join("plugin-sdk/python");
    let system = if Command::new("python3").arg("--version").output().is_ok() { "python3" } else { "python" };
    let wheels = out.join("python-wheels");
    let have_backend = std::fs::read_dir(&wheels)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&format!("setuptools-{SETUPTOOLS}-")));
    if !have_backend {
        run_shown(
            Command::new(system)
                .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"])
                .args(["--only-binary=:all:", &format!("setuptools=={SETUPTOOLS}"), "-d"])
                .arg(&wheels),
        )
        .context("download the build backend (setuptools) once into target/package-check/python-wheels")?;
    }
    let src = out.join("python-src");
    let venv = out.join("python-venv");
    for dir in [&src, &venv] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).with_context(|| format!("remove {}", dir.display()))?;
        }
    }
    copy_tree(&sdk, &src)?;
    run_shown(Command::new(system).args(["-m", "venv"]).arg(&venv))
        .context("create a virtual environment (needs python3 with the venv module)")?;
    let python = venv.join("bin/python");
    run_shown(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-index",
                "--find-links",
            ])
            .arg(&wheels)
            .arg(&src),
    )
    .context("pip install ./plugin-sdk/python")?;
    // Outside the sources, so the installed copy is the one imported.
    let probe = "import importlib.metadata as m, json, os, toolhost_sdk\n\
                 print(json.dumps({'version': m.version('toolhost-sdk'), \
                 'dir': os.path.dirname(os.path.dirname(toolhost_sdk.__file__))}))";
    let shown = output(Command::new(&python).current_dir(out).args(["-c", probe]))
        .context("import the installed toolhost_sdk")?;
    let installed: Value = serde_json::from_slice(&shown.stdout).context("the probe's answer")?;
    let got = installed["version"].as_str().unwrap_or_default();
    if got != version {
        bail!("plugin-sdk/python/pyproject.toml says version {got}; the SDK is {version} (Cargo.toml)");
    }
    let site = PathBuf::from(installed["dir"].as_str().unwrap_or_default());
    for file in listed_files(&sdk)? {
        if !site.join(&file).is_file() {
            bail!("the installed package lacks {file}, which plugin-sdk/python/FILES lists");
        }
    }
    Ok(())
}

/// Copy `from` to `to`, leaving out what a build or an interpreter left there.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("read {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "__pycache__" || name == "build" || name.ends_with(".egg-info") {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(&name))?;
        } else {
            std::fs::copy(&path, to.join(&name)).with_context(|| format!("copy {}", path.display()))?;
        }
    }
    Ok(())
}

/// `npm pack --dry-run`: the tarball must hold exactly what `plugin-sdk/js/FILES` lists (what
/// `toolhost new` vendors), at the SDK's version.
fn npm(root: &Path, version: &str) -> Result<()> {
    let sdk = root.join("plugin-sdk/js");
    let mut cmd = Command::new("npm");
    cmd.current_dir(&sdk).args(["pack", "--dry-run", "--json", "--ignore-scripts"]);
    eprintln!("   $ {}", shown(&cmd));
    let packed = output(&mut cmd)?;
    let report: Value = serde_json::from_slice(&packed.stdout).context("npm pack --json: not JSON")?;
    let got = report[0]["version"].as_str().unwrap_or_default();
    if got != version {
        bail!("plugin-sdk/js/package.json says version {got}; the SDK is {version} (Cargo.toml)");
    }
    let files: BTreeSet<String> = report[0]["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str().map(str::to_string))
        .collect();
    let listed = listed_files(&sdk)?;
    if let Some(extra) = files.difference(&listed).next() {
        bail!("npm pack would ship {extra}, which plugin-sdk/js/FILES does not list (package.json `files`)");
    }
    if let Some(missing) = listed.difference(&files).next() {
        bail!("npm pack would leave out {missing}, which plugin-sdk/js/FILES lists (package.json `files`)");
    }
    eprintln!("   toolhost-sdk-{version}.tgz: {} files", files.len());
    Ok(())
}

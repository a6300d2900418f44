//! `toolhost dev`'s fast path for Python and JavaScript: a save is live in well under two
//! seconds because nothing is built and nothing is compiled.
//!
//! Building a Python component (componentize-py bundles and snapshots an interpreter) takes
//! many seconds, and so does compiling its 18 MiB of code; a JavaScript build and compile take
//! a few. So `dev` installs a *dev build* instead: a runtime component, built once per language
//! and SDK version and cached in the toolchains folder, which loads the author's sources from a
//! read-only folder the host maps into its sandbox (`/toolhost-dev`). A save costs deriving the
//! manifest (the SDK's own `manifest` step, the same as `toolhost build`'s), copying the
//! sources (Python) or bundling them into one script (JavaScript, with the rolldown jco
//! installs), and writing the runtime with the new manifest embedded. The host keys compiled
//! code by the code alone ([`toolhost_spec::sections::code_sha256`]), so the runtime is compiled
//! once, ever.
//!
//! The dev build has the built one's manifest and skills, so the same grants, limits and
//! approvals apply and the same skills are served;
//! it is marked with a `toolhost-dev` section naming its sources' snapshot, which the host
//! finds at `PLUGINS/.toolhost-dev/NAME-ID/` and maps read-only. `toolhost build` never makes
//! one: it always writes the self-contained component. A Python project importing a module the
//! runtime does not hold (`PRELOAD` in the Python SDK's `_dev.py`) is built the full way.

use super::{Lang, Project, Toolchains, node, python3, run_step, skills};
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use toolhost_spec::manifest::{self, Manifest};
use toolhost_spec::sections::{DevMarker, embed_dev_marker};

/// What a dev install did.
#[derive(Debug)]
pub enum DevInstall {
    /// The dev build is in the plugins folder.
    Installed { manifest: Box<Manifest>, to: PathBuf, seconds: f64 },
    /// This project cannot run on the dev runtime (the reason); build it the full way.
    Unsupported(String),
}

/// The folder of a plugin's dev sources under the plugins folder.
pub const SOURCES_DIR: &str = ".toolhost-dev";

impl Toolchains {
    /// The dev runtime for `lang`, built on first use and kept in the toolchains folder, named
    /// by the SDK's content hash (a new SDK builds a new runtime).
    pub fn dev_runtime(&self, lang: Lang) -> Result<PathBuf> {
        let sdk = self.sdk()?;
        let id = sdk.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let out = self.root.join(format!("dev-runtime-{lang}-{id}.wasm"));
        if out.is_file() {
            return Ok(out);
        }
        eprintln!("toolhost dev: building the {lang} dev runtime (once per SDK version) …");
        let tmp = self.root.join(format!(".dev-runtime-{lang}-{id}.{}.wasm", std::process::id()));
        let result = match lang {
            Lang::Python => run_step(
                Command::new(python3())
                    .env("PYTHONPATH", sdk.join("python"))
                    .args(["-m", "toolhost_sdk", "runtime", "-o"])
                    .arg(&tmp)
                    .arg("--wit")
                    .arg(sdk.join("wit"))
                    .arg("--componentize-py")
                    .arg(self.componentize_py()?),
                "componentize-py (dev runtime)",
            ),
            Lang::Js => run_step(
                Command::new(node())
                    .arg(sdk.join("js/bin/toolhost-js.mjs"))
                    .args(["runtime", "-o"])
                    .arg(&tmp)
                    .arg("--wit")
                    .arg(sdk.join("wit"))
                    .arg("--jco")
                    .arg(self.jco()?),
                "jco componentize (dev runtime)",
            ),
            Lang::Rust => bail!("a Rust project builds in well under a second; it has no dev runtime"),
        };
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &out).with_context(|| format!("cannot move {} into place", tmp.display()))?;
        Ok(out)
    }
}

impl Project {
    /// Install a dev build of this Python or JavaScript project into `plugins_dir`, working in
    /// `scratch` (a folder of the dev session's own, removed when it ends); `before_install`
    /// sees the manifest before anything is written and may refuse it.
    pub fn dev_install(
        &self,
        tools: &Toolchains,
        plugins_dir: &Path,
        scratch: &Path,
        before_install: &dyn Fn(&Manifest) -> Result<()>,
    ) -> Result<DevInstall> {
        let started = std::time::Instant::now();
        let sdk = tools.sdk()?;
        std::fs::create_dir_all(scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
        // Work on a copy: a save while this runs changes the next build, not this one.
        let snap = tempfile::Builder::new()
            .prefix("snapshot-")
            .tempdir_in(scratch)
            .with_context(|| format!("cannot create a folder in {}", scratch.display()))?;
        snapshot(self, self.dir(), snap.path())?;
        let sources = tempfile::Builder::new().prefix("sources-").tempdir_in(scratch)?;
        let manifest = match self {
            Project::Python { .. } => match self.python_dev_sources(&sdk, snap.path(), sources.path())? {
                Ok(manifest) => manifest,
                Err(why) => return Ok(DevInstall::Unsupported(why)),
            },
            Project::Js { .. } => self.js_dev_sources(tools, &sdk, snap.path(), sources.path())?,
            Project::Rust(_) => bail!("a Rust project has no dev build"),
        };
        let section = skills::collect(snap.path())
            .map_err(|e| anyhow::anyhow!("{}", unsnap(&format!("{e:#}"), snap.path(), self.dir())))?;
        let runtime = tools.dev_runtime(self.lang())?;
        before_install(&manifest)?;
        let sections = (section.as_ref(), snap.path());
        let to = place_dev_build(plugins_dir, &manifest, sections, &runtime, sources)?;
        Ok(DevInstall::Installed {
            manifest: Box::new(manifest),
            to,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// A Python project's manifest (the SDK's `manifest --dev`), its sources copied from
    /// `snap` into `sources` with the module to load; `Ok(Err(why))` when it imports modules
    /// the dev runtime does not hold.
    fn python_dev_sources(
        &self,
        sdk: &Path,
        snap: &Path,
        sources: &Path,
    ) -> Result<Result<Manifest, String>> {
        let out = sdk_json(
            Command::new(python3())
                .env("PYTHONPATH", sdk.join("python"))
                .args(["-m", "toolhost_sdk", "manifest", "--dev"])
                .arg(snap),
            snap,
            self.dir(),
        )?;
        #[derive(serde::Deserialize)]
        struct Dev {
            manifest: serde_json::Value,
            module: String,
            outside: Vec<String>,
        }
        let dev: Dev = serde_json::from_value(out).context("the SDK's `manifest --dev` output")?;
        if !dev.outside.is_empty() {
            return Ok(Err(format!(
                "it imports {}, which the dev runtime does not hold",
                dev.outside.join(", ")
            )));
        }
        copy_tree(snap, sources, &|rel| is_python_input(rel))?;
        std::fs::write(
            sources.join(".toolhost-dev.json"),
            serde_json::json!({ "module": dev.module }).to_string(),
        )?;
        parse_manifest(dev.manifest).map(Ok)
    }

    /// A JavaScript project's manifest (the SDK's `manifest`), its sources in `snap` bundled
    /// into `sources/bundle.js`.
    fn js_dev_sources(
        &self,
        tools: &Toolchains,
        sdk: &Path,
        snap: &Path,
        sources: &Path,
    ) -> Result<Manifest> {
        let cli = sdk.join("js/bin/toolhost-js.mjs");
        let m = sdk_json(Command::new(node()).arg(&cli).arg("manifest").arg(snap), snap, self.dir())?;
        run_step(
            Command::new(node())
                .arg(&cli)
                .arg("bundle")
                .arg(snap)
                .arg("-o")
                .arg(sources.join("bundle.js"))
                .arg("--jco")
                .arg(tools.jco()?),
            "toolhost-js bundle",
        )?;
        parse_manifest(m)
    }
}

/// Move `sources` into place as `PLUGINS/.toolhost-dev/NAME-ID` (unless that snapshot is there
/// already), write the runtime with `manifest`, the skills and apps (if the project, snapshot
/// at `project`, has any) and the dev marker embedded as `NAME.wasm` (when it changed), and
/// drop the plugin's older snapshots; returns the file written.
fn place_dev_build(
    plugins_dir: &Path,
    manifest: &Manifest,
    (section, project): (Option<&toolhost_spec::skills::SkillsSection>, &Path),
    runtime: &Path,
    sources: tempfile::TempDir,
) -> Result<PathBuf> {
    let id = tree_id(sources.path())?;
    let dest = plugins_dir.join(SOURCES_DIR).join(format!("{}-{id}", manifest.name));
    if !dest.is_dir() {
        std::fs::create_dir_all(dest.parent().unwrap_or(plugins_dir))?;
        toolhost_core::files::rename_dir_into_place(&sources.keep(), &dest)
            .with_context(|| format!("cannot create {}", dest.display()))?;
    }
    let bare = std::fs::read(runtime).with_context(|| format!("cannot read {}", runtime.display()))?;
    let mut bytes =
        manifest::embed(&bare, manifest).map_err(|e| anyhow::anyhow!("cannot embed the manifest: {e}"))?;
    if let Some(section) = section {
        bytes = skills::embed(bytes, section)?;
    }
    let bytes = super::apps::embed_project(bytes, project, manifest)?;
    let bytes = embed_dev_marker(&bytes, &DevMarker { sources: id.clone() });
    let to = plugins_dir.join(format!("{}.wasm", manifest.name));
    if std::fs::read(&to).ok().as_deref() != Some(&bytes[..]) {
        toolhost_core::files::write_atomic(&to, &bytes)
            .with_context(|| format!("cannot write {}", to.display()))?;
    }
    prune_sources(plugins_dir, &manifest.name, &id);
    Ok(to)
}

fn parse_manifest(v: serde_json::Value) -> Result<Manifest> {
    manifest::parse(v.to_string().as_bytes()).map_err(|e| {
        anyhow::anyhow!("the SDK derived a manifest the host refuses ({e}); this is a bug in the SDK")
    })
}

/// Run an SDK step that prints JSON; its messages name the project's files, not the snapshot's.
fn sdk_json(cmd: &mut Command, snap: &Path, project: &Path) -> Result<serde_json::Value> {
    let out = super::scratch_env(cmd)
        .env("TOOLHOST_BUILD", "1")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    let stderr = unsnap(&String::from_utf8_lossy(&out.stderr), snap, project);
    if !out.status.success() {
        bail!("the tools in {} have errors:\n{}", project.display(), stderr.trim_end());
    }
    // Warnings (a JavaScript param without a type) are the author's to see.
    if !stderr.trim().is_empty() {
        eprint!("{stderr}");
    }
    serde_json::from_slice(&out.stdout).context("the SDK printed no JSON")
}

/// `text` with the snapshot's path written as the project's.
pub fn unsnap(text: &str, snap: &Path, project: &Path) -> String {
    let (s, p) = (snap.display().to_string(), project.display().to_string());
    let text = text.replace(&s, &p);
    // Messages may show paths relative to the working directory.
    match (relative(snap), relative(project)) {
        (Some(s), Some(p)) if !s.is_empty() => text.replace(&s, &p),
        _ => text,
    }
}

fn relative(p: &Path) -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    p.strip_prefix(&cwd).ok().map(|r| r.display().to_string())
}

/// Whether a file (relative to the project) goes into a plugin: sources and data, never tests,
/// build outputs, dependencies' caches or dotfiles. Every file of `skills/` but dotfiles goes
/// in, whatever its name (a skill's `scripts/test_x.py` is the skill's, not a test).
pub fn is_input(lang: Lang, rel: &Path) -> bool {
    if skills::is_skill_file(rel) || super::apps::is_app_file(rel) {
        return rel.components().all(|c| !c.as_os_str().to_string_lossy().starts_with('.'));
    }
    let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).peekable();
    let mut name = String::new();
    while let Some(part) = parts.next() {
        if part.starts_with('.') || ["__pycache__", "target", "node_modules"].contains(&part.as_str()) {
            return false;
        }
        if parts.peek().is_none() {
            name = part;
        }
    }
    if name.ends_with(".wasm") || name.ends_with('~') || name.ends_with(".pyc") || name.ends_with(".tmp") {
        return false;
    }
    match lang {
        Lang::Python => !is_python_test(&name),
        Lang::Js => !is_js_test(&name),
        Lang::Rust => true,
    }
}

fn is_python_input(rel: &Path) -> bool {
    is_input(Lang::Python, rel)
}

/// `test_*.py`, `*_test.py`, `conftest.py`: a Python project's tests.
pub fn is_python_test(name: &str) -> bool {
    name.ends_with(".py")
        && (name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py")
}

/// `*.test.js`, `*.test.mjs`, `*.spec.js`: a JavaScript project's tests.
pub fn is_js_test(name: &str) -> bool {
    [".test.js", ".test.mjs", ".spec.js", ".spec.mjs"].iter().any(|s| name.ends_with(s))
}

/// Copy the project's inputs into `to`; for JavaScript, `node_modules` is linked, not copied
/// (the bundler follows it to the project's own dependencies).
pub(super) fn snapshot(project: &Project, from: &Path, to: &Path) -> Result<()> {
    let lang = project.lang();
    copy_tree(from, to, &|rel| is_input(lang, rel))?;
    if lang == Lang::Js && from.join("node_modules").is_dir() {
        std::os::unix::fs::symlink(from.join("node_modules"), to.join("node_modules"))
            .with_context(|| format!("cannot link node_modules into {}", to.display()))?;
    }
    Ok(())
}

/// Copy the files under `from` that `keep` accepts (by path relative to `from`) into `to`.
fn copy_tree(from: &Path, to: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<()> {
    fn walk(root: &Path, dir: &Path, to: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                let name = e.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') || ["__pycache__", "target", "node_modules"].contains(&name.as_ref())
                {
                    continue;
                }
                walk(root, &path, to, keep)?;
            } else if kind.is_file() && keep(rel) {
                let dest = to.join(rel);
                std::fs::create_dir_all(dest.parent().unwrap_or(to))?;
                std::fs::copy(&path, &dest).with_context(|| format!("cannot copy {}", path.display()))?;
            }
        }
        Ok(())
    }
    walk(from, from, to, keep)
}

/// A short content id of a folder: its files' relative paths and bytes, in order.
pub(super) fn tree_id(dir: &Path) -> Result<String> {
    let mut files = Vec::new();
    copy_list(dir, dir, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for rel in files {
        let bytes = std::fs::read(dir.join(&rel))?;
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
}

fn copy_list(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() {
            continue; // a snapshot's link to the project's node_modules
        } else if kind.is_dir() {
            copy_list(root, &path, out)?;
        } else {
            out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
    Ok(())
}

/// Remove `name`'s older snapshots, keeping `keep` and the one before it (a call that started
/// on the previous version may still be reading it).
fn prune_sources(plugins_dir: &Path, name: &str, keep: &str) {
    let dir = plugins_dir.join(SOURCES_DIR);
    let prefix = format!("{name}-");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let mut old: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix(&prefix).is_some_and(|id| id != keep && id.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .map(|e| (e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH), e.path()))
        .collect();
    old.sort();
    old.pop(); // the previous one
    for (_, path) in old {
        let _ = std::fs::remove_dir_all(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_outputs_and_dotfiles_are_not_inputs() {
        for (lang, rel, input) in [
            (Lang::Python, "app.py", true),
            (Lang::Python, "lib/helpers.py", true),
            (Lang::Python, "pyproject.toml", true),
            (Lang::Python, "test_app.py", false),
            (Lang::Python, "tests/helpers_test.py", false),
            (Lang::Python, "__pycache__/app.cpython-311.pyc", false),
            (Lang::Python, "notes.wasm", false),
            (Lang::Js, "plugin.js", true),
            (Lang::Js, "lib/data.js", true),
            (Lang::Js, "plugin.test.js", false),
            (Lang::Js, "node_modules/x/index.js", false),
            (Lang::Js, ".cache/x.js", false),
            (Lang::Python, "skills/tidy/SKILL.md", true),
            (Lang::Python, "skills/tidy/scripts/test_it.py", true),
            (Lang::Js, "skills/tidy/scripts/check.test.js", true),
            (Lang::Js, "skills/tidy/.notes.md", false),
        ] {
            assert_eq!(is_input(lang, Path::new(rel)), input, "{lang} {rel}");
        }
    }
}

//! `toolhost build` and `toolhost new`: one command that turns a plugin project in Rust,
//! Python or JavaScript into a loadable `.wasm`.
//!
//! Every language follows the same path: the manifest is derived from the author's code (the
//! Rust macro writes it into the component itself; the Python and JS SDKs print it from the
//! decorated/defined tools), the language's toolchain builds the component, the host embeds
//! the manifest ([`toolhost_spec::manifest::embed`]) and the project's `skills/` folder
//! ([`skills`]; a Rust crate's macro embeds that too) and reads the result back with its own
//! reader before anything is written. Toolchains (componentize-py, jco + componentize-qjs) are
//! installed at pinned versions on first use into a private folder, never globally; the
//! Python and JS SDKs and the WIT are carried inside the toolhost binary and written next to
//! them, so a project needs nothing installed but `python3` or `node`.

use cargo::PluginCrate;
use toolhost_spec::manifest::{self, Manifest};
pub mod apps;
pub mod cargo;
pub mod dev;
pub mod scaffold;
mod sdk_files;
pub mod skills;
pub mod testing;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// componentize-py from PyPI, pinned.
pub const COMPONENTIZE_PY: &str = "0.25.1";
/// jco from npm, pinned, with componentize-qjs (the QuickJS backend `--backend qjs` runs).
pub const JCO: &str = "1.35.0";
pub const COMPONENTIZE_QJS: &str = "0.4.5";

/// Runs the componentize-py installed in `../lib` next to it, wherever the folder is.
const COMPONENTIZE_PY_LAUNCHER: &str = r#"#!/bin/sh
# componentize-py, installed by toolhost with pip --target into ../lib
here=$(cd "$(dirname "$0")/.." && pwd)
PYTHONPATH="$here/lib${PYTHONPATH:+:$PYTHONPATH}" exec "${TOOLHOST_PYTHON3:-python3}" -c \
  'import sys; sys.argv[0] = "componentize-py"; from componentize_py import script; script()' "$@"
"#;

/// Builds the build cache keeps (Python and JavaScript; a Python component is ~18 MiB).
pub const BUILDS_KEPT: usize = 12;

/// The WIT world every plugin targets, and the packages it imports (`wit/deps`), as paths
/// relative to `wit/`.
const WIT: &[(&str, &str)] = &[
    ("toolhost.wit", include_str!("../../../../wit/toolhost.wit")),
    ("deps/keyvalue/world.wit", include_str!("../../../../wit/deps/keyvalue/world.wit")),
    ("deps/keyvalue/store.wit", include_str!("../../../../wit/deps/keyvalue/store.wit")),
    ("deps/keyvalue/atomic.wit", include_str!("../../../../wit/deps/keyvalue/atomic.wit")),
    ("deps/keyvalue/batch.wit", include_str!("../../../../wit/deps/keyvalue/batch.wit")),
    ("deps/keyvalue/watch.wit", include_str!("../../../../wit/deps/keyvalue/watch.wit")),
];

/// The Python SDK, as shipped (paths relative to `plugin-sdk/python/`).
const PYTHON_SDK: &[(&str, &str)] = sdk_files::PYTHON;
/// The JS SDK, as shipped (paths relative to `plugin-sdk/js/`).
const JS_SDK: &[(&str, &str)] = sdk_files::JS;

/// A plugin project, recognised by what its folder holds.
#[derive(Debug, Clone)]
pub enum Project {
    /// A crate with `Cargo.toml` building a `cdylib` with `toolhost-sdk`.
    Rust(PluginCrate),
    /// `pyproject.toml` with `[tool.toolhost]`, or an `app.py`.
    Python { dir: PathBuf },
    /// `package.json` with a `"toolhost"` key.
    Js { dir: PathBuf },
}

/// Which language a project is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
        })
    }
}

impl Project {
    /// Recognise the project in `dir`: a Rust crate (`Cargo.toml`), a Python project
    /// (`pyproject.toml` with `[tool.toolhost]`, or `app.py`) or a JS project (`package.json`
    /// with a `"toolhost"` key).
    pub fn locate(dir: &Path) -> Result<Project> {
        if !dir.is_dir() {
            bail!("{} is not a folder (pass a plugin project's folder)", dir.display());
        }
        let dir = std::fs::canonicalize(dir)?;
        if dir.join("Cargo.toml").is_file() {
            return Ok(Project::Rust(PluginCrate::locate(&dir)?));
        }
        let pyproject = dir.join("pyproject.toml");
        if pyproject.is_file() {
            let text = std::fs::read_to_string(&pyproject)?;
            let table: toml::Table =
                text.parse().with_context(|| format!("{} is not valid TOML", pyproject.display()))?;
            if table.get("tool").and_then(|t| t.get("toolhost")).is_some() {
                return Ok(Project::Python { dir });
            }
        }
        if dir.join("app.py").is_file() {
            return Ok(Project::Python { dir });
        }
        let package = dir.join("package.json");
        if package.is_file() {
            let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&package)?)
                .with_context(|| format!("{} is not valid JSON", package.display()))?;
            if v.get("toolhost").is_some() {
                return Ok(Project::Js { dir });
            }
            bail!(
                "{} has no \"toolhost\" key; add \"toolhost\": {{\"main\": \"plugin.js\"}} to make it a plugin project",
                package.display()
            );
        }
        if pyproject.is_file() {
            bail!(
                "{} has no [tool.toolhost] table; add one with module = \"app\" to make it a plugin project",
                pyproject.display()
            );
        }
        bail!(
            "{} is not a plugin project: expected Cargo.toml (Rust), pyproject.toml with [tool.toolhost] or app.py (Python), or package.json with \"toolhost\" (JavaScript); `toolhost new NAME --lang rust|python|js` makes one",
            dir.display()
        )
    }

    /// The same project in another folder (a snapshot of it).
    fn relocated(&self, dir: &Path) -> Project {
        match self {
            Project::Rust(k) => Project::Rust(k.clone()),
            Project::Python { .. } => Project::Python { dir: dir.to_path_buf() },
            Project::Js { .. } => Project::Js { dir: dir.to_path_buf() },
        }
    }

    pub fn lang(&self) -> Lang {
        match self {
            Project::Rust(_) => Lang::Rust,
            Project::Python { .. } => Lang::Python,
            Project::Js { .. } => Lang::Js,
        }
    }

    pub fn dir(&self) -> &Path {
        match self {
            Project::Rust(k) => k.dir(),
            Project::Python { dir } | Project::Js { dir } => dir,
        }
    }

    /// Whether a changed path goes into the plugin, so `toolhost dev` rebuilds: sources,
    /// project files and every file of `skills/` and `apps/`, never tests (`test_*.py`, `*.test.js`), build
    /// outputs or dotfiles.
    pub fn is_source(&self, path: &Path) -> bool {
        match self {
            Project::Rust(k) => k.is_source(path),
            Project::Python { dir } | Project::Js { dir } => {
                let Ok(rel) = path.strip_prefix(dir) else { return false };
                if !dev::is_input(self.lang(), rel) {
                    return false;
                }
                if skills::is_skill_file(rel) || apps::is_app_file(rel) {
                    return true;
                }
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                match self {
                    Project::Python { .. } => matches!(ext, "py" | "toml" | "json" | "txt"),
                    _ => matches!(ext, "js" | "mjs" | "json"),
                }
            }
        }
    }

    /// The manifest the SDK derives from the code, without building anything (Python and
    /// JavaScript; a Rust crate's manifest is written by its macro during the build).
    pub fn manifest(&self, tools: &Toolchains) -> Result<Manifest> {
        let sdk = tools.sdk()?;
        match self {
            Project::Rust(k) => {
                bail!("{}: a Rust crate's manifest comes from its build (toolhost build)", k.dir().display())
            }
            Project::Python { dir } => derive_manifest(
                Command::new(python3())
                    .env("PYTHONPATH", sdk.join("python"))
                    .args(["-m", "toolhost_sdk", "manifest"])
                    .arg(dir),
                dir,
            ),
            Project::Js { dir } => derive_manifest(
                Command::new(node()).arg(sdk.join("js/bin/toolhost-js.mjs")).arg("manifest").arg(dir),
                dir,
            ),
        }
    }

    /// Build the component, with its manifest (and skills) embedded and checked by the host's
    /// own reader.
    pub fn build(&self, tools: &Toolchains) -> Result<Built> {
        let started = std::time::Instant::now();
        let (bytes, manifest, cached) = match self {
            Project::Rust(k) => {
                let (bytes, manifest) = build_rust(k)?;
                (bytes, manifest, false)
            }
            Project::Python { .. } | Project::Js { .. } => self.build_snapshot(tools)?,
        };
        // The apps, the same way in every language (none of the toolchains knows them).
        let bytes = apps::embed_project(bytes, self.dir(), &manifest)?;
        Ok(Built { bytes, manifest, seconds: started.elapsed().as_secs_f64(), cached })
    }

    /// A Python or JavaScript build, from a copy of the inputs: a save while this runs changes
    /// the next build, not this one, and the build cache's key is what was built. Returns the
    /// component, its manifest and whether it came from the build cache.
    fn build_snapshot(&self, tools: &Toolchains) -> Result<(Vec<u8>, Manifest, bool)> {
        let snap = tempfile::Builder::new()
            .prefix("toolhost-build-")
            .tempdir_in(SCRATCH.get().cloned().unwrap_or_else(std::env::temp_dir))
            .context("cannot create a folder for the build")?;
        dev::snapshot(self, self.dir(), snap.path())?;
        let unsnap =
            |e: anyhow::Error| anyhow::anyhow!("{}", dev::unsnap(&format!("{e:#}"), snap.path(), self.dir()));
        let section = skills::collect(snap.path()).map_err(unsnap)?;
        let key = tools.build_key(self.lang(), snap.path())?;
        // A cached build from before this toolhost embedded skills has the same key: not used.
        if let Some(bytes) =
            tools.cached_build(&key).filter(|b| !skills::stale(b, section.as_ref()).unwrap_or(true))
        {
            let manifest =
                manifest::read(&bytes).map_err(|e| anyhow::anyhow!("a cached build is unreadable: {e}"))?;
            return Ok((bytes, manifest, true));
        }
        let manifest = self.relocated(snap.path()).manifest(tools).map_err(unsnap)?;
        let sdk = tools.sdk()?;
        let out = Scratch::new();
        match self {
            Project::Python { .. } => run_step(
                Command::new(python3())
                    .env("PYTHONPATH", sdk.join("python"))
                    .args(["-m", "toolhost_sdk", "componentize"])
                    .arg(snap.path())
                    .arg("-o")
                    .arg(&*out)
                    .arg("--wit")
                    .arg(sdk.join("wit"))
                    .arg("--componentize-py")
                    .arg(tools.componentize_py()?),
                "componentize-py",
            )?,
            _ => run_step(
                Command::new(node())
                    .arg(sdk.join("js/bin/toolhost-js.mjs"))
                    .arg("componentize")
                    .arg(snap.path())
                    .arg("-o")
                    .arg(&*out)
                    .arg("--wit")
                    .arg(sdk.join("wit"))
                    .arg("--jco")
                    .arg(tools.jco()?),
                "jco componentize",
            )?,
        }
        let mut bytes = embed(&out, &manifest)?;
        if let Some(section) = &section {
            bytes = skills::embed(bytes, section)?;
        }
        tools.keep_build(&key, &bytes);
        Ok((bytes, manifest, false))
    }
}

/// Build a Rust crate and read the component back: its manifest, and its skills, which must be
/// those of its `skills/` folder (the macro's copy, or embedded here for a crate whose SDK
/// predates skills).
fn build_rust(k: &PluginCrate) -> Result<(Vec<u8>, Manifest)> {
    k.build()?;
    let path = k.artifact();
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let m = manifest::read(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let bytes = match skills::collect(k.dir())? {
        Some(wanted) => skills::embed(bytes, &wanted)?,
        None if skills::stale(&bytes, None)? => bail!(
            "{} carries skills, but {} has no {}/ folder (an older build?); `cargo clean -p {}` and build again",
            path.display(),
            k.dir().display(),
            skills::DIR,
            k.name
        ),
        None => bytes,
    };
    Ok((bytes, m))
}

/// A built plugin.
#[derive(Debug)]
pub struct Built {
    pub bytes: Vec<u8>,
    pub manifest: Manifest,
    pub seconds: f64,
    /// Taken from the build cache: the inputs are those of an earlier build.
    pub cached: bool,
}

impl Built {
    /// Write the component to `to` (write-then-rename, so a watching host never sees half a
    /// file).
    pub fn write(&self, to: &Path) -> Result<()> {
        let dir = to.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        toolhost_core::files::write_atomic(to, &self.bytes)
            .with_context(|| format!("cannot write {}", to.display()))
    }

    /// Install into a plugins folder as `NAME.wasm`; returns the path.
    pub fn install(&self, plugins_dir: &Path) -> Result<PathBuf> {
        let to = plugins_dir.join(format!("{}.wasm", self.manifest.name));
        self.write(&to)?;
        Ok(to)
    }
}

/// Refuse to install `m` into `plugins_dir` when another plugin there (any `.wasm` but the one
/// named after `m`, which is replaced) has the same plugin name or declares one of `m`'s tools:
/// the registry would load only one of them, silently to whoever only looks at their own.
pub fn check_collisions(plugins_dir: &Path, m: &Manifest) -> Result<()> {
    let own = format!("{}.wasm", m.name);
    let Ok(entries) = std::fs::read_dir(plugins_dir) else { return Ok(()) };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            toolhost_core::discovery::is_candidate_name(&name) && name != own
        })
        .collect();
    files.sort();
    let mut problems = Vec::new();
    for path in files {
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let Ok(other) = manifest::read(&bytes) else { continue };
        let file = toolhost_core::discovery::file_name(&path);
        if other.name == m.name {
            problems.push(format!(
                "plugin `{}` is already installed as {file}; remove {file}, or rename the plugin",
                m.name
            ));
            continue;
        }
        for t in &m.tools {
            if other.tools.iter().any(|o| o.name == t.name) {
                problems.push(format!(
                    "tool `{}` of plugin `{}` is already a tool of plugin `{}` ({file}); rename the tool in one of them, or remove {file}",
                    t.name, m.name, other.name
                ));
            }
        }
    }
    if !problems.is_empty() {
        bail!("not installed into {}: {}", plugins_dir.display(), problems.join("; "));
    }
    Ok(())
}

/// Where pinned toolchains and the bundled SDKs are installed.
#[derive(Debug, Clone)]
pub struct Toolchains {
    pub root: PathBuf,
}

impl Toolchains {
    /// `$TOOLHOST_TOOLCHAINS`, else `$XDG_CACHE_HOME/toolhost/toolchains`, else
    /// `$HOME/.cache/toolhost/toolchains`.
    pub fn from_env() -> Toolchains {
        let root = std::env::var_os("TOOLHOST_TOOLCHAINS").map(PathBuf::from).unwrap_or_else(|| {
            toolhost_core::files::cache_dir()
                .unwrap_or_else(|| std::env::temp_dir().join("toolhost"))
                .join("toolchains")
        });
        Toolchains { root }
    }

    /// The bundled SDKs and WIT, written out once per content (the folder name is their hash).
    pub fn sdk(&self) -> Result<PathBuf> {
        let mut h = Sha256::new();
        for (path, text) in WIT.iter().chain(PYTHON_SDK).chain(JS_SDK) {
            h.update(path);
            h.update(text);
        }
        let hash: String = h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
        let dir = self.root.join(format!("sdk-{hash}"));
        if dir.is_dir() {
            return Ok(dir);
        }
        let tmp = self.root.join(format!(".sdk-{hash}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let write = |rel: &str, text: &str| -> Result<()> {
            let p = tmp.join(rel);
            std::fs::create_dir_all(p.parent().unwrap())?;
            std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))
        };
        for (rel, text) in WIT {
            write(&format!("wit/{rel}"), text)?;
        }
        for (rel, text) in PYTHON_SDK {
            write(&format!("python/{rel}"), text)?;
        }
        for (rel, text) in JS_SDK {
            write(&format!("js/{rel}"), text)?;
        }
        // Another build may have got there first: theirs is the same content.
        toolhost_core::files::rename_dir_into_place(&tmp, &dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(dir)
    }

    /// The build cache's key for a Python or JavaScript project: everything that goes into the
    /// component — the language, the pinned toolchains, the SDK and WIT (by the content hash
    /// in the SDK folder's name), and every input file of the project (relative path and
    /// bytes; tests left out).
    ///
    /// componentize-py and componentize-qjs are not deterministic (the snapshot they take holds
    /// CPython's hash secret and QuickJS's PRNG state, drawn at build time), so two builds of the
    /// same sources would differ in every byte: the cache makes them the same build, so
    /// `toolhost build` twice gives the same file and a host does not compile it twice. Not
    /// covered: a JavaScript project's `node_modules` (its dependencies), and the Python
    /// packages componentize-py finds in site-packages.
    pub fn build_key(&self, lang: Lang, inputs: &Path) -> Result<String> {
        let sdk = self.sdk()?;
        let mut h = Sha256::new();
        h.update(format!("{lang}\0{COMPONENTIZE_PY}\0{JCO}\0{COMPONENTIZE_QJS}\0").as_bytes());
        h.update(sdk.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default().as_bytes());
        h.update(python3().to_string_lossy().as_bytes());
        h.update(dev::tree_id(inputs)?.as_bytes());
        Ok(h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect())
    }

    fn build_file(&self, key: &str) -> PathBuf {
        self.root.join("builds").join(format!("{key}.wasm"))
    }

    /// A build made earlier from the same inputs, if the cache still has it (and it reads).
    pub fn cached_build(&self, key: &str) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.build_file(key)).ok()?;
        manifest::read(&bytes).is_ok().then_some(bytes)
    }

    /// Keep a build for its inputs; the cache holds the most recent [`BUILDS_KEPT`].
    pub fn keep_build(&self, key: &str, bytes: &[u8]) {
        let to = self.build_file(key);
        let dir = self.root.join("builds");
        if std::fs::create_dir_all(&dir).is_err() || toolhost_core::files::write_atomic(&to, bytes).is_err() {
            return; // only a cache
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { return };
        let mut all: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".wasm"))
            .map(|e| (e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH), e.path()))
            .collect();
        all.sort();
        let excess = all.len().saturating_sub(BUILDS_KEPT);
        for (_, path) in all.into_iter().take(excess) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// componentize-py, installed with `pip install --target` into a private folder on first
    /// use, run through a small relocatable launcher script.
    pub fn componentize_py(&self) -> Result<PathBuf> {
        let dir = self.root.join(format!("componentize-py-{COMPONENTIZE_PY}"));
        let bin = dir.join("bin/componentize-py");
        if bin.is_file() {
            return Ok(bin);
        }
        eprintln!(
            "toolhost: installing componentize-py {COMPONENTIZE_PY} into {} (first Python build only) …",
            dir.display()
        );
        self.install_into(&dir, |tmp| {
            run_step(
                Command::new(python3())
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        "--no-deps",
                        "--target",
                    ])
                    .arg(tmp.join("lib"))
                    .arg(format!("componentize-py=={COMPONENTIZE_PY}")),
                "pip install componentize-py",
            )?;
            std::fs::create_dir_all(tmp.join("bin"))?;
            let launcher = tmp.join("bin/componentize-py");
            std::fs::write(&launcher, COMPONENTIZE_PY_LAUNCHER)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755))?;
            Ok(())
        })?;
        Ok(bin)
    }

    /// jco with componentize-qjs, installed with npm into a private folder on first use.
    pub fn jco(&self) -> Result<PathBuf> {
        let dir = self.root.join(format!("jco-{JCO}-qjs-{COMPONENTIZE_QJS}"));
        let bin = dir.join("node_modules/.bin/jco");
        if bin.exists() {
            return Ok(bin);
        }
        eprintln!(
            "toolhost: installing jco {JCO} and componentize-qjs {COMPONENTIZE_QJS} into {} (first JavaScript build only) …",
            dir.display()
        );
        self.install_into(&dir, |tmp| {
            std::fs::create_dir_all(tmp)?;
            std::fs::write(tmp.join("package.json"), "{\"private\": true}\n")?;
            run_step(
                Command::new("npm")
                    .arg("install")
                    .arg("--prefix")
                    .arg(tmp)
                    .args(["--no-audit", "--no-fund", "--loglevel=error"])
                    .arg(format!("@bytecodealliance/jco@{JCO}"))
                    .arg(format!("componentize-qjs@{COMPONENTIZE_QJS}")),
                "npm install jco",
            )
        })?;
        Ok(bin)
    }

    /// Install into a temporary sibling of `dir`, then rename it into place: an interrupted or
    /// concurrent install never leaves a half toolchain that looks complete.
    fn install_into(&self, dir: &Path, install: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        std::fs::create_dir_all(&self.root)
            .with_context(|| format!("cannot create {}", self.root.display()))?;
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let tmp = self.root.join(format!(".{name}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        if let Err(e) = install(&tmp) {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        // Another process may have installed the same version meanwhile.
        toolhost_core::files::rename_dir_into_place(&tmp, dir)
            .with_context(|| format!("cannot move {} into place", tmp.display()))
    }
}

/// The folder a `toolhost dev` session keeps its temporary files in (set once per process).
static SCRATCH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Keep this process's build files (and the build tools', through `TMPDIR`) in `dir`, which
/// the caller removes when it is done.
pub fn set_scratch(dir: &Path) {
    let _ = SCRATCH.set(dir.to_path_buf());
}

/// `cmd` with `TMPDIR` set to the scratch folder, if there is one.
fn scratch_env(cmd: &mut Command) -> &mut Command {
    if let Some(dir) = SCRATCH.get() {
        cmd.env("TMPDIR", dir);
    }
    cmd
}

fn python3() -> PathBuf {
    std::env::var_os("TOOLHOST_PYTHON3").map(PathBuf::from).unwrap_or_else(|| "python3".into())
}

fn node() -> PathBuf {
    std::env::var_os("TOOLHOST_NODE").map(PathBuf::from).unwrap_or_else(|| "node".into())
}

/// Run the SDK's `manifest` command: JSON on stdout, or `FILE:LINE: error: …` lines on stderr.
fn derive_manifest(cmd: &mut Command, dir: &Path) -> Result<Manifest> {
    let out = scratch_env(cmd)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!("the tools in {} have errors:\n{}", dir.display(), err.trim_end());
    }
    manifest::parse(&out.stdout).map_err(|e| {
        anyhow::anyhow!(
            "the SDK derived a manifest the host refuses ({e}); this is a bug in the SDK:\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Run a build step with its output passed through; fail naming the step.
fn run_step(cmd: &mut Command, what: &str) -> Result<()> {
    let status = scratch_env(cmd)
        .env("TOOLHOST_BUILD", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("cannot run {what} ({:?})", cmd.get_program()))?;
    if !status.success() {
        bail!("{what} failed ({status}); see its messages above");
    }
    Ok(())
}

/// A temporary file for the bare component (removed when dropped).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = SCRATCH.get().cloned().unwrap_or_else(std::env::temp_dir);
        Scratch(dir.join(format!("toolhost-build-{}-{n}.wasm", std::process::id())))
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Embed `manifest` into the component at `path` and read it back with the host's reader.
fn embed(path: &Path, m: &Manifest) -> Result<Vec<u8>> {
    let bare = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let bytes = manifest::embed(&bare, m).map_err(|e| anyhow::anyhow!("cannot embed the manifest: {e}"))?;
    let back =
        manifest::read(&bytes).map_err(|e| anyhow::anyhow!("the built component is unreadable: {e}"))?;
    if &back != m {
        bail!("the embedded manifest does not read back as written (a bug in toolhost)");
    }
    Ok(bytes)
}

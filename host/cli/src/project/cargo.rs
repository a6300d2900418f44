//! The Rust side of `toolhost build` and `toolhost dev`: locate a plugin crate with `cargo
//! metadata`, build it for `wasm32-wasip2`; and the dev loop's self-approval. The language-
//! independent parts (other languages, install with write-then-rename) are in `build`.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What `cargo metadata` says about the plugin crate.
#[derive(Debug, Clone)]
pub struct PluginCrate {
    pub manifest: PathBuf,
    pub name: String,
    pub target_dir: PathBuf,
}

impl PluginCrate {
    /// Locate the crate at `dir` (a folder with `Cargo.toml`, or the `Cargo.toml` itself).
    pub fn locate(dir: &Path) -> Result<PluginCrate> {
        let manifest = if dir.is_file() { dir.to_path_buf() } else { dir.join("Cargo.toml") };
        if !manifest.is_file() {
            bail!("{} is not a crate: no Cargo.toml there", dir.display());
        }
        let manifest = std::fs::canonicalize(&manifest)?;
        let out = cargo()
            .args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
            .arg(&manifest)
            .stderr(Stdio::inherit())
            .output()
            .context("cannot run `cargo metadata`")?;
        if !out.status.success() {
            bail!("`cargo metadata` failed for {}", manifest.display());
        }
        let meta: serde_json::Value =
            serde_json::from_slice(&out.stdout).context("unreadable `cargo metadata` output")?;
        let package = meta["packages"]
            .as_array()
            .and_then(|ps| {
                ps.iter().find(|p| p["manifest_path"].as_str().map(Path::new) == Some(manifest.as_path()))
            })
            .with_context(|| format!("{} has no [package] (is it a workspace root?)", manifest.display()))?;
        let is_cdylib = package["targets"].as_array().is_some_and(|ts| {
            ts.iter().any(|t| t["crate_types"].as_array().is_some_and(|c| c.iter().any(|k| k == "cdylib")))
        });
        if !is_cdylib {
            bail!("{} must build a `cdylib` (add `[lib] crate-type = [\"cdylib\"]`)", manifest.display());
        }
        let target_dir = PathBuf::from(meta["target_directory"].as_str().context("no target_directory")?);
        let name = package["name"].as_str().context("package without a name")?.to_string();
        Ok(PluginCrate { manifest, name, target_dir })
    }

    /// The crate's folder.
    pub fn dir(&self) -> &Path {
        self.manifest.parent().unwrap_or(Path::new("."))
    }

    /// Where cargo puts the component.
    pub fn artifact(&self) -> PathBuf {
        self.target_dir.join("wasm32-wasip2/release").join(format!("{}.wasm", self.name.replace('-', "_")))
    }

    /// Build it; cargo's own diagnostics go straight to stderr, readable and in colour. The
    /// stamp of its `skills/` folder's file list is passed to the SDK's macro, so a file added
    /// there rebuilds the crate (see [`super::skills`]).
    pub fn build(&self) -> Result<()> {
        let mut cmd = cargo();
        match super::skills::stamp(self.dir()) {
            // No folder: no variable, as a plain `cargo build` has it (no rebuild between them).
            stamp if stamp.is_empty() => cmd.env_remove(super::skills::STAMP_ENV),
            stamp => cmd.env(super::skills::STAMP_ENV, stamp),
        };
        let status = cmd
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "--message-format",
                "human",
                "--manifest-path",
            ])
            .arg(&self.manifest)
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .context("cannot run cargo")?;
        if !status.success() {
            bail!("build failed (see cargo's messages above); fix and save to try again");
        }
        Ok(())
    }

    /// Whether a changed path should trigger a rebuild (sources, manifests, WIT, every file of
    /// `skills/`; not build output).
    pub fn is_source(&self, path: &Path) -> bool {
        if path.starts_with(&self.target_dir) || path.components().any(|c| c.as_os_str() == "target") {
            return false;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') || name.ends_with('~') {
            return false;
        }
        matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "toml" | "wit" | "json"))
            || name == "Cargo.lock"
            || path.strip_prefix(self.dir()).is_ok_and(super::skills::is_skill_file)
            || path.strip_prefix(self.dir()).is_ok_and(super::apps::is_app_file)
    }
}

/// The dev loop's author is the operator: whatever a new build requests is recorded as
/// approved (printed when it grew), so the loop never waits on `toolhost approve`. Grants still
/// come only from the config and flags.
pub fn approve_own_build(plugins_dir: &Path, m: &toolhost_spec::manifest::Manifest) {
    let mut approvals = toolhost_core::registry::approvals::Approvals::load(plugins_dir);
    let extra = approvals.pending(m);
    approvals.approve(m);
    approvals.save_or_warn();
    if !extra.is_empty() {
        eprintln!(
            "toolhost dev: approved the new requests of `{}`: {}",
            m.name,
            crate::term::line(&extra.join(", "))
        );
    }
}

/// Cargo, for a plugin crate: its own workspace, so a compiler wrapper set for the workspace
/// toolhost runs in (`cargo clippy`'s, `cargo xtask test`'s) is not the plugin's.
pub(super) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.env_remove("RUSTC_WORKSPACE_WRAPPER").env_remove("CLIPPY_ARGS");
    cmd
}

//! A test's environment: a plugins folder, a workspace and the operator's folder, all
//! temporary, with the host's config, and the ways to run the host over them (in this process,
//! or the `toolhost` binary).

use super::{runtime, toolhost};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use toolhost_core::executor::{AlwaysConfirm, Confirm, NoConfirm};
use toolhost_core::settings::{Config, KvSettings};

/// The key-value settings of a test whose stores live in `dir/kv`.
fn kv_in(dir: &Path) -> KvSettings {
    let backend = toolhost_core::capability::kv::Backend::Sqlite { dir: dir.join("kv") };
    KvSettings { backend, ..KvSettings::default() }
}
use toolhost_core::{Registry, Toolhost};

/// A plugins folder, a workspace and the operator's folder, all temporary. The operator's
/// folder (`dir`) is where commands run and a test's `toolhost.toml` and the grants file live:
/// never the workspace, which may not hold the host's own files (#55).
pub struct Env {
    pub plugins: tempfile::TempDir,
    pub workspace: tempfile::TempDir,
    pub dir: tempfile::TempDir,
    pub config: Config,
}

impl Env {
    /// A folder holding copies of `wasm` files (paths from `plugin_artifacts`).
    pub fn with(wasm: &[&str]) -> Env {
        let plugins = tempfile::tempdir().unwrap();
        for w in wasm {
            let src = Path::new(w);
            std::fs::copy(src, plugins.path().join(src.file_name().unwrap())).unwrap();
        }
        let workspace = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        // The test binary's own cache (the folder index, compiled code), never the user's.
        let cache = super::cache_home().join("toolhost");
        let mut config = Config {
            plugins_dir: plugins.path().to_path_buf(),
            cache_dir: Some(cache),
            grants_file: dir.path().join(toolhost_core::settings::grants::GRANTS_FILE),
            ..Config::default()
        };
        config.set_workspace(workspace.path());
        // Key-value stores of its own, in the operator's folder, never the user's.
        config.kv = kv_in(dir.path());
        Env { plugins, workspace, dir, config }
    }

    /// [`Env::with`] configured by `toml` alone, read as if it stood in the workspace (its grants
    /// file there too, no compile cache on disk); the plugins folder and workspace are the env's.
    pub fn with_toml(wasm: &[&str], toml: &str) -> Env {
        let mut env = Env::with(wasm);
        let mut cfg = Config::from_str_at(toml, env.workspace.path(), None).expect("test config");
        cfg.plugins_dir = env.plugins.path().to_path_buf();
        cfg.cache_dir = None;
        cfg.set_workspace(env.workspace.path());
        if cfg.kv.backend == KvSettings::default().backend {
            cfg.kv.backend = kv_in(env.dir.path()).backend;
        }
        env.config = cfg;
        env
    }

    /// The `toolhost` binary with this folder and workspace (`--plugins`, `--workspace`), run
    /// in the operator's folder with the test binary's own cache and state folders: add the rest.
    pub fn command(&self) -> Command {
        let mut cmd = toolhost();
        cmd.arg("--plugins")
            .arg(self.plugins.path())
            .arg("--workspace")
            .arg(self.workspace.path())
            .current_dir(self.dir.path());
        cmd
    }

    /// [`Env::command`] with `toml` written as the operator's `toolhost.toml` and named by
    /// `--config`.
    pub fn configured(&self, toml: &str) -> Command {
        std::fs::write(self.at("toolhost.toml"), toml).unwrap();
        let mut cmd = self.command();
        cmd.arg("--config").arg(self.at("toolhost.toml"));
        cmd
    }

    /// [`Env::command`] as a command line for a client that starts the server itself (a Python
    /// MCP client over stdio, in the workspace): the binary, `--config` of the operator's
    /// `toolhost.toml` (so none is looked for in the workspace, which may not hold one: #55),
    /// the folder and the workspace. The client's environment must carry [`super::test_dirs`].
    pub fn command_line(&self) -> Vec<String> {
        let cmd = self.command();
        let mut line = vec![cmd.get_program().to_string_lossy().into_owned()];
        line.extend(["--config".to_string(), self.config_path().display().to_string()]);
        line.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
        line
    }

    pub fn ws(&self, rel: &str) -> PathBuf {
        self.workspace.path().join(rel)
    }

    /// The operator's `toolhost.toml` (created empty if a test wrote none), for `--config`: a
    /// command whose working directory is the workspace must not read or protect a default one
    /// there.
    pub fn config_path(&self) -> PathBuf {
        let path = self.at("toolhost.toml");
        if !path.exists() {
            std::fs::write(&path, "").unwrap();
        }
        path
    }

    /// A path in the operator's folder (`toolhost.toml`, the grants file, an audit trail).
    pub fn at(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The whole settings of a command run with this config (no front-end or registry
    /// sections).
    pub fn settings(&self) -> toolhost::Settings {
        toolhost::Settings {
            core: self.config.clone(),
            frontends: Default::default(),
            registries: Default::default(),
            flag_plugins: Vec::new(),
        }
    }

    pub fn registry(&self) -> Registry {
        Registry::load(&runtime(), &self.config).expect("scan plugins folder")
    }

    /// A host that denies dangerous calls (no one to ask).
    pub fn host(&self) -> Toolhost {
        self.host_with(Arc::new(NoConfirm))
    }

    /// A host whose operator confirmed dangerous calls up front.
    pub fn host_yes(&self) -> Toolhost {
        self.host_with(Arc::new(AlwaysConfirm))
    }

    pub fn host_with(&self, confirm: Arc<dyn Confirm>) -> Toolhost {
        Toolhost::from_parts(runtime(), Arc::new(self.config.clone()), self.registry(), confirm)
    }
}

//! Shared set-up: one engine for the whole test binary, temp plugin folders and workspaces.

pub mod mcp_http;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use toolhost_core::engine::Runtime;
use toolhost_core::executor::{AlwaysConfirm, Confirm, NoConfirm};
use toolhost_core::settings::Config;
use toolhost_core::{Outcome, Registry, ToolCall, Toolhost};

/// The environment every `toolhost` (or MCP client) process a test starts gets: the compile
/// cache and the state folder (the audit trail) under `target/`, shared by the whole suite so a
/// plugin compiles once and nothing is written to the user's own folders.
pub fn test_dirs() -> [(&'static str, PathBuf); 2] {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    [("XDG_CACHE_HOME", target.join("test-cache")), ("XDG_STATE_HOME", target.join("test-state"))]
}

/// One engine per test process; compiled components are cached in it by content hash, so
/// each plugin is compiled once however many tests load it.
pub fn runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    // The production configuration: a pooling allocator (sized for the concurrency of the
    // test binary's hosts) in front of a semaphore.
    RT.get_or_init(|| {
        let pool = toolhost_core::engine::Pool { concurrent_calls: 256, max_memory_mb: 256 };
        Runtime::with_options(512, None, Some(pool)).expect("engine")
    })
    .clone()
}

/// A plugins folder and a workspace, both temporary.
pub struct Env {
    pub plugins: tempfile::TempDir,
    pub workspace: tempfile::TempDir,
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
        // The test binary's own cache (the folder index, compiled code), never the user's.
        let cache = test_dirs()[0].1.join("toolhost");
        let mut config =
            Config { plugins_dir: plugins.path().to_path_buf(), cache_dir: Some(cache), ..Config::default() };
        config.set_workspace(workspace.path());
        Env { plugins, workspace, config }
    }

    /// The `toolhost` binary with this folder and workspace (`--plugins`, `--workspace`), run
    /// in the workspace with the test binary's own cache and state folders: add the rest.
    pub fn command(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
        cmd.arg("--plugins")
            .arg(self.plugins.path())
            .arg("--workspace")
            .arg(self.workspace.path())
            .current_dir(self.workspace.path())
            .envs(test_dirs());
        cmd
    }

    pub fn ws(&self, rel: &str) -> PathBuf {
        self.workspace.path().join(rel)
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

pub async fn call(host: &Toolhost, name: &str, args: &[&str]) -> Outcome {
    host.call(&ToolCall::new(name, args.iter().copied())).await
}

/// Assert success and return the data.
#[track_caller]
pub fn ok(o: &Outcome) -> String {
    assert!(o.success, "expected success, got {o:?}");
    o.data.clone().unwrap()
}

/// Assert failure of `kind` and return the error text.
#[track_caller]
pub fn err(o: &Outcome, kind: toolhost_core::ErrorKind) -> String {
    assert!(!o.success, "expected failure {kind:?}, got {o:?}");
    assert_eq!(o.kind, Some(kind), "wrong kind: {o:?}");
    o.error.clone().unwrap()
}

/// A `.wasm` component built from WAT text, with an optional manifest section appended.
pub fn component(wat: &str, manifest: Option<&str>) -> Vec<u8> {
    let mut bytes = wat::parse_str(wat).expect("valid wat");
    if let Some(m) = manifest {
        append_custom_section(&mut bytes, toolhost_spec::manifest::SECTION, m.as_bytes());
    }
    bytes
}

pub fn append_custom_section(bytes: &mut Vec<u8>, name: &str, data: &[u8]) {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    let mut payload = Vec::new();
    leb(name.len(), &mut payload);
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(data);
    bytes.push(0);
    leb(payload.len(), bytes);
    bytes.extend_from_slice(&payload);
}

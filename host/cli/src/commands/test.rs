//! `toolhost test [PROJECT]`: a plugin project's own tests, then every tool called once through
//! the real host (built as `toolhost build` builds it, in a sandbox granted nothing but an empty
//! workspace): a smoke test that the plugin loads and each tool answers.

use crate::args::GlobalArgs;
use crate::project::{Project, Toolchains, testing};
use crate::settings::Settings;
use crate::term;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_core::executor::{AlwaysConfirm, ErrorKind, ToolCall};
use toolhost_spec::manifest::{ParamSpec, ToolSpec, type_name};

pub const AFTER_HELP: &str = "\
The project's tests run as its language runs them, with the SDK on the path: pytest if it is
installed, else python3 -m unittest (test_*.py); node --test (*.test.js); cargo test. Then the
plugin is built and each tool is called once with placeholder arguments (\"test\", 1, false, [],
{}) through the host, granted nothing but an empty temporary workspace: a tool error is an
answer; a crash, a timeout or a refused load fails the test. Dangerous tools are called too, in
that empty workspace. Nothing is written into the project.

Examples:
  toolhost test notes
  toolhost test . --no-smoke";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin project's folder
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Only the project's own tests, no calls through the host
    #[arg(long)]
    pub no_smoke: bool,
}

pub fn run(g: &GlobalArgs, a: Args) -> Result<ExitCode> {
    let project = Project::locate(&a.dir)?;
    let toolchains = Toolchains::from_env();
    if !testing::run_own_tests(&project, &toolchains)? {
        eprintln!("toolhost test: {} has no tests of its own", project.dir().display());
    }
    if a.no_smoke {
        return Ok(ExitCode::SUCCESS);
    }
    let built = project.build(&toolchains)?;
    let settings = Settings::resolve(g)?;
    let plugins = tempfile::Builder::new().prefix("toolhost-test-plugins-").tempdir()?;
    let workspace = tempfile::Builder::new().prefix("toolhost-test-workspace-").tempdir()?;
    built.install(plugins.path())?;
    // Nothing of the operator's grants: the calls may be dangerous ones.
    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut cfg = toolhost_core::settings::ConfigFile::parse("", &base, None)
        .and_then(|f| toolhost_core::Config::from_file(&f))
        .context("default settings")?;
    cfg.plugins_dir = plugins.path().to_path_buf();
    cfg.set_workspace(workspace.path());
    cfg.cache_dir = settings.core.cache_dir.clone();
    for t in &built.manifest.capabilities.fs {
        if t.path == "workspace" {
            cfg.grant_workspace(&built.manifest.name, t.mode);
        }
    }
    let host = toolhost_core::Toolhost::load(cfg, Arc::new(AlwaysConfirm))?;
    let registry = host.registry.load_full();
    if let Some(f) = registry.failures().first() {
        anyhow::bail!("the built plugin does not load: {}", f.reason);
    }
    let rt = super::async_runtime()?;
    let (mut answered, mut failed) = (0, 0);
    for spec in &built.manifest.tools {
        let args = placeholders(spec);
        let outcome = rt.block_on(host.call(&ToolCall { name: spec.name.clone(), args: args.clone() }));
        let shown = format!("{}({})", spec.name, args.join(", "));
        let verdict = match (outcome.success, outcome.kind) {
            (true, _) => "ok".to_string(),
            (false, Some(ErrorKind::ToolError | ErrorKind::Denied | ErrorKind::BadArguments)) => {
                format!("answered with an error: {}", outcome.error.as_deref().unwrap_or(""))
            }
            (false, kind) => {
                failed += 1;
                let kind = kind.map(|k| k.to_string()).unwrap_or_default();
                eprintln!(
                    "toolhost test: FAILED {shown}: [{kind}] {}",
                    term::line(outcome.error.as_deref().unwrap_or(""))
                );
                continue;
            }
        };
        answered += 1;
        let first: String = verdict.lines().next().unwrap_or("").chars().take(120).collect();
        eprintln!("toolhost test: {shown}: {}", term::line(&first));
    }
    eprintln!(
        "toolhost test: {} answered, {} failed ({})",
        term::count(answered, "tool"),
        failed,
        built.manifest.name
    );
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Arguments for a call with every required param given a placeholder of its type.
fn placeholders(spec: &ToolSpec) -> Vec<String> {
    spec.params
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.optional)
        .map(|(i, p)| if spec.is_json(i) { json_placeholder(p) } else { "test".into() })
        .collect()
}

fn json_placeholder(p: &ParamSpec) -> String {
    if let Some(first) = p.ty.get("enum").and_then(|e| e.get(0)) {
        return first.to_string();
    }
    match type_name(&p.ty) {
        Some("integer" | "number") => "1",
        Some("boolean") => "false",
        Some("array") => "[]",
        Some("string") => "\"test\"",
        Some("null") => "null",
        _ => "{}",
    }
    .into()
}

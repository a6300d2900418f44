//! `cargo xtask layers`: the architecture's rules, checked — no module cycles inside any
//! crate, no crate that names a crate of its own or a higher layer, and the rules about which
//! modules of a crate may name which (`rules.rs`: commands never name each other, capabilities
//! never name the executor, the sandbox or the engine).

mod crates;
mod lex;
mod modules;
mod rules;
#[cfg(test)]
mod testdir;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Which stack a layered crate belongs to. The host and the plugin SDK are separate stacks that
/// share layer 0 (the spec): a plugin never links the host, the host never links the SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    /// Layer 0, under both stacks.
    Base,
    Host,
    Sdk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A crate may depend on a crate of a lower layer of its own stack or of `Base`.
    Layer(Stack, u8),
    /// Project tooling: depends on anything; nothing depends on it except as a dev-dependency.
    Tooling,
}

/// Every workspace member and its layer: the list in ARCHITECTURE.md, section "Layers" (keep
/// the two in step; a member missing here fails the check).
pub const LAYERS: &[(&str, Place)] = &[
    ("toolhost-spec", Place::Layer(Stack::Base, 0)),
    ("toolhost-core", Place::Layer(Stack::Host, 1)),
    ("toolhost-frontends", Place::Layer(Stack::Host, 2)),
    ("toolhost", Place::Layer(Stack::Host, 3)),
    ("toolhost-sdk-macros", Place::Layer(Stack::Sdk, 1)),
    ("toolhost-sdk", Place::Layer(Stack::Sdk, 2)),
    ("xtask", Place::Tooling),
    ("plugin-artifacts", Place::Tooling),
];

/// The one crate that names the engine; the others reach it through this one.
pub const ENGINE_CRATE: &str = "toolhost-core";
pub const ENGINE: &[&str] = &["wasmtime", "wasmtime-wasi"];
/// Layer 0 builds for wasm32 and is fuzzed alone: none of these anywhere in its tree.
pub const SPEC_CRATE: &str = "toolhost-spec";
pub const SPEC_FORBIDDEN: &[&str] = &["wasmtime", "wasmtime-wasi", "tokio"];

/// One line of the report: what was checked, and what broke it.
#[derive(Debug)]
pub struct Check {
    pub title: String,
    pub problems: Vec<String>,
    /// Module cycles found (the module checks only).
    pub cycles: usize,
}

impl Check {
    fn new(title: impl Into<String>) -> Check {
        Check { title: title.into(), problems: Vec::new(), cycles: 0 }
    }

    fn fail(&mut self, problem: String) {
        self.problems.push(problem);
    }
}

/// Runs every check on the workspace at `root` and prints one line per check.
pub fn run(root: &Path) -> Result<()> {
    let meta = metadata(root)?;
    let (cycles, violations) = report(&all_checks(&meta, root)?);
    if cycles + violations > 0 {
        bail!("the layer check failed: {cycles} module cycle(s), {violations} layer violation(s)");
    }
    Ok(())
}

/// `cargo metadata` of the workspace at `root`, with the resolved dependency graph.
fn metadata(root: &Path) -> Result<Value> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["metadata", "--format-version", "1"])
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    serde_json::from_slice(&out.stdout).context("cargo metadata: not JSON")
}

/// The module checks of every crate, then the crate checks, on the workspace `meta` describes.
fn all_checks(meta: &Value, root: &Path) -> Result<Vec<Check>> {
    let mut checks = module_checks(meta, root)?;
    checks.extend(crates::checks(meta)?);
    Ok(checks)
}

/// Prints the checks and the summary line; returns (cycles, layer violations).
fn report(checks: &[Check]) -> (usize, usize) {
    for c in checks {
        println!("{} {}", if c.problems.is_empty() { "✓" } else { "✗" }, c.title);
        for p in &c.problems {
            for line in p.lines() {
                println!("    {line}");
            }
        }
    }
    let cycles: usize = checks.iter().map(|c| c.cycles).sum();
    // A module check's problems are its cycles; every other problem is a layer violation.
    let violations = checks.iter().filter(|c| c.cycles == 0).map(|c| c.problems.len()).sum();
    if cycles + violations == 0 {
        println!("0 cycle(s), layers ok");
    } else {
        println!("{cycles} cycle(s), {violations} layer violation(s)");
    }
    (cycles, violations)
}

/// A module-cycle check for every crate of every workspace member with a `src/` folder, then
/// each module rule of [`rules::RULES`] on its package's crates.
fn module_checks(meta: &Value, root: &Path) -> Result<Vec<Check>> {
    let ids: Vec<&str> =
        meta["workspace_members"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut out = Vec::new();
    let mut graphs: Vec<(String, modules::CrateSrc, modules::Graph)> = Vec::new();
    for p in meta["packages"].as_array().into_iter().flatten() {
        if !ids.contains(&p["id"].as_str().unwrap_or_default()) {
            continue;
        }
        let (Some(name), Some(manifest)) = (p["name"].as_str(), p["manifest_path"].as_str()) else {
            continue;
        };
        let Some(src) = Path::new(manifest).parent().map(|d| d.join("src")) else { continue };
        if src.is_dir() {
            for krate in modules::crates_in(name, &src, root)? {
                let graph = modules::graph(&krate, root)?;
                out.push(cycle_check(&krate, &graph));
                graphs.push((name.to_string(), krate, graph));
            }
        }
    }
    for rule in rules::RULES {
        let crates: Vec<(&modules::CrateSrc, &modules::Graph)> =
            graphs.iter().filter(|(p, ..)| p == rule.package).map(|(_, k, g)| (k, g)).collect();
        out.push(rules::check(rule, &crates));
    }
    Ok(out)
}

/// The module-cycle check of one crate and its module graph.
fn cycle_check(krate: &modules::CrateSrc, graph: &modules::Graph) -> Check {
    let cycles = modules::cycles(graph);
    let n = graph.modules.len();
    let mut check = Check::new(format!(
        "no module cycles in {}: {n} module{}",
        krate.title,
        if n == 1 { "" } else { "s" }
    ));
    for cycle in &cycles {
        let mut text = format!("cycle of {} modules: {}", cycle.len(), cycle.join(", "));
        for from in cycle {
            for (to, sites) in graph.edges.get(from).into_iter().flatten() {
                if cycle.contains(to) {
                    let at: Vec<String> =
                        sites.iter().map(|s| format!("{}:{}", s.file.display(), s.line)).collect();
                    text.push_str(&format!("\n  {from} -> {to}: {}", at.join(", ")));
                }
            }
        }
        check.fail(text);
    }
    check.cycles = cycles.len();
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use testdir::TempTree;

    /// A workspace of the layered crates, path dependencies only (no registry: `cargo metadata`
    /// answers offline). `extra` files are added or replace the defaults.
    fn workspace(test: &str, extra: &[(&'static str, &'static str)]) -> TempTree {
        let manifest = |name: &str, deps: &[&str]| {
            let deps: String = deps.iter().map(|d| format!("{d} = {{ path = \"../{d}\" }}\n")).collect();
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n{deps}"
            )
        };
        let crates: [(&str, &[&str]); 8] = [
            ("toolhost-spec", &[]),
            ("toolhost-core", &["toolhost-spec"]),
            ("toolhost-frontends", &["toolhost-core", "toolhost-spec"]),
            ("toolhost", &["toolhost-frontends", "toolhost-core"]),
            ("toolhost-sdk-macros", &["toolhost-spec"]),
            ("toolhost-sdk", &["toolhost-sdk-macros"]),
            ("xtask", &["toolhost-spec"]),
            ("plugin-artifacts", &[]),
        ];
        let members: Vec<String> = crates.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        let mut files: Vec<(String, String)> = vec![(
            "Cargo.toml".into(),
            format!("[workspace]\nresolver = \"3\"\nmembers = [{}]\n", members.join(", ")),
        )];
        for (name, deps) in crates {
            files.push((format!("{name}/Cargo.toml"), manifest(name, deps)));
            let root = if name == "toolhost" || name == "xtask" { "main.rs" } else { "lib.rs" };
            files.push((format!("{name}/src/{root}"), String::new()));
        }
        // The modules the module rules are about (`rules::RULES`), keeping them.
        for (path, text) in [
            ("toolhost-core/src/lib.rs", "pub mod capability;\npub mod executor;\n"),
            ("toolhost-core/src/capability/mod.rs", "pub mod net;\n"),
            ("toolhost-core/src/capability/net.rs", "pub struct NetCall;\n"),
            ("toolhost-core/src/executor.rs", "use crate::capability::net::NetCall;\n"),
            ("toolhost/src/main.rs", "mod commands;\nfn main() {}\n"),
            ("toolhost/src/commands/mod.rs", "pub mod inspect;\npub mod list;\n"),
            ("toolhost/src/commands/inspect.rs", "pub fn run() {}\n"),
            ("toolhost/src/commands/list.rs", "pub fn run() {}\n"),
        ] {
            files.retain(|(p, _)| p != path);
            files.push((path.into(), text.into()));
        }
        for (path, text) in extra {
            files.retain(|(p, _)| p != path);
            files.push((path.to_string(), text.to_string()));
        }
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        TempTree::new(test, &refs)
    }

    fn checks_of(tree: &TempTree) -> Vec<Check> {
        let meta = metadata(tree.path()).unwrap();
        all_checks(&meta, tree.path()).unwrap()
    }

    #[test]
    fn the_layered_workspace_passes() {
        let tree = workspace(
            "ws-good",
            &[
                ("toolhost/src/main.rs", "mod cli;\nmod commands;\nmod term;\nfn main() { cli::run() }\n"),
                ("toolhost/src/cli.rs", "pub fn run() { crate::commands::chat::run() }\n"),
                ("toolhost/src/commands/mod.rs", "pub mod chat;\n"),
                ("toolhost/src/commands/chat.rs", "use super::super::term;\npub fn run() { term::ask() }\n"),
                ("toolhost/src/term.rs", "pub fn ask() {}\n"),
            ],
        );
        let checks = checks_of(&tree);
        assert_eq!(checks.len(), 14, "{checks:#?}");
        assert!(checks.iter().all(|c| c.problems.is_empty()), "{checks:#?}");
        assert_eq!(report(&checks), (0, 0));
    }

    #[test]
    fn a_cycle_and_an_upward_dependency_are_reported_with_where_they_are() {
        let tree = workspace(
            "ws-bad",
            &[
                (
                    "toolhost-core/Cargo.toml",
                    "[package]\nname = \"toolhost-core\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\ntoolhost-frontends = { path = \"../toolhost-frontends\" }\n",
                ),
                (
                    "toolhost-frontends/Cargo.toml",
                    "[package]\nname = \"toolhost-frontends\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
                ),
                ("toolhost-core/src/lib.rs", "mod a;\nmod b;\n"),
                ("toolhost-core/src/a.rs", "use crate::b::B;\npub struct A;\n"),
                ("toolhost-core/src/b.rs", "pub struct B;\n\npub fn f(_: crate::a::A) {}\n"),
            ],
        );
        let checks = checks_of(&tree);
        let failed: Vec<(&str, &[String])> = checks
            .iter()
            .filter(|c| !c.problems.is_empty())
            .map(|c| (c.title.as_str(), &c.problems[..]))
            .collect();
        assert_eq!(
            failed,
            [
                (
                    "no module cycles in toolhost-core lib (toolhost-core/src/lib.rs): 6 modules",
                    &["cycle of 2 modules: a, b\n  a -> b: toolhost-core/src/a.rs:1\n  b -> a: toolhost-core/src/b.rs:3".to_string()][..]
                ),
                (
                    "crates depend only on lower layers",
                    &["toolhost-core (layer 1, host) -> toolhost-frontends (layer 2, host), dependency: a crate depends only on crates of a lower layer".to_string()][..]
                ),
            ]
        );
        assert_eq!(report(&checks), (1, 1));
    }

    #[test]
    fn commands_naming_each_other_and_a_capability_naming_the_executor_are_reported() {
        let tree = workspace(
            "ws-rules",
            &[
                ("toolhost/src/commands/list.rs", "pub fn run() {\n    super::inspect::run()\n}\n"),
                ("toolhost-core/src/capability/net.rs", "use crate::executor;\npub struct NetCall;\n"),
            ],
        );
        let checks = checks_of(&tree);
        let failed: Vec<(&str, &[String])> = checks
            .iter()
            .filter(|c| !c.problems.is_empty())
            .map(|c| (c.title.as_str(), &c.problems[..]))
            .collect();
        assert_eq!(
            failed,
            [
                (
                    "no module cycles in toolhost-core lib (toolhost-core/src/lib.rs): 4 modules",
                    &["cycle of 2 modules: capability::net, executor\n  capability::net -> executor: toolhost-core/src/capability/net.rs:1\n  executor -> capability::net: toolhost-core/src/executor.rs:1".to_string()][..]
                ),
                (
                    "commands never name each other (toolhost: 3 modules under `commands`, 1 reference breaking the rule)",
                    &[format!("toolhost (toolhost bin (toolhost/src/main.rs)): commands::list names commands::inspect at toolhost/src/commands/list.rs:2: {}", rules::RULES[0].instead)][..]
                ),
                (
                    "capabilities never name the executor, the sandbox or the engine (toolhost-core: 2 modules under `capability`, 1 reference breaking the rule)",
                    &[format!("toolhost-core (toolhost-core lib (toolhost-core/src/lib.rs)): capability::net names executor at toolhost-core/src/capability/net.rs:1: {}", rules::RULES[1].instead)][..]
                ),
            ]
        );
        assert_eq!(report(&checks), (1, 2));
    }

    #[test]
    fn a_rule_whose_module_is_gone_fails() {
        let tree = workspace(
            "ws-renamed",
            &[
                ("toolhost-core/src/lib.rs", "pub mod capabilities;\n"),
                ("toolhost-core/src/capability/mod.rs", ""),
            ],
        );
        let _ = std::fs::remove_dir_all(tree.path().join("toolhost-core/src/capability"));
        let checks = checks_of(&tree);
        let rule = checks.iter().find(|c| c.title.starts_with("capabilities never name")).unwrap();
        assert_eq!(
            rule.problems,
            [
                "toolhost-core has no module `capability`: the rule in xtask/src/layers/rules.rs names a module that is gone (update the rule and ARCHITECTURE.md)"
            ]
        );
    }
}

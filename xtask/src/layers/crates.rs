//! Crates respect the layers: read from `cargo metadata` (the packages' declared dependencies and
//! the resolved graph), judged against the table in `layers/mod.rs`.

use super::{Check, ENGINE, ENGINE_CRATE, LAYERS, Place, SPEC_CRATE, SPEC_FORBIDDEN, Stack};
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};

/// A dependency as a package declares it.
struct Dep<'a> {
    name: &'a str,
    /// `None` for a normal dependency, `Some("dev")`, `Some("build")`.
    kind: Option<&'a str>,
    /// A path dependency (no registry or git source): the only kind a workspace member is.
    local: bool,
}

struct Member<'a> {
    id: &'a str,
    name: &'a str,
    deps: Vec<Dep<'a>>,
}

fn members(meta: &Value) -> Result<Vec<Member<'_>>> {
    let ids: Vec<&str> = meta["workspace_members"]
        .as_array()
        .context("cargo metadata: no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = meta["packages"].as_array().context("cargo metadata: no packages")?;
    let mut out = Vec::new();
    for id in ids {
        let p = packages
            .iter()
            .find(|p| p["id"].as_str() == Some(id))
            .with_context(|| format!("cargo metadata: workspace member {id} is not among the packages"))?;
        let deps = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| {
                Some(Dep {
                    name: d["name"].as_str()?,
                    kind: d["kind"].as_str(),
                    local: d["source"].is_null(),
                })
            })
            .collect();
        out.push(Member {
            id,
            name: p["name"].as_str().context("cargo metadata: a package without a name")?,
            deps,
        });
    }
    Ok(out)
}

fn place(name: &str) -> Option<Place> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

fn kind_shown(kind: Option<&str>) -> &'static str {
    match kind {
        Some("dev") => "dev-dependency",
        Some("build") => "build dependency",
        _ => "dependency",
    }
}

/// The four crate checks on `meta`, the output of `cargo metadata --format-version 1` (with the
/// resolved graph: the toolhost-spec rule follows transitive dependencies).
pub fn checks(meta: &Value) -> Result<Vec<Check>> {
    let members = members(meta)?;
    let mut out = Vec::new();

    let mut table = Check::new("every workspace member has a layer (LAYERS in xtask/src/layers/mod.rs)");
    for m in &members {
        if place(m.name).is_none() {
            table.fail(format!(
                "{} is a workspace member without a layer: add it to LAYERS in xtask/src/layers/mod.rs and to ARCHITECTURE.md's layer list",
                m.name
            ));
        }
    }
    for (name, _) in LAYERS {
        if !members.iter().any(|m| m.name == *name) {
            table.fail(format!(
                "LAYERS names {name}, which is not a workspace member: add the crate or take it out of the table"
            ));
        }
    }
    out.push(table);

    let mut direction = Check::new("crates depend only on lower layers");
    for m in &members {
        for d in m.deps.iter().filter(|d| d.local) {
            let (Some(from), Some(to)) = (place(m.name), place(d.name)) else { continue };
            if !members.iter().any(|x| x.name == d.name) {
                continue;
            }
            let why = match (from, to) {
                (_, Place::Tooling) if d.kind != Some("dev") => {
                    Some("nothing depends on a tooling crate except as a dev-dependency")
                }
                (_, Place::Tooling) | (Place::Tooling, _) => None,
                (Place::Layer(fs, fl), Place::Layer(ts, tl)) => {
                    if ts != fs && ts != Stack::Base && fs != Stack::Base {
                        Some("the host and plugin SDK stacks meet only at layer 0")
                    } else if tl >= fl {
                        Some("a crate depends only on crates of a lower layer")
                    } else {
                        None
                    }
                }
            };
            if let Some(why) = why {
                direction.fail(format!(
                    "{} ({from}) -> {} ({to}), {}: {why}",
                    m.name,
                    d.name,
                    kind_shown(d.kind)
                ));
            }
        }
    }
    out.push(direction);

    let mut spec =
        Check::new(format!("{SPEC_CRATE} has no {} in its dependency tree", or_list(SPEC_FORBIDDEN)));
    match members.iter().find(|m| m.name == SPEC_CRATE) {
        None => spec.fail(format!("{SPEC_CRATE} is not a workspace member")),
        Some(m) => {
            for path in forbidden_paths(meta, m.id)? {
                spec.fail(format!("{}: {SPEC_CRATE} must build without it", path.join(" -> ")));
            }
        }
    }
    out.push(spec);

    let mut engine = Check::new(format!("only {ENGINE_CRATE} depends on {} directly", or_list(ENGINE)));
    for m in &members {
        if m.name == ENGINE_CRATE || !matches!(place(m.name), Some(Place::Layer(..))) {
            continue;
        }
        for d in m.deps.iter().filter(|d| ENGINE.contains(&d.name) && d.kind != Some("dev")) {
            engine.fail(format!(
                "{} -> {}, {}: the engine is {ENGINE_CRATE}'s; reach it through {ENGINE_CRATE}",
                m.name,
                d.name,
                kind_shown(d.kind)
            ));
        }
    }
    out.push(engine);
    Ok(out)
}

/// `a, b or c`.
fn or_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// For each package of SPEC_FORBIDDEN in the normal dependency tree of package `root` (an id of
/// the resolved graph), the shortest chain of package names that leads to it.
fn forbidden_paths(meta: &Value, root: &str) -> Result<Vec<Vec<String>>> {
    let nodes = meta["resolve"]["nodes"]
        .as_array()
        .context("cargo metadata has no resolved graph (it was run with --no-deps)")?;
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let normal_deps: BTreeMap<&str, Vec<&str>> = nodes
        .iter()
        .filter_map(|n| {
            let deps = n["deps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["dep_kinds"].as_array().into_iter().flatten().any(|k| k["kind"].is_null()))
                .filter_map(|d| d["pkg"].as_str())
                .collect();
            Some((n["id"].as_str()?, deps))
        })
        .collect();
    let mut came_from: BTreeMap<&str, Option<&str>> = BTreeMap::from([(root, None)]);
    let mut queue = VecDeque::from([root]);
    let mut out = Vec::new();
    while let Some(id) = queue.pop_front() {
        let name = names.get(id).copied().unwrap_or(id);
        if id != root && SPEC_FORBIDDEN.contains(&name) {
            let mut chain = vec![name.to_string()];
            let mut at = id;
            while let Some(Some(prev)) = came_from.get(at) {
                chain.push(names.get(prev).copied().unwrap_or(prev).to_string());
                at = prev;
            }
            chain.reverse();
            out.push(chain);
            // What lies under a forbidden crate is its business, not another finding.
            continue;
        }
        for dep in normal_deps.get(id).into_iter().flatten() {
            if !came_from.contains_key(dep) {
                came_from.insert(dep, Some(id));
                queue.push_back(dep);
            }
        }
    }
    out.sort();
    Ok(out)
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Layer(Stack::Base, n) => write!(f, "layer {n}"),
            Place::Layer(Stack::Host, n) => write!(f, "layer {n}, host"),
            Place::Layer(Stack::Sdk, n) => write!(f, "layer {n}, plugin SDK"),
            Place::Tooling => write!(f, "tooling"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A workspace member: name and declared dependencies (name, kind), all from crates.io
    /// unless they name another member.
    type Pkg<'a> = (&'a str, &'a [(&'a str, Option<&'a str>)]);

    /// `cargo metadata` output for `members` plus the registry packages `others`; the resolved
    /// graph is the declared one (registry packages' own edges from `others`).
    fn metadata(members: &[Pkg], others: &[Pkg]) -> Value {
        let id = |name: &str| format!("id-{name}");
        let member_names: Vec<&str> = members.iter().map(|(n, _)| *n).collect();
        let package = |(name, deps): &Pkg| {
            json!({
                "id": id(name),
                "name": name,
                "manifest_path": format!("/ws/{name}/Cargo.toml"),
                "dependencies": deps.iter().map(|(d, kind)| json!({
                    "name": d,
                    "kind": kind,
                    "source": if member_names.contains(d) { Value::Null } else { json!("registry+https://github.com/rust-lang/crates.io-index") },
                })).collect::<Vec<_>>(),
            })
        };
        let node = |(name, deps): &Pkg| {
            json!({
                "id": id(name),
                "deps": deps.iter().map(|(d, kind)| json!({
                    "name": d.replace('-', "_"),
                    "pkg": id(d),
                    "dep_kinds": [{ "kind": kind, "target": null }],
                })).collect::<Vec<_>>(),
            })
        };
        json!({
            "packages": members.iter().chain(others).map(package).collect::<Vec<_>>(),
            "workspace_members": members.iter().map(|(n, _)| id(n)).collect::<Vec<_>>(),
            "resolve": { "nodes": members.iter().chain(others).map(node).collect::<Vec<_>>() },
        })
    }

    const NORMAL: Option<&str> = None;
    const DEV: Option<&str> = Some("dev");
    const BUILD: Option<&str> = Some("build");

    /// The layout issue #27 asks for, dependencies as they are meant to be.
    fn good_members() -> Vec<Pkg<'static>> {
        vec![
            ("toolhost-spec", &[("serde_json", NORMAL), ("tokio", DEV)]),
            (
                "toolhost-core",
                &[
                    ("toolhost-spec", NORMAL),
                    ("wasmtime", NORMAL),
                    ("wasmtime-wasi", NORMAL),
                    ("tokio", NORMAL),
                ],
            ),
            (
                "toolhost-frontends",
                &[("toolhost-core", NORMAL), ("toolhost-spec", NORMAL), ("tokio", NORMAL)],
            ),
            (
                "toolhost",
                &[
                    ("toolhost-frontends", NORMAL),
                    ("toolhost-core", NORMAL),
                    ("plugin-artifacts", DEV),
                    ("wasmtime", DEV),
                ],
            ),
            ("toolhost-sdk-macros", &[("toolhost-spec", NORMAL)]),
            ("toolhost-sdk", &[("toolhost-sdk-macros", NORMAL)]),
            ("xtask", &[("serde_json", NORMAL)]),
            ("plugin-artifacts", &[("toolhost-sdk", BUILD)]),
        ]
    }

    fn registry() -> Vec<Pkg<'static>> {
        vec![
            ("serde_json", &[]),
            ("wasmtime", &[("serde_json", NORMAL)]),
            ("wasmtime-wasi", &[("wasmtime", NORMAL), ("tokio", NORMAL)]),
            ("tokio", &[]),
            ("mio", &[("tokio", NORMAL)]),
            ("helper", &[("mio", NORMAL)]),
        ]
    }

    /// The problems of the check whose title starts with `title`.
    fn problems<'a>(checks: &'a [Check], title: &str) -> &'a [String] {
        &checks.iter().find(|c| c.title.starts_with(title)).expect(title).problems
    }

    fn all_problems(checks: &[Check]) -> Vec<&String> {
        checks.iter().flat_map(|c| &c.problems).collect()
    }

    /// `members` with `dep` added to the dependencies of `member`.
    fn with_dep(member: &str, dep: (&'static str, Option<&'static str>)) -> Vec<Pkg<'static>> {
        good_members()
            .into_iter()
            .map(|(name, deps)| {
                if name == member {
                    let mut more = deps.to_vec();
                    more.push(dep);
                    (name, &*Box::leak(more.into_boxed_slice()))
                } else {
                    (name, deps)
                }
            })
            .collect()
    }

    #[test]
    fn the_intended_layout_passes() {
        let checks = checks(&metadata(&good_members(), &registry())).unwrap();
        assert_eq!(checks.len(), 4);
        assert!(all_problems(&checks).is_empty(), "{checks:#?}");
    }

    #[test]
    fn core_depending_on_frontends_fails() {
        let checks =
            checks(&metadata(&with_dep("toolhost-core", ("toolhost-frontends", NORMAL)), &registry()))
                .unwrap();
        assert_eq!(
            problems(&checks, "crates depend only on lower layers"),
            [
                "toolhost-core (layer 1, host) -> toolhost-frontends (layer 2, host), dependency: a crate depends only on crates of a lower layer"
            ]
        );
        assert_eq!(all_problems(&checks).len(), 1, "{checks:#?}");
    }

    #[test]
    fn upward_dev_and_same_layer_and_cross_stack_edges_fail() {
        for (member, dep, why) in [
            (
                "toolhost-core",
                ("toolhost", DEV),
                "toolhost-core (layer 1, host) -> toolhost (layer 3, host), dev-dependency",
            ),
            (
                "toolhost-spec",
                ("toolhost-spec", BUILD),
                "toolhost-spec (layer 0) -> toolhost-spec (layer 0), build dependency",
            ),
            (
                "toolhost-sdk",
                ("toolhost-core", NORMAL),
                "toolhost-sdk (layer 2, plugin SDK) -> toolhost-core (layer 1, host)",
            ),
            (
                "toolhost-frontends",
                ("plugin-artifacts", NORMAL),
                "toolhost-frontends (layer 2, host) -> plugin-artifacts (tooling)",
            ),
            ("xtask", ("plugin-artifacts", NORMAL), "xtask (tooling) -> plugin-artifacts (tooling)"),
        ] {
            let checks = checks(&metadata(&with_dep(member, dep), &registry())).unwrap();
            let found = problems(&checks, "crates depend only on lower layers");
            assert!(found.len() == 1 && found[0].starts_with(why), "{why}: {found:?}");
        }
    }

    #[test]
    fn tokio_reached_through_a_dependency_of_the_spec_fails() {
        let checks = checks(&metadata(&with_dep("toolhost-spec", ("helper", NORMAL)), &registry())).unwrap();
        assert_eq!(
            problems(&checks, "toolhost-spec has no"),
            ["toolhost-spec -> helper -> mio -> tokio: toolhost-spec must build without it"]
        );
        assert_eq!(all_problems(&checks).len(), 1, "{checks:#?}");
    }

    #[test]
    fn the_spec_may_use_tokio_in_its_tests_and_build_script_only() {
        let members = with_dep("toolhost-spec", ("helper", BUILD));
        assert!(all_problems(&checks(&metadata(&members, &registry())).unwrap()).is_empty());
        let members = with_dep("toolhost-spec", ("wasmtime", NORMAL));
        let checks = checks(&metadata(&members, &registry())).unwrap();
        assert_eq!(problems(&checks, "toolhost-spec has no").len(), 1, "{checks:#?}");
    }

    #[test]
    fn the_cli_naming_wasmtime_directly_fails() {
        let checks = checks(&metadata(&with_dep("toolhost", ("wasmtime", NORMAL)), &registry())).unwrap();
        assert_eq!(
            problems(&checks, "only toolhost-core depends on"),
            [
                "toolhost -> wasmtime, dependency: the engine is toolhost-core's; reach it through toolhost-core"
            ]
        );
        assert_eq!(all_problems(&checks).len(), 1, "{checks:#?}");
        let checks =
            super::checks(&metadata(&with_dep("toolhost-frontends", ("wasmtime-wasi", BUILD)), &registry()))
                .unwrap();
        assert_eq!(problems(&checks, "only toolhost-core depends on").len(), 1, "{checks:#?}");
    }

    #[test]
    fn a_member_outside_the_table_and_a_table_entry_outside_the_workspace_fail() {
        let mut members = good_members();
        members.retain(|(n, _)| *n != "toolhost-frontends");
        members.push(("toolhost-console", &[]));
        let checks = checks(&metadata(&members, &registry())).unwrap();
        assert_eq!(
            problems(&checks, "every workspace member has a layer"),
            [
                "toolhost-console is a workspace member without a layer: add it to LAYERS in xtask/src/layers/mod.rs and to ARCHITECTURE.md's layer list",
                "LAYERS names toolhost-frontends, which is not a workspace member: add the crate or take it out of the table",
            ]
        );
    }

    #[test]
    fn metadata_without_the_resolved_graph_is_an_error() {
        let mut meta = metadata(&good_members(), &registry());
        meta["resolve"] = Value::Null;
        let err = checks(&meta).unwrap_err().to_string();
        assert!(err.contains("--no-deps"), "{err}");
    }
}

//! The rules ARCHITECTURE.md states about which modules of a crate may name which, checked on
//! the module graph the cycle check builds (`modules::graph`: `use` declarations and inline
//! paths, test code left out). What a rule cannot see is what that graph cannot: a path a macro
//! builds, or an item reached through a re-export of the crate root.
//!
//! The third rule ARCHITECTURE.md states, "the executor never names a front end", is a crate
//! rule: the executor is in `toolhost-core` and the front ends in `toolhost-frontends`, a higher
//! layer, so the crate check "crates depend only on lower layers" is what holds it (and Cargo,
//! which refuses the dependency cycle the name would need).

use super::Check;
use super::modules::{CrateSrc, Graph};

/// Which modules of a crate the modules under [`Rule::from`] never name.
#[derive(Debug, Clone, Copy)]
pub enum Never {
    /// Each other: a module under `from::a` never names one under `from::b` (`from` itself,
    /// their parent, may name them all, and each may name `from`).
    EachOther,
    /// These modules, or anything under them.
    Modules(&'static [&'static str]),
}

/// One rule about the modules of one package's crates.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub package: &'static str,
    /// The modules the rule is about: this module and every module under it.
    pub from: &'static str,
    pub never: Never,
    /// The rule in ARCHITECTURE.md's words: the check's title.
    pub says: &'static str,
    /// What to do instead, shown with each violation.
    pub instead: &'static str,
}

/// The rules, as ARCHITECTURE.md ("Layers") states them.
pub const RULES: &[Rule] = &[
    Rule {
        package: "toolhost",
        from: "commands",
        never: Never::EachOther,
        says: "commands never name each other",
        instead: "move what two commands share into a library module of the CLI (report, session, project, …)",
    },
    Rule {
        package: "toolhost-core",
        from: "capability",
        never: Never::Modules(&["executor", "sandbox", "engine"]),
        says: "capabilities never name the executor, the sandbox or the engine",
        instead: "a capability prepares its own state and links its own functions; the executor composes them",
    },
];

/// Whether `module` is `root` or under it.
fn under(module: &str, root: &str) -> bool {
    module == root || module.strip_prefix(root).is_some_and(|rest| rest.starts_with("::"))
}

/// The child of `root` that `module` is under (`commands::list::x` → `list`), when it is
/// strictly under `root`.
fn child_of<'a>(module: &'a str, root: &str) -> Option<&'a str> {
    let rest = module.strip_prefix(root)?.strip_prefix("::")?;
    rest.split("::").next()
}

/// Whether an edge `from -> to` breaks `rule`.
fn breaks(rule: &Rule, from: &str, to: &str) -> bool {
    if !under(from, rule.from) {
        return false;
    }
    match rule.never {
        Never::EachOther => match (child_of(from, rule.from), child_of(to, rule.from)) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        },
        Never::Modules(never) => never.iter().any(|n| under(to, n)),
    }
}

/// `rule` checked on the crates of its package (`crates`: each crate with its module graph).
/// A package without the rule's `from` module fails too: a rename must not switch a rule off
/// unnoticed.
pub fn check(rule: &Rule, crates: &[(&CrateSrc, &Graph)]) -> Check {
    let mut modules = 0;
    let mut problems = Vec::new();
    for (krate, graph) in crates {
        modules += graph.modules.iter().filter(|m| under(m, rule.from)).count();
        for (from, targets) in &graph.edges {
            for (to, sites) in targets {
                if !breaks(rule, from, to) {
                    continue;
                }
                let at: Vec<String> =
                    sites.iter().map(|s| format!("{}:{}", s.file.display(), s.line)).collect();
                problems.push(format!(
                    "{} ({}): {from} names {to} at {}: {}",
                    rule.package,
                    krate.title,
                    at.join(", "),
                    rule.instead
                ));
            }
        }
    }
    if modules == 0 {
        problems.push(format!(
            "{} has no module `{}`: the rule in xtask/src/layers/rules.rs names a module that is gone (update the rule and ARCHITECTURE.md)",
            rule.package, rule.from
        ));
    }
    let title = format!(
        "{} ({}: {modules} module{} under `{}`, {} reference{} breaking the rule)",
        rule.says,
        rule.package,
        if modules == 1 { "" } else { "s" },
        rule.from,
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    Check { title, problems, cycles: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMANDS: Rule = RULES[0];
    const CAPABILITIES: Rule = RULES[1];

    #[test]
    fn each_other_means_siblings_under_the_root_only() {
        assert!(breaks(&COMMANDS, "commands::list", "commands::inspect"));
        assert!(breaks(&COMMANDS, "commands::list::table", "commands::inspect"));
        assert!(!breaks(&COMMANDS, "commands::list", "commands::list::table"));
        assert!(!breaks(&COMMANDS, "commands", "commands::list"), "the dispatch names every command");
        assert!(!breaks(&COMMANDS, "commands::list", "report"));
        assert!(!breaks(&COMMANDS, "report", "commands::list"), "the rule is about commands only");
        assert!(!breaks(&COMMANDS, "commandsx::a", "commandsx::b"));
    }

    #[test]
    fn named_modules_and_everything_under_them() {
        assert!(breaks(&CAPABILITIES, "capability::net", "executor"));
        assert!(breaks(&CAPABILITIES, "capability", "sandbox"));
        assert!(breaks(&CAPABILITIES, "capability::process::confine", "engine::linker"));
        assert!(!breaks(&CAPABILITIES, "capability::net", "capability::fs"));
        assert!(!breaks(&CAPABILITIES, "capability::net", "executorish"));
        assert!(!breaks(&CAPABILITIES, "executor", "sandbox"));
    }
}

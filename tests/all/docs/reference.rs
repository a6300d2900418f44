//! The configuration reference's values against the code (issue #36, 3): a value the reference
//! shows is the default — the parser resolves the same settings with the key as without it —
//! unless the line's comment says it is an example or what the default is instead. Together
//! with `the_configuration_reference_names_every_config_key` (every key is shown) and
//! `every_toml_example_parses_with_the_real_config_parser` (every key shown exists), the
//! reference cannot drift from the settings types.

use super::blocks;
use crate::support::root;

/// One `key = value` line of the reference, in a section that is a single table (not
/// `[plugin.NAME]`, `[tool.NAME]`, `[secrets.NAME]` …).
struct Shown {
    section: String,
    key: String,
    /// The line as written, comment included.
    line: String,
    comment: String,
}

fn shown() -> Vec<Shown> {
    let chapter = std::fs::read_to_string(root().join("docs/src/configuration.md")).unwrap();
    let (bs, _) = blocks(&chapter).unwrap();
    let block = bs.iter().find(|b| b.lang == "toml").expect("the reference block");
    let mut section = Some(String::new());
    let mut out = Vec::new();
    for line in block.text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            let name = t.split('#').next().unwrap().trim().trim_matches(['[', ']']).to_string();
            section = (!name.contains('.')).then_some(name);
            continue;
        }
        let (Some(section), Some((key, _))) = (&section, t.split_once('=')) else { continue };
        if t.starts_with('#') {
            continue;
        }
        let comment = line.find(" #").map(|at| line[at..].to_string()).unwrap_or_default();
        out.push(Shown {
            section: section.clone(),
            key: key.trim().to_string(),
            line: line.to_string(),
            comment,
        });
    }
    out
}

#[test]
fn every_value_the_configuration_reference_shows_is_the_default_unless_it_says_so() {
    let base = tempfile::tempdir().unwrap();
    let resolve = |s: &str| {
        format!("{:?}", toolhost::Settings::from_str_at(s, base.path(), None).map_err(|e| e.to_string()))
    };
    let mut defaults = 0;
    let mut wrong = Vec::new();
    for s in shown() {
        let header = if s.section.is_empty() { String::new() } else { format!("[{}]\n", s.section) };
        if resolve(&format!("{header}{}", s.line)) == resolve(&header) {
            defaults += 1;
        } else if !(s.comment.contains("default") || s.comment.contains("example")) {
            wrong.push(format!("[{}] {}: {}", s.section, s.key, s.line.trim()));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/src/configuration.md shows values that are not the defaults without saying so (write the default, or `example`, in the line's comment):\n{}",
        wrong.join("\n")
    );
    assert!(defaults >= 40, "only {defaults} values of the reference are defaults");
}

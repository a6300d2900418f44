//! The documentation as a reader reads it (issues #12, 4 and #36, 3): the README, the Chinese
//! quick start and every chapter of the book under `docs/src` (with the files they
//! `{{#include}}`, as mdBook expands them). Every code block is closed where it should be, every
//! `toml` example is a configuration the real parser accepts, every relative link resolves, and
//! the `[TOOL]` examples of the Chinese quick start parse as the text says they do.

use crate::support::{BIN, cache_home, root};
use std::path::{Path, PathBuf};

mod examples;
mod reference;

struct Block {
    lang: String,
    line: usize,
    text: String,
}

/// Prose lines (outside code blocks) with their line numbers.
type Prose = Vec<(usize, String)>;

/// The fenced code blocks of a Markdown text, or the line of a fence that does not close.
fn blocks(md: &str) -> Result<(Vec<Block>, Prose), String> {
    let mut out = Vec::new();
    let mut prose = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in md.lines().enumerate() {
        let n = i + 1;
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(lang)) => {
                if lang.trim().is_empty() {
                    return Err(format!("line {n}: a code block opens without a language"));
                }
                open = Some(Block { lang: lang.trim().to_string(), line: n, text: String::new() });
            }
            (Some(_), Some(rest)) => {
                if !rest.trim().is_empty() {
                    return Err(format!("line {n}: a fence with a language inside an open block"));
                }
                out.push(open.take().unwrap());
            }
            (Some(b), None) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => prose.push((n, line.to_string())),
        }
    }
    match open {
        Some(b) => Err(format!("the code block opened at line {} never closes", b.line)),
        None => Ok((out, prose)),
    }
}

/// A Markdown file of the documentation, with its `{{#include}}`s expanded as mdBook does.
struct Doc {
    /// Relative to the repository root, for messages.
    name: String,
    /// The folder its relative links start from.
    dir: PathBuf,
    text: String,
}

/// `{{#include PATH}}` and `{{#include PATH:ANCHOR}}` (the lines between `ANCHOR: NAME` and
/// `ANCHOR_END: NAME`), relative to `dir`; the `ANCHOR` lines themselves are dropped, as mdBook
/// drops them.
fn expand(text: &str, dir: &Path, name: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("{{#include ") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").unwrap_or_else(|| panic!("{name}: an unclosed {{{{#include"));
        let spec = rest[at + "{{#include ".len()..at + end].trim();
        let (path, anchor) = match spec.rsplit_once(':') {
            Some((p, a)) => (p, Some(a)),
            None => (spec, None),
        };
        let included = std::fs::read_to_string(dir.join(path))
            .unwrap_or_else(|e| panic!("{name}: {{{{#include {spec}}}}}: cannot read {path}: {e}"));
        let body: Vec<&str> = match anchor {
            None => included.lines().collect(),
            Some(a) => {
                let lines: Vec<&str> = included.lines().collect();
                let start = lines.iter().position(|l| l.contains(&format!("ANCHOR: {a}")));
                let stop = lines.iter().position(|l| l.contains(&format!("ANCHOR_END: {a}")));
                match (start, stop) {
                    (Some(s), Some(e)) if s < e => lines[s + 1..e].to_vec(),
                    _ => panic!("{name}: {{{{#include {spec}}}}}: {path} has no anchor `{a}`"),
                }
            }
        };
        let body: Vec<&str> = body.into_iter().filter(|l| !l.contains("ANCHOR")).collect();
        out.push_str(body.join("\n").trim_end_matches('\n'));
        rest = &rest[at + end + 2..];
    }
    out.push_str(rest);
    out
}

/// README.md, README.zh-CN.md and every Markdown file of the book.
fn docs() -> Vec<Doc> {
    let root = root();
    let mut out = Vec::new();
    for name in ["README.md", "README.zh-CN.md"] {
        let text = std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push(Doc { name: name.into(), dir: root.clone(), text });
    }
    let src = root.join("docs/src");
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let name = path.strip_prefix(&root).unwrap().display().to_string();
                let raw = std::fs::read_to_string(&path).unwrap();
                let text = expand(&raw, path.parent().unwrap(), &name);
                out.push(Doc { name, dir: path.parent().unwrap().to_path_buf(), text });
            }
        }
    }
    assert!(out.len() > 20, "the book has {} chapters", out.len() - 2);
    out
}

#[test]
fn every_code_block_closes_and_no_config_renders_as_prose() {
    for doc in docs() {
        let (_, prose) = blocks(&doc.text).unwrap_or_else(|e| panic!("{}: {e}", doc.name));
        // A TOML table header in prose is a config example whose block was cut.
        for (n, line) in prose {
            let t = line.trim();
            let header = t.starts_with('[')
                && t.split('#').next().unwrap().trim_end().ends_with(']')
                && !t.starts_with("[!")
                && !t.contains("](")
                && t.chars().nth(1).is_some_and(|c| c.is_ascii_lowercase());
            assert!(!header, "{} line {n} looks like TOML outside a code block: {line}", doc.name);
        }
    }
}

#[test]
fn every_toml_example_parses_with_the_real_config_parser() {
    let base = tempfile::tempdir().unwrap();
    // The files the examples refer to, as a reader following the book would have them: a
    // public key made by `toolhost keygen team.key`.
    toolhost_core::registry::signing::keygen(&base.path().join("team.key"), "team").unwrap();
    toolhost_core::registry::signing::keygen(&base.path().join("legacy.key"), "legacy").unwrap();
    // The policy file the examples name (an empty one: no rule).
    std::fs::write(base.path().join("toolhost.policy.toml"), "").unwrap();
    let mut checked = 0;
    for doc in docs() {
        let (blocks, _) = blocks(&doc.text).unwrap();
        for b in blocks.iter().filter(|b| b.lang == "toml") {
            checked += 1;
            // A policy file's example is checked by the policy's own reader (CEL conditions
            // compiled, positions in its errors).
            if b.text.contains("[[rule]]") {
                if let Err(e) = toolhost_core::policy::Policy::parse(&b.text, Path::new("example.toml")) {
                    panic!("{}: the policy example at line {} does not load: {e}", doc.name, b.line);
                }
                continue;
            }
            // An app's `app.toml` (its first line names the file) is read by the apps rules.
            if b.text.starts_with("# apps/") {
                let folder = tempfile::tempdir().unwrap();
                let app = folder.path().join("example");
                std::fs::create_dir_all(&app).unwrap();
                std::fs::write(app.join("index.html"), "<!doctype html><p>example</p>").unwrap();
                std::fs::write(app.join("app.toml"), &b.text).unwrap();
                if let Err(e) = toolhost_spec::apps::collect_dir(folder.path()) {
                    panic!("{}: the app.toml example at line {} does not read: {e}", doc.name, b.line);
                }
                continue;
            }
            // Plugin projects' Cargo.toml / pyproject.toml snippets are not toolhost configs:
            // they only have to be TOML.
            if b.text.contains("[package]")
                || b.text.contains("[project]")
                || b.text.contains("[tool.toolhost]")
            {
                if let Err(e) = b.text.parse::<toml::Table>() {
                    panic!("{}: the toml block at line {} is not TOML: {e}", doc.name, b.line);
                }
                continue;
            }
            if let Err(e) = toolhost::Settings::from_str_at(&b.text, base.path(), None) {
                panic!("{}: the toml block at line {} does not parse: {e}\n{}", doc.name, b.line, b.text);
            }
        }
    }
    assert!(checked > 10, "only {checked} toml examples found");
}

/// GitHub's and mdBook's id of a heading: lowercase, letters, digits, `-` and `_` kept, spaces
/// turned into `-`, everything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(doc: &Doc) -> Vec<String> {
    let (_, prose) = blocks(&doc.text).unwrap();
    prose.iter().filter_map(|(_, l)| l.strip_prefix('#')).map(|h| slug(h.trim_start_matches('#'))).collect()
}

/// The targets of the Markdown links `[text](target)` in the prose of a document.
fn links(doc: &Doc) -> Vec<(usize, String)> {
    let (_, prose) = blocks(&doc.text).unwrap();
    let mut out = Vec::new();
    for (n, line) in prose {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let tail = &rest[at + 2..];
            let Some(end) = tail.find(')') else { break };
            out.push((n, tail[..end].to_string()));
            rest = &tail[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let docs = docs();
    let mut checked = 0;
    for doc in &docs {
        for (n, target) in links(doc) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() { None } else { Some(doc.dir.join(path)) };
            if let Some(f) = &file {
                assert!(f.exists(), "{} line {n}: the link `{target}` points at nothing", doc.name);
            }
            if fragment.is_empty() {
                continue;
            }
            // The anchor must be a heading of the document linked to (as expanded).
            let owned;
            let target_doc = match &file {
                None => doc,
                Some(f) => {
                    let f = f.canonicalize().unwrap();
                    match docs.iter().find(|d| d.dir.join(Path::new(&d.name).file_name().unwrap()) == f) {
                        Some(d) => d,
                        None => {
                            let text = std::fs::read_to_string(&f).unwrap();
                            let dir = f.parent().unwrap().to_path_buf();
                            owned = Doc { name: f.display().to_string(), dir, text };
                            &owned
                        }
                    }
                }
            };
            assert!(
                anchors(target_doc).contains(&fragment.to_string()),
                "{} line {n}: the link `{target}`: {} has no heading `#{fragment}`",
                doc.name,
                target_doc.name
            );
        }
    }
    assert!(checked > 50, "only {checked} relative links found");
}

#[test]
fn the_readme_stays_about_two_screens_and_links_the_chinese_quick_start_first() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 150, "README.md has {lines} lines: move the detail into a chapter of docs/src");
    let head: String = readme.lines().take(4).collect::<Vec<_>>().join("\n");
    assert!(head.contains("(README.zh-CN.md)"), "the README's first lines link README.zh-CN.md:\n{head}");
}

/// CI runs exactly the README's test command (`.ci/run`), and the README still shows it.
#[test]
fn ci_runs_the_readme_test_command() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let command = ci.lines().last().unwrap().trim();
    assert_eq!(command, "cargo xtask test");
    assert!(readme.lines().any(|l| l.starts_with(command)), "the README does not show `{command}`");
}

/// The Chinese quick start shows the `[TOOL]` protocol with the full-width forms that
/// Chinese-writing models use: every call line of its `text` blocks must be one well-formed
/// call, and the full-width comma is text, as the page says.
#[test]
fn the_chinese_tool_examples_parse_as_the_page_says() {
    use toolhost_spec::text::{Segment, parse};
    let text = std::fs::read_to_string(root().join("README.zh-CN.md")).unwrap();
    let (blocks, _) = blocks(&text).unwrap();
    let mut calls = Vec::new();
    for b in blocks.iter().filter(|b| b.lang == "text") {
        for line in b.text.lines().filter(|l| l.contains("TOOL")) {
            let segments = parse(line);
            let parsed: Vec<_> = segments
                .iter()
                .filter_map(|s| match s {
                    Segment::Call { call, .. } => Some(call.clone()),
                    Segment::Error { error, .. } => {
                        panic!("README.zh-CN.md: `{line}` does not parse: {error:?}")
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(parsed.len(), 1, "README.zh-CN.md: `{line}` is not one call: {segments:?}");
            calls.push((line.to_string(), parsed.into_iter().next().unwrap()));
        }
    }
    assert!(calls.len() >= 4, "README.zh-CN.md shows {} [TOOL] calls", calls.len());
    // Every bracket form the page lists appears in an example.
    for form in ["[TOOL]", "【TOOL】", "［TOOL］", "（", "“", "「", "／"] {
        assert!(calls.iter().any(|(l, _)| l.contains(form)), "no example uses `{form}`");
    }
    let search: Vec<_> = calls.iter().filter(|(_, c)| c.name == "search").map(|(_, c)| &c.args).collect();
    assert_eq!(search, [&["苹果，香蕉"], &["「三体」"]], "a full-width comma and corner brackets are text");
    let write = calls.iter().find(|(_, c)| c.name == "write").expect("the write example");
    assert_eq!(write.1.args, ["笔记.txt", "买苹果, 买香蕉"]);
    let echo: Vec<_> = calls.iter().filter(|(_, c)| c.name == "echo").map(|(_, c)| &c.args).collect();
    assert!(echo.iter().all(|a| *a == &["你好，世界"]), "{echo:?}");
}

/// `toolhost --help` and every subcommand's help end with the chapter of the book that explains
/// it, and that chapter exists (issue #36, 4).
#[test]
fn every_help_points_to_a_chapter_of_the_book_that_exists() {
    use toolhost::commands::book;
    let mut cmd = book::command();
    let src = root().join("docs/src");
    let top = cmd.render_long_help().to_string();
    assert!(top.contains("The book: docs/src/quick-start.md"), "{top}");
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for name in names.iter().filter(|n| *n != "help") {
        let chapter = book::CHAPTERS
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("`toolhost {name}` has no chapter in commands::book::CHAPTERS"))
            .1;
        assert!(
            src.join(chapter).is_file(),
            "`toolhost {name}` points at docs/src/{chapter}, which does not exist"
        );
        let help = cmd.find_subcommand_mut(name).unwrap().render_long_help().to_string();
        // Compared with the help's line breaks undone.
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&book::pointer(chapter)),
            "`toolhost {name} --help` does not point into the book:\n{help}"
        );
    }
}

/// The keys the config parser knows in one place of the file, read from the error it gives
/// for an unknown key there (`… expected one of `a`, `b` …`); `None` when the probe is not a
/// table of named keys (a value, or a map of names such as `[plugin.NAME]`).
fn known_keys(probe: &str, base: &Path) -> Option<Vec<String>> {
    let err = toolhost::Settings::from_str_at(probe, base, None).err()?.to_string();
    let (_, expected) = err.split_once("zz_probe`")?;
    let expected = expected.split_once("expected")?.1;
    let keys: Vec<String> = expected.split('`').skip(1).step_by(2).map(str::to_string).collect();
    (!keys.is_empty()).then_some(keys)
}

/// Every key the config parser accepts, as `section.key` (`plugin.*.fs`), found by probing.
fn config_keys(base: &Path) -> Vec<String> {
    let top = known_keys("zz_probe = 1", base).expect("the top-level keys");
    let mut out = Vec::new();
    for section in top {
        if let Some(keys) = known_keys(&format!("[{section}]\nzz_probe = 1"), base) {
            out.extend(keys.into_iter().map(|k| format!("{section}.{k}")));
        } else if let Some(keys) = known_keys(&format!("[{section}.x]\nzz_probe = 1"), base) {
            out.extend(keys.into_iter().map(|k| format!("{section}.*.{k}")));
        } else {
            out.push(section);
        }
    }
    out
}

/// The configuration reference names every key the parser accepts; that each key it shows
/// exists is `every_toml_example_parses_with_the_real_config_parser` (unknown keys are errors).
#[test]
fn the_configuration_reference_names_every_config_key() {
    let base = tempfile::tempdir().unwrap();
    let keys = config_keys(base.path());
    assert!(keys.len() > 40, "the probe found only {} keys: {keys:?}", keys.len());
    let chapter = std::fs::read_to_string(root().join("docs/src/configuration.md")).unwrap();
    let (blocks, _) = blocks(&chapter).unwrap();
    let reference: String = blocks.iter().filter(|b| b.lang == "toml").map(|b| b.text.as_str()).collect();
    let shown = |key: &str| {
        let last = key.rsplit('.').next().unwrap();
        let section = key.split('.').next().unwrap();
        if key == section {
            return reference.contains(&format!("{key} =")) || reference.contains(&format!("[{key}"));
        }
        reference.contains(&format!("[{section}"))
            && (reference.contains(&format!("{last} ="))
                || reference.contains(&format!("{last}="))
                || reference.contains(&format!(".{last}."))
                || reference.contains(&format!("[{section}.{last}")))
    };
    let missing: Vec<&String> = keys.iter().filter(|k| !shown(k)).collect();
    assert!(missing.is_empty(), "docs/src/configuration.md does not show these config keys: {missing:?}");
}

/// The README's 30-second tour, run as a reader runs it (against the example plugins built for
/// the tests, in a scratch workspace): its alias with its flags, then every `th` line but the
/// server, which would not return.
#[test]
fn the_readme_tour_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (blocks, _) = blocks(&readme).unwrap();
    let tour = blocks.iter().find(|b| b.lang == "sh" && b.text.contains("alias th=")).expect("the tour");
    let alias = tour.text.lines().find_map(|l| l.strip_prefix("alias th='")).unwrap();
    let alias = alias.strip_suffix('\'').expect("the alias is one quoted command");
    let env = crate::support::Env::with(&[plugin_artifacts::FILES, plugin_artifacts::TEXT]);
    let command = alias
        .replace("toolhost ", &format!("'{BIN}' "))
        .replace("target/plugins", &env.plugins.path().display().to_string())
        .replace("./scratch", &env.workspace.path().display().to_string());
    assert_ne!(command, alias, "the alias runs toolhost on target/plugins and ./scratch: {alias}");
    let mut script = format!("set -e\nth() {{ {command} \"$@\"; }}\n");
    let lines: Vec<&str> = tour
        .text
        .lines()
        .filter(|l| l.starts_with("th ") || l.contains("| th "))
        .filter(|l| !l.contains("serve"))
        .collect();
    assert!(lines.len() >= 4, "the tour has {} `th` lines", lines.len());
    for line in lines {
        script.push_str(line);
        script.push('\n');
    }
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("XDG_CACHE_HOME", cache_home())
        .current_dir(env.dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the README's tour failed:\n{script}\n{stdout}\n{stderr}");
    assert!(stdout.contains("wrote 13 bytes to `notes.txt`\napples, pears\n"), "{stdout}");
    assert!(stdout.contains("[RESULT 1] read(\"notes.txt\") success\napples, pears\n[/RESULT]"), "{stdout}");
}

/// Every `json` example (client configurations, outcomes, messages) is JSON: one value, or
/// several one after the other as JSON lines.
#[test]
fn every_json_example_is_json() {
    let mut checked = 0;
    for doc in docs() {
        let (blocks, _) = blocks(&doc.text).unwrap();
        for b in blocks.iter().filter(|b| b.lang == "json") {
            checked += 1;
            for value in serde_json::Deserializer::from_str(&b.text).into_iter::<serde_json::Value>() {
                if let Err(e) = value {
                    panic!("{}: the json block at line {} is not JSON: {e}\n{}", doc.name, b.line, b.text);
                }
            }
        }
    }
    assert!(checked > 5, "only {checked} json examples found");
}

/// Every Python and JavaScript tool shown in the docs (a block with `@tool` or `defineTool`) is
/// a plugin its SDK accepts: put in a project of its own, the SDK derives its manifest (what
/// `toolhost build` does first), and every tool it defines is in it.
#[test]
fn every_python_and_javascript_tool_example_gives_a_manifest() {
    let root = root();
    let mut checked = 0;
    for doc in docs() {
        let (blocks, _) = blocks(&doc.text).unwrap();
        for b in &blocks {
            let dir = tempfile::tempdir().unwrap();
            let out = match b.lang.as_str() {
                "python" if b.text.contains("@tool") => {
                    std::fs::write(dir.path().join("app.py"), &b.text).unwrap();
                    std::fs::write(
                        dir.path().join("pyproject.toml"),
                        "[project]\nname = \"doc\"\nversion = \"0.1.0\"\ndescription = \"d\"\n\n[tool.toolhost]\n",
                    )
                    .unwrap();
                    std::process::Command::new("python3")
                        .args(["-m", "toolhost_sdk", "manifest"])
                        .arg(dir.path())
                        .env("PYTHONPATH", root.join("plugin-sdk/python"))
                        .output()
                        .expect("python3")
                }
                "js" if b.text.contains("defineTool") => {
                    std::fs::write(dir.path().join("index.mjs"), &b.text).unwrap();
                    std::fs::write(
                        dir.path().join("package.json"),
                        r#"{"name": "doc", "version": "0.1.0", "description": "d", "type": "module", "toolhost": {"main": "index.mjs"}}"#,
                    )
                    .unwrap();
                    std::process::Command::new("node")
                        .arg(root.join("plugin-sdk/js/bin/toolhost-js.mjs"))
                        .arg("manifest")
                        .arg(dir.path())
                        .output()
                        .expect("node")
                }
                _ => continue,
            };
            checked += 1;
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "{}: the {} tool at line {} is refused by its SDK:\n{stderr}",
                doc.name,
                b.lang,
                b.line
            );
            let manifest: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let names: Vec<&str> =
                manifest["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
            for def in b.text.lines().filter_map(|l| l.strip_prefix("def ")) {
                let name = def.split('(').next().unwrap();
                assert!(
                    names.contains(&name),
                    "{} line {}: `{name}` is not in the manifest: {names:?}",
                    doc.name,
                    b.line
                );
            }
        }
    }
    assert!(checked >= 5, "only {checked} Python/JavaScript tool examples found");
}

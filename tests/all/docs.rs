//! The README as a user reads it: every code block is closed where it should be, and every
//! `toml` example in it is a configuration the real parser accepts (issue #12, 4).

use std::path::Path;

struct Block {
    lang: String,
    line: usize,
    text: String,
}

/// The fenced code blocks of a Markdown text, or the line of a fence that does not close.
/// Prose lines (outside code blocks) with their line numbers.
type Prose = Vec<(usize, String)>;

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

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap()
}

#[test]
fn every_readme_code_block_closes_and_no_config_renders_as_prose() {
    let (blocks, prose) = blocks(&readme()).unwrap_or_else(|e| panic!("README.md: {e}"));
    assert!(blocks.len() > 10, "README.md has {} code blocks", blocks.len());
    // A TOML table header in prose is a config example whose block was cut.
    for (n, line) in prose {
        let t = line.trim();
        let header = t.starts_with('[')
            && t.split('#').next().unwrap().trim_end().ends_with(']')
            && !t.starts_with("[!")
            && !t.contains("](")
            && t.chars().nth(1).is_some_and(|c| c.is_ascii_lowercase());
        assert!(!header, "README.md line {n} looks like TOML outside a code block: {line}");
    }
}

#[test]
fn every_readme_toml_example_parses_with_the_real_config_parser() {
    let (blocks, _) = blocks(&readme()).unwrap();
    let tomls: Vec<&Block> = blocks.iter().filter(|b| b.lang == "toml").collect();
    assert!(!tomls.is_empty(), "the README has no toml example");
    let base = tempfile::tempdir().unwrap();
    // The files the examples refer to, as a reader following the README would have them: a
    // public key made by `toolhost keygen team.key`.
    toolhost_core::registry::signing::keygen(&base.path().join("team.key"), "team").unwrap();
    toolhost_core::registry::signing::keygen(&base.path().join("legacy.key"), "legacy").unwrap();
    for b in tomls {
        // Plugin projects' Cargo.toml / pyproject.toml snippets are not toolhost configs: they
        // only have to be TOML.
        if b.text.contains("[package]") || b.text.contains("[project]") || b.text.contains("[tool.toolhost]")
        {
            if let Err(e) = b.text.parse::<toml::Table>() {
                panic!("README.md: the toml block at line {} is not TOML: {e}", b.line);
            }
            continue;
        }
        if let Err(e) = toolhost::Settings::from_str_at(&b.text, base.path(), None) {
            panic!("README.md: the toml block at line {} does not parse: {e}\n{}", b.line, b.text);
        }
    }
}

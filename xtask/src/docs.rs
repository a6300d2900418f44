//! `cargo xtask docs`: build the book under `docs/` with a pinned mdBook (installed into
//! `target/tools` on first use, never globally), fail on any warning mdBook prints, then check
//! every relative link and anchor of the built HTML. The Markdown-level checks (toml examples,
//! links between the sources, the Chinese `[TOOL]` examples) are the `docs::` integration tests,
//! which `cargo xtask test` runs; this task runs them too.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The mdBook version the book is built with (it needs Rust 1.88 or later).
pub const MDBOOK_VERSION: &str = "0.5.4";

pub fn run(root: &Path) -> Result<()> {
    let mdbook = install(root)?;
    let out = root.join("target/book");
    eprintln!("$ {} build docs", mdbook.display());
    let result = Command::new(&mdbook)
        .arg("build")
        .arg(root.join("docs"))
        .output()
        .with_context(|| format!("cannot run {}", mdbook.display()))?;
    let log = String::from_utf8_lossy(&result.stderr).into_owned() + &String::from_utf8_lossy(&result.stdout);
    eprint!("{log}");
    if !result.status.success() {
        bail!("mdbook build failed ({})", result.status);
    }
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("WARN") || l.contains("ERROR")).collect();
    if !warnings.is_empty() {
        bail!(
            "mdbook printed {} warning(s); the book must build without any:\n{}",
            warnings.len(),
            warnings.join("\n")
        );
    }
    let broken = check_links(&out)?;
    if !broken.is_empty() {
        bail!("{} broken link(s) in the built book:\n{}", broken.len(), broken.join("\n"));
    }
    eprintln!("the book is in {} (no warnings, no broken links)", out.join("index.html").display());
    eprintln!("\n== the docs tests ==");
    let mut test = super::cargo();
    // Without the variables `cargo run` set for xtask itself: build scripts that watch them
    // (ring's) would otherwise rebuild here and again in the next plain `cargo test`.
    for (key, _) in std::env::vars() {
        if ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_NAME", "CARGO_BIN_NAME", "CARGO_PRIMARY_PACKAGE"]
            .iter()
            .any(|p| key.starts_with(p))
        {
            test.env_remove(key);
        }
    }
    super::run(test.current_dir(root).args(["test", "--workspace", "--test", "all", "--", "docs::"]))
}

/// `target/tools/bin/mdbook` at [`MDBOOK_VERSION`], installed with `cargo install --locked` the
/// first time (about three minutes on two cores; only the `search` feature, no server).
fn install(root: &Path) -> Result<PathBuf> {
    let tools = root.join("target/tools");
    let bin = tools.join("bin/mdbook");
    let version = Command::new(&bin).arg("--version").output();
    if let Ok(v) = version
        && String::from_utf8_lossy(&v.stdout).trim() == format!("mdbook v{MDBOOK_VERSION}")
    {
        return Ok(bin);
    }
    eprintln!("installing mdBook {MDBOOK_VERSION} into {} …", tools.display());
    super::run(
        super::cargo()
            .args(["install", "mdbook", "--version", MDBOOK_VERSION, "--locked", "--no-default-features"])
            .args(["--features", "search", "--root"])
            .arg(&tools),
    )?;
    Ok(bin)
}

/// Every `href` and `src` of the book's HTML pages that is relative must name a file of the
/// book, and its `#fragment` an `id` in that file. Returns the broken ones, as `page: link`.
pub fn check_links(book: &Path) -> Result<Vec<String>> {
    let mut pages = Vec::new();
    let mut pending = vec![book.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("read {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    if pages.is_empty() {
        bail!("no HTML pages in {}", book.display());
    }
    let mut broken = Vec::new();
    for page in &pages {
        let name = page.strip_prefix(book).unwrap_or(page).display().to_string();
        // 404.html is served from any depth with a <base href> at the site's root, and
        // print.html is every chapter in one page: their links are the chapters' own.
        if name == "404.html" || name == "print.html" {
            continue;
        }
        let html = std::fs::read_to_string(page)?;
        for link in attributes(&html, "href=\"").chain(attributes(&html, "src=\"")) {
            if link.contains("://") || link.starts_with("mailto:") || link.starts_with("javascript:") {
                continue;
            }
            let link = link.replace("&amp;", "&");
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let path = path.split('?').next().unwrap_or_default();
            let target = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            let target = if target.is_dir() { target.join("index.html") } else { target };
            if !target.is_file() {
                broken.push(format!("{name}: {link} (no such file)"));
                continue;
            }
            if !fragment.is_empty() && target.extension().is_some_and(|e| e == "html") {
                let text = std::fs::read_to_string(&target)?;
                if !text.contains(&format!("id=\"{fragment}\"")) {
                    broken.push(format!("{name}: {link} (no id `{fragment}` there)"));
                }
            }
        }
    }
    Ok(broken)
}

/// The values of one attribute (`href="` or `src="`) in an HTML text.
fn attributes<'a>(html: &'a str, attribute: &'static str) -> impl Iterator<Item = String> + 'a {
    html.match_indices(attribute).filter_map(move |(at, _)| {
        let value = &html[at + attribute.len()..];
        value.find('"').map(|end| value[..end].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_to_a_missing_page_or_anchor_is_reported() {
        let dir = std::env::temp_dir().join(format!("xtask-docs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.html"), r#"<h1 id="top">A</h1><a href="b.html#here">b</a>"#).unwrap();
        std::fs::write(
            dir.join("b.html"),
            r#"<h2 id="here">B</h2><a href="a.html#top">a</a><a href="c.html">c</a><a href="a.html#gone">x</a><a href="https://x.invalid/">w</a>"#,
        )
        .unwrap();
        let broken = check_links(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(broken, ["b.html: c.html (no such file)", "b.html: a.html#gone (no id `gone` there)"]);
    }
}

//! Module cycles inside one crate: which module's code names which other module of the same
//! crate, and the strongly connected components of that graph (Tarjan).
//!
//! Files map to modules (`a/b.rs` and `a/b/mod.rs` → `a::b`, the crate root → the root). A
//! reference is a path that starts with `crate`, `super` or `self`, or with the name of a child
//! module, in a `use` declaration (groups included, over any number of lines) or inline in code;
//! it goes to the longest prefix of the path that is a module. References to the module itself or
//! to its ancestors do not count (a child naming its parent's items is how modules nest), and
//! neither do comments, literals, or items under `#[cfg(test)]` (test modules, inline or in their
//! own file). This reads text, not the compiler's view: a path a macro builds is invisible to it.

use super::lex::{Kind, Token, tokens};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate's sources: module path (`a::b`, the root is `""`) → file.
#[derive(Debug)]
pub struct CrateSrc {
    /// What the crate is, for humans: `toolhost-core lib (host/core/src/lib.rs)`.
    pub title: String,
    pub modules: BTreeMap<String, PathBuf>,
}

/// Where a reference is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    pub file: PathBuf,
    pub line: usize,
}

#[derive(Debug, Default)]
pub struct Graph {
    pub modules: BTreeSet<String>,
    /// from → to → the places that tie them (each file:line once).
    pub edges: BTreeMap<String, BTreeMap<String, BTreeSet<Site>>>,
}

/// The crates whose sources are in `src` (the `src` folder of package `package`). A package
/// with both `lib.rs` and `main.rs` is two crates: the binary is `main.rs` with the modules it
/// declares itself (`mod x;`), the library is everything else. `src/bin/NAME.rs` and
/// `src/bin/NAME/` are binaries of their own.
/// Paths in titles are shown relative to `shown_from`.
pub fn crates_in(package: &str, src: &Path, shown_from: &Path) -> Result<Vec<CrateSrc>> {
    let shown = |p: &Path| p.strip_prefix(shown_from).unwrap_or(p).display().to_string();
    let mut files = Vec::new();
    walk(src, &mut files)?;
    files.sort();
    let mut bins: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    let mut main_files: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in files {
        let Ok(rel) = file.strip_prefix(src) else { continue };
        let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if parts.first().is_some_and(|p| p == "bin") && parts.len() >= 2 {
            let name = parts[1].trim_end_matches(".rs").to_string();
            let module = if parts.len() == 2 { String::new() } else { module_path(&parts[2..], "main") };
            bins.entry(name).or_default().entry(module).or_insert(file);
        } else {
            main_files.entry(module_path(&parts, "")).or_insert(file);
        }
    }
    let mut out = Vec::new();
    let lib = src.join("lib.rs");
    let main = src.join("main.rs");
    let root_file = main_files.get("").cloned();
    if lib.is_file() && main.is_file() {
        // lib.rs and main.rs both map to the root: give it back to the library and carve out
        // the binary's own modules.
        let declared = read(&main).map(|text| declared_modules(&tokens(&text)))?;
        let mut bin = BTreeMap::from([(String::new(), main.clone())]);
        let mut library = BTreeMap::new();
        for (module, file) in main_files {
            let top = module.split("::").next().unwrap_or_default();
            if module.is_empty() {
                library.insert(module, lib.clone());
            } else if declared.iter().any(|(name, _)| name == top) {
                bin.insert(module, file);
            } else {
                library.insert(module, file);
            }
        }
        out.push(CrateSrc { title: format!("{package} lib ({})", shown(&lib)), modules: library });
        out.push(CrateSrc { title: format!("{package} bin ({})", shown(&main)), modules: bin });
    } else if !main_files.is_empty() {
        let root = root_file.unwrap_or_else(|| src.to_path_buf());
        let kind = if root.ends_with("main.rs") { "bin" } else { "lib" };
        out.push(CrateSrc { title: format!("{package} {kind} ({})", shown(&root)), modules: main_files });
    }
    for (name, modules) in bins {
        let root = modules.get("").cloned().unwrap_or_else(|| src.join("bin").join(&name));
        out.push(CrateSrc { title: format!("{package} bin {name} ({})", shown(&root)), modules });
    }
    Ok(out)
}

/// `a/b.rs`, `a/b/mod.rs` → `a::b`; the top-level `lib.rs`/`main.rs` (or `root`) → `""`.
fn module_path(parts: &[String], root: &str) -> String {
    let mut names: Vec<&str> = parts.iter().map(|p| p.strip_suffix(".rs").unwrap_or(p)).collect();
    if names.last() == Some(&"mod") {
        names.pop();
    }
    if names.len() == 1 && (names[0] == "lib" || names[0] == "main" || names[0] == root) {
        names.clear();
    }
    names.join("::")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The references of one file, before they are resolved against the crate's modules.
#[derive(Debug, Default)]
struct FileRefs {
    refs: Vec<Ref>,
    /// Child modules declared in their own file (`mod x;`), and whether under `#[cfg(test)]`.
    children: Vec<(String, bool)>,
}

/// A path as written: `full` is the absolute module path it names once `crate`/`super`/`self`
/// are applied, of which the first `base` segments came from them; `lines[k]` is the line of
/// `full[base + k]`.
#[derive(Debug)]
struct Ref {
    full: Vec<String>,
    base: usize,
    lines: Vec<usize>,
}

/// The module graph of one crate.
pub fn graph(krate: &CrateSrc, shown_from: &Path) -> Result<Graph> {
    let mut scanned = BTreeMap::new();
    for (module, file) in &krate.modules {
        let text = read(file)?;
        scanned.insert(module.clone(), scan(&tokens(&text), module));
    }
    // Modules declared under #[cfg(test)] in their own file (`#[cfg(test)] mod tests;`), and
    // everything below them, are test code.
    let test_only: Vec<String> = scanned
        .iter()
        .flat_map(|(m, refs)| refs.children.iter().filter(|(_, t)| *t).map(move |(c, _)| join(m, c)))
        .collect();
    let is_test = |m: &str| test_only.iter().any(|t| m == t || m.starts_with(&format!("{t}::")));
    let mut g = Graph {
        modules: krate.modules.keys().filter(|m| !is_test(m)).cloned().collect(),
        edges: BTreeMap::new(),
    };
    for (module, refs) in &scanned {
        if is_test(module) {
            continue;
        }
        let file = &krate.modules[module];
        let shown = file.strip_prefix(shown_from).unwrap_or(file).to_path_buf();
        for r in &refs.refs {
            let Some(k) = (0..=r.full.len()).rev().find(|&k| g.modules.contains(&r.full[..k].join("::")))
            else {
                continue;
            };
            let target = r.full[..k].join("::");
            let ancestor =
                target.is_empty() || *module == target || module.starts_with(&format!("{target}::"));
            if ancestor {
                continue;
            }
            let line = r.lines.get(k.saturating_sub(r.base + 1)).copied().unwrap_or(0);
            g.edges
                .entry(module.clone())
                .or_default()
                .entry(target)
                .or_default()
                .insert(Site { file: shown.clone(), line });
        }
    }
    Ok(g)
}

fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() { child.to_string() } else { format!("{parent}::{child}") }
}

/// How deeply `use` groups may nest before the rest is not read (a guard against odd input).
const MAX_USE_DEPTH: usize = 32;

/// Reads the references of a file that is module `module`.
fn scan(toks: &[Token], module: &str) -> FileRefs {
    let file_scope: Vec<String> =
        if module.is_empty() { Vec::new() } else { module.split("::").map(String::from).collect() };
    let mut out = FileRefs::default();
    // Inline modules (`mod x { … }`) open at brace depth: (name, depth inside).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let scope =
            || file_scope.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect::<Vec<_>>();
        let t = &toks[i];
        if let Some(end) = cfg_test_item(toks, i, inline.is_empty().then_some(&mut out.children)) {
            i = end;
            continue;
        }
        if t.is_punct("{") {
            depth += 1;
        } else if t.is_punct("}") {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
        } else if t.is("mod") && toks.get(i + 1).is_some_and(Token::is_ident) {
            let name = toks[i + 1].text.to_string();
            match toks.get(i + 2) {
                Some(n) if n.is_punct("{") => {
                    depth += 1;
                    inline.push((name, depth));
                    i += 3;
                    continue;
                }
                Some(n) if n.is_punct(";") && inline.is_empty() => out.children.push((name, false)),
                _ => {}
            }
        } else if t.is("use") {
            let mut paths = Vec::new();
            let end = use_tree(toks, i + 1, Vec::new(), &mut paths, 0);
            let scope = scope();
            out.refs.extend(paths.iter().filter_map(|p| reference(p, &scope, inline.is_empty())));
            // Past the declaration's `;` (a `use<…>` bound in a signature is no declaration).
            i = if toks.get(end).is_some_and(|t| t.is_punct(";")) { end + 1 } else { (i + 1).max(end) };
            continue;
        } else if t.is_ident() && toks.get(i + 1).is_some_and(|n| n.is_punct("::")) && starts_path(toks, i) {
            let mut path = vec![(t.text, t.line)];
            let mut j = i + 1;
            while toks.get(j).is_some_and(|n| n.is_punct("::"))
                && toks.get(j + 1).is_some_and(Token::is_ident)
            {
                path.push((toks[j + 1].text, toks[j + 1].line));
                j += 2;
            }
            let keyword =
                matches!(t.text, "crate" | "super" | "self") && t.kind == (Kind::Ident { raw: false });
            if keyword || inline.is_empty() {
                out.refs.extend(reference(&path, &scope(), inline.is_empty()));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Does the identifier at `i` start a path (rather than continue one, name a field or method,
/// stand for a macro variable, or sit in a `pub(in …)` visibility)?
fn starts_path(toks: &[Token], i: usize) -> bool {
    let prev = i.checked_sub(1).map(|p| &toks[p]);
    if prev.is_some_and(|p| p.is_punct("::") || p.is_punct(".")) {
        return false;
    }
    if prev.is_some_and(|p| p.is_punct("$")) && toks[i].text != "crate" {
        return false;
    }
    let visibility = prev.is_some_and(|p| p.is("in")) && i >= 2 && toks[i - 2].is_punct("(");
    !visibility
}

/// The module path a written path names, from `scope` (the module it is written in); `None` when
/// it names something outside the crate (`::x`, `std::x`, a dependency). Bare paths (`child::x`)
/// are read only at the file's top level, where the file's own child modules are in scope.
fn reference(path: &[(&str, usize)], scope: &[String], top_level: bool) -> Option<Ref> {
    let (first, _) = *path.first()?;
    let mut base: Vec<String> = match first {
        "crate" => Vec::new(),
        "super" | "self" => scope.to_vec(),
        "::" => return None,
        _ if top_level => scope.to_vec(),
        _ => return None,
    };
    let mut rest = path;
    if first == "crate" {
        rest = &path[1..];
    } else if first == "self" || first == "super" {
        let mut k = 0;
        while let Some((seg, _)) = path.get(k) {
            match *seg {
                "self" if k == 0 => {}
                "super" => {
                    base.pop()?;
                }
                _ => break,
            }
            k += 1;
        }
        rest = &path[k..];
    }
    // `a::{self, b}` names `a`: a `self` after the first segment adds nothing.
    let rest: Vec<&(&str, usize)> = rest.iter().filter(|(s, _)| *s != "self" && *s != "super").collect();
    let base_len = base.len();
    base.extend(rest.iter().map(|(s, _)| s.to_string()));
    Some(Ref { full: base, base: base_len, lines: rest.iter().map(|(_, l)| *l).collect() })
}

/// Reads a use tree from `i`, pushing each complete path (segments with their lines) to `out`.
/// Returns the index after the tree.
fn use_tree<'a>(
    toks: &[Token<'a>],
    mut i: usize,
    mut path: Vec<(&'a str, usize)>,
    out: &mut Vec<Vec<(&'a str, usize)>>,
    nesting: usize,
) -> usize {
    if nesting > MAX_USE_DEPTH {
        return i;
    }
    loop {
        let Some(t) = toks.get(i) else {
            out.push(path);
            return i;
        };
        if t.is_punct("::") && path.is_empty() {
            // `use ::dep::x`: a dependency, never this crate.
            path.push(("::", t.line));
            i += 1;
        } else if t.is_ident() && !t.is("as") {
            path.push((t.text, t.line));
            i += 1;
            if toks.get(i).is_some_and(|n| n.is_punct("::")) {
                i += 1;
                continue;
            }
            if toks.get(i).is_some_and(|n| n.is("as")) {
                i += 2;
            }
            out.push(path);
            return i;
        } else if t.is_punct("{") {
            i += 1;
            while let Some(t) = toks.get(i) {
                if t.is_punct("}") {
                    return i + 1;
                }
                if t.is_punct(",") {
                    i += 1;
                    continue;
                }
                let next = use_tree(toks, i, path.clone(), out, nesting + 1);
                if next == i {
                    // Not a use tree: stop reading this declaration.
                    return i;
                }
                i = next;
            }
            return i;
        } else {
            // `*`, or the end of the tree.
            if !path.is_empty() {
                out.push(path);
            }
            return if t.is_punct("*") { i + 1 } else { i };
        }
    }
}

/// If an item under `#[cfg(test)]` starts at `i`, the index after it. An out-of-line module
/// (`#[cfg(test)] mod tests;`) is recorded in `children` as test code.
fn cfg_test_item(toks: &[Token], i: usize, children: Option<&mut Vec<(String, bool)>>) -> Option<usize> {
    let pattern = ["#", "[", "cfg", "(", "test", ")", "]"];
    let is_attr = pattern
        .iter()
        .enumerate()
        .all(|(k, p)| toks.get(i + k).is_some_and(|t| t.text == *p && t.kind != Kind::Literal));
    if !is_attr {
        return None;
    }
    let mut j = i + pattern.len();
    // Further attributes, then the visibility.
    while toks.get(j).is_some_and(|t| t.is_punct("#")) && toks.get(j + 1).is_some_and(|t| t.is_punct("[")) {
        j = after_group(toks, j + 1, "[", "]");
    }
    if toks.get(j).is_some_and(|t| t.is("pub")) {
        j += 1;
        if toks.get(j).is_some_and(|t| t.is_punct("(")) {
            j = after_group(toks, j, "(", ")");
        }
    }
    let item = toks.get(j)?;
    if item.is("use") {
        return Some(after_semicolon(toks, j));
    }
    if item.is("mod") {
        if let (Some(name), Some(next)) = (toks.get(j + 1), toks.get(j + 2))
            && next.is_punct(";")
        {
            if let Some(children) = children {
                children.push((name.text.to_string(), true));
            }
            return Some(j + 3);
        }
    } else if ![
        "fn",
        "impl",
        "struct",
        "enum",
        "trait",
        "const",
        "static",
        "type",
        "async",
        "unsafe",
        "extern",
        "macro_rules",
    ]
    .iter()
    .any(|k| item.is(k))
    {
        // Some other use of the attribute (a statement, an expression): read on.
        return None;
    }
    // The item ends at its first `;` outside brackets, or at the `}` closing its first `{`.
    let mut k = j;
    let mut nest = 0usize;
    while let Some(t) = toks.get(k) {
        match t.text {
            "(" | "[" if t.kind == Kind::Punct => nest += 1,
            ")" | "]" if t.kind == Kind::Punct => nest = nest.saturating_sub(1),
            ";" if t.kind == Kind::Punct && nest == 0 => return Some(k + 1),
            "{" if t.kind == Kind::Punct && nest == 0 => return Some(after_group(toks, k, "{", "}")),
            _ => {}
        }
        k += 1;
    }
    Some(k)
}

/// The index after the bracket that closes the one at `i`.
fn after_group(toks: &[Token], i: usize, open: &str, close: &str) -> usize {
    let mut depth = 0usize;
    let mut k = i;
    while let Some(t) = toks.get(k) {
        if t.is_punct(open) {
            depth += 1;
        } else if t.is_punct(close) {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return k + 1;
            }
        }
        k += 1;
    }
    k
}

fn after_semicolon(toks: &[Token], i: usize) -> usize {
    (i..toks.len()).find(|&k| toks[k].is_punct(";")).map_or(toks.len(), |k| k + 1)
}

/// The modules a crate root declares in their own files (`mod x;`, test modules too), for
/// splitting a package's binary from its library.
fn declared_modules(toks: &[Token]) -> Vec<(String, bool)> {
    scan(toks, "").children
}

/// The strongly connected components of more than one module, each sorted, in module order.
pub fn cycles(g: &Graph) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = g.modules.iter().collect();
    let index_of: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|m| {
            g.edges
                .get(*m)
                .into_iter()
                .flat_map(|e| e.keys())
                .filter_map(|t| index_of.get(t).copied())
                .collect()
        })
        .collect();
    let mut t = Tarjan {
        succ: &succ,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..nodes.len() {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    let mut out: Vec<Vec<String>> = t
        .out
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut names: Vec<String> = c.into_iter().map(|v| nodes[v].clone()).collect();
            names.sort();
            names
        })
        .collect();
    out.sort();
    out
}

/// Tarjan's algorithm; the recursion is as deep as the longest path, at most the module count.
struct Tarjan<'a> {
    succ: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    out: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.succ[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            self.out.push(comp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::testdir::TempTree;

    /// The graph of the one crate in fixture `files` (paths under `src/`).
    fn fixture(test: &str, files: &[(&str, &str)]) -> (TempTree, Graph) {
        let with_src: Vec<(String, &str)> = files.iter().map(|(p, t)| (format!("src/{p}"), *t)).collect();
        let refs: Vec<(&str, &str)> = with_src.iter().map(|(p, t)| (p.as_str(), *t)).collect();
        let tree = TempTree::new(test, &refs);
        let crates = crates_in("fixture", &tree.path().join("src"), tree.path()).unwrap();
        assert_eq!(crates.len(), 1, "{crates:?}");
        let g = graph(&crates[0], tree.path()).unwrap();
        (tree, g)
    }

    /// `from -> to` with its sites as `file:line`.
    fn sites(g: &Graph, from: &str, to: &str) -> Vec<String> {
        g.edges
            .get(from)
            .and_then(|e| e.get(to))
            .into_iter()
            .flatten()
            .map(|s| format!("{}:{}", s.file.display(), s.line))
            .collect()
    }

    fn has_edge(g: &Graph, from: &str, to: &str) -> bool {
        !sites(g, from, to).is_empty()
    }

    #[test]
    fn a_use_and_an_inline_path_make_a_cycle() {
        let (_t, g) = fixture(
            "use-inline",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "//! a\n\npub fn g() -> u8 {\n    crate::b::f()\n}\n"),
                ("b.rs", "use crate::a;\npub fn f() -> u8 { 1 }\npub fn h() -> u8 { a::g() }\n"),
            ],
        );
        assert_eq!(cycles(&g), [["a", "b"]]);
        assert_eq!(sites(&g, "a", "b"), ["src/a.rs:4"]);
        assert_eq!(sites(&g, "b", "a"), ["src/b.rs:1"]);
    }

    #[test]
    fn a_use_group_over_several_lines_makes_a_cycle() {
        let (_t, g) = fixture(
            "use-group",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("a.rs", "use crate::{\n    c::{self, C},\n    b::B,\n};\n"),
                ("b.rs", "pub struct B;\npub fn f() { crate::a::g() }\n"),
                ("c.rs", "pub struct C;\n"),
            ],
        );
        assert_eq!(cycles(&g), [["a", "b"]]);
        assert_eq!(sites(&g, "a", "b"), ["src/a.rs:3"]);
        assert_eq!(sites(&g, "a", "c"), ["src/a.rs:2"]);
    }

    #[test]
    fn a_one_line_use_group_makes_a_cycle() {
        let (_t, g) = fixture(
            "use-group-line",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "use crate::{a, b};\n"),
                ("b.rs", "use crate::{a::X, b as _};\n"),
            ],
        );
        assert_eq!(cycles(&g), [["a", "b"]]);
    }

    #[test]
    fn super_names_a_sibling() {
        let (_t, g) = fixture(
            "super",
            &[
                ("lib.rs", "mod x;\n"),
                ("x/mod.rs", "mod y;\nmod z;\n"),
                ("x/y.rs", "use super::z::Z;\npub fn g() {}\n"),
                ("x/z.rs", "pub struct Z;\npub fn f() {\n    super::y::g();\n}\n"),
            ],
        );
        assert_eq!(cycles(&g), [["x::y", "x::z"]]);
        assert_eq!(sites(&g, "x::z", "x::y"), ["src/x/z.rs:3"]);
    }

    #[test]
    fn super_super_and_inline_modules_resolve_from_where_they_are() {
        let (_t, g) = fixture(
            "super-super",
            &[
                ("lib.rs", "mod p;\nmod q;\n"),
                ("p/mod.rs", "mod deep;\n"),
                (
                    "p/deep.rs",
                    "use super::super::q::Q;\nmod inner {\n    use super::super::super::q::R;\n}\n",
                ),
                ("q.rs", "pub struct Q;\npub struct R;\n"),
            ],
        );
        assert_eq!(sites(&g, "p::deep", "q"), ["src/p/deep.rs:1", "src/p/deep.rs:3"]);
    }

    #[test]
    fn a_child_naming_its_parent_is_no_cycle() {
        let (_t, g) = fixture(
            "parent",
            &[
                ("lib.rs", "pub mod p;\npub fn root() {}\n"),
                ("p/mod.rs", "mod q;\npub use q::Q;\npub fn helper() {}\n"),
                (
                    "p/q.rs",
                    "use super::helper;\nuse crate::p::helper as h;\npub struct Q;\nfn f() { crate::root() }\n",
                ),
            ],
        );
        assert!(has_edge(&g, "p", "p::q"), "{:?}", g.edges);
        assert!(!has_edge(&g, "p::q", "p"), "{:?}", g.edges);
        assert!(!has_edge(&g, "p::q", ""), "{:?}", g.edges);
        assert!(cycles(&g).is_empty());
    }

    #[test]
    fn test_modules_are_skipped() {
        let (_t, g) = fixture(
            "cfg-test",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
                (
                    "a.rs",
                    "pub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use crate::b::g;\n    #[test]\n    fn t() { g() }\n}\n\npub fn after() { crate::c::h() }\n\n#[cfg(test)]\nmod more;\n",
                ),
                ("a/more.rs", "use crate::b;\n"),
                ("b.rs", "use crate::a::f;\n#[cfg(test)]\nuse crate::c::h;\npub fn g() {}\n"),
                ("c.rs", "pub fn h() {}\n"),
            ],
        );
        assert!(cycles(&g).is_empty(), "{:?}", g.edges);
        assert!(!has_edge(&g, "a", "b"));
        assert!(!g.modules.contains("a::more"), "{:?}", g.modules);
        assert!(!has_edge(&g, "b", "c"), "{:?}", g.edges);
        // Code after the test module still counts.
        assert_eq!(sites(&g, "a", "c"), ["src/a.rs:10"]);
    }

    #[test]
    fn comments_and_strings_are_ignored() {
        let (_t, g) = fixture(
            "comments",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                (
                    "a.rs",
                    "// use crate::b;\n/// See [`crate::b::f`].\n/* crate::b::f(); /* nested */ crate::b */\npub fn g() -> &'static str { let _c = '{'; \"crate::b::f\" }\n",
                ),
                ("b.rs", "use crate::a::g;\npub fn f() {}\n"),
            ],
        );
        assert!(!has_edge(&g, "a", "b"), "{:?}", g.edges);
        assert!(cycles(&g).is_empty());
        assert!(has_edge(&g, "b", "a"));
    }

    #[test]
    fn bare_child_paths_and_self_count_but_not_other_crates() {
        let (_t, g) = fixture(
            "bare",
            &[
                ("lib.rs", "mod m;\n"),
                (
                    "m/mod.rs",
                    "mod k;\nmod l;\nuse std::fmt;\nfn f() { k::run(); self::l::run(); fmt::Debug; x.k::<u8>(); }\n",
                ),
                ("m/k.rs", "pub fn run() {}\n"),
                ("m/l.rs", "pub fn run() {}\n"),
            ],
        );
        assert_eq!(sites(&g, "m", "m::k"), ["src/m/mod.rs:4"]);
        assert_eq!(sites(&g, "m", "m::l"), ["src/m/mod.rs:4"]);
        assert_eq!(g.edges.get("m").map(|e| e.len()), Some(2), "{:?}", g.edges);
    }

    #[test]
    fn a_package_with_lib_and_main_is_two_crates() {
        let tree = TempTree::new(
            "lib-main",
            &[
                ("src/lib.rs", "pub mod a;\n"),
                ("src/a.rs", "pub fn f() {}\n"),
                ("src/main.rs", "mod cli;\n#[cfg(test)]\nmod tests;\nfn main() { cli::run() }\n"),
                ("src/cli/mod.rs", "mod args;\npub fn run() {}\n"),
                ("src/cli/args.rs", ""),
                ("src/tests.rs", ""),
                ("src/bin/extra.rs", "fn main() {}\n"),
            ],
        );
        let crates = crates_in("pkg", &tree.path().join("src"), tree.path()).unwrap();
        let shown: Vec<(&str, Vec<&str>)> = crates
            .iter()
            .map(|c| (c.title.as_str(), c.modules.keys().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            shown,
            [
                ("pkg lib (src/lib.rs)", vec!["", "a"]),
                ("pkg bin (src/main.rs)", vec!["", "cli", "cli::args", "tests"]),
                ("pkg bin extra (src/bin/extra.rs)", vec![""]),
            ]
        );
        assert!(crates[0].modules[""].ends_with("src/lib.rs"));
        assert!(crates[1].modules[""].ends_with("src/main.rs"));
        // The binary's test module is test code.
        let bin = graph(&crates[1], tree.path()).unwrap();
        assert_eq!(bin.modules.iter().collect::<Vec<_>>(), ["", "cli", "cli::args"]);
    }

    #[test]
    fn odd_input_does_not_panic() {
        for src in [
            "use crate::{a, {b, {c",
            "use",
            "use ::",
            "use crate::",
            "#[cfg(test)]",
            "#[cfg(test)] mod",
            "#[cfg(test)] fn f(",
            "mod x {",
            "}}}} super::super::super::x",
            "impl Fn() + use<'a> { crate::a }",
        ] {
            let _ = scan(&tokens(src), "a::b");
        }
        let deep = format!("use crate::{};", "{a, ".repeat(100));
        let _ = scan(&tokens(&deep), "");
    }

    #[test]
    fn tarjan_finds_each_component() {
        let mut g = Graph::default();
        for m in ["a", "b", "c", "d", "e", "f"] {
            g.modules.insert(m.to_string());
        }
        for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")]
        {
            g.edges.entry(from.into()).or_default().entry(to.into()).or_default();
        }
        assert_eq!(cycles(&g), [vec!["a", "b", "c"], vec!["d", "e"]]);
    }
}

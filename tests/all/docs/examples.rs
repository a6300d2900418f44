//! The code examples of the documentation run or build (issue #36, 3), under the rules the
//! contributing chapter ("Examples in the docs") states:
//!
//! - every `rust` block is a whole plugin (`#[toolhost_sdk::plugin] mod …`) once the
//!   lines mdBook hides (`# ` at the start) are shown; it is built for `wasm32-wasip2` against
//!   the in-repo SDK. A block that cannot be one has the info string `rust,ignore`, and the
//!   sentence just before it says it is a fragment;
//! - every shell block (`sh`, `bash`, `shell`, `console`) runs, offline, against the example
//!   plugins in `target/plugins` (`files`, `text`, `web`, `system`) in a scratch folder: a `sh`
//!   block's commands must all succeed, a `console` block's `$ ` commands must print what the
//!   block shows after them (`$ cat FILE` shows a file the reader has: it is written first; a
//!   transcript in a block of another kind is refused). A block that cannot run offline in seconds (a server, the network,
//!   a registry, a toolchain build) is preceded by the line `<!-- illustrative: REASON -->`.

use super::{Block, blocks, docs};
use crate::support::{BIN, cache_home, root};
use std::process::{Command, Stdio};

const SHELLS: &[&str] = &["sh", "bash", "shell", "console"];

/// How long one shell example may run.
const EXAMPLE_TIMEOUT_S: u32 = 120;

/// A block's language and its other info-string words (`rust,ignore` → `rust`, `[ignore]`).
fn info(b: &Block) -> (&str, Vec<&str>) {
    let mut words = b.lang.split([',', ' ']).filter(|w| !w.is_empty());
    (words.next().unwrap_or(""), words.collect())
}

/// The prose line just before a block's opening fence, trimmed.
fn line_before(text: &str, b: &Block) -> String {
    b.line.checked_sub(2).and_then(|i| text.lines().nth(i)).unwrap_or("").trim().to_string()
}

/// The last non-blank line before a block's fence.
fn sentence_before(text: &str, b: &Block) -> String {
    let lines: Vec<&str> = text.lines().take(b.line.saturating_sub(1)).collect();
    lines.iter().rev().find(|l| !l.trim().is_empty()).unwrap_or(&"").to_string()
}

/// A Rust block as the compiler sees it: the lines mdBook hides from readers (`# code`, `#`)
/// shown, as rustdoc does.
fn unhide(code: &str) -> String {
    let mut out = String::new();
    for line in code.lines() {
        let t = line.trim_start();
        let indent = &line[..line.len() - t.len()];
        if t == "#" {
            out.push('\n');
        } else if let Some(rest) = t.strip_prefix("# ") {
            out.push_str(indent);
            out.push_str(rest);
            out.push('\n');
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Every whole-plugin Rust block of the docs, with where it is, for a scratch workspace.
fn rust_examples() -> Vec<(String, usize, String)> {
    let mut out: Vec<(String, usize, String)> = Vec::new();
    for doc in docs() {
        let (bs, _) = blocks(&doc.text).unwrap();
        for b in &bs {
            let (lang, attrs) = info(b);
            if lang != "rust" {
                continue;
            }
            if attrs.contains(&"ignore") {
                let before = sentence_before(&doc.text, b);
                assert!(
                    before.contains("fragment"),
                    "{} line {}: a rust,ignore block must follow a sentence saying it is a fragment (and why); it follows: {before}",
                    doc.name,
                    b.line
                );
                continue;
            }
            let code = unhide(&b.text);
            assert!(
                code.contains("#[toolhost_sdk::plugin"),
                "{} line {}: the rust block is not a whole plugin; add the lines around it as hidden `# ` lines (mdBook does not show them) or mark it rust,ignore after a sentence saying it is a fragment:\n{}",
                doc.name,
                b.line,
                b.text
            );
            // The Chinese chapter includes README.zh-CN.md: build each text once.
            if !out.iter().any(|(_, _, c)| *c == code) {
                out.push((doc.name.clone(), b.line, code));
            }
        }
    }
    out
}

/// Every Rust tool of the docs builds for `wasm32-wasip2` against the in-repo SDK: one scratch
/// workspace with a crate per example, the example plugins' lock file, profile and target dir
/// (`target/plugins-build`, which the test build keeps warm: seconds, not minutes).
#[test]
fn every_rust_tool_example_builds_for_wasm() {
    let root = root();
    let examples = rust_examples();
    assert!(examples.len() >= 4, "only {} Rust tool examples found", examples.len());
    // One fixed folder (not a fresh temporary one), so the examples' crates keep their
    // identity between runs and their builds replace each other in the shared target dir
    // instead of piling up there.
    let ws = root.join("target/docs-examples");
    let _ = std::fs::remove_dir_all(&ws);
    std::fs::create_dir_all(&ws).unwrap();
    let mut members = Vec::new();
    for (i, (_, _, code)) in examples.iter().enumerate() {
        let name = format!("doc_example_{i}");
        let dir = ws.join(&name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\ndescription = \"an example of the docs\"\n\n\
                 [lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\ntoolhost-sdk.workspace = true\nserde.workspace = true\nserde_json.workspace = true\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("src/lib.rs"), code).unwrap();
        members.push(format!("{name:?}"));
    }
    // The example plugins' workspace settings, so every dependency is already built.
    let plugins = std::fs::read_to_string(root.join("plugins/Cargo.toml")).unwrap();
    let profile = &plugins[plugins.find("[profile.release]").expect("the plugins' release profile")..];
    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"3\"\nmembers = [{}]\n\n[workspace.dependencies]\ntoolhost-sdk = {{ path = {:?} }}\n\
             serde = {{ version = \"1\", features = [\"derive\"] }}\nserde_json = \"1\"\n\n{profile}",
            members.join(", "),
            root.join("plugin-sdk").display().to_string()
        ),
    )
    .unwrap();
    std::fs::copy(root.join("plugins/Cargo.lock"), ws.join("Cargo.lock")).unwrap();
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(&ws)
        .args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(root.join("target/plugins-build"));
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let legend: Vec<String> = examples
            .iter()
            .enumerate()
            .map(|(i, (doc, line, _))| format!("doc_example_{i} = {doc} line {line}"))
            .collect();
        panic!("a Rust example of the docs does not build ({}):\n{stderr}", legend.join(", "));
    }
}

/// What an illustrative block says before it: `<!-- illustrative: REASON -->`, with a reason.
fn illustrative(text: &str, b: &Block) -> Option<String> {
    let line = line_before(text, b);
    let reason = line.strip_prefix("<!-- illustrative:")?.strip_suffix("-->")?.trim().to_string();
    (!reason.is_empty()).then_some(reason)
}

/// A scratch folder as a reader of the book has it: `target/plugins` holding the Rust example
/// plugins, an empty `scratch/` workspace, `toolhost` on the PATH (a shell function).
struct Scratch {
    dir: tempfile::TempDir,
    _env: crate::support::Env,
}

impl Scratch {
    fn new() -> Scratch {
        use plugin_artifacts::{FILES, SYSTEM, TEXT, WEB};
        let env = crate::support::Env::with(&[FILES, TEXT, WEB, SYSTEM]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::os::unix::fs::symlink(env.plugins.path(), dir.path().join("target/plugins")).unwrap();
        std::fs::create_dir(dir.path().join("scratch")).unwrap();
        Scratch { dir, _env: env }
    }

    /// Runs `script` with `sh` in the folder: its exit status and its output (stdout and stderr
    /// as they interleave).
    fn run(&self, script: &str) -> (bool, String) {
        let full = format!("toolhost() {{ '{BIN}' \"$@\"; }}\nexec 2>&1\n{script}\n");
        // `setsid`: no controlling terminal, so nothing asks on `/dev/tty` (as for a reader
        // whose stdin is not a terminal, the examples say what happens with no one to ask).
        // `timeout`: an example that does not return (a server) fails instead of hanging.
        let out = Command::new("setsid")
            .args(["timeout", &EXAMPLE_TIMEOUT_S.to_string(), "sh", "-c"])
            .arg(&full)
            .current_dir(self.dir.path())
            .env("XDG_CACHE_HOME", cache_home())
            .env("XDG_CONFIG_HOME", self.dir.path().join(".config"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let mut printed = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.code() == Some(124) {
            printed.push_str(&format!("\n(still running after {EXAMPLE_TIMEOUT_S} s: stopped)"));
        }
        (out.status.success(), printed)
    }
}

/// Whether `actual` is what a `console` block shows: line by line, trailing spaces ignored; a
/// shown line ending in `…` matches any line starting with what comes before it, and a line that
/// is only `…` matches any number of lines.
fn matches(shown: &[&str], actual: &[&str]) -> bool {
    match (shown.split_first(), actual.split_first()) {
        (None, None) => true,
        (Some((s, rest)), _) if s.trim() == "…" => (0..=actual.len()).any(|k| matches(rest, &actual[k..])),
        (Some((s, srest)), Some((a, arest))) => {
            let (s, a) = (s.trim_end(), a.trim_end());
            let same = match s.strip_suffix('…') {
                Some(prefix) => a.starts_with(prefix),
                None => s == a,
            };
            same && matches(srest, arest)
        }
        _ => false,
    }
}

/// A `console` block's commands (`$ …`) with the lines shown after each.
fn console_steps(text: &str) -> Vec<(String, Vec<&str>)> {
    let mut steps: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("$ ") {
            Some(cmd) => steps.push((cmd.to_string(), Vec::new())),
            None => match steps.last_mut() {
                Some((_, shown)) => shown.push(line),
                None => panic!("a console block starts with `{line}`, not a `$ ` command"),
            },
        }
    }
    for (_, shown) in &mut steps {
        while shown.last().is_some_and(|l| l.trim().is_empty()) {
            shown.pop();
        }
    }
    steps
}

/// Why one shell block fails, or `None` when it runs as shown.
fn run_shell_block(lang: &str, text: &str) -> Option<String> {
    let scratch = Scratch::new();
    if lang == "console" {
        for (cmd, shown) in console_steps(text) {
            // `$ cat FILE` shows a file the reader has (a model's reply, a config): the test
            // writes it as shown, then runs the `cat` like the rest.
            if let Some(file) = cmd.strip_prefix("cat ").filter(|f| !f.contains([' ', '/', '>', '|']))
                && !scratch.dir.path().join(file).exists()
            {
                std::fs::write(scratch.dir.path().join(file), shown.join("\n") + "\n").unwrap();
            }
            let (_, out) = scratch.run(&cmd);
            let mut actual: Vec<&str> = out.lines().collect();
            while actual.last().is_some_and(|l| l.trim().is_empty()) {
                actual.pop();
            }
            if !matches(&shown, &actual) {
                return Some(format!("`$ {cmd}` printed:\n{out}\nthe block shows:\n{}", shown.join("\n")));
            }
        }
        None
    } else {
        let (ok, out) = scratch.run(&format!("set -e\n{text}"));
        (!ok).then(|| format!("it fails:\n{out}"))
    }
}

/// Every shell example of the docs either runs as shown or says why it is only illustrative.
#[test]
fn every_shell_example_runs_as_shown_or_is_marked_illustrative() {
    let mut ran = Vec::new();
    let mut marked = 0;
    let mut failures = Vec::new();
    for doc in docs() {
        let (bs, _) = blocks(&doc.text).unwrap();
        for b in &bs {
            let (lang, _) = info(b);
            // A transcript (`$ command` lines) in a block of another kind would escape the test.
            if !SHELLS.contains(&lang) {
                assert!(
                    !b.text.lines().any(|l| l.starts_with("$ ")),
                    "{} line {}: a {lang} block shows `$ ` commands: make it a console block",
                    doc.name,
                    b.line
                );
                continue;
            }
            if illustrative(&doc.text, b).is_some() {
                marked += 1;
                continue;
            }
            if ran.contains(&b.text) {
                continue;
            }
            ran.push(b.text.clone());
            if let Some(why) = run_shell_block(lang, &b.text) {
                failures.push(format!(
                    "{} line {}: the {lang} example {why}\n(mark a block that cannot run offline with `<!-- illustrative: REASON -->` on the line before it)",
                    doc.name, b.line
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran.len() >= 5, "only {} shell examples run ({marked} illustrative)", ran.len());
}

#[test]
fn the_console_matcher_follows_its_rules() {
    assert!(matches(&["a", "b"], &["a", "b  "]));
    assert!(!matches(&["a", "b"], &["a", "c"]));
    assert!(!matches(&["a"], &["a", "b"]));
    assert!(matches(&["a…", "…"], &["abc", "x", "y"]));
    assert!(matches(&["…", "z"], &["x", "y", "z"]));
    assert!(!matches(&["…", "z"], &["x", "y"]));
    assert_eq!(unhide("# mod m {\n    # fn f() {}\nx\n#\n"), "mod m {\n    fn f() {}\nx\n\n");
}

/// The quoted messages of the troubleshooting chapter: every line of its `text` blocks, `…`
/// standing for what varies.
fn troubleshooting_messages() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("docs/src/troubleshooting.md")).unwrap();
    let (bs, _) = blocks(&text).unwrap();
    bs.iter()
        .filter(|b| b.lang == "text")
        .flat_map(|b| b.text.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The source of the host and the SDKs, with string literals split over lines joined (Rust's
/// `\` continuations, Python's adjacent literals, JavaScript's `+`) and escapes undone, so a
/// message reads as it prints.
fn message_source() -> String {
    let root = root();
    let mut files = Vec::new();
    let mut pending = vec![root.join("host"), root.join("plugin-sdk")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if !["node_modules", "target", "__pycache__", "tests", "test"].contains(&name.as_str()) {
                    pending.push(path);
                }
            } else if [".rs", ".py", ".mjs", ".js"].iter().any(|e| name.ends_with(e)) {
                files.push(path);
            }
        }
    }
    let mut out = String::new();
    for f in files {
        let src = std::fs::read_to_string(&f).unwrap_or_default();
        let mut joined = String::new();
        let mut lines = src.lines().peekable();
        while let Some(line) = lines.next() {
            let mut line = line.to_string();
            loop {
                let t = line.trim_end().to_string();
                let cont = t.ends_with('\\')
                    || ((t.ends_with('"') || t.ends_with('\'') || t.ends_with('`') || t.ends_with('+'))
                        && lines.peek().is_some_and(|n| {
                            let n = n.trim_start();
                            n.starts_with('"')
                                || n.starts_with("f\"")
                                || n.starts_with('\'')
                                || n.starts_with('`')
                                || n.starts_with('+')
                        }));
                if !cont {
                    break;
                }
                let Some(next) = lines.next() else { break };
                if let Some(head) = t.strip_suffix('\\') {
                    // Rust: the line break and the next line's indentation are not in the string.
                    line = format!("{head}{}", next.trim_start());
                    continue;
                }
                let head = t.trim_end_matches('+').trim_end();
                let head = head.strip_suffix(['"', '\'', '`']).unwrap_or(head);
                let n = next.trim_start().trim_start_matches('+').trim_start();
                let n = n.strip_prefix("f\"").or_else(|| n.strip_prefix(['"', '\'', '`'])).unwrap_or(n);
                line = format!("{head}{n}");
            }
            joined.push_str(&line);
            joined.push('\n');
        }
        out.push_str(&joined.replace("\\\"", "\"").replace("\\`", "`").replace("{{", "{").replace("}}", "}"));
    }
    out
}

/// Every message the troubleshooting chapter quotes is still printed by the code: each piece
/// between its `…` is in the source of the host or an SDK. A reworded message fails this test
/// until the chapter says what the code says.
#[test]
fn every_troubleshooting_message_is_still_in_the_source() {
    let messages = troubleshooting_messages();
    assert!(messages.len() >= 15, "only {} messages quoted", messages.len());
    let source = message_source();
    let mut missing = Vec::new();
    for m in &messages {
        for piece in m.split('…').map(str::trim).filter(|p| p.chars().count() >= 4) {
            if !source.contains(piece) {
                missing.push(format!("`{piece}` (of: {m})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/src/troubleshooting.md quotes messages the code no longer prints:\n{}",
        missing.join("\n")
    );
}

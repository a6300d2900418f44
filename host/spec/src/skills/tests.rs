//! The skills section's cases: each rule broken (at build and at load), paths that would escape
//! their folder, front matter, round trips, and a section embedded into and read from a
//! component.

use super::*;

const MD: &str = "---\nname: git-flow\ndescription: Follow the team's Git conventions.\n---\n# Git flow\n";

fn file(path: &str, bytes: &[u8]) -> SkillFile {
    SkillFile { path: path.into(), bytes: bytes.to_vec() }
}

fn md(name: &str, frontmatter: &str) -> SkillFile {
    file(&format!("{name}/SKILL.md"), format!("---\n{frontmatter}\n---\nbody\n").as_bytes())
}

fn valid() -> SkillsSection {
    SkillsSection {
        files: vec![
            file("git-flow/SKILL.md", MD.as_bytes()),
            file("git-flow/img/a.png", &[0x89, b'P', b'N', b'G', 0, 1, 2]),
            file("git-flow/notes.txt", b"plain"),
        ],
    }
}

fn decoded(section: &SkillsSection) -> Result<SkillsSection, SkillsError> {
    decode(&encode(section))
}

fn refused(section: SkillsSection) -> String {
    decoded(&section).unwrap_err().to_string()
}

/// A component with a core module nested in it, the module holding `custom` sections (as the
/// Rust SDK's macro places its sections).
fn component_with_nested(custom: &[(&str, &[u8])]) -> Vec<u8> {
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    for (name, data) in custom {
        wasm_encoder::Section::append_to(
            &wasm_encoder::CustomSection { name: (*name).into(), data: (*data).into() },
            &mut module,
        );
    }
    let mut out = b"\0asm\x0d\0\x01\0".to_vec();
    out.push(1); // a core module section
    leb(&mut out, module.len());
    out.extend_from_slice(&module);
    out
}

fn leb(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        out.push(if n == 0 { b } else { b | 0x80 });
        if n == 0 {
            break;
        }
    }
}

#[test]
fn a_section_round_trips_with_text_and_binary_files() {
    let s = valid();
    let json: Value = serde_json::from_slice(&encode(&s)).unwrap();
    assert_eq!(json["format"], 1);
    assert_eq!(json["files"][0]["text"], MD);
    assert!(json["files"][1].get("text").is_none(), "NUL: written as base64");
    assert!(json["files"][1]["base64"].is_string());
    assert_eq!(json["files"][2]["text"], "plain");
    assert_eq!(decoded(&s).unwrap(), s);
    let empty = SkillsSection::default();
    assert_eq!(decoded(&empty).unwrap(), empty);
}

#[test]
fn skills_are_grouped_with_their_front_matter() {
    let mut s = valid();
    s.files.push(file(
        "alpha/SKILL.md",
        b"---\nname: alpha\ndescription: |\n  Two\n  lines.\nmetadata:\n  version: \"2.1\"\n  n: 3\n  f: 1.5\n  neg: -2\n  list: [a, true, null]\n---\nbody",
    ));
    s.files.push(file("alpha/a.md", b"a"));
    let skills = skills(&decoded(&s).unwrap()).unwrap();
    assert_eq!(skills.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["alpha", "git-flow"]);
    let alpha = &skills[0];
    assert_eq!(alpha.description, "Two\nlines.\n");
    assert_eq!(
        Value::Object(alpha.frontmatter.clone()),
        serde_json::json!({"name": "alpha", "description": "Two\nlines.\n",
            "metadata": {"version": "2.1", "n": 3, "f": 1.5, "neg": -2, "list": ["a", true, null]}})
    );
    let paths: Vec<&str> = skills[1].files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["SKILL.md", "img/a.png", "notes.txt"], "SKILL.md first, then by path");
    assert_eq!(alpha.files[0].path, "SKILL.md");
}

#[test]
fn paths_that_escape_or_hide_are_refused() {
    for (path, says) in [
        ("../x/SKILL.md", "starting with `.`"),
        ("git-flow/../../etc/passwd", "starting with `.`"),
        ("git-flow/./a", "starting with `.`"),
        ("/abs/SKILL.md", "is absolute"),
        ("git-flow/a\\b", "`\\`"),
        ("git-flow//a", "empty segment"),
        ("git-flow/a/", "empty segment"),
        ("git-flow/.hidden", "starting with `.`"),
        ("git-flow/a b", "other than letters"),
        ("git-flow/é", "other than letters"),
    ] {
        let mut s = valid();
        s.files.push(file(path, b"x"));
        let e = refused(s);
        assert!(e.contains(path) && e.contains(says), "{path}: {e}");
    }
    let long = format!("git-flow/{}", "a".repeat(MAX_PATH_BYTES));
    let mut s = valid();
    s.files.push(file(&long, b"x"));
    assert!(refused(s).contains("at most 255"));
}

#[test]
fn folders_names_and_duplicates_are_checked() {
    let mut s = valid();
    s.files.push(file("git-flow/notes.txt", b"again"));
    assert_eq!(refused(s), "skill file `git-flow/notes.txt` appears twice");
    let mut s = valid();
    s.files.push(file("README.md", b"x"));
    assert!(refused(s).contains("`README.md` is not inside a skill's folder"));
    let mut s = valid();
    s.files.push(file("git-flow/sub/SKILL.md", MD.as_bytes()));
    assert!(refused(s).contains("nested skills are not supported"));
    let mut s = valid();
    s.files.push(file("other/readme.md", b"x"));
    assert_eq!(refused(s), "skill `other` has no `SKILL.md` at the root of its folder");
    for bad in ["Git-Flow", "git--flow", "-git", "git-", "git_flow", &"a".repeat(65)] {
        let e = refused(SkillsSection { files: vec![md(bad, &format!("name: {bad}\ndescription: d"))] });
        assert!(e.contains(&format!("skill folder `{bad}`")), "{bad}: {e}");
    }
    assert!(
        decoded(&SkillsSection {
            files: vec![md(&"a".repeat(64), &format!("name: {}\ndescription: d", "a".repeat(64)))]
        })
        .is_ok()
    );
    let e = refused(SkillsSection { files: vec![md("alpha", "name: beta\ndescription: d")] });
    assert!(e.contains("`name` is \"beta\", but the skill's folder is `alpha`"), "{e}");
}

#[test]
fn caps_are_kept() {
    let many: Vec<SkillFile> =
        (0..=MAX_SKILLS).map(|i| md(&format!("s{i}"), &format!("name: s{i}\ndescription: d"))).collect();
    assert!(refused(SkillsSection { files: many }).contains("17 skills; at most 16"));
    let mut s = valid();
    s.files.extend((0..MAX_FILES_PER_SKILL).map(|i| file(&format!("git-flow/f{i}"), b"x")));
    assert!(refused(s).contains("skill `git-flow` has 67 files; at most 64"));
    let mut s = valid();
    s.files.push(file("git-flow/big.txt", &vec![b'a'; MAX_FILE_BYTES + 1]));
    assert!(refused(s).contains("`git-flow/big.txt` is 262145 bytes"));
    assert!(matches!(decode(&vec![b' '; MAX_SECTION_BYTES + 1]), Err(SkillsError::SectionTooLarge(_))));
}

#[test]
fn front_matter_is_checked() {
    let with = |fm: &str| SkillsSection { files: vec![md("alpha", fm)] };
    for (fm, says) in [
        ("name: alpha", "has no `description`"),
        ("description: d", "has no `name`"),
        ("name: alpha\ndescription: 3", "`description` must be a string"),
        ("name: alpha\ndescription: \"\"", "must not be empty"),
        ("name: alpha\ndescription: \"a\\u0007b\"", "U+0007"),
        ("- a\n- b", "must be a YAML mapping"),
        ("name: alpha\ndescription: d\n1: x", "key that is not a string"),
        ("name: alpha\ndescription: d\nx: .nan", "JSON cannot hold"),
        ("name: alpha\ndescription: d\nx: [.inf]", "JSON cannot hold"),
        ("name: alpha\ndescription: d\nx: !custom 1", "tagged value"),
        ("name: alpha\ndescription: d\nname: again", "not valid YAML"),
        ("name: [unclosed", "not valid YAML"),
    ] {
        let e = refused(with(fm));
        assert!(e.contains("alpha/SKILL.md") && e.contains(says), "{fm}: {e}");
    }
    let long = format!("name: alpha\ndescription: {}", "é".repeat(MAX_DESCRIPTION));
    assert!(decoded(&with(&long)).is_ok(), "1024 characters");
    let long = format!("name: alpha\ndescription: {}", "é".repeat(MAX_DESCRIPTION + 1));
    assert!(refused(with(&long)).contains("1025 characters"));
    let big = format!("name: alpha\ndescription: d\nx: \"{}\"", "a".repeat(MAX_FRONTMATTER_BYTES));
    assert!(refused(with(&big)).contains("at most 16384"));
    for text in ["no front matter", "---\nname: alpha\ndescription: d\n", "--- \nname: alpha\n---\n"] {
        let e = refused(SkillsSection { files: vec![file("alpha/SKILL.md", text.as_bytes())] });
        assert!(e.contains("front matter is"), "{text}: {e}");
    }
    // CRLF line ends, and a closing line at the very end.
    let crlf = "---\r\nname: alpha\r\ndescription: d\r\n---";
    assert!(decoded(&SkillsSection { files: vec![file("alpha/SKILL.md", crlf.as_bytes())] }).is_ok());
    // An alias bomb stays small: refused, or expanded within serde_norway's limits.
    let bomb = "name: alpha\ndescription: d\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f]";
    assert!(refused(with(bomb)).contains("not valid YAML"));
}

#[test]
fn the_json_is_read_strictly() {
    for (json, says) in [
        (r#"[]"#, "must be a JSON object"),
        (r#"{"files": []}"#, "`format`: missing"),
        (r#"{"format": 2, "files": []}"#, "unknown format version 2"),
        (r#"{"format": 1, "files": [], "more": 1}"#, "unknown field `more`"),
        (r#"{"format": 1, "files": [{"path": "a/SKILL.md"}]}"#, "exactly one of"),
        (r#"{"format": 1, "files": [{"path": "a/SKILL.md", "text": "", "base64": ""}]}"#, "exactly one of"),
        (r#"{"format": 1, "files": [{"path": "a/x", "base64": "***"}]}"#, "files[0].base64"),
        (r#"{"format": 1, "files": [{"path": "a/x", "text": "a\u0000b"}]}"#, "holds NUL"),
        (r#"{"format": 1, "files": [{"path": "a/x", "text": "t", "mode": 1}]}"#, "unknown field `mode`"),
        ("nope", "not valid JSON"),
    ] {
        let e = decode(json.as_bytes()).unwrap_err().to_string();
        assert!(e.contains(says), "{json}: {e}");
    }
}

#[test]
fn a_section_is_embedded_and_read_back_from_a_component() {
    let plain = component_with_nested(&[("toolhost-manifest", b"{}")]);
    assert!(read(&plain).unwrap().is_none(), "no section: no skills");
    let s = valid();
    let with = embed(&plain, &s).unwrap();
    assert_eq!(read(&with).unwrap(), Some(s.clone()));
    assert!(matches!(embed(&with, &s), Err(SkillsError::AlreadyEmbedded)));
    // Inside a nested module, as the Rust SDK places it.
    let nested = component_with_nested(&[(SECTION, &encode(&s))]);
    assert_eq!(read(&nested).unwrap(), Some(s.clone()));
    // Two sections, anywhere, are refused.
    let mut twice = nested.clone();
    wasm_encoder::Section::append_to(
        &wasm_encoder::CustomSection { name: SECTION.into(), data: encode(&s).as_slice().into() },
        &mut twice,
    );
    assert!(matches!(read(&twice), Err(SkillsError::Duplicate(2))));
    // A bad section is refused when read, and cannot be embedded.
    let mut bad = valid();
    bad.files.push(file("../x", b"x"));
    assert!(matches!(embed(&plain, &bad), Err(SkillsError::Path { .. })));
    let broken = component_with_nested(&[(SECTION, &encode(&bad))]);
    assert!(read(&broken).unwrap_err().to_string().contains("`../x`"));
    assert!(matches!(read(b"\0asm\x01\0\0\0"), Err(SkillsError::NotComponent(_))));
}

#[test]
fn a_folder_is_collected_sorted_without_hidden_files_or_links() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("git-flow/img")).unwrap();
    std::fs::write(root.join("git-flow/SKILL.md"), MD).unwrap();
    std::fs::write(root.join("git-flow/notes.txt"), "plain").unwrap();
    std::fs::write(root.join("git-flow/img/a.png"), [0x89, b'P', b'N', b'G', 0, 1, 2]).unwrap();
    std::fs::write(root.join("git-flow/.DS_Store"), "x").unwrap();
    // An editor's backup and autosave beside the file being edited.
    std::fs::write(root.join("git-flow/SKILL.md~"), "old").unwrap();
    std::fs::write(root.join("git-flow/#SKILL.md#"), "autosave").unwrap();
    let s = collect_dir(root).unwrap();
    let paths: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["git-flow/SKILL.md", "git-flow/img/a.png", "git-flow/notes.txt"]);
    assert_eq!(s, valid());

    std::fs::write(root.join("git-flow/bad name.txt"), "x").unwrap();
    let e = collect_dir(root).unwrap_err().to_string();
    assert!(e.contains("`git-flow/bad name.txt`"), "{e}");
    std::fs::remove_file(root.join("git-flow/bad name.txt")).unwrap();

    std::fs::write(root.join("git-flow/big.bin"), vec![0u8; MAX_FILE_BYTES + 1]).unwrap();
    assert!(matches!(collect_dir(root), Err(SkillsError::FileTooLarge { .. })));
    std::fs::remove_file(root.join("git-flow/big.bin")).unwrap();

    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc/passwd", root.join("git-flow/link")).unwrap();
        let e = collect_dir(root).unwrap_err();
        assert!(matches!(&e, SkillsError::Symlink(p) if p.ends_with("git-flow/link")), "{e}");
        std::fs::remove_file(root.join("git-flow/link")).unwrap();
    }
    std::fs::create_dir(root.join("loose")).unwrap();
    std::fs::write(root.join("loose/readme.md"), "x").unwrap();
    assert!(matches!(collect_dir(root), Err(SkillsError::NoSkillMd(s)) if s == "loose"));
    assert!(matches!(collect_dir(&root.join("missing")), Err(SkillsError::Io { .. })));
}

#[test]
fn mime_types_and_text() {
    assert_eq!(mime_type("SKILL.md"), "text/markdown");
    assert_eq!(mime_type("img/A.PNG"), "image/png");
    assert_eq!(mime_type("Makefile"), "application/octet-stream");
    assert!(is_textual("text/x-python") && is_textual("application/json"));
    assert!(!is_textual("image/png"));
}

#[test]
fn instructions_are_what_follows_the_front_matter() {
    assert_eq!(instructions("---\nname: a\ndescription: b\n---\n# Use it\nwell\n"), "# Use it\nwell\n");
    assert_eq!(instructions("---\r\nname: a\r\n---\r\nbody"), "body");
    // The closing line is the first `---` line; a later one is the body's.
    assert_eq!(instructions("---\nname: a\n---\n---\nrule\n"), "---\nrule\n");
    assert_eq!(instructions("no front matter"), "no front matter");
    assert_eq!(instructions("---\nname: a\nnever closed\n"), "---\nname: a\nnever closed\n");
}

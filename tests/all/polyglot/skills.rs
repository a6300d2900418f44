//! Skills travel in the component (issue #58): the Rust macro embeds a crate's `skills/`
//! (the `files` example ships one), `toolhost build` and `toolhost dev` embed a Python or
//! JavaScript project's, a file added to a Rust crate's `skills/` is in its next build, and a
//! change under `skills/` counts as a source for `toolhost dev`.

use super::{BUILD_LOCK, js, py, toolchains, toolhost_cli};
use crate::support::root;
use std::path::Path;
use toolhost::project::{Lang, Project};
use toolhost_spec::skills::{self, SkillsSection};

const SKILL: &str =
    "---\nname: tidy\ndescription: Keep the workspace tidy.\n---\n\n# Tidy\n\nSee references/rules.md.\n";

/// Write `files` (path relative to `dir`, text) into `dir`.
fn write(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// The skills section a component carries, which must be there.
fn section_of(wasm: &[u8]) -> SkillsSection {
    skills::read(wasm).expect("a readable skills section").expect("a skills section")
}

/// The files of a section as `(path, text)`.
fn files(section: &SkillsSection) -> Vec<(String, String)> {
    section.files.iter().map(|f| (f.path.clone(), String::from_utf8_lossy(&f.bytes).into_owned())).collect()
}

/// The example `files` plugin (built by the macro, no toolchain) carries its
/// `workspace-files` skill: every file of `plugins/files/skills`, byte for byte.
#[test]
fn the_files_plugins_artifact_carries_its_skill() {
    let wasm = std::fs::read(plugin_artifacts::FILES).unwrap();
    let section = section_of(&wasm);
    let dir = root().join("plugins/files/skills");
    assert_eq!(section, skills::collect_dir(&dir).unwrap(), "the artifact's skills are not the folder's");
    let all = skills::skills(&section).unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    let skill = &all[0];
    assert_eq!(skill.name, "workspace-files");
    assert!(skill.description.contains("files plugin"), "{}", skill.description);
    let paths: Vec<&str> = skill.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["SKILL.md", "references/errors.md"]);
    // It names the plugin's tools, which must exist.
    let manifest = toolhost_spec::manifest::read(&wasm).unwrap();
    let text = String::from_utf8(skill.files[0].bytes.clone()).unwrap();
    for tool in &manifest.tools {
        assert!(text.contains(&format!("`{}(", tool.name)), "the skill does not teach `{}`", tool.name);
    }
}

/// A Rust crate made by `toolhost new` with a `skills/` folder: `toolhost build` gives a
/// component whose skills are the folder's, and a file *added* to the folder (which cargo
/// alone would not see) is in the next build.
#[test]
fn a_rust_crates_skills_follow_the_folder_from_build_to_build() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost_cli(dir.path(), &["new", "skilled", "--lang", "rust"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let project = dir.path().join("skilled");
    write(&project, &[("skills/tidy/SKILL.md", SKILL)]);
    let build = || {
        let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let out = toolhost_cli(dir.path(), &["build", "skilled", "--no-test", "-o", "skilled.wasm"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.contains("; 1 skill: tidy)"), "{stderr}");
        section_of(&std::fs::read(dir.path().join("skilled.wasm")).unwrap())
    };
    assert_eq!(files(&build()), [("tidy/SKILL.md".to_string(), SKILL.to_string())]);
    write(&project, &[("skills/tidy/references/rules.md", "Keep it short.\n")]);
    let paths: Vec<String> = build().files.into_iter().map(|f| f.path).collect();
    assert_eq!(paths, ["tidy/SKILL.md", "tidy/references/rules.md"]);
    // A rule broken: the build fails naming the file (the macro's compile error).
    write(&project, &[("skills/tidy/SKILL.md", "---\nname: messy\ndescription: d\n---\n")]);
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = toolhost_cli(dir.path(), &["build", "skilled", "--no-test", "-o", "skilled.wasm"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("tidy/SKILL.md") && stderr.contains("messy"),
        "{stderr}"
    );
}

/// `toolhost build` of a Python and of a JavaScript project embeds its `skills/` after the
/// manifest (every file, a skill's `scripts/test_*.py` too: it is not one of the project's
/// tests); the build cache's copy carries them too; the dev build installs them; and an edit
/// under `skills/` is a source change for `toolhost dev`.
#[test]
fn python_and_js_builds_and_dev_builds_carry_the_projects_skills() {
    // The examples' builds installed the toolchains (no concurrent first install).
    let _ = (py(), js());
    let skill_files = [
        ("skills/tidy/SKILL.md", SKILL),
        ("skills/tidy/references/rules.md", "Keep it short.\n"),
        ("skills/tidy/scripts/test_layout.py", "print('a script of the skill')\n"),
    ];
    for lang in [Lang::Python, Lang::Js] {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("skilled-{lang}");
        let project = toolhost::project::scaffold::create(dir.path(), &name, lang, None).unwrap();
        write(&project, &skill_files);
        let p = Project::locate(&project).unwrap();
        let wanted = skills::collect_dir(&project.join("skills")).unwrap();
        assert_eq!(wanted.files.len(), 3);
        let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let built = p.build(&toolchains()).unwrap_or_else(|e| panic!("building {name}: {e:#}"));
        assert_eq!(section_of(&built.bytes), wanted, "{lang}: the built component's skills");
        assert_eq!(toolhost_spec::manifest::read(&built.bytes).unwrap(), built.manifest);
        let again = p.build(&toolchains()).unwrap();
        assert!(again.cached, "{lang}: the second build is the cached one");
        assert_eq!(section_of(&again.bytes), wanted, "{lang}: the cached build's skills");

        let plugins = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let installed = p.dev_install(&toolchains(), plugins.path(), scratch.path(), &|_| Ok(())).unwrap();
        let toolhost::project::dev::DevInstall::Installed { to, .. } = installed else {
            panic!("{lang}: no dev build: {installed:?}")
        };
        assert_eq!(section_of(&std::fs::read(&to).unwrap()), wanted, "{lang}: the dev build's skills");
        assert!(p.is_source(&project.join("skills/tidy/SKILL.md")), "{lang}");
        assert!(p.is_source(&project.join("skills/tidy/scripts/test_layout.py")), "{lang}");
        assert!(!p.is_source(&project.join("skills/tidy/.SKILL.md.swp")), "{lang}");
    }
}

//! A project's `skills/` folder (issue #58): collected with the host's rules
//! ([`toolhost_spec::skills`]) and carried in the component as its `toolhost-skills` section.
//!
//! Who embeds it depends on the language. A Python or JavaScript component comes out of its
//! toolchain bare, so `toolhost build` and `toolhost dev` embed the section after the manifest,
//! as they embed the manifest. A Rust crate's `#[toolhost_sdk::plugin]` macro embeds it while
//! compiling; the host checks that the copy is the folder's and never appends a second one.
//! One thing the macro cannot see is a file *added* to `skills/` (cargo tracks the files it
//! read, not the folder), so the Rust build passes a stamp of the folder's file list in
//! [`STAMP_ENV`]: the macro reads it with `option_env!`, and cargo rebuilds the crate when it
//! changes.

use anyhow::{Result, anyhow, bail};
use sha2::{Digest, Sha256};
use std::path::Path;
use toolhost_spec::skills::{self, SkillsSection};

/// The folder of a project that holds its skills (`skills/NAME/SKILL.md`).
pub const DIR: &str = "skills";

/// The variable the Rust build sets to [`stamp`]; the SDK's macro names the same one
/// (`plugin-sdk/macros/src/skills.rs`).
pub const STAMP_ENV: &str = "TOOLHOST_SKILLS_STAMP";

/// The skills in `project/skills`, with the host's rules applied (front matter included);
/// `None` when the project has no such folder. Errors name the folder and the file.
pub fn collect(project: &Path) -> Result<Option<SkillsSection>> {
    let dir = project.join(DIR);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(None);
    }
    let problem = |e: skills::SkillsError| anyhow!("the skills in {}: {e}", dir.display());
    let section = skills::collect_dir(&dir).map_err(problem)?;
    skills::skills(&section).map_err(problem)?;
    Ok(Some(section))
}

/// Whether `rel` (a path relative to the project) is in its skills folder: every file there
/// goes into the plugin, whatever its kind.
pub fn is_skill_file(rel: &Path) -> bool {
    rel.starts_with(DIR)
}

/// `component` with `section` embedded and read back, or `component` itself when it already
/// carries exactly these skills (a Rust crate's macro put them there). A component carrying
/// other skills is refused: two copies would disagree.
pub fn embed(component: Vec<u8>, section: &SkillsSection) -> Result<Vec<u8>> {
    match skills::read(&component).map_err(|e| anyhow!("the built component's skills: {e}"))? {
        Some(have) if &have == section => Ok(component),
        Some(_) => {
            bail!("the built component already carries skills that differ from the project's {DIR}/ folder")
        }
        None => skills::embed(&component, section).map_err(|e| anyhow!("cannot embed the skills: {e}")),
    }
}

/// Whether the skills `component` carries are not `wanted` (the project's folder, `None` when
/// it has none): a Rust build the macro made before the folder last changed.
pub fn stale(component: &[u8], wanted: Option<&SkillsSection>) -> Result<bool> {
    let have = skills::read(component).map_err(|e| anyhow!("the built component's skills: {e}"))?;
    Ok(have.as_ref() != wanted)
}

/// A short id of the files in `project/skills` (their paths, not their bytes: cargo already
/// tracks the bytes of every file the macro read), or `""` without the folder.
pub fn stamp(project: &Path) -> String {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = format!("{rel}/{name}");
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&e.path(), &path, out),
                _ => out.push(path),
            }
        }
    }
    let mut files = Vec::new();
    walk(&project.join(DIR), "", &mut files);
    if files.is_empty() {
        return String::new();
    }
    files.sort();
    let hash = Sha256::digest(files.join("\n").as_bytes());
    hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SKILL: &str = "---\nname: tidy\ndescription: Keep the workspace tidy.\n---\n\n# Tidy\n";

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    /// The smallest component: the preamble of a component (version 0x0d, layer 1).
    const COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    #[test]
    fn embedded_once_and_read_back() {
        let p = project(&[("skills/tidy/SKILL.md", SKILL), ("skills/tidy/ref.md", "more\n")]);
        let section = collect(p.path()).unwrap().expect("a skills folder");
        assert_eq!(section.files.len(), 2);
        assert!(stale(COMPONENT, Some(&section)).unwrap());
        assert!(!stale(COMPONENT, None).unwrap());
        let once = embed(COMPONENT.to_vec(), &section).unwrap();
        assert_eq!(skills::read(&once).unwrap().as_ref(), Some(&section));
        assert!(!stale(&once, Some(&section)).unwrap());
        // Already there (as the Rust macro leaves it): not appended again.
        assert_eq!(embed(once.clone(), &section).unwrap(), once);
        // Other skills there: refused.
        let other = project(&[("skills/tidy/SKILL.md", SKILL)]);
        let other = collect(other.path()).unwrap().unwrap();
        let e = embed(once, &other).unwrap_err().to_string();
        assert!(e.contains("differ from the project's skills/ folder"), "{e}");
    }

    #[test]
    fn no_folder_no_skills_and_a_broken_rule_names_the_file() {
        assert!(collect(project(&[("app.py", "")]).path()).unwrap().is_none());
        assert_eq!(stamp(project(&[("app.py", "")]).path()), "");
        let p = project(&[("skills/tidy/SKILL.md", "---\nname: other\ndescription: d\n---\n")]);
        let e = collect(p.path()).unwrap_err().to_string();
        assert!(e.contains("tidy/SKILL.md") && e.contains("other"), "{e}");
    }

    #[test]
    fn the_stamp_follows_the_file_list_not_the_bytes() {
        let p = project(&[("skills/tidy/SKILL.md", SKILL)]);
        let first = stamp(p.path());
        std::fs::write(p.path().join("skills/tidy/SKILL.md"), format!("{SKILL}edited\n")).unwrap();
        assert_eq!(stamp(p.path()), first);
        std::fs::write(p.path().join("skills/tidy/new.md"), "added\n").unwrap();
        assert_ne!(stamp(p.path()), first);
    }

    #[test]
    fn every_file_under_skills_is_a_skill_file() {
        assert!(is_skill_file(Path::new("skills/tidy/scripts/test_it.py")));
        assert!(!is_skill_file(Path::new("skillset/x.md")));
        assert!(!is_skill_file(Path::new("app.py")));
    }

    /// `toolhost dev` rebuilds on an edit under `skills/`, in every language; never for a
    /// dotfile (an editor's swap file) or another Markdown file of the project.
    #[test]
    fn an_edit_under_skills_is_a_source_change_for_dev() {
        use super::super::{Project, cargo::PluginCrate};
        let dir = Path::new("/p");
        let rust = Project::Rust(PluginCrate {
            manifest: dir.join("Cargo.toml"),
            name: "p".into(),
            target_dir: dir.join("target"),
        });
        let python = Project::Python { dir: dir.into() };
        let js = Project::Js { dir: dir.into() };
        for project in [rust, python, js] {
            for (rel, source) in [
                ("skills/tidy/SKILL.md", true),
                ("skills/tidy/img/a.png", true),
                ("skills/tidy/scripts/test_it.py", true),
                ("skills/tidy/.SKILL.md.swp", false),
                ("README.md", false),
            ] {
                assert_eq!(project.is_source(&dir.join(rel)), source, "{} {rel}", project.lang());
            }
        }
    }
}

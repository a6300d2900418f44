//! A loaded plugin's skills: its `toolhost-skills` section read (from the file, or from the
//! folder index's copy of it) and checked by the spec's rules, each file's digest, size and mime
//! type worked out once, when the plugin loads, for every listing and read after.

use super::LoadedPlugin;
use std::sync::Arc;
use toolhost_spec::skills::{self, SkillsError, is_textual, mime_type};

/// One skill of a loaded plugin.
#[derive(Debug, Clone)]
pub struct LoadedSkill {
    /// Its name: its folder's and its front matter's.
    pub name: String,
    /// Its front matter's `description`.
    pub description: String,
    /// Its front matter, YAML read as JSON, verbatim.
    pub frontmatter: Arc<serde_json::Map<String, serde_json::Value>>,
    /// Its files, `SKILL.md` first, then by path.
    pub files: Vec<SkillFile>,
}

/// One file of a skill, as served.
#[derive(Debug, Clone)]
pub struct SkillFile {
    /// Relative to its skill's folder, `/`-separated.
    pub path: String,
    /// Its contents (shared by every read: cloning is a reference count).
    pub bytes: Arc<[u8]>,
    /// `sha256:` and the 64 lowercase hex digits of its bytes.
    pub digest: String,
    /// Its mime type, by extension.
    pub mime: &'static str,
    /// Whether it is served as text (a textual mime type, UTF-8 without NUL) or as a blob.
    pub text: bool,
}

impl SkillFile {
    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Its text, when it is served as text.
    pub fn as_text(&self) -> Option<&str> {
        self.text.then(|| std::str::from_utf8(&self.bytes).ok()).flatten()
    }
}

impl LoadedSkill {
    /// Its size: its files' bytes together.
    pub fn size(&self) -> u64 {
        self.files.iter().map(SkillFile::size).sum()
    }

    /// A file by its path relative to the skill's folder.
    pub fn file(&self, path: &str) -> Option<&SkillFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// Its instructions: its `SKILL.md` after the front matter.
    pub fn instructions(&self) -> &str {
        let md = self.file(skills::SKILL_MD).map_or(&[][..], |f| &f.bytes[..]);
        skills::instructions(std::str::from_utf8(md).unwrap_or_default())
    }
}

/// The URI scheme of skill files (see [`uri`]).
pub const SCHEME: &str = "skill://";

/// The URI a plugin's skill file is served at, `skill://PLUGIN/SKILL/PATH`: the plugin's name is
/// the "server-chosen prefix" the skills extension allows, so two plugins never claim one URI.
pub fn uri(plugin: &str, skill: &str, path: &str) -> String {
    format!("{SCHEME}{plugin}/{skill}/{path}")
}

/// Every skill of `plugins`, by plugin name and then skill name.
pub fn all(plugins: &[Arc<LoadedPlugin>]) -> Vec<(&str, &LoadedSkill)> {
    let mut out: Vec<(&str, &LoadedSkill)> =
        plugins.iter().flat_map(|p| p.skills.iter().map(move |s| (&*p.name, s))).collect();
    out.sort_by(|a, b| (a.0, &a.1.name).cmp(&(b.0, &b.1.name)));
    out
}

/// Why a URI names no resource the host serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoResource {
    #[error("no resource {0}: the host serves skill files only ({SCHEME}PLUGIN/SKILL/FILE)")]
    NotASkill(String),
    #[error("no resource {0}: no loaded plugin has that skill file")]
    Unknown(String),
}

/// The file `uri` names among `plugins`' skills, with its plugin, or why there is none.
pub fn resource<'a>(
    plugins: &'a [Arc<LoadedPlugin>],
    uri: &str,
) -> Result<(&'a LoadedPlugin, &'a SkillFile), NoResource> {
    match find(plugins, uri) {
        Some((plugin, _, file)) => Ok((plugin, file)),
        None if !uri.starts_with(SCHEME) => Err(NoResource::NotASkill(uri.to_string())),
        None => Err(NoResource::Unknown(uri.to_string())),
    }
}

/// The plugin, skill and file a `skill://` URI names, if one of `plugins` serves it.
pub fn find<'a>(
    plugins: &'a [Arc<LoadedPlugin>],
    uri: &str,
) -> Option<(&'a LoadedPlugin, &'a LoadedSkill, &'a SkillFile)> {
    let (plugin, rest) = uri.strip_prefix(SCHEME)?.split_once('/')?;
    let (skill, path) = rest.split_once('/')?;
    let p = plugins.iter().find(|p| &*p.name == plugin)?;
    let s = p.skills.iter().find(|s| s.name == skill)?;
    Some((p, s, s.file(path)?))
}

/// A plugin's skills (empty: none).
pub type Skills = Arc<Vec<LoadedSkill>>;

/// The skills of `all` the operator's `[plugin.NAME] skills` selects (all when it has none).
pub(super) fn selected(all: Skills, exposure: &crate::catalog::settings::Exposure) -> Skills {
    if all.iter().all(|s| exposure.serves_skill(&s.name)) {
        return all;
    }
    Arc::new(all.iter().filter(|s| exposure.serves_skill(&s.name)).cloned().collect())
}

/// The skills of a plugin file's bytes, and the section's text for the folder index (`None`:
/// no section).
pub(super) fn from_file(bytes: &[u8]) -> Result<(Skills, Option<String>), SkillsError> {
    let found = toolhost_spec::sections::find_named(bytes, skills::SECTION)?;
    match found.as_slice() {
        [] => Ok((Arc::default(), None)),
        [one] => {
            let skills = from_section(one)?;
            Ok((skills, String::from_utf8(one.to_vec()).ok()))
        }
        more => Err(SkillsError::Duplicate(more.len())),
    }
}

/// The skills of a section's bytes (the spec's [`skills::decode`] and [`skills::skills`]).
pub fn from_section(section: &[u8]) -> Result<Skills, SkillsError> {
    let section = skills::decode(section)?;
    let loaded = skills::skills(&section)?
        .into_iter()
        .map(|s| LoadedSkill {
            name: s.name,
            description: s.description,
            frontmatter: Arc::new(s.frontmatter),
            files: s.files.into_iter().map(file).collect(),
        })
        .collect();
    Ok(Arc::new(loaded))
}

fn file(f: skills::SkillFile) -> SkillFile {
    let mime = mime_type(&f.path);
    let text = is_textual(mime) && std::str::from_utf8(&f.bytes).is_ok_and(|t| !t.contains('\0'));
    SkillFile {
        digest: format!("sha256:{}", toolhost_spec::digest::sha256_hex(&f.bytes)),
        path: f.path,
        bytes: f.bytes.into(),
        mime,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_spec::skills::{SkillFile as File, SkillsSection, encode};

    fn section(files: &[(&str, &[u8])]) -> Vec<u8> {
        encode(&SkillsSection {
            files: files.iter().map(|(p, b)| File { path: (*p).into(), bytes: b.to_vec() }).collect(),
        })
    }

    #[test]
    fn files_carry_digest_size_and_how_they_are_served() {
        let md = b"---\nname: alpha\ndescription: A skill.\n---\n# Alpha\n";
        let skills = from_section(&section(&[
            ("alpha/SKILL.md", md),
            ("alpha/img/a.png", &[0x89, b'P', b'N', b'G']),
            ("alpha/data.bin", b"text in a blob type"),
            ("alpha/nul.txt", b"a\0b"),
        ]))
        .unwrap();
        let alpha = &skills[0];
        assert_eq!((alpha.name.as_str(), alpha.description.as_str()), ("alpha", "A skill."));
        let paths: Vec<_> = alpha.files.iter().map(|f| (f.path.as_str(), f.mime, f.text)).collect();
        assert_eq!(
            paths,
            [
                ("SKILL.md", "text/markdown", true),
                ("data.bin", "application/octet-stream", false),
                ("img/a.png", "image/png", false),
                ("nul.txt", "text/plain", false),
            ]
        );
        let f = alpha.file("SKILL.md").unwrap();
        assert_eq!(f.digest, format!("sha256:{}", toolhost_spec::digest::sha256_hex(md)));
        assert_eq!(f.size(), md.len() as u64);
        assert_eq!(alpha.size(), (md.len() + 4 + 19 + 3) as u64);
    }

    #[test]
    fn a_bad_section_is_refused_naming_the_file() {
        let e =
            from_section(&section(&[("alpha/SKILL.md", b"no front matter"), ("../x", b"x")])).unwrap_err();
        assert!(e.to_string().contains("`../x`"), "{e}");
        assert!(from_file(b"\0asm\x0d\0\x01\0").unwrap().0.is_empty());
    }
}

//! A plugin's skills (MCP extension `io.modelcontextprotocol/skills`, SEP-2640): folders of files
//! — a `SKILL.md` with YAML front matter, and anything it refers to — embedded when the plugin
//! is built in a `toolhost-skills` custom section, and read without compiling or running it.
//!
//! The section is JSON, `{"format":1,"files":[{"path":"NAME/SKILL.md","text":"…"},
//! {"path":"NAME/img/a.png","base64":"…"}]}`, its paths relative to the project's `skills/`
//! folder. Only the files are written: the host derives everything else (each skill, its front
//! matter, digests, sizes, mime types) from them, so the pieces cannot disagree. The same
//! [`rules`] hold when a section is built ([`collect_dir`]) and when it is loaded ([`decode`]).
//!
//! A separate section rather than a manifest field: an older host refuses a manifest with a
//! field it does not know, but ignores a section it does not know, so a plugin with skills
//! still serves its tools there.

mod rules;
#[cfg(test)]
mod tests;

pub use rules::{
    MAX_DESCRIPTION, MAX_FILE_BYTES, MAX_FILES_PER_SKILL, MAX_FRONTMATTER_BYTES, MAX_PATH_BYTES,
    MAX_SECTION_BYTES, MAX_SKILL_NAME, MAX_SKILLS, SKILL_MD, instructions, is_skill_name, is_textual,
    mime_type, segment_problem,
};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Name of the custom section that holds a plugin's skills.
pub const SECTION: &str = "toolhost-skills";
/// The section's format version.
pub const FORMAT: u32 = 1;

/// The section as written: `{"format":1,"files":[…]}`, each file a path relative to the
/// project's `skills/` folder (`NAME/SKILL.md`, `NAME/img/a.png`) and its bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillsSection {
    /// Every file of every skill.
    pub files: Vec<SkillFile>,
}

/// One file: its path (`/`-separated) and its bytes. Written as `"text"` when the bytes are
/// UTF-8 without NUL, as `"base64"` otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Relative, `/`-separated: to `skills/` in a section, to the skill's folder in a [`Skill`].
    pub path: String,
    /// The file's contents.
    pub bytes: Vec<u8>,
}

/// One skill, as the host serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Its name: its folder's, and its front matter's `name`.
    pub name: String,
    /// Its front matter's `description`.
    pub description: String,
    /// Its whole front matter, converted from YAML to JSON (`name` and `description` included).
    pub frontmatter: serde_json::Map<String, Value>,
    /// Its files, paths relative to the skill's folder, `SKILL.md` first, then by path.
    pub files: Vec<SkillFile>,
}

/// What is wrong with a skills section, or with the folder it is built from. Each names the
/// file (relative to `skills/`), the skill or the field.
#[derive(Debug, thiserror::Error)]
pub enum SkillsError {
    /// The bytes are not a component.
    #[error(transparent)]
    NotComponent(#[from] crate::sections::NotComponent),
    /// More than one section.
    #[error("has {0} `{SECTION}` sections; at most one is allowed")]
    Duplicate(usize),
    /// [`embed`] into a component that has one.
    #[error("it already has a `{SECTION}` section")]
    AlreadyEmbedded,
    /// [`embed`] read back something else.
    #[error("the embedded `{SECTION}` section does not read back identically")]
    ReadBack,
    /// The section is larger than [`MAX_SECTION_BYTES`].
    #[error("the `{SECTION}` section is {0} bytes; at most {MAX_SECTION_BYTES} are allowed")]
    SectionTooLarge(usize),
    /// Not JSON, or not an object.
    #[error("the `{SECTION}` section is not valid JSON: {0}")]
    Json(String),
    /// A field of the section's JSON.
    #[error("the `{SECTION}` section's field `{field}`: {message}")]
    Field { field: String, message: String },
    /// A path that breaks the path rules (escaping its folder, hidden, too long, …).
    #[error("skill file `{path}`: {problem}")]
    Path { path: String, problem: String },
    /// The same path twice.
    #[error("skill file `{0}` appears twice")]
    DuplicatePath(String),
    /// A file at the top of `skills/`, in no skill's folder.
    #[error("skill file `{0}` is not inside a skill's folder (`skills/NAME/…`)")]
    NotInSkill(String),
    /// A `SKILL.md` below a skill's root.
    #[error(
        "skill file `{0}`: nested skills are not supported; `SKILL.md` belongs at the root of its skill's folder"
    )]
    Nested(String),
    /// A skill folder named against the name rule.
    #[error(
        "skill folder `{0}`: a skill's name is 1 to {MAX_SKILL_NAME} lowercase letters and digits, with single `-` between them"
    )]
    BadName(String),
    /// A skill folder without `SKILL.md`.
    #[error("skill `{0}` has no `SKILL.md` at the root of its folder")]
    NoSkillMd(String),
    /// More than [`MAX_SKILLS`] skills.
    #[error("{0} skills; at most {MAX_SKILLS} are allowed per plugin")]
    TooManySkills(usize),
    /// More than [`MAX_FILES_PER_SKILL`] files in one skill.
    #[error("skill `{skill}` has {count} files; at most {MAX_FILES_PER_SKILL} are allowed")]
    TooManyFiles { skill: String, count: usize },
    /// A file larger than [`MAX_FILE_BYTES`].
    #[error("skill file `{path}` is {size} bytes; at most {MAX_FILE_BYTES} are allowed")]
    FileTooLarge { path: String, size: u64 },
    /// A `SKILL.md` whose front matter cannot be read.
    #[error("skill file `{path}`: front matter {problem}")]
    Frontmatter { path: String, problem: String },
    /// A front matter `name` that is not the skill folder's.
    #[error("skill file `{path}`: front matter `name` is {found:?}, but the skill's folder is `{folder}`")]
    NameMismatch { path: String, found: String, folder: String },
    /// A description against the text rules.
    #[error("skill file `{path}`: front matter `description` {problem}")]
    Description { path: String, problem: String },
    /// A folder entry [`collect_dir`] does not follow.
    #[error("{}: a symbolic link; skills are read without following links", .0.display())]
    Symlink(PathBuf),
    /// A folder entry that is neither a file nor a folder, or not named in UTF-8.
    #[error("{}: not a regular file or folder with a UTF-8 name", .0.display())]
    NotAFile(PathBuf),
    /// Reading the skills folder.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

/// A file as written in the section.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base64: Option<String>,
}

/// The section as written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSection {
    format: u32,
    files: Vec<RawFile>,
}

/// The section's JSON bytes (not checked: [`decode`] them, or [`embed`], which reads them back).
pub fn encode(section: &SkillsSection) -> Vec<u8> {
    let files = section
        .files
        .iter()
        .map(|f| match std::str::from_utf8(&f.bytes) {
            Ok(text) if !text.contains('\0') => {
                RawFile { path: f.path.clone(), text: Some(text.to_string()), base64: None }
            }
            _ => RawFile {
                path: f.path.clone(),
                text: None,
                base64: Some(base64::engine::general_purpose::STANDARD.encode(&f.bytes)),
            },
        })
        .collect();
    serde_json::to_vec(&RawSection { format: FORMAT, files }).unwrap_or_default()
}

/// Read a section's JSON strictly: its size, then the format version (so a future format reads
/// as "unknown version" rather than as unknown fields), then the shape, unknown fields refused,
/// then the [`rules`].
pub fn decode(bytes: &[u8]) -> Result<SkillsSection, SkillsError> {
    if bytes.len() > MAX_SECTION_BYTES {
        return Err(SkillsError::SectionTooLarge(bytes.len()));
    }
    let field = |field: String, message: String| SkillsError::Field { field, message };
    let raw: Value = serde_json::from_slice(bytes).map_err(|e| SkillsError::Json(e.to_string()))?;
    match raw.get("format") {
        _ if !raw.is_object() => return Err(SkillsError::Json("the section must be a JSON object".into())),
        None => return Err(field("format".into(), "missing".into())),
        Some(v) if v.as_u64() != Some(u64::from(FORMAT)) => {
            return Err(field(
                "format".into(),
                format!("unknown format version {v}; this host reads {FORMAT}"),
            ));
        }
        Some(_) => {}
    }
    let raw: RawSection = serde_path_to_error::deserialize(raw).map_err(|e| {
        let path = e.path().to_string();
        field(path, e.into_inner().to_string())
    })?;
    let mut files = Vec::with_capacity(raw.files.len());
    for (i, f) in raw.files.into_iter().enumerate() {
        let bytes = match (f.text, f.base64) {
            (Some(text), None) if !text.contains('\0') => text.into_bytes(),
            (Some(_), None) => {
                return Err(field(format!("files[{i}].text"), "holds NUL; use `base64`".into()));
            }
            (None, Some(b)) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| field(format!("files[{i}].base64"), format!("not valid base64: {e}")))?,
            _ => return Err(field(format!("files[{i}]"), "needs exactly one of `text` and `base64`".into())),
        };
        files.push(SkillFile { path: f.path, bytes });
    }
    let section = SkillsSection { files };
    rules::check(&section)?;
    Ok(section)
}

/// The skills section of a component (in it or in a module nested in it), decoded; `None` when
/// it has none.
pub fn read(component: &[u8]) -> Result<Option<SkillsSection>, SkillsError> {
    crate::sections::read_json_section(component)
}

/// Append `section` as a top-level section of its own of a component that has none, and
/// read it back the way the host will.
pub fn embed(component: &[u8], section: &SkillsSection) -> Result<Vec<u8>, SkillsError> {
    crate::sections::embed_json_section(component, section)
}

impl crate::sections::JsonSection for SkillsSection {
    const NAME: &'static str = SECTION;
    type Error = SkillsError;
    fn encode(&self) -> Vec<u8> {
        encode(self)
    }
    fn decode(bytes: &[u8]) -> Result<Self, SkillsError> {
        decode(bytes)
    }
    fn duplicate(n: usize) -> SkillsError {
        SkillsError::Duplicate(n)
    }
    fn already_embedded() -> SkillsError {
        SkillsError::AlreadyEmbedded
    }
    fn read_back() -> SkillsError {
        SkillsError::ReadBack
    }
}

/// Entries of a `skills/` folder that are not part of a skill: hidden ones (`.DS_Store`, `.git`)
/// and editors' backup and autosave files (`SKILL.md~`, `#SKILL.md#`), which would otherwise
/// break the build the moment an editor saves. (Apps' folders are read the same way.)
pub(crate) fn is_left_out(name: &str) -> bool {
    name.starts_with('.')
        || name.ends_with('~')
        || (name.len() > 1 && name.starts_with('#') && name.ends_with('#'))
}

/// The skills of a project's `skills/` folder (`dir`), as a section: every file, in path order,
/// with the [`rules`] applied. Hidden entries and editors' backups ([`is_left_out`]) are left
/// out; a symbolic link is an error naming it (nothing outside the folder is read).
pub fn collect_dir(dir: &Path) -> Result<SkillsSection, SkillsError> {
    let mut files = Vec::new();
    walk(dir, "", &mut files)?;
    let section = SkillsSection { files };
    rules::check(&section)?;
    let size = encode(&section).len();
    if size > MAX_SECTION_BYTES {
        return Err(SkillsError::SectionTooLarge(size));
    }
    Ok(section)
}

/// Add the files under `dir` (whose path relative to `skills/` is `prefix`) to `out`, in path
/// order; checks each name and size before reading.
fn walk(dir: &Path, prefix: &str, out: &mut Vec<SkillFile>) -> Result<(), SkillsError> {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SkillsError + '_ {
        move |source| SkillsError::Io { path: path.to_path_buf(), source }
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let name = entry.file_name().into_string().map_err(|_| SkillsError::NotAFile(path.clone()))?;
        if !is_left_out(&name) {
            entries.push((name, path));
        }
    }
    entries.sort();
    for (name, path) in entries {
        let relative = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.file_type().is_symlink() {
            return Err(SkillsError::Symlink(path));
        } else if meta.is_dir() {
            rules::check_path(&relative)?;
            walk(&path, &relative, out)?;
        } else if meta.is_file() {
            rules::check_path(&relative)?;
            if meta.len() > MAX_FILE_BYTES as u64 {
                return Err(SkillsError::FileTooLarge { path: relative, size: meta.len() });
            }
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            out.push(SkillFile { path: relative, bytes });
        } else {
            return Err(SkillsError::NotAFile(path));
        }
    }
    Ok(())
}

/// The skills of a (checked) section, by name: grouped by top folder, each `SKILL.md`'s front
/// matter read and checked.
pub fn skills(section: &SkillsSection) -> Result<Vec<Skill>, SkillsError> {
    rules::skills(section)
}

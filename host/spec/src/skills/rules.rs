//! The rules a skills section keeps, the same when it is built and when it is loaded: names,
//! paths (nothing escapes its folder), caps, and each `SKILL.md`'s front matter; and the mime
//! type a file is served with.
//!
//! The name rule is stricter than the extension's (ASCII only), so every skill the host accepts
//! is one an MCP client accepts too.

use super::{Skill, SkillFile, SkillsError, SkillsSection};
use crate::manifest::{Text, text_problem};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A skill's main file, at the root of its folder.
pub const SKILL_MD: &str = "SKILL.md";
/// A skill's name, in characters.
pub const MAX_SKILL_NAME: usize = 64;
/// A file's path relative to `skills/`, in bytes.
pub const MAX_PATH_BYTES: usize = 255;
/// Skills one plugin may carry.
pub const MAX_SKILLS: usize = 16;
/// Files one skill may hold (its `SKILL.md` included). The extension lets a client refuse
/// more than 512.
pub const MAX_FILES_PER_SKILL: usize = 64;
/// One file, in bytes.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// The whole section as embedded, in bytes.
pub const MAX_SECTION_BYTES: usize = 2 * 1024 * 1024;
/// A `SKILL.md`'s front matter (between its `---` lines), in bytes.
pub const MAX_FRONTMATTER_BYTES: usize = 16 * 1024;
/// A skill's `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1024;

/// `[a-z0-9]+(-[a-z0-9]+)*`, at most [`MAX_SKILL_NAME`] characters.
pub fn is_skill_name(s: &str) -> bool {
    s.len() <= MAX_SKILL_NAME
        && s.split('-').all(|part| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// What is wrong with one segment of a path (`None`: nothing): each is `[A-Za-z0-9._-]+`, and
/// not hidden (so neither `.` nor `..`).
pub fn segment_problem(segment: &str) -> Option<&'static str> {
    if segment.is_empty() {
        Some("has an empty segment (a leading, trailing or double `/`)")
    } else if segment.starts_with('.') {
        Some("has a segment starting with `.` (`.`, `..` and hidden files are not allowed)")
    } else if segment.contains('\\') {
        Some("has a `\\`; paths are `/`-separated")
    } else if !segment.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        Some("has a segment with a character other than letters, digits, `.`, `_` and `-`")
    } else {
        None
    }
}

/// A path relative to `skills/`: at most [`MAX_PATH_BYTES`], each segment by
/// [`segment_problem`].
pub(super) fn check_path(path: &str) -> Result<(), SkillsError> {
    let problem = |p: &str| Err(SkillsError::Path { path: path.to_string(), problem: p.to_string() });
    if path.len() > MAX_PATH_BYTES {
        return problem(&format!("is {} bytes long; at most {MAX_PATH_BYTES} are allowed", path.len()));
    }
    if path.starts_with('/') {
        return problem("is absolute; paths are relative to `skills/`");
    }
    match path.split('/').find_map(segment_problem) {
        Some(p) => problem(p),
        None => Ok(()),
    }
}

/// Every rule of a section, front matter included.
pub(super) fn check(section: &SkillsSection) -> Result<(), SkillsError> {
    skills(section).map(drop)
}

/// The files of a section by skill folder, after the path rules, duplicates and caps.
fn group(section: &SkillsSection) -> Result<BTreeMap<&str, Vec<&SkillFile>>, SkillsError> {
    let mut seen = std::collections::HashSet::new();
    let mut by_skill: BTreeMap<&str, Vec<&SkillFile>> = BTreeMap::new();
    for f in &section.files {
        check_path(&f.path)?;
        if !seen.insert(f.path.as_str()) {
            return Err(SkillsError::DuplicatePath(f.path.clone()));
        }
        let Some((folder, rest)) = f.path.split_once('/') else {
            return Err(SkillsError::NotInSkill(f.path.clone()));
        };
        if !is_skill_name(folder) {
            return Err(SkillsError::BadName(folder.to_string()));
        }
        if rest != SKILL_MD && rest.rsplit('/').next() == Some(SKILL_MD) {
            return Err(SkillsError::Nested(f.path.clone()));
        }
        if f.bytes.len() > MAX_FILE_BYTES {
            return Err(SkillsError::FileTooLarge { path: f.path.clone(), size: f.bytes.len() as u64 });
        }
        by_skill.entry(folder).or_default().push(f);
    }
    if by_skill.len() > MAX_SKILLS {
        return Err(SkillsError::TooManySkills(by_skill.len()));
    }
    for (skill, files) in &by_skill {
        if files.len() > MAX_FILES_PER_SKILL {
            return Err(SkillsError::TooManyFiles { skill: skill.to_string(), count: files.len() });
        }
    }
    Ok(by_skill)
}

/// The skills of a section, by name (see [`super::skills`]).
pub(super) fn skills(section: &SkillsSection) -> Result<Vec<Skill>, SkillsError> {
    let mut out = Vec::new();
    for (folder, files) in group(section)? {
        let md_path = format!("{folder}/{SKILL_MD}");
        let Some(md) = files.iter().find(|f| f.path == md_path) else {
            return Err(SkillsError::NoSkillMd(folder.to_string()));
        };
        let frontmatter = frontmatter(&md.bytes)
            .map_err(|problem| SkillsError::Frontmatter { path: md_path.clone(), problem })?;
        let text = |key: &str| match frontmatter.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(SkillsError::Frontmatter {
                path: md_path.clone(),
                problem: format!("`{key}` must be a string (quote it: `{key}: \"…\"`)"),
            }),
            None => {
                Err(SkillsError::Frontmatter { path: md_path.clone(), problem: format!("has no `{key}`") })
            }
        };
        let (name, description) = (text("name")?, text("description")?);
        if name != folder {
            return Err(SkillsError::NameMismatch { path: md_path, found: name, folder: folder.to_string() });
        }
        let problem = if description.trim().is_empty() {
            Some("must not be empty".to_string())
        } else {
            text_problem(&description, MAX_DESCRIPTION, Text::Description).map(|p| p.to_string())
        };
        if let Some(problem) = problem {
            return Err(SkillsError::Description { path: md_path, problem });
        }
        let strip = folder.len() + 1;
        let mut files: Vec<SkillFile> = files
            .iter()
            .map(|f| SkillFile { path: f.path[strip..].to_string(), bytes: f.bytes.clone() })
            .collect();
        files.sort_by(|a, b| (a.path != SKILL_MD, &a.path).cmp(&(b.path != SKILL_MD, &b.path)));
        out.push(Skill { name, description, frontmatter, files });
    }
    Ok(out)
}

/// A `SKILL.md`'s front matter (the YAML between its first line `---` and the next `---` line)
/// and its body (the instructions after it).
fn split(text: &str) -> Result<(&str, &str), &'static str> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("is missing: `SKILL.md` must start with a `---` line")?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']) == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err("is not closed by a `---` line")
}

/// A `SKILL.md`'s instructions: what follows its front matter (all of it when it has none).
pub fn instructions(text: &str) -> &str {
    split(text).map_or(text, |(_, body)| body)
}

/// A `SKILL.md`'s front matter as JSON: the YAML mapping between a first line `---` and the
/// next line `---`, at most [`MAX_FRONTMATTER_BYTES`]. The problem is worded to follow
/// "front matter".
fn frontmatter(md: &[u8]) -> Result<Map<String, Value>, String> {
    let text = std::str::from_utf8(md).map_err(|_| "cannot be read: `SKILL.md` is not UTF-8".to_string())?;
    let (yaml, _) = split(text)?;
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(format!("is {} bytes; at most {MAX_FRONTMATTER_BYTES} are allowed", yaml.len()));
    }
    let value: serde_norway::Value =
        serde_norway::from_str(yaml).map_err(|e| format!("is not valid YAML: {e}"))?;
    match to_json(value, "")? {
        Value::Object(map) => Ok(map),
        _ => Err("must be a YAML mapping (`name: …` lines)".into()),
    }
}

/// A YAML value as JSON: string keys only, finite numbers, no tags. `at` names where, for the
/// problem.
fn to_json(value: serde_norway::Value, at: &str) -> Result<Value, String> {
    use serde_norway::Value as Y;
    let here = || if at.is_empty() { "the top".to_string() } else { format!("`{at}`") };
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::from(u)
            } else if let Some(i) = n.as_i64() {
                Value::from(i)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("has a number at {} that JSON cannot hold ({n})", here()))?
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| to_json(v, &format!("{at}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let Y::String(key) = k else {
                    return Err(format!("has a key that is not a string at {}", here()));
                };
                let path = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                let v = to_json(v, &path)?;
                out.insert(key, v);
            }
            Value::Object(out)
        }
        Y::Tagged(_) => return Err(format!("has a tagged value (`!tag`) at {}", here())),
    })
}

/// The mime type a skill file is served with, by its extension (`application/octet-stream`
/// when unknown).
pub fn mime_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "text" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "xml" => "application/xml",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "sh" => "text/x-shellscript",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

/// Whether a mime type is text, so a file of it that is UTF-8 without NUL is served as text.
pub fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/toml"
                | "image/svg+xml"
        )
}

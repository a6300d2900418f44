//! A project's `apps/` folder collected into a section, for a build: `apps/NAME/index.html` (the
//! page, self-contained) and `apps/NAME/app.toml` (what the host needs to show it), nothing
//! else.

use super::{AppCsp, AppSpec, AppsError, AppsSection, MAX_SECTION_BYTES, encode, rules};
use super::{MAX_APP_TOML_BYTES, MAX_PAGE_BYTES, check_domain, is_app_name};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// An app's page, in its folder.
pub const INDEX_HTML: &str = "index.html";
/// What an app declares, in its folder.
pub const APP_TOML: &str = "app.toml";

/// An `app.toml`: snake_case keys as TOML writes them, unknown keys refused. A missing
/// `description` or `tools` reads as empty, for the rules (`rules.rs`) to refuse naming the app.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppToml {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    app_only: Vec<String>,
    #[serde(default)]
    prefers_border: Option<bool>,
    #[serde(default)]
    csp: CspToml,
}

/// An `app.toml`'s `[csp]` table.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CspToml {
    #[serde(default)]
    connect_domains: Vec<String>,
    #[serde(default)]
    resource_domains: Vec<String>,
    #[serde(default)]
    frame_domains: Vec<String>,
    #[serde(default)]
    base_uri_domains: Vec<String>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AppsError + '_ {
    move |source| AppsError::Io { path: path.to_path_buf(), source }
}

/// The apps of a project's `apps/` folder (`dir`), as a section: one per folder, by name, with
/// the rules (`rules.rs`) applied and each origin in its normal form (a trailing `/` removed).
/// Hidden entries and editors' backups are left out (as for skills); a symbolic link is an
/// error naming it (nothing outside the folder is read).
pub fn collect_dir(dir: &Path) -> Result<AppsSection, AppsError> {
    let mut apps = Vec::new();
    for (name, path) in entries(dir)? {
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.file_type().is_symlink() {
            return Err(AppsError::Symlink(path));
        } else if meta.is_dir() {
            apps.push(collect_app(&path, &name)?);
        } else if meta.is_file() {
            return Err(AppsError::NotInApp(path));
        } else {
            return Err(AppsError::NotAFile(path));
        }
    }
    let section = AppsSection { apps };
    rules::check(&section)?;
    let size = encode(&section).len();
    if size > MAX_SECTION_BYTES {
        return Err(AppsError::SectionTooLarge(size));
    }
    Ok(section)
}

/// The entries of a folder by name, those [`crate::skills::is_left_out`] skipped.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf)>, AppsError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let name = entry.file_name().into_string().map_err(|_| AppsError::NotAFile(path.clone()))?;
        if !crate::skills::is_left_out(&name) {
            out.push((name, path));
        }
    }
    out.sort();
    Ok(out)
}

/// One app's folder (`dir`, named `name`): its page and its `app.toml`, and nothing else.
fn collect_app(dir: &Path, name: &str) -> Result<AppSpec, AppsError> {
    if !is_app_name(name) {
        return Err(AppsError::BadName(name.to_string()));
    }
    let (mut page, mut toml) = (None, None);
    for (file, path) in entries(dir)? {
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.file_type().is_symlink() {
            return Err(AppsError::Symlink(path));
        } else if !meta.is_file() && !meta.is_dir() {
            return Err(AppsError::NotAFile(path));
        }
        match file.as_str() {
            INDEX_HTML if meta.is_file() => page = Some(path),
            APP_TOML if meta.is_file() => toml = Some(path),
            _ => return Err(AppsError::Stray(path)),
        }
    }
    let missing = |file| AppsError::Missing { app: name.to_string(), file };
    let html = read_page(name, &page.ok_or_else(|| missing(INDEX_HTML))?)?;
    let raw = read_toml(&toml.ok_or_else(|| missing(APP_TOML))?)?;
    let normal = |list: Vec<String>| -> Vec<String> {
        list.into_iter().map(|e| check_domain(&e).unwrap_or(e)).collect()
    };
    Ok(AppSpec {
        name: name.to_string(),
        title: raw.title,
        description: raw.description,
        html,
        tools: raw.tools,
        app_only: raw.app_only,
        csp: AppCsp {
            connect_domains: normal(raw.csp.connect_domains),
            resource_domains: normal(raw.csp.resource_domains),
            frame_domains: normal(raw.csp.frame_domains),
            base_uri_domains: normal(raw.csp.base_uri_domains),
        },
        prefers_border: raw.prefers_border,
    })
}

/// An app's page, its size checked before it is read, and UTF-8 (the other page rules are in
/// `rules.rs`).
fn read_page(app: &str, path: &Path) -> Result<String, AppsError> {
    let size = std::fs::metadata(path).map_err(io(path))?.len();
    if size > MAX_PAGE_BYTES as u64 {
        return Err(AppsError::PageTooLarge { app: app.to_string(), size });
    }
    let bytes = std::fs::read(path).map_err(io(path))?;
    String::from_utf8(bytes)
        .map_err(|_| AppsError::NotHtml { app: app.to_string(), problem: "is not UTF-8".into() })
}

/// An `app.toml`, its size checked before it is read; a problem names its line.
fn read_toml(path: &Path) -> Result<AppToml, AppsError> {
    let problem = |message: String| AppsError::Toml { path: path.to_path_buf(), message };
    let size = std::fs::metadata(path).map_err(io(path))?.len();
    if size > MAX_APP_TOML_BYTES as u64 {
        return Err(problem(format!("is {size} bytes; at most {MAX_APP_TOML_BYTES} are allowed")));
    }
    let bytes = std::fs::read(path).map_err(io(path))?;
    let text = String::from_utf8(bytes).map_err(|_| problem("is not UTF-8".into()))?;
    toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text.as_bytes()[..s.start.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1);
        let message = e.message().trim_end();
        problem(match line {
            Some(line) => format!("line {line}: {message}"),
            None => message.to_string(),
        })
    })
}

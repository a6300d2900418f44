//! A plugin's apps (MCP Apps, extension `io.modelcontextprotocol/ui`, stable 2026-01-26): HTML
//! pages a host shows in a sandboxed frame beside the results of the tools linked to them,
//! embedded when the plugin is built in a `toolhost-apps` custom section, and read without
//! compiling or running it.
//!
//! The section is JSON, camelCase as the extension writes its metadata, optional fields left
//! out: `{"format":1,"apps":[{"name":"chart","title":"…","description":"…","html":"<!doctype
//! html>…","tools":["table"],"appOnly":["sort_rows"],"csp":{"connectDomains":[…],
//! "resourceDomains":[…],"frameDomains":[…],"baseUriDomains":[…]},"prefersBorder":true}]}`.
//! Each app is served as the resource [`uri`]`(PLUGIN, NAME)` of type [`MIME_TYPE`]. The same
//! rules (`rules.rs`) hold when a section is built ([`collect_dir`], from a project's `apps/`
//! folder) and when it is loaded ([`decode`]); the content security policy the host applies is
//! [`content_security_policy`].
//!
//! A separate section rather than a manifest field, as for skills: an older host refuses a
//! manifest with a field it does not know, but ignores a section it does not know, so a plugin
//! with apps still serves its tools (as text) there.
//!
//! This module does not know the plugin's tools: that each name in `tools` and `appOnly` is one
//! of them is checked where the manifest and the section meet.

mod collect;
mod csp;
#[cfg(test)]
mod origin_tests;
mod rules;
#[cfg(test)]
mod tests;

pub use collect::{APP_TOML, INDEX_HTML, collect_dir};
pub use csp::content_security_policy;
pub use rules::{
    LOOPBACK_HOSTS, MAX_APP_NAME, MAX_APP_TOML_BYTES, MAX_APPS, MAX_DESCRIPTION, MAX_DOMAINS, MAX_HOST_BYTES,
    MAX_PAGE_BYTES, MAX_SECTION_BYTES, MAX_TITLE, MAX_TOOL_NAME, MAX_TOOLS, check_domain, is_app_name,
    is_mcp_tool_name, is_wildcard,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// Name of the custom section that holds a plugin's apps.
pub const SECTION: &str = "toolhost-apps";
/// The section's format version.
pub const FORMAT: u32 = 1;
/// The mime type of an app's page, as its resource is listed and read (exactly this).
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The MCP extension a client advertises (`capabilities.extensions`) when it shows apps.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The URI an app's page is served at: `ui://PLUGIN/APP` (the `ui://` scheme is reserved for
/// MCP Apps; the plugin's name keeps two plugins' apps apart).
pub fn uri(plugin: &str, app: &str) -> String {
    format!("ui://{plugin}/{app}")
}

/// The section: every app of a plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppsSection {
    /// The apps, in the order written ([`collect_dir`] writes them by name).
    pub apps: Vec<AppSpec>,
}

/// One app: its page and what the host needs to show it, without running the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppSpec {
    /// Its name, its folder's under `apps/`: the last segment of its [`uri`].
    pub name: String,
    /// A name for people (the resource's `title`), one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it shows (the resource's `description`).
    pub description: String,
    /// The page: one self-contained HTML document, its scripts and styles inlined or bundled.
    pub html: String,
    /// The tools whose results it shows (each tool's `_meta.ui.resourceUri` is this app's URI);
    /// visible to the model and to the app.
    pub tools: Vec<String>,
    /// Tools the app may call that the model never sees (`_meta.ui.visibility: ["app"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app_only: Vec<String>,
    /// The origins it may reach, beyond its own page (`_meta.ui.csp`).
    #[serde(default, skip_serializing_if = "AppCsp::is_empty")]
    pub csp: AppCsp,
    /// Whether it asks for a visible border and background (`None`: the host decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

/// The origins an app may reach, each `https://HOST[:PORT]` or `wss://HOST[:PORT]`
/// ([`check_domain`]); empty lists grant nothing ([`content_security_policy`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppCsp {
    /// `connect-src`: what `fetch`, XHR and WebSocket may reach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Scripts, styles, images, fonts and media.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// `frame-src`: pages it may embed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// `base-uri`: what a `<base>` element may point at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

impl AppCsp {
    /// Whether it grants nothing.
    pub fn is_empty(&self) -> bool {
        self.lists().iter().all(|(_, list)| list.is_empty())
    }

    /// Each list with its key in `app.toml`'s `[csp]` table (what errors name).
    pub fn lists(&self) -> [(&'static str, &[String]); 4] {
        [
            ("csp.connect_domains", &self.connect_domains),
            ("csp.resource_domains", &self.resource_domains),
            ("csp.frame_domains", &self.frame_domains),
            ("csp.base_uri_domains", &self.base_uri_domains),
        ]
    }
}

/// What is wrong with an apps section, or with the folder it is built from. Each names the
/// file, the app or the field; fields by their key in `app.toml` (`app_only`,
/// `csp.connect_domains`), where an author fixes them.
#[derive(Debug, thiserror::Error)]
pub enum AppsError {
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
    /// An app named against the name rule.
    #[error(
        "app `{0}`: an app's name (its folder's) is 1 to {MAX_APP_NAME} lowercase letters and digits, with single `-` between them"
    )]
    BadName(String),
    /// Two apps of one name.
    #[error("app `{0}` appears twice")]
    DuplicateApp(String),
    /// More than [`MAX_APPS`] apps.
    #[error("{0} apps; at most {MAX_APPS} are allowed per plugin")]
    TooManyApps(usize),
    /// A page larger than [`MAX_PAGE_BYTES`].
    #[error("app `{app}`: its page is {size} bytes; at most {MAX_PAGE_BYTES} are allowed")]
    PageTooLarge { app: String, size: u64 },
    /// A page that is not UTF-8, holds NUL, or is not an HTML document.
    #[error("app `{app}`: its page {problem}")]
    NotHtml { app: String, problem: String },
    /// A `title` or `description` against the text rules.
    #[error("app `{app}`: `{field}` {problem}")]
    Text { app: String, field: &'static str, problem: String },
    /// An app linked to no tool.
    #[error("app `{0}`: `tools` must name at least one tool (those whose results it shows)")]
    NoTools(String),
    /// A list longer than its cap ([`MAX_TOOLS`], [`MAX_DOMAINS`]).
    #[error("app `{app}`: `{field}` has {count} entries; at most {max} are allowed")]
    TooMany { app: String, field: &'static str, count: usize, max: usize },
    /// An entry of `tools` or `app_only` that is not a tool name ([`is_mcp_tool_name`]).
    #[error(
        "app `{app}`: `{field}` entry {name:?} is not a tool name (1 to {MAX_TOOL_NAME} letters, digits, `_`, `-` or `.`)"
    )]
    ToolName { app: String, field: &'static str, name: String },
    /// The same entry twice in one list.
    #[error("app `{app}`: `{field}` names {entry:?} twice")]
    Repeated { app: String, field: &'static str, entry: String },
    /// A tool in both lists of one app.
    #[error(
        "app `{app}`: tool `{tool}` is in both `tools` and `app_only`; a tool whose results the app shows is one the model calls"
    )]
    ToolInBoth { app: String, tool: String },
    /// A tool linked by two apps.
    #[error(
        "tool `{tool}` is linked by apps `{first}` and `{second}`; a tool's results are shown by one app"
    )]
    LinkedTwice { tool: String, first: String, second: String },
    /// A tool one app shows and another hides from the model.
    #[error(
        "tool `{tool}` is in app `{linked_by}`'s `tools` (the model calls it) and in app `{hidden_by}`'s `app_only` (the model never sees it)"
    )]
    Visibility { tool: String, linked_by: String, hidden_by: String },
    /// An entry of a `csp` list that is not an origin ([`check_domain`]).
    #[error("app `{app}`: `{field}` entry {entry:?} {problem}")]
    Domain { app: String, field: &'static str, entry: String, problem: String },
    /// A file at the top of `apps/`, in no app's folder.
    #[error("{}: not inside an app's folder (`apps/NAME/{INDEX_HTML}`)", .0.display())]
    NotInApp(PathBuf),
    /// A file in an app's folder besides its page and `app.toml`.
    #[error(
        "{}: an app's folder holds only `{INDEX_HTML}` and `{APP_TOML}`; inline or bundle your scripts and styles into `{INDEX_HTML}`",
        .0.display()
    )]
    Stray(PathBuf),
    /// An app folder without its page or its `app.toml`.
    #[error("app `{app}` has no `{file}` in its folder")]
    Missing { app: String, file: &'static str },
    /// An `app.toml` that cannot be read: not TOML, an unknown key, a value of the wrong type.
    #[error("{}: {message}", path.display())]
    Toml { path: PathBuf, message: String },
    /// A folder entry [`collect_dir`] does not follow.
    #[error("{}: a symbolic link; apps are read without following links", .0.display())]
    Symlink(PathBuf),
    /// A folder entry that is neither a file nor a folder, or not named in UTF-8.
    #[error("{}: not a regular file or folder with a UTF-8 name", .0.display())]
    NotAFile(PathBuf),
    /// Reading the apps folder.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

/// The section as written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSection {
    format: u32,
    apps: Vec<AppSpec>,
}

/// The section's JSON bytes (not checked: [`decode`] them, or [`embed`], which reads them back).
pub fn encode(section: &AppsSection) -> Vec<u8> {
    let raw = RawSection { format: FORMAT, apps: section.apps.clone() };
    serde_json::to_vec(&raw).unwrap_or_default()
}

/// Read a section's JSON strictly: its size, then the format version (so a future format reads
/// as "unknown version" rather than as unknown fields), then the shape, unknown fields refused,
/// then the rules (`rules.rs`).
pub fn decode(bytes: &[u8]) -> Result<AppsSection, AppsError> {
    if bytes.len() > MAX_SECTION_BYTES {
        return Err(AppsError::SectionTooLarge(bytes.len()));
    }
    let field = |field: String, message: String| AppsError::Field { field, message };
    let raw: Value = serde_json::from_slice(bytes).map_err(|e| AppsError::Json(e.to_string()))?;
    match raw.get("format") {
        _ if !raw.is_object() => return Err(AppsError::Json("the section must be a JSON object".into())),
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
    let section = AppsSection { apps: raw.apps };
    rules::check(&section)?;
    Ok(section)
}

/// The apps section of a component (in it or in a module nested in it), decoded; `None` when
/// it has none.
pub fn read(component: &[u8]) -> Result<Option<AppsSection>, AppsError> {
    crate::sections::read_json_section(component)
}

/// Append `section` as a top-level section of its own of a component that has none, and
/// read it back the way the host will.
pub fn embed(component: &[u8], section: &AppsSection) -> Result<Vec<u8>, AppsError> {
    crate::sections::embed_json_section(component, section)
}

impl crate::sections::JsonSection for AppsSection {
    const NAME: &'static str = SECTION;
    type Error = AppsError;
    fn encode(&self) -> Vec<u8> {
        encode(self)
    }
    fn decode(bytes: &[u8]) -> Result<Self, AppsError> {
        decode(bytes)
    }
    fn duplicate(n: usize) -> AppsError {
        AppsError::Duplicate(n)
    }
    fn already_embedded() -> AppsError {
        AppsError::AlreadyEmbedded
    }
    fn read_back() -> AppsError {
        AppsError::ReadBack
    }
}

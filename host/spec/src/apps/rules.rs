//! The rules an apps section keeps, the same when it is built and when it is loaded: names,
//! caps, each page an HTML document, the tools each app links, and — security critical, since
//! they end up in a Content-Security-Policy — the origins of its `csp` lists.
//!
//! An origin is accepted in one spelling only (lower case, no trailing `/`), so what the
//! section holds is exactly what a client is given and what the host's policy says.

use super::{AppSpec, AppsError, AppsSection};
use crate::manifest::{Text, text_problem};
use std::collections::{HashMap, HashSet};

/// An app's name, in characters.
pub const MAX_APP_NAME: usize = 64;
/// Apps one plugin may carry.
pub const MAX_APPS: usize = 16;
/// One app's page, in bytes.
pub const MAX_PAGE_BYTES: usize = 512 * 1024;
/// The whole section as embedded, in bytes.
pub const MAX_SECTION_BYTES: usize = 4 * 1024 * 1024;
/// One `app.toml`, in bytes (checked before it is read).
pub const MAX_APP_TOML_BYTES: usize = 64 * 1024;
/// An app's `title`, in characters (one line).
pub const MAX_TITLE: usize = 128;
/// An app's `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1024;
/// A tool name in `tools` or `app_only`, in characters.
pub const MAX_TOOL_NAME: usize = 64;
/// Entries of one app's `tools`, and of its `app_only`.
pub const MAX_TOOLS: usize = 64;
/// Entries of one `csp` list.
pub const MAX_DOMAINS: usize = 32;
/// A host name in an origin, in bytes (DNS's limit).
pub const MAX_HOST_BYTES: usize = 253;
/// The hosts an `http://` or `ws://` origin may name: this machine only.
pub const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// `[a-z0-9]+(-[a-z0-9]+)*`, at most [`MAX_APP_NAME`] characters (as a skill's name).
pub fn is_app_name(s: &str) -> bool {
    crate::skills::is_skill_name(s)
}

/// `[A-Za-z0-9_.-]{1,64}`: MCP's rule for a tool name. Wider than a manifest's tool name, so
/// the host (which knows the plugin's tools) is the one to say a name is not one of them.
pub fn is_mcp_tool_name(s: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Every rule of a section: the cap on apps, each app, and the tools across apps.
pub(super) fn check(section: &AppsSection) -> Result<(), AppsError> {
    if section.apps.len() > MAX_APPS {
        return Err(AppsError::TooManyApps(section.apps.len()));
    }
    let mut names = HashSet::new();
    for app in &section.apps {
        check_app(app)?;
        if !names.insert(app.name.as_str()) {
            return Err(AppsError::DuplicateApp(app.name.clone()));
        }
    }
    check_links(&section.apps)
}

/// One app's rules: its name, text, page, tools and origins.
fn check_app(app: &AppSpec) -> Result<(), AppsError> {
    if !is_app_name(&app.name) {
        return Err(AppsError::BadName(app.name.clone()));
    }
    let text = |field, problem: String| AppsError::Text { app: app.name.clone(), field, problem };
    if let Some(title) = &app.title {
        if title.trim().is_empty() {
            return Err(text("title", "must not be empty (leave it out instead)".into()));
        }
        if let Some(p) = text_problem(title, MAX_TITLE, Text::Line) {
            return Err(text("title", p.to_string()));
        }
    }
    if app.description.trim().is_empty() {
        return Err(text("description", "must not be empty".into()));
    }
    if let Some(p) = text_problem(&app.description, MAX_DESCRIPTION, Text::Description) {
        return Err(text("description", p.to_string()));
    }
    check_page(&app.name, &app.html)?;
    if app.tools.is_empty() {
        return Err(AppsError::NoTools(app.name.clone()));
    }
    check_tools(&app.name, "tools", &app.tools)?;
    check_tools(&app.name, "app_only", &app.app_only)?;
    if let Some(tool) = app.tools.iter().find(|t| app.app_only.contains(t)) {
        return Err(AppsError::ToolInBoth { app: app.name.clone(), tool: tool.clone() });
    }
    for (field, list) in app.csp.lists() {
        check_domains(&app.name, field, list)?;
    }
    Ok(())
}

/// A page: at most [`MAX_PAGE_BYTES`], no NUL, and an HTML document (it has `<!doctype html`
/// or `<html`, in any case): a fragment or a script would be shown as nonsense, or not at all.
pub(super) fn check_page(app: &str, html: &str) -> Result<(), AppsError> {
    let problem = |p: &str| Err(AppsError::NotHtml { app: app.to_string(), problem: p.to_string() });
    if html.len() > MAX_PAGE_BYTES {
        return Err(AppsError::PageTooLarge { app: app.to_string(), size: html.len() as u64 });
    }
    if html.contains('\0') {
        return problem("holds NUL");
    }
    let lower = html.to_ascii_lowercase();
    if !lower.contains("<!doctype html") && !lower.contains("<html") {
        return problem("is not an HTML document: it has neither `<!doctype html>` nor `<html>`");
    }
    Ok(())
}

/// One list of tool names: capped, each a name, none twice.
fn check_tools(app: &str, field: &'static str, tools: &[String]) -> Result<(), AppsError> {
    if tools.len() > MAX_TOOLS {
        return Err(AppsError::TooMany { app: app.into(), field, count: tools.len(), max: MAX_TOOLS });
    }
    let mut seen = HashSet::new();
    for name in tools {
        if !is_mcp_tool_name(name) {
            return Err(AppsError::ToolName { app: app.into(), field, name: name.clone() });
        }
        if !seen.insert(name) {
            return Err(AppsError::Repeated { app: app.into(), field, entry: name.clone() });
        }
    }
    Ok(())
}

/// Across apps: a tool's results are shown by one app, and a tool one app shows is not one
/// another hides from the model. Several apps may call the same app-only tool.
fn check_links(apps: &[AppSpec]) -> Result<(), AppsError> {
    let mut linked: HashMap<&str, &str> = HashMap::new();
    for app in apps {
        for tool in &app.tools {
            if let Some(first) = linked.insert(tool, &app.name) {
                return Err(AppsError::LinkedTwice {
                    tool: tool.clone(),
                    first: first.to_string(),
                    second: app.name.clone(),
                });
            }
        }
    }
    for app in apps {
        if let Some((tool, by)) = app.app_only.iter().find_map(|t| Some((t, *linked.get(t.as_str())?))) {
            return Err(AppsError::Visibility {
                tool: tool.clone(),
                linked_by: by.to_string(),
                hidden_by: app.name.clone(),
            });
        }
    }
    Ok(())
}

/// One `csp` list: capped, each entry an origin already in its normal form ([`check_domain`]),
/// none twice.
fn check_domains(app: &str, field: &'static str, list: &[String]) -> Result<(), AppsError> {
    if list.len() > MAX_DOMAINS {
        return Err(AppsError::TooMany { app: app.into(), field, count: list.len(), max: MAX_DOMAINS });
    }
    let mut seen = HashSet::new();
    for entry in list {
        let problem = match check_domain(entry) {
            Ok(normal) if normal == *entry => None,
            Ok(normal) => Some(format!("is not written in its normal form; write {normal:?}")),
            Err(why) => Some(why),
        };
        if let Some(problem) = problem {
            return Err(AppsError::Domain { app: app.into(), field, entry: entry.clone(), problem });
        }
        if !seen.insert(entry) {
            return Err(AppsError::Repeated { app: app.into(), field, entry: entry.clone() });
        }
    }
    Ok(())
}

/// Check one entry of a `csp` list and give its normal form (one trailing `/` removed), or why
/// it is refused (worded to follow the entry).
///
/// An entry is an origin: `https://HOST[:PORT]` or `wss://HOST[:PORT]`; `http://` and `ws://`
/// only for [`LOOPBACK_HOSTS`]. HOST is a lower-case DNS name (labels of letters, digits and
/// `-`, at most [`MAX_HOST_BYTES`]), an IPv4 address or `[::1]`; its leftmost label may be a
/// whole `*` (`https://*.example.com`: any subdomain, not the domain itself) when at least two
/// labels follow. Nothing else — no keyword (`'self'`), scheme (`data:`), bare `*`, path, query,
/// fragment, user, space, `;`, `,` or quote — so an entry can never add a source or a directive
/// to the policy it is written into. Upper case is refused rather than folded, so an origin
/// has one spelling.
pub fn check_domain(entry: &str) -> Result<String, String> {
    let (scheme, rest) = split_scheme(entry)?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if let Some(c) =
        rest.chars().find(|&c| !matches!(c, 'a'..='z' | '0'..='9' | '.' | '-' | '*' | ':' | '[' | ']'))
    {
        return Err(character_problem(c));
    }
    let (host, port) = split_port(rest)?;
    if let Some(port) = port {
        check_port(port)?;
    }
    check_host(host)?;
    if matches!(scheme, "http" | "ws") && !LOOPBACK_HOSTS.contains(&host) {
        let secure = if scheme == "http" { "https" } else { "wss" };
        return Err(format!(
            "uses `{scheme}://`, allowed only for localhost, 127.0.0.1 and [::1]; write `{secure}://{rest}`"
        ));
    }
    Ok(format!("{scheme}://{rest}"))
}

/// Whether a (checked) origin is a wildcard, `https://*.example.com`: one a host may want to
/// warn about more loudly.
pub fn is_wildcard(domain: &str) -> bool {
    domain.split_once("://").is_some_and(|(_, rest)| rest.starts_with("*."))
}

const ORIGIN: &str = "an entry is an origin, `https://HOST[:PORT]` or `wss://HOST[:PORT]`";

/// An entry's scheme (one of the four allowed) and what follows its `://`.
fn split_scheme(entry: &str) -> Result<(&str, &str), String> {
    if entry.is_empty() {
        return Err(format!("is empty; {ORIGIN}"));
    }
    if let Some(c) = entry.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("holds whitespace or a control character (U+{:04X}); {ORIGIN}", u32::from(c)));
    }
    if entry == "*" {
        return Err(format!("would allow every host; {ORIGIN} (`https://*.example.com` for subdomains)"));
    }
    if entry.starts_with('\'') {
        return Err(format!("is a CSP keyword, which the host writes itself; {ORIGIN}"));
    }
    let Some((scheme, rest)) = entry.split_once("://") else {
        let scheme_only = entry.strip_suffix(':').is_some_and(|s| {
            s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        });
        return Err(if scheme_only {
            format!("is a scheme, which would allow anything loaded with it; {ORIGIN}")
        } else if !entry.contains(':') {
            format!("has no scheme; {ORIGIN}")
        } else {
            format!("is not an origin; {ORIGIN}")
        });
    };
    if entry.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(match check_domain(&entry.to_ascii_lowercase()) {
            Ok(lower) => format!("must be written in lower case: {lower:?}"),
            // What else is wrong matters more than the case.
            Err(why) => why,
        });
    }
    match scheme {
        "https" | "wss" | "http" | "ws" => Ok((scheme, rest)),
        _ => Err(format!("has the scheme {scheme:?}; {ORIGIN} (`http`/`ws` for localhost)")),
    }
}

/// Why a character has no place in an origin, with what it would have been.
fn character_problem(c: char) -> String {
    let what = match c {
        '/' => "a path (only one trailing `/` is allowed)",
        '?' => "a query",
        '#' => "a fragment",
        '@' => "user information",
        c if !c.is_ascii() => "a character outside ASCII (write an international name in its `xn--` form)",
        _ => "a character that has no place in an origin",
    };
    format!("has {what}: `{c}`; {ORIGIN}")
}

/// A host and its port, if any (`[::1]` is the one bracketed host).
fn split_port(rest: &str) -> Result<(&str, Option<&str>), String> {
    let (host, tail) = match rest.find(']') {
        Some(end) if rest.starts_with('[') => rest.split_at(end + 1),
        _ => match rest.find(':') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        },
    };
    match tail {
        "" => Ok((host, None)),
        _ => match tail.strip_prefix(':') {
            Some(port) => Ok((host, Some(port))),
            None => Err(format!("has something after its host; {ORIGIN}")),
        },
    }
}

/// A port: 1 to 65535, in digits without a leading zero (no `*`).
fn check_port(port: &str) -> Result<(), String> {
    let ok = !port.starts_with('0')
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p > 0);
    if ok { Ok(()) } else { Err(format!("has the port {port:?}; a port is a number from 1 to 65535")) }
}

/// A host: `[::1]`, an IPv4 address, or a DNS name behind an optional `*.`.
fn check_host(host: &str) -> Result<(), String> {
    if host == "[::1]" || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return Ok(());
    }
    if host.starts_with('[') {
        return Err("has an IPv6 address; only `[::1]` is allowed (name other hosts)".into());
    }
    if let Some(c) = host.chars().find(|&c| c == '[' || c == ']') {
        return Err(character_problem(c));
    }
    if host.is_empty() {
        return Err(format!("has no host; {ORIGIN}"));
    }
    if host == "*" {
        return Err("would allow every host; a wildcard is written `https://*.example.com`".into());
    }
    let (wildcard, name) = match host.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, host),
    };
    if name.contains('*') {
        return Err("has a `*` that is not the whole leftmost label (`https://*.example.com`)".into());
    }
    if name.len() > MAX_HOST_BYTES {
        return Err(format!("has a host of {} bytes; at most {MAX_HOST_BYTES} are allowed", name.len()));
    }
    let labels: Vec<&str> = name.split('.').collect();
    if let Some(p) = labels.iter().find_map(|l| label_problem(l)) {
        return Err(format!("has a host {p}"));
    }
    let last = labels.last().copied().unwrap_or_default();
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(if wildcard {
            "has a wildcard over an IP address; a wildcard needs a host name".into()
        } else {
            "has a host that is neither a name nor an IPv4 address".into()
        });
    }
    if wildcard && labels.len() < 2 {
        return Err("has a wildcard over a top-level domain; at least two labels follow `*.` (`https://*.example.com`)".into());
    }
    Ok(())
}

/// What is wrong with one label of a host name: 1 to 63 of `[a-z0-9-]`, not starting or
/// ending with `-`.
fn label_problem(label: &str) -> Option<&'static str> {
    if label.is_empty() {
        Some("with an empty label (a leading, trailing or double `.`)")
    } else if label.len() > 63 {
        Some("with a label longer than 63 characters")
    } else if label.starts_with('-') || label.ends_with('-') {
        Some("with a label that starts or ends with `-`")
    } else {
        None
    }
}

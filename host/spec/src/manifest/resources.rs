//! A plugin's resources, as its manifest declares them: static resources by URI and resource
//! templates (RFC 6570, levels 1 and 2: `{name}` and `{+name}`), the rules both are held to,
//! and the one matching of a URI against a template (for the host's lookup, and for the SDKs'
//! tests).
//!
//! What a read returns is the plugin's business (it runs in the sandbox); which URIs exist, and
//! what they are, is here, read without running anything.

use super::{MAX_PARAM_DESCRIPTION, MAX_TITLE, Text, TextProblem, text_problem};
use serde::{Deserialize, Serialize};

/// Static resources one plugin may declare.
pub const MAX_RESOURCES: usize = 64;
/// Resource templates one plugin may declare.
pub const MAX_TEMPLATES: usize = 16;
/// A URI or a URI template, in bytes.
pub const MAX_URI: usize = 1024;
/// A resource's `name`, in characters (one line).
pub const MAX_RESOURCE_NAME: usize = 128;
/// A resource's `description`, in characters.
pub const MAX_RESOURCE_DESCRIPTION: usize = MAX_PARAM_DESCRIPTION;
/// A `mimeType`, in bytes.
pub const MAX_MIME: usize = 127;
/// Expressions in one template.
pub const MAX_EXPRESSIONS: usize = 8;
/// Schemes no plugin may declare: `skill://` is the host's own (a plugin's skills, served from
/// its `toolhost-skills` section).
pub const RESERVED_SCHEMES: &[&str] = &["skill"];

/// One static resource: a URI the plugin serves, described without running the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceSpec {
    /// An absolute URI (`docs://style-guide`, `file:///README.md`), without `{`/`}`.
    pub uri: String,
    /// A short name, one line (MCP `name`).
    pub name: String,
    /// A name for people (MCP `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `text/markdown`, `image/png`, …: a textual type promises a text read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when the plugin knows it before reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// One resource template: a family of URIs (`file:///{+path}`) the plugin reads on demand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceTemplateSpec {
    /// RFC 6570 levels 1–2: literal text and `{name}` (one path segment: no `/`, `?`, `#`) or
    /// `{+name}` (any text but `?` and `#`) expressions, never two in a row.
    pub uri_template: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The variables the plugin completes (its `completion` export) as a person types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub complete: Vec<String>,
}

/// Whether a MIME type is text: what a client shows as text, and what a read must return as
/// text (`text/*`, JSON, XML, YAML, JavaScript, and their `+json`/`+xml` kin).
pub fn is_textual(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/javascript"
                | "application/toml"
        )
}

/// The scheme of an absolute URI (`docs` of `docs://a`), if it has one.
pub fn scheme(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .then_some(scheme)
}

/// Why a URI or template cannot be declared, if it cannot (`template`: `{…}` allowed).
fn uri_problem(uri: &str, template: bool) -> Option<String> {
    if uri.len() > MAX_URI {
        return Some(format!("is {} bytes; at most {MAX_URI} are allowed", uri.len()));
    }
    if let Some(c) = uri.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!("holds {c:?}: a URI has no whitespace or control characters"));
    }
    let Some(scheme) = scheme(uri) else {
        return Some(format!("{uri:?} is not an absolute URI (`scheme:…`, e.g. `docs://guide`)"));
    };
    if RESERVED_SCHEMES.iter().any(|r| r.eq_ignore_ascii_case(scheme)) {
        return Some(format!("the `{scheme}:` scheme is the host's own (a plugin's skills)"));
    }
    if !template && uri.contains(['{', '}']) {
        return Some(format!("{uri:?} has `{{` or `}}`: a URI with variables is a resource template"));
    }
    if template && let Err(e) = Template::parse(uri) {
        return Some(e);
    }
    None
}

/// A part of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part<'a> {
    Literal(&'a str),
    /// `{name}` (`reserved: false`) or `{+name}`.
    Var {
        name: &'a str,
        reserved: bool,
    },
}

/// A parsed URI template (see [`ResourceTemplateSpec::uri_template`]).
#[derive(Debug, Clone)]
pub struct Template<'a> {
    parts: Vec<Part<'a>>,
}

impl<'a> Template<'a> {
    /// Parse `t`; the error says what is wrong with it.
    pub fn parse(t: &'a str) -> Result<Template<'a>, String> {
        let mut parts = Vec::new();
        let mut rest = t;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                Some(i) if rest.as_bytes()[i] == b'}' => return Err("has a `}` without its `{`".into()),
                Some(i) => {
                    if i > 0 {
                        parts.push(Part::Literal(&rest[..i]));
                    }
                    let close = rest[i..].find('}').ok_or("has a `{` without its `}`")? + i;
                    let inner = &rest[i + 1..close];
                    let (reserved, name) = match inner.strip_prefix('+') {
                        Some(n) => (true, n),
                        None => (false, inner),
                    };
                    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(format!(
                            "has `{{{inner}}}`: toolhost serves `{{name}}` and `{{+name}}` expressions, a name of letters, digits and `_`"
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Var { .. })) {
                        return Err(format!(
                            "has two expressions in a row before `{{{inner}}}`: put text between them"
                        ));
                    }
                    if parts.iter().any(|p| matches!(p, Part::Var { name: n, .. } if *n == name)) {
                        return Err(format!("uses the variable `{name}` twice"));
                    }
                    parts.push(Part::Var { name, reserved });
                    rest = &rest[close + 1..];
                }
                None => {
                    parts.push(Part::Literal(rest));
                    rest = "";
                }
            }
        }
        let vars = parts.iter().filter(|p| matches!(p, Part::Var { .. })).count();
        if vars == 0 {
            return Err("has no `{name}` expression: a URI without variables is a static resource".into());
        }
        if vars > MAX_EXPRESSIONS {
            return Err(format!("has {vars} expressions; at most {MAX_EXPRESSIONS} are allowed"));
        }
        if !matches!(parts.first(), Some(Part::Literal(l)) if scheme(l).is_some()) {
            return Err("must begin with its scheme (`file:///{+path}`, not `{+uri}`)".into());
        }
        Ok(Template { parts })
    }

    /// The variables' names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(*name),
            Part::Literal(_) => None,
        })
    }

    /// The variables `uri` gives this template, percent-decoded, if it matches: every literal
    /// in place (a scheme matched without regard to case), `{name}` one or more characters but
    /// `/`, `?` and `#`, `{+name}` one or more but `?` and `#`. A variable is matched as far
    /// as the next literal's last occurrence it can reach (so `{+path}.md` takes `a.b.md` as
    /// `a.b`). `None` also when a value decodes to something that is not UTF-8 or holds NUL.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut vars = Vec::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        let mut first = true;
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(l) => {
                    let head = rest.get(..l.len())?;
                    let same = if first { same_ignoring_scheme_case(head, l) } else { head == *l };
                    if !same {
                        return None;
                    }
                    rest = &rest[l.len()..];
                }
                Part::Var { name, reserved } => {
                    let allowed = |c: char| !matches!(c, '?' | '#') && (*reserved || c != '/');
                    let reach = rest.find(|c: char| !allowed(c)).unwrap_or(rest.len());
                    let end = match parts.peek() {
                        None => (reach == rest.len()).then_some(reach)?,
                        Some(Part::Literal(next)) => {
                            rest[..(reach + next.len()).min(rest.len())].rfind(next)?
                        }
                        Some(Part::Var { .. }) => return None,
                    };
                    if end == 0 {
                        return None;
                    }
                    vars.push(((*name).to_string(), decode(&rest[..end])?));
                    rest = &rest[end..];
                }
            }
            first = false;
        }
        rest.is_empty().then_some(vars)
    }
}

/// `a` and `b` equal, the scheme (before the first `:`) compared without regard to case.
fn same_ignoring_scheme_case(a: &str, b: &str) -> bool {
    match (a.split_once(':'), b.split_once(':')) {
        (Some((sa, ra)), Some((sb, rb))) => sa.eq_ignore_ascii_case(sb) && ra == rb,
        _ => a == b,
    }
}

/// `s` percent-decoded, if that is UTF-8 without NUL.
fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(out).ok()?;
    (!text.contains('\0')).then_some(text)
}

/// What is wrong with one resource's or template's texts (`at`: its field path).
fn texts(
    at: &str,
    name: &str,
    title: Option<&str>,
    description: &str,
    mime: Option<&str>,
) -> Result<(), (String, String)> {
    let check = |field: &str, s: &str, max: usize, kind: Text| match text_problem(s, max, kind) {
        None => Ok(()),
        Some(TextProblem::TooLong { chars, max }) => {
            Err((format!("{at}.{field}"), format!("is {chars} characters; at most {max} are allowed")))
        }
        Some(p @ TextProblem::Control { c, .. }) => {
            Err((format!("{at}.{field}"), format!("holds {c:?}: {}", p.rule())))
        }
    };
    if name.trim().is_empty() {
        return Err((format!("{at}.name"), "must not be empty".into()));
    }
    check("name", name, MAX_RESOURCE_NAME, Text::Line)?;
    if let Some(t) = title {
        if t.trim().is_empty() {
            return Err((format!("{at}.title"), "must not be blank when given".into()));
        }
        check("title", t, MAX_TITLE, Text::Line)?;
    }
    check("description", description, MAX_RESOURCE_DESCRIPTION, Text::Description)?;
    if let Some(m) = mime {
        let ok = m.len() <= MAX_MIME
            && m.split_once('/').is_some_and(|(t, s)| !t.is_empty() && !s.is_empty())
            && m.chars().all(|c| c.is_ascii_graphic() || c == ' ');
        if !ok {
            return Err((format!("{at}.mimeType"), format!("{m:?} is not a MIME type (`type/subtype`)")));
        }
    }
    Ok(())
}

/// Hold a manifest's resources and templates to the rules: caps, texts, URIs and templates,
/// each URI, template and name declared once. The error is the field and what is wrong.
pub fn check(resources: &[ResourceSpec], templates: &[ResourceTemplateSpec]) -> Result<(), (String, String)> {
    if resources.len() > MAX_RESOURCES {
        return Err((
            "resources".into(),
            format!("declares {}; at most {MAX_RESOURCES} are allowed", resources.len()),
        ));
    }
    if templates.len() > MAX_TEMPLATES {
        let n = templates.len();
        return Err((
            "resourceTemplates".into(),
            format!("declares {n}; at most {MAX_TEMPLATES} are allowed"),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, r) in resources.iter().enumerate() {
        let at = format!("resources[{i}]");
        if let Some(why) = uri_problem(&r.uri, false) {
            return Err((format!("{at}.uri"), why));
        }
        texts(&at, &r.name, r.title.as_deref(), &r.description, r.mime_type.as_deref())?;
        if !seen.insert(r.uri.as_str()) {
            return Err((format!("{at}.uri"), format!("{:?} is declared twice", r.uri)));
        }
        if !names.insert(r.name.as_str()) {
            return Err((format!("{at}.name"), format!("{:?} names two resources", r.name)));
        }
    }
    for (i, t) in templates.iter().enumerate() {
        let at = format!("resourceTemplates[{i}]");
        if let Some(why) = uri_problem(&t.uri_template, true) {
            return Err((format!("{at}.uriTemplate"), why));
        }
        texts(&at, &t.name, t.title.as_deref(), &t.description, t.mime_type.as_deref())?;
        let vars: Vec<&str> =
            Template::parse(&t.uri_template).map(|p| p.variables().collect()).unwrap_or_default();
        if let Some(v) = t.complete.iter().find(|v| !vars.contains(&v.as_str())) {
            let why =
                format!("{v:?} is no variable of {:?} (its variables: {})", t.uri_template, vars.join(", "));
            return Err((format!("{at}.complete"), why));
        }
        if !seen.insert(t.uri_template.as_str()) {
            return Err((format!("{at}.uriTemplate"), format!("{:?} is declared twice", t.uri_template)));
        }
        if !names.insert(t.name.as_str()) {
            return Err((format!("{at}.name"), format!("{:?} names two resources", t.name)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        Template::parse(t).unwrap().matches(uri)
    }

    fn pairs(p: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(p.iter().map(|(a, b)| ((*a).into(), (*b).into())).collect())
    }

    #[test]
    fn a_reserved_expression_takes_slashes_and_a_simple_one_does_not() {
        assert_eq!(m("file:///{+path}", "file:///src/main.rs"), pairs(&[("path", "src/main.rs")]));
        assert_eq!(m("file:///{path}", "file:///src/main.rs"), None);
        assert_eq!(m("file:///{path}", "file:///main.rs"), pairs(&[("path", "main.rs")]));
        assert_eq!(m("FILE:///{path}", "file:///a"), pairs(&[("path", "a")]));
        assert_eq!(m("file:///{+path}", "file:///a?x=1"), None);
        assert_eq!(m("file:///{+path}", "file:///"), None);
        assert_eq!(m("file:///{+path}", "http:///a"), None);
    }

    #[test]
    fn literals_between_expressions_split_them_and_values_are_decoded() {
        assert_eq!(
            m("db://{table}/rows/{id}.json", "db://users/rows/4%2F2.b.json"),
            pairs(&[("table", "users"), ("id", "4/2.b")])
        );
        assert_eq!(m("notes://{+name}.md", "notes://a.b.md"), pairs(&[("name", "a.b")]));
        assert_eq!(m("notes://{name}", "notes://a%00"), None);
        assert_eq!(m("notes://{name}", "notes://a%ff"), None);
        assert_eq!(m("notes://{name}", "notes://a%4"), None);
    }

    #[test]
    fn templates_the_host_cannot_match_are_refused_with_the_reason() {
        for (t, why) in [
            ("file:///{a}{b}", "two expressions in a row"),
            ("{+uri}", "must begin with its scheme"),
            ("file:///{a", "without its `}`"),
            ("file:///a}", "without its `{`"),
            ("file:///{?q}", "`{name}` and `{+name}`"),
            ("file:///{a}/{a}", "twice"),
            ("file:///a", "no `{name}` expression"),
        ] {
            let e = Template::parse(t).unwrap_err();
            assert!(e.contains(why), "{t}: {e}");
        }
    }

    #[test]
    fn declarations_are_checked_field_by_field() {
        let r = |uri: &str| ResourceSpec {
            uri: uri.into(),
            name: "n".into(),
            title: None,
            description: String::new(),
            mime_type: None,
            size: None,
        };
        assert!(check(&[r("docs://a")], &[]).is_ok());
        let err = |rs: &[ResourceSpec]| check(rs, &[]).unwrap_err();
        assert_eq!(err(&[r("skill://x/y/SKILL.md")]).0, "resources[0].uri");
        assert!(err(&[r("no-scheme")]).1.contains("absolute URI"));
        assert!(err(&[r("docs://{a}")]).1.contains("resource template"));
        assert!(err(&[r("docs://a b")]).1.contains("whitespace"));
        assert!(
            err(&[r("docs://a"), ResourceSpec { name: "m".into(), ..r("docs://a") }]).1.contains("twice")
        );
        assert!(err(&[r("docs://a"), r("docs://b")]).1.contains("names two"));
        let bad_mime = ResourceSpec { mime_type: Some("text".into()), ..r("docs://a") };
        assert_eq!(err(&[bad_mime]).0, "resources[0].mimeType");
        let t = ResourceTemplateSpec {
            uri_template: "file:///{+path}".into(),
            name: "file".into(),
            title: None,
            description: "d".into(),
            mime_type: Some("text/plain".into()),
            complete: vec!["path".into()],
        };
        assert!(check(&[], std::slice::from_ref(&t)).is_ok());
        let bad = ResourceTemplateSpec { complete: vec!["nope".into()], ..t.clone() };
        assert_eq!(check(&[], &[bad]).unwrap_err().0, "resourceTemplates[0].complete");
        let bad = ResourceTemplateSpec { uri_template: "file:///{a}{b}".into(), ..t };
        assert_eq!(check(&[], &[bad]).unwrap_err().0, "resourceTemplates[0].uriTemplate");
    }

    #[test]
    fn textual_types() {
        for t in ["text/plain", "text/markdown; charset=utf-8", "application/json", "application/ld+json"] {
            assert!(is_textual(t), "{t}");
        }
        for t in ["image/png", "application/octet-stream", "application/zip"] {
            assert!(!is_textual(t), "{t}");
        }
    }
}

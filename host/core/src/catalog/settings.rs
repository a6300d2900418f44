//! The operator's word on the catalog: `[catalog]` (namespacing, search mode, pinned tools) and
//! the keys of `[plugin.NAME]` that choose and name a plugin's tools (`tools`, `exclude`,
//! `prefix`, `[plugin.NAME.tool.OLD] name`). A leaf: `settings::plugin` and `settings` read
//! these types; nothing here imports anything of toolhost but the spec's name rule and the
//! config's error ([`Invalid`]).

use crate::settings::invalid::Invalid;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The longest exposed name: OpenAI's limit on function names (MCP allows 128).
pub const MAX_EXPOSED: usize = 64;
/// `[catalog] search_above` when not set: more tools than this are found, not listed.
pub const DEFAULT_SEARCH_ABOVE: usize = 64;
/// `[catalog] results` when not set: tools one `find_tools` call returns.
pub const DEFAULT_RESULTS: usize = 5;
/// The most `[catalog] results` may be.
pub const MAX_RESULTS: usize = 20;

/// A tool-name pattern: `*` matches any run of characters, `?` one character, anything else
/// itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    /// A pattern; `None` for an empty one.
    pub fn new(pattern: &str) -> Option<Glob> {
        (!pattern.is_empty()).then(|| Glob(pattern.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches the whole pattern (linear backtracking on the last `*`).
    pub fn matches(&self, name: &str) -> bool {
        let (p, n): (Vec<char>, Vec<char>) = (self.0.chars().collect(), name.chars().collect());
        let (mut pi, mut ni) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ni < n.len() {
            match p.get(pi) {
                Some('*') => {
                    star = Some((pi, ni));
                    pi += 1;
                }
                Some(&c) if c == '?' || c == n[ni] => {
                    pi += 1;
                    ni += 1;
                }
                _ => match star {
                    Some((sp, sn)) => {
                        pi = sp + 1;
                        ni = sn + 1;
                        star = Some((sp, sn + 1));
                    }
                    None => return false,
                },
            }
        }
        p[pi..].iter().all(|&c| c == '*')
    }

    /// Whether the pattern has a wildcard (a plain name that matches nothing is likely a typo).
    pub fn is_plain(&self) -> bool {
        !self.0.contains(['*', '?'])
    }
}

impl std::fmt::Display for Glob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// Which of a plugin's tools are exposed, and under which names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exposure {
    /// `tools`: only the tools matching one of these (`None`: every tool).
    pub tools: Option<Vec<Glob>>,
    /// `exclude`: never the tools matching one of these.
    pub exclude: Vec<Glob>,
    /// `prefix`: put before each tool's own name.
    pub prefix: Option<String>,
    /// `[plugin.NAME.tool.OLD] name = "NEW"`: own name → exposed name (no prefix added).
    pub rename: BTreeMap<String, String>,
    /// `skills`: only the plugin's skills matching one of these are served (`None`: every one).
    pub skills: Option<Vec<Glob>>,
    /// `resources`: only its static resources and templates whose URI (or `uriTemplate`)
    /// matches one of these are served (`None`: every one).
    pub resources: Option<Vec<Glob>>,
    /// `prompts`: only its prompts matching one of these are served (`None`: every one).
    pub prompts: Option<Vec<Glob>>,
    /// `[plugin.NAME.prompt.OLD] name = "NEW"`: a prompt's own name → exposed name.
    pub prompt_rename: BTreeMap<String, String>,
}

impl Exposure {
    /// Whether the section says anything about the catalog.
    pub fn is_empty(&self) -> bool {
        *self == Exposure::default()
    }

    /// Whether the skill `name` is served.
    pub fn serves_skill(&self, name: &str) -> bool {
        selects(&self.skills, name)
    }

    /// Whether the resource (or template) `uri` is served.
    pub fn serves_resource(&self, uri: &str) -> bool {
        selects(&self.resources, uri)
    }
}

/// Whether a selection (`None`: everything) takes `name`.
pub(crate) fn selects(selection: &Option<Vec<Glob>>, name: &str) -> bool {
    selection.as_ref().is_none_or(|globs| globs.iter().any(|g| g.matches(name)))
}

/// `[plugin.NAME.tool.OLD]` and `[plugin.NAME.prompt.OLD]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRename {
    name: String,
}

/// A name an operator may give: `[A-Za-z_][A-Za-z0-9_-]*` — what OpenAI, MCP and the `[TOOL]`
/// protocol all accept.
pub fn is_exposable(s: &str) -> bool {
    toolhost_spec::manifest::is_plugin_name(s)
}

/// Resolve `[plugin.NAME] WHAT` (`key` = `plugin.NAME`; `what` = `skills`, `resources` or
/// `prompts`): glob patterns, none empty.
pub(crate) fn selection(
    key: &str,
    what: &str,
    list: Option<Vec<String>>,
) -> Result<Option<Vec<Glob>>, Invalid> {
    list.map(|list| {
        list.into_iter()
            .enumerate()
            .map(|(i, p)| Glob::new(&p).ok_or_else(|| empty_pattern(format!("{key}.{what}[{i}]"))))
            .collect()
    })
    .transpose()
}

/// Resolve `[plugin.NAME.prompt.OLD] name = "NEW"` (`key` = `plugin.NAME`): a name a prompt may
/// have (`[A-Za-z0-9_-]`, 1 to 64, not starting with `-`).
pub(crate) fn prompt_renames(
    key: &str,
    prompt: BTreeMap<String, RawRename>,
) -> Result<BTreeMap<String, String>, Invalid> {
    let mut out = BTreeMap::new();
    for (old, r) in prompt {
        if !toolhost_spec::prompts::is_prompt_name(&r.name) {
            return Err(Invalid::says(
                format!("{key}.prompt.{old}.name"),
                format!(
                    "{:?} must be 1 to {} of [A-Za-z0-9_-], not starting with `-`",
                    r.name,
                    toolhost_spec::prompts::MAX_PROMPT_NAME
                ),
            ));
        }
        out.insert(old, r.name);
    }
    Ok(out)
}

/// Resolve the catalog keys of `[plugin.NAME]` (`key` = `plugin.NAME`).
pub(crate) fn exposure(
    key: &str,
    tools: Option<Vec<String>>,
    exclude: Vec<String>,
    prefix: Option<String>,
    tool: BTreeMap<String, RawRename>,
) -> Result<Exposure, Invalid> {
    let globs = |what: &str, list: Vec<String>| {
        list.into_iter()
            .enumerate()
            .map(|(i, p)| Glob::new(&p).ok_or_else(|| empty_pattern(format!("{key}.{what}[{i}]"))))
            .collect::<Result<Vec<_>, _>>()
    };
    let tools = tools.map(|t| globs("tools", t)).transpose()?;
    let exclude = globs("exclude", exclude)?;
    if let Some(p) = &prefix
        && (!is_exposable(p) || p.len() >= MAX_EXPOSED)
    {
        return Err(Invalid::says(
            format!("{key}.prefix"),
            format!("{p:?} must match [A-Za-z_][A-Za-z0-9_-]* and be shorter than {MAX_EXPOSED} characters"),
        ));
    }
    let mut rename = BTreeMap::new();
    for (old, r) in tool {
        if !is_exposable(&r.name) || r.name.len() > MAX_EXPOSED {
            return Err(Invalid::says(
                format!("{key}.tool.{old}.name"),
                format!("{:?} must match [A-Za-z_][A-Za-z0-9_-]* (at most {MAX_EXPOSED} characters)", r.name),
            ));
        }
        rename.insert(old, r.name);
    }
    Ok(Exposure { tools, exclude, prefix, rename, ..Exposure::default() })
}

fn empty_pattern(key: String) -> Invalid {
    Invalid::says(key, "an empty pattern matches nothing")
}

/// `[catalog] namespace`: how tools of different plugins are kept apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Namespace {
    /// Tools keep their own names (or what `prefix`/`name` make of them).
    #[default]
    None,
    /// `PLUGIN.TOOL` (on OpenAI, whose names cannot hold a dot, `PLUGIN__TOOL`).
    Plugin,
}

/// `[catalog] mode`: whether the front ends list every tool or offer `find_tools`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Search above `search_above` tools, list below.
    #[default]
    Auto,
    /// Always list every tool.
    All,
    /// Always offer `find_tools` and the pinned tools only.
    Search,
}

/// The resolved `[catalog]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogSettings {
    pub namespace: Namespace,
    pub mode: Mode,
    /// In `auto` mode, search once more than this many tools are exposed.
    pub search_above: usize,
    /// Tools listed in search mode besides `find_tools` (exposed names or patterns).
    pub pin: Vec<Glob>,
    /// Tools one `find_tools` call returns.
    pub results: usize,
}

impl Default for CatalogSettings {
    fn default() -> Self {
        CatalogSettings {
            namespace: Namespace::None,
            mode: Mode::Auto,
            search_above: DEFAULT_SEARCH_ABOVE,
            pin: Vec::new(),
            results: DEFAULT_RESULTS,
        }
    }
}

impl CatalogSettings {
    /// Whether a catalog of `n` exposed tools is searched rather than listed.
    pub fn searching(&self, n: usize) -> bool {
        match self.mode {
            Mode::All => false,
            Mode::Search => true,
            Mode::Auto => n > self.search_above,
        }
    }

    /// Whether `name` is pinned (listed in search mode).
    pub fn pinned(&self, name: &str) -> bool {
        self.pin.iter().any(|g| g.matches(name))
    }
}

/// `[catalog]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCatalog {
    namespace: Option<Namespace>,
    mode: Option<Mode>,
    search_above: Option<usize>,
    #[serde(default)]
    pin: Vec<String>,
    results: Option<usize>,
}

impl RawCatalog {
    pub(crate) fn resolve(self) -> Result<CatalogSettings, Invalid> {
        let d = CatalogSettings::default();
        let results = self.results.unwrap_or(d.results);
        if !(1..=MAX_RESULTS).contains(&results) {
            return Err(Invalid::out_of_range("catalog.results", results, 1, MAX_RESULTS as u64));
        }
        let pin = self
            .pin
            .into_iter()
            .enumerate()
            .map(|(i, p)| Glob::new(&p).ok_or_else(|| empty_pattern(format!("catalog.pin[{i}]"))))
            .collect::<Result<_, _>>()?;
        Ok(CatalogSettings {
            namespace: self.namespace.unwrap_or(d.namespace),
            mode: self.mode.unwrap_or(d.mode),
            search_above: self.search_above.unwrap_or(d.search_above),
            pin,
            results,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        let g = |p: &str| Glob::new(p).unwrap();
        assert!(g("read").matches("read") && !g("read").matches("read_all"));
        assert!(g("read*").matches("read_all") && g("read*").matches("read"));
        assert!(g("*_all").matches("read_all") && !g("*_all").matches("read_all_x"));
        assert!(g("a*b*c").matches("a_x_b_y_c") && !g("a*b*c").matches("a_x_c"));
        assert!(g("l?").matches("ls") && !g("l?").matches("l"));
        assert!(g("*").matches("") && g("**x").matches("x"));
        assert!(g("ls").is_plain() && !g("l*").is_plain());
        assert_eq!(Glob::new(""), None);
    }

    #[test]
    fn names_and_patterns_are_checked() {
        let none = BTreeMap::new;
        assert!(exposure("plugin.a", None, vec![], Some("notes_".into()), none()).is_ok());
        let e = exposure("plugin.a", None, vec![], Some("no.dots".into()), none()).unwrap_err();
        assert_eq!(e.key, "plugin.a.prefix");
        assert!(e.to_string().starts_with("plugin.a.prefix: \"no.dots\" must match"), "{e}");
        let e = exposure("plugin.a", Some(vec!["".into()]), vec![], None, none()).unwrap_err();
        assert_eq!(e.key, "plugin.a.tools[0]");
        let mut tool = BTreeMap::new();
        tool.insert("get".to_string(), RawRename { name: "has space".into() });
        let e = exposure("plugin.a", None, vec![], None, tool).unwrap_err();
        assert_eq!(e.key, "plugin.a.tool.get.name");
        let e = RawCatalog { results: Some(0), ..Default::default() }.resolve().unwrap_err();
        assert_eq!(e.to_string(), "catalog.results = 0 is outside 1..=20");
    }

    #[test]
    fn auto_mode_searches_above_the_threshold() {
        let c = CatalogSettings { search_above: 2, ..Default::default() };
        assert!(!c.searching(2) && c.searching(3));
        assert!(CatalogSettings { mode: Mode::Search, ..c.clone() }.searching(0));
        assert!(!CatalogSettings { mode: Mode::All, ..c }.searching(1000));
    }
}

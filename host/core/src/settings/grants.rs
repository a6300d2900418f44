//! `toolhost.grants.toml`: the grants a human allowed with "always" — and the ones refused with
//! "never" — when toolhost asked (see `executor::grant`), kept beside the config (in the current directory without one) so the
//! operator can read, edit and revoke them (`toolhost revoke PLUGIN ITEM`). Each entry is one
//! exact item a plugin's manifest requested — never a pattern — with when and through which
//! front end it was granted. They are loaded with the config and merged into the plugin's
//! grants ([`super::Config::plugin`]); `toolhost list` shows where each came from. A leaf: it
//! imports nothing of the crate but `files`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The file name, beside the config.
pub const GRANTS_FILE: &str = "toolhost.grants.toml";

/// One exact thing a plugin may be asked about and granted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GrantItem {
    /// Send HTTP requests to this one host (`net HOST`; never a pattern).
    Net(String),
    /// Use the secret of this name, defined in `[secrets.NAME]` (`secret NAME`).
    Secret(String),
    /// The directory at this absolute host path, read-only or read-write (`fs ro PATH`, `fs rw
    /// PATH`); asked about only for the workspace a plugin requested (see `executor::grant`).
    Fs { path: String, write: bool },
    /// Run the executable at this absolute path with exactly these arguments (`exec PATH ARG…`;
    /// no argument holds whitespace, a control character or `*`, so the list is exact).
    Exec { program: String, args: Vec<String> },
    /// Open the key-value bucket of this name in the plugin's own store (`kv BUCKET`).
    Kv(String),
}

/// Whether `arg` may be one argument of an `exec` grant item: not empty, at most 256 bytes, no
/// whitespace, control character or `*` (the item is a whole argument list, never a pattern),
/// and no invisible or direction-changing character (a question must read as what it grants).
pub fn is_exact_arg(arg: &str) -> bool {
    let invisible = |c: char| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}');
    !arg.is_empty()
        && arg.len() <= 256
        && !arg.chars().any(|c| c.is_whitespace() || c.is_control() || c == '*' || invisible(c))
}

/// Arguments one asked `exec` item may hold.
pub const MAX_ITEM_ARGS: usize = 16;

fn is_item_path(path: &str) -> bool {
    path.starts_with('/')
        && path.len() <= 1024
        && !path.chars().any(|c| c.is_control())
        && !path.split('/').any(|c| c == ".." || c == ".")
}

/// Why a text is not a grant item (`item`: the text, trimmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemError {
    #[error("`{item}` is a pattern; a grant item names one exact host")]
    Pattern { item: String },
    #[error("`{item}`: {reason}")]
    Host { item: String, reason: toolhost_spec::host_pattern::NotAHostPattern },
    #[error("`{item}`: {name:?} is not a secret name")]
    SecretName { item: String, name: String },
    #[error("`{item}`: write `fs ro PATH` or `fs rw PATH`")]
    FsMode { item: String },
    #[error("`{item}`: {path:?} is not an absolute directory path")]
    FsPath { item: String, path: String },
    #[error("`{item}`: {program:?} is not an absolute program path")]
    ExecPath { item: String, program: String },
    #[error("`{item}`: an exec item names at most {MAX_ITEM_ARGS} exact arguments (no `*`)")]
    ExecArgs { item: String },
    #[error("`{item}`: {bucket:?} {}", toolhost_spec::manifest::BUCKET_RULE)]
    Bucket { item: String, bucket: String },
    #[error(
        "`{item}` is not a grant item (write `net HOST`, `secret NAME`, `fs ro|rw PATH`, `exec PATH ARG…` or `kv BUCKET`)"
    )]
    Unknown { item: String },
}

/// A grants file that cannot be read or written, naming the file (and the entry).
#[derive(Debug, thiserror::Error)]
pub enum GrantsFileError {
    #[error("cannot read grants file {}: {error}", .path.display())]
    Read { path: PathBuf, error: std::io::Error },
    #[error("grants file {}: {}", .path.display(), .error.to_string().trim_end())]
    Parse { path: PathBuf, error: toml::de::Error },
    /// Entry `index` of the `[[grant]]` or `[[deny]]` list (`list`).
    #[error("grants file {}: {list}[{index}].plugin {plugin:?} is not a plugin name", .path.display())]
    PluginName { path: PathBuf, list: &'static str, index: usize, plugin: String },
    #[error("grants file {}: {list}[{index}].item: {error}", .path.display())]
    Item { path: PathBuf, list: &'static str, index: usize, error: ItemError },
    #[error("cannot write grants file {}: {error}", .path.display())]
    Encode { path: PathBuf, error: toml::ser::Error },
    #[error("cannot write grants file {}: {error}", .path.display())]
    Write { path: PathBuf, error: std::io::Error },
}

impl GrantItem {
    /// `net api.github.com` → the item; anything else, or a pattern, is an error naming it.
    pub fn parse(s: &str) -> Result<GrantItem, ItemError> {
        let s = s.trim();
        let item = || s.to_string();
        match s.split_once(char::is_whitespace) {
            Some(("net", host)) => {
                let host = host.trim().to_ascii_lowercase();
                match toolhost_spec::HostPattern::parse(&host) {
                    Ok(_) if !host.contains('*') => Ok(GrantItem::Net(host)),
                    Ok(_) => Err(ItemError::Pattern { item: item() }),
                    Err(reason) => Err(ItemError::Host { item: item(), reason }),
                }
            }
            Some(("secret", name)) => {
                let name = name.trim();
                if !name.is_empty()
                    && name.len() <= 64
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    Ok(GrantItem::Secret(name.to_string()))
                } else {
                    Err(ItemError::SecretName { item: item(), name: name.to_string() })
                }
            }
            Some(("fs", rest)) => {
                let (mode, path) = rest.trim().split_once(char::is_whitespace).unwrap_or((rest.trim(), ""));
                let path = path.trim();
                let write = match mode {
                    "ro" => false,
                    "rw" => true,
                    _ => return Err(ItemError::FsMode { item: item() }),
                };
                if !is_item_path(path) {
                    return Err(ItemError::FsPath { item: item(), path: path.to_string() });
                }
                Ok(GrantItem::Fs { path: path.to_string(), write })
            }
            Some(("exec", rest)) => {
                let mut words = rest.split_whitespace();
                let program = words.next().unwrap_or_default();
                if !is_item_path(program) {
                    return Err(ItemError::ExecPath { item: item(), program: program.to_string() });
                }
                let args: Vec<String> = words.map(str::to_string).collect();
                if args.len() > MAX_ITEM_ARGS || !args.iter().all(|a| is_exact_arg(a)) {
                    return Err(ItemError::ExecArgs { item: item() });
                }
                Ok(GrantItem::Exec { program: program.to_string(), args })
            }
            Some(("kv", bucket)) => {
                let bucket = bucket.trim();
                if !toolhost_spec::manifest::is_bucket_name(bucket) {
                    return Err(ItemError::Bucket { item: item(), bucket: bucket.to_string() });
                }
                Ok(GrantItem::Kv(bucket.to_string()))
            }
            _ => Err(ItemError::Unknown { item: item() }),
        }
    }

    /// What the plugin wants, for a question: `send a request to api.github.com`.
    pub fn wants(&self) -> String {
        match self {
            GrantItem::Net(host) => format!("send a request to {host}"),
            GrantItem::Secret(name) => format!("use the secret {name}"),
            GrantItem::Fs { path, write: false } => format!("read the directory {path}"),
            GrantItem::Fs { path, write: true } => format!("read and write the directory {path}"),
            GrantItem::Exec { program, args } => {
                let name = program.rsplit('/').next().unwrap_or(program);
                let mut line = name.to_string();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                format!("run `{line}` ({program}, exactly these arguments)")
            }
            GrantItem::Kv(bucket) => format!("keep data between calls in its key-value bucket `{bucket}`"),
        }
    }
}

impl fmt::Display for GrantItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantItem::Net(host) => write!(f, "net {host}"),
            GrantItem::Secret(name) => write!(f, "secret {name}"),
            GrantItem::Fs { path, write } => write!(f, "fs {} {path}", if *write { "rw" } else { "ro" }),
            GrantItem::Kv(bucket) => write!(f, "kv {bucket}"),
            GrantItem::Exec { program, args } => {
                write!(f, "exec {program}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                Ok(())
            }
        }
    }
}

/// One "always" (or "never") answer, as written in the grants file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedGrant {
    pub plugin: String,
    pub item: GrantItem,
    /// When it was answered (RFC 3339, UTC).
    pub granted: String,
    /// Through which front end (`terminal`, …).
    pub by: String,
    /// Who answered: the key of the caller's principal (`local:USER`, `token:NAME`,
    /// `oauth:ISSUER#SUBJECT`; see `identity::Principal::key`); `None` in entries written
    /// before identities existed.
    pub who: Option<String>,
    /// "Never": refused from now on, never asked about again (a `[[deny]]` entry).
    pub deny: bool,
    /// SHA-256 (hex) of the plugin file the question was about; under `[plugin.NAME]
    /// asked_grants = "this_version"` the answer holds for that file only.
    pub sha256: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    grant: Vec<RawGrant>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deny: Vec<RawGrant>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    plugin: String,
    item: String,
    granted: String,
    by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    who: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

const HEADER: &str = "# Grants allowed with \"always\" ([[grant]]) and refused with \"never\" ([[deny]]) when toolhost\n\
# asked. Each is one exact item the plugin's manifest requested. Remove one with\n\
# `toolhost revoke PLUGIN ITEM` (or delete its entry).\n\n";

/// The grants in `path` (none when the file does not exist); errors name the file and entry.
pub fn load(path: &Path) -> Result<Vec<AskedGrant>, GrantsFileError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(GrantsFileError::Read { path: path.to_path_buf(), error }),
    };
    let raw: RawFile =
        toml::from_str(&text).map_err(|error| GrantsFileError::Parse { path: path.to_path_buf(), error })?;
    let entries = |list: Vec<RawGrant>, key: &'static str, deny: bool| {
        list.into_iter().enumerate().map(move |(index, g)| {
            let path = path.to_path_buf();
            if !toolhost_spec::manifest::is_plugin_name(&g.plugin) {
                return Err(GrantsFileError::PluginName { path, list: key, index, plugin: g.plugin });
            }
            let item = GrantItem::parse(&g.item).map_err(|error| GrantsFileError::Item {
                path,
                list: key,
                index,
                error,
            })?;
            Ok(AskedGrant {
                plugin: g.plugin,
                item,
                granted: g.granted,
                by: g.by,
                who: g.who,
                deny,
                sha256: g.sha256,
            })
        })
    };
    entries(raw.grant, "grant", false).chain(entries(raw.deny, "deny", true)).collect()
}

fn save(path: &Path, grants: &[AskedGrant]) -> Result<(), GrantsFileError> {
    let raw_of = |deny: bool| -> Vec<RawGrant> {
        grants
            .iter()
            .filter(|g| g.deny == deny)
            .map(|g| RawGrant {
                plugin: g.plugin.clone(),
                item: g.item.to_string(),
                granted: g.granted.clone(),
                by: g.by.clone(),
                who: g.who.clone(),
                sha256: g.sha256.clone(),
            })
            .collect()
    };
    let raw = RawFile { grant: raw_of(false), deny: raw_of(true) };
    let body =
        toml::to_string(&raw).map_err(|error| GrantsFileError::Encode { path: path.to_path_buf(), error })?;
    crate::files::write_atomic(path, format!("{HEADER}{body}").as_bytes())
        .map_err(|error| GrantsFileError::Write { path: path.to_path_buf(), error })
}

/// Add `grant` to the file at `path`, in place of any answer about the same plugin and item.
pub fn add(path: &Path, grant: AskedGrant) -> Result<(), GrantsFileError> {
    let _one_at_a_time = crate::files::changing(path);
    let mut all = load(path)?;
    if all.contains(&grant) {
        return Ok(());
    }
    all.retain(|g| !(g.plugin == grant.plugin && g.item == grant.item));
    all.push(grant);
    save(path, &all)
}

/// Remove `plugin`'s `item` from the file at `path`; whether it was there.
pub fn revoke(path: &Path, plugin: &str, item: &GrantItem) -> Result<bool, GrantsFileError> {
    let _one_at_a_time = crate::files::changing(path);
    let mut all = load(path)?;
    let before = all.len();
    all.retain(|g| !(g.plugin == plugin && &g.item == item));
    if all.len() == before {
        return Ok(false);
    }
    save(path, &all)?;
    Ok(true)
}

/// `2026-11-30T19:04:05Z` for `t` (UTC; a clock outside 1970–9999 reads as the nearer end).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(rfc3339_range(t)).to_string()
}

/// `t` within what RFC 3339 can write (and `humantime` formats): 1970 to the end of 9999.
pub fn rfc3339_range(t: std::time::SystemTime) -> std::time::SystemTime {
    let last = std::time::UNIX_EPOCH + std::time::Duration::from_secs(253_402_300_799);
    t.clamp(std::time::UNIX_EPOCH, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_exact_hosts_never_patterns() {
        assert_eq!(GrantItem::parse("net API.github.com").unwrap(), GrantItem::Net("api.github.com".into()));
        let pattern = |s: &str| ItemError::Pattern { item: s.into() };
        assert_eq!(GrantItem::parse("net *.github.com"), Err(pattern("net *.github.com")));
        assert_eq!(GrantItem::parse(" net * "), Err(pattern("net *")));
        let e = GrantItem::parse("dir /etc").unwrap_err();
        assert!(matches!(e, ItemError::Unknown { .. }) && e.to_string().contains("not a grant item"), "{e}");
        assert!(GrantItem::parse("fs /etc").is_err());
        assert!(GrantItem::parse("fs ro etc").is_err());
        assert!(GrantItem::parse("fs ro /a/../etc").is_err());
        let ws = GrantItem::parse("fs rw /home/me/ws").unwrap();
        assert_eq!(ws, GrantItem::Fs { path: "/home/me/ws".into(), write: true });
        assert_eq!(ws.to_string(), "fs rw /home/me/ws");
        assert_eq!(ws.wants(), "read and write the directory /home/me/ws");
        let git = GrantItem::parse("exec /usr/bin/git status --short").unwrap();
        assert_eq!(
            git,
            GrantItem::Exec { program: "/usr/bin/git".into(), args: vec!["status".into(), "--short".into()] }
        );
        assert_eq!(git.to_string(), "exec /usr/bin/git status --short");
        assert_eq!(git.wants(), "run `git status --short` (/usr/bin/git, exactly these arguments)");
        assert!(GrantItem::parse("exec git status").is_err(), "not an absolute path");
        let e = GrantItem::parse("exec /usr/bin/git log *").unwrap_err();
        assert!(matches!(e, ItemError::ExecArgs { .. }) && e.to_string().contains("no `*`"), "{e}");
        assert!(!is_exact_arg("status\u{202E}hsup"), "a direction override");
        assert!(!is_exact_arg("a\u{200B}b") && !is_exact_arg("") && is_exact_arg("--short"));
        assert_eq!(GrantItem::parse("secret api_token").unwrap(), GrantItem::Secret("api_token".into()));
        assert!(GrantItem::parse("secret a b").is_err());
        assert!(GrantItem::parse("net https://x.org").is_err());
        assert_eq!(GrantItem::Net("a.org".into()).to_string(), "net a.org");
    }

    #[test]
    fn added_grants_are_loaded_and_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(GRANTS_FILE);
        assert!(load(&path).unwrap().is_empty(), "no file: no grants");
        let g = AskedGrant {
            plugin: "web".into(),
            item: GrantItem::Net("api.github.com".into()),
            granted: rfc3339(std::time::UNIX_EPOCH),
            by: "elicitation".into(),
            who: Some("oauth:https://as.example#alice".into()),
            deny: false,
            sha256: Some("ab".repeat(32)),
        };
        add(&path, g.clone()).unwrap();
        add(&path, g.clone()).unwrap();
        assert_eq!(load(&path).unwrap(), vec![g.clone()], "once");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Grants"));
        assert!(text.contains("who = \"oauth:https://as.example#alice\""), "who answered: {text}");
        assert!(!revoke(&path, "other", &g.item).unwrap());
        assert!(revoke(&path, "web", &g.item).unwrap());
        assert!(load(&path).unwrap().is_empty());
        let never = AskedGrant { deny: true, ..g.clone() };
        add(&path, g.clone()).unwrap();
        add(&path, never.clone()).unwrap();
        assert_eq!(load(&path).unwrap(), vec![never.clone()], "the last answer replaces the earlier one");
        assert!(std::fs::read_to_string(&path).unwrap().contains("[[deny]]"));
        assert!(revoke(&path, "web", &g.item).unwrap());
        std::fs::write(&path, "[[grant]]\nplugin = \"web\"\nitem = \"net *\"\ngranted = \"x\"\nby = \"y\"\n")
            .unwrap();
        let e = load(&path).unwrap_err();
        assert!(
            matches!(&e, GrantsFileError::Item { index: 0, error: ItemError::Pattern { .. }, .. }),
            "{e}"
        );
        let e = e.to_string();
        assert!(e.contains("grant[0].item") && e.contains(GRANTS_FILE), "{e}");
    }

    /// Answers given at once (two sessions, two questions) are all kept: each is added to the
    /// file as the last one left it, and the file is whole.
    #[test]
    fn answers_at_once_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(GRANTS_FILE);
        std::thread::scope(|s| {
            for n in 0..16 {
                let path = &path;
                s.spawn(move || {
                    let g = AskedGrant {
                        plugin: "web".into(),
                        item: GrantItem::Net(format!("h{n}.example")),
                        granted: rfc3339(std::time::UNIX_EPOCH),
                        by: "console".into(),
                        who: None,
                        deny: false,
                        sha256: None,
                    };
                    add(path, g).unwrap();
                });
            }
        });
        assert_eq!(load(&path).unwrap().len(), 16);
        // Another process's change under way (its lock taken here by hand): this one waits.
        let held = std::fs::File::open(dir.path()).unwrap();
        held.lock().unwrap();
        std::thread::scope(|s| {
            let revoking = s.spawn(|| revoke(&path, "web", &GrantItem::Net("h0.example".into())));
            std::thread::sleep(std::time::Duration::from_millis(200));
            assert!(!revoking.is_finished(), "the revoke waited for the other change");
            held.unlock().unwrap();
            assert!(revoking.join().unwrap().unwrap());
        });
        assert_eq!(load(&path).unwrap().len(), 15);
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_152_445);
        assert_eq!(rfc3339(t), "2026-12-01T19:14:05Z");
        let far = std::time::UNIX_EPOCH + std::time::Duration::from_secs(400_000_000_000);
        assert_eq!(rfc3339(far), "9999-12-31T23:59:59Z");
    }
}

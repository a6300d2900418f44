//! Grants asked at the moment they are needed. When a call fails because the host refused
//! something its plugin requested in its manifest and the operator has not granted, and the
//! plugin's `on_missing` is not `refuse`, the executor asks the human through the [`AskGrant`]
//! a front end attached — naming the plugin, the tool and the one exact item, never a pattern
//! — and on "once" or "always" runs the call again with that item granted. The call is run
//! again from the start: a tool that is not idempotent may have done part of its work before
//! the refusal. What can be asked about, each recorded by the host as it was refused:
//! - a network host ([`askable`]): one exact host a `net` request matches;
//! - a secret: one the manifest requests and the operator defined;
//! - a program ([`askable_programs`]): a `run` of a program the manifest requests by name
//!   (never through `*`) and the operator has not granted under that name; the item is the
//!   executable the operator's `PATH` resolves, with exactly the refused arguments;
//! - a key-value bucket ([`askable_buckets`]): one the manifest requests and a call's `open`
//!   was refused;
//! - the workspace ([`askable_workspace`]): when the manifest requests it, the operator has
//!   not granted it, and the failed call tried paths outside every directory granted to it
//!   (the no-access directory saw them); the item is the workspace's path at the requested
//!   mode. Other named directories are never asked about: only the operator can say which
//!   host path a name means.
//!
//! Only items the manifest requested can be asked about (a refusal of anything else is final
//! and causes no question), only a human answers (an [`AskGrant`] belongs to a front end that
//! reaches a person, e.g. the terminal; nothing in a tool's arguments or a model's reply can
//! answer), "always" is written to the grants file (`settings::grants`), and "deny" is
//! remembered for the executor's lifetime (the session) so a model retrying the call is not
//! asked about again.

use super::observer::{DecidedBy, GrantAnswer};
use crate::capability::net::Refusal;
use crate::settings::GrantItem;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// Questions asked about one call at most (each answer may let the call reach the next
/// missing host).
pub(super) const MAX_QUESTIONS: usize = 4;

/// What a human is asked.
#[derive(Debug, Clone)]
pub struct GrantRequest {
    pub plugin: String,
    /// The tool's exposed name.
    pub tool: String,
    /// The call's arguments (shown with the question, like a danger question's).
    pub args: Vec<String>,
    /// The exact item, always one the plugin's manifest requested.
    pub item: GrantItem,
    /// SHA-256 of the plugin file that will run with the grant.
    pub plugin_hash: [u8; 32],
}

impl GrantRequest {
    /// `web wants to send a request to api.github.com`.
    pub fn sentence(&self) -> String {
        format!("{} wants to {}", self.plugin, self.item.wants())
    }
}

/// Asks a human whether a plugin may have a grant it requested.
pub trait AskGrant: Send + Sync {
    fn ask<'a>(&'a self, req: &'a GrantRequest) -> Pin<Box<dyn Future<Output = GrantAnswer> + Send + 'a>>;

    /// Who answers, for the audit trail.
    fn decided_by(&self) -> DecidedBy;

    /// Whether it asks when the plugin's `on_missing` is unset (the terminal: yes); otherwise
    /// only under an explicit `on_missing = "ask"` (an MCP client: `serve` refuses by default).
    fn by_default(&self) -> bool {
        true
    }
}

/// What the humans of this session answered: denied items (never asked again) and items
/// allowed "always" (applied to later calls without waiting for a reload).
#[derive(Debug, Default)]
pub(super) struct Session {
    denied: Mutex<BTreeSet<(String, GrantItem)>>,
    allowed: Mutex<BTreeMap<String, Vec<GrantItem>>>,
    /// Something was ever allowed (until then a call reads nothing under the lock).
    any_allowed: std::sync::atomic::AtomicBool,
}

impl Session {
    pub(super) fn denied(&self, plugin: &str, item: &GrantItem) -> bool {
        self.denied.lock().unwrap_or_else(|p| p.into_inner()).contains(&(plugin.to_string(), item.clone()))
    }

    pub(super) fn deny(&self, plugin: &str, item: &GrantItem) {
        self.denied.lock().unwrap_or_else(|p| p.into_inner()).insert((plugin.to_string(), item.clone()));
    }

    pub(super) fn allow(&self, plugin: &str, item: &GrantItem) {
        let mut all = self.allowed.lock().unwrap_or_else(|p| p.into_inner());
        let items = all.entry(plugin.to_string()).or_default();
        if !items.contains(item) {
            items.push(item.clone());
        }
        // Set under the lock: a call that sees it reads the map, which already has the item.
        self.any_allowed.store(true, std::sync::atomic::Ordering::Release);
    }

    pub(super) fn allowed(&self, plugin: &str) -> Vec<GrantItem> {
        if !self.any_allowed.load(std::sync::atomic::Ordering::Acquire) {
            return Vec::new();
        }
        self.allowed.lock().unwrap_or_else(|p| p.into_inner()).get(plugin).cloned().unwrap_or_default()
    }
}

/// The items a call's refusals could be asked about: each refused host that one of the
/// manifest's `requested` patterns matches, as itself (the exact host, never the pattern), and
/// each refused secret the manifest requests (`secrets`) and the operator has defined
/// (`defined`: a secret with no value could not be granted by an answer). Anything the
/// manifest did not request is never asked about.
pub fn askable(
    requested: &[String],
    secrets: &[String],
    defined: &dyn Fn(&str) -> bool,
    refused: &[Refusal],
) -> Vec<GrantItem> {
    let mut out = Vec::new();
    for r in refused {
        let host = match r {
            Refusal::Host(host) => host,
            Refusal::Secret(name) => {
                let item = GrantItem::Secret(name.clone());
                if secrets.contains(name) && defined(name) && !out.contains(&item) {
                    out.push(item);
                }
                continue;
            }
            Refusal::Program { .. } | Refusal::Bucket(_) | Refusal::Private(_) => continue,
        };
        let host = host.to_ascii_lowercase();
        if host.contains('*') || toolhost_spec::HostPattern::parse(&host).is_err() {
            continue;
        }
        if requested.iter().any(|p| toolhost_spec::host_pattern::matches(p, &host)) {
            let item = GrantItem::Net(host);
            if !out.contains(&item) {
                out.push(item);
            }
        }
    }
    out
}

/// The program items a call's refused runs could be asked about: a run of a program the
/// manifest requests by that exact name (never through `*`, which names no program), that the
/// operator has not granted under that name (`granted`: a program the operator granted with
/// other arguments is the operator's decision, not a question), that `resolve` finds in the
/// operator's `PATH` (the plugin never chooses the executable), with at most
/// [`MAX_ITEM_ARGS`](crate::settings::grants::MAX_ITEM_ARGS) arguments that are each exact
/// (no whitespace, control character or `*`): the item is that executable with exactly those
/// arguments.
pub fn askable_programs(
    requested: &[String],
    granted: &dyn Fn(&str) -> bool,
    resolve: &dyn Fn(&str) -> Option<std::path::PathBuf>,
    refused: &[Refusal],
) -> Vec<GrantItem> {
    let mut out = Vec::new();
    for r in refused {
        let Refusal::Program { name, args } = r else { continue };
        if name == "*" || !requested.contains(name) || granted(name) {
            continue;
        }
        if args.len() > crate::settings::grants::MAX_ITEM_ARGS
            || !args.iter().all(|a| crate::settings::grants::is_exact_arg(a))
        {
            continue;
        }
        let Some(program) = resolve(name).and_then(|p| p.to_str().map(str::to_string)) else { continue };
        let item = GrantItem::Exec { program, args: args.clone() };
        if GrantItem::parse(&item.to_string()).as_ref() == Ok(&item) && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The bucket items a call's refusals could be asked about: each bucket the manifest requests
/// (`requested`) whose `open` was refused because the operator has not granted it.
pub fn askable_buckets(requested: &[String], refused: &[Refusal]) -> Vec<GrantItem> {
    let mut out = Vec::new();
    for r in refused {
        let Refusal::Bucket(b) = r else { continue };
        let item = GrantItem::Kv(b.clone());
        if requested.contains(b) && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The directory item a failed call could be asked about: the workspace, at the mode the
/// manifest requests, when the manifest requests it, the operator has not granted it (a
/// directory granted read-only where read-write was requested is the operator's decision, not
/// a question), and the call tried paths outside every directory granted to it (`outside`:
/// the host saw the attempts). A named directory other than the workspace is never asked
/// about: only the operator can say which host path it is.
pub fn askable_workspace(
    requested: &[toolhost_spec::manifest::FsRequest],
    granted: &[crate::capability::fs::FsGrant],
    workspace: &std::path::Path,
    outside: &[String],
    writable: bool,
) -> Option<GrantItem> {
    if outside.is_empty() || granted.iter().any(|g| g.name == "workspace") {
        return None;
    }
    let req = requested.iter().find(|r| r.path == "workspace")?;
    let write = req.mode == toolhost_spec::manifest::FsMode::ReadWrite;
    if write && !writable {
        // The workspace holds one of the host's own files: no answer may make it writable.
        return None;
    }
    let item = GrantItem::Fs { path: workspace.to_str()?.to_string(), write };
    (GrantItem::parse(&item.to_string()).as_ref() == Ok(&item)).then_some(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requested_hosts_are_askable_and_only_exactly() {
        let yes = |_: &str| true;
        let askable = |requested: &[String], refused: &[Refusal]| askable(requested, &[], &yes, refused);
        let req = vec!["api.example.org".to_string()];
        assert!(askable(&req, &[Refusal::Host("evil.example.net".into())]).is_empty(), "not requested");
        assert!(askable(&req, &[Refusal::Secret("token".into())]).is_empty());
        assert!(askable(&req, &[Refusal::Private("api.example.org".into())]).is_empty(), "net_private");
        assert_eq!(
            askable(
                &req,
                &[Refusal::Host("api.example.org".into()), Refusal::Host("api.example.org".into())]
            ),
            vec![GrantItem::Net("api.example.org".into())]
        );
        let any = vec!["*".to_string()];
        assert_eq!(
            askable(&any, &[Refusal::Host("x.example.com".into())]),
            vec![GrantItem::Net("x.example.com".into())],
            "a wildcard request is asked about one exact host"
        );
        assert!(askable(&any, &[Refusal::Host("*.example.com".into())]).is_empty());
        assert!(askable(&[], &[Refusal::Host("x.example.com".into())]).is_empty(), "nothing requested");
    }

    #[test]
    fn only_requested_and_defined_secrets_are_askable() {
        let secrets = vec!["api_token".to_string()];
        let defined = |n: &str| n != "undefined";
        let refused = [
            Refusal::Secret("api_token".into()),
            Refusal::Secret("other".into()),
            Refusal::Secret("api_token".into()),
        ];
        assert_eq!(askable(&[], &secrets, &defined, &refused), vec![GrantItem::Secret("api_token".into())]);
        let undefined = vec!["undefined".to_string()];
        assert!(askable(&[], &undefined, &defined, &[Refusal::Secret("undefined".into())]).is_empty());
    }

    #[test]
    fn only_a_requested_ungranted_program_with_exact_arguments_is_askable() {
        let granted = |n: &str| n == "git";
        let resolve = |n: &str| Some(std::path::PathBuf::from(format!("/usr/bin/{n}")));
        let run = |name: &str, args: &[&str]| Refusal::Program {
            name: name.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        let req = vec!["echo".to_string(), "git".to_string()];
        let ask = |refused: &[Refusal]| askable_programs(&req, &granted, &resolve, refused);
        assert_eq!(
            ask(&[run("echo", &["hello"]), run("echo", &["hello"])]),
            vec![GrantItem::Exec { program: "/usr/bin/echo".into(), args: vec!["hello".into()] }]
        );
        assert!(ask(&[run("sh", &["-c", "x"])]).is_empty(), "not requested");
        assert!(
            ask(&[run("git", &["push"])]).is_empty(),
            "granted with other arguments: the operator's word"
        );
        assert!(ask(&[run("echo", &["a b"])]).is_empty(), "an argument with a space is not exact");
        assert!(ask(&[run("echo", &["*"])]).is_empty(), "a star would be a pattern");
        assert!(ask(&[run("echo", &["a\u{1b}[2J"])]).is_empty(), "control characters");
        let many: Vec<&str> = std::iter::repeat_n("x", 17).collect();
        assert!(ask(&[run("echo", &many)]).is_empty(), "too many arguments");
        let any = vec!["*".to_string()];
        assert!(
            askable_programs(&any, &granted, &resolve, &[run("echo", &[])]).is_empty(),
            "`*` names no program"
        );
        let nowhere = |_: &str| None;
        assert!(askable_programs(&req, &granted, &nowhere, &[run("echo", &[])]).is_empty(), "not in PATH");
    }

    #[test]
    fn the_workspace_is_askable_only_when_requested_ungranted_and_tried() {
        use toolhost_spec::manifest::{FsMode, FsRequest};
        let ws = std::path::Path::new("/home/me/ws");
        let rw = vec![FsRequest { path: "workspace".into(), mode: FsMode::ReadWrite }];
        let tried = vec!["README.txt".to_string()];
        assert_eq!(
            askable_workspace(&rw, &[], ws, &tried, true),
            Some(GrantItem::Fs { path: "/home/me/ws".into(), write: true })
        );
        assert_eq!(askable_workspace(&rw, &[], ws, &[], true), None, "nothing tried outside its grants");
        assert_eq!(
            askable_workspace(&rw, &[], ws, &tried, false),
            None,
            "a workspace holding the host's own files is never offered for writing"
        );
        let ro_req = vec![FsRequest { path: "workspace".into(), mode: FsMode::ReadOnly }];
        assert_eq!(
            askable_workspace(&ro_req, &[], ws, &tried, false),
            Some(GrantItem::Fs { path: "/home/me/ws".into(), write: false }),
            "reading it may still be asked"
        );
        let docs = vec![FsRequest { path: "docs".into(), mode: FsMode::ReadOnly }];
        assert_eq!(
            askable_workspace(&docs, &[], ws, &tried, true),
            None,
            "a named directory has no path to ask about"
        );
        let ro = crate::capability::fs::FsGrant {
            name: "workspace".into(),
            host_path: ws.into(),
            mode: FsMode::ReadOnly,
            create: false,
        };
        assert_eq!(
            askable_workspace(&rw, &[ro], ws, &tried, true),
            None,
            "granted read-only by the operator"
        );
    }

    #[test]
    fn the_session_remembers() {
        let s = Session::default();
        let item = GrantItem::Net("a.org".into());
        assert!(!s.denied("web", &item));
        s.deny("web", &item);
        assert!(s.denied("web", &item) && !s.denied("other", &item));
        s.allow("web", &item);
        s.allow("web", &item);
        assert_eq!(s.allowed("web"), vec![item]);
        assert!(s.allowed("other").is_empty());
    }

    #[test]
    fn the_question_names_plugin_and_item() {
        let r = GrantRequest {
            plugin: "web".into(),
            tool: "fetch".into(),
            args: Vec::new(),
            item: GrantItem::Net("api.github.com".into()),
            plugin_hash: [0; 32],
        };
        assert_eq!(r.sentence(), "web wants to send a request to api.github.com");
    }
}

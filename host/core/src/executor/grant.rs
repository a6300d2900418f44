//! Grants asked at the moment they are needed. When a call fails because the host refused
//! something its plugin requested in its manifest and the operator has not granted (a network
//! host, or a secret the operator defined; the `net` capability records each refusal), and the plugin's `on_missing` is
//! not `refuse`, the executor asks the human through the [`AskGrant`] a front end attached —
//! naming the plugin, the tool and the one exact item, never a pattern — and on "once" or
//! "always" runs the call again with that item granted. The call is run again from the start:
//! a tool that is not idempotent may have done part of its work before the refusal.
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
    }

    pub(super) fn allowed(&self, plugin: &str) -> Vec<GrantItem> {
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

//! What a failed call's error says beyond the failure: the path it had no access to, the grant
//! that would have allowed what the host refused.

use super::run::Ran;
use super::*;

/// The first line of a failed call's error when it tried paths outside every directory granted
/// to it: `` `files` has no access to `README.txt`: not granted (…) ``.
pub(super) fn no_access_message(plugin: &LoadedPlugin, paths: &[String]) -> String {
    let shown: Vec<String> =
        paths.iter().map(|p| format!("`{}`", p.chars().take(200).collect::<String>())).collect();
    let why = {
        let fs_missing: Vec<String> = plugin
            .missing
            .iter()
            .filter(|m| matches!(m.kind, MissingKind::Fs(_)))
            .map(|m| format!("it requests {} (grant: {})", m.what, m.how))
            .collect();
        let granted: Vec<String> = plugin.grants.fs.iter().map(|g| g.guest_path()).collect();
        if !fs_missing.is_empty() {
            format!("not granted — {}", fs_missing.join("; "))
        } else if granted.is_empty() {
            "not granted — the plugin requests no directory".to_string()
        } else {
            format!("outside the directories granted to it ({})", granted.join(", "))
        }
    };
    format!("`{}` has no access to {}: {why}", plugin.name, shown.join(", "))
}

/// The note added to a tool error from a plugin that lacks some requested capability.
///
/// Network and secret refusals are recorded by the host as they happen, so when the call hit
/// one, the note names exactly the grant that would have allowed it. Directories and
/// variables that are not granted are invisible to the host (they simply do not exist for the
/// guest), so when nothing was refused the note lists those, and says they are candidates.
/// Grants the call demonstrably did not need are never mentioned.
pub fn missing_grant_note(plugin: &str, missing: &[Missing], refused: &[Refusal]) -> Option<String> {
    let hint = |m: &Missing| format!("{} (grant: {})", m.what, m.how);
    let explained: Vec<String> =
        missing.iter().filter(|m| refused.iter().any(|r| m.explains(r))).map(hint).collect();
    if !explained.is_empty() {
        return Some(format!(
            "the host refused what plugin `{plugin}` tried because it is not granted: {}",
            explained.join("; ")
        ));
    }
    if !refused.is_empty() {
        // Refused for a reason no grant of the manifest's request would fix (e.g. a host the
        // manifest does not ask for): the error itself says why.
        return None;
    }
    let unseen: Vec<String> = missing.iter().filter(|m| !m.observable()).map(hint).collect();
    (!unseen.is_empty()).then(|| {
        format!(
            "plugin `{plugin}` is not granted everything it requested; the failure may come from one of these: {}",
            unseen.join("; ")
        )
    })
}

/// The outcome of the last run `ran` of a call of `plugin`, with what explains a failure: the
/// items the operator denied on the way (`denied`), first the path it had no access to, and
/// the note naming the grant that would have allowed what the host refused.
pub(super) fn explained(plugin: &LoadedPlugin, ran: Ran, denied: &[crate::settings::GrantItem]) -> Outcome {
    let Ran { mut outcome, refused, outside } = ran;
    if !denied.is_empty() {
        let items = denied.iter().map(ToString::to_string).collect();
        outcome.add_note(Note::Denied { plugin: plugin.name.to_string(), items });
    }
    if !outcome.success && !outside.is_empty() {
        // The failure is about a path the plugin has no access to: say so first.
        let e = outcome.error.take().unwrap_or_default();
        outcome.error = Some(format!("{}\n{e}", no_access_message(plugin, &outside)));
        let others: Vec<Missing> =
            plugin.missing.iter().filter(|m| !matches!(m.kind, MissingKind::Fs(_))).cloned().collect();
        if outcome.kind == Some(ErrorKind::ToolError)
            && let Some(note) = missing_grant_note(&plugin.name, &others, &refused)
        {
            outcome.add_note(Note::MissingGrant(note));
        }
        return outcome;
    }
    if outcome.kind == Some(ErrorKind::ToolError)
        && let Some(note) = missing_grant_note(&plugin.name, &plugin.missing, &refused)
    {
        outcome.add_note(Note::MissingGrant(note));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::missing_grant_note;
    use crate::capability::net::Refusal;
    use crate::capability::{Missing, MissingKind};

    fn missing() -> Vec<Missing> {
        vec![
            Missing {
                kind: MissingKind::Fs("workspace".into()),
                what: "fs workspace:ro".into(),
                how: "F".into(),
            },
            Missing { kind: MissingKind::Net("*".into()), what: "net *".into(), how: "N".into() },
            Missing {
                kind: MissingKind::Secret("api_token".into()),
                what: "secret api_token".into(),
                how: "S".into(),
            },
        ]
    }

    #[test]
    fn a_refusal_names_its_grant_only() {
        let n = missing_grant_note("web", &missing(), &[Refusal::Host("example.com".into())]).unwrap();
        assert!(n.contains("net * (grant: N)") && !n.contains("secret") && !n.contains("fs "), "{n}");
        let n = missing_grant_note("web", &missing(), &[Refusal::Secret("api_token".into())]).unwrap();
        assert!(n.contains("secret api_token (grant: S)") && !n.contains("net *"), "{n}");
    }

    #[test]
    fn without_a_refusal_only_unobservable_grants_are_candidates() {
        let n = missing_grant_note("web", &missing(), &[]).unwrap();
        assert!(n.contains("may come from one of these: fs workspace:ro (grant: F)"), "{n}");
        assert!(!n.contains("net *") && !n.contains("secret"), "{n}");
        let net_only = &missing()[1..];
        assert_eq!(missing_grant_note("web", net_only, &[]), None, "no refusal, nothing unseen: no note");
        // A refusal no missing grant explains (e.g. a host outside the manifest's request).
        let other = [Refusal::Secret("other".into())];
        assert_eq!(missing_grant_note("web", net_only, &other), None);
        // A private address refused: the error says why; no variable is a candidate.
        let private = [Refusal::Private("localhost".into())];
        assert_eq!(missing_grant_note("web", &missing(), &private), None);
        // A program not granted is recorded when refused: without a refusal, not a candidate.
        let exec = Missing {
            kind: MissingKind::Exec("xdg-open".into()),
            what: "exec xdg-open".into(),
            how: "E".into(),
        };
        let n = missing_grant_note("web", &[missing()[0].clone(), exec], &[]).unwrap();
        assert!(n.contains("fs workspace:ro") && !n.contains("xdg-open"), "{n}");
    }
}

//! `[approvals]`: approvals pinned in `toolhost.toml` (`[approvals.plugin.NAME]` with the
//! approved request, presentation and/or the file's SHA-256; `locked` for read-only folders),
//! and the [`Presentation`] an approval records. A leaf: it imports nothing of the crate but the
//! config's error ([`Invalid`]).

use crate::settings::invalid::Invalid;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use toolhost_spec::digest::parse_sha256;
use toolhost_spec::manifest::{Capabilities, Manifest};

/// `[approvals]` as written in `toolhost.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApprovals {
    /// Only the plugins listed here are approved (no trust on first use, no approvals file).
    locked: Option<bool>,
    #[serde(default)]
    plugin: BTreeMap<String, RawPinned>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinned {
    /// The approved request (what `list` shows as requested).
    request: Option<Capabilities>,
    /// The SHA-256 of the one approved file, as hex (`sha256:` prefix optional).
    sha256: Option<String>,
    /// How the approved version presented its tools (see [`Presentation`]).
    presentation: Option<Presentation>,
}

/// One plugin's approval pinned in the config: its request must be within `request`, its
/// tools must present themselves no weaker than `presentation`, and its file must hash to
/// `sha256`, for whichever of these are given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub request: Option<Capabilities>,
    pub sha256: Option<[u8; 32]>,
    pub presentation: Option<Presentation>,
}

/// How an approved version presented its tools: the names of all its tools, of those marked
/// `danger` and of those claiming `readOnly`, as its manifest says (the operator's own
/// `[tool.X] danger` settings are not part of it: they apply whatever the file says).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Presentation {
    #[serde(default)]
    pub tools: std::collections::BTreeSet<String>,
    #[serde(default)]
    pub danger: std::collections::BTreeSet<String>,
    #[serde(default)]
    pub read_only: std::collections::BTreeSet<String>,
}

impl Presentation {
    pub fn of(m: &Manifest) -> Presentation {
        let names = |keep: fn(&toolhost_spec::manifest::ToolSpec) -> bool| {
            m.tools.iter().filter(|t| keep(t)).map(|t| t.name.clone()).collect()
        };
        Presentation {
            tools: names(|_| true),
            danger: names(|t| t.danger),
            read_only: names(|t| t.read_only),
        }
    }
}

/// `[approvals]`, resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalLock {
    /// Plugins without an entry are held, and `.toolhost-approvals.json` is not used.
    pub locked: bool,
    pub plugins: BTreeMap<String, Pinned>,
}

impl ApprovalLock {
    pub fn resolve(raw: RawApprovals) -> Result<ApprovalLock, Invalid> {
        let mut out = ApprovalLock { locked: raw.locked.unwrap_or(false), plugins: BTreeMap::new() };
        for (name, p) in raw.plugin {
            let key = format!("approvals.plugin.{name}");
            let sha256 = match p.sha256 {
                None => None,
                Some(text) => Some(parse_sha256(&text).ok_or_else(|| {
                    Invalid::says(
                        format!("{key}.sha256"),
                        format!("{text:?} is not 64 hex digits (as `toolhost approve {name} --print --sha256` prints it)"),
                    )
                })?),
            };
            if p.request.is_none() && sha256.is_none() {
                return Err(Invalid::says(
                    key,
                    format!(
                        "give `request = {{ … }}`, `sha256 = \"…\"` or both (`toolhost approve {name} --print` prints the entry)"
                    ),
                ));
            }
            out.plugins.insert(name, Pinned { request: p.request, sha256, presentation: p.presentation });
        }
        Ok(out)
    }

    /// Whether the config says anything about approvals (then the file is not the only source).
    pub fn is_empty(&self) -> bool {
        !self.locked && self.plugins.is_empty()
    }
}

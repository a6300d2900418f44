//! The capabilities a plugin may be granted, one folder each. Each owns its settings (a leaf
//! `settings` module, composed by [`crate::settings`]), its part of request ∩ grant, and its
//! per-call host state, on which it implements its WIT interface or shadows WASI functions
//! (see [`crate::bindings`]); the sandbox composes them into one store state and projects each
//! capability's state out of it when linking. No capability names the sandbox, the engine or
//! another layer above it.
//!
//! - `fs`: granted directories (`[plugin.X] fs`), opened once and shared by the calls;
//! - [`net`]: outbound HTTP through the host (`http` import), secrets and their origins;
//! - [`process`]: programs run for a plugin (`process` import), confined by the kernel;
//! - `quota`: the per-call disk quota inside `wasi:filesystem/types`;
//! - `log`: the `log` import, capped per call and rate-limited per plugin;
//! - [`progress`]: the `progress` import, the latest report of a running call for its front end.

pub(crate) mod fs;
pub(crate) mod log;
pub mod net;
pub mod process;
pub mod progress;
pub(crate) mod quota;

/// A capability the plugin requested and the operator did not grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub kind: MissingKind,
    pub what: String,
    /// The config line that would grant it.
    pub how: String,
}

/// Which capability a [`Missing`] entry is about, so a failure can be matched with the grant
/// that would have prevented it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MissingKind {
    /// A directory (by its grant name, e.g. `workspace`).
    Fs(String),
    Env(String),
    /// A requested host pattern.
    Net(String),
    Secret(String),
    /// A requested program.
    Exec(String),
}

/// A request refused because a capability is not granted (recorded by the `http` import for
/// hosts and secrets, and by the `process` import for programs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The host name the plugin tried to reach.
    Host(String),
    /// The secret the plugin named in a header.
    Secret(String),
    /// A program the manifest requests by this name and the operator has not granted under
    /// it, with the arguments of the refused `run`.
    Program { name: String, args: Vec<String> },
}

impl Missing {
    /// Whether the host's refusal `r`, recorded during a call, is explained by this missing
    /// grant.
    pub fn explains(&self, r: &Refusal) -> bool {
        match (&self.kind, r) {
            (MissingKind::Net(pattern), Refusal::Host(host)) => {
                toolhost_spec::host_pattern::matches(pattern, host)
            }
            (MissingKind::Secret(a), Refusal::Secret(b)) => a == b,
            (MissingKind::Exec(a), Refusal::Program { name, .. }) => a == name,
            _ => false,
        }
    }

    /// Whether the host can see a refusal of this capability when it happens. Network and
    /// secret use goes through the host's `http` import, which records every refusal; a
    /// directory or variable that is not granted simply does not exist for the guest.
    pub fn observable(&self) -> bool {
        matches!(self.kind, MissingKind::Net(_) | MissingKind::Secret(_))
    }
}

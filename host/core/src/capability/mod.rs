//! The capabilities a plugin may be granted, one folder each. Each owns its part, through
//! [`Capability`]: its settings (a leaf `settings` module, composed by [`crate::settings`]), its
//! effective grant (request ∩ grant, with what is missing), what a human's answers add to it for
//! a call, its per-call state, and the host functions it links (its WIT interface, or WASI
//! functions it shadows; see [`crate::bindings`]). The one list of them is the [`capabilities!`]
//! line below: it composes their grants ([`Grants`]), their per-call states ([`Calls`]) and their
//! linking ([`add_to_linker`]). The sandbox holds a call's [`Calls`] in its store state and
//! reaches them through [`CallState`]; no capability names the sandbox, the engine or the
//! executor.
//!
//! - `fs`: granted directories (`[plugin.X] fs`), opened once and shared by the calls;
//! - `env`: environment variables (`[plugin.X] env`, `settings`), set in the WASI context;
//! - [`net`]: outbound HTTP through the host (`http` import), secrets and their origins;
//! - [`process`]: programs run for a plugin (`process` import), confined by the kernel;
//! - `quota`: the per-call disk quota inside `wasi:filesystem/types`;
//! - `log`: the `log` import, capped per call and rate-limited per plugin;
//! - [`progress`]: the `progress` import, the latest report of a running call for its front end;
//! - [`kv`]: `wasi:keyvalue`, each plugin's key-value store, kept between calls.

pub mod env;
pub mod fs;
pub mod kv;
pub mod log;
pub mod net;
pub mod process;
pub mod progress;
pub mod quota;

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
    /// A requested key-value bucket.
    Kv(String),
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
    /// A bucket the manifest requests and the operator has not granted (`open`).
    Bucket(String),
    /// A host refused because it is, or resolves to, a private address (`net_private` is not
    /// set): the call's error says so, and no grant of the manifest's request is missing.
    Private(String),
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
            (MissingKind::Kv(a), Refusal::Bucket(b)) => a == b,
            _ => false,
        }
    }

    /// Whether the host can see a refusal of this capability when it happens. Network and
    /// secret use goes through the host's `http` import, programs through the `process`
    /// import's `run`, and buckets through `wasi:keyvalue`'s `open`, which record every
    /// refusal; a directory or variable that is not granted simply does not exist for the guest.
    pub fn observable(&self) -> bool {
        matches!(
            self.kind,
            MissingKind::Net(_) | MissingKind::Secret(_) | MissingKind::Exec(_) | MissingKind::Kv(_)
        )
    }
}

/// What a plugin's effective grant is computed from: its manifest's request and the operator's
/// grant for it.
pub struct GrantContext<'a> {
    pub plugin: &'a str,
    pub request: &'a toolhost_spec::manifest::Capabilities,
    pub grant: &'a crate::settings::PluginConfig,
    /// `[secrets]`, which a secret the plugin is granted must name.
    pub secrets: &'a std::collections::BTreeMap<String, crate::settings::SecretSource>,
}

/// What a human granted for one call on top of the plugin's grant (see `executor::grant`), and
/// what those answers mean here.
pub struct Asked<'a> {
    pub items: &'a [crate::settings::GrantItem],
    /// The workspace's grant (a directory answer grants it, at the answer's mode).
    pub workspace: &'a crate::capability::fs::FsGrant,
    pub secrets: &'a std::collections::BTreeMap<String, crate::settings::SecretSource>,
}

/// What every capability's per-call state is prepared from.
pub struct CallSetup<'a> {
    /// The plugin and the tool's exposed name, shared by every call's store (no copy per call).
    pub plugin: &'a std::sync::Arc<str>,
    pub tool: &'a std::sync::Arc<str>,
    pub limits: &'a crate::settings::Limits,
    /// The call's deadline (from its arrival: waiting for a slot is part of it).
    pub deadline: std::time::Instant,
    pub config: &'a crate::settings::Config,
    /// The workspace, shared by every call's process capability.
    pub workspace: &'a std::sync::Arc<std::path::Path>,
    /// The plugin's log budget across its calls.
    pub log_bucket: Option<std::sync::Arc<log::LogBucket>>,
    /// Every plugin's key-value store.
    pub kv: &'a std::sync::Arc<kv::Stores>,
    /// The MCP session the call belongs to, if any (see `CallContext::session`).
    pub session: Option<&'a std::sync::Arc<str>>,
    /// Who makes the call, if anyone proved it (see `CallContext::principal`).
    pub principal: Option<&'a std::sync::Arc<crate::identity::Principal>>,
}

/// How the host functions are linked (what the engine was built for).
#[derive(Debug, Clone, Copy)]
pub struct LinkOptions {
    /// Writes to granted directories are charged to a call's disk quota.
    pub disk_quota: bool,
}

/// A store's state that holds a call's [`Calls`] (the sandbox's `HostState`): how each
/// capability's host functions reach their part of it.
pub trait CallState: wasmtime_wasi::WasiView + Send + 'static {
    fn calls(&mut self) -> &mut Calls;
    fn calls_ref(&self) -> &Calls;
}

/// One capability's part (see the module docs).
pub trait Capability {
    /// What the plugin may do: its request ∩ the operator's grant, computed when it loads.
    type Grant: std::fmt::Debug + Clone + Default + PartialEq + Eq + Send + Sync;
    /// Its state during one call.
    type Call: Send;

    /// The effective grant, and what the plugin requested and was not granted.
    fn effective(cx: &GrantContext<'_>) -> (Self::Grant, Vec<Missing>);

    /// `grant` with what `asked` adds to it for one call (`None`: nothing: the grant is used
    /// as is, no copy).
    fn with_asked(grant: &Self::Grant, asked: &Asked<'_>) -> Option<Self::Grant> {
        let _ = (grant, asked);
        None
    }

    /// Its state for one call under `grant`.
    fn prepare(grant: &Self::Grant, setup: &CallSetup<'_>) -> Self::Call;

    /// Link its host functions (after WASI's: a capability may shadow WASI functions).
    fn add_to_linker<S: CallState>(
        linker: &mut wasmtime::component::Linker<S>,
        options: LinkOptions,
    ) -> wasmtime::Result<()> {
        let _ = (linker, options);
        Ok(())
    }
}

/// The one list of capabilities, composed: `field: Type` each, in linking order.
macro_rules! capabilities {
    ($($name:ident: $cap:ty),* $(,)?) => {
        /// What one plugin is actually allowed, each capability's effective grant.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct Grants {
            $(pub $name: <$cap as Capability>::Grant,)*
        }

        impl Grants {
            /// Every capability's request ∩ grant, and what is missing (see [`Capability::effective`]).
            pub fn effective(cx: &GrantContext<'_>) -> (Grants, Vec<Missing>) {
                let mut missing = Vec::new();
                let grants = Grants {
                    $($name: {
                        let (g, m) = <$cap as Capability>::effective(cx);
                        missing.extend(m);
                        g
                    },)*
                };
                (grants, missing)
            }

            /// These grants with what `asked` adds for one call: borrowed when it adds nothing.
            pub fn with_asked<'g>(&'g self, asked: &Asked<'_>) -> std::borrow::Cow<'g, Grants> {
                if asked.items.is_empty() {
                    return std::borrow::Cow::Borrowed(self);
                }
                std::borrow::Cow::Owned(Grants {
                    $($name: <$cap as Capability>::with_asked(&self.$name, asked).unwrap_or_else(|| self.$name.clone()),)*
                })
            }
        }

        /// One call's state, each capability's part (the store's state holds it).
        pub struct Calls {
            $(pub $name: <$cap as Capability>::Call,)*
        }

        impl Calls {
            /// Every capability's state for a call under `grants` (see [`Capability::prepare`]).
            pub fn prepare(grants: &Grants, setup: &CallSetup<'_>) -> Calls {
                Calls { $($name: <$cap as Capability>::prepare(&grants.$name, setup),)* }
            }
        }

        /// Link every capability's host functions (see [`Capability::add_to_linker`]).
        pub fn add_to_linker<S: CallState>(linker: &mut wasmtime::component::Linker<S>, options: LinkOptions) -> wasmtime::Result<()> {
            $(<$cap as Capability>::add_to_linker(linker, options)?;)*
            Ok(())
        }
    };
}

capabilities! {
    quota: quota::Quota,
    fs: fs::Files,
    env: env::Env,
    net: net::Net,
    exec: process::Process,
    log: log::Log,
    progress: progress::ProgressCap,
    kv: kv::Kv,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::fs::FsGrant;
    use crate::settings::PluginConfig;
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use toolhost_spec::manifest::{Capabilities, FsMode, FsRequest};

    fn grant(mode: FsMode) -> PluginConfig {
        let ws = FsGrant { name: "workspace".into(), host_path: PathBuf::from("/ws"), mode, create: false };
        PluginConfig { fs: vec![ws], ..Default::default() }
    }

    fn request(mode: FsMode) -> Capabilities {
        Capabilities { fs: vec![FsRequest { path: "workspace".into(), mode }], ..Default::default() }
    }

    fn effective(request: &Capabilities, grant: &PluginConfig) -> (Grants, Vec<Missing>) {
        let secrets = BTreeMap::new();
        Grants::effective(&GrantContext { plugin: "files", request, grant, secrets: &secrets })
    }

    #[test]
    fn effective_is_the_intersection() {
        let (g, missing) = effective(&request(FsMode::ReadWrite), &grant(FsMode::ReadOnly));
        assert_eq!(g.fs[0].mode, FsMode::ReadOnly);
        assert_eq!(missing.len(), 1, "rw requested, ro granted: the difference is reported");
        let (g, missing) = effective(&request(FsMode::ReadOnly), &grant(FsMode::ReadWrite));
        assert_eq!(g.fs[0].mode, FsMode::ReadOnly, "never more than requested");
        assert!(missing.is_empty());
        let (g, missing) = effective(&Capabilities::default(), &grant(FsMode::ReadWrite));
        assert!(g.fs.is_empty(), "a grant the plugin did not request is not given");
        assert!(missing.is_empty());
        let (g, missing) = effective(&request(FsMode::ReadOnly), &PluginConfig::default());
        assert!(g.fs.is_empty());
        assert!(missing[0].how.contains("--allow-read files"), "{:?}", missing[0]);
    }

    #[test]
    fn env_needs_request_and_grant() {
        // Reads PATH, which every test environment has.
        let req = Capabilities { env: vec!["PATH".into(), "HOME".into()], ..Default::default() };
        let env = crate::capability::env::EnvConfig {
            vars: vec!["PATH".into(), "SHELL".into()],
            ..Default::default()
        };
        let grant = PluginConfig { env, ..Default::default() };
        let (g, missing) = effective(&req, &grant);
        assert_eq!(g.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["PATH"]);
        assert_eq!(missing[0].what, "env HOME");
    }

    /// A human's answers add to a call's grants only what they name, and nothing is copied
    /// when there are none.
    #[test]
    fn answers_add_the_workspace_a_host_and_a_program_for_one_call() {
        use crate::settings::GrantItem;
        let req = Capabilities {
            fs: vec![FsRequest { path: "workspace".into(), mode: FsMode::ReadWrite }],
            net: vec!["*".into()],
            exec: vec!["echo".into()],
            ..Default::default()
        };
        let (g, _) = effective(&req, &PluginConfig::default());
        let ws = FsGrant {
            name: "workspace".into(),
            host_path: "/ws".into(),
            mode: FsMode::ReadWrite,
            create: false,
        };
        let secrets = BTreeMap::new();
        let none = Asked { items: &[], workspace: &ws, secrets: &secrets };
        assert!(matches!(g.with_asked(&none), std::borrow::Cow::Borrowed(_)));
        let items = [
            GrantItem::Fs { path: "/ws".into(), write: false },
            GrantItem::Net("api.example.org".into()),
            GrantItem::Exec { program: "/usr/bin/echo".into(), args: vec!["hi".into()] },
        ];
        let asked = g.with_asked(&Asked { items: &items, workspace: &ws, secrets: &secrets });
        assert_eq!(asked.fs.len(), 1);
        assert_eq!(asked.fs[0].mode, FsMode::ReadOnly, "at the answer's mode");
        assert!(asked.net.granted.contains(&"api.example.org".to_string()));
        assert_eq!(asked.exec.granted[0].grant.name, "echo");
        assert!(g.fs.is_empty() && g.net.granted.is_empty() && g.exec.granted.is_empty(), "the plugin's own");
    }
}

//! The front ends' sections of `toolhost.toml`, composed from their owners: `[mcp]`
//! (`mcp::settings`), `[serve]` and `[audit]` (`service::settings`), `[model]`
//! (`agent::settings`), `[console]` (`console::settings`). Read from the same file as core's ([`ConfigFile`]), claimed there.

use crate::agent::settings::{ModelConfig, RawModel};
use crate::auth::settings::{RawSignIn, SignInSettings};
use crate::auth::{AuthSettings, RawAuth};
use crate::console::settings::{ConsoleSettings, RawConsole};
use crate::mcp::settings::{McpSettings, RawMcp};
use crate::service::settings::{AuditSettings, RawAudit, RawServe, ServeSettings};
use toolhost_core::Config;
use toolhost_core::settings::{ConfigError, ConfigFile, HostFile, Invalid, SecretFrom, SecretSource};

/// The resolved front-end sections.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub mcp: McpSettings,
    pub serve: ServeSettings,
    pub audit: AuditSettings,
    pub model: ModelConfig,
    pub console: ConsoleSettings,
    /// `[auth]`: MCP over HTTP as an OAuth resource server; `None` without the section.
    pub auth: Option<AuthSettings>,
    /// `[console] oauth_client_id` and the rest: the console signs people in at an issuer of
    /// `[auth]`; `None` without it.
    pub console_sign_in: Option<SignInSettings>,
}

impl Settings {
    /// The front ends' sections of `file`; `core` gives the `[secrets]` tokens and the model's
    /// key may name.
    pub fn from_file(file: &ConfigFile, core: &Config) -> Result<Settings, ConfigError> {
        let invalid = |e: Invalid| file.invalid_key(e);
        let mut console = file.section::<RawConsole>("console")?;
        let sign_in = RawSignIn {
            client_id: console.oauth_client_id.take(),
            issuer: console.oauth_issuer.take(),
            scopes: console.oauth_scopes.take(),
            redirect_uri: console.oauth_redirect_uri.take(),
        };
        let auth = file
            .section::<Option<RawAuth>>("auth")?
            .map(|a| a.resolve(&core.secrets, &file.base))
            .transpose()
            .map_err(invalid)?;
        Ok(Settings {
            mcp: file.section::<RawMcp>("mcp")?.resolve(&core.secrets, &file.base).map_err(invalid)?,
            serve: ServeSettings::resolve(file.section::<RawServe>("serve")?).map_err(invalid)?,
            audit: AuditSettings::resolve(
                file.section::<RawAudit>("audit")?,
                &file.base,
                file.source.as_deref(),
            )
            .map_err(invalid)?,
            model: file.section::<RawModel>("model")?.resolve(&core.secrets).map_err(invalid)?,
            console: ConsoleSettings::resolve(console).map_err(invalid)?,
            console_sign_in: sign_in.resolve(auth.as_ref()).map_err(invalid)?,
            auth,
        })
    }

    /// The secrets these sections read (MCP tokens, the approval key, the replay store's URL),
    /// redacted from kept arguments like `[secrets]` (`Config::extra_secrets`).
    pub fn secret_sources(&self) -> impl Iterator<Item = &SecretSource> {
        let store = self.mcp.replay_store.iter().filter_map(|s| match s {
            crate::mcp::settings::StoreUrl::Secret(s) => Some(s),
            crate::mcp::settings::StoreUrl::Plain(_) => None,
        });
        let introspection =
            self.auth.iter().flat_map(|a| &a.issuers).filter_map(|i| i.introspection.as_ref());
        self.mcp
            .tokens
            .iter()
            .map(|(_, s)| s)
            .chain(&self.mcp.approval_key)
            .chain(store)
            .chain(introspection.map(|i| &i.secret))
    }

    /// The host's own files these sections name (the audit trail, the files tokens and keys are
    /// read from): no grant may let a plugin write them (`toolhost_core::settings::host_files`).
    pub fn host_files(&self) -> Vec<HostFile> {
        let mut out: Vec<HostFile> =
            self.audit.file_for(true).into_iter().map(|f| HostFile::file("the audit trail", f)).collect();
        for s in self.secret_sources() {
            if let SecretFrom::File(path) = &s.from {
                out.push(HostFile::file(format!("the file of `{}` in [mcp]", s.name), path));
            }
        }
        out
    }
}

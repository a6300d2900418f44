//! `[console]`: whether `serve --http` serves the web console at `/`, whether it may change
//! anything, and its session cookie. A leaf: it imports nothing of the crate. Its `oauth_…`
//! keys (signing in through an authorization server of `[auth]`) are read here and resolved
//! against `[auth]` by `auth::settings::RawSignIn`.

use serde::Deserialize;
use std::time::Duration;
use toolhost_core::settings::Invalid;

/// `[console]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConsole {
    enabled: Option<bool>,
    read_only: Option<bool>,
    secure_cookie: Option<bool>,
    session_idle_minutes: Option<u64>,
    /// The console's client id at the authorization server (sign-in through `[auth]`).
    pub oauth_client_id: Option<String>,
    /// Which of `[auth] issuers` people sign in at (the first by default).
    pub oauth_issuer: Option<String>,
    /// The scopes asked for (`[auth] scopes` by default).
    pub oauth_scopes: Option<Vec<String>>,
    /// Where the authorization server sends people back (`…/console/callback`).
    pub oauth_redirect_uri: Option<String>,
}

/// `[console]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// `false`: `/` and `/console/…` answer `404`, as before the console existed.
    pub enabled: bool,
    /// The console shows everything and changes nothing: no Run, no Approve or Reject (the
    /// server refuses those requests too, whatever the page sends).
    pub read_only: bool,
    /// Mark the session cookie `Secure` (set it when a TLS proxy is in front; a request that
    /// arrives with `X-Forwarded-Proto: https` gets it anyway).
    pub secure_cookie: bool,
    /// A session unused this long is forgotten (the token is asked again).
    pub session_idle: Duration,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        ConsoleSettings {
            enabled: true,
            read_only: false,
            secure_cookie: false,
            session_idle: Duration::from_secs(12 * 3600),
        }
    }
}

impl ConsoleSettings {
    pub fn resolve(raw: RawConsole) -> Result<ConsoleSettings, Invalid> {
        let mut out = ConsoleSettings::default();
        out.enabled = raw.enabled.unwrap_or(out.enabled);
        out.read_only = raw.read_only.unwrap_or(out.read_only);
        out.secure_cookie = raw.secure_cookie.unwrap_or(out.secure_cookie);
        if let Some(m) = raw.session_idle_minutes {
            if !(1..=7 * 24 * 60).contains(&m) {
                return Err(Invalid::out_of_range("console.session_idle_minutes", m, 1, 7 * 24 * 60));
            }
            out.session_idle = Duration::from_secs(m * 60);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<crate::Settings, toolhost_core::settings::ConfigError> {
        let file = toolhost_core::settings::ConfigFile::parse(text, Path::new("/etc/toolhost"), None)?;
        let core = toolhost_core::Config::from_file(&file)?;
        let s = crate::Settings::from_file(&file, &core)?;
        file.finish()?;
        Ok(s)
    }

    #[test]
    fn console_settings_are_claimed_checked_and_safe_by_default() {
        let d = parse("").unwrap().console;
        assert_eq!(d, ConsoleSettings::default());
        assert!(d.enabled && !d.read_only && !d.secure_cookie);
        let c = parse(
            "[console]\nenabled = false\nread_only = true\nsecure_cookie = true\nsession_idle_minutes = 30\n",
        )
        .unwrap()
        .console;
        assert!(!c.enabled && c.read_only && c.secure_cookie);
        assert_eq!(c.session_idle, Duration::from_secs(1800));
        for (bad, says) in [
            ("[console]\nsession_idle_minutes = 0\n", "console.session_idle_minutes"),
            ("[console]\nreadonly = true\n", "readonly"),
            ("[console]\nenabled = \"yes\"\n", "console.enabled"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

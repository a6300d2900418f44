//! Who is calling: a [`Principal`], as the front end that authenticated the request knows it.
//! The executor carries it with the call (`CallContext::principal`) so that the audit trail, the
//! telemetry and the console can say who, and so that decisions made per identity have one
//! place to read it from. Core never authenticates anyone: front ends do, and hand this over.

/// How a principal was established.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// One of the operator's static `[mcp] tokens`: the subject is the token's name.
    Token,
    /// An OAuth 2.1 access token issued by a trusted authorization server (`[auth]`).
    Oauth,
    /// The operator's own process: the MCP client it started over stdio, the CLI, an
    /// embedding program. The subject is the system user (`$USER`).
    Local,
}

/// The local user's principal, named once per process ([`Principal::local`]).
static LOCAL: std::sync::OnceLock<std::sync::Arc<Principal>> = std::sync::OnceLock::new();

/// `[identity]`: who the operator's own process is.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdentity {
    /// The local user's name in audit lines, policies and task ownership (default: `$USER`).
    local_user: Option<String>,
}

/// The resolved `[identity]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdentitySettings {
    /// `local_user`: the subject of calls over stdio and from the CLI; `None`: `$USER`.
    pub local_user: Option<String>,
}

impl RawIdentity {
    pub fn resolve(self) -> Result<IdentitySettings, crate::settings::invalid::Invalid> {
        use crate::settings::invalid::Invalid;
        if let Some(name) = &self.local_user {
            let bad = name.trim().is_empty()
                || name.len() > 128
                || name.chars().any(|c| c.is_control() || c.is_whitespace());
            if bad {
                return Err(Invalid::value(
                    "identity.local_user",
                    format!("{name:?}"),
                    "is not a user name (1 to 128 bytes, no whitespace or control characters)",
                ));
            }
        }
        Ok(IdentitySettings { local_user: self.local_user })
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Principal {
    /// Who: the access token's `sub` (a user, or a client acting for itself), or a static
    /// token's name.
    #[serde(rename = "sub")]
    pub subject: String,
    /// The authorization server that vouched for the subject (`iss`); `None` for a static token.
    #[serde(rename = "iss", skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The OAuth client the token was issued to (`client_id`), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The scopes the token grants.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Roles or groups, from the claim the operator mapped (`[auth] groups_claim`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    pub via: Via,
}

impl Principal {
    /// The principal of a static `[mcp] tokens` entry named `name`.
    pub fn token(name: impl Into<String>) -> Principal {
        Principal {
            subject: name.into(),
            issuer: None,
            client_id: None,
            scopes: Vec::new(),
            groups: Vec::new(),
            via: Via::Token,
        }
    }

    /// The operator's own process (see [`Via::Local`]), one for the process: named by
    /// `[identity] local_user` ([`Principal::name_local_user`], at start), else `$USER`.
    pub fn local() -> std::sync::Arc<Principal> {
        LOCAL
            .get_or_init(|| {
                let user =
                    ["USER", "LOGNAME"].iter().find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()));
                Principal::local_named(user.unwrap_or_else(|| "local".into()))
            })
            .clone()
    }

    fn local_named(name: String) -> std::sync::Arc<Principal> {
        std::sync::Arc::new(Principal { via: Via::Local, ..Principal::token(name) })
    }

    /// Name the local user of this process `name` (`[identity] local_user`), once, before its
    /// first call: a later different name is refused (`Err` with the name in use), since calls
    /// may already have been made, audited and counted under it.
    pub fn name_local_user(name: &str) -> Result<(), String> {
        let named = LOCAL.get_or_init(|| Principal::local_named(name.to_string()));
        if named.subject == name { Ok(()) } else { Err(named.subject.clone()) }
    }

    /// Whether this is the operator's own process (not counted against rate limits or
    /// per-client caps: it is the operator).
    pub fn is_local(&self) -> bool {
        self.via == Via::Local
    }

    /// One string naming this principal and no other, for per-client caps and ownership:
    /// `token:NAME`, `local:USER`, or `oauth:ISSUER#SUBJECT` (two issuers may both have an
    /// `alice`).
    pub fn key(&self) -> String {
        match (&self.via, &self.issuer) {
            (Via::Oauth, Some(iss)) => format!("oauth:{iss}#{}", self.subject),
            _ => format!("{}:{}", self.via_str(), self.subject),
        }
    }

    fn via_str(&self) -> &'static str {
        match self.via {
            Via::Token => "token",
            Via::Oauth => "oauth",
            Via::Local => "local",
        }
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.via, &self.issuer) {
            (Via::Oauth, Some(iss)) => write!(f, "`{}` of {iss}", self.subject),
            (Via::Local, _) => write!(f, "the local user `{}`", self.subject),
            _ => write!(f, "token `{}`", self.subject),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_user_name_is_checked() {
        let resolve = |n: &str| RawIdentity { local_user: Some(n.into()) }.resolve();
        assert_eq!(resolve("ops-alice").unwrap().local_user.as_deref(), Some("ops-alice"));
        for bad in ["", "two words", "tab\t", &"x".repeat(129)] {
            let e = resolve(bad).unwrap_err().to_string();
            assert!(e.starts_with("identity.local_user = "), "{e}");
        }
    }

    #[test]
    fn keys_tell_issuers_and_static_tokens_apart() {
        let a = Principal { issuer: Some("https://a".into()), via: Via::Oauth, ..Principal::token("alice") };
        let b = Principal { issuer: Some("https://b".into()), ..a.clone() };
        assert_ne!(a.key(), b.key());
        assert_ne!(a.key(), Principal::token("alice").key());
        assert_eq!(Principal::token("ci").key(), "token:ci");
        assert_eq!(a.to_string(), "`alice` of https://a");
        let line = serde_json::to_value(&a).unwrap();
        assert_eq!(line, serde_json::json!({"sub": "alice", "iss": "https://a", "via": "oauth"}));
    }
}

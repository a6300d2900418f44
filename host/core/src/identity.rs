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

    /// The operator's own process (see [`Via::Local`]), one for the process.
    pub fn local() -> std::sync::Arc<Principal> {
        static LOCAL: std::sync::OnceLock<std::sync::Arc<Principal>> = std::sync::OnceLock::new();
        LOCAL
            .get_or_init(|| {
                let user =
                    ["USER", "LOGNAME"].iter().find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()));
                std::sync::Arc::new(Principal {
                    via: Via::Local,
                    ..Principal::token(user.unwrap_or_else(|| "local".into()))
                })
            })
            .clone()
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

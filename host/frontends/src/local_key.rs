//! The local key: the secret a `serve --http` without `[mcp] tokens` draws at start, so that
//! reaching the port is not enough to act as its operator. Only the person who started the
//! server sees it (one line on its stderr): the console opens with a login link carrying it,
//! and an MCP client that must be asked about dangerous calls or grants presents it as a bearer
//! token. Anything else on the machine that can connect to the port — another user's process,
//! a web page, a program or plugin the host runs — can still call the tools that ask nothing,
//! as without tokens before, but cannot sign in to the console, be asked a question or answer
//! one.

use sha2::Digest;
use subtle::ConstantTimeEq;

/// 256 random bits, held with their SHA-256 (comparisons are over digests, in constant time).
pub struct LocalKey {
    value: String,
    digest: [u8; 32],
}

impl std::fmt::Debug for LocalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalKey(<redacted>)")
    }
}

/// 32 random bytes as hex (the key, a session id, a CSRF token).
pub fn random_hex() -> String {
    let mut b = [0u8; 32];
    // getrandom fails only where the OS has no randomness source at all.
    getrandom::fill(&mut b).expect("the OS random number generator");
    hex::encode(b)
}

impl LocalKey {
    /// A new key from the OS's random number generator.
    pub fn generate() -> LocalKey {
        LocalKey::from_value(random_hex())
    }

    fn from_value(value: String) -> LocalKey {
        let digest = sha2::Sha256::digest(value.as_bytes()).into();
        LocalKey { value, digest }
    }

    /// The key itself, for the one line that gives it to the operator and for redaction.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether `candidate` is the key (compared in constant time).
    pub fn matches(&self, candidate: &[u8]) -> bool {
        let digest: [u8; 32] = sha2::Sha256::digest(candidate).into();
        bool::from(digest.as_slice().ct_eq(self.digest.as_slice()))
    }

    /// Whether an `Authorization` header value is `Bearer KEY`.
    pub fn is_bearer(&self, header: Option<&[u8]>) -> bool {
        header
            .and_then(|h| h.strip_prefix(b"Bearer ").or_else(|| h.strip_prefix(b"bearer ")))
            .is_some_and(|v| self.matches(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_key_matches_and_it_never_shows_in_debug() {
        let key = LocalKey::generate();
        assert_eq!(key.value().len(), 64, "256 bits as hex");
        assert_ne!(key.value(), LocalKey::generate().value());
        assert!(key.matches(key.value().as_bytes()));
        assert!(!key.matches(&key.value().as_bytes()[1..]));
        assert!(!key.matches(b""));
        assert!(key.is_bearer(Some(format!("Bearer {}", key.value()).as_bytes())));
        assert!(!key.is_bearer(Some(format!("Basic {}", key.value()).as_bytes())));
        assert!(!key.is_bearer(Some(key.value().as_bytes())));
        assert!(!key.is_bearer(None));
        assert!(!format!("{key:?}").contains(key.value()));
    }
}

//! The sign-ins under way: each one's `state` and PKCE verifier (RFC 7636), kept by the host
//! between the redirect to the authorization server and the person's return. A state is good
//! once, for [`TTL`]; at most [`MAX_PENDING`] are kept (past it, the oldest is forgotten). Only
//! the state's SHA-256 is kept, compared in constant time. It imports nothing of the crate but
//! the random source of `local_key`.

use base64::Engine;
use sha2::Digest;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a sign-in may take, from the redirect to the authorization server to the return.
pub const TTL: Duration = Duration::from_secs(600);
/// Sign-ins under way kept at most.
pub const MAX_PENDING: usize = 256;

/// One sign-in begun: what goes to the authorization server (`state`, `challenge`) and what
/// the host keeps.
#[derive(Debug)]
pub struct Begun {
    pub state: String,
    /// `BASE64URL(SHA-256(verifier))`: the `code_challenge` of method `S256`.
    pub challenge: String,
}

/// Why a returning sign-in is not one the host is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unknown {
    #[error("this sign-in is not one this console started, or it was already used")]
    NotPending,
    #[error("this sign-in took longer than {} minutes", TTL.as_secs() / 60)]
    Expired,
}

struct Entry {
    state: [u8; 32],
    verifier: String,
    made: Instant,
}

/// The sign-ins under way.
pub struct Pending {
    ttl: Duration,
    max: usize,
    open: Mutex<Vec<Entry>>,
}

impl Default for Pending {
    fn default() -> Self {
        Pending::new(TTL, MAX_PENDING)
    }
}

fn digest(s: &str) -> [u8; 32] {
    sha2::Sha256::digest(s.as_bytes()).into()
}

/// The S256 code challenge of `verifier`.
pub fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

impl Pending {
    pub fn new(ttl: Duration, max: usize) -> Pending {
        Pending { ttl, max: max.max(1), open: Mutex::default() }
    }

    /// A new sign-in: a fresh state and PKCE verifier (each 256 random bits, hex), kept.
    pub fn begin(&self) -> Begun {
        let (state, verifier) = (crate::local_key::random_hex(), crate::local_key::random_hex());
        let challenge = challenge(&verifier);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|e| e.made.elapsed() < self.ttl);
        while open.len() >= self.max {
            open.remove(0);
        }
        open.push(Entry { state: digest(&state), verifier, made: Instant::now() });
        Begun { state, challenge }
    }

    /// The PKCE verifier of the sign-in `state` names, spending it: a second return with the
    /// same state finds nothing.
    pub fn take(&self, state: &str) -> Result<String, Unknown> {
        use subtle::ConstantTimeEq;
        let d = digest(state);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let at = open
            .iter()
            .position(|e| bool::from(e.state.as_slice().ct_eq(d.as_slice())))
            .ok_or(Unknown::NotPending)?;
        let entry = open.remove(at);
        if entry.made.elapsed() >= self.ttl {
            return Err(Unknown::Expired);
        }
        Ok(entry.verifier)
    }

    /// How many sign-ins are kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_spent_once_and_gives_back_its_verifier() {
        let p = Pending::default();
        let a = p.begin();
        let b = p.begin();
        assert_ne!(a.state, b.state);
        assert_eq!(p.take("not-a-state"), Err(Unknown::NotPending));
        let verifier = p.take(&a.state).unwrap();
        assert_eq!(challenge(&verifier), a.challenge, "the challenge is S256 of the verifier");
        assert!((43..=128).contains(&verifier.len()), "RFC 7636 §4.1 length");
        assert_eq!(p.take(&a.state), Err(Unknown::NotPending), "spent");
        assert!(p.take(&b.state).is_ok(), "the other one is still there");
        assert_eq!(p.len(), 0);
    }

    #[test]
    fn the_s256_challenge_is_rfc_7636s() {
        // RFC 7636 Appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn a_state_expires() {
        let p = Pending::new(Duration::from_millis(20), 8);
        let a = p.begin();
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(p.take(&a.state), Err(Unknown::Expired));
        assert_eq!(p.take(&a.state), Err(Unknown::NotPending), "and is forgotten");
        let _ = p.begin();
        let b = p.begin();
        std::thread::sleep(Duration::from_millis(40));
        let _ = p.begin();
        assert_eq!(p.len(), 1, "a new sign-in drops the expired ones");
        assert_eq!(p.take(&b.state), Err(Unknown::NotPending));
    }

    #[test]
    fn sign_ins_under_way_are_bounded_the_oldest_forgotten_first() {
        let p = Pending::new(TTL, 3);
        let begun: Vec<Begun> = (0..5).map(|_| p.begin()).collect();
        assert_eq!(p.len(), 3);
        assert_eq!(p.take(&begun[0].state), Err(Unknown::NotPending));
        assert_eq!(p.take(&begun[1].state), Err(Unknown::NotPending));
        for b in &begun[2..] {
            assert!(p.take(&b.state).is_ok());
        }
    }
}

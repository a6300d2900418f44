//! Confirming a dangerous tool with an MCP 2026-07-28 client, which can no longer be sent an
//! `elicitation/create` request: the first `tools/call` is answered with an
//! `InputRequiredResult` holding a form elicitation and a sealed `requestState`; the client asks
//! its user and retries the same call with `inputResponses` and the state echoed back.
//!
//! The state is the only thing that ties the answer to the question, and the client controls
//! what it echoes. So it is sealed (HMAC-SHA256 over the JSON payload, tags compared in constant
//! time) with a key drawn from the OS (`getrandom`) at process start, or derived from
//! `[mcp] approval_key` (a secret the replicas of a fleet share, so any of them opens a state
//! another issued), and carries the tool, a SHA-256 of the exact checked arguments, the SHA-256 of the plugin file that would run, a nonce and an expiry. On the
//! retry it must open (not forged or altered), not be expired, match all three bindings, and
//! its nonce must not have been redeemed before (one answer runs at most one call; the nonces
//! live in a [`ReplayStore`]: this process's memory, or a Redis the fleet shares). Any failure
//! is a protocol error (`invalid params`) naming what was wrong ([`ApprovalError`], one variant
//! per check), and nothing runs; a replay store that cannot be asked refuses too (an internal
//! error: retry).
//!
//! A grant question (`[plugin.NAME] on_missing = "ask"`, see `toolhost_core::executor::grant`)
//! is sealed the same way with one more binding, the exact item asked about
//! (`inputRequests.grant`); a danger state cannot answer a grant question, nor the reverse.

mod error;

use super::replay::{ReplayStore, StoreError};
pub use error::ApprovalError;
use rmcp::model::{
    ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolhost_core::executor::{
    AskGrant, Confirm, DangerRequest, DecidedBy, Decision, GrantAnswer, GrantRequest,
};

/// The key of the one input request toolhost sends (`inputRequests.confirm`).
pub const INPUT_KEY: &str = "confirm";
/// The key of a grant question (`inputRequests.grant`).
pub const GRANT_KEY: &str = "grant";

/// Default lifetime of an unanswered question (`[mcp] approval_ttl_s`).
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// What the sealed `requestState` says; readable by the client (signed, not encrypted), so it
/// holds digests, not the arguments.
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    tool: String,
    /// SHA-256 (hex) of the checked arguments.
    args: String,
    /// SHA-256 (hex) of the plugin file.
    plugin: String,
    nonce: String,
    /// Expiry, unix milliseconds.
    exp: u64,
    /// For a grant question, the exact item (`net api.github.com`); absent for a danger
    /// confirmation, so neither kind of state answers the other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    item: Option<String>,
}

/// Domain separation: this key signs nothing else, but the label keeps it that way by design.
const DOMAIN: &[u8] = b"toolhost/mcp/request-state/v1\0";
/// The label a shared `[mcp] approval_key` is turned into a sealing key with.
const KEY_LABEL: &[u8] = b"toolhost/mcp/approval-key/v1";
/// The shortest `[mcp] approval_key` accepted, in bytes (`openssl rand -hex 32` gives 64).
pub const MIN_SHARED_KEY_BYTES: usize = 32;

/// The sealing key for a shared secret: HMAC-SHA256(secret, label), so the secret itself signs
/// nothing. Refuses a secret shorter than [`MIN_SHARED_KEY_BYTES`].
pub fn shared_key(secret: &str) -> Result<[u8; 32], ApprovalError> {
    use hmac::Mac;
    if secret.len() < MIN_SHARED_KEY_BYTES {
        return Err(ApprovalError::ShortKey { len: secret.len() });
    }
    let mut m = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    m.update(KEY_LABEL);
    Ok(m.finalize().into_bytes().into())
}

/// Equality of two byte strings in time that depends only on their lengths (`subtle`).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// HMAC-SHA256 (RFC 2104) of the concatenated `message` parts under `key`.
fn mac(key: &[u8; 32], message: &[&[u8]]) -> [u8; 32] {
    use hmac::Mac;
    let mut m = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    for part in message {
        m.update(part);
    }
    m.finalize().into_bytes().into()
}

/// `N` random bytes from the operating system.
fn random<const N: usize>() -> Result<[u8; N], ApprovalError> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(ApprovalError::NoRandom)?;
    Ok(out)
}

/// Why a `requestState` did not open.
#[derive(Debug)]
enum OpenError {
    Forged,
    Expired,
}

/// Issues and redeems sealed approvals; one per process, shared by every MCP connection.
pub struct Approvals {
    key: [u8; 32],
    /// Whether the key is `[mcp] approval_key` (shared by a fleet) rather than this process's own.
    shared_key: bool,
    ttl: Duration,
    /// Redeemed nonces until their expiry (after it, `open` refuses the state anyway).
    redeemed: ReplayStore,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("ttl", &self.ttl)
            .field("shared_key", &self.shared_key)
            .field("redeemed", &self.redeemed)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// SHA-256 of the arguments, each length-prefixed so `["a,b"]` and `["a", "b"]` differ.
fn args_digest(args: &[String]) -> String {
    let mut h = sha2::Sha256::new();
    for a in args {
        h.update((a.len() as u64).to_be_bytes());
        h.update(a.as_bytes());
    }
    hex::encode(h.finalize())
}

impl Approvals {
    /// A fresh per-process key from the operating system, nonces in memory.
    pub fn new(ttl: Duration) -> Result<Approvals, ApprovalError> {
        Ok(Approvals { key: random()?, shared_key: false, ttl, redeemed: ReplayStore::memory() })
    }

    /// Seal with `key` (from [`shared_key`]) when given, else a per-process key; remember
    /// redeemed nonces in `store`.
    pub fn with(
        key: Option<[u8; 32]>,
        ttl: Duration,
        store: ReplayStore,
    ) -> Result<Approvals, ApprovalError> {
        let shared_key = key.is_some();
        let key = match key {
            Some(k) => k,
            None => random()?,
        };
        Ok(Approvals { key, shared_key, ttl, redeemed: store })
    }

    /// `hex(payload).hex(tag)`: readable by the client (it holds only digests), unforgeable.
    fn seal(&self, sealed: &Sealed) -> Result<String, ApprovalError> {
        let payload = serde_json::to_vec(sealed).map_err(ApprovalError::Seal)?;
        let tag = mac(&self.key, &[DOMAIN, &payload]);
        Ok(format!("{}.{}", hex::encode(&payload), hex::encode(tag)))
    }

    fn open(&self, state: &str) -> Result<Sealed, OpenError> {
        let (payload, tag) = state.split_once('.').ok_or(OpenError::Forged)?;
        let (payload, tag) = (
            hex::decode(payload).ok().ok_or(OpenError::Forged)?,
            hex::decode(tag).ok().ok_or(OpenError::Forged)?,
        );
        if !ct_eq(&mac(&self.key, &[DOMAIN, &payload]), &tag) {
            return Err(OpenError::Forged);
        }
        let sealed: Sealed = serde_json::from_slice(&payload).map_err(|_| OpenError::Forged)?;
        if now_ms() > sealed.exp {
            return Err(OpenError::Expired);
        }
        Ok(sealed)
    }

    /// The `InputRequiredResult` asking the user about `req`.
    pub fn ask(&self, req: &DangerRequest) -> Result<InputRequiredResult, ApprovalError> {
        let question = super::question(req).map_err(ApprovalError::Question)?;
        self.input_required(&req.tool, &req.args, &req.plugin_hash, None, INPUT_KEY, question)
    }

    /// One sealed question: a fresh nonce and expiry bound to the call (and the grant `item`),
    /// the form under `inputRequests.KEY`.
    fn input_required(
        &self,
        tool: &str,
        args: &[String],
        plugin_hash: &[u8; 32],
        item: Option<String>,
        key: &str,
        (message, schema): (String, rmcp::model::ElicitationSchema),
    ) -> Result<InputRequiredResult, ApprovalError> {
        let nonce: [u8; 16] = random()?;
        let sealed = Sealed {
            tool: tool.to_string(),
            args: args_digest(args),
            plugin: hex::encode(plugin_hash),
            nonce: hex::encode(nonce),
            exp: now_ms() + self.ttl.as_millis() as u64,
            item,
        };
        let state = self.seal(&sealed)?;
        let params = rmcp::model::ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        let mut requests = InputRequests::new();
        requests.insert(key.into(), InputRequest::Elicitation(ElicitRequest::new(params)));
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// Check a retried call's `requestState` and `inputResponses` against the call `req`: the
    /// user's answer decides, if the state is genuine, current, unused and about this call.
    pub async fn redeem(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        req: &DangerRequest,
    ) -> Result<Decision, ApprovalError> {
        let bound = Bound {
            tool: &req.tool,
            args: Some(&req.args),
            plugin: &req.plugin,
            hash: &req.plugin_hash,
            item: None,
        };
        self.verify(state, &bound).await?;
        let expected = r#"{"action": "accept"|"decline"|"cancel", "content": {"approve": true}}"#;
        let answer = answer(responses, &req.tool, INPUT_KEY, "elicitation", expected)?;
        Ok(super::decide(req, answer.action, answer.content.as_ref()))
    }

    /// The `InputRequiredResult` asking the user whether the plugin may have the one item of a
    /// grant question (`inputRequests.grant`: `allow`, and `always` to write it down).
    pub fn ask_grant(&self, req: &GrantRequest) -> Result<InputRequiredResult, ApprovalError> {
        let question = super::grant_question(req).map_err(ApprovalError::Question)?;
        let item = Some(req.item.to_string());
        self.input_required(&req.tool, &req.args, &req.plugin_hash, item, GRANT_KEY, question)
    }

    /// Check a retried call's `requestState` and `inputResponses.grant` against the grant
    /// question `req` the call raised again: same tool, arguments, plugin file and item.
    pub async fn redeem_grant(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        req: &GrantRequest,
    ) -> Result<GrantAnswer, ApprovalError> {
        let item = req.item.to_string();
        let bound = Bound {
            tool: &req.tool,
            args: Some(&req.args),
            plugin: &req.plugin,
            hash: &req.plugin_hash,
            item: Some(&item),
        };
        self.verify(state, &bound).await?;
        let expected =
            r#"{"action": "accept"|"decline"|"cancel", "content": {"allow": true, "always": false}}"#;
        let answer = answer(responses, &req.tool, GRANT_KEY, "grant question", expected)?;
        Ok(super::grant_answer(answer.action, answer.content.as_ref()))
    }

    /// Before a retried call runs at all: `state` must open (not forged, not expired) and name
    /// `tool` and the plugin file `hash` about to run. The arguments, the item and the nonce
    /// are checked when the question arises again ([`Approvals::redeem`],
    /// [`Approvals::redeem_grant`]).
    pub fn precheck(
        &self,
        state: &str,
        tool: &str,
        plugin: &str,
        hash: &[u8; 32],
    ) -> Result<(), ApprovalError> {
        self.check(state, &Bound { tool, args: None, plugin, hash, item: None }).map(drop)
    }

    /// Open `state` and check it against the call it is echoed with; redeem its nonce.
    async fn verify(&self, state: &str, b: &Bound<'_>) -> Result<(), ApprovalError> {
        let tool = || b.tool.to_string();
        let sealed = self.check(state, b)?;
        match (sealed.item.as_deref(), b.item) {
            (None, None) => {}
            (Some(a), Some(i)) if a == i => {}
            (Some(a), Some(i)) => {
                return Err(ApprovalError::OtherItem { tool: tool(), asked: a.into(), item: i.into() });
            }
            (Some(a), None) => return Err(ApprovalError::GrantNotDanger { tool: tool(), asked: a.into() }),
            (None, Some(i)) => return Err(ApprovalError::DangerNotGrant { tool: tool(), item: i.into() }),
        }
        match self.redeemed.redeem(&sealed.nonce, sealed.exp, now_ms()).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(ApprovalError::Replayed { tool: tool() }),
            Err(e) => Err(ApprovalError::Store(e)),
        }
    }

    /// Open `state` and check the tool, the arguments (when given) and the plugin file.
    fn check(&self, state: &str, b: &Bound<'_>) -> Result<Sealed, ApprovalError> {
        let tool = || b.tool.to_string();
        let sealed: Sealed = match self.open(state) {
            Ok(s) => s,
            Err(OpenError::Expired) => {
                return Err(ApprovalError::Expired { tool: tool(), ttl_s: self.ttl.as_secs() });
            }
            Err(OpenError::Forged) => {
                return Err(ApprovalError::Forged { tool: tool(), shared_key: self.shared_key });
            }
        };
        if sealed.tool != b.tool {
            return Err(ApprovalError::OtherTool { issued: sealed.tool, tool: tool() });
        }
        if let Some(args) = b.args
            && sealed.args != args_digest(args)
        {
            return Err(ApprovalError::OtherArguments { tool: tool() });
        }
        if sealed.plugin != hex::encode(b.hash) {
            return Err(ApprovalError::OtherPluginFile { plugin: b.plugin.to_string(), tool: tool() });
        }
        Ok(sealed)
    }
}

/// The user's answer under `inputResponses.KEY` of a retry of `tool`, read as an elicitation
/// result (`asked`: what was sent; `expected`: the answer's shape, for the message).
fn answer(
    responses: Option<&InputResponses>,
    tool: &str,
    key: &'static str,
    asked: &'static str,
    expected: &'static str,
) -> Result<ElicitResult, ApprovalError> {
    let Some(answer) = responses.and_then(|r| r.get(key)) else {
        return Err(ApprovalError::NoAnswer { tool: tool.to_string(), key, asked });
    };
    serde_json::from_value(answer.clone()).map_err(|error| ApprovalError::BadAnswer { key, error, expected })
}

/// What a sealed state must match on a retry.
struct Bound<'a> {
    tool: &'a str,
    /// Unset: not checked (yet).
    args: Option<&'a [String]>,
    plugin: &'a str,
    hash: &'a [u8; 32],
    item: Option<&'a str>,
}

/// What happened in [`MrtrConfirm`] that the handler must answer instead of the call's outcome.
#[derive(Debug)]
pub enum Interrupt {
    InputRequired(InputRequiredResult),
    /// The state or the answer is refused: a protocol error, nothing runs.
    Invalid(ApprovalError),
    /// The replay store could not be asked: refused, retryable.
    Unavailable(StoreError),
}

/// The [`Confirm`] for one 2026-07-28 `tools/call`: asks (by interrupting the call) on the first
/// round, and decides from the sealed state and the answer on the retry.
pub struct MrtrConfirm<'a> {
    pub approvals: &'a Approvals,
    pub can_elicit: bool,
    pub request_state: Option<String>,
    pub input_responses: Option<InputResponses>,
    pub interrupt: Mutex<Option<Interrupt>>,
    /// Whether `request_state` has been checked once in this call (by a danger confirmation
    /// or a grant question): a later question in the same call is asked afresh.
    pub used: std::sync::atomic::AtomicBool,
}

impl MrtrConfirm<'_> {
    fn interrupted(&self, i: Interrupt) -> Decision {
        let why = match &i {
            Interrupt::InputRequired(_) => "waiting for the user's answer".to_string(),
            Interrupt::Invalid(e) => e.to_string(),
            Interrupt::Unavailable(e) => e.to_string(),
        };
        *self.interrupt.lock().unwrap_or_else(|p| p.into_inner()) = Some(i);
        Decision::Deny(why)
    }

    /// The call is interrupted by a refused state or answer: retryable only when the replay
    /// store could not be asked.
    fn refused(&self, e: ApprovalError) -> Decision {
        match e {
            ApprovalError::Store(e) => self.interrupted(Interrupt::Unavailable(e)),
            e => self.interrupted(Interrupt::Invalid(e)),
        }
    }

    pub fn take_interrupt(&self) -> Option<Interrupt> {
        self.interrupt.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl Confirm for MrtrConfirm<'_> {
    /// Answered by the retry of the whole request, never while the call waits.
    fn asks_in_the_moment(&self) -> bool {
        false
    }

    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            let unused = !self.used.swap(true, std::sync::atomic::Ordering::SeqCst);
            match &self.request_state {
                Some(state) if unused => {
                    match self.approvals.redeem(state, self.input_responses.as_ref(), req).await {
                        Ok(d) => d,
                        Err(e) => self.refused(e),
                    }
                }
                Some(_) => self.refused(ApprovalError::AlreadyChecked { tool: req.tool.clone() }),
                None if self.input_responses.is_some() => {
                    self.refused(ApprovalError::AnswersWithoutState { tool: req.tool.clone() })
                }
                None if !self.can_elicit => super::refuse(
                    req,
                    "this MCP client cannot be asked: it does not support elicitation".into(),
                ),
                None => match self.approvals.ask(req) {
                    Ok(r) => self.interrupted(Interrupt::InputRequired(r)),
                    Err(e) => super::refuse(req, e.to_string()),
                },
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        if self.can_elicit || self.request_state.is_some() {
            DecidedBy::Elicitation
        } else {
            DecidedBy::NoOne
        }
    }

    fn pending(&self) -> bool {
        matches!(*self.interrupt.lock().unwrap_or_else(|p| p.into_inner()), Some(Interrupt::InputRequired(_)))
    }

    fn grants(&self) -> Option<&dyn AskGrant> {
        Some(self)
    }
}

/// A grant question (see `toolhost_core::executor::grant`) for a 2026-07-28 client, under
/// `[plugin.NAME] on_missing = "ask"`: the first round interrupts the call with an
/// `InputRequiredResult` whose sealed state binds the tool, the exact arguments, the plugin
/// file and the one item; the retry (which runs the call again up to the same refusal) is
/// answered from that state and `inputResponses.grant`, or refused — a forged, replayed,
/// expired, other-item or other-version state runs nothing with the item.
impl AskGrant for MrtrConfirm<'_> {
    fn ask<'a>(&'a self, req: &'a GrantRequest) -> Pin<Box<dyn Future<Output = GrantAnswer> + Send + 'a>> {
        Box::pin(async move {
            let unused = !self.used.swap(true, std::sync::atomic::Ordering::SeqCst);
            match &self.request_state {
                Some(state) if unused => {
                    match self.approvals.redeem_grant(state, self.input_responses.as_ref(), req).await {
                        Ok(answer) => answer,
                        Err(e) => {
                            self.refused(e);
                            GrantAnswer::NoOne
                        }
                    }
                }
                None if self.input_responses.is_some() => {
                    self.refused(ApprovalError::AnswersWithoutState { tool: req.tool.clone() });
                    GrantAnswer::NoOne
                }
                _ if !self.can_elicit => GrantAnswer::NoOne,
                _ => match self.approvals.ask_grant(req) {
                    Ok(r) => {
                        self.interrupted(Interrupt::InputRequired(r));
                        GrantAnswer::NoOne
                    }
                    Err(e) => {
                        tracing::warn!("cannot ask the grant question: {e}");
                        GrantAnswer::NoOne
                    }
                },
            }
        })
    }

    fn decided_by(&self) -> DecidedBy {
        Confirm::decided_by(self)
    }

    fn by_default(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;

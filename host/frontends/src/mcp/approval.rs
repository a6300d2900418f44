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
//! is a protocol error (`invalid params`) naming what was wrong, and nothing runs; a replay
//! store that cannot be asked refuses too (an internal error: retry).
//!
//! A grant question (`[plugin.NAME] on_missing = "ask"`, see `toolhost_core::executor::grant`)
//! is sealed the same way with one more binding, the exact item asked about
//! (`inputRequests.grant`); a danger state cannot answer a grant question, nor the reverse.

use super::replay::ReplayStore;
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
pub fn shared_key(secret: &str) -> Result<[u8; 32], String> {
    use hmac::Mac;
    if secret.len() < MIN_SHARED_KEY_BYTES {
        return Err(format!(
            "mcp.approval_key: the key is {} bytes; give at least {MIN_SHARED_KEY_BYTES} random bytes \
             (e.g. the output of `openssl rand -hex 32`)",
            secret.len()
        ));
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
fn random<const N: usize>() -> Result<[u8; N], String> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out)
        .map_err(|e| format!("cannot get random bytes from the system for MCP approvals: {e}"))?;
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

/// An answer to a retried call.
#[derive(Debug)]
pub enum Redeemed {
    /// The state is genuine and current; the user's answer decides.
    Decision(Decision),
    /// The state or the responses are not acceptable: a protocol error, nothing runs.
    Invalid(String),
    /// The replay store could not record the nonce: refused (fail closed), nothing runs; the
    /// same state may be retried.
    Unavailable(String),
}

impl Approvals {
    /// A fresh per-process key from the operating system, nonces in memory.
    pub fn new(ttl: Duration) -> Result<Approvals, String> {
        Ok(Approvals { key: random()?, shared_key: false, ttl, redeemed: ReplayStore::memory() })
    }

    /// Seal with `key` (from [`shared_key`]) when given, else a per-process key; remember
    /// redeemed nonces in `store`.
    pub fn with(key: Option<[u8; 32]>, ttl: Duration, store: ReplayStore) -> Result<Approvals, String> {
        let shared_key = key.is_some();
        let key = match key {
            Some(k) => k,
            None => random()?,
        };
        Ok(Approvals { key, shared_key, ttl, redeemed: store })
    }

    /// `hex(payload).hex(tag)`: readable by the client (it holds only digests), unforgeable.
    fn seal(&self, sealed: &Sealed) -> Result<String, String> {
        let payload =
            serde_json::to_vec(sealed).map_err(|e| format!("cannot seal the request state: {e}"))?;
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
    pub fn ask(&self, req: &DangerRequest) -> Result<InputRequiredResult, String> {
        let question = super::question(req)?;
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
    ) -> Result<InputRequiredResult, String> {
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

    /// Check a retried call's `requestState` and `inputResponses` against the call `req`.
    pub async fn redeem(
        &self,
        state: &str,
        responses: Option<&InputResponses>,
        req: &DangerRequest,
    ) -> Redeemed {
        let bound = Bound {
            tool: &req.tool,
            args: Some(&req.args),
            plugin: &req.plugin,
            hash: &req.plugin_hash,
            item: None,
        };
        if let Err(r) = self.verify(state, &bound).await {
            return r;
        }
        let tool = &req.tool;
        let Some(answer) = responses.and_then(|r| r.get(INPUT_KEY)) else {
            return Redeemed::Invalid(format!(
                "the retry of `{tool}` carries no inputResponses.{INPUT_KEY}: answer the elicitation that was sent"
            ));
        };
        let answer: ElicitResult = match serde_json::from_value(answer.clone()) {
            Ok(a) => a,
            Err(e) => {
                return Redeemed::Invalid(format!(
                    "inputResponses.{INPUT_KEY} is not an elicitation result ({e}); expected {{\"action\": \
                     \"accept\"|\"decline\"|\"cancel\", \"content\": {{\"approve\": true}}}}"
                ));
            }
        };
        Redeemed::Decision(super::decide(req, answer.action, answer.content.as_ref()))
    }

    /// The `InputRequiredResult` asking the user whether the plugin may have the one item of a
    /// grant question (`inputRequests.grant`: `allow`, and `always` to write it down).
    pub fn ask_grant(&self, req: &GrantRequest) -> Result<InputRequiredResult, String> {
        let question = super::grant_question(req)?;
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
    ) -> Result<GrantAnswer, Redeemed> {
        let item = req.item.to_string();
        let bound = Bound {
            tool: &req.tool,
            args: Some(&req.args),
            plugin: &req.plugin,
            hash: &req.plugin_hash,
            item: Some(&item),
        };
        self.verify(state, &bound).await?;
        let tool = &req.tool;
        let Some(answer) = responses.and_then(|r| r.get(GRANT_KEY)) else {
            return Err(Redeemed::Invalid(format!(
                "the retry of `{tool}` carries no inputResponses.{GRANT_KEY}: answer the grant question that was sent"
            )));
        };
        let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|e| {
            Redeemed::Invalid(format!(
                "inputResponses.{GRANT_KEY} is not an elicitation result ({e}); expected {{\"action\": \
                 \"accept\"|\"decline\"|\"cancel\", \"content\": {{\"allow\": true, \"always\": false}}}}"
            ))
        })?;
        Ok(super::grant_answer(answer.action, answer.content.as_ref()))
    }

    /// Before a retried call runs at all: `state` must open (not forged, not expired) and name
    /// `tool` and the plugin file `hash` about to run. The arguments, the item and the nonce
    /// are checked when the question arises again ([`Approvals::redeem`],
    /// [`Approvals::redeem_grant`]).
    pub fn precheck(&self, state: &str, tool: &str, plugin: &str, hash: &[u8; 32]) -> Result<(), String> {
        let bound = Bound { tool, args: None, plugin, hash, item: None };
        match self.check(state, &bound) {
            Ok(_) => Ok(()),
            Err(Redeemed::Invalid(e) | Redeemed::Unavailable(e)) => Err(e),
            Err(Redeemed::Decision(_)) => Err(format!("the requestState for `{tool}` is not acceptable")),
        }
    }

    /// Open `state` and check it against the call it is echoed with; redeem its nonce.
    async fn verify(&self, state: &str, b: &Bound<'_>) -> Result<(), Redeemed> {
        let tool = b.tool;
        let sealed = self.check(state, b)?;
        match (sealed.item.as_deref(), b.item) {
            (None, None) => {}
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                return Err(Redeemed::Invalid(format!(
                    "the requestState for `{tool}` answers a question about {a}, not {b}; a grant answer covers \
                     only the exact item asked about — call again without requestState to be asked about {b}"
                )));
            }
            (Some(a), None) => {
                return Err(Redeemed::Invalid(format!(
                    "the requestState for `{tool}` answers a grant question ({a}), not the confirmation of a \
                     dangerous call; call again without requestState to be asked"
                )));
            }
            (None, Some(b)) => {
                return Err(Redeemed::Invalid(format!(
                    "the requestState for `{tool}` answers the confirmation of a dangerous call, not the grant \
                     question about {b}; call again without requestState to be asked"
                )));
            }
        }
        match self.redeemed.redeem(&sealed.nonce, sealed.exp, now_ms()).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Redeemed::Invalid(format!(
                "the requestState for `{tool}` was already used; each answer covers one call — call again \
                 without requestState to be asked again"
            ))),
            Err(e) => Err(Redeemed::Unavailable(e)),
        }
    }

    /// Open `state` and check the tool, the arguments (when given) and the plugin file.
    fn check(&self, state: &str, b: &Bound<'_>) -> Result<Sealed, Redeemed> {
        let tool = b.tool;
        let sealed: Sealed = match self.open(state) {
            Ok(s) => s,
            Err(OpenError::Expired) => {
                return Err(Redeemed::Invalid(format!(
                    "the requestState for `{tool}` has expired (approvals are valid for {} s); call the tool \
                     again without requestState to be asked again",
                    self.ttl.as_secs()
                )));
            }
            Err(OpenError::Forged) if self.shared_key => {
                return Err(Redeemed::Invalid(format!(
                    "the requestState for `{tool}` was not issued by this toolhost fleet (its [mcp] approval_key) \
                     or was altered; echo the requestState exactly as received, or call again without it to be asked"
                )));
            }
            Err(OpenError::Forged) => {
                return Err(Redeemed::Invalid(format!(
                    "the requestState for `{tool}` was not issued by this toolhost process or was altered \
                     (this server has no [mcp] approval_key, so a state another replica issued does not open \
                     here); echo the requestState exactly as received, or call again without it to be asked"
                )));
            }
        };
        if sealed.tool != tool {
            return Err(Redeemed::Invalid(format!(
                "the requestState was issued for tool `{}`, not `{tool}`; call `{tool}` without requestState to be asked",
                sealed.tool
            )));
        }
        if let Some(args) = b.args
            && sealed.args != args_digest(args)
        {
            return Err(Redeemed::Invalid(format!(
                "the requestState for `{tool}` was issued for other arguments; an approval covers only the exact \
                 arguments shown to the user — call again without requestState to be asked about these"
            )));
        }
        if sealed.plugin != hex::encode(b.hash) {
            return Err(Redeemed::Invalid(format!(
                "plugin `{}` changed since the user was asked about `{tool}`; call again without requestState \
                 to be asked about the new version",
                b.plugin
            )));
        }
        Ok(sealed)
    }
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
    Invalid(String),
    /// The replay store could not be asked: refused, retryable.
    Unavailable(String),
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
            Interrupt::Invalid(e) | Interrupt::Unavailable(e) => e.clone(),
        };
        *self.interrupt.lock().unwrap_or_else(|p| p.into_inner()) = Some(i);
        Decision::Deny(why)
    }

    pub fn take_interrupt(&self) -> Option<Interrupt> {
        self.interrupt.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl Confirm for MrtrConfirm<'_> {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        Box::pin(async move {
            let unused = !self.used.swap(true, std::sync::atomic::Ordering::SeqCst);
            match &self.request_state {
                Some(state) if unused => match self.approvals.redeem(state, self.input_responses.as_ref(), req).await {
                    Redeemed::Decision(d) => d,
                    Redeemed::Invalid(e) => self.interrupted(Interrupt::Invalid(e)),
                    Redeemed::Unavailable(e) => self.interrupted(Interrupt::Unavailable(e)),
                },
                Some(_) => self.interrupted(Interrupt::Invalid(format!(
                    "the requestState of this call to `{}` was already checked; call again without it to be asked",
                    req.tool
                ))),
                None if self.input_responses.is_some() => self.interrupted(Interrupt::Invalid(format!(
                    "the call to `{}` carries inputResponses but no requestState: retry with the requestState \
                     toolhost sent, or call without inputResponses to be asked",
                    req.tool
                ))),
                None if !self.can_elicit => super::refuse(
                    req,
                    "this MCP client cannot be asked: it does not support elicitation".into(),
                ),
                None => match self.approvals.ask(req) {
                    Ok(r) => self.interrupted(Interrupt::InputRequired(r)),
                    Err(e) => super::refuse(req, e),
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
                        Err(Redeemed::Unavailable(e)) => {
                            self.interrupted(Interrupt::Unavailable(e));
                            GrantAnswer::NoOne
                        }
                        Err(Redeemed::Invalid(e)) => {
                            self.interrupted(Interrupt::Invalid(e));
                            GrantAnswer::NoOne
                        }
                        Err(Redeemed::Decision(_)) => GrantAnswer::NoOne,
                    }
                }
                None if self.input_responses.is_some() => {
                    self.interrupted(Interrupt::Invalid(format!(
                        "the call to `{}` carries inputResponses but no requestState: retry with the requestState \
                         toolhost sent, or call without inputResponses to be asked",
                        req.tool
                    )));
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
mod tests {
    use super::*;

    fn req(args: &[&str]) -> DangerRequest {
        DangerRequest {
            tool: "delete".into(),
            plugin: "files".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            plugin_hash: [7; 32],
            notes: Vec::new(),
        }
    }

    fn accept() -> InputResponses {
        let mut r = InputResponses::new();
        r.insert(INPUT_KEY.into(), serde_json::json!({"action": "accept", "content": {"approve": true}}));
        r
    }

    fn state(a: &Approvals, r: &DangerRequest) -> String {
        a.ask(r).unwrap().request_state.unwrap()
    }

    /// `Approvals::redeem`, waited for.
    fn redeem(a: &Approvals, s: &str, responses: Option<&InputResponses>, r: &DangerRequest) -> Redeemed {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(a.redeem(s, responses, r))
    }

    fn invalid(r: Redeemed) -> String {
        match r {
            Redeemed::Invalid(e) => e,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn an_accepted_state_allows_once() {
        let a = Approvals::new(DEFAULT_TTL).unwrap();
        let r = req(&["keep.txt"]);
        let s = state(&a, &r);
        assert!(matches!(redeem(&a, &s, Some(&accept()), &r), Redeemed::Decision(Decision::Allow)));
        assert!(invalid(redeem(&a, &s, Some(&accept()), &r)).contains("already used"));
    }

    #[test]
    fn forged_cross_argument_other_plugin_and_expired_states_fail() {
        let a = Approvals::new(DEFAULT_TTL).unwrap();
        let r = req(&["keep.txt"]);
        let s = state(&a, &r);
        // Alter one hex digit of the payload.
        let mid = 2;
        let c = if &s[mid..=mid] == "a" { "b" } else { "a" };
        let forged = format!("{}{c}{}", &s[..mid], &s[mid + 1..]);
        assert!(invalid(redeem(&a, &forged, Some(&accept()), &r)).contains("not issued by this toolhost"));
        let other = Approvals::new(DEFAULT_TTL).unwrap();
        assert!(invalid(redeem(&other, &s, Some(&accept()), &r)).contains("not issued by this toolhost"));
        assert!(invalid(redeem(&a, &s, Some(&accept()), &req(&["other.txt"]))).contains("other arguments"));
        assert!(
            invalid(redeem(&a, &s, Some(&accept()), &req(&["keep", ".txt"]))).contains("other arguments")
        );
        let mut changed = req(&["keep.txt"]);
        changed.plugin_hash = [8; 32];
        assert!(invalid(redeem(&a, &s, Some(&accept()), &changed)).contains("changed since"));
        let short = Approvals::new(Duration::from_millis(1)).unwrap();
        let s = state(&short, &r);
        std::thread::sleep(Duration::from_millis(20));
        assert!(invalid(redeem(&short, &s, Some(&accept()), &r)).contains("expired"));
    }

    fn grant(item: &str) -> GrantRequest {
        GrantRequest {
            plugin: "files".into(),
            tool: "delete".into(),
            args: vec!["keep.txt".into()],
            item: toolhost_core::settings::GrantItem::Net(item.into()),
            plugin_hash: [7; 32],
        }
    }

    fn grant_state(a: &Approvals, r: &GrantRequest) -> String {
        a.ask_grant(r).unwrap().request_state.unwrap()
    }

    fn answer(allow: bool, always: bool) -> InputResponses {
        let mut r = InputResponses::new();
        r.insert(
            GRANT_KEY.into(),
            serde_json::json!({"action": "accept", "content": {"allow": allow, "always": always}}),
        );
        r
    }

    fn redeem_grant(
        a: &Approvals,
        s: &str,
        responses: &InputResponses,
        r: &GrantRequest,
    ) -> Result<GrantAnswer, String> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(a.redeem_grant(s, Some(responses), r)).map_err(invalid)
    }

    #[test]
    fn a_grant_state_answers_its_item_once_and_nothing_else() {
        let a = Approvals::new(DEFAULT_TTL).unwrap();
        let r = grant("a.example.org");
        let s = grant_state(&a, &r);
        let e = redeem_grant(&a, &s, &answer(true, false), &grant("b.example.org")).unwrap_err();
        assert!(e.contains("not net b.example.org"), "{e}");
        assert!(redeem_grant(&a, &tamper(&s), &answer(true, false), &r).unwrap_err().contains("not issued"));
        let mut other = grant("a.example.org");
        other.plugin_hash = [8; 32];
        assert!(redeem_grant(&a, &s, &answer(true, false), &other).unwrap_err().contains("changed since"));
        // A danger state does not answer a grant question, nor the reverse.
        let danger = state(&a, &req(&["keep.txt"]));
        assert!(redeem_grant(&a, &danger, &answer(true, false), &r).unwrap_err().contains("dangerous call"));
        assert!(invalid(redeem(&a, &s, Some(&accept()), &req(&["keep.txt"]))).contains("grant question"));
        assert_eq!(redeem_grant(&a, &s, &answer(true, false), &r), Ok(GrantAnswer::Once));
        assert!(redeem_grant(&a, &s, &answer(true, false), &r).unwrap_err().contains("already used"));
        assert_eq!(redeem_grant(&a, &grant_state(&a, &r), &answer(true, true), &r), Ok(GrantAnswer::Always));
        assert_eq!(redeem_grant(&a, &grant_state(&a, &r), &answer(false, true), &r), Ok(GrantAnswer::Deny));
        let short = Approvals::new(Duration::from_millis(1)).unwrap();
        let s = grant_state(&short, &r);
        std::thread::sleep(Duration::from_millis(20));
        assert!(redeem_grant(&short, &s, &answer(true, false), &r).unwrap_err().contains("expired"));
    }

    fn tamper(s: &str) -> String {
        let c = if &s[2..3] == "a" { "b" } else { "a" };
        format!("{}{c}{}", &s[..2], &s[3..])
    }

    #[test]
    fn decline_and_missing_answers_do_not_allow() {
        let a = Approvals::new(DEFAULT_TTL).unwrap();
        let r = req(&["keep.txt"]);
        let mut decline = InputResponses::new();
        decline.insert(INPUT_KEY.into(), serde_json::json!({"action": "decline"}));
        assert!(matches!(
            redeem(&a, &state(&a, &r), Some(&decline), &r),
            Redeemed::Decision(Decision::Deny(_))
        ));
        assert!(invalid(redeem(&a, &state(&a, &r), None, &r)).contains("no inputResponses"));
        let mut no = InputResponses::new();
        no.insert(INPUT_KEY.into(), serde_json::json!({"action": "accept", "content": {"approve": false}}));
        assert!(matches!(redeem(&a, &state(&a, &r), Some(&no), &r), Redeemed::Decision(Decision::Deny(_))));
    }

    #[test]
    fn a_shared_key_opens_on_every_replica_and_a_per_process_key_does_not() {
        let secret = "0123456789abcdef0123456789abcdef";
        let key = || Some(shared_key(secret).unwrap());
        let a = Approvals::with(key(), DEFAULT_TTL, ReplayStore::memory()).unwrap();
        let b = Approvals::with(key(), DEFAULT_TTL, ReplayStore::memory()).unwrap();
        let r = req(&["keep.txt"]);
        let s = state(&a, &r);
        assert!(matches!(redeem(&b, &s, Some(&accept()), &r), Redeemed::Decision(Decision::Allow)));
        // Another fleet's key, and a replica without the key, both refuse, saying why.
        let other = Approvals::with(
            Some(shared_key(&secret.replace('0', "x")).unwrap()),
            DEFAULT_TTL,
            ReplayStore::memory(),
        )
        .unwrap();
        assert!(
            invalid(redeem(&other, &state(&a, &r), Some(&accept()), &r))
                .contains("not issued by this toolhost fleet")
        );
        let alone = Approvals::new(DEFAULT_TTL).unwrap();
        let e = invalid(redeem(&alone, &state(&a, &r), Some(&accept()), &r));
        assert!(
            e.contains("not issued by this toolhost process") && e.contains("no [mcp] approval_key"),
            "{e}"
        );
        assert!(shared_key("short").unwrap_err().contains("at least 32"));
    }

    #[test]
    fn an_unreachable_replay_store_refuses_and_the_state_stays_good() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let store = ReplayStore::redis(&format!("redis://127.0.0.1:{port}")).unwrap();
        let a = Approvals::with(None, DEFAULT_TTL, store).unwrap();
        let r = req(&["keep.txt"]);
        match redeem(&a, &state(&a, &r), Some(&accept()), &r) {
            Redeemed::Unavailable(e) => assert!(e.contains("replay store"), "{e}"),
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }
}

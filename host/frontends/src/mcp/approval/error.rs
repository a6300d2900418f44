//! Why a sealed confirmation (`requestState`) could not be issued, or why a retried call's
//! state and answer were refused: one variant per check [`Approvals`](super::Approvals) makes,
//! so callers branch on what failed (only a replay store that could not be asked is retryable).

use super::MIN_SHARED_KEY_BYTES;
use crate::mcp::replay::StoreError;

/// Why a confirmation could not be asked, or a retried call's `requestState` and answer were
/// refused. A refused state runs nothing; [`ApprovalError::Store`] alone may be retried with
/// the same state (the replay store could not record its nonce).
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error(
        "mcp.approval_key: the key is {len} bytes; give at least {MIN_SHARED_KEY_BYTES} random bytes \
         (e.g. the output of `openssl rand -hex 32`)"
    )]
    ShortKey { len: usize },
    #[error("cannot get random bytes from the system for MCP approvals: {0}")]
    NoRandom(getrandom::Error),
    #[error("cannot seal the request state: {0}")]
    Seal(serde_json::Error),
    /// The question's form could not be built.
    #[error("{0}")]
    Question(String),
    #[error(
        "the requestState for `{tool}` has expired (approvals are valid for {ttl_s} s); call the tool \
         again without requestState to be asked again"
    )]
    Expired { tool: String, ttl_s: u64 },
    /// Not sealed with this key, or altered; `shared_key`: the key is the fleet's.
    #[error("{}", forged(tool, *shared_key))]
    Forged { tool: String, shared_key: bool },
    #[error(
        "the requestState was issued for tool `{issued}`, not `{tool}`; call `{tool}` without requestState to be asked"
    )]
    OtherTool { issued: String, tool: String },
    #[error(
        "the requestState for `{tool}` was issued for other arguments; an approval covers only the exact \
         arguments shown to the user — call again without requestState to be asked about these"
    )]
    OtherArguments { tool: String },
    #[error(
        "plugin `{plugin}` changed since the user was asked about `{tool}`; call again without requestState \
         to be asked about the new version"
    )]
    OtherPluginFile { plugin: String, tool: String },
    #[error(
        "the requestState for `{tool}` answers a question about {asked}, not {item}; a grant answer covers \
         only the exact item asked about — call again without requestState to be asked about {item}"
    )]
    OtherItem { tool: String, asked: String, item: String },
    #[error(
        "the requestState for `{tool}` answers a grant question ({asked}), not the confirmation of a \
         dangerous call; call again without requestState to be asked"
    )]
    GrantNotDanger { tool: String, asked: String },
    #[error(
        "the requestState for `{tool}` answers the confirmation of a dangerous call, not the grant \
         question about {item}; call again without requestState to be asked"
    )]
    DangerNotGrant { tool: String, item: String },
    #[error(
        "the requestState for `{tool}` was already used; each answer covers one call — call again \
         without requestState to be asked again"
    )]
    Replayed { tool: String },
    /// The retry carries no answer under `inputResponses.KEY` (`asked`: what was sent).
    #[error("the retry of `{tool}` carries no inputResponses.{key}: answer the {asked} that was sent")]
    NoAnswer { tool: String, key: &'static str, asked: &'static str },
    #[error("inputResponses.{key} is not an elicitation result ({error}); expected {expected}")]
    BadAnswer { key: &'static str, error: serde_json::Error, expected: &'static str },
    /// A second question in one call: its state answered the first.
    #[error(
        "the requestState of this call to `{tool}` was already checked; call again without it to be asked"
    )]
    AlreadyChecked { tool: String },
    #[error(
        "the call to `{tool}` carries inputResponses but no requestState: retry with the requestState \
         toolhost sent, or call without inputResponses to be asked"
    )]
    AnswersWithoutState { tool: String },
    /// The replay store could not record the nonce: refused (fail closed); the same state may
    /// be retried.
    #[error(transparent)]
    Store(StoreError),
}

fn forged(tool: &str, shared_key: bool) -> String {
    if shared_key {
        format!(
            "the requestState for `{tool}` was not issued by this toolhost fleet (its [mcp] approval_key) \
             or was altered; echo the requestState exactly as received, or call again without it to be asked"
        )
    } else {
        format!(
            "the requestState for `{tool}` was not issued by this toolhost process or was altered \
             (this server has no [mcp] approval_key, so a state another replica issued does not open \
             here); echo the requestState exactly as received, or call again without it to be asked"
        )
    }
}

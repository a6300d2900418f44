//! Why a store operation failed, as a value: each limit names its setting, an unusable store
//! names its file, a bucket not granted says how to grant it.

use super::settings::{KvSettings, Limit};

/// A store operation that did not happen (nothing of it was written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvError {
    /// The manifest requests the bucket and the operator has not granted it.
    #[error(
        "bucket `{bucket}` is not granted to plugin `{plugin}`: grant it with `[plugin.{plugin}] kv = [\"{bucket}\"]` or `--allow-kv {plugin}={bucket}`"
    )]
    NotGranted { plugin: String, bucket: String },
    /// The manifest does not request the bucket (no grant can give it).
    #[error("plugin `{plugin}` does not request bucket `{bucket}` (its manifest's capabilities.kv)")]
    NotRequested { plugin: String, bucket: String },
    /// The bucket is scoped per MCP session and the call belongs to none.
    #[error(
        "plugin `{plugin}`'s buckets are kept per MCP session ([plugin.{plugin}] kv_scope = \"session\") and this call belongs to no session"
    )]
    NoSession { plugin: String },
    /// The bucket is scoped per identity and the call has none.
    #[error(
        "plugin `{plugin}`'s buckets are kept per identity ([plugin.{plugin}] kv_scope = \"identity\") and this call has no identity (an [mcp] tokens entry, an OAuth token, or the local user)"
    )]
    NoIdentity { plugin: String },
    /// A bound of `[kv]` was reached: `what` says how far, the setting is named.
    #[error("{what} ({})", KvSettings::key_of(*.limit))]
    Limit { limit: Limit, what: String },
    /// `increment` of a value that is not a counter.
    #[error("the value of `{key}` is not a whole number (counters are kept as decimal text, e.g. \"42\")")]
    NotANumber { key: String },
    #[error("incrementing `{key}` by {delta} goes past the range of a 64-bit integer")]
    Overflow { key: String, delta: i64 },
    /// The plugin's store cannot be opened or used (a corrupt file, a full disk, Redis down).
    #[error("the key-value store of plugin `{plugin}` ({at}) cannot be used: {why}")]
    Unavailable { plugin: String, at: String, why: String },
}

impl KvError {
    /// Whether an operator's grant would have allowed it.
    pub fn is_not_granted(&self) -> bool {
        matches!(self, KvError::NotGranted { .. })
    }
}

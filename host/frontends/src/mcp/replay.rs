//! Where redeemed approval nonces are remembered, so one 2026-07-28 `requestState` runs at most
//! one call: this process's memory by default, or a Redis that every replica of a fleet shares
//! (`[mcp] replay_store = "redis://…"`). A nonce is remembered until its state expires (after
//! that the state is refused as expired anyway), in Redis with `SET key 1 NX PX ttl`: the one
//! replica whose `SET` wins runs the call.
//!
//! A store that cannot be asked refuses the confirmation (fail closed): an approval is never
//! honoured unless its nonce was recorded first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// How long one redemption may wait for Redis (connecting included) before it is refused.
const REDIS_TIMEOUT: Duration = Duration::from_secs(3);
/// Redis keys are `toolhost:mcp:approval-nonce:<nonce>`.
const REDIS_PREFIX: &str = "toolhost:mcp:approval-nonce:";

/// Why the replay store cannot be used: its URL (when the server starts), or Redis (when a
/// confirmation is redeemed: the call is refused and may be retried). `shown` is the URL
/// without its password.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "mcp.replay_store = {shown:?}: give a redis://host:port URL (TLS `rediss://` and other schemes are \
         not supported)"
    )]
    NotRedis { shown: String },
    #[error("mcp.replay_store = {shown:?} is not a Redis URL: {error}")]
    BadUrl { shown: String, error: redis::RedisError },
    /// Redis failed or did not answer in time (`why`); nothing was recorded.
    #[error(
        "the replay store {shown} cannot record this approval ({why}); the call was not run — retry with \
         the same requestState, or call again without it to be asked again"
    )]
    Unreachable { shown: String, why: String },
}

/// Redeemed nonces: in memory, or in a shared Redis.
pub enum ReplayStore {
    /// Nonce → expiry (unix ms); pruned as it is used.
    Memory(Mutex<HashMap<String, u64>>),
    Redis(Box<RedisStore>),
}

impl std::fmt::Debug for ReplayStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayStore::Memory(_) => f.write_str("ReplayStore::Memory"),
            ReplayStore::Redis(r) => write!(f, "ReplayStore::Redis({})", r.link.shown()),
        }
    }
}

/// A Redis every replica shares (see [`toolhost_core::redis_link`]).
pub struct RedisStore {
    link: toolhost_core::redis_link::RedisLink,
}

/// `url` with any password replaced, fit for a log line or an error (the one rule, shared with
/// the key-value store's Redis backend).
pub use toolhost_core::redis_link::shown as redacted;

impl ReplayStore {
    /// This process's memory: right for one process, blind to replays on another replica.
    pub fn memory() -> ReplayStore {
        ReplayStore::Memory(Mutex::new(HashMap::new()))
    }

    /// A Redis at `url` (`redis://[user:password@]host:port[/db]`); only the URL is checked
    /// here, the server is first asked at the first confirmation.
    pub fn redis(url: &str) -> Result<ReplayStore, StoreError> {
        let shown = redacted(url);
        if !url.starts_with("redis://") {
            return Err(StoreError::NotRedis { shown });
        }
        match toolhost_core::redis_link::RedisLink::open(url, REDIS_TIMEOUT) {
            Ok(link) => Ok(ReplayStore::Redis(Box::new(RedisStore { link }))),
            Err(error) => Err(StoreError::BadUrl { shown, error }),
        }
    }

    /// Record `nonce` as redeemed until `exp_ms` (unix ms): `Ok(true)` the first time,
    /// `Ok(false)` if it was redeemed before, `Err` if the store cannot say (refuse then).
    pub async fn redeem(&self, nonce: &str, exp_ms: u64, now_ms: u64) -> Result<bool, StoreError> {
        match self {
            ReplayStore::Memory(m) => {
                let mut redeemed = m.lock().unwrap_or_else(|p| p.into_inner());
                redeemed.retain(|_, exp| *exp >= now_ms);
                if redeemed.contains_key(nonce) {
                    return Ok(false);
                }
                redeemed.insert(nonce.to_string(), exp_ms);
                Ok(true)
            }
            ReplayStore::Redis(r) => r.redeem(nonce, exp_ms.saturating_sub(now_ms).max(1)).await,
        }
    }
}

impl RedisStore {
    async fn redeem(&self, nonce: &str, ttl_ms: u64) -> Result<bool, StoreError> {
        // The whole redemption, waiting for the connection included, within one deadline.
        let mut set = redis::cmd("SET");
        set.arg(format!("{REDIS_PREFIX}{nonce}")).arg(1).arg("NX").arg("PX").arg(ttl_ms);
        match self.link.query::<Option<String>>(&set).await {
            Ok(reply) => Ok(reply.is_some()),
            Err(why) => Err(StoreError::Unreachable { shown: self.link.shown().to_string(), why }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_redeems_once_and_forgets_expired_nonces() {
        let s = ReplayStore::memory();
        assert!(s.redeem("n", 2_000, 1_000).await.unwrap());
        assert!(!s.redeem("n", 2_000, 1_500).await.unwrap());
        // Past its expiry the nonce is pruned (its state is refused as expired before this).
        assert!(s.redeem("n", 4_000, 3_000).await.unwrap());
    }

    #[test]
    fn only_redis_urls_are_accepted_and_passwords_stay_out_of_messages() {
        let e = ReplayStore::redis("rediss://:hunter2@cache:6380").unwrap_err();
        assert!(matches!(e, StoreError::NotRedis { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("rediss://") && !e.contains("hunter2"), "{e}");
        assert!(ReplayStore::redis("http://cache").unwrap_err().to_string().contains("redis://host:port"));
        assert!(matches!(ReplayStore::redis("redis://cache:6379/0"), Ok(ReplayStore::Redis(_))));
        assert!(!redacted("redis://u:hunter2@cache:6379").contains("hunter2"));
    }

    #[tokio::test]
    async fn an_unreachable_redis_refuses() {
        // A port nothing listens on: bind one, then close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let s = ReplayStore::redis(&format!("redis://127.0.0.1:{port}")).unwrap();
        let e = s.redeem("n", 2_000, 1_000).await.unwrap_err();
        assert!(matches!(e, StoreError::Unreachable { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("cannot record this approval") && e.contains("not run"), "{e}");
    }
}

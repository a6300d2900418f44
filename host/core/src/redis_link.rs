//! One Redis server reached through one multiplexed connection, opened at the first query and
//! again after a failure, each query bounded in time (connecting included). The key-value
//! store's Redis backend and the MCP replay store both talk to Redis through it.
//!
//! A link opened with [`RedisLink::open_cached`] also keeps what [`RedisLink::hget_cached`]
//! read, true because the server says when it is not: the connection speaks RESP3 with
//! `CLIENT TRACKING ON`, so Redis pushes an invalidation of every key it served us the moment
//! anyone else changes it (any client, a Lua script, an expiry); what this link changes itself
//! through [`RedisLink::query`] is forgotten when that query is answered (the server tells the
//! client that made a change only after its reply). A reply is kept only if no
//! invalidation arrived between its request and its keeping (the push may overtake the reply
//! on its way to the caller); what is kept is dropped with its connection — on a failed query,
//! or as soon as the connection closes (the library's `Disconnection` push), so a link that
//! lost its server never answers from memory — and served for at most [`CACHE_TTL`] in any
//! case, for a connection that silently stopped hearing.

use crate::kept::Kept;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The longest a kept value is served without asking the server again.
pub const CACHE_TTL: Duration = Duration::from_secs(10);

/// A Redis server and the connection to it.
pub struct RedisLink {
    client: redis::Client,
    /// The same server over RESP3, for a link that keeps values (see [`RedisLink::open_cached`]).
    tracked: Option<redis::Client>,
    /// The URL without its password, for messages.
    shown: String,
    timeout: Duration,
    /// Bytes of hash fields and values a tracked connection may keep.
    cache_bytes: usize,
    conn: tokio::sync::Mutex<Option<Live>>,
}

/// An open connection, whether the library has since seen it close, and what it keeps.
struct Live {
    conn: redis::aio::MultiplexedConnection,
    closed: Arc<AtomicBool>,
    cache: Option<Arc<Kept>>,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisLink({})", self.shown)
    }
}

/// `url` with any password replaced, fit for a log line or an error.
pub fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "(an unparsable URL)".into(),
    }
}

impl RedisLink {
    /// The server at `url`, each query within `timeout`; only the URL is checked here.
    pub fn open(url: &str, timeout: Duration) -> Result<RedisLink, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let conn = tokio::sync::Mutex::new(None);
        Ok(RedisLink { client, tracked: None, shown: shown(url), timeout, cache_bytes: 0, conn })
    }

    /// [`open`](Self::open), keeping up to `cache_bytes` of what [`hget_cached`](Self::hget_cached)
    /// reads while the server tracks it (RESP3 client tracking: Redis 6 or later). A server
    /// that will not track — an older Redis, an ACL without `CLIENT`, a proxy without RESP3 — is
    /// used without keeping anything, with a warning.
    pub fn open_cached(
        url: &str,
        timeout: Duration,
        cache_bytes: usize,
    ) -> Result<RedisLink, redis::RedisError> {
        use redis::IntoConnectionInfo;
        let info = url.into_connection_info()?;
        let resp3 = info.redis_settings().clone().set_protocol(redis::ProtocolVersion::RESP3);
        let tracked = Some(redis::Client::open(info.set_redis_settings(resp3))?);
        Ok(RedisLink { tracked, cache_bytes, ..RedisLink::open(url, timeout)? })
    }

    /// The URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A new connection: tracked, with a cache, on a link that keeps values and a server
    /// that tracks; plain otherwise.
    async fn connect(&self) -> redis::RedisResult<Live> {
        if let Some(tracked) = &self.tracked {
            match self.connect_tracked(tracked).await {
                Ok(live) => return Ok(live),
                Err(e)
                    if e.is_io_error()
                        || e.is_timeout()
                        || e.is_connection_refusal()
                        || e.is_connection_dropped() =>
                {
                    return Err(e);
                }
                Err(e) => tracing::warn!(
                    "Redis at {} does not track keys for this client ({e}): every key-value `get` asks the server",
                    self.shown
                ),
            }
        }
        let conn = self.client.get_multiplexed_async_connection().await?;
        Ok(Live { conn, closed: Arc::new(AtomicBool::new(false)), cache: None })
    }

    /// A RESP3 connection whose server tracks what it reads, every invalidation it pushes
    /// applied to a new cache, and its closing noted.
    async fn connect_tracked(&self, client: &redis::Client) -> redis::RedisResult<Live> {
        let closed = Arc::new(AtomicBool::new(false));
        let cache = Arc::new(Kept::new(self.cache_bytes, CACHE_TTL));
        let (flag, heard) = (closed.clone(), cache.clone());
        let config = redis::AsyncConnectionConfig::new().set_push_sender(move |push: redis::PushInfo| {
            match push.kind {
                redis::PushKind::Disconnection => flag.store(true, Ordering::Release),
                redis::PushKind::Invalidate => heard.invalidate(invalidated(&push.data)),
                _ => {}
            }
            Ok::<(), std::convert::Infallible>(())
        });
        let mut conn = client.get_multiplexed_async_connection_with_config(&config).await?;
        redis::cmd("CLIENT").arg("TRACKING").arg("ON").query_async::<()>(&mut conn).await?;
        Ok(Live { conn, closed, cache: Some(cache) })
    }

    /// The open connection (connecting if there is none, or it closed) and its cache.
    async fn connection(&self) -> redis::RedisResult<(redis::aio::MultiplexedConnection, Option<Arc<Kept>>)> {
        let mut slot = self.conn.lock().await;
        if let Some(live) = slot.as_ref().filter(|l| !l.closed.load(Ordering::Acquire)) {
            return Ok((live.conn.clone(), live.cache.clone()));
        }
        let live = self.connect().await?;
        let out = (live.conn.clone(), live.cache.clone());
        *slot = Some(live);
        Ok(out)
    }

    /// `attempt` within the link's timeout; `Err` says why it failed, and the connection (and
    /// all it kept) is dropped so the next query connects afresh.
    async fn bounded<T>(&self, attempt: impl Future<Output = redis::RedisResult<T>>) -> Result<T, String> {
        let why = match tokio::time::timeout(self.timeout, attempt).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} s", self.timeout.as_secs()),
        };
        *self.conn.lock().await = None;
        Err(why)
    }

    /// Run `cmd` (connecting first if needed) within the link's timeout (see
    /// [`bounded`](Self::bounded)). The connection is cloned out of the lock, so concurrent
    /// queries do not queue on it.
    ///
    /// On a link that keeps values, any such query forgets them all once it is answered: it may
    /// have changed them, and Redis tells the client that made a change only after its reply.
    pub async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, String> {
        self.bounded(async {
            let (mut conn, cache) = self.connection().await?;
            let out = cmd.query_async::<T>(&mut conn).await;
            if let Some(cache) = cache {
                cache.invalidate(None);
            }
            out
        })
        .await
    }

    /// `HGET hash field`, answered from what this connection kept while the server has not
    /// said it changed (on a link opened with [`open_cached`](Self::open_cached)).
    pub async fn hget_cached(&self, hash: &str, field: &str) -> Result<Option<Vec<u8>>, String> {
        self.bounded(async {
            let (mut conn, cache) = self.connection().await?;
            let hget = || redis::cmd("HGET").arg(hash).arg(field).clone();
            let Some(cache) = cache else { return hget().query_async(&mut conn).await };
            if let Some(value) = cache.get(hash, field) {
                return Ok(value);
            }
            let epoch = cache.epoch();
            let value: Option<Vec<u8>> = hget().query_async(&mut conn).await?;
            cache.keep(hash, field, &value, epoch);
            Ok(value)
        })
        .await
    }
}

/// The keys an `invalidate` push names (`None`: every key, after a `FLUSHALL` or `FLUSHDB`).
fn invalidated(data: &[redis::Value]) -> Option<Vec<Vec<u8>>> {
    match data.first() {
        Some(redis::Value::Array(keys)) => Some(
            keys.iter()
                .filter_map(|k| match k {
                    redis::Value::BulkString(b) => Some(b.clone()),
                    redis::Value::SimpleString(s) => Some(s.as_bytes().to_vec()),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_stay_out_of_messages() {
        let s = super::shown("redis://u:hunter2@cache:6379/0");
        assert!(s.contains("cache:6379") && !s.contains("hunter2"), "{s}");
        assert_eq!(super::shown("not a url"), "(an unparsable URL)");
    }
}

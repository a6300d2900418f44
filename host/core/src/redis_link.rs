//! One Redis server reached through one multiplexed connection, opened at the first query and
//! again after a failure, each query bounded in time (connecting included). The key-value
//! store's Redis backend and the MCP replay store both talk to Redis through it.

use std::time::Duration;

/// A Redis server and the connection to it.
pub struct RedisLink {
    client: redis::Client,
    /// The URL without its password, for messages.
    shown: String,
    timeout: Duration,
    conn: tokio::sync::Mutex<Option<redis::aio::MultiplexedConnection>>,
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
        Ok(RedisLink { client, shown: shown(url), timeout, conn: tokio::sync::Mutex::new(None) })
    }

    /// The URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Run `cmd` (connecting first if needed) within the link's timeout; `Err` says why it
    /// failed, and the connection is dropped so the next query connects afresh. The connection
    /// is cloned out of the lock, so concurrent queries do not queue on it.
    pub async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, String> {
        let attempt = async {
            let mut conn = {
                let mut slot = self.conn.lock().await;
                match slot.as_ref() {
                    Some(c) => c.clone(),
                    None => {
                        let c = self.client.get_multiplexed_async_connection().await?;
                        *slot = Some(c.clone());
                        c
                    }
                }
            };
            cmd.query_async::<T>(&mut conn).await
        };
        let why = match tokio::time::timeout(self.timeout, attempt).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} s", self.timeout.as_secs()),
        };
        *self.conn.lock().await = None;
        Err(why)
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

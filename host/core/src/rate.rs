//! Rate limits per identity (`[rate_limits]`): how many calls a minute one identity (a static
//! token or an OAuth principal: `Principal::key`) may make, in all and of one tool. Token
//! buckets (GCRA) per key; a burst may spend a whole minute's calls at once. In one process the
//! buckets are the `governor` crate's; with `redis_url` they are shared by every replica of a
//! fleet, both of a call's buckets checked and spent in one Lua script on the server's clock
//! (atomic: two replicas never both spend the last call). When Redis cannot be reached, each
//! replica falls back to its own buckets (and says so) rather than letting every call through
//! or refusing them all. Calls from no identity (stdio, the CLI, a tokenless server: the
//! operator's own) are not counted. The per-plugin fair share of call slots is another matter
//! and stays as it is.

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use serde::Deserialize;
use std::num::NonZeroU32;
use std::time::Duration;

use crate::settings::invalid::Invalid;

/// Keys kept before the ones back at a full bucket are dropped (they are indistinguishable
/// from new ones).
const KEYS_BEFORE_SWEEP: usize = 10_000;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRateLimits {
    /// Calls a minute one identity may make.
    per_identity: Option<u32>,
    /// Calls a minute one identity may make of one tool.
    per_identity_tool: Option<u32>,
    /// The Redis server a fleet shares its buckets in (`redis://HOST:PORT/DB`).
    redis_url: Option<String>,
}

/// `[rate_limits]`, resolved: calls a minute (`None`: no limit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateSettings {
    pub per_identity: Option<NonZeroU32>,
    pub per_identity_tool: Option<NonZeroU32>,
    /// Where a fleet's replicas share their buckets (`None`: this process's memory).
    pub redis_url: Option<String>,
}

impl RawRateLimits {
    pub fn resolve(self) -> Result<RateSettings, Invalid> {
        let per_minute = |key: &str, v: Option<u32>| match v {
            None => Ok(None),
            Some(n) if (1..=1_000_000).contains(&n) => Ok(NonZeroU32::new(n)),
            Some(n) => Err(Invalid::out_of_range(format!("rate_limits.{key}"), n, 1, 1_000_000)),
        };
        if let Some(url) = &self.redis_url
            && !(url.starts_with("redis://")
                || url.starts_with("rediss://")
                || url.starts_with("redis+unix://"))
        {
            return Err(Invalid::value("rate_limits.redis_url", format!("{url:?}"), "is not a redis:// URL"));
        }
        Ok(RateSettings {
            per_identity: per_minute("per_identity", self.per_identity)?,
            per_identity_tool: per_minute("per_identity_tool", self.per_identity_tool)?,
            redis_url: self.redis_url,
        })
    }
}

/// A call over a limit: which one, and when the next call would be let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    /// The config key of the limit (`rate_limits.per_identity`).
    pub key: &'static str,
    pub per_minute: u32,
    pub retry_after: Duration,
}

/// The buckets of every identity.
pub struct RateLimits {
    settings: RateSettings,
    per_identity: Option<DefaultKeyedRateLimiter<String>>,
    per_tool: Option<DefaultKeyedRateLimiter<(String, String)>>,
    clock: DefaultClock,
    /// The fleet's shared buckets (`redis_url`).
    shared: Option<crate::redis_link::RedisLink>,
}

/// How long a shared check may take before the replica's own buckets decide.
const SHARED_TIMEOUT: Duration = Duration::from_millis(500);

/// Both buckets of a call, checked and (if both allow it) spent at once, on Redis's clock.
/// KEYS: the tool's bucket, the identity's. ARGV: their emission intervals in ms (0: no limit),
/// and the burst (a minute, in ms). Returns {0, 0} when allowed, else {1 (the tool's) or 2
/// (the identity's), ms until the next call would be allowed}.
const GCRA: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local burst = tonumber(ARGV[3])
local function probe(key, interval)
  if interval <= 0 then return nil, 0 end
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = tat + interval
  return new_tat, new_tat - burst - now
end
local tool_tat, tool_wait = probe(KEYS[1], tonumber(ARGV[1]))
if tool_tat and tool_wait > 0 then return {1, math.ceil(tool_wait)} end
local id_tat, id_wait = probe(KEYS[2], tonumber(ARGV[2]))
if id_tat and id_wait > 0 then return {2, math.ceil(id_wait)} end
if tool_tat then redis.call('SET', KEYS[1], tostring(tool_tat), 'PX', math.max(1, math.ceil(tool_tat - now))) end
if id_tat then redis.call('SET', KEYS[2], tostring(id_tat), 'PX', math.max(1, math.ceil(id_tat - now))) end
return {0, 0}
"#;

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl RateLimits {
    pub fn new(settings: RateSettings) -> RateLimits {
        let limited = settings.per_identity.is_some() || settings.per_identity_tool.is_some();
        let shared = settings.redis_url.as_deref().filter(|_| limited).and_then(|url| {
            crate::redis_link::RedisLink::open(url, SHARED_TIMEOUT)
                .inspect_err(|e| {
                    tracing::warn!("[rate_limits] redis_url: {e}; each replica counts its own calls")
                })
                .ok()
        });
        RateLimits {
            per_identity: settings
                .per_identity
                .map(|n| DefaultKeyedRateLimiter::hashmap(Quota::per_minute(n))),
            per_tool: settings
                .per_identity_tool
                .map(|n| DefaultKeyedRateLimiter::hashmap(Quota::per_minute(n))),
            clock: DefaultClock::default(),
            shared,
            settings,
        }
    }

    /// Whether no limit is set (every call passes without a look).
    pub fn is_off(&self) -> bool {
        self.per_identity.is_none() && self.per_tool.is_none()
    }

    /// Count a call of `tool` by the identity `key`, or say which limit it is over: in the
    /// fleet's shared buckets when there are any (and they answer), else in this process's.
    pub async fn check(&self, key: &str, tool: &str) -> Result<(), Limited> {
        if let Some(link) = &self.shared {
            match self.check_shared(link, key, tool).await {
                Ok(answer) => return answer,
                Err(e) => {
                    tracing::warn!("[rate_limits] {}: {e}; this replica counts the call itself", link.shown())
                }
            }
        }
        self.check_local(key, tool)
    }

    /// [`RateLimits::check`] in the fleet's buckets (`Err`: Redis did not answer).
    async fn check_shared(
        &self,
        link: &crate::redis_link::RedisLink,
        key: &str,
        tool: &str,
    ) -> Result<Result<(), Limited>, String> {
        use sha2::Digest;
        // One hash slot for both keys (a Redis Cluster runs the script on one node).
        let tag = hex::encode(&sha2::Sha256::digest(key.as_bytes())[..12]);
        let interval = |n: Option<NonZeroU32>| n.map_or(0.0, |n| 60_000.0 / f64::from(n.get()));
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(GCRA)
            .arg(2)
            .arg(format!("toolhost:rate:{{{tag}}}:tool:{tool}"))
            .arg(format!("toolhost:rate:{{{tag}}}:all"))
            .arg(interval(self.settings.per_identity_tool))
            .arg(interval(self.settings.per_identity))
            .arg(60_000);
        let answer: Vec<i64> = link.query(&cmd).await?;
        let wait = Duration::from_millis(answer.get(1).copied().unwrap_or(0).max(0) as u64);
        Ok(match answer.first().copied() {
            Some(1) => Err(self.limited_tool(wait)),
            Some(2) => Err(self.limited_identity(wait)),
            _ => Ok(()),
        })
    }

    fn limited_tool(&self, retry_after: Duration) -> Limited {
        let per_minute = self.settings.per_identity_tool.map_or(0, NonZeroU32::get);
        Limited { key: "rate_limits.per_identity_tool", per_minute, retry_after }
    }

    fn limited_identity(&self, retry_after: Duration) -> Limited {
        let per_minute = self.settings.per_identity.map_or(0, NonZeroU32::get);
        Limited { key: "rate_limits.per_identity", per_minute, retry_after }
    }

    /// [`RateLimits::check`] in this process's buckets. The tool's bucket is checked first: a
    /// call it refuses costs the identity nothing.
    fn check_local(&self, key: &str, tool: &str) -> Result<(), Limited> {
        if let Some(limiter) = &self.per_tool {
            sweep(limiter);
            let checked = limiter.check_key(&(key.to_string(), tool.to_string()));
            checked.map_err(|e| self.limited_tool(e.wait_time_from(self.clock.now())))?;
        }
        if let Some(limiter) = &self.per_identity {
            sweep(limiter);
            let checked = limiter.check_key(&key.to_string());
            checked.map_err(|e| self.limited_identity(e.wait_time_from(self.clock.now())))?;
        }
        Ok(())
    }
}

/// Forget the keys whose buckets are full again, once many are kept.
fn sweep<K: Clone + std::hash::Hash + Eq>(limiter: &DefaultKeyedRateLimiter<K>) {
    if limiter.len() > KEYS_BEFORE_SWEEP {
        limiter.retain_recent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_identity_has_its_own_buckets_and_the_refusal_says_when_to_retry() {
        let limits = RateLimits::new(RateSettings {
            per_identity: NonZeroU32::new(5),
            per_identity_tool: NonZeroU32::new(3),
            redis_url: None,
        });
        for _ in 0..3 {
            limits.check_local("token:a", "echo").unwrap();
        }
        let e = limits.check_local("token:a", "echo").unwrap_err();
        assert_eq!((e.key, e.per_minute), ("rate_limits.per_identity_tool", 3));
        assert!(e.retry_after > Duration::ZERO && e.retry_after <= Duration::from_secs(20), "{e:?}");
        limits.check_local("token:a", "other").unwrap();
        limits.check_local("token:a", "other").unwrap();
        let e = limits.check_local("token:a", "third").unwrap_err();
        assert_eq!(e.key, "rate_limits.per_identity");
        // Another identity is untouched by the first one's calls.
        for _ in 0..3 {
            limits.check_local("token:b", "echo").unwrap();
        }
        let off = RateLimits::new(RateSettings::default());
        assert!(off.is_off() && off.check_local("token:a", "echo").is_ok(), "no limits: none");
    }

    #[test]
    fn limits_are_checked_when_the_config_is_read() {
        let raw: RawRateLimits = toml::from_str("per_identity = 0").unwrap();
        let e = raw.resolve().unwrap_err().to_string();
        assert!(e.contains("rate_limits.per_identity"), "{e}");
        let raw: RawRateLimits = toml::from_str("per_identity = 5\nredis_url = \"http://x\"").unwrap();
        let e = raw.resolve().unwrap_err().to_string();
        assert!(e.contains("rate_limits.redis_url"), "{e}");
    }
}

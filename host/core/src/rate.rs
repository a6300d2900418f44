//! Rate limits per identity (`[rate_limits]`): how many calls a minute one identity (a static
//! token or an OAuth principal: `Principal::key`) may make, in all and of one tool. Token
//! buckets (GCRA, the `governor` crate) per key, in this process; a burst may spend a whole
//! minute's calls at once. Calls from no identity (stdio, the CLI, a tokenless server: the
//! operator's own) are not counted. The per-plugin fair share of call slots is another matter and
//! stays as it is.

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
}

/// `[rate_limits]`, resolved: calls a minute (`None`: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateSettings {
    pub per_identity: Option<NonZeroU32>,
    pub per_identity_tool: Option<NonZeroU32>,
}

impl RawRateLimits {
    pub fn resolve(self) -> Result<RateSettings, Invalid> {
        let per_minute = |key: &str, v: Option<u32>| match v {
            None => Ok(None),
            Some(n) if (1..=1_000_000).contains(&n) => Ok(NonZeroU32::new(n)),
            Some(n) => Err(Invalid::out_of_range(format!("rate_limits.{key}"), n, 1, 1_000_000)),
        };
        Ok(RateSettings {
            per_identity: per_minute("per_identity", self.per_identity)?,
            per_identity_tool: per_minute("per_identity_tool", self.per_identity_tool)?,
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
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl RateLimits {
    pub fn new(settings: RateSettings) -> RateLimits {
        RateLimits {
            settings,
            per_identity: settings
                .per_identity
                .map(|n| DefaultKeyedRateLimiter::hashmap(Quota::per_minute(n))),
            per_tool: settings
                .per_identity_tool
                .map(|n| DefaultKeyedRateLimiter::hashmap(Quota::per_minute(n))),
            clock: DefaultClock::default(),
        }
    }

    /// Count a call of `tool` by the identity `key`, or say which limit it is over. The tool's
    /// bucket is checked first: a call it refuses costs the identity nothing.
    pub fn check(&self, key: &str, tool: &str) -> Result<(), Limited> {
        if let (Some(limiter), Some(n)) = (&self.per_tool, self.settings.per_identity_tool) {
            sweep(limiter);
            limiter.check_key(&(key.to_string(), tool.to_string())).map_err(|e| Limited {
                key: "rate_limits.per_identity_tool",
                per_minute: n.get(),
                retry_after: e.wait_time_from(self.clock.now()),
            })?;
        }
        if let (Some(limiter), Some(n)) = (&self.per_identity, self.settings.per_identity) {
            sweep(limiter);
            limiter.check_key(&key.to_string()).map_err(|e| Limited {
                key: "rate_limits.per_identity",
                per_minute: n.get(),
                retry_after: e.wait_time_from(self.clock.now()),
            })?;
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
        });
        for _ in 0..3 {
            limits.check("token:a", "echo").unwrap();
        }
        let e = limits.check("token:a", "echo").unwrap_err();
        assert_eq!((e.key, e.per_minute), ("rate_limits.per_identity_tool", 3));
        assert!(e.retry_after > Duration::ZERO && e.retry_after <= Duration::from_secs(20), "{e:?}");
        limits.check("token:a", "other").unwrap();
        limits.check("token:a", "other").unwrap();
        let e = limits.check("token:a", "third").unwrap_err();
        assert_eq!(e.key, "rate_limits.per_identity");
        // Another identity is untouched by the first one's calls.
        for _ in 0..3 {
            limits.check("token:b", "echo").unwrap();
        }
        assert!(RateLimits::new(RateSettings::default()).check("token:a", "echo").is_ok(), "no limits: none");
    }

    #[test]
    fn limits_are_checked_when_the_config_is_read() {
        let raw: RawRateLimits = toml::from_str("per_identity = 0").unwrap();
        let e = raw.resolve().unwrap_err().to_string();
        assert!(e.contains("rate_limits.per_identity"), "{e}");
    }
}

//! Each plugin's fair share of the host's call slots: `[limits] concurrency` calls run at once
//! (the instance pool is sized for it). In front of those, each plugin has its own slots
//! (`[plugin.X] concurrency`, default `[limits] plugin_concurrency`, itself half the global
//! slots by default), so a plugin whose calls are slow or hostile saturates its own slots and
//! the others keep being served. A waiting call waits at most until its own deadline. Each
//! plugin's share also holds its log bucket (`capability::log`), kept across calls by name.

use crate::capability::log::LogBucket;
use crate::settings::Config;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, SemaphorePermit};

/// The host's call slots and each plugin's share of them.
#[derive(Debug)]
pub struct Shares {
    global: Semaphore,
    global_limit: u32,
    plugins: Mutex<HashMap<Arc<str>, Arc<PluginShare>>>,
}

/// One plugin's slots and log budget, kept across calls (and reloads) by plugin name.
#[derive(Debug)]
pub struct PluginShare {
    slots: Semaphore,
    pub limit: u32,
    pub log: Arc<LogBucket>,
}

/// Both slots a running call holds, borrowed from the shares it holds them in (no reference
/// counted per call); dropping it frees them.
#[derive(Debug)]
pub struct Slot<'a> {
    _plugin: SemaphorePermit<'a>,
    _global: SemaphorePermit<'a>,
    /// The call waited for a slot (else both were free when it came).
    pub waited: bool,
}

/// No slot became free before the call's deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Busy {
    /// The plugin's own slots were all taken.
    Plugin { limit: u32 },
    /// Every slot of the host was taken.
    Host { limit: u32 },
}

impl Shares {
    pub fn new(config: &Config) -> Self {
        let n = config.concurrency.max(1);
        Shares { global: Semaphore::new(n as usize), global_limit: n, plugins: Mutex::new(HashMap::new()) }
    }

    /// The share of `plugin` (created on its first call).
    pub fn plugin(&self, plugin: &Arc<str>, config: &Config) -> Arc<PluginShare> {
        let mut map = self.plugins.lock().unwrap_or_else(|p| p.into_inner());
        // Found without taking a reference to the name (every call but a plugin's first).
        if let Some(share) = map.get(plugin) {
            return share.clone();
        }
        map.entry(plugin.clone())
            .or_insert_with(|| {
                let limit = config.concurrency_for(plugin).min(self.global_limit).max(1);
                Arc::new(PluginShare {
                    slots: Semaphore::new(limit as usize),
                    limit,
                    log: Arc::new(LogBucket::new(config.log_rate)),
                })
            })
            .clone()
    }

    /// Both slots now, if both are free (nobody waits for either: see [`take`]).
    pub fn try_acquire<'a>(&'a self, share: &'a PluginShare) -> Option<Slot<'a>> {
        let plugin = share.slots.try_acquire().ok()?;
        let global = self.global.try_acquire().ok()?;
        Some(Slot { _plugin: plugin, _global: global, waited: false })
    }

    /// Wait for a slot of the plugin, then one of the host, until `deadline`.
    pub async fn acquire<'a>(
        &'a self,
        share: &'a PluginShare,
        deadline: tokio::time::Instant,
    ) -> Result<Slot<'a>, Busy> {
        let (plugin, waited_plugin) =
            take(&share.slots, deadline, Busy::Plugin { limit: share.limit }).await?;
        let (global, waited_global) =
            take(&self.global, deadline, Busy::Host { limit: self.global_limit }).await?;
        Ok(Slot { _plugin: plugin, _global: global, waited: waited_plugin || waited_global })
    }
}

/// A permit of `slots` by `deadline`, or `busy`; `true` with it if it was waited for. A free one
/// is taken without arming a timer; it cannot jump the queue: tokio's semaphore hands a released
/// permit to the first waiter, so one is free only when nobody waits.
async fn take(
    slots: &Semaphore,
    deadline: tokio::time::Instant,
    busy: Busy,
) -> Result<(SemaphorePermit<'_>, bool), Busy> {
    if let Ok(permit) = slots.try_acquire() {
        return Ok((permit, false));
    }
    match tokio::time::timeout_at(deadline, slots.acquire()).await {
        Ok(Ok(permit)) => Ok((permit, true)),
        Ok(Err(_)) | Err(_) => Err(busy),
    }
}

impl Busy {
    /// Why the call did not run, and which setting to raise.
    pub fn message(&self, plugin: &str, tool: &str, waited_ms: u128) -> String {
        match self {
            Busy::Plugin { limit } => format!(
                "tool `{tool}` waited {waited_ms} ms for a free slot and reached its deadline: plugin `{plugin}` already runs {limit} calls at once \
                 (limit: [plugin.{plugin}] concurrency = {limit} in toolhost.toml, default [limits] plugin_concurrency; raise it or retry later)"
            ),
            Busy::Host { limit } => format!(
                "tool `{tool}` waited {waited_ms} ms for a free slot and reached its deadline: the host already runs {limit} calls at once \
                 (limit: [limits] concurrency = {limit} in toolhost.toml)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_plugin_cannot_take_every_slot() {
        let config = Config { concurrency: 4, plugin_concurrency: 2, ..Config::default() };
        let shares = Shares::new(&config);
        let a = shares.plugin(&Arc::from("a"), &config);
        let b = shares.plugin(&Arc::from("b"), &config);
        let soon = || tokio::time::Instant::now() + std::time::Duration::from_millis(20);
        let _a1 = shares.acquire(&a, soon()).await.unwrap();
        let _a2 = shares.acquire(&a, soon()).await.unwrap();
        assert_eq!(shares.acquire(&a, soon()).await.unwrap_err(), Busy::Plugin { limit: 2 });
        let _b1 = shares.acquire(&b, soon()).await.expect("another plugin is still served");
        let _b2 = shares.acquire(&b, soon()).await.unwrap();
        let c = shares.plugin(&Arc::from("c"), &config);
        assert_eq!(shares.acquire(&c, soon()).await.unwrap_err(), Busy::Host { limit: 4 });
        let msg = Busy::Plugin { limit: 2 }.message("a", "t", 20);
        assert!(msg.contains("[plugin.a] concurrency = 2"), "{msg}");
    }

    /// A slot freed while a call waits goes to that call: a call arriving just then does not
    /// take it without waiting (the path that takes a free slot at once, without a timer).
    #[tokio::test]
    async fn a_freed_slot_goes_to_the_call_that_waited() {
        let config = Config { concurrency: 4, plugin_concurrency: 1, ..Config::default() };
        let shares = Arc::new(Shares::new(&config));
        let a = shares.plugin(&Arc::from("a"), &config);
        let soon = || tokio::time::Instant::now() + std::time::Duration::from_millis(200);
        let held = shares.acquire(&a, soon()).await.unwrap();
        let (got_tx, got) = tokio::sync::oneshot::channel();
        let (end, end_rx) = tokio::sync::oneshot::channel::<()>();
        let waiter = tokio::spawn({
            let (shares, a) = (shares.clone(), a.clone());
            async move {
                // Held until the test ends: the slot stays the waiter's.
                let slot = shares.acquire(&a, soon()).await;
                let _ = got_tx.send(slot.is_ok());
                let _ = end_rx.await;
            }
        });
        // Let the waiter queue on the semaphore.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        drop(held);
        let late =
            tokio::time::timeout(std::time::Duration::from_millis(20), shares.acquire(&a, soon())).await;
        assert!(late.is_err(), "the late call took the slot the waiting one was owed");
        assert!(got.await.unwrap(), "the waiting call did not get the freed slot");
        drop(end);
        waiter.await.unwrap();
    }
}

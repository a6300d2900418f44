//! Values a store read, kept to answer the same read again without asking the store, while its
//! owner knows they are still true: the one cache of the key-value backends. Redis's client
//! tracking tells a link which keys changed (`redis_link.rs`); a SQLite store's write-ahead log
//! says whether anything was committed (`capability/kv/commits.rs`). Either way, the owner calls
//! [`Kept::invalidate`] on a change, and a value read is kept only if no change came between
//! its read and its keeping ([`Kept::epoch`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A group's keys as read: each value (`None`: absent) and when it was read.
type Keys = HashMap<Vec<u8>, (Option<Vec<u8>>, Instant)>;

/// What is kept, by group (a Redis hash, a SQLite bucket) and key.
#[derive(Default)]
struct Held {
    by_group: HashMap<Vec<u8>, Keys>,
    bytes: usize,
    /// Changes heard so far.
    epoch: u64,
}

/// Values kept within a budget of bytes, each served for at most `ttl`.
pub struct Kept {
    budget: usize,
    ttl: Duration,
    held: Mutex<Held>,
}

impl Kept {
    /// Keep at most `budget` bytes of groups, keys and values, each for at most `ttl`.
    pub fn new(budget: usize, ttl: Duration) -> Kept {
        Kept { budget, ttl, held: Mutex::default() }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value kept for `key` of `group` (`Some(None)`: kept as absent).
    pub fn get(&self, group: &str, key: &str) -> Option<Option<Vec<u8>>> {
        let held = self.held();
        let (value, at) = held.by_group.get(group.as_bytes())?.get(key.as_bytes())?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    /// Changes heard so far: read it before asking the store, and give it to [`Kept::keep`].
    pub fn epoch(&self) -> u64 {
        self.held().epoch
    }

    /// Keep `value`, read after `epoch` changes, unless another came since (it may have been
    /// about this very value) or it does not fit the budget. Over the budget, everything kept
    /// goes: a cache is never a reason to hold more than its budget.
    pub fn keep(&self, group: &str, key: &str, value: &Option<Vec<u8>>, epoch: u64) {
        let size = group.len() + key.len() + value.as_ref().map_or(0, Vec::len);
        let mut held = self.held();
        if held.epoch != epoch || size > self.budget {
            return;
        }
        if held.bytes + size > self.budget {
            held.by_group.clear();
            held.bytes = 0;
        }
        let keys = held.by_group.entry(group.as_bytes().to_vec()).or_default();
        let old = keys.insert(key.as_bytes().to_vec(), (value.clone(), Instant::now()));
        let freed = old.map_or(0, |(v, _)| group.len() + key.len() + v.map_or(0, |v| v.len()));
        held.bytes = held.bytes + size - freed;
    }

    /// The owner's word that `groups` changed (`None`: everything).
    pub fn invalidate(&self, groups: Option<Vec<Vec<u8>>>) {
        let mut held = self.held();
        held.epoch += 1;
        let Some(groups) = groups else {
            held.by_group.clear();
            held.bytes = 0;
            return;
        };
        for group in groups {
            if let Some(keys) = held.by_group.remove(&group) {
                let freed: usize = keys
                    .iter()
                    .map(|(k, (v, _))| group.len() + k.len() + v.as_ref().map_or(0, Vec::len))
                    .sum();
                held.bytes -= freed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;
    use std::time::Duration;

    fn kept(budget: usize) -> Kept {
        Kept::new(budget, Duration::from_secs(10))
    }

    #[test]
    fn a_read_overtaken_by_a_change_is_not_kept() {
        let c = kept(1000);
        let epoch = c.epoch();
        c.invalidate(Some(vec![b"h".to_vec()]));
        c.keep("h", "f", &Some(b"old".to_vec()), epoch);
        assert_eq!(c.get("h", "f"), None);
        c.keep("h", "f", &Some(b"new".to_vec()), c.epoch());
        assert_eq!(c.get("h", "f"), Some(Some(b"new".to_vec())));
        c.keep("h", "g", &None, c.epoch());
        assert_eq!(c.get("h", "g"), Some(None), "an absent value is kept too");
    }

    #[test]
    fn a_change_drops_every_key_of_its_group_and_the_budget_holds() {
        let c = kept(20);
        c.keep("h", "a", &Some(b"12345".to_vec()), 0);
        c.keep("h", "b", &Some(b"12345".to_vec()), 0);
        c.keep("i", "a", &Some(b"1".to_vec()), 0);
        assert_eq!(c.held().bytes, 7 + 7 + 3);
        c.invalidate(Some(vec![b"h".to_vec()]));
        assert_eq!((c.get("h", "a"), c.held().bytes), (None, 3));
        c.keep("j", "a", &Some(vec![b'x'; 30]), c.epoch());
        assert_eq!(c.get("j", "a"), None, "larger than the budget");
        c.keep("j", "a", &Some(vec![b'x'; 17]), c.epoch());
        assert_eq!((c.get("i", "a"), c.held().bytes), (None, 19), "over the budget, the rest goes");
        c.invalidate(None);
        assert_eq!(c.held().bytes, 0);
    }

    #[test]
    fn nothing_is_served_past_its_time() {
        let c = Kept::new(1000, Duration::ZERO);
        c.keep("h", "f", &Some(b"v".to_vec()), c.epoch());
        assert_eq!(c.get("h", "f"), None);
    }
}

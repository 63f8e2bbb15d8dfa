//! A small in-memory cache of directory items, each served at most its lifetime (≤ 60 s);
//! past it an entry is kept (until the cache starts over) for one use only: reads DynamoDB
//! cannot serve during an outage ([`Cache::get_recent`]).
//!
//! Ages are measured on the wall clock, not a monotonic one: Lambda freezes idle
//! instances, and a monotonic clock need not advance while frozen, so an entry measured
//! with it could outlive a revocation by hours.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::calls::item::Item;

/// More entries than this and the cache starts over (a bound, not an LRU: a Lambda
/// instance sees few distinct keys and agents).
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
pub struct Cache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (SystemTime, Item)>>,
    now: fn() -> SystemTime,
}

impl Cache {
    pub fn new(ttl: Duration) -> Self {
        Cache::with_clock(ttl, SystemTime::now)
    }

    /// A cache reading the time from `now` (tests move it).
    pub fn with_clock(ttl: Duration, now: fn() -> SystemTime) -> Self {
        Cache { ttl, entries: Mutex::new(HashMap::new()), now }
    }

    /// The item under `key`, unless absent or older than the lifetime.
    pub fn get(&self, key: &str) -> Option<Item> {
        self.get_recent(key, self.ttl)
    }

    /// The item under `key` if it was put less than `max_age` ago: past its lifetime, for
    /// reads DynamoDB cannot serve.
    pub fn get_recent(&self, key: &str, max_age: Duration) -> Option<Item> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(key) {
            // A clock set back makes the age an error: the entry is not served.
            Some((at, item)) if (self.now)().duration_since(*at).is_ok_and(|age| age < max_age) => Some(item.clone()),
            _ => None,
        }
    }

    pub fn put(&self, key: String, item: Item) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, ((self.now)(), item));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    static OFFSET_SECS: AtomicU64 = AtomicU64::new(0);

    /// The real time, plus a jump the test makes (a frozen instance thawing later).
    fn moved_clock() -> SystemTime {
        SystemTime::now() + Duration::from_secs(OFFSET_SECS.load(Ordering::SeqCst))
    }

    #[test]
    fn entries_expire_by_the_wall_clock() {
        let cache = Cache::with_clock(Duration::from_secs(60), moved_clock);
        cache.put("k".into(), Item::new());
        assert!(cache.get("k").is_some());
        // Frozen for an hour: no monotonic time passed in this process, the wall clock did.
        OFFSET_SECS.store(3600, Ordering::SeqCst);
        assert!(cache.get("k").is_none(), "an entry outlived its lifetime");
        assert!(cache.get_recent("k", Duration::from_secs(3601)).is_some(), "kept for an outage");
        assert!(cache.get_recent("k", Duration::from_secs(3599)).is_none());
        OFFSET_SECS.store(0, Ordering::SeqCst);
    }
}

//! A small in-memory cache of directory items, each kept at most its lifetime (≤ 60 s).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::item::Item;

/// More entries than this and the cache starts over (a bound, not an LRU: a Lambda
/// instance sees few distinct keys and agents).
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
pub struct Cache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, Item)>>,
}

impl Cache {
    pub fn new(ttl: Duration) -> Self {
        Cache { ttl, entries: Mutex::new(HashMap::new()) }
    }

    /// The item under `key`, unless absent or older than the lifetime.
    pub fn get(&self, key: &str) -> Option<Item> {
        if self.ttl.is_zero() {
            return None;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(key) {
            Some((at, item)) if at.elapsed() < self.ttl => Some(item.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
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
        entries.insert(key, (Instant::now(), item));
    }
}

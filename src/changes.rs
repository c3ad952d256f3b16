//! A counter of changes to the state kept in memory (cameras online, relay
//! health, the cloud link, recorders, storage), bumped after each change, so
//! that views built from that state (the status body) know when to rebuild.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::lock::lock;

#[derive(Default)]
pub struct StateChanges(AtomicU64);

impl StateChanges {
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Drops the entries of a per-camera `map` whose key `keep` refuses
    /// (cameras deleted), counting a change if any went.
    pub fn retain<K: Eq + Hash, V>(&self, map: &Mutex<HashMap<K, V>>, keep: impl Fn(&K) -> bool) {
        let mut map = lock(map);
        let before = map.len();
        map.retain(|key, _| keep(key));
        let removed = map.len() != before;
        drop(map);
        if removed {
            self.bump();
        }
    }
}

//! A counter of changes to the state kept in memory (cameras online, relay
//! health, the cloud link, recorders, storage), bumped after each change, so
//! that views built from that state (the status body) know when to rebuild.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct LiveChanges(AtomicU64);

impl LiveChanges {
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

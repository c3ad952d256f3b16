//! The clips recently asked for by playback, so that a player's many range
//! requests for one stretch all see the same layout even as new segments
//! arrive; and their undoing when retention deletes a file one of them
//! reads, so that no request is answered from a file that is gone.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::playback::Clip;
use crate::db::lock;

/// Clips kept at once, and for how long unused.
const CACHED_CLIPS: usize = 4;
const CACHE_IDLE: Duration = Duration::from_secs(600);

/// (camera, from, to) as asked.
type Key = (Uuid, i64, i64);

#[derive(Default)]
pub struct Clips {
    entries: Mutex<Vec<(Key, Arc<Clip>, Instant)>>,
}

impl Clips {
    pub fn get(&self, key: Key) -> Option<Arc<Clip>> {
        let mut entries = lock(&self.entries);
        entries.retain(|(_, _, used)| used.elapsed() < CACHE_IDLE);
        let entry = entries.iter_mut().find(|(k, _, _)| *k == key)?;
        entry.2 = Instant::now();
        Some(entry.1.clone())
    }

    pub fn put(&self, key: Key, clip: Arc<Clip>) {
        let mut entries = lock(&self.entries);
        entries.retain(|(k, _, _)| *k != key);
        if entries.len() >= CACHED_CLIPS {
            let oldest = entries
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(i, _)| i)
                .expect("full");
            entries.remove(oldest);
        }
        entries.push((key, clip, Instant::now()));
    }

    /// Drops the clips that read from any of `files` (being deleted).
    pub fn forget_files<'a>(&self, files: impl IntoIterator<Item = &'a Path> + Clone) {
        lock(&self.entries)
            .retain(|(_, clip, _)| !files.clone().into_iter().any(|f| clip.reads(f)));
    }
}

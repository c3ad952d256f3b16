//! What playback keeps between requests: the boxes read from each segment
//! (so that a flood of slightly different windows, or a player seeking
//! about, reads each file once, not each window's hour of files again), and
//! the clips recently asked for (so that a player's many range requests for
//! one stretch all see the same layout even as new segments arrive). A
//! file that retention deletes leaves both at once, so that no request is
//! answered from a file that is gone.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::playback::{self, Clip};
use crate::lock::lock;
use crate::media::fmp4::FileIndex;

/// Clips kept at once, and for how long unused (segments' boxes too).
const CACHED_CLIPS: usize = 4;
const CACHE_IDLE: Duration = Duration::from_secs(600);
/// Segments whose boxes are kept: an hour of one camera (the longest
/// playback) and some, about 3 KB each.
const CACHED_SEGMENTS: usize = 400;

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

/// The boxes of indexed segments (closed files that do not change), by path.
#[derive(Default)]
pub struct Segments {
    entries: Mutex<HashMap<PathBuf, (Arc<FileIndex>, Instant)>>,
}

impl Segments {
    /// The boxes of the segment at `path`, read once.
    pub fn index(&self, path: &Path) -> io::Result<Arc<FileIndex>> {
        if let Some((index, used)) = lock(&self.entries).get_mut(path) {
            *used = Instant::now();
            return Ok(index.clone());
        }
        // Read without the cache's lock.
        let index = Arc::new(playback::scan(path)?);
        let mut entries = lock(&self.entries);
        entries.retain(|_, (_, used)| used.elapsed() < CACHE_IDLE);
        if entries.len() >= CACHED_SEGMENTS
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(p, _)| p.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(path.to_owned(), (index.clone(), Instant::now()));
        Ok(index)
    }

    /// Forgets the boxes of `files` (being deleted).
    pub fn forget_files<'a>(&self, files: impl IntoIterator<Item = &'a Path>) {
        let mut entries = lock(&self.entries);
        for file in files {
            entries.remove(file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::fmp4::tests::recording;

    #[test]
    fn boxes_are_read_once_and_forgotten_with_their_file() {
        let dir = std::env::temp_dir().join(format!("nvr-node-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.mp4");
        std::fs::write(&path, recording(3)).unwrap();
        let segments = Segments::default();
        let first = segments.index(&path).unwrap();
        assert_eq!(first.fragments.len(), 3);
        // Kept: the same boxes, even once the file changed.
        std::fs::write(&path, recording(5)).unwrap();
        assert!(Arc::ptr_eq(&first, &segments.index(&path).unwrap()));
        segments.forget_files([path.as_path()]);
        assert_eq!(segments.index(&path).unwrap().fragments.len(), 5);
        std::fs::remove_file(&path).unwrap();
        segments.forget_files([path.as_path()]);
        assert!(segments.index(&path).is_err(), "gone with its file");
        // Bounded.
        for i in 0..CACHED_SEGMENTS + 10 {
            let path = dir.join(format!("{i}.mp4"));
            std::fs::write(&path, recording(1)).unwrap();
            segments.index(&path).unwrap();
        }
        assert_eq!(lock(&segments.entries).len(), CACHED_SEGMENTS);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

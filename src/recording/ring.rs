//! The ring: for a camera that detects motion but does not record, its
//! recorder keeps only the last minute of segments, in RAM (a tmpfs, so the
//! flash is not worn by footage nobody keeps), and an event's clip is cut
//! from them. While an event is on, its segments are pinned and stay until
//! its clip is cut. Nothing of the ring is indexed, and it starts empty.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use uuid::Uuid;

use crate::lock::lock;
use crate::store::Segment;
use crate::sys::filesystem;

/// Segments kept beyond those pinned: a minute of 10 s segments.
const KEPT: usize = 6;
/// The most a camera's ring holds, pins or not. By time: the longest event
/// (5 minutes), its clip's margins (5 s each side) and the wait for its
/// post-capture (40 s at most), rounded up. By bytes: 64 MiB, so that a
/// board's RAM is not the ring's; a camera at 2 Mbit/s makes 75 MB in 5
/// minutes, and the clip of such an event loses its start (said in the log).
const MAX_SPAN_MS: i64 = 6 * 60_000;
const MAX_BYTES: u64 = 64 << 20;

pub struct Ring {
    dir: PathBuf,
    segments: Mutex<HashMap<Uuid, VecDeque<Segment>>>,
    /// (pin, camera, the first moment it keeps).
    pins: Mutex<Vec<(u64, Uuid, i64)>>,
    next_pin: AtomicU64,
}

impl Ring {
    /// A ring in a folder of its own on `/dev/shm`, or, on a board without a
    /// tmpfs there, in `recordings/.ring` (with a warning: it wears the disk).
    /// The folder is named after `recordings`, so nodes on one machine each
    /// have theirs; what a previous run left in it is deleted.
    pub fn new(recordings: &Path) -> Ring {
        let shm = Path::new("/dev/shm");
        let dir = if is_writable_tmpfs(shm) {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            recordings
                .canonicalize()
                .unwrap_or_else(|_| recordings.to_owned())
                .hash(&mut hasher);
            shm.join(format!("nvr-node-{:016x}", hasher.finish()))
        } else {
            log::warn!(
                "no tmpfs at /dev/shm: the last minute of cameras that detect without recording is kept on the recordings' disk"
            );
            recordings.join(".ring")
        };
        let _ = fs::remove_dir_all(&dir);
        Ring {
            dir,
            segments: Mutex::new(HashMap::new()),
            pins: Mutex::new(Vec::new()),
            next_pin: AtomicU64::new(1),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where a segment of `camera` starting at `start_ms` goes, relative to the ring.
    pub fn path(camera: Uuid, start_ms: i64) -> String {
        format!("{camera}/{start_ms}.mp4")
    }

    /// Takes a segment that is in its place, and drops the oldest past the
    /// minute kept that no pin holds.
    pub fn add(&self, segment: Segment) {
        let camera = segment.camera_id;
        let pinned_from = lock(&self.pins)
            .iter()
            .filter(|(_, c, _)| *c == camera)
            .map(|(_, _, from)| *from)
            .min()
            .unwrap_or(i64::MAX);
        let mut all = lock(&self.segments);
        let segments = all.entry(camera).or_default();
        segments.push_back(segment);
        while segments.len() > KEPT {
            let (front, back) = (
                segments.front().expect("not empty"),
                segments.back().expect("not empty"),
            );
            let bytes: u64 = segments.iter().map(|s| s.bytes).sum();
            let span_ms = back.end_ms - front.start_ms;
            let unpinned = front.end_ms < pinned_from;
            let over = span_ms > MAX_SPAN_MS || bytes > MAX_BYTES;
            if !unpinned && !over {
                break;
            }
            let old = segments.pop_front().expect("not empty");
            if !unpinned {
                log::warn!(
                    "camera {camera}: the ring is full ({bytes} bytes, {} s): an event's clip loses its start",
                    span_ms / 1000
                );
            }
            if let Err(e) = fs::remove_file(self.dir.join(&old.path)) {
                log::warn!("cannot delete {} from the ring: {e}", old.path);
            }
        }
    }

    /// The camera's segments overlapping `[from_ms, to_ms)`, oldest first.
    pub fn between(&self, camera: Uuid, from_ms: i64, to_ms: i64) -> Vec<Segment> {
        lock(&self.segments)
            .get(&camera)
            .map(|all| {
                all.iter()
                    .filter(|s| s.start_ms < to_ms && s.end_ms > from_ms)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the camera's recorder keeps its segments here.
    pub fn holds(&self, camera: Uuid) -> bool {
        lock(&self.segments).contains_key(&camera)
    }

    /// Keeps the camera's segments from `from_ms` on until [`Ring::unpin`].
    pub fn pin(&self, camera: Uuid, from_ms: i64) -> u64 {
        let pin = self.next_pin.fetch_add(1, Ordering::Relaxed);
        lock(&self.pins).push((pin, camera, from_ms));
        pin
    }

    pub fn unpin(&self, pin: u64) {
        lock(&self.pins).retain(|(p, _, _)| *p != pin);
    }

    /// Deletes the whole ring (the node stops).
    pub fn clear(&self) {
        lock(&self.segments).clear();
        let _ = fs::remove_dir_all(&self.dir);
    }

    /// Forgets a camera that no longer keeps a ring (it records, or is gone),
    /// deleting its files.
    pub fn forget(&self, camera: Uuid) {
        if lock(&self.segments).remove(&camera).is_some() {
            let _ = fs::remove_dir_all(self.dir.join(camera.to_string()));
        }
    }
}

fn is_writable_tmpfs(path: &Path) -> bool {
    filesystem::is_tmpfs(path) && fs::metadata(path).is_ok_and(|m| !m.permissions().readonly())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(camera: Uuid, start_ms: i64) -> Segment {
        Segment {
            camera_id: camera,
            start_ms,
            end_ms: start_ms + 10_000,
            bytes: 1,
            path: Ring::path(camera, start_ms),
        }
    }

    #[test]
    fn the_last_minute_is_kept_and_pins_hold_more() {
        let recordings = std::env::temp_dir().join(format!("nvr-node-ring-{}", std::process::id()));
        fs::create_dir_all(&recordings).unwrap();
        let ring = Ring::new(&recordings);
        let camera = Uuid::new_v4();
        fs::create_dir_all(ring.dir().join(camera.to_string())).unwrap();
        let add = |start: i64| {
            let s = segment(camera, start);
            fs::write(ring.dir().join(&s.path), b"x").unwrap();
            ring.add(s);
        };
        for i in 0..8 {
            add(i * 10_000);
        }
        let starts = |from, to| {
            ring.between(camera, from, to)
                .iter()
                .map(|s| s.start_ms / 10_000)
                .collect::<Vec<_>>()
        };
        assert_eq!(starts(0, i64::MAX), vec![2, 3, 4, 5, 6, 7], "a minute kept");
        assert!(
            !ring.dir().join(Ring::path(camera, 0)).exists(),
            "the oldest file is gone"
        );
        // An event from 65 s on: its segments stay however many come after.
        let pin = ring.pin(camera, 65_000);
        for i in 8..16 {
            add(i * 10_000);
        }
        assert_eq!(starts(0, i64::MAX), (6..16).collect::<Vec<_>>());
        assert_eq!(starts(65_000, 95_000), vec![6, 7, 8, 9]);
        ring.unpin(pin);
        add(160_000);
        assert_eq!(starts(0, i64::MAX), (11..17).collect::<Vec<_>>());
        // An event that never ends holds six minutes at most.
        let pin = ring.pin(camera, 160_000);
        for i in 17..80 {
            add(i * 10_000);
        }
        assert_eq!(starts(0, i64::MAX), (44..80).collect::<Vec<_>>());
        ring.unpin(pin);
        assert!(ring.holds(camera));
        ring.forget(camera);
        assert!(!ring.holds(camera) && !ring.dir().join(camera.to_string()).exists());
        let _ = fs::remove_dir_all(ring.dir());
        let _ = fs::remove_dir_all(recordings);
    }
}

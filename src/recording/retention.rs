//! Retention by space: the cleaner deletes the oldest segments, across all
//! cameras, while recordings take more than their budget or the file system
//! has less free space than its reserve (read with `statvfs`, so files that
//! others write count too). Segments an event's clip still needs go last.
//! It runs after each new segment, every minute, and at once when ffmpeg
//! runs out of space. Deletion is in the order of the design's rule 2:
//! rows to tombstones, files unlinked, tombstones dropped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use super::files::{self, Space};
use super::{Clean, Shared, Storage};
use crate::store::Segment;

const PERIOD: Duration = Duration::from_secs(60);
/// The reserve when none is set: 1 GiB or 10 % of the file system, the larger.
const DEFAULT_RESERVE: u64 = 1 << 30;
/// Segments looked at per round.
const BATCH: usize = 64;
/// Tombstones unlinked per round.
const GARBAGE_BATCH: usize = 256;

pub(super) fn run(shared: &Shared, orders: mpsc::Receiver<Clean>) {
    if let Ok(space) = files::space(&shared.settings.dir) {
        let reserve = reserve(shared.settings.keep_free, space.total);
        if reserve > space.total / 2 {
            log::warn!(
                "recordings: the free space to keep ({reserve} bytes) is more than half of the disk ({} bytes): \
                 little or nothing will be recorded; set RECORDINGS_KEEP_FREE",
                space.total
            );
        }
    }
    let mut urgent = false;
    loop {
        collect_garbage(shared);
        enforce(shared, urgent);
        match orders.recv_timeout(PERIOD) {
            Ok(first) => {
                urgent = first == Clean::Urgent;
                while let Ok(next) = orders.try_recv() {
                    urgent |= next == Clean::Urgent;
                }
            }
            Err(RecvTimeoutError::Timeout) => urgent = false,
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// The free space to keep on a file system of `total` bytes.
pub fn reserve(configured: Option<u64>, total: u64) -> u64 {
    configured.unwrap_or((total / 10).max(DEFAULT_RESERVE))
}

/// How many bytes of recordings must go: what is over the budget, or what
/// the free space is short of the reserve, whichever is more; when ffmpeg
/// ran out of space, at least `headroom`.
pub fn to_free(
    used: u64,
    budget: Option<u64>,
    space: Space,
    reserve: u64,
    urgent: bool,
    headroom: u64,
) -> u64 {
    let over_budget = budget.map_or(0, |b| used.saturating_sub(b));
    let short = reserve.saturating_sub(space.free);
    let needed = over_budget.max(short);
    if urgent {
        needed.max(headroom.min(used))
    } else {
        needed
    }
}

/// Of the segments in deletion order, those to delete to free `bytes`.
pub fn choose(candidates: &[Segment], bytes: u64) -> &[Segment] {
    let mut freed = 0;
    let count = candidates
        .iter()
        .take_while(|s| {
            let more = freed < bytes;
            freed += s.bytes;
            more
        })
        .count();
    &candidates[..count]
}

fn enforce(shared: &Shared, urgent: bool) {
    let settings = &shared.settings;
    let mut deleted = 0usize;
    let mut freed_total = 0u64;
    let mut urgent = urgent;
    while let Ok(used) = shared.db.run(|s| s.segment_bytes()) {
        let space = match files::space(&settings.dir) {
            Ok(space) => space,
            Err(e) => {
                log::warn!(
                    "cannot read the free space of {}: {e}",
                    settings.dir.display()
                );
                refresh(shared, used, None);
                return;
            }
        };
        refresh(shared, used, Some(space));
        let reserve = reserve(settings.keep_free, space.total);
        let headroom = if urgent { headroom(shared, used) } else { 0 };
        let need = to_free(used, settings.max_bytes, space, reserve, urgent, headroom);
        if need == 0 {
            break;
        }
        let Ok(candidates) = shared.db.run(|s| s.segments_to_delete(BATCH)) else {
            break;
        };
        let chosen = choose(&candidates, need);
        if chosen.is_empty() {
            if urgent {
                log::warn!("recordings: the disk is full and there is no recording left to delete");
            }
            break;
        }
        let freed = delete(shared, chosen);
        if freed == 0 {
            break;
        }
        deleted += chosen.len();
        freed_total += freed;
        urgent = false;
    }
    if deleted > 0 {
        log::info!(
            "recordings: deleted the {deleted} oldest segments ({freed_total} bytes) to keep within the budget and the free-space reserve"
        );
    }
}

/// Room for a few more segments of each recorder: three times the mean
/// segment for each.
fn headroom(shared: &Shared, used: u64) -> u64 {
    let recorders = shared.recorders.load(Ordering::Relaxed).max(1) as u64;
    let segments = shared.db.run(|s| s.segment_count()).unwrap_or(0);
    used.checked_div(segments)
        .map_or(0, |mean| 3 * mean * recorders)
}

/// Deletes `segments`: rows to tombstones, then the files, then the
/// tombstones. When the database cannot write (its disk is full too), the
/// files go first: a row whose file is gone is dropped at the next start.
/// Returns the bytes freed.
fn delete(shared: &Shared, segments: &[Segment]) -> u64 {
    match shared.db.run(|s| s.tombstone_segments(segments)) {
        Ok(freed) => {
            collect_garbage(shared);
            freed
        }
        Err(e) => {
            log::warn!(
                "recordings: cannot mark segments deleted ({e}); deleting their files first"
            );
            let paths: Vec<String> = segments.iter().map(|s| s.path.clone()).collect();
            unlink(&shared.settings.dir, &paths);
            let _ = shared.db.run(|s| s.forget_segments(segments));
            segments.iter().map(|s| s.bytes).sum()
        }
    }
}

/// Unlinks the files of deleted segments and drops their tombstones.
pub(super) fn collect_garbage(shared: &Shared) {
    loop {
        let Ok(paths) = shared.db.run(|s| s.garbage(GARBAGE_BATCH)) else {
            return;
        };
        if paths.is_empty() {
            return;
        }
        unlink(&shared.settings.dir, &paths);
        if shared.db.run(|s| s.forget_garbage(&paths)).is_err() {
            return;
        }
        if paths.len() < GARBAGE_BATCH {
            return;
        }
    }
}

/// Unlinks files (a missing one is fine), makes that durable, and removes
/// the folders it left empty.
fn unlink(dir: &Path, paths: &[String]) {
    let mut folders: BTreeSet<PathBuf> = BTreeSet::new();
    for path in paths {
        let file = dir.join(path);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => log::warn!("cannot delete {}: {e}", file.display()),
        }
        if let Some(folder) = file.parent() {
            folders.insert(folder.to_owned());
        }
    }
    for folder in &folders {
        let _ = files::sync_dir(folder);
        files::remove_if_empty(folder);
        // The camera's folder, once its last hour is gone (a deleted camera).
        if let Some(camera) = folder.parent() {
            files::remove_if_empty(camera);
        }
    }
}

/// Updates what status shows of storage.
fn refresh(shared: &Shared, used: u64, space: Option<Space>) {
    let oldest_ms = shared.db.run(|s| s.oldest_segment_start()).ok().flatten();
    shared.set_storage(Storage {
        used_bytes: used,
        budget_bytes: shared.settings.max_bytes,
        reserve_bytes: reserve(shared.settings.keep_free, space.map_or(0, |s| s.total)),
        free_bytes: space.map(|s| s.free),
        total_bytes: space.map(|s| s.total),
        oldest_ms,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    const GIB: u64 = 1 << 30;

    fn space(free: u64, total: u64) -> Space {
        Space { free, total }
    }

    #[test]
    fn reserves() {
        assert_eq!(reserve(None, 4 * GIB), GIB, "1 GiB on a small disk");
        assert_eq!(reserve(None, 100 * GIB), 10 * GIB, "10 % on a large one");
        assert_eq!(reserve(Some(5), 100 * GIB), 5);
    }

    #[test]
    fn what_must_go() {
        let table = [
            // used, budget, free, reserve, urgent, headroom -> bytes to free
            (100, None, 50, 10, false, 0, 0),
            (100, Some(80), 50, 10, false, 0, 20),
            (100, Some(80), 5, 10, false, 0, 20),
            (100, Some(80), 0, 30, false, 0, 30),
            (100, None, 0, 0, false, 0, 0),
            (100, None, 0, 0, true, 24, 24),
            (10, None, 0, 0, true, 24, 10),
            (100, Some(80), 0, 0, true, 5, 20),
        ];
        for (used, budget, free, reserve, urgent, headroom, want) in table {
            assert_eq!(
                to_free(used, budget, space(free, 1000), reserve, urgent, headroom),
                want,
                "{used} {budget:?} {free} {reserve} {urgent} {headroom}"
            );
        }
    }

    #[test]
    fn the_fewest_oldest_segments_that_free_enough() {
        let segments: Vec<Segment> = [40, 30, 20, 10]
            .iter()
            .enumerate()
            .map(|(i, bytes)| Segment {
                camera_id: Uuid::nil(),
                start_ms: i as i64,
                end_ms: i as i64 + 1,
                bytes: *bytes,
                path: String::new(),
            })
            .collect();
        let starts = |bytes| {
            choose(&segments, bytes)
                .iter()
                .map(|s| s.start_ms)
                .collect::<Vec<_>>()
        };
        assert_eq!(starts(0), Vec::<i64>::new());
        assert_eq!(starts(1), vec![0]);
        assert_eq!(starts(40), vec![0]);
        assert_eq!(starts(41), vec![0, 1]);
        assert_eq!(starts(1000), vec![0, 1, 2, 3]);
    }
}

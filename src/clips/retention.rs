//! Retention of clips by space: the oldest events go, each with its clip
//! and thumbnail, while events' files take more than their budget
//! (`CLIPS_MAX_BYTES`) or their file system has less free space than its
//! floor (`CLIPS_KEEP_FREE`, read with `statvfs`, so files that others write
//! count too). Clip files that no event names count as well, and go oldest
//! first by their time of change. It runs after each new clip and every
//! minute. Deletion is in the order of the design's rule 2: rows to
//! tombstones in one transaction, then the files unlinked and their folder
//! fsynced, then the tombstones dropped; a file that cannot be unlinked
//! (for any reason but its being gone already) keeps its tombstone.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::{Inner, Storage, orphans};
use crate::filesystem::{self, Space};
use crate::recording::fewest_to_free;
use crate::store::EventFiles;

/// The floor when none is set: 512 MiB or 5 % of the file system, the
/// larger; half the recordings' reserve (1 GiB or 10 %), so that on a disk
/// they share the continuous recordings give way before the events' clips.
const DEFAULT_FLOOR: u64 = 512 << 20;
/// Events looked at per round.
const BATCH: usize = 64;
/// Tombstones unlinked per round, and events measured.
const GARBAGE_BATCH: usize = 256;

/// The free space to keep on a file system of `total` bytes.
pub fn floor(configured: Option<u64>, total: u64) -> u64 {
    configured.unwrap_or((total / 20).max(DEFAULT_FLOOR))
}

/// Why clips are deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Budget,
    Floor,
}

impl Rule {
    fn words(self) -> &'static str {
        match self {
            Rule::Budget => "clips over their budget",
            Rule::Floor => "free space under the floor",
        }
    }
}

/// How many bytes of clips must go, and the rule that asks it: what they
/// take over the budget, or what the free space is short of the floor,
/// whichever is more. None: nothing must go.
pub fn to_free(used: u64, budget: u64, free: Option<u64>, floor: u64) -> Option<(u64, Rule)> {
    let over = used.saturating_sub(budget);
    let short = free.map_or(0, |free| floor.saturating_sub(free));
    match (over, short) {
        (0, 0) => None,
        (over, short) if over >= short => Some((over, Rule::Budget)),
        (_, short) => Some((short, Rule::Floor)),
    }
}

/// What may go to make room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Doomed {
    /// An event, with its files.
    Event(Uuid),
    /// A clip file no event names, relative to `DATA_DIR`.
    File(String),
}

/// Something that may go, with its age (an event's start, a file's time of
/// change) and bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub at_ms: i64,
    pub bytes: u64,
    pub what: Doomed,
}

impl From<EventFiles> for Candidate {
    fn from(event: EventFiles) -> Candidate {
        Candidate {
            at_ms: event.started_at_ms,
            bytes: event.bytes,
            what: Doomed::Event(event.id),
        }
    }
}

/// The order things go in, oldest first: `events` (the oldest with files,
/// oldest first; `all`: every one of them) and unnamed `files` (oldest
/// first). A file newer than the last event listed waits for a later batch,
/// unless all events are listed: older events may come before it.
pub fn order(events: Vec<Candidate>, files: &[Candidate], all: bool) -> Vec<Candidate> {
    let last = events.last().map(|e| e.at_ms);
    let mut files = files
        .iter()
        .filter(|f| all || last.is_some_and(|last| f.at_ms <= last))
        .peekable();
    let mut order = Vec::with_capacity(events.len());
    for event in events {
        while let Some(file) = files.next_if(|f| f.at_ms < event.at_ms) {
            order.push(file.clone());
        }
        order.push(event);
    }
    order.extend(files.cloned());
    order
}

/// Of the candidates in deletion order, the fewest that free `bytes`.
pub fn choose(candidates: &[Candidate], bytes: u64) -> &[Candidate] {
    fewest_to_free(candidates, bytes, |c| c.bytes)
}

/// The clips' retention, as the clip thread keeps it.
pub(super) struct Retention {
    /// Clip files no event names, found at start, oldest first.
    orphans: Vec<Candidate>,
}

impl Retention {
    /// At start: finishes deletions a crash interrupted, measures the files
    /// of events from before their bytes were counted, and counts the clip
    /// files no event names (deleting none of them).
    pub fn start(inner: &Inner) -> Retention {
        collect_garbage(inner);
        measure(inner);
        let dir = inner.settings.clips_dir();
        let orphans = match inner.db.run(|s| s.event_files()) {
            Ok(named) => orphans::find(&inner.settings.data_dir, &named),
            Err(_) => Vec::new(),
        };
        if !orphans.is_empty() {
            let bytes: u64 = orphans.iter().map(|o| o.bytes).sum();
            log::info!(
                "clips: {} files ({bytes} bytes) in {} are no event's; they count in the clips' budget and go first when room is needed",
                orphans.len(),
                dir.display()
            );
        }
        Retention { orphans }
    }

    /// Deletes the oldest clips while they take more than their budget or
    /// their disk has less free space than its floor.
    pub fn enforce(&mut self, inner: &Inner) {
        let settings = &inner.settings;
        let dir = settings.clips_dir();
        let Some(used) = self.used(inner) else {
            return;
        };
        let space = match filesystem::space(&dir) {
            Ok(space) => Some(space),
            Err(e) => {
                log::warn!("cannot read the free space of {}: {e}", dir.display());
                None
            }
        };
        let floor = floor(settings.keep_free, space.map_or(0, |s| s.total));
        let need = to_free(used, settings.max_bytes, space.map(|s| s.free), floor);
        if let Some((need, rule)) = need {
            self.free(inner, need, rule);
        }
        let space = if need.is_some() {
            filesystem::space(&dir).ok()
        } else {
            space
        };
        if let Some(used) = self.used(inner) {
            self.refresh(inner, used, space);
        }
    }

    /// The bytes of events' files and of files no event names.
    fn used(&self, inner: &Inner) -> Option<u64> {
        let events = inner.db.run(|s| s.event_bytes()).ok()?;
        Some(events + self.orphans.iter().map(|o| o.bytes).sum::<u64>())
    }

    /// Deletes the oldest events and unnamed files until `need` bytes are freed.
    fn free(&mut self, inner: &Inner, need: u64, rule: Rule) {
        let (mut events, mut event_bytes, mut files, mut file_bytes) = (0, 0, 0, 0);
        while event_bytes + file_bytes < need {
            let Ok(oldest) = inner.db.run(|s| s.oldest_event_files(BATCH)) else {
                break;
            };
            let all = oldest.len() < BATCH;
            let events_in_order = oldest.into_iter().map(Candidate::from).collect();
            let candidates = order(events_in_order, &self.orphans, all);
            let chosen = choose(&candidates, need - event_bytes - file_bytes);
            if chosen.is_empty() {
                break;
            }
            // The unnamed files first (no row names them): a failed event
            // deletion below then leaves none of them counted but gone. One
            // that cannot be unlinked stays counted, and is tried again at
            // the next round, not in this one (it would be chosen again).
            let mut stuck = false;
            for candidate in chosen {
                if let Doomed::File(path) = &candidate.what {
                    if unlink(&inner.settings.data_dir, std::slice::from_ref(path)).is_empty() {
                        stuck = true;
                        continue;
                    }
                    self.orphans.retain(|o| o.what != candidate.what);
                    files += 1;
                    file_bytes += candidate.bytes;
                }
            }
            let ids: Vec<Uuid> = chosen
                .iter()
                .filter_map(|c| match &c.what {
                    Doomed::Event(id) => Some(*id),
                    Doomed::File(_) => None,
                })
                .collect();
            if !ids.is_empty() {
                let Some(freed) = delete_events(inner, &ids) else {
                    break;
                };
                events += ids.len();
                event_bytes += freed;
            }
            if stuck {
                break;
            }
        }
        if events > 0 {
            log::info!(
                "clips: deleted the {events} oldest events with their clips and thumbnails ({event_bytes} bytes): {}",
                rule.words()
            );
        }
        if files > 0 {
            log::info!(
                "clips: deleted the {files} oldest clip files that no event names ({file_bytes} bytes): {}",
                rule.words()
            );
        }
    }

    /// Updates what status shows of the clips: their disk's figures only
    /// when it is known not to be the recordings' (looked at each time: the
    /// recordings folder may be made after the clips', or be on a disk
    /// mounted late; until it is there, the figures wait for the next time).
    fn refresh(&self, inner: &Inner, used: u64, space: Option<Space>) {
        let settings = &inner.settings;
        let own_disk =
            filesystem::same_file_system(&settings.clips_dir(), &settings.recordings_dir)
                == Some(false);
        inner.set_storage(Storage {
            used_bytes: used,
            budget_bytes: settings.max_bytes,
            reserve_bytes: floor(settings.keep_free, space.map_or(0, |s| s.total)),
            disk: space.filter(|_| own_disk),
        });
    }
}

/// Deletes events with their files; returns the bytes freed. When the
/// database cannot write (its disk, often the clips', is full), the files
/// go first to make room, and the events after them.
fn delete_events(inner: &Inner, ids: &[Uuid]) -> Option<u64> {
    match inner.db.run(|s| s.tombstone_events(ids)) {
        Ok(freed) => {
            collect_garbage(inner);
            Some(freed)
        }
        Err(e) => {
            log::warn!("clips: cannot mark events deleted ({e}); deleting their files first");
            let files = inner.db.run(|s| s.files_of_events(ids)).unwrap_or_default();
            unlink(&inner.settings.data_dir, &files);
            let freed = inner.db.run(|s| s.tombstone_events(ids)).ok();
            collect_garbage(inner);
            freed
        }
    }
}

/// Unlinks the files of tombstones and drops the tombstones of those gone.
pub(super) fn collect_garbage(inner: &Inner) {
    loop {
        let Ok(paths) = inner.db.run(|s| s.clip_garbage(GARBAGE_BATCH)) else {
            return;
        };
        let gone = bury(inner, &paths);
        if paths.len() < GARBAGE_BATCH || gone < paths.len() {
            return;
        }
    }
}

/// Unlinks tombstoned `paths` and drops the tombstones of the files gone;
/// returns how many are.
pub(super) fn bury(inner: &Inner, paths: &[String]) -> usize {
    if paths.is_empty() {
        return 0;
    }
    let gone = unlink(&inner.settings.data_dir, paths);
    if !gone.is_empty() && inner.db.run(|s| s.forget_clip_garbage(&gone)).is_err() {
        return 0;
    }
    gone.len()
}

/// Unlinks files (relative to `data_dir`; a missing one is fine), makes
/// that durable, and removes the camera folders it left empty. Returns the
/// files that are gone.
fn unlink(data_dir: &Path, paths: &[String]) -> Vec<String> {
    let mut folders: BTreeSet<PathBuf> = BTreeSet::new();
    let mut gone = Vec::new();
    for path in paths {
        let file = data_dir.join(path);
        match fs::remove_file(&file) {
            Ok(()) => gone.push(path.clone()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => gone.push(path.clone()),
            Err(e) => log::warn!("cannot delete {}: {e}", file.display()),
        }
        if let Some(folder) = file.parent() {
            folders.insert(folder.to_owned());
        }
    }
    for folder in &folders {
        let _ = filesystem::sync_dir(folder);
        if orphans::is_camera_folder(data_dir, folder) {
            // Only when empty: a clip may be written into it meanwhile.
            let _ = fs::remove_dir(folder);
        }
    }
    gone
}

/// Measures the files of events whose bytes are not known (from before the
/// database counted them).
fn measure(inner: &Inner) {
    let size = |path: &Option<String>| {
        path.as_ref()
            .and_then(|p| fs::metadata(inner.settings.data_dir.join(p)).ok())
            .map_or(0, |m| m.len())
    };
    let mut measured = 0;
    while let Ok(events) = inner.db.run(|s| s.unmeasured_events(GARBAGE_BATCH)) {
        if events.is_empty() {
            break;
        }
        for (id, clip, thumbnail) in &events {
            let (clip, thumbnail) = (size(clip), size(thumbnail));
            if inner
                .db
                .run(|s| s.measure_event(*id, clip, thumbnail))
                .is_err()
            {
                return;
            }
        }
        measured += events.len();
    }
    if measured > 0 {
        log::info!("clips: measured the files of {measured} events");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn floors() {
        assert_eq!(floor(None, 15 << 30), 768 * MIB, "5 % of a 16 GB card");
        assert_eq!(floor(None, 4 << 30), 512 * MIB, "512 MiB on a small disk");
        assert_eq!(floor(Some(5), 15 << 30), 5);
    }

    #[test]
    fn what_must_go_and_why() {
        let table = [
            // used, budget, free, floor -> bytes to free, rule
            (100, 200, Some(50), 10, None),
            (100, 200, None, 10, None),
            (250, 200, Some(50), 10, Some((50, Rule::Budget))),
            (250, 200, Some(5), 10, Some((50, Rule::Budget))),
            (250, 200, Some(0), 60, Some((60, Rule::Floor))),
            (100, 200, Some(0), 60, Some((60, Rule::Floor))),
            (100, 0, Some(0), 0, Some((100, Rule::Budget))),
        ];
        for (used, budget, free, floor, want) in table {
            assert_eq!(
                to_free(used, budget, free, floor),
                want,
                "{used} {budget} {free:?} {floor}"
            );
        }
        assert_eq!(Rule::Budget.words(), "clips over their budget");
        assert_eq!(Rule::Floor.words(), "free space under the floor");
    }

    fn event(at_ms: i64, bytes: u64) -> Candidate {
        Candidate {
            at_ms,
            bytes,
            what: Doomed::Event(Uuid::from_u128(at_ms as u128)),
        }
    }

    fn file(at_ms: i64, bytes: u64) -> Candidate {
        Candidate {
            at_ms,
            bytes,
            what: Doomed::File(format!("clips/{at_ms}")),
        }
    }

    fn ages(candidates: &[Candidate]) -> Vec<(i64, bool)> {
        candidates
            .iter()
            .map(|c| (c.at_ms, matches!(c.what, Doomed::File(_))))
            .collect()
    }

    #[test]
    fn unnamed_files_take_their_turn_by_age() {
        let events = vec![event(10, 1), event(20, 1), event(30, 1)];
        let files = [file(5, 1), file(20, 1), file(25, 1), file(40, 1)];
        assert_eq!(
            ages(&order(events.clone(), &files, false)),
            [
                (5, true),
                (10, false),
                (20, false),
                (20, true),
                (25, true),
                (30, false)
            ],
            "a file newer than the batch's last event waits"
        );
        assert_eq!(
            ages(&order(events, &files, true)),
            [
                (5, true),
                (10, false),
                (20, false),
                (20, true),
                (25, true),
                (30, false),
                (40, true)
            ],
            "with every event listed, every file comes"
        );
        assert_eq!(ages(&order(Vec::new(), &files, true)).len(), 4);
        assert!(order(Vec::new(), &files, false).is_empty());
    }

    #[test]
    fn the_fewest_oldest_that_free_enough() {
        let candidates = [file(0, 40), event(1, 30), event(2, 0), event(3, 10)];
        let count = |bytes| choose(&candidates, bytes).len();
        assert_eq!(count(0), 0);
        assert_eq!(count(1), 1);
        assert_eq!(count(40), 1);
        assert_eq!(count(41), 2);
        assert_eq!(count(71), 4, "an event without bytes goes on the way");
        assert_eq!(count(1000), 4);
    }
}

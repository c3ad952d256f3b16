//! Retention of clips by space: the oldest events not kept go, each with
//! its clip and thumbnail, while those events' files take more than their budget
//! (`CLIPS_MAX_BYTES`) or their file system has less free space than its
//! reserve (`CLIPS_RESERVE`, read with `statvfs`, so files that others write
//! count too). Clip files that no event names count as well, and go oldest
//! first by their time of change. It runs after each new clip and every
//! minute. Deletion is in the order of rule 2 of the design
//! (docs/design/recording-and-motion.md): rows to
//! tombstones in one transaction, then the files unlinked and their folder
//! fsynced, then the tombstones dropped; a file that cannot be unlinked
//! (for any reason but its being gone already) keeps its tombstone, and
//! only bytes of files gone count as freed. A disk that refuses deletes
//! keeps the events: before each batch the clips' folder, and each event's
//! folder, must be the node's to change (not read-only, not another
//! user's), and a batch that frees nothing ends the pass; the status says
//! why.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

use uuid::Uuid;

use super::orphans::{self, Orphan};
use super::{Inner, Storage};
use crate::clock;
use crate::error::Kind;
use crate::retention::{self, CLIPS, KEPT_FOR, Rule};
use crate::store::{EventFiles, Tombstones};
use crate::sys::filesystem::{self, Space};

/// Events looked at per round.
const BATCH: usize = 64;
/// Tombstones unlinked per round, and events measured.
const GARBAGE_BATCH: usize = 256;

/// The rule that deleted clips, as the log names it, and its setting.
fn words(rule: Rule) -> (&'static str, &'static str) {
    match rule {
        Rule::Budget => ("clips over their budget", "CLIPS_MAX_BYTES"),
        Rule::Reserve => ("free space under the reserve", "CLIPS_RESERVE"),
    }
}

/// What may go to make room.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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

impl From<Orphan> for Candidate {
    fn from(file: Orphan) -> Candidate {
        Candidate {
            at_ms: file.changed_ms,
            bytes: file.bytes,
            what: Doomed::File(file.path),
        }
    }
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

/// The clips' retention, as the clip thread keeps it.
pub(super) struct Retention {
    /// Clip files no event names, found at start, oldest first.
    orphans: Vec<Candidate>,
    /// What could not be deleted (events kept whole), and when: left out
    /// of the choices for [`KEPT_FOR`], so that one folder the disk
    /// refuses does not stop all deletion; tried again after.
    kept: HashMap<Doomed, Instant>,
    /// Why something could not be deleted lately, for the status.
    why_kept: Option<String>,
}

impl Retention {
    /// At start: finishes deletions a crash interrupted, measures the files
    /// of events from before their bytes were counted, and counts the clip
    /// files no event names (deleting none of them).
    pub fn start(inner: &Inner) -> Retention {
        collect_garbage(inner);
        measure(inner);
        let dir = inner.settings.clips_dir();
        let orphans: Vec<Candidate> = match inner.db.run(|s| s.event_files()) {
            Ok(named) => orphans::find(&inner.settings.data_dir, &named)
                .into_iter()
                .map(Candidate::from)
                .collect(),
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
        Retention {
            orphans,
            kept: HashMap::new(),
            why_kept: None,
        }
    }

    /// Deletes the events past their age (EVENTS_RETAIN_DAYS), then the
    /// oldest clips while they take more than their budget or their disk has
    /// less free space than its reserve.
    pub fn enforce(&mut self, inner: &Inner) {
        expire(inner);
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
        let limits = inner.limits();
        let reserve = retention::reserve(limits.reserve, space.map_or(0, |s| s.total), CLIPS);
        let need = retention::to_free(used, Some(limits.max_bytes), space.map(|s| s.free), reserve);
        // Tombstones left by an earlier refusal are tried again.
        collect_garbage(inner);
        self.kept.retain(|_, since| since.elapsed() < KEPT_FOR);
        let mut refused = None;
        if let Some((need, rule)) = need {
            refused = self.free(inner, need, rule);
        }
        if self.kept.is_empty() && refused.is_none() {
            self.why_kept = None;
        }
        let message = match (refused, &self.why_kept) {
            (Some(why), _) => Some(format!("old clips are not deleted: {why}")),
            (None, Some(why)) => Some(format!(
                "old clips that cannot be deleted are kept, and newer ones go in their place: {why}"
            )),
            (None, None) => None,
        };
        let space = if need.is_some() {
            filesystem::space(&dir).ok()
        } else {
            space
        };
        if let Some(used) = self.used(inner) {
            self.refresh(inner, used, space, message);
        }
    }

    /// The bytes of events' files, but kept ones' (they have a budget of
    /// their own, and no rule deletes them), and of files no event names.
    fn used(&self, inner: &Inner) -> Option<u64> {
        let events = inner
            .db
            .run(|s| {
                Ok(s.event_bytes()?
                    .saturating_sub(s.event_tallies()?.kept_bytes))
            })
            .ok()?;
        Some(events + self.orphans.iter().map(|o| o.bytes).sum::<u64>())
    }

    /// Deletes the oldest events and unnamed files until `need` bytes are
    /// freed, counting only files gone. Returns why it stopped short, when
    /// the disk refused: the clips' folder cannot be written, or a batch
    /// freed nothing.
    fn free(&mut self, inner: &Inner, need: u64, rule: Rule) -> Option<String> {
        let data_dir = &inner.settings.data_dir;
        let (mut events, mut event_bytes, mut files, mut file_bytes) = (0, 0, 0, 0);
        let mut refused = None;
        while event_bytes + file_bytes < need {
            // Looked at again each round: the disk may have gone read-only.
            if let Err(e) = filesystem::writable(&inner.settings.clips_dir()) {
                refused = Some(format!(
                    "the clips' folder cannot be written to ({e}); the events and their files are kept"
                ));
                break;
            }
            let limit = BATCH + self.kept.len();
            let Ok(oldest) = inner.db.run(|s| s.oldest_event_files(limit)) else {
                break;
            };
            let all = oldest.len() < limit;
            let events_in_order = oldest
                .into_iter()
                .map(Candidate::from)
                .filter(|c| !self.kept.contains_key(&c.what))
                .collect();
            let orphans: Vec<Candidate> = self
                .orphans
                .iter()
                .filter(|o| !self.kept.contains_key(&o.what))
                .cloned()
                .collect();
            let candidates = order(events_in_order, &orphans, all);
            let chosen =
                retention::fewest_to_free(&candidates, need - event_bytes - file_bytes, |c| {
                    c.bytes
                });
            if chosen.is_empty() {
                break;
            }
            let now = Instant::now();
            let mut freed = 0;
            let mut why = None;
            // The unnamed files first (no row names them): a failed event
            // deletion below then leaves none of them counted but gone.
            let mut ids = Vec::new();
            for candidate in chosen {
                match &candidate.what {
                    Doomed::File(path) => {
                        let (gone, refusal) = unlink(data_dir, std::slice::from_ref(path));
                        if gone.is_empty() {
                            self.kept.insert(candidate.what.clone(), now);
                            why = why.or(refusal);
                            continue;
                        }
                        self.orphans.retain(|o| o.what != candidate.what);
                        files += 1;
                        file_bytes += candidate.bytes;
                        freed += candidate.bytes;
                    }
                    Doomed::Event(id) => ids.push(*id),
                }
            }
            // An event whose files' folder the node may not change is kept
            // whole, its row too: a tombstone could not be unlinked.
            let Some(held) = refusing_folders(inner, &ids) else {
                break;
            };
            ids.retain(|id| !held.iter().any(|(h, _)| h == id));
            for (id, refusal) in held {
                self.kept.insert(Doomed::Event(id), now);
                why = why.or(Some(refusal));
            }
            if !ids.is_empty() {
                let Some((gone_bytes, refusal)) = delete_events(inner, &ids) else {
                    break;
                };
                events += ids.len();
                event_bytes += gone_bytes;
                freed += gone_bytes;
                why = why.or(refusal);
            }
            if let Some(why) = why {
                self.why_kept = Some(why.clone());
                if freed == 0 {
                    refused = Some(format!("{why}; tried again at the next check"));
                    break;
                }
            }
        }
        let (words, setting) = words(rule);
        if events > 0 {
            log::info!(
                "clips: deleted the {events} oldest events with their clips and thumbnails ({event_bytes} bytes): {words} ({setting})"
            );
            inner.deleted_by(setting, events as u64, event_bytes);
        }
        if files > 0 {
            log::info!(
                "clips: deleted the {files} oldest clip files that no event names ({file_bytes} bytes): {words} ({setting})"
            );
        }
        if let Some(why) = &refused {
            log::warn!("clips: old clips are not deleted: {why}");
        }
        refused
    }

    /// Updates what status shows of the clips: their disk's figures only
    /// when it is known not to be the recordings' (looked at each time: the
    /// recordings folder may be made after the clips', or be on a disk
    /// mounted late; until it is there, the figures wait for the next time).
    fn refresh(&self, inner: &Inner, used: u64, space: Option<Space>, message: Option<String>) {
        let settings = &inner.settings;
        let own_disk =
            filesystem::same_file_system(&settings.clips_dir(), &settings.recordings_dir)
                == Some(false);
        let limits = inner.limits();
        inner.set_storage(Storage {
            used_bytes: used,
            budget_bytes: limits.max_bytes,
            reserve_bytes: retention::reserve(limits.reserve, space.map_or(0, |s| s.total), CLIPS),
            disk: space.filter(|_| own_disk),
            message,
            last_deletion: None,
        });
    }
}

/// Of `ids`, the events with a file in a folder the node may not change
/// (read-only, another user's), each with why; None when the database
/// cannot tell.
fn refusing_folders(inner: &Inner, ids: &[Uuid]) -> Option<Vec<(Uuid, String)>> {
    let mut held = Vec::new();
    for id in ids {
        let files = inner.db.run(|s| s.files_of_events(&[*id])).ok()?;
        let refusal = files.iter().find_map(|file| {
            let folder = inner.settings.data_dir.join(file);
            let folder = folder.parent()?;
            let e = filesystem::writable(folder).err()?;
            Some(format!("cannot delete {file}: {}: {e}", folder.display()))
        });
        if let Some(why) = refusal {
            held.push((*id, why));
        }
    }
    Some(held)
}

/// Deletes events with their files; returns the bytes of the files gone,
/// and why others are not (their tombstones stay). When the database's
/// disk is full and is the clips' disk too, the files go first to make
/// room, and the events after them; any other failure to write the
/// database deletes nothing.
fn delete_events(inner: &Inner, ids: &[Uuid]) -> Option<(u64, Option<String>)> {
    let data_dir = &inner.settings.data_dir;
    let files = inner.db.run(|s| s.files_of_events(ids)).ok()?;
    let (bytes, gone, refusal) = match inner.db.run(|s| s.tombstone_events(ids)) {
        // The files of the events deleted: one kept since `files` were
        // read keeps its own.
        Ok((files, bytes)) => {
            let (gone, refusal) = unlink(data_dir, &files);
            // A tombstone left on failure is dropped by a later collection.
            let _ = inner
                .db
                .run(|s| s.forget_tombstones(Tombstones::Clips, &gone));
            (bytes, gone, refusal)
        }
        Err(e)
            if e.kind == Kind::InsufficientStorage
                && filesystem::same_file_system(data_dir, &inner.settings.clips_dir())
                    == Some(true) =>
        {
            log::warn!("clips: cannot mark events deleted ({e}); deleting their files first");
            let (gone, refusal) = unlink(data_dir, &files);
            let bytes = inner.db.run(|s| s.tombstone_events(ids)).ok()?.1;
            collect_garbage(inner);
            (bytes, gone, refusal)
        }
        Err(e) => {
            log::warn!("clips: cannot mark events deleted ({e}); nothing is deleted");
            return None;
        }
    };
    // What is still there was not freed.
    let left: u64 = files
        .iter()
        .filter(|f| !gone.contains(f))
        .filter_map(|f| fs::metadata(data_dir.join(f)).ok())
        .map(|m| m.len())
        .sum();
    Some((bytes.saturating_sub(left), refusal))
}

/// Deletes the events not kept older than EVENTS_RETAIN_DAYS, their files
/// left as tombstones for the collection that follows. Not while the clock
/// is not believed, nor just after it jumped ahead: the age of every event
/// would be wrong.
fn expire(inner: &Inner) {
    let Some(days) = inner.limits().retain_days else {
        return;
    };
    if !clock::ages_believed() {
        return;
    }
    let before = clock::now_ms().saturating_sub(days as i64 * DAY_MS);
    if let Ok((count, bytes)) = inner.db.run(|s| s.tombstone_events_before(before))
        && count > 0
    {
        log::info!(
            "clips: deleted the {count} events older than {days} days with their clips and thumbnails ({bytes} bytes): EVENTS_RETAIN_DAYS"
        );
        inner.deleted_by("EVENTS_RETAIN_DAYS", count, bytes);
    }
}

const DAY_MS: i64 = 24 * 3600 * 1000;

/// Unlinks the files of tombstones and drops the tombstones of those gone.
pub(super) fn collect_garbage(inner: &Inner) {
    loop {
        let Ok(paths) = inner
            .db
            .run(|s| s.tombstones(Tombstones::Clips, GARBAGE_BATCH))
        else {
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
    let (gone, _) = unlink(&inner.settings.data_dir, paths);
    if !gone.is_empty()
        && inner
            .db
            .run(|s| s.forget_tombstones(Tombstones::Clips, &gone))
            .is_err()
    {
        return 0;
    }
    gone.len()
}

/// Unlinks clip files (relative to `data_dir`) durably (see
/// [`filesystem::unlink_durably`]), and removes the camera folders it left
/// empty. Returns the files that are gone, and why the first of the others
/// is not.
fn unlink(data_dir: &Path, paths: &[String]) -> (Vec<String>, Option<String>) {
    filesystem::unlink_durably(data_dir, paths, |folder| {
        if orphans::is_camera_folder(data_dir, folder) {
            // Only when empty: a clip may be written into it meanwhile.
            let _ = fs::remove_dir(folder);
        }
    })
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
}

//! Retention by space: the cleaner deletes the oldest segments, across all
//! cameras (those of cameras the node does not know included), while
//! recordings take more than their budget or the file system has less free
//! space than its reserve (read with `statvfs`, so files that others write
//! count too). Segments an event's clip still needs go last. It runs after
//! each new segment, every minute, and at once when ffmpeg runs out of
//! space, and only while the recordings folder is this node's. Deletion is
//! in the order of rule 2 of the design
//! (docs/design/recording-and-motion.md): rows to tombstones, files unlinked,
//! tombstones dropped; a file whose unlink failed gets its row back, and
//! only bytes of files gone count as freed. A disk that refuses deletes
//! (read-only, not the node's to change) or a database that cannot be
//! written stops the pass with every row left: it says why in the status,
//! and looks again after 10 s, doubling to 5 minutes: it never spins.
//! The folders of deleted cameras are emptied here too.
//!
//! Retention by age: first in each pass, a camera with `retainDays` loses
//! its segments that ended more than that many days ago, oldest first, by
//! the same deletion; nothing goes by age while the clock is not believed,
//! nor in the first minutes after it jumped ahead (`clock::ages_believed`).

use crate::channel::{self, RecvTimeoutError};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::files::{self, INCOMING};
use super::filing;
use super::{Clean, Deletion, Shared, Storage, lock};
use crate::clock;
use crate::error::{Error, Kind};
use crate::retention::{self, KEPT_FOR, RECORDINGS, Rule};
use crate::store::{Segment, Tombstones};
use crate::sys::filesystem::{self, Space};

const PERIOD: Duration = Duration::from_secs(60);
/// Segments looked at per round.
const BATCH: usize = 64;
/// Tombstones unlinked per round.
const GARBAGE_BATCH: usize = 256;
/// The first wait after a pass the database did not let finish, and the longest.
const FIRST_BACKOFF: Duration = Duration::from_secs(10);
const LAST_BACKOFF: Duration = Duration::from_secs(300);

/// The cleaner's memory between passes.
#[derive(Default)]
struct Cleaner {
    /// Files unlinked whose rows could not be dropped yet (the database's
    /// disk was full): left out of the next choices, forgotten later.
    unlinked: Vec<Segment>,
    /// Passes in a row that the database did not let finish.
    failures: u32,
    /// Files that could not be unlinked (their rows kept), and when:
    /// left out of the choices for [`KEPT_FOR`], so that one file the disk
    /// refuses does not stop all deletion; tried again after.
    kept: HashMap<String, Instant>,
    /// Why the last of them could not be.
    why_kept: Option<String>,
    /// How many of the clock's lowerings (`clock::lowered`) were dealt with.
    lowerings: usize,
}

impl Cleaner {
    /// The files left out of the next choices: unlinked with their rows
    /// still there, or kept after a refused unlink.
    fn skipped(&self) -> HashSet<&str> {
        self.unlinked
            .iter()
            .map(|s| s.path.as_str())
            .chain(self.kept.keys().map(String::as_str))
            .collect()
    }

    /// What status says of the files kept, while any is.
    fn kept_message(&mut self) -> Option<String> {
        if self.kept.is_empty() {
            self.why_kept = None;
        }
        let why = self.why_kept.as_ref()?;
        Some(format!(
            "old recordings that cannot be deleted are kept, and newer ones go in their place: {why}"
        ))
    }
}

pub(super) fn run(shared: &Shared, orders: channel::Receiver<Clean>) {
    let mut cleaner = Cleaner::default();
    let mut urgent = false;
    let mut warned_reserve = false;
    loop {
        let outcome = if shared.disk_ready() {
            warned_reserve |= warn_of_reserve(shared, warned_reserve);
            pass(shared, &mut cleaner, urgent)
        } else {
            // Nothing is deleted from a folder that is not this node's.
            refresh(shared, None, None)
        };
        // The message is decided once the pass is over: status does not
        // flicker while it runs.
        let (wait, message) = match outcome {
            Ok(()) => {
                cleaner.failures = 0;
                (PERIOD, cleaner.kept_message())
            }
            Err(e) => {
                cleaner.failures += 1;
                let wait = backoff(cleaner.failures);
                let why = format!(
                    "old recordings are not deleted: {}; the node tries again in {} s",
                    e.message,
                    wait.as_secs()
                );
                log::warn!("recordings: {why}");
                (wait, Some(why))
            }
        };
        let mut storage = lock(&shared.storage).clone();
        storage.message = message;
        shared.set_storage(storage);
        // A new segment or ffmpeg's full disk wakes the cleaner early, but
        // not while it waits for the database.
        let until = Instant::now() + wait;
        urgent = false;
        loop {
            match orders.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(order) => {
                    urgent |= order == Clean::Urgent;
                    if cleaner.failures == 0 {
                        while let Ok(next) = orders.try_recv() {
                            urgent |= next == Clean::Urgent;
                        }
                        break;
                    }
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// The wait after `failures` passes in a row that the database did not let
/// finish: 10 s, doubling to 5 minutes.
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(LAST_BACKOFF)
}

/// Says once when the reserve would leave little room to record.
fn warn_of_reserve(shared: &Shared, warned: bool) -> bool {
    if warned {
        return true;
    }
    let Ok(space) = filesystem::space(&shared.settings.dir) else {
        return false;
    };
    let reserve = retention::reserve(shared.limits().reserve, space.total, RECORDINGS);
    if reserve > space.total / 2 {
        log::warn!(
            "recordings: the free space to keep ({reserve} bytes) is more than half of the disk ({} bytes): \
             little or nothing will be recorded; set RECORDINGS_RESERVE",
            space.total
        );
    }
    true
}

/// One pass: tombstones unlinked, deleted cameras' folders emptied, room made.
fn pass(shared: &Shared, cleaner: &mut Cleaner, urgent: bool) -> Result<(), Error> {
    if !cleaner.unlinked.is_empty() {
        shared.db.run(|s| s.forget_segments(&cleaner.unlinked))?;
        cleaner.unlinked.clear();
    }
    collect_garbage(shared)?;
    empty_deleted_cameras(shared)?;
    // Before retention, which deletes by these times.
    filing::place_untimed(shared);
    filing::place_ahead(shared, &mut cleaner.lowerings);
    enforce(shared, cleaner, urgent)
}

/// How many bytes of recordings must go: what the budget or the reserve
/// asks (either rule: the log names both), and at least `headroom` (room
/// for a few segments when ffmpeg ran out of space; 0 otherwise), of what
/// there is.
fn to_free(used: u64, budget: Option<u64>, space: Space, reserve: u64, headroom: u64) -> u64 {
    let asked = retention::to_free(used, budget, Some(space.free), reserve);
    asked.map_or(0, |(bytes, _)| bytes).max(headroom.min(used))
}

fn enforce(shared: &Shared, cleaner: &mut Cleaner, urgent: bool) -> Result<(), Error> {
    cleaner.kept.retain(|_, since| since.elapsed() < KEPT_FOR);
    expire(shared, cleaner)?;
    let mut deleted = Vec::new();
    let mut rule = None;
    let outcome = make_room(shared, cleaner, urgent, &mut deleted, &mut rule);
    if !deleted.is_empty() {
        // When the cameras cannot be read, no segment is called unknown.
        let unclaimed = shared.db.run(|s| s.cameras()).map_or(0, |cameras| {
            deleted
                .iter()
                .filter(|s| !cameras.iter().any(|c| c.id == s.camera_id))
                .count()
        });
        let of_unknown = if unclaimed > 0 {
            format!(", {unclaimed} of them of cameras this node does not know")
        } else {
            String::new()
        };
        let freed: u64 = deleted.iter().map(|s| s.bytes).sum();
        let rule = match rule {
            Some(Rule::Budget) => "RECORDINGS_MAX_BYTES",
            _ => "RECORDINGS_RESERVE",
        };
        log::info!(
            "recordings: deleted the {} oldest segments ({freed} bytes{of_unknown}) to keep within \
             the budget and the free-space reserve: {rule}",
            deleted.len()
        );
        deleted_by(shared, rule, None, deleted.len(), freed);
    }
    outcome
}

/// Says in status what `rule` deleted last.
fn deleted_by(shared: &Shared, rule: &'static str, camera_id: Option<Uuid>, n: usize, bytes: u64) {
    let mut storage = lock(&shared.storage).clone();
    storage.last_deletion = Some(Deletion {
        at_ms: clock::now_ms(),
        rule,
        camera_id,
        segments: n as u64,
        bytes,
    });
    shared.set_storage(storage);
}

/// Deletes, for each camera with `retainDays`, its segments that ended
/// more than that many days ago, oldest first, and logs how many under the
/// rule's name. Nothing while the clock is not believed, nor just after it
/// jumped ahead (every age would be wrong), nor from a folder that is not this node's or cannot be written.
/// Segments an event's clip still needs go too: the camera's age rule is
/// the user's, and a clip not made in days will not be.
fn expire(shared: &Shared, cleaner: &mut Cleaner) -> Result<(), Error> {
    let now = clock::now_ms();
    let set = clock::ages_believed();
    let cameras = shared.db.run(|s| s.cameras())?;
    for camera in cameras.iter() {
        let days = camera.settings.retain_days;
        let Some(before) = retention::age_limit(now, days, set) else {
            continue;
        };
        let (mut count, mut freed) = (0, 0);
        loop {
            let skipped = cleaner.skipped();
            let limit = BATCH + skipped.len();
            let chosen: Vec<Segment> = shared
                .db
                .run(|s| s.segments_ended_before(camera.id, before, limit))?
                .into_iter()
                .filter(|s| !skipped.contains(s.path.as_str()))
                .take(BATCH)
                .collect();
            if chosen.is_empty() {
                break;
            }
            deletable(shared)?;
            let (gone, refusal) = delete(shared, cleaner, &chosen)?;
            let now = Instant::now();
            for segment in chosen.iter().filter(|s| !gone.contains(s)) {
                cleaner.kept.insert(segment.path.clone(), now);
            }
            if let Some(why) = refusal {
                cleaner.why_kept = Some(why);
            }
            count += gone.len();
            freed += gone.iter().map(|s| s.bytes).sum::<u64>();
            if gone.is_empty() {
                break;
            }
        }
        if count > 0 {
            let days = days.unwrap_or_default();
            log::info!(
                "recordings: deleted the {count} segments ({freed} bytes) of camera {} ({}) \
                 that ended more than {days} days ago: retainDays",
                camera.id,
                camera.settings.name
            );
            deleted_by(shared, "retainDays", Some(camera.id), count, freed);
        }
    }
    Ok(())
}

/// Refuses when the folder is no longer this node's or cannot be written:
/// looked at before each batch, as the disk may have gone, or gone
/// read-only, since the last.
fn deletable(shared: &Shared) -> Result<(), Error> {
    if !shared.folder_is_ours() {
        return Err(refused("the recordings folder is not this node's disk now"));
    }
    if let Err(e) = filesystem::writable(&shared.settings.dir) {
        return Err(refused(&format!(
            "the recordings disk cannot be written to ({e}); its files and their index are kept"
        )));
    }
    Ok(())
}

/// Deletes the oldest segments while the rule asks for room, adding those
/// whose files are gone to `deleted`. It stops, keeping every row left,
/// when the folder is no longer this node's or cannot be written, or when
/// a batch frees nothing: a disk that refuses deletes must not empty the
/// index.
fn make_room(
    shared: &Shared,
    cleaner: &mut Cleaner,
    urgent: bool,
    deleted: &mut Vec<Segment>,
    rule: &mut Option<Rule>,
) -> Result<(), Error> {
    let settings = &shared.settings;
    let mut urgent = urgent;
    loop {
        let unindexed = shared.unindexed_bytes.load(Ordering::Relaxed);
        let used = shared.db.run(|s| s.segment_bytes())? + unindexed;
        let space = match filesystem::space(&settings.dir) {
            Ok(space) => space,
            Err(e) => {
                log::warn!(
                    "cannot read the free space of {}: {e}",
                    settings.dir.display()
                );
                return refresh(shared, Some(used), None);
            }
        };
        refresh(shared, Some(used), Some(space))?;
        let limits = shared.limits();
        let reserve = retention::reserve(limits.reserve, space.total, RECORDINGS);
        let headroom = if urgent { headroom(shared, used)? } else { 0 };
        let need = to_free(used, limits.max_bytes, space, reserve, headroom);
        if need == 0 {
            return Ok(());
        }
        // The rule of the first round names the pass (a full disk that
        // asks only headroom is the reserve's).
        if rule.is_none() {
            *rule = Some(
                retention::to_free(used, limits.max_bytes, Some(space.free), reserve)
                    .map_or(Rule::Reserve, |(_, rule)| rule),
            );
        }
        deletable(shared)?;
        let skipped = cleaner.skipped();
        let limit = BATCH + skipped.len();
        let candidates: Vec<Segment> = shared
            .db
            .run(|s| s.segments_to_delete(limit))?
            .into_iter()
            .filter(|s| !skipped.contains(s.path.as_str()))
            .collect();
        let chosen = retention::fewest_to_free(&candidates, need, |s| s.bytes);
        if chosen.is_empty() {
            if urgent {
                log::warn!("recordings: the disk is full and there is no recording left to delete");
            }
            return Ok(());
        }
        let (gone, refusal) = delete(shared, cleaner, chosen)?;
        let now = Instant::now();
        for segment in chosen.iter().filter(|s| !gone.contains(s)) {
            cleaner.kept.insert(segment.path.clone(), now);
        }
        if let Some(why) = refusal {
            cleaner.why_kept = Some(why.clone());
            if gone.is_empty() {
                return Err(refused(&format!(
                    "{why}; its files and their index are kept"
                )));
            }
        }
        deleted.extend(gone);
        urgent = false;
    }
}

/// Room for a few more segments of each recorder: three times the mean
/// segment for each.
fn headroom(shared: &Shared, used: u64) -> Result<u64, Error> {
    let recorders = lock(&shared.recording).len().max(1) as u64;
    let segments = shared.db.run(|s| s.segment_count())?;
    Ok(used
        .checked_div(segments)
        .map_or(0, |mean| 3 * mean * recorders))
}

/// Why old recordings are not deleted, when the disk refuses.
fn refused(why: &str) -> Error {
    Error::new(Kind::Unavailable, why)
}

/// Deletes `segments`: rows to tombstones, then the files, then the
/// tombstones; a file that cannot be unlinked gets its row back. When the
/// database's disk is full and it is the recordings' disk too, the files
/// go first (that frees it), their rows after, once it can; any other
/// failure to write the database deletes nothing. Returns the segments
/// whose files are gone, and why others are not.
fn delete(
    shared: &Shared,
    cleaner: &mut Cleaner,
    segments: &[Segment],
) -> Result<(Vec<Segment>, Option<String>), Error> {
    let paths: Vec<String> = segments.iter().map(|s| s.path.clone()).collect();
    match shared.db.run(|s| s.tombstone_segments(segments)) {
        Ok(_) => {
            let (gone_paths, refusal) = unlink(shared, &paths);
            let (gone, kept) = split(segments, &gone_paths);
            shared.db.run(|s| {
                s.forget_tombstones(Tombstones::Segments, &gone_paths)?;
                s.restore_segments(&kept)
            })?;
            Ok((gone, refusal))
        }
        Err(e) if e.kind == Kind::InsufficientStorage && shares_disk(shared) => {
            log::warn!("recordings: the disk is full, the database's too: deleting files first");
            let (gone, refusal) = unlink(shared, &paths);
            let (gone, _) = split(segments, &gone);
            cleaner.unlinked.extend_from_slice(&gone);
            if shared.db.run(|s| s.forget_segments(&gone)).is_ok() {
                cleaner.unlinked.retain(|s| !gone.contains(s));
            }
            Ok((gone, refusal))
        }
        Err(e) => Err(e),
    }
}

/// `segments` parted into those whose files are `gone` and the others.
fn split(segments: &[Segment], gone: &[String]) -> (Vec<Segment>, Vec<Segment>) {
    segments
        .iter()
        .cloned()
        .partition(|s| gone.contains(&s.path))
}

/// Whether the database is known to be on the recordings' file system.
fn shares_disk(shared: &Shared) -> bool {
    filesystem::same_file_system(&shared.settings.data_dir, &shared.settings.dir) == Some(true)
}

/// Unlinks the files of deleted segments and drops their tombstones, but
/// those of files that could not be unlinked.
pub(super) fn collect_garbage(shared: &Shared) -> Result<(), Error> {
    loop {
        let paths = shared
            .db
            .run(|s| s.tombstones(Tombstones::Segments, GARBAGE_BATCH))?;
        if paths.is_empty() {
            return Ok(());
        }
        let (gone, _) = unlink(shared, &paths);
        shared
            .db
            .run(|s| s.forget_tombstones(Tombstones::Segments, &gone))?;
        if paths.len() < GARBAGE_BATCH || gone.len() < paths.len() {
            return Ok(());
        }
    }
}

/// Unlinks segments' files durably (see [`filesystem::unlink_durably`])
/// and removes the folders it left empty; playback forgets them at once.
/// Returns the paths that are gone, and why the first of the others is not.
fn unlink(shared: &Shared, paths: &[String]) -> (Vec<String>, Option<String>) {
    let dir = &shared.settings.dir;
    let files: Vec<PathBuf> = paths.iter().map(|p| dir.join(p)).collect();
    shared
        .clips
        .forget_files(files.iter().map(PathBuf::as_path));
    shared
        .segments
        .forget_files(files.iter().map(PathBuf::as_path));
    filesystem::unlink_durably(dir, paths, files::remove_if_empty)
}

/// Empties the folders of deleted cameras whose recorders have stopped: the
/// files of the node's layout no row names (a segment being written when the
/// camera went), then the folder.
fn empty_deleted_cameras(shared: &Shared) -> Result<(), Error> {
    let deleted = shared.db.run(|s| s.deleted_cameras())?;
    for camera in deleted {
        if lock(&shared.recording).contains(&camera) {
            continue;
        }
        if remove_camera_folder(&shared.settings.dir, camera) {
            shared.db.run(|s| s.forget_deleted_camera(camera))?;
        }
    }
    Ok(())
}

/// Deletes every file of the node's layout in a camera's folder, and the
/// folder if that empties it; whether the folder is gone.
fn remove_camera_folder(dir: &Path, camera: Uuid) -> bool {
    let camera_dir = files::camera_dir(dir, camera);
    let mut removed = 0;
    for entry in std::fs::read_dir(&camera_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if files::is_note(&name) {
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        let ours: fn(&str) -> bool = if name == INCOMING {
            |n| files::incoming_start(n).is_some()
        } else if files::hour_of(&name).is_some() {
            |n| files::start_of(n).is_some()
        } else {
            continue;
        };
        let folder = entry.path();
        for file in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            if ours(&file.file_name().to_string_lossy())
                && std::fs::remove_file(file.path()).is_ok()
            {
                removed += 1;
            }
        }
        files::remove_if_empty(&folder);
    }
    files::remove_if_empty(&camera_dir);
    if removed > 0 {
        log::info!("deleted {removed} recorded segments of camera {camera}, which was deleted");
    }
    !camera_dir.exists()
}

/// Updates the figures status shows of storage (the message stays until
/// the pass is over); with `used` and `space` when they were just read.
fn refresh(shared: &Shared, used: Option<u64>, space: Option<Space>) -> Result<(), Error> {
    let (used, oldest_ms, unclaimed) = shared.db.run(|s| {
        let used = match used {
            Some(used) => used,
            None => s.segment_bytes()?,
        };
        Ok((
            used,
            s.oldest_segment_start()?,
            s.unclaimed_segment_bytes()?,
        ))
    })?;
    let (message, last_deletion) = {
        let storage = lock(&shared.storage);
        (storage.message.clone(), storage.last_deletion.clone())
    };
    shared.set_storage(Storage {
        used_bytes: used,
        unclaimed_bytes: unclaimed,
        budget_bytes: shared.limits().max_bytes,
        reserve_bytes: retention::reserve(
            shared.limits().reserve,
            space.map_or(0, |s| s.total),
            RECORDINGS,
        ),
        free_bytes: space.map(|s| s.free),
        total_bytes: space.map(|s| s.total),
        oldest_ms,
        message,
        last_deletion,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_five_minutes() {
        let secs: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, vec![10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(backoff(u32::MAX), LAST_BACKOFF);
    }

    #[test]
    fn what_must_go() {
        let table = [
            // used, budget, free, reserve, headroom -> bytes to free
            (100, None, 50, 10, 0, 0),
            (100, Some(80), 50, 10, 0, 20),
            (100, Some(80), 0, 30, 0, 30),
            (100, None, 0, 0, 24, 24),
            (10, None, 0, 0, 24, 10),
            (100, Some(80), 0, 0, 5, 20),
            (100, None, 0, 30, 24, 30),
        ];
        for (used, budget, free, reserve, headroom, want) in table {
            let space = Space { free, total: 1000 };
            assert_eq!(
                to_free(used, budget, space, reserve, headroom),
                want,
                "{used} {budget:?} {free} {reserve} {headroom}"
            );
        }
    }
}

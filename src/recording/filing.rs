//! Puts closed segment files in their place and in the index, in the order
//! that survives a power cut (rule 2 of the design,
//! docs/design/recording-and-motion.md): the file is fsynced,
//! renamed into its hour folder, the folder fsynced, and only then the row
//! written. Also files what a crash or a kill cut short, read with the
//! node's own fMP4 reader (no child process that could be missing or slow):
//! cut after its last whole fragment, deleted only when it holds none, left
//! alone on any other failure.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;

use uuid::Uuid;

use super::files;
use super::ring::Ring;
use super::{Shared, lock};
use crate::clock;
use crate::media::fmp4;
use crate::store::Segment;
use crate::sys::filesystem;

/// What became of a closed segment.
#[derive(Debug)]
pub enum Filed {
    Indexed,
    /// In its place, but its row could not be written (the database's disk
    /// is full): to be indexed later, or by recovery at the next start.
    Unindexed(Segment),
    /// Deleted: empty, unreadable, or its camera is gone.
    Dropped,
}

/// Who files a segment: its camera's recorder (the camera must still
/// exist), or reconciliation, for a file found without a row (kept whether
/// or not its camera is known: its database may have been lost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Recorder,
    Reconciliation,
}

/// Files the closed segment at `from` as `start_ms..end_ms` of `camera`;
/// `untimed`: the stretch (`clock::Reading::unset`) those times are of,
/// while the clock is not set.
pub fn file_segment(
    shared: &Shared,
    camera: Uuid,
    from: &Path,
    (start_ms, end_ms): (i64, i64),
    by: By,
    untimed: Option<usize>,
) -> io::Result<Filed> {
    let file = File::open(from)?;
    let bytes = file.metadata()?.len();
    if bytes == 0 || end_ms <= start_ms {
        drop(file);
        fs::remove_file(from)?;
        return Ok(Filed::Dropped);
    }
    file.sync_all()?;
    drop(file);
    let dir = &shared.settings.dir;
    // A taken name (the clock set back) moves the start on by a millisecond.
    let mut start_ms = start_ms;
    let mut path = files::segment_path(camera, start_ms);
    while dir.join(&path).exists() && dir.join(&path) != from {
        start_ms += 1;
        path = files::segment_path(camera, start_ms);
    }
    let to = dir.join(&path);
    let folder = to.parent().expect("a segment path has a folder");
    // Twice: the cleaner removes the hour folders it empties, maybe this
    // one just after it was made.
    let mut moved = Err(io::ErrorKind::NotFound.into());
    for _ in 0..2 {
        if !folder.is_dir() {
            fs::create_dir_all(folder)?;
            let camera_folder = folder
                .parent()
                .expect("an hour folder is in a camera folder");
            filesystem::sync_dir(camera_folder)?;
        }
        moved = fs::rename(from, &to);
        if !matches!(&moved, Err(e) if e.kind() == io::ErrorKind::NotFound) {
            break;
        }
    }
    moved?;
    filesystem::sync_dir(folder)?;
    index(
        shared,
        Segment {
            camera_id: camera,
            start_ms,
            end_ms: end_ms.max(start_ms),
            bytes,
            path,
        },
        by,
        untimed,
    )
}

/// Moves the segments indexed while the clock was not believed to their
/// true times, once it is: later by as much as the clock jumped past the
/// times run on (from the newest footage, or from before a jump ahead), or
/// earlier when a synchronised clock was behind them. In the order that
/// lands none on one still to move. One that cannot be moved keeps the
/// time it was given.
pub fn place_untimed(shared: &Shared) {
    let mut settled = Vec::new();
    lock(&shared.untimed).retain(|(segment, stretch)| match clock::shift(*stretch) {
        Some(shift_ms) => {
            settled.push((segment.clone(), shift_ms));
            false
        }
        None => true,
    });
    // Later: newest first; earlier: oldest first.
    let (later, earlier): (Vec<_>, Vec<_>) = settled
        .into_iter()
        .filter(|(_, shift)| *shift != 0)
        .partition(|(_, shift)| *shift > 0);
    let ordered = later.into_iter().rev().chain(earlier);
    let moved = ordered
        .filter(|(segment, shift_ms)| move_or_say(shared, segment, *shift_ms))
        .count();
    if moved > 0 {
        log::info!(
            "recordings: the clock is believed: {moved} segments recorded while it was not moved to their true times"
        );
    }
}

/// How far a segment moved back may overlap another.
const OVERLAP_MS: i64 = 1_000;

/// Moves back, once a synchronised clock is believed behind the newest
/// time the node knew of (`clock::lowered`), the segments it finds timed
/// after now, by as much as that time was ahead: those recorded while a
/// wrong clock ahead was believed (in this run, by exactly as much as it was
/// ahead; before a restart, so that the newest ends when the node started
/// again, the most the node can know). `handled`: how many of the
/// lowerings were dealt with. Not while the folder is being reconciled
/// (its files may still be on their way to their rows), and a lowering
/// one of whose segments could not be moved is tried again at the next
/// pass.
pub fn place_ahead(shared: &Shared, handled: &mut usize) {
    let lowered = clock::lowered();
    if lowered.len() == *handled
        || shared.reconciling.load(Ordering::Acquire)
        || shared.reconcile_wanted.load(Ordering::Acquire)
    {
        return;
    }
    for back_ms in lowered.iter().skip(*handled) {
        let (mut moved, mut kept, mut failed) = (0, 0, 0);
        while let Ok(ahead) = shared
            .db
            .run(|s| s.segments_starting_after(clock::now_ms(), 64))
        {
            let (mut batch, mut kept_now) = (0, 0);
            for segment in &ahead {
                // Not onto other footage (the wrong clock was believed for
                // longer than it was ahead): kept where it was timed. A
                // second's overlap is the placing's error, not footage.
                let free = shared
                    .db
                    .run(|s| {
                        s.segments_between(
                            segment.camera_id,
                            segment.start_ms - back_ms + OVERLAP_MS,
                            segment.end_ms - back_ms - OVERLAP_MS,
                        )
                    })
                    .is_ok_and(|there| there.is_empty());
                if !free {
                    kept_now += 1;
                    continue;
                }
                match move_by(shared, segment, -back_ms) {
                    Ok(true) => batch += 1,
                    Ok(false) => {}
                    Err(e) => {
                        failed += 1;
                        log::warn!(
                            "camera {}: cannot move {} back to its true time ({e}): tried again later",
                            segment.camera_id,
                            segment.path
                        );
                    }
                }
            }
            moved += batch;
            kept = kept_now;
            if batch == 0 {
                break;
            }
        }
        if moved > 0 {
            log::info!(
                "recordings: the clock was {} s ahead: {moved} segments timed after now moved back by as much",
                back_ms / 1000
            );
        }
        if failed > 0 {
            return;
        }
        if kept > 0 {
            log::warn!(
                "recordings: {kept} segments timed after now are kept where they are: moved back {} s, \
                 they would lie on other footage",
                back_ms / 1000
            );
        }
        *handled += 1;
    }
}

/// Moves a segment by `shift_ms` (see [`move_by`]); says why it could not.
fn move_or_say(shared: &Shared, segment: &Segment, shift_ms: i64) -> bool {
    match move_by(shared, segment, shift_ms) {
        Ok(moved) => moved,
        Err(e) => {
            log::warn!(
                "camera {}: cannot move {} to its true time ({e}): it keeps the time it was given",
                segment.camera_id,
                segment.path
            );
            false
        }
    }
}

/// Moves a segment by `shift_ms` (earlier when negative): its file (into its
/// new hour folder, made durable), then its row; false when it is gone
/// (deleted by retention, or with its camera: the cleaner empties its
/// folder). A crash between leaves a file without a row, which the next
/// start's reconciliation indexes by its name, the true time.
fn move_by(shared: &Shared, segment: &Segment, shift_ms: i64) -> io::Result<bool> {
    let dir = &shared.settings.dir;
    let from = dir.join(&segment.path);
    let mut start_ms = segment.start_ms.saturating_add(shift_ms);
    let mut path = files::segment_path(segment.camera_id, start_ms);
    while dir.join(&path).exists() {
        start_ms += 1;
        path = files::segment_path(segment.camera_id, start_ms);
    }
    let to = dir.join(&path);
    let folder = to.parent().expect("a segment path has a folder");
    if !folder.is_dir() {
        fs::create_dir_all(folder)?;
        filesystem::sync_dir(
            folder
                .parent()
                .expect("an hour folder is in a camera folder"),
        )?;
    }
    match fs::rename(&from, &to) {
        // Deleted by retention before the clock was believed.
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            files::remove_if_empty(folder);
            return Ok(false);
        }
        moved => moved?,
    }
    filesystem::sync_dir(folder)?;
    let old_folder = from.parent().expect("a segment path has a folder");
    filesystem::sync_dir(old_folder)?;
    files::remove_if_empty(old_folder);
    shared.clips.forget_files([from.as_path()]);
    shared.segments.forget_files([from.as_path()]);
    let moved = Segment {
        start_ms,
        end_ms: segment.end_ms.saturating_add(shift_ms),
        path,
        ..segment.clone()
    };
    shared
        .db
        .run(|s| s.move_segment(segment, &moved))
        .map_err(|e| io::Error::other(e.message))
}

/// Puts a closed segment of a camera that only keeps a ring into the ring
/// (RAM: no fsync, no row). Returns whether it was kept.
pub fn file_in_ring(
    shared: &Shared,
    camera: Uuid,
    from: &Path,
    start_ms: i64,
    end_ms: i64,
) -> bool {
    let bytes = fs::metadata(from).map(|m| m.len()).unwrap_or(0);
    if bytes == 0 || end_ms <= start_ms {
        let _ = fs::remove_file(from);
        return false;
    }
    let path = Ring::path(camera, start_ms);
    let to = shared.ring.dir().join(&path);
    let moved = to
        .parent()
        .map_or(Ok(()), fs::create_dir_all)
        .and_then(|()| fs::rename(from, &to));
    if let Err(e) = moved {
        log::warn!("camera {camera}: cannot keep a segment in the ring: {e}");
        let _ = fs::remove_file(from);
        return false;
    }
    shared.ring.add(Segment {
        camera_id: camera,
        start_ms,
        end_ms,
        bytes,
        path,
    });
    true
}

/// Writes the row of a segment that is in its place; one timed while the
/// clock was not set (`untimed`) is kept for [`place_untimed`].
pub fn index(
    shared: &Shared,
    mut segment: Segment,
    by: By,
    untimed: Option<usize>,
) -> io::Result<Filed> {
    let inserted = shared.db.run(|s| match by {
        By::Recorder => s.insert_segment(&segment),
        By::Reconciliation => s.insert_found_segment(&segment),
    });
    match inserted {
        Ok(Some(start_ms)) => {
            shared.set_index_problem(None);
            segment.start_ms = start_ms;
            log::debug!(
                "camera {}: segment {} ({} bytes, {} ms)",
                segment.camera_id,
                segment.path,
                segment.bytes,
                segment.end_ms - segment.start_ms
            );
            if let Some(stretch) = untimed {
                lock(&shared.untimed).push((segment, stretch));
            }
            shared.clean(super::Clean::Check);
            Ok(Filed::Indexed)
        }
        // Its deletion is under way: the cleaner unlinks it.
        Ok(None) if by == By::Reconciliation => Ok(Filed::Dropped),
        Ok(None) => {
            // The camera was deleted while this segment was being written.
            let file = shared.settings.dir.join(&segment.path);
            fs::remove_file(&file)?;
            files::remove_if_empty(file.parent().expect("a segment path has a folder"));
            Ok(Filed::Dropped)
        }
        Err(e) => {
            log::warn!("camera {}: cannot index a segment: {e}", segment.camera_id);
            shared.set_index_problem(Some(e.message));
            // Its bytes count against the budget all the same.
            shared.clean(super::Clean::Check);
            Ok(Filed::Unindexed(segment))
        }
    }
}

/// Files or deletes every file left in a camera's incoming folder.
pub fn recover_folder(shared: &Shared, camera: Uuid, incoming: &Path, by: By) {
    let Ok(entries) = fs::read_dir(incoming) else {
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| files::incoming_start(name).is_some())
        .collect();
    names.sort();
    for name in names {
        let path = incoming.join(&name);
        let started = files::incoming_start(&name).expect("filtered above");
        // The run's last filed segment ends where this one begins, to within
        // the second ffmpeg's name gives. While the clock is not believed,
        // ffmpeg names by it (the system's, behind or ahead): the name says
        // nothing.
        let unset = clock::read().unset;
        let follows = shared
            .db
            .run(|s| s.last_segment(camera))
            .ok()
            .flatten()
            .map(|last| last.end_ms)
            .filter(|end| unset.is_some() || (*end >= started - 500 && *end <= started + 1_500));
        // After a segment timed while the clock is not set, it is too.
        let untimed = unset.filter(|_| follows.is_some());
        recover_file(
            shared,
            camera,
            &path,
            follows.unwrap_or(started),
            by,
            untimed,
        );
    }
}

/// What a file that no csv line announced holds.
#[derive(Debug)]
enum Content {
    /// Whole fragments: their video's length, and where the last one ends.
    Whole { duration_ms: i64, complete_len: u64 },
    /// Not one whole fragment (ffmpeg was killed before it wrote one).
    Nothing,
    /// It could not be read (an I/O error, no video track): left alone.
    Unreadable(String),
}

/// The length of the video a closed segment holds, by its boxes.
pub fn content_ms(path: &Path) -> Option<i64> {
    match examine(path) {
        Content::Whole { duration_ms, .. } => Some(duration_ms),
        Content::Nothing | Content::Unreadable(_) => None,
    }
}

fn examine(path: &Path) -> Content {
    let read = File::open(path).and_then(|file| {
        let len = file.metadata()?.len();
        let mut reader = io::BufReader::new(file);
        let mut index = fmp4::scan(&mut reader, len)?;
        // Whole boxes after the last fragment (ffmpeg's `mfra` index) are
        // no cut: the file is kept whole.
        if fmp4::whole_boxes(&mut reader, index.complete_len, len)? {
            index.complete_len = len;
        }
        Ok(index)
    });
    let index = match read {
        Ok(index) => index,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => return Content::Nothing,
        Err(e) => return Content::Unreadable(e.to_string()),
    };
    let Some(video) = index.init.video() else {
        return Content::Unreadable("it has no video track".into());
    };
    if index.fragments.is_empty() {
        return Content::Nothing;
    }
    let ms = i128::from(index.video_duration()) * 1000 / i128::from(video.timescale.max(1));
    Content::Whole {
        // A whole fragment is footage, however short its timing says it is.
        duration_ms: i64::try_from(ms).unwrap_or(i64::MAX).max(1),
        complete_len: index.complete_len,
    }
}

/// Files a segment that no csv line announced (a kill or a crash cut it
/// short, or came between its close and its row), starting at `start_ms`:
/// cut after its last whole fragment and indexed; deleted only if it holds
/// no whole fragment; left alone (and tried again at the next start) if it
/// cannot be read or written. Returns whether it was indexed.
pub fn recover_file(
    shared: &Shared,
    camera: Uuid,
    path: &Path,
    start_ms: i64,
    by: By,
    untimed: Option<usize>,
) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let left = |why: &dyn std::fmt::Display| {
        log::warn!(
            "camera {camera}: left {name} as it is ({why}); it is tried again at the next start"
        );
        false
    };
    let (duration_ms, complete_len) = match examine(path) {
        Content::Whole {
            duration_ms,
            complete_len,
        } => (duration_ms, complete_len),
        Content::Nothing => {
            match fs::remove_file(path) {
                Ok(()) => log::info!(
                    "camera {camera}: deleted {name}: an unfinished segment without one whole fragment"
                ),
                Err(e) => log::warn!("camera {camera}: cannot delete {name}: {e}"),
            }
            return false;
        }
        Content::Unreadable(why) => return left(&why),
    };
    let cut = OpenOptions::new().write(true).open(path).and_then(|file| {
        let len = file.metadata()?.len();
        if complete_len < len {
            file.set_len(complete_len)?;
            file.sync_all()?;
            log::info!(
                "camera {camera}: cut {name} after its last whole fragment ({} of {len} bytes)",
                complete_len
            );
        }
        Ok(())
    });
    if let Err(e) = cut {
        return left(&e);
    }
    let times = (start_ms, start_ms + duration_ms);
    match file_segment(shared, camera, path, times, by, untimed) {
        Ok(Filed::Indexed | Filed::Unindexed(_)) => {
            log::info!("camera {camera}: recovered segment {name} ({duration_ms} ms)");
            true
        }
        Ok(Filed::Dropped) => false,
        Err(e) => left(&e),
    }
}

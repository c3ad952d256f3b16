//! Puts closed segment files in their place and in the index, in the order
//! that survives a power cut (the design's rule 2): the file is fsynced,
//! renamed into its hour folder, the folder fsynced, and only then the row
//! written. Also files what a crash or a kill cut short, when ffprobe can
//! read it, and deletes it otherwise.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

use uuid::Uuid;

use super::Shared;
use super::files;
use super::ring::Ring;
use crate::media::fmp4;
use crate::store::Segment;

/// What became of a closed segment.
#[derive(Debug)]
pub enum Filed {
    Indexed(Segment),
    /// In its place, but its row could not be written (the database's disk
    /// is full): to be indexed later, or by recovery at the next start.
    Unindexed(Segment),
    /// Deleted: empty, unreadable, or its camera is gone.
    Dropped,
}

/// Files the closed segment at `from` as `start_ms..end_ms` of `camera`.
pub fn file_segment(
    shared: &Shared,
    camera: Uuid,
    from: &Path,
    start_ms: i64,
    end_ms: i64,
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
            files::sync_dir(camera_folder)?;
        }
        moved = fs::rename(from, &to);
        if !matches!(&moved, Err(e) if e.kind() == io::ErrorKind::NotFound) {
            break;
        }
    }
    moved?;
    files::sync_dir(folder)?;
    index(
        shared,
        Segment {
            camera_id: camera,
            start_ms,
            end_ms: end_ms.max(start_ms),
            bytes,
            path,
        },
    )
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

/// Writes the row of a segment that is in its place.
pub fn index(shared: &Shared, mut segment: Segment) -> io::Result<Filed> {
    match shared.db.run(|s| s.insert_segment(&segment)) {
        Ok(Some(start_ms)) => {
            segment.start_ms = start_ms;
            log::debug!(
                "camera {}: segment {} ({} bytes, {} ms)",
                segment.camera_id,
                segment.path,
                segment.bytes,
                segment.end_ms - segment.start_ms
            );
            shared.clean(super::Clean::Check);
            Ok(Filed::Indexed(segment))
        }
        Ok(None) => {
            // The camera was deleted while this segment was being written.
            let file = shared.settings.dir.join(&segment.path);
            fs::remove_file(&file)?;
            files::remove_if_empty(file.parent().expect("a segment path has a folder"));
            Ok(Filed::Dropped)
        }
        Err(e) => {
            log::warn!("camera {}: cannot index a segment: {e}", segment.camera_id);
            Ok(Filed::Unindexed(segment))
        }
    }
}

/// Files or deletes every file left in a camera's incoming folder.
pub fn recover_folder(shared: &Shared, camera: Uuid, incoming: &Path) {
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
        // the second ffmpeg's name gives.
        let follows = shared
            .db
            .run(|s| s.last_segment(camera))
            .ok()
            .flatten()
            .map(|last| last.end_ms)
            .filter(|end| (started - 500..=started + 1_500).contains(end));
        recover_file(shared, camera, &path, follows.unwrap_or(started));
    }
}

/// Files a segment that no csv line announced (a kill or a crash cut it
/// short, or came between its close and its row), starting at `start_ms`:
/// kept if ffprobe reads it, cut to its last whole fragment; deleted if not.
pub fn recover_file(shared: &Shared, camera: Uuid, path: &Path, start_ms: i64) -> Option<Segment> {
    let outcome = readable_length(shared, path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match outcome {
        Some(duration_ms) if duration_ms > 0 => {
            match file_segment(shared, camera, path, start_ms, start_ms + duration_ms) {
                Ok(Filed::Indexed(segment)) | Ok(Filed::Unindexed(segment)) => {
                    log::info!("camera {camera}: recovered segment {name} ({duration_ms} ms)");
                    Some(segment)
                }
                Ok(Filed::Dropped) => None,
                Err(e) => {
                    log::warn!("camera {camera}: cannot recover segment {name}: {e}");
                    None
                }
            }
        }
        _ => {
            log::info!("camera {camera}: deleted unreadable segment {name}");
            if let Err(e) = fs::remove_file(path) {
                log::warn!("camera {camera}: cannot delete {name}: {e}");
            }
            None
        }
    }
}

/// The length in ms of the video a cut recording holds, after cutting the
/// file to its last whole fragment; None if neither this module's reader
/// nor ffprobe can read it.
fn readable_length(shared: &Shared, path: &Path) -> Option<i64> {
    let mut file = OpenOptions::new().read(true).write(true).open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let index = fmp4::scan(&mut file, len).ok()?;
    let video = index.init.video()?;
    if index.fragments.is_empty() {
        return None;
    }
    if index.complete_len < len {
        file.set_len(index.complete_len).ok()?;
    }
    drop(file);
    shared.prober.probe_file(path).ok()?;
    let duration = index.video_duration();
    Some((duration as i128 * 1000 / i128::from(video.timescale)) as i64)
}

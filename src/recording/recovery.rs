//! Start-up reconciliation of the recordings folder and the index, before
//! any recorder starts: deletions a crash interrupted are finished; rows
//! whose file is gone are dropped; files with no row (a segment cut short,
//! or filed but not yet indexed) are indexed if ffprobe reads them and
//! deleted otherwise; the recordings of cameras that no longer exist go.
//! Only names of the node's own layout are ever touched, so a
//! `RECORDINGS_DIR` that holds other files loses none of them.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::path::Path;
use std::time::Instant;

use uuid::Uuid;

use super::files::{self, INCOMING};
use super::{Shared, filing, retention};
use crate::store::Segment;

pub(super) fn recover(shared: &Shared) {
    let started = Instant::now();
    retention::collect_garbage(shared);
    let dir = &shared.settings.dir;
    let Ok(cameras) = shared.db.run(|s| s.cameras()) else {
        return;
    };
    let known: HashSet<Uuid> = cameras.iter().map(|c| c.id).collect();
    let with_rows: HashSet<Uuid> = shared
        .db
        .run(|s| s.cameras_with_segments())
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut folders: BTreeSet<Uuid> = BTreeSet::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Ok(id) = Uuid::try_parse(&name)
                && name.len() == 36
                && entry.path().is_dir()
            {
                folders.insert(id);
            }
        }
    }
    for camera in folders
        .iter()
        .chain(with_rows.difference(&folders.iter().copied().collect()))
    {
        if known.contains(camera) {
            reconcile_camera(shared, *camera);
        } else {
            remove_camera(dir, *camera);
        }
    }
    log::info!(
        "recordings: folder and index reconciled in {:?}",
        started.elapsed()
    );
}

/// One camera: hour by hour, rows against files; then the incoming folder.
fn reconcile_camera(shared: &Shared, camera: Uuid) {
    let dir = &shared.settings.dir;
    let camera_dir = files::camera_dir(dir, camera);
    let mut hours: BTreeMap<i64, bool> = shared
        .db
        .run(|s| s.segment_hours(camera))
        .unwrap_or_default()
        .into_iter()
        .map(|hour| (hour, false))
        .collect();
    if let Ok(entries) = fs::read_dir(&camera_dir) {
        for entry in entries.flatten() {
            if let Some(hour) = files::hour_of(&entry.file_name().to_string_lossy()) {
                hours.insert(hour, true);
            }
        }
    }
    for (hour, has_folder) in hours {
        let folder = camera_dir.join(files::hour_folder(hour));
        let mut on_disk: BTreeMap<i64, String> = BTreeMap::new();
        if has_folder && let Ok(entries) = fs::read_dir(&folder) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(start) = files::start_of(&name) {
                    on_disk.insert(start, name);
                }
            }
        }
        let rows: Vec<Segment> = shared
            .db
            .run(|s| s.segments_between(camera, hour, hour + files::HOUR))
            .unwrap_or_default()
            .into_iter()
            .filter(|s| files::hour_start(s.start_ms) == hour)
            .collect();
        let indexed: HashSet<&str> = rows.iter().map(|s| s.path.as_str()).collect();
        let gone: Vec<Segment> = rows
            .iter()
            .filter(|s| !dir.join(&s.path).is_file())
            .cloned()
            .collect();
        if !gone.is_empty() {
            log::info!(
                "camera {camera}: {} segments whose files are gone are dropped from the index",
                gone.len()
            );
            let _ = shared.db.run(|s| s.forget_segments(&gone));
        }
        for (start, name) in on_disk {
            let path = files::segment_path(camera, start);
            if !indexed.contains(path.as_str()) {
                filing::recover_file(shared, camera, &folder.join(&name), start);
            }
        }
        files::remove_if_empty(&folder);
    }
    filing::recover_folder(shared, camera, &camera_dir.join(INCOMING));
}

/// Deletes the recordings of a camera that no longer exists: its rows (if
/// a crash left any) and every file of the node's layout in its folder.
fn remove_camera(dir: &Path, camera: Uuid) {
    let camera_dir = files::camera_dir(dir, camera);
    let mut removed = 0;
    if let Ok(entries) = fs::read_dir(&camera_dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours: fn(&str) -> bool = if name == INCOMING {
                |n| files::incoming_start(n).is_some()
            } else if files::hour_of(&name).is_some() {
                |n| files::start_of(n).is_some()
            } else {
                continue;
            };
            let folder = entry.path();
            for file in fs::read_dir(&folder).into_iter().flatten().flatten() {
                if ours(&file.file_name().to_string_lossy()) && fs::remove_file(file.path()).is_ok()
                {
                    removed += 1;
                }
            }
            files::remove_if_empty(&folder);
        }
    }
    files::remove_if_empty(&camera_dir);
    if removed > 0 {
        log::info!(
            "deleted {removed} recorded segments of camera {camera}, which no longer exists"
        );
    }
}

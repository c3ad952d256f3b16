//! Reconciliation of the recordings folder and the index, on a thread of
//! its own beside the recorders (which start at once, each filing what its
//! camera's last run left in its incoming folder), once the folder is known
//! to be this node's (`disk.rs`). For what was there before the node
//! started: rows whose file is gone are dropped; files with no row (a
//! segment cut short, or filed but not indexed) are indexed, cut after
//! their last whole fragment, or deleted when they hold none (`filing.rs`).
//! The folders of cameras the database does not know are kept: their files
//! are indexed under their folder's id, counted in the status, and deleted
//! oldest first by retention like any other; a camera added again with the
//! same address takes them over. Only a deleted camera's folder is emptied,
//! by the cleaner. Its I/O is paced: it works at most half the time.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant, UNIX_EPOCH};

use uuid::Uuid;

use super::files::{self, INCOMING};
use super::filing::{self, By};
use super::{Clean, Shared, lock};
use crate::store::Segment;

/// Work done before the pacer makes an equal pause.
const WORK_SLICE: Duration = Duration::from_millis(20);

/// What a reconciliation did.
#[derive(Debug, Default)]
struct Report {
    rows_dropped: usize,
    files_indexed: usize,
    folders_left: usize,
    unknown_cameras: usize,
}

/// Starts a reconciliation on its own thread; `shared.reconciling` is
/// cleared when it ends.
pub(super) fn spawn(shared: Arc<Shared>) {
    let spawned = crate::spawn::spawn(
        thread::Builder::new()
            .name("reconciliation".into())
            // Walks the folders (no recursion) and writes SQLite in batches.
            .stack_size(256 * 1024),
        {
            let shared = shared.clone();
            move || {
                reconcile(&shared);
                shared.reconciling.store(false, Ordering::Release);
            }
        },
    );
    if let Err(e) = spawned {
        log::error!("recordings: cannot start the reconciliation: {e}");
        shared.reconciling.store(false, Ordering::Release);
        shared.reconcile_wanted.store(true, Ordering::Release);
    }
}

/// Keeps the reconciliation to half the time: after each slice of work, a
/// pause as long.
struct Pacer {
    since: Instant,
}

impl Pacer {
    fn pace(&mut self) {
        let worked = self.since.elapsed();
        if worked >= WORK_SLICE {
            thread::sleep(worked);
            self.since = Instant::now();
        }
    }
}

fn reconcile(shared: &Shared) {
    let started = Instant::now();
    let dir = &shared.settings.dir;
    let (Ok(cameras), Ok(with_rows), Ok(deleted)) = (
        shared.db.run(|s| s.cameras()),
        shared.db.run(|s| s.cameras_with_segments()),
        shared.db.run(|s| s.deleted_cameras()),
    ) else {
        log::warn!(
            "recordings: the index cannot be read: folder and index are reconciled at the next start"
        );
        return;
    };
    let known: HashSet<Uuid> = cameras.iter().map(|c| c.id).collect();
    let mut all: BTreeSet<Uuid> = files::camera_folders(dir).into_iter().collect();
    all.extend(with_rows);
    let mut report = Report::default();
    let mut pacer = Pacer {
        since: Instant::now(),
    };
    for camera in all {
        // A deleted camera's folder is the cleaner's to empty.
        if deleted.contains(&camera) {
            continue;
        }
        if !shared.disk_ready() {
            log::warn!("recordings: reconciliation stopped: the recordings folder went away");
            return;
        }
        if !known.contains(&camera) {
            report.unknown_cameras += 1;
        }
        reconcile_camera(shared, camera, &mut report, &mut pacer);
    }
    let unclaimed = shared.db.run(|s| s.unclaimed_segment_bytes()).unwrap_or(0);
    log::info!(
        "recordings: folder and index reconciled in {:?}: {} rows of missing files dropped, {} files indexed, \
         {} folders left as they were; {} cameras this node does not know keep {unclaimed} bytes of recordings",
        started.elapsed(),
        report.rows_dropped,
        report.files_indexed,
        report.folders_left,
        report.unknown_cameras,
    );
    shared.clean(Clean::Check);
}

/// One camera: hour by hour, rows against files; then its incoming folder,
/// unless its recorder runs (the recorder files that itself).
fn reconcile_camera(shared: &Shared, camera: Uuid, report: &mut Report, pacer: &mut Pacer) {
    let dir = &shared.settings.dir;
    let camera_dir = files::camera_dir(dir, camera);
    let mut hours: BTreeSet<i64> = shared
        .db
        .run(|s| s.segment_hours(camera))
        .unwrap_or_default()
        .into_iter()
        .collect();
    if let Ok(entries) = fs::read_dir(&camera_dir) {
        hours.extend(
            entries
                .flatten()
                .filter_map(|e| files::hour_of(&e.file_name().to_string_lossy())),
        );
    }
    for hour in hours {
        if !shared.disk_ready() {
            return;
        }
        reconcile_hour(shared, camera, hour, report);
        pacer.pace();
    }
    if !lock(&shared.recording).contains(&camera) {
        filing::recover_folder(
            shared,
            camera,
            &camera_dir.join(INCOMING),
            By::Reconciliation,
        );
    }
}

/// One hour folder of one camera, for what is from before the node started:
/// the rows first, then the folder (a recorder renames a file into place
/// before it writes its row, so a row read first has its file listed).
fn reconcile_hour(shared: &Shared, camera: Uuid, hour: i64, report: &mut Report) {
    let dir = &shared.settings.dir;
    let folder = files::camera_dir(dir, camera).join(files::hour_folder(hour));
    let Ok(rows) = shared
        .db
        .run(|s| s.segments_between(camera, hour, hour + files::HOUR))
    else {
        return;
    };
    let rows: Vec<Segment> = rows
        .into_iter()
        .filter(|s| files::hour_start(s.start_ms) == hour && s.start_ms < shared.started_ms)
        .collect();
    // Each file of the node's layout: its start, and whether it was last
    // written before the node started (later ones are this run's recorders').
    let mut on_disk: BTreeMap<String, (i64, bool)> = BTreeMap::new();
    match fs::read_dir(&folder) {
        Ok(entries) => {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(start) = files::start_of(&name) {
                    let before = entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .is_some_and(|t| (t.as_millis() as i64) < shared.started_ms);
                    on_disk.insert(name, (start, before));
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            log::warn!(
                "recordings: {} cannot be read ({e}): left as it is until the next start",
                folder.display()
            );
            report.folders_left += 1;
            return;
        }
    }
    let name_of = |path: &str| path.rsplit('/').next().unwrap_or("").to_owned();
    let gone: Vec<Segment> = rows
        .iter()
        .filter(|s| !on_disk.contains_key(&name_of(&s.path)))
        .cloned()
        .collect();
    if !gone.is_empty() {
        log::info!(
            "camera {camera}: {} segments whose files are gone are dropped from the index",
            gone.len()
        );
        if shared.db.run(|s| s.forget_segments(&gone)).is_ok() {
            report.rows_dropped += gone.len();
        }
    }
    let indexed: HashSet<String> = rows.iter().map(|s| name_of(&s.path)).collect();
    for (name, (start, before)) in on_disk {
        if before && !indexed.contains(&name) {
            let by = By::Reconciliation;
            if filing::recover_file(shared, camera, &folder.join(&name), start, by, None) {
                report.files_indexed += 1;
            }
        }
    }
    files::remove_if_empty(&folder);
}

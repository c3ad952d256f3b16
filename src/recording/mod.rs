//! Recording: one ffmpeg per camera that is enabled and has `record` on,
//! writing 10 s segments of fragmented MP4 without re-encoding into a
//! recordings folder whose identity is checked (`disk.rs`); the index of
//! those segments; retention within a byte budget and a free-space reserve;
//! the reconciliation of folder and index beside the recorders; and
//! playback of any stretch as one MP4.
//!
//! This file is the handle the rest of the node holds, [`Recordings`], and
//! the state its threads share. Its threads: a supervisor (the disk's
//! identity every 10 s, one recorder thread per camera, the reconciliation
//! when the disk is found), and a cleaner (retention and the unlinking of
//! deleted segments).

mod cache;
pub mod codecs;
mod disk;
mod files;
mod filing;
mod playback;
mod recorder;
mod recovery;
mod retention;
mod ring;
mod settings;
mod spans;
mod state;
mod storage;
mod supervisor;

use crate::channel;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::cameras::camera::Camera;
use crate::changes::StateChanges;
use crate::clock::{self, now_ms};
use crate::db::Db;
use crate::error::{Error, Kind};
use crate::lock::lock;
use crate::media::gate::Gate;
use crate::store::Segment;
use crate::workers::{self, Order};

pub use playback::Clip;
pub use settings::{Limits, Settings};
pub use spans::Span;
pub use state::{RecorderState, State};
pub use storage::{Deletion, Storage};

/// The longest stretch one playback request may cover.
pub const MAX_CLIP: Duration = Duration::from_secs(3600);
/// The longest window whose spans one request may list.
pub const MAX_LISTING: Duration = Duration::from_secs(31 * 24 * 3600);

/// What the cleaner is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Clean {
    /// A segment was added or a camera deleted: check the budget, collect garbage.
    Check,
    /// ffmpeg ran out of space: make room now.
    Urgent,
}

/// Whether the node may use the recordings folder.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Disk {
    /// Not looked at yet: nothing is written, deleted or reconciled.
    Unchecked,
    /// With the id its marker holds.
    Ready(String),
    /// Why not, in plain words, and since when (ms since the epoch).
    Refused(String, i64),
}

/// State shared by the recording threads and the handle.
struct Shared {
    settings: Settings,
    limits: Mutex<Limits>,
    db: Arc<Db>,
    live: Arc<StateChanges>,
    /// Bounds how many ffmpeg start at once.
    gate: Arc<Gate>,
    states: Mutex<state::States>,
    /// The figures, as the cleaner last read them.
    storage: Mutex<Storage>,
    /// Segments filed whose rows could not be written yet (the database
    /// cannot be written): their bytes count against the budget all the
    /// same, and why they could not is said in the status.
    unindexed_bytes: AtomicU64,
    index_problem: Mutex<Option<String>>,
    disk: Mutex<Disk>,
    cleaner: channel::Sender<Clean>,
    /// When the node started: cameras that never recorded are off since then,
    /// and the files and rows from before it are what reconciliation checks.
    started_ms: i64,
    /// The cameras whose recorder writes into the recordings folder.
    recording: Mutex<HashSet<Uuid>>,
    /// Whether a reconciliation is wanted (the disk was found) or under way.
    reconcile_wanted: AtomicBool,
    reconciling: AtomicBool,
    ring: ring::Ring,
    /// The segments being written: camera -> (in the ring, its start). Known
    /// once a run has closed its first segment.
    writing: Mutex<HashMap<Uuid, (bool, i64)>>,
    /// Segments indexed while the clock was not set, with the number of
    /// that stretch (`clock::Reading::unset`): the cleaner moves them to
    /// their true times once it is.
    untimed: Mutex<Vec<(Segment, usize)>>,
    clips: cache::Clips,
    segments: cache::Segments,
}

impl Shared {
    fn set_state(&self, camera: Uuid, state: State, message: Option<String>) {
        let mut states = lock(&self.states);
        let current = states.get(&camera);
        if current.is_some_and(|c| c.state == state && c.message == message) {
            return;
        }
        match &message {
            Some(message) => log::info!("recorder of camera {camera}: {}: {message}", state.name()),
            None => log::info!("recorder of camera {camera}: {}", state.name()),
        }
        states.insert(
            camera,
            RecorderState {
                state,
                since_ms: now_ms(),
                message,
            },
        );
        drop(states);
        self.live.bump();
    }

    fn set_writing(&self, camera: Uuid, in_ring: bool, start_ms: i64) {
        lock(&self.writing).insert(camera, (in_ring, start_ms));
    }

    fn forget_writing(&self, camera: Uuid) {
        lock(&self.writing).remove(&camera);
    }

    /// The segment being written for `camera`, as a segment of unknown end.
    fn segment_being_written(&self, camera: Uuid) -> Option<Segment> {
        let (in_ring, start_ms) = *lock(&self.writing).get(&camera)?;
        let base = if in_ring {
            self.ring.dir()
        } else {
            &self.settings.dir
        };
        let newest = files::newest_incoming(base, camera)?;
        Some(Segment {
            camera_id: camera,
            start_ms,
            end_ms: i64::MAX,
            bytes: 0,
            path: format!("{camera}/{}/{newest}", files::INCOMING),
        })
    }

    /// Forgets the states of cameras for which `keep` is false.
    fn retain_states(&self, keep: impl Fn(&Uuid) -> bool) {
        self.live.retain(&self.states, keep);
    }

    fn limits(&self) -> Limits {
        *lock(&self.limits)
    }

    fn clean(&self, what: Clean) {
        // The cleaner only stops with the process.
        let _ = self.cleaner.send(what);
    }

    fn set_storage(&self, storage: Storage) {
        let mut current = lock(&self.storage);
        if *current != storage {
            *current = storage;
            drop(current);
            self.live.bump();
        }
    }

    /// A segment's row could not be written (`why`), or could (None).
    fn set_index_problem(&self, why: Option<String>) {
        let mut current = lock(&self.index_problem);
        if *current != why {
            *current = why;
            drop(current);
            self.live.bump();
        }
    }

    fn disk_ready(&self) -> bool {
        matches!(*lock(&self.disk), Disk::Ready(_))
    }

    /// Whether the recordings folder still holds this node's marker, read
    /// again now: a recorder looks before it makes a folder there, so that
    /// nothing lands on a disk swapped since the last check.
    fn folder_is_ours(&self) -> bool {
        let Disk::Ready(id) = lock(&self.disk).clone() else {
            return false;
        };
        disk::read_marker(&self.settings.dir) == disk::Marker::Present(id)
    }

    fn set_disk(&self, disk: Disk) {
        let mut current = lock(&self.disk);
        let changed = match (&*current, &disk) {
            (Disk::Refused(a, _), Disk::Refused(b, _)) => a != b,
            (a, b) => a != b,
        };
        if !changed {
            return;
        }
        match &disk {
            Disk::Refused(why, _) => log::warn!("recordings: {why}"),
            Disk::Ready(_) => {
                log::info!("recordings: the folder is this node's: recording into it")
            }
            Disk::Unchecked => {}
        }
        *current = disk;
        drop(current);
        self.live.bump();
    }
}

/// The handle the node holds.
pub struct Recordings {
    shared: Arc<Shared>,
    supervisor: channel::Sender<Order>,
    /// The threads' ends, until [`Recordings::start`] spawns them.
    pending: Mutex<Option<(channel::Receiver<Order>, channel::Receiver<Clean>)>>,
    running: Mutex<Option<thread::JoinHandle<()>>>,
}

impl Recordings {
    pub fn new(
        settings: Settings,
        limits: Limits,
        db: Arc<Db>,
        live: Arc<StateChanges>,
        gate: Arc<Gate>,
    ) -> Recordings {
        let (supervisor, orders) = channel::channel();
        let (cleaner, cleanings) = channel::channel();
        let storage = Storage {
            budget_bytes: limits.max_bytes,
            ..Storage::default()
        };
        let ring = ring::Ring::new(&settings.dir);
        // The newest footage is the strongest floor under the clock: a
        // board without a real-time clock boots with an older time, and one
        // with a wrong one may boot with a later time (`clock::start`).
        match db.run(|s| s.newest_segment_end()) {
            Ok(newest) => clock::start(newest),
            Err(e) => log::warn!("recordings: the newest segment cannot be read: {e}"),
        }
        Recordings {
            shared: Arc::new(Shared {
                settings,
                limits: Mutex::new(limits),
                db,
                live,
                gate,
                states: Mutex::new(HashMap::new()),
                storage: Mutex::new(storage),
                unindexed_bytes: AtomicU64::new(0),
                index_problem: Mutex::new(None),
                disk: Mutex::new(Disk::Unchecked),
                cleaner,
                started_ms: now_ms(),
                recording: Mutex::new(HashSet::new()),
                reconcile_wanted: AtomicBool::new(false),
                reconciling: AtomicBool::new(false),
                ring,
                writing: Mutex::new(HashMap::new()),
                untimed: Mutex::new(Vec::new()),
                clips: cache::Clips::default(),
                segments: cache::Segments::default(),
            }),
            supervisor,
            pending: Mutex::new(Some((orders, cleanings))),
            running: Mutex::new(None),
        }
    }

    /// Starts the threads: the recorders' supervisor and the cleaner.
    pub fn start(&self) {
        let Some((orders, cleanings)) = lock(&self.pending).take() else {
            return;
        };
        let shared = self.shared.clone();
        crate::spawn::spawn(
            thread::Builder::new()
                .name("cleaner".into())
                // SQLite and file deletions; measured 16 KiB touched.
                .stack_size(256 * 1024),
            move || retention::run(&shared, cleanings),
        )
        .expect("spawn the cleaner");
        let shared = self.shared.clone();
        let supervisor = crate::spawn::spawn(
            thread::Builder::new()
                .name("recorders".into())
                // Reads the cameras (SQLite) and starts threads; measured 16 KiB.
                .stack_size(256 * 1024),
            move || supervisor::run(&shared, orders),
        )
        .expect("spawn the recorders' supervisor");
        *lock(&self.running) = Some(supervisor);
    }

    /// Cameras changed: recorders start or stop within 2 s; a deleted
    /// camera's recordings go.
    pub fn cameras_changed(&self) {
        let _ = self.supervisor.send(Order::CamerasChanged);
        self.shared.clean(Clean::Check);
    }

    /// Stops every recorder, each finishing and indexing its last segment,
    /// and waits for them until `deadline`.
    pub fn stop(&self, deadline: Instant) {
        if workers::stop_supervisor(&self.supervisor, &self.running, deadline) {
            // The ring is of no use to the next run.
            self.shared.ring.clear();
        } else {
            log::warn!("recorders did not stop in time: their ffmpeg are killed with the node");
        }
    }

    /// What the recorder of `camera` is doing (see [`state::shown`]).
    pub fn state(&self, camera: &Camera) -> RecorderState {
        let wanted = camera.settings.enabled && camera.settings.record;
        let disk = lock(&self.shared.disk).clone();
        let problem = match &disk {
            Disk::Refused(why, since_ms) => Some((why.as_str(), *since_ms)),
            _ => None,
        };
        let states = lock(&self.shared.states);
        state::shown(
            states.get(&camera.id),
            wanted,
            problem,
            now_ms(),
            self.shared.started_ms,
        )
    }

    /// New limits, taken in now: recordings past them go at once.
    pub fn set_limits(&self, limits: Limits) {
        *lock(&self.shared.limits) = limits;
        self.shared.clean(Clean::Check);
    }

    /// The storage figures, and what keeps recordings from being made or
    /// cleaned up, if anything: the disk first, then the database.
    pub fn storage(&self) -> Storage {
        let mut storage = lock(&self.shared.storage).clone();
        if let Disk::Refused(why, _) = &*lock(&self.shared.disk) {
            storage.message = Some(why.clone());
        } else if storage.message.is_none()
            && let Some(why) = &*lock(&self.shared.index_problem)
        {
            storage.message = Some(format!(
                "new recordings are kept but not indexed (they cannot be played yet): {why}"
            ));
        }
        storage
    }

    /// The cameras whose folders hold recordings of `url` (none while the
    /// disk is not ready). A camera added with that address again after a
    /// lost database takes over the first that is no camera's in the
    /// database (`Store::first_unknown_camera`).
    pub fn folders_recording(&self, url: &str) -> Vec<Uuid> {
        if !self.shared.disk_ready() {
            return Vec::new();
        }
        files::folders_recording(&self.shared.settings.dir, url)
    }

    /// The recorded spans of `camera` within `[from_ms, to_ms)`.
    pub fn spans(&self, camera: Uuid, from_ms: i64, to_ms: i64) -> Result<Vec<Span>, Error> {
        let segments = self
            .shared
            .db
            .run(|s| s.segments_between(camera, from_ms, to_ms))?;
        Ok(spans::spans(
            segments.iter().map(|s| (s.start_ms, s.end_ms)),
            from_ms,
            to_ms,
        ))
    }

    /// The recording of `camera` over `[from_ms, to_ms)` for an event's
    /// clip: from its segments, or its ring, and the segment being written
    /// (so the clip need not wait for it to close).
    pub fn event_clip(
        &self,
        camera: Uuid,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Option<Clip>, Error> {
        let shared = &self.shared;
        let (dir, mut segments) = if shared.ring.holds(camera) {
            (
                shared.ring.dir(),
                shared.ring.between(camera, from_ms, to_ms),
            )
        } else {
            let segments = shared
                .db
                .run(|s| s.segments_between(camera, from_ms, to_ms))?;
            (shared.settings.dir.as_path(), segments)
        };
        if let Some(writing) = shared.segment_being_written(camera)
            && writing.start_ms < to_ms
            && segments
                .last()
                .is_none_or(|last| last.start_ms < writing.start_ms)
        {
            segments.push(writing);
        }
        Ok(Clip::build(dir, &segments, from_ms, to_ms))
    }

    /// Keeps the ring's segments of `camera` from `from_ms` on until
    /// [`Recordings::unpin`] (an event is on; its clip needs them).
    pub fn pin(&self, camera: Uuid, from_ms: i64) -> u64 {
        self.shared.ring.pin(camera, from_ms)
    }

    pub fn unpin(&self, pin: u64) {
        self.shared.ring.unpin(pin);
    }

    /// The recording of `camera` over `[from_ms, to_ms)` as one MP4, cut at
    /// key frames. The same request gets the same layout for a while, so
    /// that a player's range requests agree, as long as its files are all
    /// there: a clip whose file retention deleted is built again, so that
    /// no answer starts that cannot end.
    pub fn clip(&self, camera: Uuid, from_ms: i64, to_ms: i64) -> Result<Arc<Clip>, Error> {
        let key = (camera, from_ms, to_ms);
        if let Some(clip) = self.shared.clips.get(key)
            && clip.files_present()
        {
            return Ok(clip);
        }
        let segments = self
            .shared
            .db
            .run(|s| s.segments_between(camera, from_ms, to_ms))?;
        // Reading the files' boxes happens without the lock, once a file.
        let dir = &self.shared.settings.dir;
        let index = |path: &std::path::Path| self.shared.segments.index(path);
        let clip = Clip::build_with(dir, &segments, from_ms, to_ms, index)
            .ok_or_else(|| Error::new(Kind::NotFound, "nothing was recorded in this stretch"))?;
        let clip = Arc::new(clip);
        self.shared.clips.put(key, clip.clone());
        Ok(clip)
    }
}

//! Recording: one ffmpeg per camera that is enabled and has `record` on,
//! writing 10 s segments of fragmented MP4 without re-encoding; the index
//! of those segments; retention within a byte budget and a free-space
//! reserve; recovery at start; and playback of any stretch as one MP4.
//!
//! [`Recordings`] is the handle the rest of the node holds. Its threads: a
//! supervisor (recovery first, then one recorder thread per camera), and a
//! cleaner (retention and the unlinking of deleted segments).

mod files;
mod filing;
mod playback;
mod recorder;
mod recovery;
mod retention;
mod ring;
mod spans;
mod supervisor;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::camera::Camera;
use crate::clock::now_ms;
use crate::config::Config;
use crate::db::{Db, lock};
use crate::error::{Error, Kind};
use crate::live::LiveChanges;
use crate::prober::Prober;
use crate::store::Segment;
use crate::workers::{self, Order};

pub use playback::Clip;
pub use spans::Span;

/// What recording needs from the configuration.
#[derive(Clone, Debug)]
pub struct Settings {
    pub dir: PathBuf,
    pub ffmpeg: PathBuf,
    pub max_bytes: Option<u64>,
    pub keep_free: Option<u64>,
}

impl Settings {
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            dir: config.recordings_dir.clone(),
            ffmpeg: config.ffmpeg.clone(),
            max_bytes: config.recordings_max_bytes,
            keep_free: config.recordings_keep_free,
        }
    }
}

/// What a camera's recorder is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Off,
    Starting,
    Recording,
    Retrying,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Off => "off",
            State::Starting => "starting",
            State::Recording => "recording",
            State::Retrying => "retrying",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecorderState {
    pub state: State,
    /// When it entered this state, ms since the epoch.
    pub since_ms: i64,
    /// Why it is retrying, in plain words (never a URL).
    pub message: Option<String>,
}

/// Recordings' use of storage, as status shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Storage {
    pub used_bytes: u64,
    pub budget_bytes: Option<u64>,
    /// The free space kept on the file system.
    pub reserve_bytes: u64,
    /// None until the file system could be read.
    pub free_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
    pub oldest_ms: Option<i64>,
}

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

/// State shared by the recording threads and the handle.
struct Shared {
    settings: Settings,
    db: Arc<Db>,
    live: Arc<LiveChanges>,
    prober: Prober,
    states: Mutex<HashMap<Uuid, RecorderState>>,
    storage: Mutex<Storage>,
    cleaner: mpsc::Sender<Clean>,
    /// When the node started: cameras that never recorded are off since then.
    started_ms: i64,
    /// How many recorders run, for the cleaner's headroom.
    recorders: std::sync::atomic::AtomicUsize,
    ring: ring::Ring,
    /// The segments being written: camera -> (in the ring, its start). Known
    /// once a run has closed its first segment.
    writing: Mutex<HashMap<Uuid, (bool, i64)>>,
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
        let incoming = files::incoming_dir(base, camera);
        let newest = std::fs::read_dir(&incoming)
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| files::incoming_start(name).is_some())
            .max()?;
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
}

/// The handle the node holds.
pub struct Recordings {
    shared: Arc<Shared>,
    supervisor: mpsc::Sender<Order>,
    /// The threads' ends, until [`Recordings::start`] spawns them.
    pending: Mutex<Option<(mpsc::Receiver<Order>, mpsc::Receiver<Clean>)>>,
    running: Mutex<Option<thread::JoinHandle<()>>>,
    clips: playback::Cache,
}

impl Recordings {
    pub fn new(
        settings: Settings,
        db: Arc<Db>,
        live: Arc<LiveChanges>,
        prober: Prober,
    ) -> Recordings {
        let (supervisor, orders) = mpsc::channel();
        let (cleaner, cleanings) = mpsc::channel();
        let storage = Storage {
            budget_bytes: settings.max_bytes,
            ..Storage::default()
        };
        let settings_dir = settings.dir.clone();
        Recordings {
            shared: Arc::new(Shared {
                settings,
                db,
                live,
                prober,
                states: Mutex::new(HashMap::new()),
                storage: Mutex::new(storage),
                cleaner,
                started_ms: now_ms(),
                recorders: Default::default(),
                ring: ring::Ring::new(&settings_dir),
                writing: Mutex::new(HashMap::new()),
            }),
            supervisor,
            pending: Mutex::new(Some((orders, cleanings))),
            running: Mutex::new(None),
            clips: playback::Cache::default(),
        }
    }

    /// Starts the threads: recovery, then the recorders; and the cleaner.
    pub fn start(&self) {
        let Some((orders, cleanings)) = lock(&self.pending).take() else {
            return;
        };
        let dir = &self.shared.settings.dir;
        if let Err(e) = std::fs::create_dir_all(dir) {
            // The node serves on; each recorder reports why it cannot record.
            log::error!("cannot make the recordings folder {}: {e}", dir.display());
        }
        let shared = self.shared.clone();
        thread::Builder::new()
            .name("cleaner".into())
            .spawn(move || retention::run(&shared, cleanings))
            .expect("spawn the cleaner");
        let shared = self.shared.clone();
        let supervisor = thread::Builder::new()
            .name("recorders".into())
            .spawn(move || supervisor::run(&shared, orders))
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

    /// What the recorder of `camera` is doing. A camera that should record
    /// and whose recorder the supervisor has not reached yet (it was just
    /// added or switched on) is starting.
    pub fn state(&self, camera: &Camera) -> RecorderState {
        let known = lock(&self.shared.states).get(&camera.id).cloned();
        let wanted = camera.settings.enabled && camera.settings.record;
        match known {
            Some(state) if !(wanted && state.state == State::Off) => state,
            _ if wanted => RecorderState {
                state: State::Starting,
                since_ms: now_ms(),
                message: None,
            },
            known => known.unwrap_or(RecorderState {
                state: State::Off,
                since_ms: self.shared.started_ms,
                message: None,
            }),
        }
    }

    pub fn storage(&self) -> Storage {
        *lock(&self.shared.storage)
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
    /// that a player's range requests agree.
    pub fn clip(&self, camera: Uuid, from_ms: i64, to_ms: i64) -> Result<Arc<Clip>, Error> {
        let key = (camera, from_ms, to_ms);
        if let Some(clip) = self.clips.get(key) {
            return Ok(clip);
        }
        let segments = self
            .shared
            .db
            .run(|s| s.segments_between(camera, from_ms, to_ms))?;
        // Reading the files' boxes happens without the lock.
        let clip = Clip::build(&self.shared.settings.dir, &segments, from_ms, to_ms)
            .ok_or_else(|| Error::new(Kind::NotFound, "nothing was recorded in this stretch"))?;
        let clip = Arc::new(clip);
        self.clips.put(key, clip.clone());
        Ok(clip)
    }
}

//! Events' files: clips and thumbnails. For an event of a camera that records (or
//! keeps a ring because it detects), the recording from 5 s before the event
//! to 5 s after it (5 minutes of the event at most) is cut at key frames
//! without re-encoding (the playback MP4 that `recording` builds from the
//! segments, written to a file), and a JPEG of the moment of most motion, at
//! most 640 pixels wide, is taken from it with ffmpeg:
//! `DATA_DIR/clips/<camera>/<event>.mp4` and `.jpg`. One thread does it: it
//! keeps the jobs that wait for their recording to reach their clip's end
//! (40 s at most) and cuts whichever is ready (`schedule`), and keeps the
//! clips within their budget and their disk's free-space reserve (`retention`).

mod orphans;
mod retention;
mod schedule;

use crate::channel::{self, RecvTimeoutError};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::changes::StateChanges;
use crate::clock::now_ms;
use crate::config::Config;
use crate::db::Db;
use crate::error::Error;
use crate::event::Event;
use crate::lock::lock;
use crate::media::area::Area;
use crate::media::child::Child;
use crate::notices::{Notice, Notices};
use crate::recording::{Clip, Recordings};
use crate::sys::data_file;
use crate::sys::filesystem::{self, Space};
use retention::Retention;
use schedule::{Look, Schedule, window};

/// The clips' folder, in `DATA_DIR`.
const CLIPS: &str = "clips";
/// How often the waiting jobs' recordings are looked at.
const LOOK_AGAIN: Duration = Duration::from_secs(1);
/// How often retention runs besides after each clip.
const PERIOD: Duration = Duration::from_secs(60);
/// How long the thumbnail's ffmpeg may take.
const THUMBNAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// What clips need from the configuration.
#[derive(Clone, Debug)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub ffmpeg: PathBuf,
    /// The recordings' folder: status shows the clips' disk when it is another.
    pub recordings_dir: PathBuf,
}

/// The rules of what events and clips are kept, which a person may change
/// while the node runs.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Events kept; the oldest go first, with their files.
    pub max_events: u64,
    /// The most bytes events' files may take.
    pub max_bytes: u64,
    /// The free space kept on their file system; None: the default reserve.
    pub reserve: Option<u64>,
    /// The most bytes kept events' files may take.
    pub keep_max_bytes: u64,
    /// Events older than this many days go (kept ones aside).
    pub retain_days: Option<u64>,
}

impl Settings {
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            data_dir: config.data_dir.clone(),
            ffmpeg: config.ffmpeg.clone(),
            recordings_dir: config.recordings_dir.clone(),
        }
    }

    fn clips_dir(&self) -> PathBuf {
        self.data_dir.join(CLIPS)
    }
}

impl Limits {
    pub fn from_config(config: &Config) -> Limits {
        Limits {
            max_events: config.max_events,
            max_bytes: config.clips_max_bytes,
            reserve: config.clips_reserve,
            keep_max_bytes: config.clips_keep_max_bytes,
            retain_days: config.events_retain_days,
        }
    }
}

/// Clips' use of storage, as status shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Storage {
    /// Events' clips and thumbnails, and clip files no event names.
    pub used_bytes: u64,
    pub budget_bytes: u64,
    /// The free space kept on their file system.
    pub reserve_bytes: u64,
    /// Their file system, when it is not the recordings' (and was read).
    pub disk: Option<Space>,
    /// Why old clips that should go are kept; None when none is.
    pub message: Option<String>,
    /// The last deletion of events, and the rule that made it.
    pub last_deletion: Option<Deletion>,
}

/// Events one rule deleted at once, with their clips and thumbnails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub at_ms: i64,
    /// `MAX_EVENTS`, `CLIPS_MAX_BYTES`, `CLIPS_RESERVE` or `EVENTS_RETAIN_DAYS`.
    pub rule: &'static str,
    pub events: u64,
    pub bytes: u64,
}

/// An event whose clip is to be cut.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub event: Uuid,
    pub camera: Uuid,
    pub started_ms: i64,
    pub ended_ms: i64,
    /// The moment for the thumbnail.
    pub peak_ms: i64,
    /// What to mark on the thumbnail: the object the event is of.
    pub mark: Option<Area>,
    /// The ring's pin that keeps the segments; let go once the clip is cut.
    pub pin: Option<u64>,
}

impl Job {
    /// The clip of a stored event that has none of its own, its thumbnail
    /// at its start, nothing marked, nothing pinned.
    pub fn of(event: &Event) -> Job {
        Job {
            event: event.id,
            camera: event.camera_id,
            started_ms: event.started_at_ms,
            ended_ms: event.ended_at_ms,
            peak_ms: event.started_at_ms,
            mark: None,
            pin: None,
        }
    }
}

/// What the clip thread is told.
enum Order {
    Cut(Job),
    /// Events' files changed: check the budget and the reserve.
    Check,
}

struct Inner {
    settings: Settings,
    limits: Mutex<Limits>,
    db: Arc<Db>,
    recordings: Arc<Recordings>,
    notices: Arc<Notices>,
    live: Arc<StateChanges>,
    storage: Mutex<Storage>,
}

impl Inner {
    fn limits(&self) -> Limits {
        *lock(&self.limits)
    }

    /// Sets the figures and the message; the last deletion stays.
    fn set_storage(&self, mut storage: Storage) {
        let mut current = lock(&self.storage);
        storage.last_deletion = current.last_deletion.clone();
        if *current != storage {
            *current = storage;
            drop(current);
            self.live.bump();
        }
    }

    /// Says in status what `rule` deleted last.
    fn deleted_by(&self, rule: &'static str, events: u64, bytes: u64) {
        lock(&self.storage).last_deletion = Some(Deletion {
            at_ms: now_ms(),
            rule,
            events,
            bytes,
        });
        self.live.bump();
    }
}

pub struct Clips {
    orders: channel::Sender<Order>,
    pending: Mutex<Option<channel::Receiver<Order>>>,
    inner: Arc<Inner>,
}

impl Clips {
    pub fn new(
        settings: Settings,
        limits: Limits,
        db: Arc<Db>,
        recordings: Arc<Recordings>,
        notices: Arc<Notices>,
        live: Arc<StateChanges>,
    ) -> Clips {
        let (orders, pending) = channel::channel();
        let storage = Storage {
            budget_bytes: limits.max_bytes,
            ..Storage::default()
        };
        Clips {
            orders,
            pending: Mutex::new(Some(pending)),
            inner: Arc::new(Inner {
                settings,
                limits: Mutex::new(limits),
                db,
                recordings,
                notices,
                live,
                storage: Mutex::new(storage),
            }),
        }
    }

    pub fn start(&self) {
        let Some(orders) = lock(&self.pending).take() else {
            return;
        };
        let inner = self.inner.clone();
        crate::spawn::spawn(
            thread::Builder::new()
                .name("clips".into())
                // ffmpeg children, MP4 boxes and SQLite; measured 24 KiB touched.
                .stack_size(256 * 1024),
            move || run(&inner, &orders),
        )
        .expect("spawn the clip cutter");
    }

    /// Cuts the clip of `job` soon; never blocks.
    pub fn request(&self, job: Job) {
        self.send(Order::Cut(job));
    }

    fn send(&self, order: Order) {
        // The cutter only stops with the process.
        let _ = self.orders.send(order);
    }

    /// Stores an event (with the bytes of its clip, if it came with one),
    /// and deletes the files of the oldest events it pushes past
    /// `MAX_EVENTS`. Returns false when its camera no longer exists.
    pub fn add_event(&self, event: &Event) -> Result<bool, Error> {
        let keep = self.inner.limits().max_events;
        let bytes = event.clip_path.as_ref().map_or(0, |clip| {
            fs::metadata(self.inner.settings.data_dir.join(clip)).map_or(0, |m| m.len())
        });
        let dropped = self.inner.db.run(|s| {
            if s.camera(event.camera_id)?.is_none() {
                return Ok(None);
            }
            s.insert_event(event, bytes, keep).map(Some)
        })?;
        let Some(dropped) = dropped else {
            return Ok(false);
        };
        if dropped.events > 0 {
            log::info!(
                "clips: deleted the {} oldest events with their clips and thumbnails ({} bytes): MAX_EVENTS",
                dropped.events,
                dropped.bytes
            );
            self.inner
                .deleted_by("MAX_EVENTS", dropped.events, dropped.bytes);
        }
        self.remove_files(&dropped.files);
        if bytes > 0 {
            self.send(Order::Check);
        }
        Ok(true)
    }

    /// Deletes the files of deleted events (named relative to the data
    /// folder, and tombstoned with their events), and drops the tombstones
    /// of those gone; a missing file is fine.
    pub fn remove_files(&self, files: &[String]) {
        if retention::bury(&self.inner, files) > 0 {
            self.send(Order::Check);
        }
    }

    /// An event was kept or let go: its bytes moved between the clips'
    /// budget and the kept ones', so status and the budget look again now,
    /// not at the next minute.
    pub fn keep_changed(&self) {
        self.send(Order::Check);
    }

    /// The most bytes kept events' files may take (`CLIPS_KEEP_MAX_BYTES`).
    pub fn keep_max_bytes(&self) -> u64 {
        self.inner.limits().keep_max_bytes
    }

    /// New rules, taken in now: events and clips past them go at once
    /// (MAX_EVENTS at the next event).
    pub fn set_limits(&self, limits: Limits) {
        *lock(&self.inner.limits) = limits;
        self.send(Order::Check);
    }

    /// What clips take of the disk, and the last deletion.
    pub fn storage(&self) -> Storage {
        lock(&self.inner.storage).clone()
    }

    /// An event's file (a clip or a thumbnail, relative to the data folder),
    /// open, with its length: a regular file under `clips/`, reached through
    /// no symbolic link (see `data_file`), or an error that
    /// `data_file::is_absent` calls absent.
    pub fn open(&self, file: &str) -> io::Result<(File, u64)> {
        let file = Path::new(file);
        if !file.starts_with("clips") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "events' files are under clips/",
            ));
        }
        let file = data_file::open_regular(&self.inner.settings.data_dir, file)?;
        let len = file.metadata()?.len();
        Ok((file, len))
    }
}

/// The clip thread: jobs in, clips cut as their recordings are ready, and
/// retention after each clip and every minute.
fn run(inner: &Inner, orders: &channel::Receiver<Order>) {
    let dir = inner.settings.clips_dir();
    if let Err(e) = fs::create_dir_all(&dir) {
        log::error!("cannot make the clips folder {}: {e}", dir.display());
    }
    let mut retention = Retention::start(inner);
    let mut schedule = Schedule::default();
    let (mut next_look, mut next_check) = (Instant::now(), Instant::now());
    loop {
        if !schedule.is_empty() && Instant::now() >= next_look {
            let due = schedule.take_due(Instant::now(), |job| look(inner, job));
            next_look = Instant::now() + LOOK_AGAIN;
            if !due.is_empty() {
                for job in &due {
                    finish(inner, job);
                }
                // The next clips of those cameras may be ready too.
                next_look = Instant::now();
                next_check = Instant::now();
            }
        }
        if Instant::now() >= next_check {
            retention.enforce(inner);
            next_check = Instant::now() + PERIOD;
        }
        let wake = if schedule.is_empty() {
            next_check
        } else {
            next_check.min(next_look)
        };
        let mut order = match orders.recv_timeout(wake.saturating_duration_since(Instant::now())) {
            Ok(order) => Some(order),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        while let Some(taken) = order {
            match taken {
                Order::Cut(job) => {
                    schedule.add(job, Instant::now(), now_ms());
                    next_look = Instant::now();
                }
                Order::Check => next_check = Instant::now(),
            }
            order = orders.try_recv().ok();
        }
    }
}

/// Cuts a due job's clip, lets go of the ring's pin on its segments, and
/// says the event is done.
fn finish(inner: &Inner, job: &Job) {
    cut(inner, job);
    if let Some(pin) = job.pin {
        inner.recordings.unpin(pin);
    }
    inner
        .notices
        .send(Notice::EventFinished { event: job.event });
}

/// Where the recording of a waiting job's window ends, and whether its
/// camera is still recorded.
fn look(inner: &Inner, job: &Job) -> Look {
    let (from, to) = window(job);
    Look {
        recorded_to: recording(inner, job, from, to).map(|clip| clip.end_ms),
        recording: still_recorded(inner, job.camera),
    }
}

/// The clip's file and its thumbnail's, relative to `DATA_DIR`.
fn paths(job: &Job) -> (String, String) {
    let base = format!("{}/{}/{}", CLIPS, job.camera, job.event);
    (format!("{base}.mp4"), format!("{base}.jpg"))
}

fn cut(inner: &Inner, job: &Job) {
    let (from, to) = window(job);
    let (clip_path, thumbnail_path) = paths(job);
    let data_dir = &inner.settings.data_dir;
    let clip_file = data_dir.join(&clip_path);
    // The file being written may close (and move) while it is copied: then
    // the clip is built again from the segment it became.
    let mut written = None;
    for _ in 0..3 {
        let Some(clip) = recording(inner, job, from, to) else {
            log::info!("event {}: no recording to cut its clip from", job.event);
            return;
        };
        match write_clip(&clip, &clip_file) {
            Ok(()) => {
                written = Some(clip);
                break;
            }
            Err(e) => log::debug!("event {}: writing its clip: {e}", job.event),
        }
    }
    let Some(clip) = written else {
        log::warn!("event {}: its clip could not be written", job.event);
        return;
    };
    let length = clip.end_ms - clip.start_ms;
    let at = (job.peak_ms - clip.start_ms).clamp(0, length);
    let thumbnail_file = data_dir.join(&thumbnail_path);
    let thumbnail = match thumbnail(
        &inner.settings.ffmpeg,
        &clip_file,
        at,
        job.mark,
        &thumbnail_file,
    ) {
        Ok(bytes) => Some((thumbnail_path.as_str(), bytes)),
        Err(e) => {
            log::warn!("event {}: no thumbnail: {e}", job.event);
            None
        }
    };
    let files = (Some((clip_path.as_str(), clip.len())), thumbnail);
    match inner
        .db
        .run(|s| s.set_event_files(job.event, files.0, files.1))
    {
        Ok(true) => log::info!(
            "event {}: clip of {length} ms cut ({} bytes)",
            job.event,
            clip.len()
        ),
        // The event went meanwhile (its camera deleted, or past MAX_EVENTS).
        Ok(false) | Err(_) => {
            let _ = fs::remove_file(&clip_file);
            let _ = fs::remove_file(&thumbnail_file);
        }
    }
}

/// What there is of the recording of `[from, to)` for the job's camera.
fn recording(inner: &Inner, job: &Job, from: i64, to: i64) -> Option<Arc<Clip>> {
    match inner.recordings.event_clip(job.camera, from, to) {
        Ok(clip) => clip.map(Arc::new),
        Err(e) => {
            log::warn!("event {}: {e}", job.event);
            None
        }
    }
}

/// Whether `camera` is still recorded (or ringed): when it is not (turned
/// off, or deleted), waiting for more of its recording is waiting for nothing.
fn still_recorded(inner: &Inner, camera: Uuid) -> bool {
    match inner.db.run(|s| s.camera(camera)) {
        Ok(Some(camera)) => {
            let s = &camera.settings;
            s.enabled && (s.record || s.detect)
        }
        Ok(None) => false,
        Err(_) => true,
    }
}

/// Writes the clip to `path` whole (beside it first, then renamed), so a
/// crash never leaves half a clip under its name.
fn write_clip(clip: &Arc<Clip>, path: &Path) -> io::Result<()> {
    let folder = path.parent().expect("a clip path has a folder");
    fs::create_dir_all(folder)?;
    let part = path.with_extension("mp4.part");
    let mut file = File::create(&part)?;
    let copied = io::copy(&mut clip.reader(0, clip.len()), &mut file).and_then(|_| file.sync_all());
    if let Err(e) = copied {
        let _ = fs::remove_file(&part);
        return Err(e);
    }
    fs::rename(&part, path)?;
    filesystem::sync_dir(folder)
}

/// ffmpeg's filter that draws `area` (shares of the frame) as a red box,
/// its lines about 1 % of the frame's height thick.
fn drawbox(a: Area) -> String {
    let share = |v: f32| v.clamp(0.0, 1.0);
    let (l, t) = (share(a.left), share(a.top));
    let (w, h) = (share(a.right) - l, share(a.bottom) - t);
    format!(
        "drawbox=x=iw*{l:.4}:y=ih*{t:.4}:w=iw*{w:.4}:h=ih*{h:.4}:color=red@0.9:t=max(2\\,ih/100)"
    )
}

/// A JPEG of the frame `at_ms` into `clip`, at most 640 pixels wide, with
/// `mark` boxed in red; returns its bytes.
fn thumbnail(
    ffmpeg: &Path,
    clip: &Path,
    at_ms: i64,
    mark: Option<Area>,
    path: &Path,
) -> io::Result<u64> {
    let part = path.with_extension("jpg.part");
    let scale = "scale='min(640,iw)':-2";
    let filters = match mark {
        Some(a) => format!("{},{scale}", drawbox(a)),
        None => scale.to_owned(),
    };
    let mut command = Command::new(ffmpeg);
    command
        .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
        .args(["-ss", &format!("{:.3}", at_ms as f64 / 1000.0)])
        .arg("-i")
        .arg(clip)
        .args(["-frames:v", "1", "-vf", &filters, "-q:v", "4"])
        .args(["-f", "image2", "-y"])
        .arg(&part);
    let mut child = Child::spawn(&mut command)?;
    let finished = child.finish(Instant::now() + THUMBNAIL_TIMEOUT, 0);
    match finished {
        Some((_, status)) if status.success() && part.is_file() => {
            fs::rename(&part, path)?;
            Ok(fs::metadata(path)?.len())
        }
        _ => {
            let _ = fs::remove_file(&part);
            Err(io::Error::other(
                "ffmpeg could not take a frame from the clip",
            ))
        }
    }
}

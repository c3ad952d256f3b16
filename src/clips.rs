//! Events' files: clips and thumbnails. For an event of a camera that records (or
//! keeps a ring because it detects), the recording from 5 s before the event
//! to 5 s after it is cut at key frames without re-encoding (the playback
//! MP4 that `recording` builds from the segments, written to a file), and a
//! JPEG of the moment of most motion, at most 640 pixels wide, is taken from
//! it with ffmpeg: `DATA_DIR/clips/<camera>/<event>.mp4` and `.jpg`. One
//! thread takes the events in turn; each waits (40 s at most) for the
//! recording to reach its clip's end.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::clock::now_ms;
use crate::data_file;
use crate::db::{Db, lock};
use crate::error::Error;
use crate::event::CLIP_MARGIN_MS;
use crate::event::Event;
use crate::media::child::Child;
use crate::notices::{Notice, Notices};
use crate::recording::{Clip, Recordings};

/// The longest wait for the recording to reach a clip's end.
const WAIT: Duration = Duration::from_secs(40);
/// How long the thumbnail's ffmpeg may take.
const THUMBNAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// An event whose clip is to be cut.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub event: Uuid,
    pub camera: Uuid,
    pub started_ms: i64,
    pub ended_ms: i64,
    /// The moment for the thumbnail.
    pub peak_ms: i64,
    /// The ring's pin that keeps the segments; let go once the clip is cut.
    pub pin: Option<u64>,
}

struct Inner {
    data_dir: PathBuf,
    ffmpeg: PathBuf,
    /// Events kept; the oldest go first, with their files.
    max_events: u64,
    db: Arc<Db>,
    recordings: Arc<Recordings>,
    notices: Arc<Notices>,
}

pub struct Clips {
    jobs: mpsc::Sender<Job>,
    pending: Mutex<Option<mpsc::Receiver<Job>>>,
    inner: Arc<Inner>,
}

impl Clips {
    pub fn new(
        data_dir: PathBuf,
        ffmpeg: PathBuf,
        max_events: u64,
        db: Arc<Db>,
        recordings: Arc<Recordings>,
        notices: Arc<Notices>,
    ) -> Clips {
        let (jobs, pending) = mpsc::channel();
        Clips {
            jobs,
            pending: Mutex::new(Some(pending)),
            inner: Arc::new(Inner {
                data_dir,
                ffmpeg,
                max_events,
                db,
                recordings,
                notices,
            }),
        }
    }

    pub fn start(&self) {
        let Some(jobs) = lock(&self.pending).take() else {
            return;
        };
        let inner = self.inner.clone();
        thread::Builder::new()
            .name("clips".into())
            .spawn(move || {
                remove_parts(&inner.data_dir.join("clips"));
                for job in jobs {
                    cut(&inner, &job);
                    if let Some(pin) = job.pin {
                        inner.recordings.unpin(pin);
                    }
                    inner
                        .notices
                        .send(Notice::EventFinished { event: job.event });
                }
            })
            .expect("spawn the clip cutter");
    }

    /// Cuts the clip of `job` soon; never blocks.
    pub fn request(&self, job: Job) {
        // The cutter only stops with the process.
        let _ = self.jobs.send(job);
    }

    /// Stores an event, and deletes the files of the oldest events it pushes
    /// past `MAX_EVENTS`. Returns false when its camera no longer exists.
    pub fn add_event(&self, event: &Event) -> Result<bool, Error> {
        let keep = self.inner.max_events;
        let dropped = self.inner.db.run(|s| {
            if s.camera(event.camera_id)?.is_none() {
                return Ok(None);
            }
            s.insert_event(event, keep).map(Some)
        })?;
        let Some(dropped) = dropped else {
            return Ok(false);
        };
        self.remove_files(&dropped);
        Ok(true)
    }

    /// Deletes events' files, named relative to the data folder; a missing
    /// file is fine.
    pub fn remove_files(&self, files: &[String]) {
        for file in files {
            let path = self.inner.data_dir.join(file);
            if let Err(e) = fs::remove_file(&path)
                && e.kind() != io::ErrorKind::NotFound
            {
                log::warn!("cannot delete {}: {e}", path.display());
            }
        }
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
        let file = data_file::open_regular(&self.inner.data_dir, file)?;
        let len = file.metadata()?.len();
        Ok((file, len))
    }
}

/// Deletes what a crash left half written (`*.part`) in the clips' folders.
fn remove_parts(clips: &Path) {
    for camera in fs::read_dir(clips).into_iter().flatten().flatten() {
        for file in fs::read_dir(camera.path()).into_iter().flatten().flatten() {
            if file.file_name().to_string_lossy().ends_with(".part") {
                let _ = fs::remove_file(file.path());
            }
        }
    }
}

/// The clip's file and its thumbnail's, relative to `DATA_DIR`.
fn paths(job: &Job) -> (String, String) {
    let base = format!("clips/{}/{}", job.camera, job.event);
    (format!("{base}.mp4"), format!("{base}.jpg"))
}

fn cut(inner: &Inner, job: &Job) {
    let (from, to) = (
        job.started_ms - CLIP_MARGIN_MS,
        job.ended_ms + CLIP_MARGIN_MS,
    );
    let (clip_path, thumbnail_path) = paths(job);
    let clip_file = inner.data_dir.join(&clip_path);
    // The file being written may close (and move) while it is copied: then
    // the clip is built again from the segment it became.
    let mut written = None;
    for _ in 0..3 {
        let Some(clip) = wait_for_recording(inner, job, from, to) else {
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
    let at = (job.peak_ms - clip.start_ms).max(0);
    let thumbnail_file = inner.data_dir.join(&thumbnail_path);
    let thumbnail = match thumbnail(&inner.ffmpeg, &clip_file, at, &thumbnail_file) {
        Ok(()) => Some(thumbnail_path.as_str()),
        Err(e) => {
            log::warn!("event {}: no thumbnail: {e}", job.event);
            None
        }
    };
    match inner
        .db
        .run(|s| s.set_event_files(job.event, Some(&clip_path), thumbnail))
    {
        Ok(true) => log::info!(
            "event {}: clip of {} ms cut",
            job.event,
            clip.end_ms - clip.start_ms
        ),
        // The event went meanwhile (its camera deleted, or past MAX_EVENTS).
        Ok(false) | Err(_) => {
            let _ = fs::remove_file(&clip_file);
            let _ = fs::remove_file(&thumbnail_file);
        }
    }
}

/// The clip of `[from, to)`, once the recording reaches `to`; what there is
/// when it does not within [`WAIT`] (or the event is long past).
fn wait_for_recording(inner: &Inner, job: &Job, from: i64, to: i64) -> Option<Arc<Clip>> {
    let deadline = Instant::now() + WAIT;
    let recent = to > now_ms() - WAIT.as_millis() as i64;
    loop {
        let clip = match inner.recordings.event_clip(job.camera, from, to) {
            Ok(clip) => clip.map(Arc::new),
            Err(e) => {
                log::warn!("event {}: {e}", job.event);
                None
            }
        };
        // Within a frame of the end is the end.
        if clip.as_ref().is_some_and(|c| c.end_ms >= to - 250)
            || !recent
            || Instant::now() >= deadline
            || !still_recorded(inner, job.camera)
        {
            return clip;
        }
        thread::sleep(Duration::from_secs(1));
    }
}

/// Whether `camera` is still recorded (or ringed): when it is not (turned
/// off, or deleted), waiting for more of its recording is waiting for nothing
/// and would hold up the clips of other cameras' events.
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
    File::open(folder)?.sync_all()
}

/// A JPEG of the frame `at_ms` into `clip`, at most 640 pixels wide.
fn thumbnail(ffmpeg: &Path, clip: &Path, at_ms: i64, path: &Path) -> io::Result<()> {
    let part = path.with_extension("jpg.part");
    let mut command = Command::new(ffmpeg);
    command
        .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
        .args(["-ss", &format!("{:.3}", at_ms as f64 / 1000.0)])
        .arg("-i")
        .arg(clip)
        .args([
            "-frames:v",
            "1",
            "-vf",
            "scale='min(640,iw)':-2",
            "-q:v",
            "4",
        ])
        .args(["-f", "image2", "-y"])
        .arg(&part);
    let mut child = Child::spawn(&mut command)?;
    let finished = child.finish(Instant::now() + THUMBNAIL_TIMEOUT, 0);
    match finished {
        Some((_, status)) if status.success() && part.is_file() => fs::rename(&part, path),
        _ => {
            let _ = fs::remove_file(&part);
            Err(io::Error::other(
                "ffmpeg could not take a frame from the clip",
            ))
        }
    }
}

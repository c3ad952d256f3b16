//! One camera's motion watcher: an ffmpeg decoding its sub stream (the
//! main one when it has none) to grey frames, 5 a second and 320 pixels
//! wide, as PGM images on stdout (each says its size); the detector and the
//! episodes turn them into events. Supervised like a recorder: restarted
//! after 1 s, doubling to 60 s, when it exits or sends no frame for 30 s;
//! stopped within 2 s; killed with the node.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::Shared;
use super::detector::{Detector, Params};
use super::episodes::{Change, Episode, Episodes, Moment};
use crate::clips::Job;
use crate::clock::now_ms;
use crate::event::CLIP_MARGIN_MS;
use crate::event::{Event, Kind};
use crate::media::child::{Child, Filled, Output};
use crate::media::restart::{self, Restartable};
use crate::notices::Notice;

/// ffmpeg's own bound on each wait for the camera (RTSP socket timeout).
const SOCKET_TIMEOUT: Duration = Duration::from_secs(5);
/// A decoder that sends no frame for this long is stuck.
const WATCHDOG: Duration = Duration::from_secs(30);
/// How often the thread looks at its stop flag while waiting.
const TICK: Duration = Duration::from_millis(200);
const STOP_GRACE: Duration = Duration::from_millis(1500);
/// The largest frame taken: a PGM header asking for more is not ffmpeg's.
const MAX_PIXELS: usize = 1920 * 1080;

/// What a watcher watches.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub url: String,
    pub params: Params,
}

pub struct Watcher {
    shared: Arc<Shared>,
    camera: Uuid,
    spec: Spec,
    stop: Arc<AtomicBool>,
    episodes: Episodes,
    /// The ring's pin of the event under way.
    pin: Option<u64>,
    /// The id of the event under way, told when it started.
    event: Option<Uuid>,
    /// The origin of the monotonic clock that times the episodes.
    origin: Instant,
}

impl Watcher {
    pub fn new(shared: Arc<Shared>, camera: Uuid, spec: Spec, stop: Arc<AtomicBool>) -> Watcher {
        Watcher {
            shared,
            camera,
            spec,
            stop,
            episodes: Episodes::default(),
            pin: None,
            event: None,
            origin: Instant::now(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub fn run(mut self) {
        let stop = self.stop.clone();
        restart::keep_running(&mut self, &stop);
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.shared.settings.ffmpeg);
        let timeout_us = SOCKET_TIMEOUT.as_micros().to_string();
        command
            .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
            .args(["-rtsp_transport", "tcp", "-timeout", &timeout_us])
            // Its own argument, never through a shell; validation made sure it is RTSP.
            .args(["-i", &self.spec.url])
            .args(["-an", "-vf", "fps=5,scale=320:-2", "-pix_fmt", "gray"])
            .args(["-c:v", "pgm", "-f", "image2pipe", "pipe:1"]);
        command
    }

    /// One run of the decoder; returns whether any frame came.
    fn watch(&mut self) -> bool {
        // A place among the children starting, held until the first frame,
        // the end, or its time.
        let (gate, stop) = (self.shared.settings.gate.clone(), self.stop.clone());
        let Some(place) = gate.enter(&stop) else {
            return false;
        };
        let mut place = Some(place);
        let mut child = match Child::spawn(&mut self.command()) {
            Ok(child) => child,
            Err(e) => {
                log::error!("cannot run {}: {e}", self.shared.settings.ffmpeg.display());
                return false;
            }
        };
        let mut detector: Option<Detector> = None;
        let mut frame = Vec::new();
        let mut last_frame = Instant::now();
        let mut saw_frames = false;
        while !self.stopped() && last_frame.elapsed() < WATCHDOG {
            if saw_frames || place.as_ref().is_some_and(|p| p.expired()) {
                place = None;
            }
            let Some((width, height)) = read_header(&mut child, &self.stop, last_frame + WATCHDOG)
            else {
                break;
            };
            frame.resize(width * height, 0);
            let filled = loop {
                match child.read_exact(&mut frame, TICK) {
                    Filled::Quiet if !self.stopped() && last_frame.elapsed() < WATCHDOG => {}
                    other => break other,
                }
            };
            if filled != Filled::Full {
                break;
            }
            let at = Moment {
                mono_ms: self.origin.elapsed().as_millis() as i64,
                wall_ms: now_ms(),
            };
            last_frame = Instant::now();
            saw_frames = true;
            let detector = match &mut detector {
                Some(d) if d.size() == (width, height) => d,
                _ => detector.insert(Detector::new(width, height, self.spec.params)),
            };
            let motion = detector.frame(&frame);
            for change in self.episodes.frame(at, motion.share, motion.present) {
                match change {
                    Change::Started { at_ms } => {
                        detector.hold_reference();
                        self.started(at_ms);
                    }
                    Change::Ended(episode) => {
                        detector.release_reference();
                        self.ended(episode);
                    }
                }
            }
        }
        child.terminate();
        if child.wait_until(Instant::now() + STOP_GRACE).is_none() {
            child.kill();
        }
        saw_frames
    }

    fn started(&mut self, at_ms: i64) {
        log::info!("camera {}: motion", self.camera);
        // A camera that only keeps a ring must keep the event's segments.
        self.pin = Some(
            self.shared
                .recordings
                .pin(self.camera, at_ms - CLIP_MARGIN_MS),
        );
        let event = *self.event.insert(Uuid::new_v4());
        self.shared.notices.send(Notice::MotionStarted {
            camera: self.camera,
            event,
            at_ms,
        });
    }

    /// Stores the event and asks for its clip.
    fn ended(&mut self, episode: Episode) {
        let event = Event {
            id: self.event.take().unwrap_or_else(Uuid::new_v4),
            camera_id: self.camera,
            kind: "motion".to_owned(),
            // Three decimals: the share of the picture that moved.
            score: (f64::from(episode.score) * 1000.0).round() / 1000.0,
            started_at_ms: episode.started_ms,
            ended_at_ms: episode.ended_ms,
            clip_status: "local".to_owned(),
            clip_path: None,
            thumbnail_path: None,
        };
        let pin = self.pin.take();
        let added = self.shared.clips.add_event(&event);
        self.shared.notices.send(Notice::MotionEnded {
            camera: self.camera,
            event: event.id,
            kind: Kind::Motion,
        });
        match added {
            Ok(true) => {
                log::info!(
                    "camera {}: motion event {} ({} ms, score {})",
                    self.camera,
                    event.id,
                    event.ended_at_ms - event.started_at_ms,
                    event.score
                );
                self.shared.clips.request(Job {
                    event: event.id,
                    camera: self.camera,
                    started_ms: episode.started_ms,
                    ended_ms: episode.ended_ms,
                    peak_ms: episode.peak_ms,
                    pin,
                });
            }
            Ok(false) | Err(_) => {
                if let Some(pin) = pin {
                    self.shared.recordings.unpin(pin);
                }
            }
        }
    }
}

impl Restartable for Watcher {
    fn run_once(&mut self) -> bool {
        let saw_frames = self.watch();
        // An event under way ends with the frames, at its last moving one.
        if let Some(episode) = self.episodes.finish() {
            self.ended(episode);
        }
        saw_frames
    }

    fn retrying(&mut self, wait: Duration) {
        log::info!(
            "motion watcher of camera {}: its decoder stopped; trying again in {} s",
            self.camera,
            wait.as_secs_f64().round().max(1.0)
        );
    }
}

/// Reads a PGM header (`P5`, `width height`, `255`, one a line, as ffmpeg
/// writes them); None when the decoder ends, sends something else, the
/// watcher is stopped, or `deadline` passes.
fn read_header(child: &mut Child, stop: &AtomicBool, deadline: Instant) -> Option<(usize, usize)> {
    let mut lines = Vec::with_capacity(3);
    while lines.len() < 3 {
        match child.next_line(TICK) {
            Output::Line(line) => lines.push(line),
            Output::Quiet if !stop.load(Ordering::Acquire) && Instant::now() < deadline => {}
            _ => return None,
        }
    }
    parse_header(&lines[0], &lines[1], &lines[2])
}

fn parse_header(magic: &str, size: &str, max: &str) -> Option<(usize, usize)> {
    let (width, height) = size.split_once(' ')?;
    let (width, height): (usize, usize) = (width.parse().ok()?, height.parse().ok()?);
    let fits = (2..=MAX_PIXELS).contains(&(width * height)) && width >= 2 && height >= 2;
    (magic == "P5" && max == "255" && fits).then_some((width, height))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgm_headers() {
        assert_eq!(parse_header("P5", "320 180", "255"), Some((320, 180)));
        for (magic, size, max) in [
            ("P6", "320 180", "255"),
            ("P5", "320x180", "255"),
            ("P5", "320 180", "65535"),
            ("P5", "1 180", "255"),
            ("P5", "100000 100000", "255"),
            ("P5", "-3 4", "255"),
        ] {
            assert_eq!(parse_header(magic, size, max), None, "{magic} {size} {max}");
        }
    }
}

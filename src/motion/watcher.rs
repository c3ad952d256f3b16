//! One camera's motion watcher: an ffmpeg decoding its sub stream (the
//! main one when it has none) to frames on stdout, 5 a second: in colour
//! and at most 640 pixels wide for a camera that classifies, grey and 160
//! wide for one that does not (`frame.rs`); the detector and the episodes
//! turn them into events. While an event is on, a camera that classifies
//! sends crops of what moved to the classifier, and the event ends as the
//! kind it saw (`classify::tally`). Supervised like a recorder:
//! restarted after 1 s, doubling to 60 s, when it exits or sends no frame
//! for 30 s; stopped within 2 s; killed with the node.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::Shared;
use super::detector::{Detector, Params};
use super::episodes::{Change, Episode, Episodes, Moment};
use super::frame::{self, Format};
use crate::classify::crop::{self, Yuv420};
use crate::classify::regions::{self, Square};
use crate::classify::tally::{self, Sighting, Tally};
use crate::classify::{INPUT_SIDE, Reply};
use crate::clips::Job;
use crate::clock::now_ms;
use crate::event::CLIP_MARGIN_MS;
use crate::event::{Event, Kind};
use crate::media::area::Area;
use crate::media::child::{Child, Filled, MALLOC_TRIM, Output};
use crate::media::restart::{self, Restartable};
use crate::notices::Notice;

/// ffmpeg's own bound on each wait for the camera (RTSP socket timeout).
const SOCKET_TIMEOUT: Duration = Duration::from_secs(5);
/// A decoder that sends no frame for this long is stuck.
const WATCHDOG: Duration = Duration::from_secs(30);
/// How often the thread looks at its stop flag while waiting.
const TICK: Duration = Duration::from_millis(200);
const STOP_GRACE: Duration = Duration::from_millis(1500);

/// What a watcher watches.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub url: String,
    pub params: Params,
    /// The kinds its events may become; None: it does not classify.
    pub kinds: Option<Vec<Kind>>,
}

/// The classification of the event under way.
struct Classifying {
    tally: Tally,
    /// Crops sent and not answered yet: where each was taken, and when
    /// (wall clock).
    waiting: Vec<(Reply, Square, i64)>,
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
    classifying: Option<Classifying>,
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
            classifying: None,
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
            .env(MALLOC_TRIM.0, MALLOC_TRIM.1)
            .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
            .args(["-rtsp_transport", "tcp", "-timeout", &timeout_us])
            // One decoding thread (an input option: before -i): 5 small
            // frames a second need no frame threads, each of which holds
            // frames of its own. Measured: 19.0 -> 13.7 MiB private, same CPU.
            .args(["-threads", "1"])
            // Nor filter threads: with them the scaler starts 4 slice threads.
            .args(["-filter_threads", "1"])
            // Its own argument, never through a shell; validation made sure it is RTSP.
            .args(["-i", &self.spec.url])
            .args(["-an"])
            .args(match self.format() {
                // Up to 640 wide for the classifier's crops; even sizes, as
                // pgmyuv needs; the source's own when it is small.
                Format::Yuv420 => &[
                    "-vf",
                    "fps=5,scale='trunc(min(640,iw)/2)*2':-2",
                    "-pix_fmt",
                    "yuv420p",
                    "-c:v",
                    "pgmyuv",
                ][..],
                // The detector's own size, each block averaged (`area`) as
                // frame.rs would halve it, and the luma plane alone: taken
                // as it is (`extractplanes`), where `-pix_fmt gray` would
                // stretch its range and so the detector's thresholds. A
                // sixth of the bytes of a 320-wide colour frame to hold, 72
                // KiB less per camera in the node.
                Format::Grey => &[
                    "-vf",
                    "fps=5,scale='trunc(min(160,iw)/2)*2':-2:flags=area,\
                     format=yuv420p,extractplanes=y",
                    "-c:v",
                    "pgm",
                ][..],
            })
            .args(["-f", "image2pipe", "pipe:1"]);
        command
    }

    /// Colour frames for a camera that classifies, grey ones for the detector alone.
    fn format(&self) -> Format {
        match self.spec.kinds {
            Some(_) => Format::Yuv420,
            None => Format::Grey,
        }
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
        let format = self.format();
        let mut detector: Option<Detector> = None;
        let mut frame = Vec::new();
        let mut small = Vec::new();
        let mut last_frame = Instant::now();
        let mut saw_frames = false;
        while !self.stopped() && last_frame.elapsed() < WATCHDOG {
            if saw_frames || place.as_ref().is_some_and(|p| p.expired()) {
                place = None;
            }
            let deadline = last_frame + WATCHDOG;
            let Some((width, height)) = read_header(&mut child, format, &self.stop, deadline)
            else {
                break;
            };
            frame.resize(format.bytes(width, height), 0);
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
            // A snapshot waiting for this camera's picture gets this one.
            self.shared
                .frames
                .offer(self.camera, format, width, height, &frame);
            let (luma, w, h) = frame::for_detector(&frame, width, height, &mut small);
            let detector = match &mut detector {
                Some(d) if d.size() == (w, h) => d,
                _ => detector.insert(Detector::new(w, h, self.spec.params)),
            };
            let motion = detector.frame(luma);
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
            if format == Format::Yuv420 {
                let image = Yuv420 {
                    width,
                    height,
                    data: &frame,
                };
                self.classify(&image, &motion.boxes, at);
            }
        }
        child.stop(STOP_GRACE);
        saw_frames
    }

    /// While an event is on: takes the answers that came, and sends a crop
    /// of what moves in `image` when one is due.
    fn classify(&mut self, image: &Yuv420, boxes: &[Area], at: Moment) {
        let (camera, event) = (self.camera, self.event);
        let Some(classifying) = &mut self.classifying else {
            return;
        };
        let mut seen = Vec::new();
        classifying
            .waiting
            .retain(|(reply, square, at_ms)| match reply.try_recv() {
                Ok(objects) => {
                    let sightings = objects.iter().filter_map(|o| {
                        let kind = tally::kind_of(&o.label)?;
                        let area = in_frame(o.area, *square, image.width, image.height);
                        Some(Sighting {
                            kind,
                            score: o.score,
                            area,
                            at_ms: *at_ms,
                        })
                    });
                    seen.extend(sightings);
                    false
                }
                Err(mpsc::TryRecvError::Empty) => true,
                // The classifier failed or stopped: that crop counts for nothing.
                Err(mpsc::TryRecvError::Disconnected) => false,
            });
        if let Some(kind) = classifying.tally.answer(&seen)
            && let Some(event) = event
        {
            log::info!("camera {camera}: the motion is a {}", kind.name());
            self.shared.notices.send(Notice::KindSeen {
                camera,
                event,
                kind,
            });
        }
        if !classifying.tally.crop_due(at.mono_ms) {
            return;
        }
        let Some(square) =
            regions::square_to_classify(boxes, image.width, image.height, INPUT_SIDE)
        else {
            return;
        };
        let rgb = crop::rgb_crop(image, square, INPUT_SIDE);
        if let Some(reply) = self.shared.classifier.submit(rgb) {
            classifying.tally.cropped(at.mono_ms);
            classifying.waiting.push((reply, square, at.wall_ms));
        }
    }

    fn started(&mut self, at_ms: i64) {
        log::info!("camera {}: motion", self.camera);
        self.classifying = self.spec.kinds.as_deref().map(|kinds| Classifying {
            tally: Tally::new(kinds),
            waiting: Vec::new(),
        });
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

    /// Stores the event, of the kind it was found to be, and asks for its
    /// clip (its thumbnail at the best sighting, the object marked).
    fn ended(&mut self, episode: Episode) {
        let sighting = self.classifying.take().and_then(|c| c.tally.decided());
        // The share of the picture that moved, or the classifier's score.
        let (kind, score) = match sighting {
            Some(s) => (s.kind, s.score),
            None => (Kind::Motion, episode.score),
        };
        let event = Event {
            id: self.event.take().unwrap_or_else(Uuid::new_v4),
            camera_id: self.camera,
            kind: kind.name().to_owned(),
            // Three decimals.
            score: (f64::from(score) * 1000.0).round() / 1000.0,
            started_at_ms: episode.started_ms,
            ended_at_ms: episode.ended_ms,
            clip_status: "local".to_owned(),
            clip_path: None,
            thumbnail_path: None,
            zones: Vec::new(),
        };
        let pin = self.pin.take();
        let added = self.shared.clips.add_event(&event);
        self.shared.notices.send(Notice::MotionEnded {
            camera: self.camera,
            event: event.id,
            kind,
        });
        match added {
            Ok(true) => {
                log::info!(
                    "camera {}: {} event {} ({} ms, score {})",
                    self.camera,
                    event.kind,
                    event.id,
                    event.ended_at_ms - event.started_at_ms,
                    event.score
                );
                self.shared.clips.request(Job {
                    event: event.id,
                    camera: self.camera,
                    started_ms: episode.started_ms,
                    ended_ms: episode.ended_ms,
                    peak_ms: sighting.map_or(episode.peak_ms, |s| s.at_ms),
                    mark: sighting.map(|s| s.area),
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

/// Reads a frame's header (three lines, as ffmpeg writes them); its width
/// and height, or None when the decoder ends, sends something else, the
/// watcher is stopped, or `deadline` passes.
fn read_header(
    child: &mut Child,
    format: Format,
    stop: &AtomicBool,
    deadline: Instant,
) -> Option<(usize, usize)> {
    let mut lines = Vec::with_capacity(3);
    while lines.len() < 3 {
        match child.next_line(TICK) {
            Output::Line(line) => lines.push(line),
            Output::Quiet if !stop.load(Ordering::Acquire) && Instant::now() < deadline => {}
            _ => return None,
        }
    }
    frame::parse_header(format, &lines[0], &lines[1], &lines[2])
}

/// A box in a crop (`square` of a `width` × `height` frame) as a box in the frame.
fn in_frame(
    [left, top, right, bottom]: [f32; 4],
    square: Square,
    width: usize,
    height: usize,
) -> Area {
    let x = |v: f32| (square.x as f32 + v.clamp(0.0, 1.0) * square.side as f32) / width as f32;
    let y = |v: f32| (square.y as f32 + v.clamp(0.0, 1.0) * square.side as f32) / height as f32;
    Area {
        left: x(left),
        top: y(top),
        right: x(right),
        bottom: y(bottom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_in_a_crop_are_placed_in_the_frame() {
        let square = Square {
            x: 170,
            y: 30,
            side: 300,
        };
        let area = in_frame([0.0, 0.5, 1.0, 1.2], square, 640, 360);
        assert_eq!(
            area,
            Area {
                left: 170.0 / 640.0,
                top: 180.0 / 360.0,
                right: 470.0 / 640.0,
                bottom: 330.0 / 360.0,
            }
        );
    }
}

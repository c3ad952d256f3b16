//! One camera's recorder: a long-lived ffmpeg copying the main stream (no
//! re-encoding) into 10 s fragmented-MP4 segments, and the thread that
//! supervises it. ffmpeg names each segment it closes on stdout (the
//! segment list as csv), so the folder is never polled. A recorder that
//! exits, or closes no segment for 50 s, is killed and started again after
//! 1 s, doubling to 60 s; the wait starts over once a run records.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::files::{self, INCOMING_PATTERN};
use super::filing::{self, Filed};
use super::{Clean, Shared, State};
use crate::clock::now_ms;
use crate::media::child::{Child, Output};
use crate::media::failure::Failure;
use crate::store::Segment;

/// The length ffmpeg aims at for each segment (it cuts at the next key frame).
pub const SEGMENT_SECONDS: u64 = 10;
/// A recorder that closes no segment for this long is stuck: two segment
/// lengths plus 30 s.
const WATCHDOG: Duration = Duration::from_secs(2 * SEGMENT_SECONDS + 30);
/// ffmpeg's own bound on each wait for the camera (RTSP socket timeout).
const SOCKET_TIMEOUT: Duration = Duration::from_secs(5);
/// How long ffmpeg gets to finish its segment after SIGTERM, before SIGKILL.
const STOP_GRACE: Duration = Duration::from_millis(1500);
/// How often the thread looks at its stop flag while waiting.
const TICK: Duration = Duration::from_millis(200);
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(60);
/// Segments whose wall-clock end drifts this far from when ffmpeg reported
/// them get a new anchor (the camera's clock runs apart from ours).
const MAX_DRIFT_MS: i64 = 5_000;

/// What a recorder records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub url: String,
    /// Whether to copy the first audio stream (only where browsers play it).
    pub audio: bool,
    /// Only a ring of the last minute, in RAM, for motion clips: the camera
    /// detects but does not record. Its state stays `off`.
    pub ring: bool,
}

pub struct Recorder {
    shared: Arc<Shared>,
    camera: Uuid,
    source: Source,
    stop: Arc<AtomicBool>,
    /// Segments on disk whose row could not be written yet (the database's
    /// disk was full): tried again with each new segment.
    unindexed: Vec<Segment>,
}

/// Why a run of ffmpeg ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    Stopped,
    ToolMissing,
    FolderUnwritable,
    Stalled,
    Failed(Failure),
}

impl Ended {
    fn message(&self) -> &'static str {
        match self {
            Ended::Stopped => "stopped",
            Ended::ToolMissing => "the recording tool (ffmpeg) is not available on the node",
            Ended::FolderUnwritable => "the recordings folder cannot be written",
            Ended::Stalled => "the camera sent nothing for 50 seconds",
            Ended::Failed(Failure::Unauthorized) => "the camera rejected the user name or password",
            Ended::Failed(Failure::NotFound) => "the camera has no stream at this path",
            Ended::Failed(Failure::Refused) => "the camera refused the connection",
            Ended::Failed(Failure::TimedOut) => "the camera did not answer",
            Ended::Failed(Failure::Unreachable) => "the camera's host could not be reached",
            Ended::Failed(Failure::NoSpace) => "the recordings' disk is full",
            Ended::Failed(Failure::Other) => "the stream could not be read",
        }
    }
}

impl Recorder {
    pub fn new(
        shared: Arc<Shared>,
        camera: Uuid,
        source: Source,
        stop: Arc<AtomicBool>,
    ) -> Recorder {
        Recorder {
            shared,
            camera,
            source,
            stop,
            unindexed: Vec::new(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Says what the recorder does, unless it only keeps a ring.
    fn set_state(&self, state: State, message: Option<String>) {
        if !self.source.ring {
            self.shared.set_state(self.camera, state, message);
        }
    }

    /// Where ffmpeg writes.
    fn incoming(&self) -> PathBuf {
        let base = if self.source.ring {
            self.shared.ring.dir()
        } else {
            &self.shared.settings.dir
        };
        files::incoming_dir(base, self.camera)
    }

    pub fn run(mut self) {
        let mut retry = FIRST_RETRY;
        while !self.stopped() {
            self.set_state(State::Starting, None);
            let (ended, recorded) = self.record();
            self.shared.forget_writing(self.camera);
            // What the run left unfinished: the segment a kill cut short, or
            // a file begun just before a stop (deleted with a deleted camera).
            self.recover_incoming();
            if self.stopped() {
                break;
            }
            if recorded {
                retry = FIRST_RETRY;
            }
            if ended == Ended::Failed(Failure::NoSpace) {
                self.shared.clean(Clean::Urgent);
            }
            let message = format!("{}; trying again in {} s", ended.message(), retry.as_secs());
            self.set_state(State::Retrying, Some(message));
            let until = Instant::now() + retry;
            while !self.stopped() && Instant::now() < until {
                std::thread::sleep(TICK.min(until - Instant::now()));
            }
            retry = (retry * 2).min(LAST_RETRY);
        }
        self.index_pending();
        // Gone with its camera, if it was deleted: the cleaner removes the rest.
        let incoming = self.incoming();
        files::remove_if_empty(&incoming);
        files::remove_if_empty(incoming.parent().expect("a camera folder"));
    }

    fn command(&self, incoming: &Path) -> Command {
        let mut command = Command::new(&self.shared.settings.ffmpeg);
        let timeout_us = SOCKET_TIMEOUT.as_micros().to_string();
        command
            // ffmpeg names files by the local time: make that UTC.
            .env("TZ", "UTC")
            .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
            .args(["-rtsp_transport", "tcp", "-timeout", &timeout_us])
            // Its own argument, never through a shell; validation made sure it is RTSP.
            .args(["-i", &self.source.url])
            .args(["-map", "0:v:0"]);
        if self.source.audio {
            command.args(["-map", "0:a:0?"]);
        }
        command
            // Hand each fragment to the file as it is made (in 256 KiB
            // writes rather than 1 MiB), so a crash loses less.
            .args(["-c", "copy", "-flush_packets", "1", "-f", "segment"])
            .args(["-segment_time", &SEGMENT_SECONDS.to_string()])
            .args(["-reset_timestamps", "1", "-strftime", "1"])
            .args(["-segment_format", "mp4", "-segment_format_options"])
            .arg("movflags=+frag_keyframe+empty_moov+default_base_moof")
            .args(["-segment_list", "pipe:1", "-segment_list_type", "csv"])
            .arg(incoming.join(INCOMING_PATTERN));
        command
    }

    /// One run of ffmpeg, until it exits, stalls or is stopped. Returns why
    /// it ended and whether it recorded anything.
    fn record(&mut self) -> (Ended, bool) {
        let incoming = self.incoming();
        if let Err(e) = std::fs::create_dir_all(&incoming) {
            log::warn!(
                "recorder of camera {}: cannot make {}: {e}",
                self.camera,
                incoming.display()
            );
            let ended = match e.raw_os_error() {
                Some(libc::ENOSPC) => Ended::Failed(Failure::NoSpace),
                _ => Ended::FolderUnwritable,
            };
            return (ended, false);
        }
        let mut child = match Child::spawn(&mut self.command(&incoming)) {
            Ok(child) => child,
            Err(e) => {
                log::error!("cannot run {}: {e}", self.shared.settings.ffmpeg.display());
                return (Ended::ToolMissing, false);
            }
        };
        log::debug!(
            "recorder of camera {}: ffmpeg {} started",
            self.camera,
            child.pid()
        );
        let mut anchor: Option<i64> = None;
        let mut recorded = false;
        let mut last_progress = Instant::now();
        let mut stopping: Option<Instant> = None;
        let mut stalled = false;
        loop {
            match child.next_line(TICK) {
                Output::Line(line) => {
                    if self.segment_closed(&incoming, &line, &mut anchor) {
                        last_progress = Instant::now();
                        if !recorded {
                            recorded = true;
                            self.set_state(State::Recording, None);
                        }
                    }
                }
                Output::Quiet => {}
                Output::Closed => break,
            }
            match stopping {
                None if self.stopped() => {
                    child.terminate();
                    stopping = Some(Instant::now() + STOP_GRACE);
                }
                None if last_progress.elapsed() > WATCHDOG => {
                    stalled = true;
                    child.kill();
                    break;
                }
                Some(deadline) if Instant::now() >= deadline => {
                    child.kill();
                    break;
                }
                _ => {}
            }
        }
        let grace = stopping.map_or(STOP_GRACE, |d| d.saturating_duration_since(Instant::now()));
        if child.wait_until(Instant::now() + grace).is_none() {
            child.kill();
        }
        let ended = if self.stopped() {
            Ended::Stopped
        } else if stalled {
            Ended::Stalled
        } else {
            Ended::Failed(Failure::classify(&child.stderr_tail()))
        };
        (ended, recorded)
    }

    /// Files the segment a csv line names (`name,start,end`, seconds since
    /// ffmpeg started). Returns whether it was filed.
    fn segment_closed(&mut self, incoming: &Path, line: &str, anchor: &mut Option<i64>) -> bool {
        let Some((name, start, end)) = parse_list_line(line) else {
            log::warn!(
                "recorder of camera {}: unexpected segment list line",
                self.camera
            );
            return false;
        };
        let reported = now_ms();
        let (start_ms, end_ms) = place(anchor, reported, start, end);
        // The next segment, now being written, starts where this one ends.
        self.shared
            .set_writing(self.camera, self.source.ring, end_ms);
        let path: PathBuf = incoming.join(name);
        if self.source.ring {
            return filing::file_in_ring(&self.shared, self.camera, &path, start_ms, end_ms);
        }
        self.index_pending();
        match filing::file_segment(&self.shared, self.camera, &path, start_ms, end_ms) {
            Ok(Filed::Indexed(_)) => true,
            Ok(Filed::Unindexed(segment)) => {
                self.unindexed.push(segment);
                true
            }
            Ok(Filed::Dropped) => false,
            Err(e) => {
                log::warn!(
                    "recorder of camera {}: cannot file a segment: {e}",
                    self.camera
                );
                false
            }
        }
    }

    fn index_pending(&mut self) {
        let pending = std::mem::take(&mut self.unindexed);
        for segment in pending {
            if let Ok(Filed::Unindexed(segment)) = filing::index(&self.shared, segment) {
                self.unindexed.push(segment);
            }
        }
    }

    /// Files or deletes what a run left in the incoming folder (a ring's
    /// leftovers just go: nobody keeps them).
    fn recover_incoming(&self) {
        let incoming = self.incoming();
        if self.source.ring {
            let _ = std::fs::remove_dir_all(&incoming);
        } else {
            filing::recover_folder(&self.shared, self.camera, &incoming);
        }
    }
}

/// `name,start,end` from ffmpeg's csv segment list.
fn parse_list_line(line: &str) -> Option<(&str, f64, f64)> {
    let mut fields = line.rsplitn(3, ',');
    let end: f64 = fields.next()?.trim().parse().ok()?;
    let start: f64 = fields.next()?.trim().parse().ok()?;
    let name = fields.next()?.trim();
    let plain = !name.is_empty() && !name.contains(['/', '"']) && name != "..";
    (plain && start.is_finite() && end.is_finite() && end >= start).then_some((name, start, end))
}

/// Wall-clock start and end (ms) of a segment ffmpeg reported at
/// `reported_ms` as `start..end` seconds into the run. The first segment
/// fixes the run's anchor (its end is about when it is reported); it moves
/// only when the camera's clock drifts far from ours.
fn place(anchor: &mut Option<i64>, reported_ms: i64, start: f64, end: f64) -> (i64, i64) {
    let (start, end) = (
        (start * 1000.0).round() as i64,
        (end * 1000.0).round() as i64,
    );
    let fresh = reported_ms - end;
    let at = match *anchor {
        Some(at) if (fresh - at).abs() <= MAX_DRIFT_MS => at,
        _ => fresh,
    };
    *anchor = Some(at);
    (at + start, at + end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_lines() {
        assert_eq!(
            parse_list_line("20261122T213614.mp4,10.024453,20.024453"),
            Some(("20261122T213614.mp4", 10.024453, 20.024453))
        );
        for bad in [
            "",
            "x.mp4",
            "x.mp4,1",
            "x.mp4,a,2",
            "../x.mp4,1,2",
            "x.mp4,3,2",
            ",1,2",
        ] {
            assert_eq!(parse_list_line(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn segments_are_placed_on_the_wall_clock() {
        let mut anchor = None;
        // Reported 0.4 s after its end: the anchor is the report minus the end.
        assert_eq!(place(&mut anchor, 100_400, 0.0, 10.0), (90_400, 100_400));
        // The next ones follow on without a gap, whatever the report's delay.
        assert_eq!(place(&mut anchor, 111_200, 10.0, 20.02), (100_400, 110_420));
        assert_eq!(place(&mut anchor, 120_500, 20.02, 30.0), (110_420, 120_400));
        // A camera clock 6 s adrift: a new anchor.
        assert_eq!(place(&mut anchor, 136_500, 30.0, 40.0), (126_500, 136_500));
    }
}

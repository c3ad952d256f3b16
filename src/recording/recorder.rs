//! One camera's recorder: a long-lived ffmpeg copying the main stream (no
//! re-encoding of the video; audio MP4 cannot carry becomes AAC) into 10 s fragmented-MP4 segments, and the thread that
//! supervises it. ffmpeg names each segment it closes on stdout (the
//! segment list as csv), so the folder is never polled. A recorder that
//! exits, or closes no segment for 50 s, is killed and started again after
//! 1 s, doubling to 60 s; the wait starts over once a run records, or when
//! the camera answers again after not answering.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::codecs::{AAC_BITRATE, Audio};
use super::files::{self, INCOMING_PATTERN};
use super::filing::{self, By, Filed};
use super::{Clean, Shared, State};
use crate::cameras::answers::Comeback;
use crate::clock::{self, now_ms};
use crate::media::child::{MALLOC_TRIM, Output};
use crate::media::failure::Failure;
use crate::media::input::Input;
use crate::media::restart::{self, Restartable};
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
/// Segments whose wall-clock end drifts this far from when ffmpeg reported
/// them get a new anchor (the camera's clock runs apart from ours).
const MAX_DRIFT_MS: i64 = 5_000;
/// How much longer than the time between two reports a segment may say it
/// is before its camera's clock is taken to have jumped: a stream may come
/// in a burst (a camera sending what it buffered, catching up after a
/// stall), seconds, never hours.
const BURST_MS: i64 = 5_000;
/// How much longer than its segment holds the time since the previous
/// report may be before the report is taken to have come late: ffmpeg
/// closes the segment of a camera cut off (no more packets, no closed
/// connection) only once its socket timeout has run out.
const LATE_MS: i64 = 2_000;

/// What a recorder records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub url: String,
    /// What becomes of the first audio stream.
    pub audio: Audio,
    /// The video's MP4 tag, where ffmpeg's own plays in fewer players.
    pub video_tag: Option<&'static str>,
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
    /// disk was full), with the stretch they were timed in if the clock
    /// was not set: tried again with each new segment.
    unindexed: Vec<(Segment, Option<usize>)>,
    /// Why the last run ended.
    ended: Ended,
    /// Whether the camera came back while it waits to start again.
    comeback: Comeback,
}

/// Why a run of ffmpeg ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    Stopped,
    ToolMissing,
    /// The recordings folder lost its marker since the last check.
    NotOurFolder,
    FolderUnwritable,
    Stalled,
    Failed(Failure),
}

impl Ended {
    fn message(&self) -> &'static str {
        match self {
            Ended::Stopped => "stopped",
            Ended::ToolMissing => "the recording tool (ffmpeg) is not available on the node",
            Ended::NotOurFolder => {
                "the recordings disk is not mounted (the recordings folder is not this node's)"
            }
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
            ended: Ended::Stopped,
            comeback: Comeback::default(),
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
        let stop = self.stop.clone();
        restart::keep_running(&mut self, &stop);
        self.index_pending();
        // What is left is found by the next reconciliation.
        let left: u64 = self.unindexed.iter().map(|(s, _)| s.bytes).sum();
        self.shared
            .unindexed_bytes
            .fetch_sub(left, Ordering::Relaxed);
        // Gone with its camera, if it was deleted: the cleaner removes the rest.
        let incoming = self.incoming();
        files::remove_if_empty(&incoming);
        files::remove_if_empty(incoming.parent().expect("a camera folder"));
    }

    fn command(&self, incoming: &Path) -> Command {
        let mut command = Command::new(&self.shared.settings.ffmpeg);
        command
            // ffmpeg names files by the local time: make that UTC.
            .env("TZ", "UTC")
            .env(MALLOC_TRIM.0, MALLOC_TRIM.1)
            .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
            .args(Input::args())
            .args(["-map", "0:v:0"]);
        if self.source.audio != Audio::None {
            command.args(["-map", "0:a:0?"]);
        }
        command.args(["-c", "copy"]);
        if self.source.audio == Audio::ToAac {
            command.args(["-c:a", "aac", "-b:a", AAC_BITRATE]);
        }
        if let Some(tag) = self.source.video_tag {
            command.args(["-tag:v", tag]);
        }
        command
            // Hand each fragment to the file as it is made (in 256 KiB
            // writes rather than 1 MiB), so a crash loses less.
            .args(["-flush_packets", "1", "-f", "segment"])
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
        if !self.source.ring && !self.shared.folder_is_ours() {
            return (Ended::NotOurFolder, false);
        }
        let incoming = self.incoming();
        if let Err(e) = std::fs::create_dir_all(&incoming) {
            log::warn!(
                "recorder of camera {}: cannot make {}: {e}",
                self.camera,
                incoming.display()
            );
            let ended = match e.kind() {
                std::io::ErrorKind::StorageFull => Ended::Failed(Failure::NoSpace),
                _ => Ended::FolderUnwritable,
            };
            return (ended, false);
        }
        if !self.source.ring
            && let Err(e) =
                files::note_source(&self.shared.settings.dir, self.camera, &self.source.url)
        {
            log::warn!(
                "recorder of camera {}: cannot note its source: {e}",
                self.camera
            );
        }
        // A place among the children starting, held until this one records,
        // ends, or has had its time.
        let (gate, stop) = (self.shared.gate.clone(), self.stop.clone());
        let Some(place) = gate.enter(&stop) else {
            return (Ended::Stopped, false);
        };
        let mut place = Some(place);
        let input = Input::rtsp(&self.source.url, SOCKET_TIMEOUT);
        let mut child = match input.spawn(&mut self.command(&incoming)) {
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
        let mut placing = Placing {
            anchor: None,
            since_ms: now_ms(),
            origin: Instant::now(),
            since_mono_ms: 0,
        };
        let mut recorded = false;
        let mut last_progress = Instant::now();
        let mut stopping: Option<Instant> = None;
        let mut stalled = false;
        loop {
            match child.next_line(TICK) {
                Output::Line(line) => {
                    if self.segment_closed(&incoming, &line, &mut placing) {
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
            if recorded || place.as_ref().is_some_and(|p| p.expired()) {
                place = None;
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
        child.stop(grace);
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
    fn segment_closed(&mut self, incoming: &Path, line: &str, placing: &mut Placing) -> bool {
        let Some((name, start, end)) = parse_list_line(line) else {
            log::warn!(
                "recorder of camera {}: unexpected segment list line",
                self.camera
            );
            return false;
        };
        let path: PathBuf = incoming.join(name);
        let reading = clock::read();
        let reported = reading.ms;
        let content_ms = filing::content_ms(&path);
        let mono_ms = placing.origin.elapsed().as_millis() as i64;
        let (start_ms, end_ms) = placing.place(reported, mono_ms, (start, end), content_ms);
        // The next segment, now being written, starts where this one ends.
        self.shared
            .set_writing(self.camera, self.source.ring, end_ms);
        if self.source.ring {
            return filing::file_in_ring(&self.shared, self.camera, &path, start_ms, end_ms);
        }
        self.index_pending();
        let filed = filing::file_segment(
            &self.shared,
            self.camera,
            &path,
            (start_ms, end_ms),
            By::Recorder,
            reading.unset,
        );
        match filed {
            Ok(Filed::Indexed) => true,
            Ok(Filed::Unindexed(segment)) => {
                self.shared
                    .unindexed_bytes
                    .fetch_add(segment.bytes, Ordering::Relaxed);
                self.unindexed.push((segment, reading.unset));
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

    /// Indexes the segments whose rows could not be written, oldest first;
    /// while the oldest still cannot be, the others wait (the database
    /// cannot be written: trying them all at each segment would only cost).
    fn index_pending(&mut self) {
        while let Some((segment, untimed)) = self.unindexed.first().cloned() {
            let bytes = segment.bytes;
            let indexed = filing::index(&self.shared, segment, By::Recorder, untimed);
            if let Ok(Filed::Unindexed(_)) = indexed {
                break;
            }
            self.unindexed.remove(0);
            self.shared
                .unindexed_bytes
                .fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// Files or deletes what a run left in the incoming folder (a ring's
    /// leftovers just go: nobody keeps them).
    fn recover_incoming(&self) {
        let incoming = self.incoming();
        if self.source.ring {
            let _ = std::fs::remove_dir_all(&incoming);
        } else {
            filing::recover_folder(&self.shared, self.camera, &incoming, By::Recorder);
        }
    }
}

impl Restartable for Recorder {
    fn run_once(&mut self) -> bool {
        self.set_state(State::Starting, None);
        // What an earlier run of the node left (a crash, a power cut).
        self.recover_incoming();
        let (ended, recorded) = self.record();
        self.shared.forget_writing(self.camera);
        // What the run left unfinished: the segment a kill cut short, or
        // a file begun just before a stop (deleted with a deleted camera).
        self.recover_incoming();
        if ended == Ended::Failed(Failure::NoSpace) {
            self.shared.clean(Clean::Urgent);
        }
        self.ended = ended;
        recorded
    }

    fn retrying(&mut self, wait: Duration) {
        let seconds = wait.as_secs_f64().round().max(1.0);
        let message = format!("{}; trying again in {seconds} s", self.ended.message());
        self.set_state(State::Retrying, Some(message));
        // A camera that did not answer the run may answer before the
        // wait's first question.
        self.comeback.wait(matches!(
            self.ended,
            Ended::Failed(Failure::Refused | Failure::TimedOut | Failure::Unreachable)
        ));
    }

    /// A camera back from a reboot (or a cut cable) records again as soon
    /// as it answers, not at the end of a wait of up to a minute.
    fn back(&mut self) -> bool {
        self.comeback.back(&self.source.url)
    }
}

/// `name,start,end` from ffmpeg's csv segment list.
fn parse_list_line(line: &str) -> Option<(&str, f64, f64)> {
    let mut fields = line.rsplitn(3, ',');
    let end: f64 = fields.next()?.trim().parse().ok()?;
    let start: f64 = fields.next()?.trim().parse().ok()?;
    let name = fields.next()?.trim();
    let plain = !name.is_empty() && !name.contains(['/', '"']) && name != "..";
    // An end before the start (a camera clock set back) is still a segment:
    // its file tells its length.
    (plain && start.is_finite() && end.is_finite()).then_some((name, start, end))
}

/// How a run's segments are placed on the wall clock.
struct Placing {
    /// The wall-clock time of the run's second 0, fixed by its first segment.
    anchor: Option<i64>,
    /// When the previous segment was reported (or the run started).
    since_ms: i64,
    /// The run's start on the monotonic clock, and the previous report's
    /// ms since: a report's lateness is told by it, as a step of the wall
    /// clock says nothing of it.
    origin: Instant,
    since_mono_ms: i64,
}

impl Placing {
    /// Wall-clock start and end (ms) of a segment ffmpeg reported at
    /// `reported_ms` (`mono_ms` on the run's monotonic clock) as `csv` (start and end, seconds into the run), whose
    /// file holds `content_ms` of video (None if its boxes could not be
    /// read). Its length is what the file holds, unless that is more than
    /// the time since the previous report by over [`BURST_MS`]: then the
    /// camera's clock jumped, and the time since is its length (a segment
    /// cannot be hours long); it ends where ffmpeg's times say. The first
    /// segment fixes the run's anchor (its end is about when it is
    /// reported); the anchor moves only when a segment would end
    /// [`MAX_DRIFT_MS`] from its report. A report that comes over
    /// [`LATE_MS`] after the previous one plus the segment's length, by the
    /// monotonic clock, came late (its camera was cut off): its footage
    /// ended that length after the previous report, which is what the
    /// anchor is checked against.
    fn place(
        &mut self,
        reported_ms: i64,
        mono_ms: i64,
        csv: (f64, f64),
        content_ms: Option<i64>,
    ) -> (i64, i64) {
        let ms = |s: f64| (s * 1000.0).round() as i64;
        let (csv_start, csv_end) = (ms(csv.0), ms(csv.1));
        let claimed = content_ms.unwrap_or(csv_end.saturating_sub(csv_start));
        // Reported before the previous one: the node's clock was put back
        // (a synchronised clock believed behind a wrong one), and the time
        // since says nothing of the segment's length.
        let elapsed = reported_ms.saturating_sub(self.since_ms);
        let length = if elapsed >= 0 && claimed > elapsed.saturating_add(BURST_MS) {
            elapsed
        } else {
            claimed.max(0)
        };
        // ffmpeg reports a segment as it ends: its end is about now, unless
        // the report came late; then the footage ended its length after the
        // previous report (the run's first segment has no previous report).
        let late = (mono_ms - self.since_mono_ms).saturating_sub(length);
        let ended_ms = if self.anchor.is_some() && late > LATE_MS {
            self.since_ms.saturating_add(length)
        } else {
            reported_ms
        };
        self.since_ms = reported_ms;
        self.since_mono_ms = mono_ms;
        let fresh = ended_ms.saturating_sub(csv_end);
        let at = match self.anchor {
            Some(at) if fresh.abs_diff(at) <= MAX_DRIFT_MS as u64 => at,
            _ => fresh,
        };
        self.anchor = Some(at);
        // The video ends where ffmpeg's times say (its start may be later
        // than theirs: a run's first segment starts at its first key frame).
        let end = at.saturating_add(csv_end);
        (end.saturating_sub(length), end)
    }
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
        assert_eq!(parse_list_line("x.mp4,3,2"), Some(("x.mp4", 3.0, 2.0)));
        for bad in [
            "",
            "x.mp4",
            "x.mp4,1",
            "x.mp4,a,2",
            "../x.mp4,1,2",
            ",1,2",
            "x.mp4,1,inf",
        ] {
            assert_eq!(parse_list_line(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn segments_are_placed_on_the_wall_clock() {
        let mut placing = Placing {
            anchor: None,
            since_ms: 90_000,
            origin: Instant::now(),
            since_mono_ms: 90_000,
        };
        // (reported, csv start, csv end, file's video) -> (start, end)
        let table = [
            // Reported 0.4 s after its end: the anchor is the report minus the end.
            (100_400, 0.0, 10.0, None, (90_400, 100_400)),
            // The next ones follow on without a gap, whatever the report's delay.
            (111_200, 10.0, 20.02, Some(10_020), (100_400, 110_420)),
            (120_500, 20.02, 30.0, Some(9_980), (110_420, 120_400)),
            // Reported 6 s late (ffmpeg waited out its socket timeout on a
            // camera cut off): right after the one before, not at the report.
            (136_500, 30.0, 40.0, Some(10_000), (120_400, 130_400)),
            // A camera clock 6 s adrift: a new anchor. The file says how
            // long it is, ending where ffmpeg's times say (a run's first key
            // frame may come after its second 0).
            (146_500, 40.0, 50.0, Some(9_000), (137_500, 146_500)),
            // The camera's clock jumps 3 hours ahead within a segment: its
            // times and its file say 3 hours, the wall clock 10 s.
            (
                156_500,
                50.0,
                10_850.0,
                Some(10_810_000),
                (146_500, 156_500),
            ),
            // After it: placed by the wall clock again, not hours away.
            (
                166_500,
                10_850.0,
                10_860.0,
                Some(10_000),
                (156_500, 166_500),
            ),
            // The clock set back: an end before the start; the file's length.
            (176_500, 10_860.0, 5.0, Some(10_000), (166_500, 176_500)),
            // Unreadable boxes and nonsense times: no negative length.
            (186_500, 20.0, 10.0, None, (181_500, 181_500)),
            // A burst: 14 s of video in the 10 s since the last report (the
            // camera caught up after a stall) is footage, not a jump.
            (196_500, 30.0, 44.0, Some(14_000), (182_500, 196_500)),
            // The node's clock put back two days: the file's length, not
            // none (a segment of no length would be dropped).
            (
                196_500 - 172_800_000 + 10_000,
                44.0,
                54.0,
                Some(10_000),
                (196_500 - 172_800_000, 196_500 - 172_800_000 + 10_000),
            ),
        ];
        // The monotonic clock runs with the wall clock but for its last
        // step: back two days.
        let back = |reported: i64| {
            if reported < 0 {
                reported + 172_800_000
            } else {
                reported
            }
        };
        for (reported, start, end, content, want) in table {
            assert_eq!(
                placing.place(reported, back(reported), (start, end), content),
                want,
                "{reported} {start} {end} {content:?}"
            );
        }
        // The wall clock set a day ahead within a segment (NTP sets a clock
        // that was not): not a late report; placed at the new time.
        let ahead = 196_500 - 172_800_000 + 20_000 + 86_400_000;
        assert_eq!(
            placing.place(ahead, 216_500, (54.0, 64.0), Some(10_000)),
            (ahead - 10_000, ahead)
        );
    }
}

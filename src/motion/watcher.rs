//! One camera's motion watcher: an ffmpeg decoding its sub stream (the
//! main one when it has none) to frames on stdout, 5 a second: in colour
//! and at most 640 pixels wide for a camera that classifies, grey and 160
//! wide for one that does not (`frame.rs`); the detector and the episodes
//! turn them into events. While an event is on, a camera that classifies
//! sends crops of what moved to the classifier, and the event ends as the
//! kind it saw (`classify::tally`). An event is stored when it starts,
//! listed as in progress, its latest moment and kind written every few
//! seconds, and finished when it ends. Supervised like a recorder:
//! restarted after 1 s, doubling to 60 s, when it exits or sends no frame
//! for 30 s; stopped within 2 s; killed with the node.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::Shared;
use super::detector::{BusyCells, Detector, Difference, Motion, Params};
use super::episodes::{Change, Episode, Episodes, Moment};
use super::frame::{self, Format};
use super::frame_clock::FrameClock;
use super::key_frames::KeyFrames;
use super::loiter::Loiter;
use super::pacer::{Pace, Pacer};
use super::standing::{self, Standing, Stood};
use super::still::{self, Left, LeftBehind};
use super::suggestion;
use super::underway::Underway;
use super::zones::Entered;
use crate::cameras::answers::Comeback;
use crate::cameras::camera::{MotionSource, Zone};
use crate::channel;
use crate::classify::crop::{self, Yuv420};
use crate::classify::objects::{MAX_LISTED, Objects};
use crate::classify::protocol::Object;
use crate::classify::regions::{self, Rotation, Square};
use crate::classify::tally::{self, Sighting, Tally};
use crate::classify::{Classifier, INPUT_SIDE, Reply};
use crate::clips::Job;
use crate::clock::now_ms;
use crate::event::CLIP_MARGIN_MS;
use crate::event::{Event, Kind, SeenObject};
use crate::media::area::Area;
use crate::media::child::{Child, Filled, MALLOC_TRIM, Output};
use crate::media::polygon::{self, Polygon};
use crate::media::restart::{self, Restartable};
use crate::notices::Notice;

/// The decoder passes on frames at least this far apart by the stream's
/// own clock (its `select` filter: at most 5 a second at full rate, each
/// key frame at key-frame pace): a macro, for the filters' literals.
macro_rules! select {
    () => {
        "select='isnan(prev_selected_t)+gte(t-prev_selected_t\\,0.19)'"
    };
}
/// A decoder that sends no frame for this long is stuck.
const WATCHDOG: Duration = Duration::from_secs(30);
/// How often the thread looks at its stop flag while waiting.
const TICK: Duration = Duration::from_millis(200);
/// How often the areas learnt as always moving are kept, when they changed.
const KEEP_BUSY_EVERY_MS: i64 = 60_000;
const STOP_GRACE: Duration = Duration::from_millis(1500);
/// The share of the picture an event's score counts for a frame in which
/// only the camera's own detection saw motion.
const CAMERA_SAYS_SHARE: f32 = 0.001;

/// What a watcher watches.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub url: String,
    pub params: Params,
    /// The kinds its events may become; None: it does not classify.
    pub kinds: Option<Vec<Kind>>,
    /// Left out of detection.
    pub masks: Vec<Polygon>,
    /// With any, events are made only where what moved entered one of them.
    pub zones: Vec<Zone>,
    /// The areas learnt as always moving are left out.
    pub auto_mask: bool,
    /// Every frame is decoded all the time (the camera's `fullRate`).
    pub full_rate: bool,
}

/// The classification of the event under way.
struct Classifying {
    tally: Tally,
    /// What it saw, each thing once.
    objects: Objects,
    /// How its moving regions share its crops.
    rotation: Rotation,
    /// Crops sent and not answered yet: where each was taken, and when
    /// (wall clock).
    waiting: Vec<(Reply, Square, i64)>,
    /// Where the classifier last saw the kind it decided on.
    things: Vec<Area>,
    /// The crops of what stands still, when asked who is there.
    still: Option<StillCheck>,
}

/// Who or what stands still: the crops of the parts that differ from the
/// scene before the event, and what was seen in those answered.
struct StillCheck {
    /// When the motion stopped (wall clock, ms).
    stopped_ms: i64,
    /// The detail of each thing's place (`Detector::detail`), by its box.
    details: Vec<(Area, u64)>,
    waiting: Vec<(Reply, Square, Difference)>,
    answers: Vec<(Difference, Vec<Sighting>)>,
}

pub struct Watcher {
    shared: Arc<Shared>,
    camera: Uuid,
    spec: Spec,
    stop: Arc<AtomicBool>,
    episodes: Episodes,
    /// The ring's pin of the event under way.
    pin: Option<u64>,
    /// The event under way.
    underway: Option<Underway>,
    classifying: Option<Classifying>,
    /// The origin of the monotonic clock that times the episodes.
    origin: Instant,
    /// The busy cells as last kept, and when they were last looked at
    /// (monotonic ms).
    busy_kept: (Option<BusyCells>, i64),
    /// Things left behind by the last event, until they are packages.
    left: LeftBehind,
    /// What stands in the picture, to name its going.
    standing: Standing,
    /// Whether the camera came back while it waits to start again.
    comeback: Comeback,
    /// Who lingers in a zone with `loiterSeconds`, in the event under way.
    loiter: Loiter,
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
            underway: None,
            classifying: None,
            origin: Instant::now(),
            busy_kept: (None, 0),
            left: LeftBehind::default(),
            standing: Standing::default(),
            comeback: Comeback::default(),
            loiter: Loiter::default(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub fn run(mut self) {
        let stop = self.stop.clone();
        restart::keep_running(&mut self, &stop);
    }

    /// The decoder: the frames the pacer passes on (fragmented MP4 on
    /// stdin) decoded to pictures on stdout.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.shared.settings.ffmpeg);
        command
            .env(MALLOC_TRIM.0, MALLOC_TRIM.1)
            .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
            // One decoding thread (an input option: before -i): 5 small
            // frames a second need no frame threads, each of which holds
            // frames of its own. Measured: 19.0 -> 13.7 MiB private, same CPU.
            .args(["-threads", "1"])
            // The init part comes first and whole: nothing to probe, and
            // each frame is decoded as it comes, not after the next.
            .args(["-probesize", "32", "-analyzeduration", "0"])
            .args(["-f", "mp4", "-i", "pipe:0"])
            // Nor filter threads: with them the scaler starts 4 slice threads.
            .args(["-filter_threads", "1"])
            // A frame as it comes, however long since the last: key frames
            // are seconds apart, and no frame is to be repeated.
            .args(["-fps_mode", "passthrough"])
            .args(match self.format() {
                // Up to 640 wide for the classifier's crops; even sizes, as
                // pgmyuv needs; the source's own when it is small.
                Format::Yuv420 => &[
                    "-vf",
                    concat!(select!(), ",scale='trunc(min(640,iw)/2)*2':-2"),
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
                    concat!(
                        select!(),
                        ",scale='trunc(min(160,iw)/2)*2':-2:flags=area,\
                         format=yuv420p,extractplanes=y"
                    ),
                    "-c:v",
                    "pgm",
                ][..],
            })
            .args(["-f", "image2pipe", "pipe:1"]);
        command
    }

    /// A detector of pictures `width` × `height` that knows what was learnt
    /// before as always moving.
    fn new_detector(&mut self, width: usize, height: usize) -> Detector {
        let mut detector = Detector::new(width, height, self.spec.params);
        detector.mask(&polygon::rasterise(&self.spec.masks, width, height));
        detector.leave_out_busy(self.spec.auto_mask);
        let kept = self.shared.db.run(|s| s.busy_cells(self.camera));
        if let Some(cells) = kept.ok().flatten().and_then(|b| BusyCells::from_bytes(&b)) {
            detector.learnt(&cells);
        }
        self.busy_kept.0 = learnt(&detector);
        self.suggest(self.busy_kept.0.as_ref());
        detector
    }

    /// Shows what was learnt as always moving as masks to take.
    fn suggest(&self, busy: Option<&BusyCells>) {
        let masks = busy.map(suggestion::masks).unwrap_or_default();
        self.shared.set_learnt(self.camera, masks);
    }

    /// Keeps the areas learnt as always moving, when they changed.
    fn keep_busy(&mut self, detector: &Detector, mono_ms: i64) {
        self.busy_kept.1 = mono_ms;
        let busy = learnt(detector);
        if busy == self.busy_kept.0 {
            return;
        }
        let bytes = busy.as_ref().map(BusyCells::to_bytes);
        match self
            .shared
            .db
            .run(|s| s.set_busy_cells(self.camera, bytes.as_deref()))
        {
            Ok(()) => {
                log::info!(
                    "camera {}: {} cells learnt as always moving, left out of detection",
                    self.camera,
                    busy.as_ref().map_or(0, BusyCells::count)
                );
                self.suggest(busy.as_ref());
                self.busy_kept.0 = busy;
            }
            Err(e) => log::error!("camera {}: cannot keep what it learnt: {e}", self.camera),
        }
    }

    /// Colour frames for a camera that classifies, grey ones for the detector alone.
    fn format(&self) -> Format {
        match self.spec.kinds {
            Some(_) => Format::Yuv420,
            None => Format::Grey,
        }
    }

    /// One run of the receiver, the pacer and the decoder; returns whether
    /// any frame came.
    fn watch(&mut self) -> bool {
        // A place among the children starting, held until the first frame,
        // the end, or its time.
        let (gate, stop) = (self.shared.settings.gate.clone(), self.stop.clone());
        let Some(place) = gate.enter(&stop) else {
            return false;
        };
        let mut place = Some(place);
        let ffmpeg = &self.shared.settings.ffmpeg;
        let (to_decoder, for_decoder) = match std::io::pipe() {
            Ok((reader, writer)) => (writer, reader),
            Err(e) => {
                log::error!("camera {}: cannot make a pipe: {e}", self.camera);
                return false;
            }
        };
        let mut pacer = match Pacer::start(ffmpeg.clone(), self.spec.url.clone(), to_decoder) {
            Ok(pacer) => pacer,
            Err(e) => {
                log::error!("camera {}: cannot start its pacer: {e}", self.camera);
                return false;
            }
        };
        // The decoder starts once the stream's init part waits in its pipe:
        // a camera that is not there yet costs one ffmpeg, not two.
        let started = Instant::now();
        while !pacer.pace.streaming() {
            if self.stopped() || pacer.ended() || started.elapsed() >= WATCHDOG {
                pacer.stop();
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut child = match Child::spawn_reading(&mut self.command(), for_decoder) {
            Ok(child) => child,
            Err(e) => {
                log::error!("cannot run {}: {e}", ffmpeg.display());
                pacer.stop();
                return false;
            }
        };
        let format = self.format();
        let mut detector: Option<Detector> = None;
        let mut frame = Vec::new();
        let mut small = Vec::new();
        let mut last_frame = Instant::now();
        let mut clock = FrameClock::default();
        let mut saw_frames = false;
        while !self.stopped() && last_frame.elapsed() < WATCHDOG {
            if saw_frames || place.as_ref().is_some_and(|p| p.expired()) {
                place = None;
            }
            let deadline = last_frame + WATCHDOG;
            let header = read_header(&mut child, format, &self.stop, deadline, || {
                self.pace(&pacer.pace)
            });
            let Some((width, height)) = header else {
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
            let now = Moment {
                mono_ms: self.origin.elapsed().as_millis() as i64,
                wall_ms: now_ms(),
            };
            // A picture whose time is not known (none should be) is taken
            // when it is read.
            let at = match pacer.pace.next_picture() {
                Some(stream_ms) => clock.stamp(stream_ms, now),
                None => now,
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
                _ => detector.insert(self.new_detector(w, h)),
            };
            let image = (format == Format::Yuv420).then_some(Yuv420 {
                width,
                height,
                data: &frame,
            });
            self.look(detector, luma, image.as_ref(), at);
            if at.mono_ms - self.busy_kept.1 >= KEEP_BUSY_EVERY_MS {
                self.keep_busy(detector, at.mono_ms);
            }
            self.pace(&pacer.pace);
        }
        child.stop(STOP_GRACE);
        pacer.stop();
        self.shared.set_key_frames(self.camera, None);
        if let Some(detector) = &detector {
            self.keep_busy(detector, self.origin.elapsed().as_millis() as i64);
        }
        saw_frames
    }

    /// Asks the pacer for every frame or key frames only, and shows the pace.
    fn pace(&self, pace: &Pace) {
        let interval = pace.key_interval();
        let full = self.spec.full_rate
            || !KeyFrames::key_pace_suits(interval)
            || self.episodes.wants_full_rate()
            || self.shared.frames.wanted(self.camera)
            || self
                .shared
                .camera_says
                .says_motion(self.camera, Instant::now());
        pace.set_full(full);
        self.shared
            .set_key_frames(self.camera, Some(KeyFrames { interval, full }));
    }

    /// Looks at a frame: the detector's picture of it (`luma`), and the
    /// colour frame for a camera that classifies.
    fn look(&mut self, detector: &mut Detector, luma: &[u8], image: Option<&Yuv420>, at: Moment) {
        let motion = detector.frame(luma, Duration::from_millis(at.mono_ms as u64));
        let heard = self
            .shared
            .camera_says
            .says_motion(self.camera, Instant::now());
        // Where the camera's own detection is the source, the node's counts
        // only while the camera says motion or its event is on.
        let camera_only = self.shared.camera_events.source(self.camera) == MotionSource::Camera;
        let own_counts = !camera_only || heard || self.episodes.current().is_some();
        if motion.share > 0.0 {
            self.shared
                .camera_says
                .node_saw(self.camera, Instant::now());
        }
        // What moves where someone or something was seen is not learnt as
        // the scene (a date stamp moving elsewhere meanwhile still is).
        if let Some(classifying) = &self.classifying {
            let things: Vec<Area> = motion
                .boxes
                .iter()
                .filter(|b| classifying.things.iter().any(|t| t.overlap(b) > 0.0))
                .copied()
                .collect();
            detector.known(&things);
        }
        // Only the classifier can tell whether what stands still is someone.
        let present = image.is_some() && motion.present;
        // The camera's own word is motion where the node's detector saw
        // none (a change under its threshold), but not on a camera with
        // masks or zones: where it saw it, the node cannot tell.
        let camera_says = heard && self.spec.masks.is_empty() && self.spec.zones.is_empty();
        let (share, changing) = match (camera_says, own_counts) {
            (true, _) => (motion.share.max(CAMERA_SAYS_SHARE), true),
            (false, true) => (motion.share, motion.changing),
            (false, false) => (0.0, false),
        };
        if motion.reseeded {
            self.standing.clear();
        }
        for change in self.episodes.frame(at, share, changing, present) {
            match change {
                Change::Started { at_ms } => {
                    self.left.clear();
                    detector.hold_reference();
                    self.started(at_ms, at);
                }
                Change::StillThere => {
                    if let Some(image) = image {
                        self.ask_who(detector, image);
                    }
                }
                Change::Ended(episode) => {
                    let gone = self.standing.ended(|area| detector.detail(area));
                    for s in &gone {
                        log::info!(
                            "camera {}: the motion was the going of the {} that stood at {:?}",
                            self.camera,
                            s.kind.name(),
                            s.area
                        );
                    }
                    self.ended(episode, &gone);
                }
            }
        }
        // What differs from the background, moving or not yet taken in (a
        // car that drove off in the seconds between two key frames leaves
        // its place so), may be something standing that leaves.
        if self.episodes.current().is_some() {
            self.standing.moved(&motion.boxes);
        }
        self.progress(&motion.boxes, at);
        if let Some(image) = image {
            // What the camera saw, with no region of the node's: the whole
            // picture is looked at.
            let whole = [Area {
                left: 0.0,
                top: 0.0,
                right: 1.0,
                bottom: 1.0,
            }];
            let boxes = match camera_says && motion.boxes.is_empty() {
                true => &whole[..],
                false => &motion.boxes,
            };
            self.classify(image, boxes, at);
        }
        self.watch_left(detector, &motion, at);
    }

    /// Things left behind by the last event: forgotten when touched or
    /// when the light changes, packages once they have stayed. The scene
    /// before the event is held while any is watched.
    fn watch_left(&mut self, detector: &mut Detector, motion: &Motion, at: Moment) {
        if motion.reseeded {
            self.left.clear();
        }
        self.left.moved(&motion.moving);
        if self.left.due(at.mono_ms) {
            let (w, h) = detector.size();
            let things = still::things(&detector.differences(), aspect(w, h));
            for left in self.left.confirm(&things, at.mono_ms) {
                self.package(left, detector.detail(&left.area), at);
            }
        }
        if self.episodes.current().is_none() && !self.left.watching() {
            detector.release_reference();
        }
    }

    /// Nothing moves, but the picture differs from the scene before the
    /// event: crops of the (at most three largest) things that differ go
    /// to the classifier, to tell who or what stands still.
    fn ask_who(&mut self, detector: &mut Detector, image: &Yuv420) {
        let stopped_ms = self.episodes.current().map_or(0, |e| e.ended_ms);
        let Some(classifying) = &mut self.classifying else {
            self.episodes.no_one_there();
            return;
        };
        let things = still::things(&detector.differences(), aspect(image.width, image.height));
        let details = things
            .iter()
            .map(|t| (t.area, detector.detail(&t.area)))
            .collect();
        let mut largest = things;
        // The three largest, by picking (sorting would cost the board's binary more).
        while largest.len() > 3
            && let Some(i) =
                (0..largest.len()).min_by(|&a, &b| largest[a].share.total_cmp(&largest[b].share))
        {
            largest.swap_remove(i);
        }
        let waiting: Vec<_> = largest
            .into_iter()
            .filter_map(|difference| {
                let (reply, square) = ask_about(&self.shared.classifier, image, difference.area)?;
                Some((reply, square, difference))
            })
            .collect();
        if waiting.is_empty() {
            self.episodes.no_one_there();
            return;
        }
        classifying.still = Some(StillCheck {
            stopped_ms,
            details,
            waiting,
            answers: Vec::new(),
        });
    }

    /// Takes the answers on what stands still; once all came, judges them:
    /// someone there keeps the event on, things left are watched.
    fn answer_who(&mut self, image: &Yuv420, at: Moment) {
        let Some(check) = self.classifying.as_mut().and_then(|c| c.still.as_mut()) else {
            return;
        };
        let answers = &mut check.answers;
        check
            .waiting
            .retain(|(reply, square, difference)| match reply.try_recv() {
                Ok(objects) => {
                    let seen = sightings(&objects, *square, image, 0);
                    answers.push((*difference, seen));
                    false
                }
                Err(channel::TryRecvError::Empty) => true,
                // The classifier failed or stopped: that crop tells nothing.
                Err(channel::TryRecvError::Disconnected) => false,
            });
        if !check.waiting.is_empty() {
            return;
        }
        let verdict = still::judge(&check.answers, check.stopped_ms);
        let details = std::mem::take(&mut check.details);
        if let Some(c) = self.classifying.as_mut() {
            c.still = None;
        }
        let wanted = |s: &&Sighting| {
            self.spec
                .kinds
                .as_ref()
                .is_some_and(|k| k.contains(&s.kind))
        };
        let stood: Vec<Stood> = verdict
            .stood
            .iter()
            .filter(wanted)
            .map(|s| Stood {
                kind: s.kind,
                score: s.score,
                area: s.area,
                since_ms: s.at_ms,
                detail: details
                    .iter()
                    .find(|(a, _)| *a == s.area)
                    .map_or(0, |d| d.1),
            })
            .collect();
        for s in &stood {
            log::info!(
                "camera {}: a {} stands still in the motion, at {:?}",
                self.camera,
                s.kind.name(),
                s.area
            );
        }
        self.standing.stand(&stood);
        if verdict.someone {
            self.episodes.someone_there(at);
            return;
        }
        self.episodes.no_one_there();
        let wants_packages = self
            .spec
            .kinds
            .as_ref()
            .is_some_and(|k| k.contains(&Kind::Package));
        if wants_packages {
            self.left.watch(&verdict.left, at.mono_ms);
        }
    }

    /// A thing left that stayed: an event of its own, from when it was
    /// left to now, its thumbnail now with the thing marked; on a camera
    /// with zones, only where it was left in a zone meant for packages;
    /// then known to stand there (`detail`: its place's), to name its going.
    fn package(&mut self, left: Left, detail: u64, at: Moment) {
        let mut entered = Entered::new(&self.spec.zones);
        entered.saw(&self.spec.zones, &[left.area]);
        let Some(zones) = entered.names_for(&self.spec.zones, Kind::Package) else {
            return;
        };
        let event = Event {
            id: crate::id::new_id(),
            camera_id: self.camera,
            kind: Kind::Package.name().to_owned(),
            score: three_decimals(left.score),
            started_at_ms: left.left_ms,
            ended_at_ms: at.wall_ms,
            clip_status: "local".to_owned(),
            clip_path: None,
            thumbnail_path: None,
            zones,
            in_progress: false,
            reviewed: false,
            keep: false,
            objects: vec![SeenObject {
                kind: Kind::Package,
                score: left.score,
                area: left.area,
                first_seen_ms: left.left_ms,
                last_seen_ms: at.wall_ms,
            }],
            loitering: false,
        };
        let pin = self
            .shared
            .recordings
            .pin(self.camera, left.left_ms - CLIP_MARGIN_MS);
        match self.shared.clips.add_event(&event) {
            Ok(true) => {
                self.standing.stand(&[Stood {
                    kind: Kind::Package,
                    score: left.score,
                    area: left.area,
                    since_ms: left.left_ms,
                    detail,
                }]);
                log::info!(
                    "camera {}: package event {} (left {} ms ago, score {})",
                    self.camera,
                    event.id,
                    at.wall_ms - left.left_ms,
                    event.score
                );
                self.shared.clips.request(Job {
                    event: event.id,
                    camera: self.camera,
                    started_ms: left.left_ms,
                    ended_ms: at.wall_ms,
                    peak_ms: at.wall_ms,
                    mark: Some(left.area),
                    pin: Some(pin),
                });
            }
            _ => self.shared.recordings.unpin(pin),
        }
    }

    /// While an event is on: takes the answers that came, and sends a crop
    /// of what moves in `image` when one is due.
    fn classify(&mut self, image: &Yuv420, boxes: &[Area], at: Moment) {
        self.answer_who(image, at);
        let camera = self.camera;
        let Some(classifying) = &mut self.classifying else {
            return;
        };
        let mut seen = Vec::new();
        classifying
            .waiting
            .retain(|(reply, square, at_ms)| match reply.try_recv() {
                Ok(objects) => {
                    seen.extend(sightings(&objects, *square, image, *at_ms));
                    false
                }
                Err(channel::TryRecvError::Empty) => true,
                // The classifier failed or stopped: that crop counts for nothing.
                Err(channel::TryRecvError::Disconnected) => false,
            });
        let kind = classifying.tally.answer(&seen);
        classifying.objects.saw(&seen);
        if let Some(decided) = classifying.tally.decided() {
            let things: Vec<Area> = seen
                .iter()
                .filter(|s| s.kind == decided.kind)
                .map(|s| s.area)
                .collect();
            if !things.is_empty() {
                classifying.things = things;
            }
        }
        if let Some(underway) = &mut self.underway {
            let objects: Vec<Area> = seen.iter().map(|s| s.area).collect();
            underway.saw(&self.spec.zones, &objects);
            if let Some(kind) = kind
                && underway.made()
            {
                log::info!("camera {camera}: the motion is a {}", kind.name());
                self.shared.notices.send(Notice::KindSeen {
                    camera,
                    event: underway.id,
                    kind,
                    zones: underway.zones_for(&self.spec.zones, kind),
                });
            }
        }
        self.lingers(&seen, image, at);
        let Some(classifying) = &mut self.classifying else {
            return;
        };
        // Each moving region, not their union; one crop when due, of the
        // region whose turn it is.
        if !classifying.tally.crop_due(at.mono_ms, true) {
            return;
        }
        let regions = regions::regions(boxes, image.width, image.height, INPUT_SIDE);
        let Some((turn, new)) = classifying.rotation.pick(&regions, at.mono_ms) else {
            return;
        };
        if !classifying.tally.crop_due(at.mono_ms, new) {
            return;
        }
        let square = regions[turn].square;
        let rgb = crop::rgb_crop(image, square, INPUT_SIDE);
        if let Some(reply) = self.shared.classifier.submit(rgb) {
            classifying.tally.cropped(at.mono_ms);
            classifying.rotation.cropped(square, at.mono_ms);
            classifying.waiting.push((reply, square, at.wall_ms));
        }
    }

    /// Who lingers: the sightings that came (`seen`) told to the loiter
    /// rule; an event that became loitering is written at once and told;
    /// and where someone stays in a zone that loiters, a crop of them
    /// every few seconds, beyond the tally's (which stops once it is sure).
    fn lingers(&mut self, seen: &[Sighting], image: &Yuv420, at: Moment) {
        if self.loiter.saw(&self.spec.zones, seen)
            && let Some(underway) = &mut self.underway
        {
            underway.write_soon();
            self.progress(&[], at);
        }
        if let Some(underway) = &self.underway
            && underway.made()
            && let Some(zones) = self.loiter.news(&self.spec.zones)
        {
            log::info!("camera {}: loitering in {}", self.camera, zones.join(", "));
            self.shared.notices.send(Notice::Loitering {
                camera: self.camera,
                event: underway.id,
                zones,
            });
        }
        let Some(classifying) = &mut self.classifying else {
            return;
        };
        let Some(area) = self.loiter.look(at.wall_ms) else {
            return;
        };
        if let Some((reply, square)) = ask_about(&self.shared.classifier, image, area) {
            classifying.waiting.push((reply, square, at.wall_ms));
        }
    }

    /// An event starts: it is made (listed in progress) when it qualifies.
    fn started(&mut self, at_ms: i64, at: Moment) {
        log::info!("camera {}: motion", self.camera);
        self.loiter = Loiter::new(&self.spec.zones);
        self.classifying = self.spec.kinds.as_deref().map(|kinds| Classifying {
            tally: Tally::new(kinds),
            objects: Objects::default(),
            rotation: Rotation::default(),
            waiting: Vec::new(),
            things: Vec::new(),
            still: None,
        });
        // A camera that only keeps a ring must keep the event's segments.
        self.pin = Some(
            self.shared
                .recordings
                .pin(self.camera, at_ms - CLIP_MARGIN_MS),
        );
        self.underway = Some(Underway::new(
            self.camera,
            &self.spec.zones,
            self.classifying.is_some(),
        ));
        self.progress(&[], at);
    }

    /// While an event goes on: the zones what moved (in `boxes`) entered,
    /// and the event made and written as it stands.
    fn progress(&mut self, boxes: &[Area], at: Moment) {
        let Some(episode) = self.episodes.current() else {
            return;
        };
        let Some(mut underway) = self.underway.take() else {
            return;
        };
        underway.saw(&self.spec.zones, boxes);
        let id = underway.id;
        let now = || self.as_event(id, episode, &self.standing.leaving());
        underway.progress(&self.shared, &self.spec.zones, now, at.mono_ms);
        self.underway = Some(underway);
    }

    /// The event of an episode, of the kind found so far, or of what stood
    /// there and is `leaving`.
    fn as_event(&self, id: Uuid, episode: &Episode, leaving: &[Stood]) -> Event {
        let decided = self.classifying.as_ref().and_then(|c| c.tally.decided());
        let sighting = standing::strongest(decided, leaving, episode.started_ms);
        // Its objects: what is leaving, then what the classifier saw, of
        // the kinds that passed as the event's kind must.
        let mut objects = standing::objects(leaving, episode.started_ms, episode.ended_ms);
        if let Some(c) = &self.classifying {
            objects.extend(c.objects.listed(|kind| c.tally.passed(kind)));
        }
        objects.truncate(MAX_LISTED);
        // The share of the picture that moved, or the classifier's score.
        let (kind, score) = match sighting {
            Some(s) => (s.kind, s.score),
            None => (Kind::Motion, episode.score),
        };
        Event {
            id,
            camera_id: self.camera,
            kind: kind.name().to_owned(),
            score: three_decimals(score),
            started_at_ms: episode.started_ms,
            ended_at_ms: episode.ended_ms,
            clip_status: "local".to_owned(),
            clip_path: None,
            thumbnail_path: None,
            zones: Vec::new(),
            in_progress: true,
            reviewed: false,
            keep: false,
            objects,
            loitering: self.loiter.loitering(),
        }
    }

    /// Finishes the event, of the kind it was found to be (or of what stood
    /// there and is `gone`), and asks for its clip (its thumbnail at the
    /// best sighting, the object marked).
    fn ended(&mut self, episode: Episode, gone: &[Stood]) {
        let Some(underway) = self.underway.take() else {
            return;
        };
        let last = self.as_event(underway.id, &episode, gone);
        let decided = self.classifying.take().and_then(|c| c.tally.decided());
        let sighting = standing::strongest(decided, gone, episode.started_ms);
        let pin = self.pin.take();
        let Some(event) = underway.finish(&self.shared, &self.spec.zones, last) else {
            if let Some(pin) = pin {
                self.shared.recordings.unpin(pin);
            }
            return;
        };
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
}

impl Restartable for Watcher {
    fn run_once(&mut self) -> bool {
        let saw_frames = self.watch();
        // An event under way ends with the frames, at its last moving one.
        if let Some(episode) = self.episodes.finish() {
            self.standing.interrupted();
            self.ended(episode, &[]);
        }
        saw_frames
    }

    fn retrying(&mut self, wait: Duration) {
        log::info!(
            "motion watcher of camera {}: its decoder stopped; trying again in {} s",
            self.camera,
            wait.as_secs_f64().round().max(1.0)
        );
        // Why the decoder stopped is not told apart: the camera is back
        // once it answers after a question it did not.
    }

    /// As the recorder: a camera back from a reboot is watched again as
    /// soon as it answers, not at the end of a wait of up to a minute.
    fn back(&mut self) -> bool {
        self.comeback.back(&self.spec.url)
    }
}

/// A picture's width over its height.
fn aspect(width: usize, height: usize) -> f32 {
    width as f32 / height.max(1) as f32
}

/// Sends the classifier a crop of `image` around `area` (a square grown
/// from it as a moving region's is); None when it cannot take one now.
fn ask_about(classifier: &Classifier, image: &Yuv420, area: Area) -> Option<(Reply, Square)> {
    let square = regions::square_to_classify(&[area], image.width, image.height, INPUT_SIDE)?;
    let reply = classifier.submit(crop::rgb_crop(image, square, INPUT_SIDE))?;
    Some((reply, square))
}

/// A score as events carry it: three decimals.
fn three_decimals(score: f32) -> f64 {
    (f64::from(score) * 1000.0).round() / 1000.0
}

/// The objects of a crop (`square` of `image`) that are of a kind, placed
/// in the frame, as seen at `at_ms`.
fn sightings(objects: &[Object], square: Square, image: &Yuv420, at_ms: i64) -> Vec<Sighting> {
    objects
        .iter()
        .filter_map(|o| {
            Some(Sighting {
                kind: tally::kind_of(&o.label)?,
                score: o.score,
                area: in_frame(o.area, square, image.width, image.height),
                at_ms,
            })
        })
        .collect()
}

/// The cells a detector learnt as always moving, if any.
fn learnt(detector: &Detector) -> Option<BusyCells> {
    detector.busy().filter(|b| b.count() > 0)
}

/// Reads a frame's header (three lines, as ffmpeg writes them); its width
/// and height, or None when the decoder ends, sends something else, the
/// watcher is stopped, or `deadline` passes; `on_quiet` runs on each
/// wait that brought nothing.
fn read_header(
    child: &mut Child,
    format: Format,
    stop: &AtomicBool,
    deadline: Instant,
    mut on_quiet: impl FnMut(),
) -> Option<(usize, usize)> {
    let mut lines = Vec::with_capacity(3);
    while lines.len() < 3 {
        match child.next_line(TICK) {
            Output::Line(line) => lines.push(line),
            Output::Quiet if !stop.load(Ordering::Acquire) && Instant::now() < deadline => {
                on_quiet();
            }
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

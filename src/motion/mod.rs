//! Motion detection: for each enabled camera with `detect` on, a watcher
//! (an ffmpeg decoding small frames, 5 a second, and the detector) finds
//! motion, and each motion becomes an event, with a clip and a thumbnail:
//! of kind `motion`, or, for a camera that classifies, of the kind of
//! thing the classifier saw move. [`Motion`] is the handle the node holds; its
//! supervisor keeps one watcher per camera (`workers.rs`).

pub mod camera_events;
pub mod camera_says;
pub use nvr_base::motion::detector;
pub mod episodes;
pub use nvr_base::motion::frame;
mod frame_clock;
pub mod frame_requests;
pub mod key_frames;
mod loiter;
mod pacer;
pub mod snapshot;
mod standing;
mod still;
pub mod suggestion;
mod underway;
mod watcher;
mod zones;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::cameras::camera::{Camera, Sensitivity};
use crate::changes::StateChanges;
use crate::channel;
use crate::classify::Classifier;
use crate::clips::{Clips, Job};
use crate::db::Db;
use crate::lock::lock;
use crate::media::gate::Gate;
use crate::media::polygon::Polygon;
use crate::notices::Notices;
use crate::recording::Recordings;
use crate::workers::{self, Order, Workers};
use camera_events::CameraEvents;
use camera_says::CameraSays;
use detector::Params;
use frame_requests::{FrameRequests, Yuv420Frame};
use key_frames::KeyFrames;
use watcher::{Spec, Watcher};

pub struct Settings {
    pub ffmpeg: PathBuf,
    /// Bounds how many ffmpeg start at once (shared with the recorders).
    pub gate: Arc<Gate>,
}

/// What the watchers share.
struct Shared {
    /// What each camera's detector learnt is always moving, as masks to
    /// suggest (status shows them: a change is counted in `live`).
    learnt: Mutex<HashMap<Uuid, Vec<Polygon>>>,
    live: Arc<StateChanges>,
    settings: Settings,
    db: Arc<Db>,
    clips: Arc<Clips>,
    recordings: Arc<Recordings>,
    notices: Arc<Notices>,
    classifier: Arc<Classifier>,
    /// Snapshots waiting for a watcher's next frame.
    frames: FrameRequests,
    /// What the cameras' own motion detection says.
    camera_says: Arc<CameraSays>,
    /// Each watching camera's key frames and pace.
    key_frames: Mutex<HashMap<Uuid, KeyFrames>>,
    /// The subscriptions to the cameras' own motion events.
    camera_events: Arc<CameraEvents>,
}

impl Shared {
    /// `camera`'s key frames and pace as its watcher sees them; None: not watched.
    fn set_key_frames(&self, camera: Uuid, now: Option<KeyFrames>) {
        let mut all = lock(&self.key_frames);
        let before = match now {
            Some(now) => all.insert(camera, now),
            None => all.remove(&camera),
        };
        drop(all);
        let changed = match (before, now) {
            (Some(a), Some(b)) => a.shown_differently(&b),
            (None, None) => false,
            _ => true,
        };
        if changed {
            self.live.bump();
        }
    }

    /// What `camera`'s detector learnt is always moving, as masks to suggest.
    fn set_learnt(&self, camera: Uuid, masks: Vec<Polygon>) {
        let mut learnt = lock(&self.learnt);
        if learnt.get(&camera) != Some(&masks) {
            learnt.insert(camera, masks);
            drop(learnt);
            self.live.bump();
        }
    }
}

pub struct Motion {
    shared: Arc<Shared>,
    supervisor: channel::Sender<Order>,
    pending: Mutex<Option<channel::Receiver<Order>>>,
    running: Mutex<Option<thread::JoinHandle<()>>>,
}

impl Motion {
    pub fn new(
        settings: Settings,
        db: Arc<Db>,
        clips: Arc<Clips>,
        recordings: Arc<Recordings>,
        notices: Arc<Notices>,
        classifier: Arc<Classifier>,
        live: Arc<StateChanges>,
    ) -> Motion {
        let (supervisor, orders) = channel::channel();
        let camera_says = Arc::<CameraSays>::default();
        let camera_events = Arc::new(CameraEvents::new(camera_says.clone(), live.clone()));
        Motion {
            shared: Arc::new(Shared {
                learnt: Mutex::default(),
                live,
                settings,
                db,
                clips,
                recordings,
                notices,
                classifier,
                frames: FrameRequests::default(),
                camera_says,
                camera_events,
                key_frames: Mutex::default(),
            }),
            supervisor,
            pending: Mutex::new(Some(orders)),
            running: Mutex::new(None),
        }
    }

    pub fn start(&self) {
        let Some(orders) = lock(&self.pending).take() else {
            return;
        };
        self.shared.classifier.start();
        // Events a stopped node left in progress end at their latest moment
        // stored, and get their clips.
        match self.shared.db.run(|s| s.end_events_in_progress()) {
            Ok(left) => {
                for event in left {
                    log::info!("event {} ended with the node that saw it", event.id);
                    self.shared.clips.request(Job::of(&event));
                }
            }
            Err(e) => log::error!("cannot end the events left in progress: {e}"),
        }
        let shared = self.shared.clone();
        let supervisor = crate::spawn::spawn(
            thread::Builder::new()
                .name("watchers".into())
                // Reads the cameras (SQLite) and starts threads; measured 8 KiB.
                .stack_size(256 * 1024),
            move || supervise(&shared, &orders),
        )
        .expect("spawn the motion watchers' supervisor");
        *lock(&self.running) = Some(supervisor);
    }

    /// `camera`'s subscription to its own motion events, as the camera
    /// JSON shows it (`motionEvents`).
    pub fn camera_events(&self, camera: &Camera) -> camera_events::View {
        self.shared.camera_events.view(camera)
    }

    /// Cameras changed: watchers start or stop within 2 s.
    pub fn cameras_changed(&self) {
        let _ = self.supervisor.send(Order::CamerasChanged);
    }

    /// The next colour frame of `camera`'s watcher (a camera that
    /// classifies), waiting at most `wait`; None at once where no watcher
    /// sends colour frames.
    pub fn next_frame(&self, camera: Uuid, wait: Duration) -> Option<Arc<Yuv420Frame>> {
        self.shared.frames.next(camera, wait)
    }

    /// `camera`'s key frames and its watcher's pace; None where no watcher runs.
    pub fn key_frames(&self, camera: Uuid) -> Option<KeyFrames> {
        lock(&self.shared.key_frames).get(&camera).copied()
    }

    /// The areas of `camera`'s picture the node has learnt are always
    /// moving (its `suggestedMasks`), left out of detection while its
    /// `autoMask` is on. None learnt yet.
    pub fn suggested_masks(&self, camera: Uuid) -> Vec<Polygon> {
        lock(&self.shared.learnt)
            .get(&camera)
            .cloned()
            .unwrap_or_default()
    }

    /// Stops every watcher (an event under way is stored) and the
    /// classifier, and waits for them until `deadline`.
    pub fn stop(&self, deadline: Instant) {
        workers::stop_supervisor(&self.supervisor, &self.running, deadline);
        self.shared.classifier.stop(deadline);
    }
}

fn supervise(shared: &Arc<Shared>, orders: &channel::Receiver<Order>) {
    let mut watchers = Workers::new("motion watcher");
    let mut subscriptions = Workers::new("onvif events");
    workers::supervise(orders, || {
        if let Ok(cameras) = shared.db.run(|s| s.cameras()) {
            let start = |camera, spec, stop| {
                let watcher = Watcher::new(shared.clone(), camera, spec, stop);
                move || watcher.run()
            };
            let wanted = wanted(&cameras, shared.classifier.installed());
            // Only what a camera's watcher learnt is suggested.
            shared.live.retain(&shared.learnt, |id| {
                wanted.get(id).is_some_and(|s| s.auto_mask)
            });
            shared
                .classifier
                .set_wanted(wanted.values().any(|spec| spec.kinds.is_some()));
            watchers.reconcile(&wanted, start);
            let events = &shared.camera_events;
            subscriptions.reconcile(&camera_events::wanted(&cameras), |camera, spec, stop| {
                let events = events.clone();
                move || camera_events::run(events, camera, spec, stop)
            });
        }
    });
    watchers.stop_all();
    subscriptions.stop_all();
}

/// What each camera that detects watches: its sub stream, or its main one;
/// and the kinds it classifies into, when it classifies and it can.
fn wanted(cameras: &[Camera], classifier_installed: bool) -> HashMap<Uuid, Spec> {
    cameras
        .iter()
        .filter(|c| c.settings.enabled && c.settings.detect)
        .map(|c| {
            let url = c
                .settings
                .rtsp_sub_url
                .clone()
                .unwrap_or_else(|| c.settings.rtsp_url.clone());
            let params = match c.settings.detect_sensitivity {
                Sensitivity::Low => Params::LOW,
                Sensitivity::Medium => Params::MEDIUM,
                Sensitivity::High => Params::HIGH,
            };
            let classifies = classifier_installed && c.settings.classify;
            let kinds =
                (classifies && !c.settings.kinds.is_empty()).then(|| c.settings.kinds.clone());
            let spec = Spec {
                url,
                params,
                kinds,
                masks: c.settings.motion_masks.clone(),
                zones: c.settings.zones.clone(),
                auto_mask: c.settings.auto_mask,
                full_rate: c.settings.full_rate,
            };
            (c.id, spec)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::camera::Zone;
    use crate::event::Kind;
    use crate::store::test_support;

    #[test]
    fn who_watches_what() {
        let mut main_only = test_support::camera("a");
        main_only.settings.detect_sensitivity = Sensitivity::High;
        let mut with_sub = test_support::camera("b");
        with_sub.settings.rtsp_sub_url = Some("rtsp://h/sub".into());
        let mut not_detecting = test_support::camera("c");
        not_detecting.settings.detect = false;
        let mut disabled = test_support::camera("d");
        disabled.settings.enabled = false;
        let mut not_classifying = test_support::camera("e");
        not_classifying.settings.classify = false;
        let mut only_people = test_support::camera("f");
        only_people.settings.kinds = vec![Kind::Person];
        let mut masked = test_support::camera("g");
        let square = Polygon::new(vec![[0.0, 0.0], [0.5, 0.0], [0.5, 0.5]]);
        masked.settings.motion_masks = vec![square.clone()];
        let door = Zone {
            name: "Door".into(),
            polygon: square.clone(),
            kinds: vec![Kind::Person],
            loiter: None,
        };
        masked.settings.zones = vec![door.clone()];
        masked.settings.auto_mask = false;
        let cameras = [
            main_only.clone(),
            with_sub.clone(),
            not_detecting,
            disabled,
            not_classifying.clone(),
            only_people.clone(),
            masked.clone(),
        ];
        let wanted_without_model = wanted(&cameras, false);
        assert!(wanted_without_model.values().all(|s| s.kinds.is_none()));
        let wanted = wanted(&cameras, true);
        assert_eq!(wanted.len(), 5);
        assert_eq!(wanted[&not_classifying.id].kinds, None);
        assert_eq!(wanted[&only_people.id].kinds, Some(vec![Kind::Person]));
        assert_eq!(
            wanted[&main_only.id],
            Spec {
                url: "rtsp://u:p@h/main".into(),
                params: Params::HIGH,
                kinds: Some(Kind::CLASSIFIED.to_vec()),
                masks: vec![],
                zones: vec![],
                auto_mask: true,
                full_rate: false,
            }
        );
        assert_eq!(
            wanted[&with_sub.id],
            Spec {
                url: "rtsp://h/sub".into(),
                params: Params::MEDIUM,
                kinds: Some(Kind::CLASSIFIED.to_vec()),
                masks: vec![],
                zones: vec![],
                auto_mask: true,
                full_rate: false,
            }
        );
        let masked = &wanted[&masked.id];
        assert_eq!(
            (&masked.masks, &masked.zones, masked.auto_mask),
            (&vec![square], &vec![door], false)
        );
    }
}

//! Each camera's own motion events: for a camera that detects, is linked
//! to its ONVIF device and whose `motionSource` is not "node", a
//! subscription to the device's events tells [`CameraSays`] what the camera
//! says, and keeps what the API shows of it (`motionEvents`). The account
//! goes to the linked device's address only, which the user named or the
//! node verified (`background/follow.rs`).
//!
//! The subscription's calls (a pull waits up to 5 s) run on a thread of
//! their own, which the camera's worker leaves to end by itself after its
//! call: the worker stops at once, as every worker must within 2 s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nvr_base::media::restart::{Restartable, keep_running, sleep_unless_stopped};
use uuid::Uuid;

use super::camera_says::CameraSays;
use crate::cameras::camera::{Camera, MotionSource};
use crate::cameras::onvif::{Credentials, OnvifError, PullPoint};
use crate::cameras::rtsp_url;
use crate::changes::StateChanges;
use crate::clock::now_ms;
use crate::lock::lock;

/// Pulls that fail in a row before the subscription is made anew.
const MISSES_BEFORE_REBUILD: u32 = 2;

/// What a camera's subscription is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum State {
    #[default]
    Subscribing,
    Receiving,
    Failing,
    /// Its device offers no events.
    Off,
}

/// How a camera's subscription goes.
#[derive(Clone, Debug, Default, PartialEq)]
struct Health {
    state: State,
    /// Plain words: never an address or a password.
    detail: Option<String>,
    /// When the camera last said anything of motion (ms since the epoch).
    last_message_ms: Option<i64>,
    /// Whether its motion state is stuck at true, as last looked at.
    stuck: bool,
    /// Whether its device offers events; None: not known yet.
    offers: Option<bool>,
    /// Its `motionSource`.
    asked: Option<MotionSource>,
}

/// What the camera JSON shows (`motionEvents`).
pub struct View {
    /// The effective source.
    pub source: MotionSource,
    /// off, subscribing, receiving, failing or stuck.
    pub state: &'static str,
    pub detail: Option<String>,
    pub last_message_ms: Option<i64>,
}

/// The cameras' subscriptions' health, and where they tell what they hear.
pub struct CameraEvents {
    says: Arc<CameraSays>,
    health: Mutex<HashMap<Uuid, Health>>,
    live: Arc<StateChanges>,
}

/// Whether `camera` listens to its device's events at all.
fn listens(camera: &Camera) -> bool {
    let s = &camera.settings;
    s.enabled && s.detect && s.onvif.is_some() && s.motion_source != Some(MotionSource::Node)
}

impl CameraEvents {
    pub fn new(says: Arc<CameraSays>, live: Arc<StateChanges>) -> CameraEvents {
        CameraEvents {
            says,
            health: Mutex::default(),
            live,
        }
    }

    /// Whose word starts `camera`'s events now (the effective
    /// `motionSource`): "node" where it does not listen to its device's
    /// events or the device offers none; "both" by default where it does;
    /// "camera" as asked, but "both" (the node's detector as a backstop)
    /// while the camera's events are not being received, or are stuck.
    /// Cheap: a lock and a look-up.
    pub fn source(&self, camera: Uuid) -> MotionSource {
        let Some(health) = lock(&self.health).get(&camera).cloned() else {
            return MotionSource::Node;
        };
        match (health.asked, health.offers) {
            (_, Some(false)) | (None, None) => MotionSource::Node,
            (Some(MotionSource::Camera), _)
                if health.state == State::Receiving && !health.stuck =>
            {
                MotionSource::Camera
            }
            _ => MotionSource::Both,
        }
    }

    /// `camera`'s `motionEvents`.
    pub fn view(&self, camera: &Camera) -> View {
        let health = match listens(camera) {
            true => lock(&self.health).get(&camera.id).cloned(),
            false => None,
        };
        let Some(health) = health else {
            return View {
                source: MotionSource::Node,
                state: "off",
                detail: None,
                last_message_ms: None,
            };
        };
        let state = match health.state {
            State::Receiving if health.stuck => "stuck",
            State::Subscribing => "subscribing",
            State::Receiving => "receiving",
            State::Failing => "failing",
            State::Off => "off",
        };
        let detail = match state {
            "stuck" => Some(
                "the camera has said there is motion for over a minute while the node saw none: \
                 not believed until it says the motion ended"
                    .to_owned(),
            ),
            _ => health.detail,
        };
        View {
            source: self.source(camera.id),
            state,
            detail,
            last_message_ms: health.last_message_ms,
        }
    }

    /// Changes `camera`'s health with `change`, unless its worker has
    /// stopped (`stop`, looked at under the lock its stop takes).
    fn note(&self, camera: Uuid, stop: &AtomicBool, change: impl FnOnce(&mut Health)) {
        let mut all = lock(&self.health);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let health = all.entry(camera).or_default();
        let before = health.clone();
        change(health);
        if *health != before {
            drop(all);
            self.live.bump();
        }
    }

    /// `camera` said `moving`, unless its worker has stopped.
    fn said(&self, camera: Uuid, stop: &AtomicBool, moving: bool) {
        let _all = lock(&self.health);
        if !stop.load(Ordering::Acquire) {
            self.says.said(camera, moving, Instant::now());
        }
    }

    /// `camera`'s worker stopped: what it heard is forgotten.
    fn forget(&self, camera: Uuid) {
        let removed = lock(&self.health).remove(&camera).is_some();
        self.says.forget(camera);
        if removed {
            self.live.bump();
        }
    }
}

/// What a camera's subscription needs: its device's address and the
/// camera's account.
#[derive(Clone, PartialEq)]
pub struct Spec {
    address: String,
    account: Option<(String, String)>,
    source: Option<MotionSource>,
}

/// The cameras that listen to their devices' events.
pub fn wanted(cameras: &[Camera]) -> HashMap<Uuid, Spec> {
    cameras
        .iter()
        .filter(|c| listens(c))
        .filter_map(|c| {
            let link = c.settings.onvif.as_ref()?;
            let spec = Spec {
                address: link.address.clone(),
                account: rtsp_url::credentials(&c.settings.rtsp_url),
                source: c.settings.motion_source,
            };
            Some((c.id, spec))
        })
        .collect()
}

/// A camera's worker: subscribes on a thread of its own until `stop`.
pub fn run(events: Arc<CameraEvents>, camera: Uuid, spec: Spec, stop: Arc<AtomicBool>) {
    events.note(camera, &stop, |h| h.asked = spec.source);
    let listener = Listener {
        events: events.clone(),
        camera,
        spec,
        stop: stop.clone(),
        topics: Vec::new(),
    };
    let spawned = crate::spawn::spawn(
        thread::Builder::new()
            .name(format!("onvif events {camera}"))
            .stack_size(128 * 1024),
        move || {
            let mut listener = listener;
            let stop = listener.stop.clone();
            keep_running(&mut listener, &stop);
        },
    );
    if let Err(e) = spawned {
        log::error!("camera {camera}: cannot start listening to its ONVIF events: {e}");
    }
    while !sleep_unless_stopped(&stop, Duration::from_secs(3600)) {}
    // Under the lock that its listener's notes take: none comes after.
    events.forget(camera);
}

/// One camera's subscription.
struct Listener {
    events: Arc<CameraEvents>,
    camera: Uuid,
    spec: Spec,
    stop: Arc<AtomicBool>,
    /// Each motion topic's last state: the camera says motion while any is true.
    topics: Vec<(String, bool)>,
}

impl Listener {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn credentials(&self) -> Option<Credentials> {
        let (username, password) = self.spec.account.clone()?;
        Some(Credentials { username, password })
    }

    fn failing(&self, why: &str, error: &OnvifError) {
        let detail = format!("{why} ({})", plain(error));
        log::info!("camera {}: its ONVIF events: {detail}", self.camera);
        self.events.note(self.camera, &self.stop, |h| {
            h.state = State::Failing;
            h.detail = Some(detail);
        });
    }

    /// Pulls until the subscription fails or the worker stops; whether a
    /// pull came back.
    fn follow(&mut self, mut point: PullPoint) -> bool {
        let (mut misses, mut pulled) = (0, false);
        while !self.stopped() {
            let answer = point
                .renew_if_due(Instant::now())
                .and_then(|()| point.pull(Instant::now()));
            let said = match answer {
                Ok(said) => said,
                Err(e) => {
                    misses += 1;
                    if misses >= MISSES_BEFORE_REBUILD {
                        self.failing("its subscription failed, made anew", &e);
                        return pulled;
                    }
                    sleep_unless_stopped(&self.stop, Duration::from_secs(1));
                    continue;
                }
            };
            (misses, pulled) = (0, true);
            for message in &said {
                match self.topics.iter_mut().find(|(t, _)| *t == message.topic) {
                    Some(topic) => topic.1 = message.moving,
                    None => self.topics.push((message.topic.clone(), message.moving)),
                }
                let moving = self.topics.iter().any(|(_, m)| *m);
                self.events.said(self.camera, &self.stop, moving);
            }
            let stuck = self.events.says.stuck(self.camera, Instant::now());
            let heard = (!said.is_empty()).then(now_ms);
            self.events.note(self.camera, &self.stop, |h| {
                h.state = State::Receiving;
                h.detail = None;
                h.stuck = stuck;
                h.last_message_ms = heard.or(h.last_message_ms);
            });
        }
        point.unsubscribe();
        pulled
    }
}

impl Restartable for Listener {
    fn run_once(&mut self) -> bool {
        let camera = self.camera;
        match PullPoint::subscribe(&self.spec.address, self.credentials(), Instant::now()) {
            Ok(Some(point)) => {
                self.events
                    .note(camera, &self.stop, |h| h.offers = Some(true));
                // What the camera said before is no longer known.
                self.topics.clear();
                self.follow(point)
            }
            Ok(None) => {
                self.events.note(camera, &self.stop, |h| {
                    h.state = State::Off;
                    h.offers = Some(false);
                    h.detail = Some("the camera's ONVIF device offers no events".into());
                });
                false
            }
            Err(e) => {
                self.failing("cannot subscribe to its motion events", &e);
                false
            }
        }
    }

    fn retrying(&mut self, wait: Duration) {
        log::debug!(
            "camera {}: subscribing to its ONVIF events again in {} s",
            self.camera,
            wait.as_secs()
        );
    }
}

/// An error in words fit for the API: a device's fault text is left out,
/// since it may repeat what it was sent.
fn plain(error: &OnvifError) -> String {
    match error {
        OnvifError::Fault(_) => "the camera reported an error".into(),
        e => e.message(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::camera::OnvifLink;
    use crate::store::test_support;

    fn linked(source: Option<MotionSource>) -> Camera {
        let mut camera = test_support::camera("a");
        // One camera, set each way.
        camera.id = Uuid::from_u128(1);
        camera.settings.rtsp_url = "rtsp://admin:pw@10.0.0.5/main".into();
        camera.settings.onvif = Some(OnvifLink {
            endpoint: "urn:uuid:1".into(),
            address: "http://10.0.0.5/onvif/device_service".into(),
            seen: Default::default(),
        });
        camera.settings.motion_source = source;
        camera
    }

    #[test]
    fn the_effective_source_follows_the_setting_and_the_device() {
        let events = CameraEvents::new(Arc::default(), Arc::default());
        let stop = AtomicBool::new(false);
        let (default, camera, node) = (
            linked(None),
            linked(Some(MotionSource::Camera)),
            linked(Some(MotionSource::Node)),
        );
        let mut unlinked = linked(Some(MotionSource::Camera));
        unlinked.settings.onvif = None;
        let id = default.id;
        // The source of each as its worker notes it (none for node and
        // unlinked, which do not listen), with what the device is seen to do.
        let sources = |seen: &dyn Fn(&mut Health)| {
            [&default, &camera, &node, &unlinked].map(|c| {
                let events = CameraEvents::new(Arc::default(), Arc::default());
                if listens(c) {
                    events.note(id, &stop, |h| {
                        h.asked = c.settings.motion_source;
                        seen(h);
                    });
                }
                (events.source(id), events.view(c).state)
            })
        };
        use MotionSource::{Both, Camera as Cam, Node};
        // Not known yet whether the device offers events.
        assert_eq!(
            sources(&|_| {}),
            [
                (Node, "subscribing"),
                (Both, "subscribing"),
                (Node, "off"),
                (Node, "off")
            ]
        );
        let receiving = |h: &mut Health| {
            h.offers = Some(true);
            h.state = State::Receiving;
        };
        assert_eq!(
            sources(&receiving),
            [
                (Both, "receiving"),
                (Cam, "receiving"),
                (Node, "off"),
                (Node, "off")
            ]
        );
        let stuck = |h: &mut Health| {
            receiving(h);
            h.stuck = true;
        };
        assert_eq!(
            sources(&stuck),
            [
                (Both, "stuck"),
                (Both, "stuck"),
                (Node, "off"),
                (Node, "off")
            ]
        );
        let none = |h: &mut Health| {
            h.offers = Some(false);
            h.state = State::Off;
        };
        assert_eq!(
            sources(&none),
            [(Node, "off"), (Node, "off"), (Node, "off"), (Node, "off")]
        );
        events.note(id, &stop, |h| h.offers = Some(true));
        // A stopped worker's listener notes nothing more.
        events.forget(id);
        stop.store(true, Ordering::Release);
        events.note(id, &stop, |h| h.offers = Some(true));
        assert_eq!(events.view(&camera).state, "off");
    }

    #[test]
    fn only_cameras_that_detect_and_are_linked_listen() {
        let mut off = linked(None);
        off.settings.detect = false;
        let mut node = linked(Some(MotionSource::Node));
        node.id = Uuid::from_u128(2);
        off.id = Uuid::from_u128(3);
        let cameras = [linked(None), node, off];
        let wanted = wanted(&cameras);
        assert_eq!(wanted.len(), 1);
        let spec = &wanted[&cameras[0].id];
        assert_eq!(spec.address, "http://10.0.0.5/onvif/device_service");
        assert_eq!(spec.account, Some(("admin".into(), "pw".into())));
    }

    #[test]
    fn faults_are_not_repeated() {
        let fault = OnvifError::Fault("user admin password pw is wrong".into());
        assert_eq!(plain(&fault), "the camera reported an error");
        assert_eq!(
            plain(&OnvifError::Refused),
            "the camera refused the user name or password"
        );
    }
}

//! Home Assistant through MQTT: the node's cameras, motion, switches and
//! events as entities, by MQTT discovery. One thread keeps what is on the
//! broker in step with the node: four times a second it takes what Home
//! Assistant is shown of the node, and when that changed it builds the
//! retained messages (discovery and states) again and publishes those that
//! differ, an empty one for those that went; it passes on motion and events
//! as they happen. The session (`mqtt::session`) owns the
//! connection and sends everything again after each connect and when Home
//! Assistant comes back (at most once in 5 s); commands go through the same
//! path as a `PATCH`, except those the broker kept (retained), which are
//! stale by the time it sends them. What is published, and what an incoming
//! message means, is `topics`.

pub mod topics;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::app::App;
use crate::cameras::camera::SettingsPatch;
use crate::event::Kind;
use crate::lock::lock;
use crate::mqtt;
use crate::mqtt::limit::{Throttle, held_back};
use crate::mqtt::session::{self, Handler, Message, Session};
use crate::notices::{Inbox, Notice};
use crate::recording::Storage;
use crate::tls;
use topics::{CameraState, Incoming, Names, NodeState, Retained, Switch};

/// How often the node's state is compared with what was published.
const TICK: Duration = Duration::from_millis(250);
/// How often the storage figures are taken again.
const STORAGE_EVERY: Duration = Duration::from_secs(60);
/// Everything is sent again on Home Assistant's birth at most this often
/// (a birth flood must not become a flood of discovery).
const RESEND_EVERY: Duration = Duration::from_secs(5);
/// At most one log line a second for commands ignored.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Starts the link to the broker; an error is a setting that cannot work.
pub fn spawn(app: Arc<App>, config: &mqtt::config::Config) -> Result<(), String> {
    let tls = if config.tls {
        Some(tls::client_config(config.ca_file.as_deref())?)
    } else {
        None
    };
    let node = app
        .db(|s| s.local_id())
        .map_err(|e| format!("cannot read the node's id: {}", e.message))?;
    log::info!(
        "mqtt: publishing to {}:{} as node {node}",
        config.host,
        config.port
    );
    // From the node's id: two nodes on one broker never take each other's place.
    let client_id = format!("nvr-node-{node}");
    let names = Names {
        prefix: config.topic_prefix.clone(),
        discovery: config.discovery_prefix.clone(),
        node,
        node_name: app.node_name().to_string(),
        node_url: app.node_url.clone(),
    };
    let settings = session::Settings {
        host: config.host.clone(),
        port: config.port,
        tls,
        client_id,
        user: config.user.clone(),
        password: config.password.clone(),
        availability_topic: names.availability(),
        subscriptions: names.subscriptions(),
    };
    let notices = app.notices.subscribe("home assistant");
    app.set_mqtt_state(mqtt::State::Connecting);
    let mut link = Link::new(app.clone(), names, notices);
    // Everything is there to send before the first connect.
    link.refresh(None);
    let handler = Commands {
        app: app.clone(),
        names: link.names.clone(),
        published: link.published.clone(),
        resends: Throttle::new(RESEND_EVERY),
        ignored: Throttle::new(LOG_EVERY),
    };
    let session = Session::spawn(settings, handler);
    crate::spawn::spawn(
        thread::Builder::new().name("home assistant".into()),
        move || link.run(&session),
    )
    .map_err(|e| format!("cannot start the MQTT link: {e}"))?;
    Ok(())
}

/// The thread that keeps the broker in step with the node.
struct Link {
    app: Arc<App>,
    names: Names,
    notices: Arc<Inbox>,
    /// The retained messages last published (or to send after a connect).
    published: Arc<Mutex<Retained>>,
    /// What they were built from.
    built_from: Option<(NodeState, Vec<CameraState>)>,
    activity: Activity,
    /// Each camera's newest event with a thumbnail.
    snapshots: HashMap<Uuid, Uuid>,
    /// The recordings' storage, taken once a minute.
    storage: Option<(Instant, Storage)>,
}

impl Link {
    fn new(app: Arc<App>, names: Names, notices: Arc<Inbox>) -> Link {
        let snapshots = app
            .db(|s| s.newest_thumbnails())
            .unwrap_or_default()
            .into_iter()
            .collect();
        Link {
            app,
            names,
            notices,
            published: Arc::default(),
            built_from: None,
            activity: Activity::default(),
            snapshots,
            storage: None,
        }
    }

    fn run(mut self, session: &Session) {
        loop {
            for sent in self.notices.wait(TICK) {
                if let Some(message) = self.take(sent.notice) {
                    session.publish(message);
                }
            }
            self.app.set_mqtt_state(session.state());
            self.refresh(Some(session));
        }
    }

    /// Follows a notice; returns the event message it calls for.
    fn take(&mut self, notice: Notice) -> Option<Message> {
        self.activity.take(&notice);
        match notice {
            Notice::MotionStarted {
                camera,
                event,
                at_ms,
                ..
            } => {
                let payload = topics::event_started(event, "motion", at_ms);
                Some(Message::event(self.names.event_topic(camera), payload))
            }
            // The sensors follow at the next refresh; the event's message
            // with its final kind comes once its files are done.
            Notice::MotionEnded { .. } | Notice::KindSeen { .. } => None,
            // Written as loitering before it was told: as it stands.
            Notice::Loitering { event, .. } => self.event_message(event, "update"),
            Notice::EventPosted { event } => self.event_message(event, "start"),
            Notice::EventFinished { event } => self.event_message(event, "end"),
        }
    }

    fn event_message(&mut self, id: Uuid, phase: &str) -> Option<Message> {
        let event = self.app.db(|s| s.event(id)).ok()??;
        if event.thumbnail_path.is_some() {
            self.snapshots.insert(event.camera_id, event.id);
        }
        let payload = topics::event_stored(&self.names, phase, &event);
        Some(Message::event(
            self.names.event_topic(event.camera_id),
            payload,
        ))
    }

    /// Builds the retained messages again if what they show changed, and
    /// publishes the difference through `session` (None: only builds).
    fn refresh(&mut self, session: Option<&Session>) {
        // Both kept by the store until written: SQLite is asked again only
        // after a change (the tallies after an event was added, marked or
        // deleted), at most once a tick however many came.
        let Ok((cameras, tallies)) = self.app.db(|s| Ok((s.cameras()?, s.event_tallies()?))) else {
            return;
        };
        let storage = match &self.storage {
            // Until the recordings have measured the disk, each time.
            Some((taken, storage))
                if taken.elapsed() < STORAGE_EVERY && storage.free_bytes.is_some() =>
            {
                storage.clone()
            }
            _ => {
                let storage = self.app.recordings.storage();
                self.storage = Some((Instant::now(), storage.clone()));
                storage
            }
        };
        let node = NodeState {
            relay_healthy: self.app.relay_healthy(),
            armed: self.app.armed(),
            used_bytes: storage.used_bytes,
            budget_bytes: storage.budget_bytes,
            free_bytes: storage.free_bytes,
        };
        let cameras: Vec<CameraState> = cameras
            .iter()
            .map(|c| {
                let s = &c.settings;
                let watched = s.enabled && s.detect;
                // No sensor that could never come on: without the classifier
                // a camera's events all stay motion.
                let classifies = s.classify && self.app.classifier.installed();
                let kinds = if classifies {
                    s.kinds.clone()
                } else {
                    Vec::new()
                };
                let loiter_zones: Vec<String> = s
                    .zones
                    .iter()
                    .filter(|z| classifies && z.loiter.is_some())
                    .map(|z| z.name.clone())
                    .collect();
                CameraState {
                    id: c.id,
                    name: s.name.clone(),
                    make: s.make.clone(),
                    model: s.model.clone(),
                    record: s.record,
                    detect: s.detect,
                    online: self.app.is_online(c.id),
                    moving: watched && self.activity.moving.contains(&c.id),
                    kinds: kinds.clone(),
                    seen: match self.activity.seen.get(&c.id) {
                        Some(seen) if watched => {
                            kinds.into_iter().filter(|k| seen.contains(k)).collect()
                        }
                        _ => Vec::new(),
                    },
                    loitering: match self.activity.loitering.get(&c.id) {
                        Some(zones) if watched => loiter_zones
                            .iter()
                            .filter(|z| zones.contains(*z))
                            .cloned()
                            .collect(),
                        _ => Vec::new(),
                    },
                    loiter_zones,
                    snapshot: self.snapshots.get(&c.id).copied(),
                    unreviewed: tallies.unreviewed.get(&c.id).copied().unwrap_or(0),
                }
            })
            .collect();
        let input = (node, cameras);
        if self.built_from.as_ref() == Some(&input) {
            return;
        }
        let wanted = topics::retained(&self.names, &input.0, &input.1);
        let mut published = lock(&self.published);
        if let Some(session) = session {
            for (topic, payload) in &wanted {
                if published.get(topic) != Some(payload) {
                    session.publish(Message::state(topic.clone(), payload.clone()));
                }
            }
            // An empty retained message takes a topic (an entity) away.
            for topic in published.keys().filter(|t| !wanted.contains_key(*t)) {
                session.publish(Message::state(topic.clone(), Vec::new()));
            }
        }
        *published = wanted;
        drop(published);
        self.built_from = Some(input);
    }
}

/// What moves now, as the notices tell it: the cameras with motion, the
/// kinds their events under way were found to be, and the zones they
/// loiter in. All off when the node starts; a camera's kinds and zones go
/// off with its motion.
#[derive(Debug, Default)]
struct Activity {
    moving: HashSet<Uuid>,
    seen: HashMap<Uuid, BTreeSet<Kind>>,
    loitering: HashMap<Uuid, BTreeSet<String>>,
}

impl Activity {
    fn take(&mut self, notice: &Notice) {
        match notice {
            Notice::MotionStarted { camera, .. } => {
                self.moving.insert(*camera);
            }
            Notice::KindSeen { camera, kind, .. } => {
                self.seen.entry(*camera).or_default().insert(*kind);
            }
            Notice::Loitering { camera, zones, .. } => {
                let loitering = self.loitering.entry(*camera).or_default();
                loitering.extend(zones.iter().cloned());
            }
            Notice::MotionEnded { camera, .. } => {
                self.moving.remove(camera);
                self.seen.remove(camera);
                self.loitering.remove(camera);
            }
            Notice::EventPosted { .. } | Notice::EventFinished { .. } => {}
        }
    }
}

/// What the session thread does with what the broker sends.
struct Commands {
    app: Arc<App>,
    names: Names,
    published: Arc<Mutex<Retained>>,
    /// Everything sent again on a birth.
    resends: Throttle,
    /// Log lines for commands ignored.
    ignored: Throttle,
}

impl Commands {
    /// Every retained message, availability first. (The topics come in
    /// order, so the node's own device, `<node>/`, comes before the
    /// cameras' devices, `<node>_<cam>/`, that name it as `via_device`:
    /// Home Assistant drops a `via_device` it does not know yet.)
    fn everything(&self, with_availability: bool) -> Vec<Message> {
        let availability = Message::state(self.names.availability(), "online");
        let published = lock(&self.published);
        let states = published
            .iter()
            .map(|(topic, payload)| Message::state(topic.clone(), payload.clone()));
        with_availability
            .then_some(availability)
            .into_iter()
            .chain(states)
            .collect()
    }

    fn set(&mut self, camera: Uuid, switch: Switch, on: bool) {
        let patch = match switch {
            Switch::Record => SettingsPatch {
                record: Some(on),
                ..SettingsPatch::default()
            },
            Switch::Detect => SettingsPatch {
                detect: Some(on),
                ..SettingsPatch::default()
            },
        };
        let what = format!("{switch:?} {}", if on { "on" } else { "off" }).to_lowercase();
        match self.app.update_camera(camera, &patch) {
            // The camera's update is logged where it is made, and only if
            // it changed something: a flood of commands logs little.
            Ok(Some(_)) => log::debug!("mqtt: camera {camera}: {what}"),
            Ok(None) => self.ignore(&format!("{what} for camera {camera}: no such camera")),
            Err(e) => log::warn!("mqtt: camera {camera}: {what} failed: {}", e.message),
        }
    }

    /// Logs a message ignored, if no other was in the last second.
    fn ignore(&mut self, why: &str) {
        if let Some(held) = self.ignored.pass(Instant::now()) {
            log::info!("mqtt: ignored {why}{}", held_back(held));
        }
    }
}

impl Handler for Commands {
    fn on_connect(&mut self) -> Vec<Message> {
        // The session says `online` itself, first.
        self.everything(false)
    }

    fn on_message(&mut self, topic: &str, payload: &[u8], retained: bool) -> Vec<Message> {
        match topics::incoming(&self.names, topic, payload, retained) {
            Incoming::Set { camera, switch, on } => {
                self.set(camera, switch, on);
                Vec::new()
            }
            Incoming::Arm(on) => {
                if let Err(e) = self.app.set_armed(on) {
                    log::warn!(
                        "mqtt: alerts {}: {}",
                        if on { "on" } else { "off" },
                        e.message
                    );
                }
                Vec::new()
            }
            Incoming::HomeAssistantOnline => match self.resends.pass(Instant::now()) {
                Some(_) => {
                    log::info!("mqtt: Home Assistant started: sending discovery and states again");
                    self.everything(true)
                }
                None => Vec::new(),
            },
            Incoming::CameraSeen(camera) => {
                if matches!(self.app.db(|s| s.camera(camera)), Ok(None)) {
                    // A camera deleted while the node was away: its entities go.
                    topics::camera_topics(&self.names, camera)
                        .into_iter()
                        .map(|topic| Message::state(topic, Vec::new()))
                        .collect()
                } else {
                    Vec::new()
                }
            }
            Incoming::Nothing => Vec::new(),
            Incoming::Refused(why) => {
                self.ignore(&why);
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_seen_stay_on_until_their_cameras_motion_ends() {
        let (front, yard) = (Uuid::new_v4(), Uuid::new_v4());
        let event = Uuid::new_v4();
        let mut activity = Activity::default();
        assert!(activity.seen.is_empty(), "all off at start");
        for camera in [front, yard] {
            activity.take(&Notice::MotionStarted {
                camera,
                event,
                at_ms: 0,
                classifying: true,
            });
        }
        let seen = |camera, kind| Notice::KindSeen {
            camera,
            event,
            kind,
            zones: Vec::new(),
        };
        activity.take(&seen(front, Kind::Person));
        activity.take(&seen(front, Kind::Animal));
        activity.take(&seen(yard, Kind::Vehicle));
        activity.take(&Notice::Loitering {
            camera: front,
            event,
            zones: vec!["Step".into()],
        });
        assert_eq!(activity.loitering[&front], BTreeSet::from(["Step".into()]));
        assert_eq!(
            activity.seen[&front],
            BTreeSet::from([Kind::Person, Kind::Animal])
        );
        activity.take(&Notice::MotionEnded {
            camera: front,
            event,
            kind: Kind::Person,
        });
        assert!(!activity.seen.contains_key(&front), "all of its kinds off");
        assert!(!activity.loitering.contains_key(&front), "and its zones");
        assert!(!activity.moving.contains(&front));
        assert_eq!(activity.seen[&yard], BTreeSet::from([Kind::Vehicle]));
        assert!(
            activity.moving.contains(&yard),
            "the other camera unchanged"
        );
    }
}

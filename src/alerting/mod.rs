//! Alerts as events happen: one thread follows the notices (motion, kinds
//! seen, events posted and finished), decides by each destination's rules
//! what to send, writes it to the outbox (in the database) before anything
//! is sent, and wakes that destination's delivery thread (`delivery`). A
//! destination that hangs or is down holds up only its own thread. The
//! camera's picture is taken once for an alert, beside, for ntfy to attach
//! and to stand for the event's thumbnail until its own is made.

mod delivery;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use uuid::Uuid;

use crate::alerts::destination::Destination;
use crate::alerts::message::{Message, Phase};
use crate::alerts::rules::{Decision, Gate, Memory, Sighting};
use crate::app::App;
use crate::clock;
use crate::event::{Event, EventView, Kind};
use crate::notices::{Inbox, Notice, Sent};
use delivery::Deliveries;

/// How often the thread looks for changed destinations between notices.
const TICK: Duration = Duration::from_millis(250);
/// Alerts waiting per destination; past this the oldest is dropped.
pub const MAX_QUEUED: usize = 100;

/// Starts the thread; alerts left in the outbox by the last run are due at once.
pub fn spawn(app: Arc<App>) {
    let inbox = app.notices.subscribe("alerts");
    if let Err(e) = app.db(|s| s.alerts_due_now(clock::now_ms())) {
        log::error!("alerts: cannot read the outbox: {}", e.message);
    }
    let spawned = crate::spawn::spawn(thread::Builder::new().name("alerts".into()), move || {
        let mut alerting = Alerting {
            deliveries: Deliveries::new(app.clone()),
            app,
            inbox,
            memory: Memory::default(),
            destinations: Vec::new(),
            generation: None,
        };
        alerting.run();
    });
    if let Err(e) = spawned {
        log::error!("alerts: cannot start: {e}");
    }
}

struct Alerting {
    app: Arc<App>,
    inbox: Arc<Inbox>,
    memory: Memory,
    destinations: Vec<Destination>,
    deliveries: Deliveries,
    /// The destinations' generation last read.
    generation: Option<u64>,
}

impl Alerting {
    fn run(&mut self) {
        loop {
            let notices = self.inbox.wait(TICK);
            self.reload();
            for sent in notices {
                self.take(sent);
            }
        }
    }

    /// Reads the destinations again when they changed, and starts and
    /// stops their delivery threads.
    fn reload(&mut self) {
        let generation = self.app.alerts_generation();
        if self.generation == Some(generation) {
            return;
        }
        match self.app.db(|s| s.destinations()) {
            Ok(destinations) => {
                for gone in self
                    .destinations
                    .iter()
                    .filter(|d| !destinations.iter().any(|n| n.id == d.id))
                {
                    self.memory.forget(gone.id);
                }
                self.deliveries.keep(&destinations);
                self.destinations = destinations;
                self.generation = Some(generation);
            }
            Err(e) => log::error!("alerts: cannot read the destinations: {}", e.message),
        }
    }

    fn take(&mut self, sent: Sent) {
        if self.destinations.is_empty() {
            return;
        }
        let Some((seen, event)) = self.sighting(sent.notice) else {
            return;
        };
        let now = clock::now_ms();
        // As things were when the node learnt of it.
        let gate = match self.app.db(|s| s.snoozes(sent.at_ms)) {
            Ok(snoozes) => Gate {
                armed: self.app.armed_at(sent.at_ms),
                snoozed: snoozes.contains_key(&seen.camera),
            },
            Err(e) => {
                log::error!("alerts: cannot read whether they are on: {}", e.message);
                return;
            }
        };
        let decided: Vec<(Uuid, Decision)> = self
            .destinations
            .iter()
            .filter_map(|d| {
                let decision = self.memory.decide(d.id, &d.rules, &gate, &seen, now)?;
                Some((d.id, decision))
            })
            .collect();
        if decided.is_empty() {
            return;
        }
        let camera_name = self
            .app
            .db(|s| s.camera(seen.camera))
            .ok()
            .flatten()
            .map(|c| c.settings.name)
            .unwrap_or_default();
        // The event as it is now: the kind and zones that alert.
        let event = Event {
            kind: seen.kind.name().to_owned(),
            zones: seen.zones.clone(),
            ..event
        };
        let message = |phase| {
            let message = Message {
                phase,
                camera_id: seen.camera.to_string(),
                camera_name: camera_name.clone(),
                event: serde_json::to_value(EventView::new(&event)).expect("an event serializes"),
            };
            serde_json::to_string(&message).expect("a message serializes")
        };
        let (alert, update) = (message(Phase::Alert), message(Phase::Update));
        let rows: Vec<(Uuid, String)> = decided
            .iter()
            .map(|(d, decision)| {
                let text = match decision {
                    Decision::Alert => alert.clone(),
                    Decision::Update => update.clone(),
                };
                (*d, text)
            })
            .collect();
        if decided.iter().any(|(_, d)| *d == Decision::Alert) {
            self.picture(seen.camera, seen.event);
        }
        match self.app.db(|s| s.queue_alerts(&rows, now, MAX_QUEUED)) {
            Ok(_) => {
                log::info!(
                    "alerts: {} {} of camera {} for {} destination(s)",
                    seen.kind.name(),
                    seen.event,
                    seen.camera,
                    rows.len()
                );
                for (destination, _) in &decided {
                    self.deliveries.wake(*destination);
                }
                self.app.deliveries_changed();
            }
            Err(e) => log::error!("alerts: cannot write the outbox: {}", e.message),
        }
    }

    /// What the notice tells of its event, with the event as stored.
    fn sighting(&self, notice: Notice) -> Option<(Sighting, Event)> {
        let stored = |id| self.app.db(|s| s.event(id)).ok().flatten();
        // The kind it tells, whether that kind is known for good, and the
        // zones entered when it tells them (else the stored event's).
        let (event, kind, settled, zones) = match notice {
            Notice::MotionStarted {
                event, classifying, ..
            } => (stored(event)?, Kind::Motion, !classifying, None),
            Notice::KindSeen {
                event, kind, zones, ..
            } => (stored(event)?, kind, true, Some(zones)),
            Notice::MotionEnded { event, kind, .. } => (stored(event)?, kind, true, None),
            // Written as loitering before it was told: all is as stored.
            Notice::Loitering { event, .. } => {
                let event = stored(event)?;
                return Some((as_stored(&event), event));
            }
            Notice::EventPosted { event } => {
                let event = stored(event)?;
                return Some((as_stored(&event), event));
            }
            Notice::EventFinished { event } => {
                let event = stored(event)?;
                let seen = Sighting {
                    ended: true,
                    ..as_stored(&event)
                };
                return Some((seen, event));
            }
        };
        let seen = Sighting {
            kind,
            settled,
            zones: zones.unwrap_or_else(|| event.zones.clone()),
            ..as_stored(&event)
        };
        Some((seen, event))
    }

    /// Takes the camera's picture for the alert of `event`, on a thread of
    /// its own (it may wait seconds for a frame).
    fn picture(&self, camera: Uuid, event: Uuid) {
        if !self.app.pictures.begin(event) {
            return;
        }
        let app = self.app.clone();
        let taking = crate::spawn::spawn(
            thread::Builder::new().name("alert picture".into()),
            move || {
                let camera = app.db(|s| s.camera(camera)).ok().flatten();
                let jpeg = camera.and_then(|c| app.snapshots.take(&c, &app.motion).ok());
                app.pictures.put(event, jpeg);
            },
        );
        if taking.is_err() {
            self.app.pictures.put(event, None);
        }
    }
}

/// An event as stored, its kind known.
fn as_stored(event: &Event) -> Sighting {
    Sighting {
        camera: event.camera_id,
        event: event.id,
        kind: Kind::from_name(&event.kind).unwrap_or(Kind::Motion),
        settled: true,
        zones: event.zones.clone(),
        ended: false,
        loitering: event.loitering,
    }
}

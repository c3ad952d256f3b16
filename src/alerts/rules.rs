//! Which events alert which destination, and when: the rules a person sets
//! per destination (cameras, kinds, zones, a cooldown per camera, an update
//! at the end) and the node's (armed, cameras snoozed), over what the
//! node tells of an event as it goes on. Pure: time is passed in.
//!
//! A destination that asks for `loitering` alone is alerted by loitering
//! events only, at the moment the event becomes one (someone stayed in a
//! zone longer than its `loiterSeconds`), once, like any other alert.
//!
//! An event alerts once, at the first moment its kind is known and matches
//! (`motion` only once the classifier has had its say). Its end may send
//! one update, with the clip, when asked for and only if it adds a kind or
//! a zone the alert did not have. An event that comes within a camera's
//! cooldown alerts no one, then or later.

use std::collections::{BTreeSet, HashMap, VecDeque};

use uuid::Uuid;

use crate::event::Kind;

/// A destination's rules.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// None: every camera.
    pub cameras: Option<Vec<Uuid>>,
    pub kinds: Vec<Kind>,
    /// None: anywhere; else the event must have entered one of these.
    pub zones: Option<Vec<String>>,
    /// After an alert of a camera, its events alert this destination again
    /// only this long after.
    pub cooldown_s: u32,
    /// One update at the event's end (with its clip), when it adds a kind
    /// or a zone.
    pub at_end: bool,
    /// Only events that became `loitering`.
    pub loitering: bool,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            cameras: None,
            kinds: Kind::CLASSIFIED.to_vec(),
            zones: None,
            cooldown_s: DEFAULT_COOLDOWN_S,
            at_end: false,
            loitering: false,
        }
    }
}

pub const DEFAULT_COOLDOWN_S: u32 = 60;

/// What the node knows of an event at a moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Sighting {
    pub camera: Uuid,
    pub event: Uuid,
    pub kind: Kind,
    /// Whether `kind` is known (false: `motion` while the classifier looks).
    pub settled: bool,
    pub zones: Vec<String>,
    /// The event is over and its files are done.
    pub ended: bool,
    /// Someone stayed in a zone longer than its `loiterSeconds`.
    pub loitering: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Alert,
    Update,
}

/// What was sent, per destination and event, and when each camera last
/// alerted each destination.
#[derive(Default)]
pub struct Memory {
    events: HashMap<(Uuid, Uuid), Sent>,
    /// The order events were first seen, to forget the oldest.
    order: VecDeque<(Uuid, Uuid)>,
    last_alert_ms: HashMap<(Uuid, Uuid), i64>,
}

/// Events remembered per destination at most: far more than go on at once.
const REMEMBERED: usize = 1024;

#[derive(Debug)]
enum Sent {
    Alerted {
        kinds: BTreeSet<Kind>,
        zones: BTreeSet<String>,
    },
    /// Came within the cooldown, or its update was sent: nothing more.
    Done,
}

/// Whether alerts go out at all now, for `camera`.
pub struct Gate {
    pub armed: bool,
    /// The camera's snooze is on.
    pub snoozed: bool,
}

impl Memory {
    /// What `destination` (with `rules`) is sent for `seen` at `now_ms`.
    pub fn decide(
        &mut self,
        destination: Uuid,
        rules: &Rules,
        gate: &Gate,
        seen: &Sighting,
        now_ms: i64,
    ) -> Option<Decision> {
        let key = (destination, seen.event);
        let decision = self.judge(key, rules, gate, seen, now_ms);
        if seen.ended {
            // Nothing more for it, however often its end is told.
            match self.events.get_mut(&key) {
                Some(sent) => *sent = Sent::Done,
                None => self.remember(key, Sent::Done),
            }
        }
        decision
    }

    fn judge(
        &mut self,
        key: (Uuid, Uuid),
        rules: &Rules,
        gate: &Gate,
        seen: &Sighting,
        now_ms: i64,
    ) -> Option<Decision> {
        if !gate.armed || gate.snoozed {
            // First learnt of while alerts were off or its camera snoozed:
            // its later news (its clip, its end) alerts no one either.
            if !self.events.contains_key(&key) {
                self.remember(key, Sent::Done);
            }
            return None;
        }
        if rules
            .cameras
            .as_ref()
            .is_some_and(|cameras| !cameras.contains(&seen.camera))
        {
            return None;
        }
        let matches = seen.settled
            && (seen.loitering || !rules.loitering)
            && rules.kinds.contains(&seen.kind)
            && rules
                .zones
                .as_ref()
                .is_none_or(|zones| seen.zones.iter().any(|z| zones.contains(z)));
        match self.events.get_mut(&key) {
            Some(Sent::Done) => None,
            Some(Sent::Alerted { kinds, zones }) => {
                let new =
                    !kinds.contains(&seen.kind) || seen.zones.iter().any(|z| !zones.contains(z));
                if !(seen.ended && rules.at_end && matches && new) {
                    return None;
                }
                self.events.insert(key, Sent::Done);
                Some(Decision::Update)
            }
            None if matches => {
                let camera = (key.0, seen.camera);
                let cooling = self
                    .last_alert_ms
                    .get(&camera)
                    .is_some_and(|last| now_ms - last < i64::from(rules.cooldown_s) * 1000);
                let sent = if cooling {
                    Sent::Done
                } else {
                    self.last_alert_ms.insert(camera, now_ms);
                    Sent::Alerted {
                        kinds: BTreeSet::from([seen.kind]),
                        zones: seen.zones.iter().cloned().collect(),
                    }
                };
                self.remember(key, sent);
                (!cooling).then_some(Decision::Alert)
            }
            None => None,
        }
    }

    fn remember(&mut self, key: (Uuid, Uuid), sent: Sent) {
        if self.order.len() == REMEMBERED
            && let Some(oldest) = self.order.pop_front()
        {
            self.events.remove(&oldest);
        }
        self.order.push_back(key);
        self.events.insert(key, sent);
    }

    /// Forgets a destination deleted.
    pub fn forget(&mut self, destination: Uuid) {
        self.events.retain(|(d, _), _| *d != destination);
        self.order.retain(|(d, _)| *d != destination);
        self.last_alert_ms.retain(|(d, _), _| *d != destination);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: Gate = Gate {
        armed: true,
        snoozed: false,
    };

    fn seen(camera: Uuid, event: Uuid, kind: Kind) -> Sighting {
        Sighting {
            camera,
            event,
            kind,
            settled: true,
            zones: Vec::new(),
            ended: false,
            loitering: false,
        }
    }

    #[test]
    fn an_event_alerts_once_when_its_kind_is_known() {
        let (d, camera, event) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let rules = Rules::default();
        let mut memory = Memory::default();
        let started = Sighting {
            settled: false,
            ..seen(camera, event, Kind::Motion)
        };
        assert_eq!(memory.decide(d, &rules, &OPEN, &started, 0), None);
        let person = seen(camera, event, Kind::Person);
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &person, 900),
            Some(Decision::Alert)
        );
        assert_eq!(memory.decide(d, &rules, &OPEN, &person, 1000), None, "once");
        let end = Sighting {
            ended: true,
            ..person.clone()
        };
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &end, 5000),
            None,
            "no update unless asked for"
        );
    }

    #[test]
    fn motion_alerts_only_when_settled_and_wanted() {
        let (d, camera) = (Uuid::new_v4(), Uuid::new_v4());
        let mut memory = Memory::default();
        let motion = seen(camera, Uuid::new_v4(), Kind::Motion);
        assert_eq!(
            memory.decide(d, &Rules::default(), &OPEN, &motion, 0),
            None,
            "motion is off by default"
        );
        let rules = Rules {
            kinds: vec![Kind::Motion],
            ..Rules::default()
        };
        let unsettled = Sighting {
            settled: false,
            ..motion.clone()
        };
        assert_eq!(memory.decide(d, &rules, &OPEN, &unsettled, 0), None);
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &motion, 0),
            Some(Decision::Alert)
        );
    }

    #[test]
    fn cameras_zones_armed_and_snooze_filter() {
        let (d, camera, other) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let rules = Rules {
            cameras: Some(vec![camera]),
            zones: Some(vec!["Porch".into()]),
            ..Rules::default()
        };
        let mut memory = Memory::default();
        let outside = seen(camera, Uuid::new_v4(), Kind::Person);
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &outside, 0),
            None,
            "no zone"
        );
        let elsewhere = Sighting {
            zones: vec!["Porch".into()],
            ..seen(other, Uuid::new_v4(), Kind::Person)
        };
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &elsewhere, 0),
            None,
            "camera"
        );
        let porch = Sighting {
            zones: vec!["Drive".into(), "Porch".into()],
            ..outside.clone()
        };
        let disarmed = Gate {
            armed: false,
            snoozed: false,
        };
        let snoozed = Gate {
            armed: true,
            snoozed: true,
        };
        assert_eq!(memory.decide(d, &rules, &disarmed, &porch, 0), None);
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &porch, 0),
            None,
            "learnt of while disarmed: its later news, armed, alerts no one"
        );
        let snoozed_then = Sighting {
            event: Uuid::new_v4(),
            ..porch.clone()
        };
        assert_eq!(memory.decide(d, &rules, &snoozed, &snoozed_then, 0), None);
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &snoozed_then, 0),
            None,
            "snoozed likewise"
        );
        let later = Sighting {
            event: Uuid::new_v4(),
            ..outside.clone()
        };
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &later, 0),
            None,
            "no zone yet"
        );
        let entered = Sighting {
            zones: vec!["Porch".into()],
            ..later
        };
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &entered, 0),
            Some(Decision::Alert),
            "the zone entered later"
        );
    }

    #[test]
    fn the_cooldown_is_per_camera_and_destination() {
        let (d, e, camera, other) = (
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
        );
        let rules = Rules {
            cooldown_s: 30,
            ..Rules::default()
        };
        let mut memory = Memory::default();
        // Ten events in a minute, one every 6 s: alerts at 0, 30 and 60 s.
        let alerted: Vec<i64> = (0..=10)
            .map(|i| i * 6_000)
            .filter(|&at| {
                let event = seen(camera, Uuid::new_v4(), Kind::Person);
                let decided = memory.decide(d, &rules, &OPEN, &event, at);
                // Another destination and another camera are not held back.
                assert_eq!(
                    memory.decide(
                        e,
                        &rules,
                        &OPEN,
                        &seen(camera, event.event, Kind::Person),
                        at
                    ),
                    (at % 30_000 == 0).then_some(Decision::Alert)
                );
                assert_eq!(
                    memory.decide(
                        d,
                        &rules,
                        &OPEN,
                        &seen(other, Uuid::new_v4(), Kind::Person),
                        at
                    ),
                    (at % 30_000 == 0).then_some(Decision::Alert)
                );
                decided.is_some()
            })
            .collect();
        assert_eq!(alerted, [0, 30_000, 60_000]);
        // An event held back stays so, when a second kind comes after the cooldown.
        let held = seen(camera, Uuid::new_v4(), Kind::Person);
        assert_eq!(memory.decide(d, &rules, &OPEN, &held, 61_000), None);
        let later = seen(camera, held.event, Kind::Vehicle);
        assert_eq!(memory.decide(d, &rules, &OPEN, &later, 95_000), None);
    }

    #[test]
    fn the_update_at_the_end_only_adds_a_kind_or_a_zone() {
        let (d, camera) = (Uuid::new_v4(), Uuid::new_v4());
        let rules = Rules {
            at_end: true,
            cooldown_s: 0,
            ..Rules::default()
        };
        let mut memory = Memory::default();
        let alert = |memory: &mut Memory, zones: &[&str]| {
            let event = Sighting {
                zones: zones.iter().map(|z| z.to_string()).collect(),
                ..seen(camera, Uuid::new_v4(), Kind::Person)
            };
            assert_eq!(
                memory.decide(d, &rules, &OPEN, &event, 0),
                Some(Decision::Alert)
            );
            event
        };
        let same = alert(&mut memory, &["Porch"]);
        let end = Sighting {
            ended: true,
            ..same
        };
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &end, 1),
            None,
            "nothing new"
        );

        let first = alert(&mut memory, &["Porch"]);
        let end = Sighting {
            ended: true,
            zones: vec!["Porch".into(), "Door".into()],
            ..first
        };
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &end, 1),
            Some(Decision::Update)
        );
        assert_eq!(memory.decide(d, &rules, &OPEN, &end, 2), None, "one update");

        let car = alert(&mut memory, &[]);
        let end = Sighting {
            ended: true,
            kind: Kind::Vehicle,
            ..car
        };
        assert_eq!(
            memory.decide(d, &rules, &OPEN, &end, 1),
            Some(Decision::Update),
            "a new kind"
        );
    }

    #[test]
    fn a_destination_for_loitering_is_alerted_when_the_event_becomes_so() {
        let (d, other, camera) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let loitering = Rules {
            loitering: true,
            at_end: true,
            ..Rules::default()
        };
        let mut memory = Memory::default();
        let person = seen(camera, Uuid::new_v4(), Kind::Person);
        assert_eq!(memory.decide(d, &loitering, &OPEN, &person, 0), None);
        assert_eq!(
            memory.decide(other, &Rules::default(), &OPEN, &person, 0),
            Some(Decision::Alert),
            "a destination for every person"
        );
        let lingers = Sighting {
            loitering: true,
            ..person.clone()
        };
        assert_eq!(
            memory.decide(d, &loitering, &OPEN, &lingers, 10_000),
            Some(Decision::Alert),
            "at the moment it loiters"
        );
        assert_eq!(memory.decide(d, &loitering, &OPEN, &lingers, 11_000), None);
        assert_eq!(
            memory.decide(other, &Rules::default(), &OPEN, &lingers, 10_000),
            None,
            "the other destination had its alert"
        );
        let end = Sighting {
            ended: true,
            ..lingers
        };
        assert_eq!(memory.decide(d, &loitering, &OPEN, &end, 12_000), None);
        // An event that never loiters alerts it not even at its end.
        let passes = seen(camera, Uuid::new_v4(), Kind::Vehicle);
        let ended = Sighting {
            ended: true,
            ..passes.clone()
        };
        assert_eq!(memory.decide(d, &loitering, &OPEN, &passes, 70_000), None);
        assert_eq!(memory.decide(d, &loitering, &OPEN, &ended, 80_000), None);
    }

    #[test]
    fn memory_is_bounded_and_forgets_a_destination() {
        let (d, camera) = (Uuid::new_v4(), Uuid::new_v4());
        let rules = Rules {
            cooldown_s: 0,
            ..Rules::default()
        };
        let mut memory = Memory::default();
        for _ in 0..REMEMBERED + 5 {
            memory.decide(
                d,
                &rules,
                &OPEN,
                &seen(camera, Uuid::new_v4(), Kind::Person),
                0,
            );
        }
        assert_eq!(memory.events.len(), REMEMBERED);
        memory.forget(d);
        assert!(memory.events.is_empty() && memory.order.is_empty());
        assert!(memory.last_alert_ms.is_empty());
    }
}

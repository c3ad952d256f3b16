//! Who lingers: a person or vehicle inside a zone with `loiterSeconds` for
//! longer than that makes the event under way `loitering`, at that moment
//! (Frigate's `loitering_time`). Inside is where a zone is entered
//! (`zones.rs`): the bottom centre of the classifier's box in the zone's
//! polygon, and the zone must be meant for the kind. The node tracks no
//! single object: a zone has one stay at a time, held by any sighting
//! inside of a kind it is meant for, and broken by [`GAP_MS`] with none.
//! The evidence is the classifier's sightings, and as the tally stops
//! cropping once the kind is settled, and a person who stands still makes
//! no motion to crop, [`Loiter::look`] asks for a crop of where the stay
//! was last seen every [`LOOK_EVERY_MS`] while a stay is open and not yet
//! loitering. Pure: times (wall clock, ms, as sightings carry them) are
//! passed in.

use super::zones::bottom_centre;
use crate::cameras::camera::Zone;
use crate::classify::tally::Sighting;
use crate::event::Kind;
use crate::media::area::Area;

/// A stay with no sighting inside for longer than this is over: someone
/// who comes back starts a new one.
pub const GAP_MS: i64 = 10_000;
/// How often where a stay was last seen is cropped again, while it is not
/// yet loitering: at most one crop in 2 s of the classifier's time a camera.
pub const LOOK_EVERY_MS: i64 = 2_000;

/// The kinds that loiter.
fn loiters(kind: Kind) -> bool {
    matches!(kind, Kind::Person | Kind::Vehicle)
}

/// Someone (or something) in a zone since `since_ms`, last seen at
/// `last_ms` in `area`; loitering if seen there after `due_ms`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stay {
    since_ms: i64,
    due_ms: i64,
    last_ms: i64,
    area: Area,
}

/// The loitering of one event: a camera's zones' stays, and which zones
/// loiter.
#[derive(Debug, Default)]
pub struct Loiter {
    /// Per zone (as the camera's `zones`): its open stay.
    stays: Vec<Option<Stay>>,
    /// Per zone: loitering in this event (never off again until it ends).
    loitering: Vec<bool>,
    /// Zones turned loitering and not yet told.
    untold: bool,
    last_look_ms: Option<i64>,
}

impl Loiter {
    pub fn new(zones: &[Zone]) -> Loiter {
        Loiter {
            stays: vec![None; zones.len()],
            loitering: vec![false; zones.len()],
            untold: false,
            last_look_ms: None,
        }
    }

    /// Takes the classifier's sightings (each at its frame's time); returns
    /// whether a zone began loitering with them.
    pub fn saw(&mut self, zones: &[Zone], seen: &[Sighting]) -> bool {
        let mut began = false;
        let mut seen: Vec<&Sighting> = seen
            .iter()
            .filter(|s| loiters(s.kind) && s.passes())
            .collect();
        seen.sort_by_key(|s| s.at_ms);
        for sighting in seen {
            let (x, y) = bottom_centre(&sighting.area);
            for (i, zone) in zones.iter().enumerate() {
                let Some(loiter) = zone.loiter else { continue };
                if i >= self.stays.len()
                    || !zone.kinds.contains(&sighting.kind)
                    || !zone.polygon.contains(x, y)
                {
                    continue;
                }
                let (at, loiter_ms) = (sighting.at_ms, i64::from(loiter.0) * 1000);
                let stay = match self.stays[i] {
                    Some(stay) if at - stay.last_ms <= GAP_MS => Stay {
                        since_ms: stay.since_ms.min(at),
                        due_ms: stay.since_ms.min(at) + loiter_ms,
                        last_ms: stay.last_ms.max(at),
                        area: if at >= stay.last_ms {
                            sighting.area
                        } else {
                            stay.area
                        },
                    },
                    _ => Stay {
                        since_ms: at,
                        due_ms: at + loiter_ms,
                        last_ms: at,
                        area: sighting.area,
                    },
                };
                self.stays[i] = Some(stay);
                // Longer than loiterSeconds: seen inside past it.
                if !self.loitering[i] && at > stay.due_ms {
                    self.loitering[i] = true;
                    began = true;
                }
            }
        }
        self.untold |= began;
        began
    }

    /// Whether any zone loiters.
    pub fn loitering(&self) -> bool {
        self.loitering.contains(&true)
    }

    /// The names of the zones that loiter, once after each zone began to
    /// (None: nothing new to tell).
    pub fn news(&mut self, zones: &[Zone]) -> Option<Vec<String>> {
        if !std::mem::take(&mut self.untold) {
            return None;
        }
        Some(
            zones
                .iter()
                .zip(&self.loitering)
                .filter(|(_, on)| **on)
                .map(|(zone, _)| zone.name.clone())
                .collect(),
        )
    }

    /// Where to crop to see whether a stay goes on, at `now_ms`, when one
    /// is due (every [`LOOK_EVERY_MS`], and as soon as a stay's time is up,
    /// so that it loiters at that moment, not up to 2 s after): the latest
    /// place an open stay not yet loitering was seen.
    pub fn look(&mut self, now_ms: i64) -> Option<Area> {
        let open: Vec<Stay> = self
            .stays
            .iter()
            .zip(&self.loitering)
            .filter_map(|(stay, on)| stay.filter(|s| !on && now_ms - s.last_ms <= GAP_MS))
            .collect();
        let due = self.last_look_ms.is_none_or(|last| {
            now_ms - last >= LOOK_EVERY_MS
                || open.iter().any(|s| s.due_ms < now_ms && last <= s.due_ms)
        });
        if !due {
            return None;
        }
        let area = open.iter().max_by_key(|s| s.last_ms)?.area;
        self.last_look_ms = Some(now_ms);
        Some(area)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::camera::checked_zones;
    use serde_json::json;

    /// A zone as the API takes it.
    fn zone(
        name: &str,
        [left, top, right, bottom]: [f32; 4],
        kinds: &[Kind],
        loiter: Option<u32>,
    ) -> Zone {
        let polygon = [[left, top], [right, top], [right, bottom], [left, bottom]];
        let kinds: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        let mut zone = json!({"name": name, "polygon": polygon, "kinds": kinds});
        if let Some(seconds) = loiter {
            zone["loiterSeconds"] = json!(seconds);
        }
        checked_zones(&json!([zone])).unwrap().remove(0)
    }

    /// A person (half the frame tall) standing with their feet at `x`, 0.9.
    fn person(x: f32, at_ms: i64) -> Sighting {
        seen(Kind::Person, x, 0.8, at_ms)
    }

    fn seen(kind: Kind, x: f32, score: f32, at_ms: i64) -> Sighting {
        Sighting {
            kind,
            score,
            area: Area::new(x - 0.1, 0.4, x + 0.1, 0.9),
            at_ms,
        }
    }

    const ALL: [Kind; 5] = Kind::ALL;

    /// Feeds one sighting every `every` ms from `from` to `to`; returns
    /// when a zone began loitering (the sighting's time).
    fn run(
        loiter: &mut Loiter,
        zones: &[Zone],
        sightings: impl Fn(i64) -> Vec<Sighting>,
        from: i64,
        to: i64,
        every: i64,
    ) -> Vec<i64> {
        let mut began = Vec::new();
        let mut at = from;
        while at <= to {
            if loiter.saw(zones, &sightings(at)) {
                began.push(at);
            }
            at += every;
        }
        began
    }

    #[test]
    fn a_person_in_a_zone_longer_than_its_seconds_loiters_then_and_not_before() {
        let zones = [
            zone("Door", [0.0, 0.5, 0.5, 1.0], &ALL, Some(10)),
            zone("Drive", [0.5, 0.5, 1.0, 1.0], &ALL, None),
        ];
        let mut loiter = Loiter::new(&zones);
        assert!(!loiter.loitering());
        assert_eq!(loiter.news(&zones), None);
        // In the door's zone from 1_000, seen every 500 ms.
        let began = run(
            &mut loiter,
            &zones,
            |at| vec![person(0.25, at)],
            1_000,
            30_000,
            500,
        );
        assert_eq!(began, [11_500], "once, the first sighting past 10 s inside");
        assert!(loiter.loitering());
        assert_eq!(loiter.news(&zones), Some(vec!["Door".to_owned()]));
        assert_eq!(loiter.news(&zones), None, "told once");

        // Long in a zone without loiterSeconds: never.
        let mut loiter = Loiter::new(&zones);
        assert!(
            run(
                &mut loiter,
                &zones,
                |at| vec![person(0.75, at)],
                0,
                60_000,
                500
            )
            .is_empty()
        );
        assert!(!loiter.loitering());
        assert_eq!(loiter.news(&zones), None);
    }

    #[test]
    fn only_people_and_vehicles_the_zone_is_for_that_pass_and_stay_loiter() {
        use Kind::{Animal, Person, Vehicle};
        let zones = [zone("Drive", [0.0, 0.0, 1.0, 1.0], &[Vehicle], Some(5))];
        // A cat, a person (the zone is for vehicles), a car too weak to count.
        for sighting in [
            seen(Animal, 0.5, 0.9, 0),
            seen(Person, 0.5, 0.9, 0),
            seen(Vehicle, 0.5, 0.2, 0),
        ] {
            let mut loiter = Loiter::new(&zones);
            let began = run(
                &mut loiter,
                &zones,
                |at| {
                    vec![Sighting {
                        at_ms: at,
                        ..sighting
                    }]
                },
                0,
                30_000,
                1_000,
            );
            assert!(began.is_empty(), "{sighting:?}");
        }
        // A car that passes.
        let mut loiter = Loiter::new(&zones);
        let began = run(
            &mut loiter,
            &zones,
            |at| vec![seen(Vehicle, 0.5, 0.8, at)],
            0,
            30_000,
            1_000,
        );
        assert_eq!(began, [6_000]);
    }

    #[test]
    fn a_stay_is_broken_by_a_gap_or_by_being_outside() {
        let zones = [zone("Door", [0.0, 0.0, 0.5, 1.0], &ALL, Some(10))];
        let mut loiter = Loiter::new(&zones);
        // Inside 8 s, unseen past the gap, back for 8 s: two stays of 8 s.
        assert!(
            run(
                &mut loiter,
                &zones,
                |at| vec![person(0.25, at)],
                0,
                8_000,
                1_000
            )
            .is_empty()
        );
        let back = 8_000 + GAP_MS + 1;
        assert!(
            run(
                &mut loiter,
                &zones,
                |at| vec![person(0.25, at)],
                back,
                back + 8_000,
                1_000
            )
            .is_empty()
        );
        // Seen outside the zone (their feet beyond it) in between: no evidence.
        let mut loiter = Loiter::new(&zones);
        let began = run(
            &mut loiter,
            &zones,
            |at| match (at / 1_000) % 20 < 5 {
                true => vec![person(0.25, at)],
                false => vec![person(0.75, at)],
            },
            0,
            120_000,
            1_000,
        );
        assert!(began.is_empty(), "{began:?}");
        // A gap shorter than GAP_MS holds the stay.
        let mut loiter = Loiter::new(&zones);
        let began = run(
            &mut loiter,
            &zones,
            |at| match at == 0 || at >= GAP_MS {
                true => vec![person(0.25, at)],
                false => Vec::new(),
            },
            0,
            30_000,
            1_000,
        );
        assert_eq!(began, [11_000]);
    }

    #[test]
    fn a_crop_is_due_every_two_seconds_while_a_stay_is_open_and_not_loitering() {
        let zones = [
            zone("Door", [0.0, 0.0, 0.5, 1.0], &ALL, Some(10)),
            zone("Path", [0.5, 0.0, 1.0, 1.0], &ALL, None),
        ];
        let mut loiter = Loiter::new(&zones);
        assert_eq!(loiter.look(0), None, "no one in a zone that loiters");
        loiter.saw(&zones, &[person(0.75, 0)]);
        assert_eq!(loiter.look(0), None, "no loiterSeconds there");
        loiter.saw(&zones, &[person(0.25, 1_000)]);
        let area = person(0.25, 0).area;
        assert_eq!(loiter.look(1_000), Some(area));
        assert_eq!(loiter.look(2_999), None);
        assert_eq!(loiter.look(3_000), Some(area));
        // Not seen since: looked for until the gap is over.
        assert_eq!(loiter.look(1_000 + GAP_MS), Some(area));
        assert_eq!(loiter.look(1_001 + GAP_MS + LOOK_EVERY_MS), None);
        // Its time up (10 s from 1_000): looked at at once, not at the next 2 s.
        let mut loiter = Loiter::new(&zones);
        run(
            &mut loiter,
            &zones,
            |at| vec![person(0.25, at)],
            1_000,
            10_000,
            1_000,
        );
        assert_eq!(loiter.look(10_000), Some(area));
        assert_eq!(loiter.look(11_000), None, "1 s since the last");
        assert_eq!(loiter.look(11_001), Some(area), "past its time");
        assert_eq!(loiter.look(11_200), None, "once");
        // Loitering: no more crops are needed.
        let mut loiter = Loiter::new(&zones);
        run(
            &mut loiter,
            &zones,
            |at| vec![person(0.25, at)],
            0,
            12_000,
            1_000,
        );
        assert!(loiter.loitering());
        assert_eq!(loiter.look(12_000), None);
    }
}

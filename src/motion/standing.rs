//! What stands in the picture, as the node found it: a car that parked, a
//! person who waits (from the classifier's answers on what stood still,
//! `still`), a package (a thing left that stayed). When the picture
//! changes where one stands, the event may be its going: it is, if by the
//! event's end the place has lost most of its detail (the edges it had
//! when the thing stood there: a bare place has few), and the event is then
//! of its kind, which the node knew before it moved, not of a guess from a
//! blurred crop of it leaving. Forgotten when gone, or when the scene is
//! learnt anew (the lights). Pure, with time passed in.

use crate::classify::tally::{self, Sighting};
use crate::event::{Kind, SeenObject};
use crate::media::area::Area;

/// The most things remembered at once (the oldest goes first).
const MOST: usize = 8;
/// A thing found where another stands, over at least this share of either
/// box (the smaller), takes its place.
const SAME_PLACE: f32 = 0.5;
/// A place that keeps less than this share of the detail it had while a
/// thing stood there is bare: the thing left.
const KEPT_DETAIL: f32 = 0.5;

/// A thing that stands in the picture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stood {
    pub kind: Kind,
    /// How sure the node was of its kind.
    pub score: f32,
    /// Where it stands, as shares of the picture.
    pub area: Area,
    /// Since when it stands (wall clock, ms).
    pub since_ms: i64,
    /// The detail of its place while it stood there (`Detector::detail`).
    pub detail: u64,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    stood: Stood,
    /// What moved in the event under way touched it.
    touched: bool,
}

/// The things standing in one camera's picture.
#[derive(Debug, Default)]
pub struct Standing {
    things: Vec<Entry>,
}

impl Standing {
    /// Things found standing. Each takes the place of what stood where it
    /// stands.
    pub fn stand(&mut self, stood: &[Stood]) {
        for stood in stood {
            self.things
                .retain(|e| e.stood.area.overlap(&stood.area) < SAME_PLACE);
            if self.things.len() == MOST {
                self.things.remove(0);
            }
            self.things.push(Entry {
                stood: *stood,
                touched: false,
            });
        }
    }

    /// What moved (`moving`: the boxes of what changes) in the event under
    /// way: the things it touches may be leaving.
    pub fn moved(&mut self, moving: &[Area]) {
        for entry in &mut self.things {
            entry.touched |= moving.iter().any(|m| m.overlap(&entry.stood.area) > 0.0);
        }
    }

    /// The things that what moved touched in the event under way: those
    /// that may be leaving.
    pub fn leaving(&self) -> Vec<Stood> {
        self.things
            .iter()
            .filter(|e| e.touched)
            .map(|e| e.stood)
            .collect()
    }

    /// The event under way ended; `detail`: the detail of a place now. A
    /// thing whose place kept less than half the detail it had has gone.
    /// Returns those gone that what moved touched: the event was their
    /// going.
    pub fn ended(&mut self, detail: impl Fn(&Area) -> u64) -> Vec<Stood> {
        let mut gone = Vec::new();
        self.things.retain_mut(|entry| {
            let there = detail(&entry.stood.area) as f32 >= KEPT_DETAIL * entry.stood.detail as f32;
            if !there && entry.touched {
                gone.push(entry.stood);
            }
            entry.touched = false;
            there
        });
        gone
    }

    /// The event under way ended with the frames (the decoder stopped):
    /// what it touched is not known to have left.
    pub fn interrupted(&mut self) {
        for entry in &mut self.things {
            entry.touched = false;
        }
    }

    /// The scene is learnt anew (the lights changed): what stood is not
    /// known any more.
    pub fn clear(&mut self) {
        self.things.clear();
    }
}

/// The event's kind, with where and how sure: the strongest (as the
/// tally ranks kinds seen at once; of one kind, the best scored) of what the
/// classifier decided (`decided`) and the things known to stand there that
/// are leaving (`leaving`, taken as seen at `at_ms`, the event's start,
/// when they still stood).
pub fn strongest(decided: Option<Sighting>, leaving: &[Stood], at_ms: i64) -> Option<Sighting> {
    leaving
        .iter()
        .map(|s| Sighting {
            kind: s.kind,
            score: s.score,
            area: s.area,
            at_ms,
        })
        .chain(decided)
        .min_by(|a, b| {
            let rank = |s: &Sighting| tally::rank(s.kind);
            rank(a).cmp(&rank(b)).then(b.score.total_cmp(&a.score))
        })
}

/// The things leaving as an event's objects, from `first_ms` (the event's
/// start) to `last_ms`.
pub fn objects(leaving: &[Stood], first_ms: i64, last_ms: i64) -> Vec<SeenObject> {
    leaving
        .iter()
        .map(|s| SeenObject {
            kind: s.kind,
            score: s.score,
            area: s.area,
            first_seen_ms: first_ms,
            last_seen_ms: last_ms,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn car(since_ms: i64) -> Stood {
        Stood {
            kind: Kind::Vehicle,
            score: 0.8,
            area: Area::new(0.3, 0.3, 0.7, 0.9),
            since_ms,
            detail: 1_000,
        }
    }

    /// A picture with this detail everywhere.
    fn everywhere(detail: u64) -> impl Fn(&Area) -> u64 {
        move |_| detail
    }

    #[test]
    fn a_car_that_parked_and_drives_off_is_named_when_its_place_is_bare() {
        let mut standing = Standing::default();
        let parked = car(1_000);
        // The event it came in ends with it there.
        standing.stand(&[parked]);
        standing.moved(&[parked.area]);
        assert_eq!(standing.ended(everywhere(1_000)), vec![]);
        // Someone walks past far from it: not its going.
        standing.moved(&[Area::new(0.0, 0.0, 0.1, 0.2)]);
        assert_eq!(standing.leaving(), vec![]);
        assert_eq!(standing.ended(everywhere(1_000)), vec![]);
        // It moves: it may be leaving; its place bare at the end: it left.
        standing.moved(&[Area::new(0.6, 0.3, 0.8, 0.9)]);
        assert_eq!(standing.leaving(), vec![parked]);
        assert_eq!(standing.ended(everywhere(499)), vec![parked]);
        // Forgotten: the next event over its place is not its going.
        standing.moved(&[parked.area]);
        assert_eq!(standing.leaving(), vec![]);
    }

    #[test]
    fn someone_passing_in_front_of_it_is_not_its_going() {
        let mut standing = Standing::default();
        let parked = car(1_000);
        standing.stand(&[parked]);
        standing.moved(&[Area::new(0.2, 0.4, 0.4, 0.9)]);
        assert_eq!(standing.leaving(), vec![parked]);
        // Its place keeps its detail (a little less in another light): still there.
        assert_eq!(standing.ended(everywhere(500)), vec![]);
        standing.moved(&[parked.area]);
        assert_eq!(standing.leaving(), vec![parked]);
        // Bare, but nothing moved over it: gone, not named.
        standing.ended(everywhere(0));
        standing.moved(&[parked.area]);
        assert_eq!(standing.leaving(), vec![]);
    }

    #[test]
    fn the_lights_and_a_stopped_decoder() {
        let mut standing = Standing::default();
        standing.stand(&[car(1)]);
        standing.moved(&[car(1).area]);
        standing.interrupted();
        assert_eq!(standing.leaving(), vec![]);
        standing.clear();
        standing.moved(&[car(1).area]);
        assert_eq!(standing.ended(everywhere(0)), vec![]);
    }

    #[test]
    fn a_thing_standing_where_another_stood_takes_its_place_and_few_are_kept() {
        let mut standing = Standing::default();
        standing.stand(&[car(1)]);
        standing.stand(&[car(2)]);
        standing.moved(&[Area::new(0.0, 0.0, 1.0, 1.0)]);
        assert_eq!(standing.leaving(), vec![car(2)]);
        let apart: Vec<Stood> = (0..10)
            .map(|i| Stood {
                area: Area::new(0.1 * i as f32, 0.0, 0.1 * i as f32 + 0.05, 0.1),
                ..car(i)
            })
            .collect();
        standing.stand(&apart);
        standing.moved(&[Area::new(0.0, 0.0, 1.0, 1.0)]);
        assert_eq!(standing.leaving(), apart[2..].to_vec());
    }

    #[test]
    fn what_is_known_to_be_leaving_counts_as_a_sighting() {
        let decided = Sighting {
            kind: Kind::Person,
            score: 0.7,
            area: Area::new(0.0, 0.0, 0.1, 0.1),
            at_ms: 50,
        };
        let parked = car(1);
        assert_eq!(strongest(None, &[], 9), None);
        assert_eq!(strongest(Some(decided), &[], 9), Some(decided));
        let known = Sighting {
            kind: Kind::Vehicle,
            score: 0.8,
            area: parked.area,
            at_ms: 9,
        };
        // A person walking past a car that drives off: the person, as
        // the tally ranks kinds seen at once, however sure of the car.
        assert_eq!(strongest(Some(decided), &[parked], 9), Some(decided));
        assert_eq!(strongest(None, &[parked], 9), Some(known));
        // Of one kind, the surer.
        let surer = Sighting {
            score: 0.9,
            ..known
        };
        assert_eq!(strongest(Some(surer), &[parked], 9), Some(surer));
    }
}

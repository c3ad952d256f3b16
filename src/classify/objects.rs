//! The objects of one event: each thing the classifier saw, once however
//! many crops showed it. A sighting that passes its kind's threshold is of
//! the object of the same kind whose last box it follows (its centre within
//! that box widened each way by half its size and by its size again for
//! each second since, three at most: the crops of one thing may be seconds
//! apart while others take their turns, and a person walks about their own
//! width in a second, a car in the distance too); otherwise it is a new
//! object. Each object keeps its best score,
//! its box at that score (as shares of the picture) and when it was first
//! and last seen. An event lists at most [`MAX_LISTED`], the best scored.
//! Pure: times come with the sightings.

use super::tally::Sighting;
use crate::event::{Kind, SeenObject};
use crate::media::area::Area;

/// The objects an event lists.
pub const MAX_LISTED: usize = 8;
/// The objects followed at once; past that, the worst scored is forgotten
/// (a busy street may show hundreds of cars in one long event).
const MAX_FOLLOWED: usize = 32;

struct Followed {
    object: SeenObject,
    /// Where it was last seen.
    last: Area,
}

#[derive(Default)]
pub struct Objects {
    followed: Vec<Followed>,
}

impl Objects {
    /// Sightings of a crop (those that do not pass count for nothing).
    pub fn saw(&mut self, sightings: &[Sighting]) {
        for s in sightings.iter().filter(|s| s.passes()) {
            let centre = (
                (s.area.left + s.area.right) / 2.0,
                (s.area.top + s.area.bottom) / 2.0,
            );
            let distance = |f: &Followed| {
                let (x, y) = (
                    (f.last.left + f.last.right) / 2.0,
                    (f.last.top + f.last.bottom) / 2.0,
                );
                (x - centre.0).abs() + (y - centre.1).abs()
            };
            let same = self
                .followed
                .iter_mut()
                .filter(|f| {
                    let since_ms = s.at_ms - f.object.last_seen_ms;
                    f.object.kind == s.kind && follows(&f.last, since_ms, centre)
                })
                .min_by(|a, b| distance(a).total_cmp(&distance(b)));
            match same {
                Some(f) => {
                    let o = &mut f.object;
                    if s.score > o.score {
                        o.score = s.score;
                        o.area = s.area;
                    }
                    o.first_seen_ms = o.first_seen_ms.min(s.at_ms);
                    o.last_seen_ms = o.last_seen_ms.max(s.at_ms);
                    f.last = s.area;
                }
                None => {
                    if self.followed.len() >= MAX_FOLLOWED {
                        self.forget_worst();
                    }
                    self.followed.push(Followed {
                        object: SeenObject {
                            kind: s.kind,
                            score: s.score,
                            area: s.area,
                            first_seen_ms: s.at_ms,
                            last_seen_ms: s.at_ms,
                        },
                        last: s.area,
                    });
                }
            }
        }
    }

    /// The event's objects, of the kinds `listed` lets through: the best
    /// scored [`MAX_LISTED`], in the order they were first seen.
    pub fn listed(&self, listed: impl Fn(Kind) -> bool) -> Vec<SeenObject> {
        let mut out: Vec<SeenObject> = self
            .followed
            .iter()
            .map(|f| f.object)
            .filter(|o| listed(o.kind))
            .collect();
        while out.len() > MAX_LISTED
            && let Some(i) = (0..out.len()).min_by(|&a, &b| out[a].score.total_cmp(&out[b].score))
        {
            out.remove(i);
        }
        out
    }

    fn forget_worst(&mut self) {
        let worst = (0..self.followed.len()).min_by(|&a, &b| {
            let score = |i: usize| self.followed[i].object.score;
            score(a).total_cmp(&score(b))
        });
        if let Some(i) = worst {
            self.followed.remove(i);
        }
    }
}

/// Whether a box centred at `centre` follows one seen at `last`
/// `since_ms` before.
fn follows(last: &Area, since_ms: i64, (x, y): (f32, f32)) -> bool {
    let reach = 0.5 + (since_ms as f32 / 1000.0).clamp(0.0, 3.0);
    let (w, h) = (last.right - last.left, last.bottom - last.top);
    x >= last.left - w * reach
        && x <= last.right + w * reach
        && y >= last.top - h * reach
        && y <= last.bottom + h * reach
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(kind: Kind, score: f32, area: Area, at_ms: i64) -> Sighting {
        Sighting {
            kind,
            score,
            area,
            at_ms,
        }
    }

    fn all(_: Kind) -> bool {
        true
    }

    #[test]
    fn one_thing_moving_is_one_object_its_box_at_its_best() {
        let mut objects = Objects::default();
        // A person walks right, 0.1 of the picture a crop.
        for (n, score) in [0.6, 0.9, 0.7, 0.3, 0.8].into_iter().enumerate() {
            let x = 0.1 * n as f32;
            let area = Area::new(x, 0.2, x + 0.2, 0.9);
            objects.saw(&[seen(Kind::Person, score, area, 1000 + 333 * n as i64)]);
        }
        let listed = objects.listed(all);
        assert_eq!(
            listed,
            vec![SeenObject {
                kind: Kind::Person,
                score: 0.9,
                area: Area::new(0.1, 0.2, 0.3, 0.9),
                first_seen_ms: 1000,
                // The sighting under the threshold (0.3) counts for nothing.
                last_seen_ms: 1000 + 333 * 4,
            }]
        );
    }

    #[test]
    fn a_thing_seen_seconds_later_further_on_is_the_same() {
        // A person 0.08 wide seen again 4 s later 0.11 to the left (the
        // crops went to a tree meanwhile): one object. Another person
        // 0.4 away a second later: a second object.
        let mut objects = Objects::default();
        let at = |x: f32| Area::new(x, 0.67, x + 0.08, 0.95);
        objects.saw(&[seen(Kind::Person, 0.7, at(0.82), 0)]);
        objects.saw(&[seen(Kind::Person, 0.6, at(0.71), 4_200)]);
        assert_eq!(objects.listed(all).len(), 1, "{:?}", objects.listed(all));
        objects.saw(&[seen(Kind::Person, 0.6, at(0.31), 5_200)]);
        assert_eq!(objects.listed(all).len(), 2);
    }

    #[test]
    fn things_apart_or_of_other_kinds_are_objects_of_their_own() {
        let mut objects = Objects::default();
        let left = Area::new(0.05, 0.4, 0.3, 0.9);
        let right = Area::new(0.6, 0.2, 0.9, 0.95);
        // A car on the left, a person on the right, then a person where
        // the car is (getting out of it).
        objects.saw(&[seen(Kind::Vehicle, 0.8, left, 0)]);
        objects.saw(&[seen(Kind::Person, 0.9, right, 333)]);
        objects.saw(&[seen(Kind::Vehicle, 0.85, left, 666)]);
        objects.saw(&[seen(Kind::Person, 0.7, left, 1000)]);
        objects.saw(&[seen(Kind::Person, 0.95, right, 1333)]);
        let got: Vec<(Kind, f32, i64, i64)> = objects
            .listed(all)
            .iter()
            .map(|o| (o.kind, o.score, o.first_seen_ms, o.last_seen_ms))
            .collect();
        assert_eq!(
            got,
            vec![
                (Kind::Vehicle, 0.85, 0, 666),
                (Kind::Person, 0.95, 333, 1333),
                (Kind::Person, 0.7, 1000, 1000),
            ]
        );
        // Only the kinds let through.
        let people = objects.listed(|k| k == Kind::Person);
        assert_eq!(people.len(), 2);
    }

    #[test]
    fn a_person_that_small_is_no_object() {
        let mut objects = Objects::default();
        let small = Area::new(0.5, 0.5, 0.52, 0.56);
        objects.saw(&[seen(Kind::Person, 0.9, small, 0)]);
        assert_eq!(objects.listed(all), vec![]);
    }

    #[test]
    fn at_most_eight_listed_the_best_and_a_bounded_number_followed() {
        let mut objects = Objects::default();
        // 40 cars, each in a place of its own, scored 0.40 to 0.79.
        for n in 0..40 {
            let x = (n % 10) as f32 / 10.0;
            let y = (n / 10) as f32 / 4.0;
            let area = Area::new(x, y, x + 0.05, y + 0.05);
            objects.saw(&[seen(Kind::Vehicle, 0.4 + 0.01 * n as f32, area, n)]);
        }
        assert_eq!(objects.followed.len(), MAX_FOLLOWED);
        let listed = objects.listed(all);
        assert_eq!(listed.len(), MAX_LISTED);
        let firsts: Vec<i64> = listed.iter().map(|o| o.first_seen_ms).collect();
        assert_eq!(firsts, (32..40).collect::<Vec<i64>>());
    }
}

//! What came and then stood still. When nothing has moved for a while but
//! the picture still differs from the scene before the event, the parts
//! that differ are grouped into things (one thing may differ in several
//! parts: a cup whose middle is the colour of the wall behind it), each
//! thing is cropped for the classifier, and its answers judged: a
//! person or an animal is someone still there (the event goes on); a
//! vehicle has parked; a part with more in it than before that is none of
//! these is a thing left behind. A thing left is watched a little longer:
//! still there and untouched, it is a `package`, left when the motion
//! stopped. The place where something was (less in it than before) is
//! nothing: something taken away makes no event of its own, the motion of
//! taking it was one. Pure, with time passed in.

use super::detector::Difference;
use crate::classify::tally::Sighting;
use crate::event::Kind;
use crate::media::area::Area;

/// How long a thing left must stay, untouched, after the event ends: with
/// the 10 s of stillness that ended it (and the running average's 15 s to
/// take it in before that), it has stood still for half a minute.
pub const LEFT_CONFIRM_MS: i64 = 10_000;

/// Parts that differ this close are one thing: the gap between their boxes,
/// across and down, at most this share of the smaller part's size (its
/// longer side). A part of a thing lies close beside the rest of it (the
/// two ends of a box whose middle is the colour of the wall behind it: a
/// gap of 0.7 of a part, measured on the test camera); a speck far off, or
/// a second thing further from the first than it is large, does not.
const SAME_THING_GAP: f32 = 1.0;

/// The parts that differ from the scene before, grouped into things: each
/// thing's box the bounding box of its parts, its share theirs added up,
/// and something there that was not (`added`) when most of its parts'
/// share is. `aspect`: the picture's width over its height, for the boxes
/// are shares of each.
pub fn things(differences: &[Difference], aspect: f32) -> Vec<Difference> {
    let mut things: Vec<(Difference, f32)> = differences
        .iter()
        .map(|d| (*d, if d.added { d.share } else { 0.0 }))
        .collect();
    // Merged until no two are close: a few parts, so pairs are cheap.
    while let Some((a, b)) = (0..things.len())
        .flat_map(|a| (a + 1..things.len()).map(move |b| (a, b)))
        .find(|&(a, b)| close(&things[a].0.area, &things[b].0.area, aspect))
    {
        let (other, added) = things.swap_remove(b);
        let (thing, was_added) = &mut things[a];
        thing.area = Area::new(
            thing.area.left.min(other.area.left),
            thing.area.top.min(other.area.top),
            thing.area.right.max(other.area.right),
            thing.area.bottom.max(other.area.bottom),
        );
        thing.share += other.share;
        *was_added += added;
    }
    things
        .into_iter()
        .map(|(thing, added)| Difference {
            added: added * 2.0 >= thing.share,
            ..thing
        })
        .collect()
}

/// Whether two parts (boxes as shares of a picture `aspect` times as wide
/// as high) are close enough to be one thing.
fn close(a: &Area, b: &Area, aspect: f32) -> bool {
    // In the picture's heights, so that across and down compare.
    let size = |x: &Area| ((x.right - x.left) * aspect).max(x.bottom - x.top);
    let reach = SAME_THING_GAP * size(a).min(size(b));
    let gap_across = (a.left.max(b.left) - a.right.min(b.right)).max(0.0) * aspect;
    let gap_down = (a.top.max(b.top) - a.bottom.min(b.bottom)).max(0.0);
    gap_across <= reach && gap_down <= reach
}

/// A thing left behind, not yet confirmed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Left {
    pub area: Area,
    /// When it was left: the event's last moving frame (wall clock, ms).
    pub left_ms: i64,
    /// How sure the node is that it is none of person, vehicle, animal.
    pub score: f32,
}

/// The classifier's answers on what stands still.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// A person or an animal is there.
    pub someone: bool,
    /// Things left behind.
    pub left: Vec<Left>,
    /// Who or what stands there, of a kind the classifier saw: each thing
    /// with something more in it than before, as its best object, in the
    /// thing's box, seen when the motion stopped.
    pub stood: Vec<Sighting>,
}

/// Judges each difference with the objects seen in its crop; `left_ms`:
/// when the motion stopped.
pub fn judge(answers: &[(Difference, Vec<Sighting>)], left_ms: i64) -> Verdict {
    let mut verdict = Verdict::default();
    for (difference, sightings) in answers {
        let seen: Vec<&Sighting> = sightings.iter().filter(|s| s.passes()).collect();
        if seen
            .iter()
            .any(|s| matches!(s.kind, Kind::Person | Kind::Animal))
        {
            verdict.someone = true;
        }
        let something = sightings
            .iter()
            .filter(|s| matches!(s.kind, Kind::Person | Kind::Vehicle | Kind::Animal))
            .map(|s| s.score)
            .fold(0.0f32, f32::max);
        let best = seen.iter().max_by(|a, b| a.score.total_cmp(&b.score));
        match best {
            _ if !difference.added => {}
            None => verdict.left.push(Left {
                area: difference.area,
                left_ms,
                score: 1.0 - something,
            }),
            Some(best) => verdict.stood.push(Sighting {
                area: difference.area,
                at_ms: left_ms,
                ..**best
            }),
        }
    }
    verdict
}

/// Things left, watched until confirmed.
#[derive(Debug, Default)]
pub struct LeftBehind {
    /// Each with the monotonic time it began to be watched.
    watched: Vec<(Left, i64)>,
}

impl LeftBehind {
    pub fn watch(&mut self, left: &[Left], mono_ms: i64) {
        self.watched.extend(left.iter().map(|l| (*l, mono_ms)));
    }

    pub fn watching(&self) -> bool {
        !self.watched.is_empty()
    }

    /// Forgets them all (a new event, the lights).
    pub fn clear(&mut self) {
        self.watched.clear();
    }

    /// What moved: a thing touched or moved is no longer watched.
    pub fn moved(&mut self, boxes: &[Area]) {
        self.watched
            .retain(|(left, _)| boxes.iter().all(|b| b.overlap(&left.area) == 0.0));
    }

    /// Whether some have been watched long enough.
    pub fn due(&self, mono_ms: i64) -> bool {
        self.watched
            .iter()
            .any(|(_, since)| mono_ms - since >= LEFT_CONFIRM_MS)
    }

    /// Those watched long enough that still differ from the scene before
    /// (with more in them than before, most of their box): they are
    /// packages. The others due are forgotten.
    pub fn confirm(&mut self, differences: &[Difference], mono_ms: i64) -> Vec<Left> {
        let (due, waiting): (Vec<_>, Vec<_>) = self
            .watched
            .drain(..)
            .partition(|(_, since)| mono_ms - since >= LEFT_CONFIRM_MS);
        self.watched = waiting;
        due.into_iter()
            .map(|(left, _)| left)
            .filter(|left| {
                differences
                    .iter()
                    .any(|d| d.added && d.area.overlap(&left.area) >= 0.5)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn difference(area: Area, added: bool) -> Difference {
        Difference {
            area,
            share: 0.02,
            added,
        }
    }

    fn seen(kind: Kind, score: f32) -> Sighting {
        Sighting {
            kind,
            score,
            area: Area::new(0.4, 0.4, 0.6, 0.9),
            at_ms: 0,
        }
    }

    #[test]
    fn who_or_what_stands_still() {
        let door = Area::new(0.4, 0.5, 0.6, 0.9);
        let left = |score| Left {
            area: door,
            left_ms: 7,
            score,
        };
        let stood = |kind, score| Sighting {
            kind,
            score,
            area: door,
            at_ms: 7,
        };
        for (answers, expected) in [
            // A person waiting: someone, and not a thing left.
            (
                vec![(difference(door, true), vec![seen(Kind::Person, 0.9)])],
                Verdict {
                    someone: true,
                    left: vec![],
                    stood: vec![stood(Kind::Person, 0.9)],
                },
            ),
            (
                vec![(difference(door, true), vec![seen(Kind::Animal, 0.8)])],
                Verdict {
                    someone: true,
                    left: vec![],
                    stood: vec![stood(Kind::Animal, 0.8)],
                },
            ),
            // A car that parked: no one, nothing left; it stands there.
            (
                vec![(difference(door, true), vec![seen(Kind::Vehicle, 0.9)])],
                Verdict {
                    someone: false,
                    left: vec![],
                    stood: vec![stood(Kind::Vehicle, 0.9)],
                },
            ),
            // Something that is none of them: left, as sure as the best
            // other kind's score leaves it.
            (
                vec![(difference(door, true), vec![])],
                Verdict {
                    left: vec![left(1.0)],
                    ..Verdict::default()
                },
            ),
            (
                vec![(difference(door, true), vec![seen(Kind::Person, 0.25)])],
                Verdict {
                    left: vec![left(0.75)],
                    ..Verdict::default()
                },
            ),
            // Where something was: nothing.
            (vec![(difference(door, false), vec![])], Verdict::default()),
        ] {
            assert_eq!(judge(&answers, 7), expected, "{answers:?}");
        }
    }

    /// A part that differs, with its share of a 16:9 picture.
    fn part(left: f32, top: f32, right: f32, bottom: f32, added: bool) -> Difference {
        Difference {
            area: Area::new(left, top, right, bottom),
            share: (right - left) * (bottom - top) * 0.6,
            added,
        }
    }

    const WIDE: f32 = 16.0 / 9.0;

    #[test]
    fn parts_close_together_are_one_thing_and_things_apart_are_two() {
        // The box of biscuits with its middle third cut away, as the test
        // camera's picture differed: two parts 44 px apart on a 640x360
        // picture, each 60 px wide and 64 high.
        let halves = [
            part(0.3125, 0.7, 0.4063, 0.8778, true),
            part(0.475, 0.7111, 0.5688, 0.9333, true),
        ];
        let one = things(&halves, WIDE);
        assert_eq!(one.len(), 1, "{one:?}");
        assert_eq!(one[0].area, Area::new(0.3125, 0.7, 0.5688, 0.9333));
        assert!(one[0].added);
        assert!((one[0].share - halves[0].share - halves[1].share).abs() < 1e-6);

        // A cup in three parts (rim, body, handle), in any order.
        let cup = [
            part(0.50, 0.52, 0.56, 0.55, true),
            part(0.56, 0.56, 0.58, 0.62, true),
            part(0.50, 0.57, 0.56, 0.7, true),
        ];
        for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0]] {
            let parts: Vec<Difference> = order.iter().map(|&i| cup[i]).collect();
            let one = things(&parts, WIDE);
            assert_eq!(one.len(), 1, "{one:?}");
            assert_eq!(one[0].area, Area::new(0.50, 0.52, 0.58, 0.7));
        }

        // Two parcels left at once, 150 px apart: two.
        let two = [
            part(0.1, 0.6, 0.3, 0.95, true),
            part(0.53, 0.6, 0.73, 0.95, true),
        ];
        assert_eq!(things(&two, WIDE), two.to_vec());
        // One above the other, apart: two as well.
        let stacked = [
            part(0.4, 0.05, 0.5, 0.2, true),
            part(0.4, 0.6, 0.5, 0.75, true),
        ];
        assert_eq!(things(&stacked, WIDE), stacked.to_vec());

        // A thing and a speck 40 px off: the speck is not part of it.
        let speck = [
            part(0.3, 0.5, 0.5, 0.9, true),
            part(0.563, 0.7, 0.57, 0.713, false),
        ];
        assert_eq!(things(&speck, WIDE), speck.to_vec());
    }

    #[test]
    fn a_thing_is_added_when_most_of_it_is() {
        // Moved a little: where it stands now (larger, as seen nearer) and
        // where it stood, side by side.
        let moved = [
            part(0.3, 0.5, 0.42, 0.9, true),
            part(0.42, 0.52, 0.5, 0.9, false),
        ];
        let one = things(&moved, WIDE);
        assert!(one.len() == 1 && one[0].added, "{one:?}");
        let taken = [
            part(0.3, 0.5, 0.35, 0.9, true),
            part(0.35, 0.5, 0.5, 0.9, false),
        ];
        let one = things(&taken, WIDE);
        assert!(one.len() == 1 && !one[0].added, "{one:?}");
    }

    #[test]
    fn two_things_left_at_once_are_two_packages_one_thing_in_parts_one() {
        let left_ms = 4_000;
        let parts = [
            // A box of biscuits in two parts, at the left.
            part(0.10, 0.6, 0.18, 0.94, true),
            part(0.23, 0.6, 0.31, 0.94, true),
            // A second thing, at the right.
            part(0.65, 0.7, 0.8, 0.95, true),
        ];
        let grouped = things(&parts, WIDE);
        let answers: Vec<(Difference, Vec<Sighting>)> =
            grouped.iter().map(|t| (*t, Vec::new())).collect();
        let verdict = judge(&answers, left_ms);
        let areas: Vec<Area> = verdict.left.iter().map(|l| l.area).collect();
        assert_eq!(
            areas,
            [
                Area::new(0.10, 0.6, 0.31, 0.94),
                Area::new(0.65, 0.7, 0.8, 0.95)
            ]
        );
        let mut behind = LeftBehind::default();
        behind.watch(&verdict.left, 0);
        // Still there, in the same parts: two packages, each whole.
        let confirmed = behind.confirm(&grouped, LEFT_CONFIRM_MS);
        assert_eq!(confirmed, verdict.left);
    }

    #[test]
    fn a_thing_left_is_a_package_once_it_stays_untouched() {
        let door = Area::new(0.4, 0.5, 0.6, 0.9);
        let thing = Left {
            area: door,
            left_ms: 1,
            score: 0.9,
        };
        let mut behind = LeftBehind::default();
        behind.watch(&[thing], 0);
        assert!(behind.watching() && !behind.due(LEFT_CONFIRM_MS - 1));
        // Motion elsewhere does not touch it.
        behind.moved(&[Area::new(0.0, 0.0, 0.2, 0.2)]);
        assert!(behind.due(LEFT_CONFIRM_MS));
        let still_there = [difference(Area::new(0.41, 0.5, 0.6, 0.88), true)];
        assert_eq!(behind.confirm(&still_there, LEFT_CONFIRM_MS), vec![thing]);
        assert!(!behind.watching());

        // Gone again, or taken away (less there than before): nothing.
        for differences in [vec![], vec![difference(door, false)]] {
            behind.watch(&[thing], 0);
            assert_eq!(behind.confirm(&differences, LEFT_CONFIRM_MS), vec![]);
        }
        // Touched: forgotten at once.
        behind.watch(&[thing], 0);
        behind.moved(&[Area::new(0.5, 0.6, 0.7, 0.7)]);
        assert!(!behind.watching());
    }
}

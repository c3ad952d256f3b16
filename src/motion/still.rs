//! What came and then stood still. When nothing has moved for a while but
//! the picture still differs from the scene before the event, the parts
//! that differ are cropped for the classifier, and its answers judged: a
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
        if difference.added && seen.is_empty() {
            verdict.left.push(Left {
                area: difference.area,
                left_ms,
                score: 1.0 - something,
            });
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
        for (answers, expected) in [
            // A person waiting: someone, and not a thing left.
            (
                vec![(difference(door, true), vec![seen(Kind::Person, 0.9)])],
                Verdict {
                    someone: true,
                    left: vec![],
                },
            ),
            (
                vec![(difference(door, true), vec![seen(Kind::Animal, 0.8)])],
                Verdict {
                    someone: true,
                    left: vec![],
                },
            ),
            // A car that parked: no one, nothing left.
            (
                vec![(difference(door, true), vec![seen(Kind::Vehicle, 0.9)])],
                Verdict::default(),
            ),
            // Something that is none of them: left, as sure as the best
            // other kind's score leaves it.
            (
                vec![(difference(door, true), vec![])],
                Verdict {
                    someone: false,
                    left: vec![left(1.0)],
                },
            ),
            (
                vec![(difference(door, true), vec![seen(Kind::Person, 0.25)])],
                Verdict {
                    someone: false,
                    left: vec![left(0.75)],
                },
            ),
            // Where something was: nothing.
            (vec![(difference(door, false), vec![])], Verdict::default()),
        ] {
            assert_eq!(judge(&answers, 7), expected, "{answers:?}");
        }
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

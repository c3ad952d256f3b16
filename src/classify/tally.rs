//! From the classifier's answers to an event's kind. While a motion event
//! is on, a crop is taken at most every third of a second for its first
//! [`BURST_CROPS`], then one a second, [`MAX_CROPS`] in all (what moved may
//! come into view later than it starts to move: a car backing out of a
//! garage shows its back first); each answer counts, for each kind the camera
//! wants, whether the kind's best object passed the kind's threshold. A
//! kind that passed in at least two crops is the event's (one crop is
//! never enough: a single frame may show a shadow that looks like a
//! person); of several (a car and a person moving at once), the strongest:
//! a person before a vehicle before an animal, as what a person watching
//! most wants told. A camera with several regions moving sends them by
//! turns (`regions::Rotation`), still one crop per due moment: the pace
//! here bounds its crops whatever the scene, and a new region (a thing
//! that just came, cropped fewer than three times) is cropped at the later pace even once the
//! event's kind is settled or its crops are spent. Pure: times are passed
//! in, so all of it is tested without waiting.

use crate::event::Kind;
use crate::media::area::Area;

/// Crops at three a second: the first four seconds of an event.
const BURST_CROPS: usize = 12;
/// Crops an event may have classified: after the first twelve, one a
/// second, to 40 s into it; an event whose kind is clear stops sooner.
pub const MAX_CROPS: usize = 48;
/// The least time between two crops of one camera, then after the burst.
const CROP_EVERY_MS: i64 = 333;
const LATER_CROP_EVERY_MS: i64 = 1_000;
/// Crops in which a kind must pass to be the event's.
const PASSES_NEEDED: usize = 2;
/// Once a kind has passed this often, more crops would not change it.
const PASSES_ENOUGH: usize = 4;

/// The kind a model label stands for (the COCO labels of the shipped
/// model); None for labels that are none of ours (a cup). COCO has no
/// label for a parcel: a package is a thing left (`motion::still`).
pub fn kind_of(label: &str) -> Option<Kind> {
    match label {
        "person" => Some(Kind::Person),
        "bicycle" | "car" | "motorcycle" | "bus" | "truck" => Some(Kind::Vehicle),
        "bird" | "cat" | "dog" | "horse" | "sheep" | "cow" | "elephant" | "bear" | "zebra"
        | "giraffe" => Some(Kind::Animal),
        _ => None,
    }
}

/// The score an object must reach to count as one of `kind`.
pub fn threshold(kind: Kind) -> f32 {
    // Chosen on real photographs and footage cropped as the node crops
    // (deploy/model/measure.py; its table is in
    // docs/design/classification.md): the lowest that passes no kind where
    // it is absent, with a margin.
    match kind {
        Kind::Person => 0.5,
        Kind::Vehicle | Kind::Animal => 0.4,
        Kind::Package | Kind::Motion => f32::INFINITY,
    }
}

/// A person less tall than this share of the frame (45 px of 360) does not
/// count: the back of a distant car that small was taken for one, and
/// SSD's smallest boxes are about that size.
const SMALLEST_PERSON: f32 = 1.0 / 8.0;

/// Whether a sighting counts at all, whatever its score.
fn counts(sighting: &Sighting) -> bool {
    sighting.kind != Kind::Person || sighting.area.bottom - sighting.area.top >= SMALLEST_PERSON
}

impl Sighting {
    /// It counts and reaches its kind's threshold.
    pub fn passes(&self) -> bool {
        counts(self) && self.score >= threshold(self.kind)
    }
}

/// An object the classifier found, placed in the frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sighting {
    pub kind: Kind,
    pub score: f32,
    /// Where, as shares of the frame.
    pub area: Area,
    /// The frame's wall-clock time (ms since the epoch).
    pub at_ms: i64,
}

/// One event's crops and what they showed.
#[derive(Debug)]
pub struct Tally {
    wanted: Vec<Kind>,
    crops: usize,
    last_crop_ms: Option<i64>,
    /// Per wanted kind: the crops it passed in, and its best sighting.
    passes: Vec<usize>,
    best: Vec<Option<Sighting>>,
}

impl Tally {
    /// An event of a camera that wants `wanted` kinds.
    pub fn new(wanted: &[Kind]) -> Tally {
        Tally {
            wanted: wanted.to_vec(),
            crops: 0,
            last_crop_ms: None,
            passes: vec![0; wanted.len()],
            best: vec![None; wanted.len()],
        }
    }

    /// Whether to crop the frame seen at `mono_ms` (a monotonic clock);
    /// `new`: the region to crop is new (`regions::Rotation::pick`).
    pub fn crop_due(&self, mono_ms: i64, new: bool) -> bool {
        let settled = self.passes.iter().any(|&p| p >= PASSES_ENOUGH);
        let every = if self.crops < BURST_CROPS {
            CROP_EVERY_MS
        } else {
            LATER_CROP_EVERY_MS
        };
        (new || (!settled && self.crops < MAX_CROPS))
            && self.last_crop_ms.is_none_or(|last| mono_ms - last >= every)
    }

    /// A crop was sent at `mono_ms`.
    pub fn cropped(&mut self, mono_ms: i64) {
        self.crops += 1;
        self.last_crop_ms = Some(mono_ms);
    }

    /// One crop's answer: the objects in it. Returns a kind that has just
    /// become the event's (its second passing crop).
    pub fn answer(&mut self, objects: &[Sighting]) -> Option<Kind> {
        let before = self.decided().map(|s| s.kind);
        for (i, &kind) in self.wanted.iter().enumerate() {
            let best = objects
                .iter()
                .filter(|o| o.kind == kind && counts(o))
                .max_by(|a, b| a.score.total_cmp(&b.score));
            let Some(&best) = best else { continue };
            if best.score >= threshold(kind) {
                self.passes[i] += 1;
            }
            if self.best[i].is_none_or(|b| best.score > b.score) {
                self.best[i] = Some(best);
            }
        }
        let after = self.decided().map(|s| s.kind);
        if after != before { after } else { None }
    }

    /// The event's kind so far, with its best sighting; None: `motion`.
    pub fn decided(&self) -> Option<Sighting> {
        (0..self.wanted.len())
            .filter(|&i| self.passes[i] >= PASSES_NEEDED)
            .filter_map(|i| self.best[i])
            .min_by_key(|s| rank(s.kind))
    }

    /// Whether `kind` passed in enough crops to be the event's.
    pub fn passed(&self, kind: Kind) -> bool {
        let i = self.wanted.iter().position(|&k| k == kind);
        i.is_some_and(|i| self.passes[i] >= PASSES_NEEDED)
    }
}

/// Of kinds seen at once, the one the event takes: the lowest.
pub fn rank(kind: Kind) -> u8 {
    match kind {
        Kind::Person => 0,
        Kind::Vehicle => 1,
        Kind::Animal => 2,
        Kind::Package | Kind::Motion => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Kind; 4] = Kind::CLASSIFIED;

    /// A sighting of something half the frame's height.
    fn seen(kind: Kind, score: f32, at_ms: i64) -> Sighting {
        Sighting {
            kind,
            score,
            area: Area {
                left: 0.4,
                top: 0.3,
                right: 0.6,
                bottom: 0.8,
            },
            at_ms,
        }
    }

    /// Runs `crops` (each the objects of one crop) through a tally;
    /// returns the kinds announced and the decision.
    fn run(wanted: &[Kind], crops: &[&[(Kind, f32)]]) -> (Vec<Kind>, Option<(Kind, f32, i64)>) {
        let mut tally = Tally::new(wanted);
        let mut announced = Vec::new();
        for (n, crop) in crops.iter().enumerate() {
            let objects: Vec<Sighting> = crop.iter().map(|&(k, s)| seen(k, s, n as i64)).collect();
            announced.extend(tally.answer(&objects));
        }
        (
            announced,
            tally.decided().map(|s| (s.kind, s.score, s.at_ms)),
        )
    }

    #[test]
    fn decisions() {
        use Kind::*;
        /// A name, the kinds wanted, the crops' objects, the kinds
        /// announced and the decision (kind, score, crop).
        type Case<'a> = (
            &'a str,
            &'a [Kind],
            &'a [&'a [(Kind, f32)]],
            Vec<Kind>,
            Option<(Kind, f32, i64)>,
        );
        let cases: &[Case] = &[
            ("nothing", &ALL, &[&[], &[], &[]], vec![], None),
            (
                "one crop is not enough",
                &ALL,
                &[&[(Person, 0.9)], &[], &[(Person, 0.2)]],
                vec![],
                None,
            ),
            (
                "two crops over the threshold; the score is the best",
                &ALL,
                &[&[(Person, 0.55)], &[(Person, 0.1)], &[(Person, 0.6)]],
                vec![Person],
                Some((Person, 0.6, 2)),
            ),
            (
                "the best of an object per crop: two people in one crop are one pass",
                &ALL,
                &[&[(Person, 0.52), (Person, 0.55)], &[]],
                vec![],
                None,
            ),
            (
                "a kind the camera does not want stays motion",
                &[Person],
                &[&[(Animal, 0.9)], &[(Animal, 0.9)]],
                vec![],
                None,
            ),
            (
                "of two kinds that passed, the stronger: a person before a vehicle",
                &ALL,
                &[
                    &[(Person, 0.55), (Vehicle, 0.6)],
                    &[(Person, 0.6), (Vehicle, 0.7)],
                ],
                vec![Person],
                Some((Person, 0.6, 1)),
            ),
            (
                "a vehicle before an animal, however well the animal scored",
                &ALL,
                &[
                    &[(Animal, 0.95), (Vehicle, 0.45)],
                    &[(Animal, 0.95), (Vehicle, 0.41)],
                ],
                vec![Vehicle],
                Some((Vehicle, 0.45, 0)),
            ),
            (
                "a stronger kind that comes later is announced too",
                &ALL,
                &[
                    &[(Vehicle, 0.8)],
                    &[(Vehicle, 0.9)],
                    &[(Person, 0.55)],
                    &[(Animal, 0.9)],
                    &[(Person, 0.7)],
                    &[(Animal, 0.9)],
                ],
                vec![Vehicle, Person],
                Some((Person, 0.7, 4)),
            ),
            (
                "a person seen once beside a car is not the event's kind",
                &ALL,
                &[&[(Vehicle, 0.8), (Person, 0.9)], &[(Vehicle, 0.9)]],
                vec![Vehicle],
                Some((Vehicle, 0.9, 1)),
            ),
            (
                "under an animal's threshold twice",
                &ALL,
                &[&[(Animal, 0.35)], &[(Animal, 0.39)]],
                vec![],
                None,
            ),
        ];
        for (name, wanted, crops, announced, decided) in cases {
            let got = run(wanted, crops);
            assert_eq!(got, (announced.clone(), *decided), "{name}");
        }
    }

    #[test]
    fn a_person_less_than_an_eighth_of_the_frame_tall_does_not_count() {
        // As the back of a distant car, 24 px of a 360-px frame, was taken
        // for a person (deploy/model/measure.py's "the car far off"): the
        // score does not matter.
        let small = |top: f32, at_ms| Sighting {
            area: Area {
                left: 0.5,
                top,
                right: 0.53,
                bottom: 0.6,
            },
            ..seen(Kind::Person, 0.9, at_ms)
        };
        let mut tally = Tally::new(&ALL);
        assert_eq!(tally.answer(&[small(0.6 - 24.0 / 360.0, 0)]), None);
        assert_eq!(tally.answer(&[small(0.6 - 44.0 / 360.0, 1)]), None);
        assert_eq!(tally.decided(), None, "two small people are no person");
        // A car that small still counts as a car.
        let car = Sighting {
            kind: Kind::Vehicle,
            ..small(0.6 - 24.0 / 360.0, 2)
        };
        tally.answer(&[car]);
        assert_eq!(tally.answer(&[car]), Some(Kind::Vehicle));
        // From an eighth of the frame's height up (45 px of 360), a person counts.
        let mut tally = Tally::new(&ALL);
        tally.answer(&[small(0.6 - 46.0 / 360.0, 0)]);
        assert_eq!(tally.answer(&[small(0.6 - 0.2, 1)]), Some(Kind::Person));
    }

    #[test]
    fn crops_are_spaced_bounded_and_stop_once_settled() {
        let mut tally = Tally::new(&ALL);
        assert!(tally.crop_due(0, false));
        tally.cropped(0);
        assert!(!tally.crop_due(200, false), "a third of a second apart");
        assert!(!tally.crop_due(200, true), "even for a new region");
        assert!(tally.crop_due(333, false));
        let mut at = 333;
        while tally.crop_due(at, false) {
            tally.cropped(at);
            at += 400;
        }
        // The burst, then a second apart.
        assert_eq!(tally.crops, BURST_CROPS);
        assert!(!tally.crop_due(at + 500, false) && tally.crop_due(at + 600, false));
        at += 600;
        while tally.crop_due(at, false) {
            tally.cropped(at);
            at += 1_000;
        }
        assert_eq!(tally.crops, MAX_CROPS);
        // A thing that comes after is still looked at, a second apart.
        assert!(!tally.crop_due(at - 500, true) && tally.crop_due(at, true));

        let mut settled = Tally::new(&ALL);
        for n in 0..PASSES_ENOUGH as i64 {
            assert!(settled.crop_due(n * 1000, false));
            settled.cropped(n * 1000);
            settled.answer(&[seen(Kind::Animal, 0.9, n)]);
        }
        assert!(!settled.crop_due(10_000, false));
        assert!(settled.crop_due(10_000, true), "a new region is looked at");
    }

    #[test]
    fn the_budget_holds_whatever_the_scene() {
        // Every frame (5 a second) of a 10-minute event shows a new
        // region: the crops stay at the burst's pace, then one a second.
        let mut tally = Tally::new(&ALL);
        let mut crops = Vec::new();
        for frame in 0..5 * 600 {
            let at = frame * 200;
            if tally.crop_due(at, true) {
                tally.cropped(at);
                crops.push(at);
            }
        }
        for window in crops.windows(2) {
            assert!(window[1] - window[0] >= CROP_EVERY_MS, "{window:?}");
        }
        let after_burst = &crops[BURST_CROPS..];
        for window in after_burst.windows(2) {
            assert!(window[1] - window[0] >= LATER_CROP_EVERY_MS, "{window:?}");
        }
        assert!(crops.len() <= BURST_CROPS + 600, "{}", crops.len());
    }

    #[test]
    fn labels() {
        for (label, kind) in [
            ("person", Some(Kind::Person)),
            ("bicycle", Some(Kind::Vehicle)),
            ("car", Some(Kind::Vehicle)),
            ("motorcycle", Some(Kind::Vehicle)),
            ("bus", Some(Kind::Vehicle)),
            ("truck", Some(Kind::Vehicle)),
            ("train", None),
            ("boat", None),
            ("airplane", None),
            ("bird", Some(Kind::Animal)),
            ("cat", Some(Kind::Animal)),
            ("dog", Some(Kind::Animal)),
            ("horse", Some(Kind::Animal)),
            ("sheep", Some(Kind::Animal)),
            ("cow", Some(Kind::Animal)),
            ("elephant", Some(Kind::Animal)),
            ("bear", Some(Kind::Animal)),
            ("zebra", Some(Kind::Animal)),
            ("giraffe", Some(Kind::Animal)),
            ("teddy bear", None),
            ("suitcase", None),
            ("cup", None),
            ("???", None),
            // The old model's labels are not these.
            ("Person", None),
            ("Car", None),
        ] {
            assert_eq!(kind_of(label), kind, "{label}");
        }
    }
}

//! From the classifier's answers to an event's kind. While a motion event
//! is on, a crop is taken at most every third of a second and at most
//! [`MAX_CROPS`] in all; each answer counts, for each kind the camera
//! wants, whether the kind's best object passed the kind's threshold. A
//! kind that passed in at least two crops is the event's (one crop is
//! never enough: a single frame may show a shadow that looks like a
//! person); of several, the one with the best score. Pure: times are passed
//! in, so all of it is tested without waiting.

use crate::event::Kind;
use crate::media::area::Area;

/// Crops an event may have classified. At three a second, the first four
/// seconds of an event; an event whose kind is clear stops sooner.
pub const MAX_CROPS: usize = 12;
/// The least time between two crops of one camera.
pub const CROP_EVERY_MS: i64 = 333;
/// Crops in which a kind must pass to be the event's.
const PASSES_NEEDED: usize = 2;
/// Once a kind has passed this often, more crops would not change it.
const PASSES_ENOUGH: usize = 4;

/// The kind a model label stands for (the Open Images labels of the
/// shipped model); None for labels that are none of ours (a cup).
pub fn kind_of(label: &str) -> Option<Kind> {
    match label {
        "Person" => Some(Kind::Person),
        "Car" | "Vehicle" | "Bicycle" => Some(Kind::Vehicle),
        "Cat" | "Dog" | "Cattle" => Some(Kind::Animal),
        "Box" => Some(Kind::Package),
        _ => None,
    }
}

/// The score an object must reach to count as one of `kind`.
pub fn threshold(kind: Kind) -> f32 {
    // Measured on real photographs slid across the test camera (300 px
    // crops of a 640×360 frame): a person 0.59–0.65 (an astronaut's upper
    // body) but 0.30–0.41 (a man at a tripod, who also scored Car 0.28);
    // a car 0.83–0.86; a cat 0.87–0.89; a plain box Box ≤ 0.17. Each kind
    // must pass in two crops, which keeps a lone weak score out.
    match kind {
        Kind::Person => 0.4,
        Kind::Vehicle => 0.5,
        Kind::Animal => 0.5,
        Kind::Package => 0.5,
        Kind::Motion => f32::INFINITY,
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

    /// Whether to crop the frame seen at `mono_ms` (a monotonic clock).
    pub fn crop_due(&self, mono_ms: i64) -> bool {
        let settled = self.passes.iter().any(|&p| p >= PASSES_ENOUGH);
        !settled
            && self.crops < MAX_CROPS
            && self
                .last_crop_ms
                .is_none_or(|last| mono_ms - last >= CROP_EVERY_MS)
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
                .filter(|o| o.kind == kind)
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
            .max_by(|a, b| a.score.total_cmp(&b.score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Kind; 4] = Kind::CLASSIFIED;

    fn seen(kind: Kind, score: f32, at_ms: i64) -> Sighting {
        Sighting {
            kind,
            score,
            area: Area::default(),
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
                &[&[(Person, 0.45)], &[(Person, 0.1)], &[(Person, 0.5)]],
                vec![Person],
                Some((Person, 0.5, 2)),
            ),
            (
                "the best of an object per crop: two people in one crop are one pass",
                &ALL,
                &[&[(Person, 0.42), (Person, 0.45)], &[]],
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
                "of two kinds that passed, the better scored",
                &ALL,
                &[
                    &[(Person, 0.45), (Vehicle, 0.6)],
                    &[(Person, 0.5), (Vehicle, 0.7)],
                ],
                vec![Vehicle],
                Some((Vehicle, 0.7, 1)),
            ),
            (
                "a kind that overtakes is announced too",
                &ALL,
                &[
                    &[(Person, 0.45)],
                    &[(Person, 0.45)],
                    &[(Animal, 0.8)],
                    &[(Animal, 0.9)],
                ],
                vec![Person, Animal],
                Some((Animal, 0.9, 3)),
            ),
            (
                "under an animal's threshold twice",
                &ALL,
                &[&[(Animal, 0.45)], &[(Animal, 0.49)]],
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
    fn crops_are_spaced_bounded_and_stop_once_settled() {
        let mut tally = Tally::new(&ALL);
        assert!(tally.crop_due(0));
        tally.cropped(0);
        assert!(!tally.crop_due(200), "a third of a second apart");
        assert!(tally.crop_due(333));
        let mut at = 333;
        while tally.crop_due(at) {
            tally.cropped(at);
            at += 400;
        }
        assert_eq!(tally.crops, MAX_CROPS);

        let mut settled = Tally::new(&ALL);
        for n in 0..PASSES_ENOUGH as i64 {
            assert!(settled.crop_due(n * 1000));
            settled.cropped(n * 1000);
            settled.answer(&[seen(Kind::Animal, 0.9, n)]);
        }
        assert!(!settled.crop_due(10_000));
    }

    #[test]
    fn labels() {
        for (label, kind) in [
            ("Person", Some(Kind::Person)),
            ("Car", Some(Kind::Vehicle)),
            ("Bicycle", Some(Kind::Vehicle)),
            ("Vehicle", Some(Kind::Vehicle)),
            ("Dog", Some(Kind::Animal)),
            ("Cattle", Some(Kind::Animal)),
            ("Box", Some(Kind::Package)),
            ("Coffee cup", None),
            ("???", None),
        ] {
            assert_eq!(kind_of(label), kind, "{label}");
        }
    }
}

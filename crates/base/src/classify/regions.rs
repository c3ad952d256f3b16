//! Where to look for what moved, Frigate's way: the moving regions' boxes
//! that overlap (or nearly touch) are merged into clusters, and each
//! cluster is grown to a square around its centre, 1.35 times its longer
//! side and at least the model's input, moved (not cut) to lie inside the
//! frame. Squares that share most of themselves are one region (the square
//! around both clusters), so two pieces of one scene are not looked at
//! twice. The classifier then sees each thing with some of its
//! surroundings, at about the scale it was trained on, and never an
//! upscaled sliver, nor a car lost in the union of a whole busy street.
//!
//! Which region a camera's next crop is of is [`Rotation`]'s: a camera
//! sends at most one crop per due moment (`tally`'s pace), whatever the
//! scene, and its regions share them: one never cropped first (a thing
//! that just came), then the one cropped least recently; among equals the
//! one with the most motion.

use crate::media::area::Area;

/// How much larger than the moving region the square is.
const GROWTH: f32 = 1.35;
/// Boxes closer than this (a share of the frame's width or height) join.
const JOIN_GAP: f32 = 0.02;
/// Squares sharing more than this of the smaller are one region.
const SAME_REGION: f32 = 0.5;
/// The regions of a frame looked at, those with the most motion: more
/// would not be cropped before the scene changes.
const MAX_REGIONS: usize = 6;
/// A crop covers a region when it shares this much of the smaller square.
const COVERS: f32 = 0.3;
/// Crops remembered by a rotation: older ones no longer make a region
/// known (what is there may have changed).
const REMEMBER_MS: i64 = 10_000;
const REMEMBER_CROPS: usize = 16;
/// A region covered by fewer remembered crops than this is still new: a
/// kind is the event's only once it passed in two crops, and one may miss.
const NEW_UNTIL_CROPS: usize = 3;

/// A square of the frame, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Square {
    pub x: usize,
    pub y: usize,
    pub side: usize,
}

impl Square {
    /// The area it shares with `other`, as a share of the smaller.
    fn shared(&self, other: &Square) -> f32 {
        let span = |a: usize, a_side: usize, b: usize, b_side: usize| {
            (a + a_side).min(b + b_side).saturating_sub(a.max(b))
        };
        let w = span(self.x, self.side, other.x, other.side);
        let h = span(self.y, self.side, other.y, other.side);
        let smaller = self.side.min(other.side).max(1);
        (w * h) as f32 / (smaller * smaller) as f32
    }
}

/// A region to classify: its square, the box of the motion it holds, and
/// how much of the picture moves in it (the share of its clusters' boxes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Region {
    pub square: Square,
    pub motion: Area,
    pub share: f32,
}

/// The regions to classify in a `width` × `height` frame whose moving
/// regions are `boxes`, the most motion first, [`MAX_REGIONS`] at most.
pub fn regions(boxes: &[Area], width: usize, height: usize, min_side: usize) -> Vec<Region> {
    let region = |motion: Area, share: f32| Region {
        square: grown(motion, width, height, min_side),
        motion,
        share,
    };
    let mut out: Vec<Region> = Vec::new();
    for cluster in merged(boxes) {
        let mut r = region(cluster, size(&cluster));
        // Merging may make a square reach others already kept: look again.
        while let Some(i) = out
            .iter()
            .position(|o| o.square.shared(&r.square) > SAME_REGION)
        {
            let o = out.swap_remove(i);
            r = region(union(&o.motion, &r.motion), o.share + r.share);
        }
        out.push(r);
    }
    // The most motion first, by insertion (a sort would cost the board's
    // binary more).
    let mut ordered: Vec<Region> = Vec::with_capacity(out.len());
    for r in out {
        let at = ordered
            .iter()
            .position(|o| o.share < r.share)
            .unwrap_or(ordered.len());
        ordered.insert(at, r);
    }
    ordered.truncate(MAX_REGIONS);
    ordered
}

/// The square of the region with the most motion; None when nothing moved.
pub fn square_to_classify(
    boxes: &[Area],
    width: usize,
    height: usize,
    min_side: usize,
) -> Option<Square> {
    regions(boxes, width, height, min_side)
        .first()
        .map(|r| r.square)
}

/// How a camera's regions share its crops: the squares it cropped lately,
/// and when (a monotonic clock, ms).
#[derive(Debug, Default)]
pub struct Rotation {
    cropped: Vec<(Square, i64)>,
}

impl Rotation {
    /// The region of `regions` to crop next at `mono_ms`, and whether it is
    /// still new (fewer than [`NEW_UNTIL_CROPS`] crops covered it): the
    /// first never cropped, else the one cropped least recently (the first
    /// of equals: the most motion).
    pub fn pick(&self, regions: &[Region], mono_ms: i64) -> Option<(usize, bool)> {
        let looks = |r: &Region| {
            let covering = self
                .cropped
                .iter()
                .filter(|(s, at)| mono_ms - at < REMEMBER_MS && s.shared(&r.square) > COVERS);
            (covering.clone().map(|&(_, at)| at).max(), covering.count())
        };
        let (i, (_, crops)) = regions
            .iter()
            .map(looks)
            .enumerate()
            .min_by_key(|&(i, (at, _))| (at.unwrap_or(i64::MIN), i))?;
        Some((i, crops < NEW_UNTIL_CROPS))
    }

    /// `square` was cropped at `mono_ms`.
    pub fn cropped(&mut self, square: Square, mono_ms: i64) {
        self.cropped.retain(|&(_, at)| mono_ms - at < REMEMBER_MS);
        if self.cropped.len() >= REMEMBER_CROPS {
            self.cropped.remove(0);
        }
        self.cropped.push((square, mono_ms));
    }
}

fn size(a: &Area) -> f32 {
    (a.right - a.left) * (a.bottom - a.top)
}

fn union(a: &Area, b: &Area) -> Area {
    Area {
        left: a.left.min(b.left),
        top: a.top.min(b.top),
        right: a.right.max(b.right),
        bottom: a.bottom.max(b.bottom),
    }
}

/// `boxes` with those that overlap or nearly touch merged, until none do.
fn merged(boxes: &[Area]) -> Vec<Area> {
    let mut out: Vec<Area> = Vec::with_capacity(boxes.len());
    for &b in boxes {
        let mut b = b;
        // Merging may make a box reach others already kept: look again.
        while let Some(i) = out.iter().position(|o| near(o, &b)) {
            let o = out.swap_remove(i);
            b = union(&o, &b);
        }
        out.push(b);
    }
    out
}

fn near(a: &Area, b: &Area) -> bool {
    a.left <= b.right + JOIN_GAP
        && b.left <= a.right + JOIN_GAP
        && a.top <= b.bottom + JOIN_GAP
        && b.top <= a.bottom + JOIN_GAP
}

fn grown(area: Area, width: usize, height: usize, min_side: usize) -> Square {
    let (w, h) = (width as f32, height as f32);
    let longer = ((area.right - area.left) * w).max((area.bottom - area.top) * h);
    let side = ((longer * GROWTH).round() as usize)
        .max(min_side)
        .min(width.min(height))
        .max(1);
    let centre = |low: f32, high: f32, size: f32| ((low + high) / 2.0 * size).round() as isize;
    let place = |centre: isize, size: usize| {
        (centre - side as isize / 2).clamp(0, (size - side) as isize) as usize
    };
    Square {
        x: place(centre(area.left, area.right, w), width),
        y: place(centre(area.top, area.bottom, h), height),
        side,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squares() {
        /// Boxes, the frame's size, and the square wanted.
        type Case<'a> = (&'a [Area], (usize, usize), Option<Square>);
        let cases: &[Case] = &[
            (&[], (640, 360), None),
            // A small thing in the middle: the smallest square around it.
            (
                &[Area::new(0.45, 0.45, 0.55, 0.55)],
                (640, 360),
                Some(Square {
                    x: 170,
                    y: 30,
                    side: 300,
                }),
            ),
            // Near the left edge: moved in, not cut.
            (
                &[Area::new(0.0, 0.4, 0.05, 0.6)],
                (640, 360),
                Some(Square {
                    x: 0,
                    y: 30,
                    side: 300,
                }),
            ),
            // Taller than the frame allows at 1.35×: the frame's height.
            (
                &[Area::new(0.7, 0.0, 0.9, 0.95)],
                (640, 360),
                Some(Square {
                    x: 280,
                    y: 0,
                    side: 360,
                }),
            ),
            // Large and wide: 1.35 × 200 px = 270 < 300; 1.35 × 250 = 338.
            (
                &[Area::new(0.1, 0.2, 0.490625, 0.5)],
                (640, 360),
                Some(Square {
                    x: 20,
                    y: 0,
                    side: 338,
                }),
            ),
            // Two pieces of one thing (a gap of 1 % of the width) are one
            // box; a far small one is left out.
            (
                &[
                    Area::new(0.5, 0.3, 0.6, 0.7),
                    Area::new(0.61, 0.3, 0.7, 0.7),
                    Area::new(0.0, 0.0, 0.02, 0.02),
                ],
                (640, 360),
                Some(Square {
                    x: 234,
                    y: 30,
                    side: 300,
                }),
            ),
            // A frame smaller than the model's input: the frame's height.
            (
                &[Area::new(0.4, 0.4, 0.6, 0.6)],
                (320, 180),
                Some(Square {
                    x: 70,
                    y: 0,
                    side: 180,
                }),
            ),
        ];
        for (boxes, (w, h), want) in cases {
            assert_eq!(square_to_classify(boxes, *w, *h, 300), *want, "{boxes:?}");
        }
    }

    #[test]
    fn merging_goes_on_until_nothing_touches() {
        // The third box joins the first two only once they are one.
        let boxes = [
            Area::new(0.0, 0.0, 0.1, 0.1),
            Area::new(0.5, 0.0, 0.6, 0.1),
            Area::new(0.09, 0.0, 0.51, 0.1),
        ];
        assert_eq!(merged(&boxes), vec![Area::new(0.0, 0.0, 0.6, 0.1)]);
    }

    #[test]
    fn each_cluster_is_a_region_the_most_motion_first() {
        // A car on the left, a person (more of the picture) on the right,
        // the person in two pieces: two regions, not their union.
        let boxes = [
            Area::new(0.05, 0.4, 0.3, 0.9),
            Area::new(0.6, 0.1, 0.9, 0.5),
            Area::new(0.6, 0.51, 0.9, 0.95),
        ];
        let got = regions(&boxes, 640, 360, 300);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].motion, Area::new(0.6, 0.1, 0.9, 0.95));
        assert_eq!(
            got[0].square,
            Square {
                x: 280,
                y: 0,
                side: 360
            }
        );
        assert_eq!(got[1].motion, boxes[0]);
        assert_eq!(
            got[1].square,
            Square {
                x: 0,
                y: 60,
                side: 300
            }
        );
        assert!(got[0].share > got[1].share);
    }

    #[test]
    fn squares_that_share_most_of_themselves_are_one_region() {
        // Two small things 60 px apart: their 300-px squares share 80 %,
        // so one square around both is looked at, once.
        let boxes = [
            Area::new(0.4, 0.4, 0.45, 0.5),
            Area::new(0.55, 0.4, 0.6, 0.5),
        ];
        let got = regions(&boxes, 640, 360, 300);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].motion, Area::new(0.4, 0.4, 0.6, 0.5));
        assert_eq!(
            got[0].square,
            Square {
                x: 170,
                y: 12,
                side: 300
            }
        );
        assert!((got[0].share - 0.01).abs() < 1e-6);
        // Far enough apart that they share less than half: two.
        let apart = [
            Area::new(0.0, 0.4, 0.05, 0.5),
            Area::new(0.95, 0.4, 1.0, 0.5),
        ];
        assert_eq!(regions(&apart, 640, 360, 300).len(), 2);
    }

    #[test]
    fn a_frame_full_of_motion_gives_at_most_the_largest_regions() {
        // A busy 1280x720 scene: 40 small things all over it.
        let boxes: Vec<Area> = (0..40)
            .map(|n| {
                let (x, y) = ((n % 8) as f32 / 8.0, (n / 8) as f32 / 5.0);
                let w = 0.02 + 0.001 * n as f32;
                Area::new(x, y, x + w, y + 0.05)
            })
            .collect();
        let got = regions(&boxes, 1280, 720, 300);
        assert_eq!(got.len(), MAX_REGIONS);
        for pair in got.windows(2) {
            assert!(pair[0].share >= pair[1].share, "{got:?}");
        }
    }

    #[test]
    fn regions_take_turns_new_ones_first() {
        let left = Area::new(0.05, 0.4, 0.3, 0.9);
        let right = Area::new(0.6, 0.1, 0.9, 0.95);
        let mut rotation = Rotation::default();
        let both = regions(&[left, right], 640, 360, 300);
        // The most motion first, then the other, new too.
        assert_eq!(rotation.pick(&both, 0), Some((0, true)));
        rotation.cropped(both[0].square, 0);
        assert_eq!(rotation.pick(&both, 333), Some((1, true)));
        rotation.cropped(both[1].square, 333);
        // Then by turns: the one cropped least recently, new until
        // cropped three times.
        assert_eq!(rotation.pick(&both, 666), Some((0, true)));
        rotation.cropped(both[0].square, 666);
        assert_eq!(rotation.pick(&both, 1000), Some((1, true)));
        rotation.cropped(both[1].square, 1000);
        assert_eq!(rotation.pick(&both, 1333), Some((0, true)));
        rotation.cropped(both[0].square, 1333);
        assert_eq!(rotation.pick(&both, 1666), Some((1, true)));
        rotation.cropped(both[1].square, 1666);
        assert_eq!(rotation.pick(&both, 2000), Some((0, false)));
        // Crops older than it remembers no longer count.
        assert_eq!(rotation.pick(&both, 10_700), Some((0, true)));
        // A thing that comes meanwhile is next, whatever the turn.
        let third = Area::new(0.3, 0.0, 0.33, 0.05);
        let three = regions(&[left, right, third], 1280, 720, 300);
        assert_eq!(three.len(), 3);
        let newcomer = three.iter().position(|r| r.motion == third).unwrap();
        let mut later = Rotation::default();
        for r in &three {
            if r.motion != third {
                later.cropped(r.square, 0);
            }
        }
        assert_eq!(later.pick(&three, 333), Some((newcomer, true)));
        // A crop long ago no longer counts: the region is new again.
        assert_eq!(
            rotation.pick(&both[..1], 666 + REMEMBER_MS),
            Some((0, true))
        );
        assert_eq!(rotation.pick(&[], 0), None);
    }

    #[test]
    fn a_rotation_remembers_a_bounded_number_of_crops() {
        let mut rotation = Rotation::default();
        for n in 0..100 {
            rotation.cropped(
                Square {
                    x: n,
                    y: 0,
                    side: 300,
                },
                n as i64,
            );
        }
        assert_eq!(rotation.cropped.len(), REMEMBER_CROPS);
    }
}

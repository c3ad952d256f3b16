//! Where to look for what moved, Frigate's way: the moving regions' boxes
//! that overlap (or nearly touch) are merged, and the largest is grown to a
//! square around its centre, 1.35 times its longer side and at least the
//! model's input, moved (not cut) to lie inside the frame. The classifier
//! then sees the whole object with some of its surroundings, at about the
//! scale it was trained on, and never an upscaled sliver.

use crate::media::area::Area;

/// How much larger than the moving region the square is.
const GROWTH: f32 = 1.35;
/// Boxes closer than this (a share of the frame's width or height) join.
const JOIN_GAP: f32 = 0.02;

/// A square of the frame, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Square {
    pub x: usize,
    pub y: usize,
    pub side: usize,
}

/// The square to classify in a `width` × `height` frame whose moving
/// regions are `boxes`; None when nothing moved.
pub fn square_to_classify(
    boxes: &[Area],
    width: usize,
    height: usize,
    min_side: usize,
) -> Option<Square> {
    let largest = merged(boxes).into_iter().max_by(|a, b| {
        let area = |r: &Area| (r.right - r.left) * (r.bottom - r.top);
        area(a).total_cmp(&area(b))
    })?;
    Some(grown(largest, width, height, min_side))
}

/// `boxes` with those that overlap or nearly touch merged, until none do.
fn merged(boxes: &[Area]) -> Vec<Area> {
    let mut out: Vec<Area> = Vec::with_capacity(boxes.len());
    for &b in boxes {
        let mut b = b;
        // Merging may make a box reach others already kept: look again.
        while let Some(i) = out.iter().position(|o| near(o, &b)) {
            let o = out.swap_remove(i);
            b = Area {
                left: o.left.min(b.left),
                top: o.top.min(b.top),
                right: o.right.max(b.right),
                bottom: o.bottom.max(b.bottom),
            };
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
}

//! Polygons in a picture, their points in shares of its width and height
//! (0 to 1) like [`super::area::Area`]'s boxes, so that one drawn over a
//! 640-wide snapshot means the same in the detector's 160×90 picture:
//! whether a point lies inside one (a zone holding the bottom centre of what
//! moved), and which pixels of a picture do (a mask over the detector's
//! frame).
//!
//! Inside is the even-odd rule: a point is inside when a ray from it crosses
//! the outline an odd number of times. The lobes of an outline that crosses
//! itself (a bow tie) are inside; where it winds round twice (the middle of
//! a pentagram) is not. The UI fills polygons by the same rule. A point on
//! the outline counts as inside, so a zone drawn to the picture's edge holds
//! what stands on that edge: the bottom centre of something at the bottom
//! of the frame is on it.

use std::ops::Range;

/// `[x, y]`, each a share of the picture's width or height.
pub type Point = [f32; 2];

/// A closed outline: the last point joins the first.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct Polygon {
    points: Vec<Point>,
}

/// A point in f64, in which the tests are worked (f32 products are exact in it).
type Xy = (f64, f64);

impl Polygon {
    pub fn new(points: Vec<Point>) -> Polygon {
        Polygon { points }
    }

    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Whether (`x`, `y`), shares of the picture's width and height, is
    /// inside or on the outline.
    pub fn contains(&self, x: f32, y: f32) -> bool {
        self.holds((f64::from(x), f64::from(y)))
    }

    fn holds(&self, (x, y): Xy) -> bool {
        let mut inside = false;
        for (a, b) in self.edges() {
            if on_edge(a, b, (x, y)) {
                return true;
            }
            if straddles(a, b, y) && x < crossing(a, b, y) {
                inside = !inside;
            }
        }
        inside
    }

    /// Its edges, the last one closing the outline.
    fn edges(&self) -> impl Iterator<Item = (Xy, Xy)> + '_ {
        let xy = |p: &Point| (f64::from(p[0]), f64::from(p[1]));
        let next = self.points.iter().cycle().skip(1);
        self.points
            .iter()
            .zip(next)
            .map(move |(a, b)| (xy(a), xy(b)))
    }
}

/// Whether edge `a`–`b` goes from one side of the line at height `y` to
/// the other, counting its lower end and not its upper one: a vertex on the
/// line is crossed once by a path through it, never by a corner that only
/// touches it.
fn straddles(a: Xy, b: Xy, y: f64) -> bool {
    (a.1 > y) != (b.1 > y)
}

/// Where edge `a`–`b`, not horizontal, meets the line at height `y`.
fn crossing(a: Xy, b: Xy, y: f64) -> f64 {
    a.0 + (y - a.1) * (b.0 - a.0) / (b.1 - a.1)
}

/// Whether `p` lies on edge `a`–`b`: on a horizontal edge's line within its
/// span, or within a slanted edge's height at its crossing (up to rounding,
/// the same rounding as the crossings the rasteriser fills between).
fn on_edge(a: Xy, b: Xy, p: Xy) -> bool {
    if a.1 == b.1 {
        p.1 == a.1 && (a.0.min(b.0)..=a.0.max(b.0)).contains(&p.0)
    } else {
        (a.1.min(b.1)..=a.1.max(b.1)).contains(&p.1) && p.0 == crossing(a, b, p.1)
    }
}

/// Columns `start..end` of row `row` of a picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub row: usize,
    pub start: usize,
    pub end: usize,
}

impl Run {
    /// Its pixels' indices in a picture of rows `width` long, one after the other.
    pub fn indices(self, width: usize) -> Range<usize> {
        self.row * width + self.start..self.row * width + self.end
    }
}

/// The pixels of a `width` × `height` picture whose centre lies inside any
/// of `polygons` (by [`Polygon::contains`]'s rule), as runs along its rows:
/// rows in order, each row's runs in order and apart (neither overlapping
/// nor touching). A scanline fill: the work is each row's crossings with
/// the outlines, not a test of every pixel.
pub fn rasterise(polygons: &[Polygon], width: usize, height: usize) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut row_runs: Vec<(usize, usize)> = Vec::new();
    let mut crossings: Vec<f64> = Vec::new();
    for row in 0..height {
        let y = centre(row, height);
        row_runs.clear();
        for polygon in polygons {
            crossings.clear();
            for (a, b) in polygon.edges() {
                if straddles(a, b, y) {
                    crossings.push(crossing(a, b, y));
                }
                // Centres on the outline are inside (most of them are
                // already within a pair of crossings).
                if a.1 == b.1 && a.1 == y {
                    row_runs.push(columns(a.0.min(b.0), a.0.max(b.0), width));
                } else if a.1 != b.1 && (a.1.min(b.1)..=a.1.max(b.1)).contains(&y) {
                    let x = crossing(a, b, y);
                    row_runs.push(columns(x, x, width));
                }
            }
            insertion_sort(&mut crossings, |a, b| a > b);
            for pair in crossings.chunks_exact(2) {
                row_runs.push(columns(pair[0], pair[1], width));
            }
        }
        row_runs.retain(|(start, end)| start < end);
        insertion_sort(&mut row_runs, |a, b| a > b);
        let mut merged: Option<(usize, usize)> = None;
        for &(start, end) in &row_runs {
            match &mut merged {
                Some(run) if start <= run.1 => run.1 = run.1.max(end),
                _ => {
                    if let Some((start, end)) = merged.replace((start, end)) {
                        runs.push(Run { row, start, end });
                    }
                }
            }
        }
        if let Some((start, end)) = merged {
            runs.push(Run { row, start, end });
        }
    }
    runs
}

/// Sorts a few items (a row's crossings and runs) by `after`; the
/// standard library's sorts cost the board's binary kilobytes of code.
fn insertion_sort<T: Copy>(items: &mut [T], after: impl Fn(&T, &T) -> bool) {
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && after(&items[j - 1], &items[j]) {
            items.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Pixel `index`'s centre, as a share of `size` pixels.
fn centre(index: usize, size: usize) -> f64 {
    (index as f64 + 0.5) / size as f64
}

/// The columns, of `width`, whose centres lie from `left` to `right`
/// inclusive, as `start..end`: estimated, then settled by the centres
/// themselves, so that the rasteriser and [`Polygon::contains`] agree.
fn columns(left: f64, right: f64, width: usize) -> (usize, usize) {
    let estimate = |x: f64| ((x * width as f64 - 0.5).ceil().max(0.0) as usize).min(width);
    let first_at_or_after = |x: f64| {
        let mut column = estimate(x);
        while column > 0 && centre(column - 1, width) >= x {
            column -= 1;
        }
        while column < width && centre(column, width) < x {
            column += 1;
        }
        column
    };
    let start = first_at_or_after(left);
    let mut end = first_at_or_after(right);
    // `end` is past the last centre at or before `right`.
    while end < width && centre(end, width) <= right {
        end += 1;
    }
    (start, end.max(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polygon(points: &[(f32, f32)]) -> Polygon {
        Polygon::new(points.iter().map(|&(x, y)| [x, y]).collect())
    }

    /// The whole picture.
    fn frame() -> Polygon {
        polygon(&[(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)])
    }

    /// A U opening upwards: its notch (x 0.4 to 0.6, y above 0.6) is outside.
    fn concave() -> Polygon {
        polygon(&[
            (0.2, 0.2),
            (0.4, 0.2),
            (0.4, 0.6),
            (0.6, 0.6),
            (0.6, 0.2),
            (0.8, 0.2),
            (0.8, 0.9),
            (0.2, 0.9),
        ])
    }

    /// A bow tie: two triangles, left and right, meeting at (0.5, 0.5).
    fn bow_tie() -> Polygon {
        polygon(&[(0.1, 0.1), (0.9, 0.9), (0.9, 0.1), (0.1, 0.9)])
    }

    /// A pentagram, drawn point to point: its middle is wound round twice.
    fn pentagram() -> Polygon {
        let point = |i: usize| {
            let angle = std::f32::consts::PI * (0.4 * i as f32 - 0.5);
            (0.5 + 0.45 * angle.cos(), 0.5 + 0.45 * angle.sin())
        };
        polygon(&[point(0), point(2), point(4), point(1), point(3)])
    }

    /// A triangle with a side along the picture's bottom and a corner in
    /// its top right corner.
    fn touching_edges() -> Polygon {
        polygon(&[(0.0, 1.0), (1.0, 0.0), (1.0, 1.0)])
    }

    #[test]
    fn points_inside_outside_and_on_the_outline() {
        let table: [(&str, Polygon, (f32, f32), bool); 24] = [
            ("frame", frame(), (0.5, 0.5), true),
            ("frame", frame(), (0.0, 0.0), true),
            ("frame", frame(), (0.5, 1.0), true),
            ("frame", frame(), (1.0, 1.0), true),
            ("frame", frame(), (1.0, 0.3), true),
            ("frame", frame(), (1.001, 0.5), false),
            ("frame", frame(), (0.5, -0.001), false),
            ("concave", concave(), (0.3, 0.5), true),
            ("concave", concave(), (0.5, 0.7), true),
            ("concave", concave(), (0.5, 0.4), false),
            ("concave", concave(), (0.5, 0.6), true),
            ("concave", concave(), (0.4, 0.4), true),
            ("concave", concave(), (0.9, 0.5), false),
            ("bow tie", bow_tie(), (0.3, 0.5), true),
            ("bow tie", bow_tie(), (0.7, 0.5), true),
            ("bow tie", bow_tie(), (0.5, 0.5), true),
            ("bow tie", bow_tie(), (0.5, 0.3), false),
            ("bow tie", bow_tie(), (0.5, 0.7), false),
            ("pentagram", pentagram(), (0.5, 0.5), false),
            ("pentagram", pentagram(), (0.5, 0.1), true),
            ("pentagram", pentagram(), (0.05, 0.05), false),
            ("touching edges", touching_edges(), (0.9, 0.99), true),
            ("touching edges", touching_edges(), (0.5, 1.0), true),
            ("touching edges", touching_edges(), (0.1, 0.5), false),
        ];
        for (name, polygon, (x, y), inside) in table {
            assert_eq!(polygon.contains(x, y), inside, "{name} ({x}, {y})");
        }
        assert_eq!(
            touching_edges().points(),
            [[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
        );
        let degenerate = polygon(&[(0.2, 0.2), (0.8, 0.8)]);
        assert!(degenerate.contains(0.5, 0.5), "on its one segment");
        assert!(!degenerate.contains(0.5, 0.4));
        assert!(!Polygon::new(Vec::new()).contains(0.5, 0.5));
    }

    /// Every pixel, marked from the runs.
    fn marked(runs: &[Run], width: usize, height: usize) -> Vec<bool> {
        let mut pixels = vec![false; width * height];
        for run in runs {
            pixels[run.indices(width)].fill(true);
        }
        pixels
    }

    #[test]
    fn the_rasteriser_marks_the_pixels_whose_centre_is_inside() {
        let shapes = [
            frame(),
            concave(),
            bow_tie(),
            pentagram(),
            touching_edges(),
            // A sliver thinner than a pixel of the detector's picture.
            polygon(&[(0.1, 0.5), (0.9, 0.502), (0.9, 0.503)]),
            // Points outside the picture are cut to it.
            polygon(&[(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)]),
        ];
        for (width, height) in [(160, 90), (7, 5), (320, 180), (1, 1)] {
            for shape in &shapes {
                let runs = rasterise(std::slice::from_ref(shape), width, height);
                let pixels = marked(&runs, width, height);
                for row in 0..height {
                    for column in 0..width {
                        let point = (centre(column, width), centre(row, height));
                        assert_eq!(
                            pixels[row * width + column],
                            shape.holds(point),
                            "{shape:?} at {width}x{height}, pixel ({column}, {row})"
                        );
                    }
                }
                for pair in runs.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    assert!(
                        a.row < b.row || (a.row == b.row && a.end < b.start),
                        "{runs:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn runs_at_the_detectors_size() {
        let (width, height) = (160, 90);
        let runs = |polygons: &[Polygon]| rasterise(polygons, width, height);
        let every_row =
            |start, end| -> Vec<Run> { (0..height).map(|row| Run { row, start, end }).collect() };
        assert_eq!(runs(&[frame()]), every_row(0, 160));
        assert_eq!(runs(&[]), []);
        // The left half: pixel 79's centre (0.496875) is in, 80's is out.
        let left = polygon(&[(0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0)]);
        assert_eq!(runs(std::slice::from_ref(&left)), every_row(0, 80));
        // Edges on pixel centres (of a 16×8 picture, whose centres f32
        // holds exactly): those pixels are in, x from column 2's centre to
        // column 4's, y from row 3's to row 4's.
        let (x0, x1, y0, y1) = (2.5 / 16.0, 4.5 / 16.0, 3.5 / 8.0, 4.5 / 8.0);
        let on_centres = polygon(&[(x0, y0), (x1, y0), (x1, y1), (x0, y1)]);
        let expected = [3, 4].map(|row| Run {
            row,
            start: 2,
            end: 5,
        });
        assert_eq!(rasterise(&[on_centres], 16, 8), expected);
        // Overlapping and touching polygons make one run a row; apart, two.
        let right = polygon(&[(0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (0.5, 1.0)]);
        assert_eq!(runs(&[left.clone(), right]), every_row(0, 160));
        let middle = polygon(&[(0.25, 0.0), (0.75, 0.0), (0.75, 1.0), (0.25, 1.0)]);
        assert_eq!(runs(&[middle, left.clone()]), every_row(0, 120));
        let far_right = polygon(&[(0.75, 0.0), (1.0, 0.0), (1.0, 1.0), (0.75, 1.0)]);
        let apart = runs(&[far_right, left]);
        assert_eq!(apart.len(), 2 * height);
        assert_eq!(
            &apart[..2],
            [
                Run {
                    row: 0,
                    start: 0,
                    end: 80
                },
                Run {
                    row: 0,
                    start: 120,
                    end: 160
                }
            ]
        );
        assert_eq!(apart[3].indices(width), 160 + 120..160 + 160);
    }
}

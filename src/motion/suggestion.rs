//! The areas a camera's detector learnt are always moving, as masks a user
//! can take for good (`suggestedMasks`): the busy cells grown by two cells
//! each way (what moves all the time has neighbours that move often: a date
//! stamp's seconds change every second, its tens every ten, and only the
//! seconds are busy), each group of them that touch as its outline row by
//! row (from the first cell of each row to the last, so a hole inside or a
//! bay between rows is taken in), at most 32 points, the 16 largest groups.
//! A suggestion to look at and take, not the detector's own mask (which is
//! the busy cells).

use super::detector::BusyCells;
use crate::cameras::camera::{MAX_MASKS, MAX_POINTS};
use crate::media::polygon::Polygon;

/// Cells a suggestion reaches past the busy ones.
const MARGIN: usize = 2;

pub fn masks(busy: &BusyCells) -> Vec<Polygon> {
    let mut groups = groups(busy);
    // The largest, by picking (sorting would cost the board's binary more).
    let mut largest = Vec::new();
    while largest.len() < MAX_MASKS
        && let Some(i) = (0..groups.len()).max_by_key(|&i| groups[i].len())
    {
        largest.push(groups.swap_remove(i));
    }
    largest
        .iter()
        .map(|cells| {
            let mut outline = outline(cells);
            // Points on a straight line go, then the flattest corners.
            while outline.len() > 3 {
                let (point, area) = flattest(&outline);
                if outline.len() <= MAX_POINTS && area != 0 {
                    break;
                }
                outline.remove(point);
            }
            let share = |v: i32, of: usize| (v as f32 / of as f32).clamp(0.0, 1.0);
            Polygon::new(
                outline
                    .iter()
                    .map(|&(x, y)| [share(x, busy.width), share(y, busy.height)])
                    .collect(),
            )
        })
        .collect()
}

/// The busy cells grown by [`MARGIN`], in groups of 8-connected cells.
fn groups(busy: &BusyCells) -> Vec<Vec<(usize, usize)>> {
    let (w, h) = (busy.width, busy.height);
    let mut grown = vec![false; w * h];
    for y in 0..h {
        for x in (0..w).filter(|&x| busy.get(x, y)) {
            for ny in y.saturating_sub(MARGIN)..(y + MARGIN + 1).min(h) {
                grown[ny * w + x.saturating_sub(MARGIN)..ny * w + (x + MARGIN + 1).min(w)]
                    .fill(true);
            }
        }
    }
    let mut seen = vec![false; w * h];
    let mut groups = Vec::new();
    for start in 0..w * h {
        if seen[start] || !grown[start] {
            continue;
        }
        seen[start] = true;
        let (mut group, mut todo) = (Vec::new(), vec![start]);
        while let Some(i) = todo.pop() {
            let (x, y) = (i % w, i / w);
            group.push((x, y));
            for ny in y.saturating_sub(1)..(y + 2).min(h) {
                for nx in x.saturating_sub(1)..(x + 2).min(w) {
                    let n = ny * w + nx;
                    if !seen[n] && grown[n] {
                        seen[n] = true;
                        todo.push(n);
                    }
                }
            }
        }
        groups.push(group);
    }
    groups
}

/// A group's outline: on each line between rows of cells, from top to
/// bottom, the leftmost corner, then back up, the rightmost.
fn outline(cells: &[(usize, usize)]) -> Vec<(i32, i32)> {
    let top = cells.iter().map(|c| c.1).min().unwrap_or(0);
    let bottom = cells.iter().map(|c| c.1).max().unwrap_or(0);
    // Each row's first cell and the cell past its last.
    let mut rows = vec![(usize::MAX, 0); bottom - top + 1];
    for &(x, y) in cells {
        let row = &mut rows[y - top];
        *row = (row.0.min(x), row.1.max(x + 1));
    }
    let mut lefts = Vec::with_capacity(rows.len() + 1);
    let mut rights = Vec::with_capacity(rows.len() + 1);
    for line in 0..=rows.len() {
        // The line touches the row above it and the row below it.
        let touching = [line.checked_sub(1), (line < rows.len()).then_some(line)];
        let (left, right) = touching
            .into_iter()
            .flatten()
            .map(|r| rows[r])
            .fold((usize::MAX, 0), |(l, r), (a, b)| (l.min(a), r.max(b)));
        let y = (top + line) as i32;
        lefts.push((left as i32, y));
        rights.push((right as i32, y));
    }
    lefts.extend(rights.into_iter().rev());
    lefts
}

/// The point of a polygon whose corner holds the least area, and that area
/// (twice it, none for a point on a straight line).
fn flattest(polygon: &[(i32, i32)]) -> (usize, i64) {
    let n = polygon.len();
    let area = |i: usize| {
        let (a, b, c) = (polygon[(i + n - 1) % n], polygon[i], polygon[(i + 1) % n]);
        (i64::from(b.0 - a.0) * i64::from(c.1 - a.1) - i64::from(b.1 - a.1) * i64::from(c.0 - a.0))
            .abs()
    };
    (0..n)
        .map(|i| (i, area(i)))
        .min_by_key(|&(_, area)| area)
        .expect("a polygon")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(width: usize, height: usize, busy: &[(usize, usize)]) -> BusyCells {
        let mut bits = vec![0u8; (width * height).div_ceil(8)];
        for &(x, y) in busy {
            let i = y * width + x;
            bits[i / 8] |= 1 << (i % 8);
        }
        BusyCells {
            width,
            height,
            bits,
        }
    }

    #[test]
    fn each_group_of_busy_cells_is_a_mask_around_it() {
        // A 2×2 block at the top left, and an L of three cells at the right
        // edge, in a grid of 30×15; each grown by two cells.
        let busy = cells(
            30,
            15,
            &[(0, 0), (1, 0), (0, 1), (1, 1), (27, 7), (27, 8), (26, 8)],
        );
        let mut masks: Vec<Vec<[f32; 2]>> =
            masks(&busy).iter().map(|m| m.points().to_vec()).collect();
        masks.sort_by(|a, b| a[0][0].total_cmp(&b[0][0]));
        assert_eq!(masks.len(), 2, "{masks:?}");
        // The block: its four corners, two cells out (the picture's edges
        // stop it at the top and left).
        let mut block = masks[0].clone();
        block.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (x, y) = (4.0 / 30.0, 4.0 / 15.0);
        assert_eq!(block, vec![[0.0, 0.0], [0.0, y], [x, 0.0], [x, y]]);
        // The L's outline, two cells out, to the right edge: five corners,
        // a step cut across at its upper left.
        let mut l = masks[1].clone();
        l.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let share = |x: f32, y: f32| [x / 30.0, y / 15.0];
        assert_eq!(
            l,
            vec![
                share(24.0, 6.0),
                share(24.0, 11.0),
                share(25.0, 5.0),
                share(30.0, 5.0),
                share(30.0, 11.0)
            ]
        );
        assert!(self::masks(&cells(10, 5, &[])).is_empty());
    }

    #[test]
    fn at_most_sixteen_masks_of_thirty_two_points() {
        // A disc of cells: its outline has more than 32 corners.
        let disc: Vec<(usize, usize)> = (0..130)
            .flat_map(|y| (0..130).map(move |x| (x, y)))
            .filter(|&(x, y)| (x as i32 - 65).pow(2) + (y as i32 - 65).pow(2) < 60 * 60)
            .collect();
        assert!(outline(&disc).len() > 32);
        let round = masks(&cells(130, 130, &disc));
        assert_eq!(round.len(), 1);
        assert_eq!(round[0].points().len(), 32);
        // Twenty specks, apart even grown: the sixteen largest.
        let mut specks: Vec<(usize, usize)> = (1..21).map(|i| (i * 7, 0)).collect();
        specks.extend((1..5).map(|i| (i * 7, 1)));
        let masks: Vec<Vec<[f32; 2]>> = masks(&cells(150, 10, &specks))
            .iter()
            .map(|m| m.points().to_vec())
            .collect();
        assert_eq!(masks.len(), 16);
        // The four of two cells, grown to four rows, come first.
        assert!(masks[..4].iter().all(|m| m.iter().any(|p| p[1] == 0.4)));
        assert!(masks[4..].iter().all(|m| m.iter().all(|p| p[1] <= 0.3)));
    }
}

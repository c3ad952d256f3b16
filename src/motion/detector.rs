//! Motion in a camera's picture, found the way Frigate finds it, in integer
//! arithmetic with no I/O and no clock: grey pictures about 160 pixels wide
//! (`frame.rs` makes them, as Frigate works on frames about 100 pixels tall)
//! are blurred and compared with a running-average background; pixels that
//! differ by more than a threshold are dilated and cut into connected
//! regions, and regions under a minimum area are dropped. The share of the
//! picture in the regions left is the frame's motion. A change over most of
//! the picture at once (lights, infrared switching, exposure) is not motion:
//! the background starts again from that frame.
//!
//! While an event is on, the background as it was when the event started is
//! held as a reference: someone who came and stands still (whom the running
//! average absorbs in about 15 s) still differs from it, so the event goes on
//! while they are there (Frigate #7602); and where the picture is back to
//! the reference, a difference from the running average is the ghost of
//! something that left, not motion.
//!
//! It keeps two planes of the picture's size, the background and the mask of
//! what moved (and the reference during an event): the blur and the
//! dilation work a few rows at a time, as a node holds this for every camera.

use std::ops::Range;

use crate::media::area::Area;

/// How eagerly motion is seen: the grey-level difference that counts, and
/// the smallest region that counts, as a share of the picture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub threshold: u8,
    pub min_area: f32,
}

impl Params {
    /// The parameters of the three sensitivities (`detectSensitivity`).
    /// Sensor grain differs from the background by at most 5 grey levels
    /// after the blur (measured on the test camera), so even `HIGH` stays
    /// well above it. The smallest regions, in a 160×90 working picture:
    /// 144, 43 and 14 pixels.
    pub const LOW: Params = Params {
        threshold: 40,
        min_area: 0.01,
    };
    pub const MEDIUM: Params = Params {
        threshold: 25,
        min_area: 0.003,
    };
    pub const HIGH: Params = Params {
        threshold: 15,
        min_area: 0.001,
    };
}

/// Frames spent learning the scene before any motion is reported.
const CALIBRATION_FRAMES: u32 = 10;
/// How fast the background follows the picture, as a power of two: 1/4
/// while calibrating, 1/64 after (at 5 frames a second, something that stops
/// moving becomes background in about 15 s, and a passing object leaves no
/// ghost).
const CALIBRATING_SHIFT: u32 = 2;
const LEARNING_SHIFT: u32 = 6;
/// More than this share of the picture changed at once: the light changed.
const LIGHTS_SHARE: f32 = 0.6;

/// What one frame showed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Motion {
    /// The share of the picture (0 to 1) in regions that moved.
    pub share: f32,
    /// How many regions moved.
    pub regions: usize,
    /// The light changed: the background started again from this frame.
    pub reseeded: bool,
    /// With a reference held: at least the minimum area still differs from
    /// it (something that came is still there, moving or not).
    pub present: bool,
    /// The moving regions' bounding boxes, as shares (0 to 1) of the
    /// picture's width and height: where to look for what moved.
    pub boxes: Vec<Area>,
}

pub struct Detector {
    width: usize,
    height: usize,
    params: Params,
    /// The running average, 8.8 fixed point.
    background: Vec<u16>,
    /// The background when the event under way started (see the module's doc).
    reference: Option<Vec<u8>>,
    frames: u32,
    /// The pixels that moved in the last frame (1) and those that did not (0).
    mask: Vec<u8>,
    /// The rows in which the frame moved, None when none did.
    band: Option<Range<usize>>,
    // Buffers kept between frames, so a frame allocates little.
    /// Three rows of the blur's horizontal sums, row `y` in the `y % 3`th.
    sums: Vec<u16>,
    /// A blurred row.
    blurred: Vec<u8>,
    /// A row of the mask grown vertically, then that row grown sideways.
    grown: Vec<u8>,
    parents: Vec<u32>,
    areas: Vec<u32>,
}

impl Detector {
    /// A detector of grey pictures `width` × `height` (each at least 1).
    pub fn new(width: usize, height: usize, params: Params) -> Detector {
        let (width, height) = (width.max(1), height.max(1));
        Detector {
            width,
            height,
            params,
            background: vec![0; width * height],
            reference: None,
            frames: 0,
            mask: vec![0; width * height],
            band: None,
            sums: vec![0; 3 * width],
            blurred: vec![0; width],
            grown: vec![0; 2 * width],
            parents: Vec::new(),
            areas: Vec::new(),
        }
    }

    /// The size of the pictures it takes.
    pub fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// An event started: hold the background as it is now as the reference.
    pub fn hold_reference(&mut self) {
        self.reference = Some(self.background.iter().map(|b| (b >> 8) as u8).collect());
    }

    /// The event ended.
    pub fn release_reference(&mut self) {
        self.reference = None;
    }

    /// Looks at one picture (`width * height` grey bytes, row by row).
    pub fn frame(&mut self, pixels: &[u8]) -> Motion {
        assert_eq!(
            pixels.len(),
            self.width * self.height,
            "a picture of another size"
        );
        self.frames = self.frames.saturating_add(1);
        if self.frames == 1 {
            self.seed(pixels);
            return Motion::default();
        }
        let calibrating = self.frames <= CALIBRATION_FRAMES;
        let shift = if calibrating {
            CALIBRATING_SHIFT
        } else {
            LEARNING_SHIFT
        };
        let (changed, differing) = self.compare_learn(pixels, shift);
        if calibrating {
            return Motion::default();
        }
        let pixel_count = self.mask.len() as f32;
        if changed as f32 > LIGHTS_SHARE * pixel_count {
            self.seed(pixels);
            // What differed from the reference was the light.
            if self.reference.is_some() {
                self.hold_reference();
            }
            return Motion {
                reseeded: true,
                ..Motion::default()
            };
        }
        let present =
            self.reference.is_some() && differing as f32 >= self.params.min_area * pixel_count;
        if changed == 0 {
            return Motion {
                present,
                ..Motion::default()
            };
        }
        Motion {
            present,
            ..self.regions()
        }
    }

    /// The background starts again from the picture, blurred.
    fn seed(&mut self, pixels: &[u8]) {
        let (w, background) = (self.width, &mut self.background);
        blur(pixels, w, &mut self.sums, &mut self.blurred, |y, row| {
            for (b, &v) in background[y * w..(y + 1) * w].iter_mut().zip(row) {
                *b = u16::from(v) << 8;
            }
        });
    }

    /// In one pass over the blurred picture: marks in `mask` the pixels that
    /// differ from the background by more than the threshold, and moves the
    /// background `1 / 2^shift` of the way to the picture. With a reference
    /// held, a pixel back to the reference is not marked. Returns how many
    /// pixels are marked, and how many differ from the reference.
    fn compare_learn(&mut self, pixels: &[u8], shift: u32) -> (usize, usize) {
        let (w, threshold) = (self.width, self.params.threshold);
        let (background, mask) = (&mut self.background, &mut self.mask);
        let reference = self.reference.as_deref();
        let (mut changed, mut differing) = (0, 0);
        let mut band: Option<Range<usize>> = None;
        blur(
            pixels,
            w,
            &mut self.sums,
            &mut self.blurred,
            |y, blurred| {
                let before = changed;
                let line = y * w..(y + 1) * w;
                let reference = reference.map(|r| &r[line.clone()]);
                // Equal lengths, told to the compiler: the loop needs no bounds checks.
                let (mask, background) = (&mut mask[line.clone()], &mut background[line]);
                let (blurred, mask, background) =
                    (&blurred[..w], &mut mask[..w], &mut background[..w]);
                for x in 0..w {
                    let (v, b) = (blurred[x], background[x]);
                    let away = reference.is_none_or(|r| r[x].abs_diff(v) > threshold);
                    differing += usize::from(reference.is_some() && away);
                    let off_background = ((b >> 8) as u8).abs_diff(v) > threshold;
                    let moved = away && off_background;
                    mask[x] = u8::from(moved);
                    changed += usize::from(moved);
                    // A ghost (back to the reference, not to the background) is
                    // learnt away fast, so a reference held later is clean.
                    let shift = if off_background && !away {
                        shift.min(CALIBRATING_SHIFT)
                    } else {
                        shift
                    };
                    background[x] = b - (b >> shift) + (u16::from(v) << (8 - shift));
                }
                if changed > before {
                    band = Some(band.as_ref().map_or(y, |band| band.start)..y + 1);
                }
            },
        );
        self.band = band;
        (changed, differing)
    }

    /// Cuts the mask, grown by a pixel in every direction (so the pieces of
    /// one moving thing join), into 8-connected regions and keeps those of
    /// the minimum area. Works on runs of moving pixels, not pixels: a
    /// union-find of the runs of each row with the touching runs of the row
    /// above.
    fn regions(&mut self) -> Motion {
        let w = self.width;
        // Only the rows that moved, and one more each side, hold grown marks.
        let moved = self.band.clone().expect("called only when something moved");
        let band = moved.start.saturating_sub(1)..(moved.end + 1).min(self.height);
        // Runs: (row in the band, first x, x past the end); `parents` holds each run's parent.
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        self.parents.clear();
        let mut previous_row = 0..0; // the previous row's runs, as indexes into `runs`
        let (column, row) = self.grown.split_at_mut(w);
        for (y, picture_y) in band.clone().enumerate() {
            grow(&self.mask, w, picture_y, column, row);
            let first = runs.len();
            let mut x = 0;
            while x < w {
                if row[x] == 0 {
                    x += 1;
                    continue;
                }
                let start = x;
                while x < w && row[x] != 0 {
                    x += 1;
                }
                let run = runs.len() as u32;
                runs.push((y, start, x));
                self.parents.push(run);
                // Touching runs above (8-connected: one pixel of slack each side).
                for above in previous_row.clone() {
                    let (_, a_start, a_end) = runs[above];
                    if a_end + 1 > start && a_start < x + 1 {
                        let (r1, r2) = (
                            find(&mut self.parents, above as u32),
                            find(&mut self.parents, run),
                        );
                        if r1 != r2 {
                            let (low, high) = (r1.min(r2), r1.max(r2));
                            self.parents[high as usize] = low;
                        }
                    }
                }
            }
            previous_row = first..runs.len();
        }
        self.areas.clear();
        self.areas.resize(runs.len(), 0);
        // Each region's extent in runs: (first x, first row, x past, row past).
        let mut extents = vec![(usize::MAX, usize::MAX, 0, 0); runs.len()];
        for (i, &(y, start, end)) in runs.iter().enumerate() {
            let root = find(&mut self.parents, i as u32) as usize;
            self.areas[root] += (end - start) as u32;
            let e = &mut extents[root];
            *e = (e.0.min(start), e.1.min(y), e.2.max(end), e.3.max(y + 1));
        }
        let total = (w * self.height) as f32;
        let min_area = ((self.params.min_area * total).ceil() as u32).max(1);
        let (width, height) = (w as f32, self.height as f32);
        let mut boxes = Vec::new();
        let mut area = 0;
        for (root, &a) in self.areas.iter().enumerate() {
            if a >= min_area {
                area += a;
                let (x0, y0, x1, y1) = extents[root];
                boxes.push(Area {
                    left: x0 as f32 / width,
                    top: (band.start + y0) as f32 / height,
                    right: x1 as f32 / width,
                    bottom: (band.start + y1) as f32 / height,
                });
            }
        }
        Motion {
            share: area as f32 / total,
            regions: boxes.len(),
            boxes,
            ..Motion::default()
        }
    }
}

/// Blurs a picture (`w` wide) with a 3×3 box (the edges repeated), which
/// smooths sensor grain and rain, a row at a time: calls `row(y, blurred)`
/// for each. `sums` holds three rows of horizontal sums, `blurred` a row.
fn blur(
    pixels: &[u8],
    w: usize,
    sums: &mut [u16],
    blurred: &mut [u8],
    mut row: impl FnMut(usize, &[u8]),
) {
    let h = pixels.len() / w;
    let slot = |y: usize| (y % 3) * w..(y % 3 + 1) * w;
    let sum_row = |sums: &mut [u16], y: usize| {
        let out = &mut sums[slot(y)];
        sum3(&pixels[y * w..(y + 1) * w], out, |a, b, c| {
            u16::from(a) + u16::from(b) + u16::from(c)
        });
    };
    sum_row(sums, 0);
    if h > 1 {
        sum_row(sums, 1);
    }
    for y in 0..h {
        // Row y + 1 takes the slot of row y - 2, no longer needed.
        if y >= 1 && y + 1 < h {
            sum_row(sums, y + 1);
        }
        let (up, here, down) = (
            &sums[slot(y.saturating_sub(1))],
            &sums[slot(y)],
            &sums[slot((y + 1).min(h - 1))],
        );
        // Equal lengths, told to the compiler: the loop needs no bounds checks.
        let (up, here, down, out) = (&up[..w], &here[..w], &down[..w], &mut blurred[..w]);
        for x in 0..w {
            let sum = u32::from(up[x]) + u32::from(here[x]) + u32::from(down[x]);
            // The mean of 9, without a division (which the size-optimized
            // build keeps): exact for every sum of 9 bytes.
            out[x] = ((sum * 7282) >> 16) as u8;
        }
        row(y, out);
    }
}

/// Row `y` of `mask` (`w` wide) grown by a pixel in every direction into
/// `out`: grown vertically into `column` first, then sideways.
fn grow(mask: &[u8], w: usize, y: usize, column: &mut [u8], out: &mut [u8]) {
    let h = mask.len() / w;
    let row = |r: usize| &mask[r * w..(r + 1) * w];
    let (up, here, down) = (row(y.saturating_sub(1)), row(y), row((y + 1).min(h - 1)));
    for (x, c) in column.iter_mut().enumerate() {
        *c = up[x] | here[x] | down[x];
    }
    sum3(column, out, |a, b, c| a | b | c);
}

/// `out[x] = f(row[x - 1], row[x], row[x + 1])`, the edges repeated.
#[inline(always)]
fn sum3<T: Copy, U>(row: &[T], out: &mut [U], f: impl Fn(T, T, T) -> U) {
    let w = row.len();
    let out = &mut out[..w];
    if w == 1 {
        out[0] = f(row[0], row[0], row[0]);
        return;
    }
    out[0] = f(row[0], row[0], row[1]);
    for x in 1..w - 1 {
        out[x] = f(row[x - 1], row[x], row[x + 1]);
    }
    out[w - 1] = f(row[w - 2], row[w - 1], row[w - 1]);
}

/// The root of `label`'s set, halving the path on the way.
fn find(parents: &mut [u32], mut label: u32) -> u32 {
    while parents[label as usize] != label {
        let grandparent = parents[parents[label as usize] as usize];
        parents[label as usize] = grandparent;
        label = grandparent;
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::motion::frame::for_detector;

    /// The test frames' size: the detector sees them halved (`frame.rs`), 160×90.
    const W: usize = 320;
    const H: usize = 180;

    /// A frame of a scene: grey `level` with grain of ±`grain` (a fixed
    /// pattern that changes with `seed`), and white boxes (x, y, size).
    fn frame(level: u8, grain: u8, seed: u32, boxes: &[(usize, usize, usize)]) -> Vec<u8> {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        let mut frame: Vec<u8> = (0..W * H)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let noise = (state % (2 * u32::from(grain) + 1)) as i16 - i16::from(grain);
                (i16::from(level) + noise).clamp(0, 255) as u8
            })
            .collect();
        for &(bx, by, size) in boxes {
            for y in by..(by + size).min(H) {
                for x in bx..(bx + size).min(W) {
                    frame[y * W + x] = 250;
                }
            }
        }
        frame
    }

    /// The detector's picture of a frame, as the watcher makes it.
    fn picture(frame: &[u8]) -> Vec<u8> {
        let mut small = Vec::new();
        let (picture, width, height) = for_detector(frame, W, H, &mut small);
        assert_eq!((width, height), (W / 2, H / 2));
        picture.to_vec()
    }

    /// The detector's picture of a scene (`frame`'s arguments).
    fn scene(level: u8, grain: u8, seed: u32, boxes: &[(usize, usize, usize)]) -> Vec<u8> {
        picture(&frame(level, grain, seed, boxes))
    }

    /// A detector that has learnt a still, grainy scene.
    fn calibrated(params: Params) -> Detector {
        let mut detector = Detector::new(W / 2, H / 2, params);
        for seed in 0..CALIBRATION_FRAMES + 5 {
            let motion = detector.frame(&scene(100, 6, seed, &[]));
            assert_eq!(motion, Motion::default(), "a still scene, frame {seed}");
        }
        detector
    }

    #[test]
    fn the_blur_is_the_mean_of_nine() {
        // The multiply-and-shift against a division, for every sum of 9 bytes.
        assert!((0..=9 * 255u32).all(|sum| (sum * 7282) >> 16 == sum / 9));
        let mut detector = Detector::new(3, 3, Params::MEDIUM);
        // Any 3×3 picture seeds a background (8.8 fixed point) that is its
        // blur: at the centre, the mean of all nine.
        detector.frame(&[0, 10, 20, 30, 40, 50, 60, 70, 89]);
        assert_eq!(detector.background[4] >> 8, 41);
        // At a corner, the edges repeated: (4×0 + 2×10 + 2×30 + 40) / 9.
        assert_eq!(detector.background[0] >> 8, 13);
    }

    #[test]
    fn grain_is_not_motion() {
        for params in [Params::LOW, Params::MEDIUM, Params::HIGH] {
            let mut detector = calibrated(params);
            for seed in 100..200 {
                let motion = detector.frame(&scene(100, 6, seed, &[]));
                assert_eq!(motion.share, 0.0, "{params:?}, frame {seed}");
            }
        }
    }

    #[test]
    fn a_box_is_one_region_of_its_size() {
        let mut detector = calibrated(Params::MEDIUM);
        let motion = detector.frame(&scene(100, 6, 500, &[(100, 50, 40)]));
        assert_eq!(motion.regions, 1, "{motion:?}");
        // 40×40 grown by the blur and the dilation: about 44×44.
        let expected = (44.0 * 44.0) / (W * H) as f32;
        assert!(
            (motion.share - expected).abs() < 0.01,
            "{motion:?}, about {expected}"
        );
        // Its box: 40 px from (100, 50), grown by a few pixels each side.
        let b = motion.boxes[0];
        let near = |got: f32, px: usize, size: usize| (got - px as f32 / size as f32).abs() < 0.03;
        assert!(
            near(b.left, 100, W)
                && near(b.right, 140, W)
                && near(b.top, 50, H)
                && near(b.bottom, 90, H),
            "{b:?}"
        );
        let two = detector.frame(&scene(100, 6, 501, &[(10, 10, 30), (250, 120, 30)]));
        assert_eq!(two.regions, 2, "{two:?}");
        let mut lefts: Vec<f32> = two.boxes.iter().map(|b| b.left).collect();
        lefts.sort_by(f32::total_cmp);
        assert!(near(lefts[0], 10, W) && near(lefts[1], 250, W), "{two:?}");
    }

    #[test]
    fn each_sensitivity_has_its_threshold_and_minimum_area() {
        // A 10×10 box, grown to about 14×14: 0.34 % of the picture.
        let small = [(150, 80, 10)];
        let seen = |params| {
            calibrated(params)
                .frame(&scene(100, 6, 900, &small))
                .regions
        };
        assert_eq!(seen(Params::LOW), 0, "under low's 1 %");
        assert_eq!(seen(Params::MEDIUM), 1, "over medium's 0.3 %");
        assert_eq!(seen(Params::HIGH), 1);
        // A faint box (20 levels over the grey): seen only by high.
        let faint = |params| {
            let mut frame = frame(100, 2, 901, &[]);
            for y in 60..100 {
                for x in 60..100 {
                    frame[y * W + x] = 120;
                }
            }
            calibrated(params).frame(&picture(&frame)).regions
        };
        assert_eq!(
            (
                faint(Params::LOW),
                faint(Params::MEDIUM),
                faint(Params::HIGH)
            ),
            (0, 0, 1)
        );
    }

    #[test]
    fn the_lights_reseed_the_background() {
        let mut detector = calibrated(Params::HIGH);
        let lit = detector.frame(&scene(180, 6, 700, &[]));
        assert!(lit.reseeded && lit.share == 0.0, "{lit:?}");
        // The new light is the background now: no motion, and a box still shows.
        for seed in 701..710 {
            assert_eq!(detector.frame(&scene(180, 6, seed, &[])).share, 0.0);
        }
        assert_eq!(
            detector.frame(&scene(180, 6, 710, &[(20, 20, 40)])).regions,
            1
        );
        // A box in the dark after the lights go off again.
        assert!(detector.frame(&scene(40, 6, 711, &[])).reseeded);
    }

    #[test]
    fn during_an_event_someone_still_is_present_and_their_leaving_no_ghost() {
        let mut detector = calibrated(Params::MEDIUM);
        detector.hold_reference();
        let standing = [(100, 50, 40)];
        // Two minutes of standing still: no longer motion, but present.
        let mut last = Motion::default();
        for seed in 0..600 {
            last = detector.frame(&scene(100, 6, 3000 + seed, &standing));
        }
        assert!(last.share == 0.0 && last.present, "{last:?}");
        // They leave: where the background had absorbed them, the picture is
        // back to the reference: no ghost, and nothing present.
        let gone = detector.frame(&scene(100, 6, 3700, &[]));
        assert!(gone.share == 0.0 && !gone.present, "{gone:?}");
        // The ghost in the running average is gone in a few frames, so a
        // reference held next is clean: grain alone is never present.
        for seed in 0..10 {
            detector.frame(&scene(100, 6, 3710 + seed, &[]));
        }
        detector.release_reference();
        detector.hold_reference();
        for seed in 0..50 {
            assert!(!detector.frame(&scene(100, 6, 3800 + seed, &[])).present);
        }
        // The lights while holding: the reference follows them.
        assert!(detector.frame(&scene(200, 6, 3900, &[])).reseeded);
        assert!(!detector.frame(&scene(200, 6, 3901, &[])).present);
        // No reference, nothing is ever present.
        detector.release_reference();
        assert!(!detector.frame(&scene(200, 6, 3902, &standing)).present);
    }

    #[test]
    fn a_box_that_stays_becomes_background_and_leaves_no_ghost() {
        let mut detector = calibrated(Params::MEDIUM);
        let parked = [(100, 50, 40)];
        let mut frames = 0;
        while detector.frame(&scene(100, 6, 1000 + frames, &parked)).share > 0.0 {
            frames += 1;
            assert!(frames < 200, "the parked box never became background");
        }
        // About 15 s at 5 frames a second.
        assert!((50..=120).contains(&frames), "{frames} frames");
        // A box that only passes (a frame at each place) leaves nothing behind.
        let mut detector = calibrated(Params::HIGH);
        for step in 0..10 {
            assert!(
                detector
                    .frame(&scene(100, 6, 2000 + step, &[(step as usize * 25, 60, 40)]))
                    .share
                    > 0.0
            );
        }
        assert_eq!(
            detector.frame(&scene(100, 6, 2100, &[])).share,
            0.0,
            "a ghost"
        );
    }
}

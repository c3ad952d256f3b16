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
use std::time::Duration;

use crate::media::area::Area;
use crate::media::polygon::Run;

/// What a frame's comparison counted.
#[derive(Default)]
struct Counts {
    /// Pixels that moved (off the background, not back to the reference).
    moved: usize,
    /// Pixels that differ from the reference.
    differing: usize,
    /// Pixels not left out.
    looked_at: usize,
}

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

/// Time spent learning the scene before any motion is reported: up to the
/// first frame 2 s after the first (10 frames at 5 a second, 1 or 2 at key
/// frames' pace).
const CALIBRATION: Duration = Duration::from_secs(2);
/// A frame at full rate (5 a second): what a pixel that changed since the
/// frame before stands for (it may have been so for no longer).
const FRAME: Duration = Duration::from_millis(200);
/// How fast the background follows the picture: the share of it kept each
/// ms, in 0.32 fixed point: (3/4)^(1/200) while calibrating, (63/64)^(1/200)
/// after, that is 1/4 and 1/64 of the way to the picture each frame at 5 a
/// second, or time constants of 0.7 s and 12.7 s at any pace (something that
/// stops moving becomes background in about 15 s, and a passing object
/// leaves no ghost).
const CALIBRATING_KEEP: u64 = 4_288_793_812;
const LEARNING_KEEP: u64 = 4_294_629_116;
/// More than this share of the picture changed at once: the light changed.
const LIGHTS_SHARE: f32 = 0.6;

/// Bits of the per-pixel flags.
const MOVED: u8 = 1;
/// Under one of the user's masks: never looked at.
const MASKED: u8 = 2;
/// In a cell learnt as always moving: left out while learnt masks are on.
const BUSY: u8 = 4;
/// On a cell's first pixel: some pixel of the cell changed in this window.
const CELL_CHANGED: u8 = 8;
/// With a reference held: differs from it in the last frame.
const DIFFERS: u8 = 16;
/// Moved, and changed since the frame before.
const CHANGING: u8 = 32;

/// Busy cells are 2×2 pixels: fine enough for a date stamp's digits.
const CELL: usize = 2;
/// How often a cell changes is counted by windows of at least a second (a
/// clock's seconds change in every second but not in every frame), each
/// ended by the first frame past its second: at key frames' pace, a frame
/// a window. A second with no frame in it tells nothing, changed or not,
/// and is not counted.
const WINDOW: Duration = Duration::from_secs(1);
/// How often a cell changes is a running average over windows, of this
/// weight (about 100 s at full rate, or at key frames every second; twice
/// that every 2 s): a cell that changes all the time is busy after about
/// 70 windows, and a car that drives about for a minute never is.
const BUSY_WINDOWS: i32 = 100;
/// A cell that changes in more than half of the windows is busy; it stays
/// busy until it changes in fewer than a quarter.
const BUSY_ON: u16 = u16::MAX / 2;
const BUSY_OFF: u16 = u16::MAX / 4;

/// Tone bins: levels 0-31, 32-63, …
const TONE_BINS: usize = 8;

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
    /// What moved changed since the last frame: it is moving now, not
    /// standing where the background has not taken it in yet (which takes
    /// about 15 s). At key frames' pace the last frame is a second or more
    /// old: what came or moved since is changing, what stood in both is not.
    pub changing: bool,
    /// The boxes of the regions that are changing.
    pub moving: Vec<Area>,
    /// The moving regions' bounding boxes, as shares (0 to 1) of the
    /// picture's width and height: where to look for what moved.
    pub boxes: Vec<Area>,
}

/// A part of the picture that differs from the scene before the event (the
/// reference): what came and stays, or the place where something was.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Difference {
    /// Its box, as shares of the picture's width and height.
    pub area: Area,
    /// The share of the picture it covers.
    pub share: f32,
    /// There is more in its box now than in the scene before (more and
    /// sharper edges): something is there that was not, rather than gone.
    pub added: bool,
}

/// Where the detector found the picture always moving: a bit a cell of
/// `CELL`×`CELL` pixels, row by row (`width` × `height` cells).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusyCells {
    pub width: usize,
    pub height: usize,
    pub bits: Vec<u8>,
}

impl BusyCells {
    pub fn get(&self, x: usize, y: usize) -> bool {
        let i = y * self.width + x;
        self.bits
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    pub fn count(&self) -> usize {
        self.bits.iter().map(|b| b.count_ones() as usize).sum()
    }

    /// As kept: width and height (two bytes each, little-endian), then the bits.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(4 + self.bits.len());
        bytes.extend((self.width as u16).to_le_bytes());
        bytes.extend((self.height as u16).to_le_bytes());
        bytes.extend(&self.bits);
        bytes
    }

    /// None for bytes that are not [`BusyCells::to_bytes`]'s.
    pub fn from_bytes(bytes: &[u8]) -> Option<BusyCells> {
        let size = |at: usize| usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
        if bytes.len() < 4 {
            return None;
        }
        let (width, height) = (size(0), size(2));
        let bits = bytes[4..].to_vec();
        (bits.len() == (width * height).div_ceil(8)).then_some(BusyCells {
            width,
            height,
            bits,
        })
    }
}

/// How the picture's levels stand against a stored picture's (the
/// background's or the reference's). A camera's exposure follows the light
/// and what fills the picture: a large dark car brightens all of it over a
/// few seconds. Each pixel is compared with the stored level as the present
/// exposure shows it, fitted from the pixels that did not move, so that a
/// change of exposure is neither motion nor, over most of the picture, the
/// lights.
struct Tone {
    /// The level expected now of a stored level.
    expected: [u8; 256],
    /// This frame's fit: per bin of stored levels, the sum and count of the
    /// differences of still pixels.
    sums: [i32; TONE_BINS],
    counts: [u32; TONE_BINS],
}

impl Tone {
    fn new() -> Tone {
        Tone {
            expected: std::array::from_fn(|l| l as u8),
            sums: [0; TONE_BINS],
            counts: [0; TONE_BINS],
        }
    }

    /// The expected level of a stored one.
    #[inline(always)]
    fn of(&self, stored: u8) -> u8 {
        self.expected[usize::from(stored)]
    }

    /// Counts a still pixel (seen at `level`, stored at `stored`) into the fit.
    #[inline(always)]
    fn count(&mut self, stored: u8, level: u8) {
        let bin = usize::from(stored) * TONE_BINS / 256;
        self.sums[bin] += i32::from(level) - i32::from(stored);
        self.counts[bin] += 1;
    }

    /// Takes this frame's fit for the next frame: each bin's mean
    /// difference, at least `least` pixels a bin, drawn linearly between
    /// the bins' middles, held flat past the first and last; no bin with
    /// enough pixels, no change.
    fn fit(&mut self, least: u32) {
        let width = 256 / TONE_BINS as i32;
        let points: Vec<(i32, i32)> = (0..TONE_BINS)
            .filter(|&b| self.counts[b] >= least.max(1))
            .map(|b| {
                let middle = b as i32 * width + width / 2;
                (middle, self.sums[b] / self.counts[b] as i32)
            })
            .collect();
        self.sums = [0; TONE_BINS];
        self.counts = [0; TONE_BINS];
        if points.is_empty() {
            self.expected = std::array::from_fn(|l| l as u8);
            return;
        }
        for (level, expected) in self.expected.iter_mut().enumerate() {
            let level = level as i32;
            let after = points.iter().position(|&(m, _)| m >= level);
            let offset = match after {
                Some(0) => points[0].1,
                None => points[points.len() - 1].1,
                Some(i) => {
                    let ((m0, o0), (m1, o1)) = (points[i - 1], points[i]);
                    o0 + (o1 - o0) * (level - m0) / (m1 - m0)
                }
            };
            *expected = (level + offset).clamp(0, 255) as u8;
        }
    }
}

pub struct Detector {
    width: usize,
    height: usize,
    params: Params,
    /// The running average, 8.8 fixed point.
    background: Vec<u16>,
    /// The last picture, blurred.
    previous: Vec<u8>,
    /// The background when the event under way started (see the module's doc).
    reference: Option<Vec<u8>>,
    /// When the first frame was seen, and the last (None before any).
    first: Duration,
    last: Option<Duration>,
    /// When the window of busy cells under way started.
    window: Duration,
    /// Per pixel: `MOVED` in the last frame, `MASKED`, `BUSY`.
    flags: Vec<u8>,
    /// Busy cells are left out (the camera's `autoMask`).
    leave_out_busy: bool,
    /// Per cell, in how many windows it changed (0 to 65535 for all).
    activity: Vec<u16>,
    /// Where what moved in this window is known to be someone or something
    /// (not the scene): changes there are not counted.
    known: Vec<Area>,
    tone: Tone,
    reference_tone: Tone,
    /// The rows in which the frame moved, None when none did.
    band: Option<Range<usize>>,
    // Buffers kept between frames, so a frame allocates little.
    /// Three rows of the blur's horizontal sums, row `y` in the `y % 3`th.
    sums: Vec<u16>,
    /// A blurred row.
    blurred: Vec<u8>,
    /// A row of the mask grown vertically, then that row grown sideways;
    /// while comparing, a row of cells' changes.
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
            previous: vec![0; width * height],
            reference: None,
            first: Duration::ZERO,
            last: None,
            window: Duration::ZERO,
            flags: vec![0; width * height],
            leave_out_busy: true,
            activity: vec![0; width.div_ceil(CELL) * height.div_ceil(CELL)],
            known: Vec::new(),
            tone: Tone::new(),
            reference_tone: Tone::new(),
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

    /// Leaves out the pixels of `runs` (the user's masks, rasterised at
    /// this detector's size): never looked at, as though not in the picture.
    pub fn mask(&mut self, runs: &[Run]) {
        for f in &mut self.flags {
            *f &= !MASKED;
        }
        for run in runs {
            for f in &mut self.flags[run.indices(self.width)] {
                *f = (*f | MASKED) & !(MOVED | DIFFERS | CHANGING);
            }
        }
    }

    /// Whether busy cells are left out (on by default). Off, nothing is
    /// learnt and nothing is busy.
    pub fn leave_out_busy(&mut self, on: bool) {
        self.leave_out_busy = on;
        if !on {
            self.activity.fill(0);
            for f in &mut self.flags {
                *f &= !BUSY;
            }
        }
    }

    /// The cells learnt as always moving, when learning is on, but for
    /// those under the user's masks (already left out).
    pub fn busy(&self) -> Option<BusyCells> {
        if !self.leave_out_busy {
            return None;
        }
        let (cw, ch) = self.cells();
        let mut bits = vec![0u8; (cw * ch).div_ceil(8)];
        for cy in 0..ch {
            for cx in 0..cw {
                if self.flags[cy * CELL * self.width + cx * CELL] & (BUSY | MASKED) == BUSY {
                    let i = cy * cw + cx;
                    bits[i / 8] |= 1 << (i % 8);
                }
            }
        }
        Some(BusyCells {
            width: cw,
            height: ch,
            bits,
        })
    }

    /// Starts from cells learnt before (by a detector of this size), as
    /// though they had been seen changing for a while.
    pub fn learnt(&mut self, busy: &BusyCells) {
        if !self.leave_out_busy || (busy.width, busy.height) != self.cells() {
            return;
        }
        for cy in 0..busy.height {
            for cx in 0..busy.width {
                let on = busy.get(cx, cy);
                self.activity[cy * busy.width + cx] = if on { u16::MAX / 4 * 3 } else { 0 };
                self.set_busy(cx, cy, on);
            }
        }
    }

    /// What moved in `areas` is known to be someone or something: the
    /// changes there in this window are not counted as the scene's (a
    /// person who works in one place for minutes is not to be learnt as
    /// leaves; a clock elsewhere still is).
    pub fn known(&mut self, areas: &[Area]) {
        self.known.extend_from_slice(areas);
    }

    /// Cells across and down.
    fn cells(&self) -> (usize, usize) {
        (self.width.div_ceil(CELL), self.height.div_ceil(CELL))
    }

    fn set_busy(&mut self, cx: usize, cy: usize, on: bool) {
        for y in cy * CELL..((cy + 1) * CELL).min(self.height) {
            for x in cx * CELL..((cx + 1) * CELL).min(self.width) {
                let f = &mut self.flags[y * self.width + x];
                *f = if on { *f | BUSY } else { *f & !BUSY };
            }
        }
    }

    /// An event started: hold the background as it is now as the reference.
    pub fn hold_reference(&mut self) {
        self.reference = Some(self.background.iter().map(|b| (b >> 8) as u8).collect());
        self.reference_tone = Tone::new();
    }

    /// The event ended.
    pub fn release_reference(&mut self) {
        self.reference = None;
    }

    /// Looks at one picture (`width * height` grey bytes, row by row) seen
    /// `at` (a monotonic clock's time, from any origin): frames may come 5 a
    /// second or seconds apart, and the background learns by the time
    /// between them.
    pub fn frame(&mut self, pixels: &[u8], at: Duration) -> Motion {
        assert_eq!(
            pixels.len(),
            self.width * self.height,
            "a picture of another size"
        );
        let Some(last) = self.last.replace(at) else {
            (self.first, self.window) = (at, at);
            self.seed(pixels);
            return Motion::default();
        };
        let calibrating = last.saturating_sub(self.first) < CALIBRATION;
        let gap = at.saturating_sub(last);
        let fast = Rate::new(CALIBRATING_KEEP, gap);
        let slow = if calibrating {
            fast
        } else {
            Rate::new(LEARNING_KEEP, gap)
        };
        let counts = self.compare_learn(pixels, slow, fast);
        if calibrating {
            return Motion::default();
        }
        if counts.moved as f32 > LIGHTS_SHARE * counts.looked_at as f32 {
            self.relight(pixels);
            return Motion {
                reseeded: true,
                ..Motion::default()
            };
        }
        if at.saturating_sub(self.window) >= WINDOW {
            self.window = at;
            self.learn_busy();
        }
        let pixel_count = self.flags.len() as f32;
        let min_area = self.params.min_area * pixel_count;
        let present = self.reference.is_some() && counts.differing as f32 >= min_area;
        if counts.moved == 0 {
            return Motion {
                present,
                ..Motion::default()
            };
        }
        let moved = self.band.clone().expect("something moved");
        let (regions, area) = self.regions(MOVED, moved);
        // A moving thing's outline shifts: an eighth of the smallest region
        // of pixels that changed says a region is moving.
        let floor = (min_area / 8.0).max(1.0) as u32;
        let moving: Vec<Area> = regions
            .iter()
            .filter(|(_, _, changing)| *changing >= floor)
            .map(|(area, _, _)| *area)
            .collect();
        Motion {
            present,
            changing: !moving.is_empty(),
            moving,
            share: area as f32 / self.flags.len() as f32,
            regions: regions.len(),
            boxes: regions.into_iter().map(|(area, _, _)| area).collect(),
            reseeded: false,
        }
    }

    /// What differs from the scene before the event (the reference), in
    /// regions of the minimum area, as of the last frame; none without a
    /// reference.
    pub fn differences(&mut self) -> Vec<Difference> {
        let Some(reference) = self.reference.take() else {
            return Vec::new();
        };
        let (regions, _) = self.regions(DIFFERS, 0..self.height);
        let (w, h) = (self.width, self.height);
        // The last frame, blurred.
        let now = &self.previous;
        let differences = regions
            .into_iter()
            .map(|(area, pixels, _)| {
                let (x0, y0) = (
                    (area.left * w as f32) as usize,
                    (area.top * h as f32) as usize,
                );
                let (x1, y1) = (
                    ((area.right * w as f32) as usize).min(w),
                    ((area.bottom * h as f32) as usize).min(h),
                );
                let edges = |picture: &[u8]| edges(picture, w, x0..x1, y0..y1);
                Difference {
                    area,
                    share: pixels as f32 / (w * h) as f32,
                    added: edges(now) > edges(&reference),
                }
            })
            .collect();
        self.reference = Some(reference);
        differences
    }

    /// The detail in `area` of the last frame, blurred: its edges (the
    /// differences between neighbours across and down), more where a thing
    /// stands than on the bare place. Compared only with itself over time,
    /// not with the scene before an event, whose levels the exposure's fit
    /// may have moved.
    pub fn detail(&self, area: &Area) -> u64 {
        let (w, h) = (self.width, self.height);
        let at =
            |share: f32, size: usize| ((share.clamp(0.0, 1.0) * size as f32) as usize).min(size);
        let (x0, x1) = (at(area.left, w), at(area.right, w));
        let (y0, y1) = (at(area.top, h), at(area.bottom, h));
        edges(&self.previous, w, x0..x1, y0..y1)
    }

    /// The background starts again from the picture, blurred.
    fn seed(&mut self, pixels: &[u8]) {
        let (w, background, previous) = (self.width, &mut self.background, &mut self.previous);
        blur(pixels, w, &mut self.sums, &mut self.blurred, |y, row| {
            for (b, &v) in background[y * w..(y + 1) * w].iter_mut().zip(row) {
                *b = level(v);
            }
            previous[y * w..(y + 1) * w].copy_from_slice(row);
        });
        self.tone = Tone::new();
    }

    /// The light changed: the background starts again from the picture;
    /// a reference held is carried into the new light by the levels of the
    /// whole picture against the old background (so that what came with the
    /// event stays out of it), and this window's changes are not counted.
    fn relight(&mut self, pixels: &[u8]) {
        for f in &mut self.flags {
            *f &= !CELL_CHANGED;
        }
        if let Some(reference) = &mut self.reference {
            let mut tone = Tone::new();
            let (w, background) = (self.width, &self.background);
            blur(pixels, w, &mut self.sums, &mut self.blurred, |y, row| {
                for (b, &v) in background[y * w..(y + 1) * w].iter().zip(row) {
                    tone.count((b >> 8) as u8, v);
                }
            });
            tone.fit(1);
            for r in reference.iter_mut() {
                *r = tone.of(*r);
            }
            self.reference_tone = Tone::new();
        }
        self.seed(pixels);
    }

    /// In one pass over the blurred picture: marks as moved the pixels that
    /// differ from the background (as the present exposure shows it) by
    /// more than the threshold, leaving out the masked and (when on) the
    /// busy ones, and moves the background towards the picture at the
    /// `slow` rate (`fast` where a ghost is left: see below). With a
    /// reference held, a pixel back to the reference is not marked. Notes
    /// the cells that changed. Returns how many pixels are marked, how many
    /// of them changed since the last frame, how many differ from the
    /// reference, and how many were looked at.
    fn compare_learn(&mut self, pixels: &[u8], slow: Rate, fast: Rate) -> Counts {
        let (w, threshold) = (self.width, self.params.threshold);
        let left_out = MASKED | if self.leave_out_busy { BUSY } else { 0 };
        let (background, flags, previous) =
            (&mut self.background, &mut self.flags, &mut self.previous);
        let reference = self.reference.as_deref();
        let (tone, reference_tone) = (&mut self.tone, &mut self.reference_tone);
        let cw = w.div_ceil(CELL);
        let cell_changes = &mut self.grown[..cw];
        let mut counts = Counts::default();
        let mut band: Option<Range<usize>> = None;
        let h = pixels.len() / w;
        blur(
            pixels,
            w,
            &mut self.sums,
            &mut self.blurred,
            |y, blurred| {
                let before = counts.moved;
                let line = y * w..(y + 1) * w;
                let cells_top = y / CELL * CELL * w;
                let reference = reference.map(|r| &r[line.clone()]);
                // Equal lengths, told to the compiler: the loop needs no bounds checks.
                let (row_flags, background, previous) = (
                    &mut flags[line.clone()],
                    &mut background[line.clone()],
                    &mut previous[line],
                );
                let (blurred, row_flags, background, previous) = (
                    &blurred[..w],
                    &mut row_flags[..w],
                    &mut background[..w],
                    &mut previous[..w],
                );
                if y % CELL == 0 {
                    cell_changes.fill(0);
                }
                for x in 0..w {
                    let (v, b, f) = (blurred[x], background[x], row_flags[x]);
                    // Never looked at: nothing to compare, learn or count,
                    // so a mask costs nothing.
                    if f & MASKED != 0 {
                        continue;
                    }
                    let stored = (b >> 8) as u8;
                    let off_background = tone.of(stored).abs_diff(v) > threshold;
                    cell_changes[x / CELL] |= u8::from(off_background);
                    let looked = f & left_out == 0;
                    let away = reference.is_none_or(|r| {
                        let away = reference_tone.of(r[x]).abs_diff(v) > threshold;
                        if looked && !away && f & MOVED == 0 {
                            reference_tone.count(r[x], v);
                        }
                        away
                    });
                    if looked && !off_background && f & MOVED == 0 {
                        tone.count(stored, v);
                    }
                    let differs = reference.is_some() && away && looked;
                    counts.differing += usize::from(differs);
                    let moved = away && off_background && looked;
                    let changed = previous[x].abs_diff(v) > threshold;
                    let changing = moved && changed;
                    previous[x] = v;
                    row_flags[x] = (f & !(MOVED | DIFFERS | CHANGING))
                        | if moved { MOVED } else { 0 }
                        | if differs { DIFFERS } else { 0 }
                        | if changing { CHANGING } else { 0 };
                    counts.moved += usize::from(moved);
                    counts.looked_at += usize::from(looked);
                    // A ghost (back to the reference, not to the background) is
                    // learnt away fast, so a reference held later is clean.
                    let rate = if off_background && !away { fast } else { slow };
                    // What is as it was in the frame before was so since
                    // then; what changed, for a frame at most (a thing in
                    // one key frame leaves no ghost).
                    let weight = if changed { rate.frame } else { rate.gap };
                    let b = i32::from(b);
                    background[x] = (b + (((i32::from(level(v)) - b) * weight) >> 15)) as u16;
                }
                if counts.moved > before {
                    band = Some(band.as_ref().map_or(y, |band| band.start)..y + 1);
                }
                if y % CELL == CELL - 1 || y + 1 == h {
                    // The cells' first pixels are on the row CELL - 1 rows up (or this one).
                    for (cx, &c) in cell_changes.iter().enumerate() {
                        if c != 0 {
                            flags[cells_top + cx * CELL] |= CELL_CHANGED;
                        }
                    }
                }
            },
        );
        self.band = band;
        // A bin fits with at least 1 % of the picture's pixels.
        let least = (self.flags.len() / 100) as u32;
        self.tone.fit(least);
        if self.reference.is_some() {
            self.reference_tone.fit(least);
        }
        counts
    }

    /// At the end of a window: counts which cells changed in it, marks as
    /// busy the cells that change in most windows, and no longer busy those
    /// that have calmed down.
    fn learn_busy(&mut self) {
        let (cw, ch) = self.cells();
        let known = std::mem::take(&mut self.known);
        let in_known = |cx: usize, cy: usize| {
            let (x, y) = ((cx as f32 + 0.5) / cw as f32, (cy as f32 + 0.5) / ch as f32);
            known
                .iter()
                .any(|a| (a.left..=a.right).contains(&x) && (a.top..=a.bottom).contains(&y))
        };
        for cy in 0..ch {
            for cx in 0..cw {
                let first = cy * CELL * self.width + cx * CELL;
                let f = self.flags[first];
                self.flags[first] = f & !CELL_CHANGED;
                if !self.leave_out_busy || in_known(cx, cy) {
                    continue;
                }
                let a = &mut self.activity[cy * cw + cx];
                let target = if f & CELL_CHANGED != 0 {
                    i32::from(u16::MAX)
                } else {
                    0
                };
                *a = (i32::from(*a) + (target - i32::from(*a)) / BUSY_WINDOWS) as u16;
                let busy = f & BUSY != 0;
                let now = if busy { *a > BUSY_OFF } else { *a > BUSY_ON };
                if now != busy {
                    self.set_busy(cx, cy, now);
                }
            }
        }
    }

    /// Cuts the pixels flagged `bit` in `rows`, grown by a pixel in every
    /// direction (so the pieces of one thing join), into 8-connected
    /// regions and keeps those of the minimum area: their boxes with their
    /// pixels and how many of those are changing, and their pixels in all. Works on
    /// runs of pixels, not pixels: a union-find of the runs of each row with
    /// the touching runs of the row above.
    fn regions(&mut self, bit: u8, rows: Range<usize>) -> (Vec<(Area, u32, u32)>, u32) {
        let w = self.width;
        // Only those rows, and one more each side, hold grown marks.
        let band = rows.start.saturating_sub(1)..(rows.end + 1).min(self.height);
        // Runs: (row in the band, first x, x past the end); `parents` holds each run's parent.
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        self.parents.clear();
        let mut previous_row = 0..0; // the previous row's runs, as indexes into `runs`
        let (column, row) = self.grown.split_at_mut(w);
        for (y, picture_y) in band.clone().enumerate() {
            grow(&self.flags, bit, w, picture_y, column, row);
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
        // Each region's extent in runs: (first x, first row, x past, row
        // past), and its changing pixels.
        let mut extents = vec![(usize::MAX, usize::MAX, 0, 0); runs.len()];
        let mut changing = vec![0u32; runs.len()];
        for (i, &(y, start, end)) in runs.iter().enumerate() {
            let root = find(&mut self.parents, i as u32) as usize;
            self.areas[root] += (end - start) as u32;
            let e = &mut extents[root];
            *e = (e.0.min(start), e.1.min(y), e.2.max(end), e.3.max(y + 1));
            let row = (band.start + y) * w;
            changing[root] += self.flags[row + start..row + end]
                .iter()
                .filter(|f| **f & CHANGING != 0)
                .count() as u32;
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
                let area = Area {
                    left: x0 as f32 / width,
                    top: (band.start + y0) as f32 / height,
                    right: x1 as f32 / width,
                    bottom: (band.start + y1) as f32 / height,
                };
                boxes.push((area, a, changing[root]));
            }
        }
        (boxes, area)
    }
}

/// A grey level as the background holds it: 8.8 fixed point, in the
/// middle of the level, so that following a steady picture (rounding down)
/// it stays at that level.
#[inline(always)]
fn level(v: u8) -> u16 {
    (u16::from(v) << 8) | 128
}

/// How far the background moves towards a frame, in 0.15 fixed point: for
/// a pixel as it was in the frame before (`gap`), and for one that changed
/// (`frame`).
#[derive(Clone, Copy)]
struct Rate {
    gap: i32,
    frame: i32,
}

impl Rate {
    /// Where `keep` (0.32 fixed point) of the background is kept each ms,
    /// for a frame `gap` after the one before.
    fn new(keep: u64, gap: Duration) -> Rate {
        Rate {
            gap: weight(keep, gap),
            frame: weight(keep, gap.min(FRAME)),
        }
    }
}

/// `1 - keep^ms` in 0.15 fixed point, `keep` in 0.32, by squaring.
fn weight(keep: u64, gap: Duration) -> i32 {
    let (mut left, mut power, mut ms) = (1u64 << 32, keep, gap.as_millis() as u64);
    while ms > 0 {
        if ms & 1 == 1 {
            left = (left * power) >> 32;
        }
        power = (power * power) >> 32;
        ms >>= 1;
    }
    (((1 << 32) - left + (1 << 16)) >> 17) as i32
}

/// The edges in a part of a picture (`w` wide): the sum of the differences
/// between neighbours across and down.
fn edges(picture: &[u8], w: usize, xs: Range<usize>, ys: Range<usize>) -> u64 {
    let h = picture.len() / w;
    let mut sum = 0u64;
    for y in ys {
        for x in xs.clone() {
            let p = picture[y * w + x];
            if x + 1 < w {
                sum += u64::from(p.abs_diff(picture[y * w + x + 1]));
            }
            if y + 1 < h {
                sum += u64::from(p.abs_diff(picture[(y + 1) * w + x]));
            }
        }
    }
    sum
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

/// Row `y` of the pixels of `flags` (`w` wide) flagged `bit`, grown by a
/// pixel in every direction into `out`: grown vertically into `column`
/// first, then sideways.
fn grow(flags: &[u8], bit: u8, w: usize, y: usize, column: &mut [u8], out: &mut [u8]) {
    let h = flags.len() / w;
    let row = |r: usize| &flags[r * w..(r + 1) * w];
    let (up, here, down) = (row(y.saturating_sub(1)), row(y), row((y + 1).min(h - 1)));
    for (x, c) in column.iter_mut().enumerate() {
        *c = (up[x] | here[x] | down[x]) & bit;
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
    use crate::media::polygon::Polygon;
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

    /// Frames at full rate: each 200 ms after the one before.
    trait Step {
        fn step(&mut self, pixels: &[u8]) -> Motion;
    }

    impl Step for Detector {
        fn step(&mut self, pixels: &[u8]) -> Motion {
            let at = self.last.map_or(Duration::ZERO, |last| last + FRAME);
            self.frame(pixels, at)
        }
    }

    /// A detector that has learnt a still, grainy scene for 3 s.
    fn calibrated(params: Params) -> Detector {
        let mut detector = Detector::new(W / 2, H / 2, params);
        for seed in 0..16 {
            let motion = detector.step(&scene(100, 6, seed, &[]));
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
        detector.step(&[0, 10, 20, 30, 40, 50, 60, 70, 89]);
        assert_eq!(detector.background[4] >> 8, 41);
        // At a corner, the edges repeated: (4×0 + 2×10 + 2×30 + 40) / 9.
        assert_eq!(detector.background[0] >> 8, 13);
    }

    #[test]
    fn grain_is_not_motion() {
        for params in [Params::LOW, Params::MEDIUM, Params::HIGH] {
            let mut detector = calibrated(params);
            for seed in 100..200 {
                let motion = detector.step(&scene(100, 6, seed, &[]));
                assert_eq!(motion.share, 0.0, "{params:?}, frame {seed}");
            }
        }
    }

    #[test]
    fn a_box_is_one_region_of_its_size() {
        let mut detector = calibrated(Params::MEDIUM);
        let motion = detector.step(&scene(100, 6, 500, &[(100, 50, 40)]));
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
        let two = detector.step(&scene(100, 6, 501, &[(10, 10, 30), (250, 120, 30)]));
        assert_eq!(two.regions, 2, "{two:?}");
        let mut lefts: Vec<f32> = two.boxes.iter().map(|b| b.left).collect();
        lefts.sort_by(f32::total_cmp);
        assert!(near(lefts[0], 10, W) && near(lefts[1], 250, W), "{two:?}");
    }

    #[test]
    fn each_sensitivity_has_its_threshold_and_minimum_area() {
        // A 10×10 box, grown to about 14×14: 0.34 % of the picture.
        let small = [(150, 80, 10)];
        let seen = |params| calibrated(params).step(&scene(100, 6, 900, &small)).regions;
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
            calibrated(params).step(&picture(&frame)).regions
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
        let lit = detector.step(&scene(180, 6, 700, &[]));
        assert!(lit.reseeded && lit.share == 0.0, "{lit:?}");
        // The new light is the background now: no motion, and a box still shows.
        for seed in 701..710 {
            assert_eq!(detector.step(&scene(180, 6, seed, &[])).share, 0.0);
        }
        assert_eq!(
            detector.step(&scene(180, 6, 710, &[(20, 20, 40)])).regions,
            1
        );
        // A box in the dark after the lights go off again.
        assert!(detector.step(&scene(40, 6, 711, &[])).reseeded);
    }

    #[test]
    fn during_an_event_someone_still_is_present_and_their_leaving_no_ghost() {
        let mut detector = calibrated(Params::MEDIUM);
        detector.hold_reference();
        let standing = [(100, 50, 40)];
        // Two minutes of standing still: no longer motion, but present.
        let mut last = Motion::default();
        for seed in 0..600 {
            last = detector.step(&scene(100, 6, 3000 + seed, &standing));
        }
        assert!(last.share == 0.0 && last.present, "{last:?}");
        // They leave: where the background had absorbed them, the picture is
        // back to the reference: no ghost, and nothing present.
        let gone = detector.step(&scene(100, 6, 3700, &[]));
        assert!(gone.share == 0.0 && !gone.present, "{gone:?}");
        // The ghost in the running average is gone in a few frames, so a
        // reference held next is clean: grain alone is never present.
        for seed in 0..10 {
            detector.step(&scene(100, 6, 3710 + seed, &[]));
        }
        detector.release_reference();
        detector.hold_reference();
        for seed in 0..50 {
            assert!(!detector.step(&scene(100, 6, 3800 + seed, &[])).present);
        }
        // The lights while holding: the reference follows them.
        assert!(detector.step(&scene(200, 6, 3900, &[])).reseeded);
        assert!(!detector.step(&scene(200, 6, 3901, &[])).present);
        // No reference, nothing is ever present.
        detector.release_reference();
        assert!(!detector.step(&scene(200, 6, 3902, &standing)).present);
    }

    #[test]
    fn what_stops_is_no_longer_changing_before_it_is_background() {
        let mut detector = calibrated(Params::MEDIUM);
        for step in 0..5 {
            let moving = detector.step(&scene(
                100,
                6,
                700 + step,
                &[(20 + step as usize * 10, 60, 40)],
            ));
            assert!(moving.changing, "step {step}: {moving:?}");
        }
        for seed in 705..715 {
            let standing = detector.step(&scene(100, 6, seed, &[(60, 60, 40)]));
            assert!(standing.share > 0.0 && !standing.changing, "{standing:?}");
        }
    }

    #[test]
    fn what_differs_from_the_scene_before_is_a_thing_left_or_a_place_emptied() {
        // A thing left: a textured box (a photograph has more in it than
        // the grey it stands on) that stays after the event's start.
        let textured = |seed: u32| {
            let mut frame = frame(100, 6, seed, &[]);
            for y in 50..90 {
                for x in 100..140 {
                    frame[y * W + x] = if (x / 4 + y / 4) % 2 == 0 { 40 } else { 220 };
                }
            }
            picture(&frame)
        };
        let mut detector = calibrated(Params::MEDIUM);
        detector.hold_reference();
        for seed in 0..100 {
            detector.step(&textured(4000 + seed));
        }
        let left = detector.differences();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].added, "{left:?}");
        let near = |got: f32, px: usize, size: usize| (got - px as f32 / size as f32).abs() < 0.04;
        let a = left[0].area;
        assert!(
            near(a.left, 100, W) && near(a.right, 140, W) && near(a.bottom, 90, H),
            "{a:?}"
        );
        let detail_with_it = detector.detail(&a);
        // Taken away again, in an event that started while it stood: the
        // place it was has less in it than the scene before.
        detector.release_reference();
        detector.hold_reference();
        for seed in 0..20 {
            detector.step(&scene(100, 6, 4200 + seed, &[]));
        }
        let emptied = detector.differences();
        assert_eq!(emptied.len(), 1, "{emptied:?}");
        assert!(!emptied[0].added, "{emptied:?}");
        // Its place is bare: a fraction of the detail it had.
        let bare = detector.detail(&a);
        assert!(bare * 4 < detail_with_it, "{bare} of {detail_with_it}");
        // No reference, nothing differs.
        detector.release_reference();
        assert!(detector.differences().is_empty());
    }

    #[test]
    fn a_box_that_stays_becomes_background_and_leaves_no_ghost() {
        let mut detector = calibrated(Params::MEDIUM);
        let parked = [(100, 50, 40)];
        let mut frames = 0;
        while detector.step(&scene(100, 6, 1000 + frames, &parked)).share > 0.0 {
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
                    .step(&scene(100, 6, 2000 + step, &[(step as usize * 25, 60, 40)]))
                    .share
                    > 0.0
            );
        }
        assert_eq!(
            detector.step(&scene(100, 6, 2100, &[])).share,
            0.0,
            "a ghost"
        );
    }

    /// A detector fed a still, grainy scene every `gap` from 0, for 4 s
    /// and 3 frames at least; and when its next frame is due.
    fn calibrated_at(gap: Duration) -> (Detector, Duration) {
        let mut detector = Detector::new(W / 2, H / 2, Params::MEDIUM);
        let mut at = Duration::ZERO;
        while at <= Duration::from_secs(4).max(2 * gap) {
            let seed = at.as_millis() as u32;
            let motion = detector.frame(&scene(100, 6, seed, &[]), at);
            assert_eq!(motion, Motion::default());
            at += gap;
        }
        (detector, at)
    }

    /// The paces a detector sees: full rate, and key frames every 1, 2 and 10 s.
    const PACES: [Duration; 4] = [
        FRAME,
        Duration::from_secs(1),
        Duration::from_secs(2),
        Duration::from_secs(10),
    ];

    #[test]
    fn at_any_pace_what_stays_is_background_in_the_same_time_and_what_passes_leaves_no_ghost() {
        // At 5 frames a second, 1/64 and 1/4 of the way each frame, as ever.
        assert_eq!(weight(LEARNING_KEEP, FRAME), 32768 / 64);
        assert_eq!(weight(CALIBRATING_KEEP, FRAME), 32768 / 4);
        let parked = [(100, 50, 40)];
        let mut took = Vec::new();
        for gap in PACES {
            let (mut detector, arrived) = calibrated_at(gap);
            let mut at = arrived;
            while detector
                .frame(&scene(100, 6, at.as_millis() as u32, &parked), at)
                .share
                > 0.0
            {
                at += gap;
                assert!(at - arrived < Duration::from_secs(60), "at {gap:?}");
            }
            took.push((gap, at - arrived));
        }
        // About 15 s at each pace: as at full rate, but for the frames in
        // which it is first seen (a frame's worth learnt, not the time since
        // the one before) and last.
        let full_rate = took[0].1;
        assert!(
            (10..=24).contains(&full_rate.as_secs()),
            "{full_rate:?} at full rate"
        );
        for &(gap, time) in &took[1..] {
            assert!(time.abs_diff(full_rate) <= 2 * gap, "{took:?}");
        }
        // A box in a single frame at any pace: in the next, no ghost where it was.
        for gap in PACES {
            let (mut detector, at) = calibrated_at(gap);
            assert!(detector.frame(&scene(100, 6, 1, &parked), at).share > 0.0);
            let after = detector.frame(&scene(100, 6, 2, &[]), at + gap);
            assert_eq!(after.share, 0.0, "a ghost at {gap:?}");
        }
    }

    #[test]
    fn calibration_takes_two_seconds_at_any_pace() {
        for gap in PACES {
            let mut detector = Detector::new(W / 2, H / 2, Params::MEDIUM);
            detector.frame(&scene(100, 6, 0, &[]), Duration::ZERO);
            // Still learning, up to the first frame 2 s after the first.
            let mut at = gap;
            while at - gap < CALIBRATION {
                let still = detector.frame(&scene(100, 6, 1 + at.as_millis() as u32, &[]), at);
                assert_eq!(still, Motion::default(), "{at:?}");
                at += gap;
            }
            let seen = detector.frame(&scene(100, 6, 3, &[(100, 50, 40)]), at);
            assert_eq!(seen.regions, 1, "at {at:?}, every {gap:?}: {seen:?}");
        }
    }

    #[test]
    fn what_always_moves_is_learnt_at_key_frames_pace_too() {
        // A frame a second, each a window: the flicker, off the background
        // in 4 frames of 5, is busy in two minutes (in 80 s at full rate,
        // where each window of 5 frames sees it).
        let (mut detector, start) = calibrated_at(Duration::from_secs(1));
        let second = |s: u64| start + Duration::from_secs(s);
        for s in 1..60 {
            detector.frame(&flickering(s as u32, &[]), second(s));
        }
        assert_eq!(detector.busy().unwrap().count(), 0, "busy after a minute");
        for s in 60..120 {
            detector.frame(&flickering(s as u32, &[]), second(s));
        }
        let busy = detector.busy().unwrap();
        assert!(busy.get(4, 4) && !busy.get(30, 30), "{} busy", busy.count());
        assert_eq!(
            detector.frame(&flickering(120, &[]), second(120)).share,
            0.0
        );
    }

    /// A frame of two halves, the left at `left` and the right at `right`,
    /// with grain and white boxes as in `frame`.
    fn halves(left: u8, right: u8, seed: u32, boxes: &[(usize, usize, usize)]) -> Vec<u8> {
        let mut frame = frame(0, 0, seed, boxes);
        let grain = self::frame(100, 6, seed, &[]);
        for (i, p) in frame.iter_mut().enumerate() {
            if *p != 250 {
                let level = if i % W < W / 2 { left } else { right };
                *p = (i16::from(level) + i16::from(grain[i]) - 100).clamp(0, 255) as u8;
            }
        }
        frame
    }

    #[test]
    fn a_change_of_exposure_is_neither_motion_nor_the_lights() {
        // A scene of a dark half and a bright one, whose camera opens up over
        // 4 s as something dark fills the picture: the dark half 45 levels
        // brighter, the bright one 10 (near white, it has less room).
        let mut detector = Detector::new(W / 2, H / 2, Params::HIGH);
        for seed in 0..20 {
            detector.step(&picture(&halves(80, 200, seed, &[])));
        }
        detector.hold_reference();
        for step in 0..=20u16 {
            let (left, right) = ((80 + step * 45 / 20) as u8, (200 + step / 2) as u8);
            let motion = detector.step(&picture(&halves(left, right, 100 + u32::from(step), &[])));
            assert!(
                motion.share == 0.0 && !motion.reseeded && !motion.present,
                "step {step}: {motion:?}"
            );
        }
        // In the new exposure a box still shows, and the reference held
        // before the change still tells what is new.
        let boxed = detector.step(&picture(&halves(125, 210, 200, &[(60, 40, 40)])));
        assert!(boxed.regions == 1 && boxed.present, "{boxed:?}");
        for seed in 201..210 {
            detector.step(&picture(&halves(125, 210, seed, &[])));
        }
        let gone = detector.step(&picture(&halves(125, 210, 210, &[])));
        assert!(gone.share == 0.0 && !gone.present, "{gone:?}");
    }

    #[test]
    fn the_lights_while_an_event_is_on_leave_what_came_out_of_the_reference() {
        let mut detector = calibrated(Params::MEDIUM);
        detector.hold_reference();
        let standing = [(100, 50, 40)];
        assert!(detector.step(&scene(100, 6, 50, &standing)).present);
        // The lights come on while it stands: the reference follows the
        // light, without the box in it.
        assert!(detector.step(&scene(180, 6, 51, &standing)).reseeded);
        for seed in 52..60 {
            assert!(detector.step(&scene(180, 6, seed, &standing)).present);
        }
        let gone = detector.step(&scene(180, 6, 60, &[]));
        assert!(!gone.present, "{gone:?}");
    }

    /// The test frame with a patch at (x, y, size) of grey `level`.
    fn with_patch(mut frame: Vec<u8>, (px, py, size): (usize, usize, usize), level: u8) -> Vec<u8> {
        for y in py..py + size {
            frame[y * W + px..y * W + px + size].fill(level);
        }
        frame
    }

    /// A scene whose top left corner flickers (a 24 px patch that changes
    /// every few frames, as leaves or a clock's seconds do), with `boxes`.
    fn flickering(seed: u32, boxes: &[(usize, usize, usize)]) -> Vec<u8> {
        let level = [40, 200, 90, 220, 30][(seed / 2 % 5) as usize];
        picture(&with_patch(frame(100, 6, seed, boxes), (4, 4, 24), level))
    }

    #[test]
    fn what_always_moves_is_learnt_and_left_out() {
        let mut detector = calibrated(Params::MEDIUM);
        // At first the flicker is motion.
        let early: Vec<f32> = (0..20)
            .map(|s| detector.step(&flickering(s, &[])).share)
            .collect();
        assert!(
            early.iter().filter(|s| **s > 0.0).count() >= 10,
            "{early:?}"
        );
        for s in 20..300 {
            detector.step(&flickering(s, &[]));
        }
        assert_eq!(detector.busy().unwrap().count(), 0, "busy after a minute");
        // After 80 s it is busy, and no longer motion; the rest is watched.
        for s in 300..400 {
            detector.step(&flickering(s, &[]));
        }
        let busy = detector.busy().unwrap();
        // The patch, 12×12 of the detector's pixels, blurred a pixel wider:
        // about 7×7 cells of 2×2.
        assert!(
            (36..=64).contains(&busy.count()),
            "{} busy cells",
            busy.count()
        );
        assert!(busy.get(4, 4) && !busy.get(30, 30), "{busy:?}");
        for s in 400..430 {
            assert_eq!(detector.step(&flickering(s, &[])).share, 0.0, "frame {s}");
        }
        let boxed = detector.step(&flickering(430, &[(150, 80, 40)]));
        assert_eq!(boxed.regions, 1, "{boxed:?}");
        // A detector that starts from what was learnt leaves it out at once.
        let mut next = Detector::new(W / 2, H / 2, Params::MEDIUM);
        next.learnt(&busy);
        for s in 0..31 {
            assert_eq!(next.step(&flickering(s, &[])).share, 0.0, "frame {s}");
        }
        assert_eq!(next.busy(), Some(busy.clone()));
        // Off, nothing is learnt and the flicker is motion again.
        next.leave_out_busy(false);
        assert_eq!(next.busy(), None);
        let moving = (0..10).filter(|s| next.step(&flickering(100 + s, &[])).share > 0.0);
        assert!(moving.count() >= 5);
    }

    #[test]
    fn what_passes_or_is_known_is_not_learnt_as_always_moving() {
        // A box crossing the picture every 12 s, for two minutes; and one
        // that moves about in one place for two minutes while the watcher
        // knows it for someone.
        let mut detector = calibrated(Params::MEDIUM);
        for s in 0..600u32 {
            let x = (s % 60) as usize * 5;
            let boxes = if x < 280 { vec![(x, 70, 40)] } else { vec![] };
            detector.step(&scene(100, 6, 5000 + s, &boxes));
        }
        assert_eq!(detector.busy().unwrap().count(), 0);
        for s in 0..600u32 {
            let x = 100 + (s % 4) as usize * 10;
            let motion = detector.step(&scene(100, 6, 6000 + s, &[(x, 70, 40)]));
            detector.known(&motion.boxes);
        }
        assert_eq!(detector.busy().unwrap().count(), 0);
    }

    /// The runs of a mask of the picture's left `share`, at the detector's size.
    fn left_part(share: f32) -> Vec<Run> {
        let polygon = Polygon::new(vec![[0.0, 0.0], [share, 0.0], [share, 1.0], [0.0, 1.0]]);
        crate::media::polygon::rasterise(&[polygon], W / 2, H / 2)
    }

    #[test]
    fn a_masked_area_is_never_looked_at() {
        let mut detector = calibrated(Params::HIGH);
        // The left quarter masked.
        detector.mask(&left_part(0.25));
        let under = detector.step(&scene(100, 6, 600, &[(10, 60, 40)]));
        assert_eq!(under, Motion::default());
        // Half in the mask: only the half outside counts (grown by a pixel).
        let across = detector.step(&scene(100, 6, 601, &[(60, 60, 40)]));
        assert_eq!(across.regions, 1, "{across:?}");
        assert!(across.boxes[0].left >= 0.24, "{across:?}");
        // The lights over the unmasked part alone are still the lights.
        detector.mask(&left_part(0.75));
        assert!(detector.step(&scene(200, 6, 602, &[])).reseeded);
    }
}

//! The motion detector's time per frame, as the node runs it: 320×180 grey
//! frames of a grainy still scene, and of the same scene with a box moving
//! across it, each halved to the detector's 160×90 (`frame.rs`) and looked
//! at; and the moving scene again with a mask over the picture's left half.
//! Built with the release profile (`cargo bench --bench detector`); prints
//! one JSON line of medians and 99th percentiles in µs.
//! `benches/bench.py` runs it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use nvr_base::media::polygon::{Polygon, rasterise};
use nvr_base::motion::detector::{Detector, Params};
use nvr_base::motion::frame::for_detector;

const W: usize = 320;
const H: usize = 180;
const FRAMES: usize = 5_000;

/// Grey 100 with grain of ±6 (from `seed`), and a white 40×40 box at `x` if any.
fn scene(seed: u32, x: Option<usize>) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut pixels: Vec<u8> = (0..W * H)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (94 + state % 13) as u8
        })
        .collect();
    if let Some(x) = x {
        for y in 70..110 {
            pixels[y * W + x..y * W + x + 40].fill(250);
        }
    }
    pixels
}

/// Median and 99th percentile, in µs, of the detector's time on `frames`
/// (taken in turn, 5 a second), after it has learnt the still scene; with
/// `masked`, the left half of the picture masked.
fn time(frames: &[Vec<u8>], masked: bool) -> (f64, f64) {
    let mut detector = Detector::new(W / 2, H / 2, Params::MEDIUM);
    if masked {
        let half = Polygon::new(vec![[0.0, 0.0], [0.5, 0.0], [0.5, 1.0], [0.0, 1.0]]);
        detector.mask(&rasterise(&[half], W / 2, H / 2));
    }
    let mut small = Vec::new();
    let at = |frame: usize| Duration::from_millis(200 * frame as u64);
    for seed in 0..20 {
        let scene = scene(1000 + seed, None);
        detector.frame(for_detector(&scene, W, H, &mut small).0, at(seed as usize));
    }
    let mut took: Vec<f64> = (0..FRAMES)
        .map(|i| {
            let started = Instant::now();
            let (picture, _, _) =
                for_detector(black_box(&frames[i % frames.len()]), W, H, &mut small);
            black_box(detector.frame(picture, at(20 + i)));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    took.sort_by(f64::total_cmp);
    (took[took.len() / 2], took[took.len() * 99 / 100])
}

fn main() {
    let still: Vec<Vec<u8>> = (0..25).map(|seed| scene(seed, None)).collect();
    // A box crossing the picture, 10 pixels a frame.
    let moving: Vec<Vec<u8>> = (0..25)
        .map(|i| scene(100 + i, Some(20 + 10 * i as usize)))
        .collect();
    let (still_median, still_p99) = time(&still, false);
    let (moving_median, moving_p99) = time(&moving, false);
    let (masked_median, masked_p99) = time(&moving, true);
    println!(
        "{{\"still_median_us\":{still_median:.1},\"still_p99_us\":{still_p99:.1},\
         \"moving_median_us\":{moving_median:.1},\"moving_p99_us\":{moving_p99:.1},\
         \"masked_median_us\":{masked_median:.1},\"masked_p99_us\":{masked_p99:.1},\"frames\":{FRAMES}}}"
    );
}

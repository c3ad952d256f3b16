//! The motion decoder's frames: ffmpeg writes each as a `pgmyuv` image (a
//! PGM header whose height counts the chroma rows too, then YUV 4:2:0) at
//! most 640 pixels wide for a camera that classifies, so that the classifier
//! can crop in colour from the same frame the detector looks at (320 for
//! one that does not). The detector takes the luma plane at
//! about 320 pixels wide, the size its parameters were measured at: a wider
//! frame's luma is halved first.

/// The largest frame taken: a PGM header asking for more is not ffmpeg's.
const MAX_PIXELS: usize = 1920 * 1080;
/// Frames wider than this are halved for the detector.
const DETECTOR_MAX_WIDTH: usize = 400;

/// The frame's width and height from a header's three lines (`P5`,
/// `width height*3/2`, `255`); None if it is not a `pgmyuv` header.
pub fn parse_header(magic: &str, size: &str, max: &str) -> Option<(usize, usize)> {
    let (width, rows) = size.split_once(' ')?;
    let (width, rows): (usize, usize) = (width.parse().ok()?, rows.parse().ok()?);
    // The luma rows are two thirds of them, an even number.
    let height = rows / 3 * 2;
    let even = width % 2 == 0 && rows % 3 == 0 && height % 2 == 0;
    let fits = width >= 2 && height >= 2 && width * height <= MAX_PIXELS;
    (magic == "P5" && max == "255" && even && fits).then_some((width, height))
}

/// The detector's picture of a frame: its luma plane (the first
/// `width * height` bytes), halved (each 2×2 block averaged) into `small`
/// when wide; returns it with its size.
pub fn for_detector<'a>(
    frame: &'a [u8],
    width: usize,
    height: usize,
    small: &'a mut Vec<u8>,
) -> (&'a [u8], usize, usize) {
    let luma = &frame[..width * height];
    if width <= DETECTOR_MAX_WIDTH {
        return (luma, width, height);
    }
    let (w, h) = (width / 2, height / 2);
    small.clear();
    for y in 0..h {
        let top = &luma[2 * y * width..][..2 * w];
        let bottom = &luma[(2 * y + 1) * width..][..2 * w];
        small.extend((0..w).map(|x| {
            let sum = u16::from(top[2 * x])
                + u16::from(top[2 * x + 1])
                + u16::from(bottom[2 * x])
                + u16::from(bottom[2 * x + 1]);
            ((sum + 2) / 4) as u8
        }));
    }
    (small.as_slice(), w, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgmyuv_headers() {
        assert_eq!(parse_header("P5", "640 540", "255"), Some((640, 360)));
        assert_eq!(parse_header("P5", "320 270", "255"), Some((320, 180)));
        for (magic, size, max) in [
            ("P6", "640 540", "255"),
            ("P5", "640x540", "255"),
            ("P5", "640 540", "65535"),
            ("P5", "641 540", "255"),
            ("P5", "640 541", "255"),
            ("P5", "640 0", "255"),
            ("P5", "2 2", "255"),
            ("P5", "100000 150000", "255"),
            ("P5", "-4 6", "255"),
        ] {
            assert_eq!(parse_header(magic, size, max), None, "{magic} {size} {max}");
        }
    }

    #[test]
    fn wide_frames_are_halved_for_the_detector() {
        // 640×2 luma: the left half 10 and 30 in turns, the right half 200;
        // then the chroma rows, which the detector never sees.
        let (w, h) = (640, 2);
        let mut frame: Vec<u8> = (0..w * h)
            .map(|i| if i % w < w / 2 { [10, 30][i % 2] } else { 200 })
            .collect();
        frame.extend(std::iter::repeat_n(128, w));
        let mut small = Vec::new();
        let (luma, sw, sh) = for_detector(&frame, w, h, &mut small);
        assert_eq!((sw, sh, luma.len()), (320, 1, 320));
        assert!(luma[..160].iter().all(|&v| v == 20), "{:?}", &luma[..4]);
        assert!(luma[160..].iter().all(|&v| v == 200));

        let narrow: Vec<u8> = vec![7; 320 * 180 * 3 / 2];
        let (luma, sw, sh) = for_detector(&narrow, 320, 180, &mut small);
        assert_eq!((sw, sh, luma.len()), (320, 180, 320 * 180));
    }
}

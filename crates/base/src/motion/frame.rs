//! The motion decoder's frames, as ffmpeg writes them on stdout: for a
//! camera that classifies, `pgmyuv` images (a PGM header whose height counts
//! the chroma rows too, then YUV 4:2:0) at most 640 pixels wide, so that the
//! classifier can crop in colour from the same frame the detector looks at;
//! for one that does not, `pgm` images of the luma alone at the detector's
//! own size, 160 pixels wide. The detector takes the luma at most 200
//! pixels wide, about the size its parameters were measured at: a wider
//! frame's is halved first, twice for 640 (each 2×2 block averaged).

/// The largest frame taken: a PGM header asking for more is not ffmpeg's.
const MAX_PIXELS: usize = 1920 * 1080;
/// Frames wider than this are halved for the detector.
const DETECTOR_MAX_WIDTH: usize = 200;

/// How the frames come.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Format {
    /// Luma alone (`pgm`).
    Grey,
    /// Luma, then the two chroma planes at half size (`pgmyuv`).
    Yuv420,
}

impl Format {
    /// The bytes of a `width` × `height` frame.
    pub fn bytes(self, width: usize, height: usize) -> usize {
        match self {
            Format::Grey => width * height,
            Format::Yuv420 => width * height * 3 / 2,
        }
    }
}

/// The frame's width and height from a header's three lines (`P5`, `width
/// rows`, `255`; a `pgmyuv` image's rows are its height × 3/2); None if it is
/// not a header of `format`.
pub fn parse_header(format: Format, magic: &str, size: &str, max: &str) -> Option<(usize, usize)> {
    let (width, rows) = size.split_once(' ')?;
    let (width, rows): (usize, usize) = (width.parse().ok()?, rows.parse().ok()?);
    let (height, whole) = match format {
        Format::Grey => (rows, true),
        // The luma rows are two thirds of them, an even number, as the width is.
        Format::Yuv420 => {
            let height = rows / 3 * 2;
            (height, width % 2 == 0 && rows % 3 == 0 && height % 2 == 0)
        }
    };
    // Checked: on a 32-bit board a wrapped product could pass as small.
    let pixels = width.checked_mul(height);
    let fits = width >= 2 && height >= 2 && pixels.is_some_and(|p| p <= MAX_PIXELS);
    (magic == "P5" && max == "255" && whole && fits).then_some((width, height))
}

/// The detector's picture of a frame: its luma plane (the first `width *
/// height` bytes), halved into `small` as many times as it takes to bring
/// it to the detector's width when wide (each 2×2 block averaged); returns
/// it with its size.
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
    let (mut w, mut h) = halve(luma, width, height, small);
    while w > DETECTOR_MAX_WIDTH {
        let larger = std::mem::take(small);
        (w, h) = halve(&larger, w, h, small);
    }
    (small.as_slice(), w, h)
}

/// `pixels` (`width` × `height`) halved into `out`, each 2×2 block averaged:
/// a last odd row or column is left out, a single row halved sideways only.
/// Rows as slices, so the loop runs without bounds checks.
fn halve(pixels: &[u8], width: usize, height: usize, out: &mut Vec<u8>) -> (usize, usize) {
    let (w, h) = (width / 2, (height / 2).max(1));
    out.clear();
    out.reserve(w * h);
    for y in 0..h {
        let top = &pixels[2 * y * width..][..2 * w];
        let bottom = &pixels[(2 * y + 1).min(height - 1) * width..][..2 * w];
        out.extend((0..w).map(|x| {
            let sum = u16::from(top[2 * x])
                + u16::from(top[2 * x + 1])
                + u16::from(bottom[2 * x])
                + u16::from(bottom[2 * x + 1]);
            ((sum + 2) / 4) as u8
        }));
    }
    (w, h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        use Format::{Grey, Yuv420};
        for (format, magic, size, max, expected) in [
            (Yuv420, "P5", "640 540", "255", Some((640, 360))),
            (Yuv420, "P5", "320 270", "255", Some((320, 180))),
            (Grey, "P5", "160 90", "255", Some((160, 90))),
            (Grey, "P5", "161 91", "255", Some((161, 91))),
            (Yuv420, "P6", "640 540", "255", None),
            (Yuv420, "P5", "640x540", "255", None),
            (Yuv420, "P5", "640 540", "65535", None),
            (Yuv420, "P5", "641 540", "255", None),
            (Yuv420, "P5", "640 541", "255", None),
            (Yuv420, "P5", "640 0", "255", None),
            (Yuv420, "P5", "2 2", "255", None),
            (Yuv420, "P5", "100000 150000", "255", None),
            (Yuv420, "P5", "-4 6", "255", None),
            (Grey, "P6", "160 90", "255", None),
            (Grey, "P5", "160 1", "255", None),
            (Grey, "P5", "2000 2000", "255", None),
            // 2^32 + 65,536 pixels: 65,536 once wrapped in 32 bits.
            (Grey, "P5", "65536 65537", "255", None),
            (Grey, "P5", "160 90", "65535", None),
        ] {
            assert_eq!(
                parse_header(format, magic, size, max),
                expected,
                "{format:?} {magic} {size} {max}"
            );
        }
        assert_eq!(
            (Grey.bytes(160, 90), Yuv420.bytes(160, 90)),
            (14_400, 21_600)
        );
    }

    #[test]
    fn wide_frames_are_reduced_for_the_detector() {
        let mut small = Vec::new();
        // 320×2 luma: the left half 10 and 30 in turns, the right half 200;
        // then the chroma rows, which the detector never sees.
        let (w, h) = (320, 2);
        let mut frame: Vec<u8> = (0..w * h)
            .map(|i| if i % w < w / 2 { [10, 30][i % 2] } else { 200 })
            .collect();
        frame.extend(std::iter::repeat_n(128, w));
        let (luma, sw, sh) = for_detector(&frame, w, h, &mut small);
        assert_eq!((sw, sh, luma.len()), (160, 1, 160));
        assert!(luma[..80].iter().all(|&v| v == 20), "{:?}", &luma[..4]);
        assert!(luma[80..].iter().all(|&v| v == 200));

        // 640×360, halved twice: each 4×4 block about the mean of its 16 pixels.
        let (w, h) = (640, 360);
        let frame: Vec<u8> = (0..w * h * 3 / 2)
            .map(|i| ((i % w) / 4 * 3 + (i / w) % 4) as u8)
            .collect();
        let (luma, sw, sh) = for_detector(&frame, w, h, &mut small);
        assert_eq!((sw, sh, luma.len()), (160, 90, 160 * 90));
        // Block x holds 3x + 0, 1, 2, 3 by row: a mean of 3x + 1.5, rounded up.
        assert_eq!((luma[0], luma[1], luma[160 + 2]), (2, 5, 8));

        // Too short to halve three times: its one row is halved sideways.
        let frame = vec![90u8; 1280 * 2];
        let (luma, sw, sh) = for_detector(&frame, 1280, 2, &mut small);
        assert_eq!((sw, sh), (160, 1));
        assert!(luma.iter().all(|&v| v == 90));

        for (w, h) in [(160, 90), (200, 112)] {
            let narrow: Vec<u8> = vec![7; w * h];
            let (luma, sw, sh) = for_detector(&narrow, w, h, &mut small);
            assert_eq!((sw, sh, luma.len()), (w, h, w * h));
        }
    }
}

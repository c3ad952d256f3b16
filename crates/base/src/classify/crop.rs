//! A square of a decoded frame (planar YUV 4:2:0, as the motion decoder
//! gives it) as the classifier's input: RGB, `size` × `size`, resampled
//! bilinearly. BT.601 limited range, what cameras' H.264 streams use.

use super::regions::Square;

/// A frame as ffmpeg's `pgmyuv` encoder writes it (YUV 4:2:0, even width
/// and height): the luma plane, then for each chroma row the U row (half the
/// width) followed by the V row.
pub struct Yuv420<'a> {
    pub width: usize,
    pub height: usize,
    pub data: &'a [u8],
}

/// One plane of a frame: its bytes from its first, each row `stride` on.
#[derive(Clone, Copy)]
struct Plane<'a> {
    data: &'a [u8],
    stride: usize,
    width: usize,
    height: usize,
}

impl Yuv420<'_> {
    /// The bytes such a frame takes.
    pub fn bytes(width: usize, height: usize) -> usize {
        width * height * 3 / 2
    }

    fn planes(&self) -> [Plane<'_>; 3] {
        let (w, h) = (self.width, self.height);
        let chroma = |offset: usize| Plane {
            data: &self.data[w * h + offset..],
            stride: w,
            width: w / 2,
            height: h / 2,
        };
        let luma = Plane {
            data: self.data,
            stride: w,
            width: w,
            height: h,
        };
        [luma, chroma(0), chroma(w / 2)]
    }
}

/// `square` of `frame` as `size` × `size` RGB bytes, row by row.
pub fn rgb_crop(frame: &Yuv420, square: Square, size: usize) -> Vec<u8> {
    assert_eq!(frame.data.len(), Yuv420::bytes(frame.width, frame.height));
    assert!(frame.width.is_multiple_of(2) && frame.height.is_multiple_of(2) && frame.width > 0);
    let scale = square.side as f32 / size as f32;
    let mut out = Vec::with_capacity(size * size * 3);
    let planes = frame.planes();
    for oy in 0..size {
        let y = square.y as f32 + (oy as f32 + 0.5) * scale - 0.5;
        for ox in 0..size {
            let x = square.x as f32 + (ox as f32 + 0.5) * scale - 0.5;
            let luma = sample(planes[0], x, y);
            // Chroma sits at half resolution, centred between luma pairs.
            let u = sample(planes[1], (x - 0.5) / 2.0, (y - 0.5) / 2.0);
            let v = sample(planes[2], (x - 0.5) / 2.0, (y - 0.5) / 2.0);
            out.extend_from_slice(&rgb(luma, u, v));
        }
    }
    out
}

/// The plane's value at (x, y), bilinear, the edges repeated.
fn sample(plane: Plane, x: f32, y: f32) -> f32 {
    let (w, h) = (plane.width, plane.height);
    let x = x.clamp(0.0, (w - 1) as f32);
    let y = y.clamp(0.0, (h - 1) as f32);
    let (x0, y0) = (x as usize, y as usize);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (fx, fy) = (x - x0 as f32, y - y0 as f32);
    let at = |x: usize, y: usize| f32::from(plane.data[y * plane.stride + x]);
    let top = at(x0, y0) + (at(x1, y0) - at(x0, y0)) * fx;
    let bottom = at(x0, y1) + (at(x1, y1) - at(x0, y1)) * fx;
    top + (bottom - top) * fy
}

/// BT.601, limited range (Y 16–235, U and V 16–240).
fn rgb(y: f32, u: f32, v: f32) -> [u8; 3] {
    let (y, u, v) = (1.164 * (y - 16.0), u - 128.0, v - 128.0);
    let clamp = |c: f32| c.round().clamp(0.0, 255.0) as u8;
    [
        clamp(y + 1.596 * v),
        clamp(y - 0.392 * u - 0.813 * v),
        clamp(y + 2.017 * u),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `w` × `h` frame of one colour, laid out as `pgmyuv`.
    fn flat(w: usize, h: usize, (y, u, v): (u8, u8, u8)) -> Vec<u8> {
        let mut data = vec![y; w * h];
        for _ in 0..h / 2 {
            data.extend(std::iter::repeat_n(u, w / 2));
            data.extend(std::iter::repeat_n(v, w / 2));
        }
        data
    }

    #[test]
    fn colours_convert_as_bt601_says() {
        // Values from ITU-R BT.601's limited-range equations (also what
        // ffmpeg's swscale gives for these YUV triples).
        for (yuv, want) in [
            ((16, 128, 128), [0, 0, 0]),
            ((235, 128, 128), [255, 255, 255]),
            ((81, 90, 240), [255, 0, 0]),
            ((145, 54, 34), [0, 255, 0]),
            ((41, 240, 110), [0, 0, 255]),
        ] {
            let data = flat(4, 4, yuv);
            let frame = Yuv420 {
                width: 4,
                height: 4,
                data: &data,
            };
            let square = Square {
                x: 0,
                y: 0,
                side: 4,
            };
            let out = rgb_crop(&frame, square, 2);
            for pixel in out.chunks(3) {
                for (got, want) in pixel.iter().zip(want) {
                    assert!(got.abs_diff(want) <= 2, "{yuv:?}: {pixel:?}, want {want:?}");
                }
            }
        }
    }

    #[test]
    fn the_square_is_taken_from_where_it_is() {
        // A 64×32 frame: black, with the right half white.
        let (w, h) = (64, 32);
        let mut data = flat(w, h, (16, 128, 128));
        for y in 0..h {
            for x in w / 2..w {
                data[y * w + x] = 235;
            }
        }
        let frame = Yuv420 {
            width: w,
            height: h,
            data: &data,
        };
        let grey = |square: Square| -> Vec<u8> {
            rgb_crop(&frame, square, 8)
                .chunks(3)
                .map(|p| p[0])
                .collect()
        };
        assert!(
            grey(Square {
                x: 0,
                y: 0,
                side: 16
            })
            .iter()
            .all(|&g| g == 0)
        );
        assert!(
            grey(Square {
                x: 40,
                y: 8,
                side: 16
            })
            .iter()
            .all(|&g| g == 255)
        );
        // Across the edge: the left columns dark, the right ones light.
        let across = grey(Square {
            x: 24,
            y: 0,
            side: 16,
        });
        assert!(across[0] == 0 && across[7] == 255, "{across:?}");
        assert_eq!(
            rgb_crop(
                &frame,
                Square {
                    x: 0,
                    y: 0,
                    side: 32
                },
                300
            )
            .len(),
            300 * 300 * 3
        );
    }

    #[test]
    fn chroma_rows_are_read_as_pgmyuv_lays_them() {
        // Red on the left half (U 90, V 240), blue on the right (U 240, V 110).
        let (w, h) = (8, 4);
        let mut data = Vec::new();
        for _ in 0..h {
            data.extend([81, 81, 81, 81, 41, 41, 41, 41]);
        }
        for _ in 0..h / 2 {
            data.extend([90, 90, 240, 240, 240, 240, 110, 110]);
        }
        let frame = Yuv420 {
            width: w,
            height: h,
            data: &data,
        };
        let pixel = |x| {
            let square = Square { x, y: 0, side: 2 };
            rgb_crop(&frame, square, 1)
        };
        let (red, blue) = (pixel(0), pixel(6));
        assert!(red[0] > 240 && red[2] < 15, "{red:?}");
        assert!(blue[2] > 240 && blue[0] < 15, "{blue:?}");
    }
}

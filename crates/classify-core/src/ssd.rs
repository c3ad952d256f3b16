//! The SSD head of SSD MobileNetV2 (COCO, the quantised build of Google's
//! Coral test data): its anchors, the decoding of the model's raw boxes and
//! scores into objects, and non-maximum suppression. Pure arithmetic, no
//! model.
//!
//! The anchors are MediaPipe's `SsdAnchorsCalculator`'s for SSD
//! MobileNetV2 (its `object_detection_oid_v4_cpu.pbtxt`): 6 layers, strides
//! 16 to 512, scales 0.2 to 0.95, aspect ratios 1, 2, 0.5, 3, 0.3333, the
//! lowest layer reduced, anchor sizes not fixed. They are the TF object
//! detection API's, which the COCO model was trained with: the quantised
//! copy the model's post-processing operator carries agrees with them to its
//! quantisation step. Box scales 10, 10, 5, 5 and sigmoid scores with class
//! 0 the background, as that operator's options say.

/// The model's input side, in pixels.
pub const INPUT_SIZE: usize = 300;
/// Anchors, and so rows of the raw boxes and scores.
pub const ANCHORS: usize = 1917;
/// Classes in the raw scores: the background, then COCO's ids 1 to 90
/// (80 of them named; the others were dropped from the data set).
pub const CLASSES: usize = 91;

const STRIDES: [usize; 6] = [16, 32, 64, 128, 256, 512];
const MIN_SCALE: f32 = 0.2;
const MAX_SCALE: f32 = 0.95;
// 0.3333, not 1/3: MediaPipe's graph says so, and its anchors are what the
// model was decoded with.
const ASPECT_RATIOS: [f32; 5] = [1.0, 2.0, 0.5, 3.0, 0.3333];
const INTERPOLATED_SCALE_ASPECT_RATIO: f32 = 1.0;
const X_SCALE: f32 = 10.0;
const Y_SCALE: f32 = 10.0;
const W_SCALE: f32 = 5.0;
const H_SCALE: f32 = 5.0;

/// One anchor: centre and size, normalised to the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

/// A detected object: its class index, score and box
/// (`[x0, y0, x1, y1]`, normalised, clamped to the crop).
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    pub class: usize,
    pub score: f32,
    pub bbox: [f32; 4],
}

fn scale(layer: usize) -> f32 {
    MIN_SCALE + (MAX_SCALE - MIN_SCALE) * layer as f32 / (STRIDES.len() - 1) as f32
}

/// MediaPipe's `SsdAnchorsCalculator` for this model, in its order: layer by
/// layer, row by row, column by column, then the anchors of a cell.
pub fn anchors() -> Vec<Anchor> {
    let mut out = Vec::with_capacity(ANCHORS);
    for (layer, &stride) in STRIDES.iter().enumerate() {
        // (scale, aspect ratio) of each anchor of a cell. No two layers share
        // a stride here, so each layer is its own group.
        let mut shapes: Vec<(f32, f32)> = Vec::new();
        if layer == 0 {
            // reduce_boxes_in_lowest_layer
            shapes.extend([(0.1, 1.0), (scale(0), 2.0), (scale(0), 0.5)]);
        } else {
            shapes.extend(ASPECT_RATIOS.iter().map(|&ratio| (scale(layer), ratio)));
            let next = if layer == STRIDES.len() - 1 {
                1.0
            } else {
                scale(layer + 1)
            };
            shapes.push((
                (scale(layer) * next).sqrt(),
                INTERPOLATED_SCALE_ASPECT_RATIO,
            ));
        }
        let cells = INPUT_SIZE.div_ceil(stride);
        for row in 0..cells {
            for column in 0..cells {
                for &(scale, ratio) in &shapes {
                    out.push(Anchor {
                        x: (column as f32 + 0.5) / cells as f32,
                        y: (row as f32 + 0.5) / cells as f32,
                        w: scale * ratio.sqrt(),
                        h: scale / ratio.sqrt(),
                    });
                }
            }
        }
    }
    out
}

/// Decodes one raw box (`[y, x, h, w]` offsets, the TF object detection
/// API's order) against its anchor into `[x0, y0, x1, y1]`, unclamped.
pub fn decode_box(raw: [f32; 4], anchor: &Anchor) -> [f32; 4] {
    let y = raw[0] / Y_SCALE * anchor.h + anchor.y;
    let x = raw[1] / X_SCALE * anchor.w + anchor.x;
    let h = (raw[2] / H_SCALE).exp() * anchor.h;
    let w = (raw[3] / W_SCALE).exp() * anchor.w;
    [x - w / 2.0, y - h / 2.0, x + w / 2.0, y + h / 2.0]
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The objects in the model's raw outputs (`boxes`: ANCHORS x 4, `scores`:
/// ANCHORS x CLASSES logits): per anchor its best class but 0, kept when its
/// score is at least `min_score`; then non-maximum suppression per class
/// (IoU above `iou` drops the weaker); at most `limit`, best first.
pub fn detect(
    boxes: &[f32],
    scores: &[f32],
    anchors: &[Anchor],
    min_score: f32,
    iou: f32,
    limit: usize,
) -> Vec<Object> {
    assert_eq!(boxes.len(), anchors.len() * 4, "raw boxes");
    assert_eq!(scores.len(), anchors.len() * CLASSES, "raw scores");
    let mut found = Vec::new();
    for (i, anchor) in anchors.iter().enumerate() {
        let row = &scores[i * CLASSES..(i + 1) * CLASSES];
        let (class, logit) =
            row.iter()
                .enumerate()
                .skip(1)
                .fold((0, f32::NEG_INFINITY), |best, (c, &l)| {
                    if l > best.1 { (c, l) } else { best }
                });
        let score = sigmoid(logit);
        if score < min_score {
            continue;
        }
        let raw = [
            boxes[i * 4],
            boxes[i * 4 + 1],
            boxes[i * 4 + 2],
            boxes[i * 4 + 3],
        ];
        let b = decode_box(raw, anchor);
        found.push(Object {
            class,
            score,
            bbox: b.map(|v| v.clamp(0.0, 1.0)),
        });
    }
    suppress(found, iou, limit)
}

/// Intersection over union of two `[x0, y0, x1, y1]` boxes (0 when empty).
pub fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let area = |r: &[f32; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
    let union = area(a) + area(b) - inter;
    if union > 0.0 { inter / union } else { 0.0 }
}

/// Greedy non-maximum suppression within each class: best first, an object
/// overlapping a kept one of its class by more than `threshold` is dropped.
pub fn suppress(mut objects: Vec<Object>, threshold: f32, limit: usize) -> Vec<Object> {
    objects.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut kept: Vec<Object> = Vec::new();
    for object in objects {
        if kept.len() == limit {
            break;
        }
        let overlaps = kept
            .iter()
            .any(|k| k.class == object.class && iou(&k.bbox, &object.bbox) > threshold);
        if !overlaps {
            kept.push(object);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &Anchor, expected: [f32; 4]) -> bool {
        let got = [a.x, a.y, a.w, a.h];
        got.iter().zip(expected).all(|(g, e)| (g - e).abs() < 1e-5)
    }

    /// Expected values: MediaPipe's golden file for exactly these settings,
    /// `mediapipe/calculators/tflite/testdata/anchor_golden_file_1.txt`
    /// (x, y, w, h a line; used by its `ssd_anchors_calculator_test.cc`).
    #[test]
    fn anchors_match_mediapipes_golden_file() {
        let a = anchors();
        assert_eq!(a.len(), ANCHORS);
        let first = [
            [0.0263158, 0.0263158, 0.1, 0.1],
            [0.0263158, 0.0263158, 0.282843, 0.141421],
            [0.0263158, 0.0263158, 0.141421, 0.282843],
            [0.0789474, 0.0263158, 0.1, 0.1],
        ];
        for (i, e) in first.iter().enumerate() {
            assert!(close(&a[i], *e), "anchor {i}: {:?} != {e:?}", a[i]);
        }
        // Layer 4 (2x2 cells), its last cell, then layer 5 (one cell).
        let last = [
            [0.75, 0.75, 0.8, 0.8],
            [0.75, 0.75, 1.13137, 0.565686],
            [0.75, 0.75, 0.565685, 1.13137],
            [0.75, 0.75, 1.38564, 0.46188],
            [0.75, 0.75, 0.461857, 1.38571],
            [0.75, 0.75, 0.87178, 0.87178],
            [0.5, 0.5, 0.95, 0.95],
            [0.5, 0.5, 1.3435, 0.671751],
            [0.5, 0.5, 0.671751, 1.3435],
            [0.5, 0.5, 1.64545, 0.548483],
            [0.5, 0.5, 0.548455, 1.64553],
            [0.5, 0.5, 0.974679, 0.974679],
        ];
        for (k, e) in last.iter().enumerate() {
            let i = ANCHORS - last.len() + k;
            assert!(close(&a[i], *e), "anchor {i}: {:?} != {e:?}", a[i]);
        }
    }

    /// Layer 1's first anchor, from the formula by hand: 10x10 cells, so its
    /// centre is (0.05, 0.05); it follows layer 0's 19*19*3 = 1083 anchors;
    /// its scale is 0.2 + 0.75/5 = 0.35 and its interpolated anchor's
    /// sqrt(0.35 * 0.5).
    #[test]
    fn layer_one_starts_after_the_reduced_lowest_layer() {
        let a = anchors();
        assert!(close(&a[1083], [0.05, 0.05, 0.35, 0.35]), "{:?}", a[1083]);
        let s = (0.35f32 * 0.5).sqrt();
        assert!(close(&a[1088], [0.05, 0.05, s, s]), "{:?}", a[1088]);
        assert!(close(&a[1089], [0.15, 0.05, 0.35, 0.35]), "{:?}", a[1089]);
    }

    #[test]
    fn a_raw_box_decodes_against_its_anchor() {
        let anchor = Anchor {
            x: 0.5,
            y: 0.4,
            w: 0.2,
            h: 0.3,
        };
        // Zero offsets: the anchor itself.
        let b = decode_box([0.0; 4], &anchor);
        let expected = [0.4, 0.25, 0.6, 0.55];
        assert!(
            b.iter().zip(expected).all(|(g, e)| (g - e).abs() < 1e-6),
            "{b:?}"
        );
        // y +1 (0.1 anchor heights = 0.03), x -2 (0.2 widths = -0.04),
        // h and w by e^1 and e^-1 (5 * ln).
        let b = decode_box([1.0, -2.0, 5.0, -5.0], &anchor);
        let (x, y) = (0.46, 0.43);
        let (w, h) = (0.2 / std::f32::consts::E, 0.3 * std::f32::consts::E);
        let expected = [x - w / 2.0, y - h / 2.0, x + w / 2.0, y + h / 2.0];
        assert!(
            b.iter().zip(expected).all(|(g, e)| (g - e).abs() < 1e-6),
            "{b:?} != {expected:?}"
        );
    }

    fn object(class: usize, score: f32, bbox: [f32; 4]) -> Object {
        Object { class, score, bbox }
    }

    #[test]
    fn suppression_keeps_the_best_of_overlapping_boxes_of_a_class() {
        let objects = vec![
            object(4, 0.6, [0.1, 0.1, 0.5, 0.5]),
            object(4, 0.9, [0.12, 0.1, 0.52, 0.5]),
            // Same place, another class: kept.
            object(8, 0.7, [0.1, 0.1, 0.5, 0.5]),
            // Same class, elsewhere: kept.
            object(4, 0.3, [0.6, 0.6, 0.9, 0.9]),
        ];
        let kept = suppress(objects, 0.5, 10);
        let summary: Vec<_> = kept.iter().map(|o| (o.class, o.score)).collect();
        assert_eq!(summary, [(4, 0.9), (8, 0.7), (4, 0.3)]);
    }

    #[test]
    fn suppression_keeps_an_overlap_at_or_below_the_threshold_and_stops_at_the_limit() {
        // IoU of these two: 0.5 * 1 / (1 + 1 - 0.5) = 1/3.
        let a = object(4, 0.9, [0.0, 0.0, 0.5, 1.0]);
        let b = object(4, 0.8, [0.25, 0.0, 0.75, 1.0]);
        assert!((iou(&a.bbox, &b.bbox) - 1.0 / 3.0).abs() < 1e-6);
        assert_eq!(suppress(vec![b.clone(), a.clone()], 0.5, 10).len(), 2);
        assert_eq!(
            suppress(vec![b.clone(), a.clone()], 0.3, 10),
            std::slice::from_ref(&a)
        );
        assert_eq!(suppress(vec![b, a.clone()], 0.5, 1), [a]);
        assert_eq!(iou(&[0.0, 0.0, 0.1, 0.1], &[0.5, 0.5, 0.6, 0.6]), 0.0);
    }

    #[test]
    fn detection_takes_each_anchors_best_class_but_class_0() {
        let anchors = [
            Anchor {
                x: 0.5,
                y: 0.5,
                w: 0.2,
                h: 0.2,
            },
            Anchor {
                x: 0.2,
                y: 0.2,
                w: 0.1,
                h: 0.1,
            },
        ];
        let boxes = [0.0; 8];
        let mut scores = [-10.0f32; 2 * CLASSES];
        scores[0] = 10.0; // the background: ignored even when highest
        scores[17] = 0.0; // cat, sigmoid 0.5
        scores[CLASSES + 1] = -3.0; // person, sigmoid 0.047: under 0.1
        let found = detect(&boxes, &scores, &anchors, 0.1, 0.5, 10);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].class, 17);
        assert!((found[0].score - 0.5).abs() < 1e-6);
        assert_eq!(found[0].bbox, [0.4, 0.4, 0.6, 0.6]);
    }
}

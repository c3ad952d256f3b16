//! The detector's network, run by tract: loads `model.tflite` (quantised
//! to 8 bits) as a float network for a fixed 1x300x300x3 input, cut before
//! its post-processing operator, optimises it once, and turns a 300x300 RGB
//! crop into the raw boxes and scores that `ssd` decodes.

use std::path::Path;
use std::sync::Arc;

use tract_tflite::internal::*;

use nvr_classify_core::ssd::{ANCHORS, CLASSES, INPUT_SIZE};

type Plan = Arc<TypedRunnableModel>;

/// The tensors the model's `TFLite_Detection_PostProcess` takes, which are
/// the network's raw outputs: the box encodings and the class logits (the
/// operator's third input, the anchors, `ssd` computes itself).
const OUTPUTS: [&str; 2] = ["Squeeze", "concat"];

pub struct Model {
    plan: Plan,
}

/// The raw outputs of one run: ANCHORS x 4 box offsets and ANCHORS x CLASSES
/// score logits.
pub struct Raw {
    pub boxes: Vec<f32>,
    pub scores: Vec<f32>,
}

impl Model {
    /// Loads and optimises the model; errors name what did not fit.
    pub fn load(path: &Path) -> TractResult<Model> {
        // Dequantised: tract's quantised convolutions run over ten
        // times slower than its float ones (docs/design/classification.md,
        // "How it runs: dequantised, in float").
        let model = tract_tflite::tflite()
            .with_outputs(&OUTPUTS)
            .dequantized()
            .model_for_path(path)
            .with_context(|| format!("cannot load {}", path.display()))?;
        let input = model.input_fact(0)?;
        let expected = [1, INPUT_SIZE, INPUT_SIZE, 3];
        ensure!(
            input.datum_type == f32::datum_type()
                && input.shape.as_concrete() == Some(&expected[..]),
            "{}: input is {input:?}, expected 1x300x300x3",
            path.display()
        );
        let plan = model.into_optimized()?.into_runnable()?;
        Ok(Model { plan })
    }

    /// Runs the network on `rgb` (300x300 pixels, 3 bytes each, row by row),
    /// scaled to [-1, 1) as the model's uint8 input is quantised:
    /// `(q - 128) / 128`.
    pub fn run(&self, rgb: &[u8]) -> TractResult<Raw> {
        ensure!(
            rgb.len() == INPUT_SIZE * INPUT_SIZE * 3,
            "crop of {} bytes",
            rgb.len()
        );
        // Written in place: a copy of the crop's pixels would stay alive
        // through the run, at its peak.
        let mut input = Tensor::zero::<f32>(&[1, INPUT_SIZE, INPUT_SIZE, 3])?;
        let mut pixels = input.try_as_plain_ram_mut()?;
        for (pixel, &v) in pixels.as_slice_mut::<f32>()?.iter_mut().zip(rgb) {
            *pixel = (v as f32 - 128.0) / 128.0;
        }
        let outputs = self.plan.run(tvec!(input.into()))?;
        ensure!(
            outputs.len() == 2,
            "the model gave {} outputs, expected 2",
            outputs.len()
        );
        let boxes = outputs[0].try_as_plain_ram()?.as_slice::<f32>()?.to_vec();
        let scores = outputs[1].try_as_plain_ram()?.as_slice::<f32>()?.to_vec();
        ensure!(
            boxes.len() == ANCHORS * 4 && scores.len() == ANCHORS * CLASSES,
            "outputs of {} and {} values, expected {} boxes and {} scores",
            boxes.len(),
            scores.len(),
            ANCHORS * 4,
            ANCHORS * CLASSES
        );
        Ok(Raw { boxes, scores })
    }
}

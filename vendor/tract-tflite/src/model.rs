use std::collections::hash_map::Entry;
use std::collections::HashSet;
use std::fmt::Debug;

use flatbuffers::FlatBufferBuilder;
use tract_core::internal::*;

use crate::registry::Registry;
use crate::tensors::{flat_tensor_to_tract_fact, flat_tensor_uses_per_axis_q};
use crate::tflite;
use crate::tflite::{Buffer, BufferArgs, BuiltinOperator};

pub struct Tflite {
    registry: Registry,
    /// nvr-node patch: see `with_outputs`; empty, the model's own.
    outputs: Vec<String>,
    /// nvr-node patch: see `dequantized`.
    dequantize: bool,
}

impl Debug for Tflite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tract-TfLite-framework")
    }
}

impl Default for Tflite {
    fn default() -> Self {
        let mut registry = Registry::default();
        crate::ops::register_all(&mut registry);
        Tflite { registry, outputs: vec![], dequantize: false }
    }
}

#[derive(Clone, Debug)]
pub struct TfliteProtoModel(Vec<u8>);

impl TfliteProtoModel {
    fn new(buf: Vec<u8>) -> TractResult<TfliteProtoModel> {
        let _ = tflite::root_as_model(&buf)?;
        Ok(TfliteProtoModel(buf))
    }

    pub fn root(&self) -> tflite::Model<'_> {
        unsafe { tflite::root_as_model_unchecked(&self.0) }
    }
}

fn write_model<'fb>(
    registry: &Registry,
    model: &TypedModel,
) -> TractResult<FlatBufferBuilder<'fb>> {
    let mut model = model.clone();
    crate::rewriter::rewrite_for_tflite(&mut model).context("Pre-dump rewrite")?;
    let mut builder = flatbuffers::FlatBufferBuilder::new();
    let mut op_codes = vec![];
    let sentinel = Buffer::create(&mut builder, &BufferArgs { data: None });
    let mut buffers = vec![sentinel];
    crate::ser::ModelBuilder {
        registry,
        builder: &mut builder,
        op_codes: &mut op_codes,
        buffers: &mut buffers,
    }
    .write_model(&model)?;
    Ok(builder)
}

impl Tflite {
    /// nvr-node patch: the model's outputs are the tensors of these names,
    /// not the subgraph's own, and only the operators they depend on are
    /// translated. A graph can so end before an operator tract lacks, such
    /// as the custom TFLite_Detection_PostProcess of SSD detectors.
    pub fn with_outputs(self, names: &[&str]) -> Tflite {
        Tflite { outputs: names.iter().map(|n| n.to_string()).collect(), ..self }
    }

    /// nvr-node patch: a quantised model is loaded as a float one. Its
    /// quantised constants become f32 (`(q - zero point) * scale`), but a
    /// convolution's weights f16 (`weights_as_f16`),
    /// its quantised tensors f32, and each operator's output is clamped to
    /// the range its quantised type holds, as the integer kernels saturate.
    /// tract's float kernels then run it (its quantised convolutions leave
    /// their zero-point corrections unfused).
    pub fn dequantized(self) -> Tflite {
        Tflite { dequantize: true, ..self }
    }

    pub fn write(&self, model: &TypedModel, mut w: impl std::io::Write) -> TractResult<()> {
        let builder = write_model(&self.registry, model)?;
        w.write_all(builder.finished_data())?;
        Ok(())
    }
}

/// Whether a convolution's weights (OHWI) are kept as f16 (nvr-node patch):
/// a 1x1 kernel's, and a larger one's over 16 input channels or more. A
/// larger kernel runs on its gathered taps (`ops::cnn::de_conv_f16`), as
/// large as its output times its weights' H x W x I: over the network's
/// first layers' few channels and wide pictures they would outweigh what
/// f16 saves.
fn weights_as_f16(graph: &tflite::SubGraph, id: i32) -> bool {
    let shape = graph.tensors().and_then(|t| t.get(id as usize).shape());
    shape.is_some_and(|s| s.len() == 4 && ((s.get(1) == 1 && s.get(2) == 1) || s.get(3) >= 16))
}

impl Framework<TfliteProtoModel, TypedModel> for Tflite {
    fn proto_model_for_read(
        &self,
        reader: &mut dyn std::io::Read,
    ) -> tract_core::prelude::TractResult<TfliteProtoModel> {
        let mut buf = vec![];
        reader.read_to_end(&mut buf)?;
        TfliteProtoModel::new(buf)
    }

    fn model_for_proto_model_with_model_template(
        &self,
        proto: &TfliteProtoModel,
        mut target: TypedModel,
    ) -> TractResult<TypedModel> {
        let root = proto.root();
        let main = &root.subgraphs().context("No subgraphs in Tflite model")?.get(0);
        let mut mapping = HashMap::new();
        for input in main.inputs().context("No inputs in Tflite model")? {
            if !flat_tensor_uses_per_axis_q(main, input) {
                let float = self.dequantize.then_some(f32::datum_type());
                let (fact, name) = flat_tensor_to_tract_fact(&root, main, input, float)?;
                let it = target.add_source(name, fact)?;
                mapping.insert(input, it);
            }
        }
        let operators = main.operators().context("No operators in Tflite model")?;
        let outputs: Vec<i32> = if self.outputs.is_empty() {
            main.outputs().context("No outputs in Tflite model")?.iter().collect()
        } else {
            let tensors = main.tensors().context("No tensors in Tflite model")?;
            self.outputs
                .iter()
                .map(|name| {
                    (0..tensors.len())
                        .find(|&t| tensors.get(t).name() == Some(name.as_str()))
                        .map(|t| t as i32)
                        .with_context(|| format!("No tensor named {name} in Tflite model"))
                })
                .collect::<TractResult<_>>()?
        };
        // The operators the outputs depend on, found walking back from them.
        let mut wanted: HashSet<i32> = outputs.iter().copied().collect();
        let mut needed = vec![false; operators.len()];
        for (ix, op) in operators.iter().enumerate().rev() {
            let produced = op.outputs().context("No output in Tflite operator")?;
            if produced.iter().any(|t| wanted.contains(&t)) {
                needed[ix] = true;
                wanted.extend(op.inputs().context("No input in Tflite operator")?.iter());
            }
        }
        let codes = root.operator_codes().context("No operator codes in Tflite model")?;
        for (op, _) in operators.iter().zip(needed).filter(|(_, needed)| *needed) {
            // nvr-node patch: a convolution's weights (its second input)
            // as f16, which tract's matrix products widen as they multiply
            // (`ops::cnn::de_conv_f16`): half the memory of f32, each 8-bit
            // weight rounded to f16's 11 bits. The first layer's stay f32
            // (`weights_as_f16`), as do the depthwise convolutions' (another
            // operator): tract's `Conv` wants one type.
            let conv = crate::registry::opcode(&codes.get(op.opcode_index() as usize))
                == BuiltinOperator::CONV_2D.0;
            let inputs = op.inputs().context("No input in Tflite  operator")?;
            for (position, input) in inputs.iter().enumerate() {
                if let Entry::Vacant(slot) = mapping.entry(input) {
                    let weights = conv && position == 1 && weights_as_f16(main, input);
                    let float = self.dequantize.then_some(if weights {
                        f16::datum_type()
                    } else {
                        f32::datum_type()
                    });
                    let (fact, name) = flat_tensor_to_tract_fact(&root, main, input, float)?;
                    let value = fact.konst.with_context(|| format!("Error in TF file for operator {op:?}. No prior computation nor constant for input {input}"))?;
                    let konst = target.add_const(name, value)?;
                    slot.insert(konst);
                }
            }
            self.registry
                .deser_op(&root, main, &op, &mut target, &mut mapping, self.dequantize)
                .with_context(|| {
                    format!("Translating proto-op from Tflite into tract op: {op:#?}")
                })?;
        }
        let outputs: TVec<_> = outputs
            .iter()
            .map(|o| {
                mapping
                    .get(o)
                    .copied()
                    .with_context(|| format!("Tensor {o} is computed by no operator"))
            })
            .collect::<TractResult<_>>()?;
        target.select_output_outlets(&outputs)?;
        Ok(target)
    }
}

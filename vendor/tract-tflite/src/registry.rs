use std::any::TypeId;

use tract_core::internal::*;
use tract_core::ops::change_axes::wire_with_rank_broadcast;

use crate::ser::SubgraphBuilder;
use crate::tflite::{BuiltinOperator, Model, Operator, OperatorCode, SubGraph};

pub type ToTract = Box<dyn Fn(&mut DeserOp) -> TractResult<TVec<OutletId>> + Send + Sync + 'static>;
pub type ToTflite<T> = fn(&mut SubgraphBuilder, &TypedModel, &TypedNode, &T) -> TractResult<()>;
pub type ToTfliteRaw = Box<
    dyn Fn(&mut SubgraphBuilder, &TypedModel, &TypedNode) -> TractResult<()>
        + Send
        + Sync
        + 'static,
>;

#[derive(Default)]
pub struct Registry {
    pub to_tract: HashMap<i32, ToTract>,
    pub to_tflite: HashMap<TypeId, ToTfliteRaw>,
}

pub struct DeserContext<'ctx> {
    pub model: &'ctx Model<'ctx>,
    pub subgraph: &'ctx SubGraph<'ctx>,
    pub target: &'ctx mut TypedModel,
}

pub struct DeserOp<'op> {
    pub ctx: DeserContext<'op>,
    pub prefix: &'op str,
    pub flat: &'op Operator<'op>,
    pub inputs: &'op [OutletId],
    pub output_facts: &'op [TypedFact],
}

impl DeserOp<'_> {
    pub fn facts(&self) -> TractResult<TVec<TypedFact>> {
        self.inputs
            .iter()
            .map(|o| self.ctx.target.outlet_fact(*o).cloned())
            .collect::<TractResult<TVec<_>>>()
    }
}

impl Registry {
    pub fn reg_to_tflite<T: Op>(&mut self, tflite: ToTflite<T>) {
        self.to_tflite.insert(
            std::any::TypeId::of::<T>(),
            Box::new(move |b, m, n| tflite(b, m, n, n.op_as::<T>().unwrap())),
        );
    }

    pub fn reg_to_tract<T>(&mut self, op: BuiltinOperator, to: T)
    where
        T: Fn(&mut DeserOp) -> TractResult<TVec<OutletId>> + Send + Sync + 'static,
    {
        self.to_tract.insert(op.0, Box::new(to));
    }

    /// nvr-node patch: `dequantize` runs a quantised operator in f32 (see
    /// `Tflite::dequantized`), each output clamped to the range its
    /// quantised type holds.
    pub fn deser_op(
        &self,
        model: &Model,
        subgraph: &SubGraph,
        flat_op: &Operator,
        target: &mut TypedModel,
        mapping: &mut HashMap<i32, OutletId>,
        dequantize: bool,
    ) -> TractResult<()> {
        let inputs: TVec<OutletId> =
            flat_op.inputs().unwrap().iter().map(|o| mapping[&o]).collect();
        let tensors = subgraph.tensors().unwrap();
        let prefix = tensors.get(flat_op.outputs().unwrap().get(0) as usize).name().unwrap();
        let opcode_index = flat_op.opcode_index();
        let operator_code = model.operator_codes().unwrap().get(opcode_index as _);
        let opcode = opcode(&operator_code);
        let ctx = DeserContext { model, subgraph, target };
        let results = if let Some(op) = self.to_tract.get(&opcode) {
            let output_facts = flat_op
                .outputs()
                .unwrap()
                .iter()
                .map(|t| {
                    let float = dequantize.then_some(f32::datum_type());
                    Ok(crate::tensors::flat_tensor_to_tract_fact(model, subgraph, t, float)?.0)
                })
                .collect::<TractResult<TVec<TypedFact>>>()?;
            (op)(&mut DeserOp {
                ctx,
                prefix,
                flat: flat_op,
                inputs: &inputs,
                output_facts: &output_facts,
            })
            .with_context(|| format!("Opcode is {operator_code:#?}"))?
        } else {
            let facts =
                inputs.iter().map(|o| target.outlet_fact(*o)).collect::<TractResult<TVec<_>>>()?;
            bail!("Unsupported: {operator_code:#?}, inputs: {facts:#?}")
        };
        for (flat, wire) in flat_op.outputs().unwrap().iter().zip(results.iter()) {
            let mut wire = *wire;
            if let Some((low, high)) =
                crate::tensors::quantized_range(subgraph, flat).filter(|_| dequantize)
            {
                // The integer kernels saturate at their type's bounds; the
                // model relies on it (a ReLU6 is often only the range of
                // the output's type).
                let name = tensors.get(flat as usize).name().unwrap_or(prefix);
                let low = target.add_const(format!("{name}.low"), tensor0(low))?;
                let high = target.add_const(format!("{name}.high"), tensor0(high))?;
                wire = wire_with_rank_broadcast(
                    format!("{name}.saturate_low"),
                    target,
                    tract_core::ops::math::max(),
                    &[wire, low],
                )?[0];
                wire = wire_with_rank_broadcast(
                    format!("{name}.saturate_high"),
                    target,
                    tract_core::ops::math::min(),
                    &[wire, high],
                )?[0];
            }
            mapping.insert(flat, wire);
        }
        Ok(())
    }
}

/// The builtin operator an operator code names (nvr-node patch: taken out of
/// `deser_op`, which the loader shares).
pub fn opcode(operator_code: &OperatorCode) -> i32 {
    if operator_code.deprecated_builtin_code() as i32
        == BuiltinOperator::PLACEHOLDER_FOR_GREATER_OP_CODES.0
    {
        operator_code.builtin_code().0
    } else {
        operator_code.deprecated_builtin_code() as i32
    }
}

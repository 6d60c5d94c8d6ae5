//! One builder per TFLite builtin op, grouped by family. Each reads its operator's inputs from
//! the [`Ctx`] and returns its outputs' values; a quantized op lowers to integer arithmetic
//! exactly as TFLite Micro's reference kernel computes it, a float op to float arithmetic.

mod activation;
mod circular_buffer;
mod compare;
mod control;
mod conv;
mod detection;
mod elementwise;
mod filter_bank;
mod hybrid;
mod index;
mod kiss_fft;
mod layout;
mod lookup;
mod lstm;
mod lstm_int;
mod math;
mod matmul;
mod nms;
mod normalise;
mod pool;
mod reduce;
mod resize;
mod rfft;
mod shape;
mod sigmoid_table;
mod signal;
mod signal_state;
mod softmax;
mod softmax16;
mod spectral;
mod svdf;
pub(super) mod variable;

pub use softmax::softmax_params;

use super::error::OpError;
use super::model::{Quant, TensorId, TfOp, TfTensor, TfliteModel};
use crate::dtype::DType;
use crate::dtype::Scalar;
use crate::graph::quant::Activation;
use crate::graph::{GOp, Graph, Lazy};
use crate::tensor::Tensor;
use kiln_tflite_schema::tflite::{ActivationFunctionType, BuiltinOperator, BuiltinOptions};
use std::collections::HashMap;

/// Lowers one operator: its output values, in order.
pub(super) type OpBuilder = fn(&mut Ctx) -> Result<Vec<Lazy>, OpError>;

/// The builder of an operator, if Kiln has one: a builtin by its code, a custom op by its
/// custom code.
pub(super) fn op_builder(op: &TfOp) -> Option<OpBuilder> {
    if op.code == BuiltinOperator::Custom {
        let name = op.custom.as_deref()?;
        return [
            signal::CUSTOM,
            rfft::CUSTOM,
            filter_bank::CUSTOM,
            spectral::CUSTOM,
            signal_state::CUSTOM,
            circular_buffer::CUSTOM,
            detection::CUSTOM,
        ]
        .iter()
        .flat_map(|ops| ops.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b);
    }
    [
        conv::OPS,
        pool::OPS,
        reduce::OPS,
        elementwise::OPS,
        shape::OPS,
        softmax::OPS,
        resize::OPS,
        math::OPS,
        compare::OPS,
        activation::OPS,
        index::OPS,
        matmul::OPS,
        layout::OPS,
        svdf::OPS,
        lstm::OPS,
        control::OPS,
        variable::OPS,
    ]
    .iter()
    .flat_map(|ops| ops.iter())
    .find(|(c, _)| *c == op.code)
    .map(|(_, b)| *b)
}

/// What every subgraph's lowering shares: the whole model (for the subgraphs that control-flow
/// ops name), the import's settings, and how deeply subgraphs nest here.
#[derive(Clone, Copy)]
pub(super) struct Scope<'a> {
    pub root: &'a TfliteModel,
    /// Whether float16 constants stay float16 in flash (see `ImportConfig`).
    pub keep_f16: bool,
    /// Whether quantized convolutions pad their input channels to words (see `ImportConfig`).
    pub channels_in_words: bool,
    pub depth: usize,
    /// Lowering `CALL_ONCE`'s subgraph: its assignments set the variables' initial values.
    pub init: bool,
}

/// What a builder sees: the graph, its operator, and the values of the tensors so far.
pub(super) struct Ctx<'a> {
    pub graph: &'a mut Graph,
    /// The subgraph the operator belongs to.
    pub model: &'a TfliteModel,
    pub op: &'a TfOp,
    pub values: &'a mut HashMap<TensorId, Lazy>,
    pub scope: Scope<'a>,
}

impl Ctx<'_> {
    fn id(&self, i: usize) -> Result<TensorId, OpError> {
        self.op
            .inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or(OpError::MissingInput { index: i })
    }

    /// Whether optional input `i` is given.
    pub fn has(&self, i: usize) -> bool {
        self.id(i).is_ok()
    }

    /// The tensor of input `i`.
    pub fn info(&self, i: usize) -> Result<&TfTensor, OpError> {
        Ok(self.model.tensor(self.id(i)?))
    }

    /// The tensor of output `i`.
    pub fn out_info(&self, i: usize) -> Result<&TfTensor, OpError> {
        let id = self
            .op
            .outputs
            .get(i)
            .copied()
            .ok_or_else(|| OpError::Invalid(format!("output {i} is missing")))?;
        Ok(self.model.tensor(id))
    }

    /// The value of input `i`: computed by an earlier op, a model input, or a constant (a
    /// weight in flash).
    pub fn input(&mut self, i: usize) -> Result<Lazy, OpError> {
        let id = self.id(i)?;
        if let Some(v) = self.values.get(&id) {
            return Ok(v.clone());
        }
        let t = self.model.tensor(id);
        let data = t.data.clone().ok_or_else(|| {
            OpError::Invalid(format!("input {i} ({:?}) has no value yet", t.name))
        })?;
        let w = self.graph.weight(&t.name, data);
        self.values.insert(id, w.clone());
        Ok(w)
    }

    /// The constant contents of input `i`.
    pub fn constant(&self, i: usize) -> Result<&Tensor, OpError> {
        let t = self.info(i)?;
        t.data.as_ref().ok_or_else(|| OpError::NotConstant {
            index: i,
            tensor: t.name.clone(),
        })
    }

    /// The constant integer contents of input `i`.
    pub fn ints(&self, i: usize) -> Result<Vec<i64>, OpError> {
        let t = self.constant(i)?;
        t.to_i64()
            .ok_or_else(|| OpError::Invalid(format!("input {i} holds {}, not integers", t.dtype())))
    }

    /// The quantization parameters of tensor `t`.
    pub fn quant(&self, t: &TfTensor) -> Result<Quant, OpError> {
        t.quant.clone().ok_or_else(|| OpError::NoQuant {
            tensor: t.name.clone(),
        })
    }

    /// A custom op's options (its FlexBuffer map).
    pub fn custom_options(&self) -> Result<super::flex::CustomOptions<'_>, OpError> {
        super::flex::CustomOptions::parse(&self.op.custom_options)
    }

    /// The operator's options of the expected kind (the defaults when the file has none).
    pub fn options<T: Default + Clone>(&self, pick: fn(&BuiltinOptions) -> Option<&T>) -> T {
        self.op
            .options
            .as_ref()
            .and_then(pick)
            .cloned()
            .unwrap_or_default()
    }
}

/// Whether two tensors carry the same scales and zero points (or both none).
pub(super) fn quant_eq(a: &Option<Quant>, b: &Option<Quant>) -> bool {
    let key = |q: &Option<Quant>| {
        q.as_ref().map(|q| {
            (
                q.scale.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
                q.zero_point.clone(),
            )
        })
    };
    key(a) == key(b)
}

/// Input `i` and output 0 carry the same quantization (or none).
pub(super) fn same_quant(ctx: &Ctx, i: usize) -> Result<(), OpError> {
    let (a, b) = (&ctx.info(i)?.quant, &ctx.out_info(0)?.quant);
    if !quant_eq(a, b) {
        return Err(OpError::Unsupported(format!(
            "{} with input {i} quantized unlike its output",
            ctx.op.name()
        )));
    }
    Ok(())
}

/// The float16 weight that `x` widens, where `x` is a kept float16 weight's `DEQUANTIZE` (a
/// cast of the whole weight): an op that widens its operands as it reads them takes it as it is
/// stored, so that the widened copy is never written out.
pub(super) fn kept_f16(g: &Graph, x: &Lazy) -> Option<Lazy> {
    let node = g.node(x.base);
    let src = node.src.first()?;
    let widened = matches!(node.op, GOp::Cast) && node.src.len() == 1 && x.st.contiguous();
    let weight = matches!(g.node(src.base).op, GOp::Weight(_)) && src.dtype == DType::F16;
    (widened && weight && src.shape() == x.shape()).then(|| src.clone())
}

/// Whether `t` holds quantized integers (as opposed to float values).
pub(super) fn is_quantized(t: &TfTensor) -> bool {
    t.dtype.is_int() && t.quant.is_some()
}

/// The fused activation of an op.
pub(super) fn activation(a: ActivationFunctionType) -> Result<Activation, OpError> {
    Ok(match a {
        ActivationFunctionType::None => Activation::None,
        ActivationFunctionType::Relu => Activation::Relu,
        ActivationFunctionType::Relu6 => Activation::Relu6,
        ActivationFunctionType::ReluN1To1 => Activation::ReluN1To1,
        other => return Err(OpError::Unsupported(format!("fused activation {other:?}"))),
    })
}

/// A fused activation on float values.
pub(super) fn float_activation(g: &mut Graph, x: &Lazy, a: Activation) -> Result<Lazy, OpError> {
    Ok(match a {
        Activation::None => x.clone(),
        Activation::Relu => g.relu(x)?,
        Activation::Relu6 => g.clip(x, Some(0.0), Some(6.0))?,
        Activation::ReluN1To1 => g.clip(x, Some(-1.0), Some(1.0))?,
    })
}

/// The range of a quantized integer type.
pub(super) fn int_range(s: Scalar) -> Result<(i32, i32), OpError> {
    Ok(match s {
        Scalar::I8 => (-128, 127),
        Scalar::U8 => (0, 255),
        Scalar::I16 => (-32768, 32767),
        other => return Err(OpError::Unsupported(format!("quantized {other} tensors"))),
    })
}

/// `(before, after)` padding and the output size of one spatial axis, as TFLite computes them
/// (`ComputePaddingHeightWidth`).
pub(super) fn padding(
    same: bool,
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> Result<((usize, usize), usize), OpError> {
    let span = dilation * (kernel - 1) + 1;
    if same {
        let out = input.div_ceil(stride);
        let total = ((out - 1) * stride + span).saturating_sub(input);
        Ok(((total / 2, total - total / 2), out))
    } else if input < span {
        Err(OpError::Invalid(format!(
            "a VALID window of {span} is larger than the input's {input}"
        )))
    } else {
        Ok(((0, 0), (input - span) / stride + 1))
    }
}

/// A positive stride or dilation from the options.
pub(super) fn positive(what: &str, v: i32) -> Result<usize, OpError> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| OpError::Invalid(format!("{what} {v} is not positive")))
}

/// NHWC → NCHW (a view).
pub(super) fn to_nchw(x: &Lazy) -> Result<Lazy, OpError> {
    Ok(x.permute(&[0, 3, 1, 2])?)
}

/// NCHW → NHWC (a view).
pub(super) fn to_nhwc(x: &Lazy) -> Result<Lazy, OpError> {
    Ok(x.permute(&[0, 2, 3, 1])?)
}

/// Checks that a value has the shape the file gives its output tensor.
pub(super) fn expect_shape(ctx: &Ctx, x: &Lazy, out: usize) -> Result<(), OpError> {
    let t = ctx.out_info(out)?;
    if x.shape() != t.shape.as_slice() {
        return Err(OpError::Invalid(format!(
            "computes shape {:?} for output {:?}, which the file gives as {:?}",
            x.shape(),
            t.name,
            t.shape
        )));
    }
    Ok(())
}

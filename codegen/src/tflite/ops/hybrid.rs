//! Hybrid (dynamic-range quantized) `FULLY_CONNECTED`, `CONV_2D` and `DEPTHWISE_CONV_2D`:
//! float32 activations, int8 constant weights with a scale (per tensor or per output channel).
//!
//! They follow LiteRT's reference kernels, float operation for float operation. The float input
//! is quantized at run time, per batch row of a dense layer and per batch item of a
//! convolution: symmetrically (`scale = max|x| / 127`, `q = round(x · 127 / max|x|)` clamped to
//! ±127) or asymmetrically (the range widened to hold 0, the scale `(max − min) / 255` and the
//! nudged zero point, all in float32, `q = round(zp + x · (1 / scale))` clamped to the int8
//! range).
//! A dense layer quantizes asymmetrically where its options say so, a per-channel convolution
//! always. The integer sums of `w · (q − zp)` (taps outside the image add nothing) are scaled
//! back to float (dense: `acc · (s_in · s_w)`; convolution: `acc · s_w · s_in`; depthwise:
//! `acc · (s_w · s_in)`), the float bias added, then the fused activation.

use super::elementwise::round_half_away;
use super::{float_activation, padding, to_nchw, Ctx};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::Activation;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::BuiltinOperator as Op;

/// Whether the operator is hybrid: a float32 input and quantized int8 weights.
pub(super) fn is_hybrid(ctx: &Ctx) -> Result<bool, OpError> {
    let (x, w) = (ctx.info(0)?, ctx.info(1)?);
    Ok(x.dtype == Scalar::F32 && w.dtype == Scalar::I8 && w.quant.is_some())
}

/// The run-time quantization of a float tensor over `axes`: the integers centred on their zero
/// point (`q − zp`, `i32`) and the scale (`f32`, the axes kept as size 1).
fn quantize(g: &mut Graph, x: &Lazy, axes: &[usize], asym: bool) -> Result<(Lazy, Lazy), OpError> {
    if asym {
        return quantize_asym(g, x, axes);
    }
    let a = g.abs(x)?;
    let r = g.reduce(ReduceOp::Max, &a, axes)?;
    // An all-zero row quantizes to zeros whatever the scale: 1 keeps the division finite.
    let zero = g.scalar_like(&r, 0.0);
    let some = g.lt(&zero, &r)?;
    let one = g.scalar_like(&r, 1.0);
    let r = g.where_(&some, &r, &one)?;
    let k = g.scalar_like(&r, 127.0);
    let scale = g.binary(BinaryOp::Div, &r, &k)?;
    let inv = g.binary(BinaryOp::Div, &k, &r)?;
    let v = g.binary(BinaryOp::Mul, x, &inv)?;
    let v = round_half_away(g, &v)?;
    let v = g.clip(&v, Some(-127.0), Some(127.0))?;
    Ok((g.cast(&v, DType::I32), scale))
}

/// LiteRT's `AsymmetricQuantizeFloats` over `axes` (see [`quantize`]).
fn quantize_asym(g: &mut Graph, x: &Lazy, axes: &[usize]) -> Result<(Lazy, Lazy), OpError> {
    let mn = g.reduce_min(x, axes)?;
    let mx = g.reduce(ReduceOp::Max, x, axes)?;
    let zero = g.scalar_like(&mn, 0.0);
    let rmin = g.min(&mn, &zero)?;
    let rmax = g.binary(BinaryOp::Max, &mx, &zero)?;
    // An all-zero row quantizes to its zero point: any range does.
    let some = g.lt(&rmin, &rmax)?;
    let one = g.scalar_like(&rmax, 1.0);
    let rmax = g.where_(&some, &rmax, &one)?;
    let span = g.binary(BinaryOp::Sub, &rmax, &rmin)?;
    let k = g.scalar_like(&span, 255.0);
    let scale = g.binary(BinaryOp::Div, &span, &k)?;
    let a = g.binary(BinaryOp::Div, &rmin, &scale)?;
    let b = g.binary(BinaryOp::Div, &rmax, &scale)?;
    let lo = g.scalar_like(&a, -128.0);
    let hi = g.scalar_like(&a, 127.0);
    let from_min = g.binary(BinaryOp::Sub, &lo, &a)?;
    let from_max = g.binary(BinaryOp::Sub, &hi, &b)?;
    let (ea, eb) = (g.abs(&a)?, g.abs(&b)?);
    let err_min = g.add_scalar(&ea, 128.0)?;
    let err_max = g.add_scalar(&eb, 127.0)?;
    let pick_min = g.lt(&err_min, &err_max)?;
    let z = g.where_(&pick_min, &from_min, &from_max)?;
    let z = round_half_away(g, &z)?;
    let z = g.clip(&z, Some(-128.0), Some(127.0))?;
    let one = g.scalar_like(&scale, 1.0);
    let inv = g.binary(BinaryOp::Div, &one, &scale)?;
    let v = g.binary(BinaryOp::Mul, x, &inv)?;
    let v = g.binary(BinaryOp::Add, &z, &v)?;
    let v = round_half_away(g, &v)?;
    let v = g.clip(&v, Some(-128.0), Some(127.0))?;
    let q = g.cast(&v, DType::I32);
    let zi = g.cast(&z, DType::I32);
    Ok((g.binary(BinaryOp::Sub, &q, &zi)?, scale))
}

/// The weights' scales, one per output channel (`n`) or one for all; their zero points are 0.
fn weight_scales(ctx: &Ctx, n: usize) -> Result<Vec<f32>, OpError> {
    let t = ctx.info(1)?;
    let q = ctx.quant(t)?;
    let op = ctx.op.name();
    if q.zero_point.iter().any(|&z| z != 0) {
        return Err(OpError::Unsupported(format!(
            "hybrid {op} on int8 weights {:?} with a nonzero zero point",
            t.name
        )));
    }
    if q.scale.len() != 1 && q.scale.len() != n {
        return Err(OpError::Invalid(format!(
            "{op}: weights {:?} have {} scales for {n} output channels",
            t.name,
            q.scale.len()
        )));
    }
    Ok(q.scale.clone())
}

/// The scales as a float32 constant along the last axis of a rank-`rank` value.
fn scale_table(ctx: &mut Ctx, scales: &[f32], rank: usize) -> Result<Lazy, OpError> {
    let name = format!("{}_filter_scale", ctx.out_info(0)?.name);
    let values: Vec<f64> = scales.iter().map(|&s| f64::from(s)).collect();
    let t = Tensor::from_f64(Scalar::F32, vec![scales.len()], &values)
        .map_err(|e| OpError::Invalid(format!("{name}: {e}")))?;
    let mut shape = vec![1; rank];
    shape[rank - 1] = scales.len();
    Ok(ctx.graph.weight(&name, t).reshape(&shape)?)
}

/// `y + bias` (input 2, when given), then the fused activation.
fn finish(ctx: &mut Ctx, y: Lazy, act: Activation) -> Result<Lazy, OpError> {
    let y = if ctx.has(2) {
        let b = ctx.input(2)?;
        ctx.graph.binary(BinaryOp::Add, &y, &b)?
    } else {
        y
    };
    float_activation(ctx.graph, &y, act)
}

/// A hybrid dense layer of the float rows `x2` ([rows, k]) with weights input 1 ([n, k]).
pub(super) fn fully_connected(
    ctx: &mut Ctx,
    x2: &Lazy,
    asym: bool,
    act: Activation,
) -> Result<Lazy, OpError> {
    let w = ctx.input(1)?;
    let n = w.shape()[0];
    let scales = weight_scales(ctx, n)?;
    let (q, s_in) = quantize(ctx.graph, x2, &[1], asym)?;
    let wt = w.permute(&[1, 0])?;
    let acc = ctx.graph.matmul_in(&q, &wt, Some(DType::I32))?;
    let table = scale_table(ctx, &scales, 2)?;
    let g = &mut *ctx.graph;
    let scale = g.binary(BinaryOp::Mul, &s_in, &table)?;
    let f = g.cast(&acc, DType::F32);
    let y = g.binary(BinaryOp::Mul, &f, &scale)?;
    finish(ctx, y, act)
}

/// The geometry of a hybrid convolution.
pub(super) struct HybridConv {
    pub same: bool,
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
    pub act: Activation,
}

/// A hybrid convolution of input 0 (NHWC) with `w` (OHWI, a view of input 1), per-channel.
pub(super) fn conv(ctx: &mut Ctx, spec: &HybridConv, w: &Lazy) -> Result<Lazy, OpError> {
    let x = ctx.input(0)?;
    let xs = x.shape().to_vec();
    let n = w.shape()[0];
    let scales = weight_scales(ctx, n)?;
    if scales.len() == 1 && n > 1 {
        return Err(OpError::Unsupported(format!(
            "hybrid {} on int8 weights with one scale for all output channels",
            ctx.op.name()
        )));
    }
    let (kh, kw) = (w.shape()[1], w.shape()[2]);
    let (pad_h, _) = padding(spec.same, xs[1], kh, spec.stride[0], spec.dilation[0])?;
    let (pad_w, _) = padding(spec.same, xs[2], kw, spec.stride[1], spec.dilation[1])?;
    let (q, s_in) = quantize(ctx.graph, &x, &[1, 2, 3], true)?;
    let g = &mut *ctx.graph;
    let qp = g.pad_value(&q, &[(0, 0), pad_h, pad_w, (0, 0)], 0.0)?;
    let (s, d) = (&spec.stride, &spec.dilation);
    let acc = g.conv_channels_last_in(&to_nchw(&qp)?, w, s, d, spec.groups, Some(DType::I32))?;
    let table = scale_table(ctx, &scales, 4)?;
    let g = &mut *ctx.graph;
    let f = g.cast(&acc, DType::F32);
    let y = if ctx.op.code == Op::DepthwiseConv2d {
        let scale = g.binary(BinaryOp::Mul, &table, &s_in)?;
        g.binary(BinaryOp::Mul, &f, &scale)?
    } else {
        let y = g.binary(BinaryOp::Mul, &f, &table)?;
        g.binary(BinaryOp::Mul, &y, &s_in)?
    };
    finish(ctx, y, spec.act)
}

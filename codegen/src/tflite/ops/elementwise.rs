//! Elementwise ops with numpy broadcasting: `ADD`, `SUB`, `MUL`, `MAXIMUM`, `MINIMUM`, the
//! standalone activations, and the conversions between float and quantized values
//! (`QUANTIZE`, `DEQUANTIZE`).
//!
//! Quantized `ADD` and `SUB` bring both inputs to a common scale with 20 bits of headroom
//! (TFLM's `left_shift`), add or subtract, and requantize; `MUL` requantizes the product of the
//! centred inputs once. The set-up arithmetic follows TFLM's to the type: `ADD` computes its
//! multipliers in double, `SUB` in float.

use super::{activation, float_activation, int_range, is_quantized, same_quant, Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{activation_range, Activation, Multipliers, QuantMultiplier};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use crate::tflite::model::{Quant, TfTensor};
use kiln_tflite_schema::tflite::{ActivationFunctionType, BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Add, add),
    (Op::Sub, sub),
    (Op::Mul, mul),
    (Op::Relu, relu),
    (Op::Relu6, relu6),
    (Op::ReluN1To1, relu_n1_to_1),
    (Op::Logistic, logistic),
    (Op::Tanh, tanh),
    (Op::Dequantize, dequantize),
    (Op::Densify, densify),
    (Op::Quantize, quantize),
    (Op::Maximum, maximum),
    (Op::Minimum, minimum),
];

type Out = Result<Vec<Lazy>, OpError>;

fn add(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::AddOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    add_sub(ctx, BinaryOp::Add, o.fused_activation_function)
}

fn sub(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::SubOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    add_sub(ctx, BinaryOp::Sub, o.fused_activation_function)
}

/// The per-tensor multiplier `m` (below one) as TFLM's set-up gives it.
pub(super) fn tensor_multiplier(m: f64) -> Multipliers {
    Multipliers::Tensor(QuantMultiplier::new(m))
}

fn add_sub(ctx: &mut Ctx, op: BinaryOp, act: ActivationFunctionType) -> Out {
    let act = activation(act)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    if !is_quantized(ctx.info(0)?) {
        let y = ctx.graph.binary(op, &a, &b)?;
        return Ok(vec![float_activation(ctx.graph, &y, act)?]);
    }
    let (q1, q2) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.info(1)?)?);
    let out = ctx.out_info(0)?.clone();
    let qo = ctx.quant(&out)?;
    let left_shift = if out.dtype == crate::dtype::Scalar::I16 {
        15
    } else {
        20
    };
    let (s1, s2, so) = (q1.scale(), q2.scale(), qo.scale());
    let (m1, m2, mo) = if op == BinaryOp::Add {
        let twice_max = 2.0 * f64::from(s1.max(s2));
        (
            f64::from(s1) / twice_max,
            f64::from(s2) / twice_max,
            twice_max / ((1i64 << left_shift) as f64 * f64::from(so)),
        )
    } else {
        let twice_max = 2.0 * s1.max(s2);
        (
            f64::from(s1 / twice_max),
            f64::from(s2 / twice_max),
            f64::from(twice_max / ((1i64 << left_shift) as f32 * so)),
        )
    };
    let g = &mut *ctx.graph;
    let sa = scaled(g, &a, q1.zero_point(), left_shift, m1)?;
    let sb = scaled(g, &b, q2.zero_point(), left_shift, m2)?;
    let sum = g.binary(op, &sa, &sb)?;
    requantize_out(ctx, &sum, mo, Some(act))
}

/// `MBQM((x − zp) · 2^left_shift, m)` as `i32`.
pub(super) fn scaled(
    g: &mut Graph,
    x: &Lazy,
    zp: i32,
    left_shift: u32,
    m: f64,
) -> Result<Lazy, OpError> {
    let c = centred(g, x, zp)?;
    let s = g.int_scalar(BinaryOp::Mul, &c, 1 << left_shift)?;
    Ok(g.requantize(&s, &tensor_multiplier(m))?)
}

/// `x − zp` as `i32`.
pub(super) fn centred(g: &mut Graph, x: &Lazy, zp: i32) -> Result<Lazy, OpError> {
    let xi = g.cast(x, DType::I32);
    Ok(g.int_scalar(BinaryOp::Sub, &xi, i64::from(zp))?)
}

/// `acc` requantized by the real multiplier `m` into output 0's type: its zero point, and the
/// range of the fused activation `act`, or the whole type's.
pub(super) fn requantize_out(ctx: &mut Ctx, acc: &Lazy, m: f64, act: Option<Activation>) -> Out {
    let out = ctx.out_info(0)?.clone();
    let qo = ctx.quant(&out)?;
    let (qmin, qmax) = int_range(out.dtype)?;
    let range = match act {
        Some(act) => activation_range(act, qo.scale(), qo.zero_point(), qmin, qmax),
        None => (qmin, qmax),
    };
    let to = DType::from(out.dtype);
    let y = ctx
        .graph
        .requantize_to(acc, &tensor_multiplier(m), qo.zero_point(), range, to)?;
    Ok(vec![y])
}

fn mul(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::MulOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let act = activation(o.fused_activation_function)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    if !is_quantized(ctx.info(0)?) {
        let y = ctx.graph.binary(BinaryOp::Mul, &a, &b)?;
        return Ok(vec![float_activation(ctx.graph, &y, act)?]);
    }
    let (q1, q2) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.info(1)?)?);
    let qo = ctx.quant(ctx.out_info(0)?)?;
    let m = f64::from(q1.scale()) * f64::from(q2.scale()) / f64::from(qo.scale());
    let g = &mut *ctx.graph;
    let ac = centred(g, &a, q1.zero_point())?;
    let bc = centred(g, &b, q2.zero_point())?;
    let p = g.binary(BinaryOp::Mul, &ac, &bc)?;
    requantize_out(ctx, &p, m, Some(act))
}

/// A standalone activation: a clamp, in the quantized domain when the input is quantized (the
/// output then shares the input's scale, as the converter writes it, or is requantized).
fn clamp_activation(ctx: &mut Ctx, act: Activation) -> Out {
    let x = ctx.input(0)?;
    let t = ctx.info(0)?.clone();
    if !is_quantized(&t) {
        return Ok(vec![float_activation(ctx.graph, &x, act)?]);
    }
    let (qi, qo) = (ctx.quant(&t)?, ctx.quant(ctx.out_info(0)?)?);
    let c = centred(ctx.graph, &x, qi.zero_point())?;
    let m = f64::from(qi.scale()) / f64::from(qo.scale());
    requantize_out(ctx, &c, m, Some(act))
}

fn relu(ctx: &mut Ctx) -> Out {
    clamp_activation(ctx, Activation::Relu)
}

/// Quantized `RELU6` as TFLM computes it: a clamp between the input's zero point and its
/// quantized 6 (`round(6 / scale) + zp`, in float as TFLM's set-up rounds it), in the input's
/// type, the output's own scale ignored (RELU requantizes; RELU6 does not).
fn relu6(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    if !is_quantized(&t) {
        return clamp_activation(ctx, Activation::Relu6);
    }
    let x = ctx.input(0)?;
    let q = ctx.quant(&t)?;
    let (lo, hi) = int_range(t.dtype)?;
    let six = ((6.0f32 / q.scale()).round() as i64 + i64::from(q.zero_point()))
        .clamp(i64::from(lo), i64::from(hi));
    let g = &mut *ctx.graph;
    let xi = g.cast(&x, DType::I32);
    let y = g.clamp_int(&xi, i64::from(q.zero_point()), six)?;
    Ok(vec![g.cast(&y, DType::from(t.dtype))])
}

fn relu_n1_to_1(ctx: &mut Ctx) -> Out {
    clamp_activation(ctx, Activation::ReluN1To1)
}

fn logistic(ctx: &mut Ctx) -> Out {
    let x = ctx.input(0)?;
    if !is_quantized(ctx.info(0)?) {
        return Ok(vec![ctx.graph.sigmoid(&x)?]);
    }
    if ctx.info(0)?.dtype == Scalar::I16 {
        return super::lookup::logistic_int16(ctx);
    }
    let q = ctx.quant(ctx.out_info(0)?)?;
    if q.zero_point() != -128 {
        return Err(OpError::Invalid(format!(
            "an int8 LOGISTIC output has zero point -128, not {}",
            q.zero_point()
        )));
    }
    fixed_point_activation(ctx, Graph::fixed_logistic, 23, -128)
}

fn tanh(ctx: &mut Ctx) -> Out {
    let x = ctx.input(0)?;
    if !is_quantized(ctx.info(0)?) {
        return Ok(vec![ctx.graph.tanh(&x)?]);
    }
    if ctx.info(0)?.dtype == Scalar::I16 {
        return super::lookup::tanh_int16(ctx);
    }
    fixed_point_activation(ctx, Graph::fixed_tanh, 24, 0)
}

/// TFLM's int8 `LOGISTIC` and `TANH`: the centred input scaled to Q4.27 (`s_in · 2^27` as a
/// multiplier), saturated beyond the input radius, gemmlowp's function, and its Q0.31 result
/// shifted right by `out_shift` (halves away from zero) plus `zp_out`.
fn fixed_point_activation(
    ctx: &mut Ctx,
    f: fn(&mut Graph, &Lazy, u32) -> Result<Lazy, crate::graph::GraphError>,
    out_shift: u32,
    zp_out: i64,
) -> Out {
    const INPUT_INTEGER_BITS: u32 = 4;
    let t = ctx.info(0)?.clone();
    if t.dtype != Scalar::I8 || ctx.out_info(0)?.dtype != Scalar::I8 {
        return Err(OpError::Unsupported(format!(
            "quantized {} on {} (int8 is)",
            ctx.op.name(),
            t.dtype
        )));
    }
    let q = ctx.quant(&t)?;
    let real = f64::from(q.scale()) * f64::from(1u32 << (31 - INPUT_INTEGER_BITS));
    let m = QuantMultiplier::new(real);
    if m.shift < 0 {
        return Err(OpError::Unsupported(format!(
            "an input scale of {} (below 2^-28)",
            q.scale()
        )));
    }
    let radius = (((1i64 << INPUT_INTEGER_BITS) - 1) as f64
        * (1u64 << (31 - INPUT_INTEGER_BITS)) as f64
        / (1u64 << m.shift) as f64)
        .floor() as i64;
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    let c = centred(g, &x, q.zero_point())?;
    let scaled = g.requantize(&c, &Multipliers::Tensor(m))?;
    let y = f(g, &scaled, INPUT_INTEGER_BITS)?;
    let y = g.rounding_divide_by_pot(&y, out_shift)?;
    let y = g.int_scalar(BinaryOp::Add, &y, zp_out)?;
    let y = g.clamp_int(&y, -128, 127)?;
    let lo = g.int_const(-radius, DType::I32, c.shape());
    let hi = g.int_const(radius, DType::I32, c.shape());
    let low = g.le(&c, &lo)?;
    let high = g.le(&hi, &c)?;
    let min = g.int_const(-128, DType::I32, c.shape());
    let max = g.int_const(127, DType::I32, c.shape());
    let y = g.where_(&high, &max, &y)?;
    let y = g.where_(&low, &min, &y)?;
    Ok(vec![g.cast(&y, DType::I8)])
}

/// Quantized → float: `scale · (x − zp)`, per tensor or per channel, in float (exact as TFLM's
/// product rounded to float: the integer has at most 17 bits, so the float product is the
/// correctly rounded one too). A constant is dequantized at compile time, and float16 (the
/// converter's float16 quantization) widened to float32 there, exactly: the model keeps
/// float32 weights.
fn dequantize(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    let out = ctx.out_info(0)?.clone();
    if ctx.scope.keep_f16 && t.dtype == Scalar::F16 && t.data.is_some() {
        // The weight stays float16 in flash; the kernel reading it widens each value (exact).
        let w = ctx.input(0)?;
        ctx.graph.keep_weight(&w);
        return Ok(vec![ctx.graph.cast(&w, DType::from(out.dtype))]);
    }
    if let Some(data) = &t.data {
        let values = dequantized(ctx, &t, data)?;
        let w = Tensor::from_f64(out.dtype, data.shape().to_vec(), &values)
            .map_err(|e| OpError::Invalid(format!("tensor {:?}: {e}", out.name)))?;
        return Ok(vec![ctx.graph.weight(&out.name, w)]);
    }
    let x = ctx.input(0)?;
    if t.dtype.is_float() {
        return Ok(vec![ctx.graph.cast(&x, DType::from(out.dtype))]);
    }
    let q = ctx.quant(&t)?;
    let out = DType::from(out.dtype);
    if q.scale.len() > 1 {
        return Ok(vec![per_channel_dequantize(
            ctx.graph, &x, &q, &t.name, out,
        )?]);
    }
    let g = &mut *ctx.graph;
    let c = centred(g, &x, q.zero_point())?;
    let f = g.cast(&c, out);
    Ok(vec![g.mul_scalar(&f, f64::from(q.scale()))?])
}

/// `scale[c] · (x − zp[c])` along the quantized axis, the scales and zero points tables in
/// flash.
fn per_channel_dequantize(
    g: &mut Graph,
    x: &Lazy,
    q: &Quant,
    name: &str,
    out: DType,
) -> Result<Lazy, OpError> {
    let channels = q.scale.len();
    if x.shape().get(q.axis) != Some(&channels) || q.zero_point.len() != channels {
        return Err(OpError::Invalid(format!(
            "tensor {name:?}: {channels} scales and {} zero points for axis {} of {:?}",
            q.zero_point.len(),
            q.axis,
            x.shape()
        )));
    }
    let mut along = vec![1; x.shape().len()];
    along[q.axis] = channels;
    let zp = Tensor::from_i64(Scalar::I32, vec![channels], &q.zero_point)
        .map_err(|e| OpError::Invalid(format!("tensor {name:?}: {e}")))?;
    let zp = g.weight(&format!("{name}/zero_points"), zp);
    let scales: Vec<f64> = q.scale.iter().map(|&s| f64::from(s)).collect();
    let scale = Tensor::from_f64(out.scalar, vec![channels], &scales)
        .map_err(|e| OpError::Invalid(format!("tensor {name:?}: {e}")))?;
    let scale = g.weight(&format!("{name}/scales"), scale);
    let xi = g.cast(x, DType::I32);
    let c = g.binary(BinaryOp::Sub, &xi, &zp.reshape(&along)?.expand(x.shape())?)?;
    let f = g.cast(&c, out);
    Ok(g.binary(
        BinaryOp::Mul,
        &f,
        &scale.reshape(&along)?.expand(x.shape())?,
    )?)
}

/// A constant's values dequantized as TFLM computes them (`float(scale · (q − zp))`, exact in
/// double), along the quantized axis for per-channel scales; a float constant's values as
/// they are.
fn dequantized(ctx: &Ctx, t: &TfTensor, data: &Tensor) -> Result<Vec<f64>, OpError> {
    let values = data.to_f64();
    if t.dtype.is_float() {
        return Ok(values);
    }
    let q = ctx.quant(t)?;
    let channels = q.scale.len();
    let inner: usize = t.shape.iter().skip(q.axis + 1).product();
    if channels > 1 && t.shape.get(q.axis) != Some(&channels) {
        return Err(OpError::Invalid(format!(
            "tensor {:?}: {channels} scales for axis {} of {:?}",
            t.name, q.axis, t.shape
        )));
    }
    Ok(values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = if channels > 1 {
                (i / inner) % channels
            } else {
                0
            };
            let zp = q.zero_point.get(c).copied().unwrap_or(0) as f64;
            f64::from((f64::from(q.scale[c]) * (v - zp)) as f32)
        })
        .collect())
}

/// `DENSIFY`: a sparse constant, densified as the file was read.
fn densify(ctx: &mut Ctx) -> Out {
    ctx.constant(0)?;
    Ok(vec![ctx.input(0)?])
}

/// Float → quantized: `clamp(round_half_away(x / scale) + zp)`; quantized → quantized: a
/// requantization (`MBQM(x − zp_in, s_in / s_out) + zp_out`).
fn quantize(ctx: &mut Ctx) -> Out {
    let x = ctx.input(0)?;
    let t = ctx.info(0)?.clone();
    let out = ctx.out_info(0)?.clone();
    let qo = ctx.quant(&out)?;
    if is_quantized(&t) {
        let qi = ctx.quant(&t)?;
        let c = centred(ctx.graph, &x, qi.zero_point())?;
        let m = f64::from(qi.scale()) / f64::from(qo.scale());
        if out.dtype == Scalar::I32 {
            // TFLM requantizes int8 and int16 into int32 over the whole int32 range.
            let ms = tensor_multiplier(m);
            let full = (i32::MIN, i32::MAX);
            let y = ctx
                .graph
                .requantize_to(&c, &ms, qo.zero_point(), full, DType::I32)?;
            return Ok(vec![y]);
        }
        return requantize_out(ctx, &c, m, None);
    }
    let (qmin, qmax) = int_range(out.dtype)?;
    if qo.scale.len() > 1 {
        return Err(OpError::Unsupported("per-channel QUANTIZE".into()));
    }
    let g = &mut *ctx.graph;
    let scale = g.scalar_like(&x, f64::from(qo.scale()));
    let d = g.binary(BinaryOp::Div, &x, &scale)?;
    let r = round_half_away(g, &d)?;
    let r = g.cast(&r, DType::I32);
    let r = g.int_scalar(BinaryOp::Add, &r, i64::from(qo.zero_point()))?;
    let r = g.clamp_int(&r, i64::from(qmin), i64::from(qmax))?;
    Ok(vec![g.cast(&r, DType::from(out.dtype))])
}

/// `round` (halves away from zero) of a float tensor, exactly: the truncation, plus the sign
/// where the dropped fraction is at least one half.
pub(super) fn round_half_away(g: &mut Graph, x: &Lazy) -> Result<Lazy, OpError> {
    let t = g.trunc(x)?;
    let frac = g.binary(BinaryOp::Sub, x, &t)?;
    let neg = g.unary(UnaryOp::Neg, &frac)?;
    let mag = g.binary(BinaryOp::Max, &frac, &neg)?;
    let half = g.scalar_like(x, 0.5);
    let below = g.binary(BinaryOp::CmpLt, &mag, &half)?;
    let sign = g.sign(x)?;
    let away = g.binary(BinaryOp::Add, &t, &sign)?;
    Ok(g.where_(&below, &t, &away)?)
}

/// `MAXIMUM` and `MINIMUM` with broadcasting: on the raw values where the operands and the
/// output share their quantization (as TFLM computes them).
fn max_min(ctx: &mut Ctx, max: bool) -> Out {
    same_quant(ctx, 0)?;
    same_quant(ctx, 1)?;
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let y = match max {
        true => ctx.graph.binary(BinaryOp::Max, &a, &b)?,
        false => ctx.graph.min(&a, &b)?,
    };
    Ok(vec![y])
}

fn maximum(ctx: &mut Ctx) -> Out {
    max_min(ctx, true)
}

fn minimum(ctx: &mut Ctx) -> Out {
    max_min(ctx, false)
}

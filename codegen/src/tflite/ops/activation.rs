//! Activations with a slope or a shape: `LEAKY_RELU`, `PRELU`, `HARD_SWISH`, `ELU`,
//! `LOG_SOFTMAX` and `L2_NORMALIZATION`.
//!
//! Quantized `LEAKY_RELU` and `PRELU` requantize the centred input by one of two multipliers
//! chosen by its sign (TFLM's set-up: `LEAKY_RELU` computes the ratios in float, `PRELU` in
//! double, and `PRELU` multiplies by the centred slope first). Int8 `HARD_SWISH` is TFLM's
//! 16-bit fixed-point arithmetic: the input on a 2^7 finer scale, a saturated "relu-ish"
//! factor in [0, 1], and a truncating high multiply. Int8 `ELU` reads a 256-entry table
//! computed here as TFLM computes it, in float.

use super::elementwise::{centred, tensor_multiplier};
use super::{int_range, Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{Multipliers, QuantMultiplier};
use crate::graph::tensor::broadcast_to;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::LeakyRelu, leaky_relu),
    (Op::Prelu, prelu),
    (Op::HardSwish, hard_swish),
    (Op::Elu, elu),
    (Op::LogSoftmax, log_softmax),
    (Op::L2Normalization, l2_normalization),
];

type Out = Result<Vec<Lazy>, OpError>;

/// Input 0's and output 0's types, which must be one of `types` (float32 is always taken).
fn check_types(ctx: &Ctx, types: &[Scalar]) -> Result<Scalar, OpError> {
    let (t, o) = (ctx.info(0)?.dtype, ctx.out_info(0)?.dtype);
    if t != o || !(t == Scalar::F32 || types.contains(&t)) {
        return Err(OpError::Unsupported(format!(
            "{} on {t} to {o}",
            ctx.op.name()
        )));
    }
    Ok(t)
}

/// `y + zp` (an `i32` tensor) clamped to the range of `dtype` and cast to it.
pub(super) fn to_quantized(g: &mut Graph, y: &Lazy, zp: i32, dtype: Scalar) -> Out {
    let (lo, hi) = int_range(dtype)?;
    let y = g.int_scalar(BinaryOp::Add, y, i64::from(zp))?;
    let y = g.clamp_int(&y, i64::from(lo), i64::from(hi))?;
    Ok(vec![g.cast(&y, DType::from(dtype))])
}

/// `0 ≤ x` for an `i32` tensor.
fn non_negative(g: &mut Graph, x: &Lazy) -> Result<Lazy, OpError> {
    let zero = g.int_const(0, DType::I32, x.shape());
    Ok(g.le(&zero, x)?)
}

fn leaky_relu(ctx: &mut Ctx) -> Out {
    let alpha = ctx
        .options(|o| match o {
            BuiltinOptions::LeakyReluOptions(o) => Some(o.as_ref()),
            _ => None,
        })
        .alpha;
    let t = check_types(ctx, &[Scalar::I8, Scalar::I16])?;
    let x = ctx.input(0)?;
    if t == Scalar::F32 {
        let g = &mut *ctx.graph;
        let zero = g.scalar_like(&x, 0.0);
        let pos = g.lt(&zero, &x)?;
        let scaled = g.mul_scalar(&x, f64::from(alpha))?;
        return Ok(vec![g.where_(&pos, &x, &scaled)?]);
    }
    let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.out_info(0)?)?);
    let (si, so) = (qi.scale(), qo.scale());
    let m_alpha = QuantMultiplier::new(f64::from(si * alpha / so));
    let m_identity = QuantMultiplier::new(f64::from(si / so));
    let alpha_abs = QuantMultiplier {
        multiplier: m_alpha.multiplier.wrapping_abs(),
        shift: m_alpha.shift,
    };
    let g = &mut *ctx.graph;
    let c = centred(g, &x, qi.zero_point())?;
    let pos = g.requantize(&c, &Multipliers::Tensor(m_identity))?;
    let mut neg = g.requantize(&c, &Multipliers::Tensor(alpha_abs))?;
    if m_alpha.multiplier < 0 {
        neg = g.neg(&neg)?;
    }
    let keep = non_negative(g, &c)?;
    let y = g.where_(&keep, &pos, &neg)?;
    to_quantized(g, &y, qo.zero_point(), t)
}

/// `x ≥ 0 ? x : x · α` with `α` broadcast; quantized, `MBQM(x − zp, s_x / s_o)` or
/// `MBQM((x − zp) · (α − zp_α), s_x · s_α / s_o)` (int16 inputs take an int8 slope).
fn prelu(ctx: &mut Ctx) -> Out {
    let t = check_types(ctx, &[Scalar::I8, Scalar::I16])?;
    let (x, alpha) = (ctx.input(0)?, ctx.input(1)?);
    if t == Scalar::F32 {
        let g = &mut *ctx.graph;
        let zero = g.scalar_like(&x, 0.0);
        let neg = g.lt(&x, &zero)?;
        let scaled = g.binary(BinaryOp::Mul, &x, &alpha)?;
        let xs = broadcast_to(&x, scaled.shape())?;
        return Ok(vec![g.where_(&neg, &scaled, &xs)?]);
    }
    let ta = ctx.info(1)?.clone();
    if ta.dtype != Scalar::I8 {
        return Err(OpError::Unsupported(format!(
            "PRELU on {t} with a {} slope (int8 is)",
            ta.dtype
        )));
    }
    let (qi, qa, qo) = (
        ctx.quant(ctx.info(0)?)?,
        ctx.quant(&ta)?,
        ctx.quant(ctx.out_info(0)?)?,
    );
    if qa.scale.len() > 1 {
        return Err(OpError::Unsupported(
            "PRELU with a per-channel slope".into(),
        ));
    }
    let (si, sa, so) = (
        f64::from(qi.scale()),
        f64::from(qa.scale()),
        f64::from(qo.scale()),
    );
    let g = &mut *ctx.graph;
    let c = centred(g, &x, qi.zero_point())?;
    let ca = centred(g, &alpha, qa.zero_point())?;
    let prod = g.binary(BinaryOp::Mul, &c, &ca)?;
    let pos = g.requantize(&c, &tensor_multiplier(si / so))?;
    let neg = g.requantize(&prod, &tensor_multiplier(si * sa / so))?;
    let keep = non_negative(g, &c)?;
    let y = g.where_(&keep, &pos, &neg)?;
    to_quantized(g, &y, qo.zero_point(), t)
}

/// TFLM's `DownScaleInt32ToInt16Multiplier`: the top 16 bits, rounded.
fn multiplier_16(m: i32) -> i64 {
    if m >= i32::MAX - (1 << 15) {
        i64::from(i16::MAX)
    } else {
        i64::from((m + (1 << 15)) >> 16)
    }
}

/// gemmlowp's 16-bit `SaturatingRoundingDoublingHighMul(a, c)` of an `i32` tensor holding
/// `i16` values by a non-negative constant: `(a·c ± 2^14) / 2^15`, truncating.
fn srdhm16(g: &mut Graph, a: &Lazy, c: i64) -> Result<Lazy, OpError> {
    let p = g.int_scalar(BinaryOp::Mul, a, c)?;
    let zero = g.int_const(0, DType::I32, p.shape());
    let neg = g.lt(&p, &zero)?;
    let up = g.int_const(1 << 14, DType::I32, p.shape());
    let down = g.int_const(1 - (1 << 14), DType::I32, p.shape());
    let nudge = g.where_(&neg, &down, &up)?;
    let s = g.binary(BinaryOp::Add, &p, &nudge)?;
    Ok(g.int_scalar(BinaryOp::Div, &s, 1 << 15)?)
}

/// `x · 2^k` saturated to `i16`, of an `i32` tensor holding `i16` values.
fn saturating_shl16(g: &mut Graph, x: &Lazy, k: i32) -> Result<Lazy, OpError> {
    let w = g.cast(x, DType::I64);
    let w = g.int_scalar(BinaryOp::Mul, &w, 1i64 << k)?;
    let w = g.clamp_int(&w, i64::from(i16::MIN), i64::from(i16::MAX))?;
    Ok(g.cast(&w, DType::I32))
}

fn hard_swish(ctx: &mut Ctx) -> Out {
    let t = check_types(ctx, &[Scalar::I8])?;
    let x = ctx.input(0)?;
    if t == Scalar::F32 {
        let g = &mut *ctx.graph;
        let s = g.add_scalar(&x, 3.0)?;
        let s = g.clip(&s, Some(0.0), Some(6.0))?;
        let p = g.binary(BinaryOp::Mul, &x, &s)?;
        let six = g.scalar_like(&p, 6.0);
        return Ok(vec![g.binary(BinaryOp::Div, &p, &six)?]);
    }
    let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.out_info(0)?)?);
    let hires_scale = (1.0f32 / 128.0) * qi.scale();
    let out_m = QuantMultiplier::new(f64::from(hires_scale / qo.scale()));
    let relu_m = QuantMultiplier::new(f64::from(hires_scale / (3.0f32 / 32768.0)));
    if out_m.shift > 0 {
        return Err(OpError::Unsupported(format!(
            "HARD_SWISH on int8 with an output scale {} below the input's / 128",
            qo.scale()
        )));
    }
    let g = &mut *ctx.graph;
    let hires = centred(g, &x, qi.zero_point())?;
    let hires = g.int_scalar(BinaryOp::Mul, &hires, 1 << 7)?;
    let preshift = srdhm16(g, &hires, multiplier_16(out_m.multiplier))?;
    let mut r = hires.clone();
    if relu_m.shift > 0 {
        r = saturating_shl16(g, &r, relu_m.shift - 1)?;
    }
    r = srdhm16(g, &r, multiplier_16(relu_m.multiplier))?;
    if relu_m.shift > 0 {
        r = saturating_shl16(g, &r, 1)?;
    } else if relu_m.shift < 0 {
        r = g.rounding_divide_by_pot(&r, relu_m.shift.unsigned_abs())?;
    }
    let r = g.int_scalar(BinaryOp::Add, &r, 1 << 15)?;
    let r = g.int_scalar(BinaryOp::Shr, &r, 1)?;
    // SaturatingDoublingHighMul: a truncating `a·b / 2^15` (`r` is never negative).
    let p = g.binary(BinaryOp::Mul, &r, &preshift)?;
    let p = g.int_scalar(BinaryOp::Div, &p, 1 << 15)?;
    let y = g.rounding_divide_by_pot(&p, out_m.shift.unsigned_abs())?;
    to_quantized(g, &y, qo.zero_point(), t)
}

/// `x < 0 ? expm1(x) : x`; int8 through TFLM's table of 256 values.
fn elu(ctx: &mut Ctx) -> Out {
    let t = check_types(ctx, &[Scalar::I8])?;
    let x = ctx.input(0)?;
    if t == Scalar::F32 {
        let g = &mut *ctx.graph;
        let m1 = expm1(g, &x)?;
        let zero = g.scalar_like(&x, 0.0);
        let neg = g.lt(&x, &zero)?;
        return Ok(vec![g.where_(&neg, &m1, &x)?]);
    }
    let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.out_info(0)?)?);
    let table = int8_table(
        qi.scale(),
        qi.zero_point(),
        qo.scale(),
        qo.zero_point(),
        |v| {
            if v < 0.0 {
                v.exp() - 1.0
            } else {
                v
            }
        },
    );
    let name = format!("{}_table", ctx.out_info(0)?.name);
    lookup_int8(ctx.graph, &name, &table, &x)
}

/// `exp(x) − 1`, with its Taylor series near zero where the difference would cancel.
fn expm1(g: &mut Graph, x: &Lazy) -> Result<Lazy, OpError> {
    let e = g.exp(x)?;
    let e = g.add_scalar(&e, -1.0)?;
    // x + x²/2 + x³/6 + x⁴/24, within 1e-10 relative for |x| < 1/64.
    let mut poly = g.mul_scalar(x, 1.0 / 24.0)?;
    for c in [1.0 / 6.0, 0.5, 1.0] {
        poly = g.add_scalar(&poly, c)?;
        poly = g.binary(BinaryOp::Mul, &poly, x)?;
    }
    let a = g.abs(x)?;
    let lim = g.scalar_like(x, 1.0 / 64.0);
    let small = g.lt(&a, &lim)?;
    Ok(g.where_(&small, &poly, &e)?)
}

/// TFLM's int8 lookup table of `f`: each input value dequantized, transformed and requantized
/// in float (rounding halves away from zero), indexed by the value's bits as a `u8`.
fn int8_table(si: f32, zpi: i32, so: f32, zpo: i32, f: impl Fn(f32) -> f32) -> Vec<i64> {
    let inverse = 1.0 / so;
    let mut table = vec![0i64; 256];
    for v in -128i32..=127 {
        let d = si * (v - zpi) as f32;
        let r = (f(d) * inverse).round();
        let q = ((r + zpo as f32) as i32).clamp(-128, 127);
        table[usize::from(v as i8 as u8)] = i64::from(q);
    }
    table
}

/// `table[u8(x)]` for an int8 tensor `x` (a one-hot sum: [`super::lookup::lookup`]).
fn lookup_int8(g: &mut Graph, name: &str, table: &[i64], x: &Lazy) -> Out {
    let t = Tensor::from_i64(Scalar::I8, vec![256], table)
        .map_err(|e| OpError::Invalid(format!("{name}: {e}")))?;
    let idx = g.cast(x, DType::I32);
    let wrap = g.int_scalar(BinaryOp::Add, &idx, 256)?;
    let zero = g.int_const(0, DType::I32, idx.shape());
    let neg = g.lt(&idx, &zero)?;
    let idx = g.where_(&neg, &wrap, &idx)?;
    super::lookup::lookup(g, name, t, &idx)
}

/// `x − max − log Σ exp(x − max)` over the last axis (float).
fn log_softmax(ctx: &mut Ctx) -> Out {
    if check_types(ctx, &[Scalar::I8])? == Scalar::I8 {
        return super::softmax::log_softmax_int8(ctx);
    }
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    if rank == 0 {
        return Err(OpError::Invalid("LOG_SOFTMAX of a scalar".into()));
    }
    let g = &mut *ctx.graph;
    let m = g.reduce(ReduceOp::Max, &x, &[rank - 1])?;
    let d = g.binary(BinaryOp::Sub, &x, &m)?;
    let e = g.exp(&d)?;
    let s = g.reduce(ReduceOp::Sum, &e, &[rank - 1])?;
    let l = g.log(&s)?;
    Ok(vec![g.binary(BinaryOp::Sub, &d, &l)?])
}

/// `x / max(‖x‖, 1e-6)` over the last axis (float; int8 in `normalise`).
fn l2_normalization(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::L2NormOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    if o.fused_activation_function != kiln_tflite_schema::tflite::ActivationFunctionType::None {
        return Err(OpError::Unsupported(format!(
            "L2_NORMALIZATION with fused activation {:?}",
            o.fused_activation_function
        )));
    }
    let t = check_types(ctx, &[Scalar::I8])?;
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    if rank == 0 {
        return Err(OpError::Invalid("L2_NORMALIZATION of a scalar".into()));
    }
    if t == Scalar::I8 {
        return super::normalise::l2_normalization_int8(ctx);
    }
    let g = &mut *ctx.graph;
    let sq = g.binary(BinaryOp::Mul, &x, &x)?;
    let s = g.reduce(ReduceOp::Sum, &sq, &[rank - 1])?;
    let n = g.unary(crate::ops::UnaryOp::Sqrt, &s)?;
    let n = g.max_scalar(&n, 1e-6)?;
    Ok(vec![g.binary(BinaryOp::Div, &x, &n)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int8_tables_round_halves_away_and_index_by_bits() {
        // Identity with the output scale twice the input's: 3 · 0.5 = 1.5 → 2, −1.5 → −2.
        let t = int8_table(0.5, 0, 1.0, 0, |v| v);
        assert_eq!(t[3], 2);
        assert_eq!(t[usize::from(-3i8 as u8)], -2);
        assert_eq!(t[127], 64);
    }

    #[test]
    fn multipliers_down_scale_to_16_bits() {
        assert_eq!(multiplier_16(1 << 30), 1 << 14);
        assert_eq!(multiplier_16(i32::MAX), 32767);
    }
}

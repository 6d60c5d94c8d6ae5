//! Quantized ops whose TFLM kernels normalise each value before a fixed-point step: `RSQRT`
//! (int8, int16), `DIV` and `L2_NORMALIZATION` (int8).
//!
//! `RSQRT` and `L2_NORMALIZATION` take TFLM's `GetInvSqrtQuantizedMultiplierExp` of a
//! non-negative `i32`: the value shifted by pairs of bits into `[2^27, 2^29)`, five
//! Newton-Raphson steps of `x ← 3/2·x − v/2·x³` on Q3.28, times √2/2, and the shift that undoes
//! the normalisation. `DIV` takes the divisor's reciprocal as gemmlowp's `1 / (1 + x)` of its
//! normalised value, the dividend shifted up by its headroom, and one rounding shift by the sum
//! of the three exponents.

use super::activation::to_quantized;
use super::elementwise::centred;
use super::{int_range, Ctx};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{activation_range, Activation, Multipliers, QuantMultiplier};
use crate::graph::tensor::{broadcast_shape, broadcast_to};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tflite::error::OpError;

type Out = Result<Vec<Lazy>, OpError>;
type R = Result<Lazy, OpError>;

/// `c` as an `i32` constant shaped like `x`.
fn k(g: &mut Graph, c: i64, x: &Lazy) -> Lazy {
    g.int_const(c, DType::I32, x.shape())
}

/// The count of leading zeros of a non-negative `i32` tensor (32 for zero).
fn clz(g: &mut Graph, x: &Lazy) -> R {
    let lz = g.leading_zeros(x)?;
    let zero = k(g, 0, x);
    let is_zero = g.eq(x, &zero)?;
    let all = k(g, 32, x);
    Ok(g.where_(&is_zero, &all, &lz)?)
}

/// TFLM's `GetInvSqrtQuantizedMultiplierExp(v, −1)` of a non-negative `i32` tensor: the
/// multiplier and its (left) shift, both `i32`.
fn inv_sqrt(g: &mut Graph, v: &Lazy) -> Result<(Lazy, Lazy), OpError> {
    // Values from 2^29 on are divided by 4 once (then in [2^27, 2^29)); smaller ones shifted
    // left by pairs of bits, `(clz − 1) / 2 − 1` of them.
    let lz = clz(g, v)?;
    let pairs = g.int_scalar(BinaryOp::Sub, &lz, 1)?;
    let pairs = g.int_scalar(BinaryOp::Shr, &pairs, 1)?;
    let pairs = g.int_scalar(BinaryOp::Sub, &pairs, 1)?;
    let big = k(g, 1 << 29, v);
    let large = g.le(&big, v)?;
    let zero = k(g, 0, v);
    let pairs = g.where_(&large, &zero, &pairs)?;
    let twice = g.int_scalar(BinaryOp::Shl, &pairs, 1)?;
    let up = g.binary(BinaryOp::Shl, v, &twice)?;
    let down = g.int_scalar(BinaryOp::Shr, v, 2)?;
    let norm = g.where_(&large, &down, &up)?;
    let eleven = k(g, 11, v);
    let shift = g.binary(BinaryOp::Sub, &eleven, &pairs)?;
    let twelve = k(g, 12, v);
    let shift = g.where_(&large, &twelve, &shift)?;
    let x = newton_inv_sqrt(g, &norm)?;
    // A negative (right) shift is folded into the multiplier.
    let negative = g.lt(&shift, &zero)?;
    let neg_shift = g.neg(&shift)?;
    let lifted = g.binary(BinaryOp::Shl, &x, &neg_shift)?;
    let x = g.where_(&negative, &lifted, &x)?;
    let shift = g.where_(&negative, &zero, &shift)?;
    // Inputs 0 and 1: the largest multiplier, no shift.
    let one = k(g, 1, v);
    let tiny = g.le(v, &one)?;
    let max = k(g, i64::from(i32::MAX), v);
    let x = g.where_(&tiny, &max, &x)?;
    let shift = g.where_(&tiny, &zero, &shift)?;
    Ok((x, g.neg(&shift)?))
}

/// Five Newton-Raphson steps towards `1 / sqrt(v)` for `v` (raw, Q3.28 after halving) in
/// `[2^27, 2^29)`, times √2/2: Q3.28 raw out.
fn newton_inv_sqrt(g: &mut Graph, norm: &Lazy) -> R {
    const HALF_THREE: i64 = (1 << 28) + (1 << 27);
    const HALF_SQRT_2: i64 = 1_518_500_250;
    let input = g.int_scalar(BinaryOp::Shr, norm, 1)?;
    let half_input = g.rounding_divide_by_pot(&input, 1)?;
    let half_three = k(g, HALF_THREE, norm);
    let mut x = k(g, 1 << 28, norm);
    for _ in 0..5 {
        let x2 = g.doubling_high_mul(&x, &x)?;
        let x3 = g.doubling_high_mul(&x2, &x)?;
        let x3 = g.saturating_shift_left(&x3, 6)?;
        let a = g.doubling_high_mul(&half_three, &x)?;
        let b = g.doubling_high_mul(&half_input, &x3)?;
        let d = g.binary(BinaryOp::Sub, &a, &b)?;
        x = g.saturating_shift_left(&d, 3)?;
    }
    let c = k(g, HALF_SQRT_2, norm);
    Ok(g.doubling_high_mul(&x, &c)?)
}

/// TFLM's `MultiplyByQuantizedMultiplier(x, m, s)` with a multiplier and a shift per element
/// (`i32` tensors; the shift at most 30 to the left).
fn requantize_var(g: &mut Graph, x: &Lazy, m: &Lazy, s: &Lazy) -> R {
    let zero = k(g, 0, s);
    let left = g.binary(BinaryOp::Max, s, &zero)?;
    let neg = g.neg(s)?;
    let right = g.binary(BinaryOp::Max, &neg, &zero)?;
    let x = g.binary(BinaryOp::Shl, x, &left)?;
    let h = g.doubling_high_mul(&x, m)?;
    Ok(g.rounding_divide_by_pot_var(&h, &right)?)
}

/// Int8 and int16 `RSQRT`: `v = x − zp` (the type's maximum where it is 0),
/// `MBQM(1, inv_sqrt(v), shift + 20)`, then `MBQM(·, 1 / (√s_in · s_out), −20) + zp_out`.
pub(super) fn rsqrt_quantized(ctx: &mut Ctx) -> Out {
    const SHIFT: i32 = 20;
    let (t, out) = (ctx.info(0)?.dtype, ctx.out_info(0)?.clone());
    if out.dtype != t {
        return Err(OpError::Unsupported(format!(
            "RSQRT from {t} to {}",
            out.dtype
        )));
    }
    let (_, type_max) = int_range(t)?;
    let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(&out)?);
    let m = QuantMultiplier::new(1.0 / f64::from(qi.scale().sqrt() * qo.scale()));
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    let v = centred(g, &x, qi.zero_point())?;
    let (inv, shift) = inv_sqrt(g, &v)?;
    let one = k(g, 1, &v);
    let s = g.int_scalar(BinaryOp::Add, &shift, i64::from(SHIFT))?;
    let data = requantize_var(g, &one, &inv, &s)?;
    let m = Multipliers::Tensor(QuantMultiplier {
        multiplier: m.multiplier,
        shift: m.shift - SHIFT,
    });
    let y = g.requantize(&data, &m)?;
    let y = g.int_scalar(BinaryOp::Add, &y, i64::from(qo.zero_point()))?;
    let zero = k(g, 0, &v);
    let at_zero = g.eq(&v, &zero)?;
    let max = k(g, i64::from(type_max), &v);
    let y = g.where_(&at_zero, &max, &y)?;
    to_quantized(g, &y, 0, t)
}

/// Int8 `L2_NORMALIZATION` over the last axis: `MBQM(x − zp, inv_sqrt(Σ (x − zp)²), shift + 7)`
/// clamped to int8 (the output's scale is 1/128 and its zero point 0).
pub(super) fn l2_normalization_int8(ctx: &mut Ctx) -> Out {
    let out = ctx.out_info(0)?.clone();
    if out.dtype != Scalar::I8 {
        return Err(OpError::Unsupported(format!(
            "L2_NORMALIZATION from int8 to {}",
            out.dtype
        )));
    }
    let qi = ctx.quant(ctx.info(0)?)?;
    let x = ctx.input(0)?;
    let axis = x.shape().len() - 1;
    let g = &mut *ctx.graph;
    let c = centred(g, &x, qi.zero_point())?;
    let sq = g.binary(BinaryOp::Mul, &c, &c)?;
    let acc = g.reduce(ReduceOp::Sum, &sq, &[axis])?;
    let (inv, shift) = inv_sqrt(g, &acc)?;
    let s = g.int_scalar(BinaryOp::Add, &shift, 7)?;
    let inv = inv.expand(c.shape())?;
    let s = s.expand(c.shape())?;
    let y = requantize_var(g, &c, &inv, &s)?;
    to_quantized(g, &y, 0, Scalar::I8)
}

/// gemmlowp's `CountLeadingSignBits` of an `i32` tensor (31 for 0 and −1).
fn leading_sign_bits(g: &mut Graph, x: &Lazy) -> R {
    let sign = g.int_scalar(BinaryOp::Shr, x, 31)?;
    let folded = g.binary(BinaryOp::Xor, x, &sign)?;
    let lz = clz(g, &folded)?;
    Ok(g.int_scalar(BinaryOp::Sub, &lz, 1)?)
}

/// Int8 `DIV`: the signs moved onto the dividend, `1/b` as `GetReciprocal(b, 31)`, the dividend
/// shifted up by its headroom and multiplied by it, and
/// `MBQM(·, s₁ / (s₂ · s_out), shift − recip_shift − headroom) + zp_out`, clamped.
pub(super) fn div_int8(ctx: &mut Ctx, act: Activation) -> Out {
    let (t1, t2, out) = (
        ctx.info(0)?.clone(),
        ctx.info(1)?.clone(),
        ctx.out_info(0)?.clone(),
    );
    if t2.dtype != Scalar::I8 || out.dtype != Scalar::I8 {
        return Err(OpError::Unsupported(format!(
            "DIV on {} and {} to {}",
            t1.dtype, t2.dtype, out.dtype
        )));
    }
    let (q1, q2, qo) = (ctx.quant(&t1)?, ctx.quant(&t2)?, ctx.quant(&out)?);
    let m = QuantMultiplier::new(f64::from(q1.scale() / (q2.scale() * qo.scale())));
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let g = &mut *ctx.graph;
    let a = centred(g, &a, q1.zero_point())?;
    let b = centred(g, &b, q2.zero_point())?;
    let shape = broadcast_shape("DIV", a.shape(), b.shape())?;
    let a = broadcast_to(&a, &shape)?;
    let b = broadcast_to(&b, &shape)?;
    let zero = k(g, 0, &b);
    let flip = g.lt(&b, &zero)?;
    let (na, nb) = (g.neg(&a)?, g.neg(&b)?);
    let a = g.where_(&flip, &na, &a)?;
    let b = g.where_(&flip, &nb, &b)?;
    // GetReciprocal(b, 31): b shifted up to [2^31, 2^32), less one, as Q0.31.
    let hp1 = clz(g, &b)?;
    let b64 = g.cast(&b, DType::I64);
    let hp64 = g.cast(&hp1, DType::I64);
    let shifted = g.binary(BinaryOp::Shl, &b64, &hp64)?;
    let shifted = g.int_scalar(BinaryOp::Sub, &shifted, 1 << 31)?;
    let shifted = g.cast(&shifted, DType::I32);
    let inv = g.one_over_one_plus_x(&shifted)?;
    let thirty_one = k(g, 31, &b);
    let recip_shift = g.binary(BinaryOp::Sub, &thirty_one, &hp1)?;
    let headroom = leading_sign_bits(g, &a)?;
    let a64 = g.cast(&a, DType::I64);
    let h64 = g.cast(&headroom, DType::I64);
    let up = g.binary(BinaryOp::Shl, &a64, &h64)?;
    let up = g.cast(&up, DType::I32);
    let quotient = g.doubling_high_mul(&up, &inv)?;
    let total = g.binary(BinaryOp::Add, &recip_shift, &headroom)?;
    let total = g.int_scalar(BinaryOp::Sub, &total, i64::from(m.shift))?;
    let total = g.binary(BinaryOp::Max, &total, &zero)?;
    let mult = k(g, i64::from(m.multiplier), &b);
    let h = g.doubling_high_mul(&quotient, &mult)?;
    let y = g.rounding_divide_by_pot_var(&h, &total)?;
    let (qmin, qmax) = int_range(Scalar::I8)?;
    let (lo, hi) = activation_range(act, qo.scale(), qo.zero_point(), qmin, qmax);
    let y = g.int_scalar(BinaryOp::Add, &y, i64::from(qo.zero_point()))?;
    let y = g.clamp_int(&y, i64::from(lo), i64::from(hi))?;
    Ok(vec![g.cast(&y, DType::I8)])
}

//! TFLM's signal library for audio front ends: custom ops by name, each the integer arithmetic
//! of TFLM's `signal/src` kernel, so that a keyword spotter's features equal TFLM's bit for bit.
//!
//! - `SignalWindow`: `(x · w) >> shift` in `i32`, saturated to `i16`.
//! - `SignalEnergy`: `re² + im²` of each complex bin in `[start_index, end_index)`, as `u32`
//!   (TFLM leaves the bins outside the range unwritten; here they are 0).
//! - `SignalFftAutoScale`: the frame shifted left by `15 − bits(max |x|)` (at least 0), and that
//!   shift as a scalar `i32`.

use super::{Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::tensor::broadcast_to;
use crate::graph::Lazy;
use crate::ops::{BinaryOp, ReduceOp};
use crate::tflite::error::OpError;

/// The signal ops, by their custom code.
pub(super) const CUSTOM: &[(&str, OpBuilder)] = &[
    ("SignalWindow", window),
    ("SignalEnergy", energy),
    ("SignalFftAutoScale", fft_auto_scale),
];

type Out = Result<Vec<Lazy>, OpError>;

/// Checks that input `i` has type `want`.
pub(super) fn expect_type(ctx: &Ctx, i: usize, want: Scalar) -> Result<(), OpError> {
    let t = ctx.info(i)?;
    if t.dtype == want {
        Ok(())
    } else {
        Err(OpError::Unsupported(format!(
            "{} on {} input {:?} (TFLM takes {want})",
            ctx.op.name(),
            t.dtype,
            t.name
        )))
    }
}

/// An option that must be present, as an integer.
pub(super) fn required_int(ctx: &Ctx, key: &str) -> Result<i64, OpError> {
    ctx.custom_options()?
        .int(key)?
        .ok_or_else(|| OpError::Invalid(format!("custom option {key:?} is missing")))
}

fn window(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::I16)?;
    expect_type(ctx, 1, Scalar::I16)?;
    let shift = required_int(ctx, "shift")?;
    if !(0..32).contains(&shift) {
        return Err(OpError::Invalid(format!(
            "custom option \"shift\" is {shift}, outside 0..=31"
        )));
    }
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let n = *x.shape().last().unwrap_or(&1);
    if w.shape() != [n] {
        return Err(OpError::Invalid(format!(
            "the window {:?} has shape {:?}, the frame's last axis {n}",
            ctx.info(1)?.name,
            w.shape()
        )));
    }
    let g = &mut *ctx.graph;
    let xi = g.cast(&x, DType::I32);
    let wi = g.cast(&broadcast_to(&w, x.shape())?, DType::I32);
    let p = g.binary(BinaryOp::Mul, &xi, &wi)?;
    let p = g.int_scalar(BinaryOp::Shr, &p, shift)?;
    let p = g.clamp_int(&p, i16::MIN.into(), i16::MAX.into())?;
    Ok(vec![g.cast(&p, DType::I16)])
}

fn energy(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::I16)?;
    let o = ctx.custom_options()?;
    let (start, end) = (o.int("start_index")?, o.int("end_index")?);
    let x = ctx.input(0)?;
    let shape = x.shape().to_vec();
    let last = *shape.last().unwrap_or(&0);
    if last % 2 != 0 {
        return Err(OpError::Invalid(format!(
            "the spectrum's last axis holds {last} values, not (real, imaginary) pairs"
        )));
    }
    let bins = last / 2;
    let start = start.unwrap_or(0);
    let end = end.unwrap_or(bins as i64);
    if !(0 <= start && start <= end && end <= bins as i64) {
        return Err(OpError::Invalid(format!(
            "custom options start_index {start} and end_index {end} are not a range of the \
             {bins} bins"
        )));
    }
    let mut pairs = shape[..shape.len() - 1].to_vec();
    pairs.extend([bins, 2]);
    let g = &mut *ctx.graph;
    let x = g.cast(&x.reshape(&pairs)?, DType::I32);
    let sq = g.binary(BinaryOp::Mul, &x, &x)?;
    let e = g.reduce(ReduceOp::Sum, &sq, &[pairs.len() - 1])?;
    let e = g
        .bitcast(&e, DType::U32)
        .reshape(&pairs[..pairs.len() - 1])?;
    let axis = pairs.len() - 2;
    let (start, end) = (start as usize, end as usize);
    if (start, end) == (0, bins) {
        return Ok(vec![e]);
    }
    let mut keep: Vec<(usize, usize)> = e.shape().iter().map(|&d| (0, d)).collect();
    keep[axis] = (start, end);
    let mut pad: Vec<(usize, usize)> = vec![(0, 0); keep.len()];
    pad[axis] = (start, bins - end);
    Ok(vec![e.shrink(&keep)?.pad(&pad)?])
}

fn fft_auto_scale(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::I16)?;
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    let xi = g.cast(&x, DType::I32);
    let a = g.abs(&xi)?;
    let axes: Vec<usize> = (0..a.shape().len()).collect();
    let m = g.reduce(ReduceOp::Max, &a, &axes)?.reshape(&[])?;
    // 15 − bits(m), at least 0: how many of 2^0 … 2^14 exceed the largest magnitude.
    let mut bits = g.int_const(0, DType::I32, &[]);
    for k in 0..15 {
        let p = g.int_const(1 << k, DType::I32, &[]);
        let below = g.binary(BinaryOp::CmpLt, &m, &p)?;
        let one = g.cast(&below, DType::I32);
        bits = g.binary(BinaryOp::Add, &bits, &one)?;
    }
    let one = g.int_const(1, DType::I32, &[]);
    let factor = g.binary(BinaryOp::Shl, &one, &bits)?;
    let y = g.binary(BinaryOp::Mul, &xi, &broadcast_to(&factor, xi.shape())?)?;
    let y = g.cast(&y, DType::I16);
    let want = ctx.out_info(1)?.shape.clone();
    Ok(vec![y, bits.reshape(&want)?])
}

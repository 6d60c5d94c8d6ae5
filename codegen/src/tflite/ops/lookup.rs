//! Lookup tables read at run time, and TFLM's int16 `LOGISTIC` and `TANH`, which interpolate
//! linearly between the entries of one table: `sigmoid(i / 24)` in 0.16 fixed point for
//! `i` in 0‥255, TFLM's own entries (`sigmoid_table.rs`; `tanh(x) = 2·sigmoid(2x) − 1`
//! reads the same table).
//!
//! The int16 input is scaled to the table's step (`x · multiplier`, rounded, shifted: a power
//! of two scale takes `3 << shift`), its magnitude split into an entry and a 9-bit (sigmoid)
//! or 8-bit (tanh) fraction, and the result mirrored for negative inputs, all in the integer
//! arithmetic TFLM's reference kernels use, so the outputs are bit-exact.

use super::sigmoid_table::SIGMOID_Q16;
use super::Ctx;
use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;

type Out = Result<Vec<Lazy>, OpError>;

/// `table[idx]` for an `i32` tensor `idx` of indices in `0..table.len()`, as a one-hot sum
/// over the entries (the graph has no runtime-indexed load: each element costs one compare
/// and add per entry). The result has the table's type.
pub(super) fn lookup(g: &mut Graph, name: &str, table: Tensor, idx: &Lazy) -> Out {
    let n = table.numel();
    let dtype = table.dtype();
    let w = g.weight(name, table);
    let shape = idx.shape().to_vec();
    let mut wide = shape.clone();
    wide.push(n);
    let mut col = shape.clone();
    col.push(1);
    let mut row = vec![1; shape.len()];
    row.push(n);
    let idx = idx.reshape(&col)?.expand(&wide)?;
    let ar = g.arange(n, DType::I32).reshape(&row)?.expand(&wide)?;
    let hit = g.eq(&idx, &ar)?;
    let wv = w.reshape(&row)?.expand(&wide)?;
    let zero = g.int_const(0, DType::from(dtype), &wide);
    let picked = g.where_(&hit, &wv, &zero)?;
    let s = g.reduce(ReduceOp::Sum, &picked, &[shape.len()])?;
    Ok(vec![s.reshape(&shape)?])
}

/// TFLM's sigmoid table packed with the step to the next entry: `entry | (next − entry) << 16`
/// (the last step 0).
fn sigmoid_steps() -> Vec<i64> {
    let entry = |i: usize| i64::from(SIGMOID_Q16[i.min(255)]);
    (0..256)
        .map(|i| entry(i) | ((entry(i + 1) - entry(i)) << 16))
        .collect()
}

/// `log2(x)` rounded, and whether `x` is a power of two (TFLM's `CheckedLog2`, in float).
fn checked_log2(x: f32) -> (i32, bool) {
    let l = x.ln() * (1.0f32 / 2f32.ln());
    let r = l.round();
    (r as i32, (l - r).abs() < 1e-3)
}

/// The input's multiplier and shift to the table's step (TFLM's int16 set-up): a power of two
/// scale whose shift `pot_shift` allows gives `3 << shift`, any other `scale · 3 · 4096`
/// doubled until it passes 16383.5.
fn input_scaling(scale: f32, pot_shifts: &[i32]) -> (i64, i64) {
    let (log2, pot) = checked_log2(scale);
    let shift = 12 + log2;
    if pot && pot_shifts.contains(&shift) {
        return (3i64 << shift, 0);
    }
    let mut m = f64::from(scale) * 4096.0 * 3.0;
    let mut shift = 0;
    while m <= 32767.0 / 2.0 && shift <= 30 {
        shift += 1;
        m *= 2.0;
    }
    (m as i64, shift)
}

/// Checks TFLM's int16 requirements: zero points 0, an output scale of 2⁻¹⁵.
fn check_int16(ctx: &Ctx) -> Result<f32, OpError> {
    let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.out_info(0)?)?);
    if qi.zero_point() != 0 || qo.zero_point() != 0 {
        return Err(OpError::Invalid(format!(
            "int16 {} needs zero points 0, not {} and {}",
            ctx.op.name(),
            qi.zero_point(),
            qo.zero_point()
        )));
    }
    let (log2, pot) = checked_log2(qo.scale());
    if !pot || log2 != -15 {
        return Err(OpError::Unsupported(format!(
            "int16 {} with an output scale of {} (TFLM takes 2^-15)",
            ctx.op.name(),
            qo.scale()
        )));
    }
    Ok(qi.scale())
}

/// The scaled input `(x · m + round) >> shift`, its magnitude, and the table's entry and step
/// at `magnitude >> frac_bits`, with the fraction below it (the entry held past the table).
struct Interpolated {
    input: Lazy,
    fraction: Lazy,
    entry: Lazy,
    step: Lazy,
    saturated: Lazy,
}

fn interpolate(ctx: &mut Ctx, pot_shifts: &[i32], frac_bits: u32) -> Result<Interpolated, OpError> {
    let scale = check_int16(ctx)?;
    let (m, shift) = input_scaling(scale, pot_shifts);
    let name = format!("{}_sigmoid_table", ctx.out_info(0)?.name);
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    let xi = g.cast(&x, DType::I32);
    let mut v = g.int_scalar(BinaryOp::Mul, &xi, m)?;
    if shift > 0 {
        v = g.int_scalar(BinaryOp::Add, &v, 1 << (shift - 1))?;
        v = g.int_scalar(BinaryOp::Shr, &v, shift)?;
    }
    let a = g.abs(&v)?;
    let hi = g.int_scalar(BinaryOp::Shr, &a, i64::from(frac_bits))?;
    let last = g.int_const(255, DType::I32, hi.shape());
    let saturated = g.le(&last, &hi)?;
    let idx = g.min(&hi, &last)?;
    let table = Tensor::from_i64(Scalar::I32, vec![256], &sigmoid_steps())
        .map_err(|e| OpError::Invalid(format!("{name}: {e}")))?;
    let packed = lookup(g, &name, table, &idx)?.remove(0);
    let entry = g.int_scalar(BinaryOp::And, &packed, 0xffff)?;
    let step = g.int_scalar(BinaryOp::Shr, &packed, 16)?;
    let fraction = g.int_scalar(BinaryOp::And, &a, (1 << frac_bits) - 1)?;
    Ok(Interpolated {
        input: v,
        fraction,
        entry,
        step,
        saturated,
    })
}

/// `(entry << frac_bits) + fraction · step`, or `saturated_value` past the table.
fn between(g: &mut Graph, t: &Interpolated, frac_bits: u32, saturated_value: i64) -> Out {
    let e = g.int_scalar(BinaryOp::Shl, &t.entry, i64::from(frac_bits))?;
    let d = g.binary(BinaryOp::Mul, &t.fraction, &t.step)?;
    let r = g.binary(BinaryOp::Add, &e, &d)?;
    let top = g.int_const(saturated_value, DType::I32, r.shape());
    Ok(vec![g.where_(&t.saturated, &top, &r)?])
}

/// int16 `LOGISTIC`.
pub(super) fn logistic_int16(ctx: &mut Ctx) -> Out {
    let t = interpolate(ctx, &[0], 9)?;
    let g = &mut *ctx.graph;
    let r = between(g, &t, 9, 0x7fff << 10)?.remove(0);
    let pos = g.int_scalar(BinaryOp::Add, &r, 1 << 9)?;
    let neg = g.int_scalar(BinaryOp::Mul, &r, -1)?;
    let neg = g.int_scalar(BinaryOp::Add, &neg, (1 << 25) + (1 << 9) - 1)?;
    let zero = g.int_const(0, DType::I32, r.shape());
    let non_negative = g.le(&zero, &t.input)?;
    let y = g.where_(&non_negative, &pos, &neg)?;
    let y = g.int_scalar(BinaryOp::Shr, &y, 10)?;
    Ok(vec![g.cast(&y, DType::I16)])
}

/// int16 `TANH`.
pub(super) fn tanh_int16(ctx: &mut Ctx) -> Out {
    let t = interpolate(ctx, &[0, 1], 8)?;
    let g = &mut *ctx.graph;
    let r = between(g, &t, 8, 0xffff << 8)?.remove(0);
    let pos = g.int_scalar(BinaryOp::Add, &r, -(1 << 23) + (1 << 7))?;
    let neg = g.int_scalar(BinaryOp::Mul, &r, -1)?;
    let neg = g.int_scalar(BinaryOp::Add, &neg, (1 << 23) + (1 << 7) - 1)?;
    let zero = g.int_const(0, DType::I32, r.shape());
    let non_negative = g.le(&zero, &t.input)?;
    let y = g.where_(&non_negative, &pos, &neg)?;
    let y = g.int_scalar(BinaryOp::Shr, &y, 8)?;
    Ok(vec![g.cast(&y, DType::I16)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sigmoid_in_16_fractional_bits() {
        let t = sigmoid_steps();
        let entry = |i: usize| t[i] & 0xffff;
        for i in 0..256 {
            let exact = 65536.0 / (1.0 + (-(i as f64) / 24.0).exp());
            assert!((entry(i) as f64 - exact).abs() <= 2.0, "entry {i}");
        }
        for (i, packed) in t.iter().enumerate().take(255) {
            assert_eq!(entry(i) + (packed >> 16), entry(i + 1), "step {i}");
        }
        assert_eq!(t[255] >> 16, 0);
    }

    #[test]
    fn scales_split_into_a_multiplier_and_shift() {
        assert_eq!(input_scaling(1.0 / 4096.0, &[0]), (3, 0));
        assert_eq!(input_scaling(1.0 / 2048.0, &[0, 1]), (6, 0));
        // 2^-11 is no power of two the logistic's table takes as it is.
        let (m, shift) = input_scaling(1.0 / 2048.0, &[0]);
        assert_eq!((m, shift), (24576, 12));
        let (m, shift) = input_scaling(0.001, &[0]);
        assert!(m > 16383 && m <= 32767, "{m} {shift}");
    }
}

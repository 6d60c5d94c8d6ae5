//! int16 → int16 `SOFTMAX` as TFLM computes it: two 513-entry tables built at compile time
//! the way TFLM's set-up builds them (`exp` on [−10, 0] and `1 / (1 + x)` on [0, 1], each
//! sampled at 512 steps in float, every entry nudged by half the interpolation error at its
//! step's midpoint), read with 7-bit linear interpolation. Each row: the differences from its
//! maximum rescaled onto the exp table, their sum normalised by its leading zeros onto the
//! reciprocal table, and each exp scaled by the reciprocal in 64 bits, rounded.

use super::lookup::lookup;
use super::Ctx;
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{Multipliers, QuantMultiplier};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;

type Out = Result<Vec<Lazy>, OpError>;

/// TFLM's int16 table of `f`, from inputs quantized with `(input_scale, input_zp)` to outputs
/// quantized with `(output_scale, 0)`, in float arithmetic as its set-up computes it.
fn int16_table(input_scale: f32, input_zp: i32, output_scale: f32, f: fn(f32) -> f32) -> Vec<i64> {
    let input_min = input_scale * (-32768 - input_zp) as f32;
    let input_max = input_scale * (32767 - input_zp) as f32;
    let (output_min, output_max) = (output_scale * -32768.0, output_scale * 32767.0);
    let step = (input_max - input_min) / 512.0;
    let half = step / 2.0;
    let inv = 65536.0 / (output_max - output_min);
    let clamp = |v: f32| v.clamp(-32768.0, 32767.0) as i64;
    let mut table: Vec<i64> = (0..512)
        .map(|i| {
            let at = input_min + i as f32 * step;
            let val = f(at);
            let mid = f(at + half);
            let next = f(input_min + (i + 1) as f32 * step);
            let sample = (val * inv).round();
            let interpolated = ((next * inv + (val * inv).round()) / 2.0).round();
            let bias = ((interpolated - (mid * inv).round()) / 2.0).round();
            clamp(sample - bias)
        })
        .collect();
    table.push(clamp((f(input_max) * inv).round()));
    table
}

/// TFLM's interpolated lookup of int16 values `x` (`i32`) in a 513-entry table: the entry at
/// `256 + (x >> 7)` plus the step to the next one times the low 7 bits, rounded.
fn interpolated_lookup(g: &mut Graph, name: &str, table: &[i64], x: &Lazy) -> Out {
    if table.iter().any(|v| !(0..=32767).contains(v)) {
        return Err(OpError::Invalid(format!(
            "{name}: a table entry outside 0‥32767"
        )));
    }
    let packed: Vec<i64> = (0..512)
        .map(|i| table[i] + ((table[i + 1] - table[i]) << 16))
        .collect();
    let t = Tensor::from_i64(Scalar::I32, vec![512], &packed)
        .map_err(|e| OpError::Invalid(format!("{name}: {e}")))?;
    let hi = g.int_scalar(BinaryOp::Shr, x, 7)?;
    let idx = g.int_scalar(BinaryOp::Add, &hi, 256)?;
    let p = lookup(g, name, t, &idx)?.remove(0);
    let base = g.int_scalar(BinaryOp::And, &p, 0xffff)?;
    let slope = g.int_scalar(BinaryOp::Shr, &p, 16)?;
    let offset = g.int_scalar(BinaryOp::And, x, 0x7f)?;
    let d = g.binary(BinaryOp::Mul, &slope, &offset)?;
    let d = g.int_scalar(BinaryOp::Add, &d, 64)?;
    let d = g.int_scalar(BinaryOp::Shr, &d, 7)?;
    Ok(vec![g.binary(BinaryOp::Add, &base, &d)?])
}

/// `SOFTMAX` from int16 to int16 (zero points 0, an output scale of 1/32768).
pub(super) fn softmax_int16(ctx: &mut Ctx, beta: f32) -> Out {
    let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.out_info(0)?)?);
    if qi.zero_point() != 0 || qo.zero_point() != 0 {
        return Err(OpError::Invalid(format!(
            "an int16 SOFTMAX has zero points 0, not {} and {}",
            qi.zero_point(),
            qo.zero_point()
        )));
    }
    if (qo.scale() - 1.0 / 32768.0).abs() > 0.001 / 32768.0 {
        return Err(OpError::Invalid(format!(
            "an int16 SOFTMAX output has scale 1/32768, not {}",
            qo.scale()
        )));
    }
    let range = 65535.0f32;
    let exp_table = int16_table(10.0 / range, 32767, 2.0 / range, f32::exp);
    let recip_table = int16_table(1.0 / range, -32768, 2.0 / range, |v| 1.0 / (1.0 + v));
    let rescale = f64::from(qi.scale()) * f64::from(beta) / (10.0 / 65535.0);
    let m = Multipliers::Tensor(QuantMultiplier::new(rescale));
    let name = ctx.out_info(0)?.name.clone();
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    let ax = x.shape().len() - 1;
    let xi = g.cast(&x, DType::I32);
    let max = g.reduce(ReduceOp::Max, &xi, &[ax])?;
    let diff = g.binary(BinaryOp::Sub, &xi, &max)?;
    let scaled = g.requantize(&diff, &m)?;
    let sym = g.int_scalar(BinaryOp::Add, &scaled, 32767)?;
    let sym = g.clamp_int(&sym, -32768, 32767)?;
    let exps = interpolated_lookup(g, &format!("{name}_exp_table"), &exp_table, &sym)?.remove(0);
    let sum = g.reduce(ReduceOp::Sum, &exps, &[ax])?;
    let recip = reciprocal(g, &format!("{name}_recip_table"), &recip_table, &sum)?;
    let (recip, right_shift) = (recip.0.expand(x.shape())?, recip.1.expand(x.shape())?);
    let e64 = g.cast(&exps, DType::I64);
    let r64 = g.cast(&recip, DType::I64);
    let p = g.binary(BinaryOp::Mul, &e64, &r64)?;
    let one = g.int_const(1, DType::I64, x.shape());
    let rs1 = g.int_scalar(BinaryOp::Sub, &right_shift, 1)?;
    let round = g.binary(BinaryOp::Shl, &one, &rs1)?;
    let p = g.binary(BinaryOp::Add, &p, &round)?;
    let y = g.binary(BinaryOp::Shr, &p, &right_shift)?;
    let y = g.clamp_int(&y, 0, 32767)?;
    Ok(vec![g.cast(&y, DType::I16)])
}

/// `1 / sum` of each row's positive `i32` sum, as TFLM's int16 softmax takes it: the sum
/// normalised by its leading zeros onto the reciprocal table; with the right shift (`i64`)
/// that undoes the normalisation.
fn reciprocal(
    g: &mut Graph,
    name: &str,
    table: &[i64],
    sum: &Lazy,
) -> Result<(Lazy, Lazy), OpError> {
    let lz = g.leading_zeros(sum)?;
    let lz64 = g.cast(&lz, DType::I64);
    let sum64 = g.cast(sum, DType::I64);
    let up = g.int_scalar(BinaryOp::Sub, &lz64, 1)?;
    let shifted = g.binary(BinaryOp::Shl, &sum64, &up)?;
    let shifted = g.int_scalar(BinaryOp::Add, &shifted, 1 << 13)?;
    let shifted = g.int_scalar(BinaryOp::Shr, &shifted, 14)?;
    let sym = g.int_scalar(BinaryOp::Sub, &shifted, (1 << 15) + (1 << 16))?;
    let sym = g.clamp_int(&sym, -32768, 32767)?;
    let sym = g.cast(&sym, DType::I32);
    let recip = interpolated_lookup(g, name, table, &sym)?.remove(0);
    let right_shift = g.int_scalar(BinaryOp::Mul, &lz64, -1)?;
    let right_shift = g.int_scalar(BinaryOp::Add, &right_shift, 31)?;
    Ok((recip, right_shift))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exp_table_spans_exp_on_minus_ten_to_zero() {
        let range = 65535.0f32;
        let t = int16_table(10.0 / range, 32767, 2.0 / range, f32::exp);
        assert_eq!(t.len(), 513);
        // exp(0) = 1 is 32767.5 at the output scale 2/65535: the last entry saturates.
        assert_eq!(t[512], 32767);
        // exp(−10) · 32767.5 ≈ 1.5.
        assert!((1..=2).contains(&t[0]), "{}", t[0]);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        let r = int16_table(1.0 / range, -32768, 2.0 / range, |v| 1.0 / (1.0 + v));
        assert_eq!(r[0], 32767);
        assert!((16383..=16385).contains(&r[512]), "{}", r[512]);
    }
}

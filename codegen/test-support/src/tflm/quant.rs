//! QUANTIZE / DEQUANTIZE, MEAN and SUM.

use super::*;

// ---------------------------------------------------------------------------------------------
// QUANTIZE / DEQUANTIZE
// ---------------------------------------------------------------------------------------------

/// Float → int8 QUANTIZE (`reference_ops::AffineQuantize`): `round_half_away(x / scale)` in
/// float, converted to int32, `+ zp`, clamped. The float → int32 conversion follows x86-64
/// (`cvttss2si`), where TFLM's host build runs: NaN and values outside the int32 range become
/// `INT32_MIN` (so +inf quantizes to -128 unless the zero point wraps it).
pub fn quantize(values: &[f32], output: Quant) -> Vec<i8> {
    // TFLM stores the scale as double and divides by it cast back to float (exact).
    let scale = output.scale as f64 as f32;
    values
        .iter()
        .map(|&v| {
            let rounded = (v / scale).round();
            let as_int = if rounded.is_nan() || !(-2147483648.0..2147483648.0).contains(&rounded) {
                i32::MIN
            } else {
                rounded as i32
            };
            clamp_to(as_int.wrapping_add(output.zero_point), -128, 127) as i8
        })
        .collect()
}

/// Int8 → float DEQUANTIZE: `(float)((double)scale * (q − zp))`.
pub fn dequantize(values: &[i8], input: Quant) -> Vec<f32> {
    values
        .iter()
        .map(|&q| (input.scale as f64 * (q as i32 - input.zero_point) as f64) as f32)
        .collect()
}

/// Int8 → int8 QUANTIZE between scales (`reference_ops::Requantize`):
/// `MBQM(x − zp_in, quantize_multiplier(s_in / s_out)) + zp_out`, clamped.
pub fn requantize(values: &[i8], input: Quant, output: Quant) -> Vec<i8> {
    let (multiplier, shift) = quantize_multiplier(input.scale as f64 / output.scale as f64);
    values
        .iter()
        .map(|&q| {
            let scaled =
                multiply_by_quantized_multiplier(q as i32 - input.zero_point, multiplier, shift);
            clamp_to(scaled.wrapping_add(output.zero_point), -128, 127) as i8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// MEAN and SUM (reference/reduce.h `QuantizedMeanOrSum`, micro/kernels/reduce_common.cc)
// ---------------------------------------------------------------------------------------------

/// int8 `MEAN` (or `SUM` with `compute_sum`) of `x`, `[outer, n, inner]` flat, over its middle
/// axis: `[outer, inner]`.
pub fn mean_or_sum(
    x: &[i8],
    (outer, n, inner): (usize, usize, usize),
    qin: Quant,
    qout: Quant,
    compute_sum: bool,
) -> Vec<i8> {
    let (mut multiplier, mut shift) = quantize_multiplier(qin.scale as f64 / qout.scale as f64);
    let count = n as i64;
    if !compute_sum {
        let mut s = 63 - (count as u64).leading_zeros() as i32;
        s = s.min(32);
        s = s.min(31 + shift);
        multiplier = ((multiplier as i64) << s).wrapping_div(count) as i32;
        shift -= s;
    }
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut sum: i32 = 0;
            for k in 0..n {
                sum = sum.wrapping_add(x[(o * n + k) * inner + i] as i32);
            }
            let shifted = sum.wrapping_sub(qin.zero_point.wrapping_mul(count as i32));
            let v = multiply_by_quantized_multiplier(shifted, multiplier, shift)
                .wrapping_add(qout.zero_point);
            out.push(v.clamp(-128, 127) as i8);
        }
    }
    out
}

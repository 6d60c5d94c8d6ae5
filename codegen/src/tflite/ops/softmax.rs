//! `SOFTMAX` over the last axis. Quantized int8 → int8 or int16, it is TFLM's fixed-point
//! algorithm (gemmlowp's `exp` and reciprocal, no lookup table); int16 → int16, TFLM's lookup
//! tables (`softmax16.rs`); float, `exp(β · (x − max))` normalised. Int8 `LOG_SOFTMAX` too
//! (its float form is with the activations): TFLM's fixed-point `exp` sum and `log`.

use super::{is_quantized, Ctx, OpBuilder};
use crate::dtype::Scalar;
use crate::graph::quant::QuantMultiplier;
use crate::graph::Lazy;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[(Op::Softmax, softmax)];

/// The integer bits of the scaled input differences (TFLM's `kScaledDiffIntegerBits`).
const DIFF_INTEGER_BITS: i32 = 5;

/// TFLM's `PreprocessSoftmaxScaling(β, s_in, 5)` and `CalculateInputRadius`: the input
/// multiplier, its left shift, and the smallest difference from the row's maximum that counts.
pub fn softmax_params(beta: f32, input_scale: f32) -> (QuantMultiplier, i32) {
    let cap = ((1u64 << 31) - 1) as f64;
    let real =
        (f64::from(beta) * f64::from(input_scale) * (1u64 << (31 - DIFF_INTEGER_BITS)) as f64)
            .min(cap);
    let m = QuantMultiplier::new(real);
    // 2^shift as a float: exact, and no overflow where a corrupted scale makes it huge.
    let radius = ((1i64 << DIFF_INTEGER_BITS) - 1) as f64
        * (1u64 << (31 - DIFF_INTEGER_BITS)) as f64
        / 2f64.powi(m.shift);
    (m, -(radius.floor() as i32))
}

fn softmax(ctx: &mut Ctx) -> Result<Vec<Lazy>, OpError> {
    let o = ctx.options(|o| match o {
        BuiltinOptions::SoftmaxOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    if rank == 0 {
        return Err(OpError::Invalid("a scalar input".into()));
    }
    let t = ctx.info(0)?.clone();
    if !is_quantized(&t) {
        let g = &mut *ctx.graph;
        let s = g.mul_scalar(&x, f64::from(o.beta))?;
        return Ok(vec![g.softmax(&s, rank - 1)?]);
    }
    let out = ctx.out_info(0)?.clone();
    let qo = ctx.quant(&out)?;
    let want = match (t.dtype, out.dtype) {
        (Scalar::I8, Scalar::I8) => (-128, 1.0 / 256.0),
        (Scalar::I8, Scalar::I16) => (-32768, 1.0 / 65536.0),
        (Scalar::I16, Scalar::I16) => return super::softmax16::softmax_int16(ctx, o.beta),
        _ => {
            return Err(OpError::Unsupported(format!(
                "quantized SOFTMAX from {} to {}",
                t.dtype, out.dtype
            )))
        }
    };
    if (qo.zero_point(), qo.scale()) != want {
        return Err(OpError::Invalid(format!(
            "a {} SOFTMAX output has zero point {} and scale {}, not {} and {}",
            out.dtype,
            want.0,
            want.1,
            qo.zero_point(),
            qo.scale()
        )));
    }
    let qi = ctx.quant(&t)?;
    let (m, diff_min) = softmax_params(o.beta, qi.scale());
    if !(0..=31).contains(&m.shift) {
        return Err(OpError::Unsupported(format!(
            "SOFTMAX on input {:?} of scale {} with beta {}: an input multiplier of 2^{} (TFLM's \
             arithmetic takes left shifts in [0, 31])",
            t.name,
            qi.scale(),
            o.beta,
            m.shift
        )));
    }
    let params = (m.multiplier, m.shift, diff_min);
    Ok(vec![ctx.graph.softmax_int8(
        &x,
        params,
        out.dtype.into(),
    )?])
}

/// Int8 `LOG_SOFTMAX` over the last axis: TFLM's fixed-point algorithm (the row's sum of
/// `exp` in Q12, its fixed-point `log`, the differences from the maximum less that `log`), the
/// output at TFLM's fixed scale 16/256 and zero point 127.
pub(super) fn log_softmax_int8(ctx: &mut Ctx) -> Result<Vec<Lazy>, OpError> {
    let x = ctx.input(0)?;
    if x.shape().is_empty() {
        return Err(OpError::Invalid("LOG_SOFTMAX of a scalar".into()));
    }
    let t = ctx.info(0)?.clone();
    let out = ctx.out_info(0)?.clone();
    let qo = ctx.quant(&out)?;
    if qo.zero_point() != 127 || qo.scale() != 16.0 / 256.0 {
        return Err(OpError::Invalid(format!(
            "an int8 LOG_SOFTMAX output {:?} has zero point 127 and scale 16/256, not {} and {}",
            out.name,
            qo.zero_point(),
            qo.scale()
        )));
    }
    let s_in = ctx.quant(&t)?.scale();
    let (m, diff_min) = softmax_params(1.0, s_in);
    if !(1..=30).contains(&m.shift) {
        return Err(OpError::Unsupported(format!(
            "LOG_SOFTMAX on int8 input {:?} of scale {s_in}: an input multiplier of 2^{} \
             (TFLM's arithmetic takes left shifts in [1, 30])",
            t.name, m.shift
        )));
    }
    // `PreprocessLogSoftmaxScalingExp`: the inverse of the input scaling, below one.
    let real = (1u64 << (31 - m.shift)) as f64 / f64::from(m.multiplier);
    let reverse = QuantMultiplier::new(real);
    if reverse.shift > 0 {
        return Err(OpError::Unsupported(format!(
            "LOG_SOFTMAX on int8 input {:?} of scale {s_in}: a reverse scaling of {real} \
             (TFLM takes it below one)",
            t.name
        )));
    }
    Ok(vec![ctx
        .graph
        .log_softmax_int8(&x, m, diff_min, reverse)?])
}

//! TFLM's `SignalFilterBankSpectralSubtraction`: each channel's noise estimate, smoothed over
//! the invocations, subtracted from the channel, with TFLM's integer arithmetic bit for bit
//! (`signal/src/filter_bank_spectral_subtraction.cc`).
//!
//! The noise estimate is the op's state: zeros when the model is loaded and after a reset (as
//! TFLM's `Prepare` and `Reset` leave it), updated by every invocation. Channel `c` uses the
//! `smoothing` coefficients on even channels and the `alternate_` ones on odd channels:
//!
//! - `s = x << smoothing_bits` (in `u32`),
//! - `n' = (s · smoothing + n · one_minus_smoothing) >> spectral_subtraction_bits` (in `u64`,
//!   kept as `u32`),
//! - `e = min(n', s)`; with `clamping` the estimate itself becomes `e`,
//! - the output `max((s − e) >> smoothing_bits, (x · min_signal_remaining) >>
//!   spectral_subtraction_bits)`, and the second output the new estimate.

use super::signal::{expect_type, required_int};
use super::{Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, Lazy};
use crate::ops::BinaryOp;
use crate::tensor::Tensor;
use crate::tflite::error::OpError;

pub(super) const CUSTOM: &[(&str, OpBuilder)] =
    &[("SignalFilterBankSpectralSubtraction", spectral_subtraction)];

type Out = Result<Vec<Lazy>, OpError>;

/// The op's options: TFLM reads each as an `int32` and keeps the coefficients as `uint32`.
struct Config {
    channels: usize,
    /// (even channels, odd channels)
    smoothing: (u32, u32),
    one_minus_smoothing: (u32, u32),
    min_signal_remaining: u32,
    smoothing_bits: i64,
    spectral_subtraction_bits: i64,
    clamping: bool,
}

impl Config {
    fn read(ctx: &Ctx) -> Result<Config, OpError> {
        let coefficient = |key: &str| required_int(ctx, key).map(|v| v as i32 as u32);
        let bits = |key: &str, limit: i64| {
            let v = required_int(ctx, key)?;
            if (0..limit).contains(&v) {
                Ok(v)
            } else {
                Err(OpError::Invalid(format!(
                    "custom option {key:?} is {v}, outside 0..={}",
                    limit - 1
                )))
            }
        };
        let channels = required_int(ctx, "num_channels")?;
        Ok(Config {
            channels: usize::try_from(channels).map_err(|_| {
                OpError::Invalid(format!("custom option \"num_channels\" is {channels}"))
            })?,
            smoothing: (
                coefficient("smoothing")?,
                coefficient("alternate_smoothing")?,
            ),
            one_minus_smoothing: (
                coefficient("one_minus_smoothing")?,
                coefficient("alternate_one_minus_smoothing")?,
            ),
            min_signal_remaining: coefficient("min_signal_remaining")?,
            smoothing_bits: bits("smoothing_bits", 32)?,
            spectral_subtraction_bits: bits("spectral_subtraction_bits", 64)?,
            clamping: ctx.custom_options()?.bool("clamping")?.unwrap_or(false),
        })
    }

    /// One coefficient per channel, `even` on even channels and `odd` on odd ones, as `u64`.
    fn per_channel(&self, g: &mut Graph, name: &str, (even, odd): (u32, u32)) -> Lazy {
        let values: Vec<i64> = (0..self.channels)
            .map(|c| i64::from(if c % 2 == 0 { even } else { odd }))
            .collect();
        let t = Tensor::from_i64(Scalar::U32, vec![self.channels], &values)
            .expect("one value per channel");
        let w = g.weight(name, t);
        g.cast(&w, DType::U64)
    }
}

fn spectral_subtraction(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::U32)?;
    let c = Config::read(ctx)?;
    let x = ctx.input(0)?;
    if x.shape() != [c.channels] {
        return Err(OpError::Invalid(format!(
            "input {:?} has shape {:?}, custom option \"num_channels\" {} channels",
            ctx.info(0)?.name,
            x.shape(),
            c.channels
        )));
    }
    let state_name = ctx.out_info(1)?.name.clone();
    let g = &mut *ctx.graph;
    let (noise, n) = g.state(&state_name, DType::U32, &[c.channels], None)?;
    let low32 = |g: &mut Graph, v: &Lazy| g.int_scalar(BinaryOp::And, v, 0xFFFF_FFFF);
    let x = g.cast(&x, DType::U64);
    let s = g.int_scalar(BinaryOp::Shl, &x, c.smoothing_bits)?;
    let s = low32(g, &s)?;
    let smoothing = c.per_channel(g, &format!("{state_name}/smoothing"), c.smoothing);
    let keep = c.per_channel(g, &format!("{state_name}/one_minus"), c.one_minus_smoothing);
    let old = g.cast(&noise, DType::U64);
    let new = g.binary(BinaryOp::Mul, &s, &smoothing)?;
    let kept = g.binary(BinaryOp::Mul, &old, &keep)?;
    let new = g.binary(BinaryOp::Add, &new, &kept)?;
    let new = g.int_scalar(BinaryOp::Shr, &new, c.spectral_subtraction_bits)?;
    let new = low32(g, &new)?;
    let over = g.binary(BinaryOp::CmpLt, &s, &new)?;
    let estimate = g.where_(&over, &s, &new)?;
    let next = if c.clamping { &estimate } else { &new };
    let next = g.cast(next, DType::U32);
    g.set_next_state(n, &next)?;
    let floor = g.int_scalar(BinaryOp::Mul, &x, c.min_signal_remaining.into())?;
    let floor = g.int_scalar(BinaryOp::Shr, &floor, c.spectral_subtraction_bits)?;
    let floor = low32(g, &floor)?;
    let rest = g.binary(BinaryOp::Sub, &s, &estimate)?;
    let rest = g.int_scalar(BinaryOp::Shr, &rest, c.smoothing_bits)?;
    let out = g.binary(BinaryOp::Max, &rest, &floor)?;
    Ok(vec![g.cast(&out, DType::U32), next])
}

//! The requantization integer kernels run: TFLM's `MultiplyByQuantizedMultiplier` with double
//! rounding, `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left, multiplier),
//! right)`, built from the graph's integer primitives in the fewest 32-bit steps that are
//! still exact for every `i32` input:
//! - the high multiply, `(p + (p ≥ 0 ? 2^30 : 1 − 2^30)) / 2^31` with truncating division, equals
//!   `(p + 2^30) >> 31` with an arithmetic shift for every 64-bit product `p` (for `p < 0` the
//!   truncation adds the `2^31 − 1` that turns the nudge `1 − 2^30` into `2^30`); with `m` in
//!   `[2^30, 2^31)` and `m′ = 2m − 2^32` (an `i32`), it is `((x·m′ + 2^31) >> 32) + x`: the
//!   rounded high word of a 32×32 product (one `SMMULR` on a DSP core) and an add;
//! - a zero multiplier (a scale below 2^-32) gives 0 whatever `x`: its channel computes with
//!   the normalized stand-in `2^30` and, where the short rounding below is used, the rounding
//!   shift 32 (`h′ >> 31` is 0 or −1, which rounds to 0); else on an `x` multiplied by 0 (the
//!   table that holds `2^left`);
//! - the rounding shift by `e ≥ 2` (halves away from zero) is `((h′ >> (e − 1)) + 1) >> 1` with
//!   `h′ = h + (h >> 31)`, that is `h − 1` for a negative `h`: for `h ≥ 0` it is
//!   `⌊(h + 2^(e−1)) / 2^e⌋`, for `h < 0` `⌊(h − 1 + 2^(e−1)) / 2^e⌋`, TFLM's two cases. No step
//!   overflows (`h ≥ −2^31 + 1` after a multiplier below 2^31; `h′ >> (e − 1)` is within
//!   `±2^30`), and a zero point added after it folds into the `+ 1`: `(t + 1 + 2·zp) >> 1`. On
//!   an Arm core that is `ADD` (with `ASR #31`), `ASR`, `ADD`, and the clamp's `SSAT` takes
//!   the last `ASR #1`;
//! - a rounding shift by 1 keeps TFLM's own form, `(h >> e) + ((h & mask) > (mask >> 1) +
//!   (h < 0))`, where `h + 2^(e−1)` could pass `i32::MAX`.
//!
//! The property tests (`codegen/tests/int8_props.rs`) check every form against a literal
//! transcription of TFLM's, at the ends of the `i32` range too.

use super::quant::{Multipliers, QuantMultiplier};
use super::{Graph, GraphError, Lazy};
use crate::dtype::DType;
use crate::ops::BinaryOp;

/// A zero point folded into the short rounding shift stays this small, so `t + 1 + 2·zp`
/// cannot overflow (`|t| ≤ 2^30`).
const FOLDABLE_ADD: i64 = 1 << 28;

/// The rounding shift after which the short form gives 0 whatever `h`: a zero multiplier's.
const ZEROING_RIGHT: i32 = 32;

impl Multipliers {
    /// Whether every multiplier that is not zero has a rounding shift of at least 2, the
    /// short rounding form's.
    fn short_rounding(&self) -> bool {
        (self.all().iter())
            .filter(|m| m.multiplier != 0)
            .all(|m| m.right() >= 2)
    }

    /// The multipliers a kernel computes with: each zero multiplier replaced by the
    /// normalized stand-in `2^30` with the rounding shift that zeroes its result in the `short`
    /// form where that is used, else the smallest rounding shift of the others (2 if there
    /// are none), whose channel's `x` is then multiplied by 0.
    fn computed(&self, short: bool) -> Multipliers {
        let others = (self.all().iter())
            .filter(|m| m.multiplier != 0)
            .map(|m| m.right())
            .min();
        let right = match short {
            true => ZEROING_RIGHT,
            false => others.unwrap_or(2),
        };
        let stand_in = QuantMultiplier {
            multiplier: 1 << 30,
            shift: -right,
        };
        let fix = |m: QuantMultiplier| if m.multiplier == 0 { stand_in } else { m };
        match self {
            Multipliers::Tensor(m) => Multipliers::Tensor(fix(*m)),
            Multipliers::PerAxis { axis, each } => Multipliers::PerAxis {
                axis: *axis,
                each: each.iter().map(|&m| fix(m)).collect(),
            },
        }
    }
}

impl Graph {
    /// TFLM's `MultiplyByQuantizedMultiplier` of the `i32` tensor `x`, as `i32`.
    pub fn requantize(&mut self, x: &Lazy, ms: &Multipliers) -> Result<Lazy, GraphError> {
        self.requantize_plus(x, ms, 0)
    }

    /// `MultiplyByQuantizedMultiplier(x) + add` of the `i32` tensor `x`, as `i32`, `add` folded
    /// into the rounding where it can be.
    fn requantize_plus(
        &mut self,
        x: &Lazy,
        ms: &Multipliers,
        add: i64,
    ) -> Result<Lazy, GraphError> {
        let all = ms.all();
        // `x · 2^left` is computed in i32, as TFLM does: a larger shift (a scale ratio of 2^31
        // or more, which only a damaged file has) cannot be.
        if let Some(m) = all.iter().find(|m| m.left() > 30) {
            return Err(GraphError::Invalid {
                op: "requantize",
                reason: format!(
                    "a scale ratio of about 2^{} is beyond TFLM's fixed-point multipliers (at most 2^30)",
                    m.shift
                ),
            });
        }
        let mut x = x.clone();
        let short = ms.short_rounding();
        let zero_by_pot = !short && all.iter().any(|m| m.multiplier == 0);
        if all.iter().any(|m| m.left() > 0) || zero_by_pot {
            // `x · 2^left` in i32, as TFLM computes it; 0 where the multiplier is and the
            // rounding cannot zero it.
            let pot = self.table("requant_pot", &x, ms, DType::I32, |m| {
                match (m.multiplier, zero_by_pot) {
                    (0, true) => 0,
                    _ => 1i64 << m.left(),
                }
            })?;
            x = self.binary(BinaryOp::Mul, &x, &pot)?;
        }
        let ms = &ms.computed(short);
        let high = self.high_mul(&x, ms)?;
        self.rounding_shift_right(&high, ms, add)
    }

    /// `SaturatingRoundingDoublingHighMul(x, multiplier)` of the `i32` tensor `x`, as `i32`.
    fn high_mul(&mut self, x: &Lazy, ms: &Multipliers) -> Result<Lazy, GraphError> {
        let x64 = self.cast(x, DType::I64);
        if ms.all().iter().all(|m| m.multiplier >= 1 << 30) {
            let mp = self.table("requant_mult_high", x, ms, DType::I32, |m| {
                2 * i64::from(m.multiplier) - (1i64 << 32)
            })?;
            let mp64 = self.cast(&mp, DType::I64);
            let p = self.binary(BinaryOp::Mul, &x64, &mp64)?;
            let p = self.int_scalar(BinaryOp::Add, &p, 1 << 31)?;
            let p = self.int_scalar(BinaryOp::Shr, &p, 32)?;
            let p = self.cast(&p, DType::I32);
            return self.binary(BinaryOp::Add, &p, x);
        }
        // A multiplier below 2^30 that is not zero: not TFLM's, but computed as it would be.
        let m = self.table("requant_mult", x, ms, DType::I32, |m| m.multiplier as i64)?;
        let m64 = self.cast(&m, DType::I64);
        let p = self.binary(BinaryOp::Mul, &x64, &m64)?;
        let p = self.int_scalar(BinaryOp::Add, &p, 1 << 30)?;
        let p = self.int_scalar(BinaryOp::Shr, &p, 31)?;
        Ok(self.cast(&p, DType::I32))
    }

    /// `RoundingDivideByPOT(h, right) + add` of the `i32` tensor `h`, as `i32`: the short form
    /// where every shift is at least 2 (the module's doc), else TFLM's own.
    fn rounding_shift_right(
        &mut self,
        h: &Lazy,
        ms: &Multipliers,
        add: i64,
    ) -> Result<Lazy, GraphError> {
        let all = ms.all();
        let plus = |g: &mut Graph, v: Lazy, add: i64| match add {
            0 => Ok(v),
            _ => g.int_scalar(BinaryOp::Add, &v, add),
        };
        if all.iter().all(|m| m.right() == 0) {
            return plus(self, h.clone(), add);
        }
        if all.iter().all(|m| m.right() >= 2) {
            let sign = self.int_scalar(BinaryOp::Shr, h, 31)?;
            let h = self.binary(BinaryOp::Add, h, &sign)?;
            let right = self.table("requant_right1", &h, ms, DType::I32, |m| {
                i64::from(m.right() - 1)
            })?;
            let t = self.binary(BinaryOp::Shr, &h, &right)?;
            let (fold, after) = match add.abs() < FOLDABLE_ADD {
                true => (add, 0),
                false => (0, add),
            };
            let t = self.int_scalar(BinaryOp::Add, &t, 1 + 2 * fold)?;
            let r = self.int_scalar(BinaryOp::Shr, &t, 1)?;
            return plus(self, r, after);
        }
        let r = self.tflm_rounding_shift_right(h, ms)?;
        plus(self, r, add)
    }

    /// TFLM's `RoundingDivideByPOT(h, right)`, `(h >> right) + ((h & mask) > (mask >> 1) +
    /// (h < 0))` with `mask = 2^right − 1`: nothing in it can overflow for any shift.
    fn tflm_rounding_shift_right(
        &mut self,
        h: &Lazy,
        ms: &Multipliers,
    ) -> Result<Lazy, GraphError> {
        let mask = |m: QuantMultiplier| (1i64 << m.right()) - 1;
        let masks = self.table("requant_mask", h, ms, DType::I32, mask)?;
        let halves = self.table("requant_half", h, ms, DType::I32, |m| mask(m) >> 1)?;
        let right = self.table("requant_right", h, ms, DType::I32, |m| m.right() as i64)?;
        let rem = self.binary(BinaryOp::And, h, &masks)?;
        let zero = self.int_const(0, DType::I32, h.shape());
        let negative = self.binary(BinaryOp::CmpLt, h, &zero)?;
        let negative = self.cast(&negative, DType::I32);
        let threshold = self.binary(BinaryOp::Add, &halves, &negative)?;
        let up = self.binary(BinaryOp::CmpLt, &threshold, &rem)?;
        let up = self.cast(&up, DType::I32);
        let q = self.binary(BinaryOp::Shr, h, &right)?;
        self.binary(BinaryOp::Add, &q, &up)
    }

    /// TFLM's `MultiplyByQuantizedMultiplier` of the `i64` tensor `x` (the 16x8 kernels'
    /// accumulator), as `i32`: the multiplier reduced to 16 bits, `(m + 2^15) >> 16` (at most
    /// `2^15 − 1`), then one rounding shift, `(x · m16 + 2^(s − 1)) >> s` with `s = 15 − shift`.
    pub fn requantize_wide(&mut self, x: &Lazy, ms: &Multipliers) -> Result<Lazy, GraphError> {
        let total = |m: QuantMultiplier| i64::from(15 - m.shift);
        let reduced = self.table("requant_mult16", x, ms, DType::I64, |m| {
            if m.multiplier < 0x7FFF_0000 {
                i64::from((m.multiplier + (1 << 15)) >> 16)
            } else {
                0x7FFF
            }
        })?;
        let p = self.binary(BinaryOp::Mul, x, &reduced)?;
        let round = self.table("requant_round64", x, ms, DType::I64, |m| {
            1i64 << (total(m) - 1)
        })?;
        let p = self.binary(BinaryOp::Add, &p, &round)?;
        let shift = self.table("requant_shift64", x, ms, DType::I64, total)?;
        let r = self.binary(BinaryOp::Shr, &p, &shift)?;
        Ok(self.cast(&r, DType::I32))
    }

    /// Requantizes an accumulator to `dtype`: `clamp(requantize(acc) + zp, lo, hi)`, by the
    /// `MultiplyByQuantizedMultiplier` of the accumulator's width (`i32` or `i64`).
    pub fn requantize_to(
        &mut self,
        acc: &Lazy,
        ms: &Multipliers,
        zp: i32,
        (lo, hi): (i32, i32),
        dtype: DType,
    ) -> Result<Lazy, GraphError> {
        let r = match acc.dtype {
            DType::I64 => {
                let r = self.requantize_wide(acc, ms)?;
                match zp {
                    0 => r,
                    _ => self.int_scalar(BinaryOp::Add, &r, zp.into())?,
                }
            }
            _ => self.requantize_plus(acc, ms, zp.into())?,
        };
        let r = self.clamp_int(&r, lo as i64, hi as i64)?;
        Ok(self.cast(&r, dtype))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scale ratio past what an i32 shift holds (a damaged file's) is an error naming it,
    /// not an overflow.
    #[test]
    fn a_scale_ratio_too_large_is_an_error() {
        let mut g = Graph::new();
        let x = g.input("x", DType::I32, &[4]);
        let huge = Multipliers::Tensor(QuantMultiplier::new(1e30));
        let e = g.requantize(&x, &huge).unwrap_err().to_string();
        assert!(e.contains("requantize") && e.contains("2^"), "{e}");
        let fine = Multipliers::Tensor(QuantMultiplier::new(3.0));
        assert!(g.requantize(&x, &fine).is_ok());
    }
}

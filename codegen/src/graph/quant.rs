//! Integer arithmetic of quantized models: the fixed-point multipliers TFLite Micro computes at
//! set-up (in double, on the host) and the requantization its kernels run, built from the
//! graph's integer primitives so that every renderer emits it as integer code.
//!
//! A real multiplier `m` is held as `multiplier · 2^(shift − 31)` ([`QuantMultiplier`]).
//! Requantizing `x` by it is TFLM's `MultiplyByQuantizedMultiplier` with double rounding:
//! `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left, multiplier), right)`.
//! Both roundings are computed in `i64` from the 64-bit product:
//! - the high multiply, `(p + (p ≥ 0 ? 2^30 : 1 − 2^30)) / 2^31` with truncating division, equals
//!   `(p + 2^30) >> 31` with an arithmetic shift for every `p` (for `p < 0` the truncation
//!   adds the `2^31 − 1` that turns the nudge `1 − 2^30` into `2^30`);
//! - the rounding shift by `e ≥ 1` (halves away from zero) is `(h + 2^(e−1) − (h < 0)) >> e`.
//!
//! The property tests check both identities against a literal transcription of TFLM's.

use super::{Graph, GraphError, Lazy};
use crate::dtype::DType;
use crate::ops::{BinaryOp, ConstValue};
use crate::tensor::Tensor;

/// A real multiplier as TFLM holds it: `multiplier · 2^(shift − 31)`, `multiplier` in
/// `[2^30, 2^31)` (or 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantMultiplier {
    pub multiplier: i32,
    pub shift: i32,
}

impl QuantMultiplier {
    /// TFLM's `QuantizeMultiplier`: `frexp`, the fraction rounded half away from zero to 31
    /// bits, renormalised when it rounds up to `2^31`; below `2^-32` it is zero.
    pub fn new(m: f64) -> QuantMultiplier {
        if m == 0.0 || !m.is_finite() {
            return QuantMultiplier {
                multiplier: 0,
                shift: 0,
            };
        }
        let (q, mut shift) = frexp(m);
        let mut fixed = (q * (1u64 << 31) as f64).round() as i64;
        if fixed == 1 << 31 {
            fixed /= 2;
            shift += 1;
        }
        if shift < -31 {
            return QuantMultiplier {
                multiplier: 0,
                shift: 0,
            };
        }
        QuantMultiplier {
            multiplier: fixed as i32,
            shift,
        }
    }

    /// The shift left before the high multiply.
    pub fn left(self) -> i32 {
        self.shift.max(0)
    }

    /// The rounding shift right after it.
    pub fn right(self) -> i32 {
        (-self.shift).max(0)
    }
}

/// `(q, e)` with `m = q · 2^e` and `|q|` in `[0.5, 1)`, as C's `frexp` (for normal `m`).
fn frexp(m: f64) -> (f64, i32) {
    if m.abs() < f64::MIN_POSITIVE {
        let (q, e) = frexp(m * 2f64.powi(64));
        return (q, e - 64);
    }
    let bits = m.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let q = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (q, exp - 1022)
}

/// `−zp_in · Σ (w − zp_w)` per output channel of the integer weight `w` of `shape`, its `n`
/// output channels along `axis` (`zp_w`: one zero point, or one per channel): the zero-point
/// term of a quantized convolution or product, folded into its bias at compile time.
pub fn folded_zero_points(
    w: &[i64],
    shape: &[usize],
    axis: usize,
    zp_in: i64,
    zp_w: &[i64],
) -> Vec<i64> {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut sums = vec![0i64; n];
    for (i, v) in w.iter().enumerate() {
        let c = (i / inner) % n;
        sums[c] += v - zp_w[if zp_w.len() > 1 { c } else { 0 }];
    }
    sums.iter().map(|s| -zp_in * s).collect()
}

/// TFLM's `CalculateActivationRangeQuantized`: the clamp of a fused activation on an output of
/// scale `scale` and zero point `zp`, within the type's `[qmin, qmax]`.
pub fn activation_range(act: Activation, scale: f32, zp: i32, qmin: i32, qmax: i32) -> (i32, i32) {
    let q = |v: f32| zp + (v / scale).round() as i32;
    match act {
        Activation::None => (qmin, qmax),
        Activation::Relu => (qmin.max(q(0.0)), qmax),
        Activation::Relu6 => (qmin.max(q(0.0)), qmax.min(q(6.0))),
        Activation::ReluN1To1 => (qmin.max(q(-1.0)), qmax.min(q(1.0))),
    }
}

/// A fused activation of a TFLite op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    None,
    Relu,
    Relu6,
    ReluN1To1,
}

/// Multipliers of a requantization: one for the tensor, or one per index of `axis`.
#[derive(Clone, Debug, PartialEq)]
pub enum Multipliers {
    Tensor(QuantMultiplier),
    PerAxis {
        axis: usize,
        each: Vec<QuantMultiplier>,
    },
}

impl Multipliers {
    fn all(&self) -> Vec<QuantMultiplier> {
        match self {
            Multipliers::Tensor(m) => vec![*m],
            Multipliers::PerAxis { each, .. } => each.clone(),
        }
    }
}

impl Graph {
    /// The integer `v` as a `dtype` constant broadcast to `shape`.
    pub fn int_const(&mut self, v: i64, dtype: DType, shape: &[usize]) -> Lazy {
        self.const_exact(ConstValue::from_i64(dtype, v), dtype, shape)
    }

    /// `per(m)` for each multiplier, as a constant (one multiplier) or a table in flash laid
    /// along the axis, broadcast like `x`.
    fn table(
        &mut self,
        name: &str,
        x: &Lazy,
        ms: &Multipliers,
        dtype: DType,
        per: impl Fn(QuantMultiplier) -> i64,
    ) -> Result<Lazy, GraphError> {
        match ms {
            Multipliers::Tensor(m) => Ok(self.int_const(per(*m), dtype, x.shape())),
            Multipliers::PerAxis { axis, each } => {
                let values: Vec<i64> = each.iter().map(|&m| per(m)).collect();
                if values.iter().all(|&v| v == values[0]) {
                    return Ok(self.int_const(values[0], dtype, x.shape()));
                }
                let t = Tensor::from_i64(dtype.scalar, vec![values.len()], &values)
                    .expect("one value per channel");
                let w = self.weight(name, t);
                let mut shape = vec![1; x.shape().len()];
                shape[*axis] = values.len();
                w.reshape(&shape)?.expand(x.shape())
            }
        }
    }

    /// An integer binary op with a constant right operand of `x`'s type.
    pub fn int_scalar(&mut self, op: BinaryOp, x: &Lazy, v: i64) -> Result<Lazy, GraphError> {
        let c = self.int_const(v, x.dtype, x.shape());
        self.binary(op, x, &c)
    }

    /// `min(max(x, lo), hi)` for integers (exact at the type's limits).
    pub fn clamp_int(&mut self, x: &Lazy, lo: i64, hi: i64) -> Result<Lazy, GraphError> {
        let y = self.int_scalar(BinaryOp::Max, x, lo)?;
        let h = self.int_const(hi, x.dtype, x.shape());
        let over = self.binary(BinaryOp::CmpLt, &h, &y)?;
        self.where_(&over, &h, &y)
    }

    /// TFLM's `MultiplyByQuantizedMultiplier` of the `i32` tensor `x`, as `i32`.
    pub fn requantize(&mut self, x: &Lazy, ms: &Multipliers) -> Result<Lazy, GraphError> {
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
        if all.iter().any(|m| m.left() > 0) {
            // `x · 2^left` in i32, as TFLM computes it.
            let pot = self.table("requant_pot", &x, ms, DType::I32, |m| 1i64 << m.left())?;
            x = self.binary(BinaryOp::Mul, &x, &pot)?;
        }
        let x64 = self.cast(&x, DType::I64);
        let high = if all.iter().all(|m| m.multiplier >= 1 << 30) {
            // With m in [2^30, 2^31), m' = 2m − 2^32 is an i32 and
            // (x·m + 2^30) >> 31 = ((x·m' + 2^31) >> 32) + x exactly: the rounded high word of
            // a 32×32 product (one `SMMULR` on a DSP core) and an add.
            let mp = self.table("requant_mult_high", &x, ms, DType::I32, |m| {
                2 * i64::from(m.multiplier) - (1i64 << 32)
            })?;
            let mp64 = self.cast(&mp, DType::I64);
            let p = self.binary(BinaryOp::Mul, &x64, &mp64)?;
            let p = self.int_scalar(BinaryOp::Add, &p, 1 << 31)?;
            let p = self.int_scalar(BinaryOp::Shr, &p, 32)?;
            let p = self.cast(&p, DType::I32);
            self.binary(BinaryOp::Add, &p, &x)?
        } else {
            let m = self.table("requant_mult", &x, ms, DType::I32, |m| m.multiplier as i64)?;
            let m64 = self.cast(&m, DType::I64);
            let p = self.binary(BinaryOp::Mul, &x64, &m64)?;
            let p = self.int_scalar(BinaryOp::Add, &p, 1 << 30)?;
            self.int_scalar(BinaryOp::Shr, &p, 31)?
        };
        self.rounding_shift_right(&high, ms)
    }

    /// `RoundingDivideByPOT(h, right)` of a tensor whose values fit in `i32`, in `i32`
    /// and in TFLM's own form, `(h >> right) + ((h & mask) > (mask >> 1) + (h < 0))` with
    /// `mask = 2^right − 1`: nothing in it can overflow, and every step is one 32-bit
    /// instruction on a microcontroller (a nudge added before the shift could pass `i32::MAX`).
    fn rounding_shift_right(&mut self, h: &Lazy, ms: &Multipliers) -> Result<Lazy, GraphError> {
        let h = self.cast(h, DType::I32);
        let all = ms.all();
        if all.iter().all(|m| m.right() == 0) {
            return Ok(h);
        }
        let mask = |m: QuantMultiplier| (1i64 << m.right()) - 1;
        let masks = self.table("requant_mask", &h, ms, DType::I32, mask)?;
        let halves = self.table("requant_half", &h, ms, DType::I32, |m| mask(m) >> 1)?;
        let right = self.table("requant_right", &h, ms, DType::I32, |m| m.right() as i64)?;
        let rem = self.binary(BinaryOp::And, &h, &masks)?;
        let zero = self.int_const(0, DType::I32, h.shape());
        let negative = self.binary(BinaryOp::CmpLt, &h, &zero)?;
        let negative = self.cast(&negative, DType::I32);
        let threshold = self.binary(BinaryOp::Add, &halves, &negative)?;
        let up = self.binary(BinaryOp::CmpLt, &threshold, &rem)?;
        let up = self.cast(&up, DType::I32);
        let q = self.binary(BinaryOp::Shr, &h, &right)?;
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
        let r = if acc.dtype == DType::I64 {
            self.requantize_wide(acc, ms)?
        } else {
            self.requantize(acc, ms)?
        };
        let r = if zp != 0 {
            self.int_scalar(BinaryOp::Add, &r, zp as i64)?
        } else {
            r
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

    #[test]
    fn multipliers_match_tflm_set_up() {
        let q = QuantMultiplier::new;
        assert_eq!(
            q(0.5),
            QuantMultiplier {
                multiplier: 1 << 30,
                shift: 0
            }
        );
        assert_eq!(
            q(1.0),
            QuantMultiplier {
                multiplier: 1 << 30,
                shift: 1
            }
        );
        assert_eq!(
            q(0.75),
            QuantMultiplier {
                multiplier: 3 << 29,
                shift: 0
            }
        );
        assert_eq!(
            q(0.0),
            QuantMultiplier {
                multiplier: 0,
                shift: 0
            }
        );
        assert_eq!(
            q(1e-12),
            QuantMultiplier {
                multiplier: 0,
                shift: 0
            }
        );
        // Rounds up to 2^31: renormalised.
        let m = q(1.0 - 1e-12);
        assert_eq!(
            m,
            QuantMultiplier {
                multiplier: 1 << 30,
                shift: 1
            }
        );
        assert_eq!(frexp(3e-310).1, -1028);
    }

    #[test]
    fn activation_ranges() {
        assert_eq!(
            activation_range(Activation::Relu, 0.1, -10, -128, 127),
            (-10, 127)
        );
        assert_eq!(
            activation_range(Activation::Relu6, 0.05, -128, -128, 127),
            (-128, -8)
        );
        assert_eq!(
            activation_range(Activation::None, 0.05, 3, -128, 127),
            (-128, 127)
        );
    }
}

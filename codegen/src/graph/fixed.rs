//! gemmlowp's fixed-point functions (the ones TFLite Micro's int8 softmax, logistic and tanh
//! use), as graph ops on `i32` raw values. A value with `b` integer bits is `raw · 2^(b − 31)`.
//!
//! The constants are gemmlowp's (`fixedpoint/fixedpoint.h`): the Taylor expansion of `exp`
//! around −1/8, the barrel shifter of `exp(−2^k)` factors, and the Newton-Raphson steps of
//! `1 / (1 + x)`.

use super::{Graph, GraphError, Lazy};
use crate::dtype::DType;
use crate::ops::{BinaryOp, ReduceOp};

type R = Result<Lazy, GraphError>;

/// `exp(−2^k)` as Q0.31, for k = −2 … 4: the barrel shifter of `exp_on_negative_values`.
const EXP_BARREL: [(i32, i64); 7] = [
    (-2, 1_672_461_947),
    (-1, 1_302_514_674),
    (0, 790_015_084),
    (1, 290_630_308),
    (2, 39_332_535),
    (3, 720_401),
    (4, 242),
];

impl Graph {
    /// `SaturatingRoundingDoublingHighMul(a, b)` of two `i32` tensors.
    pub fn doubling_high_mul(&mut self, a: &Lazy, b: &Lazy) -> R {
        let (a64, b64) = (self.cast(a, DType::I64), self.cast(b, DType::I64));
        let p = self.binary(BinaryOp::Mul, &a64, &b64)?;
        let p = self.int_scalar(BinaryOp::Add, &p, 1 << 30)?;
        let h = self.int_scalar(BinaryOp::Shr, &p, 31)?;
        // Only `i32::MIN · i32::MIN` goes past `i32::MAX`; gemmlowp saturates it.
        let h = self.clamp_int(&h, i64::from(i32::MIN), i64::from(i32::MAX))?;
        Ok(self.cast(&h, DType::I32))
    }

    /// `a · c` for the raw constant `c`.
    pub(super) fn doubling_high_mul_const(&mut self, a: &Lazy, c: i64) -> R {
        let c = self.int_const(c, DType::I32, a.shape());
        self.doubling_high_mul(a, &c)
    }

    /// `RoundingDivideByPOT(x, e)` of an `i32` tensor by a constant `e ≥ 0`.
    pub fn rounding_divide_by_pot(&mut self, x: &Lazy, e: u32) -> R {
        if e == 0 {
            return Ok(x.clone());
        }
        let x64 = self.cast(x, DType::I64);
        let zero = self.int_const(0, DType::I64, x.shape());
        let negative = self.binary(BinaryOp::CmpLt, &x64, &zero)?;
        let half = 1i64 << (e - 1);
        let pos = self.int_const(half, DType::I64, x.shape());
        let neg = self.int_const(half - 1, DType::I64, x.shape());
        let nudge = self.where_(&negative, &neg, &pos)?;
        let s = self.binary(BinaryOp::Add, &x64, &nudge)?;
        let r = self.int_scalar(BinaryOp::Shr, &s, i64::from(e))?;
        Ok(self.cast(&r, DType::I32))
    }

    /// `RoundingDivideByPOT(x, e)` with a per-element `i32` exponent `e` in `0..=31`, in TFLM's
    /// own form: `(x >> e) + (rem > (mask >> 1) + (x < 0))`.
    pub fn rounding_divide_by_pot_var(&mut self, x: &Lazy, e: &Lazy) -> R {
        let (x64, e64) = (self.cast(x, DType::I64), self.cast(e, DType::I64));
        let one = self.int_const(1, DType::I64, x.shape());
        let pot = self.binary(BinaryOp::Shl, &one, &e64)?;
        let mask = self.binary(BinaryOp::Sub, &pot, &one)?;
        let rem = self.binary(BinaryOp::And, &x64, &mask)?;
        let half = self.int_scalar(BinaryOp::Shr, &mask, 1)?;
        let zero = self.int_const(0, DType::I64, x.shape());
        let negative = self.binary(BinaryOp::CmpLt, &x64, &zero)?;
        let negative = self.cast(&negative, DType::I64);
        let threshold = self.binary(BinaryOp::Add, &half, &negative)?;
        let up = self.binary(BinaryOp::CmpLt, &threshold, &rem)?;
        let up = self.cast(&up, DType::I64);
        let q = self.binary(BinaryOp::Shr, &x64, &e64)?;
        let r = self.binary(BinaryOp::Add, &q, &up)?;
        Ok(self.cast(&r, DType::I32))
    }

    /// `SaturatingRoundingMultiplyByPOT<e>` for `e > 0`: `x << e`, saturated.
    pub fn saturating_shift_left(&mut self, x: &Lazy, e: u32) -> R {
        let x64 = self.cast(x, DType::I64);
        let s = self.int_scalar(BinaryOp::Shl, &x64, i64::from(e))?;
        let s = self.clamp_int(&s, i64::from(i32::MIN), i64::from(i32::MAX))?;
        Ok(self.cast(&s, DType::I32))
    }

    fn add_i32(&mut self, a: &Lazy, b: &Lazy) -> R {
        self.binary(BinaryOp::Add, a, b)
    }

    /// `exp(a)` for `a` in `[−1/4, 0)`, Q0.31 in and out.
    fn exp_on_quarter_interval(&mut self, a: &Lazy) -> R {
        const EXP_MINUS_ONE_EIGHTH: i64 = 1_895_147_668;
        const ONE_THIRD: i64 = 715_827_883;
        let x = self.int_scalar(BinaryOp::Add, a, 1 << 28)?;
        let x2 = self.doubling_high_mul(&x, &x)?;
        let x3 = self.doubling_high_mul(&x2, &x)?;
        let x4 = self.doubling_high_mul(&x2, &x2)?;
        let x4_4 = self.rounding_divide_by_pot(&x4, 2)?;
        let s = self.add_i32(&x4_4, &x3)?;
        let s = self.doubling_high_mul_const(&s, ONE_THIRD)?;
        let s = self.add_i32(&s, &x2)?;
        let poly = self.rounding_divide_by_pot(&s, 1)?;
        let sum = self.add_i32(&x, &poly)?;
        let t = self.doubling_high_mul_const(&sum, EXP_MINUS_ONE_EIGHTH)?;
        self.int_scalar(BinaryOp::Add, &t, EXP_MINUS_ONE_EIGHTH)
    }

    /// gemmlowp's `exp_on_negative_values`: `exp(a)` for `a ≤ 0` with `int_bits` integer bits,
    /// Q0.31 out.
    pub fn exp_on_negative_values(&mut self, a: &Lazy, int_bits: u32) -> R {
        let frac = 31 - int_bits;
        let quarter = 1i64 << (frac - 2);
        let masked = self.int_scalar(BinaryOp::And, a, quarter - 1)?;
        let offset = self.int_scalar(BinaryOp::Sub, &masked, quarter)?;
        let rescaled = if int_bits > 0 {
            self.saturating_shift_left(&offset, int_bits)?
        } else {
            offset.clone()
        };
        let mut result = self.exp_on_quarter_interval(&rescaled)?;
        let remainder = self.binary(BinaryOp::Sub, &offset, a)?;
        for (k, factor) in EXP_BARREL {
            if int_bits as i32 <= k {
                continue;
            }
            let bit = 1i64 << (frac as i32 + k);
            let set = self.int_scalar(BinaryOp::And, &remainder, bit)?;
            let zero = self.int_const(0, DType::I32, a.shape());
            let set = self.binary(BinaryOp::CmpNe, &set, &zero)?;
            let scaled = self.doubling_high_mul_const(&result, factor)?;
            result = self.where_(&set, &scaled, &result)?;
        }
        if int_bits > 5 {
            let clamp = -(1i64 << (36 - int_bits));
            let c = self.int_const(clamp, DType::I32, a.shape());
            let below = self.binary(BinaryOp::CmpLt, a, &c)?;
            let zero = self.int_const(0, DType::I32, a.shape());
            result = self.where_(&below, &zero, &result)?;
        }
        let zero = self.int_const(0, DType::I32, a.shape());
        let is_zero = self.binary(BinaryOp::CmpNe, a, &zero)?;
        let one = self.int_const(i64::from(i32::MAX), DType::I32, a.shape());
        self.where_(&is_zero, &result, &one)
    }

    /// gemmlowp's `one_over_one_plus_x_for_x_in_0_1`: Q0.31 in, Q0.31 out.
    pub fn one_over_one_plus_x(&mut self, a: &Lazy) -> R {
        let x = self.newton_reciprocal(a)?;
        self.saturating_shift_left(&x, 1)
    }

    /// gemmlowp's `one_minus_x_over_one_plus_x_for_x_in_0_1`: Q0.31 in, Q0.31 out.
    fn one_minus_x_over_one_plus_x(&mut self, a: &Lazy) -> R {
        let x = self.newton_reciprocal(a)?;
        let one = self.int_const(1 << 29, DType::I32, a.shape());
        let d = self.binary(BinaryOp::Sub, &x, &one)?;
        self.saturating_shift_left(&d, 2)
    }

    /// The Newton-Raphson iterate `x ≈ 1 / half_denominator` (Q2.29) of gemmlowp's reciprocal
    /// functions, `half_denominator = (a + 1) / 2`.
    fn newton_reciprocal(&mut self, a: &Lazy) -> R {
        let a64 = self.cast(a, DType::I64);
        let sum = self.int_scalar(BinaryOp::Add, &a64, i64::from(i32::MAX))?;
        let half = self.int_scalar(BinaryOp::Add, &sum, 1)?; // the sum is positive
        let half = self.int_scalar(BinaryOp::Div, &half, 2)?;
        let half_den = self.cast(&half, DType::I32);
        let t = self.doubling_high_mul_const(&half_den, -1_010_580_540)?;
        let mut x = self.int_scalar(BinaryOp::Add, &t, 1_515_870_810)?;
        for _ in 0..3 {
            let hx = self.doubling_high_mul(&half_den, &x)?;
            let one = self.int_const(1 << 29, DType::I32, a.shape());
            let rest = self.binary(BinaryOp::Sub, &one, &hx)?;
            let step = self.doubling_high_mul(&x, &rest)?;
            let step = self.saturating_shift_left(&step, 2)?;
            x = self.add_i32(&x, &step)?;
        }
        Ok(x)
    }

    /// gemmlowp's `logistic` of a value with `int_bits` integer bits: Q0.31 out.
    pub fn fixed_logistic(&mut self, a: &Lazy, int_bits: u32) -> R {
        let zero = self.int_const(0, DType::I32, a.shape());
        let positive = self.binary(BinaryOp::CmpLt, &zero, a)?;
        let neg_a = self.neg(a)?;
        let abs = self.where_(&positive, a, &neg_a)?;
        let neg_abs = self.neg(&abs)?;
        let e = self.exp_on_negative_values(&neg_abs, int_bits)?;
        let if_positive = self.one_over_one_plus_x(&e)?;
        let one = self.int_const(i64::from(i32::MAX), DType::I32, a.shape());
        let if_negative = self.binary(BinaryOp::Sub, &one, &if_positive)?;
        let r = self.where_(&positive, &if_positive, &if_negative)?;
        let is_zero = self.eq(a, &zero)?;
        let half = self.int_const(1 << 30, DType::I32, a.shape());
        self.where_(&is_zero, &half, &r)
    }

    /// gemmlowp's `tanh` of a value with `int_bits` integer bits: Q0.31 out.
    pub fn fixed_tanh(&mut self, a: &Lazy, int_bits: u32) -> R {
        let zero = self.int_const(0, DType::I32, a.shape());
        let negative = self.binary(BinaryOp::CmpLt, a, &zero)?;
        let neg_a = self.neg(a)?;
        let n = self.where_(&negative, a, &neg_a)?;
        // ExactMulByPot<1>: the same raw value read with one more integer bit.
        let e = self.exp_on_negative_values(&n, int_bits + 1)?;
        let t = self.one_minus_x_over_one_plus_x(&e)?;
        let neg_t = self.neg(&t)?;
        let r = self.where_(&negative, &neg_t, &t)?;
        let is_zero = self.eq(a, &zero)?;
        self.where_(&is_zero, &zero, &r)
    }

    /// The count of leading zero bits of positive `i32` values (binary search).
    pub fn leading_zeros(&mut self, x: &Lazy) -> R {
        let mut v = self.cast(x, DType::I64);
        let mut n = self.int_const(0, DType::I64, x.shape());
        for s in [16, 8, 4, 2, 1] {
            let limit = self.int_const((1i64 << (32 - s)) - 1, DType::I64, x.shape());
            let small = self.le(&v, &limit)?;
            let bump = self.int_scalar(BinaryOp::Add, &n, s)?;
            n = self.where_(&small, &bump, &n)?;
            let shifted = self.int_scalar(BinaryOp::Shl, &v, s)?;
            v = self.where_(&small, &shifted, &v)?;
        }
        Ok(self.cast(&n, DType::I32))
    }

    /// TFLM's int8 softmax over the last axis (its reference kernel): `x` int8 with the
    /// multiplier and left shift of `PreprocessSoftmaxScaling(beta, s_in, 5)` and `diff_min`;
    /// out of type `out` (int8 with zero point −128 and scale 1/256, or int16 with −32768 and
    /// 1/65536).
    pub fn softmax_int8(
        &mut self,
        x: &Lazy,
        (multiplier, left_shift, diff_min): (i32, i32, i32),
        out: DType,
    ) -> R {
        let bits = i64::try_from(out.scalar.size() * 8).unwrap_or(8);
        let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
        let rank = x.shape().len();
        let ax = rank - 1;
        let xi = self.cast(x, DType::I32);
        let max = self.reduce(ReduceOp::Max, &xi, &[ax])?;
        let diff = self.binary(BinaryOp::Sub, &xi, &max)?;
        let min = self.int_const(i64::from(diff_min), DType::I32, x.shape());
        let below = self.binary(BinaryOp::CmpLt, &diff, &min)?;
        let scaled = self.int_scalar(BinaryOp::Mul, &diff, 1i64 << left_shift)?;
        let z = self.doubling_high_mul_const(&scaled, i64::from(multiplier))?;
        let e = self.exp_on_negative_values(&z, 5)?;
        let term = self.rounding_divide_by_pot(&e, 12)?;
        let zero = self.int_const(0, DType::I32, x.shape());
        let term = self.where_(&below, &zero, &term)?;
        let sum = self.reduce(ReduceOp::Sum, &term, &[ax])?;
        // GetReciprocal(sum, 12): the sum scaled to [1, 2), its reciprocal, and the bits over 1.
        let lz = self.leading_zeros(&sum)?;
        let bits_over_unit = self.int_scalar(BinaryOp::Sub, &lz, 12)?;
        let bits_over_unit = self.neg(&bits_over_unit)?;
        let sum64 = self.cast(&sum, DType::I64);
        let lz64 = self.cast(&lz, DType::I64);
        let shifted = self.binary(BinaryOp::Shl, &sum64, &lz64)?;
        let shifted = self.int_scalar(BinaryOp::Sub, &shifted, 1 << 31)?;
        let shifted = self.cast(&shifted, DType::I32);
        let scale = self.one_over_one_plus_x(&shifted)?;
        let scale = scale.expand(x.shape())?;
        let p = self.doubling_high_mul(&scale, &e)?;
        let exponent = self.int_scalar(BinaryOp::Add, &bits_over_unit, 31 - bits)?;
        let exponent = exponent.expand(x.shape())?;
        let y = self.rounding_divide_by_pot_var(&p, &exponent)?;
        let y = self.int_scalar(BinaryOp::Sub, &y, -lo)?;
        let y = self.clamp_int(&y, lo, hi)?;
        let floor = self.int_const(lo, DType::I32, x.shape());
        let y = self.where_(&below, &floor, &y)?;
        Ok(self.cast(&y, out))
    }
}

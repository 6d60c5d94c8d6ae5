//! Int8 `LOG_SOFTMAX` as TFLite Micro's reference kernel computes it, and the fixed-point
//! logarithm it takes of the row's sum of exponentials (TFLite's
//! `log_x_for_x_greater_than_or_equal_to_1`), as graph ops on `i32` raw values (see
//! [`super::fixed`] for the conventions).
//!
//! The logarithm splits `x = 2^k · r` with `r` normalised twice (by the headroom of `x` and of
//! `x · √½`, keeping the smaller mantissa and the larger exponent, each adjusted by ¼), then
//! `log r` from a rational approximation around `2^-¼`: `k · log 2 + num / (1 + denom)`.

use super::{Graph, GraphError, Lazy};
use crate::dtype::DType;
use crate::graph::quant::{Multipliers, QuantMultiplier};
use crate::ops::{BinaryOp, ReduceOp};

type R = Result<Lazy, GraphError>;

/// Q0.31 constants: `log 2`, `√½`, `2^-¼` and the coefficients of the rational approximation.
const LOG_2: i64 = 1_488_522_236;
const SQRT_HALF: i64 = 1_518_500_250;
const SQRT_SQRT_HALF: i64 = 1_805_811_301;
const ALPHA_N: i64 = 117_049_297;
const ALPHA_D: i64 = 127_690_142;
const ALPHA_I: i64 = 1_057_819_769;
const ALPHA_F: i64 = 638_450_708;

impl Graph {
    /// `x · 2^e` saturated to `i32`, for a per-element `e` in `0..=31`.
    fn saturating_shift_left_var(&mut self, x: &Lazy, e: &Lazy) -> R {
        let (x64, e64) = (self.cast(x, DType::I64), self.cast(e, DType::I64));
        let s = self.binary(BinaryOp::Shl, &x64, &e64)?;
        let s = self.clamp_int(&s, i64::from(i32::MIN), i64::from(i32::MAX))?;
        Ok(self.cast(&s, DType::I32))
    }

    /// `a + c` for a constant `c`, saturated to `i32`.
    fn saturating_add_const(&mut self, a: &Lazy, c: i64) -> R {
        let a64 = self.cast(a, DType::I64);
        let s = self.int_scalar(BinaryOp::Add, &a64, c)?;
        let s = self.clamp_int(&s, i64::from(i32::MIN), i64::from(i32::MAX))?;
        Ok(self.cast(&s, DType::I32))
    }

    /// gemmlowp's `RoundingHalfSum(a, c)`: `(a + c ± 1) / 2`, the sign of the sum's.
    fn rounding_half_sum_const(&mut self, a: &Lazy, c: i64) -> R {
        let a64 = self.cast(a, DType::I64);
        let s = self.int_scalar(BinaryOp::Add, &a64, c)?;
        let zero = self.int_const(0, DType::I64, a.shape());
        let negative = self.binary(BinaryOp::CmpLt, &s, &zero)?;
        let plus = self.int_scalar(BinaryOp::Add, &s, 1)?;
        let minus = self.int_scalar(BinaryOp::Sub, &s, 1)?;
        let s = self.where_(&negative, &minus, &plus)?;
        let h = self.int_scalar(BinaryOp::Div, &s, 2)?;
        Ok(self.cast(&h, DType::I32))
    }

    /// The exponent part of the logarithm of the positive `x` with `in_bits` integer bits, as
    /// a value with `acc_bits` integer bits, and the mantissa (Q0.31), for one normalisation:
    /// `x · √½` when `halved`.
    fn log_split(&mut self, x: &Lazy, in_bits: u32, acc_bits: u32, halved: bool) -> R2 {
        let quarter = 1i64 << (29 - acc_bits);
        let (r, pow) = if halved {
            let z = self.doubling_high_mul_const(x, SQRT_HALF)?;
            let lz = self.leading_zeros(&z)?;
            let head = self.int_scalar(BinaryOp::Sub, &lz, 1)?;
            (self.saturating_shift_left_var(x, &head)?, head)
        } else {
            let lz = self.leading_zeros(x)?;
            let head = self.int_scalar(BinaryOp::Sub, &lz, 1)?;
            let r = self.saturating_shift_left_var(x, &head)?;
            let r = self.doubling_high_mul_const(&r, SQRT_HALF)?;
            (self.saturating_shift_left(&r, 1)?, lz)
        };
        let bits = self.int_const(i64::from(in_bits), DType::I32, x.shape());
        let k = self.binary(BinaryOp::Sub, &bits, &pow)?;
        let k = self.saturating_shift_left(&k, 31 - acc_bits)?;
        let adj = if halved { -quarter } else { quarter };
        Ok((r, self.saturating_add_const(&k, adj)?))
    }

    /// `log x` for a positive `x` (at least 1) with `in_bits` integer bits, with `out_bits`.
    pub fn fixed_log_ge_1(&mut self, x: &Lazy, in_bits: u32, out_bits: u32) -> R {
        let acc_bits = out_bits + 1;
        let (r_a, k_a) = self.log_split(x, in_bits, acc_bits, false)?;
        let (r_b, k_b) = self.log_split(x, in_bits, acc_bits, true)?;
        let a_smaller = self.binary(BinaryOp::CmpLt, &r_a, &r_b)?;
        let r = self.where_(&a_smaller, &r_a, &r_b)?;
        let k = self.binary(BinaryOp::Max, &k_a, &k_b)?;
        let p = self.rounding_half_sum_const(&r, SQRT_SQRT_HALF)?;
        let q = self.int_scalar(BinaryOp::Sub, &r, SQRT_SQRT_HALF)?;
        let q = self.binary(BinaryOp::Add, &q, &q)?;
        let sq = self.doubling_high_mul(&q, &q)?;
        let qr = self.doubling_high_mul(&q, &r)?;
        let q3 = self.doubling_high_mul(&q, &sq)?;
        let q3 = self.doubling_high_mul_const(&q3, ALPHA_N)?;
        let num = self.binary(BinaryOp::Add, &qr, &q3)?;
        let inner = self.int_scalar(BinaryOp::Add, &q, ALPHA_I)?;
        let d_sq = self.doubling_high_mul_const(&sq, ALPHA_D)?;
        let inner = self.binary(BinaryOp::Add, &inner, &d_sq)?;
        let den = self.doubling_high_mul(&p, &inner)?;
        let f_q = self.doubling_high_mul_const(&q, ALPHA_F)?;
        let den = self.binary(BinaryOp::Add, &den, &f_q)?;
        let recip = self.one_over_one_plus_x(&den)?;
        let num = self.rounding_divide_by_pot(&num, acc_bits)?;
        let frac = self.doubling_high_mul(&num, &recip)?;
        let whole = self.doubling_high_mul_const(&k, LOG_2)?;
        let sum = self.binary(BinaryOp::Add, &whole, &frac)?;
        self.saturating_shift_left(&sum, acc_bits - out_bits)
    }

    /// TFLM's int8 log-softmax over the last axis: `x` int8 with the input multiplier (a left
    /// shift ≥ 1) and `diff_min` of `PreprocessLogSoftmaxScalingExp(1, s_in, 5)` and its
    /// reverse scaling multiplier; int8 out with zero point 127 and scale 16/256.
    pub fn log_softmax_int8(
        &mut self,
        x: &Lazy,
        input: QuantMultiplier,
        diff_min: i32,
        reverse: QuantMultiplier,
    ) -> R {
        let ax = x.shape().len() - 1;
        let xi = self.cast(x, DType::I32);
        let max = self.reduce(ReduceOp::Max, &xi, &[ax])?;
        let diff = self.binary(BinaryOp::Sub, &xi, &max)?;
        // Differences below `diff_min − 1` count as it (none of them is kept): their scaled
        // values stay in `i32`.
        let floor = i64::from(diff_min) - 1;
        let diff = self.int_scalar(BinaryOp::Max, &diff, floor)?;
        let min = self.int_const(i64::from(diff_min), DType::I32, x.shape());
        let below = self.binary(BinaryOp::CmpLt, &diff, &min)?;
        let scaled = self.int_scalar(BinaryOp::Mul, &diff, 1i64 << input.shift)?;
        let z = self.doubling_high_mul_const(&scaled, i64::from(input.multiplier))?;
        let e = self.exp_on_negative_values(&z, 5)?;
        let term = self.rounding_divide_by_pot(&e, 12)?;
        let zero = self.int_const(0, DType::I32, x.shape());
        let term = self.where_(&below, &zero, &term)?;
        let sum = self.reduce(ReduceOp::Sum, &term, &[ax])?;
        let log_sum = self.fixed_log_ge_1(&sum, 12, 5)?;
        let shifted = self.int_scalar(BinaryOp::Add, &log_sum, i64::from(i32::MIN))?;
        let adjusted = self.requantize(&shifted, &Multipliers::Tensor(reverse))?;
        let adjusted = self.int_scalar(BinaryOp::Max, &adjusted, floor)?;
        let keep = self.binary(BinaryOp::CmpLt, &adjusted.expand(x.shape())?, &diff)?;
        let z64 = self.cast(&z, DType::I64);
        let l64 = self.cast(&log_sum.expand(x.shape())?, DType::I64);
        let d = self.binary(BinaryOp::Sub, &z64, &l64)?;
        let out = self.rounding_divide_by_pot(&d, 31 - 5 - 4)?;
        let out = self.int_scalar(BinaryOp::Add, &out, 127)?;
        let out = self.clamp_int(&out, -128, 127)?;
        let low = self.int_const(-128, DType::I32, x.shape());
        let out = self.where_(&keep, &out, &low)?;
        Ok(self.cast(&out, DType::I8))
    }
}

type R2 = Result<(Lazy, Lazy), GraphError>;

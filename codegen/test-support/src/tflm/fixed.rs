//! Fixed-point primitives (gemmlowp), requantization and multipliers.

// ---------------------------------------------------------------------------------------------
// Fixed-point primitives (gemmlowp) and requantization (common.h / common.cc)
// ---------------------------------------------------------------------------------------------

/// gemmlowp's `SaturatingRoundingDoublingHighMul` on int32: `round(a * b / 2^31)`, where the
/// rounding adds 0.5 and truncates toward zero (so a negative half rounds toward zero and a
/// positive half away from it); `INT32_MIN * INT32_MIN` saturates to `INT32_MAX`.
pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    let product = a as i64 * b as i64;
    let nudge: i64 = if product >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // Rust's `/` on integers truncates toward zero, like C's.
    ((product + nudge) / (1i64 << 31)) as i32
}

/// gemmlowp's `RoundingDivideByPOT`: an arithmetic shift right by `exponent` (0..=31) that rounds
/// to nearest, halves away from zero.
pub fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    assert!(
        (0..=31).contains(&exponent),
        "RoundingDivideByPOT exponent {exponent}"
    );
    let mask = ((1i64 << exponent) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + if x < 0 { 1 } else { 0 };
    (x >> exponent) + if remainder > threshold { 1 } else { 0 }
}

/// gemmlowp's `SaturatingRoundingMultiplyByPOT`: for a positive exponent a left shift that
/// saturates to the int32 range, for a negative one a rounding right shift.
pub fn saturating_rounding_multiply_by_pot(x: i32, exponent: i32) -> i32 {
    if exponent > 0 {
        assert!(exponent <= 31);
        let threshold = ((1i64 << (31 - exponent)) - 1) as i32;
        if x > threshold {
            i32::MAX
        } else if x < -threshold {
            i32::MIN
        } else {
            x << exponent
        }
    } else if exponent < 0 {
        rounding_divide_by_pot(x, -exponent)
    } else {
        x
    }
}

/// gemmlowp's `RoundingHalfSum` on int32: `(a + b) / 2`, rounded half away from zero.
pub fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = a as i64 + b as i64;
    let sign: i64 = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

/// TFLM's `MultiplyByQuantizedMultiplier(int32_t, int32_t, int)`, double-rounding form:
/// `RDBPOT(SRDHM(x * 2^max(shift, 0), multiplier), max(-shift, 0))`.
pub fn multiply_by_quantized_multiplier(x: i32, multiplier: i32, shift: i32) -> i32 {
    let left_shift = if shift > 0 { shift } else { 0 };
    let right_shift = if shift > 0 { 0 } else { -shift };
    assert!(left_shift <= 31, "left shift {left_shift}");
    let shifted = x.wrapping_mul(1i32 << left_shift);
    rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(shifted, multiplier),
        right_shift,
    )
}

/// TFLM's `MultiplyByQuantizedMultiplier(int64_t, int32_t, int)` (used with int64
/// accumulators): the multiplier is first rounded to 16 bits, then a single rounding shift.
/// `(x * ((m + 2^15) >> 16) + 2^(14 - shift)) >> (15 - shift)`, truncated to int32.
pub fn multiply_by_quantized_multiplier_i64(x: i64, multiplier: i32, shift: i32) -> i32 {
    assert!(multiplier >= 0, "negative multiplier {multiplier}");
    assert!((-31..8).contains(&shift), "shift {shift} outside -31..8");
    let reduced_multiplier: i64 = if multiplier < 0x7FFF_0000 {
        ((multiplier + (1 << 15)) >> 16) as i64
    } else {
        0x7FFF
    };
    let total_shift = 15 - shift;
    let rounded = x
        .wrapping_mul(reduced_multiplier)
        .wrapping_add(1i64 << (total_shift - 1));
    (rounded >> total_shift) as i32
}

/// `MultiplyByQuantizedMultiplierGreaterThanOne` (double rounding): `SRDHM(x * 2^left_shift, m)`.
/// The same value as [`multiply_by_quantized_multiplier`] for `left_shift >= 0`.
pub fn multiply_by_quantized_multiplier_greater_than_one(
    x: i32,
    multiplier: i32,
    left_shift: i32,
) -> i32 {
    assert!((0..=31).contains(&left_shift));
    saturating_rounding_doubling_high_mul(x.wrapping_mul(1i32 << left_shift), multiplier)
}

/// `MultiplyByQuantizedMultiplierSmallerThanOneExp` (double rounding):
/// `RDBPOT(SRDHM(x, m), -left_shift)`. The same value as [`multiply_by_quantized_multiplier`]
/// for `left_shift <= 0`.
pub fn multiply_by_quantized_multiplier_smaller_than_one_exp(
    x: i32,
    multiplier: i32,
    left_shift: i32,
) -> i32 {
    rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(x, multiplier),
        -left_shift,
    )
}

// ---------------------------------------------------------------------------------------------
// Multipliers (quantization_util.cc)
// ---------------------------------------------------------------------------------------------

/// C's `frexp`: `x = q * 2^e` with `0.5 <= |q| < 1`; zero, infinities and NaN give `(x, 0)`.
pub fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exponent_field = ((bits >> 52) & 0x7ff) as i32;
    if exponent_field == 0 {
        // Subnormal: scale into the normal range first (exact).
        let (q, e) = frexp(x * 2f64.powi(64));
        return (q, e - 64);
    }
    let q_bits = (bits & !(0x7ffu64 << 52)) | (1022u64 << 52);
    (f64::from_bits(q_bits), exponent_field - 1022)
}

/// TFLM's `QuantizeMultiplier`: `m ≈ multiplier * 2^(shift - 31)`, `multiplier` in
/// `[2^30, 2^31)`. `round(frexp(m).q * 2^31)` (halves away from zero); a rounded `2^31` is halved
/// and the shift bumped; a shift below -31 flushes to `(0, 0)`; `m == 0` gives `(0, 0)`.
pub fn quantize_multiplier(m: f64) -> (i32, i32) {
    if m == 0.0 {
        return (0, 0);
    }
    let (q, mut shift) = frexp(m);
    let mut q_fixed = (q * (1i64 << 31) as f64).round() as i64;
    assert!(q_fixed <= 1i64 << 31, "QuantizeMultiplier({m})");
    if q_fixed == 1i64 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    assert!(q_fixed <= i32::MAX as i64);
    if shift < -31 {
        shift = 0;
        q_fixed = 0;
    }
    (q_fixed as i32, shift)
}

/// TFLM's `QuantizeMultiplierSmallerThanOneExp`: [`quantize_multiplier`] with the checks
/// `0 < m < 1` and `shift <= 0`. Returns `(multiplier, left_shift)`, `left_shift <= 0`.
pub fn quantize_multiplier_smaller_than_one_exp(m: f64) -> (i32, i32) {
    assert!(
        m < 1.0 && m > 0.0,
        "QuantizeMultiplierSmallerThanOneExp({m})"
    );
    let (multiplier, shift) = quantize_multiplier(m);
    assert!(shift <= 0);
    (multiplier, shift)
}

/// TFLM's `QuantizeMultiplierGreaterThanOne`: [`quantize_multiplier`] with the checks `m > 1`
/// and `shift >= 0`. Returns `(multiplier, left_shift)`.
pub fn quantize_multiplier_greater_than_one(m: f64) -> (i32, i32) {
    assert!(m > 1.0, "QuantizeMultiplierGreaterThanOne({m})");
    let (multiplier, shift) = quantize_multiplier(m);
    assert!(shift >= 0);
    (multiplier, shift)
}

/// TFLM's `CalculateInputRadius` (float path): `floor((2^ib - 1) * 2^(tsb - ib) / 2^left_shift)`
/// in double, the largest input difference that does not overflow once rescaled.
pub fn calculate_input_radius(
    input_integer_bits: i32,
    input_left_shift: i32,
    total_signed_bits: i32,
) -> i32 {
    assert!(
        (0..63).contains(&input_left_shift),
        "input_left_shift {input_left_shift}"
    );
    let max_input_rescaled = 1.0
        * ((1i64 << input_integer_bits) - 1) as f64
        * (1i64 << (total_signed_bits - input_integer_bits)) as f64
        / (1i64 << input_left_shift) as f64;
    max_input_rescaled.floor() as i32
}

/// TFLM's `PreprocessSoftmaxScaling`: `min(beta * s_in * 2^(31 - ib), 2^31 - 1)` in double, then
/// [`quantize_multiplier_greater_than_one`]. Returns `(multiplier, left_shift)`.
pub fn preprocess_softmax_scaling(
    beta: f64,
    input_scale: f64,
    input_integer_bits: i32,
) -> (i32, i32) {
    let max_real_multiplier = (1i64 << 31) as f64 - 1.0;
    let real = beta * input_scale * (1i64 << (31 - input_integer_bits)) as f64;
    quantize_multiplier_greater_than_one(real.min(max_real_multiplier))
}

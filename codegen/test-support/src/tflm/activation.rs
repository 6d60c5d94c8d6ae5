//! gemmlowp's fixed-point functions and the activations.

use super::*;

// ---------------------------------------------------------------------------------------------
// gemmlowp fixed-point functions (raw int32 values; `integer_bits` is the Q format's m)
// ---------------------------------------------------------------------------------------------

/// gemmlowp's `exp_on_interval_between_negative_one_quarter_and_0_excl` on Q0.31: a Taylor
/// expansion of exp around -1/8, for `a` in [-1/4, 0).
pub fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    const EXP_MINUS_ONE_EIGHTH: i32 = 1895147668; // exp(-1/8) in Q0.31
    const ONE_THIRD: i32 = 715827883; // 1/3 in Q0.31
    let srdhm = saturating_rounding_doubling_high_mul;
    let x = a.wrapping_add(1 << 28); // a + 1/8
    let x2 = srdhm(x, x);
    let x3 = srdhm(x2, x);
    let x4 = srdhm(x2, x2);
    let x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2);
    let x4_over_24_plus_x3_over_6_plus_x2_over_2 = saturating_rounding_multiply_by_pot(
        srdhm(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2),
        -1,
    );
    EXP_MINUS_ONE_EIGHTH.wrapping_add(srdhm(
        EXP_MINUS_ONE_EIGHTH,
        x.wrapping_add(x4_over_24_plus_x3_over_6_plus_x2_over_2),
    ))
}

/// gemmlowp's `exp_on_negative_values`: exp of a Q`integer_bits` value `a <= 0`, as Q0.31. The
/// input is split into its residue in [-1/4, 0) (evaluated by the Taylor expansion) and the
/// multiples of powers of two from 1/4 up, applied as constant factors exp(-2^k).
pub fn exp_on_negative_values(a: i32, integer_bits: i32) -> i32 {
    assert!((0..31).contains(&integer_bits));
    let fractional_bits = 31 - integer_bits;
    let one_quarter: i32 = 1 << (fractional_bits - 2);
    let mask = one_quarter - 1;
    let a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_rounding_multiply_by_pot(a_mod_quarter_minus_one_quarter, integer_bits),
    );
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    // (k, exp(-2^k) in Q0.31)
    const FACTORS: [(i32, i32); 7] = [
        (-2, 1672461947),
        (-1, 1302514674),
        (0, 790015084),
        (1, 290630308),
        (2, 39332535),
        (3, 720401),
        (4, 242),
    ];
    for (k, factor) in FACTORS {
        if integer_bits > k {
            let bit = fractional_bits + k;
            if remainder & (1 << bit) != 0 {
                result = saturating_rounding_doubling_high_mul(result, factor);
            }
        }
    }
    if integer_bits > 5 {
        // Below -32 the result is zero.
        let clamp = -(1i32 << (36 - integer_bits));
        if a < clamp {
            result = 0;
        }
    }
    if a == 0 {
        result = i32::MAX;
    }
    result
}

/// One Newton-Raphson reciprocal as gemmlowp runs it: returns x ≈ 1 / half_denominator in Q2.29
/// after three iterations from 48/17 − 32/17 · d.
pub(super) fn newton_raphson_reciprocal_q2(half_denominator: i32) -> i32 {
    const FORTY_EIGHT_OVER_17: i32 = 1515870810; // Q2.29
    const MINUS_32_OVER_17: i32 = -1010580540; // Q2.29
    const ONE_Q2: i32 = 1 << 29;
    let srdhm = saturating_rounding_doubling_high_mul;
    let mut x = FORTY_EIGHT_OVER_17.wrapping_add(srdhm(half_denominator, MINUS_32_OVER_17));
    for _ in 0..3 {
        let half_denominator_times_x = srdhm(half_denominator, x);
        let one_minus_half_denominator_times_x = ONE_Q2.wrapping_sub(half_denominator_times_x);
        // Q2 * Q2 is Q4; back to Q2 by a saturating shift left of 2.
        let correction =
            saturating_rounding_multiply_by_pot(srdhm(x, one_minus_half_denominator_times_x), 2);
        x = x.wrapping_add(correction);
    }
    x
}

/// gemmlowp's `one_over_one_plus_x_for_x_in_0_1` on Q0.31: 1 / (1 + a) for a in [0, 1).
pub fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let half_denominator = rounding_half_sum(a, i32::MAX);
    let x = newton_raphson_reciprocal_q2(half_denominator);
    // x / 2 viewed as Q1.30, then rescaled to Q0.31.
    saturating_rounding_multiply_by_pot(x, 1)
}

/// gemmlowp's `one_minus_x_over_one_plus_x_for_x_in_0_1` on Q0.31: (1 − a) / (1 + a).
pub fn one_minus_x_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let half_denominator = rounding_half_sum(a, i32::MAX);
    let x = newton_raphson_reciprocal_q2(half_denominator);
    saturating_rounding_multiply_by_pot(x.wrapping_sub(1 << 29), 2)
}

/// gemmlowp's `logistic` of a Q`integer_bits` value, as Q0.31 (0 gives exactly one half).
pub fn fixedpoint_logistic(a: i32, integer_bits: i32) -> i32 {
    let abs_input = if a > 0 { a } else { a.wrapping_neg() };
    let result_if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(
        abs_input.wrapping_neg(),
        integer_bits,
    ));
    let result_if_negative = i32::MAX.wrapping_sub(result_if_positive);
    if a == 0 {
        1 << 30
    } else if a > 0 {
        result_if_positive
    } else {
        result_if_negative
    }
}

/// gemmlowp's `tanh` of a Q`integer_bits` value, as Q0.31: (1 − e^(−2|a|)) / (1 + e^(−2|a|))
/// with the sign of `a` (0 gives 0).
pub fn fixedpoint_tanh(a: i32, integer_bits: i32) -> i32 {
    let non_positive = if a < 0 { a } else { a.wrapping_neg() };
    // exp(2n) is exp of the same raw value read with one more integer bit.
    let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(
        non_positive,
        integer_bits + 1,
    ));
    if a == 0 {
        0
    } else if a < 0 {
        t.wrapping_neg()
    } else {
        t
    }
}

/// TFLM's `GetReciprocal`: the reciprocal of a positive Q`integer_digits` value as a Q0.31
/// `shifted_scale` and the power of two it is off by, `num_bits_over_unit`.
pub fn get_reciprocal(x: i32, integer_digits: i32) -> (i32, i32) {
    assert!(x > 0, "reciprocal of {x}");
    let headroom_plus_one = (x as u32).leading_zeros() as i32;
    let num_bits_over_unit = integer_digits - headroom_plus_one;
    let shifted_sum_minus_one = ((x as u32) << headroom_plus_one).wrapping_sub(1u32 << 31) as i32;
    (
        one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one),
        num_bits_over_unit,
    )
}

// ---------------------------------------------------------------------------------------------
// Activations
// ---------------------------------------------------------------------------------------------

/// Int8 → int8 SOFTMAX along rows of `depth` (`reference_ops::Softmax`, gemmlowp path, output
/// zero point -128 and scale 1/256 as TFLM requires). Per row: `d = x − max`; where
/// `d >= diff_min`, `z = SRDHM(d << left_shift, M)` (Q5.26) and `e = exp(z)` (Q0.31);
/// `sum = Σ RDBPOT(e, 12)` (Q12.19); `out = RDBPOT(SRDHM(1/sum, e), bits_over_unit + 23) − 128`,
/// clamped; below `diff_min` the output is -128.
pub fn softmax(input: &[i8], depth: usize, input_scale: f32, beta: f32) -> Vec<i8> {
    assert!(
        depth > 0 && input.len().is_multiple_of(depth),
        "input length"
    );
    let params = softmax_params(beta, input_scale);
    let scaled_diff = |diff: i32| {
        multiply_by_quantized_multiplier_greater_than_one(
            diff,
            params.input_multiplier,
            params.input_left_shift,
        )
    };
    let mut output = Vec::with_capacity(input.len());
    for row in input.chunks(depth) {
        let mut max_in_row = i8::MIN as i32;
        for &x in row {
            max_in_row = max_in_row.max(x as i32);
        }
        let mut sum_of_exps: i32 = 0; // Q12.19
        for &x in row {
            let diff = x as i32 - max_in_row;
            if diff >= params.diff_min {
                let exp = exp_on_negative_values(scaled_diff(diff), 5);
                sum_of_exps = sum_of_exps.wrapping_add(rounding_divide_by_pot(exp, 12));
            }
        }
        let (shifted_scale, num_bits_over_unit) = get_reciprocal(sum_of_exps, 12);
        let exponent = num_bits_over_unit + 31 - 8;
        assert!((0..=31).contains(&exponent), "softmax exponent {exponent}");
        for &x in row {
            let diff = x as i32 - max_in_row;
            let value = if diff >= params.diff_min {
                let exp = exp_on_negative_values(scaled_diff(diff), 5);
                let unsat = rounding_divide_by_pot(
                    saturating_rounding_doubling_high_mul(shifted_scale, exp),
                    exponent,
                );
                clamp_to(unsat - 128, -128, 127)
            } else {
                -128
            };
            output.push(value as i8);
        }
    }
    output
}

/// Int8 LOGISTIC (`reference_integer_ops::Logistic`). `x − zp_in` at or beyond ±radius
/// saturates to -128 / 127; otherwise it is rescaled to Q4.27 by [`sigmoid_input_params`],
/// passed through [`fixedpoint_logistic`] and `RDBPOT(…, 23) − 128`, clamped. The output is
/// produced for zero point -128 and scale 1/256 (TFLM checks only the zero point).
pub fn logistic(input: &[i8], input_quant: Quant) -> Vec<i8> {
    let params = sigmoid_input_params(input_quant.scale);
    let radius = params.input_range_radius;
    let mut output = Vec::with_capacity(input.len());
    for &x in input {
        let centred = x as i32 - input_quant.zero_point;
        let value = if centred <= -radius {
            -128
        } else if centred >= radius {
            127
        } else {
            let in_q4 = multiply_by_quantized_multiplier(
                centred,
                params.input_multiplier,
                params.input_left_shift,
            );
            let out_q0 = fixedpoint_logistic(in_q4, 4);
            clamp_to(rounding_divide_by_pot(out_q0, 31 - 8) - 128, -128, 127)
        };
        output.push(value as i8);
    }
    output
}

/// Int8 TANH (`reference_integer_ops::Tanh`): as [`logistic`] with [`fixedpoint_tanh`] and
/// `RDBPOT(…, 24)`, no offset; the output is produced for zero point 0 and scale 1/128 (TFLM
/// checks neither).
pub fn tanh(input: &[i8], input_quant: Quant) -> Vec<i8> {
    let params = sigmoid_input_params(input_quant.scale);
    let radius = params.input_range_radius;
    let mut output = Vec::with_capacity(input.len());
    for &x in input {
        let centred = x as i32 - input_quant.zero_point;
        let value = if centred <= -radius {
            -128
        } else if centred >= radius {
            127
        } else {
            let in_q4 = multiply_by_quantized_multiplier(
                centred,
                params.input_multiplier,
                params.input_left_shift,
            );
            let out_q0 = fixedpoint_tanh(in_q4, 4);
            clamp_to(rounding_divide_by_pot(out_q0, 31 - 7), -128, 127)
        };
        output.push(value as i8);
    }
    output
}

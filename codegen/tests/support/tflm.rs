//! A deliberately naive, scalar model of TensorFlow Lite Micro's integer arithmetic, used as the
//! oracle of property tests.
//!
//! Everything here follows TFLM's reference kernels (`tensorflow/lite/kernels/internal/reference`)
//! and their set-up code (`tensorflow/lite/micro/kernels/*_common.cc`,
//! `tensorflow/lite/kernels/kernel_util.cc`, `quantization_util.cc`) at tflite-micro commit
//! 90b983c2, built as TFLM builds it: double rounding (no `TFLITE_SINGLE_ROUNDING`), no
//! `TFLITE_EMULATE_FLOAT`. The fixed-point exp / logistic / tanh follow gemmlowp's
//! `fixedpoint/fixedpoint.h` (the 719139ce that TFLM pins).
//!
//! The code is plain loops over flat NHWC slices, written from the semantics and shared with no
//! other implementation. Where TFLM would fail a `TF_LITE_ENSURE` / `TFLITE_CHECK` (and refuse
//! the model), these functions panic. Where C++ leaves signed overflow undefined, the arithmetic
//! here wraps, as the host build of TFLM does in practice.

#![allow(dead_code)]

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

// ---------------------------------------------------------------------------------------------
// Quantization set-up as TFLM computes it (kernel_util.cc, micro/kernels/*_common.cc)
// ---------------------------------------------------------------------------------------------

/// Scale and zero point of a per-tensor quantized tensor, as a .tflite file stores them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quant {
    pub scale: f32,
    pub zero_point: i32,
}

impl Quant {
    /// A scale and zero point.
    pub fn new(scale: f32, zero_point: i32) -> Quant {
        Quant { scale, zero_point }
    }
}

/// A fused activation, as the builtin options give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    None,
    Relu,
    Relu6,
    ReluN1To1,
}

/// TFLM's `CalculateActivationRangeQuantized`: the clamp bounds of a fused activation, each
/// bound `zp + round_half_away(f / scale)` computed in float, intersected with `[qmin, qmax]`.
pub fn calculate_activation_range_quantized(
    activation: Activation,
    scale: f32,
    zero_point: i32,
    qmin: i32,
    qmax: i32,
) -> (i32, i32) {
    let quantize = |f: f32| -> i32 {
        let rounded = (f / scale).round();
        let fits = rounded >= i32::MIN as f32 && rounded <= i32::MAX as f32;
        assert!(fits, "activation bound {f} / {scale} overflows int32");
        zero_point.wrapping_add(rounded as i32)
    };
    match activation {
        Activation::None => (qmin, qmax),
        Activation::Relu => (qmin.max(quantize(0.0)), qmax),
        Activation::Relu6 => (qmin.max(quantize(0.0)), qmax.min(quantize(6.0))),
        Activation::ReluN1To1 => (qmin.max(quantize(-1.0)), qmax.min(quantize(1.0))),
    }
}

/// The effective output scale of conv, depthwise conv and per-channel fully connected for one
/// channel: `(double)s_in * (double)s_w / (double)s_out`.
pub fn conv_effective_scale(input_scale: f32, filter_scale: f32, output_scale: f32) -> f64 {
    input_scale as f64 * filter_scale as f64 / output_scale as f64
}

/// `(multiplier, shift)` per output channel for conv / depthwise (TFLM's
/// `PopulateConvolutionQuantizationParams`): a single filter scale is broadcast to every channel.
pub fn conv_per_channel_multipliers(
    input_scale: f32,
    filter_scales: &[f32],
    output_scale: f32,
    num_channels: usize,
) -> Vec<(i32, i32)> {
    let per_channel = filter_scales.len() > 1;
    if per_channel {
        assert_eq!(filter_scales.len(), num_channels, "per-channel scale count");
    } else {
        assert_eq!(filter_scales.len(), 1, "filter needs a scale");
    }
    let mut multipliers = Vec::with_capacity(num_channels);
    for channel in 0..num_channels {
        let filter_scale = if per_channel {
            filter_scales[channel]
        } else {
            filter_scales[0]
        };
        let effective = conv_effective_scale(input_scale, filter_scale, output_scale);
        multipliers.push(quantize_multiplier(effective));
    }
    multipliers
}

/// The effective scale of per-tensor fully connected (TFLM's `GetQuantizedConvolutionMultipler`):
/// `s_in * s_w` multiplied in **float**, then widened and divided by `s_out` in double.
pub fn fully_connected_per_tensor_scale(
    input_scale: f32,
    filter_scale: f32,
    output_scale: f32,
) -> f64 {
    let input_product_scale = (input_scale * filter_scale) as f64;
    assert!(input_product_scale >= 0.0);
    input_product_scale / output_scale as f64
}

/// The multipliers of quantized ADD / SUB (`ArithmeticParams`): each input is shifted left by
/// `left_shift`, scaled by its multiplier, the sum scaled by the output multiplier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddSubParams {
    pub left_shift: i32,
    pub input1_multiplier: i32,
    pub input1_shift: i32,
    pub input2_multiplier: i32,
    pub input2_shift: i32,
    pub output_multiplier: i32,
    pub output_shift: i32,
}

/// ADD's multipliers (`CalculateOpDataAdd`): `twice_max = 2 * (double)max(s1, s2)`,
/// `s1 / twice_max`, `s2 / twice_max`, `twice_max / (2^left_shift * (double)s_out)`, all in
/// double, each through [`quantize_multiplier_smaller_than_one_exp`]. `left_shift` is 20 for
/// int8, 15 for int16.
pub fn add_params(
    input1_scale: f32,
    input2_scale: f32,
    output_scale: f32,
    left_shift: i32,
) -> AddSubParams {
    let twice_max_input_scale = 2.0 * input1_scale.max(input2_scale) as f64;
    let real_input1_multiplier = input1_scale as f64 / twice_max_input_scale;
    let real_input2_multiplier = input2_scale as f64 / twice_max_input_scale;
    let real_output_multiplier =
        twice_max_input_scale / ((1i64 << left_shift) as f64 * output_scale as f64);
    let (input1_multiplier, input1_shift) =
        quantize_multiplier_smaller_than_one_exp(real_input1_multiplier);
    let (input2_multiplier, input2_shift) =
        quantize_multiplier_smaller_than_one_exp(real_input2_multiplier);
    let (output_multiplier, output_shift) =
        quantize_multiplier_smaller_than_one_exp(real_output_multiplier);
    AddSubParams {
        left_shift,
        input1_multiplier,
        input1_shift,
        input2_multiplier,
        input2_shift,
        output_multiplier,
        output_shift,
    }
}

/// SUB's multipliers (`CalculateOpDataSub`): the same formulas as [`add_params`] but evaluated
/// in **float** (`twice_max`, both divisions and `2^left_shift * s_out`), each result widened to
/// double only before [`quantize_multiplier_smaller_than_one_exp`].
pub fn sub_params(
    input1_scale: f32,
    input2_scale: f32,
    output_scale: f32,
    left_shift: i32,
) -> AddSubParams {
    let twice_max_input_scale: f32 = 2.0 * input1_scale.max(input2_scale);
    let real_input1_multiplier = (input1_scale / twice_max_input_scale) as f64;
    let real_input2_multiplier = (input2_scale / twice_max_input_scale) as f64;
    let real_output_multiplier =
        (twice_max_input_scale / ((1i32 << left_shift) as f32 * output_scale)) as f64;
    let (input1_multiplier, input1_shift) =
        quantize_multiplier_smaller_than_one_exp(real_input1_multiplier);
    let (input2_multiplier, input2_shift) =
        quantize_multiplier_smaller_than_one_exp(real_input2_multiplier);
    let (output_multiplier, output_shift) =
        quantize_multiplier_smaller_than_one_exp(real_output_multiplier);
    AddSubParams {
        left_shift,
        input1_multiplier,
        input1_shift,
        input2_multiplier,
        input2_shift,
        output_multiplier,
        output_shift,
    }
}

/// MUL's `(multiplier, shift)`: `(double)s1 * (double)s2 / (double)s_out` through
/// [`quantize_multiplier`].
pub fn mul_multiplier(input1_scale: f32, input2_scale: f32, output_scale: f32) -> (i32, i32) {
    quantize_multiplier(input1_scale as f64 * input2_scale as f64 / output_scale as f64)
}

/// The int8 softmax set-up (`CalculateSoftmaxParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxParams {
    pub input_multiplier: i32,
    pub input_left_shift: i32,
    /// Differences from the row maximum below this give output -128 (exp taken as 0).
    pub diff_min: i32,
}

/// The int8 softmax set-up: [`preprocess_softmax_scaling`] with 5 integer bits, and
/// `diff_min = -CalculateInputRadius(5, left_shift, 31)`.
pub fn softmax_params(beta: f32, input_scale: f32) -> SoftmaxParams {
    const SCALED_DIFF_INTEGER_BITS: i32 = 5;
    let (input_multiplier, input_left_shift) =
        preprocess_softmax_scaling(beta as f64, input_scale as f64, SCALED_DIFF_INTEGER_BITS);
    let diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, input_left_shift, 31);
    SoftmaxParams {
        input_multiplier,
        input_left_shift,
        diff_min,
    }
}

/// The int8 LOGISTIC / TANH input set-up (`logistic_common.cc`, `tanh.cc`, identical).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SigmoidInputParams {
    pub input_multiplier: i32,
    pub input_left_shift: i32,
    /// Inputs (minus zero point) at or beyond ±radius saturate.
    pub input_range_radius: i32,
}

/// The int8 LOGISTIC / TANH input set-up: `frexp((double)s_in * 2^27)` rounded to a Q31
/// multiplier **without** the `2^31` renormalisation of [`quantize_multiplier`], and
/// `radius = CalculateInputRadius(4, shift, 31)`.
pub fn sigmoid_input_params(input_scale: f32) -> SigmoidInputParams {
    const INPUT_INTEGER_BITS: i32 = 4;
    let real = input_scale as f64 * (1i64 << (31 - INPUT_INTEGER_BITS)) as f64;
    let (q, input_left_shift) = frexp(real);
    let rounded = (q * (1i64 << 31) as f64).round();
    // A float scale has at most 24 significant bits, so `rounded` stays below 2^31.
    assert!(
        rounded < 2147483648.0,
        "logistic input multiplier rounds to 2^31"
    );
    SigmoidInputParams {
        input_multiplier: rounded as i32,
        input_left_shift,
        input_range_radius: calculate_input_radius(INPUT_INTEGER_BITS, input_left_shift, 31),
    }
}

// ---------------------------------------------------------------------------------------------
// Padding (kernels/padding.h)
// ---------------------------------------------------------------------------------------------

/// SAME or VALID padding, as the builtin options give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    Same,
    Valid,
}

/// Output size and padding of a window op, as `ComputePaddingHeightWidth` computes them:
/// `height` / `width` are the padding before (top / left); the odd extra pixel, the `*_offset`,
/// goes after (bottom / right) and the kernels never read it explicitly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaddingValues {
    pub out_height: usize,
    pub out_width: usize,
    pub height: usize,
    pub width: usize,
    pub height_offset: usize,
    pub width_offset: usize,
}

fn effective_filter_size(filter_size: usize, dilation: usize) -> i64 {
    (filter_size as i64 - 1) * dilation as i64 + 1
}

fn compute_out_size(
    padding: Padding,
    image_size: usize,
    filter_size: usize,
    stride: usize,
    dilation: usize,
) -> usize {
    assert!(filter_size > 0 && stride > 0 && dilation > 0, "bad window");
    let effective = effective_filter_size(filter_size, dilation);
    let (image, stride) = (image_size as i64, stride as i64);
    // C division, truncating toward zero.
    let value = match padding {
        Padding::Same => (image + stride - 1) / stride,
        Padding::Valid => (image + stride - effective) / stride,
    };
    assert!(value >= 0, "window larger than image");
    value as usize
}

fn compute_padding_with_offset(
    stride: usize,
    dilation: usize,
    in_size: usize,
    filter_size: usize,
    out_size: usize,
) -> (usize, usize) {
    let effective = effective_filter_size(filter_size, dilation);
    let total = (out_size as i64 - 1) * stride as i64 + effective - in_size as i64;
    let total = if total > 0 { total } else { 0 };
    ((total / 2) as usize, (total % 2) as usize)
}

/// TFLM's `ComputePaddingHeightWidth`. Arrays are `[height, width]`.
pub fn compute_padding_height_width(
    stride: [usize; 2],
    dilation: [usize; 2],
    input_hw: [usize; 2],
    filter_hw: [usize; 2],
    padding: Padding,
) -> PaddingValues {
    let out_width = compute_out_size(padding, input_hw[1], filter_hw[1], stride[1], dilation[1]);
    let out_height = compute_out_size(padding, input_hw[0], filter_hw[0], stride[0], dilation[0]);
    let (height, height_offset) = compute_padding_with_offset(
        stride[0],
        dilation[0],
        input_hw[0],
        filter_hw[0],
        out_height,
    );
    let (width, width_offset) =
        compute_padding_with_offset(stride[1], dilation[1], input_hw[1], filter_hw[1], out_width);
    PaddingValues {
        out_height,
        out_width,
        height,
        width,
        height_offset,
        width_offset,
    }
}

// ---------------------------------------------------------------------------------------------
// Convolutions and fully connected
// ---------------------------------------------------------------------------------------------

/// Index of `[a, b, c, d]` in a row-major 4-D array of `shape`.
fn offset4(shape: [usize; 4], a: usize, b: usize, c: usize, d: usize) -> usize {
    ((a * shape[1] + b) * shape[2] + c) * shape[3] + d
}

fn clamp_to(value: i32, low: i32, high: i32) -> i32 {
    value.max(low).min(high)
}

/// The parameters of CONV_2D and DEPTHWISE_CONV_2D as a .tflite file gives them.
///
/// `input_shape` is NHWC. `filter_shape` is OHWI for conv (`I` may divide the input channels:
/// grouped conv) and `[1, H, W, C * multiplier]` for depthwise. `filter_scales` has one entry
/// (per tensor) or one per output channel. The filter zero point is not a parameter: TFLM's
/// conv kernels ignore it.
#[derive(Clone, Copy, Debug)]
pub struct ConvParams<'a> {
    pub input_shape: [usize; 4],
    pub filter_shape: [usize; 4],
    pub input: Quant,
    pub filter_scales: &'a [f32],
    pub output: Quant,
    /// `[height, width]`.
    pub stride: [usize; 2],
    /// `[height, width]`.
    pub dilation: [usize; 2],
    pub padding: Padding,
    pub activation: Activation,
}

impl ConvParams<'_> {
    /// Output size and padding, from [`compute_padding_height_width`].
    pub fn padding_values(&self) -> PaddingValues {
        compute_padding_height_width(
            self.stride,
            self.dilation,
            [self.input_shape[1], self.input_shape[2]],
            [self.filter_shape[1], self.filter_shape[2]],
            self.padding,
        )
    }

    /// NHWC output shape of [`conv2d`]: channels from the filter's dimension 0.
    pub fn conv2d_output_shape(&self) -> [usize; 4] {
        let pad = self.padding_values();
        [
            self.input_shape[0],
            pad.out_height,
            pad.out_width,
            self.filter_shape[0],
        ]
    }

    /// NHWC output shape of [`depthwise_conv2d`]: channels from the filter's dimension 3.
    pub fn depthwise_output_shape(&self) -> [usize; 4] {
        let pad = self.padding_values();
        [
            self.input_shape[0],
            pad.out_height,
            pad.out_width,
            self.filter_shape[3],
        ]
    }
}

/// Input coordinate of a filter tap, or `None` when it falls in the padding.
fn tap_coordinate(
    out_pos: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
    tap: usize,
    size: usize,
) -> Option<usize> {
    let position = (out_pos * stride) as i64 - pad as i64 + (dilation * tap) as i64;
    if position >= 0 && position < size as i64 {
        Some(position as usize)
    } else {
        None
    }
}

/// Σ filter · (input − input_zero_point) over the in-bounds taps of one conv output, exact in
/// i64 (`input` and `filter` are the op's tensors widened to i64).
fn conv_dot(
    p: &ConvParams,
    pad: &PaddingValues,
    input: &[i64],
    filter: &[i64],
    coords: [usize; 4],
    input_zero_point: i64,
) -> i64 {
    let [batch, out_y, out_x, out_channel] = coords;
    let [_, in_h, in_w, in_c] = p.input_shape;
    let [out_c, f_h, f_w, f_in_c] = p.filter_shape;
    let groups = in_c / f_in_c;
    let filters_per_group = out_c / groups;
    let group = out_channel / filters_per_group;
    let mut acc: i64 = 0;
    for filter_y in 0..f_h {
        let Some(in_y) = tap_coordinate(
            out_y,
            p.stride[0],
            pad.height,
            p.dilation[0],
            filter_y,
            in_h,
        ) else {
            continue;
        };
        for filter_x in 0..f_w {
            let Some(in_x) =
                tap_coordinate(out_x, p.stride[1], pad.width, p.dilation[1], filter_x, in_w)
            else {
                continue;
            };
            for in_channel in 0..f_in_c {
                let x = input[offset4(
                    p.input_shape,
                    batch,
                    in_y,
                    in_x,
                    in_channel + group * f_in_c,
                )];
                let w =
                    filter[offset4(p.filter_shape, out_channel, filter_y, filter_x, in_channel)];
                acc += w * (x - input_zero_point);
            }
        }
    }
    acc
}

fn check_conv_shapes(p: &ConvParams, input_len: usize, filter_len: usize) {
    let [_, _, _, in_c] = p.input_shape;
    let [out_c, _, _, f_in_c] = p.filter_shape;
    assert_eq!(
        input_len,
        p.input_shape.iter().product::<usize>(),
        "input length"
    );
    assert_eq!(
        filter_len,
        p.filter_shape.iter().product::<usize>(),
        "filter length"
    );
    assert!(
        f_in_c > 0 && in_c % f_in_c == 0,
        "filter depth must divide input depth"
    );
    let groups = in_c / f_in_c;
    assert!(
        out_c % groups == 0 && out_c / groups > 0,
        "output channels per group"
    );
}

/// Int8 CONV_2D (`reference_integer_ops::ConvPerChannel`): per output channel
/// `acc = Σ w · (x − zp_in)` over in-bounds taps (padding contributes nothing), `+ bias`,
/// [`multiply_by_quantized_multiplier`], `+ zp_out`, clamp to the activation range.
pub fn conv2d(p: &ConvParams, input: &[i8], filter: &[i8], bias: Option<&[i32]>) -> Vec<i8> {
    check_conv_shapes(p, input.len(), filter.len());
    let out_shape = p.conv2d_output_shape();
    let out_c = out_shape[3];
    if let Some(bias) = bias {
        assert_eq!(bias.len(), out_c, "bias length");
    }
    let pad = p.padding_values();
    let multipliers =
        conv_per_channel_multipliers(p.input.scale, p.filter_scales, p.output.scale, out_c);
    let (act_min, act_max) = calculate_activation_range_quantized(
        p.activation,
        p.output.scale,
        p.output.zero_point,
        -128,
        127,
    );
    let input: Vec<i64> = input.iter().map(|&v| v as i64).collect();
    let filter: Vec<i64> = filter.iter().map(|&v| v as i64).collect();
    let mut output = vec![0i8; out_shape.iter().product()];
    for batch in 0..out_shape[0] {
        for out_y in 0..out_shape[1] {
            for out_x in 0..out_shape[2] {
                for oc in 0..out_c {
                    let coords = [batch, out_y, out_x, oc];
                    let dot = conv_dot(p, &pad, &input, &filter, coords, p.input.zero_point as i64);
                    // The kernel accumulates in int32 (wrapping on overflow).
                    let mut acc = dot as i32;
                    if let Some(bias) = bias {
                        acc = acc.wrapping_add(bias[oc]);
                    }
                    let (multiplier, shift) = multipliers[oc];
                    acc = multiply_by_quantized_multiplier(acc, multiplier, shift);
                    acc = acc.wrapping_add(p.output.zero_point);
                    output[offset4(out_shape, batch, out_y, out_x, oc)] =
                        clamp_to(acc, act_min, act_max) as i8;
                }
            }
        }
    }
    output
}

/// The bias of a 16x8 kernel, which also picks its accumulator: an int32 bias (or no bias with
/// `quantized_bias_type` int32) accumulates in int32 and requantizes with the int32
/// [`multiply_by_quantized_multiplier`]; an int64 bias (or no bias otherwise) accumulates in
/// int64 and uses [`multiply_by_quantized_multiplier_i64`].
#[derive(Clone, Copy, Debug)]
pub enum Bias16x8<'a> {
    I32(Option<&'a [i32]>),
    I64(Option<&'a [i64]>),
}

impl Bias16x8<'_> {
    fn check_len(&self, channels: usize) {
        let len = match self {
            Bias16x8::I32(Some(b)) => b.len(),
            Bias16x8::I64(Some(b)) => b.len(),
            _ => channels,
        };
        assert_eq!(len, channels, "bias length");
    }

    /// Adds the channel's bias to the exact sum of products and requantizes, in the accumulator
    /// width the bias type selects.
    fn requantize(&self, dot: i64, channel: usize, multiplier: i32, shift: i32) -> i32 {
        match self {
            Bias16x8::I32(bias) => {
                let mut acc = dot as i32;
                if let Some(bias) = bias {
                    acc = acc.wrapping_add(bias[channel]);
                }
                multiply_by_quantized_multiplier(acc, multiplier, shift)
            }
            Bias16x8::I64(bias) => {
                let mut acc = dot;
                if let Some(bias) = bias {
                    acc = acc.wrapping_add(bias[channel]);
                }
                multiply_by_quantized_multiplier_i64(acc, multiplier, shift)
            }
        }
    }
}

/// 16x8 CONV_2D (int16 activations, int8 weights; the templated `ConvPerChannel`). As
/// [`conv2d`], except that the kernel **ignores both zero points** (it assumes 0; only the
/// activation range uses the output zero point), the bias and accumulator follow [`Bias16x8`],
/// and outputs clamp to the int16 range.
pub fn conv2d_16x8(p: &ConvParams, input: &[i16], filter: &[i8], bias: Bias16x8) -> Vec<i16> {
    check_conv_shapes(p, input.len(), filter.len());
    let out_shape = p.conv2d_output_shape();
    let out_c = out_shape[3];
    bias.check_len(out_c);
    let pad = p.padding_values();
    let multipliers =
        conv_per_channel_multipliers(p.input.scale, p.filter_scales, p.output.scale, out_c);
    let (act_min, act_max) = calculate_activation_range_quantized(
        p.activation,
        p.output.scale,
        p.output.zero_point,
        -32768,
        32767,
    );
    let input: Vec<i64> = input.iter().map(|&v| v as i64).collect();
    let filter: Vec<i64> = filter.iter().map(|&v| v as i64).collect();
    let mut output = vec![0i16; out_shape.iter().product()];
    for batch in 0..out_shape[0] {
        for out_y in 0..out_shape[1] {
            for out_x in 0..out_shape[2] {
                for oc in 0..out_c {
                    let coords = [batch, out_y, out_x, oc];
                    let dot = conv_dot(p, &pad, &input, &filter, coords, 0);
                    let (multiplier, shift) = multipliers[oc];
                    let scaled = bias.requantize(dot, oc, multiplier, shift);
                    output[offset4(out_shape, batch, out_y, out_x, oc)] =
                        clamp_to(scaled, act_min, act_max) as i16;
                }
            }
        }
    }
    output
}

/// Int8 DEPTHWISE_CONV_2D (`reference_integer_ops::DepthwiseConvPerChannel`): filter
/// `[1, H, W, C * m]`, output channel `oc = ic * m + k` reads input channel `ic`; per channel
/// scales over the filter's dimension 3; otherwise as [`conv2d`].
pub fn depthwise_conv2d(
    p: &ConvParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
) -> Vec<i8> {
    let [_, in_h, in_w, in_c] = p.input_shape;
    let [one, f_h, f_w, out_c] = p.filter_shape;
    assert_eq!(one, 1, "depthwise filter is [1, H, W, C * multiplier]");
    assert_eq!(
        input.len(),
        p.input_shape.iter().product::<usize>(),
        "input length"
    );
    assert_eq!(
        filter.len(),
        p.filter_shape.iter().product::<usize>(),
        "filter length"
    );
    assert!(
        in_c > 0 && out_c % in_c == 0,
        "output channels = input channels * multiplier"
    );
    let depth_multiplier = out_c / in_c;
    if let Some(bias) = bias {
        assert_eq!(bias.len(), out_c, "bias length");
    }
    let out_shape = p.depthwise_output_shape();
    let pad = p.padding_values();
    let multipliers =
        conv_per_channel_multipliers(p.input.scale, p.filter_scales, p.output.scale, out_c);
    let (act_min, act_max) = calculate_activation_range_quantized(
        p.activation,
        p.output.scale,
        p.output.zero_point,
        -128,
        127,
    );
    let mut output = vec![0i8; out_shape.iter().product()];
    for batch in 0..out_shape[0] {
        for out_y in 0..out_shape[1] {
            for out_x in 0..out_shape[2] {
                for in_channel in 0..in_c {
                    for m in 0..depth_multiplier {
                        let oc = m + in_channel * depth_multiplier;
                        let mut acc: i32 = 0;
                        for filter_y in 0..f_h {
                            let Some(in_y) = tap_coordinate(
                                out_y,
                                p.stride[0],
                                pad.height,
                                p.dilation[0],
                                filter_y,
                                in_h,
                            ) else {
                                continue;
                            };
                            for filter_x in 0..f_w {
                                let Some(in_x) = tap_coordinate(
                                    out_x,
                                    p.stride[1],
                                    pad.width,
                                    p.dilation[1],
                                    filter_x,
                                    in_w,
                                ) else {
                                    continue;
                                };
                                let x = input[offset4(p.input_shape, batch, in_y, in_x, in_channel)]
                                    as i32;
                                let w = filter[offset4(p.filter_shape, 0, filter_y, filter_x, oc)]
                                    as i32;
                                acc = acc.wrapping_add(w * (x - p.input.zero_point));
                            }
                        }
                        if let Some(bias) = bias {
                            acc = acc.wrapping_add(bias[oc]);
                        }
                        let (multiplier, shift) = multipliers[oc];
                        acc = multiply_by_quantized_multiplier(acc, multiplier, shift);
                        acc = acc.wrapping_add(p.output.zero_point);
                        output[offset4(out_shape, batch, out_y, out_x, oc)] =
                            clamp_to(acc, act_min, act_max) as i8;
                    }
                }
            }
        }
    }
    output
}

/// The parameters of FULLY_CONNECTED as a .tflite file gives them. `filter_shape` is
/// `[output_depth, accum_depth]`; the input is read as `[batches, accum_depth]`.
/// `filter_scales` with more than one entry selects the per-channel kernel (which ignores
/// `filter_zero_point`); one entry selects the per-tensor kernel, which adds
/// `-filter_zero_point` to every weight and uses [`fully_connected_per_tensor_scale`].
#[derive(Clone, Copy, Debug)]
pub struct FullyConnectedParams<'a> {
    pub filter_shape: [usize; 2],
    pub input: Quant,
    pub filter_scales: &'a [f32],
    pub filter_zero_point: i32,
    pub output: Quant,
    pub activation: Activation,
}

impl FullyConnectedParams<'_> {
    /// `(multiplier, shift)` per output channel: per-channel scales in double, or the single
    /// per-tensor multiplier repeated.
    pub fn multipliers(&self) -> Vec<(i32, i32)> {
        let out_depth = self.filter_shape[0];
        if self.filter_scales.len() > 1 {
            assert_eq!(
                self.filter_scales.len(),
                out_depth,
                "per-channel scale count"
            );
            self.filter_scales
                .iter()
                .map(|&s| {
                    quantize_multiplier(conv_effective_scale(
                        self.input.scale,
                        s,
                        self.output.scale,
                    ))
                })
                .collect()
        } else {
            assert_eq!(self.filter_scales.len(), 1, "filter needs a scale");
            let scale = fully_connected_per_tensor_scale(
                self.input.scale,
                self.filter_scales[0],
                self.output.scale,
            );
            vec![quantize_multiplier(scale); out_depth]
        }
    }

    fn weight_offset(&self) -> i64 {
        if self.filter_scales.len() > 1 {
            0
        } else {
            -(self.filter_zero_point as i64)
        }
    }

    fn batches(&self, input_len: usize, filter_len: usize) -> usize {
        let [out_depth, accum_depth] = self.filter_shape;
        assert_eq!(filter_len, out_depth * accum_depth, "filter length");
        assert!(
            accum_depth > 0 && input_len.is_multiple_of(accum_depth),
            "input length"
        );
        input_len / accum_depth
    }
}

/// Int8 FULLY_CONNECTED (`reference_integer_ops::FullyConnected[PerChannel]`):
/// `acc = Σ (w + w_off) · (x − zp_in)`, `+ bias`, requantize, `+ zp_out`, clamp.
pub fn fully_connected(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
) -> Vec<i8> {
    let batches = p.batches(input.len(), filter.len());
    let [out_depth, accum_depth] = p.filter_shape;
    if let Some(bias) = bias {
        assert_eq!(bias.len(), out_depth, "bias length");
    }
    let multipliers = p.multipliers();
    let weight_offset = p.weight_offset() as i32;
    let (act_min, act_max) = calculate_activation_range_quantized(
        p.activation,
        p.output.scale,
        p.output.zero_point,
        -128,
        127,
    );
    let mut output = vec![0i8; batches * out_depth];
    for b in 0..batches {
        for oc in 0..out_depth {
            let mut acc: i32 = 0;
            for d in 0..accum_depth {
                let x = input[b * accum_depth + d] as i32;
                let w = filter[oc * accum_depth + d] as i32;
                acc = acc.wrapping_add((w + weight_offset).wrapping_mul(x - p.input.zero_point));
            }
            if let Some(bias) = bias {
                acc = acc.wrapping_add(bias[oc]);
            }
            let (multiplier, shift) = multipliers[oc];
            let scaled = multiply_by_quantized_multiplier(acc, multiplier, shift)
                .wrapping_add(p.output.zero_point);
            output[b * out_depth + oc] = clamp_to(scaled, act_min, act_max) as i8;
        }
    }
    output
}

/// 16x8 FULLY_CONNECTED (int16 activations, int8 weights). As [`fully_connected`] (unlike the
/// 16x8 conv, the input and output zero points are applied), with the accumulator and
/// requantization that [`Bias16x8`] selects, clamped to the int16 range.
pub fn fully_connected_16x8(
    p: &FullyConnectedParams,
    input: &[i16],
    filter: &[i8],
    bias: Bias16x8,
) -> Vec<i16> {
    let batches = p.batches(input.len(), filter.len());
    let [out_depth, accum_depth] = p.filter_shape;
    bias.check_len(out_depth);
    let multipliers = p.multipliers();
    let weight_offset = p.weight_offset();
    let (act_min, act_max) = calculate_activation_range_quantized(
        p.activation,
        p.output.scale,
        p.output.zero_point,
        -32768,
        32767,
    );
    let mut output = vec![0i16; batches * out_depth];
    for b in 0..batches {
        for oc in 0..out_depth {
            let mut dot: i64 = 0;
            for d in 0..accum_depth {
                let x = input[b * accum_depth + d] as i64;
                let w = filter[oc * accum_depth + d] as i64;
                // Each product is formed in int32 by the kernel; these cannot overflow it.
                dot += (w + weight_offset) * (x - p.input.zero_point as i64);
            }
            let (multiplier, shift) = multipliers[oc];
            let scaled = bias
                .requantize(dot, oc, multiplier, shift)
                .wrapping_add(p.output.zero_point);
            output[b * out_depth + oc] = clamp_to(scaled, act_min, act_max) as i16;
        }
    }
    output
}

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

/// The parameters of AVERAGE_POOL_2D / MAX_POOL_2D. Input and output share `quant` (TFLM
/// requires it); it only feeds the activation range.
#[derive(Clone, Copy, Debug)]
pub struct PoolParams {
    /// NHWC.
    pub input_shape: [usize; 4],
    /// `[height, width]`.
    pub filter: [usize; 2],
    /// `[height, width]`.
    pub stride: [usize; 2],
    pub padding: Padding,
    pub activation: Activation,
    pub quant: Quant,
}

impl PoolParams {
    /// Output size and padding (dilation 1).
    pub fn padding_values(&self) -> PaddingValues {
        compute_padding_height_width(
            self.stride,
            [1, 1],
            [self.input_shape[1], self.input_shape[2]],
            self.filter,
            self.padding,
        )
    }

    /// NHWC output shape.
    pub fn output_shape(&self) -> [usize; 4] {
        let pad = self.padding_values();
        [
            self.input_shape[0],
            pad.out_height,
            pad.out_width,
            self.input_shape[3],
        ]
    }

    /// Calls `visit(out_index, window values)` for every output element, with the in-bounds
    /// input values of its window.
    fn for_each_window(&self, input: &[i8], mut visit: impl FnMut(usize, &[i8])) {
        assert_eq!(
            input.len(),
            self.input_shape.iter().product::<usize>(),
            "input length"
        );
        let out_shape = self.output_shape();
        let pad = self.padding_values();
        let [_, in_h, in_w, _] = self.input_shape;
        let mut window = Vec::new();
        for batch in 0..out_shape[0] {
            for out_y in 0..out_shape[1] {
                for out_x in 0..out_shape[2] {
                    for channel in 0..out_shape[3] {
                        window.clear();
                        for fy in 0..self.filter[0] {
                            let Some(in_y) =
                                tap_coordinate(out_y, self.stride[0], pad.height, 1, fy, in_h)
                            else {
                                continue;
                            };
                            for fx in 0..self.filter[1] {
                                let Some(in_x) =
                                    tap_coordinate(out_x, self.stride[1], pad.width, 1, fx, in_w)
                                else {
                                    continue;
                                };
                                window.push(
                                    input[offset4(self.input_shape, batch, in_y, in_x, channel)],
                                );
                            }
                        }
                        visit(offset4(out_shape, batch, out_y, out_x, channel), &window);
                    }
                }
            }
        }
    }

    fn activation_range(&self) -> (i32, i32) {
        calculate_activation_range_quantized(
            self.activation,
            self.quant.scale,
            self.quant.zero_point,
            -128,
            127,
        )
    }
}

/// Int8 AVERAGE_POOL_2D (`reference_integer_ops::AveragePool`): the raw int8 values of the
/// in-bounds part of each window are summed and divided by their count `n`, rounding half away
/// from zero (`(acc ± n/2) / n`, truncating); clamp. An empty window is an error in TFLM.
pub fn average_pool2d(p: &PoolParams, input: &[i8]) -> Vec<i8> {
    let (act_min, act_max) = p.activation_range();
    let mut output = vec![0i8; p.output_shape().iter().product()];
    p.for_each_window(input, |index, window| {
        let count = window.len() as i32;
        assert!(count > 0, "average pool window entirely in padding");
        let sum: i32 = window.iter().map(|&v| v as i32).sum();
        let average = if sum > 0 {
            (sum + count / 2) / count
        } else {
            (sum - count / 2) / count
        };
        output[index] = clamp_to(average, act_min, act_max) as i8;
    });
    output
}

/// Int8 MAX_POOL_2D (`reference_integer_ops::MaxPool`): the maximum over the in-bounds part of
/// each window (-128 for an empty one), clamped to the activation range.
pub fn max_pool2d(p: &PoolParams, input: &[i8]) -> Vec<i8> {
    let (act_min, act_max) = p.activation_range();
    let mut output = vec![0i8; p.output_shape().iter().product()];
    p.for_each_window(input, |index, window| {
        let mut max = i8::MIN as i32;
        for &v in window {
            max = max.max(v as i32);
        }
        output[index] = clamp_to(max, act_min, act_max) as i8;
    });
    output
}

// ---------------------------------------------------------------------------------------------
// Elementwise binary ops
// ---------------------------------------------------------------------------------------------

/// The parameters of ADD / SUB / MUL: shapes (broadcast NumPy-style, right-aligned, up to any
/// rank), quantization of both inputs and the output, fused activation.
#[derive(Clone, Copy, Debug)]
pub struct BinaryParams<'a> {
    pub input1_shape: &'a [usize],
    pub input1: Quant,
    pub input2_shape: &'a [usize],
    pub input2: Quant,
    pub output: Quant,
    pub activation: Activation,
}

/// The broadcast output shape of two shapes (each dimension equal, or 1 on one side).
pub fn broadcast_shape(shape1: &[usize], shape2: &[usize]) -> Vec<usize> {
    let rank = shape1.len().max(shape2.len());
    let dim = |shape: &[usize], i: usize| -> usize {
        let missing = rank - shape.len();
        if i < missing {
            1
        } else {
            shape[i - missing]
        }
    };
    (0..rank)
        .map(|i| {
            let (a, b) = (dim(shape1, i), dim(shape2, i));
            assert!(
                a == b || a == 1 || b == 1,
                "shapes {shape1:?} and {shape2:?} do not broadcast"
            );
            if a == 1 {
                b
            } else {
                a
            }
        })
        .collect()
}

/// Applies `f` elementwise over the broadcast of `a` (of `shape1`) and `b` (of `shape2`).
fn broadcast_apply<T: Copy, U>(
    shape1: &[usize],
    a: &[T],
    shape2: &[usize],
    b: &[T],
    f: impl Fn(T, T) -> U,
) -> Vec<U> {
    assert_eq!(a.len(), shape1.iter().product::<usize>(), "input1 length");
    assert_eq!(b.len(), shape2.iter().product::<usize>(), "input2 length");
    let out_shape = broadcast_shape(shape1, shape2);
    let rank = out_shape.len();
    let padded = |shape: &[usize]| -> Vec<usize> {
        let mut full = vec![1; rank - shape.len()];
        full.extend_from_slice(shape);
        full
    };
    let (full1, full2) = (padded(shape1), padded(shape2));
    let total: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut coords = vec![0usize; rank];
    for flat in 0..total {
        // Decompose `flat` into output coordinates, last dimension fastest.
        let mut rest = flat;
        for d in (0..rank).rev() {
            coords[d] = rest % out_shape[d];
            rest /= out_shape[d];
        }
        let (mut index1, mut index2) = (0usize, 0usize);
        for d in 0..rank {
            index1 = index1 * full1[d] + if full1[d] == 1 { 0 } else { coords[d] };
            index2 = index2 * full2[d] + if full2[d] == 1 { 0 } else { coords[d] };
        }
        out.push(f(a[index1], b[index2]));
    }
    out
}

/// The quantized add/sub of one pair of values (`AddFunc` / `SubElementwise`): each input
/// `(x − zp) << left_shift` scaled by its multiplier, summed (or subtracted), scaled by the
/// output multiplier, `+ zp_out`, clamp.
fn add_sub_one(
    x1: i32,
    x2: i32,
    p: &BinaryParams,
    q: &AddSubParams,
    subtract: bool,
    range: (i32, i32),
) -> i32 {
    let shifted1 = (x1 - p.input1.zero_point).wrapping_mul(1 << q.left_shift);
    let shifted2 = (x2 - p.input2.zero_point).wrapping_mul(1 << q.left_shift);
    let scaled1 = multiply_by_quantized_multiplier_smaller_than_one_exp(
        shifted1,
        q.input1_multiplier,
        q.input1_shift,
    );
    let scaled2 = multiply_by_quantized_multiplier_smaller_than_one_exp(
        shifted2,
        q.input2_multiplier,
        q.input2_shift,
    );
    let raw = if subtract {
        scaled1.wrapping_sub(scaled2)
    } else {
        scaled1.wrapping_add(scaled2)
    };
    let out = multiply_by_quantized_multiplier_smaller_than_one_exp(
        raw,
        q.output_multiplier,
        q.output_shift,
    )
    .wrapping_add(p.output.zero_point);
    clamp_to(out, range.0, range.1)
}

fn activation_range_of(p: &BinaryParams, qmin: i32, qmax: i32) -> (i32, i32) {
    calculate_activation_range_quantized(
        p.activation,
        p.output.scale,
        p.output.zero_point,
        qmin,
        qmax,
    )
}

/// Int8 ADD (`reference_integer_ops::Add` / `BroadcastAdd6DSlow`), with [`add_params`] and
/// left shift 20.
pub fn add(p: &BinaryParams, input1: &[i8], input2: &[i8]) -> Vec<i8> {
    let q = add_params(p.input1.scale, p.input2.scale, p.output.scale, 20);
    let range = activation_range_of(p, -128, 127);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, false, range) as i8
    })
}

/// Int16 ADD (`reference_ops::AddGeneralParamScale`, the path TFLM takes): as [`add`] with left
/// shift 15 and the int16 range.
pub fn add_i16(p: &BinaryParams, input1: &[i16], input2: &[i16]) -> Vec<i16> {
    let q = add_params(p.input1.scale, p.input2.scale, p.output.scale, 15);
    let range = activation_range_of(p, -32768, 32767);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, false, range) as i16
    })
}

/// Int8 SUB (`reference_ops::Sub` / `BroadcastQuantSubSlow`), with [`sub_params`] (float set-up)
/// and left shift 20.
pub fn sub(p: &BinaryParams, input1: &[i8], input2: &[i8]) -> Vec<i8> {
    let q = sub_params(p.input1.scale, p.input2.scale, p.output.scale, 20);
    let range = activation_range_of(p, -128, 127);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, true, range) as i8
    })
}

/// Int16 SUB: as [`sub`] with left shift 15 and the int16 range.
pub fn sub_i16(p: &BinaryParams, input1: &[i16], input2: &[i16]) -> Vec<i16> {
    let q = sub_params(p.input1.scale, p.input2.scale, p.output.scale, 15);
    let range = activation_range_of(p, -32768, 32767);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, true, range) as i16
    })
}

/// Int8 MUL (`reference_integer_ops::Mul` / `BroadcastMul6DSlow`):
/// `zp_out + MBQM((x1 − zp1) · (x2 − zp2), M, shift)` with [`mul_multiplier`], clamp.
pub fn mul(p: &BinaryParams, input1: &[i8], input2: &[i8]) -> Vec<i8> {
    let (multiplier, shift) = mul_multiplier(p.input1.scale, p.input2.scale, p.output.scale);
    let (act_min, act_max) = activation_range_of(p, -128, 127);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        let product = (a as i32 - p.input1.zero_point) * (b as i32 - p.input2.zero_point);
        let out = p
            .output
            .zero_point
            .wrapping_add(multiply_by_quantized_multiplier(product, multiplier, shift));
        clamp_to(out, act_min, act_max) as i8
    })
}

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
fn newton_raphson_reciprocal_q2(half_denominator: i32) -> i32 {
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

// ---------------------------------------------------------------------------------------------
// Tests: known values, checkable by hand
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    const Q30: i32 = 1 << 30;

    #[test]
    fn quantize_multiplier_known_values() {
        assert_eq!(quantize_multiplier(0.0), (0, 0));
        // 0.5 = 0.5 * 2^0.
        assert_eq!(quantize_multiplier(0.5), (Q30, 0));
        // 1.0 = 0.5 * 2^1.
        assert_eq!(quantize_multiplier(1.0), (Q30, 1));
        // 0.75 = 0.75 * 2^0; 0.75 * 2^31 = 1610612736.
        assert_eq!(quantize_multiplier(0.75), (1610612736, 0));
        assert_eq!(quantize_multiplier(3.0), (1610612736, 2));
        // 1e-10 ≈ 0.859 * 2^-33: shift below -31 flushes to zero.
        assert_eq!(quantize_multiplier(1e-10), (0, 0));
        // 2^-32 = 0.5 * 2^-31 is the smallest power of two kept; 2^-33 is flushed.
        assert_eq!(quantize_multiplier(2f64.powi(-32)), (Q30, -31));
        assert_eq!(quantize_multiplier(2f64.powi(-33)), (0, 0));
        // q = 1 - 2^-33: q * 2^31 = 2^31 - 1/4 rounds to 2^31, renormalised to 2^30, shift + 1.
        assert_eq!(quantize_multiplier(1.0 - 2f64.powi(-33)), (Q30, 1));
        // Just below the renormalisation edge: 2^31 - 1.
        assert_eq!(quantize_multiplier(1.0 - 2f64.powi(-31)), (i32::MAX, 0));
    }

    #[test]
    fn quantize_multiplier_checked_variants() {
        assert_eq!(quantize_multiplier_smaller_than_one_exp(0.25), (Q30, -1));
        assert_eq!(quantize_multiplier_greater_than_one(4.0), (Q30, 3));
    }

    #[test]
    fn frexp_matches_c() {
        assert_eq!(frexp(1.0), (0.5, 1));
        assert_eq!(frexp(0.75), (0.75, 0));
        assert_eq!(frexp(-6.0), (-0.75, 3));
        assert_eq!(frexp(f64::from_bits(1)), (0.5, -1073));
    }

    #[test]
    fn srdhm_known_values() {
        let srdhm = saturating_rounding_doubling_high_mul;
        assert_eq!(srdhm(i32::MIN, i32::MIN), i32::MAX);
        // -2^31 * (2^31 - 1) / 2^31 = -(2^31 - 1), exactly.
        assert_eq!(srdhm(i32::MIN, i32::MAX), -i32::MAX);
        // a * b / 2^31 = +0.5 rounds away from zero, -0.5 toward zero:
        // (2^30 + 2^30) / 2^31 = 1; (-2^30 + 1 - 2^30) / 2^31 = -0.99.. truncates to 0.
        assert_eq!(srdhm(Q30, 1), 1);
        assert_eq!(srdhm(-Q30, 1), 0);
        // -1.5: (-3 * 2^30 + 1 - 2^30) / 2^31 = -1.99.. truncates to -1.
        assert_eq!(srdhm(-3 * (1 << 29), 2), -1);
        // 1.5 → 2.
        assert_eq!(srdhm(3 * (1 << 29), 2), 2);
        // Half of 100.
        assert_eq!(srdhm(100, Q30), 50);
    }

    #[test]
    fn rdbpot_known_values() {
        // Halves go away from zero, both signs.
        assert_eq!(rounding_divide_by_pot(3, 1), 2);
        assert_eq!(rounding_divide_by_pot(-3, 1), -2);
        assert_eq!(rounding_divide_by_pot(1, 1), 1);
        assert_eq!(rounding_divide_by_pot(-1, 1), -1);
        // -1.25 → -1, -1.75 → -2.
        assert_eq!(rounding_divide_by_pot(-5, 2), -1);
        assert_eq!(rounding_divide_by_pot(-7, 2), -2);
        assert_eq!(rounding_divide_by_pot(12345, 0), 12345);
        assert_eq!(rounding_divide_by_pot(i32::MIN, 31), -1);
        assert_eq!(rounding_divide_by_pot(i32::MAX, 31), 1);
    }

    #[test]
    fn mbqm_double_rounding() {
        // 0.5 as (2^30, 0): SRDHM alone, so -1.5 → -1 (toward +inf) and 1.5 → 2.
        assert_eq!(multiply_by_quantized_multiplier(-3, Q30, 0), -1);
        assert_eq!(multiply_by_quantized_multiplier(3, Q30, 0), 2);
        // 0.25 as (2^30, -1): SRDHM gives -3 exactly, RDBPOT(-3, 1) = -2 (away from zero).
        assert_eq!(multiply_by_quantized_multiplier(-6, Q30, -1), -2);
        // 2.0 as (2^30, 2): 7 * 4 * 0.5 = 14.
        assert_eq!(multiply_by_quantized_multiplier(7, Q30, 2), 14);
    }

    #[test]
    fn mbqm_i64_known_values() {
        // Multiplier 2^30 reduces to (2^30 + 2^15) >> 16 = 2^14; total shift 15.
        // 100 → (1638400 + 16384) >> 15 = 50; 101 → 51 (50.5 up); -101 → -50 (-50.5 up).
        assert_eq!(multiply_by_quantized_multiplier_i64(100, Q30, 0), 50);
        assert_eq!(multiply_by_quantized_multiplier_i64(101, Q30, 0), 51);
        assert_eq!(multiply_by_quantized_multiplier_i64(-101, Q30, 0), -50);
        // A multiplier at or above 0x7FFF0000 reduces to 0x7FFF.
        assert_eq!(
            multiply_by_quantized_multiplier_i64(1 << 20, i32::MAX, 0),
            (1 << 20) - 32
        );
    }

    #[test]
    fn saturating_pot_and_half_sum() {
        assert_eq!(saturating_rounding_multiply_by_pot(1 << 29, 2), i32::MAX);
        assert_eq!(saturating_rounding_multiply_by_pot(-(1 << 29), 2), i32::MIN);
        assert_eq!(saturating_rounding_multiply_by_pot(5, 2), 20);
        assert_eq!(saturating_rounding_multiply_by_pot(-3, -1), -2);
        assert_eq!(rounding_half_sum(1, 2), 2);
        assert_eq!(rounding_half_sum(-1, -2), -2);
        assert_eq!(rounding_half_sum(i32::MAX, i32::MAX), i32::MAX);
    }

    #[test]
    fn activation_ranges() {
        let r = calculate_activation_range_quantized;
        assert_eq!(r(Activation::None, 0.1, 3, -128, 127), (-128, 127));
        assert_eq!(r(Activation::Relu, 0.1, 3, -128, 127), (3, 127));
        // 6 / 0.05 = 120 → zp -10 + 120 = 110.
        assert_eq!(r(Activation::Relu6, 0.05, -10, -128, 127), (-10, 110));
        // 6 / 0.01 = 600: clipped to 127.
        assert_eq!(r(Activation::Relu6, 0.01, 0, -128, 127), (0, 127));
        // ±1 / 0.25 = ±4.
        assert_eq!(r(Activation::ReluN1To1, 0.25, 1, -128, 127), (-3, 5));
        assert_eq!(r(Activation::Relu, 0.1, -200, -128, 127), (-128, 127));
    }

    #[test]
    fn padding_values() {
        let same =
            |i, f, s| compute_padding_height_width([s, s], [1, 1], [i, i], [f, f], Padding::Same);
        // 3 in, 2 filter, stride 1: out 3, total padding 1 → 0 before, 1 after.
        let p = same(3, 2, 1);
        assert_eq!((p.out_height, p.height, p.height_offset), (3, 0, 1));
        // 5 in, 3 filter, stride 1: total 2 → 1 before.
        let p = same(5, 3, 1);
        assert_eq!((p.out_width, p.width, p.width_offset), (5, 1, 0));
        // 4 in, 3 filter, stride 2: out 2, total (2-1)*2 + 3 - 4 = 1 → 0 before.
        let p = same(4, 3, 2);
        assert_eq!((p.out_height, p.height, p.height_offset), (2, 0, 1));
        // VALID 5 in, 3 filter, stride 2: (5 + 2 - 3) / 2 = 2, no padding.
        let p = compute_padding_height_width([2, 2], [1, 1], [5, 5], [3, 3], Padding::Valid);
        assert_eq!((p.out_height, p.height), (2, 0));
        // Dilation 2 makes a 3-tap filter span 5: VALID on 5 gives 1.
        let p = compute_padding_height_width([1, 1], [2, 2], [5, 5], [3, 3], Padding::Valid);
        assert_eq!(p.out_width, 1);
    }

    fn conv_params<'a>(
        input_shape: [usize; 4],
        filter_shape: [usize; 4],
        scales: &'a [f32],
        padding: Padding,
    ) -> ConvParams<'a> {
        ConvParams {
            input_shape,
            filter_shape,
            input: Quant::new(1.0, 1),
            filter_scales: scales,
            output: Quant::new(2.0, 0),
            stride: [1, 1],
            dilation: [1, 1],
            padding,
            activation: Activation::None,
        }
    }

    #[test]
    fn tiny_conv_by_hand() {
        // Input 3x3, zero point 1, so x − zp = [[0,1,2],[3,4,5],[6,7,8]].
        let input: Vec<i8> = (1..=9).collect();
        // One 2x2 filter [[1,2],[3,4]]; effective scale 1 * 1 / 2 = 0.5 = (2^30, 0).
        let filter = [1i8, 2, 3, 4];
        let p = conv_params([1, 3, 3, 1], [1, 2, 2, 1], &[1.0], Padding::Valid);
        assert_eq!(p.conv2d_output_shape(), [1, 2, 2, 1]);
        // Sums 27, 37, 57, 67; halved: 13.5, 18.5, 28.5, 33.5, halves rounded up.
        assert_eq!(conv2d(&p, &input, &filter, None), vec![14, 19, 29, 34]);
        // Bias 1 makes the sums odd + 1: 14, 19, 29, 34 exactly.
        assert_eq!(
            conv2d(&p, &input, &filter, Some(&[1])),
            vec![14, 19, 29, 34]
        );
        // Bias -2: 25, 35, 55, 65 → 12.5, 17.5, 27.5, 32.5 → 13, 18, 28, 33.
        assert_eq!(
            conv2d(&p, &input, &filter, Some(&[-2])),
            vec![13, 18, 28, 33]
        );
    }

    #[test]
    fn conv_same_padding_adds_nothing() {
        // 2x2 input all 5 with zero point 1 (x − zp = 4), 3x3 filter of ones, SAME: every
        // output sees the 4 real pixels only: 16, scaled by 0.5 → 8.
        let input = [5i8; 4];
        let filter = [1i8; 9];
        let p = conv_params([1, 2, 2, 1], [1, 3, 3, 1], &[1.0], Padding::Same);
        assert_eq!(p.padding_values().height, 1);
        assert_eq!(conv2d(&p, &input, &filter, None), vec![8, 8, 8, 8]);
    }

    #[test]
    fn conv_per_channel_and_relu() {
        // 1x1 input, two channels x − zp = [2, 3]; two 1x1 filters, per-channel scales.
        let input = [3i8, 4];
        let filter = [1i8, 1, 1, -1]; // out0 = 2 + 3 = 5, out1 = 2 - 3 = -1
        let mut p = conv_params([1, 1, 1, 2], [2, 1, 1, 2], &[2.0, 4.0], Padding::Valid);
        // Scales 1 * 2 / 2 = 1 and 1 * 4 / 2 = 2: outputs 5 and -2.
        assert_eq!(conv2d(&p, &input, &filter, None), vec![5, -2]);
        p.activation = Activation::Relu;
        assert_eq!(conv2d(&p, &input, &filter, None), vec![5, 0]);
    }

    #[test]
    fn grouped_conv() {
        // Input channels [a, b] = [1, 2] (zp 0), two groups of one channel, filters 3 and 5.
        let input = [1i8, 2];
        let filter = [3i8, 5];
        let mut p = conv_params([1, 1, 1, 2], [2, 1, 1, 1], &[1.0], Padding::Valid);
        p.input = Quant::new(1.0, 0);
        p.output = Quant::new(1.0, 0);
        assert_eq!(conv2d(&p, &input, &filter, None), vec![3, 10]);
    }

    #[test]
    fn depthwise_by_hand() {
        // 1x2 image, 2 channels, multiplier 2: oc = c*2 + m reads channel c.
        let input = [1i8, 2, 3, 4]; // pixel0 = [1, 2], pixel1 = [3, 4]
        let filter = [1i8, -1, 2, 3]; // 1x1 kernel over 4 output channels
        let p = ConvParams {
            input_shape: [1, 1, 2, 2],
            filter_shape: [1, 1, 1, 4],
            input: Quant::new(1.0, 0),
            filter_scales: &[1.0],
            output: Quant::new(1.0, 0),
            stride: [1, 1],
            dilation: [1, 1],
            padding: Padding::Valid,
            activation: Activation::None,
        };
        assert_eq!(p.depthwise_output_shape(), [1, 1, 2, 4]);
        let out = depthwise_conv2d(&p, &input, &filter, Some(&[0, 0, 0, 10]));
        assert_eq!(out, vec![1, -1, 4, 16, 3, -3, 8, 22]);
    }

    fn fc_params(scales: &[f32]) -> FullyConnectedParams<'_> {
        FullyConnectedParams {
            filter_shape: [2, 3],
            input: Quant::new(1.0, 0),
            filter_scales: scales,
            filter_zero_point: 0,
            output: Quant::new(1.0, 0),
            activation: Activation::None,
        }
    }

    #[test]
    fn fully_connected_by_hand() {
        let input = [1i8, 2, 3, -1, 0, 1]; // two batches
        let filter = [1i8, 1, 1, 1, -1, 0];
        let p = fc_params(&[1.0]);
        // Batch 0: 6 + 1, -1 - 1; batch 1: 0 + 1, -1 - 1.
        assert_eq!(
            fully_connected(&p, &input, &filter, Some(&[1, -1])),
            vec![7, -2, 1, -2]
        );
        // A per-tensor weight zero point of 1 means weights [0,0,0], [0,-2,-1].
        let mut p = fc_params(&[1.0]);
        p.filter_zero_point = 1;
        assert_eq!(
            fully_connected(&p, &input, &filter, None),
            vec![0, -7, 0, -1]
        );
        // Per channel ignores the weight zero point.
        let mut p = fc_params(&[1.0, 2.0]);
        p.filter_zero_point = 1;
        assert_eq!(
            fully_connected(&p, &input, &filter, None),
            vec![6, -2, 0, -2]
        );
    }

    #[test]
    fn fully_connected_per_tensor_scale_is_float_product() {
        let (s_in, s_w, s_out) = (0.1f32, 0.3f32, 0.7f32);
        let float_first = fully_connected_per_tensor_scale(s_in, s_w, s_out);
        assert_eq!(float_first, (s_in * s_w) as f64 / s_out as f64);
        assert_ne!(float_first, conv_effective_scale(s_in, s_w, s_out));
    }

    #[test]
    fn sixteen_by_eight_variants() {
        // Conv: zero points are ignored by the kernel; 1x1 filter 3 on inputs 1000, -1001;
        // scale 1 * 1 / 2 = 0.5: 1500, -1501.5.
        let p = ConvParams {
            input_shape: [1, 1, 2, 1],
            filter_shape: [1, 1, 1, 1],
            input: Quant::new(1.0, 7),
            filter_scales: &[1.0],
            output: Quant::new(2.0, 0),
            stride: [1, 1],
            dilation: [1, 1],
            padding: Padding::Valid,
            activation: Activation::None,
        };
        let input = [1000i16, -1001];
        // int32 path: SRDHM rounds -1501.5 up to -1501.
        assert_eq!(
            conv2d_16x8(&p, &input, &[3], Bias16x8::I32(None)),
            vec![1500, -1501]
        );
        // int64 path: (-3003 * 2^14 + 2^14) >> 15 = floor(-1501) = -1501.
        assert_eq!(
            conv2d_16x8(&p, &input, &[3], Bias16x8::I64(None)),
            vec![1500, -1501]
        );
        // Bias -1: 1499.5 → 1500 and -1501.5 → -1502 (floor after adding a half).
        assert_eq!(
            conv2d_16x8(&p, &input, &[3], Bias16x8::I64(Some(&[-1]))),
            vec![1500, -1502]
        );
        // Fully connected: zero points applied.
        let fc = FullyConnectedParams {
            filter_shape: [1, 2],
            input: Quant::new(1.0, 10),
            filter_scales: &[1.0],
            filter_zero_point: 0,
            output: Quant::new(1.0, 5),
            activation: Activation::None,
        };
        // (20 - 10) * 2 + (30 - 10) * 3 = 80, + 5.
        let out = fully_connected_16x8(&fc, &[20, 30], &[2, 3], Bias16x8::I64(Some(&[100])));
        assert_eq!(out, vec![185]);
        let out = fully_connected_16x8(&fc, &[20, 30], &[2, 3], Bias16x8::I32(None));
        assert_eq!(out, vec![85]);
        // Saturation to the int16 range.
        let out = fully_connected_16x8(&fc, &[32767, 32767], &[127, 127], Bias16x8::I32(None));
        assert_eq!(out, vec![32767]);
    }

    #[test]
    fn pooling_by_hand() {
        let p = PoolParams {
            input_shape: [1, 2, 2, 1],
            filter: [2, 2],
            stride: [1, 1],
            padding: Padding::Valid,
            activation: Activation::None,
            quant: Quant::new(1.0, 0),
        };
        // 11 / 4 = 2.75 → 3; -11 / 4 → -3; -2 / 4 = -0.5 → -1; 2 / 4 = 0.5 → 1.
        assert_eq!(average_pool2d(&p, &[1, 2, 3, 5]), vec![3]);
        assert_eq!(average_pool2d(&p, &[-1, -2, -3, -5]), vec![-3]);
        assert_eq!(average_pool2d(&p, &[-1, -1, 0, 0]), vec![-1]);
        assert_eq!(average_pool2d(&p, &[1, 1, 0, 0]), vec![1]);
        assert_eq!(max_pool2d(&p, &[-7, 3, -128, 2]), vec![3]);
        // SAME on 2x2 with a 2x2 window: the windows shrink at the far edges and only the
        // in-bounds pixels are counted.
        let same = PoolParams {
            padding: Padding::Same,
            ..p
        };
        assert_eq!(same.output_shape(), [1, 2, 2, 1]);
        assert_eq!(average_pool2d(&same, &[1, 2, 3, 5]), vec![3, 4, 4, 5]);
        assert_eq!(max_pool2d(&same, &[1, 2, 3, 5]), vec![5, 5, 5, 5]);
        let relu = PoolParams {
            activation: Activation::Relu,
            quant: Quant::new(1.0, -2),
            ..p
        };
        assert_eq!(max_pool2d(&relu, &[-7, -5, -128, -3]), vec![-2]);
    }

    fn binary(
        shape1: &'static [usize],
        shape2: &'static [usize],
        q: Quant,
    ) -> BinaryParams<'static> {
        BinaryParams {
            input1_shape: shape1,
            input1: q,
            input2_shape: shape2,
            input2: q,
            output: q,
            activation: Activation::None,
        }
    }

    #[test]
    fn add_sub_by_hand() {
        // Equal scales 1: multipliers (2^30, 0), (2^30, 0), output 2^-19 = (2^30, -18), so
        // the result is exactly x1 + x2.
        let q = add_params(1.0, 1.0, 1.0, 20);
        assert_eq!((q.input1_multiplier, q.input1_shift), (Q30, 0));
        assert_eq!((q.output_multiplier, q.output_shift), (Q30, -18));
        let p = binary(&[3], &[3], Quant::new(1.0, 0));
        assert_eq!(
            add(&p, &[3, 100, -100], &[4, 100, -100]),
            vec![7, 127, -128]
        );
        assert_eq!(
            sub(&p, &[3, 100, -100], &[4, -100, 100]),
            vec![-1, 127, -128]
        );
        // Zero points: (5 - 2) + (6 - 2) + 2 = 9.
        let p = binary(&[1], &[1], Quant::new(0.5, 2));
        assert_eq!(add(&p, &[5], &[6]), vec![9]);
        // Broadcast [2, 1] + [3].
        let p = binary(&[2, 1], &[3], Quant::new(1.0, 0));
        assert_eq!(broadcast_shape(&[2, 1], &[3]), vec![2, 3]);
        assert_eq!(add(&p, &[10, 20], &[1, 2, 3]), vec![11, 12, 13, 21, 22, 23]);
        // Int16: left shift 15, output multiplier 2 / 2^15 = (2^30, -13).
        let q16 = add_params(1.0, 1.0, 1.0, 15);
        assert_eq!((q16.output_multiplier, q16.output_shift), (Q30, -13));
        let p = binary(&[2], &[2], Quant::new(1.0, 0));
        assert_eq!(
            add_i16(&p, &[1000, 30000], &[2000, 30000]),
            vec![3000, 32767]
        );
        assert_eq!(
            sub_i16(&p, &[1000, -30000], &[2000, 30000]),
            vec![-1000, -32768]
        );
    }

    #[test]
    fn sub_setup_is_float() {
        // s1 / (2 * s2) rounds differently in float and in double for these scales.
        let (s1, s2, so) = (0.3f32, 0.7f32, 0.11f32);
        let twice = 2.0 * s2;
        assert_ne!((s1 / twice) as f64, s1 as f64 / twice as f64);
        let a = add_params(s1, s2, so, 20);
        let s = sub_params(s1, s2, so, 20);
        assert_eq!(
            s.input1_multiplier,
            quantize_multiplier((s1 / twice) as f64).0
        );
        assert_eq!(
            a.input1_multiplier,
            quantize_multiplier(s1 as f64 / twice as f64).0
        );
    }

    #[test]
    fn mul_by_hand() {
        // 0.5 * 0.5 / 0.25 = 1: out = (x1 - 1) * (x2 + 2) + 3.
        let p = BinaryParams {
            input1_shape: &[3],
            input1: Quant::new(0.5, 1),
            input2_shape: &[3],
            input2: Quant::new(0.5, -2),
            output: Quant::new(0.25, 3),
            activation: Activation::None,
        };
        assert_eq!(mul(&p, &[4, 1, 20], &[0, 50, 20]), vec![9, 3, 127]);
    }

    #[test]
    fn softmax_uniform_rows() {
        // Four equal logits: each exp is 1 (INT32_MAX), sum 4 * 2^19 = 2^21 → 1/4 → 64 / 256.
        let out = softmax(&[5, 5, 5, 5], 4, 0.1, 1.0);
        assert_eq!(out, vec![-64; 4]);
        let total: i32 = out.iter().map(|&q| q as i32 + 128).sum();
        assert_eq!(total, 256);
        // Three equal logits: 2^7 * 2/3 = 85.3 → 85 each; the sum 255 is about 256.
        let out = softmax(&[-7, -7, -7], 3, 0.05, 1.0);
        assert_eq!(out, vec![-43; 3]);
    }

    #[test]
    fn softmax_dominant_logit() {
        // Scale 1, beta 1: M = 2^30, left shift 27, diff_min = -floor(31 * 2^26 / 2^27) = -15.
        let params = softmax_params(1.0, 1.0);
        assert_eq!(
            params,
            SoftmaxParams {
                input_multiplier: Q30,
                input_left_shift: 27,
                diff_min: -15
            }
        );
        // -255 < -15 → -128; the maximum gets 256 - 128 = 128, clamped to 127.
        assert_eq!(softmax(&[127, -128], 2, 1.0, 1.0), vec![127, -128]);
    }

    #[test]
    fn softmax_close_to_float() {
        let input: Vec<i8> = (-128..=127).step_by(5).map(|v| v as i8).collect();
        let scale = 0.0625f32;
        let out = softmax(&input, input.len(), scale, 1.0);
        let max = *input.iter().max().unwrap() as f64;
        let exps: Vec<f64> = input
            .iter()
            .map(|&v| ((v as f64 - max) * scale as f64).exp())
            .collect();
        let sum: f64 = exps.iter().sum();
        for (q, e) in out.iter().zip(&exps) {
            let expected = (e / sum * 256.0).round() - 128.0;
            assert!(
                (*q as f64 - expected.min(127.0)).abs() <= 1.0,
                "{q} vs {expected}"
            );
        }
    }

    #[test]
    fn fixed_point_functions_close_to_float() {
        let to_f = |raw: i32, bits: i32| raw as f64 / 2f64.powi(31 - bits);
        for step in 0..=200 {
            let real = -8.0 + step as f64 * 0.04;
            let raw_q4 = (real * 2f64.powi(27)).round() as i32;
            let logistic_err =
                to_f(fixedpoint_logistic(raw_q4, 4), 0) - 1.0 / (1.0 + (-real).exp());
            let tanh_err = to_f(fixedpoint_tanh(raw_q4, 4), 0) - real.tanh();
            assert!(
                logistic_err.abs() < 1e-6,
                "logistic({real}) off by {logistic_err}"
            );
            assert!(tanh_err.abs() < 1e-6, "tanh({real}) off by {tanh_err}");
            if real <= 0.0 {
                let raw_q5 = (real * 2f64.powi(26)).round() as i32;
                let exp_err = to_f(exp_on_negative_values(raw_q5, 5), 0) - real.exp();
                assert!(exp_err.abs() < 1e-6, "exp({real}) off by {exp_err}");
            }
        }
        assert_eq!(exp_on_negative_values(0, 5), i32::MAX);
        assert_eq!(fixedpoint_logistic(0, 4), Q30);
        assert_eq!(fixedpoint_tanh(0, 4), 0);
        // 1 / (1 + 0.5) in Q0.31.
        let two_thirds = to_f(one_over_one_plus_x_for_x_in_0_1(Q30), 0);
        assert!((two_thirds - 2.0 / 3.0).abs() < 1e-8);
    }

    #[test]
    fn logistic_and_tanh_by_hand() {
        // Scale 0.1: 0.1 * 2^27 ≈ 0.8 * 2^24 → shift 24, radius floor(15 * 2^27 / 2^24) = 120.
        let params = sigmoid_input_params(0.1);
        assert_eq!(params.input_left_shift, 24);
        assert_eq!(params.input_range_radius, 120);
        let q = Quant::new(0.1, 3);
        // Input at the zero point: logistic 0.5 → 128 / 256 → 0; tanh 0 → 0.
        assert_eq!(logistic(&[3], q), vec![0]);
        assert_eq!(tanh(&[3], q), vec![0]);
        // Beyond ±radius: saturated.
        assert_eq!(logistic(&[127, -128], Quant::new(0.1, 0)), vec![127, -128]);
        assert_eq!(tanh(&[127, -128], Quant::new(0.1, 0)), vec![127, -128]);
        // Scale 1/16, x − zp = 16 is 1.0: sigmoid(1) * 256 = 187.1 → 59; tanh(1) * 128 = 97.5.
        let q = Quant::new(0.0625, 0);
        assert_eq!(logistic(&[16, -16], q), vec![59, -59]);
        let t = tanh(&[16], q)[0];
        assert!(t == 97 || t == 98, "tanh(1) → {t}");
    }

    #[test]
    fn quantize_dequantize_requantize() {
        let q = Quant::new(1.0, 0);
        // Halves away from zero; clamped.
        assert_eq!(
            quantize(&[0.5, -0.5, 1.5, 2.5, 1000.0, -1000.0], q),
            vec![1, -1, 2, 3, 127, -128]
        );
        assert_eq!(quantize(&[0.3], Quant::new(0.1, -5)), vec![-2]);
        // Out-of-range floats become INT32_MIN first (x86), then wrap with the zero point.
        assert_eq!(quantize(&[f32::INFINITY, f32::NAN], q), vec![-128, -128]);
        assert_eq!(quantize(&[f32::INFINITY], Quant::new(1.0, -1)), vec![127]);
        assert_eq!(dequantize(&[3, -128], Quant::new(0.5, 1)), vec![1.0, -64.5]);
        // s_in / s_out = 0.5: -3 → -1.5 → -1 (SRDHM rounds that half up), 3 → 2.
        assert_eq!(requantize(&[3, -3], q, Quant::new(2.0, 0)), vec![2, -1]);
        // 0.25: -6 → -1.5 → -2 (RDBPOT rounds that half away from zero).
        assert_eq!(requantize(&[-6, 6], q, Quant::new(4.0, 0)), vec![-2, 2]);
        assert_eq!(
            requantize(&[100], Quant::new(1.0, 10), Quant::new(0.5, -100)),
            vec![80]
        );
    }
}

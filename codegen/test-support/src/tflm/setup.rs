//! Quantization set-up as TFLM computes it, and padding.

use super::*;

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

pub(super) fn effective_filter_size(filter_size: usize, dilation: usize) -> i64 {
    (filter_size as i64 - 1) * dilation as i64 + 1
}

pub(super) fn compute_out_size(
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

pub(super) fn compute_padding_with_offset(
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

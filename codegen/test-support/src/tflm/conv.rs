//! Convolutions and fully connected.

use super::*;

// ---------------------------------------------------------------------------------------------
// Convolutions and fully connected
// ---------------------------------------------------------------------------------------------

/// Index of `[a, b, c, d]` in a row-major 4-D array of `shape`.
pub(super) fn offset4(shape: [usize; 4], a: usize, b: usize, c: usize, d: usize) -> usize {
    ((a * shape[1] + b) * shape[2] + c) * shape[3] + d
}

pub(super) fn clamp_to(value: i32, low: i32, high: i32) -> i32 {
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
pub(super) fn tap_coordinate(
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
pub(super) fn conv_dot(
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

pub(super) fn check_conv_shapes(p: &ConvParams, input_len: usize, filter_len: usize) {
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

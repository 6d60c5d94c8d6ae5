//! Known values, checkable by hand.

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

fn binary(shape1: &'static [usize], shape2: &'static [usize], q: Quant) -> BinaryParams<'static> {
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
        let logistic_err = to_f(fixedpoint_logistic(raw_q4, 4), 0) - 1.0 / (1.0 + (-real).exp());
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

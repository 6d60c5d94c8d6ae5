//! Property tests of Kiln's integer arithmetic against a naive, independent transcription of
//! TensorFlow Lite Micro's (`kiln_test_support::tflm`): random shapes, scales, zero points,
//! per-channel filters, negative and positive shifts. Each op is built as TFLite's importer
//! builds it (from an in-memory model) and evaluated by the graph's evaluator; the results must
//! be equal, element for element.

use kiln_test_support::{int8, tflm};

use int8::*;
use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::graph::eval::evaluate;
use kiln_codegen::graph::quant::{Multipliers, QuantMultiplier};
use kiln_codegen::graph::Graph;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::{
    BuiltinOperator, BuiltinOptions, Conv2DOptions, DepthwiseConv2DOptions, FullyConnectedOptions,
    Padding, ReducerOptions, SoftmaxOptions,
};
use kiln_codegen::tflite::{self, TfTensor};
use proptest::prelude::*;

proptest! {
    #![proptest_config(cases())]

    /// The multiplier set-up and `MultiplyByQuantizedMultiplier`, per tensor and per channel,
    /// for multipliers from 2^-40 (zero in TFLM's fixed point) to 2^10 (negative and positive
    /// shifts), on accumulators of every size up to the ends of the `i32` range.
    #[test]
    fn requantize_matches(
        exps in prop::collection::vec(-40i32..10, 1..5),
        fracs in prop::collection::vec(0.5f64..1.0, 5),
        xs in prop::collection::vec(accumulator(), 40),
    ) {
        let n = exps.len();
        let ms: Vec<f64> = exps.iter().zip(&fracs).map(|(&e, &f)| f * 2f64.powi(e)).collect();
        let each: Vec<QuantMultiplier> = ms.iter().map(|&m| QuantMultiplier::new(m)).collect();
        for (q, &m) in each.iter().zip(&ms) {
            prop_assert_eq!((q.multiplier, q.shift), tflm::quantize_multiplier(m));
        }
        let rows = xs.len() / n;
        let mut g = Graph::new();
        let x = g.input("x", DType::I32, &[rows, n]);
        let ms_graph = if n == 1 {
            Multipliers::Tensor(each[0])
        } else {
            Multipliers::PerAxis { axis: 1, each: each.clone() }
        };
        let y = g.requantize(&x, &ms_graph).unwrap();
        let values = &xs[..rows * n];
        let input = Tensor::new(
            Scalar::I32,
            vec![rows, n],
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ).unwrap();
        let out = evaluate(&g, &[y], &[input]).unwrap();
        let got = out[0].to_i64().unwrap();
        for (i, &v) in values.iter().enumerate() {
            // Inputs that would overflow `x << left` in i32 are outside TFLM's contract.
            let q = each[i % n];
            if (v as i64) << q.left() != ((v as i64) << q.left()) as i32 as i64 {
                continue;
            }
            let want = tflm::multiply_by_quantized_multiplier(v, q.multiplier, q.shift);
            prop_assert_eq!(got[i], want as i64, "x {} by {:?}", v, q);
        }
    }

    /// `clamp(MultiplyByQuantizedMultiplier(x) + zp, lo, hi)`, the requantization that ends
    /// an integer kernel, where the zero point folds into the rounding.
    #[test]
    fn requantize_to_matches(
        exps in prop::collection::vec(-40i32..10, 1..5),
        fracs in prop::collection::vec(0.5f64..1.0, 5),
        xs in prop::collection::vec(accumulator(), 40),
        zp in -128i32..128,
        range in (-128i32..128, -128i32..128),
    ) {
        let n = exps.len();
        let each: Vec<QuantMultiplier> = exps
            .iter()
            .zip(&fracs)
            .map(|(&e, &f)| QuantMultiplier::new(f * 2f64.powi(e)))
            .collect();
        let (lo, hi) = (range.0.min(range.1), range.0.max(range.1));
        let rows = xs.len() / n;
        let mut g = Graph::new();
        let x = g.input("x", DType::I32, &[rows, n]);
        let ms = match n {
            1 => Multipliers::Tensor(each[0]),
            _ => Multipliers::PerAxis { axis: 1, each: each.clone() },
        };
        let y = g.requantize_to(&x, &ms, zp, (lo, hi), DType::I8).unwrap();
        let values = &xs[..rows * n];
        let input = int_tensor(Scalar::I32, &[rows, n], &values.iter().map(|&v| v.into()).collect::<Vec<i64>>());
        let got = evaluate(&g, &[y], &[input]).unwrap()[0].to_i64().unwrap();
        for (i, &v) in values.iter().enumerate() {
            let q = each[i % n];
            if (v as i64) << q.left() != ((v as i64) << q.left()) as i32 as i64 {
                continue;
            }
            let r = tflm::multiply_by_quantized_multiplier(v, q.multiplier, q.shift);
            let want = r.wrapping_add(zp).clamp(lo, hi);
            prop_assert_eq!(got[i], want as i64, "x {} by {:?} + {}", v, q, zp);
        }
    }

    /// int8 `SOFTMAX`: gemmlowp's fixed point, row by row.
    #[test]
    fn softmax_matches(
        rows in 1usize..4,
        depth in 1usize..20,
        scale in 0.01f32..0.5,
        beta in prop::sample::select(vec![1.0f32, 0.5, 2.0]),
        seed in bytes(80),
    ) {
        let x: Vec<i8> = seed[..rows * depth].to_vec();
        let model = one_op(
            BuiltinOperator::Softmax,
            Some(BuiltinOptions::SoftmaxOptions(Box::new(SoftmaxOptions { beta }))),
            vec![
                tensor("x", Scalar::I8, &[rows, depth], quant(&[scale], 3, 0), None),
                tensor("y", Scalar::I8, &[rows, depth], quant(&[1.0 / 256.0], -128, 0), None),
            ],
        );
        let got = run(&model, i8_tensor(&[rows, depth], &x));
        prop_assert_eq!(got, tflm::softmax(&x, depth, scale, beta));
    }

    /// int8 `CONV_2D`: per-channel filters, zero points in and out, padding, strides,
    /// dilations and fused activations.
    #[test]
    fn conv2d_matches(
        geo in geometry(),
        q in scales(4),
        act in any::<u8>(),
        data in bytes(8 * 8 * 3 + 4 * 3 * 3 * 3),
        bias in prop::collection::vec(-3000i32..3000, 4),
    ) {
        let Geo { h, w, c, o, k, stride, dilation, same } = geo.clone();
        let (s_in, zp_in, s_out, zp_out, s_w, per_channel) = q;
        let s_w: Vec<f32> = if per_channel { s_w[..o].to_vec() } else { vec![s_w[0]] };
        let nx = h * w * c;
        let (x, f) = (&data[..nx], &data[nx..nx + o * k[0] * k[1] * c]);
        let (fa, ta) = act_of(act);
        let p = tflm::ConvParams {
            input_shape: [1, h, w, c],
            filter_shape: [o, k[0], k[1], c],
            input: tflm::Quant { scale: s_in, zero_point: zp_in as i32 },
            filter_scales: &s_w,
            output: tflm::Quant { scale: s_out, zero_point: zp_out as i32 },
            stride,
            dilation,
            padding: if same { tflm::Padding::Same } else { tflm::Padding::Valid },
            activation: ta,
        };
        let out = p.conv2d_output_shape();
        let options = Conv2DOptions {
            padding: if same { Padding::Same } else { Padding::Valid },
            stride_h: stride[0] as i32,
            stride_w: stride[1] as i32,
            dilation_h_factor: dilation[0] as i32,
            dilation_w_factor: dilation[1] as i32,
            fused_activation_function: fa,
            ..Default::default()
        };
        let model = one_op(
            BuiltinOperator::Conv2d,
            Some(BuiltinOptions::Conv2DOptions(Box::new(options))),
            vec![
                tensor("x", Scalar::I8, &[1, h, w, c], quant(&[s_in], zp_in as i64, 0), None),
                tensor("w", Scalar::I8, &[o, k[0], k[1], c], quant(&s_w, 0, 0),
                    Some(i8_tensor(&[o, k[0], k[1], c], f))),
                tensor("b", Scalar::I32, &[o], None, Some(i32_tensor(&bias[..o]))),
                tensor("y", Scalar::I8, &out, quant(&[s_out], zp_out as i64, 0), None),
            ],
        );
        let got = run(&model, i8_tensor(&[1, h, w, c], x));
        prop_assert_eq!(got, tflm::conv2d(&p, x, f, Some(&bias[..o])), "{:?}", geo);
    }

    /// int8 `DEPTHWISE_CONV_2D` with channel multipliers 1 and 2.
    #[test]
    fn depthwise_matches(
        geo in geometry(),
        mult in 1usize..3,
        q in scales(6),
        act in any::<u8>(),
        data in bytes(8 * 8 * 3 + 3 * 3 * 6),
        bias in prop::collection::vec(-3000i32..3000, 6),
    ) {
        let Geo { h, w, c, k, stride, dilation, same, .. } = geo.clone();
        let o = c * mult;
        let (s_in, zp_in, s_out, zp_out, s_w, per_channel) = q;
        let s_w: Vec<f32> = if per_channel { s_w[..o].to_vec() } else { vec![s_w[0]] };
        let nx = h * w * c;
        let (x, f) = (&data[..nx], &data[nx..nx + k[0] * k[1] * o]);
        let (fa, ta) = act_of(act);
        let p = tflm::ConvParams {
            input_shape: [1, h, w, c],
            filter_shape: [1, k[0], k[1], o],
            input: tflm::Quant { scale: s_in, zero_point: zp_in as i32 },
            filter_scales: &s_w,
            output: tflm::Quant { scale: s_out, zero_point: zp_out as i32 },
            stride,
            dilation,
            padding: if same { tflm::Padding::Same } else { tflm::Padding::Valid },
            activation: ta,
        };
        let out = p.depthwise_output_shape();
        let options = DepthwiseConv2DOptions {
            padding: if same { Padding::Same } else { Padding::Valid },
            stride_h: stride[0] as i32,
            stride_w: stride[1] as i32,
            dilation_h_factor: dilation[0] as i32,
            dilation_w_factor: dilation[1] as i32,
            depth_multiplier: mult as i32,
            fused_activation_function: fa,
        };
        let model = one_op(
            BuiltinOperator::DepthwiseConv2d,
            Some(BuiltinOptions::DepthwiseConv2DOptions(Box::new(options))),
            vec![
                tensor("x", Scalar::I8, &[1, h, w, c], quant(&[s_in], zp_in as i64, 0), None),
                tensor("w", Scalar::I8, &[1, k[0], k[1], o], quant(&s_w, 0, 3),
                    Some(i8_tensor(&[1, k[0], k[1], o], f))),
                tensor("b", Scalar::I32, &[o], None, Some(i32_tensor(&bias[..o]))),
                tensor("y", Scalar::I8, &out, quant(&[s_out], zp_out as i64, 0), None),
            ],
        );
        let got = run(&model, i8_tensor(&[1, h, w, c], x));
        prop_assert_eq!(got, tflm::depthwise_conv2d(&p, x, f, Some(&bias[..o])), "{:?}", geo);
    }

    /// int8 `FULLY_CONNECTED`, per tensor (scales multiplied in float, as TFLM does) and per
    /// channel.
    #[test]
    fn fully_connected_matches(
        batch in 1usize..4,
        n_in in 1usize..24,
        q in scales(6),
        act in any::<u8>(),
        data in bytes(3 * 24 + 6 * 24),
        bias in prop::collection::vec(-3000i32..3000, 6),
    ) {
        let (s_in, zp_in, s_out, zp_out, s_w, per_channel) = q;
        let o = s_w.len();
        let s_w: Vec<f32> = if per_channel { s_w } else { vec![s_w[0]] };
        let (x, f) = (&data[..batch * n_in], &data[batch * n_in..batch * n_in + o * n_in]);
        let (fa, ta) = act_of(act);
        let p = tflm::FullyConnectedParams {
            filter_shape: [o, n_in],
            input: tflm::Quant { scale: s_in, zero_point: zp_in as i32 },
            filter_scales: &s_w,
            filter_zero_point: 0,
            output: tflm::Quant { scale: s_out, zero_point: zp_out as i32 },
            activation: ta,
        };
        let options = FullyConnectedOptions {
            fused_activation_function: fa,
            ..Default::default()
        };
        let model = one_op(
            BuiltinOperator::FullyConnected,
            Some(BuiltinOptions::FullyConnectedOptions(Box::new(options))),
            vec![
                tensor("x", Scalar::I8, &[batch, n_in], quant(&[s_in], zp_in as i64, 0), None),
                tensor("w", Scalar::I8, &[o, n_in], quant(&s_w, 0, 0),
                    Some(i8_tensor(&[o, n_in], f))),
                tensor("b", Scalar::I32, &[o], None, Some(i32_tensor(&bias))),
                tensor("y", Scalar::I8, &[batch, o], quant(&[s_out], zp_out as i64, 0), None),
            ],
        );
        let got = run(&model, i8_tensor(&[batch, n_in], x));
        prop_assert_eq!(got, tflm::fully_connected(&p, x, f, Some(&bias)));
    }
}

/// Exact halves, which random multipliers almost never hit: the high multiply rounds a negative
/// half up (toward zero), the rounding shift rounds it away from zero.
#[test]
fn requantize_rounds_halves_as_tflm() {
    let xs: Vec<i32> = (-64..64).collect();
    for m in [0.5, 0.25, 0.125, 0.75, 1.0, 2.0, 3.0 / 1024.0] {
        let q = QuantMultiplier::new(m);
        let mut g = Graph::new();
        let x = g.input("x", DType::I32, &[xs.len()]);
        let y = g.requantize(&x, &Multipliers::Tensor(q)).unwrap();
        let input = Tensor::new(
            Scalar::I32,
            vec![xs.len()],
            xs.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
        .unwrap();
        let got = evaluate(&g, &[y], &[input]).unwrap()[0].to_i64().unwrap();
        for (&x, &v) in xs.iter().zip(&got) {
            let want = tflm::multiply_by_quantized_multiplier(x, q.multiplier, q.shift);
            assert_eq!(v, want as i64, "{x} by {m}");
        }
    }
}

proptest! {
    #![proptest_config(cases())]

    /// int8 `LOGISTIC` and `TANH`: gemmlowp's fixed point, saturated beyond the input radius.
    #[test]
    fn logistic_and_tanh_match(
        scale in 0.002f32..0.5,
        zp in any::<i8>(),
        x in bytes(64),
    ) {
        let quant_in = tflm::Quant { scale, zero_point: zp as i32 };
        for (code, zp_out, out_scale) in [
            (BuiltinOperator::Logistic, -128, 1.0 / 256.0),
            (BuiltinOperator::Tanh, 0, 1.0 / 128.0),
        ] {
            let model = one_op(
                code,
                None,
                vec![
                    tensor("x", Scalar::I8, &[64], quant(&[scale], zp as i64, 0), None),
                    tensor("y", Scalar::I8, &[64], quant(&[out_scale], zp_out, 0), None),
                ],
            );
            let got = run(&model, i8_tensor(&[64], &x));
            let want = if code == BuiltinOperator::Logistic {
                tflm::logistic(&x, quant_in)
            } else {
                tflm::tanh(&x, quant_in)
            };
            prop_assert_eq!(got, want, "{:?}", code);
        }
    }
}

proptest! {
    #![proptest_config(cases())]

    /// int8 `MEAN` and `SUM` over the middle axis of `[outer, n, inner]`: the sum of
    /// `x − zp_in` requantized, for `MEAN` with `1/n` folded into the multiplier; `REDUCE_MAX`
    /// and `REDUCE_MIN` of the raw values.
    #[test]
    fn reductions_match(
        outer in 1usize..4,
        n in 1usize..40,
        inner in 1usize..5,
        scale_in in 0.001f32..0.1,
        scale_out in 0.001f32..0.1,
        zp_in in any::<i8>(),
        zp_out in any::<i8>(),
        seed in bytes(4 * 40 * 5),
    ) {
        let shape = [outer, n, inner];
        let x: Vec<i8> = seed[..outer * n * inner].to_vec();
        let axes = i32_tensor(&[1]);
        let qi = tflm::Quant { scale: scale_in, zero_point: zp_in as i32 };
        let qo = tflm::Quant { scale: scale_out, zero_point: zp_out as i32 };
        let options = Some(BuiltinOptions::ReducerOptions(Box::new(ReducerOptions { keep_dims: false })));
        let model = |code, (s, zp): (f32, i8)| {
            one_op(
                code,
                options.clone(),
                vec![
                    tensor("x", Scalar::I8, &shape, quant(&[scale_in], zp_in as i64, 0), None),
                    tensor("axes", Scalar::I32, &[1], None, Some(axes.clone())),
                    tensor("y", Scalar::I8, &[outer, inner], quant(&[s], zp as i64, 0), None),
                ],
            )
        };
        let input = || i8_tensor(&shape, &x);
        for (code, sum) in [(BuiltinOperator::Mean, false), (BuiltinOperator::Sum, true)] {
            let got = run(&model(code, (scale_out, zp_out)), input());
            let want = tflm::mean_or_sum(&x, (outer, n, inner), qi, qo, sum);
            prop_assert_eq!(got, want, "{:?}", code);
        }
        for (code, pick) in [
            (BuiltinOperator::ReduceMax, i8::max as fn(i8, i8) -> i8),
            (BuiltinOperator::ReduceMin, i8::min),
        ] {
            let got = run(&model(code, (scale_in, zp_in)), input());
            let want: Vec<i8> = (0..outer * inner)
                .map(|j| {
                    let (o, i) = (j / inner, j % inner);
                    (0..n).map(|k| x[(o * n + k) * inner + i]).reduce(pick).unwrap()
                })
                .collect();
            prop_assert_eq!(got, want, "{:?}", code);
        }
    }
}

/// A tensor of integers of type `dtype`.
/// An `i32` accumulator: mostly of a layer's usual size, some anywhere in the `i32` range,
/// some at its ends.
fn accumulator() -> impl Strategy<Value = i32> {
    prop_oneof![
        6 => -(1i32 << 20)..(1 << 20),
        3 => any::<i32>(),
        1 => prop::sample::select(vec![i32::MIN, i32::MIN + 1, i32::MAX, i32::MAX - 1]),
    ]
}

fn int_tensor(dtype: Scalar, shape: &[usize], v: &[i64]) -> Tensor {
    Tensor::from_i64(dtype, shape.to_vec(), v).unwrap()
}

/// The bias of a 16x8 op, as the naive reference takes it and as a model's tensor: `i64`,
/// `i32`, or none (`kind` 0, 1, 2).
fn bias_16x8(kind: u8, values: &[i64]) -> (Option<TfTensor>, Vec<i32>, Vec<i64>) {
    let n = values.len();
    match kind % 3 {
        0 => (
            Some(tensor(
                "b",
                Scalar::I64,
                &[n],
                None,
                Some(int_tensor(Scalar::I64, &[n], values)),
            )),
            vec![],
            values.to_vec(),
        ),
        1 => (
            Some(tensor(
                "b",
                Scalar::I32,
                &[n],
                None,
                Some(int_tensor(Scalar::I32, &[n], values)),
            )),
            values.iter().map(|&v| v as i32).collect(),
            vec![],
        ),
        _ => (None, vec![], vec![]),
    }
}

fn reference_bias<'a>(kind: u8, b32: &'a [i32], b64: &'a [i64]) -> tflm::Bias16x8<'a> {
    match kind % 3 {
        0 => tflm::Bias16x8::I64(Some(b64)),
        1 => tflm::Bias16x8::I32(Some(b32)),
        _ => tflm::Bias16x8::I64(None),
    }
}

/// The one-op model `code` on int16 `x`, its tensors in order (an absent bias is left out of
/// the op's inputs, as a converter writes it), as int16 values.
fn run_16x8(
    code: BuiltinOperator,
    options: BuiltinOptions,
    x: (TfTensor, &[i16]),
    w: TfTensor,
    bias: Option<TfTensor>,
    y: TfTensor,
) -> Vec<i16> {
    let shape = x.0.shape.clone();
    let mut tensors = vec![x.0, w];
    tensors.extend(bias);
    tensors.push(y);
    let model = one_op(code, Some(options), tensors);
    let values: Vec<i64> = x.1.iter().map(|&v| v.into()).collect();
    let imported = tflite::import(&model).unwrap();
    let input = int_tensor(Scalar::I16, &shape, &values);
    let out = evaluate(&imported.graph, &imported.outputs, &[input]).unwrap();
    out[0].to_i64().unwrap().iter().map(|&v| v as i16).collect()
}

/// Scales and small zero points of a 16x8 op: input, output, one filter scale per channel.
fn scales_16x8(o: usize) -> impl Strategy<Value = (f32, i32, f32, i32, Vec<f32>, bool)> {
    (
        0.0001f32..0.01,
        -4i32..5,
        0.0002f32..0.05,
        -4i32..5,
        prop::collection::vec(0.0005f32..0.05, o),
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(cases())]

    /// 16x8 `CONV_2D`: int16 activations, int8 per-channel filters, an int64, int32 or no
    /// bias (each its own accumulator and requantization), zero points ignored by the kernel.
    #[test]
    fn conv2d_16x8_matches(
        geo in geometry(),
        q in scales_16x8(4),
        act in any::<u8>(),
        x in prop::collection::vec(any::<i16>(), 8 * 8 * 3),
        f in bytes(4 * 3 * 3 * 3),
        bias in prop::collection::vec(-(1i64 << 24)..(1i64 << 24), 4),
        kind in any::<u8>(),
    ) {
        let Geo { h, w, c, o, k, stride, dilation, same } = geo.clone();
        let (s_in, zp_in, s_out, zp_out, s_w, per_channel) = q;
        let s_w: Vec<f32> = if per_channel { s_w[..o].to_vec() } else { vec![s_w[0]] };
        let (x, f) = (&x[..h * w * c], &f[..o * k[0] * k[1] * c]);
        let bias = &bias[..o];
        let (fa, ta) = act_of(act);
        let p = tflm::ConvParams {
            input_shape: [1, h, w, c],
            filter_shape: [o, k[0], k[1], c],
            input: tflm::Quant { scale: s_in, zero_point: zp_in },
            filter_scales: &s_w,
            output: tflm::Quant { scale: s_out, zero_point: zp_out },
            stride,
            dilation,
            padding: if same { tflm::Padding::Same } else { tflm::Padding::Valid },
            activation: ta,
        };
        let out = p.conv2d_output_shape();
        let options = Conv2DOptions {
            padding: if same { Padding::Same } else { Padding::Valid },
            stride_h: stride[0] as i32,
            stride_w: stride[1] as i32,
            dilation_h_factor: dilation[0] as i32,
            dilation_w_factor: dilation[1] as i32,
            fused_activation_function: fa,
            ..Default::default()
        };
        let (b, b32, b64) = bias_16x8(kind, bias);
        let got = run_16x8(
            BuiltinOperator::Conv2d,
            BuiltinOptions::Conv2DOptions(Box::new(options)),
            (tensor("x", Scalar::I16, &[1, h, w, c], quant(&[s_in], zp_in.into(), 0), None), x),
            tensor("w", Scalar::I8, &[o, k[0], k[1], c], quant(&s_w, 0, 0),
                Some(i8_tensor(&[o, k[0], k[1], c], f))),
            b,
            tensor("y", Scalar::I16, &out, quant(&[s_out], zp_out.into(), 0), None),
        );
        let want = tflm::conv2d_16x8(&p, x, f, reference_bias(kind, &b32, &b64));
        prop_assert_eq!(got, want, "{:?}", geo);
    }

    /// 16x8 `FULLY_CONNECTED`: the zero points applied, per tensor and per channel, with each
    /// kind of bias.
    #[test]
    fn fully_connected_16x8_matches(
        batch in 1usize..4,
        n_in in 1usize..24,
        q in scales_16x8(6),
        act in any::<u8>(),
        x in prop::collection::vec(any::<i16>(), 3 * 24),
        f in bytes(6 * 24),
        bias in prop::collection::vec(-(1i64 << 24)..(1i64 << 24), 6),
        kind in any::<u8>(),
    ) {
        let (s_in, zp_in, s_out, zp_out, s_w, per_channel) = q;
        let o = s_w.len();
        let s_w: Vec<f32> = if per_channel { s_w } else { vec![s_w[0]] };
        let (x, f) = (&x[..batch * n_in], &f[..o * n_in]);
        let (fa, ta) = act_of(act);
        let p = tflm::FullyConnectedParams {
            filter_shape: [o, n_in],
            input: tflm::Quant { scale: s_in, zero_point: zp_in },
            filter_scales: &s_w,
            filter_zero_point: 0,
            output: tflm::Quant { scale: s_out, zero_point: zp_out },
            activation: ta,
        };
        let options = FullyConnectedOptions {
            fused_activation_function: fa,
            ..Default::default()
        };
        let (b, b32, b64) = bias_16x8(kind, &bias);
        let got = run_16x8(
            BuiltinOperator::FullyConnected,
            BuiltinOptions::FullyConnectedOptions(Box::new(options)),
            (tensor("x", Scalar::I16, &[batch, n_in], quant(&[s_in], zp_in.into(), 0), None), x),
            tensor("w", Scalar::I8, &[o, n_in], quant(&s_w, 0, 0), Some(i8_tensor(&[o, n_in], f))),
            b,
            tensor("y", Scalar::I16, &[batch, o], quant(&[s_out], zp_out.into(), 0), None),
        );
        let want = tflm::fully_connected_16x8(&p, x, f, reference_bias(kind, &b32, &b64));
        prop_assert_eq!(got, want);
    }
}

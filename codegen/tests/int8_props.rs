//! Property tests of Kiln's integer arithmetic against a naive, independent transcription of
//! TensorFlow Lite Micro's (`support/tflm/`): random shapes, scales, zero points,
//! per-channel filters, negative and positive shifts. Each op is built as TFLite's importer
//! builds it (from an in-memory model) and evaluated by the graph's evaluator; the results must
//! be equal, element for element.

#[path = "support/tflm/mod.rs"]
mod tflm;

use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::graph::eval::evaluate;
use kiln_codegen::graph::quant::{Multipliers, QuantMultiplier};
use kiln_codegen::graph::Graph;
use kiln_codegen::onnx::proto::{
    attribute_proto, tensor_shape_proto, type_proto, AttributeProto, GraphProto, ModelProto,
    NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use kiln_codegen::onnx::{self, Requant};
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::{
    ActivationFunctionType, AddOptions, BuiltinOperator, BuiltinOptions, Conv2DOptions,
    DepthwiseConv2DOptions, FullyConnectedOptions, MulOptions, Padding, Pool2DOptions,
    ReducerOptions, SoftmaxOptions, SubOptions,
};
use kiln_codegen::tflite::{self, Quant, TfTensor, TfliteModel};
use proptest::prelude::*;
use prost::Message;

fn cases() -> ProptestConfig {
    ProptestConfig::with_cases(48)
}

fn i8_tensor(shape: &[usize], v: &[i8]) -> Tensor {
    Tensor::new(
        Scalar::I8,
        shape.to_vec(),
        v.iter().map(|&b| b as u8).collect(),
    )
    .unwrap()
}

fn i32_tensor(v: &[i32]) -> Tensor {
    let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    Tensor::new(Scalar::I32, vec![v.len()], bytes).unwrap()
}

fn quant(scale: &[f32], zp: i64, axis: usize) -> Option<Quant> {
    Some(Quant {
        scale: scale.to_vec(),
        zero_point: vec![zp; scale.len()],
        axis,
    })
}

fn tensor(
    name: &str,
    dtype: Scalar,
    shape: &[usize],
    q: Option<Quant>,
    data: Option<Tensor>,
) -> TfTensor {
    TfTensor {
        name: name.into(),
        dtype,
        shape: shape.to_vec(),
        quant: q,
        data,
    }
}

/// A one-operator model: tensor 0 the input, the last the output, the rest constants.
fn one_op(
    code: BuiltinOperator,
    options: Option<BuiltinOptions>,
    tensors: Vec<TfTensor>,
) -> TfliteModel {
    TfliteModel::single_op(code, options, tensors, 1)
}

/// The model's output on `x`, as int8 values.
fn run(model: &TfliteModel, x: Tensor) -> Vec<i8> {
    let imported = tflite::import(model).unwrap();
    let out = evaluate(&imported.graph, &imported.outputs, &[x]).unwrap();
    out[0].bytes().iter().map(|&b| b as i8).collect()
}

fn act_of(a: u8) -> (ActivationFunctionType, tflm::Activation) {
    match a % 3 {
        0 => (ActivationFunctionType::None, tflm::Activation::None),
        1 => (ActivationFunctionType::Relu, tflm::Activation::Relu),
        _ => (ActivationFunctionType::Relu6, tflm::Activation::Relu6),
    }
}

fn bytes(n: usize) -> impl Strategy<Value = Vec<i8>> {
    prop::collection::vec(any::<i8>(), n)
}

/// Geometry of a random 2-D convolution.
#[derive(Debug, Clone)]
struct Geo {
    h: usize,
    w: usize,
    c: usize,
    o: usize,
    k: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    same: bool,
}

fn geometry() -> impl Strategy<Value = Geo> {
    (
        1usize..8,
        1usize..8,
        1usize..4,
        1usize..5,
        1usize..4,
        1usize..4,
    )
        .prop_flat_map(|(h, w, c, o, kh, kw)| {
            (
                Just((h, w, c, o, kh, kw)),
                1usize..3,
                1usize..3,
                1usize..3,
                any::<bool>(),
            )
        })
        .prop_map(|((h, w, c, o, kh, kw), s, d, s2, same)| {
            let span = |k: usize| d * (k - 1) + 1;
            // VALID needs the window inside the input.
            let same = same || span(kh) > h || span(kw) > w;
            Geo {
                h,
                w,
                c,
                o,
                k: [kh, kw],
                stride: [s, s2],
                dilation: [d, d],
                same,
            }
        })
}

/// Scales and zero points: input, output, and one filter scale per output channel.
fn scales(o: usize) -> impl Strategy<Value = (f32, i8, f32, i8, Vec<f32>, bool)> {
    (
        0.002f32..0.2,
        any::<i8>(),
        0.005f32..0.5,
        any::<i8>(),
        prop::collection::vec(0.0005f32..0.05, o),
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(cases())]

    /// The multiplier set-up and `MultiplyByQuantizedMultiplier`, per tensor and per channel,
    /// for multipliers from 2^-20 to 2^10 (negative and positive shifts).
    #[test]
    fn requantize_matches(
        exps in prop::collection::vec(-20i32..10, 1..5),
        fracs in prop::collection::vec(0.5f64..1.0, 5),
        xs in prop::collection::vec(-(1i32 << 20)..(1 << 20), 40),
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

/// An ONNX tensor of integers (`elem` 3: int8, 6: int32) or of one float.
fn onnx_tensor(name: &str, elem: i32, dims: &[usize], values: &[f64]) -> TensorProto {
    let raw = values
        .iter()
        .flat_map(|&v| match elem {
            1 => (v as f32).to_le_bytes().to_vec(),
            6 => (v as i32).to_le_bytes().to_vec(),
            _ => vec![v as i8 as u8],
        })
        .collect();
    TensorProto {
        name: Some(name.into()),
        data_type: Some(elem),
        dims: dims.iter().map(|&d| d as i64).collect(),
        raw_data: Some(raw),
        ..Default::default()
    }
}

fn ints_attr(name: &str, v: &[usize]) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(attribute_proto::AttributeType::Ints as i32),
        ints: v.iter().map(|&x| x as i64).collect(),
        ..Default::default()
    }
}

fn int8_value(name: &str, dims: &[usize]) -> ValueInfoProto {
    let dim = |d: &usize| tensor_shape_proto::Dimension {
        value: Some(tensor_shape_proto::dimension::Value::DimValue(*d as i64)),
        ..Default::default()
    };
    let tensor = type_proto::Tensor {
        elem_type: Some(3),
        shape: Some(TensorShapeProto {
            dim: dims.iter().map(dim).collect(),
        }),
    };
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(tensor)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(cases())]

    /// ONNX `QLinearConv` with `--requant tflm` is TFLM's int8 convolution: the naive
    /// transcription's, on the same values laid out NCHW.
    #[test]
    fn qlinear_conv_with_tflm_requantization_matches_tflm(
        geo in geometry(),
        q in scales(4),
        data in bytes(8 * 8 * 3 + 4 * 3 * 3 * 3),
        bias in prop::collection::vec(-3000i32..3000, 4),
    ) {
        let Geo { h, w, c, o, k, stride, dilation, same } = geo.clone();
        let (s_in, zp_in, s_out, zp_out, s_w, per_channel) = q;
        let s_w: Vec<f32> = if per_channel { s_w[..o].to_vec() } else { vec![s_w[0]] };
        let (x, f) = (&data[..h * w * c], &data[h * w * c..h * w * c + o * k[0] * k[1] * c]);
        let p = tflm::ConvParams {
            input_shape: [1, h, w, c],
            filter_shape: [o, k[0], k[1], c],
            input: tflm::Quant { scale: s_in, zero_point: zp_in as i32 },
            filter_scales: &s_w,
            output: tflm::Quant { scale: s_out, zero_point: zp_out as i32 },
            stride,
            dilation,
            padding: if same { tflm::Padding::Same } else { tflm::Padding::Valid },
            activation: tflm::Activation::None,
        };
        let want = tflm::conv2d(&p, x, f, Some(&bias[..o]));
        let [_, oh, ow, _] = p.conv2d_output_shape();
        let pad = p.padding_values();
        // NHWC → NCHW, OHWI → OIHW.
        let nchw = |v: &[i8], [d0, d1, d2, d3]: [usize; 4]| -> Vec<f64> {
            let mut out = vec![0.0; v.len()];
            for a in 0..d0 { for y in 0..d1 { for x in 0..d2 { for ch in 0..d3 {
                out[((a * d3 + ch) * d1 + y) * d2 + x] = v[((a * d1 + y) * d2 + x) * d3 + ch] as f64;
            }}}}
            out
        };
        let f64s = |v: &[f32]| v.iter().map(|&s| s as f64).collect::<Vec<_>>();
        let node = NodeProto {
            op_type: Some("QLinearConv".into()),
            input: ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"].map(String::from).to_vec(),
            output: vec!["y".into()],
            attribute: vec![
                ints_attr("kernel_shape", &k),
                ints_attr("strides", &stride),
                ints_attr("dilations", &dilation),
                ints_attr("pads", &[pad.height, pad.width, pad.height + pad.height_offset, pad.width + pad.width_offset]),
            ],
            ..Default::default()
        };
        let graph = GraphProto {
            name: Some("g".into()),
            node: vec![node],
            input: vec![int8_value("x", &[1, c, h, w])],
            output: vec![int8_value("y", &[1, o, oh, ow])],
            initializer: vec![
                onnx_tensor("sx", 1, &[], &[s_in as f64]),
                onnx_tensor("zx", 3, &[], &[zp_in as f64]),
                onnx_tensor("w", 3, &[o, c, k[0], k[1]], &nchw(f, [o, k[0], k[1], c])),
                onnx_tensor("sw", 1, &[s_w.len()], &f64s(&s_w)),
                onnx_tensor("zw", 3, &[s_w.len()], &vec![0.0; s_w.len()]),
                onnx_tensor("sy", 1, &[], &[s_out as f64]),
                onnx_tensor("zy", 3, &[], &[zp_out as f64]),
                onnx_tensor("b", 6, &[o], &bias[..o].iter().map(|&b| b as f64).collect::<Vec<_>>()),
            ],
            ..Default::default()
        };
        let model = ModelProto {
            ir_version: Some(8),
            opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(19) }],
            graph: Some(graph),
            ..Default::default()
        };
        let loaded = onnx::load_bytes(&model.encode_to_vec()).unwrap();
        let imported = onnx::import_with(&loaded, &[], Requant::Tflm).unwrap();
        let xt = Tensor::new(Scalar::I8, vec![1, c, h, w], nchw(x, [1, h, w, c]).iter().map(|&v| v as i8 as u8).collect()).unwrap();
        let out = evaluate(&imported.graph, &imported.outputs, &[xt]).unwrap();
        let got: Vec<i8> = out[0].bytes().iter().map(|&b| b as i8).collect();
        let want: Vec<f64> = nchw(&want, [1, oh, ow, o]);
        let want: Vec<i8> = want.iter().map(|&v| v as i8).collect();
        prop_assert_eq!(got, want, "{:?}", geo);
    }
}

/// A one-node ONNX model on int8 `x`, its constants given as initializers.
fn onnx_one_node(node: NodeProto, x: &[usize], y: &[usize], init: Vec<TensorProto>) -> Vec<u8> {
    let graph = GraphProto {
        name: Some("g".into()),
        node: vec![node],
        input: vec![int8_value("x", x)],
        output: vec![int8_value("y", y)],
        initializer: init,
        ..Default::default()
    };
    let opset = |domain: &str, v: i64| OperatorSetIdProto {
        domain: Some(domain.into()),
        version: Some(v),
    };
    let model = ModelProto {
        ir_version: Some(8),
        opset_import: vec![opset("", 19), opset("com.microsoft", 1)],
        graph: Some(graph),
        ..Default::default()
    };
    model.encode_to_vec()
}

/// A dense layer's quantization: `(s_in, zp_in, s_out, zp_out, per-channel or one s_w)`.
type DenseQuant = (f32, i8, f32, i8, Vec<f32>);

/// onnxruntime's `QGemm` on `x` (`[batch, n_in]`) with the weight `f` stored transposed (`[o,
/// n_in]`, as a dense layer stores it) and `--requant tflm`: Kiln's output, and TFLM's
/// `FULLY_CONNECTED` by the naive transcription.
fn qgemm_tflm(q: DenseQuant, x: &[i8], f: &[i8], bias: &[i32], n_in: usize) -> (Vec<i8>, Vec<i8>) {
    let (s_in, zp_in, s_out, zp_out, s_w) = q;
    let (o, batch) = (bias.len(), x.len() / n_in);
    let p = tflm::FullyConnectedParams {
        filter_shape: [o, n_in],
        input: tflm::Quant {
            scale: s_in,
            zero_point: zp_in as i32,
        },
        filter_scales: &s_w,
        filter_zero_point: 0,
        output: tflm::Quant {
            scale: s_out,
            zero_point: zp_out as i32,
        },
        activation: tflm::Activation::None,
    };
    let want = tflm::fully_connected(&p, x, f, Some(bias));
    let node = NodeProto {
        op_type: Some("QGemm".into()),
        domain: Some("com.microsoft".into()),
        input: ["x", "sx", "zx", "w", "sw", "zw", "b", "sy", "zy"]
            .map(String::from)
            .to_vec(),
        output: vec!["y".into()],
        attribute: vec![AttributeProto {
            name: Some("transB".into()),
            r#type: Some(attribute_proto::AttributeType::Int as i32),
            i: Some(1),
            ..Default::default()
        }],
        ..Default::default()
    };
    let floats = |v: &[f32]| v.iter().map(|&s| s as f64).collect::<Vec<_>>();
    let init = vec![
        onnx_tensor("sx", 1, &[], &[s_in as f64]),
        onnx_tensor("zx", 3, &[], &[zp_in as f64]),
        onnx_tensor(
            "w",
            3,
            &[o, n_in],
            &f.iter().map(|&b| b as f64).collect::<Vec<_>>(),
        ),
        onnx_tensor("sw", 1, &[s_w.len()], &floats(&s_w)),
        onnx_tensor("zw", 3, &[s_w.len()], &vec![0.0; s_w.len()]),
        onnx_tensor(
            "b",
            6,
            &[o],
            &bias.iter().map(|&b| b as f64).collect::<Vec<_>>(),
        ),
        onnx_tensor("sy", 1, &[], &[s_out as f64]),
        onnx_tensor("zy", 3, &[], &[zp_out as f64]),
    ];
    let bytes = onnx_one_node(node, &[batch, n_in], &[batch, o], init);
    let loaded = onnx::load_bytes(&bytes).unwrap();
    let imported = onnx::import_with(&loaded, &[], Requant::Tflm).unwrap();
    let out = evaluate(
        &imported.graph,
        &imported.outputs,
        &[i8_tensor(&[batch, n_in], x)],
    );
    let got = out.unwrap()[0].bytes().iter().map(|&b| b as i8).collect();
    (got, want)
}

proptest! {
    #![proptest_config(cases())]

    /// onnxruntime's `QGemm` with `--requant tflm` is TFLM's int8 `FULLY_CONNECTED`, per tensor
    /// and per channel.
    #[test]
    fn qgemm_with_tflm_requantization_matches_tflm(
        batch in 1usize..4,
        n_in in 1usize..24,
        q in scales(6),
        data in bytes(3 * 24 + 6 * 24),
        bias in prop::collection::vec(-3000i32..3000, 6),
    ) {
        let (s_in, zp_in, s_out, zp_out, s_w, per_channel) = q;
        let s_w: Vec<f32> = if per_channel { s_w } else { vec![s_w[0]] };
        let o = bias.len();
        let (x, f) = (&data[..batch * n_in], &data[batch * n_in..batch * n_in + o * n_in]);
        let (got, want) = qgemm_tflm((s_in, zp_in, s_out, zp_out, s_w), x, f, &bias, n_in);
        prop_assert_eq!(got, want);
    }
}

/// A per-tensor dense layer's multiplier is TFLM's float product of the scales: on these
/// scales and this accumulator it requantizes one step away from the product in double.
#[test]
fn qgemm_with_tflm_requantization_multiplies_per_tensor_scales_in_float() {
    let (s_in, s_w, s_out) = (0.190_299_3_f32, 0.023_542_212_f32, 0.381_287_13_f32);
    let acc = -10_425;
    let m = |scale: f64| tflm::quantize_multiplier(scale);
    let (mf, md) = (
        m(tflm::fully_connected_per_tensor_scale(s_in, s_w, s_out)),
        m(tflm::conv_effective_scale(s_in, s_w, s_out)),
    );
    let requantize =
        |(mult, shift): (i32, i32)| tflm::multiply_by_quantized_multiplier(acc, mult, shift);
    assert_ne!(
        requantize(mf),
        requantize(md),
        "the case no longer tells the two apart"
    );
    // x = −1, w = 1: the accumulator is the bias less one.
    let (got, want) = qgemm_tflm((s_in, 0, s_out, 0, vec![s_w]), &[-1], &[1], &[acc + 1], 1);
    assert_eq!(got, want);
    assert_eq!(i32::from(got[0]), requantize(mf));
}

/// A broadcast of `[1, h, w, c]` for the second operand of a binary op: the whole shape, one
/// value per channel, one per row, or a single value.
fn broadcast_of(shape: [usize; 4], pick: u8) -> Vec<usize> {
    let [n, h, w, c] = shape;
    match pick % 4 {
        0 => vec![n, h, w, c],
        1 => vec![c],
        2 => vec![n, h, 1, 1],
        _ => vec![1],
    }
}

proptest! {
    #![proptest_config(cases())]

    /// int8 `ADD`, `SUB` and `MUL`: scales and zero points on each side and out, broadcasting,
    /// fused activations (the set-up in double for ADD, in float for SUB, as TFLM's).
    #[test]
    fn binary_ops_match(
        shape in (1usize..4, 1usize..5, 1usize..4),
        pick in any::<u8>(),
        op in 0u8..3,
        q1 in (0.005f32..0.5, any::<i8>()),
        q2 in (0.005f32..0.5, any::<i8>()),
        qo in (0.005f32..0.5, any::<i8>()),
        act in any::<u8>(),
        data in bytes(2 * 48),
    ) {
        let (h, w, c) = shape;
        let s1 = [1, h, w, c];
        let s2 = broadcast_of(s1, pick);
        let (n1, n2) = (h * w * c, s2.iter().product::<usize>());
        let (a, b) = (&data[..n1], &data[48..48 + n2]);
        let (fa, ta) = act_of(act);
        let tq = |(s, z): (f32, i8)| tflm::Quant { scale: s, zero_point: z as i32 };
        let p = tflm::BinaryParams {
            input1_shape: &s1,
            input1: tq(q1),
            input2_shape: &s2,
            input2: tq(q2),
            output: tq(qo),
            activation: ta,
        };
        let (code, options, want) = match op {
            0 => (
                BuiltinOperator::Add,
                BuiltinOptions::AddOptions(Box::new(AddOptions {
                    fused_activation_function: fa,
                    ..Default::default()
                })),
                tflm::add(&p, a, b),
            ),
            1 => (
                BuiltinOperator::Sub,
                BuiltinOptions::SubOptions(Box::new(SubOptions {
                    fused_activation_function: fa,
                    ..Default::default()
                })),
                tflm::sub(&p, a, b),
            ),
            _ => (
                BuiltinOperator::Mul,
                BuiltinOptions::MulOptions(Box::new(MulOptions {
                    fused_activation_function: fa,
                })),
                tflm::mul(&p, a, b),
            ),
        };
        let model = one_op(
            code,
            Some(options),
            vec![
                tensor("a", Scalar::I8, &s1, quant(&[q1.0], q1.1 as i64, 0), None),
                tensor("b", Scalar::I8, &s2, quant(&[q2.0], q2.1 as i64, 0), Some(i8_tensor(&s2, b))),
                tensor("y", Scalar::I8, &s1, quant(&[qo.0], qo.1 as i64, 0), None),
            ],
        );
        prop_assert_eq!(run(&model, i8_tensor(&s1, a)), want);
    }

    /// int8 `AVERAGE_POOL_2D` (the in-bounds count, rounding halves away from zero) and
    /// `MAX_POOL_2D`: windows, strides, SAME and VALID, fused activations.
    #[test]
    fn pools_match(
        geo in geometry(),
        average in any::<bool>(),
        q in (0.005f32..0.5, any::<i8>()),
        act in any::<u8>(),
        x in bytes(8 * 8 * 3),
    ) {
        let Geo { h, w, c, k, stride, same, .. } = geo.clone();
        let x = &x[..h * w * c];
        let (fa, ta) = act_of(act);
        let p = tflm::PoolParams {
            input_shape: [1, h, w, c],
            filter: k,
            stride,
            padding: if same { tflm::Padding::Same } else { tflm::Padding::Valid },
            activation: ta,
            quant: tflm::Quant { scale: q.0, zero_point: q.1 as i32 },
        };
        let out = p.output_shape();
        let options = Pool2DOptions {
            padding: if same { Padding::Same } else { Padding::Valid },
            stride_w: stride[1] as i32,
            stride_h: stride[0] as i32,
            filter_width: k[1] as i32,
            filter_height: k[0] as i32,
            fused_activation_function: fa,
        };
        let (code, want) = match average {
            true => (BuiltinOperator::AveragePool2d, tflm::average_pool2d(&p, x)),
            false => (BuiltinOperator::MaxPool2d, tflm::max_pool2d(&p, x)),
        };
        let model = one_op(
            code,
            Some(BuiltinOptions::Pool2DOptions(Box::new(options))),
            vec![
                tensor("x", Scalar::I8, &[1, h, w, c], quant(&[q.0], q.1 as i64, 0), None),
                tensor("y", Scalar::I8, &out, quant(&[q.0], q.1 as i64, 0), None),
            ],
        );
        prop_assert_eq!(run(&model, i8_tensor(&[1, h, w, c], x)), want, "{:?}", geo);
    }

    /// int8 `QUANTIZE` from int8 (a requantization to other scales) and `DEQUANTIZE`.
    #[test]
    fn quantize_and_dequantize_match(
        qi in (0.005f32..0.5, any::<i8>()),
        qo in (0.005f32..0.5, any::<i8>()),
        x in bytes(40),
    ) {
        let tq = |(s, z): (f32, i8)| tflm::Quant { scale: s, zero_point: z as i32 };
        let model = one_op(
            BuiltinOperator::Quantize,
            None,
            vec![
                tensor("x", Scalar::I8, &[40], quant(&[qi.0], qi.1 as i64, 0), None),
                tensor("y", Scalar::I8, &[40], quant(&[qo.0], qo.1 as i64, 0), None),
            ],
        );
        prop_assert_eq!(run(&model, i8_tensor(&[40], &x)), tflm::requantize(&x, tq(qi), tq(qo)));
        let model = one_op(
            BuiltinOperator::Dequantize,
            None,
            vec![
                tensor("x", Scalar::I8, &[40], quant(&[qi.0], qi.1 as i64, 0), None),
                tensor("y", Scalar::F32, &[40], None, None),
            ],
        );
        let imported = tflite::import(&model).unwrap();
        let out = evaluate(&imported.graph, &imported.outputs, &[i8_tensor(&[40], &x)]).unwrap();
        let got = out[0].to_f32().unwrap();
        let want = tflm::dequantize(&x, tq(qi));
        prop_assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }
}

/// `--requant onnx` rounds exact halves to even, as onnxruntime's MLAS does: `QGemm` with
/// scales 1 · 0.5 / 1 on the accumulators −9 … 9, with output zero points 0 and 3.
#[test]
fn qgemm_with_onnx_requantization_rounds_halves_to_even() {
    let xs: Vec<i8> = (-9..=9).collect();
    for zp in [0i8, 3] {
        let node = NodeProto {
            op_type: Some("QGemm".into()),
            domain: Some("com.microsoft".into()),
            input: ["x", "sx", "zx", "w", "sw", "zw", "", "sy", "zy"]
                .map(String::from)
                .to_vec(),
            output: vec!["y".into()],
            ..Default::default()
        };
        let init = vec![
            onnx_tensor("sx", 1, &[], &[1.0]),
            onnx_tensor("zx", 3, &[], &[0.0]),
            onnx_tensor("w", 3, &[1, 1], &[1.0]),
            onnx_tensor("sw", 1, &[], &[0.5]),
            onnx_tensor("zw", 3, &[], &[0.0]),
            onnx_tensor("sy", 1, &[], &[1.0]),
            onnx_tensor("zy", 3, &[], &[zp as f64]),
        ];
        let n = xs.len();
        let bytes = onnx_one_node(node, &[n, 1], &[n, 1], init);
        let loaded = onnx::load_bytes(&bytes).unwrap();
        let imported = onnx::import_with(&loaded, &[], Requant::Onnx).unwrap();
        let out = evaluate(
            &imported.graph,
            &imported.outputs,
            &[i8_tensor(&[n, 1], &xs)],
        );
        let got: Vec<i8> = out.unwrap()[0].bytes().iter().map(|&b| b as i8).collect();
        let want: Vec<i8> = xs
            .iter()
            .map(|&x| ((f32::from(x) * 0.5).round_ties_even() as i32 + i32::from(zp)) as i8)
            .collect();
        assert_eq!(got, want, "zero point {zp}");
    }
}

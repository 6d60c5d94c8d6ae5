//! Property tests of Kiln's integer arithmetic against a naive, independent transcription of
//! TensorFlow Lite Micro's (`kiln_test_support::tflm`), continued: ONNX's quantized dense layers with
//! TFLM's and onnxruntime's requantization, and TFLite's int8 elementwise binary ops with
//! broadcasting. The results must be equal, element for element.

use kiln_test_support::{int8, tflm};

use int8::*;
use kiln_codegen::dtype::Scalar;
use kiln_codegen::graph::eval::evaluate;
use kiln_codegen::onnx::proto::{
    attribute_proto, tensor_shape_proto, type_proto, AttributeProto, GraphProto, ModelProto,
    NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use kiln_codegen::onnx::{self, Requant};
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::{
    AddOptions, BuiltinOperator, BuiltinOptions, MulOptions, Padding, Pool2DOptions, SubOptions,
};
use kiln_codegen::tflite::{self};
use proptest::prelude::*;
use prost::Message;

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

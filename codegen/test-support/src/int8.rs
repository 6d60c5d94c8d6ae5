//! Shared by the int8 property tests: tensors and one-op TFLite models built in memory, their
//! evaluation by the graph's evaluator, and the strategies for shapes, scales and geometry.

use super::tflm;
use kiln_codegen::dtype::Scalar;
use kiln_codegen::graph::eval::evaluate;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::{ActivationFunctionType, BuiltinOperator, BuiltinOptions};
use kiln_codegen::tflite::{self, Quant, TfTensor, TfliteModel};
use proptest::prelude::*;

pub fn cases() -> ProptestConfig {
    ProptestConfig::with_cases(48)
}

pub fn i8_tensor(shape: &[usize], v: &[i8]) -> Tensor {
    Tensor::new(
        Scalar::I8,
        shape.to_vec(),
        v.iter().map(|&b| b as u8).collect(),
    )
    .unwrap()
}

pub fn i32_tensor(v: &[i32]) -> Tensor {
    let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    Tensor::new(Scalar::I32, vec![v.len()], bytes).unwrap()
}

pub fn quant(scale: &[f32], zp: i64, axis: usize) -> Option<Quant> {
    Some(Quant {
        scale: scale.to_vec(),
        zero_point: vec![zp; scale.len()],
        axis,
    })
}

pub fn tensor(
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
pub fn one_op(
    code: BuiltinOperator,
    options: Option<BuiltinOptions>,
    tensors: Vec<TfTensor>,
) -> TfliteModel {
    TfliteModel::single_op(code, options, tensors, 1)
}

/// The model's output on `x`, as int8 values.
pub fn run(model: &TfliteModel, x: Tensor) -> Vec<i8> {
    let imported = tflite::import(model).unwrap();
    let out = evaluate(&imported.graph, &imported.outputs, &[x]).unwrap();
    out[0].bytes().iter().map(|&b| b as i8).collect()
}

pub fn act_of(a: u8) -> (ActivationFunctionType, tflm::Activation) {
    match a % 3 {
        0 => (ActivationFunctionType::None, tflm::Activation::None),
        1 => (ActivationFunctionType::Relu, tflm::Activation::Relu),
        _ => (ActivationFunctionType::Relu6, tflm::Activation::Relu6),
    }
}

pub fn bytes(n: usize) -> impl Strategy<Value = Vec<i8>> {
    prop::collection::vec(any::<i8>(), n)
}

/// Geometry of a random 2-D convolution.
#[derive(Debug, Clone)]
pub struct Geo {
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub o: usize,
    pub k: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub same: bool,
}

pub fn geometry() -> impl Strategy<Value = Geo> {
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
pub fn scales(o: usize) -> impl Strategy<Value = (f32, i8, f32, i8, Vec<f32>, bool)> {
    (
        0.002f32..0.2,
        any::<i8>(),
        0.005f32..0.5,
        any::<i8>(),
        prop::collection::vec(0.0005f32..0.05, o),
        any::<bool>(),
    )
}

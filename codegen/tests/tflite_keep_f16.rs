//! `keep_f16`: a float16 weight behind `DEQUANTIZE` stays float16 in the bundle's weights
//! (half the bytes) and is widened in the kernel that reads it (a dense layer's product, with no
//! widened copy written out); the outputs are those of the weight widened at compile time, bit
//! for bit.

use kiln_codegen::compile::compile_graph;
use kiln_codegen::dtype::Scalar;
use kiln_codegen::graph::eval::evaluate;
use kiln_codegen::target::Target;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::BuiltinOperator;
use kiln_codegen::tflite::{self, ImportConfig, TensorId, TfOp, TfTensor, TfliteModel};

fn tensor(name: &str, dtype: Scalar, shape: &[usize], data: Option<Tensor>) -> TfTensor {
    TfTensor {
        name: name.into(),
        dtype,
        shape: shape.to_vec(),
        quant: None,
        data,
    }
}

fn op(index: usize, code: BuiltinOperator, inputs: &[u32], output: u32) -> TfOp {
    TfOp {
        index,
        code,
        version: 1,
        custom: None,
        inputs: inputs.iter().map(|&i| Some(TensorId(i))).collect(),
        outputs: vec![TensorId(output)],
        options: None,
        custom_options: Vec::new(),
    }
}

/// `x [3, 40] · dequantize(w [24, 40] float16)ᵀ + b`.
fn model() -> TfliteModel {
    let w: Vec<f64> = (0..24 * 40)
        .map(|i| ((i * 37 % 101) as f64 - 50.0) / 64.0 + 1.0 / 1024.0)
        .collect();
    let w = Tensor::from_f64(Scalar::F16, vec![24, 40], &w).unwrap();
    let b: Vec<f64> = (0..24).map(|i| f64::from(i) / 8.0 - 1.0).collect();
    let b = Tensor::from_f64(Scalar::F32, vec![24], &b).unwrap();
    TfliteModel {
        ops: vec![
            op(0, BuiltinOperator::Dequantize, &[1], 2),
            op(1, BuiltinOperator::FullyConnected, &[0, 2, 3], 4),
        ],
        inputs: vec![TensorId(0)],
        outputs: vec![TensorId(4)],
        tensors: vec![
            tensor("x", Scalar::F32, &[3, 40], None),
            tensor("w_f16", Scalar::F16, &[24, 40], Some(w)),
            tensor("w", Scalar::F32, &[24, 40], None),
            tensor("b", Scalar::F32, &[24], Some(b)),
            tensor("y", Scalar::F32, &[3, 24], None),
        ],
        bodies: Vec::new(),
    }
}

fn input() -> Tensor {
    let x: Vec<f64> = (0..3 * 40)
        .map(|i| ((i * 13 % 29) as f64 - 14.0) / 7.0)
        .collect();
    Tensor::from_f64(Scalar::F32, vec![3, 40], &x).unwrap()
}

#[test]
fn kept_f16_weights_give_the_folded_outputs_in_half_the_bytes() {
    let m = model();
    let folded = tflite::import(&m).unwrap();
    let kept = tflite::import_with(
        &m,
        &ImportConfig {
            keep_f16: true,
            ..ImportConfig::default()
        },
    )
    .unwrap();
    let a = evaluate(&folded.graph, &folded.outputs, &[input()]).unwrap();
    let b = evaluate(&kept.graph, &kept.outputs, &[input()]).unwrap();
    assert_eq!(a[0].bytes(), b[0].bytes());

    let target = Target::c();
    let compile = |imported: &kiln_codegen::graph::Imported| {
        compile_graph(
            "m",
            &imported.graph,
            &imported.outputs,
            &target,
            true,
            &mut |_, _| {},
        )
        .unwrap()
    };
    let (bf, bk) = (compile(&folded), compile(&kept));
    let bias = 24 * 4;
    assert_eq!(
        bf.weights.len(),
        24 * 40 * 4 + bias,
        "folded: float32 weights"
    );
    assert!(
        bk.weights.len() < bf.weights.len() / 2 + bias,
        "kept: {} bytes of weights, folded {}",
        bk.weights.len(),
        bf.weights.len()
    );
    assert!(bk.kernels_c.contains("_Float16"), "{}", bk.kernels_c);
    // The product reads the float16 values itself: no kernel writes a widened copy.
    assert_eq!(
        bk.kernel_names.len(),
        bf.kernel_names.len(),
        "{}",
        bk.kernels_c
    );
}

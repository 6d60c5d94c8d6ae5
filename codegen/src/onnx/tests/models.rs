use std::collections::BTreeSet;
use std::path::Path;

use super::{assert_sorted, mlperf_model, test_model};
use crate::onnx::{load, pin_dims, Dim, ElemType, OnnxModel};
use crate::tensorio::read_dir_tensors;

/// What a model file is expected to hold.
struct Expect {
    name: &'static str,
    opset: i64,
    inputs: &'static [(&'static str, &'static [Option<usize>])],
    outputs: &'static [(&'static str, &'static [Option<usize>])],
    ops: &'static [&'static str],
    nodes: usize,
}

const F: Option<usize> = None;

const MLPERF: [Expect; 5] = [
    Expect {
        name: "ad_float",
        opset: 11,
        inputs: &[("input_1", &[Some(1), Some(640)])],
        outputs: &[("Identity", &[Some(1), Some(640)])],
        ops: &["Gemm", "Relu"],
        nodes: 19,
    },
    Expect {
        name: "ic_float",
        opset: 11,
        inputs: &[("input_1", &[Some(1), Some(3), Some(32), Some(32)])],
        outputs: &[("Identity", &[Some(1), Some(10)])],
        ops: &[
            "Add",
            "AveragePool",
            "Conv",
            "Gemm",
            "Relu",
            "Reshape",
            "Softmax",
            "Transpose",
        ],
        nodes: 24,
    },
    Expect {
        name: "kws_float",
        opset: 17,
        inputs: &[("input_1", &[F, Some(49), Some(10), Some(1)])],
        outputs: &[("dense", &[F, Some(12)])],
        ops: &[
            "Add",
            "AveragePool",
            "Conv",
            "MatMul",
            "Relu",
            "Reshape",
            "Softmax",
        ],
        nodes: 24,
    },
    Expect {
        name: "str_ww_float",
        opset: 17,
        inputs: &[("input_1:0", &[F, Some(30), Some(1), Some(40)])],
        outputs: &[("Identity:0", &[F, Some(3)])],
        ops: &[
            "Add",
            "BatchNormalization",
            "Conv",
            "MatMul",
            "Relu",
            "Reshape",
            "Softmax",
            "Transpose",
        ],
        nodes: 23,
    },
    Expect {
        name: "vww_float",
        opset: 11,
        inputs: &[("input_1", &[Some(1), Some(3), Some(96), Some(96)])],
        outputs: &[("Identity", &[Some(1), Some(2)])],
        ops: &[
            "AveragePool",
            "Conv",
            "Gemm",
            "Relu",
            "Reshape",
            "Softmax",
            "Transpose",
        ],
        nodes: 59,
    },
];

const OURS: [Expect; 5] = [
    Expect {
        name: "mlp",
        opset: 13,
        inputs: &[("x", &[F, Some(16)])],
        outputs: &[("probs", &[F, Some(10)])],
        ops: &["Gemm", "Relu", "Softmax"],
        nodes: 5,
    },
    Expect {
        name: "dw_separable",
        opset: 13,
        inputs: &[("image", &[Some(1), Some(3), Some(16), Some(16)])],
        outputs: &[("logits", &[Some(1), Some(5)])],
        ops: &[
            "BatchNormalization",
            "Clip",
            "Conv",
            "Flatten",
            "Gemm",
            "GlobalAveragePool",
            "Relu",
        ],
        nodes: 9,
    },
    Expect {
        name: "residual",
        opset: 7,
        inputs: &[("x", &[Some(1), Some(4), Some(8), Some(8)])],
        outputs: &[("y", &[Some(1), Some(4), Some(4), Some(4)])],
        ops: &[
            "Add",
            "AveragePool",
            "BatchNormalization",
            "Conv",
            "MaxPool",
            "Relu",
        ],
        nodes: 9,
    },
    Expect {
        name: "softmax_head",
        opset: 21,
        inputs: &[("tokens", &[F, Some(8), Some(12)])],
        outputs: &[("scores", &[F, Some(2), Some(24)])],
        ops: &["Add", "MatMul", "Reshape", "Softmax"],
        nodes: 4,
    },
    Expect {
        name: "concat_transpose",
        opset: 13,
        inputs: &[
            ("a", &[Some(1), Some(4), Some(6), Some(6)]),
            ("b", &[Some(1), Some(6), Some(6), Some(4)]),
        ],
        outputs: &[("out", &[Some(1), Some(15), Some(24)])],
        ops: &["Concat", "Constant", "Mul", "Pad", "Reshape", "Transpose"],
        nodes: 6,
    },
];

fn op_types(model: &OnnxModel) -> BTreeSet<&str> {
    model
        .graph
        .nodes
        .iter()
        .map(|n| n.op_type.as_str())
        .collect()
}

fn check(path: &Path, expect: &Expect) -> OnnxModel {
    let model = load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = expect.name;
    assert_eq!(model.opset, expect.opset, "{name}");
    assert_eq!(model.graph.nodes.len(), expect.nodes, "{name}");
    assert_eq!(
        op_types(&model),
        expect.ops.iter().copied().collect(),
        "{name}"
    );
    assert_sorted(&model.graph);
    let shape = |dims: &[Dim]| -> Vec<Option<usize>> {
        let fixed = |d: &Dim| {
            if let Dim::Fixed(n) = d {
                Some(*n)
            } else {
                None
            }
        };
        dims.iter().map(fixed).collect()
    };
    let values = |vs: &[crate::onnx::ValueInfo]| -> Vec<(String, Vec<Option<usize>>)> {
        vs.iter()
            .map(|v| (v.name.clone(), shape(&v.dims)))
            .collect()
    };
    let want = |vs: &[(&str, &[Option<usize>])]| -> Vec<(String, Vec<Option<usize>>)> {
        vs.iter()
            .map(|(n, d)| (n.to_string(), d.to_vec()))
            .collect()
    };
    assert_eq!(
        values(&model.graph.inputs),
        want(expect.inputs),
        "{name} inputs"
    );
    assert_eq!(
        values(&model.graph.outputs),
        want(expect.outputs),
        "{name} outputs"
    );
    let all = model.graph.inputs.iter().chain(&model.graph.outputs);
    assert!(all.clone().all(|v| v.elem == ElemType::F32), "{name}");
    check_reference_data(&model, name);
    model
}

/// The inputs and outputs `scripts/make_references.py` wrote for `name` fit the model.
fn check_reference_data(model: &OnnxModel, name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(name);
    let inputs = read_dir_tensors(&dir, "input").unwrap();
    let pinned = pin_dims(&model.graph.inputs, &[]).unwrap();
    let dims: Vec<_> = inputs.iter().map(|t| t.shape().to_vec()).collect();
    assert_eq!(
        dims,
        pinned.into_iter().map(|(_, d)| d).collect::<Vec<_>>(),
        "{name}"
    );
    let outputs = read_dir_tensors(&dir, "output").unwrap();
    assert_eq!(outputs.len(), model.graph.outputs.len(), "{name}");
    for (t, v) in outputs.iter().zip(&model.graph.outputs) {
        let pinned = pin_dims(std::slice::from_ref(v), &[]).unwrap().remove(0).1;
        assert_eq!(
            (Some(t.dtype()), t.shape()),
            (v.elem.to_scalar(&v.name).ok(), pinned.as_slice()),
            "{name} output {}",
            v.name
        );
    }
}

#[test]
fn loads_the_mlperf_tiny_float_models() {
    for expect in &MLPERF {
        let model = check(&mlperf_model(expect.name), expect);
        assert!(model.producer.starts_with("tf"), "{}", model.producer);
    }
}

#[test]
fn loads_kilns_test_models() {
    for expect in &OURS {
        let model = check(&test_model(expect.name), expect);
        assert_eq!(model.producer, "kiln-test-models");
    }
}

#[test]
fn lists_the_op_types_of_the_mlperf_tiny_models() {
    let mut all = BTreeSet::new();
    for expect in &MLPERF {
        let model = load(&mlperf_model(expect.name)).unwrap();
        let ops = op_types(&model);
        println!(
            "{:>13}: {}",
            expect.name,
            ops.iter().copied().collect::<Vec<_>>().join(" ")
        );
        all.extend(ops.into_iter().map(String::from));
    }
    println!(
        "{:>13}: {}",
        "all",
        all.iter().cloned().collect::<Vec<_>>().join(" ")
    );
    assert_eq!(all.len(), 10);
}

#[test]
fn initializers_listed_as_inputs_are_not_inputs() {
    let model = load(&test_model("residual")).unwrap();
    assert_eq!(model.ir_version, 3);
    assert_eq!(model.graph.initializers.len(), 11);
    assert_eq!(model.graph.inputs.len(), 1);
    let (name, weight) = &model.graph.initializers[0];
    assert_eq!((name.as_str(), weight.shape()), ("c1.w", &[4, 4, 3, 3][..]));
    assert_eq!(weight.bytes().len(), 4 * 4 * 3 * 3 * 4);
}

#[test]
fn unnamed_nodes_get_op_and_index_names() {
    let model = load(&test_model("concat_transpose")).unwrap();
    let names: Vec<_> = model.graph.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Transpose_0",
            "Concat_1",
            "Pad_2",
            "Constant_3",
            "Mul_4",
            "Reshape_5"
        ]
    );
}

#[test]
fn free_dims_keep_their_names() {
    let model = load(&mlperf_model("kws_float")).unwrap();
    assert_eq!(
        model.graph.inputs[0].dims[0],
        Dim::Free(Some("unk__110".into()))
    );
    let model = load(&test_model("mlp")).unwrap();
    assert_eq!(
        model.graph.inputs[0].dims[0],
        Dim::Free(Some("batch".into()))
    );
}

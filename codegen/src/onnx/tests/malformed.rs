use proptest::prelude::*;
use prost::Message;

use super::protos::{bytes, f32_tensor, graph, model, node, value};
use super::{assert_sorted, mlperf_model, test_model};
use crate::dtype::Scalar;
use crate::onnx::proto::tensor_proto::DataLocation;
use crate::onnx::proto::{ModelProto, OperatorSetIdProto, StringStringEntryProto};
use crate::onnx::{load, load_bytes, ElemType, Narrow, OnnxError};

fn chain_model() -> ModelProto {
    let nodes = vec![node("Relu", &["x"], &["a"]), node("Neg", &["a"], &["y"])];
    model(graph(nodes, &["x"], &["y"]), 13)
}

fn load_err(m: &ModelProto) -> OnnxError {
    load_bytes(&bytes(m)).unwrap_err()
}

#[test]
fn empty_text_and_missing_files_are_errors() {
    assert!(matches!(load_bytes(&[]), Err(OnnxError::NotOnnx { .. })));
    assert!(load_bytes(b"ir_version: 8\ngraph { node { op_type: \"Relu\" } }\n").is_err());
    let err = load(std::path::Path::new("no/such/model.onnx")).unwrap_err();
    assert!(matches!(&err, OnnxError::Io { .. }) && err.to_string().contains("no/such"));
}

/// A cut inside the graph is an error. Protobuf cannot tell a cut between two top-level fields
/// from a shorter file, so a cut after the graph may load, but only with the whole graph.
#[test]
fn truncated_models_are_errors_or_lose_only_trailing_fields() {
    for path in [mlperf_model("kws_float"), test_model("concat_transpose")] {
        let full = std::fs::read(&path).unwrap();
        let whole = load_bytes(&full).unwrap();
        let step = (full.len() / 500).max(1);
        for len in (0..full.len())
            .step_by(step)
            .chain(full.len() - 40..full.len())
        {
            if let Ok(cut) = load_bytes(&full[..len]) {
                assert_eq!(cut.graph, whole.graph, "{} cut at {len}", path.display());
            }
        }
    }
}

proptest! {
    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = load_bytes(&data);
    }

    #[test]
    fn corrupted_models_never_panic(at in 0usize..507, byte in any::<u8>()) {
        let mut data = std::fs::read(test_model("concat_transpose")).unwrap();
        let at = at % data.len();
        data[at] = byte;
        let _ = load_bytes(&data);
    }
}

#[test]
fn nodes_out_of_file_order_are_sorted() {
    let mut m = ModelProto::decode(&*std::fs::read(test_model("mlp")).unwrap()).unwrap();
    m.graph.as_mut().unwrap().node.reverse();
    let sorted = load_bytes(&bytes(&m)).unwrap();
    assert_sorted(&sorted.graph);
    let names: Vec<_> = sorted.graph.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["fc1", "relu1", "fc2", "relu2", "softmax"]);
}

#[test]
fn cycles_and_undefined_or_doubly_defined_values_are_errors() {
    let nodes = vec![
        node("Add", &["x", "b"], &["a"]),
        node("Relu", &["a"], &["b"]),
    ];
    let err = load_err(&model(graph(nodes, &["x"], &["b"]), 13));
    assert!(
        matches!(&err, OnnxError::Cyclic { nodes } if nodes == &["Add_0", "Relu_1"]),
        "{err}"
    );

    let nodes = vec![node("Relu", &["a"], &["a"])];
    assert!(matches!(
        load_err(&model(graph(nodes, &[], &["a"]), 13)),
        OnnxError::Cyclic { .. }
    ));

    let nodes = vec![node("Add", &["x", "nowhere"], &["y"])];
    let err = load_err(&model(graph(nodes, &["x"], &["y"]), 13));
    let msg = err.to_string();
    assert!(matches!(err, OnnxError::UndefinedValue { .. }), "{msg}");
    assert!(msg.contains("Add_0") && msg.contains("nowhere"), "{msg}");

    let nodes = vec![node("Relu", &["x"], &["y"]), node("Neg", &["x"], &["y"])];
    let err = load_err(&model(graph(nodes, &["x"], &["y"]), 13));
    assert!(matches!(err, OnnxError::DuplicateValue { .. }), "{err}");

    let nodes = vec![node("Dropout", &["x", "", "t"], &["y", ""])];
    let m = load_bytes(&bytes(&model(graph(nodes, &["x", "t"], &["y"]), 13))).unwrap();
    assert_eq!(m.graph.nodes[0].inputs, ["x", "", "t"]);
}

#[test]
fn opsets_outside_1_to_27_are_refused() {
    for opset in [0, 28] {
        let err = load_err(&model(chain_model().graph.unwrap(), opset));
        assert!(matches!(err, OnnxError::UnsupportedOpset { opset: o } if o == opset));
        assert!(err.to_string().contains(&opset.to_string()));
    }
    let mut m = chain_model();
    m.opset_import = vec![OperatorSetIdProto {
        domain: Some("ai.onnx.ml".into()),
        version: Some(2),
    }];
    assert!(matches!(load_err(&m), OnnxError::NoDefaultOpset));
    m.opset_import[0].domain = Some("ai.onnx".into());
    m.opset_import[0].version = Some(27);
    assert_eq!(load_bytes(&bytes(&m)).unwrap().opset, 27);
    m.graph = None;
    assert!(matches!(load_err(&m), OnnxError::NoGraph));
}

fn with_initializer(t: crate::onnx::proto::TensorProto) -> ModelProto {
    let mut m = chain_model();
    m.graph.as_mut().unwrap().initializer.push(t);
    m
}

#[test]
fn bad_initializers_are_errors_naming_the_tensor() {
    let mut external = f32_tensor("w", &[2], &[]);
    external.data_location = Some(DataLocation::External as i32);
    external.external_data = vec![StringStringEntryProto {
        key: Some("location".into()),
        value: Some("weights.bin".into()),
    }];
    let err = load_err(&with_initializer(external));
    assert!(
        matches!(&err, OnnxError::ExternalData { tensor } if tensor == "w"),
        "{err}"
    );

    let mut complex = f32_tensor("c", &[1], &[1.0, 2.0]);
    complex.data_type = Some(14);
    let err = load_err(&with_initializer(complex));
    assert!(
        matches!(err, OnnxError::UnknownElemType { code: 14, .. }),
        "{err}"
    );

    let mut text = f32_tensor("s", &[1], &[]);
    text.data_type = Some(8);
    text.string_data = vec![b"hi".to_vec()];
    let err = load_err(&with_initializer(text));
    assert!(matches!(
        err,
        OnnxError::UnsupportedElemType {
            elem: ElemType::String,
            ..
        }
    ));

    let mut packed = f32_tensor("i4", &[3], &[]);
    packed.data_type = Some(Narrow::I4.code());
    packed.raw_data = Some(vec![0x21]);
    let err = load_err(&with_initializer(packed));
    assert!(
        matches!(&err, OnnxError::BadTensor { tensor, reason } if tensor == "i4" && reason.contains("need 2")),
        "{err}"
    );

    let short = f32_tensor("short", &[3], &[1.0, 2.0]);
    let err = load_err(&with_initializer(short));
    assert!(
        matches!(&err, OnnxError::BadTensor { tensor, .. } if tensor == "short"),
        "{err}"
    );

    let mut wide = f32_tensor("wide", &[1], &[]);
    wide.data_type = Some(3);
    wide.int32_data = vec![300];
    assert!(matches!(
        load_err(&with_initializer(wide)),
        OnnxError::BadTensor { .. }
    ));

    let mut raw = f32_tensor("raw", &[2, -1], &[]);
    raw.raw_data = Some(vec![0; 8]);
    assert!(matches!(
        load_err(&with_initializer(raw)),
        OnnxError::BadTensor { .. }
    ));
}

#[test]
fn typed_half_and_bool_data_become_bytes() {
    let mut half = f32_tensor("h", &[2], &[]);
    half.data_type = Some(10);
    half.int32_data = vec![0x3c00, 0xc000];
    let mut flags = f32_tensor("b", &[3], &[]);
    flags.data_type = Some(9);
    flags.int32_data = vec![0, 1, 1];
    let mut m = with_initializer(half);
    m.graph.as_mut().unwrap().initializer.push(flags);
    let loaded = load_bytes(&bytes(&m)).unwrap();
    let (_, h) = &loaded.graph.initializers[0];
    assert_eq!(
        (h.bytes(), h.to_f64()),
        (&[0, 0x3c, 0, 0xc0][..], vec![1.0, -2.0])
    );
    assert_eq!(loaded.graph.initializers[1].1.bytes(), [0, 1, 1]);
}

#[test]
fn narrow_data_reads_into_its_container() {
    let mut brain = f32_tensor("bf", &[2], &[]);
    brain.data_type = Some(Narrow::Bf16.code());
    brain.raw_data = Some(vec![0x80, 0x3f, 0x20, 0xc1]);
    let mut e4m3 = f32_tensor("f8", &[2], &[]);
    e4m3.data_type = Some(Narrow::F8E4M3Fn.code());
    e4m3.int32_data = vec![0x7e, 0xb8];
    let mut m = with_initializer(brain);
    m.graph.as_mut().unwrap().initializer.push(e4m3);
    let loaded = load_bytes(&bytes(&m)).unwrap();
    let (_, bf) = &loaded.graph.initializers[0];
    assert_eq!((bf.dtype(), bf.to_f64()), (Scalar::F32, vec![1.0, -10.0]));
    let (_, f8) = &loaded.graph.initializers[1];
    assert_eq!(f8.to_f64(), vec![448.0, -1.0]);
    assert_eq!(loaded.graph.narrow.get("f8"), Some(&Narrow::F8E4M3Fn));
}

#[test]
fn elem_types_without_a_kiln_scalar_are_typed_errors() {
    let err = ElemType::String.to_scalar("weights").unwrap_err();
    assert!(matches!(&err, OnnxError::UnsupportedElemType { tensor, .. } if tensor == "weights"));
    assert!(err.to_string().contains("string"), "{err}");
    assert_eq!(ElemType::from_code(14), ElemType::Other(14));
    assert_eq!(ElemType::from_code(17), ElemType::Narrow(Narrow::F8E4M3Fn));
    for code in (1..=13).chain(16..=26) {
        assert_eq!(ElemType::from_code(code).code(), code);
    }
}

#[test]
fn non_tensor_and_shapeless_inputs_are_refused() {
    let mut m = chain_model();
    let input = &mut m.graph.as_mut().unwrap().input[0];
    input.r#type.as_mut().unwrap().value = None;
    let err = load_err(&m);
    assert!(matches!(&err, OnnxError::UnsupportedValueType { value, .. } if value == "x"));

    let mut m = chain_model();
    m.graph.as_mut().unwrap().input[0] = value("x", &[None, Some(-1)]);
    let loaded = load_bytes(&bytes(&m)).unwrap();
    assert_eq!(loaded.graph.inputs[0].dims.len(), 2);
}

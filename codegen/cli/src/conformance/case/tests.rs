use std::path::Path;

use prost::Message;

use super::import_case;
use crate::conformance::Outcome;
use kiln_codegen::onnx::proto::tensor_shape_proto::{dimension, Dimension};
use kiln_codegen::onnx::proto::type_proto::{self, Tensor};
use kiln_codegen::onnx::proto::{
    GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto,
    TypeProto, ValueInfoProto,
};
use kiln_codegen::onnx::ElemType;

/// A string value of shape `[1]`.
fn string_value(name: &str) -> ValueInfoProto {
    let one = Dimension {
        value: Some(dimension::Value::DimValue(1)),
        ..Default::default()
    };
    let tensor = Tensor {
        elem_type: Some(ElemType::String.code()),
        shape: Some(TensorShapeProto { dim: vec![one] }),
    };
    ValueInfoProto {
        name: Some(name.to_string()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(tensor)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A case folder: `y = op(x)` over string values, with its data files.
fn string_case(dir: &Path, op: &str) {
    let node = NodeProto {
        op_type: Some(op.to_string()),
        input: vec!["x".to_string()],
        output: vec!["y".to_string()],
        ..Default::default()
    };
    let model = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(GraphProto {
            name: Some("g".to_string()),
            node: vec![node],
            input: vec![string_value("x")],
            output: vec![string_value("y")],
            ..Default::default()
        }),
        ..Default::default()
    };
    std::fs::write(dir.join("model.onnx"), model.encode_to_vec()).unwrap();
    let one = TensorProto {
        data_type: Some(ElemType::String.code()),
        dims: vec![1],
        string_data: vec![b"kiln".to_vec()],
        ..Default::default()
    };
    let data = dir.join("test_data_set_0");
    std::fs::create_dir(&data).unwrap();
    for file in ["input_0.pb", "output_0.pb"] {
        std::fs::write(data.join(file), one.encode_to_vec()).unwrap();
    }
}

fn skip_reason(op: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    string_case(dir.path(), op);
    match import_case(dir.path(), &dir.path().join("test_data_set_0")) {
        Err(Outcome::Skip { reason }) => Some(reason),
        _ => None,
    }
}

#[test]
fn string_data_is_a_skip_for_its_type() {
    let reason = skip_reason("Identity");
    assert_eq!(reason.as_deref(), Some("unsupported element type string"));
}

#[test]
fn an_op_kiln_lacks_is_named_ahead_of_string_data() {
    let reason = skip_reason("StringSplit");
    assert_eq!(reason.as_deref(), Some("unsupported op StringSplit"));
}

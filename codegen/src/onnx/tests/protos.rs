//! Hand-built protobuf messages for models no exporter would write.

use prost::Message;

use crate::onnx::proto::tensor_shape_proto::{dimension, Dimension};
use crate::onnx::proto::type_proto::{self, Tensor};
use crate::onnx::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

pub(super) fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: Some(op.to_string()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

pub(super) fn with_attr(mut n: NodeProto, attr: AttributeProto) -> NodeProto {
    n.attribute.push(attr);
    n
}

/// An attribute with only its name set; fill in the value (and usually `r#type`).
pub(super) fn attr(name: &str) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_string()),
        ..Default::default()
    }
}

/// A float tensor value with the given dims (`None` for a `dim_param`).
pub(super) fn value(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    let dim = |d: &Option<i64>| Dimension {
        value: Some(match d {
            Some(v) => dimension::Value::DimValue(*v),
            None => dimension::Value::DimParam("n".to_string()),
        }),
        ..Default::default()
    };
    let tensor = Tensor {
        elem_type: Some(1),
        shape: Some(TensorShapeProto {
            dim: dims.iter().map(dim).collect(),
        }),
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

pub(super) fn f32_tensor(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.to_string()),
        data_type: Some(1),
        dims: dims.to_vec(),
        float_data: values.to_vec(),
        ..Default::default()
    }
}

pub(super) fn graph(nodes: Vec<NodeProto>, inputs: &[&str], outputs: &[&str]) -> GraphProto {
    GraphProto {
        name: Some("g".to_string()),
        node: nodes,
        input: inputs.iter().map(|n| value(n, &[Some(1)])).collect(),
        output: outputs.iter().map(|n| value(n, &[Some(1)])).collect(),
        ..Default::default()
    }
}

pub(super) fn model(graph: GraphProto, opset: i64) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(opset),
        }],
        graph: Some(graph),
        ..Default::default()
    }
}

pub(super) fn bytes(model: &ModelProto) -> Vec<u8> {
    model.encode_to_vec()
}

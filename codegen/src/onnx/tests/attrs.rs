use super::protos::{attr, bytes, f32_tensor, graph, model, node, value, with_attr};
use super::{mlperf_model, test_model};
use crate::dtype::Scalar;
use crate::error::chain;
use crate::onnx::import::{import, ImportError};
use crate::onnx::ops::OpError;
use crate::onnx::proto::attribute_proto::AttributeType;
use crate::onnx::{load, load_bytes, AttrProblem, OnnxError, OnnxNode};

fn first<'a>(nodes: &'a [OnnxNode], op: &str) -> &'a OnnxNode {
    nodes.iter().find(|n| n.op_type == op).unwrap()
}

#[test]
fn typed_getters_read_real_attributes() {
    let model = load(&mlperf_model("kws_float")).unwrap();
    let conv = first(&model.graph.nodes, "Conv");
    assert_eq!(conv.attrs.ints("kernel_shape").unwrap(), [10, 4]);
    assert_eq!(conv.attrs.ints("pads").unwrap(), [4, 1, 5, 1]);
    assert_eq!(conv.attrs.int_or("group", 1).unwrap(), 1);
    assert_eq!(
        conv.attrs.string_or("auto_pad", "NOTSET".into()).unwrap(),
        "NOTSET"
    );

    let model = load(&mlperf_model("vww_float")).unwrap();
    let pool = first(&model.graph.nodes, "AveragePool");
    assert_eq!(pool.attrs.string("auto_pad").unwrap(), "VALID");
    let gemm = first(&model.graph.nodes, "Gemm");
    assert_eq!(gemm.attrs.float_or("alpha", 0.5).unwrap(), 1.0);

    let model = load(&test_model("residual")).unwrap();
    let bn = first(&model.graph.nodes, "BatchNormalization");
    assert_eq!(bn.attrs.int("spatial").unwrap(), 1);
    assert_eq!(bn.attrs.float("epsilon").unwrap(), 1e-5);
}

#[test]
fn getter_errors_name_node_op_and_attribute() {
    let model = load(&mlperf_model("kws_float")).unwrap();
    let conv = first(&model.graph.nodes, "Conv");
    let err = conv.attrs.int("strides").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&conv.name) && msg.contains("Conv") && msg.contains("strides"),
        "{msg}"
    );
    match err {
        OnnxError::Attribute { problem, .. } => assert_eq!(
            problem,
            AttrProblem::WrongKind {
                expected: "int",
                found: "ints"
            }
        ),
        other => panic!("{other:?}"),
    }
    let err = conv.attrs.floats("nope").unwrap_err();
    assert!(matches!(
        err,
        OnnxError::Attribute {
            problem: AttrProblem::Missing,
            ..
        }
    ));
}

#[test]
fn constant_nodes_read_every_value_form() {
    let loaded = load(&test_model("concat_transpose")).unwrap();
    let value = first(&loaded.graph.nodes, "Constant")
        .attrs
        .constant()
        .unwrap();
    assert_eq!((value.dtype(), value.shape()), (Scalar::F32, &[4][..]));

    let constant = |a| with_attr(node("Constant", &[], &["c"]), a);
    let mut ints = attr("value_ints");
    ints.r#type = Some(AttributeType::Ints as i32);
    ints.ints = vec![3, -1];
    let mut float = attr("value_float");
    float.r#type = Some(AttributeType::Float as i32);
    float.f = Some(0.25);
    let mut tensor = attr("value");
    tensor.t = Some(f32_tensor("", &[2], &[1.0, 2.0])); // no `type`: inferred
    let nodes = vec![constant(ints), constant(float), constant(tensor)];
    let nodes = nodes.into_iter().enumerate().map(|(i, mut n)| {
        n.output = vec![format!("c{i}")];
        n
    });
    let m = load_bytes(&bytes(&model(graph(nodes.collect(), &[], &["c0"]), 13))).unwrap();
    let values: Vec<_> = m
        .graph
        .nodes
        .iter()
        .map(|n| n.attrs.constant().unwrap())
        .collect();
    assert_eq!(
        (values[0].to_i64().unwrap(), values[0].shape().to_vec()),
        (vec![3, -1], vec![2])
    );
    assert_eq!(
        (values[1].to_f32().unwrap(), values[1].shape().len()),
        (vec![0.25], 0)
    );
    assert_eq!(values[2].to_f32().unwrap(), [1.0, 2.0]);
}

#[test]
fn subgraphs_are_read_with_the_outer_values_they_read() {
    // The branch reads `x` from the model's graph; the `If` after the node making `x` in the
    // file comes first, so sorting must see the branch's read.
    let mut body = attr("then_branch");
    body.r#type = Some(AttributeType::Graph as i32);
    body.g = Some(graph(vec![node("Neg", &["x"], &["z"])], &[], &["z"]));
    let n = with_attr(node("If", &["c"], &["y"]), body);
    let make_x = node("Abs", &["w"], &["x"]);
    let m = load_bytes(&bytes(&model(
        graph(vec![n, make_x], &["c", "w"], &["y"]),
        13,
    )))
    .unwrap();
    let if_node = first(&m.graph.nodes, "If");
    let branch = if_node.attrs.graph("then_branch").unwrap();
    assert_eq!(branch.outer, ["x"]);
    assert_eq!(if_node.reads(), ["c", "x"]);
    assert_eq!(m.graph.nodes[0].op_type, "Abs");
    // A subgraph that cannot be read is an error of its attribute, met when a builder asks.
    let mut bad = attr("else_branch");
    bad.r#type = Some(AttributeType::Graph as i32);
    bad.g = Some(graph(vec![node("Neg", &["q"], &["q"])], &[], &["q"]));
    let n = with_attr(node("If", &["c"], &["y"]), bad);
    let m = load_bytes(&bytes(&model(graph(vec![n], &["c"], &["y"]), 13))).unwrap();
    let err = m.graph.nodes[0].attrs.graph("else_branch").unwrap_err();
    assert!(err.to_string().contains("else_branch"), "{err}");
}

#[test]
fn a_node_s_attribute_error_is_its_typed_cause_named_once() {
    let mut axis = attr("axis");
    axis.r#type = Some(AttributeType::Float as i32);
    axis.f = Some(1.5);
    let mut n = with_attr(node("Flatten", &["x"], &["y"]), axis);
    n.name = Some("flat".into());
    let m = load_bytes(&bytes(&model(graph(vec![n], &["x"], &["y"]), 13))).unwrap();
    let err = import(&m, &[]).unwrap_err();
    let ImportError::Node { node, source, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(node, "flat");
    assert!(
        matches!(
            source.as_ref(),
            OpError::Attribute {
                attr,
                problem: AttrProblem::WrongKind { expected: "int", .. },
            } if attr == "axis"
        ),
        "{err:?}"
    );
    assert_eq!(
        chain(&err),
        "node flat (Flatten): attribute \"axis\": expected int, found float"
    );
}

/// Opsets 1 to 6: `Add` with `broadcast` and `axis` lays its second input from that axis on,
/// `Cast` names its type, `Concat` joins the channels when it names no axis.
#[test]
fn old_opsets_keep_their_own_semantics() {
    use crate::graph::eval::evaluate;
    use crate::onnx::proto::AttributeProto;
    use crate::tensor::Tensor;
    let int = |name: &str, v: i64| AttributeProto {
        i: Some(v),
        r#type: Some(AttributeType::Int as i32),
        ..attr(name)
    };
    let add = with_attr(
        with_attr(node("Add", &["x", "b"], &["s"]), int("broadcast", 1)),
        int("axis", 1),
    );
    let cast = with_attr(
        node("Cast", &["s"], &["i"]),
        AttributeProto {
            s: Some(b"INT32".to_vec()),
            r#type: Some(AttributeType::String as i32),
            ..attr("to")
        },
    );
    let concat = node("Concat", &["x", "x"], &["c"]);
    let mut g = graph(vec![add, cast, concat], &["x"], &["i", "c"]);
    g.input = vec![value("x", &[Some(1), Some(2), Some(2)])];
    g.initializer.push(f32_tensor("b", &[2], &[10.0, 20.0]));
    let m = load_bytes(&bytes(&model(g, 3))).unwrap();
    let imported = import(&m, &[]).unwrap();
    let x = Tensor::from_f32(vec![1, 2, 2], &[0.5, 1.5, 2.5, 3.5]).unwrap();
    let out = evaluate(&imported.graph, &imported.outputs, &[x]).unwrap();
    assert_eq!(out[0].dtype(), Scalar::I32);
    assert_eq!(out[0].to_i64(), Some(vec![10, 11, 22, 23]));
    assert_eq!(out[1].shape(), [1, 4, 2]);
}

//! `If`, `Loop` and `Scan` on hand-built models, evaluated with the graph evaluator.

use super::protos::{attr, bytes, model, node, value, with_attr};
use crate::graph::eval::evaluate;
use crate::onnx::import::{import, ImportError};
use crate::onnx::load_bytes;
use crate::onnx::ops::OpError;
use crate::onnx::proto::attribute_proto::AttributeType;
use crate::onnx::proto::{GraphProto, NodeProto, TensorProto, ValueInfoProto};
use crate::tensor::Tensor;

/// A value of element type `elem` (ONNX's code) and `dims`.
fn typed(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    let mut v = value(name, &dims.iter().map(|&d| Some(d)).collect::<Vec<_>>());
    if let Some(crate::onnx::proto::type_proto::Value::TensorType(t)) =
        v.r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        t.elem_type = Some(elem);
    }
    v
}

/// A graph of `nodes` with typed inputs and outputs (outputs untyped, as bodies often are).
fn body(nodes: Vec<NodeProto>, inputs: Vec<ValueInfoProto>, outputs: &[&str]) -> GraphProto {
    GraphProto {
        name: Some("body".into()),
        node: nodes,
        input: inputs,
        output: outputs
            .iter()
            .map(|n| ValueInfoProto {
                name: Some(n.to_string()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn graph_attr(name: &str, g: GraphProto) -> crate::onnx::proto::AttributeProto {
    let mut a = attr(name);
    a.r#type = Some(AttributeType::Graph as i32);
    a.g = Some(g);
    a
}

fn scalar_i64(name: &str, v: i64) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(7),
        int64_data: vec![v],
        ..Default::default()
    }
}

/// The model's outputs on `inputs`, through the importer and the graph evaluator.
fn run(top: GraphProto, inputs: &[Tensor]) -> Result<Vec<Vec<f64>>, ImportError> {
    let m = load_bytes(&bytes(&model(top, 16))).unwrap();
    let imported = import(&m, &[])?;
    let out = evaluate(&imported.graph, &imported.outputs, inputs).unwrap();
    Ok(out.iter().map(|t| t.to_f64()).collect())
}

fn if_model(else_node: NodeProto) -> GraphProto {
    let then_branch = body(vec![node("Neg", &["x"], &["a"])], vec![], &["a"]);
    let else_branch = body(vec![else_node], vec![], &["b"]);
    let n = with_attr(
        with_attr(
            node("If", &["c"], &["y"]),
            graph_attr("then_branch", then_branch),
        ),
        graph_attr("else_branch", else_branch),
    );
    GraphProto {
        name: Some("g".into()),
        node: vec![n],
        input: vec![typed("c", 9, &[1]), typed("x", 1, &[2])],
        output: vec![typed("y", 1, &[2])],
        ..Default::default()
    }
}

#[test]
fn an_if_on_a_run_time_condition_selects_between_its_branches() {
    let x = Tensor::from_f32(vec![2], &[-2.0, 3.0]).unwrap();
    let cond = |c: u8| Tensor::new(crate::dtype::Scalar::Bool, vec![1], vec![c]).unwrap();
    let m = || if_model(node("Identity", &["x"], &["b"]));
    assert_eq!(run(m(), &[cond(1), x.clone()]).unwrap()[0], [2.0, -3.0]);
    assert_eq!(run(m(), &[cond(0), x]).unwrap()[0], [-2.0, 3.0]);
    // Branches of other shapes cannot be selected between at run time.
    let sum = with_attr(node("ReduceSum", &["x"], &["b"]), {
        let mut a = attr("keepdims");
        a.r#type = Some(AttributeType::Int as i32);
        a.i = Some(1);
        a
    });
    let err = run(if_model(sum), &[]).unwrap_err();
    let ImportError::Node { source, .. } = &err else {
        panic!("{err}")
    };
    assert!(
        matches!(source.as_ref(), OpError::Unsupported(m) if m.contains("output 0 as f32 [2] and f32 [1]")),
        "{source}"
    );
}

/// `Loop` over `trip` (an initializer, or a model input when `None`): `s += x` each
/// iteration, the running sums as a scan output; `cond` is the body's condition output.
fn loop_model(trip: Option<i64>, cond: NodeProto) -> GraphProto {
    let body_graph = body(
        vec![
            cond,
            node("Add", &["s_in", "x"], &["s_out"]),
            node("Identity", &["s_out"], &["scan"]),
        ],
        vec![
            typed("i", 7, &[]),
            typed("c_in", 9, &[]),
            typed("s_in", 1, &[1]),
        ],
        &["c_out", "s_out", "scan"],
    );
    let n = with_attr(
        node("Loop", &["m", "", "s0"], &["s", "sums"]),
        graph_attr("body", body_graph),
    );
    let mut input = vec![typed("x", 1, &[1]), typed("s0", 1, &[1])];
    let mut initializer = vec![];
    match trip {
        Some(t) => initializer.push(scalar_i64("m", t)),
        None => input.push(typed("m", 7, &[])),
    }
    GraphProto {
        name: Some("g".into()),
        node: vec![n],
        input,
        initializer,
        output: vec![typed("s", 1, &[1]), typed("sums", 1, &[3, 1])],
        ..Default::default()
    }
}

#[test]
fn a_loop_with_a_known_trip_count_runs_its_body_that_many_times() {
    let x = Tensor::from_f32(vec![1], &[2.0]).unwrap();
    let s0 = Tensor::from_f32(vec![1], &[1.0]).unwrap();
    let keep = node("Identity", &["c_in"], &["c_out"]);
    let out = run(loop_model(Some(3), keep.clone()), &[x, s0]).unwrap();
    assert_eq!(out[0], [7.0]);
    assert_eq!(out[1], [3.0, 5.0, 7.0]);
    // A trip count known only at run time, or a condition computed each iteration: refused.
    let err = run(loop_model(None, keep), &[]).unwrap_err();
    let ImportError::Node { source, .. } = &err else {
        panic!("{err}")
    };
    assert!(
        matches!(source.as_ref(), OpError::NotKnown { index: 0, .. }),
        "{source}"
    );
    let computed = node("Less", &["i", "m"], &["c_out"]);
    let err = run(loop_model(Some(3), computed), &[]).unwrap_err();
    assert!(
        err.to_string().contains("Loop") && format!("{err:?}").contains("computed at run time"),
        "{err:?}"
    );
}

#[test]
fn a_value_of_run_time_length_is_a_model_output_and_nothing_else() {
    let top = |nodes: Vec<NodeProto>, out: &str| GraphProto {
        name: Some("g".into()),
        node: nodes,
        input: vec![typed("x", 1, &[2, 3])],
        output: vec![typed(out, 7, &[])],
        ..Default::default()
    };
    let x = Tensor::from_f32(vec![2, 3], &[0.0, 1.5, 0.0, -2.0, 0.0, 3.0]).unwrap();
    let m = load_bytes(&bytes(&model(
        top(vec![node("NonZero", &["x"], &["nz"])], "nz"),
        13,
    )))
    .unwrap();
    let imported = import(&m, &[]).unwrap();
    assert_eq!(imported.output_names, ["nz", "nz.length"]);
    let out = evaluate(&imported.graph, &imported.outputs, &[x]).unwrap();
    // Rows, then columns, of the three non-zeros; zeros past them up to the bound of six.
    assert_eq!(
        out[0].to_f64(),
        [0., 1., 1., 0., 0., 0., 1., 0., 2., 0., 0., 0.]
    );
    assert_eq!(out[1].to_f64(), [3.0]);
    // Reading it in the model would read the padding: refused, naming the value.
    let nodes = vec![
        node("NonZero", &["x"], &["nz"]),
        node("Identity", &["nz"], &["y"]),
    ];
    let m = load_bytes(&bytes(&model(top(nodes, "y"), 13))).unwrap();
    let err = import(&m, &[]).unwrap_err();
    assert!(
        format!("{err:?}").contains("whose length is known only at run time"),
        "{err:?}"
    );
    // Nor may an If's branch give one: the If's output would lose its length.
    let branch = || body(vec![node("NonZero", &["x"], &["nz"])], vec![], &["nz"]);
    let n = with_attr(
        with_attr(
            node("If", &["c"], &["y"]),
            graph_attr("then_branch", branch()),
        ),
        graph_attr("else_branch", branch()),
    );
    let mut g = top(vec![n], "y");
    g.initializer.push(TensorProto {
        name: Some("c".into()),
        data_type: Some(9),
        int32_data: vec![1],
        ..Default::default()
    });
    let m = load_bytes(&bytes(&model(g, 13))).unwrap();
    let err = import(&m, &[]).unwrap_err();
    let ImportError::Node { op, source, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(op, "If");
    assert!(
        source.to_string().contains("branch output \"nz\""),
        "{source}"
    );
}

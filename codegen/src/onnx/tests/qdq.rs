//! The QDQ rewrite (`qdq::fuse`) on hand-built groups: what becomes a quantized operator, what
//! clamps an activation leaves, and what stays in float.

use super::protos::{attr, bytes, f32_tensor, graph, model, node, with_attr};
use crate::onnx::proto::{attribute_proto, NodeProto, TensorProto};
use crate::onnx::qdq::{fuse, Fused};
use crate::onnx::{load_bytes, OnnxGraph};

/// An integer tensor (`elem` 2: uint8, 3: int8, 6: int32) from its values.
fn ints(name: &str, elem: i32, dims: &[i64], values: &[i64]) -> TensorProto {
    let raw = values
        .iter()
        .flat_map(|&v| match elem {
            6 => (v as i32).to_le_bytes().to_vec(),
            _ => vec![v as u8],
        })
        .collect();
    TensorProto {
        name: Some(name.to_string()),
        data_type: Some(elem),
        dims: dims.to_vec(),
        raw_data: Some(raw),
        ..Default::default()
    }
}

fn scalar_f32(name: &str, v: f32) -> TensorProto {
    f32_tensor(name, &[], &[v])
}

/// `DQ(x) → Conv(DQ(w), DQ(b)) [→ act] → Q(y)`: int8 x of scale 0.5, a 2×1×1×1 weight of
/// scale 0.25, a bias of scale `bias_scale`, y of scale 0.1 and zero point `zp_y`.
struct ConvGroup {
    act: Option<NodeProto>,
    bias_scale: f32,
    zp_y: i64,
    /// Also a graph output: the convolution's float result.
    conv_out_is_output: bool,
}

impl ConvGroup {
    fn new() -> ConvGroup {
        ConvGroup {
            act: None,
            bias_scale: 0.125,
            zp_y: -128,
            conv_out_is_output: false,
        }
    }

    fn graph(&self) -> OnnxGraph {
        let mut nodes = vec![
            node("DequantizeLinear", &["x", "sx", "zx"], &["xf"]),
            node("DequantizeLinear", &["w", "sw", "zw"], &["wf"]),
            node("DequantizeLinear", &["b", "sb", "zb"], &["bf"]),
            node("Conv", &["xf", "wf", "bf"], &["c"]),
        ];
        let mut last = "c";
        if let Some(act) = &self.act {
            let mut a = act.clone();
            a.input[0] = "c".into();
            a.output = vec!["a".into()];
            nodes.push(a);
            last = "a";
        }
        nodes.push(node("QuantizeLinear", &[last, "sy", "zy"], &["y"]));
        let mut outputs = vec!["y"];
        if self.conv_out_is_output {
            outputs.push("c");
        }
        let mut g = graph(nodes, &["x"], &outputs);
        g.initializer = vec![
            scalar_f32("sx", 0.5),
            ints("zx", 3, &[], &[3]),
            ints("w", 3, &[2, 1, 1, 1], &[5, -7]),
            scalar_f32("sw", 0.25),
            ints("zw", 3, &[], &[0]),
            ints("b", 6, &[2], &[100, -100]),
            scalar_f32("sb", self.bias_scale),
            ints("zb", 6, &[], &[0]),
            scalar_f32("sy", 0.1),
            ints("zy", 3, &[], &[self.zp_y]),
            f32_tensor("lo", &[], &[-1.0]),
            f32_tensor("hi", &[], &[1.0]),
        ];
        load_bytes(&bytes(&model(g, 19))).unwrap().graph
    }
}

fn ops(g: &OnnxGraph) -> Vec<&str> {
    g.nodes.iter().map(|n| n.op_type.as_str()).collect()
}

#[test]
fn a_conv_group_becomes_one_qlinear_conv() {
    let (g, fused) = fuse(&ConvGroup::new().graph());
    assert_eq!(fused, Fused { conv: 1, matmul: 0 });
    assert_eq!(ops(&g), ["QLinearConv"]);
    let q = &g.nodes[0];
    assert_eq!(
        q.inputs,
        ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"]
    );
    assert_eq!(q.outputs, ["y"]);
}

/// A ReLU is the clamp at `Q(0) = zp_y`, left out where the type's minimum already is it.
#[test]
fn a_relu_becomes_a_clamp_at_the_zero_point() {
    let relu = || Some(node("Relu", &["c"], &["a"]));
    let at_min = ConvGroup {
        act: relu(),
        ..ConvGroup::new()
    };
    assert_eq!(ops(&fuse(&at_min.graph()).0), ["QLinearConv"]);
    let above = ConvGroup {
        act: relu(),
        zp_y: -10,
        ..ConvGroup::new()
    };
    let (g, _) = fuse(&above.graph());
    assert_eq!(ops(&g), ["QLinearConv", "Max"]);
    let bound = g
        .initializers
        .iter()
        .find(|(n, _)| *n == g.nodes[1].inputs[1]);
    assert_eq!(bound.unwrap().1.to_i64().unwrap(), [-10]);
    assert_eq!(g.nodes[1].outputs, ["y"]);
}

/// A `Clip(−1, 1)` on y of scale 0.1, zero point 0: the integer clamp `[−10, 10]`.
#[test]
fn a_clip_becomes_both_clamps() {
    let clip = NodeProto {
        input: vec!["c".into(), "lo".into(), "hi".into()],
        ..node("Clip", &[], &[])
    };
    let group = ConvGroup {
        act: Some(clip),
        zp_y: 0,
        ..ConvGroup::new()
    };
    let (g, _) = fuse(&group.graph());
    assert_eq!(ops(&g), ["QLinearConv", "Max", "Min"]);
    let value = |k: usize| {
        let name = &g.nodes[k].inputs[1];
        let (_, t) = g.initializers.iter().find(|(n, _)| n == name).unwrap();
        t.to_i64().unwrap()[0]
    };
    assert_eq!((value(1), value(2)), (-10, 10));
}

/// A bias whose scale is not `s_x · s_w` cannot be added to the integer sum: the group keeps
/// its float arithmetic.
#[test]
fn a_bias_of_another_scale_stays_in_float() {
    let group = ConvGroup {
        bias_scale: 0.13,
        ..ConvGroup::new()
    };
    let (g, fused) = fuse(&group.graph());
    assert_eq!(fused, Fused::default());
    assert!(ops(&g).contains(&"Conv"));
}

/// A float value of the group that the graph also outputs keeps the group in float.
#[test]
fn a_group_whose_float_value_is_an_output_stays_in_float() {
    let group = ConvGroup {
        conv_out_is_output: true,
        ..ConvGroup::new()
    };
    assert_eq!(fuse(&group.graph()).1, Fused::default());
}

/// `DQ(a) → MatMul(DQ(w)) → Add(DQ(b)) → Q`: `QGemm` with the bias; without the `Add`,
/// `QLinearMatMul`. The input's `DequantizeLinear` stays where something else reads it.
#[test]
fn matmul_groups_become_qgemm_or_qlinear_matmul() {
    let build = |with_bias: bool| {
        let mut nodes = vec![
            node("DequantizeLinear", &["a", "sa", "za"], &["af"]),
            node("DequantizeLinear", &["w", "sw", "zw"], &["wf"]),
            node("MatMul", &["af", "wf"], &["m"]),
        ];
        let mut last = "m";
        if with_bias {
            nodes.push(node("DequantizeLinear", &["b", "sb", "zb"], &["bf"]));
            nodes.push(node("Add", &["bf", "m"], &["s"]));
            last = "s";
        }
        nodes.push(node("QuantizeLinear", &[last, "sy", "zy"], &["y"]));
        nodes.push(node("Neg", &["af"], &["n"]));
        let mut g = graph(nodes, &["a"], &["y", "n"]);
        g.initializer = vec![
            scalar_f32("sa", 0.5),
            ints("za", 3, &[], &[0]),
            ints("w", 3, &[2, 3], &[1, 2, 3, 4, 5, 6]),
            f32_tensor("sw", &[3], &[0.25, 0.5, 1.0]),
            ints("zw", 3, &[3], &[0, 0, 0]),
            ints("b", 6, &[3], &[1, 2, 3]),
            f32_tensor("sb", &[3], &[0.125, 0.25, 0.5]),
            ints("zb", 6, &[3], &[0, 0, 0]),
            scalar_f32("sy", 0.1),
            ints("zy", 3, &[], &[0]),
        ];
        // The weight's scales run along its columns, the product's output channels.
        let mut axis = attr("axis");
        axis.r#type = Some(attribute_proto::AttributeType::Int as i32);
        axis.i = Some(1);
        g.node[1] = with_attr(g.node[1].clone(), axis);
        load_bytes(&bytes(&model(g, 19))).unwrap().graph
    };
    let (g, fused) = fuse(&build(true));
    assert_eq!(fused, Fused { conv: 0, matmul: 1 });
    assert_eq!(ops(&g), ["DequantizeLinear", "QGemm", "Neg"]);
    assert_eq!(g.nodes[1].domain, "com.microsoft");
    assert_eq!(g.nodes[1].inputs[6], "b");
    let (g, _) = fuse(&build(false));
    assert_eq!(ops(&g), ["DequantizeLinear", "QLinearMatMul", "Neg"]);
}

/// `DQ(a), DQ(w) [N, K], DQ(b) → Gemm(transB) → Q`: `QGemm`, the weight's channels along its
/// first axis; a `Gemm` that scales (`alpha` 2) stays in float.
#[test]
fn gemm_groups_become_qgemm() {
    let build = |alpha: f32| {
        let gemm = node("Gemm", &["af", "wf", "bf"], &["m"]);
        let mut trans = attr("transB");
        trans.r#type = Some(attribute_proto::AttributeType::Int as i32);
        trans.i = Some(1);
        let mut a = attr("alpha");
        a.r#type = Some(attribute_proto::AttributeType::Float as i32);
        a.f = Some(alpha);
        let nodes = vec![
            node("DequantizeLinear", &["a", "sa", "za"], &["af"]),
            node("DequantizeLinear", &["w", "sw", "zw"], &["wf"]),
            node("DequantizeLinear", &["b", "sb", "zb"], &["bf"]),
            with_attr(with_attr(gemm, trans), a),
            node("QuantizeLinear", &["m", "sy", "zy"], &["y"]),
        ];
        let mut g = graph(nodes, &["a"], &["y"]);
        g.initializer = vec![
            scalar_f32("sa", 0.5),
            ints("za", 3, &[], &[0]),
            ints("w", 3, &[3, 2], &[1, 2, 3, 4, 5, 6]),
            f32_tensor("sw", &[3], &[0.25, 0.5, 1.0]),
            ints("zw", 3, &[3], &[0, 0, 0]),
            ints("b", 6, &[3], &[1, 2, 3]),
            f32_tensor("sb", &[3], &[0.125, 0.25, 0.5]),
            ints("zb", 6, &[3], &[0, 0, 0]),
            scalar_f32("sy", 0.1),
            ints("zy", 3, &[], &[0]),
        ];
        // The weight's scales run along its rows, the product's output channels.
        let mut axis = attr("axis");
        axis.r#type = Some(attribute_proto::AttributeType::Int as i32);
        axis.i = Some(0);
        g.node[1] = with_attr(g.node[1].clone(), axis);
        load_bytes(&bytes(&model(g, 19))).unwrap().graph
    };
    let (g, fused) = fuse(&build(1.0));
    assert_eq!(fused, Fused { conv: 0, matmul: 1 });
    assert_eq!(ops(&g), ["QGemm"]);
    assert_eq!(g.nodes[0].attrs.int("transB").unwrap(), 1);
    assert_eq!(fuse(&build(2.0)).1, Fused::default());
}

//! Quantized ONNX in integer kernels: the QDQ form (`DequantizeLinear` → float op →
//! `QuantizeLinear`) rewritten into the quantized operators it stands for, as onnxruntime's own
//! graph optimizer does, before the graph is lowered.
//!
//! A group is rewritten when its float values are used only inside it:
//!
//! - `DQ(x), DQ(w) [, DQ(b)] → Conv [→ Relu | Clip] → Q` becomes `QLinearConv`;
//! - `DQ(a), DQ(w) → MatMul [→ Add DQ(b)] [→ Relu | Clip] → Q` becomes `QLinearMatMul`, or
//!   `com.microsoft` `QGemm` with the bias (which Kiln also takes with a batched `a`);
//! - `DQ(a), DQ(w) [, DQ(b)] → Gemm [→ Relu | Clip] → Q` (`alpha` and `beta` 1) becomes `QGemm`
//!   with the `Gemm`'s transpositions.
//!
//! `x`, `a` and `y` are quantized per tensor (constant scales and zero points); the weight per
//! tensor or per output channel; the bias is `int32`, zero point 0, with the scale `s_x · s_w`
//! it must have (within a relative 1e-5; otherwise the group stays in float, which is also what
//! the file means). A fused activation becomes a clamp of the quantized output: `Q` is monotone,
//! so `Q(max(v, lo))` is `max(Q(v), Q(lo))` exactly, and a clamp the type's range already
//! gives is left out. Nothing else changes: what is not a complete group (a softmax, an average
//! pool, a residual `Add`) keeps its float arithmetic between a `DequantizeLinear` and a
//! `QuantizeLinear`, as ONNX defines it.

use super::attr::Attributes;
use super::model::{OnnxGraph, OnnxNode};
use crate::dtype::Scalar;
use crate::tensor::Tensor;
use std::collections::{HashMap, HashSet};

/// How quantized operators turn their `i32` accumulators into quantized outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Requant {
    /// ONNX's own semantics as onnxruntime computes them: `float(acc) · (s_a · s_b / s_y)`
    /// with a float32 scale, rounded half to even.
    #[default]
    Onnx,
    /// TensorFlow Lite Micro's: a fixed-point multiplier and shift per channel, computed from
    /// the scales in double, rounding halves away from zero; integer arithmetic only.
    Tflm,
}

/// How the rewritten groups compare with the file: how many of each became integer kernels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fused {
    pub conv: usize,
    pub matmul: usize,
}

/// Rewrites every complete QDQ group of `graph` into a quantized operator; returns the graph and
/// what it fused.
pub fn fuse(graph: &OnnxGraph) -> (OnnxGraph, Fused) {
    let mut g = graph.clone();
    let mut fused = Fused::default();
    let mut consts: Vec<(String, Tensor)> = Vec::new();
    let mut replaced: HashMap<usize, Vec<OnnxNode>> = HashMap::new();
    let mut dropped: HashSet<usize> = HashSet::new();
    {
        let view = View::new(graph);
        for (i, node) in graph.nodes.iter().enumerate() {
            let Some(group) = view.group(i, node) else {
                continue;
            };
            if group.members.iter().any(|m| dropped.contains(m)) {
                continue;
            }
            match node.op_type.as_str() {
                "Conv" => fused.conv += 1,
                _ => fused.matmul += 1,
            }
            let nodes = group.nodes(graph, &mut consts);
            let last = *group.members.last().expect("a group ends in its Q");
            dropped.extend(group.members.iter().copied());
            replaced.insert(last, nodes);
        }
    }
    if replaced.is_empty() {
        return (g, fused);
    }
    let mut nodes = Vec::with_capacity(g.nodes.len());
    for (i, node) in g.nodes.drain(..).enumerate() {
        if let Some(new) = replaced.remove(&i) {
            nodes.extend(new);
        } else if !dropped.contains(&i) {
            nodes.push(node);
        }
    }
    g.nodes = nodes;
    g.initializers.extend(consts);
    (without_unread_dequantize(g), fused)
}

/// A rewritable group: the node indices it replaces (its `Q` last), and what the quantized
/// operator reads.
struct Group {
    members: Vec<usize>,
    /// `[x, x_scale, x_zp, w, w_scale, w_zp]`.
    inputs: [String; 6],
    bias: Option<String>,
    /// `[y_scale, y_zp]` and the output's name.
    out: [String; 3],
    /// The activation's bounds in float (`None`: unbounded on that side).
    clamp: (Option<f64>, Option<f64>),
    /// The `Conv` or `MatMul` the group is built on.
    op: usize,
}

impl Group {
    /// The quantized operator, then the clamp of the activation where it does anything.
    fn nodes(&self, graph: &OnnxGraph, consts: &mut Vec<(String, Tensor)>) -> Vec<OnnxNode> {
        let op = &graph.nodes[self.op];
        let [y_scale, y_zp, out] = &self.out;
        let q = Quant::read(graph, y_scale, y_zp).expect("checked by the group");
        let (lo, hi) = (self.clamp.0.map(|v| q.of(v)), self.clamp.1.map(|v| q.of(v)));
        let (lo, hi) = (lo.filter(|&l| l > q.range.0), hi.filter(|&h| h < q.range.1));
        let raw = if lo.is_some() || hi.is_some() {
            format!("{out}_unclamped")
        } else {
            out.clone()
        };
        let mut inputs: Vec<String> = self.inputs.to_vec();
        let (op_type, domain) = match (op.op_type.as_str(), &self.bias) {
            ("Conv", bias) => {
                inputs.extend([y_scale.clone(), y_zp.clone()]);
                inputs.extend(bias.iter().cloned());
                ("QLinearConv", "")
            }
            ("Gemm", bias) | (_, bias @ Some(_)) => {
                inputs.push(bias.clone().unwrap_or_default());
                inputs.extend([y_scale.clone(), y_zp.clone()]);
                ("QGemm", "com.microsoft")
            }
            (_, None) => {
                inputs.extend([y_scale.clone(), y_zp.clone()]);
                ("QLinearMatMul", "")
            }
        };
        let mut nodes = vec![OnnxNode {
            name: op.name.clone(),
            op_type: op_type.into(),
            domain: domain.into(),
            inputs,
            outputs: vec![raw.clone()],
            attrs: op.attrs.clone(),
        }];
        let mut value = raw;
        for (bound, which, last) in [(lo, "Max", hi.is_none()), (hi, "Min", true)] {
            let Some(b) = bound else { continue };
            let name = format!("{out}_{}", which.to_lowercase());
            let t = Tensor::from_i64(q.dtype, vec![], &[b]).expect("in the type's range");
            consts.push((name.clone(), t));
            let to = if last {
                out.clone()
            } else {
                format!("{out}_low")
            };
            nodes.push(OnnxNode {
                name: format!("{}_{which}", op.name),
                op_type: which.into(),
                domain: String::new(),
                inputs: vec![value, name],
                outputs: vec![to.clone()],
                attrs: Attributes::none(&op.name, which),
            });
            value = to;
        }
        nodes
    }
}

/// Producers and consumers of the graph's values.
struct View<'a> {
    graph: &'a OnnxGraph,
    producer: HashMap<&'a str, usize>,
    consumers: HashMap<&'a str, Vec<usize>>,
    outputs: HashSet<&'a str>,
    constants: HashMap<&'a str, &'a Tensor>,
}

impl<'a> View<'a> {
    fn new(graph: &'a OnnxGraph) -> View<'a> {
        let mut producer = HashMap::new();
        let mut consumers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in graph.nodes.iter().enumerate() {
            for o in &n.outputs {
                producer.insert(o.as_str(), i);
            }
            for v in n.inputs.iter().filter(|v| !v.is_empty()) {
                consumers.entry(v.as_str()).or_default().push(i);
            }
        }
        View {
            graph,
            producer,
            consumers,
            outputs: graph.outputs.iter().map(|o| o.name.as_str()).collect(),
            constants: graph
                .initializers
                .iter()
                .map(|(n, t)| (n.as_str(), t))
                .collect(),
        }
    }

    /// The only node that reads `value`, if the graph does not also output it.
    fn sole_consumer(&self, value: &str) -> Option<usize> {
        match self.consumers.get(value).map(Vec::as_slice) {
            Some([only]) if !self.outputs.contains(value) => Some(*only),
            _ => None,
        }
    }

    /// The `DequantizeLinear` that produces `value`.
    fn dequantize(&self, value: &str) -> Option<&'a OnnxNode> {
        let n = &self.graph.nodes[*self.producer.get(value)?];
        let plain = n.attrs.int_or("block_size", 0).ok()? == 0;
        (n.op_type == "DequantizeLinear" && is_default(n) && plain && n.inputs.len() >= 2)
            .then_some(n)
    }

    fn constant(&self, name: &str) -> Option<&'a Tensor> {
        self.constants.get(name).copied()
    }

    /// The group built on node `i`, if it is a `Conv`, `MatMul` or `Gemm` that can be
    /// rewritten.
    fn group(&self, i: usize, node: &OnnxNode) -> Option<Group> {
        let op = node.op_type.as_str();
        if !is_default(node) || !matches!(op, "Conv" | "MatMul" | "Gemm") {
            return None;
        }
        let dx = self.dequantize(node.inputs.first()?)?;
        let dw = self.dequantize(node.inputs.get(1)?)?;
        let x = self.per_tensor(dx)?;
        // The weight's output channels: a filter's first axis, a matrix's last (its first
        // where a `Gemm` transposes it).
        let axis = match op {
            "Conv" => Some(0),
            "Gemm" => {
                let one = |n: &str| node.attrs.float_or(n, 1.0).ok() == Some(1.0);
                if !(one("alpha") && one("beta")) {
                    return None;
                }
                Some(if node.attrs.int_or("transB", 0).ok()? != 0 {
                    0
                } else {
                    1
                })
            }
            _ => None,
        };
        let w = self.weight(dw, axis)?;
        let mut members = vec![i];
        let mut value = node.outputs.first()?.as_str();
        let mut bias = None;
        if op != "MatMul" {
            if let Some(b) = node.inputs.get(2).filter(|b| !b.is_empty()) {
                bias = Some(self.bias(b, x.scale, &w)?);
            }
        } else if let Some(add) = self.sole_consumer(value) {
            let a = &self.graph.nodes[add];
            if a.op_type == "Add" && is_default(a) && a.inputs.len() == 2 {
                let other = a.inputs.iter().find(|v| v.as_str() != value)?;
                if let Some(b) = self.bias(other, x.scale, &w) {
                    bias = Some(b);
                    members.push(add);
                    value = a.outputs.first()?.as_str();
                }
            }
        }
        let mut clamp = (None, None);
        let mut next = self.sole_consumer(value)?;
        let n = &self.graph.nodes[next];
        if let Some(c) = self.activation(n) {
            clamp = c;
            members.push(next);
            value = n.outputs.first()?.as_str();
            next = self.sole_consumer(value)?;
        }
        let q = &self.graph.nodes[next];
        if q.op_type != "QuantizeLinear" || !is_default(q) || q.inputs.len() < 3 {
            return None;
        }
        Quant::read(self.graph, &q.inputs[1], &q.inputs[2])?;
        members.push(next);
        Some(Group {
            members,
            inputs: [
                dx.inputs[0].clone(),
                dx.inputs[1].clone(),
                dx.inputs.get(2).cloned().unwrap_or_default(),
                dw.inputs[0].clone(),
                dw.inputs[1].clone(),
                dw.inputs.get(2).cloned().unwrap_or_default(),
            ],
            bias,
            out: [
                q.inputs[1].clone(),
                q.inputs[2].clone(),
                q.outputs[0].clone(),
            ],
            clamp,
            op: i,
        })
    }

    /// A per-tensor quantization of a DQ's input.
    fn per_tensor(&self, dq: &OnnxNode) -> Option<Quant> {
        Quant::read(
            self.graph,
            &dq.inputs[1],
            dq.inputs.get(2).map_or("", |s| s),
        )
    }

    /// A constant int8 or uint8 weight, quantized per tensor or along its output channels:
    /// axis `channels`, or the last one (a `MatMul`'s).
    fn weight(&self, dq: &OnnxNode, channels: Option<usize>) -> Option<Vec<f32>> {
        let w = self.constant(&dq.inputs[0])?;
        if !matches!(w.dtype(), Scalar::I8 | Scalar::U8) || w.shape().len() < 2 {
            return None;
        }
        let scale = self.constant(&dq.inputs[1])?.to_f32()?;
        if scale.len() > 1 {
            let rank = w.shape().len() as i64;
            let axis = dq.attrs.int_or("axis", 1).ok()?;
            let axis = if axis < 0 { axis + rank } else { axis };
            let want = channels.map_or(rank - 1, |c| c as i64);
            if axis != want || w.shape()[want as usize] != scale.len() {
                return None;
            }
        }
        if let Some(zp) = dq.inputs.get(2).filter(|z| !z.is_empty()) {
            let zp = self.constant(zp)?;
            (zp.dtype() == w.dtype() && zp.numel() == scale.len().max(1)).then_some(())?;
        }
        Some(scale)
    }

    /// The `int32` bias behind `value`: a DQ of a constant vector, zero point 0, scale
    /// `s_x · s_w` per channel.
    fn bias(&self, value: &str, s_x: f32, s_w: &[f32]) -> Option<String> {
        let dq = self.dequantize(value)?;
        let b = self.constant(&dq.inputs[0])?;
        if b.dtype() != Scalar::I32 || b.shape().len() != 1 {
            return None;
        }
        if let Some(zp) = dq.inputs.get(2).filter(|z| !z.is_empty()) {
            self.constant(zp)?
                .to_i64()?
                .iter()
                .all(|&z| z == 0)
                .then_some(())?;
        }
        let scale = self.constant(&dq.inputs[1])?.to_f32()?;
        let n = b.numel();
        let fits = (0..n).all(|c| {
            let want = f64::from(s_x) * f64::from(s_w[if s_w.len() > 1 { c } else { 0 }]);
            let got = f64::from(scale[if scale.len() > 1 { c } else { 0 }]);
            (scale.len() == 1 || scale.len() == n) && (got - want).abs() <= 1e-5 * want.abs()
        });
        (fits && (s_w.len() == 1 || s_w.len() == n)).then(|| dq.inputs[0].clone())
    }

    /// The bounds of a `Relu`, or of a `Clip` with constant bounds.
    fn activation(&self, n: &OnnxNode) -> Option<(Option<f64>, Option<f64>)> {
        if !is_default(n) {
            return None;
        }
        match n.op_type.as_str() {
            "Relu" => Some((Some(0.0), None)),
            "Clip" if n.inputs.len() > 1 => {
                let bound = |k: usize| -> Option<Option<f64>> {
                    match n.inputs.get(k).filter(|v| !v.is_empty()) {
                        None => Some(None),
                        Some(v) => Some(Some(*self.constant(v)?.to_f64().first()?)),
                    }
                };
                Some((bound(1)?, bound(2)?))
            }
            _ => None,
        }
    }
}

/// Whether a node is in the default domain.
fn is_default(n: &OnnxNode) -> bool {
    matches!(n.domain.as_str(), "" | "ai.onnx")
}

/// A per-tensor quantization: constant scalar scale and zero point.
struct Quant {
    scale: f32,
    zero_point: i64,
    dtype: Scalar,
    range: (i64, i64),
}

impl Quant {
    fn read(graph: &OnnxGraph, scale: &str, zp: &str) -> Option<Quant> {
        let find = |name: &str| graph.initializers.iter().find(|(n, _)| n == name);
        let scale = find(scale)?.1.to_f32()?;
        let [scale] = scale[..] else { return None };
        let (_, zp) = find(zp)?;
        let (dtype, range) = match zp.dtype() {
            Scalar::I8 => (Scalar::I8, (-128, 127)),
            Scalar::U8 => (Scalar::U8, (0, 255)),
            _ => return None,
        };
        let [zero_point] = zp.to_i64()?[..] else {
            return None;
        };
        (scale > 0.0 && scale.is_finite()).then_some(Quant {
            scale,
            zero_point,
            dtype,
            range,
        })
    }

    /// `QuantizeLinear` of one float value: `saturate(round_half_even(v / scale) + zp)`.
    fn of(&self, v: f64) -> i64 {
        let q = (v as f32 / self.scale).round_ties_even() as i64 + self.zero_point;
        q.clamp(self.range.0, self.range.1)
    }
}

/// `graph` without the `DequantizeLinear` nodes that nothing reads any more (those of the weights
/// and inputs of the groups rewritten).
fn without_unread_dequantize(mut graph: OnnxGraph) -> OnnxGraph {
    let mut read: HashSet<String> = graph.outputs.iter().map(|o| o.name.clone()).collect();
    read.extend(graph.nodes.iter().flat_map(|n| n.inputs.iter().cloned()));
    graph.nodes.retain(|n| {
        n.op_type != "DequantizeLinear"
            || !is_default(n)
            || n.outputs.iter().any(|o| read.contains(o))
    });
    graph
}

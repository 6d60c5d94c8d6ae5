//! Lowering a loaded ONNX model to Kiln's lazy tensor graph.
//!
//! Inputs become graph inputs (free dims pinned), initializers and `Constant` outputs are
//! values known at compile time, and each node is built by its op's builder (`ops`). A node
//! whose inputs are all known and small is evaluated right away in the UOp interpreter, so
//! shape arithmetic (`Shape → Gather → Concat → Reshape`) folds to known values on the host.

mod control;

use std::collections::HashMap;
use std::fmt::Write as _;

use thiserror::Error;

use super::ops::{self, checked_numel, dtype_of, materialize, Ctx, OpBuilder, OpError, Value};
use super::{pin_dims, qdq, Dim, Narrow, OnnxError, OnnxModel, OnnxNode, Requant, ValueInfo};
use crate::bind::{BindError, Binding, Bindings};
use crate::graph::eval::evaluate;
pub use crate::graph::Imported;
use crate::graph::{FileTensor, Graph, Lazy};
use crate::tensor::Tensor;

/// Known inputs up to this many elements (each) are computed on at compile time.
const HOST_LIMIT: usize = 1 << 14;

/// Ops whose first output has the element type of their first input: a narrow type passes
/// through them (in its container) to a later `CastLike` or quantization that reads it.
const PASS_ELEMENT_TYPE: &[&str] = &[
    "Identity",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Slice",
    "Gather",
    "Concat",
    "Expand",
    "Tile",
    "Split",
];

/// Why a model could not be imported.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The model's inputs or values: a free dim without override, a type Kiln lacks, ….
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    /// Every node whose op Kiln cannot import, as `(op type, node name)`.
    #[error("{}", describe_unsupported(.ops))]
    UnsupportedOps { ops: Vec<(String, String)> },
    #[error("node {node} ({op})")]
    Node {
        node: String,
        op: String,
        #[source]
        source: Box<OpError>,
    },
    #[error("input {input:?}: shape {dims:?} has too many elements")]
    InputTooLarge { input: String, dims: Vec<usize> },
    #[error("graph output {name:?} is not computed by any node")]
    MissingOutput { name: String },
    #[error(transparent)]
    Bind(#[from] BindError),
}

/// `3 unsupported ops in 4 nodes: Foo ×2 (a, b), Bar ×1 (c), …`.
fn describe_unsupported(ops: &[(String, String)]) -> String {
    let mut kinds: Vec<(&str, Vec<&str>)> = Vec::new();
    for (op, node) in ops {
        match kinds.iter_mut().find(|(o, _)| o == op) {
            Some((_, nodes)) => nodes.push(node),
            None => kinds.push((op, vec![node])),
        }
    }
    let mut s = format!(
        "{} unsupported op type(s) in {} node(s):",
        kinds.len(),
        ops.len()
    );
    for (i, (op, nodes)) in kinds.iter().enumerate() {
        let sep = if i == 0 { " " } else { "; " };
        let names = nodes[..nodes.len().min(3)].join(", ");
        let more = if nodes.len() > 3 { ", …" } else { "" };
        let _ = write!(s, "{sep}{op} ×{} ({names}{more})", nodes.len());
    }
    s
}

/// Whether the importer lowers `node` itself (control flow, with subgraphs).
fn is_control(node: &OnnxNode) -> bool {
    matches!(node.domain.as_str(), "" | "ai.onnx") && control::OPS.contains(&node.op_type.as_str())
}

/// The op types the importer lowers itself.
pub fn control_ops() -> &'static [&'static str] {
    control::OPS
}

/// The op type as reports show it: qualified by its domain outside the default one.
fn qualified_op(node: &OnnxNode) -> String {
    match node.domain.as_str() {
        "" | "ai.onnx" => node.op_type.clone(),
        domain => format!("{domain}:{}", node.op_type),
    }
}

/// Lowers `model`, with `shapes` pinning free input dims (as `--shape NAME=…` gives them), and
/// quantized operators requantizing as onnxruntime does.
pub fn import(model: &OnnxModel, shapes: &[(String, Vec<usize>)]) -> Result<Imported, ImportError> {
    import_with(model, shapes, Requant::Onnx)
}

/// Lowers `model` as [`import`] does, quantized operators requantizing as `requant` says. The
/// QDQ groups of a quantized model are first rewritten into quantized operators
/// ([`qdq::fuse`]), so that they run as integer kernels.
pub fn import_with(
    model: &OnnxModel,
    shapes: &[(String, Vec<usize>)],
    requant: Requant,
) -> Result<Imported, ImportError> {
    import_bound(model, shapes, requant, &Bindings::default())
}

/// Lowers `model` as [`import_with`] does, the inputs that `bindings` names bound: a constant
/// input is a value known at compile time, a state input a state whose next value is the
/// output that binds it.
pub fn import_bound(
    model: &OnnxModel,
    shapes: &[(String, Vec<usize>)],
    requant: Requant,
    bindings: &Bindings,
) -> Result<Imported, ImportError> {
    let (graph, _) = qdq::fuse(&model.graph);
    let unsupported: Vec<(String, String)> = model
        .graph
        .nodes
        .iter()
        .filter(|n| ops::op_builder(&n.domain, &n.op_type).is_none() && !is_control(n))
        .map(|n| (qualified_op(n), n.name.clone()))
        .collect();
    if !unsupported.is_empty() {
        return Err(ImportError::UnsupportedOps { ops: unsupported });
    }
    let names: Vec<&str> = graph.inputs.iter().map(|i| i.name.as_str()).collect();
    bindings.check_inputs(&names)?;
    let mut imp = Importer {
        graph: Graph::new(),
        values: HashMap::new(),
        narrow: graph.narrow.clone(),
        cache: HashMap::new(),
        opset: model.opset,
        requant,
        bounded: HashMap::new(),
    };
    let (input_names, bound_inputs) = imp.inputs(&graph.inputs, shapes, bindings)?;
    for (name, t) in &graph.initializers {
        imp.values.insert(name.clone(), Value::known(t.clone()));
    }
    for node in &graph.nodes {
        imp.node(node)?;
    }
    let mut outputs = Vec::with_capacity(graph.outputs.len());
    let mut output_names = Vec::with_capacity(outputs.capacity());
    for o in &graph.outputs {
        outputs.push(imp.output(&o.name)?);
        output_names.push(o.name.clone());
    }
    // Each output of data-dependent length gets its length as an output after the model's.
    let mut bounded = Vec::new();
    for (k, o) in graph.outputs.iter().enumerate() {
        if let Some((axis, length)) = imp.bounded.get(&o.name) {
            bounded.push(crate::graph::Bounded {
                output: k,
                axis: *axis,
                length: outputs.len(),
            });
            outputs.push(length.clone());
            output_names.push(format!("{}.length", o.name));
        }
    }
    let imported = Imported {
        graph: imp.graph,
        outputs,
        output_names,
        input_names,
        bounded,
        bound_inputs,
        state_outputs: Vec::new(),
    };
    Ok(bindings.link_states(imported)?)
}

struct Importer {
    graph: Graph,
    values: HashMap<String, Value>,
    /// The values of a narrow element type, held in its container.
    narrow: HashMap<String, Narrow>,
    /// Known values already added to the graph, by name.
    cache: HashMap<String, Lazy>,
    opset: i64,
    requant: Requant,
    /// The values of data-dependent length: their bounded axis and their length. Only a model
    /// output may be one.
    bounded: HashMap<String, (usize, Lazy)>,
}

impl Importer {
    /// Creates the model's inputs: graph inputs (free dims pinned by `shapes`), or constants
    /// and states where `bindings` binds them. Returns the names of the graph's inputs, and the
    /// bound ones with their index among the model's.
    fn inputs(
        &mut self,
        inputs: &[ValueInfo],
        shapes: &[(String, Vec<usize>)],
        bindings: &Bindings,
    ) -> Result<(Vec<String>, Vec<FileTensor>), ImportError> {
        let is_const =
            |i: &&ValueInfo| matches!(bindings.of_input(&i.name), Some(Binding::Const(_)));
        let free: Vec<ValueInfo> = inputs.iter().filter(|i| !is_const(i)).cloned().collect();
        let mut dims = pin_dims(&free, shapes)?.into_iter();
        let (mut names, mut bound) = (Vec::new(), Vec::new());
        for (index, info) in inputs.iter().enumerate() {
            let name = info.name.clone();
            let dtype = dtype_of(info.elem, &name)?;
            let value = match bindings.of_input(&name) {
                Some(Binding::Const(source)) => {
                    let declared: Vec<Option<usize>> = (info.dims.iter())
                        .map(|d| match d {
                            Dim::Fixed(n) => Some(*n),
                            Dim::Free(_) => None,
                        })
                        .collect();
                    Value::known(source.tensor(&name, dtype.scalar, &declared)?)
                }
                binding => {
                    let (_, d) = dims
                        .next()
                        .expect("pinned dims for each input not constant");
                    if checked_numel(&d).is_err() {
                        return Err(ImportError::InputTooLarge {
                            input: name,
                            dims: d,
                        });
                    }
                    Value::Tensor(if binding == Some(Binding::State) {
                        let state = self.graph.state(&name, dtype, &d, None);
                        state.expect("no initial value to disagree with").0
                    } else {
                        names.push(name.clone());
                        self.graph.input(&name, dtype, &d)
                    })
                }
            };
            if bindings.of_input(&name).is_some() {
                bound.push((index, name.clone()));
            }
            self.values.insert(name, value);
        }
        Ok((names, bound))
    }

    fn node(&mut self, node: &OnnxNode) -> Result<(), ImportError> {
        if is_control(node) {
            return self.control(node);
        }
        let fail = |source| ImportError::Node {
            node: node.name.clone(),
            op: node.op_type.clone(),
            source: Box::new(source),
        };
        let build = ops::op_builder(&node.domain, &node.op_type)
            .ok_or_else(|| fail(OpError::Unsupported("no builder".into())))?;
        self.check_not_bounded(node)?;
        let inputs: Vec<Option<Value>> = node
            .inputs
            .iter()
            .map(|n| self.values.get(n).cloned())
            .collect();
        let inputs = legacy_broadcast(node, inputs, self.opset).map_err(fail)?;
        let foldable = inputs.iter().flatten().all(|v| match v {
            Value::Known(t) => t.numel() <= HOST_LIMIT,
            Value::Tensor(_) => false,
        });
        let narrow: Vec<Option<Narrow>> = node
            .inputs
            .iter()
            .map(|n| self.narrow.get(n).copied())
            .collect();
        let spec = (self.opset, self.requant);
        let folded = match foldable {
            true => eval_on_host(node, &inputs, &narrow, spec, build).map_err(fail)?,
            false => None,
        };
        let (outs, narrow_outs) = match folded {
            Some(done) => done,
            None => {
                let ctx = Ctx::new(node, spec, &mut self.graph, &inputs, &mut self.cache);
                let mut ctx = ctx.with_narrow_inputs(narrow.clone());
                let outs = build(&mut ctx).map_err(fail)?;
                for (k, b) in ctx.bounded_outputs().iter().enumerate() {
                    if let (Some(b), Some(name)) = (b, node.outputs.get(k)) {
                        self.bounded.insert(name.clone(), b.clone());
                    }
                }
                (outs, ctx.narrow_outputs().to_vec())
            }
        };
        for (k, name) in node.outputs.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            let v = outs.get(k).cloned().ok_or_else(|| {
                let name = name.clone();
                fail(OpError::Output { index: k, name })
            })?;
            self.values.insert(name.clone(), v);
            let passed = match PASS_ELEMENT_TYPE.contains(&node.op_type.as_str()) {
                true => narrow.first().copied().flatten(),
                false => None,
            };
            if let Some(n) = narrow_outs.get(k).copied().flatten().or(passed) {
                self.narrow.insert(name.clone(), n);
            }
        }
        Ok(())
    }

    /// A value of data-dependent length holds padding past its length: only a model output may
    /// be one, which the caller cuts to its length.
    fn check_not_bounded(&self, node: &OnnxNode) -> Result<(), ImportError> {
        match node
            .reads()
            .into_iter()
            .find(|v| self.bounded.contains_key(v))
        {
            Some(value) => Err(ImportError::Node {
                node: node.name.clone(),
                op: node.op_type.clone(),
                source: Box::new(OpError::Unsupported(format!(
                    "reading {value:?}, whose length is known only at run time (only a model \
                     output may be such a value)"
                ))),
            }),
            None => Ok(()),
        }
    }

    fn output(&mut self, name: &str) -> Result<Lazy, ImportError> {
        let missing = || ImportError::MissingOutput {
            name: name.to_string(),
        };
        match self.values.get(name).ok_or_else(missing)? {
            Value::Tensor(l) => Ok(l.clone()),
            Value::Known(t) => {
                let t = t.clone();
                materialize(&mut self.graph, name, &t).map_err(|source| ImportError::Node {
                    node: name.to_string(),
                    op: "output".into(),
                    source: Box::new(source),
                })
            }
        }
    }
}

/// Ops that before opset 7 broadcast their second input only when told to (`broadcast`: 1),
/// its dims matching the first input's from `axis` on (from the end without `axis`).
const LEGACY_BROADCAST: &[&str] = &[
    "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less",
];

/// The inputs of a node of opset 1 to 6 with ONNX's old broadcasting: a second input aligned at
/// `axis` gets ones around its dims, so that the broadcasting of today's opsets places it the
/// same way.
fn legacy_broadcast(
    node: &OnnxNode,
    mut inputs: Vec<Option<Value>>,
    opset: i64,
) -> Result<Vec<Option<Value>>, OpError> {
    if opset >= 7 || !LEGACY_BROADCAST.contains(&node.op_type.as_str()) {
        return Ok(inputs);
    }
    let attrs = &node.attrs;
    if attrs.int_or("broadcast", 0)? == 0 || attrs.get("axis").is_none() {
        return Ok(inputs);
    }
    let (Some(Some(a)), Some(Some(b))) = (inputs.first(), inputs.get(1)) else {
        return Ok(inputs);
    };
    let (rank, dims) = (a.shape().len(), b.shape().to_vec());
    let axis = ops::norm_axis(attrs.int("axis")?, rank, false)?;
    if axis + dims.len() > rank {
        return Err(OpError::Invalid(format!(
            "input 1 of shape {dims:?} does not fit at axis {axis} of shape {:?}",
            a.shape()
        )));
    }
    let mut shape = vec![1; axis];
    shape.extend(&dims);
    shape.resize(rank, 1);
    let b = match b {
        Value::Tensor(l) => Value::Tensor(l.reshape(&shape)?),
        Value::Known(t) => Value::known(Tensor::new(t.dtype(), shape, t.bytes().to_vec())?),
    };
    inputs[1] = Some(b);
    Ok(inputs)
}

/// A node's output values, and the narrow element type of each that has one.
type Built = (Vec<Value>, Vec<Option<Narrow>>);

/// Builds `node` on a scratch graph of its known inputs and evaluates it there:
/// its outputs as known values, or `None` when one is too large to keep on the host.
fn eval_on_host(
    node: &OnnxNode,
    inputs: &[Option<Value>],
    narrow: &[Option<Narrow>],
    spec: (i64, Requant),
    build: OpBuilder,
) -> Result<Option<Built>, OpError> {
    let mut g = Graph::new();
    let mut cache = HashMap::new();
    let mut ctx =
        Ctx::new(node, spec, &mut g, inputs, &mut cache).with_narrow_inputs(narrow.to_vec());
    let outs = build(&mut ctx)?;
    let narrow_outs = ctx.narrow_outputs().to_vec();
    let computed: Vec<Lazy> = outs
        .iter()
        .filter_map(|v| match v {
            Value::Tensor(l) if l.numel() > 0 => Some(l.clone()),
            _ => None,
        })
        .collect();
    if computed.iter().any(|l| l.numel() > HOST_LIMIT) {
        return Ok(None);
    }
    let mut results = if computed.is_empty() {
        Vec::new()
    } else {
        evaluate(&g, &computed, &[]).map_err(OpError::Eval)?
    }
    .into_iter();
    let known = outs
        .into_iter()
        .map(|v| match v {
            Value::Tensor(l) => {
                let t = match l.numel() {
                    0 => Tensor::new(l.dtype.scalar, l.shape().to_vec(), Vec::new())?,
                    _ => results.next().expect("one result per computed output"),
                };
                Ok(Value::known(t))
            }
            known => Ok(known),
        })
        .collect::<Result<_, OpError>>()?;
    Ok(Some((known, narrow_outs)))
}

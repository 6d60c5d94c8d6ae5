//! What an op builder sees: its node, its input values (lazy tensors or tensors known at
//! compile time), the graph it adds to; and what it can fail with.

use std::collections::HashMap;
use std::rc::Rc;

use thiserror::Error;

use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, GraphError, Lazy};
use crate::onnx::{AttrProblem, Attributes, ElemType, Narrow, OnnxError, OnnxNode, Requant};
use crate::ops::ConstValue;
use crate::tensor::{decode_element, Tensor, TensorError};

/// A value of the model: a lazy tensor of the graph, or a tensor known at compile time
/// (initializers, `Constant` nodes and everything computed only from them).
#[derive(Clone, Debug)]
pub enum Value {
    Tensor(Lazy),
    Known(Rc<Tensor>),
}

impl Value {
    pub fn known(t: Tensor) -> Value {
        Value::Known(Rc::new(t))
    }

    /// A known `i64` tensor.
    pub fn ints(dims: Vec<usize>, values: &[i64]) -> Result<Value, OpError> {
        Ok(Value::known(Tensor::from_i64(Scalar::I64, dims, values)?))
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Value::Tensor(l) => l.shape(),
            Value::Known(t) => t.shape(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Value::Tensor(l) => l.dtype,
            Value::Known(t) => DType::from(t.dtype()),
        }
    }
}

/// Why an op could not be built.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OpError {
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error(transparent)]
    Onnx(OnnxError),
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// An attribute of the node: the import error that wraps this one names the node.
    #[error("attribute {attr:?}")]
    Attribute {
        attr: String,
        #[source]
        problem: AttrProblem,
    },
    #[error("input {index} is missing")]
    MissingInput { index: usize },
    #[error("input {index} ({name:?}) must be known at compile time")]
    NotKnown { index: usize, name: String },
    #[error("output {index} ({name:?}) is not supported")]
    Output { index: usize, name: String },
    #[error("{0}")]
    Invalid(String),
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("evaluating at compile time")]
    Eval(#[source] crate::graph::eval::EvalError),
}

/// An attribute error loses the node context, which the import error adds anyway.
impl From<OnnxError> for OpError {
    fn from(e: OnnxError) -> Self {
        match e {
            OnnxError::Attribute { attr, problem, .. } => OpError::Attribute { attr, problem },
            other => OpError::Onnx(other),
        }
    }
}

/// Shorthand for an `OpError::Invalid`.
pub fn invalid(reason: impl Into<String>) -> OpError {
    OpError::Invalid(reason.into())
}

/// Kiln's type for an ONNX element type; `tensor` names the value in the error.
pub fn dtype_of(elem: ElemType, tensor: &str) -> Result<DType, OnnxError> {
    Ok(DType::from(elem.to_scalar(tensor)?))
}

/// A known tensor as a graph value: a broadcast constant when all its elements are equal,
/// otherwise a weight.
pub fn materialize(g: &mut Graph, name: &str, t: &Tensor) -> Result<Lazy, OpError> {
    let dtype = DType::from(t.dtype());
    let mut chunks = t.bytes().chunks_exact(dtype.size());
    if let Some(first) = chunks.next() {
        if chunks.all(|c| c == first) {
            let v = decode_element(dtype.scalar, first);
            return Ok(g.const_exact(v, dtype, t.shape()));
        }
    }
    Ok(g.weight(name, t.clone()))
}

/// A node's inputs and the graph its builder adds to.
pub struct Ctx<'a> {
    pub node: &'a OnnxNode,
    pub opset: i64,
    /// How quantized operators requantize their accumulators.
    pub requant: Requant,
    pub graph: &'a mut Graph,
    inputs: &'a [Option<Value>],
    /// Known inputs already turned into graph values, by value name.
    cache: &'a mut HashMap<String, Lazy>,
    /// The narrow element type of each input that has one (held in its container).
    narrow_inputs: Vec<Option<Narrow>>,
    /// The narrow element type of each output that the builder gave one.
    narrow_outputs: Vec<Option<Narrow>>,
    /// Each output of data-dependent length: its axis and its length (an `i64` scalar).
    bounded_outputs: Vec<Option<(usize, Lazy)>>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        node: &'a OnnxNode,
        (opset, requant): (i64, Requant),
        graph: &'a mut Graph,
        inputs: &'a [Option<Value>],
        cache: &'a mut HashMap<String, Lazy>,
    ) -> Self {
        Ctx {
            node,
            opset,
            requant,
            graph,
            inputs,
            cache,
            narrow_inputs: Vec::new(),
            narrow_outputs: Vec::new(),
            bounded_outputs: Vec::new(),
        }
    }

    /// The same, with the narrow element types of the inputs.
    pub fn with_narrow_inputs(mut self, narrow: Vec<Option<Narrow>>) -> Self {
        self.narrow_inputs = narrow;
        self
    }

    /// The narrow element type of input `i`, when it has one.
    pub fn narrow(&self, i: usize) -> Option<Narrow> {
        self.narrow_inputs.get(i).copied().flatten()
    }

    /// Says that output `k` holds values of the narrow type `n` (in its container).
    pub fn set_narrow(&mut self, k: usize, n: Narrow) {
        if self.narrow_outputs.len() <= k {
            self.narrow_outputs.resize(k + 1, None);
        }
        self.narrow_outputs[k] = Some(n);
    }

    /// The narrow element types the builder gave its outputs.
    /// Output `k` holds an upper bound of elements along `axis`; `length` (an `i64` scalar)
    /// says how many are valid at run time.
    pub fn set_bounded(&mut self, k: usize, axis: usize, length: Lazy) {
        if self.bounded_outputs.len() <= k {
            self.bounded_outputs.resize(k + 1, None);
        }
        self.bounded_outputs[k] = Some((axis, length));
    }

    pub fn bounded_outputs(&self) -> &[Option<(usize, Lazy)>] {
        &self.bounded_outputs
    }

    pub fn narrow_outputs(&self) -> &[Option<Narrow>] {
        &self.narrow_outputs
    }

    pub fn attrs(&self) -> &Attributes {
        &self.node.attrs
    }

    /// Whether input `i` is given (not omitted).
    pub fn has(&self, i: usize) -> bool {
        matches!(self.inputs.get(i), Some(Some(_)))
    }

    /// The number of inputs, omitted ones included.
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    pub fn value(&self, i: usize) -> Result<&Value, OpError> {
        match self.inputs.get(i) {
            Some(Some(v)) => Ok(v),
            _ => Err(OpError::MissingInput { index: i }),
        }
    }

    /// Input `i` as a graph value.
    pub fn tensor(&mut self, i: usize) -> Result<Lazy, OpError> {
        match self.value(i)? {
            Value::Tensor(l) => Ok(l.clone()),
            Value::Known(t) => {
                let t = Rc::clone(t);
                let name = self.node.inputs[i].clone();
                if let Some(l) = self.cache.get(&name) {
                    return Ok(l.clone());
                }
                let l = materialize(self.graph, &name, &t)?;
                self.cache.insert(name, l.clone());
                Ok(l)
            }
        }
    }

    /// Input `i` as a graph value, `None` when omitted.
    pub fn opt_tensor(&mut self, i: usize) -> Result<Option<Lazy>, OpError> {
        if self.has(i) {
            self.tensor(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Every given input as a graph value.
    pub fn tensors(&mut self) -> Result<Vec<Lazy>, OpError> {
        let given: Vec<usize> = (0..self.input_count()).filter(|&i| self.has(i)).collect();
        given.into_iter().map(|i| self.tensor(i)).collect()
    }

    /// Whether input `i` is given and known at compile time.
    pub fn is_known(&self, i: usize) -> bool {
        matches!(self.inputs.get(i), Some(Some(Value::Known(_))))
    }

    /// Input `i`, which must be known at compile time.
    pub fn known(&self, i: usize) -> Result<&Tensor, OpError> {
        match self.value(i)? {
            Value::Known(t) => Ok(t),
            Value::Tensor(_) => Err(OpError::NotKnown {
                index: i,
                name: self.node.inputs[i].clone(),
            }),
        }
    }

    /// Input `i` as known integers (shapes, axes, indices, pads).
    pub fn ints(&self, i: usize) -> Result<Vec<i64>, OpError> {
        let t = self.known(i)?;
        t.to_i64()
            .ok_or_else(|| invalid(format!("input {i} holds {}, not integers", t.dtype())))
    }

    /// Like `ints`, `None` when the input is omitted.
    pub fn opt_ints(&self, i: usize) -> Result<Option<Vec<i64>>, OpError> {
        if self.has(i) {
            self.ints(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Input `i` as integers when it is known, `None` when it is computed at run time.
    pub fn known_ints(&self, i: usize) -> Result<Option<Vec<i64>>, OpError> {
        if self.is_known(i) {
            self.ints(i).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Input `i` as one known number.
    pub fn scalar(&self, i: usize) -> Result<f64, OpError> {
        let t = self.known(i)?;
        match t.to_f64().as_slice() {
            [v] => Ok(*v),
            _ => Err(invalid(format!("input {i} is not a single number"))),
        }
    }

    /// The value of every element of input `i`, when it is known and they are all equal.
    pub fn uniform(&self, i: usize) -> Option<f64> {
        let Ok(Value::Known(t)) = self.value(i) else {
            return None;
        };
        let v = t.to_f64();
        let first = *v.first()?;
        v.iter().all(|&x| x == first).then_some(first)
    }

    pub fn shape(&self, i: usize) -> Result<Vec<usize>, OpError> {
        Ok(self.value(i)?.shape().to_vec())
    }

    pub fn dtype(&self, i: usize) -> Result<DType, OpError> {
        match self.value(i)? {
            Value::Tensor(l) => Ok(l.dtype),
            Value::Known(t) => Ok(DType::from(t.dtype())),
        }
    }

    /// Whether output `k` is used (named).
    pub fn wants(&self, k: usize) -> bool {
        self.node.outputs.get(k).is_some_and(|n| !n.is_empty())
    }

    /// Fails unless only the first `n` outputs are used.
    pub fn only_outputs(&self, n: usize) -> Result<(), OpError> {
        match (n..self.node.outputs.len()).find(|&k| self.wants(k)) {
            Some(index) => Err(OpError::Output {
                index,
                name: self.node.outputs[index].clone(),
            }),
            None => Ok(()),
        }
    }

    /// An exact scalar of `dtype` broadcast to `shape`.
    pub fn scalar_const(&mut self, v: f64, dtype: DType, shape: &[usize]) -> Lazy {
        let c = if dtype.scalar == Scalar::Bool || dtype.scalar.is_float() {
            ConstValue::from_f64(dtype, v)
        } else {
            ConstValue::from_i64(dtype, v as i64)
        };
        self.graph.const_exact(c, dtype, shape)
    }
}

/// Normalizes a possibly negative `axis` for `rank` (axes may equal `rank` when `inclusive`).
pub fn norm_axis(axis: i64, rank: usize, inclusive: bool) -> Result<usize, OpError> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    let end = r + i64::from(inclusive);
    if a < 0 || a >= end.max(1) {
        return Err(invalid(format!(
            "axis {axis} is out of range for rank {rank}"
        )));
    }
    Ok(a as usize)
}

/// Normalizes a list of axes, which must be distinct.
pub fn norm_axes(axes: &[i64], rank: usize) -> Result<Vec<usize>, OpError> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = norm_axis(a, rank, false)?;
        if out.contains(&n) {
            return Err(invalid(format!("axis {a} is given twice")));
        }
        out.push(n);
    }
    Ok(out)
}

/// The most elements a tensor may have.
pub const MAX_ELEMENTS: usize = 1 << 31;

/// Converts a non-negative integer from a model (a dim, pad, size) to `usize`.
pub fn to_usize(v: i64, what: &str) -> Result<usize, OpError> {
    match usize::try_from(v) {
        Ok(u) if u <= MAX_ELEMENTS => Ok(u),
        Ok(_) => Err(invalid(format!("{what} {v} is too large"))),
        Err(_) => Err(invalid(format!("{what} {v} is negative"))),
    }
}

/// The number of elements of `dims`, which must not exceed [`MAX_ELEMENTS`].
pub fn checked_numel(dims: &[usize]) -> Result<usize, OpError> {
    dims.iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| invalid(format!("shape {dims:?} has too many elements")))
}

/// The name of output `k` (`""` when the node has fewer outputs).
pub fn output_name(node: &OnnxNode, k: usize) -> &str {
    node.outputs.get(k).map_or("", String::as_str)
}

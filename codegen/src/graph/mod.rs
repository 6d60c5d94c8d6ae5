//! The lazy graph: the tensor-level program an importer builds.
//!
//! A [`Lazy`] value is a base node seen through a [`ShapeTracker`]: movement ops (reshape,
//! permute, expand, pad, shrink, flip) only change the view and never add nodes. Nodes are the
//! sources (model inputs, weights, constants), elementwise ALU ops, casts and reduces. The
//! scheduler later decides which nodes become buffers and fuses the rest into kernels.

pub mod eval;
pub mod fixed;
pub mod fixed_log;
pub mod loops;
pub mod nn;
pub mod quant;
mod requant;
mod state;
mod take;
pub mod tensor;

pub use state::StateInfo;

use crate::dtype::DType;
use crate::ops::{AluOp, ConstValue, ReduceOp, TernaryOp};
use crate::shape::{ShapeError, ShapeTracker};
use crate::tensor::Tensor;
use std::collections::BTreeSet;

/// Index of a node in a [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// Index of a weight tensor in a [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WeightId(pub u32);

/// What a node computes.
#[derive(Clone, Debug, PartialEq)]
pub enum GOp {
    /// The model's `n`-th input.
    Input(usize),
    /// The model's `n`-th state ([`StateInfo`]): its value as the run starts.
    State(usize),
    /// A weight tensor (constant data, stored in flash).
    Weight(WeightId),
    /// A scalar constant (shape `[]`, broadcast by views).
    Const(ConstValue),
    Alu(AluOp),
    Cast,
    Bitcast,
    /// Reduce the source over `axes`, keeping them as size 1.
    Reduce(ReduceOp, Vec<usize>),
    /// Forces its source to be computed into its own buffer.
    Contiguous,
    /// A counted loop over its sources (see [`loops`]); shape `[]`, read only by its results.
    Loop(loops::LoopRef),
    /// Result `k` of the loop that is its one source.
    LoopResult(usize),
}

impl GOp {
    /// A source whose values are in a buffer before the run: an input, a state, a weight.
    pub fn is_source_buffer(&self) -> bool {
        matches!(self, GOp::Input(_) | GOp::State(_) | GOp::Weight(_))
    }
}

/// One node: its op, result type and shape, and its sources (each a view of another node).
#[derive(Clone, Debug)]
pub struct GNode {
    pub op: GOp,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub src: Vec<Lazy>,
}

/// A value: a base node seen through a view.
#[derive(Clone, Debug, PartialEq)]
pub struct Lazy {
    pub base: NodeId,
    pub st: ShapeTracker,
    pub dtype: DType,
}

impl Lazy {
    pub fn shape(&self) -> &[usize] {
        self.st.shape()
    }

    pub fn numel(&self) -> usize {
        self.shape().iter().product()
    }
}

/// A weight: a named tensor of constant data.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightData {
    pub name: String,
    pub tensor: Tensor,
    /// Kept in its own type in flash (the model asked for it: TFLite's `keep_f16`): constant
    /// folding never widens it at compile time.
    pub kept: bool,
}

/// A model input.
#[derive(Clone, Debug, PartialEq)]
pub struct InputInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// Errors of tensor-level ops: wrong shapes, ranks, axes or types.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum GraphError {
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error("{op}: shapes {a:?} and {b:?} do not broadcast")]
    Broadcast {
        op: &'static str,
        a: Vec<usize>,
        b: Vec<usize>,
    },
    #[error("{op}: operand types {a} and {b} differ")]
    DTypeMismatch {
        op: &'static str,
        a: DType,
        b: DType,
    },
    #[error("{op}: axis {axis} is out of range for rank {rank}")]
    Axis {
        op: &'static str,
        axis: i64,
        rank: usize,
    },
    #[error("{op}: {reason}")]
    Invalid { op: &'static str, reason: String },
}

/// The lazy graph of a model: nodes, weights, inputs and states.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub nodes: Vec<GNode>,
    pub weights: Vec<WeightData>,
    pub inputs: Vec<InputInfo>,
    pub states: Vec<StateInfo>,
    /// Nodes whose shape already puts an image's channels last (a TFLite model's NHWC
    /// tensors): the schedule's layout pass leaves their buffers in the order they have.
    /// Every other image is channel-first, as ONNX's are.
    pub channels_last: BTreeSet<NodeId>,
}

impl Graph {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `x`'s shape is an image with its channels last (NHWC), when `x` is its
    /// node as computed (a node seen through a permutation is not).
    pub fn mark_channels_last(&mut self, x: &Lazy) {
        if x.st.contiguous() && x.shape() == self.node(x.base).shape.as_slice() {
            self.channels_last.insert(x.base);
        }
    }

    pub fn node(&self, id: NodeId) -> &GNode {
        &self.nodes[id.0 as usize]
    }

    fn push(&mut self, op: GOp, dtype: DType, shape: Vec<usize>, src: Vec<Lazy>) -> Lazy {
        let id = NodeId(self.nodes.len() as u32);
        let st = ShapeTracker::from_shape(&shape);
        self.nodes.push(GNode {
            op,
            dtype,
            shape,
            src,
        });
        Lazy {
            base: id,
            st,
            dtype,
        }
    }

    /// A new model input.
    pub fn input(&mut self, name: &str, dtype: DType, shape: &[usize]) -> Lazy {
        let n = self.inputs.len();
        self.inputs.push(InputInfo {
            name: name.into(),
            dtype,
            shape: shape.to_vec(),
        });
        self.push(GOp::Input(n), dtype, shape.to_vec(), vec![])
    }

    /// A new weight holding `tensor`.
    pub fn weight(&mut self, name: &str, tensor: Tensor) -> Lazy {
        let id = WeightId(self.weights.len() as u32);
        let (dtype, shape) = (DType::from(tensor.dtype()), tensor.shape().to_vec());
        self.weights.push(WeightData {
            name: name.into(),
            tensor,
            kept: false,
        });
        self.push(GOp::Weight(id), dtype, shape, vec![])
    }

    /// Marks the weight `x` (a weight node) to stay in its own type in flash.
    pub fn keep_weight(&mut self, x: &Lazy) {
        if let GOp::Weight(w) = self.node(x.base).op {
            self.weights[w.0 as usize].kept = true;
        }
    }

    /// The scalar `v` broadcast to `shape`.
    pub fn constant(&mut self, v: f64, dtype: DType, shape: &[usize]) -> Lazy {
        let c = ConstValue::from_f64(dtype, v);
        let base = self.push(GOp::Const(c), dtype, vec![], vec![]);
        let ones = vec![1; shape.len()];
        let st = ShapeTracker::from_shape(&[])
            .reshape(&ones)
            .and_then(|s| s.expand(shape))
            .expect("a scalar broadcasts to any shape");
        Lazy { st, ..base }
    }

    /// The constant value of `x`, if it is a (broadcast, unpadded) scalar constant.
    pub fn const_value(&self, x: &Lazy) -> Option<ConstValue> {
        match self.node(x.base).op {
            GOp::Const(c) if x.st.views.iter().all(|v| v.mask.is_none()) => Some(c),
            _ => None,
        }
    }

    /// An elementwise op over same-shaped operands.
    pub fn alu(&mut self, op: AluOp, src: &[Lazy]) -> Result<Lazy, GraphError> {
        let name = "elementwise";
        let shape = src[0].shape().to_vec();
        for s in src {
            if s.shape() != shape.as_slice() {
                return Err(GraphError::Broadcast {
                    op: name,
                    a: shape,
                    b: s.shape().to_vec(),
                });
            }
        }
        let values = if matches!(op, AluOp::Ternary(TernaryOp::Where)) {
            &src[1..]
        } else {
            src
        };
        for s in values {
            if s.dtype != values[0].dtype {
                return Err(GraphError::DTypeMismatch {
                    op: name,
                    a: values[0].dtype,
                    b: s.dtype,
                });
            }
        }
        let dtype = if op.is_comparison() {
            DType::BOOL
        } else {
            values[0].dtype
        };
        Ok(self.push(GOp::Alu(op), dtype, shape, src.to_vec()))
    }

    pub fn cast(&mut self, x: &Lazy, dtype: DType) -> Lazy {
        if x.dtype == dtype {
            return x.clone();
        }
        self.push(GOp::Cast, dtype, x.shape().to_vec(), vec![x.clone()])
    }

    pub fn bitcast(&mut self, x: &Lazy, dtype: DType) -> Lazy {
        self.push(GOp::Bitcast, dtype, x.shape().to_vec(), vec![x.clone()])
    }

    /// Reduces `x` over `axes`, keeping them as size 1.
    pub fn reduce(&mut self, op: ReduceOp, x: &Lazy, axes: &[usize]) -> Result<Lazy, GraphError> {
        let mut shape = x.shape().to_vec();
        for &a in axes {
            if a >= shape.len() {
                return Err(GraphError::Axis {
                    op: "reduce",
                    axis: a as i64,
                    rank: shape.len(),
                });
            }
            shape[a] = 1;
        }
        if axes.iter().any(|&a| x.shape()[a] == 0) {
            // Reducing over no elements gives the identity everywhere.
            return Ok(self.const_exact(op.identity(x.dtype), x.dtype, &shape));
        }
        let axes: Vec<usize> = axes
            .iter()
            .copied()
            .filter(|&a| x.shape()[a] != 1)
            .collect();
        if axes.is_empty() {
            return Ok(x.clone());
        }
        Ok(self.push(GOp::Reduce(op, axes), x.dtype, shape, vec![x.clone()]))
    }

    /// Forces `x` into its own buffer.
    pub fn contiguous(&mut self, x: &Lazy) -> Lazy {
        self.push(
            GOp::Contiguous,
            x.dtype,
            x.shape().to_vec(),
            vec![x.clone()],
        )
    }

    /// Ids of the nodes `outputs` depend on, sources before users.
    pub fn toposort(&self, outputs: &[Lazy]) -> Vec<NodeId> {
        let mut seen = vec![false; self.nodes.len()];
        let mut order = Vec::new();
        let mut stack: Vec<(NodeId, bool)> = outputs.iter().map(|o| (o.base, false)).collect();
        while let Some((id, done)) = stack.pop() {
            if done {
                order.push(id);
                continue;
            }
            if seen[id.0 as usize] {
                continue;
            }
            seen[id.0 as usize] = true;
            stack.push((id, true));
            for s in self.node(id).src.iter().rev() {
                if !seen[s.base.0 as usize] {
                    stack.push((s.base, false));
                }
            }
        }
        order
    }
}

/// Movement ops: they only change the view.
impl Lazy {
    pub fn reshape(&self, shape: &[usize]) -> Result<Lazy, GraphError> {
        Ok(Lazy {
            st: self.st.reshape(shape)?,
            ..self.clone()
        })
    }
    pub fn permute(&self, axes: &[usize]) -> Result<Lazy, GraphError> {
        Ok(Lazy {
            st: self.st.permute(axes)?,
            ..self.clone()
        })
    }
    pub fn expand(&self, shape: &[usize]) -> Result<Lazy, GraphError> {
        Ok(Lazy {
            st: self.st.expand(shape)?,
            ..self.clone()
        })
    }
    pub fn pad(&self, arg: &[(usize, usize)]) -> Result<Lazy, GraphError> {
        Ok(Lazy {
            st: self.st.pad(arg)?,
            ..self.clone()
        })
    }
    pub fn shrink(&self, arg: &[(usize, usize)]) -> Result<Lazy, GraphError> {
        Ok(Lazy {
            st: self.st.shrink(arg)?,
            ..self.clone()
        })
    }
    pub fn stride(&self, mul: &[i64]) -> Result<Lazy, GraphError> {
        Ok(Lazy {
            st: self.st.stride(mul)?,
            ..self.clone()
        })
    }

    /// Slicing of one axis as ONNX and TFLite define it: negative bounds count from the end,
    /// bounds are clamped, and a negative step walks backwards from `start` (an `end` of
    /// `i64::MIN` runs to the first element).
    pub fn slice_axis(
        &self,
        axis: usize,
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<Lazy, GraphError> {
        let rank = self.shape().len();
        let Some(&d) = self.shape().get(axis) else {
            return Err(GraphError::Axis {
                op: "slice",
                axis: axis as i64,
                rank,
            });
        };
        let d = d as i64;
        let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        if step == 0 {
            return Err(GraphError::Invalid {
                op: "slice",
                reason: format!("step 0 on axis {axis}"),
            });
        }
        if d == 0 {
            return Ok(self.clone());
        }
        let step = step.clamp(-d, d);
        let (begin, stop) = if step > 0 {
            let s = norm(start).clamp(0, d);
            (s, norm(end).clamp(0, d).max(s))
        } else {
            let s = norm(start).clamp(0, d - 1);
            let e = norm(end).clamp(-1, d - 1);
            if s <= e {
                (0, 0)
            } else {
                (e + 1, s + 1)
            }
        };
        let mut arg: Vec<(usize, usize)> = self.shape().iter().map(|&n| (0, n)).collect();
        arg[axis] = (begin as usize, stop as usize);
        let y = self.shrink(&arg)?;
        if step == 1 || begin == stop {
            return Ok(y);
        }
        let mut mul = vec![1; rank];
        mul[axis] = step;
        y.stride(&mul)
    }
}

/// An input or output of a model file: its index among the file's, and its name.
pub type FileTensor = (usize, String);

/// A model lowered to a graph: the graph, its output values and the model's value names.
#[derive(Clone, Debug)]
pub struct Imported {
    pub graph: Graph,
    pub outputs: Vec<Lazy>,
    pub output_names: Vec<String>,
    pub input_names: Vec<String>,
    /// The outputs whose length along one axis is known only at run time.
    pub bounded: Vec<Bounded>,
    /// The model file's inputs that the graph does not have, bound at compile time (constants
    /// and states): (index among the file's inputs, name).
    pub bound_inputs: Vec<FileTensor>,
    /// The model file's outputs that are only a state's next value: (index among the file's
    /// outputs, name).
    pub state_outputs: Vec<FileTensor>,
}

/// An output of data-dependent length (`NonZero`'s): it holds an upper bound of elements along
/// `axis`, the first ones valid, and output `length` (an `i64` scalar, an output of its own
/// after the model's) says how many are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounded {
    pub output: usize,
    pub axis: usize,
    pub length: usize,
}

/// A tensor's shape and raw bytes.
pub type ShapedBytes = (Vec<usize>, Vec<u8>);

/// The model's outputs as it defines them, from the raw `outputs` of a run (each of `shapes`, the
/// compiled types and shapes): a bounded output cut to its length, the length outputs left out.
/// Returns each output's shape and bytes.
pub fn cut_bounded(
    bounded: &[Bounded],
    shapes: &[(DType, Vec<usize>)],
    outputs: &[Vec<u8>],
) -> Result<Vec<ShapedBytes>, String> {
    let lengths: Vec<usize> = bounded.iter().map(|b| b.length).collect();
    let mut cut = Vec::with_capacity(outputs.len());
    for (k, (bytes, (dtype, shape))) in outputs.iter().zip(shapes).enumerate() {
        if lengths.contains(&k) {
            continue;
        }
        let Some(b) = bounded.iter().find(|b| b.output == k) else {
            cut.push((shape.clone(), bytes.clone()));
            continue;
        };
        let raw = outputs.get(b.length).ok_or("a length output is missing")?;
        let n = raw
            .get(..8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map(i64::from_le_bytes)
            .ok_or("a length output is not one i64")?;
        let bound = shape
            .get(b.axis)
            .copied()
            .ok_or("a bounded axis is out of range")?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= bound)
            .ok_or_else(|| format!("output {k}: length {n} is past its bound {bound}"))?;
        // Rows before the axis, and bytes of one element along it (all later axes).
        let outer: usize = shape[..b.axis].iter().product();
        let inner: usize = shape[b.axis + 1..].iter().product::<usize>() * dtype.size();
        let mut kept = Vec::with_capacity(outer * n * inner);
        for row in 0..outer {
            let start = row * bound * inner;
            kept.extend_from_slice(&bytes[start..start + n * inner]);
        }
        let mut shape = shape.clone();
        shape[b.axis] = n;
        cut.push((shape, kept));
    }
    Ok(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_outputs_are_cut_to_their_length_on_any_axis() {
        // Output 0: (2, 3) i16 bounded on axis 1 with length 2 (output 2); output 1 plain.
        let bounded = [Bounded {
            output: 0,
            axis: 1,
            length: 2,
        }];
        let shapes = [
            (DType::I16, vec![2, 3]),
            (DType::U8, vec![2]),
            (DType::I64, vec![]),
        ];
        let a: Vec<u8> = [1i16, 2, 0, 4, 5, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let raw = vec![a, vec![7, 8], 2i64.to_le_bytes().to_vec()];
        let cut = cut_bounded(&bounded, &shapes, &raw).unwrap();
        assert_eq!(cut.len(), 2);
        assert_eq!(cut[0].0, [2, 2]);
        let kept: Vec<u8> = [1i16, 2, 4, 5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(cut[0].1, kept);
        assert_eq!(cut[1], (vec![2], vec![7, 8]));
        // A length past the bound is an error, not a read past the output.
        let mut past = raw.clone();
        past[2] = 4i64.to_le_bytes().to_vec();
        let err = cut_bounded(&bounded, &shapes, &past).unwrap_err();
        assert!(err.contains("length 4 is past its bound 3"), "{err}");
    }
}

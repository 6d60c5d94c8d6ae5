//! Counted loops: a body graph run a fixed number of times, as recurrent layers need.
//!
//! A loop is one [`GOp::Loop`] node whose sources are its operands, followed by one
//! [`GOp::LoopResult`] node per result. The body is a graph of its own: each of its inputs is
//! fed from the loop's operands ([`LoopInput`]), and its outputs are stacked into results or
//! carried to the next iteration. The scheduler compiles the body once, into kernels that run
//! `count` times over windows of the operands and results, so a long sequence costs no more
//! kernels than a short one.

use super::{GNode, GOp, Graph, GraphError, Lazy};
use crate::shape::ShapeTracker;
use crate::tensor::{Tensor, TensorError};
use std::rc::Rc;

/// What feeds one input of a loop's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoopInput {
    /// Operand `operand`, the same at every iteration.
    Invariant { operand: usize },
    /// Row `t` of operand `operand` at iteration `t` (row `count - 1 - t` when `reverse`): the
    /// operand's first axis has `count` rows, each of the body input's shape.
    Row { operand: usize, reverse: bool },
    /// A value carried from one iteration to the next: operand `init` at the first, body output
    /// `next` of the previous iteration after that.
    State { init: usize, next: usize },
}

/// One result of a loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoopResult {
    /// Body output `output` of every iteration, row `t` from iteration `t` (from iteration
    /// `count - 1 - t` when `reverse`): shape `[count, ..output's shape]`.
    Stacked { output: usize, reverse: bool },
    /// The value of state input `input` after the last iteration (its `init` if `count` is 0).
    Final { input: usize },
}

/// A loop's body and how it connects to the loop's operands and results.
#[derive(Clone, Debug)]
pub struct LoopBody {
    pub count: usize,
    /// The body: its model inputs are the loop's [`LoopInput`]s, in order.
    pub graph: Graph,
    pub outputs: Vec<Lazy>,
    pub inputs: Vec<LoopInput>,
    pub results: Vec<LoopResult>,
}

/// A shared loop body; two loops are equal when they are the same one.
#[derive(Clone, Debug)]
pub struct LoopRef(pub Rc<LoopBody>);

impl PartialEq for LoopRef {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for LoopRef {
    type Target = LoopBody;
    fn deref(&self) -> &LoopBody {
        &self.0
    }
}

impl LoopBody {
    /// The shape and type of each result.
    fn result_types(&self) -> Vec<(crate::dtype::DType, Vec<usize>)> {
        self.results
            .iter()
            .map(|r| match *r {
                LoopResult::Stacked { output, .. } => {
                    let o = &self.outputs[output];
                    let mut shape = vec![self.count];
                    shape.extend_from_slice(o.shape());
                    (o.dtype, shape)
                }
                LoopResult::Final { input } => {
                    let i = &self.graph.inputs[input];
                    (i.dtype, i.shape.clone())
                }
            })
            .collect()
    }

    /// Checks that the operands fit the body's inputs, and the inputs and results refer to
    /// what exists.
    fn check(&self, operands: &[Lazy]) -> Result<(), GraphError> {
        let invalid = |reason: String| GraphError::Invalid { op: "loop", reason };
        if self.inputs.len() != self.graph.inputs.len() {
            return Err(invalid(format!(
                "{} inputs described for a body of {}",
                self.inputs.len(),
                self.graph.inputs.len()
            )));
        }
        let operand = |i: usize| {
            operands
                .get(i)
                .ok_or_else(|| invalid(format!("operand {i} of {}", operands.len())))
        };
        let output = |i: usize| {
            self.outputs
                .get(i)
                .ok_or_else(|| invalid(format!("body output {i} of {}", self.outputs.len())))
        };
        for (k, (input, info)) in self.inputs.iter().zip(&self.graph.inputs).enumerate() {
            let (value, shape) = match *input {
                LoopInput::Invariant { operand: o } => (operand(o)?, operand(o)?.shape().to_vec()),
                LoopInput::Row { operand: o, .. } => {
                    let x = operand(o)?;
                    let mut shape = vec![self.count];
                    shape.extend_from_slice(&info.shape);
                    (x, shape)
                }
                LoopInput::State { init, next } => {
                    let next = output(next)?;
                    if next.shape() != info.shape.as_slice() || next.dtype != info.dtype {
                        return Err(invalid(format!(
                            "state input {k} ({} {:?}) is fed by an output of {} {:?}",
                            info.dtype,
                            info.shape,
                            next.dtype,
                            next.shape()
                        )));
                    }
                    (operand(init)?, info.shape.clone())
                }
            };
            if value.shape() != shape.as_slice() || value.dtype != info.dtype {
                return Err(invalid(format!(
                    "body input {k} `{}` needs {} {:?}, its operand is {} {:?}",
                    info.name,
                    info.dtype,
                    shape,
                    value.dtype,
                    value.shape()
                )));
            }
        }
        for r in &self.results {
            match *r {
                LoopResult::Stacked { output: o, .. } => {
                    output(o)?;
                }
                LoopResult::Final { input } => {
                    if !matches!(self.inputs.get(input), Some(LoopInput::State { .. })) {
                        return Err(invalid(format!("result of input {input}, not a state")));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Graph {
    /// Runs `body` over `operands`; returns its results. Each operand becomes a buffer of its
    /// own, which the loop's kernels read in place.
    /// A body run once is no loop: its nodes join this graph, so that its kernels fuse with
    /// the ones around it and a state it updates can be updated in place (a streaming RNN
    /// step).
    pub fn repeat(&mut self, body: LoopBody, operands: &[Lazy]) -> Result<Vec<Lazy>, GraphError> {
        body.check(operands)?;
        if body.count == 1 {
            return self.run_once(&body, operands);
        }
        let operands: Vec<Lazy> = operands.iter().map(|o| self.buffered(o)).collect();
        let types = body.result_types();
        let mut loop_value = self.push(
            GOp::Loop(LoopRef(Rc::new(body))),
            crate::dtype::DType::U8,
            vec![],
            operands,
        );
        loop_value.st = ShapeTracker::from_shape(&[]);
        Ok(types
            .into_iter()
            .enumerate()
            .map(|(k, (dtype, shape))| {
                self.push(GOp::LoopResult(k), dtype, shape, vec![loop_value.clone()])
            })
            .collect())
    }

    /// The results of `body` run once over `operands`, its nodes copied into this graph.
    fn run_once(&mut self, body: &LoopBody, operands: &[Lazy]) -> Result<Vec<Lazy>, GraphError> {
        let mut inputs = Vec::with_capacity(body.inputs.len());
        for (input, info) in body.inputs.iter().zip(&body.graph.inputs) {
            inputs.push(match *input {
                LoopInput::Invariant { operand } => operands[operand].clone(),
                LoopInput::Row { operand, .. } => operands[operand].reshape(&info.shape)?,
                LoopInput::State { init, .. } => operands[init].clone(),
            });
        }
        let outputs = self.splice(&body.graph, &inputs, &body.outputs)?;
        let mut results = Vec::with_capacity(body.results.len());
        for r in &body.results {
            results.push(match *r {
                LoopResult::Stacked { output, .. } => {
                    let o = &outputs[output];
                    o.reshape(&[&[1], o.shape()].concat())?
                }
                LoopResult::Final { input } => match body.inputs[input] {
                    LoopInput::State { next, .. } => outputs[next].clone(),
                    _ => unreachable!("checked: a final result is a state's"),
                },
            });
        }
        Ok(results)
    }

    /// Copies the nodes of `body` into this graph, its inputs being `inputs`: the values of
    /// `outputs` (`body`'s) in this graph.
    pub fn splice(
        &mut self,
        body: &Graph,
        inputs: &[Lazy],
        outputs: &[Lazy],
    ) -> Result<Vec<Lazy>, GraphError> {
        let through = |mapped: &[Lazy], s: &Lazy| {
            let m = &mapped[s.base.0 as usize];
            Lazy {
                base: m.base,
                st: m.st.compose(&s.st),
                dtype: s.dtype,
            }
        };
        let mut mapped: Vec<Lazy> = Vec::with_capacity(body.nodes.len());
        for node in &body.nodes {
            let value = match &node.op {
                GOp::Input(i) => inputs[*i].clone(),
                GOp::Weight(w) => {
                    let data = body.weights[w.0 as usize].clone();
                    let id = super::WeightId(self.weights.len() as u32);
                    self.weights.push(data);
                    self.push(GOp::Weight(id), node.dtype, node.shape.clone(), vec![])
                }
                GOp::State(_) => {
                    return Err(GraphError::Invalid {
                        op: "loop",
                        reason: "a body with a state of its own".into(),
                    })
                }
                op => {
                    let src = node.src.iter().map(|s| through(&mapped, s)).collect();
                    self.push(op.clone(), node.dtype, node.shape.clone(), src)
                }
            };
            mapped.push(value);
        }
        Ok(outputs.iter().map(|o| through(&mapped, o)).collect())
    }

    /// `x` as a whole buffer: itself when it is a plain view of a node that has one, else a
    /// copy.
    fn buffered(&mut self, x: &Lazy) -> Lazy {
        let node: &GNode = self.node(x.base);
        let numel: usize = node.shape.iter().product();
        let has_buffer = !matches!(node.op, GOp::Const(_) | GOp::Loop(_));
        let plain = x.st.contiguous() && x.st.size() == numel;
        if has_buffer && plain && node.dtype == x.dtype {
            x.clone()
        } else {
            self.contiguous(x)
        }
    }
}

/// The results of running `body` on the host over `operands` (each as a tensor of its shape):
/// the graph evaluator's loop, one body evaluation per iteration.
pub fn evaluate_loop(
    body: &LoopBody,
    operands: &[Tensor],
) -> Result<Vec<Tensor>, super::eval::EvalError> {
    let row = |x: &Tensor, t: usize| -> Result<Tensor, TensorError> {
        let rows = x.shape().first().copied().unwrap_or(1).max(1);
        let bytes = x.bytes().len() / rows;
        Tensor::new(
            x.dtype(),
            x.shape()[1..].to_vec(),
            x.bytes()[t * bytes..(t + 1) * bytes].to_vec(),
        )
    };
    let mut state: Vec<Option<Tensor>> = body
        .inputs
        .iter()
        .map(|i| match *i {
            LoopInput::State { init, .. } => Some(operands[init].clone()),
            _ => None,
        })
        .collect();
    let mut rows: Vec<Vec<Vec<u8>>> = vec![vec![Vec::new(); body.count]; body.outputs.len()];
    for t in 0..body.count {
        let mut inputs = Vec::with_capacity(body.inputs.len());
        for (k, input) in body.inputs.iter().enumerate() {
            inputs.push(match *input {
                LoopInput::Invariant { operand } => operands[operand].clone(),
                LoopInput::Row { operand, reverse } => row(
                    &operands[operand],
                    if reverse { body.count - 1 - t } else { t },
                )?,
                LoopInput::State { .. } => state[k].clone().expect("a state has a value"),
            });
        }
        let outputs = super::eval::evaluate(&body.graph, &body.outputs, &inputs)?;
        for (k, input) in body.inputs.iter().enumerate() {
            if let LoopInput::State { next, .. } = *input {
                state[k] = Some(outputs[next].clone());
            }
        }
        for (rows, out) in rows.iter_mut().zip(outputs) {
            rows[t] = out.bytes().to_vec();
        }
    }
    body.results
        .iter()
        .zip(body.result_types())
        .map(|(r, (dtype, shape))| match *r {
            LoopResult::Stacked { output, reverse } => {
                let mut bytes = Vec::new();
                for t in 0..body.count {
                    let from = if reverse { body.count - 1 - t } else { t };
                    bytes.extend_from_slice(&rows[output][from]);
                }
                Ok(Tensor::new(dtype.scalar, shape, bytes)?)
            }
            LoopResult::Final { input } => Ok(state[input].clone().expect("a state has a value")),
        })
        .collect()
}

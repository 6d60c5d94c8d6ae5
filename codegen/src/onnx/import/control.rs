//! Control flow: `If`, `Loop` and `Scan`, whose subgraphs the importer lowers itself.
//!
//! - `If` is decided at compile time when its condition is known: the chosen branch's nodes
//!   are imported in place. On a condition known only at run time, both branches are imported
//!   and each output selects between them, which needs branches of the same types and shapes.
//! - `Scan` and `Loop` become counted loops ([`Graph::repeat`]): the body is imported into a
//!   graph of its own, once, and runs once per iteration. A `Loop` needs its trip count at
//!   compile time, and a condition that stays true (or is known to turn false after the first
//!   iteration); a `Loop` that stops on a value computed at run time is refused.
//!
//! A subgraph reads values of the graphs around it by name: known ones become constants of
//! the body, computed ones extra operands that every iteration sees whole.

use super::{ImportError, Importer};
use crate::dtype::{DType, Scalar};
use crate::graph::loops::{LoopBody, LoopInput, LoopResult};
use crate::graph::{Graph, Lazy};
use crate::onnx::ops::{checked_numel, materialize, norm_axis, OpError, Value};
use crate::onnx::{OnnxGraph, OnnxNode};
use crate::tensor::Tensor;
use std::collections::HashMap;

mod scan;

/// Most iterations a `Loop` may have: each has its iteration number in flash.
const MAX_TRIP_COUNT: usize = 1 << 20;

/// The op types the importer lowers here.
pub(super) const OPS: &[&str] = &["If", "Loop", "Scan"];

/// What feeds one input of a body graph.
enum Formal {
    /// A body input of this type and shape.
    Input(DType, Vec<usize>),
    /// A value known at compile time.
    Known(Tensor),
}

/// A subgraph imported as a body: its graph, its outputs (values of that graph), and the
/// enclosing graph's values it reads as extra inputs (after the formal ones).
struct Body {
    graph: Graph,
    outputs: Vec<Value>,
    captured: Vec<Lazy>,
}

impl Importer {
    /// Lowers a control-flow node; its outputs are set like any node's.
    pub(super) fn control(&mut self, node: &OnnxNode) -> Result<(), ImportError> {
        self.check_not_bounded(node)?;
        let fail = |source: OpError| ImportError::Node {
            node: node.name.clone(),
            op: node.op_type.clone(),
            source: Box::new(source),
        };
        let inputs: Vec<Option<Value>> = node
            .inputs
            .iter()
            .map(|n| {
                (!n.is_empty())
                    .then(|| self.values.get(n).cloned())
                    .flatten()
            })
            .collect();
        let outs = match node.op_type.as_str() {
            "If" => self.if_node(node, &inputs)?,
            "Loop" => self.loop_node(node, &inputs)?,
            _ => self.scan_node(node, &inputs)?,
        };
        if outs.len() < node.outputs.iter().filter(|o| !o.is_empty()).count() {
            let index = outs.len();
            let name = node.outputs[index].clone();
            return Err(fail(OpError::Output { index, name }));
        }
        for (name, v) in node.outputs.iter().zip(outs) {
            if !name.is_empty() {
                self.values.insert(name.clone(), v);
            }
        }
        Ok(())
    }

    /// `x` as a value of this importer's graph.
    fn lazy(&mut self, name: &str, x: &Value) -> Result<Lazy, OpError> {
        match x {
            Value::Tensor(l) => Ok(l.clone()),
            Value::Known(t) => {
                if let Some(l) = self.cache.get(name) {
                    return Ok(l.clone());
                }
                let l = materialize(&mut self.graph, name, t)?;
                self.cache.insert(name.to_string(), l.clone());
                Ok(l)
            }
        }
    }

    /// Imports `branch` into this graph, its values seen by its nodes only: the values of its
    /// outputs.
    fn inline(&mut self, node: &OnnxNode, branch: &OnnxGraph) -> Result<Vec<Value>, ImportError> {
        let own = (branch.initializers.iter().map(|(n, _)| n))
            .chain(branch.nodes.iter().flat_map(|n| &n.outputs));
        let saved: Vec<(String, Option<Value>)> = own
            .map(|n| (n.clone(), self.values.get(n).cloned()))
            .collect();
        for (name, t) in &branch.initializers {
            self.values.insert(name.clone(), Value::known(t.clone()));
        }
        let mut result = Ok(Vec::new());
        for n in &branch.nodes {
            if let Err(e) = self.node(n) {
                result = Err(e);
                break;
            }
        }
        if result.is_ok() {
            result = branch_outputs(branch, &self.values);
        }
        if let Some(o) = branch
            .outputs
            .iter()
            .find(|o| self.bounded.contains_key(&o.name))
        {
            result = Err(node_error(node)(OpError::Unsupported(format!(
                "a branch output {:?} whose length is known only at run time",
                o.name
            ))));
        }
        for (name, old) in saved {
            match old {
                Some(v) => self.values.insert(name, v),
                None => self.values.remove(&name),
            };
        }
        result
    }

    fn if_node(
        &mut self,
        node: &OnnxNode,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>, ImportError> {
        let fail = node_error(node);
        let then_branch = node
            .attrs
            .graph("then_branch")
            .map_err(|e| fail(e.into()))?;
        let else_branch = node
            .attrs
            .graph("else_branch")
            .map_err(|e| fail(e.into()))?;
        let cond = match inputs.first() {
            Some(Some(c)) if c.shape().iter().product::<usize>() == 1 => c.clone(),
            _ => {
                return Err(fail(OpError::Invalid(
                    "the condition is not one value".into(),
                )))
            }
        };
        if let Value::Known(t) = &cond {
            let taken = t.values().next().is_some_and(|v| v.as_f64() != 0.0);
            return self.inline(node, if taken { then_branch } else { else_branch });
        }
        let then_values = self.inline(node, then_branch)?;
        let else_values = self.inline(node, else_branch)?;
        if then_values.len() != else_values.len() {
            return Err(fail(OpError::Invalid(format!(
                "the branches give {} and {} outputs",
                then_values.len(),
                else_values.len()
            ))));
        }
        let cond = self.lazy(&node.inputs[0], &cond).map_err(&fail)?;
        let mut outs = Vec::with_capacity(then_values.len());
        for (k, (t, e)) in then_values.iter().zip(&else_values).enumerate() {
            let differ = t.shape() != e.shape() || t.dtype() != e.dtype();
            if differ {
                return Err(fail(OpError::Unsupported(format!(
                    "If on a condition known only at run time, whose branches give output {k} \
                     as {} {:?} and {} {:?}",
                    t.dtype(),
                    t.shape(),
                    e.dtype(),
                    e.shape()
                ))));
            }
            let name = format!("{}.then.{k}", node.name);
            let t = self.lazy(&name, t).map_err(&fail)?;
            let name = format!("{}.else.{k}", node.name);
            let e = self.lazy(&name, e).map_err(&fail)?;
            let ones = vec![1; t.shape().len()];
            let c = cond.reshape(&ones).and_then(|c| c.expand(t.shape()));
            let c = c.map_err(|e| fail(e.into()))?;
            let picked = self.graph.where_(&c, &t, &e).map_err(|e| fail(e.into()))?;
            outs.push(Value::Tensor(picked));
        }
        Ok(outs)
    }

    /// Imports `sub` into a new graph, its inputs fed as `formals` say.
    fn body(
        &mut self,
        node: &OnnxNode,
        sub: &OnnxGraph,
        formals: Vec<Formal>,
    ) -> Result<Body, ImportError> {
        let fail = node_error(node);
        if formals.len() != sub.inputs.len() {
            return Err(fail(OpError::Invalid(format!(
                "the body has {} inputs, the op feeds {}",
                sub.inputs.len(),
                formals.len()
            ))));
        }
        let mut narrow = self.narrow.clone();
        narrow.extend(sub.narrow.iter().map(|(k, v)| (k.clone(), *v)));
        let mut child = Importer {
            graph: Graph::new(),
            values: HashMap::new(),
            narrow,
            cache: HashMap::new(),
            opset: self.opset,
            requant: self.requant,
            bounded: HashMap::new(),
        };
        for (info, formal) in sub.inputs.iter().zip(formals) {
            let v = match formal {
                Formal::Input(dtype, shape) => {
                    Value::Tensor(child.graph.input(&info.name, dtype, &shape))
                }
                Formal::Known(t) => Value::known(t),
            };
            child.values.insert(info.name.clone(), v);
        }
        for (name, t) in &sub.initializers {
            child.values.insert(name.clone(), Value::known(t.clone()));
        }
        let mut captured = Vec::new();
        for name in &sub.outer {
            let v = match self.values.get(name) {
                Some(Value::Tensor(l)) => {
                    captured.push(l.clone());
                    Value::Tensor(child.graph.input(name, l.dtype, l.shape()))
                }
                Some(known) => known.clone(),
                None => {
                    return Err(fail(OpError::Invalid(format!(
                        "the body reads {name:?}, which no enclosing graph defines"
                    ))))
                }
            };
            child.values.insert(name.clone(), v);
        }
        for n in &sub.nodes {
            child.node(n).map_err(per_iteration)?;
        }
        if let Some(o) = sub
            .outputs
            .iter()
            .find(|o| child.bounded.contains_key(&o.name))
        {
            return Err(fail(OpError::Unsupported(format!(
                "a loop body output {:?} whose length is known only at run time",
                o.name
            ))));
        }
        let outputs = branch_outputs(sub, &child.values)?;
        Ok(Body {
            graph: child.graph,
            outputs,
            captured,
        })
    }

    /// Runs `body` as a counted loop over `operands` (the formal ones; the captured values are
    /// added): the loop's results.
    fn run_loop(
        &mut self,
        node: &OnnxNode,
        mut body: Body,
        count: usize,
        mut operands: Vec<Lazy>,
        mut inputs: Vec<LoopInput>,
        results: Vec<LoopResult>,
    ) -> Result<Vec<Lazy>, ImportError> {
        let fail = node_error(node);
        for l in body.captured.drain(..) {
            inputs.push(LoopInput::Invariant {
                operand: operands.len(),
            });
            operands.push(l);
        }
        for r in &results {
            if let LoopResult::Stacked { output, .. } = *r {
                let mut shape = vec![count];
                shape.extend_from_slice(body.outputs.get(output).map_or(&[][..], |v| v.shape()));
                checked_numel(&shape).map_err(&fail)?;
            }
        }
        let mut outputs = Vec::with_capacity(body.outputs.len());
        for (k, v) in body.outputs.iter().enumerate() {
            let name = format!("{}.body.{k}", node.name);
            outputs.push(materialize_in(&mut body.graph, &name, v).map_err(&fail)?);
        }
        let spec = LoopBody {
            count,
            graph: body.graph,
            outputs,
            inputs,
            results,
        };
        self.graph
            .repeat(spec, &operands)
            .map_err(|e| fail(e.into()))
    }

    fn loop_node(
        &mut self,
        node: &OnnxNode,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>, ImportError> {
        let fail = node_error(node);
        let sub = node.attrs.graph("body").map_err(|e| fail(e.into()))?;
        let count = match inputs.first() {
            Some(Some(Value::Known(t))) => t.values().next().map(|v| v.as_f64()),
            Some(Some(Value::Tensor(_))) => {
                let name = node.inputs[0].clone();
                return Err(fail(OpError::NotKnown { index: 0, name }));
            }
            _ => None,
        };
        let Some(count) = count else {
            return Err(fail(OpError::Unsupported(
                "Loop without a trip count (it stops on its condition only)".into(),
            )));
        };
        if count > MAX_TRIP_COUNT as f64 {
            return Err(fail(OpError::Invalid(format!(
                "trip count {count} is past the {MAX_TRIP_COUNT} iterations Kiln compiles"
            ))));
        }
        let mut count = count.max(0.0) as usize;
        match inputs.get(1) {
            Some(Some(Value::Known(t))) if t.values().next().is_some_and(|v| v.as_f64() == 0.0) => {
                count = 0;
            }
            Some(Some(Value::Tensor(_))) => {
                let name = node.inputs[1].clone();
                return Err(fail(OpError::NotKnown { index: 1, name }));
            }
            _ => {}
        }
        let carried = inputs.len().saturating_sub(2);
        let k = sub.outputs.len().checked_sub(1 + carried).ok_or_else(|| {
            fail(OpError::Invalid(format!(
                "the body gives {} outputs for {carried} loop-carried values",
                sub.outputs.len()
            )))
        })?;
        let steps: Vec<i64> = (0..count as i64).collect();
        let iterations =
            Tensor::from_i64(Scalar::I64, vec![count], &steps).map_err(|e| fail(e.into()))?;
        let iterations = self
            .graph
            .weight(&format!("{}.iteration", node.name), iterations);
        let truth = Tensor::new(Scalar::Bool, vec![], vec![1]).map_err(|e| fail(e.into()))?;
        let mut operands = vec![iterations];
        let mut formals = vec![Formal::Input(DType::I64, vec![]), Formal::Known(truth)];
        let mut loop_inputs = vec![LoopInput::Row {
            operand: 0,
            reverse: false,
        }];
        // The condition input is a constant true: it is true whenever the body runs. Body
        // inputs after it are the loop-carried values, fed from the body's outputs 1 on.
        for i in 0..carried {
            let v = match inputs.get(2 + i) {
                Some(Some(v)) => v.clone(),
                _ => return Err(fail(OpError::MissingInput { index: 2 + i })),
            };
            let l = self.lazy(&node.inputs[2 + i], &v).map_err(&fail)?;
            formals.push(Formal::Input(l.dtype, l.shape().to_vec()));
            loop_inputs.push(LoopInput::State {
                init: 1 + i,
                next: 1 + i,
            });
            operands.push(l);
        }
        let body = self.body(node, sub, formals)?;
        match body.outputs.first() {
            Some(Value::Known(t)) => {
                if t.values().next().is_some_and(|v| v.as_f64() == 0.0) {
                    // The loop stops after its first iteration.
                    count = count.min(1);
                }
            }
            _ => {
                return Err(fail(OpError::Unsupported(
                    "Loop whose condition is computed at run time".into(),
                )))
            }
        }
        // The body graph's inputs: the iteration number, then the loop-carried values (the
        // condition is a constant, not an input).
        let results = (0..carried)
            .map(|i| LoopResult::Final { input: 1 + i })
            .chain((0..k).map(|o| LoopResult::Stacked {
                output: 1 + carried + o,
                reverse: false,
            }))
            .collect();
        // The iteration numbers were made for the full count; a shorter loop reads their start.
        if count < steps.len() {
            operands[0] = operands[0]
                .shrink(&[(0, count)])
                .map_err(|e| fail(e.into()))?;
        }
        let values = self.run_loop(node, body, count, operands, loop_inputs, results)?;
        Ok(values.into_iter().map(Value::Tensor).collect())
    }
}

/// The values of `g`'s outputs among `values`.
fn branch_outputs(
    g: &OnnxGraph,
    values: &HashMap<String, Value>,
) -> Result<Vec<Value>, ImportError> {
    g.outputs
        .iter()
        .map(|o| {
            values
                .get(&o.name)
                .cloned()
                .ok_or_else(|| ImportError::MissingOutput {
                    name: o.name.clone(),
                })
        })
        .collect()
}

/// `v` as a value of `g` (a known value becomes a constant or a weight of it).
fn materialize_in(g: &mut Graph, name: &str, v: &Value) -> Result<Lazy, OpError> {
    match v {
        Value::Tensor(l) => Ok(l.clone()),
        Value::Known(t) => materialize(g, name, t),
    }
}

/// `x` without its leading batch axis of 1 (Scan-8).
fn unbatch(x: &Lazy) -> Result<Lazy, OpError> {
    match x.shape().split_first() {
        Some((1, rest)) => Ok(x.reshape(rest)?),
        _ => Err(OpError::Unsupported(format!(
            "Scan-8 over a batch of shape {:?} (only one batch)",
            x.shape()
        ))),
    }
}

/// The error of `node` with `source` as its cause.
fn node_error(node: &OnnxNode) -> impl Fn(OpError) -> ImportError + '_ {
    move |source| ImportError::Node {
        node: node.name.clone(),
        op: node.op_type.clone(),
        source: Box::new(source),
    }
}

/// An error of a body's node: a value the node needs at compile time is one that changes from
/// one iteration to the next, which a body compiled once cannot have.
fn per_iteration(e: ImportError) -> ImportError {
    match e {
        ImportError::Node { node, op, source } => {
            let source = match *source {
                OpError::NotKnown { index, name } => OpError::Unsupported(format!(
                    "input {index} ({name:?}) at compile time, in a loop body where it changes \
                     from one iteration to the next"
                )),
                other => other,
            };
            ImportError::Node {
                node,
                op,
                source: Box::new(source),
            }
        }
        other => other,
    }
}

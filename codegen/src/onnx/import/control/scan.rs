//! `Scan`: a counted loop whose scan inputs are read a row a step and whose scan outputs are
//! stacked a row a step, along the axes and in the directions its attributes name. Opset 8's
//! form has a leading batch axis (one batch only) and no `sequence_lens`.

use super::{node_error, norm_axis, unbatch, Formal, OpError, Value};
use crate::graph::loops::{LoopInput, LoopResult};
use crate::graph::Lazy;
use crate::onnx::import::{ImportError, Importer};
use crate::onnx::{OnnxGraph, OnnxNode};

/// A `Scan` node's shape: its `n` states, `m` scan inputs and `k` scan outputs, with their
/// axes and directions.
struct ScanForm {
    /// Opset 8: every operand and result has a leading batch axis of 1.
    batched: bool,
    /// The first state's input (after Scan-8's `sequence_lens`).
    first: usize,
    n: usize,
    m: usize,
    k: usize,
    in_dirs: Vec<i64>,
    in_axes: Vec<i64>,
    out_dirs: Vec<i64>,
    out_axes: Vec<i64>,
}

impl ScanForm {
    fn of(
        node: &OnnxNode,
        sub: &OnnxGraph,
        inputs: &[Option<Value>],
        opset: i64,
    ) -> Result<ScanForm, ImportError> {
        let fail = node_error(node);
        let attrs = &node.attrs;
        let scans = attrs.int("num_scan_inputs").map_err(|e| fail(e.into()))?;
        let batched = opset < 9;
        let first = usize::from(batched);
        if batched && inputs.first().is_some_and(|v| v.is_some()) {
            return Err(fail(OpError::Unsupported(
                "Scan-8 with sequence_lens".into(),
            )));
        }
        let m = usize::try_from(scans)
            .ok()
            .filter(|&m| m >= 1 && first + m <= inputs.len())
            .ok_or_else(|| fail(OpError::Invalid(format!("num_scan_inputs {scans}"))))?;
        let n = inputs.len() - first - m;
        let k = sub.outputs.len().checked_sub(n).ok_or_else(|| {
            fail(OpError::Invalid(format!(
                "the body gives {} outputs for {n} states",
                sub.outputs.len()
            )))
        })?;
        let list = |name: &str, len: usize| -> Result<Vec<i64>, ImportError> {
            let v = attrs
                .ints_or(name, vec![0; len])
                .map_err(|e| fail(e.into()))?;
            match v.len() == len {
                true => Ok(v),
                false => Err(fail(OpError::Invalid(format!(
                    "{name} has {} entries for {len}",
                    v.len()
                )))),
            }
        };
        // Scan-8 scans and stacks along its axis 0 only, with its own name for the directions.
        let axes = |name: &str, len: usize| match batched {
            true => Ok(vec![0; len]),
            false => list(name, len),
        };
        let directions = match batched {
            true => "directions",
            false => "scan_input_directions",
        };
        Ok(ScanForm {
            batched,
            first,
            n,
            m,
            k,
            in_dirs: list(directions, m)?,
            in_axes: axes("scan_input_axes", m)?,
            out_dirs: axes("scan_output_directions", k)?,
            out_axes: axes("scan_output_axes", k)?,
        })
    }
}

/// The loop's operands (states, then scan inputs with their steps' axis first), the body's
/// formal inputs and the loop's inputs, and the number of steps.
struct Operands {
    operands: Vec<Lazy>,
    formals: Vec<Formal>,
    loop_inputs: Vec<LoopInput>,
    count: usize,
}

impl Importer {
    pub(super) fn scan_node(
        &mut self,
        node: &OnnxNode,
        inputs: &[Option<Value>],
    ) -> Result<Vec<Value>, ImportError> {
        let fail = node_error(node);
        let sub = node.attrs.graph("body").map_err(|e| fail(e.into()))?;
        let form = ScanForm::of(node, sub, inputs, self.opset)?;
        let ops = self.scan_operands(node, inputs, &form)?;
        let body = self.body(node, sub, ops.formals)?;
        let n = form.n;
        let mut results: Vec<LoopResult> = (0..n).map(|i| LoopResult::Final { input: i }).collect();
        results.extend((0..form.k).map(|o| LoopResult::Stacked {
            output: n + o,
            reverse: form.out_dirs[o] != 0,
        }));
        let values = self.run_loop(
            node,
            body,
            ops.count,
            ops.operands,
            ops.loop_inputs,
            results,
        )?;
        let mut outs = Vec::with_capacity(values.len());
        for (r, l) in values.into_iter().enumerate() {
            let l = match r.checked_sub(n) {
                // A scan output's steps go to its axis.
                Some(o) => {
                    let rank = l.shape().len();
                    let axis = norm_axis(form.out_axes[o], rank, false).map_err(&fail)?;
                    let mut order: Vec<usize> = (1..rank).collect();
                    order.insert(axis, 0);
                    l.permute(&order).map_err(|e| fail(e.into()))?
                }
                None => l,
            };
            let l = match form.batched {
                true => {
                    let mut shape = vec![1];
                    shape.extend_from_slice(l.shape());
                    l.reshape(&shape).map_err(|e| fail(e.into()))?
                }
                false => l,
            };
            outs.push(Value::Tensor(l));
        }
        Ok(outs)
    }

    /// The loop's operands of a `Scan`: its states whole, its scan inputs with their scanned
    /// axis moved first (all as many steps long).
    fn scan_operands(
        &mut self,
        node: &OnnxNode,
        inputs: &[Option<Value>],
        form: &ScanForm,
    ) -> Result<Operands, ImportError> {
        let fail = node_error(node);
        let (n, m) = (form.n, form.m);
        let mut ops = Operands {
            operands: Vec::with_capacity(n + m),
            formals: Vec::with_capacity(n + m),
            loop_inputs: Vec::with_capacity(n + m),
            count: 0,
        };
        let operand = |me: &mut Importer, index: usize| -> Result<Lazy, ImportError> {
            let v = match inputs.get(index) {
                Some(Some(v)) => v.clone(),
                _ => return Err(fail(OpError::MissingInput { index })),
            };
            let l = me.lazy(&node.inputs[index], &v).map_err(&fail)?;
            match form.batched {
                true => unbatch(&l).map_err(&fail),
                false => Ok(l),
            }
        };
        for i in 0..n {
            let l = operand(self, form.first + i)?;
            ops.formals.push(Formal::Input(l.dtype, l.shape().to_vec()));
            ops.loop_inputs.push(LoopInput::State { init: i, next: i });
            ops.operands.push(l);
        }
        let mut count = None;
        for j in 0..m {
            let l = operand(self, form.first + n + j)?;
            let rank = l.shape().len();
            let axis = norm_axis(form.in_axes[j], rank, false).map_err(&fail)?;
            let mut order: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
            order.insert(0, axis);
            let l = l.permute(&order).map_err(|e| fail(e.into()))?;
            let t = l.shape()[0];
            if *count.get_or_insert(t) != t {
                return Err(fail(OpError::Invalid(format!(
                    "scan input {j} has {t} steps, scan input 0 {}",
                    count.unwrap_or_default()
                ))));
            }
            ops.formals
                .push(Formal::Input(l.dtype, l.shape()[1..].to_vec()));
            ops.loop_inputs.push(LoopInput::Row {
                operand: n + j,
                reverse: form.in_dirs[j] != 0,
            });
            ops.operands.push(l);
        }
        ops.count = count.unwrap_or_default();
        Ok(ops)
    }
}

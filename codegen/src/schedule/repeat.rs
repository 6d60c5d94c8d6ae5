//! Scheduling a loop: its body is scheduled once, as a graph of its own, and spliced in as a run
//! of items that the schedule repeats. The body's buffers become the loop's: an invariant input
//! is its operand's buffer, a row input a window over its operand, a stacked output a window
//! over its result, a state a buffer that copies carry from one iteration to the next, and the
//! body's intermediates buffers of their own.

use super::build::Scheduler;
use super::{
    create_schedule, BufId, BufKind, BufferInfo, Schedule, ScheduleError, ScheduleItem,
    ScheduleLoop,
};
use crate::graph::loops::{LoopBody, LoopInput, LoopResult};
use crate::graph::{GOp, NodeId, WeightId};
use crate::schedule::ast::LazyOp;
use crate::shape::ShapeTracker;

/// Emits loop node `id`: the copies of the initial states, then the body's items with the
/// copies that carry outputs to states, as one loop.
pub(super) fn emit_loop(
    b: &mut Scheduler,
    id: NodeId,
    body: &LoopBody,
) -> Result<(), ScheduleError> {
    let internal = |what: String| ScheduleError::Internal(format!("loop node {}: {what}", id.0));
    let inner = create_schedule(&body.graph, &body.outputs)?;
    if !inner.loops.is_empty() {
        return Err(internal("a loop in a loop's body".into()));
    }
    let frame = Frame::new(b, id, body, &inner)?;
    let (direct, copied) = stacked_outputs(body, &inner, &frame.results);
    let map = (inner.buffers.iter().enumerate())
        .map(|(i, info)| frame.body_buffer(b, (body, &inner), info, direct[i]))
        .collect::<Result<Vec<BufId>, String>>()
        .map_err(internal)?;
    for (k, input) in body.inputs.iter().enumerate() {
        if let LoopInput::State { init, .. } = *input {
            copy(b, frame.state(k), frame.operands[init]);
        }
    }
    let start = b.items.len();
    for item in &inner.items {
        let bufs = item.bufs.iter().map(|x| map[x.0 as usize]).collect();
        b.items.push(ScheduleItem {
            ast: item.ast.clone(),
            bufs,
        });
    }
    for (src, result, reverse) in copied {
        let to = frame.window(b, result, &inner.buffers[src], reverse);
        copy(b, to, map[src]);
    }
    for (k, input) in body.inputs.iter().enumerate() {
        if let LoopInput::State { next, .. } = *input {
            let from = inner.outputs[next];
            if let BufKind::Input(j) = inner.buffers[from.0 as usize].kind {
                if matches!(body.inputs[j], LoopInput::State { .. }) && j != k {
                    return Err(internal(format!("state {k} is state {j} passed through")));
                }
            }
            copy(b, frame.state(k), map[from.0 as usize]);
        }
    }
    if b.items.len() > start {
        b.loops.push(ScheduleLoop {
            items: start..b.items.len(),
            count: body.count,
        });
    }
    Ok(())
}

/// The loop's buffers outside its body: its operands', its results' and its states'.
struct Frame {
    count: usize,
    operands: Vec<BufId>,
    results: Vec<BufId>,
    /// Per body input, its state buffer where it is a state: a final result's own, else one
    /// of its own.
    states: Vec<Option<BufId>>,
}

impl Frame {
    fn new(
        b: &mut Scheduler,
        id: NodeId,
        body: &LoopBody,
        inner: &Schedule,
    ) -> Result<Frame, ScheduleError> {
        let operands: Vec<BufId> = (b.g.node(id).src.iter())
            .map(|s| b.source_buffer(s.base))
            .collect();
        let results: Vec<BufId> = (0..body.results.len())
            .map(|k| {
                let node = NodeId(id.0 + 1 + k as u32);
                match b.g.nodes.get(node.0 as usize).map(|n| &n.op) {
                    Some(GOp::LoopResult(j)) if *j == k => {
                        Ok(b.buffer(node, BufKind::Intermediate))
                    }
                    _ => Err(ScheduleError::Internal(format!(
                        "loop node {}: result {k} does not follow the loop",
                        id.0
                    ))),
                }
            })
            .collect::<Result<_, _>>()?;
        let mut states: Vec<Option<BufId>> = vec![None; body.inputs.len()];
        for (k, input) in body.inputs.iter().enumerate() {
            if let LoopInput::State { .. } = input {
                let fin = (body.results.iter()).position(|r| *r == LoopResult::Final { input: k });
                let info = &inner.buffers[inner.inputs[k].0 as usize];
                states[k] = Some(match fin {
                    Some(r) => results[r],
                    None => b.new_buffer(BufferInfo {
                        kind: BufKind::Intermediate,
                        ..info.clone()
                    }),
                });
            }
        }
        Ok(Frame {
            count: body.count,
            operands,
            results,
            states,
        })
    }

    /// Body input `k`'s state buffer.
    fn state(&self, k: usize) -> BufId {
        self.states[k].expect("a state input has its buffer")
    }

    /// A window over `of` that moves by one row of `info` each iteration, from the last row
    /// back where `reverse`.
    fn window(&self, b: &mut Scheduler, of: BufId, info: &BufferInfo, reverse: bool) -> BufId {
        let row = info.numel();
        let (start, step) = match reverse {
            true => (self.count.saturating_sub(1) * row, -(row as isize)),
            false => (0, row as isize),
        };
        b.new_buffer(BufferInfo {
            kind: BufKind::Window { of, start, step },
            ..info.clone()
        })
    }

    /// The loop's buffer for a body buffer: a weight copied out, an input's operand, window or
    /// state, a stacked output's window over its result (`direct`), else a buffer of its own.
    fn body_buffer(
        &self,
        b: &mut Scheduler,
        (body, inner): (&LoopBody, &Schedule),
        info: &BufferInfo,
        direct: Option<(usize, bool)>,
    ) -> Result<BufId, String> {
        Ok(match info.kind {
            BufKind::Weight(WeightId(w)) => {
                let id = WeightId(b.weights.len() as u32);
                b.weights.push(inner.weights[w as usize].clone());
                b.new_buffer(BufferInfo {
                    kind: BufKind::Weight(id),
                    ..info.clone()
                })
            }
            BufKind::Input(k) => match body.inputs[k] {
                LoopInput::Invariant { operand } => self.operands[operand],
                LoopInput::Row { operand, reverse } => {
                    self.window(b, self.operands[operand], info, reverse)
                }
                LoopInput::State { .. } => self.state(k),
            },
            BufKind::Output(_) | BufKind::Intermediate => match direct {
                Some((r, reverse)) => self.window(b, self.results[r], info, reverse),
                None => b.new_buffer(BufferInfo {
                    kind: BufKind::Intermediate,
                    ..info.clone()
                }),
            },
            BufKind::Window { .. } => return Err("a window in a loop's body".into()),
            BufKind::State(_) => return Err("a model state in a loop's body".into()),
        })
    }
}

/// Which body buffer each stacked result is written from: per body buffer, the result it is
/// directly (where the body computes it and no other result claimed it first); and the
/// results written through a copy instead (body buffer, result, reversed).
#[allow(clippy::type_complexity)]
fn stacked_outputs(
    body: &LoopBody,
    inner: &Schedule,
    results: &[BufId],
) -> (Vec<Option<(usize, bool)>>, Vec<(usize, BufId, bool)>) {
    let mut direct: Vec<Option<(usize, bool)>> = vec![None; inner.buffers.len()];
    let mut copied: Vec<(usize, BufId, bool)> = Vec::new();
    for (r, result) in body.results.iter().enumerate() {
        if let LoopResult::Stacked { output, reverse } = *result {
            let src = inner.outputs[output].0 as usize;
            let computed = matches!(inner.buffers[src].kind, BufKind::Output(_));
            if computed && direct[src].is_none() {
                direct[src] = Some((r, reverse));
            } else {
                copied.push((src, results[r], reverse));
            }
        }
    }
    (direct, copied)
}

/// Appends a kernel copying buffer `from` into `to` (of the same type and size).
fn copy(b: &mut Scheduler, to: BufId, from: BufId) {
    let info = &b.buffers[to.0 as usize];
    let numel = info.numel();
    if numel == 0 || to == from {
        return;
    }
    let st = ShapeTracker::from_shape(&[numel]);
    let load = LazyOp::load(1, info.dtype, st.clone());
    b.items.push(ScheduleItem {
        ast: vec![LazyOp::store(0, st, load)],
        bufs: vec![to, from],
    });
}

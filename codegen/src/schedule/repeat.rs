//! Scheduling a loop: its body is scheduled once, as a graph of its own, and spliced in as a run
//! of items that the schedule repeats. The body's buffers become the loop's: an invariant input
//! is its operand's buffer, a row input a window over its operand, a stacked output a window
//! over its result, a state a buffer that copies carry from one iteration to the next, and the
//! body's intermediates buffers of their own.

use super::build::Scheduler;
use super::{
    create_schedule, BufId, BufKind, BufferInfo, ScheduleError, ScheduleItem, ScheduleLoop,
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
    let operands: Vec<BufId> =
        b.g.node(id)
            .src
            .iter()
            .map(|s| b.source_buffer(s.base))
            .collect();
    let results: Vec<BufId> = (0..body.results.len())
        .map(|k| {
            let node = NodeId(id.0 + 1 + k as u32);
            match b.g.nodes.get(node.0 as usize).map(|n| &n.op) {
                Some(GOp::LoopResult(j)) if *j == k => Ok(b.buffer(node, BufKind::Intermediate)),
                _ => Err(internal(format!("result {k} does not follow the loop"))),
            }
        })
        .collect::<Result<_, _>>()?;
    let inner = create_schedule(&body.graph, &body.outputs)?;
    if !inner.loops.is_empty() {
        return Err(internal("a loop in a loop's body".into()));
    }
    let count = body.count;
    let window = |b: &mut Scheduler, of: BufId, info: &BufferInfo, reverse: bool| {
        let row = info.numel();
        let (start, step) = match reverse {
            true => (count.saturating_sub(1) * row, -(row as isize)),
            false => (0, row as isize),
        };
        b.new_buffer(BufferInfo {
            kind: BufKind::Window { of, start, step },
            ..info.clone()
        })
    };
    // The state buffers: a final result's own, else one of their own.
    let mut states: Vec<Option<BufId>> = vec![None; body.inputs.len()];
    for (k, input) in body.inputs.iter().enumerate() {
        if let LoopInput::State { .. } = input {
            let fin = body
                .results
                .iter()
                .position(|r| *r == LoopResult::Final { input: k });
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
    // Which body buffer each stacked result is written from: the output's own buffer directly,
    // when the body computes it and no other result claimed it first; else through a copy.
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
    let mut map = Vec::with_capacity(inner.buffers.len());
    for (i, info) in inner.buffers.iter().enumerate() {
        let mapped = match info.kind {
            BufKind::Weight(WeightId(w)) => {
                let id = WeightId(b.weights.len() as u32);
                b.weights.push(inner.weights[w as usize].clone());
                b.new_buffer(BufferInfo {
                    kind: BufKind::Weight(id),
                    ..info.clone()
                })
            }
            BufKind::Input(k) => match body.inputs[k] {
                LoopInput::Invariant { operand } => operands[operand],
                LoopInput::Row { operand, reverse } => window(b, operands[operand], info, reverse),
                LoopInput::State { .. } => states[k].expect("made above"),
            },
            BufKind::Output(_) | BufKind::Intermediate => match direct[i] {
                Some((r, reverse)) => window(b, results[r], info, reverse),
                None => b.new_buffer(BufferInfo {
                    kind: BufKind::Intermediate,
                    ..info.clone()
                }),
            },
            BufKind::Window { .. } => return Err(internal("a window in a loop's body".into())),
            BufKind::State(_) => return Err(internal("a model state in a loop's body".into())),
        };
        map.push(mapped);
    }
    for (k, input) in body.inputs.iter().enumerate() {
        if let LoopInput::State { init, .. } = *input {
            let state = states[k].expect("made above");
            copy(b, state, operands[init]);
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
        let info = inner.buffers[src].clone();
        let to = window(b, result, &info, reverse);
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
            copy(b, states[k].expect("made above"), map[from.0 as usize]);
        }
    }
    if b.items.len() > start {
        b.loops.push(ScheduleLoop {
            items: start..b.items.len(),
            count,
        });
    }
    Ok(())
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

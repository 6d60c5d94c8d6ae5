//! Values computed where they are first needed: a load or an arithmetic value that the
//! topological order placed before a loop (or an `IF`) it takes no part in, and that is first
//! used after that block closes, moves to just before that use. It would otherwise stay live
//! across the whole block: a kernel's per-channel requantization parameters, loaded before
//! its reduce loop and used after it, take registers the loop needs (on a microcontroller
//! they are spilled to the stack and read back). No value moves into or out of a block, and
//! no load moves past a store or a barrier, so every value still reads what it read.

use super::UOpId;
use crate::uop::{UOpGraph, UOpKind};
use std::collections::HashMap;

/// `order` (with the END sentinels of `ends`) with each movable value moved past the blocks
/// that lie between it and its first use, as the module documentation says. Linear in the
/// program's size: each value gets a place (just before the original position of its first
/// user's place), found from the last value to the first, and the order is sorted by those.
pub(super) fn sink_past_blocks(g: &UOpGraph, order: &mut Vec<UOpId>, ends: &HashMap<usize, UOpId>) {
    let is_end = |u: UOpId| ends.contains_key(&u.index());
    let spans = Spans::of(g, order, &is_end);
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); g.len()];
    for (p, &u) in order.iter().enumerate() {
        if !is_end(u) {
            for s in g.get(u).src.iter().filter(|s| s.index() < g.len()) {
                users[s.index()].push(p);
            }
        }
    }
    // Each position's place: (the original position it goes just before, its own position).
    let mut place: Vec<(usize, usize)> = (0..order.len()).map(|p| (p, p)).collect();
    for i in (0..order.len()).rev() {
        let n = order[i];
        if is_end(n) || !movable(g, n) {
            continue;
        }
        let Some(&(at, _)) = users[n.index()].iter().map(|&p| &place[p]).min() else {
            continue;
        };
        let load = g.get(n).kind == UOpKind::Load;
        if at > i + 1 && spans.may_sink(i, at, load) {
            place[i] = (at, i);
        }
    }
    let mut sorted: Vec<usize> = (0..order.len()).collect();
    sorted.sort_by_key(|&p| place[p]);
    *order = sorted.into_iter().map(|p| order[p]).collect();
}

/// Prefix counts over a linear order, for checking a move from one position to another.
struct Spans {
    /// Before each position: the innermost open block (its position; `usize::MAX` for none)
    /// and how many are open.
    block: Vec<(usize, usize)>,
    /// Blocks opened, and stores or barriers met, before each position.
    opened: Vec<usize>,
    writes: Vec<usize>,
}

impl Spans {
    fn of(g: &UOpGraph, order: &[UOpId], is_end: &dyn Fn(UOpId) -> bool) -> Spans {
        let (mut stack, mut block) = (Vec::new(), Vec::with_capacity(order.len()));
        let (mut opened, mut writes) = (vec![0], vec![0]);
        for (p, &u) in order.iter().enumerate() {
            block.push((stack.last().copied().unwrap_or(usize::MAX), stack.len()));
            let (mut o, mut w) = (opened[p], writes[p]);
            if is_end(u) {
                stack.pop();
            } else {
                match g.get(u).kind {
                    UOpKind::Range { .. } | UOpKind::If => {
                        stack.push(p);
                        o += 1;
                    }
                    UOpKind::Store | UOpKind::Barrier => w += 1,
                    _ => {}
                }
            }
            opened.push(o);
            writes.push(w);
        }
        Spans {
            block,
            opened,
            writes,
        }
    }

    /// Whether a value at `from` may run just before position `to` instead: the same blocks
    /// are open at both, at least one block opens between them, and, for a `load`, nothing
    /// between them stores or waits at a barrier.
    fn may_sink(&self, from: usize, to: usize, load: bool) -> bool {
        let between = |counts: &[usize]| counts[to] - counts[from + 1];
        self.block[from] == self.block[to]
            && between(&self.opened) > 0
            && !(load && between(&self.writes) > 0)
    }
}

/// A value that may be computed later: arithmetic, or a load from global memory.
fn movable(g: &UOpGraph, n: UOpId) -> bool {
    let u = g.get(n);
    match u.kind {
        UOpKind::Alu(_) | UOpKind::Cast | UOpKind::Bitcast | UOpKind::Gep(_) => true,
        UOpKind::Load => u
            .src
            .first()
            .is_some_and(|&b| matches!(g.get(b).kind, UOpKind::DefineGlobal { .. })),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::dtype::DType;
    use crate::uop::{order_uops, ArgId, UOpGraph, UOpId, UOpKind};

    /// `out[i] = Σ_j x[j] + b[i]` with `b[i]` read before the reduce loop in the graph's
    /// terms (it depends only on `i`), and, when `store_inside`, a store inside that loop.
    fn bias_after_sum(store_inside: bool) -> (UOpGraph, UOpId, UOpId) {
        let mut g = UOpGraph::new();
        let i32 = Some(DType::I32);
        let global = |g: &mut UOpGraph, buf, mutable| {
            g.node(
                UOpKind::DefineGlobal {
                    buf: ArgId(buf),
                    mutable,
                },
                i32,
                vec![],
            )
        };
        let (out, x, b) = (
            global(&mut g, 0, true),
            global(&mut g, 1, false),
            global(&mut g, 2, false),
        );
        let (zero, rows, cols) = (g.const_int(0), g.const_int(8), g.const_int(4));
        let range = |g: &mut UOpGraph, depth, reduce, end| {
            let kind = UOpKind::Range {
                depth,
                index: 0,
                reduce,
                region: 0,
            };
            g.node(kind, i32, vec![zero, end])
        };
        let i = range(&mut g, 1, false, rows);
        let bias = g.node(UOpKind::Load, i32, vec![b, i]);
        let j = range(&mut g, 2, true, cols);
        let acc = g.node(UOpKind::DefineAcc { id: 0 }, i32, vec![zero, j]);
        let xj = g.node(UOpKind::Load, i32, vec![x, j]);
        let add = crate::uop::UOpKind::Alu(crate::ops::AluOp::Binary(crate::ops::BinaryOp::Add));
        let sum = g.node(add.clone(), i32, vec![acc, xj]);
        let phi = g.node(UOpKind::Phi, i32, vec![acc, sum]);
        let mut sinks = vec![];
        if store_inside {
            sinks.push(g.node(UOpKind::Store, None, vec![out, j, sum]));
        }
        let y = g.node(add, i32, vec![phi, bias]);
        sinks.push(g.node(UOpKind::Store, None, vec![out, i, y]));
        let sink = g.node(UOpKind::Sink, None, sinks);
        (g, bias, sink)
    }

    /// Whether the bias load lands after the reduce loop's end.
    fn bias_placed_after_loop(store_inside: bool) -> bool {
        let (g, _, sink) = bias_after_sum(store_inside);
        let linear = order_uops(&g, &[sink]).unwrap();
        let u = &linear.uops;
        let end = u.iter().position(|x| x.kind == UOpKind::EndRange).unwrap();
        let of_b = |x: &crate::uop::UOp| {
            let b = UOpKind::DefineGlobal {
                buf: ArgId(2),
                mutable: false,
            };
            x.kind == UOpKind::Load && u[x.src[0].index()].kind == b
        };
        u.iter().position(of_b).unwrap() > end
    }

    #[test]
    fn a_value_used_after_a_loop_is_computed_after_it() {
        assert!(bias_placed_after_loop(false));
        // A load does not move past a store.
        assert!(!bias_placed_after_loop(true));
    }
}

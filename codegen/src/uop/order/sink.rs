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
/// that lie between it and its first use, as the module documentation says.
pub(super) fn sink_past_blocks(g: &UOpGraph, order: &mut Vec<UOpId>, ends: &HashMap<usize, UOpId>) {
    let is_end = |u: UOpId| ends.contains_key(&u.index());
    for i in (0..order.len()).rev() {
        let n = order[i];
        if is_end(n) || !movable(g, n) {
            continue;
        }
        let Some(q) =
            (i + 1..order.len()).find(|&j| !is_end(order[j]) && g.get(order[j]).src.contains(&n))
        else {
            continue;
        };
        let load = g.get(n).kind == UOpKind::Load;
        let (mut depth, mut blocks) = (0usize, 0usize);
        let mut ok = true;
        for &x in &order[i + 1..q] {
            if is_end(x) {
                match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => {
                        ok = false;
                        break;
                    }
                }
                continue;
            }
            match g.get(x).kind {
                UOpKind::Range { .. } | UOpKind::If => {
                    depth += 1;
                    blocks += 1;
                }
                UOpKind::Store | UOpKind::Barrier if load => {
                    ok = false;
                    break;
                }
                _ => {}
            }
        }
        if ok && blocks > 0 && depth == 0 {
            let x = order.remove(i);
            order.insert(q - 1, x);
        }
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

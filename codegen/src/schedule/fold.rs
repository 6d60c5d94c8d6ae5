//! Constant folding: a computed node that depends only on weights and constants is evaluated
//! at compile time (by the graph's evaluator, [`crate::graph::eval`]) and becomes a weight.

use super::ScheduleError;
use crate::graph::eval::evaluate;
use crate::graph::{GNode, GOp, Graph, Lazy, NodeId, WeightData, WeightId};
use crate::shape::ShapeTracker;

/// Folded nodes may not be larger than this many elements, or than the weights they come
/// from: folding must not grow the model. Nor may a larger one, or a broadcast of weights,
/// grow in bytes where it would fuse into its consumers' kernels: a cast of int8 weights to
/// int32 stays a cast in the kernel, not a weight four times the size. (Where a consumer
/// expands it, the value would be a buffer of its own anyway, computed at every run: then it
/// is folded.)
const SMALL: usize = 4096;

/// A broadcast of weights up to this many bytes is folded (an index table a pool compares with):
/// the kernels that would recompute it cost more than the flash.
const SMALL_BROADCAST: usize = 1024;

pub fn fold_constants(g: &mut Graph, outputs: &[Lazy]) -> Result<(), ScheduleError> {
    let order = g.toposort(outputs);
    let n = g.nodes.len();
    let mut const_only = vec![false; n];
    let mut leaf_numel = vec![0usize; n];
    let mut leaf_bytes = vec![0usize; n];
    let mut expanded = vec![false; n];
    for &id in &order {
        let node = g.node(id);
        let i = id.0 as usize;
        match node.op {
            GOp::Weight(_) => {
                const_only[i] = true;
                leaf_numel[i] = node.shape.iter().product();
                leaf_bytes[i] = leaf_numel[i] * node.dtype.size();
            }
            GOp::Const(_) => const_only[i] = true,
            GOp::Input(_) | GOp::State(_) => {}
            _ => {
                const_only[i] = node.src.iter().all(|s| const_only[s.base.0 as usize]);
                leaf_numel[i] = node.src.iter().fold(0usize, |n, s| {
                    n.saturating_add(leaf_numel[s.base.0 as usize])
                });
                leaf_bytes[i] = node.src.iter().fold(0usize, |n, s| {
                    n.saturating_add(leaf_bytes[s.base.0 as usize])
                });
            }
        }
    }
    let mut wanted = vec![false; n];
    for o in outputs {
        wanted[o.base.0 as usize] = true;
    }
    for &id in &order {
        for s in &g.node(id).src {
            let numel: usize = g.node(s.base).shape.iter().product();
            expanded[s.base.0 as usize] |= s.st.size() > numel;
        }
        if !const_only[id.0 as usize] {
            for s in &g.node(id).src {
                wanted[s.base.0 as usize] = true;
            }
        }
    }
    for &id in &order {
        let i = id.0 as usize;
        let node = g.node(id);
        // A loop's values are its results', which fold on their own.
        let computed = !matches!(
            node.op,
            GOp::Weight(_) | GOp::Const(_) | GOp::Input(_) | GOp::State(_) | GOp::Loop(_)
        );
        let numel: usize = node.shape.iter().product();
        let bytes = numel * node.dtype.size();
        let bounded = numel <= SMALL.max(leaf_numel[i]);
        // A broadcast of weights (a per-channel table widened over a whole activation) is
        // read through its view in the kernel; folded, it would be stored at its full size.
        let broadcast = leaf_numel[i] > 0 && numel > leaf_numel[i] && bytes > SMALL_BROADCAST;
        let grows = (numel > SMALL || broadcast) && bytes > leaf_bytes[i];
        let fits = !grows || expanded[i];
        // A weight the model keeps in its own type (TFLite's `keep_f16`) is widened where it
        // is read, whatever its size.
        let widened_kept = matches!(node.op, GOp::Cast)
            && node.src.len() == 1
            && matches!(g.node(node.src[0].base).op, GOp::Weight(w) if g.weights[w.0 as usize].kept);
        if const_only[i] && wanted[i] && computed && bounded && fits && !widened_kept {
            fold_node(g, id)?;
        }
    }
    Ok(())
}

fn fold_node(g: &mut Graph, id: NodeId) -> Result<(), ScheduleError> {
    let node = g.node(id).clone();
    let out = Lazy {
        base: id,
        st: ShapeTracker::from_shape(&node.shape),
        dtype: node.dtype,
    };
    let tensor = evaluate(g, &[out], &[])?.remove(0);
    let uniform = {
        let mut values = tensor.values();
        let first = values.next();
        first.filter(|&f| values.all(|v| v == f))
    };
    if let Some(first) = uniform {
        {
            // One value everywhere (a cast or an op of broadcast constants): a constant.
            g.nodes[id.0 as usize] = GNode {
                op: GOp::Const(first),
                dtype: node.dtype,
                shape: node.shape,
                src: vec![],
            };
            return Ok(());
        }
    }
    let w = WeightId(g.weights.len() as u32);
    g.weights.push(WeightData {
        name: format!("folded_{}", id.0),
        tensor,
        kept: false,
    });
    g.nodes[id.0 as usize] = GNode {
        op: GOp::Weight(w),
        dtype: node.dtype,
        shape: node.shape,
        src: vec![],
    };
    Ok(())
}

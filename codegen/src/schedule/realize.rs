//! Which nodes become buffers, and which reduces fuse into the kernel of a later node.

use crate::graph::{GOp, Graph, Lazy, NodeId};
use crate::shape::ShapeTracker;
use std::collections::HashMap;

/// The realization decisions for a graph.
#[derive(Debug, Default)]
pub struct Realization {
    /// Per node: computed into (or already in) its own buffer.
    pub realized: Vec<bool>,
    /// Kernel root → the reduce fused into its kernel.
    pub fused: HashMap<NodeId, NodeId>,
    /// Nodes in dependency order.
    pub order: Vec<NodeId>,
}

fn is_compute(op: &GOp) -> bool {
    matches!(
        op,
        GOp::Alu(_) | GOp::Cast | GOp::Bitcast | GOp::Reduce(..) | GOp::Contiguous
    )
}

/// True when `st` is `shape`'s elements in order (a plain reshape of a contiguous buffer).
pub fn is_plain(st: &ShapeTracker, numel: usize) -> bool {
    st.contiguous() && st.size() == numel
}

/// An output must be a whole computed buffer of its own; otherwise it gets a copy kernel.
pub fn output_view(g: &mut Graph, o: &Lazy) -> Lazy {
    let node = g.node(o.base);
    let numel: usize = node.shape.iter().product();
    if is_compute(&node.op) && is_plain(&o.st, numel) {
        o.clone()
    } else {
        g.contiguous(o)
    }
}

/// Decides which nodes of `g` (for `outputs`) get buffers and which reduces fuse into a
/// later kernel.
pub fn realization(g: &Graph, outputs: &[Lazy]) -> Realization {
    let order = g.toposort(outputs);
    let n = g.nodes.len();
    let mut realized = vec![false; n];
    let mut consumers: Vec<Vec<(NodeId, usize)>> = vec![vec![]; n];
    for &id in &order {
        let node = g.node(id);
        if matches!(node.op, GOp::Input(_) | GOp::Weight(_) | GOp::Contiguous) {
            realized[id.0 as usize] = true;
        }
        for (k, s) in node.src.iter().enumerate() {
            consumers[s.base.0 as usize].push((id, k));
            let base = g.node(s.base);
            let numel: usize = base.shape.iter().product();
            if is_compute(&base.op) && s.st.size() > numel {
                realized[s.base.0 as usize] = true;
            }
        }
    }
    let mut outs_seen = std::collections::HashSet::new();
    for o in outputs {
        realized[o.base.0 as usize] = true;
        outs_seen.insert(o.base);
    }
    let mut fused: HashMap<NodeId, NodeId> = HashMap::new();
    for &r in &order {
        if !matches!(g.node(r).op, GOp::Reduce(..)) || realized[r.0 as usize] {
            continue;
        }
        match fusion_root(g, r, &consumers, &realized) {
            Some(t) if !fused.contains_key(&t) => {
                fused.insert(t, r);
            }
            _ => realized[r.0 as usize] = true,
        }
    }
    Realization {
        realized,
        fused,
        order,
    }
}

/// The realized node a reduce's value flows into through single-consumer elementwise ops and
/// plain reshapes, if there is one.
fn fusion_root(
    g: &Graph,
    r: NodeId,
    consumers: &[Vec<(NodeId, usize)>],
    realized: &[bool],
) -> Option<NodeId> {
    let mut cur = r;
    loop {
        let edges = &consumers[cur.0 as usize];
        if edges.len() != 1 {
            return None;
        }
        let (user, k) = edges[0];
        let view = &g.node(user).src[k];
        let numel: usize = g.node(cur).shape.iter().product();
        if !is_plain(&view.st, numel) {
            return None;
        }
        let op = &g.node(user).op;
        if matches!(op, GOp::Reduce(..)) {
            return None;
        }
        if realized[user.0 as usize] {
            return Some(user);
        }
        if !matches!(op, GOp::Alu(_) | GOp::Cast | GOp::Bitcast) {
            return None;
        }
        cur = user;
    }
}

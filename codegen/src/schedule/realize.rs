//! Which nodes become buffers, and which reduces fuse into the kernel of a later node.

use crate::graph::{GOp, Graph, Lazy, NodeId};
use crate::shape::ShapeTracker;
use std::collections::{HashMap, HashSet};

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
        GOp::Alu(_)
            | GOp::Cast
            | GOp::Bitcast
            | GOp::Reduce(..)
            | GOp::Contiguous
            | GOp::LoopResult(_)
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
        if matches!(
            node.op,
            GOp::Input(_)
                | GOp::State(_)
                | GOp::Weight(_)
                | GOp::Contiguous
                | GOp::Loop(_)
                | GOp::LoopResult(_)
        ) {
            realized[id.0 as usize] = true;
        }
        if matches!(node.op, GOp::Loop(_)) {
            // A loop's kernels read each operand in its own buffer.
            for s in &node.src {
                realized[s.base.0 as usize] = true;
            }
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
    limit_inputs(g, &order, &mut realized);
    // Nodes computed from a reduce in the same kernel (not through a buffer).
    let mut reduced = vec![false; n];
    for &id in &order {
        let node = g.node(id);
        reduced[id.0 as usize] = matches!(node.op, GOp::Reduce(..))
            || node.src.iter().any(|s| {
                let b = s.base.0 as usize;
                reduced[b] && !realized[b]
            });
    }
    let mut fused: HashMap<NodeId, NodeId> = HashMap::new();
    for &r in &order {
        if !matches!(g.node(r).op, GOp::Reduce(..)) || realized[r.0 as usize] {
            continue;
        }
        let (mut fusion, region) = fusion_root(g, r, &consumers, &realized, None);
        if let Some(Fusion::Into(t)) = fusion {
            if fused.contains_key(&t) {
                // Another reduce ends in that node's kernel (a residual sum of two
                // convolutions): this one ends where its own chain meets the other's.
                let others = Others {
                    region: &region,
                    reduced: &reduced,
                };
                fusion = fusion_root(g, r, &consumers, &realized, Some(others)).0;
            }
        }
        match fusion {
            Some(Fusion::Into(t)) if !fused.contains_key(&t) => {
                fused.insert(t, r);
            }
            Some(Fusion::Exit(e)) if !fused.contains_key(&e) => {
                realized[e.0 as usize] = true;
                fused.insert(e, r);
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

/// The most buffers one kernel reads: the runtime passes a step at most
/// [`kiln_firmware::schedule::MAX_STEP_ARGS`] pointers, one of them the kernel's output.
pub const MAX_KERNEL_INPUTS: usize = kiln_firmware::schedule::MAX_STEP_ARGS - 1;

/// The buffers the kernel of `root` would read (the realized nodes reached through nodes that
/// are not), and the nodes it would compute inline on the way.
fn kernel_inputs(g: &Graph, root: NodeId, realized: &[bool]) -> (HashSet<NodeId>, Vec<NodeId>) {
    let (mut inputs, mut inline) = (HashSet::new(), Vec::new());
    let mut seen = HashSet::from([root]);
    let mut todo = vec![root];
    while let Some(id) = todo.pop() {
        for s in &g.node(id).src {
            let b = s.base;
            if realized[b.0 as usize] {
                inputs.insert(b);
            } else if !matches!(g.node(b).op, GOp::Const(_)) && seen.insert(b) {
                inline.push(b);
                todo.push(b);
            }
        }
    }
    (inputs, inline)
}

/// Realizes more nodes where a kernel would read more than [`MAX_KERNEL_INPUTS`] buffers (a
/// concatenation of many tensors, a wide butterfly): each time, of the nodes the kernel would
/// compute inline, the one that itself reads the most buffers gets a buffer of its own, until
/// every kernel fits.
fn limit_inputs(g: &Graph, order: &[NodeId], realized: &mut [bool]) {
    let mut todo: Vec<NodeId> = order
        .iter()
        .copied()
        .filter(|&id| realized[id.0 as usize] && is_compute(&g.node(id).op))
        .collect();
    while let Some(root) = todo.pop() {
        loop {
            let (inputs, inline) = kernel_inputs(g, root, realized);
            if inputs.len() <= MAX_KERNEL_INPUTS {
                break;
            }
            let widest = inline
                .iter()
                .filter(|&&id| is_compute(&g.node(id).op))
                .map(|&id| (kernel_inputs(g, id, realized).0.len(), id.0))
                .filter(|&(k, _)| k > 1)
                .max();
            let Some((_, id)) = widest else { break };
            realized[id as usize] = true;
            todo.push(NodeId(id));
        }
    }
}

/// What [`fusion_root`] stops at when another reduce already ends in its node's kernel: this
/// reduce's whole region (as the first [`fusion_root`] found it), and which nodes carry a
/// reduce's value.
struct Others<'a> {
    region: &'a HashSet<NodeId>,
    reduced: &'a [bool],
}

/// Where a reduce's kernel ends.
enum Fusion {
    /// Into this realized node's kernel.
    Into(NodeId),
    /// At this elementwise node after the reduce, which becomes a buffer of its own.
    Exit(NodeId),
}

/// Where the kernel of reduce `r` can end. Its value flows through elementwise ops on plain
/// views (a requantization uses the accumulator more than once): when every path leaves that
/// region into one realized node, the reduce fuses into its kernel; when every path leaves it
/// from one node no wider than the reduce (the int8 result of a requantization that a pool
/// reads), that node is realized with the reduce in its kernel.
///
/// With `others`, the region also ends before a node that reads the value of another reduce
/// (where the chains of two reduces meet). Returns the region too: the nodes the reduce's
/// value flows through by elementwise ops on plain views.
fn fusion_root(
    g: &Graph,
    r: NodeId,
    consumers: &[Vec<(NodeId, usize)>],
    realized: &[bool],
    others: Option<Others>,
) -> (Option<Fusion>, HashSet<NodeId>) {
    // The realized nodes the region flows into, whether it also flows anywhere else (a
    // reduce, a view that is not plain, a movement op), and the nodes it leaves from.
    let (mut into, mut elsewhere, mut exits) = (HashSet::new(), false, HashSet::new());
    let mut seen = HashSet::from([r]);
    let mut todo = vec![r];
    let meets_another = |user: NodeId| {
        others.as_ref().is_some_and(|o| {
            g.node(user).src.iter().any(|s| {
                let b = s.base.0 as usize;
                !o.region.contains(&s.base) && !realized[b] && o.reduced[b]
            })
        })
    };
    while let Some(cur) = todo.pop() {
        let numel: usize = g.node(cur).shape.iter().product();
        for &(user, k) in &consumers[cur.0 as usize] {
            let op = &g.node(user).op;
            let inside = is_plain(&g.node(user).src[k].st, numel)
                && matches!(op, GOp::Alu(_) | GOp::Cast | GOp::Bitcast)
                && !meets_another(user);
            let plain_into = realized[user.0 as usize] && is_plain(&g.node(user).src[k].st, numel);
            if plain_into && !matches!(op, GOp::Reduce(..)) && !meets_another(user) {
                into.insert(user);
                exits.insert(cur);
            } else if !inside || realized[user.0 as usize] {
                elsewhere = true;
                exits.insert(cur);
            } else if seen.insert(user) {
                todo.push(user);
            }
        }
    }
    let single = |set: &HashSet<NodeId>| match set.len() {
        1 => set.iter().next().copied(),
        _ => None,
    };
    // Every path from the reduce to the exit passes through some nodes of the region (the
    // int8 result of a requantization that a pool widens and sums in i32, or that an addition
    // rescales): the buffer holds the narrowest of them, and the reader recomputes the rest
    // (from that value and constants or weights). Node ids follow the graph's order, so
    // expanding the latest node of the frontier first finds each such node when the frontier
    // shrinks to it.
    let narrowest = |e: NodeId| {
        let (mut best, mut frontier) = (e, std::collections::BTreeSet::from([e]));
        while let Some(&x) = frontier.last() {
            if x == r {
                break;
            }
            if frontier.len() == 1 && g.node(x).dtype.size() < g.node(best).dtype.size() {
                best = x;
            }
            frontier.remove(&x);
            let node = g.node(x);
            if !matches!(node.op, GOp::Cast | GOp::Alu(_)) {
                break;
            }
            frontier.extend(node.src.iter().map(|v| v.base).filter(|b| seen.contains(b)));
        }
        best
    };
    let fusion = match (single(&into), single(&exits).map(narrowest)) {
        (Some(t), _) if !elsewhere => Some(Fusion::Into(t)),
        (_, Some(e)) if e != r && g.node(e).dtype.size() <= g.node(r).dtype.size() => {
            Some(Fusion::Exit(e))
        }
        _ => None,
    };
    (fusion, seen)
}

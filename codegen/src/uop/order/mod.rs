//! Ordering a UOp graph into a linear program.
//!
//! Only nodes reachable from the sinks take part. The order is a topological sort driven by a
//! priority queue: a node inside more (and deeper) loops is placed first, so that a loop's body
//! is finished before anything after it. A loop's scope is everything that depends on its
//! `RANGE`, up to and including the `PHI`s that carry its accumulators out; an `IF`'s scope is
//! everything that depends on it up to the `STORE`s. The matching `END` is placed right after
//! the last node of the scope, and an accumulator is declared just before the first loop it
//! accumulates over. A value first used after a block it takes no part in then moves past
//! that block (`sink.rs`). The result is then checked: every node sits inside the loops it depends
//! on, and every value it reads is still in scope.

mod sink;
mod verify;

use super::{UOp, UOpGraph, UOpId, UOpKind};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fmt::Write;

/// A linearized program: instructions in execution order; each source refers to an earlier
/// instruction by its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    pub uops: Vec<UOp>,
}

/// A linear order that would not run correctly. These are bugs of the linearizer, reported
/// instead of producing a wrong program.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum OrderError {
    #[error("uop {index} ({kind}) reads uop {src} before it is computed")]
    UseBeforeDef {
        index: usize,
        kind: String,
        src: usize,
    },
    #[error("uop {index} ({kind}) depends on loop {range} but is placed outside it")]
    OutsideLoop {
        index: usize,
        kind: String,
        range: usize,
    },
    #[error("uop {index} ({kind}) reads uop {src}, whose block has already closed")]
    OutOfScope {
        index: usize,
        kind: String,
        src: usize,
    },
    #[error("the graph has a cycle or an unreachable source")]
    Cycle,
    #[error("uop {index} closes block {block}, but the innermost open block is {open:?}")]
    BadNesting {
        index: usize,
        block: usize,
        open: Option<usize>,
    },
}

/// Orders the nodes of `g` reachable from `sinks` into a [`Linear`] program.
pub fn order_uops(g: &UOpGraph, sinks: &[UOpId]) -> Result<Linear, OrderError> {
    let nodes = reachable(g, sinks);
    let (children, in_degree) = edges(g, &nodes);
    let scopes = block_scopes(g, &nodes, &children);
    let (order, end_markers) = topological_order(g, &nodes, &children, in_degree, scopes)?;
    let (mut order, ends) = place_ends(g, order, end_markers);
    sink::sink_past_blocks(g, &mut order, &ends);
    let linear = build_linear(g, &order, &ends, sinks);
    if let Err(e) = verify::verify(&linear) {
        if std::env::var_os("KILN_DEBUG_ORDER").is_some() {
            eprintln!("{}", linear.listing());
        }
        return Err(e);
    }
    Ok(linear)
}

/// Each node's users, and its number of distinct sources, over `nodes`.
type Edges = (HashMap<UOpId, Vec<UOpId>>, HashMap<UOpId, usize>);

fn edges(g: &UOpGraph, nodes: &[UOpId]) -> Edges {
    let mut children: HashMap<UOpId, Vec<UOpId>> = HashMap::new();
    let mut in_degree: HashMap<UOpId, usize> = HashMap::new();
    for &n in nodes {
        in_degree.entry(n).or_insert(0);
        for &s in unique(&g.get(n).src).iter() {
            children.entry(s).or_default().push(n);
            *in_degree.entry(n).or_insert(0) += 1;
        }
    }
    (children, in_degree)
}

/// Each `RANGE`'s and `IF`'s scope (see the module documentation), last node first.
fn block_scopes(
    g: &UOpGraph,
    nodes: &[UOpId],
    children: &HashMap<UOpId, Vec<UOpId>>,
) -> Vec<(UOpId, HashSet<UOpId>)> {
    let mut scopes = Vec::new();
    for &n in nodes.iter().rev() {
        let end = match g.get(n).kind {
            UOpKind::Range { .. } => UOpKind::Phi,
            UOpKind::If => UOpKind::Store,
            _ => continue,
        };
        scopes.push((n, scope_of(g, children, n, &end)));
    }
    scopes
}

/// Each node's priority: lower inside more and deeper loops.
fn loop_priorities(g: &UOpGraph, scopes: &[(UOpId, HashSet<UOpId>)]) -> HashMap<UOpId, i64> {
    let mut priorities: HashMap<UOpId, i64> = HashMap::new();
    for (r, members) in scopes {
        if let UOpKind::Range { depth, index, .. } = g.get(*r).kind {
            for m in members {
                *priorities.entry(*m).or_insert(0) -= depth as i64 * 1000 + index as i64;
            }
        }
    }
    priorities
}

/// The nodes in order, and for each block the node its scope ends with and the block's
/// owner.
type Ordered = (Vec<UOpId>, Vec<(UOpId, UOpId)>);

/// The topological sort by priority, blocks nested: what a block's scope does not need waits
/// until the block closes.
fn topological_order(
    g: &UOpGraph,
    nodes: &[UOpId],
    children: &HashMap<UOpId, Vec<UOpId>>,
    mut in_degree: HashMap<UOpId, usize>,
    mut scopes: Vec<(UOpId, HashSet<UOpId>)>,
) -> Result<Ordered, OrderError> {
    let priorities = loop_priorities(g, &scopes);
    let priority = |u: UOpId| -> i64 { priorities.get(&u).copied().unwrap_or(0) };
    let mut heap = BinaryHeap::new();
    let push = |heap: &mut BinaryHeap<_>, u: UOpId| {
        heap.push(Reverse((priority(u), tie_break(g.get(u)), u)));
    };
    for &n in nodes {
        if in_degree[&n] == 0 {
            push(&mut heap, n);
        }
    }
    let mut order: Vec<UOpId> = Vec::new();
    let mut end_markers: Vec<(UOpId, UOpId)> = Vec::new();
    // What may be placed while each block is the innermost open one: its scope and what its
    // scope needs. Anything else waits for the block to close, so that blocks nest and values
    // computed inside a block are used only there.
    let needed: HashMap<UOpId, HashSet<UOpId>> = scopes
        .iter()
        .map(|(o, members)| (*o, with_ancestors(g, members)))
        .collect();
    let mut open: Vec<UOpId> = Vec::new();
    let mut deferred: Vec<UOpId> = Vec::new();
    while let Some(Reverse((_, _, x))) = heap.pop() {
        if let Some(inner) = open.last() {
            if !needed[inner].contains(&x) {
                deferred.push(x);
                continue;
            }
        }
        if needed.contains_key(&x) {
            open.push(x);
        }
        place(g, &mut order, x)?;
        for (owner, members) in scopes.iter_mut() {
            if members.remove(&x) && members.is_empty() {
                end_markers.push((x, *owner));
                open.retain(|o| o != owner);
                for d in deferred.drain(..) {
                    push(&mut heap, d);
                }
            }
        }
        for &c in children.get(&x).map(Vec::as_slice).unwrap_or(&[]) {
            let d = in_degree.get_mut(&c).expect("child is reachable");
            *d -= 1;
            if *d == 0 {
                push(&mut heap, c);
            }
        }
    }
    if order.len() != nodes.len() {
        return Err(OrderError::Cycle);
    }
    Ok((order, end_markers))
}

/// Appends `x` to `order`; an accumulator goes just before the first loop it accumulates over.
fn place(g: &UOpGraph, order: &mut Vec<UOpId>, x: UOpId) -> Result<(), OrderError> {
    let u = g.get(x);
    if matches!(u.kind, UOpKind::DefineAcc { .. }) && u.src.len() > 1 {
        let first = order
            .iter()
            .position(|o| u.src[1..].contains(o))
            .ok_or(OrderError::Cycle)?;
        order.insert(first, x);
    } else {
        order.push(x);
    }
    Ok(())
}

/// `order` with END markers (sentinel ids past the graph) after the last node of each scope,
/// and the block each sentinel ends.
fn place_ends(
    g: &UOpGraph,
    mut order: Vec<UOpId>,
    mut end_markers: Vec<(UOpId, UOpId)>,
) -> (Vec<UOpId>, HashMap<usize, UOpId>) {
    let mut ends: HashMap<usize, UOpId> = HashMap::new();
    let sentinel_base = g.len() as u32;
    // Markers after the same node: outer scopes are inserted first, so inner ones close first.
    let opened = |u: &UOpId| order.iter().position(|o| o == u).unwrap_or(0);
    end_markers.sort_by_key(|(last, owner)| (opened(last), opened(owner)));
    for (k, (last, owner)) in end_markers.iter().enumerate() {
        let pos = order.iter().position(|o| o == last).expect("placed");
        let sentinel = UOpId(sentinel_base + k as u32);
        ends.insert(sentinel.index(), *owner);
        order.insert(pos + 1, sentinel);
    }
    (order, ends)
}

fn unique(v: &[UOpId]) -> Vec<UOpId> {
    let mut seen = HashSet::new();
    v.iter().copied().filter(|x| seen.insert(*x)).collect()
}

fn reachable(g: &UOpGraph, sinks: &[UOpId]) -> Vec<UOpId> {
    let mut seen = HashSet::new();
    let mut stack: Vec<UOpId> = sinks.to_vec();
    while let Some(n) = stack.pop() {
        if seen.insert(n) {
            stack.extend(g.get(n).src.iter().copied());
        }
    }
    let mut v: Vec<UOpId> = seen.into_iter().collect();
    v.sort();
    v
}

/// `members` and everything they depend on.
fn with_ancestors(g: &UOpGraph, members: &HashSet<UOpId>) -> HashSet<UOpId> {
    let mut out = HashSet::new();
    let mut stack: Vec<UOpId> = members.iter().copied().collect();
    while let Some(n) = stack.pop() {
        if out.insert(n) {
            stack.extend(g.get(n).src.iter().copied());
        }
    }
    out
}

/// Everything that depends on `root`, not looking past nodes of kind `end` (which are included).
fn scope_of(
    g: &UOpGraph,
    children: &HashMap<UOpId, Vec<UOpId>>,
    root: UOpId,
    end: &UOpKind,
) -> HashSet<UOpId> {
    let mut out = HashSet::new();
    let mut stack: Vec<UOpId> = children.get(&root).cloned().unwrap_or_default();
    while let Some(n) = stack.pop() {
        if !out.insert(n) {
            continue;
        }
        if std::mem::discriminant(&g.get(n).kind) != std::mem::discriminant(end) {
            stack.extend(children.get(&n).map(Vec::as_slice).unwrap_or(&[]));
        }
    }
    out
}

/// Among nodes of equal priority: definitions first, loops last (outer loops before inner).
fn tie_break(u: &UOp) -> (u8, u32, u32) {
    let rank = match u.kind {
        UOpKind::DefineGlobal { .. } => 0,
        UOpKind::DefineVar { .. } => 1,
        UOpKind::DefineLocal { .. } => 2,
        UOpKind::DefineAcc { .. } => 3,
        UOpKind::Const(_) => 4,
        UOpKind::Special { .. } => 5,
        UOpKind::Gep(_) | UOpKind::Cast | UOpKind::Bitcast | UOpKind::Alu(_) | UOpKind::Dot => 6,
        UOpKind::Load => 7,
        UOpKind::Phi => 8,
        UOpKind::Store => 9,
        UOpKind::Barrier => 10,
        UOpKind::If => 11,
        UOpKind::Range { .. } => 12,
        _ => 13,
    };
    match u.kind {
        UOpKind::Range { depth, index, .. } => (rank, depth, index),
        _ => (rank, 0, 0),
    }
}

fn build_linear(
    g: &UOpGraph,
    order: &[UOpId],
    ends: &HashMap<usize, UOpId>,
    sinks: &[UOpId],
) -> Linear {
    let keep = |id: &UOpId| {
        ends.contains_key(&id.index())
            || !(matches!(g.get(*id).kind, UOpKind::Sink) && sinks.contains(id))
    };
    let kept: Vec<UOpId> = order.iter().copied().filter(keep).collect();
    let pos: HashMap<UOpId, UOpId> = kept
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, UOpId(i as u32)))
        .collect();
    let uops = kept
        .iter()
        .map(|id| match ends.get(&id.index()) {
            Some(owner) => UOp {
                kind: match g.get(*owner).kind {
                    UOpKind::Range { .. } => UOpKind::EndRange,
                    _ => UOpKind::EndIf,
                },
                dtype: None,
                src: vec![pos[owner]],
            },
            None => {
                let u = g.get(*id);
                UOp {
                    kind: u.kind.clone(),
                    dtype: u.dtype,
                    src: u.src.iter().map(|s| pos[s]).collect(),
                }
            }
        })
        .collect();
    Linear { uops }
}

impl Linear {
    /// For each instruction, the stack of open blocks (positions of `RANGE`/`IF`) around it.
    pub fn block_stacks(&self) -> Vec<Vec<usize>> {
        let mut stack: Vec<usize> = Vec::new();
        let mut out = Vec::with_capacity(self.uops.len());
        for (i, u) in self.uops.iter().enumerate() {
            if matches!(u.kind, UOpKind::EndRange | UOpKind::EndIf) {
                stack.pop();
            }
            out.push(stack.clone());
            if matches!(u.kind, UOpKind::Range { .. } | UOpKind::If) {
                stack.push(i);
            }
        }
        out
    }

    /// A readable listing, one instruction per line.
    pub fn listing(&self) -> String {
        let mut s = String::new();
        for (i, u) in self.uops.iter().enumerate() {
            let dt = u.dtype.map(|d| d.to_string()).unwrap_or_default();
            let src: Vec<String> = u.src.iter().map(|x| x.0.to_string()).collect();
            let _ = writeln!(s, "{i:4} {:<40} {dt:<7} [{}]", u.kind, src.join(", "));
        }
        s
    }
}

//! The memory planner: one arena for every buffer computed at run time (and the model's inputs
//! and outputs), placed by lifetime over the fixed schedule. Weights stay out of the arena.
//!
//! Placement is greedy by size (largest first), each buffer at the lowest offset that does not
//! overlap a buffer alive at the same time. The plan also reports the liveness lower bound: the
//! largest total size of buffers alive at one step, which no placement can beat.
//!
//! A kernel may write its output over one of its inputs ([`in_place_pairs`]): when it reads that
//! input only at the index it stores to, the input has the output's size and type, and nothing
//! reads the input afterwards. Such buffers share one place; the bound counts them once.

use crate::schedule::ast::Op;
use crate::schedule::{BufId, BufKind, Schedule};

/// Alignment of every buffer in the arena, in bytes.
pub const ALIGN: usize = 16;

/// Where a buffer lives in the arena, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub buf: BufId,
    pub offset: usize,
    pub bytes: usize,
    /// First and last schedule step (inclusive) at which the buffer must hold its value.
    pub first: usize,
    pub last: usize,
}

impl Placement {
    pub fn overlaps_in_time(&self, o: &Placement) -> bool {
        self.first <= o.last && o.first <= self.last
    }

    pub fn overlaps_in_space(&self, o: &Placement) -> bool {
        self.offset < o.offset + o.bytes && o.offset < self.offset + self.bytes
    }
}

/// The arena plan of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArenaPlan {
    pub placements: Vec<Placement>,
    /// Bytes the arena needs.
    pub arena_bytes: usize,
    /// The liveness lower bound (with alignment), buffers that share a place in place counted
    /// once.
    pub lower_bound: usize,
    /// The in-place pairs the plan used: the two buffers share their bytes.
    pub in_place: Vec<InPlace>,
    /// The model's states lie in the arena's first `state_bytes` bytes, in their order, and
    /// nothing else does: the runtime keeps those bytes from one run to the next.
    pub state_bytes: usize,
}

/// A step whose kernel writes its output `out` over its input `src`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InPlace {
    pub step: usize,
    pub out: BufId,
    pub src: BufId,
}

impl ArenaPlan {
    pub fn placement(&self, b: BufId) -> Option<&Placement> {
        self.placements.iter().find(|p| p.buf == b)
    }

    /// Two buffers alive at the same step that share bytes, if any (a planner bug). An in-place
    /// pair may share them: at the same offset, alive together only at its step.
    pub fn find_overlap(&self) -> Option<(BufId, BufId)> {
        for (i, a) in self.placements.iter().enumerate() {
            for b in &self.placements[i + 1..] {
                if a.bytes > 0
                    && b.bytes > 0
                    && a.overlaps_in_time(b)
                    && a.overlaps_in_space(b)
                    && !self.legal_in_place(a, b)
                {
                    return Some((a.buf, b.buf));
                }
            }
        }
        None
    }

    fn legal_in_place(&self, a: &Placement, b: &Placement) -> bool {
        self.in_place.iter().any(|p| {
            let (out, src) = match (p.out == a.buf, p.out == b.buf) {
                (true, _) if p.src == b.buf => (a, b),
                (_, true) if p.src == a.buf => (b, a),
                _ => return false,
            };
            out.offset == src.offset
                && out.bytes == src.bytes
                && out.first == p.step
                && src.last == p.step
        })
    }
}

fn align(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// Lifetimes of the arena buffers: inputs from the start, outputs to the end. A window has no
/// place of its own: it uses its buffer's. A buffer that a loop reads or writes and that lives
/// beyond one of its iterations (a state, an operand, a result a window writes) lives through
/// the whole loop.
fn lifetimes(s: &Schedule) -> Vec<Placement> {
    let steps = s.items.len();
    let mut uses: Vec<Vec<usize>> = vec![Vec::new(); s.buffers.len()];
    let mut windowed = vec![false; s.buffers.len()];
    for (k, item) in s.items.iter().enumerate() {
        for &b in &item.bufs {
            let storage = s.storage(b);
            uses[storage.0 as usize].push(k);
            windowed[storage.0 as usize] |= storage != b;
        }
    }
    let mut out: Vec<Placement> = Vec::new();
    for (i, info) in s.buffers.iter().enumerate() {
        if matches!(info.kind, BufKind::Weight(_) | BufKind::Window { .. }) {
            continue;
        }
        let buf = BufId(i as u32);
        let uses = &mut uses[i];
        uses.sort_unstable();
        let mut first = uses.first().copied().unwrap_or(0);
        let mut last = uses.last().copied().unwrap_or(0);
        // A model input or output lives before or after the loop whatever its uses.
        let io = matches!(info.kind, BufKind::Input(_) | BufKind::Output(_));
        for l in &s.loops {
            let inside = uses.iter().any(|u| l.items.contains(u));
            let beyond = io || windowed[i] || uses.iter().any(|u| !l.items.contains(u));
            if inside && beyond && !l.items.is_empty() {
                first = first.min(l.items.start);
                last = last.max(l.items.end - 1);
            }
        }
        match info.kind {
            BufKind::Input(_) => first = 0,
            BufKind::Output(_) => last = steps.saturating_sub(1).max(last),
            // Kept from one run to the next: alive at every step.
            BufKind::State(_) => (first, last) = (0, steps.saturating_sub(1)),
            _ => {}
        }
        let kept = matches!(
            info.kind,
            BufKind::Input(_) | BufKind::Output(_) | BufKind::State(_)
        );
        if kept || !uses.is_empty() {
            first = first.min(last);
            out.push(Placement {
                buf,
                offset: 0,
                bytes: align(info.bytes()),
                first,
                last,
            });
        }
    }
    out
}

/// The steps whose kernel may write its output over one of its inputs: the kernel stores one
/// buffer, each element once (in the graph's order or another layout), every load of the input
/// reads exactly the element being stored (the same view as the store's), both have the same type and size, the input is an intermediate buffer read by no
/// later step, and the output is first written at this step. Each buffer is in at most one
/// pair as the input and one as the output.
pub fn in_place_pairs(s: &Schedule) -> Vec<InPlace> {
    let spans = lifetimes(s);
    let span = |b: BufId| spans.iter().find(|p| p.buf == b);
    let mut pairs: Vec<InPlace> = Vec::new();
    for (step, item) in s.items.iter().enumerate() {
        let [root] = item.ast.as_slice() else {
            continue;
        };
        let Op::Store(store) = root.op() else {
            continue;
        };
        let Some(&out) = item.bufs.get(store.idx.0 as usize) else {
            continue;
        };
        let out_info = &s.buffers[out.0 as usize];
        if !matches!(out_info.kind, BufKind::Intermediate | BufKind::Output(_))
            || span(out).is_none_or(|p| p.first != step)
            || !store.st.is_permutation()
        {
            continue;
        }
        for (j, &src) in item.bufs.iter().enumerate() {
            if j == store.idx.0 as usize || src == out {
                continue;
            }
            let info = &s.buffers[src.0 as usize];
            if info.kind != BufKind::Intermediate
                || info.dtype != out_info.dtype
                || info.bytes() != out_info.bytes()
                || span(src).is_none_or(|p| p.last != step)
                || item.bufs.iter().filter(|&&b| b == src).count() != 1
                || pairs.iter().any(|p| p.src == src)
            {
                continue;
            }
            // Every argument but the output is loaded.
            if item.reads_only_the_stored_element(j) {
                pairs.push(InPlace { step, out, src });
                break;
            }
        }
    }
    pairs
}

/// Offsets of `items` placed in `order`, each at the lowest offset free of the placed items
/// alive at the same time.
fn first_fit(items: &[Placement], order: &[usize]) -> Vec<usize> {
    let mut offsets = vec![0; items.len()];
    let mut placed: Vec<usize> = Vec::new();
    for &i in order {
        let mut conflicts: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| items[j].overlaps_in_time(&items[i]))
            .map(|&j| (offsets[j], offsets[j] + items[j].bytes))
            .collect();
        conflicts.sort();
        let mut offset = 0;
        for (start, end) in conflicts {
            if offset + items[i].bytes <= start {
                break;
            }
            offset = offset.max(end);
        }
        offsets[i] = offset;
        placed.push(i);
    }
    offsets
}

/// Plans the arena for `s` without running any kernel in place.
pub fn plan_arena(s: &Schedule) -> ArenaPlan {
    plan_arena_with(s, &[])
}

/// Plans the arena for `s`, each pair of `in_place` (from [`in_place_pairs`]) in one place.
pub fn plan_arena_with(s: &Schedule, in_place: &[InPlace]) -> ArenaPlan {
    let single = lifetimes(s);
    let (group, used) = join_in_place(&single, in_place);
    let (mut items, member_of) = group_placements(&single, group);
    let state_bytes = place_states(s, &mut items);
    let arena_bytes = items.iter().map(|p| p.offset + p.bytes).max().unwrap_or(0);
    let lower_bound = liveness_bound(&items, s.items.len().max(1));
    let mut placements: Vec<Placement> = single
        .iter()
        .zip(&member_of)
        .map(|(p, &g)| Placement {
            offset: items[g].offset,
            ..p.clone()
        })
        .collect();
    placements.sort_by_key(|p| p.buf);
    ArenaPlan {
        placements,
        arena_bytes,
        lower_bound,
        in_place: used,
        state_bytes,
    }
}

/// Places the states one after the other from offset 0, and every other item after them
/// ([`place_smallest`]); the states' bytes. States live through the whole run, so moving the
/// rest past them costs nothing.
fn place_states(s: &Schedule, items: &mut [Placement]) -> usize {
    let state_of = |p: &Placement| match s.buffers[p.buf.0 as usize].kind {
        BufKind::State(n) => Some(n),
        _ => None,
    };
    let mut states: Vec<(usize, usize)> = (items.iter().enumerate())
        .filter_map(|(i, p)| Some((state_of(p)?, i)))
        .collect();
    states.sort_unstable();
    let mut state_bytes = 0;
    for &(_, i) in &states {
        items[i].offset = state_bytes;
        state_bytes += items[i].bytes;
    }
    let mut rest: Vec<Placement> = items
        .iter()
        .filter(|p| state_of(p).is_none())
        .cloned()
        .collect();
    place_smallest(&mut rest);
    let others = items.iter_mut().filter(|p| state_of(p).is_none());
    for (p, placed) in others.zip(rest) {
        p.offset = state_bytes + placed.offset;
    }
    state_bytes
}

/// The root of `i`'s group in the union-find forest `group`, shortening the path on the way.
fn group_root(group: &mut [usize], mut i: usize) -> usize {
    while group[i] != i {
        group[i] = group[group[i]];
        i = group[i];
    }
    i
}

/// Joins the buffers of each usable in-place pair (both placed, of one size, not already
/// joined) into one group: the union-find forest over `single`, and the pairs it used.
fn join_in_place(single: &[Placement], in_place: &[InPlace]) -> (Vec<usize>, Vec<InPlace>) {
    let index = |b: BufId| single.iter().position(|p| p.buf == b);
    let mut group: Vec<usize> = (0..single.len()).collect();
    let mut used: Vec<InPlace> = Vec::new();
    for p in in_place {
        if let (Some(o), Some(i)) = (index(p.out), index(p.src)) {
            if single[o].bytes == single[i].bytes {
                let (ro, ri) = (group_root(&mut group, o), group_root(&mut group, i));
                if ro != ri {
                    group[ro] = ri;
                    used.push(*p);
                }
            }
        }
    }
    (group, used)
}

/// Buffers chained in place form one group: one place, alive from the first member's first
/// step to the last member's last step. The groups' placements (unplaced), and each buffer's
/// group.
fn group_placements(single: &[Placement], mut group: Vec<usize>) -> (Vec<Placement>, Vec<usize>) {
    let mut items: Vec<Placement> = Vec::new();
    let mut member_of: Vec<usize> = vec![0; single.len()];
    for i in 0..single.len() {
        let r = group_root(&mut group, i);
        let at = match items.iter().position(|p| p.buf == single[r].buf) {
            Some(at) => at,
            None => {
                items.push(Placement {
                    buf: single[r].buf,
                    ..single[r].clone()
                });
                items.len() - 1
            }
        };
        let g = &mut items[at];
        g.first = g.first.min(single[i].first);
        g.last = g.last.max(single[i].last);
        g.bytes = g.bytes.max(single[i].bytes);
        member_of[i] = at;
    }
    (items, member_of)
}

/// Sets the offsets of `items`: first fit in a few orders (largest first; longest-lived first;
/// earliest first; most byte-steps first); the smallest arena wins.
fn place_smallest(items: &mut [Placement]) {
    type Key = fn(&Placement) -> (usize, usize, usize);
    let keys: [Key; 4] = [
        |p| (usize::MAX - p.bytes, p.first, p.buf.0 as usize),
        |p| {
            (
                usize::MAX - (p.last - p.first),
                usize::MAX - p.bytes,
                p.first,
            )
        },
        |p| (p.first, usize::MAX - p.bytes, p.buf.0 as usize),
        |p| {
            (
                usize::MAX - p.bytes * (p.last - p.first + 1),
                p.first,
                p.buf.0 as usize,
            )
        },
    ];
    let size_of = |order: &[usize]| -> (usize, Vec<usize>) {
        let offsets = first_fit(items, order);
        let size = items
            .iter()
            .zip(&offsets)
            .map(|(p, o)| o + p.bytes)
            .max()
            .unwrap_or(0);
        (size, offsets)
    };
    let mut best: Option<(usize, Vec<usize>, Vec<usize>)> = None;
    for key in keys {
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| key(&items[i]));
        let (size, offsets) = size_of(&order);
        if best.as_ref().is_none_or(|(b, ..)| size < *b) {
            best = Some((size, offsets, order));
        }
    }
    let Some((mut size, mut offsets, mut order)) = best else {
        return;
    };
    // Then a local search over the order: swap two buffers, keep the swap unless the arena
    // grows. First fit over some order reaches every optimal layout (the order of its
    // offsets), and a chain of buffers that alternate between two places needs one.
    let bound = liveness_bound(items, items.iter().map(|p| p.last + 1).max().unwrap_or(1));
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    for _ in 0..SWAPS {
        if size <= bound || order.len() < 2 {
            break;
        }
        let (i, j) = (next(order.len()), next(order.len()));
        order.swap(i, j);
        let (s, o) = size_of(&order);
        if s <= size {
            (size, offsets) = (s, o);
        } else {
            order.swap(i, j);
        }
    }
    for (p, o) in items.iter_mut().zip(offsets) {
        p.offset = o;
    }
}

/// How many swaps the arena's local search tries at most.
const SWAPS: usize = 4000;

/// The largest total size of `items` alive at one of the `steps` steps.
fn liveness_bound(items: &[Placement], steps: usize) -> usize {
    (0..steps)
        .map(|k| {
            items
                .iter()
                .filter(|p| p.first <= k && k <= p.last)
                .map(|p| p.bytes)
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;

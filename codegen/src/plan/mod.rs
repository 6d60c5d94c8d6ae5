//! The memory planner: one arena for every buffer computed at run time (and the model's inputs
//! and outputs), placed by lifetime over the fixed schedule. Weights stay out of the arena.
//!
//! Placement is greedy by size (largest first), each buffer at the lowest offset that does not
//! overlap a buffer alive at the same time. The plan also reports the liveness lower bound: the
//! largest total size of buffers alive at one step, which no placement can beat.
//!
//! A kernel may write its output over one of its inputs ([`in_place_pairs`]): when it reads that
//! input only at the index it stores to, the input has the output's size and type, and nothing
//! reads the input afterwards. Such buffers share one place; the bound counts them once. With
//! [`Memory::Min`](crate::target::Memory::Min) any kernel may write its output over a dying
//! input at a shift ([`overlap_pairs`]): the two keep that distance (or one further the way the
//! kernel allows, where a chain of pairs needs it), and the bound counts the bytes
//! from the lower one's start to the higher one's end at that step.

use crate::schedule::ast::Op;
use crate::schedule::{BufId, BufKind, Schedule};
use chain::join_in_place;
use place::{peak, place_smallest, Group, Part};

mod chain;
mod overlap;
mod place;
mod tiles;
pub use overlap::{oriented, overlap_pairs, plan_arena_min};
pub use tiles::{loop_pair_legal, loop_pairs};

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
    /// The first step at which that many bytes are alive.
    pub peak_step: usize,
    /// The in-place pairs the plan used: the two buffers share their bytes.
    pub in_place: Vec<InPlace>,
    /// The model's states lie in the arena's first `state_bytes` bytes, in their order, and
    /// nothing else does: the runtime keeps those bytes from one run to the next.
    pub state_bytes: usize,
}

/// A step whose kernel writes its output `out` over its input `src`: `out` starts `shift`
/// bytes after `src` (before it where negative). A loop's pair ([`loop_pairs`]) spans its
/// steps: `out` is first written at `step`, `src` last read at `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InPlace {
    pub step: usize,
    /// The step that reads `src` for the last time: `step` but for a loop's pair.
    pub until: usize,
    pub out: BufId,
    pub src: BufId,
    pub shift: i64,
    /// The other shifts the kernel allows.
    pub slack: Slack,
}

/// The shifts an [`InPlace`] pair allows besides its own: the planner may take one of them
/// where that keeps a chain of pairs from drifting ever further from where it began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slack {
    /// That shift only.
    Exact,
    /// Any lower shift: the output trails the reads further.
    Down,
    /// Any higher shift: the output runs further ahead of the reads.
    Up,
}

impl ArenaPlan {
    pub fn placement(&self, b: BufId) -> Option<&Placement> {
        self.placements.iter().find(|p| p.buf == b)
    }

    /// Two buffers alive at the same step that share bytes, if any (a planner bug). An in-place
    /// pair may share them: at its shift, alive together only at its step.
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
            out.offset as i64 == src.offset as i64 + p.shift
                && out.first == p.step
                && src.last == p.until
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

/// A step that may write its output over one of its inputs, as far as lifetimes go: the
/// kernel stores one buffer, first written at this step, and reads the input, an intermediate
/// buffer or a model input that no later step reads, as one of its arguments (position
/// `arg`). A model input is written again before each run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dying {
    pub step: usize,
    pub out: BufId,
    pub src: BufId,
    pub arg: usize,
}

/// Every [`Dying`] input of `s`, by step.
pub fn dying_inputs(s: &Schedule) -> Vec<Dying> {
    let spans = lifetimes(s);
    let span = |b: BufId| spans.iter().find(|p| p.buf == b);
    let mut out_pairs = Vec::new();
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
        if !matches!(
            s.buffers[out.0 as usize].kind,
            BufKind::Intermediate | BufKind::Output(_)
        ) || span(out).is_none_or(|p| p.first != step)
        {
            continue;
        }
        for (arg, &src) in item.bufs.iter().enumerate() {
            if arg != store.idx.0 as usize
                && src != out
                && matches!(
                    s.buffers[src.0 as usize].kind,
                    BufKind::Intermediate | BufKind::Input(_)
                )
                && !s.outputs.contains(&src)
                && span(src).is_some_and(|p| p.last == step)
                && item.bufs.iter().filter(|&&b| b == src).count() == 1
            {
                out_pairs.push(Dying {
                    step,
                    out,
                    src,
                    arg,
                });
            }
        }
    }
    out_pairs
}

/// Whether the lifetimes let step `p.step` write `p.out` over `p.src`: one of `dying`
/// ([`dying_inputs`]) is that step's.
pub fn may_write_over(dying: &[Dying], p: &InPlace) -> bool {
    p.until == p.step && (dying.iter()).any(|d| (d.step, d.out, d.src) == (p.step, p.out, p.src))
}

/// The steps whose kernel may write its output over one of its inputs at the same place: the
/// input is [`Dying`], the output is stored each element once (in the graph's order or
/// another layout), every load of the input reads exactly the element being stored (the same
/// view as the store's), and both have the same type and size. Each buffer is in at most one
/// pair as the input and one as the output.
pub fn in_place_pairs(s: &Schedule) -> Vec<InPlace> {
    let mut pairs: Vec<InPlace> = Vec::new();
    for d in dying_inputs(s) {
        let item = &s.items[d.step];
        let Op::Store(store) = item.ast[0].op() else {
            continue;
        };
        let (out, src) = (&s.buffers[d.out.0 as usize], &s.buffers[d.src.0 as usize]);
        if store.st.is_permutation()
            && src.kind == BufKind::Intermediate
            && src.dtype == out.dtype
            && src.bytes() == out.bytes()
            && !pairs.iter().any(|p| p.src == d.src || p.out == d.out)
            && item.reads_only_the_stored_element(d.arg)
        {
            pairs.push(InPlace {
                step: d.step,
                until: d.step,
                out: d.out,
                src: d.src,
                shift: 0,
                slack: Slack::Exact,
            });
        }
    }
    pairs
}

/// Plans the arena for `s` without running any kernel in place.
pub fn plan_arena(s: &Schedule) -> ArenaPlan {
    plan_arena_with(s, &[])
}

/// Plans the arena for `s`, each pair of `in_place` (from [`in_place_pairs`] or
/// [`overlap_pairs`]) at its distance.
pub fn plan_arena_with(s: &Schedule, in_place: &[InPlace]) -> ArenaPlan {
    plan_with(s, in_place, SWAPS)
}

/// [`plan_arena_with`], its local search cut to `swaps` swaps.
fn plan_with(s: &Schedule, in_place: &[InPlace], swaps: usize) -> ArenaPlan {
    let single = lifetimes(s);
    let (groups, used) = join_in_place(&single, in_place);
    let all = parts(&single, &groups);
    // A state is never in a pair, so its group is itself.
    let state_of = |g: &Vec<(usize, usize)>| match s.buffers[single[g[0].0].buf.0 as usize].kind {
        BufKind::State(n) => Some(n),
        _ => None,
    };
    // States lie one after the other from offset 0 in their order, the rest after them:
    // states live through the whole run, so moving the rest past them costs nothing.
    let mut states: Vec<(usize, usize)> = (groups.iter().enumerate())
        .filter_map(|(i, g)| Some((state_of(g)?, i)))
        .collect();
    states.sort_unstable();
    let mut offsets = vec![0; groups.len()];
    let mut state_bytes = 0;
    for &(_, i) in &states {
        offsets[i] = state_bytes;
        state_bytes += single[groups[i][0].0].bytes;
    }
    let rest: Vec<usize> = (0..groups.len())
        .filter(|&i| state_of(&groups[i]).is_none())
        .collect();
    let parts: Vec<Group> = rest.iter().map(|&i| all[i].clone()).collect();
    for (&i, o) in rest.iter().zip(place_smallest(&parts, swaps)) {
        offsets[i] = state_bytes + o;
    }
    let mut placements = single.clone();
    for (g, &o) in groups.iter().zip(&offsets) {
        for &(m, rel) in g {
            placements[m].offset = o + rel;
        }
    }
    let (lower_bound, peak_step) = peak(&all);
    let arena_bytes = placements
        .iter()
        .map(|p| p.offset + p.bytes)
        .max()
        .unwrap_or(0);
    placements.sort_by_key(|p| p.buf);
    ArenaPlan {
        placements,
        arena_bytes,
        lower_bound,
        peak_step,
        in_place: used,
        state_bytes,
    }
}

/// Each group of buffers that share their bytes, as parts of one block.
fn parts(single: &[Placement], groups: &[Vec<(usize, usize)>]) -> Vec<Group> {
    (groups.iter())
        .map(|g| {
            g.iter()
                .map(|&(m, rel)| Part::of(&single[m], rel))
                .collect()
        })
        .collect()
}

/// The liveness bound of `s`, each pair of `in_place` in one place, and the first step that
/// reaches it: an arena plan's `lower_bound` and `peak_step`, without placing anything.
pub fn liveness_peak(s: &Schedule, in_place: &[InPlace]) -> (usize, usize) {
    let single = lifetimes(s);
    let (groups, _) = join_in_place(&single, in_place);
    peak(&parts(&single, &groups))
}

/// How many swaps the arena's local search tries at most.
const SWAPS: usize = 4000;

#[cfg(test)]
mod tests;

//! The memory planner: one arena for every buffer computed at run time (and the model's inputs
//! and outputs), placed by lifetime over the fixed schedule. Weights stay out of the arena.
//!
//! Placement is greedy by size (largest first), each buffer at the lowest offset that does not
//! overlap a buffer alive at the same time. The plan also reports the liveness lower bound: the
//! largest total size of buffers alive at one step, which no placement can beat.

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
    /// The liveness lower bound (with alignment).
    pub lower_bound: usize,
}

impl ArenaPlan {
    pub fn placement(&self, b: BufId) -> Option<&Placement> {
        self.placements.iter().find(|p| p.buf == b)
    }

    /// Two buffers alive at the same step that share bytes, if any (a planner bug).
    pub fn find_overlap(&self) -> Option<(BufId, BufId)> {
        for (i, a) in self.placements.iter().enumerate() {
            for b in &self.placements[i + 1..] {
                if a.bytes > 0 && b.bytes > 0 && a.overlaps_in_time(b) && a.overlaps_in_space(b) {
                    return Some((a.buf, b.buf));
                }
            }
        }
        None
    }
}

fn align(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// Lifetimes of the arena buffers: inputs from the start, outputs to the end.
fn lifetimes(s: &Schedule) -> Vec<Placement> {
    let steps = s.items.len();
    let mut out: Vec<Placement> = Vec::new();
    for (i, info) in s.buffers.iter().enumerate() {
        if matches!(info.kind, BufKind::Weight(_)) {
            continue;
        }
        let buf = BufId(i as u32);
        let uses: Vec<usize> = s
            .items
            .iter()
            .enumerate()
            .filter(|(_, it)| it.bufs.contains(&buf))
            .map(|(k, _)| k)
            .collect();
        let mut first = uses.first().copied().unwrap_or(0);
        let mut last = uses.last().copied().unwrap_or(0);
        match info.kind {
            BufKind::Input(_) => first = 0,
            BufKind::Output(_) => last = steps.saturating_sub(1).max(last),
            _ => {}
        }
        if matches!(info.kind, BufKind::Input(_) | BufKind::Output(_)) || !uses.is_empty() {
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

/// Plans the arena for `s`.
pub fn plan_arena(s: &Schedule) -> ArenaPlan {
    let mut items = lifetimes(s);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(items[i].bytes),
            items[i].first,
            items[i].buf,
        )
    });
    let mut placed: Vec<usize> = Vec::new();
    for i in order {
        let mut conflicts: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| items[j].overlaps_in_time(&items[i]))
            .map(|&j| (items[j].offset, items[j].offset + items[j].bytes))
            .collect();
        conflicts.sort();
        let mut offset = 0;
        for (start, end) in conflicts {
            if offset + items[i].bytes <= start {
                break;
            }
            offset = offset.max(end);
        }
        items[i].offset = offset;
        placed.push(i);
    }
    let arena_bytes = items.iter().map(|p| p.offset + p.bytes).max().unwrap_or(0);
    let steps = s.items.len().max(1);
    let lower_bound = (0..steps)
        .map(|k| {
            items
                .iter()
                .filter(|p| p.first <= k && k <= p.last)
                .map(|p| p.bytes)
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0);
    items.sort_by_key(|p| p.buf);
    ArenaPlan {
        placements: items,
        arena_bytes,
        lower_bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::schedule::{BufferInfo, ScheduleItem};
    use proptest::prelude::*;

    fn schedule(sizes: &[usize], uses: &[Vec<usize>]) -> Schedule {
        let buffers = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| BufferInfo {
                kind: if i == 0 {
                    BufKind::Input(0)
                } else {
                    BufKind::Intermediate
                },
                dtype: DType::F32,
                shape: vec![n],
            })
            .collect();
        let items = uses
            .iter()
            .map(|u| ScheduleItem {
                ast: vec![],
                bufs: u.iter().map(|&b| BufId(b as u32)).collect(),
            })
            .collect();
        Schedule {
            items,
            buffers,
            inputs: vec![BufId(0)],
            outputs: vec![],
            weights: vec![],
        }
    }

    #[test]
    fn a_chain_reuses_memory() {
        // 0 -> 1 -> 2 -> 3: at most two buffers alive at once.
        let s = schedule(&[100, 100, 100, 100], &[vec![1, 0], vec![2, 1], vec![3, 2]]);
        let p = plan_arena(&s);
        assert_eq!(p.arena_bytes, 2 * align(400));
        assert_eq!(p.lower_bound, p.arena_bytes);
        assert_eq!(p.find_overlap(), None);
    }

    proptest! {
        #[test]
        fn live_buffers_never_overlap(sizes in prop::collection::vec(1usize..500, 2..12), seed in any::<u64>()) {
            let n = sizes.len();
            let mut x = seed;
            let mut uses = Vec::new();
            for out in 1..n {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let a = (x >> 33) as usize % out;
                let b = (x >> 17) as usize % out;
                uses.push(vec![out, a, b]);
            }
            let p = plan_arena(&schedule(&sizes, &uses));
            prop_assert_eq!(p.find_overlap(), None);
            prop_assert!(p.arena_bytes >= p.lower_bound);
            let total: usize = p.placements.iter().map(|q| q.bytes).sum();
            prop_assert!(p.arena_bytes <= total);
        }
    }
}

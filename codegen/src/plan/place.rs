//! Placing groups of buffers in the arena. A group is one buffer, or buffers that a chain of
//! in-place steps ties together at fixed distances: the group moves as one, and each of its
//! buffers keeps its own lifetime, so two groups may interleave wherever their buffers are not
//! alive together.

use super::Placement;

/// One buffer of a group: its distance from the group's offset, its size and lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Part {
    pub rel: usize,
    pub bytes: usize,
    pub first: usize,
    pub last: usize,
}

impl Part {
    pub fn of(p: &Placement, rel: usize) -> Part {
        Part {
            rel,
            bytes: p.bytes,
            first: p.first,
            last: p.last,
        }
    }

    fn alive_with(&self, o: &Part) -> bool {
        self.first <= o.last && o.first <= self.last
    }
}

pub(super) type Group = Vec<Part>;

/// The first and last step of any of `g`'s buffers, and its bytes from its offset.
fn extent(g: &Group) -> (usize, usize, usize) {
    let first = g.iter().map(|p| p.first).min().unwrap_or(0);
    let last = g.iter().map(|p| p.last).max().unwrap_or(0);
    let bytes = g.iter().map(|p| p.rel + p.bytes).max().unwrap_or(0);
    (first, last, bytes)
}

/// Offsets of `groups` placed in `order`, each at the lowest offset where none of its buffers
/// shares a byte with a placed buffer alive at the same step.
fn first_fit(groups: &[Group], order: &[usize]) -> Vec<usize> {
    let mut offsets = vec![0; groups.len()];
    let mut placed: Vec<usize> = Vec::new();
    for &i in order {
        // Offsets of group i that would overlap a placed buffer: [lo, hi).
        let mut taken: Vec<(i64, i64)> = Vec::new();
        for &j in &placed {
            for p in groups[i].iter().filter(|p| p.bytes > 0) {
                for q in groups[j].iter().filter(|q| q.bytes > 0 && q.alive_with(p)) {
                    let start = (offsets[j] + q.rel) as i64 - p.rel as i64;
                    taken.push((start - p.bytes as i64 + 1, start + q.bytes as i64));
                }
            }
        }
        taken.sort_unstable();
        let mut offset = 0i64;
        for (lo, hi) in taken {
            if offset < lo {
                break;
            }
            offset = offset.max(hi);
        }
        offsets[i] = offset as usize;
        placed.push(i);
    }
    offsets
}

/// The arena `groups` need at `offsets`.
fn arena_of(groups: &[Group], offsets: &[usize]) -> usize {
    (groups.iter().zip(offsets))
        .map(|(g, o)| o + extent(g).2)
        .max()
        .unwrap_or(0)
}

/// Offsets for `groups`: first fit in a few orders (largest first; longest-lived first;
/// earliest first; most byte-steps first), then up to `swaps` swaps of two groups in the
/// best order, each kept unless the arena grows; the smallest arena wins.
pub(super) fn place_smallest(groups: &[Group], swaps: usize) -> Vec<usize> {
    type Key = fn((usize, usize, usize)) -> (usize, usize, usize);
    let keys: [Key; 4] = [
        |(first, _, bytes)| (usize::MAX - bytes, first, 0),
        |(first, last, bytes)| (usize::MAX - (last - first), usize::MAX - bytes, first),
        |(first, _, bytes)| (first, usize::MAX - bytes, 0),
        |(first, last, bytes)| (usize::MAX - bytes * (last - first + 1), first, 0),
    ];
    let extents: Vec<_> = groups.iter().map(extent).collect();
    let size_of = |order: &[usize]| -> (usize, Vec<usize>) {
        let offsets = first_fit(groups, order);
        (arena_of(groups, &offsets), offsets)
    };
    let mut best: Option<(usize, Vec<usize>, Vec<usize>)> = None;
    for key in keys {
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by_key(|&i| (key(extents[i]), i));
        let (size, offsets) = size_of(&order);
        if best.as_ref().is_none_or(|(b, ..)| size < *b) {
            best = Some((size, offsets, order));
        }
    }
    let Some((mut size, mut offsets, mut order)) = best else {
        return Vec::new();
    };
    // Then a local search over the order: swap two groups, keep the swap unless the arena
    // grows. First fit over some order reaches every optimal layout (the order of its
    // offsets), and a chain of buffers that alternate between two places needs one.
    let bound = liveness_bound(groups);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    for _ in 0..swaps {
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
    offsets
}

/// The most bytes alive at one step: per group, the span from the lowest to the highest byte
/// of its buffers alive at that step.
pub(super) fn liveness_bound(groups: &[Group]) -> usize {
    peak(groups).0
}

/// [`liveness_bound`] and the first step that reaches it.
pub(super) fn peak(groups: &[Group]) -> (usize, usize) {
    let steps = groups.iter().map(|g| extent(g).1 + 1).max().unwrap_or(1);
    let alive = (0..steps).map(|k| {
        groups
            .iter()
            .map(|g| {
                let alive = g.iter().filter(|p| p.first <= k && k <= p.last);
                let (lo, hi) = alive.fold((usize::MAX, 0), |(lo, hi), p| {
                    (lo.min(p.rel), hi.max(p.rel + p.bytes))
                });
                hi.saturating_sub(lo)
            })
            .sum::<usize>()
    });
    let (mut most, mut at) = (0, 0);
    for (k, bytes) in alive.enumerate() {
        if bytes > most {
            (most, at) = (bytes, k);
        }
    }
    (most, at)
}

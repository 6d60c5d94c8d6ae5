//! How far a kernel's output may overlap one of its inputs: the shifts of the output's first
//! byte past the input's first byte at which running the kernel with both in one place reads
//! every input byte before it is written over.
//!
//! On a target without threads every global axis is a loop, and the kernel runs one block at
//! a time: one value of the loop variables, its reduce loops and upcast lanes inside it. Each
//! block reads and writes in an order this analysis does not look into, so a shift is safe
//! when no block writes a byte that it or a later block reads: for every block `b`, the last
//! byte `b` writes lies before the first byte that any block from `b` on reads (the output
//! trails the reads: [`Overlap::below`]), or the first byte `b` writes lies after the last
//! byte they read (the output runs ahead of them: [`Overlap::above`]). The blocks
//! run in the order of their loop nests (INTERIOR's regions, one after the other), each nest
//! in row-major order. Reads and writes are bounded by the symbolic indices' ranges within a
//! block, which may only widen them: the shifts found are safe, if not always the nearest.
//!
//! A kernel whose output is larger than its input (a padding, a convolution that widens the
//! channels) can only trail its reads by about the difference; run backwards
//! ([`Kernel::backwards`]), from the buffers' ends, it runs ahead of them by a block or two.

use super::{Kernel, KernelBuffer};
use crate::schedule::ast::{ArgId, Op};
use crate::shape::{Node, ShapeTracker};

/// Blocks beyond this many are not enumerated: no shift is offered.
const MOST_BLOCKS: usize = 1 << 16;

/// The smallest range holding both.
fn hull(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    (a.0.min(b.0), a.1.max(b.1))
}

/// The bytes a block reads of the input and writes of the output, each as `start..end`
/// (`None`: none).
#[derive(Clone, Copy)]
struct Block {
    read: Option<(i64, i64)>,
    write: Option<(i64, i64)>,
}

/// The shifts at which a kernel may write its output over an input: any shift at most
/// `below`, or at least `above`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The output ends each block's writes before any byte read from that block on.
    pub below: i64,
    /// The output starts each block's writes after every byte read from that block on.
    pub above: i64,
}

impl Kernel {
    /// The shifts, in bytes (negative: the output starts before the input), of the output's
    /// first byte past input `src`'s first byte at which the kernel may run with its output
    /// over that input (see the module's note). `None` where the kernel is not one store of
    /// one buffer, runs threads, reads `src` as no buffer, or has too many blocks to check.
    pub fn overlap_shift(&self, src: ArgId) -> Option<Overlap> {
        if !self.one_block_at_a_time() {
            return None;
        }
        let [root] = self.ast.as_slice() else {
            return None;
        };
        let Op::Store(store) = root.op() else {
            return None;
        };
        let out_size = store.dtype.scalar().size() as i64;
        let reads: Vec<(&ShapeTracker, i64)> = (self.bufs.iter().zip(&self.sts))
            .filter_map(|(b, st)| match b {
                KernelBuffer::Mem(m) if m.idx == src => Some((st, m.dtype.scalar().size() as i64)),
                _ => None,
            })
            .collect();
        if reads.is_empty() || store.idx == src {
            return None;
        }
        let fr = self.first_reduce();
        let regions: Vec<Vec<Block>> = (self.blocks()?.iter())
            .map(|r| {
                (r.iter())
                    .map(|g| self.block(g, fr, (&self.sts[0], out_size), &reads))
                    .collect()
            })
            .collect();
        let reads_of = |r: &[Block]| r.iter().filter_map(|b| b.read).reduce(hull);
        let (mut below, mut above) = (i64::MAX, i64::MIN);
        for (i, region) in regions.iter().enumerate() {
            // The loop nests of INTERIOR's boxes run in the order the UOp graph puts them, so
            // every other box's reads may come after this one's writes.
            let mut later = (regions.iter().enumerate())
                .filter(|&(j, _)| j != i)
                .filter_map(|(_, r)| reads_of(r))
                .reduce(hull);
            for b in region.iter().rev() {
                if let Some(r) = b.read {
                    later = Some(later.map_or(r, |l| hull(l, r)));
                }
                if let (Some((ws, we)), Some((rs, re))) = (b.write, later) {
                    below = below.min(rs - we);
                    above = above.max(re - ws);
                }
            }
        }
        let far = i64::from(u32::MAX);
        Some(Overlap {
            below: below.min(far),
            above: above.max(-far),
        })
    }

    /// This kernel with its loops run from their last value to their first: every view
    /// flipped along the loop axes (before the first reduce, not upcast), so each block
    /// computes what the block as far from the other end did. The outputs are the same; the
    /// buffers are walked from their ends. `None` on a target with threads, or with no loop
    /// to turn.
    pub fn backwards(&self) -> Option<Kernel> {
        if !self.one_block_at_a_time() {
            return None;
        }
        let full = self.full_shape();
        let loops = self.first_reduce().min(self.shape_len() - self.upcasted);
        let axes: Vec<bool> = (0..full.len()).map(|a| a < loops && full[a] > 1).collect();
        if !axes.contains(&true) {
            return None;
        }
        let mut k = self.clone();
        for st in k.sts.iter_mut().chain([&mut k.pad_st]) {
            *st = st.flip(&axes).ok()?;
        }
        Some(k)
    }

    /// This kernel without INTERIOR: one loop nest, run row by row, its masks kept. Where
    /// INTERIOR split the loops, its border boxes run a column of every row before the rows
    /// between them, and so write across the whole output early. `None` where it is not split.
    pub fn in_one_nest(&self) -> Option<Kernel> {
        if !self.interior {
            return None;
        }
        let mut k = self.clone();
        k.interior = false;
        k.applied_opts.retain(|o| o.op != super::OptOp::Interior);
        Some(k)
    }

    /// Whether the kernel runs its blocks one after the other: no threads, no locals.
    fn one_block_at_a_time(&self) -> bool {
        !self.target.has_local && self.local_dims == 0 && self.group_for_reduces == 0
    }

    /// Per loop nest (INTERIOR's boxes, or the one nest), the values of the loop axes
    /// (`0..first_reduce`) of every block, in the order the nest runs them; `None` when there
    /// are more than [`MOST_BLOCKS`].
    fn blocks(&self) -> Option<Vec<Vec<Vec<usize>>>> {
        let fr = self.first_reduce();
        let full = self.full_shape();
        let mut out: Vec<Vec<Vec<usize>>> = Vec::new();
        let mut total = 0;
        for region in self.interior_regions() {
            let ranges: Vec<std::ops::Range<usize>> = (0..fr)
                .map(|a| match region.iter().find(|(axis, _)| *axis == a) {
                    Some((_, r)) => r.clone(),
                    None => 0..full[a],
                })
                .collect();
            let count: usize = ranges.iter().map(|r| r.len()).product();
            total += count;
            if total > MOST_BLOCKS {
                return None;
            }
            let nest = (0..count).map(|mut k| {
                let mut g = vec![0; fr];
                for (a, r) in ranges.iter().enumerate().rev() {
                    g[a] = r.start + k % r.len();
                    k /= r.len();
                }
                g
            });
            out.push(nest.collect());
        }
        Some(out)
    }

    /// What block `g` reads of the input (through `reads`, each view with its element size)
    /// and writes of the output (`store`), in bytes.
    fn block(
        &self,
        g: &[usize],
        fr: usize,
        store: (&ShapeTracker, i64),
        reads: &[(&ShapeTracker, i64)],
    ) -> Block {
        let idxs = |shape: &[usize]| -> Vec<Node> {
            (shape.iter().enumerate())
                .map(|(a, &n)| match a < fr {
                    true => Node::num(g[a] as i64),
                    false => Node::var(&format!("overlap{a}"), 0, n as i64 - 1),
                })
                .collect()
        };
        let bytes = |st: &ShapeTracker, size: i64| {
            let (idx, valid) = st.expr_idxs(&idxs(st.shape()));
            (valid.max() > 0).then(|| (idx.min().max(0) * size, (idx.max() + 1) * size))
        };
        let read = (reads.iter().filter_map(|(st, size)| bytes(st, *size)))
            .reduce(|(s, e), (s2, e2)| (s.min(s2), e.max(e2)));
        Block {
            read,
            write: bytes(store.0, store.1),
        }
    }
}

#[cfg(test)]
mod tests;

//! How far a kernel's output may overlap one of its inputs: the largest shift of the output's
//! first byte past the input's first byte at which running the kernel with both in one place
//! reads every input byte before it is written over.
//!
//! On a target without threads every global axis is a loop, and the kernel runs one block at
//! a time: one value of the loop variables, its reduce loops and upcast lanes inside it. Each
//! block reads and writes in an order this analysis does not look into, so a shift is safe
//! when no block writes a byte that it or a later block reads: for every block `b`, the last
//! byte `b` writes lies before the first byte that any block from `b` on reads. The blocks
//! run in the order of their loop nests (INTERIOR's regions, one after the other), each nest
//! in row-major order. Reads and writes are bounded by the symbolic indices' ranges within a
//! block, which may only widen them: the shift found is safe, if not always the largest.

use super::{Kernel, KernelBuffer};
use crate::schedule::ast::{ArgId, Op};
use crate::shape::{Node, ShapeTracker};

/// Blocks beyond this many are not enumerated: no shift is offered.
const MOST_BLOCKS: usize = 1 << 16;

/// The first byte a block reads of the input and the end of the bytes it writes of the
/// output (`None`: none).
#[derive(Clone, Copy)]
struct Block {
    first_read: Option<i64>,
    write_end: Option<i64>,
}

impl Kernel {
    /// The largest shift, in bytes (negative: the output starts before the input), of the
    /// output's first byte past input `src`'s first byte at which the kernel may run with
    /// its output over that input (see the module's note). `None` where the kernel is not
    /// one store of one buffer, runs threads, reads `src` as no buffer, or has too many
    /// blocks to check.
    pub fn overlap_shift(&self, src: ArgId) -> Option<i64> {
        if self.target.has_local || self.local_dims != 0 || self.group_for_reduces != 0 {
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
        let blocks = self.blocks()?;
        let fr = self.first_reduce();
        let mut shift = i64::MAX;
        let mut later_read = i64::MAX;
        for g in blocks.iter().rev() {
            let b = self.block(g, fr, (&self.sts[0], out_size), &reads);
            if let Some(r) = b.first_read {
                later_read = later_read.min(r);
            }
            if let (Some(w), true) = (b.write_end, later_read < i64::MAX) {
                shift = shift.min(later_read - w);
            }
        }
        Some(shift.min(i64::from(u32::MAX)))
    }

    /// The values of the loop axes (`0..first_reduce`) of every block, in the order the
    /// kernel runs them; `None` when there are more than [`MOST_BLOCKS`].
    fn blocks(&self) -> Option<Vec<Vec<usize>>> {
        let fr = self.first_reduce();
        let full = self.full_shape();
        let mut out = Vec::new();
        for region in self.interior_regions() {
            let ranges: Vec<std::ops::Range<usize>> = (0..fr)
                .map(|a| match region.iter().find(|(axis, _)| *axis == a) {
                    Some((_, r)) => r.clone(),
                    None => 0..full[a],
                })
                .collect();
            let count: usize = ranges.iter().map(|r| r.len()).product();
            if out.len() + count > MOST_BLOCKS {
                return None;
            }
            for mut k in 0..count {
                let mut g = vec![0; fr];
                for (a, r) in ranges.iter().enumerate().rev() {
                    g[a] = r.start + k % r.len();
                    k /= r.len();
                }
                out.push(g);
            }
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
        let mut first_read: Option<i64> = None;
        for (st, size) in reads {
            let (idx, valid) = st.expr_idxs(&idxs(st.shape()));
            if valid.max() > 0 {
                let at = idx.min().max(0) * size;
                first_read = Some(first_read.map_or(at, |r| r.min(at)));
            }
        }
        let (st, size) = store;
        let (idx, valid) = st.expr_idxs(&idxs(st.shape()));
        let write_end = (valid.max() > 0).then(|| (idx.max() + 1) * size);
        Block {
            first_read,
            write_end,
        }
    }
}

#[cfg(test)]
mod tests;

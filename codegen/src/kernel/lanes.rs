//! SIMD lanes and the weight layouts that feed them.
//!
//! On a target with float vectors, a reduce is computed over one of its upcast output axes as
//! vector lanes: [`Kernel::vector_axis`] picks that axis. Every buffer read under the reduce
//! is best the same for every lane (stride 0) or consecutive along it (stride 1); any other
//! constant stride is gathered lane by lane. A constant weight that only this kernel reads may be laid out again to get there
//! ([`relayouts`]): its elements are stored in the order the kernel's loops visit them, with the
//! lane axis innermost, so a 1×1 convolution reads eight output channels' weights as one
//! vector while the activation it multiplies is one scalar for all eight. With dot products of
//! int8 pairs in lanes ([`crate::target::Target::lane_dot`]) each lane's pair is stored side
//! by side instead (the lane axis, then the dot axis): eight lanes' pairs are one load of
//! sixteen int8 values, and one pair of activations is shared by all eight.

use super::{Kernel, KernelBuffer};
use crate::dtype::Scalar;
use crate::shape::{ShapeTracker, View};

/// A buffer of a kernel stored in a new order: its new view, and how the new order walks the
/// old buffer ([`Relayout::order`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relayout {
    /// Position of the buffer in the kernel's `bufs`.
    pub buf: usize,
    pub st: ShapeTracker,
    /// The new order's axes, outermost first: each one's length and its stride in the old
    /// buffer.
    walk: Vec<(usize, i64)>,
    /// The old buffer's element where the walk starts.
    start: i64,
}

impl Relayout {
    /// For each element of the new buffer, in order, the element of the old one it holds.
    pub fn order(&self) -> impl Iterator<Item = usize> + '_ {
        let numel: usize = self.walk.iter().map(|&(n, _)| n).product();
        let mut idx = vec![0usize; self.walk.len()];
        let mut at = self.start;
        (0..numel).map(move |_| {
            let here = at as usize;
            for (j, &(n, stride)) in self.walk.iter().enumerate().rev() {
                idx[j] += 1;
                at += stride;
                if idx[j] < n {
                    break;
                }
                idx[j] = 0;
                at -= stride * n as i64;
            }
            here
        })
    }
}

impl Kernel {
    /// The upcast output axis computed as vector lanes, when the target has float vectors:
    /// an axis of 8 or, where the target's vectors are that wide, 16 lanes, along which every
    /// buffer read under the reduces has a constant stride; the one needing the fewest gathers
    /// (see [`Kernel::lane_gathers`]).
    pub fn vector_axis(&self) -> Option<usize> {
        let most = self.target.simd_lanes as usize;
        if most < 8 || self.reduceops.is_empty() || self.group_for_reduces > 0 {
            return None;
        }
        // Float sums of floats, or, where the target takes them, int32 sums of int8, int16
        // or int32 (each widened in its lane).
        let sums = |s: Scalar| self.reduceops.iter().all(|r| r.dtype().scalar == s);
        let reads = |ok: &[Scalar]| {
            (self.earlybufs.iter().flatten()).all(|&b| ok.contains(&self.bufs[b].dtype().scalar))
        };
        let ints = self.target.int_lanes;
        let lanes_compute = (sums(Scalar::F32) && reads(&[Scalar::F32]))
            || (ints && sums(Scalar::I32) && reads(&[Scalar::I8, Scalar::I16, Scalar::I32]));
        if !lanes_compute {
            return None;
        }
        let n = self.shape_len();
        let (full, out) = (self.full_shape(), self.output_shape());
        (n - self.upcasted..n)
            .filter(|&a| matches!(full[a], 8 | 16) && full[a] <= most && out[a] == full[a])
            .filter_map(|a| Some((self.lane_gathers(a)?, a)))
            .min()
            .map(|(_, a)| a)
    }

    /// How many buffers read under the reduces the lanes along `axis` would gather element
    /// by element: those with a stride other than 0 or 1 there that cannot be laid out again.
    /// `None` when some buffer has no constant stride there (it is masked along it).
    pub fn lane_gathers(&self, axis: usize) -> Option<usize> {
        let mut gathers = 0;
        let mut bufs: Vec<usize> = self.earlybufs.iter().flatten().copied().collect();
        bufs.sort_unstable();
        bufs.dedup();
        for b in bufs {
            match self.sts[b].real_strides(false)[axis] {
                None => return None,
                Some(0 | 1) => {}
                Some(_) if self.lane_pairs(b, axis) => {}
                Some(_) if self.relayout_of(b, axis).is_some() => {}
                Some(_) => gathers += 1,
            }
        }
        Some(gathers)
    }

    /// Buffer `b` laid out for lanes along `axis`, when it is free and the view allows: in
    /// the order the loops visit it, the lane axis innermost, or, for the operand of lane dot
    /// products ([`crate::target::Target::lane_dot`]), the lane axis then the dot axis.
    pub(super) fn relayout_of(&self, b: usize, axis: usize) -> Option<Relayout> {
        let &(_, numel) = self.free_layout.iter().find(|(i, _)| *i == b)?;
        // Read through another view too: one order cannot serve both.
        let KernelBuffer::Mem(mine) = &self.bufs[b] else {
            return None;
        };
        let other_view = self
            .bufs
            .iter()
            .enumerate()
            .any(|(i, x)| i != b && matches!(x, KernelBuffer::Mem(m) if m.idx == mine.idx));
        if other_view {
            return None;
        }
        let st = &self.sts[b];
        let [view] = st.views.as_slice() else {
            return None;
        };
        if view.mask.is_some() || view.strides[axis] == 0 {
            return None;
        }
        let shape = st.shape();
        // The axes that move through the buffer, in loop order, the lane axis last.
        let mut axes: Vec<usize> = (0..shape.len())
            .filter(|&a| a != axis && view.strides[a] != 0 && shape[a] > 1)
            .collect();
        axes.push(axis);
        let dot = (self.target.lane_dot > 0)
            .then(|| self.packed_dot_axis())
            .flatten()
            .filter(|d| axes.contains(d) && self.dot_operands().is_some_and(|o| o.contains(&b)));
        if let Some(d) = dot {
            axes.retain(|&a| a != d);
            axes.push(d);
        }
        if axes.iter().map(|&a| shape[a]).product::<usize>() != numel {
            return None;
        }
        // A permutation of the buffer's elements exactly when the strides, ordered by size,
        // are a mixed radix (each the product of the lengths below it, up to its sign) and
        // the lowest element is the first one (de Bruijn: no other sum of arithmetic
        // progressions tiles an interval).
        let mut by_size: Vec<usize> = axes.clone();
        by_size.sort_by_key(|&a| view.strides[a].unsigned_abs());
        let mut radix = 1u64;
        for &a in &by_size {
            if view.strides[a].unsigned_abs() != radix {
                return None;
            }
            radix *= shape[a] as u64;
        }
        let lowest = view.offset
            + axes
                .iter()
                .map(|&a| view.strides[a].min(0) * (shape[a] as i64 - 1))
                .sum::<i64>();
        if lowest != 0 {
            return None;
        }
        // Already in the order the loops visit it: nothing to do.
        let mut row_major = 1i64;
        let in_order = axes.iter().rev().all(|&a| {
            let ok = view.strides[a] == row_major;
            row_major *= shape[a] as i64;
            ok
        });
        if in_order {
            return None;
        }
        let mut strides = vec![0i64; shape.len()];
        let mut step = 1i64;
        for &a in axes.iter().rev() {
            strides[a] = step;
            step *= shape[a] as i64;
        }
        let st = ShapeTracker {
            views: vec![View::new(shape, Some(&strides), 0, None)],
        };
        let walk = axes.iter().map(|&a| (shape[a], view.strides[a])).collect();
        Some(Relayout {
            buf: b,
            st,
            walk,
            start: view.offset,
        })
    }
}

/// The buffers of `k` to store in a new order for its vector axis (none without one).
pub fn relayouts(k: &Kernel) -> Vec<Relayout> {
    let Some(axis) = k.vector_axis() else {
        return Vec::new();
    };
    k.free_layout
        .iter()
        .filter_map(|&(b, _)| {
            // Consecutive along the lanes already, but perhaps not in the order the loops
            // visit it (a dense layer's [inputs][outputs] matrix, read a block of outputs at
            // a time): stored in that order, it streams.
            let stride = k.sts[b].real_strides(false)[axis];
            if stride == Some(0) {
                return None;
            }
            k.relayout_of(b, axis)
        })
        .collect()
}

impl Kernel {
    /// The kernel reading its free weights in the orders [`relayouts`] chooses, and those
    /// relayouts, which the weights' bytes must follow; its dot product's weight widened or
    /// paired where the target or the other operand wants it ([`Kernel::dot_weight_forms`]);
    /// no weight is free any more. The step
    /// between optimizing a kernel and linearizing it.
    pub fn laid_out(&self) -> (Kernel, Vec<Relayout>) {
        let relayouts = relayouts(self);
        let mut k = self.clone();
        for r in &relayouts {
            k.sts[r.buf] = r.st.clone();
        }
        (k.widened, k.paired) = k.dot_weight_forms();
        k.free_layout.clear();
        (k, relayouts)
    }
}

/// `bytes` (elements of `size` bytes) in the new order of `r`.
pub fn reorder_bytes(r: &Relayout, bytes: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for o in r.order() {
        out.extend_from_slice(&bytes[o * size..(o + 1) * size]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::kernel::{Opt, OptOp};
    use crate::ops::{AluOp, BinaryOp, ReduceOp};
    use crate::schedule::ast::LazyOp;
    use crate::target::Target;

    /// out[o] = sum_i w[o, i] * x[i], `w` 16×4 row-major, on `target`.
    fn matvec(target: Target) -> Kernel {
        crate::kernel::examples::matvec(16, 4, target)
    }

    fn lanes_on_outputs(mut k: Kernel) -> Kernel {
        k.apply_opt(Opt::new(OptOp::Upcast, 0, 8)).unwrap();
        k
    }

    #[test]
    fn a_free_weight_is_stored_lane_innermost() {
        let mut k = lanes_on_outputs(matvec(Target::host()));
        let axis = k.vector_axis().expect("lanes along the outputs");
        assert_eq!(
            k.lane_gathers(axis),
            Some(1),
            "w is strided there and not free"
        );
        assert!(relayouts(&k).is_empty());
        k.free_layout = vec![(1, 64)];
        assert_eq!(k.vector_axis(), Some(axis));
        assert_eq!(k.lane_gathers(axis), Some(0), "w may be laid out again");
        let [r] = relayouts(&k).try_into().unwrap();
        assert_eq!(r.buf, 1);
        assert_eq!(r.st.real_strides(false)[axis], Some(1));
        let order: Vec<usize> = r.order().collect();
        // Element (o, i) of w: o = 8·g + lane; new order is g, i, lane.
        for g in 0..2 {
            for i in 0..4 {
                for lane in 0..8 {
                    let new = (g * 4 + i) * 8 + lane;
                    assert_eq!(order[new], (8 * g + lane) * 4 + i);
                }
            }
        }
        let bytes: Vec<u8> = (0..64u8).collect();
        let moved = reorder_bytes(&r, &bytes, 1);
        assert_eq!(moved[1], 4, "lane 1 of the first vector is w[1, 0]");
    }

    #[test]
    fn a_weight_consecutive_along_the_lanes_is_stored_in_visit_order() {
        // out[o] = sum_i w[i, o] * x[i], w stored [4 inputs][16 outputs] (a dense layer's
        // matrix as ONNX MatMul holds it): the lanes read it consecutively, but the loops visit
        // a block of eight outputs for every input before the next block.
        let w = ShapeTracker::from_shape(&[4, 16]).permute(&[1, 0]).unwrap();
        let k = matvec_through(w);
        let [r] = relayouts(&k).try_into().unwrap();
        let order: Vec<usize> = r.order().collect();
        // Element (i, o) of w, o = 8·g + lane: new order g, i, lane.
        for g in 0..2 {
            for i in 0..4 {
                for lane in 0..8 {
                    assert_eq!(order[(g * 4 + i) * 8 + lane], i * 16 + 8 * g + lane);
                }
            }
        }
    }

    /// out[o] = sum_i w[o, i] * x[i] on the host, lanes along the outputs, with `w` (64
    /// elements, free to lay out) read through `view` as a 16×4 matrix.
    fn matvec_through(view: ShapeTracker) -> Kernel {
        let x = ShapeTracker::from_shape(&[1, 4]).expand(&[16, 4]).unwrap();
        let mul = LazyOp::alu(
            AluOp::Binary(BinaryOp::Mul),
            vec![
                LazyOp::load(1, DType::F32, view),
                LazyOp::load(2, DType::F32, x),
            ],
        );
        let sum = LazyOp::reduce(ReduceOp::Sum, vec![1], mul);
        let out = LazyOp::store(0, ShapeTracker::from_shape(&[16, 1]), sum);
        let mut k = lanes_on_outputs(Kernel::new(vec![out], Target::host()).unwrap());
        let weight = (0..k.bufs.len())
            .find(|&i| matches!(&k.bufs[i], KernelBuffer::Mem(m) if m.idx.0 == 1))
            .unwrap();
        k.free_layout = vec![(weight, 64)];
        k
    }

    #[test]
    fn a_flipped_weight_is_stored_in_visit_order() {
        // Both axes of w read backwards: w[15 - o, 3 - i] at (o, i).
        let flipped = ShapeTracker::from_shape(&[16, 4])
            .flip(&[true, true])
            .unwrap();
        let k = matvec_through(flipped);
        let [r] = relayouts(&k).try_into().unwrap();
        let order: Vec<usize> = r.order().collect();
        // New order g, i, lane with o = 8·g + lane.
        for g in 0..2 {
            for i in 0..4 {
                for lane in 0..8 {
                    let o = 8 * g + lane;
                    assert_eq!(order[(g * 4 + i) * 8 + lane], (15 - o) * 4 + (3 - i));
                }
            }
        }
    }

    /// int8 products summed in int32 take lanes as floats do: each lane's int8 loads are
    /// one vector, widened to int32 lanes by one conversion (the helper that widens in one
    /// instruction); the sums are exact.
    #[test]
    fn int8_products_summed_in_int32_are_computed_in_lanes() {
        use crate::kernel::examples::matvec_i8;
        let (rows, cols) = (16, 24);
        let mut k = lanes_on_outputs(matvec_i8(rows, cols, Target::host()));
        k.free_layout = vec![(1, rows * cols)];
        let axis = k.vector_axis().expect("int32 lanes along the outputs");
        assert_eq!(
            k.lane_gathers(axis),
            Some(0),
            "the int8 matrix is laid out again"
        );
        let (laid, relayouts) = k.laid_out();
        assert_eq!(relayouts.len(), 1);
        let p = crate::render::to_program(&laid).unwrap();
        let widen = p.uops.uops.iter().find(|u| {
            u.kind == crate::uop::UOpKind::Cast
                && u.dtype == Some(DType::I32.vec(8))
                && u.src.len() == 1
        });
        assert!(widen.is_some(), "one conversion of eight lanes: {}", p.src);
        assert!(p.src.contains("kiln_cvt_i8_int8("), "{}", p.src);
        // A target with float vectors but without integer lanes keeps them scalar.
        let floats_only = Target {
            int_lanes: false,
            ..Target::neon()
        };
        let scalar = lanes_on_outputs(matvec_i8(rows, cols, floats_only));
        assert_eq!(scalar.vector_axis(), None);
        // The sums, the matrix given in its new order, at the ends of int8's range.
        let a: Vec<i64> = (0..rows * cols)
            .map(|i| (i as i64 * 37 % 256) - 128)
            .collect();
        let b: Vec<i64> = (0..cols).map(|j| 127 - (j as i64 * 53 % 256)).collect();
        let laid_a: Vec<i64> = relayouts[0].order().map(|o| a[o]).collect();
        let sums = crate::kernel::examples::run_matvec_i8(&p, &laid_a, &b);
        for r in 0..rows {
            let want: i64 = (0..cols).map(|j| a[r * cols + j] * b[j]).sum();
            assert_eq!(sums[r], want, "row {r}");
        }
    }

    /// With dot products of pairs in lanes, a dense layer's free int8 matrix is stored with
    /// each lane's pair side by side, and the vector lanes sum two products each; the sums
    /// are exact. A matrix whose lanes' pairs lie a row apart refuses them.
    #[test]
    fn int8_pairs_in_lanes_read_a_matrix_stored_pair_by_pair() {
        groups_in_lanes_read_a_matrix_stored_group_by_group(Target::host(), 2);
    }

    /// The same with NEON's fours (`SDOT`): each lane's four side by side.
    #[test]
    fn int8_fours_in_lanes_read_a_matrix_stored_four_by_four() {
        groups_in_lanes_read_a_matrix_stored_group_by_group(Target::neon(), 4);
    }

    fn groups_in_lanes_read_a_matrix_stored_group_by_group(target: Target, width: usize) {
        use crate::kernel::examples::{matvec_i8, run_matvec_i8};
        use crate::uop::UOpKind;
        let (rows, cols) = (16, 24);
        let fresh = || lanes_on_outputs(matvec_i8(rows, cols, target.clone()));
        let pairs = Opt::new(OptOp::Dot, 0, width);
        let mut fixed = fresh();
        assert!(fixed.apply_opt(pairs).is_err(), "the matrix is not free");
        let mut k = fresh();
        k.free_layout = vec![(1, rows * cols)];
        k.apply_opt(pairs).unwrap();
        let (axis, dot) = (k.vector_axis().unwrap(), k.packed_dot_axis().unwrap());
        let (laid, relayouts) = k.laid_out();
        let strides = relayouts[0].st.real_strides(false);
        assert_eq!((strides[axis], strides[dot]), (Some(width as i64), Some(1)));
        assert_eq!(laid.vector_axis(), Some(axis), "the pairs are not gathered");
        let p = crate::render::to_program(&laid).unwrap();
        let lanes = Some(DType::I32.vec(8));
        let dots = (p.uops.uops.iter()).filter(|u| u.kind == UOpKind::Dot && u.dtype == lanes);
        assert!(dots.count() > 0, "vector dot products: {}", p.src);
        assert!(
            p.src.contains(&format!("kiln_dot{width}_int8(")),
            "{}",
            p.src
        );
        let a: Vec<i64> = (0..rows * cols)
            .map(|i| (i as i64 * 37 % 256) - 128)
            .collect();
        let b: Vec<i64> = (0..cols).map(|j| 127 - (j as i64 * 53 % 256)).collect();
        let laid_a: Vec<i64> = relayouts[0].order().map(|o| a[o]).collect();
        let sums = run_matvec_i8(&p, &laid_a, &b);
        for r in 0..rows {
            let want: i64 = (0..cols).map(|j| a[r * cols + j] * b[j]).sum();
            assert_eq!(sums[r], want, "row {r}");
        }
    }

    #[test]
    fn no_lanes_without_vectors_or_with_a_view_that_is_not_a_permutation() {
        // Every other element of a buffer twice as long: not a permutation of it.
        let sparse = ShapeTracker::from_shape(&[16, 8])
            .shrink(&[(0, 16), (0, 8)])
            .unwrap()
            .stride(&[1, 2])
            .unwrap();
        let k = matvec_through(sparse);
        assert!(relayouts(&k).is_empty());
        let mut plain = lanes_on_outputs(matvec(Target::c()));
        plain.free_layout = vec![(1, 64)];
        assert_eq!(plain.vector_axis(), None);
        assert!(relayouts(&plain).is_empty());
        // The weight buffer holds more than the kernel reads: its order is not the kernel's,
        // so the lanes gather it.
        let mut part = lanes_on_outputs(matvec(Target::host()));
        part.free_layout = vec![(1, 128)];
        let axis = part.vector_axis().expect("lanes along the outputs");
        assert_eq!(part.lane_gathers(axis), Some(1));
        assert!(relayouts(&part).is_empty());
    }

    #[test]
    fn a_weight_read_through_two_views_keeps_its_layout() {
        // out[o] = sum_i w[o, i] * w[0, i]: w twice, the second view its first row.
        let w = LazyOp::load(1, DType::F32, ShapeTracker::from_shape(&[16, 4]));
        let row = ShapeTracker::from_shape(&[16, 4])
            .shrink(&[(0, 1), (0, 4)])
            .unwrap()
            .expand(&[16, 4])
            .unwrap();
        let row = LazyOp::load(1, DType::F32, row);
        let mul = LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![w, row]);
        let sum = LazyOp::reduce(ReduceOp::Sum, vec![1], mul);
        let out = LazyOp::store(0, ShapeTracker::from_shape(&[16, 1]), sum);
        let mut k = lanes_on_outputs(Kernel::new(vec![out], Target::host()).unwrap());
        let views: Vec<usize> = (0..k.bufs.len())
            .filter(|&i| matches!(&k.bufs[i], KernelBuffer::Mem(m) if m.idx.0 == 1))
            .collect();
        assert_eq!(views.len(), 2);
        k.free_layout = views.iter().map(|&b| (b, 64)).collect();
        assert!(relayouts(&k).is_empty());
        let axis = k.vector_axis().expect("lanes along the outputs");
        assert_eq!(k.lane_gathers(axis), Some(1), "the full view is gathered");
    }
}

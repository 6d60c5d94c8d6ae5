//! Where a kernel can sum int8 products as packed dot products ([`OptOp::Dot`]): its one
//! reduce sums the products of two int8 loads widened to `i32`, and a reduce axis of 4 that is
//! upcast is contiguous in both loaded buffers and never masked there, so each operand's four
//! lanes are one word in memory.

use super::{Kernel, KernelBuffer, OptOp};
use crate::dtype::DType;
use crate::ops::{AluOp, BinaryOp, ReduceOp};
use crate::schedule::ast::Op;

impl Kernel {
    /// The two buffers (positions in `bufs`) whose int8 values the kernel's one reduce
    /// multiplies and sums in `i32`, when it is such a reduce.
    pub fn dot_operands(&self) -> Option<[usize; 2]> {
        let [r] = self.reduceops.as_slice() else {
            return None;
        };
        if !matches!(r.op(), Op::Reduce(ReduceOp::Sum, _)) || r.dtype() != DType::I32 {
            return None;
        }
        let product = &r.src()[0];
        if *product.op() != Op::Alu(AluOp::Binary(BinaryOp::Mul)) {
            return None;
        }
        let mut operands = [0; 2];
        for (slot, factor) in operands.iter_mut().zip(product.src()) {
            if *factor.op() != Op::Cast(DType::I32) {
                return None;
            }
            let load = &factor.src()[0];
            let Op::Load(m) = load.op() else {
                return None;
            };
            if m.dtype != DType::I8 {
                return None;
            }
            *slot = self
                .bufs
                .iter()
                .position(|b| *b == KernelBuffer::Mem(m.clone()))?;
        }
        Some(operands)
    }

    /// The upcast reduce axis whose four lanes the linearizer packs into dot products: after
    /// a [`OptOp::Dot`], on a target that has them.
    pub fn packed_dot_axis(&self) -> Option<usize> {
        if !self.applied_opts.iter().any(|o| o.op == OptOp::Dot) {
            return None;
        }
        self.dot_axis()
    }

    /// An upcast reduce axis of 4 that is contiguous and unmasked in both int8 operands.
    pub(super) fn dot_axis(&self) -> Option<usize> {
        if !self.target.packed_dot {
            return None;
        }
        let operands = self.dot_operands()?;
        let n = self.shape_len();
        let (full, out) = (self.full_shape(), self.output_shape());
        (n - self.upcasted..n).find(|&axis| {
            full[axis] == 4
                && out[axis] == 1
                && operands
                    .iter()
                    .all(|&b| self.sts[b].unit_stride_axes(false).contains(&axis))
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::examples::{matvec, matvec_i8};
    use crate::kernel::{Kernel, KernelError, Opt, OptOp};
    use crate::ops::ConstValue;
    use crate::render::to_program;
    use crate::target::Target;
    use crate::uop::interp::{run, HostBuffer};
    use crate::uop::{ArgId, UOpKind};
    use std::collections::HashMap;

    fn refusal(mut k: Kernel, opt: Opt) -> String {
        match k.apply_opt(opt) {
            Err(KernelError::InvalidOpt { reason, .. }) => reason,
            other => panic!("{opt} should be refused, got {other:?}"),
        }
    }

    /// A packed kernel computes what the plain one does, exactly, with one `DOT` per four
    /// products, and renders them with the DSP helpers.
    #[test]
    fn packed_dot_products_sum_four_int8_products_each() {
        let (rows, cols) = (6, 24);
        let mut k = matvec_i8(rows, cols, Target::c_dsp());
        k.apply_opt(Opt::new(OptOp::Upcast, 0, 2)).unwrap();
        k.apply_opt(Opt::new(OptOp::Dot, 0, 4)).unwrap();
        assert!(k.packed_dot_axis().is_some());
        let p = to_program(&k).unwrap();
        let dots = p
            .uops
            .uops
            .iter()
            .filter(|u| u.kind == UOpKind::Dot)
            .count();
        // Two rows per iteration, one dot product of four columns each.
        assert_eq!(dots, 2, "{}", p.src);
        assert!(p.src.contains("kiln_dot4(") && p.src.contains("kiln_ld4(data1+"));
        assert!(p.src.contains("__smlad") && p.src.contains("__ARM_FEATURE_DSP"));
        // Values at the ends of int8's range, so a sign lost in the packing would show.
        let a: Vec<i64> = (0..rows * cols)
            .map(|i| (i as i64 * 37 % 256) - 128)
            .collect();
        let b: Vec<i64> = (0..cols).map(|j| 127 - (j as i64 * 53 % 256)).collect();
        let mut bufs = HashMap::new();
        let ints = |v: &[i64]| HostBuffer {
            dtype: crate::dtype::Scalar::I8,
            data: v.iter().map(|&x| ConstValue::Int(x)).collect(),
        };
        bufs.insert(ArgId(0), HostBuffer::zeros(crate::dtype::Scalar::I32, rows));
        bufs.insert(ArgId(1), ints(&a));
        bufs.insert(ArgId(2), ints(&b));
        run(&p.uops, &mut bufs, &HashMap::new()).unwrap();
        for r in 0..rows {
            let want: i64 = (0..cols).map(|j| a[r * cols + j] * b[j]).sum();
            assert_eq!(bufs[&ArgId(0)].data[r].as_i64(), want, "row {r}");
        }
    }

    #[test]
    fn packed_dot_products_need_the_target_int8_products_and_contiguous_lanes() {
        let dot = Opt::new(OptOp::Dot, 0, 4);
        let plain = refusal(matvec_i8(4, 16, Target::c()), dot);
        assert!(plain.contains("no packed dot products"), "{plain}");
        let float = refusal(matvec(4, 16, Target::c_dsp()), dot);
        assert!(float.contains("not a sum of int8 products"), "{float}");
        let three = refusal(
            matvec_i8(4, 16, Target::c_dsp()),
            Opt::new(OptOp::Dot, 0, 2),
        );
        assert!(three.contains("4 lanes"), "{three}");
        // The rows of a transposed matrix are strided: its lanes are not one word.
        let mut k = matvec_i8(4, 16, Target::c_dsp());
        k.sts[1] = crate::shape::ShapeTracker::from_shape(&[16, 4])
            .permute(&[1, 0])
            .unwrap();
        let strided = refusal(k, dot);
        assert!(strided.contains("not contiguous"), "{strided}");
    }
}

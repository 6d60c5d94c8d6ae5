//! Where a kernel can sum int8 products as packed dot products ([`OptOp::Dot`]): its one
//! reduce sums the products of two int8 loads widened to `i32`, and a reduce axis of 4 (or of
//! 16 on a target with Helium's dot products) that is upcast is contiguous in both loaded
//! buffers and never masked there, so each operand's lanes are one word (or one 128-bit
//! vector) in memory.

use super::{Kernel, KernelBuffer, OptOp};
use crate::dtype::DType;
use crate::schedule::ast::Op;

impl Kernel {
    /// The two buffers (positions in `bufs`) whose int8 (or int16) values the kernel's one
    /// reduce multiplies and sums in `i32`, when it is such a reduce.
    pub fn dot_operands(&self) -> Option<[usize; 2]> {
        let [r] = self.reduceops.as_slice() else {
            return None;
        };
        let [Some(a), Some(b)] = r.summed_product_loads()? else {
            return None;
        };
        let position = |m: &crate::schedule::ast::MemBuffer| {
            let lane = DOT_LANE_TYPES.contains(&m.dtype);
            let mine = KernelBuffer::Mem(m.clone());
            lane.then(|| self.bufs.iter().position(|b| *b == mine))
                .flatten()
        };
        Some([position(a)?, position(b)?])
    }

    /// The upcast reduce axis whose lanes the linearizer packs into dot products: after a
    /// [`OptOp::Dot`], on a target that has them. Its size is the lanes of each dot product
    /// ([`Kernel::dot_lanes`]).
    pub fn packed_dot_axis(&self) -> Option<usize> {
        let lanes = self.dot_lanes()?;
        if !self.target.dot_widths().contains(&lanes) {
            return None;
        }
        self.contiguous_dot_axis(lanes)
            .filter(|&axis| self.lanes_meet(axis))
    }

    /// The lanes of each packed dot product, once a [`OptOp::Dot`] is applied: 4, or 16 with
    /// Helium's.
    pub fn dot_lanes(&self) -> Option<usize> {
        (self.applied_opts.iter())
            .find(|o| o.op == OptOp::Dot)
            .map(|o| o.amt)
    }

    /// An upcast reduce axis of `lanes` that is contiguous and unmasked in both operands.
    pub(super) fn contiguous_dot_axis(&self, lanes: usize) -> Option<usize> {
        let operands = self.dot_operands()?;
        let n = self.shape_len();
        let (full, out) = (self.full_shape(), self.output_shape());
        (n - self.upcasted..n).find(|&axis| {
            full[axis] == lanes
                && out[axis] == 1
                && operands
                    .iter()
                    .all(|&b| self.sts[b].unit_stride_axes(false).contains(&axis))
        })
    }

    /// Whether the two operands' lanes along `axis` meet in one dot product: they are of one
    /// width, or one operand is a weight stored in pair order, or free to be
    /// ([`Kernel::dot_weight_forms`]).
    pub(super) fn lanes_meet(&self, axis: usize) -> bool {
        let Some([a, b]) = self.dot_operands() else {
            return false;
        };
        self.operand_dtype(a) == self.operand_dtype(b)
            || !self.paired.is_empty()
            || [a, b].iter().any(|&w| self.read_once_at_fours(w, axis))
    }

    /// With [`crate::target::Target::lane_dot`]: the kernel's dot products of int8 pairs fill
    /// its vector lanes. It has a vector axis, along which one operand is one pair for every lane
    /// (stride 0) and the other a weight stored with each lane's pair side by side, or free
    /// to be ([`Kernel::lane_pairs`]).
    pub(super) fn dots_fill_lanes(&self) -> bool {
        let (Some(lanes), Some(operands)) = (self.vector_axis(), self.dot_operands()) else {
            return false;
        };
        let shared = |b: usize| self.sts[b].real_strides(false)[lanes] == Some(0);
        let int8 = operands.iter().all(|&b| self.operand_dtype(b) == DType::I8);
        int8 && (0..2).any(|i| shared(operands[i]) && self.lane_pairs(operands[1 - i], lanes))
    }

    /// Buffer `b` is an operand of lane dot products whose pairs lie side by side along the
    /// lane `axis` (the dot axis contiguous, the lanes a pair apart), or a free weight that
    /// its relayout puts so ([`crate::kernel::lanes::relayouts`]).
    pub(super) fn lane_pairs(&self, b: usize, axis: usize) -> bool {
        let (Some(dot), Some(width)) = (self.packed_dot_axis(), self.dot_lanes()) else {
            return false;
        };
        let strides = self.sts[b].real_strides(false);
        let side_by_side = strides[dot] == Some(1) && strides[axis] == Some(width as i64);
        self.target.lane_dot > 0
            && self.dot_operands().is_some_and(|o| o.contains(&b))
            && (side_by_side || self.relayout_of(b, axis).is_some())
    }

    /// The type of buffer `b`'s values as they are stored: int16 for a [`Kernel::widened`]
    /// weight.
    pub fn operand_dtype(&self, b: usize) -> DType {
        match &self.bufs[b] {
            _ if self.widened.contains(&b) => DType::I16,
            KernelBuffer::Mem(m) => m.dtype,
            _ => DType::I32,
        }
    }
}

impl Kernel {
    /// How the weight of the packed dot products is to be stored: `(widened, paired)`, each
    /// empty or that weight (see [`Kernel::widened`] and [`Kernel::paired`]). The weight is an
    /// int8 buffer that only this kernel reads, once, through one unmasked view in which every
    /// word the products load starts at a multiple of four elements, so that each four can be
    /// reordered where they lie and the view's indices stay as they are. It is widened where
    /// the target wants it ([`crate::target::Target::wide_weights`]), and its fours are put in
    /// pair order where its lanes and the other operand's then differ in width: `SXTB16`
    /// unpacks an int8 word into the pairs of values 0 and 2 and of 1 and 3, which meet the
    /// other operand's consecutive pairs only so.
    pub fn dot_weight_forms(&self) -> (Vec<usize>, Vec<usize>) {
        let none = (Vec::new(), Vec::new());
        let (Some(axis), Some(operands)) = (self.packed_dot_axis(), self.dot_operands()) else {
            return none;
        };
        let Some(at) = (0..2).find(|&i| self.read_once_at_fours(operands[i], axis)) else {
            return none;
        };
        let (weight, other) = (operands[at], operands[1 - at]);
        let widen = self.target.wide_weights && self.operand_dtype(weight) == DType::I8;
        let wide = widen || self.operand_dtype(weight) == DType::I16;
        let other_wide = self.operand_dtype(other) == DType::I16;
        let pick = |yes: bool| match yes {
            true => vec![weight],
            false => Vec::new(),
        };
        (pick(widen), pick(wide != other_wide))
    }

    /// Buffer `b` is a free weight, loaded at one place in the kernel, through one view whose
    /// steps off `axis` and start are multiples of four.
    fn read_once_at_fours(&self, b: usize, axis: usize) -> bool {
        if !self.free_layout.iter().any(|&(i, _)| i == b) {
            return false;
        }
        let KernelBuffer::Mem(mine) = &self.bufs[b] else {
            return false;
        };
        let loads = super::unique_lazyops(&self.ast)
            .iter()
            .filter(|x| matches!(x.op(), Op::Load(m) if m.idx == mine.idx))
            .count();
        let [view] = self.sts[b].views.as_slice() else {
            return false;
        };
        let shape = self.sts[b].shape();
        loads == 1
            && view.mask.is_none()
            && view.offset % 4 == 0
            && view.strides[axis] == 1
            && (0..shape.len()).all(|a| a == axis || shape[a] == 1 || view.strides[a] % 4 == 0)
    }
}

/// Position `k` of four int8 values widened for `SMLAD` ([`Kernel::widened`]) holds value
/// `PAIR_ORDER[k]`: 0 and 2 in the low word, as `SXTB16` unpacks a word's bytes 0 and 2, then 1
/// and 3 (the order is its own inverse).
pub const PAIR_ORDER: [usize; 4] = [0, 2, 1, 3];

/// An int8 weight's values widened to little-endian int16: the bytes a [`Kernel::widened`]
/// buffer is stored as (before [`pair_fours`]).
pub fn widen(int8: &[u8]) -> Vec<u8> {
    int8.iter()
        .flat_map(|&b| (b as i8 as i16).to_le_bytes())
        .collect()
}

/// Elements of `size` bytes with each four in [`PAIR_ORDER`]: the order of a
/// [`Kernel::paired`] buffer. A last group of fewer than four, which no packed load reads,
/// keeps its order.
pub fn pair_fours(bytes: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for group in bytes.chunks(4 * size) {
        let order: &[usize] = match group.len() / size {
            4 => &PAIR_ORDER,
            n => &[0, 1, 2][..n],
        };
        for &from in order {
            out.extend_from_slice(&group[from * size..(from + 1) * size]);
        }
    }
    out
}

/// The lane types of a packed dot product's operands: int8, or int16 (an activation stored
/// widened, [`crate::target::Target::wide_activations`]).
const DOT_LANE_TYPES: [DType; 2] = [DType::I8, DType::I16];

#[cfg(test)]
mod tests {
    use crate::dtype::DType;
    use crate::kernel::examples::{assert_matvec_sums, matvec, matvec_i8, matvec_int};
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
        assert_matvec_sums(&p, rows, cols);
    }

    /// With Helium, sixteen int8 products are one dot product of two 128-bit loads; the sums
    /// are the plain kernel's. Only Helium's targets take sixteen lanes, and they keep the
    /// DSP's four for an axis sixteen do not divide.
    #[test]
    fn helium_dot_products_sum_sixteen_int8_products_each() {
        let (rows, cols) = (6, 48);
        let mut k = matvec_i8(rows, cols, Target::c_mve());
        k.apply_opt(Opt::new(OptOp::Upcast, 0, 2)).unwrap();
        k.apply_opt(Opt::new(OptOp::Dot, 0, 16)).unwrap();
        assert_eq!(k.dot_lanes(), Some(16));
        assert!(k.packed_dot_axis().is_some());
        let p = to_program(&k).unwrap();
        let dots = (p.uops.uops.iter())
            .filter(|u| u.kind == UOpKind::Dot)
            .count();
        assert_eq!(dots, 2, "{}", p.src);
        assert!(p.src.contains("kiln_dot16(") && p.src.contains("kiln_ld16(data1+"));
        assert!(p.src.contains("vmladavaq_s8") && p.src.contains("__ARM_FEATURE_MVE"));
        assert!(!p.src.contains("kiln_dot4("), "{}", p.src);
        assert_matvec_sums(&p, rows, cols);

        let reason = refusal(
            matvec_i8(rows, cols, Target::c_dsp()),
            Opt::new(OptOp::Dot, 0, 16),
        );
        assert!(reason.contains("takes [4] lanes"), "{reason}");
        let mut fours = matvec_i8(rows, 24, Target::c_mve());
        fours.apply_opt(Opt::new(OptOp::Dot, 0, 4)).unwrap();
        let p = to_program(&fours).unwrap();
        assert!(p.src.contains("kiln_dot4(") && !p.src.contains("kiln_dot16("));
        assert_matvec_sums(&p, rows, 24);
    }

    /// Buffer `id`'s position in the kernel's buffers.
    fn position(k: &Kernel, id: u32) -> usize {
        k.bufs
            .iter()
            .position(|b| matches!(b, crate::kernel::KernelBuffer::Mem(m) if m.idx == ArgId(id)))
            .expect("a buffer of the kernel")
    }

    /// The matrix of `matvec_i8(rows, cols)` free to lay out, two rows per iteration and four
    /// columns per dot product, on `target`.
    fn packed_matvec(rows: usize, cols: usize, target: Target) -> Kernel {
        let mut k = matvec_i8(rows, cols, target);
        k.free_layout = vec![(position(&k, 1), rows * cols)];
        k.apply_opt(Opt::new(OptOp::Upcast, 0, 2)).unwrap();
        k.apply_opt(Opt::new(OptOp::Dot, 0, 4)).unwrap();
        k
    }

    /// A widened weight: stored as int16 in SMLAD's pair order, read as two words per four
    /// products, and the sums are the plain kernel's, exactly.
    #[test]
    fn a_widened_weight_is_read_as_int16_pairs_with_the_same_sums() {
        let (rows, cols) = (6, 24);
        let (k, _) = packed_matvec(rows, cols, Target::c_dsp_wide()).laid_out();
        let w = position(&k, 1);
        assert_eq!(k.widened, vec![w]);
        let p = to_program(&k).unwrap();
        assert!(p.src.contains("const short* restrict data1"), "{}", p.src);
        assert!(p.src.contains("kiln_dot4w(") && p.src.contains("kiln_ld4(data2+"));
        let a: Vec<i64> = (0..rows * cols)
            .map(|i| (i as i64 * 37 % 256) - 128)
            .collect();
        let b: Vec<i64> = (0..cols).map(|j| 127 - (j as i64 * 53 % 256)).collect();
        let bytes: Vec<u8> = a.iter().map(|&x| x as i8 as u8).collect();
        let wide: Vec<ConstValue> = super::pair_fours(&super::widen(&bytes), 2)
            .chunks(2)
            .map(|h| ConstValue::Int(i16::from_le_bytes([h[0], h[1]]) as i64))
            .collect();
        assert_eq!(wide[1].as_i64(), a[2], "values 0 and 2 share the low word");
        let mut bufs = HashMap::new();
        bufs.insert(ArgId(0), HostBuffer::zeros(crate::dtype::Scalar::I32, rows));
        bufs.insert(
            ArgId(1),
            HostBuffer {
                dtype: crate::dtype::Scalar::I16,
                data: wide,
            },
        );
        bufs.insert(
            ArgId(2),
            HostBuffer {
                dtype: crate::dtype::Scalar::I8,
                data: b.iter().map(|&x| ConstValue::Int(x)).collect(),
            },
        );
        run(&p.uops, &mut bufs, &HashMap::new()).unwrap();
        for r in 0..rows {
            let want: i64 = (0..cols).map(|j| a[r * cols + j] * b[j]).sum();
            assert_eq!(bufs[&ArgId(0)].data[r].as_i64(), want, "row {r}");
        }
    }

    /// Only a free weight whose words start at multiples of four is widened, and only where
    /// the target asks for it.
    #[test]
    fn a_weight_is_widened_only_where_its_fours_stay_in_place() {
        assert!(packed_matvec(6, 24, Target::c_dsp())
            .laid_out()
            .0
            .widened
            .is_empty());
        // A window of a wider matrix: rows 26 apart, from its third column. The words are
        // contiguous, but start at 2, 6, …, 28, …: they cannot be reordered where they lie.
        let (rows, cols) = (6, 24);
        let mut k = matvec_i8(rows, cols, Target::c_dsp_wide());
        let w = position(&k, 1);
        k.sts[w] = crate::shape::ShapeTracker::from_shape(&[rows, cols + 2])
            .shrink(&[(0, rows), (2, cols + 2)])
            .unwrap();
        k.free_layout = vec![(w, rows * (cols + 2))];
        k.apply_opt(Opt::new(OptOp::Dot, 0, 4)).unwrap();
        assert!(k.packed_dot_axis().is_some());
        assert!(k.laid_out().0.widened.is_empty(), "misaligned: not widened");
        let mut k = matvec_i8(8, 24, Target::c_dsp_wide());
        k.apply_opt(Opt::new(OptOp::Dot, 0, 4)).unwrap();
        assert!(k.laid_out().0.widened.is_empty(), "not free: not widened");
        assert_eq!(
            super::pair_fours(&super::widen(&[1, 0xff, 3, 0x80, 5, 6]), 2),
            [1, 0, 3, 0, 0xff, 0xff, 0x80, 0xff, 5, 0, 6, 0],
            "pair order, sign extended; a last short group in its order"
        );
        assert_eq!(super::pair_fours(&[1, 2, 3, 4, 5], 1), [1, 3, 2, 4, 5]);
    }

    /// Activations stored as int16 (buffer 2) meet an int8 weight through the weight's fours
    /// in pair order, and a widened weight as it is: each kernel's sums are the plain ones,
    /// exactly, from the weight's bytes as the bundle stores them.
    #[test]
    fn int16_activations_meet_a_paired_int8_weight_or_a_widened_one() {
        let (rows, cols) = (6, 24);
        let a: Vec<i64> = (0..rows * cols)
            .map(|i| (i as i64 * 37 % 256) - 128)
            .collect();
        let b: Vec<i64> = (0..cols).map(|j| 127 - (j as i64 * 53 % 256)).collect();
        let cases = [
            (Target::c_dsp(), false, true, "kiln_dot4w("),
            (Target::c_dsp_wide(), true, false, "kiln_dot4ww("),
        ];
        for (target, widened, paired, helper) in cases {
            let mut k = matvec_int(
                rows,
                cols,
                [DType::I8, DType::I16],
                target.with_wide_activations().unwrap(),
            );
            k.free_layout = vec![(position(&k, 1), rows * cols)];
            k.apply_opt(Opt::new(OptOp::Upcast, 0, 2)).unwrap();
            k.apply_opt(Opt::new(OptOp::Dot, 0, 4)).unwrap();
            let (k, _) = k.laid_out();
            assert_eq!(
                (!k.widened.is_empty(), !k.paired.is_empty()),
                (widened, paired)
            );
            let p = to_program(&k).unwrap();
            assert!(p.src.contains(helper), "{}", p.src);
            let mut bytes: Vec<u8> = a.iter().map(|&x| x as i8 as u8).collect();
            let scalar = match widened {
                true => {
                    bytes = super::widen(&bytes);
                    crate::dtype::Scalar::I16
                }
                false => crate::dtype::Scalar::I8,
            };
            if paired {
                bytes = super::pair_fours(&bytes, scalar.size());
            }
            let stored = bytes.chunks(scalar.size()).map(|c| match c {
                [lo, hi] => i16::from_le_bytes([*lo, *hi]) as i64,
                [x] => *x as i8 as i64,
                _ => unreachable!("int8 or int16"),
            });
            let ints = |dtype, v: Vec<i64>| HostBuffer {
                dtype,
                data: v.into_iter().map(ConstValue::Int).collect(),
            };
            let mut bufs = HashMap::new();
            bufs.insert(ArgId(0), HostBuffer::zeros(crate::dtype::Scalar::I32, rows));
            bufs.insert(ArgId(1), ints(scalar, stored.collect()));
            bufs.insert(ArgId(2), ints(crate::dtype::Scalar::I16, b.clone()));
            run(&p.uops, &mut bufs, &HashMap::new()).unwrap();
            for r in 0..rows {
                let want: i64 = (0..cols).map(|j| a[r * cols + j] * b[j]).sum();
                assert_eq!(bufs[&ArgId(0)].data[r].as_i64(), want, "{helper} row {r}");
            }
        }
        // A weight that cannot be reordered: its int8 lanes cannot meet int16 ones.
        let fixed = matvec_int_fixed(rows, cols);
        let why = refusal(fixed, Opt::new(OptOp::Dot, 0, 4));
        assert!(why.contains("int8 and int16 lanes"), "{why}");
    }

    /// [`int16_activations_meet_a_paired_int8_weight_or_a_widened_one`]'s kernel with a
    /// weight that is not free to lay out.
    fn matvec_int_fixed(rows: usize, cols: usize) -> Kernel {
        let target = Target::c_dsp().with_wide_activations().unwrap();
        matvec_int(rows, cols, [DType::I8, DType::I16], target)
    }

    #[test]
    fn packed_dot_products_need_the_target_int8_products_and_contiguous_lanes() {
        let dot = Opt::new(OptOp::Dot, 0, 4);
        let plain = refusal(matvec_i8(4, 16, Target::c()), dot);
        assert!(plain.contains("no packed dot products"), "{plain}");
        let float = refusal(matvec(4, 16, Target::c_dsp()), dot);
        assert!(
            float.contains("not a sum of int8 (or int16) products"),
            "{float}"
        );
        let three = refusal(
            matvec_i8(4, 16, Target::c_dsp()),
            Opt::new(OptOp::Dot, 0, 2),
        );
        assert!(three.contains("takes [4] lanes"), "{three}");
        // The rows of a transposed matrix are strided: its lanes are not one word.
        let mut k = matvec_i8(4, 16, Target::c_dsp());
        k.sts[1] = crate::shape::ShapeTracker::from_shape(&[16, 4])
            .permute(&[1, 0])
            .unwrap();
        let strided = refusal(k, dot);
        assert!(strided.contains("not contiguous"), "{strided}");
    }
}

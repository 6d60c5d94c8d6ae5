//! A kernel: one schedule item's AST, its buffers' ShapeTrackers, and the optimization state
//! (which axes are upcast, local, grouped) that the opts in [`opt`] change.
//!
//! Axes are ordered: global dims, local dims, grouped reduce dims, reduce dims, then the
//! upcast dims at the end. `first_reduce` is the first axis whose output size differs from
//! the full (input) size.

pub mod dot;
pub mod examples;
pub mod interior;
pub mod lanes;
pub mod opt;
pub mod overlap;

use crate::dtype::DType;
use crate::ops::ConstValue;
use crate::schedule::ast::{ConstBuffer, LazyOp, MemBuffer, Op};
use crate::shape::{ShapeError, ShapeTracker};
use crate::target::Target;
pub use opt::{Opt, OptOp};
use std::collections::HashSet;

/// Maps a buffer's shape to its new shape.
pub type ShapeFn<'a> = dyn Fn(&[usize]) -> Vec<usize> + 'a;

/// A buffer a kernel reads or writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KernelBuffer {
    Mem(MemBuffer),
    Const(ConstBuffer),
    /// Work-group local memory for a grouped reduce.
    Local {
        name: String,
        size: usize,
        dtype: DType,
    },
}

impl KernelBuffer {
    pub fn dtype(&self) -> DType {
        match self {
            KernelBuffer::Mem(m) => m.dtype,
            KernelBuffer::Const(c) => c.dtype,
            KernelBuffer::Local { dtype, .. } => *dtype,
        }
    }

    pub fn const_value(&self) -> Option<ConstValue> {
        match self {
            KernelBuffer::Const(c) => Some(c.val),
            _ => None,
        }
    }
}

/// Errors building or optimizing a kernel. Each names the kernel.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum KernelError {
    #[error("kernel {kernel}: {reason}")]
    BadAst { kernel: String, reason: String },
    #[error("kernel {kernel}: opt {opt} is invalid: {reason}")]
    InvalidOpt {
        kernel: String,
        opt: Opt,
        reason: String,
    },
    #[error("kernel {kernel}: opt {opt} names axis {axis}, but the kernel has {dims} axes")]
    AxisOutOfRange {
        kernel: String,
        opt: Opt,
        axis: usize,
        dims: usize,
    },
    #[error("kernel {kernel}")]
    Shape {
        kernel: String,
        #[source]
        source: ShapeError,
    },
}

/// A kernel and its optimization state.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub ast: Vec<LazyOp>,
    pub target: Target,
    /// The reduces, inner ones first.
    pub reduceops: Vec<LazyOp>,
    pub bufs: Vec<KernelBuffer>,
    pub sts: Vec<ShapeTracker>,
    /// A view of the full shape that is invalid exactly where PADTO padded: it gates the
    /// accumulators of inner reduces used inside a padded reduce.
    pub pad_st: ShapeTracker,
    /// Positions in `bufs` of the buffers read under each reduce, per reduce.
    pub earlybufs: Vec<Vec<usize>>,
    pub full_buf_index: usize,
    pub upcasted: usize,
    pub local_dims: usize,
    pub group_for_reduces: usize,
    pub dont_use_locals: bool,
    /// INTERIOR: the loops are split into a border-free interior and its borders
    /// ([`interior`]).
    pub interior: bool,
    pub applied_opts: Vec<Opt>,
    /// Buffers (by position in `bufs`, with their element count) whose memory layout the
    /// compiler may choose: constant weights that only this kernel reads.
    pub free_layout: Vec<(usize, usize)>,
    /// Weights (by position in `bufs`) whose int8 values are stored widened to int16
    /// ([`Kernel::dot_weight_forms`]): chosen by [`Kernel::laid_out`], read by the
    /// linearizer's packed dot products.
    pub widened: Vec<usize>,
    /// Weights (by position in `bufs`) stored with each four values in the pair order of
    /// `SXTB16` ([`dot::PAIR_ORDER`]), because the dot products meet them with lanes of the
    /// other width ([`Kernel::dot_weight_forms`]).
    pub paired: Vec<usize>,
}

/// Every node of the stores `ast`, each once, in the order the stores reach them.
fn unique_lazyops(ast: &[LazyOp]) -> Vec<LazyOp> {
    let mut seen = HashSet::new();
    let mut v = Vec::new();
    for s in ast {
        for x in s.lazyops() {
            if seen.insert(x.key()) {
                v.push(x);
            }
        }
    }
    v
}

/// The kernel's buffers: the stored ones first, then each loaded or constant one, once.
fn kernel_buffers(ast: &[LazyOp], lazyops: &[LazyOp]) -> Vec<KernelBuffer> {
    let mut bufs: Vec<KernelBuffer> = Vec::new();
    for s in ast {
        if let Op::Store(m) = s.op() {
            bufs.push(KernelBuffer::Mem(m.clone()));
        }
    }
    for x in lazyops {
        let b = match x.op() {
            Op::Load(m) => KernelBuffer::Mem(m.clone()),
            Op::Const(c) => KernelBuffer::Const(c.clone()),
            _ => continue,
        };
        if !bufs.contains(&b) {
            bufs.push(b);
        }
    }
    bufs
}

/// Positions in `bufs` of the buffers the reduce `r` reads.
fn buffers_read(r: &LazyOp, bufs: &[KernelBuffer]) -> Vec<usize> {
    r.lazyops()
        .iter()
        .filter_map(|x| match x.op() {
            Op::Load(m) => bufs.iter().position(|b| *b == KernelBuffer::Mem(m.clone())),
            Op::Const(c) => bufs
                .iter()
                .position(|b| *b == KernelBuffer::Const(c.clone())),
            _ => None,
        })
        .collect()
}

impl Kernel {
    /// Builds a kernel from its stores; reduce axes are moved to the end and trivial axes merged.
    pub fn new(ast: Vec<LazyOp>, target: Target) -> Result<Kernel, KernelError> {
        let bad = |reason: String| KernelError::BadAst {
            kernel: "(new)".into(),
            reason,
        };
        if ast.is_empty() || ast.iter().any(|s| !matches!(s.op(), Op::Store(_))) {
            return Err(bad("the AST must be one or more stores".into()));
        }
        let lazyops = unique_lazyops(&ast);
        // Children before parents, so that inner reduces come first.
        let mut reduceops: Vec<LazyOp> = lazyops
            .iter()
            .filter(|x| matches!(x.op(), Op::Reduce(..)))
            .cloned()
            .collect();
        reduceops.reverse();
        let bufs = kernel_buffers(&ast, &lazyops);
        let earlybufs: Vec<Vec<usize>> = reduceops.iter().map(|r| buffers_read(r, &bufs)).collect();
        let full_buf_index = earlybufs.iter().flatten().next().copied().unwrap_or(0);
        let sts: Vec<ShapeTracker> = bufs
            .iter()
            .map(|b| match b {
                KernelBuffer::Mem(m) => m.st.clone(),
                KernelBuffer::Const(c) => c.st.clone(),
                KernelBuffer::Local { .. } => unreachable!("no locals yet"),
            })
            .collect();
        if let Some(st) = sts.iter().find(|st| st.shape().contains(&0)) {
            // The scheduler drops kernels of empty buffers: no loop can run over zero elements.
            return Err(bad(format!(
                "shape {:?} has a dimension of size 0: there is nothing to compute",
                st.shape()
            )));
        }
        let mut k = Kernel {
            ast,
            target,
            reduceops,
            bufs,
            pad_st: ShapeTracker::from_shape(&[]),
            sts,
            earlybufs,
            full_buf_index,
            upcasted: 0,
            local_dims: 0,
            group_for_reduces: 0,
            dont_use_locals: false,
            interior: false,
            applied_opts: Vec::new(),
            free_layout: Vec::new(),
            widened: Vec::new(),
            paired: Vec::new(),
        };
        k.check_shapes().map_err(bad)?;
        k.pad_st = ShapeTracker::from_shape(k.full_shape());
        k.reduce_axes_last()?;
        if k.target.simd_lanes > 0 {
            k.loops_in_memory_order()?;
        }
        k.simplify_ones()?;
        k.simplify_merge_adjacent()?;
        Ok(k)
    }

    /// Permutes the axes the output keeps before the reduced ones.
    fn reduce_axes_last(&mut self) -> Result<(), KernelError> {
        let full = self.full_shape().to_vec();
        let out = self.output_shape().to_vec();
        let mut perm: Vec<usize> = (0..full.len()).filter(|&i| full[i] == out[i]).collect();
        perm.extend((0..full.len()).filter(|&i| full[i] != out[i]));
        self.reshape_and_permute(None, Some(&perm))
    }

    /// On a target with float vectors, where the buffers between kernels may be stored
    /// channels-last, loops the output axes in the order the output is stored (the largest
    /// stride outermost) where that costs no reuse: no buffer is read the same all along the
    /// axis that becomes innermost. A depthwise convolution or an elementwise kernel over a
    /// channels-last image then walks memory in order, not a channel block's stripe of the
    /// whole image at a time; a convolution, whose activations every output channel shares,
    /// keeps its channels outermost, so a block of channels' weights stays in cache while the
    /// pixels stream past.
    fn loops_in_memory_order(&mut self) -> Result<(), KernelError> {
        let fr = self.first_reduce();
        let shape = self.full_shape().to_vec();
        let Some(strides) = self.sts[0].real_strides(false)[..fr]
            .iter()
            .map(|s| s.map(i64::unsigned_abs))
            .collect::<Option<Vec<u64>>>()
        else {
            return Ok(());
        };
        let moving: Vec<usize> = (0..fr).filter(|&a| shape[a] > 1).collect();
        let mut order = moving.clone();
        order.sort_by_key(|&a| std::cmp::Reverse(strides[a]));
        let Some(&inner) = order.last() else {
            return Ok(());
        };
        let reused = self.bufs.iter().zip(&self.sts).skip(1).any(|(b, st)| {
            matches!(b, KernelBuffer::Mem(_)) && st.real_strides(false)[inner] == Some(0)
        });
        if order == moving || strides[inner] == 0 || reused {
            return Ok(());
        }
        // The axes of one element keep their places; the others take the stored order.
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        for (slot, axis) in moving.iter().zip(order) {
            perm[*slot] = axis;
        }
        self.reshape_and_permute(None, Some(&perm))
    }

    fn check_shapes(&self) -> Result<(), String> {
        let full = self.full_shape();
        for (i, st) in self.sts.iter().enumerate() {
            if st.shape().len() != full.len() {
                return Err(format!(
                    "buffer {i} has rank {}, the kernel has rank {}",
                    st.shape().len(),
                    full.len()
                ));
            }
            for (axis, (&s, &f)) in st.shape().iter().zip(full).enumerate() {
                if s != f && s != 1 {
                    return Err(format!(
                        "buffer {i} has size {s} on axis {axis}, expected {f} or 1"
                    ));
                }
            }
        }
        for r in &self.reduceops {
            if let Op::Reduce(_, axes) = r.op() {
                if let Some(a) = axes.iter().find(|&&a| a >= full.len()) {
                    return Err(format!(
                        "reduce over axis {a} of a rank-{} shape",
                        full.len()
                    ));
                }
            }
        }
        Ok(())
    }

    /// A name for messages before the kernel is linearized: its kind and full shape.
    pub fn label(&self) -> String {
        let kind = if !self.reduceops.is_empty() {
            "r"
        } else if self
            .ast
            .iter()
            .all(|s| matches!(s.src()[0].op(), Op::Load(_) | Op::Const(_)))
        {
            "C"
        } else {
            "E"
        };
        let outs = if self.ast.len() > 1 {
            format!("{}_", self.ast.len())
        } else {
            "_".into()
        };
        let dims: Vec<String> = self.full_shape().iter().map(|d| d.to_string()).collect();
        format!("{kind}{outs}{}", dims.join("_"))
    }

    pub fn shape_len(&self) -> usize {
        self.sts[0].shape().len()
    }

    pub fn full_shape(&self) -> &[usize] {
        self.sts[self.full_buf_index].shape()
    }

    pub fn output_shape(&self) -> &[usize] {
        self.sts[0].shape()
    }

    pub fn first_reduce(&self) -> usize {
        let n = self.shape_len() - self.upcasted;
        let (out, full) = (self.output_shape(), self.full_shape());
        (0..n).find(|&i| out[i] != full[i]).unwrap_or(n)
    }

    pub fn global_dims(&self) -> usize {
        self.first_reduce() - self.local_dims
    }

    /// Axes between the group and the upcasts that are not reduced (only from upcast-mid).
    pub fn upcast_in_mid_reduce_axes(&self) -> Vec<usize> {
        let fr = self.first_reduce();
        (fr..fr + self.group_for_reduces)
            .filter(|&j| self.full_shape()[j] == self.output_shape()[j])
            .collect()
    }

    /// `(size, stride, is_reduce)` of each upcast axis of buffer `i`.
    pub fn upcasted_axis(&self, i: usize) -> Vec<(usize, Option<i64>, bool)> {
        let start = self.shape_len() - self.upcasted;
        let st = &self.sts[i];
        let strides = st.real_strides(false);
        (start..self.shape_len())
            .map(|a| {
                let reduce = self.output_shape()[a] != self.full_shape()[a];
                (st.shape()[a], strides[a], reduce)
            })
            .collect()
    }

    /// For each upcast combination of buffer `i` (first upcast axis fastest), the accumulator
    /// it folds into: reduce upcast axes share one accumulator.
    pub fn acc_offsets(&self, i: usize) -> Vec<usize> {
        if self.upcasted == 0 {
            return vec![0];
        }
        let axes = self.upcasted_axis(i);
        let mut strides = Vec::with_capacity(axes.len());
        let mut acc = 1;
        for &(s, _, reduce) in &axes {
            strides.push(if reduce { 0 } else { acc });
            if !reduce {
                acc *= s;
            }
        }
        let total: usize = axes.iter().map(|a| a.0).product();
        (0..total)
            .map(|mut k| {
                let mut off = 0;
                for (j, &(s, _, _)) in axes.iter().enumerate() {
                    off += (k % s) * strides[j];
                    k /= s;
                }
                off
            })
            .collect()
    }

    /// The upcast axes of buffer `i` that can be loaded as one vector.
    pub fn float4_upcast_dims(&self, i: usize) -> Vec<usize> {
        let d = self.bufs[i].dtype();
        let vectorizable = self.target.supports_float4
            && matches!(
                d.scalar,
                crate::dtype::Scalar::F32 | crate::dtype::Scalar::F16
            );
        if !vectorizable {
            return vec![];
        }
        let start = self.shape_len() - self.upcasted;
        self.sts[i]
            .unit_stride_axes(false)
            .into_iter()
            .filter(|&x| x >= start && self.sts[i].shape()[x] > 1)
            .collect()
    }

    fn shape_err(&self, source: ShapeError) -> KernelError {
        KernelError::Shape {
            kernel: self.label(),
            source,
        }
    }

    /// Reshapes (by `new_shape` of each buffer's shape) then permutes every buffer's view.
    pub fn reshape_and_permute(
        &mut self,
        new_shape: Option<&ShapeFn<'_>>,
        axes: Option<&[usize]>,
    ) -> Result<(), KernelError> {
        let mut out = Vec::with_capacity(self.sts.len() + 1);
        for st in self.sts.iter().chain([&self.pad_st]) {
            let mut st = st.clone();
            if let Some(f) = new_shape {
                st = st.reshape(&f(st.shape())).map_err(|e| self.shape_err(e))?;
            }
            if let Some(a) = axes {
                st = st.permute(a).map_err(|e| self.shape_err(e))?;
            }
            out.push(st);
        }
        self.pad_st = out.pop().expect("the padding view");
        self.sts = out;
        Ok(())
    }

    /// Removes axes of size 1 everywhere. Returns whether any was removed.
    pub fn simplify_ones(&mut self) -> Result<bool, KernelError> {
        if self.shape_len() == 0 {
            return Ok(false);
        }
        let ones: Vec<bool> = self.full_shape().iter().map(|&s| s == 1).collect();
        let fr = self.first_reduce();
        self.local_dims -= ones[fr - self.local_dims..fr]
            .iter()
            .filter(|&&o| o)
            .count();
        let n = self.shape_len();
        self.upcasted -= ones[n - self.upcasted..].iter().filter(|&&o| o).count();
        let keep = |shape: &[usize]| -> Vec<usize> {
            shape
                .iter()
                .zip(&ones)
                .filter(|(_, &o)| !o)
                .map(|(&s, _)| s)
                .collect()
        };
        self.reshape_and_permute(Some(&keep), None)?;
        Ok(ones.iter().any(|&o| o))
    }

    /// Merges adjacent axes that are contiguous in every buffer (never across `first_reduce`).
    pub fn simplify_merge_adjacent(&mut self) -> Result<(), KernelError> {
        let n = self.shape_len();
        if n == 0 {
            return Ok(());
        }
        let fr = self.first_reduce();
        let all: Vec<&ShapeTracker> = self.sts.iter().chain([&self.pad_st]).collect();
        let shapes: Vec<Vec<usize>> = all.iter().map(|s| s.shape().to_vec()).collect();
        let strides: Vec<Vec<Option<i64>>> = all.iter().map(|s| s.real_strides(false)).collect();
        let mut rets: Vec<Vec<(usize, Option<i64>)>> = shapes
            .iter()
            .zip(&strides)
            .map(|(s, st)| vec![(s[0], st[0])])
            .collect();
        for i in 1..n {
            let mergeable = i != fr
                && shapes
                    .iter()
                    .zip(&strides)
                    .zip(&rets)
                    .all(|((s, st), ret)| {
                        let (si, sti, last) = (s[i] as i64, st[i], ret.last().expect("nonempty").1);
                        match sti {
                            None => false,
                            Some(0) => last == Some(0),
                            Some(x) => last == Some(si * x),
                        }
                    });
            for (j, ret) in rets.iter_mut().enumerate() {
                if mergeable {
                    let last = ret.last_mut().expect("nonempty");
                    *last = (last.0 * shapes[j][i], strides[j][i]);
                } else {
                    ret.push((shapes[j][i], strides[j][i]));
                }
            }
        }
        for (i, ret) in rets.iter().enumerate() {
            let shape: Vec<usize> = ret.iter().map(|r| r.0).collect();
            let st = if i < self.sts.len() {
                &self.sts[i]
            } else {
                &self.pad_st
            };
            let st = st.reshape(&shape).map_err(|e| self.shape_err(e))?;
            match self.sts.get_mut(i) {
                Some(slot) => *slot = st,
                None => self.pad_st = st,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ops::{AluOp, BinaryOp};
    use crate::schedule::ast::LazyOp;

    /// A `[C, H, W]` image stored channels-last.
    fn channels_last(c: usize, h: usize, w: usize) -> ShapeTracker {
        ShapeTracker::from_shape(&[h, w, c])
            .permute(&[2, 0, 1])
            .unwrap()
    }

    /// out[c, h, w] = x[c, h, w] · s, out and x stored channels-last; `s` is `scale`'s view.
    fn scaled(scale: ShapeTracker, target: Target) -> Kernel {
        let (c, h, w) = (16, 5, 7);
        let x = LazyOp::load(1, DType::F32, channels_last(c, h, w));
        let s = LazyOp::load(2, DType::F32, scale);
        let mul = LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![x, s]);
        let out = LazyOp::store(0, channels_last(c, h, w), mul);
        Kernel::new(vec![out], target).unwrap()
    }

    #[test]
    fn loops_follow_the_stored_order_where_nothing_is_reused_along_it() {
        // A per-channel scale: every buffer moves along the channels, so the channels become
        // the innermost loop (the pixels, one run of memory, the outer one).
        let per_channel = || {
            ShapeTracker::from_shape(&[16, 1, 1])
                .expand(&[16, 5, 7])
                .unwrap()
        };
        assert_eq!(
            scaled(per_channel(), Target::host()).full_shape(),
            &[5 * 7, 16]
        );
        // Without vectors the graph's order stays.
        assert_eq!(
            scaled(per_channel(), Target::c()).full_shape(),
            &[16, 5 * 7]
        );
        // A scale per pixel is read the same for every channel: the channels stay outermost,
        // where a block of them reuses it.
        let per_pixel = ShapeTracker::from_shape(&[1, 5, 7])
            .expand(&[16, 5, 7])
            .unwrap();
        assert_eq!(scaled(per_pixel, Target::host()).full_shape()[0], 16);
    }
}

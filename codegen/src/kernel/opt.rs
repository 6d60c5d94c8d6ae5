//! Optimizations of a kernel's axes: each is validated, then applied by reshaping and
//! permuting every buffer's view. A bad opt is an error naming the kernel, never a panic.

use super::{Kernel, KernelError};
use crate::ops::{AluOp, BinaryOp, ReduceOp, TernaryOp, UnaryOp};
use crate::schedule::ast::Op;
use std::fmt;

/// The kinds of optimization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OptOp {
    /// Split a global axis and make the inner part a local (work-group) axis.
    Local,
    /// Split a reduce axis and reduce the inner part across threads in local memory.
    Group,
    /// Like `Group`, but the outer part goes to the threads.
    GroupTop,
    /// Unroll part of a reduce axis.
    Unroll,
    /// Unroll 4 of a reduce axis of int8 products into packed dot products (on targets that
    /// have them): the axis must be contiguous and unmasked in both operands.
    Dot,
    /// Compute several outputs of a global axis per thread/iteration.
    Upcast,
    /// Pad an axis up to a multiple of `amt` (masked).
    PadTo,
    /// Use no local dims at all (ids become `idx`).
    NoLocals,
    /// Split the loops along which some view is masked into a border-free interior and the
    /// borders around it (on targets without threads; see [`super::interior`]).
    Interior,
}

/// One optimization: what, on which axis (relative to its region), by how much (0 = the whole
/// axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Opt {
    pub op: OptOp,
    pub axis: Option<usize>,
    pub amt: usize,
}

impl Opt {
    pub fn new(op: OptOp, axis: usize, amt: usize) -> Self {
        Opt {
            op,
            axis: Some(axis),
            amt,
        }
    }

    /// INTERIOR, which takes no axis.
    pub fn interior() -> Self {
        Opt {
            op: OptOp::Interior,
            axis: None,
            amt: 0,
        }
    }

    /// The absolute axis this opt acts on in `k`.
    pub fn real_axis(&self, k: &Kernel) -> Option<usize> {
        let a = self.axis?;
        Some(match self.op {
            OptOp::Unroll | OptOp::Dot => k.first_reduce() + a,
            OptOp::Group | OptOp::GroupTop => k.first_reduce() + k.group_for_reduces + a,
            _ => a,
        })
    }
}

impl fmt::Display for Opt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.axis {
            Some(a) => write!(f, "{:?}(axis={a}, amt={})", self.op, self.amt),
            None => write!(f, "{:?}", self.op),
        }
    }
}

/// Ops that keep 0 at 0, so a SUM over a zero-padded axis is unchanged.
fn pad_safe(op: &Op) -> bool {
    match op {
        Op::Alu(a) => matches!(
            a,
            AluOp::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Max)
                | AluOp::Unary(UnaryOp::Neg | UnaryOp::Sqrt | UnaryOp::Sin)
                | AluOp::Ternary(TernaryOp::MulAcc)
        ),
        _ => true,
    }
}

impl Kernel {
    fn invalid(&self, opt: Opt, reason: impl Into<String>) -> KernelError {
        KernelError::InvalidOpt {
            kernel: self.label(),
            opt,
            reason: reason.into(),
        }
    }

    /// Applies `opt`, or returns why it does not apply (the kernel is then unchanged).
    pub fn apply_opt(&mut self, opt: Opt) -> Result<(), KernelError> {
        let mut trial = self.clone();
        trial.apply_opt_in_place(opt)?;
        *self = trial;
        Ok(())
    }

    /// Ok when `ok`, else the error that `opt` does not apply, for `why`.
    fn require(&self, opt: Opt, ok: bool, why: impl Into<String>) -> Result<(), KernelError> {
        if ok {
            Ok(())
        } else {
            Err(self.invalid(opt, why))
        }
    }

    fn apply_opt_in_place(&mut self, opt: Opt) -> Result<(), KernelError> {
        let (axis, amt) = self.opt_axis_and_amount(opt)?;
        self.check_local_memory(opt, amt)?;
        let needs_axis = || self.invalid(opt, "needs an axis");
        match opt.op {
            OptOp::Local => self.apply_local(opt, axis.ok_or_else(needs_axis)?, amt)?,
            OptOp::Group | OptOp::GroupTop => {
                self.apply_group(opt, axis.ok_or_else(needs_axis)?, amt)?
            }
            OptOp::Unroll => self.apply_unroll(opt, axis.ok_or_else(needs_axis)?, amt)?,
            OptOp::Dot => self.apply_dot(opt, axis.ok_or_else(needs_axis)?, amt)?,
            OptOp::Upcast => self.apply_upcast(opt, axis.ok_or_else(needs_axis)?, amt)?,
            OptOp::NoLocals => self.apply_no_locals(opt)?,
            OptOp::Interior => self.apply_interior(opt)?,
            OptOp::PadTo => self.pad_to(opt, axis, amt)?,
        }
        self.applied_opts.push(opt);
        self.simplify_ones()?;
        // Known once the dot product is applied: where its pairs fill vector lanes.
        self.require(
            opt,
            opt.op != OptOp::Dot || self.target.lane_dot == 0 || self.dots_fill_lanes(),
            "each vector lane's pairs need one operand shared by the lanes and a weight stored \
             with each lane's pair side by side",
        )
    }

    /// The absolute axis `opt` acts on (if any) and its amount (the whole axis for 0), checked
    /// against the kernel's axes and whether it uses locals.
    fn opt_axis_and_amount(&self, opt: Opt) -> Result<(Option<usize>, usize), KernelError> {
        let locals = matches!(opt.op, OptOp::Local | OptOp::Group | OptOp::GroupTop);
        self.require(
            opt,
            !(self.dont_use_locals && locals),
            "the kernel does not use locals",
        )?;
        let axis = match opt.real_axis(self) {
            Some(a) if a >= self.shape_len() => {
                return Err(KernelError::AxisOutOfRange {
                    kernel: self.label(),
                    opt,
                    axis: a,
                    dims: self.shape_len(),
                })
            }
            a => a,
        };
        let amt = match axis {
            Some(a) if opt.amt == 0 => self.full_shape()[a],
            _ => opt.amt,
        };
        if let Some(a) = axis {
            self.require(
                opt,
                amt > 1,
                "an amount of 1 (or a size-1 axis) does nothing",
            )?;
            if opt.op != OptOp::PadTo {
                self.require(
                    opt,
                    self.full_shape()[a].is_multiple_of(amt),
                    "the amount does not divide the axis",
                )?;
            }
        }
        Ok((axis, amt))
    }

    /// On a target with local memory, a reduce kernel's grouped accumulators after `opt` must
    /// fit in it.
    fn check_local_memory(&self, opt: Opt, amt: usize) -> Result<(), KernelError> {
        let grouping = matches!(opt.op, OptOp::Group | OptOp::GroupTop)
            || (self.group_for_reduces > 0 && !matches!(opt.op, OptOp::NoLocals | OptOp::PadTo));
        if self.reduceops.is_empty() || !self.target.has_shared || !grouping {
            return Ok(());
        }
        let acc_sz = self.reduceops[0].dtype().size();
        let start = self.shape_len() - self.upcasted;
        let upcast_sz: usize = (start..self.shape_len())
            .filter(|&i| self.full_shape()[i] == self.output_shape()[i])
            .map(|i| self.full_shape()[i])
            .product();
        let fr = self.first_reduce();
        let local_sz: usize = self.full_shape()[fr - self.local_dims..fr + self.group_for_reduces]
            .iter()
            .product();
        let smem = amt * acc_sz * upcast_sz * local_sz;
        self.require(
            opt,
            smem <= self.target.shared_max,
            format!(
                "needs {smem} bytes of local memory, the limit is {}",
                self.target.shared_max
            ),
        )
    }

    /// LOCAL: the inner `amt` of global axis `a` becomes a local axis.
    fn apply_local(&mut self, opt: Opt, a: usize, amt: usize) -> Result<(), KernelError> {
        self.require(opt, self.target.has_local, "the target has no local dims")?;
        self.require(opt, a < self.global_dims(), "LOCAL is for global axes")?;
        let fr = self.first_reduce();
        self.shift_to(a, amt, false, Some(fr))?;
        self.local_dims += 1;
        Ok(())
    }

    /// GROUP / GROUPTOP: `amt` of reduce axis `a` is reduced across threads in local memory.
    fn apply_group(&mut self, opt: Opt, a: usize, amt: usize) -> Result<(), KernelError> {
        self.require(
            opt,
            self.target.has_local && self.target.has_shared,
            "the target has no local memory",
        )?;
        let fr = self.first_reduce();
        let in_reduce = a >= fr + self.group_for_reduces && a < self.shape_len() - self.upcasted;
        self.require(opt, in_reduce, "GROUP is for reduce axes")?;
        self.shift_to(
            a,
            amt,
            opt.op == OptOp::GroupTop,
            Some(fr + self.group_for_reduces),
        )?;
        self.group_for_reduces += 1;
        Ok(())
    }

    /// UNROLL: `amt` of reduce axis `a` is unrolled (upcast).
    fn apply_unroll(&mut self, opt: Opt, a: usize, amt: usize) -> Result<(), KernelError> {
        self.require(
            opt,
            a < self.shape_len() - self.upcasted,
            "the axis is already upcast",
        )?;
        self.require(opt, amt <= 32, "unrolling more than 32 is not allowed")?;
        let fr = self.first_reduce();
        if self.full_shape()[a] == amt && a == fr {
            self.local_dims += 1;
        }
        if self.full_shape()[a] == amt && a < fr + self.group_for_reduces {
            self.group_for_reduces -= 1;
        }
        self.shift_to(a, amt, false, None)?;
        self.upcast(opt)
    }

    /// DOT: UNROLL of 4 (16 on a target with Helium's dot products, 2 in each vector lane on
    /// one with [`crate::target::Target::lane_dot`]), whose lanes the linearizer sums as
    /// packed dot products ([`Kernel::packed_dot_axis`]).
    fn apply_dot(&mut self, opt: Opt, a: usize, amt: usize) -> Result<(), KernelError> {
        let widths = self.target.dot_widths();
        self.require(
            opt,
            !widths.is_empty(),
            "the target has no packed dot products",
        )?;
        self.require(
            opt,
            widths.contains(&amt),
            format!("a packed dot product of this target takes {widths:?} lanes"),
        )?;
        let once = !self.applied_opts.iter().any(|o| o.op == OptOp::Dot);
        self.require(opt, once, "the kernel already has a packed dot product")?;
        let operands = self.dot_operands().is_some();
        self.require(
            opt,
            operands,
            "the reduce is not a sum of int8 (or int16) products in i32",
        )?;
        self.apply_unroll(opt, a, amt)?;
        let contiguous = self.contiguous_dot_axis(amt);
        self.require(
            opt,
            contiguous.is_some(),
            "the axis is not contiguous and unmasked in both operands",
        )?;
        self.require(
            opt,
            contiguous.is_some_and(|axis| self.lanes_meet(axis)),
            "int8 and int16 lanes meet only through a weight whose fours can be reordered",
        )
    }

    /// UPCAST: each thread computes `amt` outputs of non-reduce axis `a`.
    fn apply_upcast(&mut self, opt: Opt, a: usize, amt: usize) -> Result<(), KernelError> {
        self.require(
            opt,
            a < self.first_reduce(),
            "UPCAST is for non-reduce axes",
        )?;
        // A target's vector lanes may be more than 8 (16 floats in 512 bits).
        let most = 8.max(self.target.simd_lanes as usize);
        self.require(opt, amt <= most, "upcasting more than 8 is not allowed")?;
        self.shift_to(a, amt, false, None)?;
        self.upcast(opt)
    }

    /// NOLOCALS: the kernel uses no local dims.
    fn apply_no_locals(&mut self, opt: Opt) -> Result<(), KernelError> {
        self.require(
            opt,
            self.target.has_local && !self.dont_use_locals,
            "the target has no locals to drop",
        )?;
        self.require(
            opt,
            self.local_dims == 0 && self.group_for_reduces == 0,
            "locals are already in use",
        )?;
        self.dont_use_locals = true;
        Ok(())
    }

    /// INTERIOR: the loops are split where their masks stop (at linearization, so that later
    /// opts move the split with them).
    fn apply_interior(&mut self, opt: Opt) -> Result<(), KernelError> {
        self.require(opt, !self.target.has_local, "the target has threads")?;
        self.require(opt, !self.interior, "the kernel is already split")?;
        let splits = !self.interior_splits().is_empty();
        self.require(
            opt,
            splits,
            "no loop axis has a mask that holds on an interior range",
        )?;
        self.interior = true;
        Ok(())
    }

    fn pad_to(&mut self, opt: Opt, axis: Option<usize>, amt: usize) -> Result<(), KernelError> {
        let a = axis.ok_or_else(|| self.invalid(opt, "needs an axis"))?;
        if a >= self.shape_len() - self.upcasted {
            return Err(self.invalid(opt, "cannot pad an upcast axis"));
        }
        if self.first_reduce() <= a {
            let safe = self.reduceops.iter().all(|r| {
                matches!(r.op(), Op::Reduce(ReduceOp::Sum, _))
                    && r.src()[0].lazyops().iter().all(|x| pad_safe(x.op()))
            });
            if !safe {
                return Err(self.invalid(opt, "padding this reduce would change its result"));
            }
        }
        let mut padded = false;
        for i in 0..self.sts.len() {
            let size = self.sts[i].shape()[a];
            if size == 1 {
                continue;
            }
            if size <= amt / 4 {
                return Err(self.invalid(
                    opt,
                    format!("padding {size} to {amt} is more than 4x the work"),
                ));
            }
            let extra = size.div_ceil(amt) * amt - size;
            if extra > 0 {
                let mut arg = vec![(0, 0); self.shape_len()];
                arg[a] = (0, extra);
                self.sts[i] = self.sts[i].pad(&arg).map_err(|e| self.shape_err(e))?;
                padded = true;
            }
        }
        if !padded {
            return Err(self.invalid(opt, "the axis is already a multiple of the amount"));
        }
        let size = self.pad_st.shape()[a];
        let mut arg = vec![(0, 0); self.shape_len()];
        arg[a] = (0, size.div_ceil(amt) * amt - size);
        self.pad_st = self.pad_st.pad(&arg).map_err(|e| self.shape_err(e))?;
        Ok(())
    }

    fn upcast(&mut self, opt: Opt) -> Result<(), KernelError> {
        if self.full_shape().last() == Some(&1) {
            return Err(self.invalid(opt, "cannot upcast an axis of size 1"));
        }
        self.upcasted += 1;
        Ok(())
    }

    /// Splits `axis` into (size/amount, amount) — or (amount, size/amount) when `top` — and
    /// moves the `amount` part to just before `insert_before` (default: the end).
    pub fn shift_to(
        &mut self,
        axis: usize,
        amount: usize,
        top: bool,
        insert_before: Option<usize>,
    ) -> Result<(), KernelError> {
        let n = self.shape_len();
        let mut insert_before = insert_before.unwrap_or(n);
        let move_axis = if top { axis } else { axis + 1 };
        if move_axis < insert_before {
            insert_before += 1;
        }
        let split = move |x: &[usize]| -> Vec<usize> {
            let mut v = x[..axis].to_vec();
            if x[axis] > 1 {
                if top {
                    v.extend([amount, x[axis] / amount]);
                } else {
                    v.extend([x[axis] / amount, amount]);
                }
            } else {
                v.extend([1, 1]);
            }
            v.extend_from_slice(&x[axis + 1..]);
            v
        };
        let mut perm: Vec<usize> = (0..insert_before).filter(|&i| i != move_axis).collect();
        perm.push(move_axis);
        perm.extend((insert_before..=n).filter(|&i| i != move_axis));
        self.reshape_and_permute(Some(&split), Some(&perm))
    }
}

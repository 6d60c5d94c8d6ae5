//! Hand-coded optimizations for GPU targets: a few rules, each applied through
//! [`Kernel::apply_opt`] (so every opt is validated the same way as any other).
//!
//! 1. A reduce with few outputs and a long reduce axis is split across the threads of a
//!    work-group (`GROUP` when the axis is contiguous in memory, so that neighbouring threads
//!    read neighbouring elements, `GROUPTOP` otherwise) and finished in local memory.
//! 2. Otherwise, outputs that share inputs (axes some buffer broadcasts, as in a matmul or a
//!    convolution) are computed several per thread (`UPCAST`, up to two different axes: a tile),
//!    which also lets contiguous loads and stores become vectors; elementwise kernels upcast
//!    their contiguous axis.
//! 3. A short innermost reduce loop is unrolled (`UNROLL`).
//! 4. The remaining global axes get local dims (`LOCAL`), innermost axis first, up to the
//!    device's threads per work-group.
//!
//! Each rule's result is checked with the pipeline's [`Lowers`] (whether the kernel still
//! linearizes): a rule whose opts cannot be mapped onto the device's sizes is undone.

use super::Lowers;
use crate::kernel::{Kernel, Opt, OptOp};

/// Outputs below which a reduce is worth splitting across threads.
const FEW_OUTPUTS: usize = 2048;
/// Threads per work-group the heuristic aims for (fewer when the device allows fewer).
const THREADS_TARGET: usize = 128;
/// Most outputs one thread computes.
const UPCAST_MAX: usize = 16;

/// Applies the GPU opts to `k` (which must target a device with local dims); returns the opts
/// applied. A target without threads is left alone.
pub fn optimize(k: &mut Kernel, lowers: Lowers<'_>) -> Vec<Opt> {
    if !k.target.has_local {
        return Vec::new();
    }
    let budget = threads_budget(k);
    let grouped = checked(k, lowers, |k| group_reduce(k, budget));
    if !grouped {
        checked(k, lowers, upcast);
    }
    checked(k, lowers, unroll);
    let left = budget / group_threads(k).max(1);
    checked(k, lowers, |k| add_locals(k, left));
    k.applied_opts.clone()
}

/// Runs one rule; undoes it when the kernel no longer lowers (its sizes do not fit the
/// device). Returns whether the rule changed the kernel.
fn checked(k: &mut Kernel, lowers: Lowers<'_>, rule: impl FnOnce(&mut Kernel) -> bool) -> bool {
    let before = k.clone();
    if !rule(k) {
        return false;
    }
    if !lowers(k) {
        *k = before;
        return false;
    }
    true
}

/// Threads one work-group may have on this target.
fn threads_budget(k: &Kernel) -> usize {
    let axis_max: usize = k
        .target
        .local_max
        .as_ref()
        .map_or(THREADS_TARGET, |m| m.iter().product());
    let total = k.target.local_threads_max.unwrap_or(axis_max);
    total.min(axis_max).min(THREADS_TARGET)
}

fn try_opt(k: &mut Kernel, op: OptOp, axis: usize, amt: usize) -> bool {
    k.apply_opt(Opt::new(op, axis, amt)).is_ok()
}

/// The size of each axis, and whether any buffer reads it with the given stride.
fn axis_has_stride(k: &Kernel, axis: usize, stride: i64) -> bool {
    k.sts
        .iter()
        .any(|st| st.real_strides(false).get(axis).copied().flatten() == Some(stride))
}

/// Rule 1: few outputs and a long first reduce axis → a grouped reduce.
fn group_reduce(k: &mut Kernel, budget: usize) -> bool {
    if k.reduceops.is_empty() || !k.target.has_shared {
        return false;
    }
    let fr = k.first_reduce();
    let outputs: usize = k.full_shape()[..fr].iter().product();
    if outputs > FEW_OUTPUTS || fr >= k.shape_len() - k.upcasted {
        return false;
    }
    let size = k.full_shape()[fr];
    let axis_limit = k.target.local_max.as_ref().map_or(budget, |m| m[0]);
    let contiguous = k
        .earlybufs
        .iter()
        .flatten()
        .any(|&b| k.sts[b].real_strides(false)[fr] == Some(1));
    let op = if contiguous {
        OptOp::Group
    } else {
        OptOp::GroupTop
    };
    [256, 128, 64, 32, 16, 8]
        .into_iter()
        .filter(|&sz| sz <= budget && sz <= axis_limit && size.is_multiple_of(sz))
        .any(|sz| try_opt(k, op, 0, sz))
}

/// Rule 2: several outputs per thread on axes whose inputs are shared.
fn upcast(k: &mut Kernel) -> bool {
    let reduce = !k.reduceops.is_empty();
    let mut product = 1;
    // Different axes each time: a 4 × 4 tile of a matmul loads 4 + 4 vectors, not 1 + 16.
    let mut taken: Vec<usize> = Vec::new();
    for _ in 0..2 {
        let gd = k.global_dims();
        let pick = (0..gd).rev().filter(|a| !taken.contains(a)).find(|&a| {
            let size = k.full_shape()[a];
            size.is_multiple_of(4)
                && size > 4
                && if reduce {
                    axis_has_stride(k, a, 0)
                } else {
                    a == gd - 1 && axis_has_stride(k, a, 1)
                }
        });
        match pick {
            Some(a) if product * 4 <= UPCAST_MAX && try_opt(k, OptOp::Upcast, a, 4) => {
                product *= 4;
                taken.push(a);
            }
            _ => break,
        }
        if !reduce {
            break;
        }
    }
    product > 1
}

/// Rule 3: unroll a short innermost reduce loop (whole), or a long one by 4.
fn unroll(k: &mut Kernel) -> bool {
    let (fr, gfr) = (k.first_reduce(), k.group_for_reduces);
    let last = k.shape_len() - k.upcasted;
    if k.reduceops.is_empty() || last <= fr + gfr {
        return false;
    }
    let axis = last - 1;
    if k.full_shape()[axis] == k.output_shape()[axis] {
        return false;
    }
    let size = k.full_shape()[axis];
    let amt = if size <= 8 { 0 } else { 4 };
    (amt == 0 || size.is_multiple_of(4)) && try_opt(k, OptOp::Unroll, axis - fr, amt)
}

/// Threads a grouped reduce already uses per work-group.
fn group_threads(k: &Kernel) -> usize {
    let fr = k.first_reduce();
    k.full_shape()[fr..fr + k.group_for_reduces]
        .iter()
        .product()
}

/// Rule 4: local dims on the global axes, innermost first, within `budget` threads.
fn add_locals(k: &mut Kernel, mut budget: usize) -> bool {
    let limits = k
        .target
        .local_max
        .clone()
        .unwrap_or_else(|| vec![budget; 3]);
    let mut added = false;
    for a in (0..k.global_dims()).rev() {
        let cap = budget.min(limits[k.local_dims.min(limits.len() - 1)]);
        let size = k.full_shape()[a];
        let amt = [32, 16, 8, 4, 2]
            .into_iter()
            .find(|&x| x <= cap && size.is_multiple_of(x));
        if let Some(amt) = amt {
            if try_opt(k, OptOp::Local, a, amt) {
                budget /= amt;
                added = true;
            }
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ops::{AluOp, BinaryOp, ReduceOp};
    use crate::schedule::ast::LazyOp;
    use crate::shape::ShapeTracker;
    use crate::target::{DeviceLimits, Target};

    /// The pipeline's check: the kernel linearizes.
    fn lowers(k: &Kernel) -> bool {
        crate::linearize::linearize(k).is_ok()
    }

    /// out[m, n] = sum_k a[m, k] * b[k, n], as a kernel of shape (m, n, k).
    fn matmul(m: usize, n: usize, k: usize) -> Kernel {
        let a = ShapeTracker::from_shape(&[m, k])
            .reshape(&[m, 1, k])
            .and_then(|s| s.expand(&[m, n, k]))
            .unwrap();
        let b = ShapeTracker::from_shape(&[k, n])
            .permute(&[1, 0])
            .and_then(|s| s.reshape(&[1, n, k]))
            .and_then(|s| s.expand(&[m, n, k]))
            .unwrap();
        let a = LazyOp::load(1, DType::F32, a);
        let b = LazyOp::load(2, DType::F32, b);
        let mul = LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![a, b]);
        let r = LazyOp::reduce(ReduceOp::Sum, vec![2], mul);
        let out = LazyOp::store(0, ShapeTracker::from_shape(&[m, n, 1]), r);
        Kernel::new(vec![out], Target::opencl(&DeviceLimits::opencl_default())).unwrap()
    }

    #[test]
    fn a_large_matmul_gets_upcasts_and_local_dims() {
        let mut k = matmul(64, 64, 32);
        let opts = optimize(&mut k, &lowers);
        let has = |op| opts.iter().any(|o| o.op == op);
        assert!(has(OptOp::Upcast) && has(OptOp::Local), "{opts:?}");
        assert!(k.local_dims > 0 && k.upcasted > 0);
    }

    #[test]
    fn a_reduce_with_few_outputs_is_grouped() {
        let mut k = matmul(2, 2, 1024);
        let opts = optimize(&mut k, &lowers);
        assert!(k.group_for_reduces > 0, "{opts:?}");
    }

    #[test]
    fn a_target_without_threads_is_left_alone() {
        let mut k = matmul(8, 8, 8);
        k.target = Target::c();
        assert!(optimize(&mut k, &lowers).is_empty());
    }
}

//! Activations stored as int16 for packed dot products.
//!
//! On a core with the DSP extension a packed dot product multiplies pairs of int16 values
//! (`SMLAD`), so an int8 operand is unpacked into pairs (`SXTB16`) at every use: each word of a
//! convolution's activations is unpacked again for every output channel it meets. Where the
//! target asks for it ([`Target::wide_activations`]), each int8 intermediate that a dot
//! product reads is stored as int16 instead: the kernel that computes it writes each value
//! widened once, and the dot products load its pairs as they are. The values are the same;
//! the buffer takes twice the bytes, which the arena planner counts.

use super::ast::{LazyOp, MemBuffer, Op};
use super::Schedule;
use crate::dtype::DType;
use crate::target::Target;
use std::collections::{HashMap, HashSet};

/// The lanes of a packed dot product: a reduce axis that a buffer must read in runs of four.
const DOT_LANES: usize = 4;

/// Stores as int16 each int8 intermediate of `s` that some kernel reads as an int8 factor of
/// a sum of products in `i32` along a reduce axis of fours, when `target` asks for it. Only
/// buffers whose storage is the compiler's to choose ([`Schedule::free_storage`]) change.
pub fn widen_dot_activations(s: &mut Schedule, target: &Target) {
    if !target.wide_activations {
        return;
    }
    let factors = dot_factor_buffers(s);
    for b in 0..s.buffers.len() {
        if !s.free_storage(b) || s.buffers[b].dtype != DType::I8 || !factors.contains(&b) {
            continue;
        }
        s.buffers[b].dtype = DType::I16;
        for item in &mut s.items {
            if let Some(at) = item.bufs.iter().position(|x| x.0 as usize == b) {
                let mut done = HashMap::new();
                item.ast = (item.ast.iter())
                    .map(|op| stored_as_i16(op, at as u32, &mut done))
                    .collect();
            }
        }
    }
}

/// The buffers of `s` that some kernel reads as a dot product's operand ([`dot_factors`]).
fn dot_factor_buffers(s: &Schedule) -> HashSet<usize> {
    let mut found = HashSet::new();
    for item in &s.items {
        for st in &item.ast {
            found.extend(dot_factors(st).into_iter().map(|a| item.bufs[a].0 as usize));
        }
    }
    found
}

/// The buffers (by position in the kernel's buffers) that the reduces under `root` read as
/// an int8 factor of a sum of products in `i32`, along a reduce axis of a multiple of four
/// elements that the read steps through one element at a time: the operands a packed dot
/// product can take.
fn dot_factors(root: &LazyOp) -> Vec<usize> {
    let mut found = Vec::new();
    for op in root.lazyops() {
        let (Op::Reduce(_, axes), Some(loads)) = (op.op(), op.summed_product_loads()) else {
            continue;
        };
        for m in loads.into_iter().flatten() {
            let shape = m.st.shape();
            let unit = m.st.unit_stride_axes(false);
            let packs = (axes.iter()).any(|&a| unit.contains(&a) && shape[a] % DOT_LANES == 0);
            if m.dtype == DType::I8 && packs {
                found.push(m.idx.0 as usize);
            }
        }
    }
    found
}

/// `op` with buffer `idx` stored as int16: each store writes its value cast to int16, each
/// load reads int16, cast back to int8 except where the load is at once cast to `i32` (the
/// dot products' factors), which reads the int16 value as it is. Shared subtrees stay shared.
fn stored_as_i16(op: &LazyOp, idx: u32, done: &mut HashMap<usize, LazyOp>) -> LazyOp {
    let key = op.key() as usize;
    if let Some(x) = done.get(&key) {
        return x.clone();
    }
    let wide_load = |m: &MemBuffer| LazyOp::load(m.idx.0, DType::I16, m.st.clone());
    let cast_read = match (op.op(), op.src()) {
        (Op::Cast(DType::I32), [load]) => match load.op() {
            Op::Load(m) if m.idx.0 == idx => Some(m),
            _ => None,
        },
        _ => None,
    };
    let out = match (cast_read, op.op(), op.src()) {
        (Some(m), ..) => LazyOp::cast(DType::I32, wide_load(m)),
        (None, Op::Load(m), _) if m.idx.0 == idx => LazyOp::cast(DType::I8, wide_load(m)),
        (None, Op::Store(m), [value]) if m.idx.0 == idx => {
            let value = stored_as_i16(value, idx, done);
            LazyOp::store(m.idx.0, m.st.clone(), LazyOp::cast(DType::I16, value))
        }
        _ => {
            let src: Vec<LazyOp> = (op.src().iter())
                .map(|s| stored_as_i16(s, idx, done))
                .collect();
            match src.iter().zip(op.src()).all(|(a, b)| a.key() == b.key()) {
                true => op.clone(),
                false => op.with_src(src),
            }
        }
    };
    done.insert(key, out.clone());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{AluOp, BinaryOp, ReduceOp};
    use crate::shape::ShapeTracker;

    fn dot(a_dtype: DType, reduce: usize) -> LazyOp {
        let st = |s: &[usize]| ShapeTracker::from_shape(s);
        let x = LazyOp::cast(DType::I32, LazyOp::load(1, a_dtype, st(&[1, reduce])));
        let w = LazyOp::cast(DType::I32, LazyOp::load(2, DType::I8, st(&[1, reduce])));
        let p = LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![x, w]);
        let sum = LazyOp::reduce(ReduceOp::Sum, vec![1], p);
        LazyOp::store(0, st(&[1, 1]), sum)
    }

    #[test]
    fn the_factors_of_a_sum_of_int8_products_along_fours_are_dot_operands() {
        assert_eq!(dot_factors(&dot(DType::I8, 16)), vec![1, 2]);
        // Not a multiple of four: no word holds four lanes of it.
        assert!(dot_factors(&dot(DType::I8, 18)).is_empty());
        // Already wider: only the int8 weight.
        assert_eq!(dot_factors(&dot(DType::I16, 16)), vec![2]);
    }

    #[test]
    fn a_widened_buffer_is_stored_cast_and_read_back_without_a_cast_into_a_dot() {
        let st = ShapeTracker::from_shape(&[1, 16]);
        let produce = LazyOp::store(1, st.clone(), LazyOp::load(0, DType::I8, st.clone()));
        let mut done = HashMap::new();
        let stored = stored_as_i16(&produce, 1, &mut done);
        assert_eq!(stored.dtype(), DType::I16);
        assert_eq!(*stored.src()[0].op(), Op::Cast(DType::I16));
        let read = stored_as_i16(&dot(DType::I8, 16), 1, &mut HashMap::new());
        assert_eq!(dot_factors(&read), vec![2], "buffer 1 is int16 now");
        let loads: Vec<DType> = (read.lazyops().iter())
            .filter_map(|o| match o.op() {
                Op::Load(m) => Some(m.dtype),
                _ => None,
            })
            .collect();
        assert!(loads.contains(&DType::I16), "{loads:?}");
        // Any other read is cast back to int8, so the kernel computes what it did.
        let other = LazyOp::store(0, st.clone(), LazyOp::load(1, DType::I8, st));
        let other = stored_as_i16(&other, 1, &mut HashMap::new());
        assert_eq!(*other.src()[0].op(), Op::Cast(DType::I8));
    }
}

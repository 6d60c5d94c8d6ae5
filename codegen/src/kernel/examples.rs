//! Small kernels for tests and explanations.

use super::Kernel;
use crate::dtype::DType;
use crate::ops::{AluOp, BinaryOp, ReduceOp};
use crate::schedule::ast::LazyOp;
use crate::shape::ShapeTracker;
use crate::target::Target;

/// `out[i] = sum_j a[i, j] * b[j]` for a row-major `rows`×`cols` matrix `a` (buffer 1) and a
/// vector `b` (buffer 2), for `target`.
pub fn matvec(rows: usize, cols: usize, target: Target) -> Kernel {
    let a = ShapeTracker::from_shape(&[rows, cols]);
    let b = ShapeTracker::from_shape(&[1, cols])
        .expand(&[rows, cols])
        .expect("a row broadcast to the matrix");
    let mul = LazyOp::alu(
        AluOp::Binary(BinaryOp::Mul),
        vec![
            LazyOp::load(1, DType::F32, a),
            LazyOp::load(2, DType::F32, b),
        ],
    );
    let sum = LazyOp::reduce(ReduceOp::Sum, vec![1], mul);
    let out = LazyOp::store(0, ShapeTracker::from_shape(&[rows, 1]), sum);
    Kernel::new(vec![out], target).expect("a valid kernel")
}

/// [`matvec`] of int8 values summed in `i32`: `out[i] = Σ_j i32(a[i, j]) · i32(b[j])`, the
/// shape of a quantized dense layer.
pub fn matvec_i8(rows: usize, cols: usize, target: Target) -> Kernel {
    let a = ShapeTracker::from_shape(&[rows, cols]);
    let b = ShapeTracker::from_shape(&[1, cols])
        .expand(&[rows, cols])
        .expect("a row broadcast to the matrix");
    let widened = |buf, st| LazyOp::cast(DType::I32, LazyOp::load(buf, DType::I8, st));
    let mul = LazyOp::alu(
        AluOp::Binary(BinaryOp::Mul),
        vec![widened(1, a), widened(2, b)],
    );
    let sum = LazyOp::reduce(ReduceOp::Sum, vec![1], mul);
    let out = LazyOp::store(0, ShapeTracker::from_shape(&[rows, 1]), sum);
    Kernel::new(vec![out], target).expect("a valid kernel")
}

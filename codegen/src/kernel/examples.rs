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
    matvec_int(rows, cols, [DType::I8, DType::I8], target)
}

/// [`matvec_i8`] with the matrix and the vector of the integer types `dtypes` (int16
/// activations, say, as [`Target::wide_activations`] stores them).
pub fn matvec_int(rows: usize, cols: usize, dtypes: [DType; 2], target: Target) -> Kernel {
    let a = ShapeTracker::from_shape(&[rows, cols]);
    let b = ShapeTracker::from_shape(&[1, cols])
        .expand(&[rows, cols])
        .expect("a row broadcast to the matrix");
    let widened =
        |buf, st| LazyOp::cast(DType::I32, LazyOp::load(buf, dtypes[buf as usize - 1], st));
    let mul = LazyOp::alu(
        AluOp::Binary(BinaryOp::Mul),
        vec![widened(1, a), widened(2, b)],
    );
    let sum = LazyOp::reduce(ReduceOp::Sum, vec![1], mul);
    let out = LazyOp::store(0, ShapeTracker::from_shape(&[rows, 1]), sum);
    Kernel::new(vec![out], target).expect("a valid kernel")
}

/// The kernel of a padded 2-d convolution, as the scheduler makes it: input `[1, cin, h, w]`,
/// weights `[cout, cin, k, k]` (buffer ids as the schedule numbers them), `pad` zeros on every
/// side, stride 1, for `target`.
pub fn conv2d(
    cin: usize,
    cout: usize,
    hw: [usize; 2],
    k: usize,
    pad: usize,
    target: Target,
) -> Kernel {
    let mut g = crate::graph::Graph::new();
    let x = g.input("x", DType::F32, &[1, cin, hw[0], hw[1]]);
    let n = cout * cin * k * k;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let w = crate::tensor::Tensor::from_f32(vec![cout, cin, k, k], &values).expect("a weight");
    let w = g.weight("w", w);
    let y = g
        .conv(&x, &w, None, &[1, 1], &[1, 1], &[(pad, pad), (pad, pad)], 1)
        .expect("a convolution");
    let s = crate::schedule::create_schedule(&g, &[y]).expect("a schedule");
    let item = s.items.last().expect("the convolution's kernel");
    Kernel::new(item.ast.clone(), target).expect("a valid kernel")
}

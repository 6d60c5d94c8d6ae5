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

/// `p` computes `matvec_i8(rows, cols)`'s sums exactly, on values at the ends of int8's
/// range, so that a sign lost in the packing would show.
#[cfg(test)]
pub fn assert_matvec_sums(p: &crate::render::Program, rows: usize, cols: usize) {
    let a: Vec<i64> = (0..rows * cols)
        .map(|i| (i as i64 * 37 % 256) - 128)
        .collect();
    let b: Vec<i64> = (0..cols).map(|j| 127 - (j as i64 * 53 % 256)).collect();
    let sums = run_matvec_i8(p, &a, &b);
    for r in 0..rows {
        let want: i64 = (0..cols).map(|j| a[r * cols + j] * b[j]).sum();
        assert_eq!(sums[r], want, "row {r}");
    }
}

/// The int32 sums `p`, a `matvec_i8` kernel, computes in the UOp interpreter from the int8
/// matrix `a` (in the order the kernel reads it) and vector `b`.
#[cfg(test)]
pub fn run_matvec_i8(p: &crate::render::Program, a: &[i64], b: &[i64]) -> Vec<i64> {
    use crate::dtype::Scalar;
    use crate::ops::ConstValue;
    use crate::uop::interp::{run, HostBuffer};
    use crate::uop::ArgId;
    use std::collections::HashMap;
    let ints = |v: &[i64]| HostBuffer {
        dtype: Scalar::I8,
        data: v.iter().map(|&x| ConstValue::Int(x)).collect(),
    };
    let rows = a.len() / b.len();
    let mut bufs = HashMap::new();
    bufs.insert(ArgId(0), HostBuffer::zeros(Scalar::I32, rows));
    bufs.insert(ArgId(1), ints(a));
    bufs.insert(ArgId(2), ints(b));
    run(&p.uops, &mut bufs, &HashMap::new()).unwrap();
    bufs[&ArgId(0)].data.iter().map(|v| v.as_i64()).collect()
}

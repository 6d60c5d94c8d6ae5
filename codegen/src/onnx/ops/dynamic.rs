//! Ops whose output length depends on the data: `NonZero`, and `Compress` on a condition known
//! only at run time. The output holds an upper bound of elements along its data-dependent
//! axis, the valid ones first and zeros after, and the importer adds the valid count as an
//! output of its own ([`Ctx::set_bounded`]). With its input known at compile time, each is
//! computed exactly instead.
//!
//! Kernels cannot write to a computed place, so the kept elements are gathered: element `i`
//! is kept as the `j`-th when it is kept and `j` kept elements come before it, and output `j`
//! sums the element that is. That costs `n²` per output row, so these take at most
//! [`MAX_ELEMENTS`] elements at run time.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, Lazy};
use crate::ops::ReduceOp;
use crate::tensor::Tensor;

pub(super) const OPS: &[(&str, OpBuilder)] = &[("NonZero", non_zero)];

type Out = Result<Vec<Value>, OpError>;

/// Most elements these ops select from at run time.
const MAX_ELEMENTS: usize = 4096;

/// The coordinates of the non-zero elements of the input, one row per axis, in row-major
/// order: `(rank, count)` `i64`.
fn non_zero(ctx: &mut Ctx) -> Out {
    if ctx.is_known(0) {
        let t = ctx.known(0)?;
        let shape = t.shape().to_vec();
        let hits: Vec<usize> = (t.values().enumerate())
            .filter(|(_, v)| v.as_f64() != 0.0)
            .map(|(i, _)| i)
            .collect();
        let mut coords = Vec::with_capacity(shape.len() * hits.len());
        for axis in 0..shape.len() {
            let stride: usize = shape[axis + 1..].iter().product();
            coords.extend(hits.iter().map(|&i| ((i / stride) % shape[axis]) as i64));
        }
        return Ok(vec![Value::ints(vec![shape.len(), hits.len()], &coords)?]);
    }
    let x = ctx.tensor(0)?;
    let shape = x.shape().to_vec();
    let n = checked_size(&shape, "NonZero")?;
    let mut coords = Vec::with_capacity(shape.len() * n);
    for axis in 0..shape.len() {
        let stride: usize = shape[axis + 1..].iter().product();
        coords.extend((0..n).map(|i| ((i / stride) % shape[axis]) as i64));
    }
    let coords = Tensor::from_i64(Scalar::I64, vec![shape.len(), n], &coords)?;
    let g = &mut *ctx.graph;
    let coords = g.weight("nonzero_coordinates", coords);
    let flat = x.reshape(&[n])?;
    let zero = g.const_exact(crate::ops::ConstValue::zero(x.dtype), x.dtype, &[n]);
    let keep = g.binary(crate::ops::BinaryOp::CmpNe, &flat, &zero)?;
    let (out, length) = compact(g, &keep, &coords)?;
    ctx.set_bounded(0, 1, length);
    Ok(vec![Value::Tensor(out)])
}

/// `Compress` on a condition known only at run time: the slices of `x` along `axis` (of the
/// flattened `x` without one) where the condition is non-zero.
pub(super) fn compress_at_run_time(ctx: &mut Ctx, x: Lazy, axis: usize) -> Out {
    let cond = ctx.tensor(1)?;
    let &[c] = cond.shape() else {
        return Err(invalid(format!("condition {:?} is not 1-D", cond.shape())));
    };
    let d = x.shape()[axis];
    if c > d {
        return Err(invalid(format!(
            "condition has {c} values for axis {axis} of size {d}"
        )));
    }
    checked_size(&[c], "Compress")?;
    let rank = x.shape().len();
    // The axis last, the condition's length of it, the other axes as rows.
    let mut order: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    order.push(axis);
    let moved = x.permute(&order)?;
    let mut kept: Vec<(usize, usize)> = moved.shape().iter().map(|&s| (0, s)).collect();
    kept[rank - 1] = (0, c);
    let moved = moved.shrink(&kept)?;
    let rows: usize = moved.shape()[..rank - 1].iter().product();
    let values = moved.reshape(&[rows, c])?;
    let g = &mut *ctx.graph;
    let zero = g.const_exact(crate::ops::ConstValue::zero(cond.dtype), cond.dtype, &[c]);
    let keep = g.binary(crate::ops::BinaryOp::CmpNe, &cond, &zero)?;
    let (out, length) = compact(g, &keep, &values)?;
    let mut shape: Vec<usize> = moved.shape()[..rank - 1].to_vec();
    shape.push(c);
    let mut back: Vec<usize> = (0..rank - 1).collect();
    back.insert(axis, rank - 1);
    let out = out.reshape(&shape)?.permute(&back)?;
    ctx.set_bounded(0, axis, length);
    Ok(vec![Value::Tensor(out)])
}

/// The elements of `shape`, if few enough to select from at run time.
fn checked_size(shape: &[usize], op: &str) -> Result<usize, OpError> {
    let n: usize = shape.iter().product();
    match n <= MAX_ELEMENTS {
        true => Ok(n),
        false => Err(OpError::Unsupported(format!(
            "{op} over {n} elements known only at run time (at most {MAX_ELEMENTS})"
        ))),
    }
}

/// The columns of `values` (rows, n) where `keep` (n booleans) holds, in order, then zeros;
/// and how many there are (an `i64` scalar).
fn compact(g: &mut Graph, keep: &Lazy, values: &Lazy) -> Result<(Lazy, Lazy), OpError> {
    use crate::ops::BinaryOp;
    let (rows, n) = (values.shape()[0], values.shape()[1]);
    let square = [n, n];
    let kept = g.cast(keep, DType::I64);
    let index = g.arange(n, DType::I64);
    let (i, j) = (
        index.reshape(&[n, 1])?.expand(&square)?,
        index.reshape(&[1, n])?.expand(&square)?,
    );
    // rank[i]: the kept elements before element i.
    let before = g.lt(&j, &i)?;
    let zero = g.const_exact(
        crate::ops::ConstValue::zero(DType::I64),
        DType::I64,
        &square,
    );
    let counted = g.where_(&before, &kept.reshape(&[1, n])?.expand(&square)?, &zero)?;
    let rank = g.reduce(ReduceOp::Sum, &counted, &[1])?.reshape(&[n])?;
    // picked[j, i]: element i is kept as the j-th.
    let is_j = g.eq(&rank.reshape(&[1, n])?.expand(&square)?, &i)?;
    let picked = g.binary(
        BinaryOp::And,
        &is_j,
        &keep.reshape(&[1, n])?.expand(&square)?,
    )?;
    // Booleans are summed as bytes.
    let dtype = values.dtype;
    let values = match dtype == DType::BOOL {
        true => g.cast(values, DType::U8),
        false => values.clone(),
    };
    let cube = [rows, n, n];
    let none = g.const_exact(
        crate::ops::ConstValue::zero(values.dtype),
        values.dtype,
        &cube,
    );
    let spread = values.reshape(&[rows, 1, n])?.expand(&cube)?;
    let chosen = g.where_(&picked.reshape(&[1, n, n])?.expand(&cube)?, &spread, &none)?;
    let out = g
        .reduce(ReduceOp::Sum, &chosen, &[2])?
        .reshape(&[rows, n])?;
    let out = g.cast(&out, dtype);
    let length = g.reduce(ReduceOp::Sum, &kept, &[0])?.reshape(&[])?;
    Ok((out, length))
}

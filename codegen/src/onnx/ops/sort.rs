//! TopK: the `k` largest (or smallest) elements along an axis and their indices, found by
//! ranking every element against every other (stable: equal values keep their order).

use super::ctx::{invalid, norm_axis, to_usize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::tensor::broadcast_to;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[("TopK", top_k)];

type Out = Result<Vec<Value>, OpError>;

fn top_k(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(2)?;
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let axis = norm_axis(ctx.attrs().int_or("axis", -1)?, rank, false)?;
    let largest = ctx.attrs().int_or("largest", 1)? != 0;
    let k = if ctx.opset < 10 {
        ctx.attrs().int("k")?
    } else {
        match ctx.ints(1)?.as_slice() {
            [k] => *k,
            other => return Err(invalid(format!("k must be one integer, not {other:?}"))),
        }
    };
    let k = to_usize(k, "k")?;
    let n = x.shape()[axis];
    if k > n {
        return Err(invalid(format!(
            "k = {k} is larger than axis {axis} of size {n}"
        )));
    }
    let (values, indices) = top_k_along(ctx.graph, &x, axis, k, largest)?;
    Ok(vec![Value::Tensor(values), Value::Tensor(indices)])
}

/// The first `k` elements of `x` along `axis` in sorted order, and their indices (`i64`).
fn top_k_along(
    g: &mut Graph,
    x: &Lazy,
    axis: usize,
    k: usize,
    largest: bool,
) -> Result<(Lazy, Lazy), OpError> {
    let rank = x.shape().len();
    let n = x.shape()[axis];
    // Move the axis last: (..., n).
    let mut perm: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    perm.push(axis);
    let xp = x.permute(&perm)?;
    let lead = xp.shape()[..rank - 1].to_vec();
    let with = |tail: &[usize]| -> Vec<usize> {
        let mut s = lead.clone();
        s.extend_from_slice(tail);
        s
    };
    // Element i along the second to last axis, element j along the last.
    let xi = xp.reshape(&with(&[n, 1]))?.expand(&with(&[n, n]))?;
    let xj = xp.reshape(&with(&[1, n]))?.expand(&with(&[n, n]))?;
    let before = if largest {
        g.lt(&xi, &xj)?
    } else {
        g.lt(&xj, &xi)?
    };
    let same = g.eq(&xi, &xj)?;
    let ai = g.arange(n, DType::I32).reshape(&[n, 1])?.expand(&[n, n])?;
    let aj = g.arange(n, DType::I32).reshape(&[1, n])?.expand(&[n, n])?;
    let earlier = g.lt(&aj, &ai)?;
    let earlier = g.cast(&earlier, DType::I32);
    let before = g.cast(&before, DType::I32);
    let same = g.cast(&same, DType::I32);
    let tie = g.binary(BinaryOp::Mul, &same, &earlier)?;
    let count = g.binary(BinaryOp::Add, &before, &tie)?;
    // The position of element i in sorted order: (..., n, 1).
    let pos = g.reduce(ReduceOp::Sum, &count, &[rank])?;
    let slots = g.arange(k, DType::I32).reshape(&[1, k])?;
    let hit = g.eq(&pos, &slots)?;
    // hit: (..., n, k); gather the element whose position is each slot.
    let xv = xp.reshape(&with(&[n, 1]))?.expand(&with(&[n, k]))?;
    let zero = g.constant(0.0, x.dtype, &with(&[n, k]));
    let picked = g.where_(&hit, &xv, &zero)?;
    let values = reduce_to(g, &picked, rank - 1, &with(&[k]))?;
    let idx = broadcast_to(&g.arange(n, DType::I64).reshape(&[n, 1])?, &with(&[n, k]))?;
    let izero = g.constant(0.0, DType::I64, &with(&[n, k]));
    let ipicked = g.where_(&hit, &idx, &izero)?;
    let indices = reduce_to(g, &ipicked, rank - 1, &with(&[k]))?;
    // Move the axis back.
    let mut back = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        back[p] = i;
    }
    Ok((values.permute(&back)?, indices.permute(&back)?))
}

/// Sums `x` over `axis` and reshapes to `shape`.
fn reduce_to(g: &mut Graph, x: &Lazy, axis: usize, shape: &[usize]) -> Result<Lazy, OpError> {
    Ok(g.reduce(ReduceOp::Sum, x, &[axis])?.reshape(shape)?)
}

//! `Gather`, `GatherElements`, `OneHot`, `Compress` and `ReverseSequence`: known indices are
//! taken as views ([`Graph::take`]), run-time ones by a one-hot sum.

use super::ctx::{invalid, norm_axis, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::ops::ReduceOp;

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Gather", gather),
    ("GatherElements", gather_elements),
    ("OneHot", one_hot),
    ("Compress", compress),
    ("ReverseSequence", reverse_sequence),
];

type Out = Result<Vec<Value>, OpError>;

fn gather(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let axis = norm_axis(ctx.attrs().int_or("axis", 0)?, x.shape().len(), false)?;
    let d = x.shape()[axis];
    let idx_shape = ctx.shape(1)?;
    let y = match ctx.known_ints(1)? {
        Some(idx) => {
            let idx = idx
                .iter()
                .map(|&i| {
                    let j = if i < 0 { i + d as i64 } else { i };
                    usize::try_from(j)
                        .ok()
                        .filter(|&j| j < d)
                        .ok_or_else(|| invalid(format!("index {i} is out of range for {d}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            ctx.graph.take(&x, axis, &idx)?
        }
        None => {
            let idx = ctx.tensor(1)?;
            gather_one_hot(ctx.graph, &x, axis, &idx)?
        }
    };
    let mut shape = x.shape()[..axis].to_vec();
    shape.extend(&idx_shape);
    shape.extend(&x.shape()[axis + 1..]);
    Ok(vec![Value::Tensor(y.reshape(&shape)?)])
}

/// Runtime indices: `sum_j x[.., j, ..] * (idx == j)`, indices flattened onto `axis`,
/// negative ones counted from the end.
pub(super) fn gather_one_hot(
    g: &mut Graph,
    x: &Lazy,
    axis: usize,
    idx: &Lazy,
) -> Result<Lazy, OpError> {
    let d = x.shape()[axis];
    let idx = wrap_indices(g, &idx.reshape(&[idx.numel()])?, d)?;
    Ok(g.take_by(x, axis, &idx)?)
}

/// Indices as `i64`, negative ones counted from the end of an axis of `d`.
fn wrap_indices(g: &mut Graph, idx: &Lazy, d: usize) -> Result<Lazy, OpError> {
    let idx = g.cast(idx, DType::I64);
    let zero = g.constant(0.0, DType::I64, &[]);
    let neg = g.lt(&idx, &zero)?;
    let wrapped = g.add_scalar(&idx, d as f64)?;
    Ok(g.where_(&neg, &wrapped, &idx)?)
}

/// `out[p] = x[p with p[axis] = idx[p]]`, as a one-hot sum over the axis.
fn gather_elements(ctx: &mut Ctx) -> Out {
    let (x, idx) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let rank = x.shape().len();
    let axis = norm_axis(ctx.attrs().int_or("axis", 0)?, rank, false)?;
    let s = idx.shape().to_vec();
    let fits = s.len() == rank && (0..rank).all(|a| a == axis || s[a] <= x.shape()[a]);
    if !fits {
        return Err(invalid(format!(
            "indices {s:?} do not fit data {:?}",
            x.shape()
        )));
    }
    let d = x.shape()[axis];
    let crop: Vec<(usize, usize)> = (0..rank)
        .map(|a| (0, if a == axis { d } else { s[a] }))
        .collect();
    let mut to_last: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    to_last.push(axis);
    let xl = x.shrink(&crop)?.permute(&to_last)?;
    let mut split = xl.shape().to_vec();
    split.insert(axis, 1);
    let mut wide = s.clone();
    wide.push(d);
    let table = xl.reshape(&split)?.expand(&wide)?;
    let g = &mut *ctx.graph;
    let idx = wrap_indices(g, &idx, d)?;
    let mut is = s.clone();
    is.push(1);
    let mut ars = vec![1; rank];
    ars.push(d);
    let ar = g.arange(d, DType::I64).reshape(&ars)?;
    let hit = g.eq(&idx.reshape(&is)?, &ar)?;
    let zero = g.scalar_like(&table, 0.0);
    let picked = g.where_(&hit, &table, &zero)?;
    let sum = g.reduce(ReduceOp::Sum, &picked, &[rank])?;
    Ok(vec![Value::Tensor(sum.reshape(&s)?)])
}

/// `values[1]` where the index equals the position along the new axis, else `values[0]`.
fn one_hot(ctx: &mut Ctx) -> Out {
    let depth = ctx.scalar(1)?;
    if !(0.0..=super::ctx::MAX_ELEMENTS as f64).contains(&depth) {
        return Err(invalid(format!("depth {depth}")));
    }
    let depth = depth as usize;
    let (idx, values) = (ctx.tensor(0)?, ctx.tensor(2)?);
    if values.shape() != [2] {
        return Err(invalid(format!("values of shape {:?}", values.shape())));
    }
    let rank = idx.shape().len() + 1;
    let axis = norm_axis(ctx.attrs().int_or("axis", -1)?, rank, false)?;
    let mut out = idx.shape().to_vec();
    out.insert(axis, depth);
    super::ctx::checked_numel(&out)?;
    let mut is = idx.shape().to_vec();
    is.insert(axis, 1);
    let mut ars = vec![1; rank];
    ars[axis] = depth;
    let g = &mut *ctx.graph;
    let idx = wrap_indices(g, &idx, depth)?.reshape(&is)?;
    let ar = g.arange(depth, DType::I64).reshape(&ars)?;
    let hit = g.eq(&idx, &ar)?;
    let off = values.shrink(&[(0, 1)])?.reshape(&[])?;
    let on = values.shrink(&[(1, 2)])?.reshape(&[])?;
    Ok(vec![Value::Tensor(g.where_(&hit, &on, &off)?)])
}

/// The slices along `axis` (or of the flattened input) whose condition is true; the condition
/// must be known at compile time, as it decides the output's shape.
fn compress(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let (x, axis) = match ctx.attrs().get("axis") {
        Some(_) => {
            let a = norm_axis(ctx.attrs().int("axis")?, x.shape().len(), false)?;
            (x, a)
        }
        None => {
            let n = x.numel();
            (x.reshape(&[n])?, 0)
        }
    };
    if !ctx.is_known(1) {
        return super::dynamic::compress_at_run_time(ctx, x, axis);
    }
    let cond = ctx.ints(1)?;
    let d = x.shape()[axis];
    if cond.len() > d {
        return Err(invalid(format!(
            "condition has {} values for axis {axis} of size {d}",
            cond.len()
        )));
    }
    let idx: Vec<usize> = (0..cond.len()).filter(|&i| cond[i] != 0).collect();
    Ok(vec![Value::Tensor(ctx.graph.take(&x, axis, &idx)?)])
}

/// Reverses the first `sequence_lens[b]` elements along the time axis of each batch entry.
fn reverse_sequence(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let lens = ctx.tensor(1)?;
    let rank = x.shape().len();
    let ba = norm_axis(ctx.attrs().int_or("batch_axis", 1)?, rank, false)?;
    let ta = norm_axis(ctx.attrs().int_or("time_axis", 0)?, rank, false)?;
    if rank < 2 || ba == ta || lens.shape() != [x.shape()[ba]] {
        return Err(invalid(format!(
            "input {:?}, batch axis {ba}, time axis {ta} and sequence_lens {:?} do not match",
            x.shape(),
            lens.shape()
        )));
    }
    let (b, t) = (x.shape()[ba], x.shape()[ta]);
    // Batch, time, then the rest.
    let mut perm = vec![ba, ta];
    perm.extend((0..rank).filter(|&a| a != ba && a != ta));
    let xp = x.permute(&perm)?;
    let rest = xp.shape()[2..].to_vec();
    let g = &mut *ctx.graph;
    let lens = g.cast(&lens, DType::I64).reshape(&[b, 1])?;
    let lens = lens.expand(&[b, t])?;
    let ar = g.arange(t, DType::I64).reshape(&[1, t])?.expand(&[b, t])?;
    let before = g.lt(&ar, &lens)?;
    let last = g.add_scalar(&lens, -1.0)?;
    let rev = g.binary(crate::ops::BinaryOp::Sub, &last, &ar)?;
    let src = g.where_(&before, &rev, &ar)?;
    // hit[b, t, s]: output t of entry b reads input s.
    let src = src.reshape(&[b, t, 1])?.expand(&[b, t, t])?;
    let ar3 = g
        .arange(t, DType::I64)
        .reshape(&[1, 1, t])?
        .expand(&[b, t, t])?;
    let hit = g.eq(&src, &ar3)?;
    let mut full = vec![b, t, t];
    full.extend(&rest);
    let mut hs = vec![b, t, t];
    hs.extend(std::iter::repeat_n(1, rest.len()));
    let hit = crate::graph::tensor::broadcast_to(&hit.reshape(&hs)?, &full)?;
    let mut xs = vec![b, 1, t];
    xs.extend(&rest);
    let xv = crate::graph::tensor::broadcast_to(&xp.reshape(&xs)?, &full)?;
    let zero = g.scalar_like(&xv, 0.0);
    let picked = g.where_(&hit, &xv, &zero)?;
    let y = g.reduce(ReduceOp::Sum, &picked, &[2])?;
    let mut ys = vec![b, t];
    ys.extend(&rest);
    let y = y.reshape(&ys)?;
    let mut back = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        back[p] = i;
    }
    Ok(vec![Value::Tensor(y.permute(&back)?)])
}

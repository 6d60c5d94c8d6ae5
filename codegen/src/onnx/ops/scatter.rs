//! `ScatterElements` (and the older `Scatter`) and `ScatterND`: each output element is the data
//! element, or the updates aimed at it combined by the reduction (`none`, `add`, `mul`, `max`,
//! `min`). The updates aimed at an element are found by comparing indices with positions;
//! `GatherND` finds the slices it reads the same way, and `TensorScatter` the cache positions
//! it writes.

use super::ctx::{invalid, norm_axis, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::tensor::broadcast_to;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("ScatterElements", scatter_elements),
    ("Scatter", scatter_elements),
    ("ScatterND", scatter_nd),
    ("GatherND", gather_nd),
    ("TensorScatter", tensor_scatter),
];

type Out = Result<Vec<Value>, OpError>;

#[derive(Clone, Copy, PartialEq)]
enum Reduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

fn reduction(ctx: &Ctx) -> Result<Reduction, OpError> {
    Ok(
        match ctx.attrs().string_or("reduction", "none".into())?.as_str() {
            "none" => Reduction::None,
            "add" => Reduction::Add,
            "mul" => Reduction::Mul,
            "max" => Reduction::Max,
            "min" => Reduction::Min,
            other => return Err(invalid(format!("reduction {other:?}"))),
        },
    )
}

/// Indices as `i64`, negative ones counted from the end of an axis of `d`.
fn wrap(g: &mut Graph, idx: &Lazy, d: usize) -> Result<Lazy, OpError> {
    let idx = g.cast(idx, DType::I64);
    let zero = g.scalar_like(&idx, 0.0);
    let neg = g.lt(&idx, &zero)?;
    let wrapped = g.add_scalar(&idx, d as f64)?;
    Ok(g.where_(&neg, &wrapped, &idx)?)
}

/// Combines, over axis `m`, the updates where `hit` with the data (all three of one shape;
/// `data` is the same along `m`). The result keeps `m` as size 1.
fn combine(
    g: &mut Graph,
    hit: &Lazy,
    upd: &Lazy,
    data: &Lazy,
    m: usize,
    red: Reduction,
) -> Result<Lazy, OpError> {
    let first = {
        let mut arg: Vec<(usize, usize)> = data.shape().iter().map(|&s| (0, s)).collect();
        arg[m] = (0, 1);
        data.shrink(&arg)?
    };
    Ok(match red {
        Reduction::None => {
            let zero = g.scalar_like(upd, 0.0);
            let picked = g.where_(hit, upd, &zero)?;
            let sum = g.reduce(ReduceOp::Sum, &picked, &[m])?;
            let count = g.cast(hit, DType::I32);
            let count = g.reduce(ReduceOp::Sum, &count, &[m])?;
            let z = g.scalar_like(&count, 0.0);
            let any = g.binary(BinaryOp::CmpNe, &count, &z)?;
            g.where_(&any, &sum, &first)?
        }
        Reduction::Add => {
            let zero = g.scalar_like(upd, 0.0);
            let picked = g.where_(hit, upd, &zero)?;
            let sum = g.reduce(ReduceOp::Sum, &picked, &[m])?;
            g.binary(BinaryOp::Add, &first, &sum)?
        }
        Reduction::Mul => {
            let one = g.scalar_like(upd, 1.0);
            let picked = g.where_(hit, upd, &one)?;
            let p = g.reduce_prod(&picked, &[m])?;
            g.binary(BinaryOp::Mul, &first, &p)?
        }
        Reduction::Max => {
            let picked = g.where_(hit, upd, data)?;
            let r = g.reduce(ReduceOp::Max, &picked, &[m])?;
            g.binary(BinaryOp::Max, &first, &r)?
        }
        Reduction::Min => {
            let picked = g.where_(hit, upd, data)?;
            let r = g.reduce_min(&picked, &[m])?;
            g.min(&first, &r)?
        }
    })
}

fn scatter_elements(ctx: &mut Ctx) -> Out {
    let red = if ctx.node.op_type == "Scatter" {
        Reduction::None
    } else {
        reduction(ctx)?
    };
    let x = ctx.tensor(0)?;
    let idx = ctx.tensor(1)?;
    let upd = ctx.tensor(2)?;
    let rank = x.shape().len();
    let axis = norm_axis(ctx.attrs().int_or("axis", 0)?, rank, false)?;
    let (xs, is) = (x.shape().to_vec(), idx.shape().to_vec());
    let fits = is.len() == rank && (0..rank).all(|a| a == axis || is[a] <= xs[a]);
    if !fits || upd.shape() != is.as_slice() || upd.dtype != x.dtype {
        return Err(invalid(format!(
            "data {xs:?}, indices {is:?} and updates {:?} ({}) do not match",
            upd.shape(),
            upd.dtype
        )));
    }
    let d = xs[axis];
    let m = is[axis];
    let mut to_last: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    to_last.push(axis);
    let lead: Vec<usize> = to_last[..rank - 1].iter().map(|&a| xs[a]).collect();
    let ilead: Vec<usize> = to_last[..rank - 1].iter().map(|&a| is[a]).collect();
    let g = &mut *ctx.graph;
    // Layout (lead..., m, d).
    let with = |l: &[usize], tail: &[usize]| -> Vec<usize> {
        let mut s = l.to_vec();
        s.extend_from_slice(tail);
        s
    };
    let mut pad: Vec<(usize, usize)> = lead.iter().zip(&ilead).map(|(&a, &b)| (0, a - b)).collect();
    pad.extend([(0, 0), (0, 0)]);
    let full = with(&lead, &[m, d]);
    let i = wrap(g, &idx.permute(&to_last)?, d)?.reshape(&with(&ilead, &[m, 1]))?;
    let mut ar_shape = vec![1; rank - 1];
    ar_shape.extend([1, d]);
    let ar = g.arange(d, DType::I64).reshape(&ar_shape)?;
    let hit = g.eq(&i, &ar)?.pad(&pad)?;
    let hit = broadcast_to(&hit, &full)?;
    let u = upd
        .permute(&to_last)?
        .reshape(&with(&ilead, &[m, 1]))?
        .pad(&pad)?;
    let u = broadcast_to(&u, &full)?;
    let xd = x.permute(&to_last)?.reshape(&with(&lead, &[1, d]))?;
    let xd = broadcast_to(&xd, &full)?;
    let y = combine(g, &hit, &u, &xd, rank - 1, red)?;
    let y = y.reshape(&with(&lead, &[d]))?;
    let mut back = vec![0; rank];
    for (k, &p) in to_last.iter().enumerate() {
        back[p] = k;
    }
    Ok(vec![Value::Tensor(y.permute(&back)?)])
}

fn scatter_nd(ctx: &mut Ctx) -> Out {
    let red = reduction(ctx)?;
    let x = ctx.tensor(0)?;
    let idx = ctx.tensor(1)?;
    let upd = ctx.tensor(2)?;
    let (xs, is) = (x.shape().to_vec(), idx.shape().to_vec());
    let Some((&k, batch)) = is.split_last() else {
        return Err(invalid("indices are a scalar"));
    };
    let mut want = batch.to_vec();
    if k <= xs.len() {
        want.extend(&xs[k..]);
    }
    if k == 0 || k > xs.len() || upd.shape() != want.as_slice() || upd.dtype != x.dtype {
        return Err(invalid(format!(
            "data {xs:?}, indices {is:?} and updates {:?} ({}) do not match",
            upd.shape(),
            upd.dtype
        )));
    }
    let m: usize = batch.iter().product();
    let rank = xs.len();
    let g = &mut *ctx.graph;
    // Layout (m, xs...).
    let mut full = vec![m];
    full.extend(&xs);
    let idx = idx.reshape(&[m, k])?;
    let mut hit: Option<Lazy> = None;
    for j in 0..k {
        let col = idx.shrink(&[(0, m), (j, j + 1)])?;
        let col = wrap(g, &col, xs[j])?;
        let mut cs = vec![m];
        cs.extend(std::iter::repeat_n(1, rank));
        let col = col.reshape(&cs)?;
        let mut ars = vec![1; rank + 1];
        ars[j + 1] = xs[j];
        let ar = g.arange(xs[j], DType::I64).reshape(&ars)?;
        let h = g.eq(&col, &ar)?;
        hit = Some(match hit {
            Some(a) => g.binary(BinaryOp::And, &a, &h)?,
            None => h,
        });
    }
    let hit = broadcast_to(&hit.ok_or_else(|| invalid("no index dims"))?, &full)?;
    let mut us = vec![m];
    us.extend(std::iter::repeat_n(1, k));
    us.extend(&xs[k..]);
    let u = broadcast_to(&upd.reshape(&us)?, &full)?;
    let mut ds = vec![1];
    ds.extend(&xs);
    let xd = broadcast_to(&x.reshape(&ds)?, &full)?;
    let y = combine(g, &hit, &u, &xd, 0, red)?;
    Ok(vec![Value::Tensor(y.reshape(&xs)?)])
}

/// `out[b, q] = data[b, indices[b, q]]` (with `batch_dims` leading batch dims): the slices of
/// data whose leading positions equal each index tuple, summed against the one-hot match.
fn gather_nd(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let idx = ctx.tensor(1)?;
    let bd = super::ctx::to_usize(ctx.attrs().int_or("batch_dims", 0)?, "batch_dims")?;
    let (xs, is) = (x.shape().to_vec(), idx.shape().to_vec());
    let Some((&k, ibatch)) = is.split_last() else {
        return Err(invalid("indices are a scalar"));
    };
    if bd >= is.len() || bd + k > xs.len() || xs[..bd] != is[..bd] || k == 0 {
        return Err(invalid(format!(
            "data {xs:?} and indices {is:?} do not match with batch_dims {bd}"
        )));
    }
    let b: usize = xs[..bd].iter().product();
    let m: usize = ibatch[bd..].iter().product();
    let dims = xs[bd..bd + k].to_vec();
    let rest = xs[bd + k..].to_vec();
    let g = &mut *ctx.graph;
    // Layout (b, m, dims..., rest...).
    let mut full = vec![b, m];
    full.extend(&dims);
    full.extend(&rest);
    let idx = idx.reshape(&[b, m, k])?;
    let mut hit: Option<Lazy> = None;
    for (j, &d) in dims.iter().enumerate() {
        let col = idx.shrink(&[(0, b), (0, m), (j, j + 1)])?;
        let col = wrap(g, &col, d)?;
        let mut cs = vec![b, m];
        cs.extend(std::iter::repeat_n(1, k));
        let col = col.reshape(&cs)?;
        let mut ars = vec![1; k + 2];
        ars[j + 2] = d;
        let ar = g.arange(d, DType::I64).reshape(&ars)?;
        let h = g.eq(&col, &ar)?;
        hit = Some(match hit {
            Some(a) => g.binary(BinaryOp::And, &a, &h)?,
            None => h,
        });
    }
    let mut hs = hit.as_ref().map(|h| h.shape().to_vec()).unwrap_or_default();
    hs.extend(std::iter::repeat_n(1, rest.len()));
    let hit = broadcast_to(
        &hit.ok_or_else(|| invalid("no index dims"))?.reshape(&hs)?,
        &full,
    )?;
    let mut ds = vec![b, 1];
    ds.extend(&dims);
    ds.extend(&rest);
    let xd = broadcast_to(&x.reshape(&ds)?, &full)?;
    let zero = g.scalar_like(&xd, 0.0);
    let picked = g.where_(&hit, &xd, &zero)?;
    let axes: Vec<usize> = (2..2 + k).collect();
    let y = g.reduce(ReduceOp::Sum, &picked, &axes)?;
    let mut out = is[..is.len() - 1].to_vec();
    out.extend(&rest);
    Ok(vec![Value::Tensor(y.reshape(&out)?)])
}

/// TensorScatter: writes `update` into a cache along the sequence axis, at each batch entry's
/// write index (wrapping around in `circular` mode).
fn tensor_scatter(ctx: &mut Ctx) -> Out {
    let circular = match ctx.attrs().string_or("mode", "linear".into())?.as_str() {
        "linear" => false,
        "circular" => true,
        other => return Err(invalid(format!("mode {other:?}"))),
    };
    let cache = ctx.tensor(0)?;
    let upd = ctx.tensor(1)?;
    let widx = ctx.opt_tensor(2)?;
    let rank = cache.shape().len();
    let axis = norm_axis(ctx.attrs().int_or("axis", -2)?, rank, false)?;
    let (cs, us) = (cache.shape().to_vec(), upd.shape().to_vec());
    let fits = us.len() == rank
        && axis > 0
        && (0..rank).all(|a| {
            if a == axis {
                us[a] <= cs[a]
            } else {
                us[a] == cs[a]
            }
        });
    if !fits || upd.dtype != cache.dtype {
        return Err(invalid(format!(
            "cache {cs:?} ({}) and update {us:?} ({}) do not match on axis {axis}",
            cache.dtype, upd.dtype
        )));
    }
    let (b, l, n) = (cs[0], cs[axis], us[axis]);
    let mut to_last: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    to_last.push(axis);
    let lead: Vec<usize> = to_last[..rank - 1].iter().map(|&a| cs[a]).collect();
    let with = |tail: &[usize]| -> Vec<usize> {
        let mut s = lead.clone();
        s.extend_from_slice(tail);
        s
    };
    let g = &mut *ctx.graph;
    let w = match widx {
        Some(w) if w.shape() == [b] => g.cast(&w, DType::I64),
        Some(w) => {
            return Err(invalid(format!(
                "write_indices {:?} must be ({b})",
                w.shape()
            )))
        }
        None => g.constant(0.0, DType::I64, &[b]),
    };
    // src[.., p]: the update position that cache position p receives.
    let mut ws = vec![1; rank];
    ws[0] = b;
    let w = broadcast_to(&w.reshape(&ws)?, &with(&[l]))?;
    let mut ps = vec![1; rank - 1];
    ps.push(l);
    let p = broadcast_to(&g.arange(l, DType::I64).reshape(&ps)?, &with(&[l]))?;
    let mut src = g.binary(BinaryOp::Sub, &p, &w)?;
    if circular {
        let zero = g.scalar_like(&src, 0.0);
        let neg = g.lt(&src, &zero)?;
        let up = g.add_scalar(&src, l as f64)?;
        src = g.where_(&neg, &up, &src)?;
    }
    let full = with(&[l, n]);
    let src = broadcast_to(&src.reshape(&with(&[l, 1]))?, &full)?;
    let mut ars = vec![1; rank];
    ars.push(n);
    let ar = broadcast_to(&g.arange(n, DType::I64).reshape(&ars)?, &full)?;
    let hit = g.eq(&src, &ar)?;
    let u = upd.permute(&to_last)?.reshape(&with(&[1, n]))?;
    let u = broadcast_to(&u, &full)?;
    let c = cache.permute(&to_last)?.reshape(&with(&[l, 1]))?;
    let c = broadcast_to(&c, &full)?;
    let y = combine(g, &hit, &u, &c, rank, Reduction::None)?;
    let y = y.reshape(&with(&[l]))?;
    let mut back = vec![0; rank];
    for (k, &a) in to_last.iter().enumerate() {
        back[a] = k;
    }
    Ok(vec![Value::Tensor(y.permute(&back)?)])
}

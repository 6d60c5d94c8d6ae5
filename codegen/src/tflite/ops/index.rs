//! Indexing: `GATHER`, `GATHER_ND`, `EMBEDDING_LOOKUP`, `DYNAMIC_UPDATE_SLICE`, `ARG_MAX` and
//! `ARG_MIN`.
//!
//! Indices known at compile time become views (runs of slices, strides, repeats) after a range
//! check; indices known only at run time select by a one-hot sum: each output element adds the
//! inputs whose position equals its index (exactly one of them, or none for an index out of
//! range, which TFLM rejects at run time). Selection copies values, so a quantized tensor
//! keeps its scale and zero point; `EMBEDDING_LOOKUP` of an int8 table into a float output
//! dequantizes the rows it picks (TFLM's hybrid lookup, zero point 0).

use super::{expect_shape, same_quant, Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Gather, gather),
    (Op::GatherNd, gather_nd),
    (Op::EmbeddingLookup, embedding_lookup),
    (Op::DynamicUpdateSlice, dynamic_update_slice),
    (Op::ArgMax, arg_max),
    (Op::ArgMin, arg_min),
];

type Out = Result<Vec<Lazy>, OpError>;

/// An `i32` tensor of `v`, one value per element of `shape`.
pub(super) fn i32s(shape: Vec<usize>, v: &[i64]) -> Tensor {
    Tensor::from_i64(Scalar::I32, shape, v).expect("one value per element")
}

/// `shape` with axis `axis` replaced by `with`.
fn replace_axis(shape: &[usize], axis: usize, with: &[usize]) -> Vec<usize> {
    let mut s = shape[..axis].to_vec();
    s.extend(with);
    s.extend(&shape[axis + 1..]);
    s
}

/// The one-hot selection along `axis` of `x` by the run-time integer indices `idx`, whose first
/// `batch` axes are `x`'s first ones: the result has `x`'s shape with `axis` replaced by `idx`'s
/// remaining axes, flattened into one. An index outside `0..d` selects nothing (zeros).
pub(super) fn select(
    g: &mut Graph,
    x: &Lazy,
    axis: usize,
    batch: usize,
    idx: &Lazy,
) -> Result<Lazy, OpError> {
    let xs = x.shape();
    let nb: usize = xs[..batch].iter().product();
    let np: usize = xs[batch..axis].iter().product();
    let (d, nq): (usize, usize) = (xs[axis], xs[axis + 1..].iter().product());
    let ni: usize = idx.shape()[batch..].iter().product();
    let idx = g.cast(idx, DType::I32).reshape(&[nb, 1, ni, 1, 1])?;
    let ar = g.arange(d, DType::I32).reshape(&[1, 1, 1, d, 1])?;
    let hit = g.eq(&idx, &ar)?;
    let wide = [nb, np, ni, d, nq];
    let xv = x.reshape(&[nb, np, 1, d, nq])?.expand(&wide)?;
    let zero = g.scalar_like(&xv, 0.0);
    let hit = hit.expand(&wide)?;
    let picked = g.where_(&hit, &xv, &zero)?;
    let s = g.reduce(ReduceOp::Sum, &picked, &[3])?;
    Ok(s.reshape(&replace_axis(xs, axis, &[ni]))?)
}

/// Known indices checked against an axis of `d` (`what` names the tensor).
fn in_range(idx: &[i64], d: usize, what: &str) -> Result<Vec<usize>, OpError> {
    idx.iter()
        .map(|&i| {
            usize::try_from(i)
                .ok()
                .filter(|&j| j < d)
                .ok_or_else(|| OpError::Invalid(format!("index {i} in {what:?} is outside 0..{d}")))
        })
        .collect()
}

/// Values that selection can copy: not bool (a one-hot sum cannot add them).
fn selectable(ctx: &Ctx, i: usize) -> Result<(), OpError> {
    let t = ctx.info(i)?;
    if t.dtype == Scalar::Bool {
        return Err(OpError::Unsupported(format!("{} on bool", ctx.op.name())));
    }
    Ok(())
}

fn gather(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::GatherOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    selectable(ctx, 0)?;
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let is = ctx.info(1)?.shape.clone();
    let rank = x.shape().len();
    let batch = if o.batch_dims < 0 {
        o.batch_dims + is.len() as i32
    } else {
        o.batch_dims
    };
    let axis = crate::graph::tensor::axis("GATHER", i64::from(o.axis), rank)?;
    let batch = usize::try_from(batch)
        .ok()
        .filter(|&b| b <= axis && b <= is.len() && is[..b] == x.shape()[..b])
        .ok_or_else(|| {
            OpError::Invalid(format!(
                "batch_dims {} for params {:?}, indices {is:?} and axis {axis}",
                o.batch_dims,
                x.shape()
            ))
        })?;
    let d = x.shape()[axis];
    let y = match ctx.ints(1) {
        Ok(v) if batch == 0 => {
            let name = ctx.info(1)?.name.clone();
            let idx = in_range(&v, d, &name)?;
            ctx.graph.take(&x, axis, &idx)?
        }
        _ => {
            let idx = ctx.input(1)?;
            select(ctx.graph, &x, axis, batch, &idx)?
        }
    };
    let y = y.reshape(&replace_axis(x.shape(), axis, &is[batch..]))?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn gather_nd(ctx: &mut Ctx) -> Out {
    selectable(ctx, 0)?;
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let is = ctx.info(1)?.shape.clone();
    let xs = x.shape().to_vec();
    let k = is.last().copied().unwrap_or(0);
    if is.is_empty() || k == 0 || k > xs.len() {
        return Err(OpError::Invalid(format!(
            "indices of shape {is:?} into params of shape {xs:?}"
        )));
    }
    let n: usize = xs[..k].iter().product();
    let mut fs = vec![n];
    fs.extend(&xs[k..]);
    let flat = x.reshape(&fs)?;
    let m = is[..is.len() - 1].iter().product::<usize>();
    let mut strides = vec![1i64; k];
    for a in (0..k.saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * xs[a + 1] as i64;
    }
    let y = match ctx.ints(1) {
        Ok(v) => {
            let name = ctx.info(1)?.name.clone();
            let mut idx = Vec::with_capacity(m);
            for row in v.chunks(k) {
                let mut f = 0;
                for (a, &i) in row.iter().enumerate() {
                    f += in_range(&[i], xs[a], &name)?[0] * strides[a] as usize;
                }
                idx.push(f);
            }
            ctx.graph.take(&flat, 0, &idx)?
        }
        Err(_) => {
            let idx = ctx.input(1)?;
            let name = format!("{}_strides", ctx.info(1)?.name);
            let g = &mut *ctx.graph;
            let idx = g.cast(&idx, DType::I32).reshape(&[m, k])?;
            let st = g.weight(&name, i32s(vec![1, k], &strides));
            let p = g.binary(BinaryOp::Mul, &idx, &st)?;
            let f = g.reduce(ReduceOp::Sum, &p, &[1])?.reshape(&[m])?;
            select(g, &flat, 0, 0, &f)?
        }
    };
    let mut shape = is[..is.len() - 1].to_vec();
    shape.extend(&xs[k..]);
    let y = y.reshape(&shape)?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// Rows of the table (input 1) by the ids (input 0).
fn embedding_lookup(ctx: &mut Ctx) -> Out {
    selectable(ctx, 1)?;
    let table = ctx.info(1)?.clone();
    let out = ctx.out_info(0)?.clone();
    let x = ctx.input(1)?;
    let rows = x.shape().first().copied().unwrap_or(0);
    let y = match ctx.ints(0) {
        Ok(v) => {
            let name = ctx.info(0)?.name.clone();
            let idx = in_range(&v, rows, &name)?;
            ctx.graph.take(&x, 0, &idx)?
        }
        Err(_) => {
            let idx = ctx.input(0)?;
            select(ctx.graph, &x, 0, 0, &idx)?
        }
    };
    let y = if table.dtype == Scalar::I8 && out.dtype == Scalar::F32 {
        let q = ctx.quant(&table)?;
        if q.zero_point() != 0 {
            return Err(OpError::Unsupported(
                "EMBEDDING_LOOKUP of an int8 table with a nonzero zero point into float".into(),
            ));
        }
        let g = &mut *ctx.graph;
        let f = g.cast(&y, DType::F32);
        g.mul_scalar(&f, f64::from(q.scale()))?
    } else {
        same_quant(ctx, 1)?;
        y
    };
    let y = y.reshape(&out.shape)?;
    Ok(vec![y])
}

/// The update (input 1) written into the operand (input 0) from the start indices (input 2),
/// each clamped so that the update fits (TFLM's `CalculateClampedStartIndices`).
fn dynamic_update_slice(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    same_quant(ctx, 1)?;
    selectable(ctx, 0)?;
    let x = ctx.input(0)?;
    let u = ctx.input(1)?;
    let (xs, us) = (x.shape().to_vec(), u.shape().to_vec());
    let rank = xs.len();
    if us.len() != rank || us.iter().zip(&xs).any(|(u, d)| u > d) {
        return Err(OpError::Invalid(format!(
            "an update of shape {us:?} into an operand of shape {xs:?}"
        )));
    }
    let start = ctx.input(2)?;
    if start.numel() != rank {
        return Err(OpError::Invalid(format!(
            "{} start indices for rank {rank}",
            start.numel()
        )));
    }
    let g = &mut *ctx.graph;
    let s = g.cast(&start.reshape(&[rank])?, DType::I32);
    let s = g.int_scalar(BinaryOp::Max, &s, 0)?;
    let room: Vec<i64> = (0..rank).map(|a| (xs[a] - us[a]) as i64).collect();
    let room = g.weight("update_room", i32s(vec![rank], &room));
    let s = g.min(&s, &room)?;
    let mut y = u;
    let mut inside: Option<Lazy> = None;
    for a in 0..rank {
        let sa = s.slice_axis(0, a as i64, a as i64 + 1, 1)?;
        let ar = g.arange(xs[a], DType::I32);
        let pos = g.binary(BinaryOp::Sub, &ar, &sa)?;
        y = select(g, &y, a, 0, &pos)?;
        let neg = g.int_const(0, DType::I32, &[xs[a]]);
        let below = g.lt(&pos, &neg)?;
        let top = g.int_const(us[a] as i64, DType::I32, &[xs[a]]);
        let fits = g.lt(&pos, &top)?;
        let above = g.not(&fits)?;
        let out_a = g.binary(BinaryOp::Or, &below, &above)?;
        let in_a = g.not(&out_a)?;
        let mut shape = vec![1; rank];
        shape[a] = xs[a];
        let in_a = in_a.reshape(&shape)?;
        inside = Some(match inside {
            None => in_a,
            Some(m) => g.binary(BinaryOp::And, &m, &in_a)?,
        });
    }
    let y = match inside {
        Some(m) => g.where_(&m, &y, &x)?,
        None => y,
    };
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn arg_max(ctx: &mut Ctx) -> Out {
    arg_extreme(ctx, false)
}

fn arg_min(ctx: &mut Ctx) -> Out {
    arg_extreme(ctx, true)
}

/// The index of the first extreme value along the axis (input 1), as the output's type.
fn arg_extreme(ctx: &mut Ctx, min: bool) -> Out {
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    let axis = match ctx.ints(1)?[..] {
        [a] => crate::graph::tensor::axis("ARG_MAX", a, rank)?,
        ref other => return Err(OpError::Invalid(format!("axis {other:?}"))),
    };
    let out = ctx.out_info(0)?.clone();
    if !matches!(out.dtype, Scalar::I32 | Scalar::I64) {
        return Err(OpError::Unsupported(format!(
            "{} to {} (int32 and int64 are)",
            ctx.op.name(),
            out.dtype
        )));
    }
    let g = &mut *ctx.graph;
    let m = if min {
        g.reduce_min(&x, &[axis])?
    } else {
        g.reduce(ReduceOp::Max, &x, &[axis])?
    };
    let hit = g.eq(&x, &m)?;
    let d = x.shape()[axis];
    let mut shape = vec![1; rank];
    shape[axis] = d;
    let ar = g.arange(d, DType::I32).reshape(&shape)?;
    let none = g.constant(d as f64, DType::I32, &[]);
    let cand = g.where_(&hit, &ar, &none)?;
    let idx = g.reduce_min(&cand, &[axis])?;
    let idx = g.cast(&idx, DType::from(out.dtype));
    Ok(vec![idx.reshape(&out.shape)?])
}

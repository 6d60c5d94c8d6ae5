//! Reductions (`Reduce*`, `ArgMax`, `ArgMin`), with `keepdims` and axes from an attribute
//! (older opsets) or input 1.

use super::ctx::{norm_axes, norm_axis, Ctx, OpError, Value};
use super::shape::axes_arg;
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, ReduceOp, UnaryOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("ReduceSum", reduce_sum),
    ("ReduceMean", reduce_mean),
    ("ReduceMax", reduce_max),
    ("ReduceMin", reduce_min),
    ("ReduceProd", reduce_prod),
    ("ReduceL1", reduce_l1),
    ("ReduceL2", reduce_l2),
    ("ReduceSumSquare", reduce_sum_square),
    ("ReduceLogSum", reduce_log_sum),
    ("ReduceLogSumExp", reduce_log_sum_exp),
    ("ArgMax", arg_max),
    ("ArgMin", arg_min),
    ("CumSum", cum_sum),
    ("CumProd", cum_prod),
];

type Out = Result<Vec<Value>, OpError>;
type Reducer = fn(&mut Graph, &Lazy, &[usize]) -> Result<Lazy, GraphError>;

/// The axes and `keepdims` of a `Reduce*` node.
struct ReduceArgs {
    /// Axes to reduce; `None` means the node is a no-op (empty axes, `noop_with_empty_axes`).
    axes: Option<Vec<usize>>,
    keepdims: bool,
}

fn reduce_args(ctx: &Ctx, rank: usize) -> Result<ReduceArgs, OpError> {
    let input_from = if ctx.node.op_type == "ReduceSum" {
        13
    } else {
        18
    };
    let a = ctx.attrs();
    let keepdims = a.int_or("keepdims", 1)? != 0;
    let noop = a.int_or("noop_with_empty_axes", 0)? != 0;
    let axes = match axes_arg(ctx, input_from)? {
        Some(axes) if !axes.is_empty() => Some(norm_axes(&axes, rank)?),
        _ if noop => None,
        _ => Some((0..rank).collect()),
    };
    Ok(ReduceArgs { axes, keepdims })
}

/// Reduces input 0 with `f`, then drops the reduced axes unless `keepdims`.
fn reduce_with(ctx: &mut Ctx, f: Reducer) -> Out {
    let x = ctx.tensor(0)?;
    let args = reduce_args(ctx, x.shape().len())?;
    let Some(axes) = args.axes else {
        return Ok(vec![Value::Tensor(x)]);
    };
    let y = f(ctx.graph, &x, &axes)?;
    Ok(vec![Value::Tensor(drop_axes(&y, &axes, args.keepdims)?)])
}

fn drop_axes(y: &Lazy, axes: &[usize], keepdims: bool) -> Result<Lazy, OpError> {
    if keepdims {
        return Ok(y.clone());
    }
    let dims: Vec<usize> = (0..y.shape().len())
        .filter(|a| !axes.contains(a))
        .map(|a| y.shape()[a])
        .collect();
    Ok(y.reshape(&dims)?)
}

fn square(g: &mut Graph, x: &Lazy) -> Result<Lazy, GraphError> {
    g.binary(BinaryOp::Mul, x, x)
}

fn reduce_sum(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, |g, x, a| g.reduce(ReduceOp::Sum, x, a))
}

fn reduce_mean(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, Graph::mean)
}

fn reduce_max(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, |g, x, a| g.reduce(ReduceOp::Max, x, a))
}

fn reduce_min(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, Graph::reduce_min)
}

fn reduce_prod(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, Graph::reduce_prod)
}

fn reduce_l1(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, |g, x, a| {
        let ax = g.abs(x)?;
        g.reduce(ReduceOp::Sum, &ax, a)
    })
}

fn reduce_l2(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, |g, x, a| {
        let sq = square(g, x)?;
        let s = g.reduce(ReduceOp::Sum, &sq, a)?;
        g.unary(UnaryOp::Sqrt, &s)
    })
}

fn reduce_sum_square(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, |g, x, a| {
        let sq = square(g, x)?;
        g.reduce(ReduceOp::Sum, &sq, a)
    })
}

fn reduce_log_sum(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, |g, x, a| {
        let s = g.reduce(ReduceOp::Sum, x, a)?;
        g.log(&s)
    })
}

/// `m + log(sum(exp(x - m)))` with `m` the maximum, so that large values do not overflow.
fn reduce_log_sum_exp(ctx: &mut Ctx) -> Out {
    reduce_with(ctx, |g, x, a| {
        let m = g.reduce(ReduceOp::Max, x, a)?;
        let d = g.binary(BinaryOp::Sub, x, &m)?;
        let e = g.exp(&d)?;
        let s = g.reduce(ReduceOp::Sum, &e, a)?;
        let l = g.log(&s)?;
        g.binary(BinaryOp::Add, &l, &m)
    })
}

fn arg_max(ctx: &mut Ctx) -> Out {
    arg_extreme(ctx, false)
}

fn arg_min(ctx: &mut Ctx) -> Out {
    arg_extreme(ctx, true)
}

/// The index of the first (or, with `select_last_index`, last) extreme value along `axis`.
fn arg_extreme(ctx: &mut Ctx, min: bool) -> Out {
    let x = ctx.tensor(0)?;
    let axis = norm_axis(ctx.attrs().int_or("axis", 0)?, x.shape().len(), false)?;
    let keepdims = ctx.attrs().int_or("keepdims", 1)? != 0;
    let last = ctx.attrs().int_or("select_last_index", 0)? != 0;
    let g = &mut *ctx.graph;
    let m = if min {
        g.reduce_min(&x, &[axis])?
    } else {
        g.reduce(ReduceOp::Max, &x, &[axis])?
    };
    let hit = g.eq(&x, &m)?;
    let d = x.shape()[axis];
    let mut ar_shape = vec![1; x.shape().len()];
    ar_shape[axis] = d;
    let ar = g.arange(d, DType::I32).reshape(&ar_shape)?;
    let idx = if last {
        let none = g.constant(-1.0, DType::I32, &[]);
        let cand = g.where_(&hit, &ar, &none)?;
        g.reduce(ReduceOp::Max, &cand, &[axis])?
    } else {
        let none = g.constant(d as f64, DType::I32, &[]);
        let cand = g.where_(&hit, &ar, &none)?;
        g.reduce_min(&cand, &[axis])?
    };
    let idx = g.cast(&idx, DType::I64);
    Ok(vec![Value::Tensor(drop_axes(&idx, &[axis], keepdims)?)])
}

/// Running sums along an axis: each position sums a window reaching back over the whole
/// axis (zeros padded in front), optionally exclusive and from the end.
fn cum_sum(ctx: &mut Ctx) -> Out {
    cumulative(ctx, false)
}

fn cum_prod(ctx: &mut Ctx) -> Out {
    cumulative(ctx, true)
}

/// Running sums (or products) along an axis: each position reduces a window of the `n`
/// values up to it, the axis padded in front with the identity (0 or 1).
fn cumulative(ctx: &mut Ctx, product: bool) -> Out {
    let exclusive = ctx.attrs().int_or("exclusive", 0)? != 0;
    let reverse = ctx.attrs().int_or("reverse", 0)? != 0;
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let axis = match ctx.ints(1)?.as_slice() {
        [a] => norm_axis(*a, rank, false)?,
        _ => return Err(super::ctx::invalid("axis must be one integer")),
    };
    let n = x.shape()[axis];
    if n == 0 {
        return Ok(vec![Value::Tensor(x)]);
    }
    let mut to_last: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    to_last.push(axis);
    let mut back = vec![0; rank];
    for (i, &a) in to_last.iter().enumerate() {
        back[a] = i;
    }
    let mut flip = vec![1; rank];
    flip[rank - 1] = -1;
    let mut y = x.permute(&to_last)?;
    if reverse {
        y = y.stride(&flip)?;
    }
    let front = if exclusive { n } else { n - 1 };
    let g = &mut *ctx.graph;
    let mut pads = vec![(0, 0); rank];
    pads[rank - 1] = (front, 0);
    let identity = if product { 1.0 } else { 0.0 };
    let y = g.pad_value(&y, &pads, identity)?;
    let p = g.pool(&y, &[n], &[1], &[1], &[(0, 0)])?;
    let s = match product {
        true => g.reduce_prod(&p, &[rank])?,
        false => g.reduce(ReduceOp::Sum, &p, &[rank])?,
    };
    let mut s = s.reshape(&p.shape()[..rank])?;
    if exclusive {
        let mut keep: Vec<(usize, usize)> = s.shape().iter().map(|&d| (0, d)).collect();
        keep[rank - 1] = (0, n);
        s = s.shrink(&keep)?;
    }
    if reverse {
        s = s.stride(&flip)?;
    }
    Ok(vec![Value::Tensor(s.permute(&back)?)])
}

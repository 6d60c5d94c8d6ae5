//! Pooling: average, max and Lp over sliding windows, and their global forms; MaxUnpool.

use super::conv::{window, Window};
use super::ctx::{checked_numel, invalid, materialize, to_usize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, ReduceOp, UnaryOp};
use crate::tensor::Tensor;

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("AveragePool", average_pool),
    ("MaxPool", max_pool),
    ("LpPool", lp_pool),
    ("GlobalAveragePool", global_average_pool),
    ("GlobalMaxPool", global_max_pool),
    ("GlobalLpPool", global_lp_pool),
    ("MaxUnpool", max_unpool),
];

type Out = Result<Vec<Value>, OpError>;

fn spatial_input(ctx: &mut Ctx) -> Result<Lazy, OpError> {
    let x = ctx.tensor(0)?;
    if x.shape().len() < 3 {
        return Err(invalid(format!(
            "input {:?} has no spatial axes",
            x.shape()
        )));
    }
    Ok(x)
}

fn pool_window(ctx: &Ctx, x: &Lazy) -> Result<Window, OpError> {
    let kernel = ctx
        .attrs()
        .ints("kernel_shape")?
        .into_iter()
        .map(|k| to_usize(k, "kernel dim"))
        .collect::<Result<Vec<_>, _>>()?;
    let ceil = ctx.attrs().int_or("ceil_mode", 0)? != 0;
    window(ctx, &x.shape()[2..], kernel, ceil)
}

/// Reduces the windows of `xp` (already padded) with `op`: `(N, C, *out)`.
fn reduce_windows(
    g: &mut Graph,
    xp: &Lazy,
    win: &Window,
    op: ReduceOp,
) -> Result<Lazy, GraphError> {
    let n = win.kernel.len();
    let zero = vec![(0, 0); n];
    let p = g.pool(xp, &win.kernel, &win.strides, &win.dilations, &zero)?;
    let rank = p.shape().len();
    let axes: Vec<usize> = (rank - n..rank).collect();
    let s = g.reduce(op, &p, &axes)?;
    s.reshape(&p.shape()[..rank - n])
}

/// Per output position of spatial axis `i`: how many window taps fall in the counted range
/// (the input, or with `include_pad` the input and its explicit padding).
fn tap_counts(win: &Window, i: usize, input: usize, include_pad: bool) -> Vec<usize> {
    let (b, e) = win.pads[i];
    let (lo, hi) = if include_pad {
        (0, b + input + e)
    } else {
        (b, b + input)
    };
    let padded = b + input + e + win.extra[i];
    let out = (padded - win.span(i)) / win.strides[i] + 1;
    (0..out)
        .map(|o| {
            (0..win.kernel[i])
                .map(|t| o * win.strides[i] + t * win.dilations[i])
                .filter(|&p| p >= lo && p < hi)
                .count()
        })
        .collect()
}

fn average_pool(ctx: &mut Ctx) -> Out {
    let x = spatial_input(ctx)?;
    let win = pool_window(ctx, &x)?;
    let include_pad = ctx.attrs().int_or("count_include_pad", 0)? != 0;
    let xp = x.pad(&win.full_pads(2))?;
    let mut y = reduce_windows(ctx.graph, &xp, &win, ReduceOp::Sum)?;
    let rank = y.shape().len();
    for i in 0..win.kernel.len() {
        let counts = tap_counts(&win, i, x.shape()[2 + i], include_pad);
        let inv: Vec<f64> = counts.iter().map(|&c| 1.0 / c.max(1) as f64).collect();
        let mut shape = vec![1; rank];
        shape[2 + i] = inv.len();
        let t = Tensor::from_f64(x.dtype.scalar, shape, &inv)?;
        let name = format!("{}.count{i}", ctx.node.name);
        let w = materialize(ctx.graph, &name, &t)?;
        y = ctx.graph.binary(BinaryOp::Mul, &y, &w)?;
    }
    Ok(vec![Value::Tensor(y)])
}

fn max_pool(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(2)?;
    let column_major = ctx.attrs().int_or("storage_order", 0)? != 0;
    let x = spatial_input(ctx)?;
    let win = pool_window(ctx, &x)?;
    let pads = win.full_pads(2);
    let padded = pads.iter().any(|&(b, e)| b + e > 0);
    let xp = if padded {
        let low = x.dtype.scalar.min_value();
        ctx.graph.pad_value(&x, &pads, low)?
    } else {
        x.clone()
    };
    let y = reduce_windows(ctx.graph, &xp, &win, ReduceOp::Max)?;
    let mut outs = vec![Value::Tensor(y.clone())];
    if ctx.wants(1) {
        let g = &mut *ctx.graph;
        let idx = flat_indices(g, x.shape(), column_major)?;
        let idx = if padded { idx.pad(&pads)? } else { idx };
        let n = win.kernel.len();
        let zero = vec![(0, 0); n];
        let xw = g.pool(&xp, &win.kernel, &win.strides, &win.dilations, &zero)?;
        let iw = g.pool(&idx, &win.kernel, &win.strides, &win.dilations, &zero)?;
        let rank = xw.shape().len();
        let mut ys = y.shape().to_vec();
        ys.extend(std::iter::repeat_n(1, n));
        let best = crate::graph::tensor::broadcast_to(&y.reshape(&ys)?, xw.shape())?;
        let hit = g.eq(&xw, &best)?;
        // The first maximum: the smallest index among the hits.
        let none = g.scalar_like(&iw, (1u64 << 62) as f64);
        let cand = g.where_(&hit, &iw, &none)?;
        let axes: Vec<usize> = (rank - n..rank).collect();
        let first = g.reduce_min(&cand, &axes)?;
        outs.push(Value::Tensor(first.reshape(y.shape())?));
    }
    Ok(outs)
}

/// The flat index of every element of a tensor of `shape`, as `i64`: row-major, or with the
/// spatial axes (from 2 on) in column-major order.
fn flat_indices(g: &mut Graph, shape: &[usize], column_major: bool) -> GResult {
    let rank = shape.len();
    let mut order: Vec<usize> = (0..rank).collect();
    if column_major {
        order[2..].reverse();
    }
    // Stride of each axis: the product of the sizes of the axes after it in `order`.
    let mut strides = vec![0i64; rank];
    let mut acc = 1i64;
    for &a in order.iter().rev() {
        strides[a] = acc;
        acc *= shape[a] as i64;
    }
    let mut total: Option<Lazy> = None;
    for a in 0..rank {
        let mut s = vec![1; rank];
        s[a] = shape[a];
        let r = g.arange(shape[a], DType::I64).reshape(&s)?;
        let r = g.mul_scalar(&r, strides[a] as f64)?;
        let r = crate::graph::tensor::broadcast_to(&r, shape)?;
        total = Some(match total {
            Some(t) => g.binary(BinaryOp::Add, &t, &r)?,
            None => r,
        });
    }
    Ok(total.unwrap_or_else(|| g.constant(0.0, DType::I64, shape)))
}

/// `(sum |x|^p)^(1/p)` over `axes`.
fn lp_norm(
    g: &mut Graph,
    x: &Lazy,
    p: f64,
    reduce: impl Fn(&mut Graph, &Lazy) -> GResult,
) -> GResult {
    let a = g.abs(x)?;
    if p == 1.0 {
        return reduce(g, &a);
    }
    if p == 2.0 {
        let sq = g.binary(BinaryOp::Mul, &a, &a)?;
        let s = reduce(g, &sq)?;
        return g.unary(UnaryOp::Sqrt, &s);
    }
    let pe = g.scalar_like(&a, p);
    let ap = g.pow(&a, &pe)?;
    let s = reduce(g, &ap)?;
    let inv = g.scalar_like(&s, 1.0 / p);
    g.pow(&s, &inv)
}

type GResult = Result<Lazy, GraphError>;

fn lp_order(ctx: &Ctx) -> Result<f64, OpError> {
    let p = ctx.attrs().int_or("p", 2)?;
    if p < 1 {
        return Err(invalid(format!("p = {p}")));
    }
    Ok(p as f64)
}

fn lp_pool(ctx: &mut Ctx) -> Out {
    let x = spatial_input(ctx)?;
    let win = pool_window(ctx, &x)?;
    let p = lp_order(ctx)?;
    let xp = x.pad(&win.full_pads(2))?;
    let y = lp_norm(ctx.graph, &xp, p, |g, v| {
        reduce_windows(g, v, &win, ReduceOp::Sum)
    })?;
    Ok(vec![Value::Tensor(y)])
}

fn spatial_axes(x: &Lazy) -> Vec<usize> {
    (2..x.shape().len()).collect()
}

fn global_average_pool(ctx: &mut Ctx) -> Out {
    let x = spatial_input(ctx)?;
    Ok(vec![Value::Tensor(ctx.graph.mean(&x, &spatial_axes(&x))?)])
}

fn global_max_pool(ctx: &mut Ctx) -> Out {
    let x = spatial_input(ctx)?;
    let y = ctx.graph.reduce(ReduceOp::Max, &x, &spatial_axes(&x))?;
    Ok(vec![Value::Tensor(y)])
}

fn global_lp_pool(ctx: &mut Ctx) -> Out {
    let x = spatial_input(ctx)?;
    let p = lp_order(ctx)?;
    let axes = spatial_axes(&x);
    let y = lp_norm(ctx.graph, &x, p, |g, v| g.reduce(ReduceOp::Sum, v, &axes))?;
    Ok(vec![Value::Tensor(y)])
}

/// MaxUnpool: each input value written at its flat index (as MaxPool's indices output gives it)
/// of a zero tensor of the inferred shape, padded at the end to `output_shape` when given.
fn max_unpool(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let x = spatial_input(ctx)?;
    let idx = ctx.tensor(1)?;
    let xs = x.shape().to_vec();
    let n = xs.len() - 2;
    if idx.shape() != xs.as_slice() {
        return Err(invalid(format!(
            "indices {:?} must match the input {xs:?}",
            idx.shape()
        )));
    }
    let kernel: Vec<usize> = ctx
        .attrs()
        .ints("kernel_shape")?
        .iter()
        .map(|&k| to_usize(k, "kernel_shape"))
        .collect::<Result<_, _>>()?;
    let list = |name: &str, default: i64, len: usize| -> Result<Vec<usize>, OpError> {
        let v = ctx.attrs().ints_or(name, vec![default; len])?;
        if v.len() != len {
            return Err(invalid(format!("{name} has {} values, not {len}", v.len())));
        }
        v.iter().map(|&x| to_usize(x, name)).collect()
    };
    if kernel.len() != n {
        return Err(invalid(format!(
            "kernel_shape {kernel:?} for {n} spatial axes"
        )));
    }
    let strides = list("strides", 1, n)?;
    let pads = list("pads", 0, 2 * n)?;
    let mut inferred = xs[..2].to_vec();
    for i in 0..n {
        let full = (xs[2 + i].saturating_sub(1)) * strides[i] + kernel[i];
        let cut = pads[i] + pads[n + i];
        if cut >= full {
            return Err(invalid(format!("pads {pads:?} remove spatial axis {i}")));
        }
        inferred.push(full - cut);
    }
    let shape = match ctx.opt_ints(2)? {
        Some(s) => s
            .iter()
            .map(|&v| to_usize(v, "output_shape"))
            .collect::<Result<Vec<_>, _>>()?,
        None => inferred.clone(),
    };
    if shape.len() != xs.len() || shape.iter().zip(&inferred).any(|(s, i)| s < i) {
        return Err(invalid(format!(
            "output_shape {shape:?} is smaller than the unpooled {inferred:?}"
        )));
    }
    let m = x.numel();
    let p = checked_numel(&inferred)?;
    checked_numel(&[m, p])?;
    let g = &mut *ctx.graph;
    let i = g.cast(&idx, DType::I64).reshape(&[m, 1])?.expand(&[m, p])?;
    let ar = g.arange(p, DType::I64).reshape(&[1, p])?.expand(&[m, p])?;
    let hit = g.eq(&i, &ar)?;
    let xv = x.reshape(&[m, 1])?.expand(&[m, p])?;
    let zero = g.scalar_like(&xv, 0.0);
    let picked = g.where_(&hit, &xv, &zero)?;
    let y = g.reduce(ReduceOp::Sum, &picked, &[0])?.reshape(&inferred)?;
    let grow: Vec<(usize, usize)> = shape
        .iter()
        .zip(&inferred)
        .map(|(&s, &i)| (0, s - i))
        .collect();
    let y = if grow.iter().any(|&(_, e)| e > 0) {
        y.pad(&grow)?
    } else {
        y
    };
    Ok(vec![Value::Tensor(y)])
}

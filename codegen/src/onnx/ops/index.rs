//! Ops that select or assemble parts of tensors: Concat, Split, Slice, Pad, Gather.

use super::ctx::{checked_numel, invalid, norm_axes, norm_axis, to_usize, Ctx, OpError, Value};
use super::Builder;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::ops::ReduceOp;

pub(super) const OPS: &[(&str, Builder)] = &[
    ("Concat", concat),
    ("Split", split),
    ("Slice", slice),
    ("Pad", pad),
    ("Gather", gather),
];

/// Known indices up to this count gather by slicing; more (or runtime ones) by a one-hot sum.
const SLICED_GATHER: usize = 64;

type Out = Result<Vec<Value>, OpError>;

fn full(x: &Lazy) -> Vec<(usize, usize)> {
    x.shape().iter().map(|&d| (0, d)).collect()
}

/// `x[begin..end]` along `axis`.
fn range_on(x: &Lazy, axis: usize, begin: usize, end: usize) -> Result<Lazy, OpError> {
    let mut arg = full(x);
    arg[axis] = (begin, end);
    Ok(x.shrink(&arg)?)
}

fn flip_on(x: &Lazy, axis: usize) -> Result<Lazy, OpError> {
    let mut mul = vec![1; x.shape().len()];
    mul[axis] = -1;
    Ok(x.stride(&mul)?)
}

fn concat(ctx: &mut Ctx) -> Out {
    let xs = ctx.tensors()?;
    let rank = xs.first().map_or(0, |x| x.shape().len());
    let axis = norm_axis(ctx.attrs().int("axis")?, rank, false)?;
    Ok(vec![Value::Tensor(ctx.graph.concat(&xs, axis)?)])
}

fn split(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let axis = norm_axis(ctx.attrs().int_or("axis", 0)?, x.shape().len(), false)?;
    let d = x.shape()[axis];
    let parts = ctx.node.outputs.len().max(1);
    let sizes = match (ctx.opset < 13, ctx.attrs().get("split")) {
        (true, Some(_)) => Some(ctx.attrs().ints("split")?),
        (true, None) => None,
        (false, _) => ctx.opt_ints(1)?,
    };
    let sizes: Vec<usize> = match sizes {
        Some(s) => s
            .into_iter()
            .map(|v| to_usize(v, "split size"))
            .collect::<Result<_, _>>()?,
        None => {
            let each = d.div_ceil(parts);
            (0..parts)
                .map(|i| each.min(d.saturating_sub(i * each)))
                .collect()
        }
    };
    if sizes.iter().sum::<usize>() != d {
        return Err(invalid(format!("sizes {sizes:?} do not add up to {d}")));
    }
    let mut begin = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for s in sizes {
        out.push(Value::Tensor(range_on(&x, axis, begin, begin + s)?));
        begin += s;
    }
    Ok(out)
}

/// ONNX slicing of one axis: negative bounds count from the end, bounds are clamped, and a
/// negative step walks backwards from `start`.
pub(super) fn slice_axis(
    x: &Lazy,
    axis: usize,
    start: i64,
    end: i64,
    step: i64,
) -> Result<Lazy, OpError> {
    let d = x.shape()[axis] as i64;
    let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
    if step == 0 {
        return Err(invalid("step 0"));
    }
    if d == 0 {
        return Ok(x.clone());
    }
    let step = step.clamp(-d, d);
    let (begin, stop) = if step > 0 {
        let s = norm(start).clamp(0, d);
        (s, norm(end).clamp(0, d).max(s))
    } else {
        let s = norm(start).clamp(0, d - 1);
        let e = norm(end).clamp(-1, d - 1);
        if s <= e {
            (0, 0)
        } else {
            (e + 1, s + 1)
        }
    };
    let y = range_on(x, axis, begin as usize, stop as usize)?;
    if step == 1 || begin == stop {
        return Ok(y);
    }
    let mut mul = vec![1; x.shape().len()];
    mul[axis] = step;
    Ok(y.stride(&mul)?)
}

fn slice(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let (starts, ends, axes, steps) = if ctx.opset < 10 {
        let a = ctx.attrs();
        let axes = a.get("axes").map(|_| a.ints("axes")).transpose()?;
        (a.ints("starts")?, a.ints("ends")?, axes, None)
    } else {
        let (s, e) = (ctx.ints(1)?, ctx.ints(2)?);
        (s, e, ctx.opt_ints(3)?, ctx.opt_ints(4)?)
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let axes = norm_axes(&axes, rank)?;
    let steps = steps.unwrap_or_else(|| vec![1; axes.len()]);
    if ends.len() != axes.len() || starts.len() != axes.len() || steps.len() != axes.len() {
        return Err(invalid("starts, ends, axes and steps differ in length"));
    }
    let mut y = x;
    for (k, &axis) in axes.iter().enumerate() {
        y = slice_axis(&y, axis, starts[k], ends[k], steps[k])?;
    }
    Ok(vec![Value::Tensor(y)])
}

/// Pad's arguments: per axis `(begin, end)` (negative crops), fill value and mode.
struct PadArgs {
    pads: Vec<(i64, i64)>,
    value: f64,
    mode: String,
}

fn pad_args(ctx: &Ctx, rank: usize) -> Result<PadArgs, OpError> {
    let a = ctx.attrs();
    let mode = a.string_or("mode", "constant".into())?;
    let (flat, value, axes) = if ctx.opset < 11 {
        let value = f64::from(a.float_or("value", 0.0)?);
        (a.ints("pads")?, value, None)
    } else {
        let value = if ctx.has(2) { ctx.scalar(2)? } else { 0.0 };
        (ctx.ints(1)?, value, ctx.opt_ints(3)?)
    };
    let axes = match axes {
        Some(a) => norm_axes(&a, rank)?,
        None => (0..rank).collect(),
    };
    if flat.len() != 2 * axes.len() {
        return Err(invalid(format!(
            "{} pads for {} axes",
            flat.len(),
            axes.len()
        )));
    }
    let mut pads = vec![(0, 0); rank];
    for (k, &ax) in axes.iter().enumerate() {
        pads[ax] = (flat[k], flat[k + axes.len()]);
    }
    Ok(PadArgs { pads, value, mode })
}

fn pad(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let p = pad_args(ctx, x.shape().len())?;
    let mut crop = full(&x);
    let mut grow = Vec::with_capacity(crop.len());
    for (c, &(b, e)) in crop.iter_mut().zip(&p.pads) {
        let part = |v: i64| to_usize(v.saturating_abs(), "pad");
        let (cut_b, cut_e) = (part(b.min(0))?, part(e.min(0))?);
        if cut_b + cut_e > c.1 {
            return Err(invalid("negative pads remove more than the whole axis"));
        }
        *c = (cut_b, c.1 - cut_e);
        grow.push((part(b.max(0))?, part(e.max(0))?));
    }
    let x = x.shrink(&crop)?;
    let padded: Vec<usize> = x
        .shape()
        .iter()
        .zip(&grow)
        .map(|(d, (b, e))| d + b + e)
        .collect();
    checked_numel(&padded)?;
    let y = match p.mode.as_str() {
        "constant" => ctx.graph.pad_value(&x, &grow, p.value)?,
        mode => {
            let mut y = x;
            for (axis, &(b, e)) in grow.iter().enumerate() {
                if b > 0 || e > 0 {
                    y = pad_axis(ctx.graph, &y, axis, (b, e), mode)?;
                }
            }
            y
        }
    };
    Ok(vec![Value::Tensor(y)])
}

/// Edge, reflect or wrap padding of one axis, by concatenating parts of `x`.
fn pad_axis(
    g: &mut Graph,
    x: &Lazy,
    axis: usize,
    (b, e): (usize, usize),
    mode: &str,
) -> Result<Lazy, OpError> {
    let d = x.shape()[axis];
    let too_big = |n: usize| invalid(format!("{mode} pad of {n} does not fit axis of {d}"));
    let part = |n: usize, at_end: bool| -> Result<Lazy, OpError> {
        match mode {
            "edge" if d > 0 => {
                let i = if at_end { d - 1 } else { 0 };
                let mut shape = x.shape().to_vec();
                shape[axis] = n;
                Ok(range_on(x, axis, i, i + 1)?.expand(&shape)?)
            }
            "reflect" if n < d => {
                let (lo, hi) = if at_end {
                    (d - 1 - n, d - 1)
                } else {
                    (1, n + 1)
                };
                flip_on(&range_on(x, axis, lo, hi)?, axis)
            }
            "wrap" if n <= d => {
                let (lo, hi) = if at_end { (0, n) } else { (d - n, d) };
                range_on(x, axis, lo, hi)
            }
            "edge" | "reflect" | "wrap" => Err(too_big(n)),
            other => Err(OpError::Unsupported(format!("pad mode {other:?}"))),
        }
    };
    let mut parts = Vec::with_capacity(3);
    if b > 0 {
        parts.push(part(b, false)?);
    }
    parts.push(x.clone());
    if e > 0 {
        parts.push(part(e, true)?);
    }
    Ok(g.concat(&parts, axis)?)
}

fn gather(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let axis = norm_axis(ctx.attrs().int_or("axis", 0)?, x.shape().len(), false)?;
    let d = x.shape()[axis];
    let idx_shape = ctx.shape(1)?;
    let y = match ctx.known_ints(1)? {
        Some(idx) if idx.len() <= SLICED_GATHER => {
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
            gather_known(ctx.graph, &x, axis, &idx)?
        }
        _ => {
            let idx = ctx.tensor(1)?;
            gather_one_hot(ctx.graph, &x, axis, &idx)?
        }
    };
    let mut shape = x.shape()[..axis].to_vec();
    shape.extend(&idx_shape);
    shape.extend(&x.shape()[axis + 1..]);
    Ok(vec![Value::Tensor(y.reshape(&shape)?)])
}

/// Known indices: one strided slice when they step evenly, else one slice per index.
fn gather_known(g: &mut Graph, x: &Lazy, axis: usize, idx: &[usize]) -> Result<Lazy, OpError> {
    let n = idx.len();
    let step = if n > 1 {
        idx[1] as i64 - idx[0] as i64
    } else {
        1
    };
    let even = idx.windows(2).all(|w| w[1] as i64 - w[0] as i64 == step);
    if n == 0 {
        return range_on(x, axis, 0, 0);
    }
    if even && step != 0 {
        let (lo, hi) = (idx[0].min(idx[n - 1]), idx[0].max(idx[n - 1]));
        let mut mul = vec![1; x.shape().len()];
        mul[axis] = step;
        return Ok(range_on(x, axis, lo, hi + 1)?.stride(&mul)?);
    }
    if even {
        let mut shape = x.shape().to_vec();
        shape[axis] = n;
        return Ok(range_on(x, axis, idx[0], idx[0] + 1)?.expand(&shape)?);
    }
    let parts = idx
        .iter()
        .map(|&i| range_on(x, axis, i, i + 1))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(g.concat(&parts, axis)?)
}

/// Runtime indices: `sum_j x[.., j, ..] * (idx == j)`, indices flattened onto `axis`.
fn gather_one_hot(g: &mut Graph, x: &Lazy, axis: usize, idx: &Lazy) -> Result<Lazy, OpError> {
    let d = x.shape()[axis];
    let m = idx.numel();
    let rank = x.shape().len();
    let idx = g.cast(idx, DType::I64).reshape(&[m])?;
    let zero = g.constant(0.0, DType::I64, &[m]);
    let neg = g.lt(&idx, &zero)?;
    let wrapped = g.add_scalar(&idx, d as f64)?;
    let idx = g.where_(&neg, &wrapped, &idx)?;
    let mut wide = x.shape().to_vec();
    wide.insert(axis, m);
    let mut xs = x.shape().to_vec();
    xs.insert(axis, 1);
    let xv = x.reshape(&xs)?.expand(&wide)?;
    let mut is = vec![1; rank + 1];
    is[axis] = m;
    let ar = g.arange(d, DType::I64);
    let mut ars = vec![1; rank + 1];
    ars[axis + 1] = d;
    let hit = g.eq(&idx.reshape(&is)?, &ar.reshape(&ars)?)?;
    let zero = g.scalar_like(&xv, 0.0);
    let picked = g.where_(&hit, &xv, &zero)?;
    let s = g.reduce(ReduceOp::Sum, &picked, &[axis + 1])?;
    let mut out = x.shape().to_vec();
    out[axis] = m;
    Ok(s.reshape(&out)?)
}

//! Ops that cut, assemble or mask tensors along axes: Concat, Split, Slice, Pad, Trilu.

use super::ctx::{checked_numel, invalid, norm_axes, norm_axis, to_usize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ConstValue};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Concat", concat),
    ("Split", split),
    ("Slice", slice),
    ("Pad", pad),
    ("Trilu", trilu),
];

type Out = Result<Vec<Value>, OpError>;

fn full(x: &Lazy) -> Vec<(usize, usize)> {
    x.shape().iter().map(|&d| (0, d)).collect()
}

/// `x[begin..end]` along `axis`.
pub(super) fn range_on(x: &Lazy, axis: usize, begin: usize, end: usize) -> Result<Lazy, OpError> {
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
    // Before opset 4 the axis could be left out: the channels.
    let axis = match ctx.opset < 4 {
        true => ctx.attrs().int_or("axis", 1)?,
        false => ctx.attrs().int("axis")?,
    };
    let axis = norm_axis(axis, rank, false)?;
    Ok(vec![Value::Tensor(ctx.graph.concat(&xs, axis)?)])
}

fn split(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let axis = norm_axis(ctx.attrs().int_or("axis", 0)?, x.shape().len(), false)?;
    let d = x.shape()[axis];
    let parts = ctx.node.outputs.len().max(1);
    let sizes = match (ctx.opset < 13, ctx.attrs().get("split")) {
        (true, Some(_)) => Some(ctx.attrs().ints("split")?),
        // Opset 1 could give the sizes as input 1 instead.
        (true, None) if ctx.opset < 2 => ctx.opt_ints(1)?,
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
        y = y.slice_axis(axis, starts[k], ends[k], steps[k])?;
    }
    Ok(vec![Value::Tensor(y)])
}

/// Pad's arguments: per axis `(begin, end)` (negative crops), fill value and mode.
struct PadArgs {
    pads: Vec<(i64, i64)>,
    value: f64,
    /// The fill value when it is computed at run time (a one-element tensor).
    runtime_value: bool,
    mode: String,
}

fn pad_args(ctx: &Ctx, rank: usize) -> Result<PadArgs, OpError> {
    let a = ctx.attrs();
    let mode = a.string_or("mode", "constant".into())?;
    let (flat, value, axes) = if ctx.opset < 11 {
        let value = f64::from(a.float_or("value", 0.0)?);
        (a.ints("pads")?, value, None)
    } else {
        let value = if ctx.is_known(2) { ctx.scalar(2)? } else { 0.0 };
        (ctx.ints(1)?, value, ctx.opt_ints(3)?)
    };
    let runtime_value = ctx.opset >= 11 && ctx.has(2) && !ctx.is_known(2);
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
    Ok(PadArgs {
        pads,
        value,
        runtime_value,
        mode,
    })
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
        "constant" if p.runtime_value => {
            let v = ctx.tensor(2)?;
            if v.numel() != 1 || v.dtype != x.dtype {
                return Err(invalid(format!(
                    "constant_value of shape {:?} ({}) is not one {} value",
                    v.shape(),
                    v.dtype,
                    x.dtype
                )));
            }
            let g = &mut *ctx.graph;
            let shape = padded.clone();
            let inside = g
                .constant(1.0, crate::dtype::DType::BOOL, x.shape())
                .pad(&grow)?;
            let ones = vec![1; shape.len()];
            let fill = crate::graph::tensor::broadcast_to(&v.reshape(&ones)?, &shape)?;
            let y = x.pad(&grow)?;
            g.where_(&inside, &y, &fill)?
        }
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

/// Keeps the upper (or lower) triangle of the last two axes from diagonal `k` on.
fn trilu(ctx: &mut Ctx) -> Out {
    let upper = ctx.attrs().int_or("upper", 1)? != 0;
    let k = match ctx.opt_ints(1)?.as_deref() {
        None => 0,
        Some([k]) => *k,
        Some(_) => return Err(invalid("k must be one integer")),
    };
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    if rank < 2 {
        return Err(invalid("Trilu needs a matrix"));
    }
    let (n, m) = (x.shape()[rank - 2], x.shape()[rank - 1]);
    let g = &mut *ctx.graph;
    let rows = g.arange(n, DType::I64).reshape(&[n, 1])?;
    let cols = g.arange(m, DType::I64).reshape(&[1, m])?;
    let diff = g.binary(BinaryOp::Sub, &cols, &rows)?;
    let k = g.const_exact(ConstValue::Int(k), DType::I64, &[]);
    let keep = if upper {
        g.le(&k, &diff)?
    } else {
        g.le(&diff, &k)?
    };
    let zero = g.scalar_like(&x, 0.0);
    Ok(vec![Value::Tensor(g.where_(&keep, &x, &zero)?)])
}

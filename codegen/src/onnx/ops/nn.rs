//! Neural-network layers other than convolution and pooling: matrix products,
//! normalizations, softmax and friends, dropout (inference: identity).

use super::ctx::{invalid, norm_axis, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, ReduceOp, UnaryOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Gemm", gemm),
    ("MatMul", matmul),
    ("BatchNormalization", batch_norm),
    ("InstanceNormalization", instance_norm),
    ("LayerNormalization", layer_norm),
    ("GroupNormalization", group_norm),
    ("MeanVarianceNormalization", mean_variance_norm),
    ("LRN", lrn),
    ("Softmax", softmax),
    ("LogSoftmax", log_softmax),
    ("Hardmax", hardmax),
    ("Dropout", dropout),
];

type Out = Result<Vec<Value>, OpError>;
type GResult = Result<Lazy, GraphError>;

fn one(l: Lazy) -> Out {
    Ok(vec![Value::Tensor(l)])
}

fn gemm(ctx: &mut Ctx) -> Out {
    let a = ctx.attrs();
    let alpha = f64::from(a.float_or("alpha", 1.0)?);
    let beta = f64::from(a.float_or("beta", 1.0)?);
    let (ta, tb) = (a.int_or("transA", 0)? != 0, a.int_or("transB", 0)? != 0);
    let (x, w) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let c = ctx.opt_tensor(2)?;
    if x.shape().len() != 2 || w.shape().len() != 2 {
        return Err(invalid(format!(
            "A {:?} and B {:?} must be matrices",
            x.shape(),
            w.shape()
        )));
    }
    let x = if ta { x.permute(&[1, 0])? } else { x };
    let w = if tb { w.permute(&[1, 0])? } else { w };
    let g = &mut *ctx.graph;
    let mut y = g.matmul(&x, &w)?;
    if alpha != 1.0 {
        y = g.mul_scalar(&y, alpha)?;
    }
    if let Some(c) = c {
        let c = if beta != 1.0 {
            g.mul_scalar(&c, beta)?
        } else {
            c
        };
        y = g.binary(BinaryOp::Add, &y, &c)?;
    }
    one(y)
}

fn matmul(ctx: &mut Ctx) -> Out {
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    if a.shape().is_empty() || b.shape().is_empty() {
        return Err(invalid("MatMul of a scalar"));
    }
    one(ctx.graph.matmul(&a, &b)?)
}

/// A per-channel parameter reshaped to broadcast over `(N, C, *spatial)` of rank `rank`.
fn per_channel(p: &Lazy, rank: usize) -> Result<Lazy, OpError> {
    let mut shape = vec![1; rank];
    if p.shape().len() == 1 {
        shape[1] = p.shape()[0];
    } else {
        shape.splice(1..1 + p.shape().len(), p.shape().iter().copied());
    }
    Ok(p.reshape(&shape)?)
}

/// Inference batch norm: `x * s + (b - mean * s)` with `s = scale / sqrt(var + eps)`; the
/// parameter arithmetic is folded at compile time.
fn batch_norm(ctx: &mut Ctx) -> Out {
    // Opsets before 9: `spatial: 0` keeps statistics per element, not per channel.
    if ctx.attrs().int_or("spatial", 1)? == 0 {
        return Err(OpError::Unsupported(
            "spatial 0 (statistics per element)".into(),
        ));
    }
    if ctx.attrs().int_or("training_mode", 0)? != 0 {
        return batch_norm_training(ctx);
    }
    ctx.only_outputs(1)?;
    let eps = f64::from(ctx.attrs().float_or("epsilon", 1e-5)?);
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let mut p = Vec::with_capacity(4);
    for i in 1..5 {
        let t = ctx.tensor(i)?;
        p.push(per_channel(&t, rank)?);
    }
    let g = &mut *ctx.graph;
    let ve = g.add_scalar(&p[3], eps)?;
    let sd = g.unary(UnaryOp::Sqrt, &ve)?;
    let inv = g.unary(UnaryOp::Recip, &sd)?;
    let s = g.binary(BinaryOp::Mul, &p[0], &inv)?;
    let ms = g.binary(BinaryOp::Mul, &p[2], &s)?;
    let t = g.binary(BinaryOp::Sub, &p[1], &ms)?;
    let xs = g.binary(BinaryOp::Mul, &x, &s)?;
    one(g.binary(BinaryOp::Add, &xs, &t)?)
}

/// Training batch norm: normalizes with the batch's own mean and (biased) variance, and
/// outputs the running mean and variance updated with `momentum`.
fn batch_norm_training(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(3)?;
    let eps = f64::from(ctx.attrs().float_or("epsilon", 1e-5)?);
    let momentum = f64::from(ctx.attrs().float_or("momentum", 0.9)?);
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    if rank < 2 {
        return Err(invalid(format!(
            "input {:?} has no channel axis",
            x.shape()
        )));
    }
    let mut p = Vec::with_capacity(4);
    for i in 1..5 {
        let t = ctx.tensor(i)?;
        p.push(per_channel(&t, rank)?);
    }
    let axes: Vec<usize> = (0..rank).filter(|&a| a != 1).collect();
    let g = &mut *ctx.graph;
    let m = g.mean(&x, &axes)?;
    let d = g.binary(BinaryOp::Sub, &x, &m)?;
    let sq = g.binary(BinaryOp::Mul, &d, &d)?;
    let v = g.mean(&sq, &axes)?;
    let ve = g.add_scalar(&v, eps)?;
    let sd = g.unary(UnaryOp::Sqrt, &ve)?;
    let inv = g.unary(UnaryOp::Recip, &sd)?;
    let n = g.binary(BinaryOp::Mul, &d, &inv)?;
    let y = g.binary(BinaryOp::Mul, &n, &p[0])?;
    let y = g.binary(BinaryOp::Add, &y, &p[1])?;
    let mut outs = vec![Value::Tensor(y)];
    let c = x.shape()[1];
    for (running, batch) in [(&p[2], &m), (&p[3], &v)] {
        let r = g.mul_scalar(running, momentum)?;
        let b = g.mul_scalar(batch, 1.0 - momentum)?;
        let u = g.binary(BinaryOp::Add, &r, &b)?;
        outs.push(Value::Tensor(u.reshape(&[c])?));
    }
    Ok(outs)
}

/// `(x - mean) / sqrt(var + eps)` over `axes` (kept as size 1 for broadcasting).
fn normalize(g: &mut Graph, x: &Lazy, axes: &[usize], eps: f64) -> GResult {
    let m = g.mean(x, axes)?;
    let d = g.binary(BinaryOp::Sub, x, &m)?;
    let sq = g.binary(BinaryOp::Mul, &d, &d)?;
    let var = g.mean(&sq, axes)?;
    let ve = g.add_scalar(&var, eps)?;
    let sd = g.unary(UnaryOp::Sqrt, &ve)?;
    let inv = g.unary(UnaryOp::Recip, &sd)?;
    g.binary(BinaryOp::Mul, &d, &inv)
}

fn instance_norm(ctx: &mut Ctx) -> Out {
    let eps = f64::from(ctx.attrs().float_or("epsilon", 1e-5)?);
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let (scale, bias) = (ctx.tensor(1)?, ctx.tensor(2)?);
    let (scale, bias) = (per_channel(&scale, rank)?, per_channel(&bias, rank)?);
    let axes: Vec<usize> = (2..rank).collect();
    let g = &mut *ctx.graph;
    let n = normalize(g, &x, &axes, eps)?;
    let y = g.binary(BinaryOp::Mul, &n, &scale)?;
    one(g.binary(BinaryOp::Add, &y, &bias)?)
}

/// LayerNormalization, with its optional outputs Mean and InvStdDev (reduced dims kept).
fn layer_norm(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(3)?;
    let eps = f64::from(ctx.attrs().float_or("epsilon", 1e-5)?);
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let axis = norm_axis(ctx.attrs().int_or("axis", -1)?, rank, false)?;
    let scale = ctx.tensor(1)?;
    let bias = ctx.opt_tensor(2)?;
    let axes: Vec<usize> = (axis..rank).collect();
    let wants_stats = ctx.wants(1) || ctx.wants(2);
    let g = &mut *ctx.graph;
    let m = g.mean(&x, &axes)?;
    let d = g.binary(BinaryOp::Sub, &x, &m)?;
    let sq = g.binary(BinaryOp::Mul, &d, &d)?;
    let var = g.mean(&sq, &axes)?;
    let ve = g.add_scalar(&var, eps)?;
    let sd = g.unary(UnaryOp::Sqrt, &ve)?;
    let inv = g.unary(UnaryOp::Recip, &sd)?;
    let n = g.binary(BinaryOp::Mul, &d, &inv)?;
    let mut y = g.binary(BinaryOp::Mul, &n, &scale)?;
    if let Some(b) = bias {
        y = g.binary(BinaryOp::Add, &y, &b)?;
    }
    let mut out = vec![Value::Tensor(y)];
    if wants_stats {
        out.push(Value::Tensor(m));
        out.push(Value::Tensor(inv));
    }
    Ok(out)
}

/// Normalizes each group of channels; scale and bias are per group (opset 18) or per
/// channel (opset 21).
fn group_norm(ctx: &mut Ctx) -> Out {
    let eps = f64::from(ctx.attrs().float_or("epsilon", 1e-5)?);
    let groups = super::ctx::to_usize(ctx.attrs().int("num_groups")?, "num_groups")?;
    let x = ctx.tensor(0)?;
    let (scale, bias) = (ctx.tensor(1)?, ctx.tensor(2)?);
    let shape = x.shape().to_vec();
    if shape.len() < 2 || groups == 0 || shape[1] % groups != 0 {
        return Err(invalid(format!("{groups} groups for input {shape:?}")));
    }
    let (n, cg) = (shape[0], shape[1] / groups);
    let rest: usize = shape[2..].iter().product();
    let xg = x.reshape(&[n, groups, cg, rest])?;
    let param_shape = match scale.numel() {
        k if k == groups => [1, groups, 1, 1],
        _ => [1, groups, cg, 1],
    };
    let g = &mut *ctx.graph;
    let y = normalize(g, &xg, &[2, 3], eps)?;
    let y = g.binary(BinaryOp::Mul, &y, &scale.reshape(&param_shape)?)?;
    let y = g.binary(BinaryOp::Add, &y, &bias.reshape(&param_shape)?)?;
    one(y.reshape(&shape)?)
}

/// `(x - mean) / (sqrt(mean(x²) - mean(x)²) + 1e-9)` over `axes` (default N, H, W).
fn mean_variance_norm(ctx: &mut Ctx) -> Out {
    let axes = ctx.attrs().ints_or("axes", vec![0, 2, 3])?;
    let x = ctx.tensor(0)?;
    let axes = super::ctx::norm_axes(&axes, x.shape().len())?;
    let g = &mut *ctx.graph;
    let m = g.mean(&x, &axes)?;
    let sq = g.binary(BinaryOp::Mul, &x, &x)?;
    let msq = g.mean(&sq, &axes)?;
    let m2 = g.binary(BinaryOp::Mul, &m, &m)?;
    let var = g.binary(BinaryOp::Sub, &msq, &m2)?;
    let sd = g.unary(UnaryOp::Sqrt, &var)?;
    let den = g.add_scalar(&sd, 1e-9)?;
    let d = g.binary(BinaryOp::Sub, &x, &m)?;
    let inv = g.unary(UnaryOp::Recip, &den)?;
    one(g.binary(BinaryOp::Mul, &d, &inv)?)
}

/// Local response normalization across channels.
fn lrn(ctx: &mut Ctx) -> Out {
    let a = ctx.attrs();
    let size = a.int("size")?;
    let alpha = f64::from(a.float_or("alpha", 1e-4)?);
    let beta = f64::from(a.float_or("beta", 0.75)?);
    let bias = f64::from(a.float_or("bias", 1.0)?);
    let size = usize::try_from(size).ok().filter(|&s| s > 0);
    let size = size.ok_or_else(|| invalid("size must be positive"))?;
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    if rank < 2 || x.shape()[1] == 0 {
        return Err(invalid("LRN needs a channel axis"));
    }
    let reach = x.shape()[1] - 1;
    let mut to_last: Vec<usize> = (0..rank).filter(|&a| a != 1).collect();
    to_last.push(1);
    let mut back: Vec<usize> = vec![0, rank - 1];
    back.extend(1..rank - 1);
    let g = &mut *ctx.graph;
    let sq = g.binary(BinaryOp::Mul, &x, &x)?.permute(&to_last)?;
    let (lo, hi) = ((size - 1) / 2, size - 1 - (size - 1) / 2);
    let (lo, hi) = (lo.min(reach), hi.min(reach));
    let p = g.pool(&sq, &[lo + hi + 1], &[1], &[1], &[(lo, hi)])?;
    let s = g.reduce(ReduceOp::Sum, &p, &[rank])?;
    let s = s.reshape(&p.shape()[..rank])?.permute(&back)?;
    let s = g.mul_scalar(&s, alpha / size as f64)?;
    let base = g.add_scalar(&s, bias)?;
    let l = g.unary(UnaryOp::Log2, &base)?;
    let e = g.mul_scalar(&l, -beta)?;
    let f = g.unary(UnaryOp::Exp2, &e)?;
    one(g.binary(BinaryOp::Mul, &x, &f)?)
}

/// Applies `f` along the softmax axis: the axis itself from opset 13, before that the input
/// flattened to 2-D at `axis` (default 1).
fn along_axis(ctx: &mut Ctx, f: fn(&mut Graph, &Lazy, usize) -> GResult) -> Out {
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    if ctx.opset >= 13 {
        let axis = norm_axis(ctx.attrs().int_or("axis", -1)?, rank, false)?;
        return one(f(ctx.graph, &x, axis)?);
    }
    let axis = norm_axis(ctx.attrs().int_or("axis", 1)?, rank, true)?;
    let outer: usize = x.shape()[..axis].iter().product();
    let inner: usize = x.shape()[axis..].iter().product();
    let y = f(ctx.graph, &x.reshape(&[outer, inner])?, 1)?;
    one(y.reshape(x.shape())?)
}

fn softmax(ctx: &mut Ctx) -> Out {
    along_axis(ctx, Graph::softmax)
}

fn log_softmax(ctx: &mut Ctx) -> Out {
    along_axis(ctx, |g, x, axis| {
        let m = g.reduce(ReduceOp::Max, x, &[axis])?;
        let d = g.binary(BinaryOp::Sub, x, &m)?;
        let e = g.exp(&d)?;
        let s = g.reduce(ReduceOp::Sum, &e, &[axis])?;
        let l = g.log(&s)?;
        g.binary(BinaryOp::Sub, &d, &l)
    })
}

/// 1 at the first maximum along the axis, 0 elsewhere.
fn hardmax(ctx: &mut Ctx) -> Out {
    along_axis(ctx, |g, x, axis| {
        let m = g.reduce(ReduceOp::Max, x, &[axis])?;
        let hit = g.eq(x, &m)?;
        let d = x.shape()[axis];
        let mut shape = vec![1; x.shape().len()];
        shape[axis] = d;
        let ar = g.arange(d, DType::I32).reshape(&shape)?;
        let none = g.constant(d as f64, DType::I32, &[]);
        let cand = g.where_(&hit, &ar, &none)?;
        let first = g.reduce_min(&cand, &[axis])?;
        let is_first = g.eq(&ar, &first)?;
        Ok(g.cast(&is_first, x.dtype))
    })
}

/// Inference dropout: the input unchanged, and an all-true mask if one is asked for.
/// Inference-mode Dropout: the identity, with an all-true mask. Training mode with a nonzero
/// ratio draws random numbers, which Kiln does not.
fn dropout(ctx: &mut Ctx) -> Out {
    if ctx.has(2) && ctx.known(2)?.bytes().iter().any(|&b| b != 0) {
        let ratio = match ctx.has(1) {
            true => ctx.known(1)?.to_f64(),
            false => vec![0.5],
        };
        if ratio.iter().any(|&r| r != 0.0) {
            return Err(OpError::Unsupported("training mode (random masks)".into()));
        }
    }
    let x = ctx.value(0)?.clone();
    let mut out = vec![x.clone()];
    if ctx.wants(1) {
        let mask = ctx.graph.constant(1.0, DType::BOOL, x.shape());
        out.push(Value::Tensor(mask));
    }
    Ok(out)
}

//! Ops that rearrange, repeat or describe tensors: `BATCH_TO_SPACE_ND`, `SPACE_TO_BATCH_ND`,
//! `MIRROR_PAD`, `REVERSE_V2`, `BROADCAST_TO`, `BROADCAST_ARGS`, `SHAPE` and `FILL`.
//!
//! Block sizes, crops, paddings, axes and shapes are constant tensors read at import; the data
//! moves by views (reshapes, permutations, strides, slices joined along an axis). A quantized
//! tensor keeps its values: TFLM requires the same scale and zero point in and out, and pads
//! `SPACE_TO_BATCH_ND` with the output's zero point. `SHAPE` is a constant of the input's
//! static shape; `BROADCAST_ARGS` of two run-time shapes is computed in the graph.

use super::{expect_shape, is_quantized, same_quant, Ctx, OpBuilder};
use crate::dtype::Scalar;
use crate::graph::Lazy;
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions, MirrorPadMode};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::BatchToSpaceNd, batch_to_space_nd),
    (Op::SpaceToBatchNd, space_to_batch_nd),
    (Op::MirrorPad, mirror_pad),
    (Op::ReverseV2, reverse_v2),
    (Op::BroadcastTo, broadcast_to),
    (Op::BroadcastArgs, broadcast_args),
    (Op::Shape, shape),
    (Op::Fill, fill),
];

type Out = Result<Vec<Lazy>, OpError>;

/// Non-negative sizes from a constant input.
fn sizes(ctx: &Ctx, i: usize, what: &str) -> Result<Vec<usize>, OpError> {
    ctx.ints(i)?
        .into_iter()
        .map(|v| {
            usize::try_from(v).map_err(|_| {
                OpError::Invalid(format!("{what} {v} in {:?}", ctx.info(i).map(|t| &t.name)))
            })
        })
        .collect()
}

/// `(before, after)` per axis.
type Pairs = Vec<(usize, usize)>;

/// The blocks (input 1) and the `(before, after)` pairs of input 2 for the `m` spatial axes
/// after the batch.
fn blocks_and_pairs(ctx: &Ctx, rank: usize) -> Result<(Vec<usize>, Pairs), OpError> {
    let blocks = sizes(ctx, 1, "block size")?;
    let pairs = sizes(ctx, 2, "crop or padding")?;
    let m = blocks.len();
    if m == 0 || m + 1 > rank || pairs.len() != 2 * m || blocks.contains(&0) {
        return Err(OpError::Invalid(format!(
            "{} with blocks {blocks:?} and pairs {pairs:?} on rank {rank}",
            ctx.op.name()
        )));
    }
    Ok((blocks, pairs.chunks(2).map(|c| (c[0], c[1])).collect()))
}

fn space_to_batch_nd(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let xs = x.shape().to_vec();
    let (blocks, pads) = blocks_and_pairs(ctx, xs.len())?;
    let m = blocks.len();
    let fill = if is_quantized(ctx.out_info(0)?) {
        f64::from(ctx.quant(ctx.out_info(0)?)?.zero_point())
    } else {
        0.0
    };
    let mut arg = vec![(0, 0); xs.len()];
    arg[1..=m].copy_from_slice(&pads);
    let xp = ctx.graph.pad_value(&x, &arg, fill)?;
    let ps = xp.shape().to_vec();
    let mut split = vec![ps[0]];
    for a in 0..m {
        if ps[a + 1] % blocks[a] != 0 {
            return Err(OpError::Invalid(format!(
                "padded size {} of axis {} is not a multiple of its block {}",
                ps[a + 1],
                a + 1,
                blocks[a]
            )));
        }
        split.extend([ps[a + 1] / blocks[a], blocks[a]]);
    }
    split.extend(&ps[m + 1..]);
    // [N, S1/b1, b1, …] → [b1, …, bm, N, S1/b1, …, rest]
    let mut perm: Vec<usize> = (0..m).map(|a| 2 + 2 * a).collect();
    perm.push(0);
    perm.extend((0..m).map(|a| 1 + 2 * a));
    perm.extend(2 * m + 1..split.len());
    let mut out = vec![ps[0] * blocks.iter().product::<usize>()];
    out.extend((0..m).map(|a| ps[a + 1] / blocks[a]));
    out.extend(&ps[m + 1..]);
    let y = xp.reshape(&split)?.permute(&perm)?.reshape(&out)?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn batch_to_space_nd(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let xs = x.shape().to_vec();
    let (blocks, crops) = blocks_and_pairs(ctx, xs.len())?;
    let m = blocks.len();
    let nb: usize = blocks.iter().product();
    if xs[0] % nb != 0 {
        return Err(OpError::Invalid(format!(
            "batch {} is not a multiple of the blocks' {nb}",
            xs[0]
        )));
    }
    let n = xs[0] / nb;
    let mut split = blocks.clone();
    split.push(n);
    split.extend(&xs[1..]);
    // [b1, …, bm, N, S1, …, Sm, rest] → [N, S1, b1, …, Sm, bm, rest]
    let mut perm = vec![m];
    for a in 0..m {
        perm.extend([m + 1 + a, a]);
    }
    perm.extend(2 * m + 1..split.len());
    let mut out = vec![n];
    out.extend((0..m).map(|a| xs[a + 1] * blocks[a]));
    out.extend(&xs[m + 1..]);
    let mut y = x.reshape(&split)?.permute(&perm)?.reshape(&out)?;
    for (a, &(b, e)) in crops.iter().enumerate() {
        let d = out[a + 1];
        if b + e > d {
            return Err(OpError::Invalid(format!(
                "crops ({b}, {e}) of axis {} of size {d}",
                a + 1
            )));
        }
        y = y.slice_axis(a + 1, b as i64, (d - e) as i64, 1)?;
    }
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// `x[lo..hi]` along `axis`, reversed.
fn flipped(x: &Lazy, axis: usize, lo: usize, hi: usize) -> Result<Lazy, OpError> {
    let mut mul = vec![1; x.shape().len()];
    mul[axis] = -1;
    Ok(x.slice_axis(axis, lo as i64, hi as i64, 1)?.stride(&mul)?)
}

/// `MIRROR_PAD`: each axis grown by mirrored copies of its ends, without the edge element
/// (`REFLECT`) or with it (`SYMMETRIC`).
fn mirror_pad(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let o = ctx.options(|o| match o {
        BuiltinOptions::MirrorPadOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let edge = usize::from(o.mode == MirrorPadMode::Reflect);
    let mut y = ctx.input(0)?;
    let rank = y.shape().len();
    let p = sizes(ctx, 1, "padding")?;
    if p.len() != 2 * rank {
        return Err(OpError::Invalid(format!("paddings {p:?} for rank {rank}")));
    }
    for a in 0..rank {
        let (b, e, d) = (p[2 * a], p[2 * a + 1], y.shape()[a]);
        if b + edge > d || e + edge > d {
            return Err(OpError::Invalid(format!(
                "mirror padding ({b}, {e}) of axis {a} of size {d}"
            )));
        }
        let mut parts = Vec::with_capacity(3);
        if b > 0 {
            parts.push(flipped(&y, a, edge, edge + b)?);
        }
        parts.push(y.clone());
        if e > 0 {
            parts.push(flipped(&y, a, d - edge - e, d - edge)?);
        }
        if parts.len() > 1 {
            y = ctx.graph.concat(&parts, a)?;
        }
    }
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn reverse_v2(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    let mut mul = vec![1; rank];
    for a in ctx.ints(1)? {
        mul[crate::graph::tensor::axis("REVERSE_V2", a, rank)?] = -1;
    }
    Ok(vec![x.stride(&mul)?])
}

fn broadcast_to(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let shape = sizes(ctx, 1, "dimension")?;
    let y = crate::graph::tensor::broadcast_to(&x, &shape)?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// The broadcast of two shape vectors: each padded in front with 1s to the longer's length,
/// then per entry the one that is not 1 (`a` where both are not).
fn broadcast_args(ctx: &mut Ctx) -> Out {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    if a.shape().len() != 1 || b.shape().len() != 1 || a.dtype != b.dtype {
        return Err(OpError::Invalid(format!(
            "BROADCAST_ARGS of {:?} and {:?}",
            a.shape(),
            b.shape()
        )));
    }
    let r = a.numel().max(b.numel());
    let g = &mut *ctx.graph;
    let a = g.pad_value(&a, &[(r - a.numel(), 0)], 1.0)?;
    let b = g.pad_value(&b, &[(r - b.numel(), 0)], 1.0)?;
    let one = g.int_const(1, a.dtype, &[r]);
    let a_is_one = g.eq(&a, &one)?;
    let y = g.where_(&a_is_one, &b, &a)?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn shape(ctx: &mut Ctx) -> Out {
    let dims: Vec<i64> = ctx.info(0)?.shape.iter().map(|&d| d as i64).collect();
    let out = ctx.out_info(0)?.clone();
    if !matches!(out.dtype, Scalar::I32 | Scalar::I64) {
        return Err(OpError::Unsupported(format!("SHAPE to {}", out.dtype)));
    }
    let t = Tensor::from_i64(out.dtype, vec![dims.len()], &dims).expect("one per axis");
    Ok(vec![ctx.graph.weight(&out.name, t)])
}

/// `FILL`: the scalar value (input 1) repeated over the constant dimensions (input 0).
fn fill(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 1)?;
    let shape = sizes(ctx, 0, "dimension")?;
    let v = ctx.input(1)?;
    if v.numel() != 1 {
        return Err(OpError::Invalid(format!(
            "FILL with a value of shape {:?}",
            v.shape()
        )));
    }
    let y = v.reshape(&vec![1; shape.len()])?.expand(&shape)?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

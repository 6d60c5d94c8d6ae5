//! RotaryEmbedding (opset 23): rotates pairs of each head's features by the angles of a cos
//! and a sin cache at each position.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::graph::{Graph, Lazy};
use crate::ops::BinaryOp;

pub(super) const OPS: &[(&str, OpBuilder)] = &[("RotaryEmbedding", rotary_embedding)];

type Out = Result<Vec<Value>, OpError>;

/// Rotates pairs of features by the angles of `cos_cache` and `sin_cache` at each position:
/// halves (or interleaved pairs) of the first `rotary_embedding_dim` features of each head.
fn rotary_embedding(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let interleaved = ctx.attrs().int_or("interleaved", 0)? != 0;
    let rot_dim = ctx.attrs().int_or("rotary_embedding_dim", 0)?;
    let heads = ctx.attrs().int_or("num_heads", 0)?;
    let x = ctx.tensor(0)?;
    let cos = ctx.tensor(1)?;
    let sin = ctx.tensor(2)?;
    let pos = ctx.opt_tensor(3)?;
    let shape = x.shape().to_vec();
    let x4 = rotary_heads(&x, heads)?;
    let s4 = x4.shape().to_vec();
    let (b, sq, d) = (s4[0], s4[1], s4[3]);
    let rd = if rot_dim == 0 {
        d
    } else {
        super::ctx::to_usize(rot_dim, "rotary_embedding_dim")?
    };
    if rd > d || rd % 2 != 0 {
        return Err(invalid(format!(
            "rotary_embedding_dim {rd} must be even and at most the head size {d}"
        )));
    }
    let g = &mut *ctx.graph;
    let (cos, sin) = rotary_caches(g, cos, sin, pos, (b, sq, rd / 2))?;
    let y = rotate(g, &x4, &cos, &sin, rd, interleaved)?;
    let y = match shape.len() {
        4 => y.permute(&[0, 2, 1, 3])?,
        _ => y.reshape(&shape)?,
    };
    Ok(vec![Value::Tensor(y)])
}

/// RotaryEmbedding's input as (batch, seq, heads, size): a 4-D input is (batch, heads, seq,
/// size), a 3-D one (batch, seq, heads · size) with `num_heads` heads.
fn rotary_heads(x: &Lazy, heads: i64) -> Result<Lazy, OpError> {
    let shape = x.shape().to_vec();
    match shape.len() {
        4 => Ok(x.permute(&[0, 2, 1, 3])?),
        3 => {
            let h = usize::try_from(heads)
                .ok()
                .filter(|&h| h > 0 && shape[2].is_multiple_of(h))
                .ok_or_else(|| {
                    invalid(format!(
                        "3-D input {shape:?} needs num_heads dividing {}, not {heads}",
                        shape[2]
                    ))
                })?;
            Ok(x.reshape(&[shape[0], shape[1], h, shape[2] / h])?)
        }
        _ => Err(invalid(format!("input {shape:?} is not 3-D or 4-D"))),
    }
}

/// The cos and sin caches at each position, as (batch, seq, 1, half): gathered by
/// `position_ids` when given, else already (batch, seq, half).
fn rotary_caches(
    g: &mut Graph,
    mut cos: Lazy,
    mut sin: Lazy,
    pos: Option<Lazy>,
    (b, sq, half): (usize, usize, usize),
) -> Result<(Lazy, Lazy), OpError> {
    if let Some(p) = pos {
        if p.shape() != [b, sq] {
            return Err(invalid(format!(
                "position_ids {:?} must be ({b}, {sq})",
                p.shape()
            )));
        }
        let rows = |c: &Lazy| c.shape().get(1).copied().unwrap_or(0);
        let (hc, hs) = (rows(&cos), rows(&sin));
        cos = super::gather::gather_one_hot(g, &cos, 0, &p)?.reshape(&[b, sq, hc])?;
        sin = super::gather::gather_one_hot(g, &sin, 0, &p)?.reshape(&[b, sq, hs])?;
    }
    if cos.shape() != [b, sq, half] || sin.shape() != [b, sq, half] {
        return Err(invalid(format!(
            "cos {:?} and sin {:?} caches must be ({b}, {sq}, {half})",
            cos.shape(),
            sin.shape()
        )));
    }
    Ok((
        cos.reshape(&[b, sq, 1, half])?,
        sin.reshape(&[b, sq, 1, half])?,
    ))
}

/// Features `lo..hi` of each head of the (batch, seq, heads, size) `x4`.
fn features(x4: &Lazy, lo: usize, hi: usize) -> Result<Lazy, OpError> {
    let mut arg: Vec<(usize, usize)> = x4.shape().iter().map(|&v| (0, v)).collect();
    arg[3] = (lo, hi);
    Ok(x4.shrink(&arg)?)
}

/// The two halves of each rotated pair of the first `rd` features: the first and second
/// halves, or the even and odd features when `interleaved`.
fn rotary_pairs(x4: &Lazy, rd: usize, interleaved: bool) -> Result<(Lazy, Lazy), OpError> {
    let half = rd / 2;
    if !interleaved {
        return Ok((features(x4, 0, half)?, features(x4, half, rd)?));
    }
    let (b, sq, h) = (x4.shape()[0], x4.shape()[1], x4.shape()[2]);
    let pairs = features(x4, 0, rd)?.reshape(&[b, sq, h, half, 2])?;
    let pick = |k: usize| -> Result<Lazy, OpError> {
        Ok(pairs
            .shrink(&[(0, b), (0, sq), (0, h), (0, half), (k, k + 1)])?
            .reshape(&[b, sq, h, half])?)
    };
    Ok((pick(0)?, pick(1)?))
}

/// `x4` with its first `rd` features rotated pairwise by the angles of `cos` and `sin`.
fn rotate(
    g: &mut Graph,
    x4: &Lazy,
    cos: &Lazy,
    sin: &Lazy,
    rd: usize,
    interleaved: bool,
) -> Result<Lazy, OpError> {
    let (b, sq, h, d) = (x4.shape()[0], x4.shape()[1], x4.shape()[2], x4.shape()[3]);
    let half = rd / 2;
    let (x1, x2) = rotary_pairs(x4, rd, interleaved)?;
    let c1 = g.binary(BinaryOp::Mul, cos, &x1)?;
    let s2 = g.binary(BinaryOp::Mul, sin, &x2)?;
    let real = g.binary(BinaryOp::Sub, &c1, &s2)?;
    let s1 = g.binary(BinaryOp::Mul, sin, &x1)?;
    let c2 = g.binary(BinaryOp::Mul, cos, &x2)?;
    let imag = g.binary(BinaryOp::Add, &s1, &c2)?;
    let rotated = if interleaved {
        let r = real.reshape(&[b, sq, h, half, 1])?;
        let i = imag.reshape(&[b, sq, h, half, 1])?;
        g.concat(&[r, i], 4)?.reshape(&[b, sq, h, rd])?
    } else {
        g.concat(&[real, imag], 3)?
    };
    if rd < d {
        let rest = features(x4, rd, d)?;
        Ok(g.concat(&[rotated, rest], 3)?)
    } else {
        Ok(rotated)
    }
}

//! RMSNormalization and LpNormalization.

use super::ctx::{invalid, norm_axis, Ctx, OpError, Value};
use super::OpBuilder;
use crate::ops::{BinaryOp, ReduceOp, UnaryOp};

pub(super) const OPS: &[(&str, OpBuilder)] =
    &[("RMSNormalization", rms_norm), ("LpNormalization", lp_norm)];

type Out = Result<Vec<Value>, OpError>;

/// `x / sqrt(mean(x²) + epsilon) · scale`, the mean over the axes from `axis` on.
fn rms_norm(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let eps = f64::from(ctx.attrs().float_or("epsilon", 1e-5)?);
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let axis = norm_axis(ctx.attrs().int_or("axis", -1)?, rank, false)?;
    let scale = ctx.tensor(1)?;
    let axes: Vec<usize> = (axis..rank).collect();
    let g = &mut *ctx.graph;
    let sq = g.binary(BinaryOp::Mul, &x, &x)?;
    let ms = g.mean(&sq, &axes)?;
    let ms = g.add_scalar(&ms, eps)?;
    let rms = g.unary(UnaryOp::Sqrt, &ms)?;
    let inv = g.unary(UnaryOp::Recip, &rms)?;
    let n = g.binary(BinaryOp::Mul, &x, &inv)?;
    Ok(vec![Value::Tensor(g.binary(BinaryOp::Mul, &n, &scale)?)])
}

/// `x / ‖x‖_p` along `axis`, p 1 or 2 (a zero norm gives zeros, as in the reference).
fn lp_norm(ctx: &mut Ctx) -> Out {
    let p = ctx.attrs().int_or("p", 2)?;
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let axis = norm_axis(ctx.attrs().int_or("axis", -1)?, rank, false)?;
    let g = &mut *ctx.graph;
    let norm = match p {
        1 => {
            let a = g.abs(&x)?;
            g.reduce(ReduceOp::Sum, &a, &[axis])?
        }
        2 => {
            let sq = g.binary(BinaryOp::Mul, &x, &x)?;
            let s = g.reduce(ReduceOp::Sum, &sq, &[axis])?;
            g.unary(UnaryOp::Sqrt, &s)?
        }
        other => return Err(invalid(format!("p = {other} (ONNX allows 1 and 2)"))),
    };
    let zero = g.scalar_like(&norm, 0.0);
    let is_zero = g.eq(&norm, &zero)?;
    let one = g.scalar_like(&norm, 1.0);
    let safe = g.where_(&is_zero, &one, &norm)?;
    Ok(vec![Value::Tensor(g.binary(BinaryOp::Div, &x, &safe)?)])
}

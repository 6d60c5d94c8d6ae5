//! Comparisons (`EQUAL`, `NOT_EQUAL`, `GREATER`, `GREATER_EQUAL`, `LESS`, `LESS_EQUAL`), the
//! logical ops and `SELECT` / `SELECT_V2`, all with numpy broadcasting and bool results.
//!
//! Int8 comparisons follow TFLM in comparing rescaled values, not raw ones: each side is
//! centred, shifted left by 8 and multiplied by its own scale as a fixed-point multiplier
//! (`MBQM((x − zp) · 2^8, s)`), so that operands of different scales compare as reals do.

use super::{Ctx, OpBuilder};
use crate::dtype::Scalar;
use crate::graph::quant::{Multipliers, QuantMultiplier};
use crate::graph::{Graph, Lazy};
use crate::ops::BinaryOp;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::BuiltinOperator as Op;

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Equal, equal),
    (Op::NotEqual, not_equal),
    (Op::Greater, greater),
    (Op::GreaterEqual, greater_equal),
    (Op::Less, less),
    (Op::LessEqual, less_equal),
    (Op::LogicalAnd, logical_and),
    (Op::LogicalOr, logical_or),
    (Op::LogicalNot, logical_not),
    (Op::Select, select),
    (Op::SelectV2, select_v2),
];

type Out = Result<Vec<Lazy>, OpError>;

/// Which comparison: `a < b`, `a ≤ b` (operands swapped for `>` and `≥`), `==` or `!=`.
#[derive(Clone, Copy, PartialEq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
}

/// Both operands, rescaled for int8 as TFLM does; the raw values for the other types it takes.
fn operands(ctx: &mut Ctx, ordered: bool) -> Result<(Lazy, Lazy), OpError> {
    let (ta, tb) = (ctx.info(0)?.clone(), ctx.info(1)?.clone());
    if ta.dtype != tb.dtype {
        return Err(OpError::Invalid(format!(
            "{} compares {} ({:?}) with {} ({:?})",
            ctx.op.name(),
            ta.dtype,
            ta.name,
            tb.dtype,
            tb.name
        )));
    }
    let taken = match ta.dtype {
        Scalar::F32 | Scalar::I32 | Scalar::I64 | Scalar::I8 => true,
        Scalar::Bool => !ordered,
        _ => false,
    };
    if !taken {
        // TFLM's kernel reaches int16 only for GREATER, with the rescaling it never sets up
        // (every result false): no arithmetic to follow.
        return Err(OpError::Unsupported(format!(
            "{} on {}",
            ctx.op.name(),
            ta.dtype
        )));
    }
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    if ta.dtype != Scalar::I8 {
        return Ok((a, b));
    }
    let (qa, qb) = (ctx.quant(&ta)?, ctx.quant(&tb)?);
    let g = &mut *ctx.graph;
    Ok((
        rescaled(g, &a, qa.zero_point(), qa.scale())?,
        rescaled(g, &b, qb.zero_point(), qb.scale())?,
    ))
}

/// `MBQM((x − zp) · 2^8, s)`: TFLM's common scale for int8 comparisons.
fn rescaled(g: &mut Graph, x: &Lazy, zp: i32, scale: f32) -> Result<Lazy, OpError> {
    let c = super::elementwise::centred(g, x, zp)?;
    let c = g.int_scalar(BinaryOp::Mul, &c, 1 << 8)?;
    let m = Multipliers::Tensor(QuantMultiplier::new(f64::from(scale)));
    Ok(g.requantize(&c, &m)?)
}

fn compare(ctx: &mut Ctx, cmp: Cmp, swap: bool) -> Out {
    let ordered = matches!(cmp, Cmp::Lt | Cmp::Le);
    let (a, b) = operands(ctx, ordered)?;
    let (a, b) = if swap { (b, a) } else { (a, b) };
    let g = &mut *ctx.graph;
    let y = match cmp {
        Cmp::Eq => g.eq(&a, &b)?,
        Cmp::Ne => g.binary(BinaryOp::CmpNe, &a, &b)?,
        Cmp::Lt => g.lt(&a, &b)?,
        Cmp::Le => g.le(&a, &b)?,
    };
    Ok(vec![y])
}

fn equal(ctx: &mut Ctx) -> Out {
    compare(ctx, Cmp::Eq, false)
}

fn not_equal(ctx: &mut Ctx) -> Out {
    compare(ctx, Cmp::Ne, false)
}

fn greater(ctx: &mut Ctx) -> Out {
    compare(ctx, Cmp::Lt, true)
}

fn greater_equal(ctx: &mut Ctx) -> Out {
    compare(ctx, Cmp::Le, true)
}

fn less(ctx: &mut Ctx) -> Out {
    compare(ctx, Cmp::Lt, false)
}

fn less_equal(ctx: &mut Ctx) -> Out {
    compare(ctx, Cmp::Le, false)
}

/// Input `i`, which must be a bool tensor.
fn bool_input(ctx: &mut Ctx, i: usize) -> Result<Lazy, OpError> {
    let t = ctx.info(i)?;
    if t.dtype != Scalar::Bool {
        return Err(OpError::Unsupported(format!(
            "{} on {} ({:?}; bool is taken)",
            ctx.op.name(),
            t.dtype,
            t.name
        )));
    }
    ctx.input(i)
}

fn logical(ctx: &mut Ctx, op: BinaryOp) -> Out {
    let (a, b) = (bool_input(ctx, 0)?, bool_input(ctx, 1)?);
    Ok(vec![ctx.graph.binary(op, &a, &b)?])
}

fn logical_and(ctx: &mut Ctx) -> Out {
    logical(ctx, BinaryOp::And)
}

fn logical_or(ctx: &mut Ctx) -> Out {
    logical(ctx, BinaryOp::Or)
}

fn logical_not(ctx: &mut Ctx) -> Out {
    let x = bool_input(ctx, 0)?;
    Ok(vec![ctx.graph.not(&x)?])
}

/// `cond ? x : y`, elementwise on the stored values (the operands and the output share their
/// type; quantized values are copied as they are).
fn select_values(ctx: &mut Ctx, v1: bool) -> Out {
    let cond = bool_input(ctx, 0)?;
    let (tx, ty) = (ctx.info(1)?.clone(), ctx.info(2)?.clone());
    if tx.dtype != ty.dtype {
        return Err(OpError::Invalid(format!(
            "{} chooses between {} ({:?}) and {} ({:?})",
            ctx.op.name(),
            tx.dtype,
            tx.name,
            ty.dtype,
            ty.name
        )));
    }
    let (x, y) = (ctx.input(1)?, ctx.input(2)?);
    // SELECT (v1) also takes a condition of one value per row of `x`.
    let cond = if v1 && cond.shape().len() == 1 && x.shape().len() > 1 {
        let mut s = vec![1; x.shape().len()];
        s[0] = cond.shape()[0];
        cond.reshape(&s)?
    } else {
        cond
    };
    Ok(vec![ctx.graph.where_(&cond, &x, &y)?])
}

fn select(ctx: &mut Ctx) -> Out {
    select_values(ctx, true)
}

fn select_v2(ctx: &mut Ctx) -> Out {
    select_values(ctx, false)
}

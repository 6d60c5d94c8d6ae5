//! Reductions over axes given by a constant tensor: `MEAN`, `SUM`, `REDUCE_MAX`, `REDUCE_MIN`,
//! `REDUCE_PROD`, `REDUCE_ALL`, `REDUCE_ANY` (`keep_dims` keeps the reduced axes as size 1),
//! and `CUMSUM`.
//!
//! Quantized, as TFLM's reference kernels compute them: the extremes of the raw values (input
//! and output share scale and zero point); a sum of `x − zp_in` in i32 requantized by
//! `scale_in / scale_out`, for `MEAN` with `1/n` folded into the multiplier the way TFLM's
//! `QuantizedMeanOrSum` does it (a shift of `⌊log₂ n⌋`, at most 32 and at most `31 + shift`,
//! and a truncating division of the multiplier by `n`).
//!
//! `REDUCE_ALL` and `REDUCE_ANY` of bools are the minimum and maximum of `0`/`1`. `CUMSUM` sums
//! a window reaching back over the whole axis (the axis padded with zeros in front). Int8, as
//! TFLM's kernel: each `x − zp_in` shifted left by 20 and halved by its fixed-point multiplier
//! (`(x − zp_in) · 2^19` exactly), the running sum started at `−zp_in · 2^19` (the kernel's
//! accumulator starts from the scaled input offset), then requantized by
//! `2 · s_in / (2^20 · s_out)`.

use super::{int_range, is_quantized, Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{Multipliers, QuantMultiplier};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Mean, mean),
    (Op::Sum, sum),
    (Op::ReduceMax, reduce_max),
    (Op::ReduceMin, reduce_min),
    (Op::ReduceProd, reduce_prod),
    (Op::ReduceAll, reduce_all),
    (Op::ReduceAny, reduce_any),
    (Op::Cumsum, cumsum),
];

type Out = Result<Vec<Lazy>, OpError>;

fn mean(ctx: &mut Ctx) -> Out {
    summed(ctx, true)
}

fn sum(ctx: &mut Ctx) -> Out {
    summed(ctx, false)
}

fn reduce_max(ctx: &mut Ctx) -> Out {
    extreme(ctx, true)
}

fn reduce_min(ctx: &mut Ctx) -> Out {
    extreme(ctx, false)
}

/// `REDUCE_PROD` of float or integer values (TFLM has no such kernel; LiteRT's quantized one
/// rescales at every step, which Kiln does not do).
fn reduce_prod(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    if is_quantized(&t) {
        return Err(OpError::Unsupported(format!(
            "REDUCE_PROD on quantized {} (TFLM has no REDUCE_PROD)",
            t.dtype
        )));
    }
    let axes = axes(ctx)?;
    let x = ctx.input(0)?;
    let y = ctx.graph.reduce_prod(&x, &axes)?;
    finish(ctx, y)
}

/// The reduced axes (input 1, negative from the end, repeats once). `keep_dims` needs no
/// reading: the output's shape in the file says it.
fn axes(ctx: &Ctx) -> Result<Vec<usize>, OpError> {
    let rank = ctx.info(0)?.shape.len();
    let mut axes = Vec::new();
    for a in ctx.ints(1)? {
        let axis = crate::graph::tensor::axis("reduce", a, rank)?;
        if !axes.contains(&axis) {
            axes.push(axis);
        }
    }
    Ok(axes)
}

/// `y` (reduced over `axes`, kept as 1) in the output's shape.
fn finish(ctx: &Ctx, y: Lazy) -> Out {
    let shape = ctx.out_info(0)?.shape.clone();
    let n: usize = shape.iter().product();
    if n != y.shape().iter().product::<usize>() {
        return Err(OpError::Invalid(format!(
            "output shape {shape:?} for a result of shape {:?}",
            y.shape()
        )));
    }
    Ok(vec![y.reshape(&shape)?])
}

fn extreme(ctx: &mut Ctx, max: bool) -> Out {
    let axes = axes(ctx)?;
    if is_quantized(ctx.info(0)?) {
        let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.out_info(0)?)?);
        if qi.scale() != qo.scale() || qi.zero_point() != qo.zero_point() {
            return Err(OpError::Unsupported(format!(
                "{} with an output quantized unlike its input",
                ctx.op.name()
            )));
        }
    }
    let x = ctx.input(0)?;
    let y = match max {
        true => ctx.graph.reduce(ReduceOp::Max, &x, &axes)?,
        false => ctx.graph.reduce_min(&x, &axes)?,
    };
    finish(ctx, y)
}

fn summed(ctx: &mut Ctx, mean: bool) -> Out {
    let axes = axes(ctx)?;
    let x = ctx.input(0)?;
    let n: usize = axes.iter().map(|&a| x.shape()[a]).product();
    if !is_quantized(ctx.info(0)?) {
        let y = match mean {
            true => ctx.graph.mean(&x, &axes)?,
            false => ctx.graph.reduce(ReduceOp::Sum, &x, &axes)?,
        };
        return finish(ctx, y);
    }
    let (qi, qo) = (ctx.quant(ctx.info(0)?)?, ctx.quant(ctx.out_info(0)?)?);
    let out = DType::from(ctx.out_info(0)?.dtype);
    let range = int_range(out.scalar)?;
    let g = &mut *ctx.graph;
    let wide = g.cast(&x, DType::I32);
    let acc = g.reduce(ReduceOp::Sum, &wide, &axes)?;
    let acc = g.int_scalar(BinaryOp::Sub, &acc, i64::from(qi.zero_point()) * n as i64)?;
    let mut m = QuantMultiplier::new(f64::from(qi.scale()) / f64::from(qo.scale()));
    if mean && n > 0 {
        m = with_count(m, n as i64);
    }
    let y = g.requantize_to(&acc, &Multipliers::Tensor(m), qo.zero_point(), range, out)?;
    finish(ctx, y)
}

fn reduce_all(ctx: &mut Ctx) -> Out {
    logical(ctx, true)
}

fn reduce_any(ctx: &mut Ctx) -> Out {
    logical(ctx, false)
}

/// Whether all (or any) of the bools over the axes are true.
fn logical(ctx: &mut Ctx, all: bool) -> Out {
    let dtype = ctx.info(0)?.dtype;
    if dtype != Scalar::Bool {
        return Err(OpError::Unsupported(format!(
            "{} on {dtype} (bool is)",
            ctx.op.name()
        )));
    }
    let axes = axes(ctx)?;
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    let v = g.cast(&x, DType::I32);
    let r = match all {
        true => g.reduce_min(&v, &axes)?,
        false => g.reduce(ReduceOp::Max, &v, &axes)?,
    };
    let y = g.cast(&r, DType::BOOL);
    finish(ctx, y)
}

/// Running sums of `x` along `axis`: inclusive or `exclusive`, from the end when `reverse`.
fn running_sum(
    g: &mut Graph,
    x: &Lazy,
    axis: usize,
    exclusive: bool,
    reverse: bool,
) -> Result<Lazy, OpError> {
    let rank = x.shape().len();
    let n = x.shape()[axis];
    if n == 0 {
        return Ok(x.clone());
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
    let mut pads = vec![(0, 0); rank];
    pads[rank - 1] = (if exclusive { n } else { n - 1 }, 0);
    let y = g.pad_value(&y, &pads, 0.0)?;
    let w = g.pool(&y, &[n], &[1], &[1], &[(0, 0)])?;
    let s = g.reduce(ReduceOp::Sum, &w, &[rank])?;
    let mut s = s.reshape(&w.shape()[..rank])?;
    if exclusive {
        s = s.slice_axis(rank - 1, 0, n as i64, 1)?;
    }
    if reverse {
        s = s.stride(&flip)?;
    }
    Ok(s.permute(&back)?)
}

fn cumsum(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::CumsumOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    let axis = match ctx.ints(1)?[..] {
        [a] => crate::graph::tensor::axis("CUMSUM", a, rank)?,
        ref other => return Err(OpError::Invalid(format!("CUMSUM axis {other:?}"))),
    };
    let (t, out) = (ctx.info(0)?.clone(), ctx.out_info(0)?.clone());
    let y = match t.dtype {
        Scalar::F32 => running_sum(ctx.graph, &x, axis, o.exclusive, o.reverse)?,
        Scalar::I8 => {
            let (qi, qo) = (ctx.quant(&t)?, ctx.quant(&out)?);
            let zp = i64::from(qi.zero_point());
            let g = &mut *ctx.graph;
            let wide = g.cast(&x, DType::I32);
            let c = g.int_scalar(BinaryOp::Sub, &wide, zp)?;
            let s = running_sum(g, &c, axis, o.exclusive, o.reverse)?;
            let s = g.int_scalar(BinaryOp::Add, &s, -zp)?;
            let s = g.int_scalar(BinaryOp::Mul, &s, 1 << 19)?;
            let real = 2.0 * f64::from(qi.scale()) / ((1 << 20) as f64 * f64::from(qo.scale()));
            let m = Multipliers::Tensor(QuantMultiplier::new(real));
            g.requantize_to(&s, &m, qo.zero_point(), (-128, 127), DType::I8)?
        }
        other => {
            return Err(OpError::Unsupported(format!(
                "CUMSUM on {other} (float32 and int8 are)"
            )))
        }
    };
    super::expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// TFLM's `QuantizedMeanOrSum` folding `1/n` into a multiplier.
fn with_count(m: QuantMultiplier, n: i64) -> QuantMultiplier {
    let k = (63 - (n as u64).leading_zeros() as i32)
        .min(32)
        .min(31 + m.shift);
    QuantMultiplier {
        multiplier: ((i64::from(m.multiplier) << k) / n) as i32,
        shift: m.shift - k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_folds_into_the_multiplier_as_tflm_does() {
        // 36 elements: a shift of 5, the multiplier times 32/36, truncated.
        let m = QuantMultiplier {
            multiplier: 1 << 30,
            shift: 1,
        };
        let f = with_count(m, 36);
        assert_eq!(f.shift, -4);
        assert_eq!(f.multiplier, (((1i64 << 30) << 5) / 36) as i32);
        // The shift is capped at 31 + shift.
        let small = QuantMultiplier {
            multiplier: 1 << 30,
            shift: -30,
        };
        assert_eq!(with_count(small, 1 << 10).shift, -31);
    }
}

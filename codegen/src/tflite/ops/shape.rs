//! Ops that move data without arithmetic: `RESHAPE`, `SQUEEZE`, `EXPAND_DIMS`, `TRANSPOSE`,
//! `PAD`, `CONCATENATION`, `STRIDED_SLICE`. The file gives each output's shape; a quantized tensor keeps its
//! values (TFLM copies them, and requires the same scale and zero point in and out).

use super::{is_quantized, Ctx, OpBuilder};
use crate::graph::Lazy;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Reshape, reshape),
    (Op::Squeeze, reshape),
    (Op::ExpandDims, reshape),
    (Op::Transpose, transpose),
    (Op::Pad, pad),
    (Op::Padv2, pad),
    (Op::Concatenation, concatenation),
    (Op::StridedSlice, strided_slice),
];

type Out = Result<Vec<Lazy>, OpError>;

/// Input `i` and output 0 carry the same quantization (or none).
fn same_quant(ctx: &Ctx, i: usize) -> Result<(), OpError> {
    let (a, b) = (&ctx.info(i)?.quant, &ctx.out_info(0)?.quant);
    let key = |q: &Option<crate::tflite::Quant>| {
        q.as_ref().map(|q| {
            (
                q.scale.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
                q.zero_point.clone(),
            )
        })
    };
    if key(a) != key(b) {
        return Err(OpError::Unsupported(format!(
            "{} with input {i} quantized unlike its output",
            ctx.op.name()
        )));
    }
    Ok(())
}

fn transpose(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let rank = x.shape().len() as i64;
    let perm = ctx
        .ints(1)?
        .into_iter()
        .map(|p| {
            let a = if p < 0 { p + rank } else { p };
            usize::try_from(a)
                .ok()
                .filter(|&a| (a as i64) < rank)
                .ok_or_else(|| OpError::Invalid(format!("permutation entry {p} for rank {rank}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(vec![x.permute(&perm)?])
}

/// `PAD` (with the output's zero point, or 0 for float) and `PADV2` (with its constant).
fn pad(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    let p = ctx.ints(1)?;
    if p.len() != 2 * rank || p.iter().any(|&v| v < 0) {
        return Err(OpError::Invalid(format!(
            "paddings {p:?} for rank {rank} (TFLite pads only outward)"
        )));
    }
    let arg: Vec<(usize, usize)> = p
        .chunks(2)
        .map(|c| (c[0] as usize, c[1] as usize))
        .collect();
    let value = if ctx.has(2) {
        let c = ctx.constant(2)?;
        c.to_f64().first().copied().unwrap_or(0.0)
    } else if is_quantized(ctx.out_info(0)?) {
        f64::from(ctx.quant(ctx.out_info(0)?)?.zero_point())
    } else {
        0.0
    };
    Ok(vec![ctx.graph.pad_value(&x, &arg, value)?])
}

fn concatenation(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::ConcatenationOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    super::activation(o.fused_activation_function).and_then(|a| match a {
        crate::graph::quant::Activation::None => Ok(()),
        _ => Err(OpError::Unsupported(
            "a fused activation on CONCATENATION".into(),
        )),
    })?;
    let n = ctx.op.inputs.len();
    let mut parts = Vec::with_capacity(n);
    for i in 0..n {
        same_quant(ctx, i)?;
        parts.push(ctx.input(i)?);
    }
    let rank = parts[0].shape().len();
    let axis = crate::graph::tensor::axis("CONCATENATION", i64::from(o.axis), rank)?;
    Ok(vec![ctx.graph.concat(&parts, axis)?])
}

/// Input 0 viewed with output 0's shape.
fn reshape(ctx: &mut Ctx) -> Result<Vec<Lazy>, OpError> {
    let x = ctx.input(0)?;
    let out = ctx.out_info(0)?;
    let (qi, qo) = (&ctx.info(0)?.quant, &out.quant);
    if qi != qo {
        return Err(OpError::Unsupported(format!(
            "a reshape to other quantization parameters ({:?})",
            out.name
        )));
    }
    Ok(vec![x.reshape(&out.shape.clone())?])
}

/// `STRIDED_SLICE`: per axis `begin:end:stride`, where a set bit of `begin_mask` / `end_mask`
/// takes the whole range that way, a set bit of `shrink_axis_mask` takes the one element at
/// `begin` and drops the axis, and `offset` makes `end` relative to `begin`.
fn strided_slice(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let o = ctx.options(|o| match o {
        BuiltinOptions::StridedSliceOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    for (mask, what) in [
        (o.ellipsis_mask, "ellipsis_mask"),
        (o.new_axis_mask, "new_axis_mask"),
    ] {
        if mask != 0 {
            return Err(OpError::Unsupported(format!(
                "STRIDED_SLICE with {what} {mask}"
            )));
        }
    }
    let mut x = ctx.input(0)?;
    let (begin, end, strides) = (ctx.ints(1)?, ctx.ints(2)?, ctx.ints(3)?);
    let rank = x.shape().len();
    if [begin.len(), end.len(), strides.len()] != [rank; 3] {
        return Err(OpError::Invalid(format!(
            "begin {begin:?}, end {end:?} and strides {strides:?} for rank {rank}"
        )));
    }
    let bit = |mask: i32, axis: usize| mask >> axis & 1 == 1;
    let mut keep = Vec::with_capacity(rank);
    for axis in 0..rank {
        let (b, e, step) = if bit(o.shrink_axis_mask, axis) {
            let d = x.shape()[axis] as i64;
            let b = if begin[axis] < 0 {
                begin[axis] + d
            } else {
                begin[axis]
            };
            if !(0..d).contains(&b) {
                return Err(OpError::Invalid(format!(
                    "shrink index {} on axis {axis} of size {d}",
                    begin[axis]
                )));
            }
            (b, b + 1, 1)
        } else {
            let step = strides[axis];
            let whole = |forward: i64, backward: i64| if step > 0 { forward } else { backward };
            let b = match bit(o.begin_mask, axis) {
                true => whole(0, i64::MAX),
                false => begin[axis],
            };
            let e = match (bit(o.end_mask, axis), o.offset) {
                (true, _) => whole(i64::MAX, i64::MIN),
                (false, true) => begin[axis] + end[axis],
                (false, false) => end[axis],
            };
            keep.push(axis);
            (b, e, step)
        };
        x = x.slice_axis(axis, b, e, step)?;
    }
    let shape: Vec<usize> = keep.iter().map(|&a| x.shape()[a]).collect();
    Ok(vec![x.reshape(&shape)?])
}

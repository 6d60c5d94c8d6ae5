//! Ops that move data without arithmetic: `RESHAPE`, `SQUEEZE`, `EXPAND_DIMS`, `TRANSPOSE`,
//! `PAD`, `CONCATENATION`. The file gives each output's shape; a quantized tensor keeps its
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

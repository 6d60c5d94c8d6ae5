//! Quantization as float arithmetic: `DequantizeLinear` and `QuantizeLinear` (per tensor or
//! per axis).

use super::ctx::{dtype_of, invalid, norm_axis, Ctx, OpError, Value};
use super::Builder;
use crate::dtype::{DType, Scalar};
use crate::graph::Lazy;
use crate::onnx::ElemType;
use crate::ops::BinaryOp;

pub(super) const OPS: &[(&str, Builder)] = &[
    ("DequantizeLinear", dequantize_linear),
    ("QuantizeLinear", quantize_linear),
];

type Out = Result<Vec<Value>, OpError>;

/// Scale and zero point broadcast along `axis` of `x` (per axis) or as scalars.
fn along_axis(ctx: &Ctx, p: &Lazy, x: &Lazy) -> Result<Lazy, OpError> {
    if ctx.attrs().int_or("block_size", 0)? != 0 {
        return Err(OpError::Unsupported("blocked quantization".into()));
    }
    match p.shape() {
        [] | [1] => Ok(p.clone()),
        [n] => {
            let rank = x.shape().len();
            let axis = norm_axis(ctx.attrs().int_or("axis", 1)?, rank, false)?;
            if x.shape()[axis] != *n {
                return Err(invalid(format!(
                    "{n} scales for axis {axis} of {:?}",
                    x.shape()
                )));
            }
            let mut shape = vec![1; rank];
            shape[axis] = *n;
            Ok(p.reshape(&shape)?)
        }
        s => Err(invalid(format!("scale or zero point of shape {s:?}"))),
    }
}

/// `(x - zero_point) * scale` in the scale's type.
fn dequantize_linear(ctx: &mut Ctx) -> Out {
    let (x, scale) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let scale = along_axis(ctx, &scale, &x)?;
    let g = &mut *ctx.graph;
    let mut xf = g.cast(&x, scale.dtype);
    if let Some(zp) = ctx.opt_tensor(2)? {
        let zp = along_axis(ctx, &zp, &x)?;
        let zf = ctx.graph.cast(&zp, scale.dtype);
        xf = ctx.graph.binary(BinaryOp::Sub, &xf, &zf)?;
    }
    Ok(vec![Value::Tensor(ctx.graph.binary(
        BinaryOp::Mul,
        &xf,
        &scale,
    )?)])
}

/// The integer type of `QuantizeLinear`'s output: the zero point's, else `output_dtype`, else
/// `uint8`.
fn quantized_type(ctx: &Ctx) -> Result<DType, OpError> {
    if ctx.has(2) {
        return ctx.dtype(2);
    }
    match ctx.attrs().int_or("output_dtype", 0)? {
        0 => Ok(DType::U8),
        code => {
            let elem = ElemType::from_code(i32::try_from(code).unwrap_or(-1));
            Ok(dtype_of(elem, super::ctx::output_name(ctx.node, 0))?)
        }
    }
}

/// The range of an integer type, as floats.
fn int_range(t: DType) -> Result<(f64, f64), OpError> {
    Ok(match t.scalar {
        Scalar::I8 => (-128.0, 127.0),
        Scalar::U8 => (0.0, 255.0),
        Scalar::I16 => (-32768.0, 32767.0),
        Scalar::U16 => (0.0, 65535.0),
        Scalar::I32 => (-2_147_483_648.0, 2_147_483_647.0),
        Scalar::U32 => (0.0, 4_294_967_295.0),
        s => return Err(OpError::Unsupported(format!("quantizing to {s}"))),
    })
}

/// `saturate(round_half_even(x / scale) + zero_point)`.
fn quantize_linear(ctx: &mut Ctx) -> Out {
    let to = quantized_type(ctx)?;
    let (lo, hi) = int_range(to)?;
    let (x, scale) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let scale = along_axis(ctx, &scale, &x)?;
    let zp = match ctx.opt_tensor(2)? {
        Some(zp) => Some(along_axis(ctx, &zp, &x)?),
        None => None,
    };
    let g = &mut *ctx.graph;
    let scale = g.cast(&scale, x.dtype);
    let q = g.binary(BinaryOp::Div, &x, &scale)?;
    let mut q = g.round_even(&q)?;
    if let Some(zp) = zp {
        let zf = g.cast(&zp, x.dtype);
        q = g.binary(BinaryOp::Add, &q, &zf)?;
    }
    let q = g.clip(&q, Some(lo), Some(hi))?;
    Ok(vec![Value::Tensor(g.cast(&q, to))])
}

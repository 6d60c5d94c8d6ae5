//! Quantization as float arithmetic: `DequantizeLinear` and `QuantizeLinear` (per tensor or
//! per axis), `DynamicQuantizeLinear`; integer products (`MatMulInteger`, `ConvInteger`) and
//! their quantized forms (`QLinearMatMul`, `QLinearConv`).

use super::ctx::{dtype_of, invalid, norm_axis, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::{DType, Scalar};
use crate::graph::Graph;
use crate::graph::Lazy;
use crate::onnx::ElemType;
use crate::ops::{BinaryOp, ReduceOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("DequantizeLinear", dequantize_linear),
    ("QuantizeLinear", quantize_linear),
    ("DynamicQuantizeLinear", dynamic_quantize_linear),
    ("MatMulInteger", matmul_integer),
    ("ConvInteger", conv_integer),
    ("QLinearMatMul", qlinear_matmul),
    ("QLinearConv", qlinear_conv),
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

/// `x - zero_point` as `i32`; a zero point with one value per row (`per_row`, of a matrix) or
/// per output channel (of a weight) is laid along that axis.
fn centered(g: &mut Graph, x: &Lazy, zp: Option<&Lazy>, axis: Axis) -> Result<Lazy, OpError> {
    let xi = g.cast(x, DType::I32);
    let Some(zp) = zp else {
        return Ok(xi);
    };
    let rank = x.shape().len();
    let zp = match (zp.shape(), axis) {
        ([] | [1], _) => zp.reshape(&[])?,
        ([n], Axis::Row) if rank >= 2 && x.shape()[rank - 2] == *n => zp.reshape(&[*n, 1])?,
        ([n], Axis::Column) if rank >= 1 && x.shape()[rank - 1] == *n => zp.clone(),
        ([n], Axis::Channel) if rank >= 1 && x.shape()[0] == *n => {
            let mut s = vec![1; rank];
            s[0] = *n;
            zp.reshape(&s)?
        }
        (s, _) => {
            return Err(invalid(format!(
                "zero point of shape {s:?} does not fit {:?}",
                x.shape()
            )))
        }
    };
    let zi = g.cast(&zp, DType::I32);
    Ok(g.binary(BinaryOp::Sub, &xi, &zi)?)
}

#[derive(Clone, Copy)]
enum Axis {
    /// One value for the whole tensor.
    Scalar,
    Row,
    Column,
    Channel,
}

fn matmul_integer(ctx: &mut Ctx) -> Out {
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let (za, zb) = (ctx.opt_tensor(2)?, ctx.opt_tensor(3)?);
    let g = &mut *ctx.graph;
    let a = centered(g, &a, za.as_ref(), Axis::Row)?;
    let b = centered(g, &b, zb.as_ref(), Axis::Column)?;
    Ok(vec![Value::Tensor(g.matmul(&a, &b)?)])
}

fn conv_integer(ctx: &mut Ctx) -> Out {
    let (x, w) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let (zx, zw) = (ctx.opt_tensor(2)?, ctx.opt_tensor(3)?);
    let x = centered(ctx.graph, &x, zx.as_ref(), Axis::Scalar)?;
    let w = centered(ctx.graph, &w, zw.as_ref(), Axis::Channel)?;
    Ok(vec![Value::Tensor(super::conv::conv_of(
        ctx, &x, &w, None,
    )?)])
}

/// `saturate(round_half_even(acc · scale + zero_point))` for an `i32` accumulator, computed
/// in `f64`; the combined scale is first computed in the scales' type.
fn requantize(
    g: &mut Graph,
    acc: &Lazy,
    scale: &Lazy,
    zp: Option<&Lazy>,
    to: DType,
) -> Result<Lazy, OpError> {
    let (lo, hi) = int_range(to)?;
    let s = g.cast(scale, DType::F64);
    let a = g.cast(acc, DType::F64);
    let mut y = g.binary(BinaryOp::Mul, &a, &s)?;
    if let Some(zp) = zp {
        let z = g.cast(zp, DType::F64);
        y = g.binary(BinaryOp::Add, &y, &z)?;
    }
    let y = g.round_even(&y)?;
    let y = g.clip(&y, Some(lo), Some(hi))?;
    Ok(g.cast(&y, to))
}

/// `a_scale · b_scale / y_scale` in the scales' type, shaped to broadcast over the output.
fn combined_scale(
    g: &mut Graph,
    sa: &Lazy,
    sb: &Lazy,
    sy: &Lazy,
    out_rank: usize,
    per: Axis,
) -> Result<Lazy, OpError> {
    let lay = |s: &Lazy, axis: Axis| -> Result<Lazy, OpError> {
        Ok(match (s.shape(), axis) {
            ([] | [1], _) => s.reshape(&[])?,
            ([n], Axis::Row) => s.reshape(&[*n, 1])?,
            ([_], Axis::Column) => s.clone(),
            ([n], Axis::Channel | Axis::Scalar) => {
                let mut sh = vec![1; out_rank];
                if out_rank > 1 {
                    sh[1] = *n;
                }
                s.reshape(&sh)?
            }
            (other, _) => return Err(invalid(format!("scale of shape {other:?}"))),
        })
    };
    let sa = lay(sa, Axis::Row)?;
    let sb = lay(sb, per)?;
    let sy = lay(sy, Axis::Column)?;
    let p = g.binary(BinaryOp::Mul, &sa, &sb)?;
    Ok(g.binary(BinaryOp::Div, &p, &sy)?)
}

fn qlinear_matmul(ctx: &mut Ctx) -> Out {
    let (a, sa, za) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.opt_tensor(2)?);
    let (b, sb, zb) = (ctx.tensor(3)?, ctx.tensor(4)?, ctx.opt_tensor(5)?);
    let (sy, zy) = (ctx.tensor(6)?, ctx.opt_tensor(7)?);
    let to = zy.as_ref().map_or(a.dtype, |z| z.dtype);
    let g = &mut *ctx.graph;
    let ai = centered(g, &a, za.as_ref(), Axis::Row)?;
    let bi = centered(g, &b, zb.as_ref(), Axis::Column)?;
    let acc = g.matmul(&ai, &bi)?;
    let rank = acc.shape().len();
    let scale = combined_scale(g, &sa, &sb, &sy, rank, Axis::Column)?;
    let zy = match zy {
        Some(z) if z.shape().len() == 1 && z.shape() != [1] => Some(z),
        Some(z) => Some(z.reshape(&[])?),
        None => None,
    };
    Ok(vec![Value::Tensor(requantize(
        g,
        &acc,
        &scale,
        zy.as_ref(),
        to,
    )?)])
}

fn qlinear_conv(ctx: &mut Ctx) -> Out {
    let (x, sx, zx) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.opt_tensor(2)?);
    let (w, sw, zw) = (ctx.tensor(3)?, ctx.tensor(4)?, ctx.opt_tensor(5)?);
    let (sy, zy) = (ctx.tensor(6)?, ctx.opt_tensor(7)?);
    let bias = ctx.opt_tensor(8)?;
    let to = zy.as_ref().map_or(x.dtype, |z| z.dtype);
    let xi = centered(ctx.graph, &x, zx.as_ref(), Axis::Scalar)?;
    let wi = centered(ctx.graph, &w, zw.as_ref(), Axis::Channel)?;
    let bias = bias.map(|b| ctx.graph.cast(&b, DType::I32));
    let acc = super::conv::conv_of(ctx, &xi, &wi, bias.as_ref())?;
    let rank = acc.shape().len();
    let g = &mut *ctx.graph;
    let sx = sx.reshape(&[])?;
    let scale = combined_scale(g, &sx, &sw, &sy, rank, Axis::Channel)?;
    let zy = match zy {
        Some(z) => Some(z.reshape(&[])?),
        None => None,
    };
    Ok(vec![Value::Tensor(requantize(
        g,
        &acc,
        &scale,
        zy.as_ref(),
        to,
    )?)])
}

/// `uint8` quantization with the scale and zero point that map `[min(x, 0), max(x, 0)]` onto
/// `[0, 255]`; outputs the quantized tensor, the scale and the zero point.
fn dynamic_quantize_linear(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    if !x.dtype.is_float() {
        return Err(invalid(format!("input is {}, not a float type", x.dtype)));
    }
    let g = &mut *ctx.graph;
    let all: Vec<usize> = (0..x.shape().len()).collect();
    let mx = g.reduce(ReduceOp::Max, &x, &all)?.reshape(&[])?;
    let mn = g.reduce_min(&x, &all)?.reshape(&[])?;
    let mx = g.max_scalar(&mx, 0.0)?;
    let zero = g.scalar_like(&mn, 0.0);
    let mn = g.min(&mn, &zero)?;
    let range = g.binary(BinaryOp::Sub, &mx, &mn)?;
    let same = g.eq(&mx, &mn)?;
    let one = g.scalar_like(&range, 1.0);
    let range = g.where_(&same, &one, &range)?;
    let scale = g.mul_scalar(&range, 1.0 / 255.0)?;
    let q = g.binary(BinaryOp::Div, &mn, &scale)?;
    let zp = g.neg(&q)?;
    let zp = g.clip(&zp, Some(0.0), Some(255.0))?;
    let zp = g.round_even(&zp)?;
    let shape = x.shape().to_vec();
    let sb = crate::graph::tensor::broadcast_to(&scale, &shape)?;
    let y = g.binary(BinaryOp::Div, &x, &sb)?;
    let y = g.round_even(&y)?;
    let zb = crate::graph::tensor::broadcast_to(&zp, &shape)?;
    let y = g.binary(BinaryOp::Add, &y, &zb)?;
    let y = g.clip(&y, Some(0.0), Some(255.0))?;
    let y = g.cast(&y, DType::U8);
    let zp = g.cast(&zp, DType::U8);
    Ok(vec![
        Value::Tensor(y),
        Value::Tensor(scale),
        Value::Tensor(zp),
    ])
}

//! Quantization: `DequantizeLinear` and `QuantizeLinear` (per tensor or per axis) and
//! `DynamicQuantizeLinear` as float arithmetic; integer products (`MatMulInteger`,
//! `ConvInteger`) and their quantized forms (`QLinearMatMul`, `QLinearConv`, onnxruntime's
//! `QGemm`) as integer kernels, requantized as the model's [`Requant`] says.

use super::ctx::{dtype_of, invalid, norm_axis, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{folded_zero_points, Multipliers, QuantMultiplier};
use crate::graph::Graph;
use crate::graph::Lazy;
use crate::onnx::narrow::ScaleRounding;
use crate::onnx::qdq::Requant;
use crate::onnx::{ElemType, Narrow};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;

/// onnxruntime's contrib ops here (`com.microsoft`).
pub(super) const MICROSOFT_OPS: &[(&str, OpBuilder)] = &[("QGemm", qgemm)];

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

/// The narrow type of `QuantizeLinear`'s output, when it has one: the zero point's, else
/// `output_dtype`'s.
fn quantized_narrow(ctx: &Ctx) -> Result<Option<Narrow>, OpError> {
    if ctx.has(2) {
        return Ok(ctx.narrow(2));
    }
    let code = ctx.attrs().int_or("output_dtype", 0)?;
    Ok(ElemType::from_code(i32::try_from(code).unwrap_or(-1)).narrow())
}

/// `QuantizeLinear` to a narrow type: integers as to `int8`, over their range; float8
/// converts `x / scale` (with `saturate`; its zero point is always zero), float4 `x / scale +
/// zero_point`.
fn quantize_narrow(ctx: &mut Ctx, to: Narrow) -> Out {
    let saturate = ctx.attrs().int_or("saturate", 1)? != 0;
    let (x, scale) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let scale = along_axis(ctx, &scale, &x)?;
    let zp = match ctx.opt_tensor(2)? {
        Some(zp) if !to.is_float8() => Some(along_axis(ctx, &zp, &x)?),
        _ => None,
    };
    let g = &mut *ctx.graph;
    let x = g.cast(&x, DType::F32);
    let scale = g.cast(&scale, DType::F32);
    let mut q = g.binary(BinaryOp::Div, &x, &scale)?;
    let int_range = to.int_range();
    if int_range.is_some() {
        q = g.round_even(&q)?;
    }
    if let Some(zp) = zp {
        let zf = g.cast(&zp, DType::F32);
        q = g.binary(BinaryOp::Add, &q, &zf)?;
    }
    let y = match int_range {
        Some((lo, hi)) => {
            let q = g.clip(&q, Some(lo as f64), Some(hi as f64))?;
            g.cast(&q, DType::from(to.container()))
        }
        None => to.convert(g, &q, saturate, ScaleRounding::Up)?,
    };
    ctx.set_narrow(0, to);
    Ok(vec![Value::Tensor(y)])
}

/// `saturate(round_half_even(x / scale) + zero_point)`.
fn quantize_linear(ctx: &mut Ctx) -> Out {
    if let Some(narrow) = quantized_narrow(ctx)? {
        return quantize_narrow(ctx, narrow);
    }
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

/// The requantization of an `i32` accumulator to the output type `to`, by the model's
/// [`Requant`]: with onnxruntime's float32 scale, or with TFLM's fixed-point multipliers.
struct Requantization {
    /// `a_scale · b_scale / y_scale` in the scales' type, shaped to broadcast over the output.
    scale: Lazy,
    /// The node's inputs `[a_scale, b_scale, y_scale, y_zero_point]`, for TFLM's multipliers.
    inputs: [usize; 4],
    zero_point: Option<Lazy>,
    /// The output axis a per-channel `b_scale` runs along.
    axis: usize,
    to: DType,
    /// A dense layer (a matrix product), whose per-tensor multiplier TFLM computes from the
    /// scales' product in float.
    dense: bool,
}

impl Requantization {
    fn apply(&self, ctx: &mut Ctx, acc: &Lazy) -> Result<Lazy, OpError> {
        match ctx.requant {
            Requant::Onnx => self.onnx(ctx, acc),
            Requant::Tflm => self.tflm(ctx, acc),
        }
    }

    /// onnxruntime's (MLAS's `MlasRequantizeOutput`): `float(acc) · scale` in float32, rounded
    /// half to even, plus the zero point, saturated. With a zero point known at compile time,
    /// as MLAS computes it: clamped to the range less the zero point, then rounded by adding and
    /// subtracting `1.5 · 2^23` (exact below `2^22`), the zero point added as an integer.
    fn onnx(&self, ctx: &mut Ctx, acc: &Lazy) -> Result<Lazy, OpError> {
        let (lo, hi) = int_range(self.to)?;
        let zp = match ctx.has(self.inputs[3]) {
            true => match ctx.known_ints(self.inputs[3])?.as_deref() {
                Some(&[z]) => Some(z),
                _ => None,
            },
            false => Some(0),
        };
        let g = &mut *ctx.graph;
        let s = g.cast(&self.scale, DType::F32);
        let a = g.cast(acc, DType::F32);
        let y = g.binary(BinaryOp::Mul, &a, &s)?;
        if let Some(z) = zp {
            const ROUND: f64 = 12_582_912.0;
            let v = g.clip(&y, Some(lo - z as f64), Some(hi - z as f64))?;
            let r = g.add_scalar(&v, ROUND)?;
            let r = g.add_scalar(&r, -ROUND)?;
            let r = g.cast(&r, DType::I32);
            let r = g.int_scalar(BinaryOp::Add, &r, z)?;
            return Ok(g.cast(&r, self.to));
        }
        let mut y = g.round_even(&y)?;
        if let Some(zp) = &self.zero_point {
            // Exact: the rounded value is an integer, and any beyond 2^24 saturates below.
            let z = g.cast(zp, DType::F32);
            y = g.binary(BinaryOp::Add, &y, &z)?;
        }
        let y = g.clip(&y, Some(lo), Some(hi))?;
        Ok(g.cast(&y, self.to))
    }

    /// TFLM's: a fixed-point multiplier per output channel, computed at compile time from the
    /// scales as TFLM's convolution and dense layer set-ups do (in double; a per-tensor dense
    /// layer's product in float), and integer arithmetic only.
    fn tflm(&self, ctx: &mut Ctx, acc: &Lazy) -> Result<Lazy, OpError> {
        let [sa, sb, sy, zy] = self.inputs;
        let scales = |i: usize| -> Result<Vec<f32>, OpError> {
            let t = ctx.known(i).map_err(|_| {
                OpError::Unsupported("--requant tflm with scales computed at run time".into())
            })?;
            Ok(t.to_f64().into_iter().map(|v| v as f32).collect())
        };
        let (sa, sb, sy) = (scales(sa)?, scales(sb)?, scales(sy)?);
        let ([sa], [sy]) = (&sa[..], &sy[..]) else {
            return Err(OpError::Unsupported(
                "--requant tflm with a per-axis input or output scale".into(),
            ));
        };
        let float_product = self.dense && sb.len() == 1;
        let each = |s_b: &f32| {
            let product = match float_product {
                true => f64::from(sa * s_b),
                false => f64::from(*sa) * f64::from(*s_b),
            };
            QuantMultiplier::new(product / f64::from(*sy))
        };
        let ms = match &sb[..] {
            [one] => Multipliers::Tensor(each(one)),
            many => Multipliers::PerAxis {
                axis: self.axis,
                each: many.iter().map(each).collect(),
            },
        };
        let zp = match ctx.has(zy) {
            true => match ctx.known_ints(zy)?.as_deref() {
                Some(&[z]) => z as i32,
                _ => {
                    return Err(OpError::Unsupported(
                        "--requant tflm with a per-axis or run-time zero point".into(),
                    ))
                }
            },
            false => 0,
        };
        let (lo, hi) = int_range(self.to)?;
        Ok(ctx
            .graph
            .requantize_to(acc, &ms, zp, (lo as i32, hi as i32), self.to)?)
    }
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

/// A per-tensor zero point as a scalar; a vector one (per column of a product) as it is.
fn output_zero_point(zy: Option<Lazy>) -> Result<Option<Lazy>, OpError> {
    Ok(match zy {
        Some(z) if z.shape().len() == 1 && z.shape() != [1] => Some(z),
        Some(z) => Some(z.reshape(&[])?),
        None => None,
    })
}

/// The zero-point terms of a quantized product folded at compile time: with `x` the
/// activation (input 0) and `w` the weight (input 3), `Σ (x − zx)(w − zw) + bias` is
/// `Σ x · (w − zw) + (bias − zx · Σ (w − zw))`, so the kernel multiplies the raw activations
/// (padded with `zx` in a convolution) and adds one `i32` table per output channel.
struct Folded {
    zx: i64,
    /// The weight, centred on its zero point where that is not 0.
    weight: Lazy,
    /// `bias − zx · Σ (w − zw)` per output channel.
    bias: Vec<i64>,
}

/// [`Folded`] for a weight whose output channels run along `axis`, with the bias at input
/// `bias` (if the op has one there); `None` where a zero point, the weight or the bias is
/// computed at run time, a zero point is not per tensor (the activation's) or per channel (the
/// weight's), or the folded bias does not fit in `i32`: the op then centres each value in the
/// kernel.
fn folded(ctx: &mut Ctx, axis: usize, bias: Option<usize>) -> Result<Option<Folded>, OpError> {
    let zx = match ctx.has(2) {
        true => match ctx.known_ints(2)?.as_deref() {
            Some(&[z]) => z,
            _ => return Ok(None),
        },
        false => 0,
    };
    if !ctx.is_known(3) {
        return Ok(None);
    }
    let w = ctx.known(3)?;
    let (Some(raw), shape) = (w.to_i64(), w.shape().to_vec()) else {
        return Ok(None);
    };
    let n = shape[axis];
    let zw = match ctx.has(5) {
        true => match ctx.known_ints(5)? {
            Some(z) if z.len() == 1 || z.len() == n => z,
            _ => return Ok(None),
        },
        false => vec![0],
    };
    let mut table = folded_zero_points(&raw, &shape, axis, zx, &zw);
    if let Some(b) = bias.filter(|&b| ctx.has(b)) {
        match ctx.known_ints(b)? {
            Some(b) if b.len() == n => table.iter_mut().zip(b).for_each(|(t, b)| *t += b),
            _ => return Ok(None),
        }
    }
    if table.iter().any(|&t| i32::try_from(t).is_err()) {
        return Ok(None);
    }
    let mut weight = ctx.tensor(3)?;
    if zw.iter().any(|&z| z != 0) {
        let zw = ctx.tensor(5)?;
        let per = if axis == 0 {
            Axis::Channel
        } else {
            Axis::Column
        };
        weight = centered(ctx.graph, &weight, Some(&zw), per)?;
    }
    Ok(Some(Folded {
        zx,
        weight,
        bias: table,
    }))
}

/// `acc + table`, the table laid along `axis` of the accumulator (nothing where it is all 0).
fn add_table(ctx: &mut Ctx, acc: &Lazy, table: &[i64], axis: usize) -> Result<Lazy, OpError> {
    if table.iter().all(|&t| t == 0) {
        return Ok(acc.clone());
    }
    let name = format!("{}_bias", ctx.node.name);
    let t = Tensor::from_i64(Scalar::I32, vec![table.len()], table)?;
    let mut shape = vec![1; acc.shape().len()];
    shape[axis] = table.len();
    let b = ctx.graph.weight(&name, t).reshape(&shape)?;
    Ok(ctx.graph.binary(BinaryOp::Add, acc, &b)?)
}

/// The quantized product `(a − za) · (b − zb) [+ bias]` in `i32`: inputs `[a, sa, za, b, sb,
/// zb]`, the bias at input `bias`.
fn matmul_acc(ctx: &mut Ctx, bias: Option<usize>, trans: [bool; 2]) -> Result<Lazy, OpError> {
    let (mut a, mut b) = (ctx.tensor(0)?, ctx.tensor(3)?);
    if trans[0] {
        a = swap_last(&a)?;
    }
    let plain_b = b.shape().len() == 2;
    if plain_b {
        if let Some(f) = folded(ctx, if trans[1] { 0 } else { 1 }, bias)? {
            let w = if trans[1] {
                swap_last(&f.weight)?
            } else {
                f.weight
            };
            let acc = ctx.graph.matmul_in(&a, &w, Some(DType::I32))?;
            let last = acc.shape().len() - 1;
            return add_table(ctx, &acc, &f.bias, last);
        }
    }
    if trans[1] {
        b = swap_last(&b)?;
    }
    let (za, zb) = (ctx.opt_tensor(2)?, ctx.opt_tensor(5)?);
    let g = &mut *ctx.graph;
    let ai = centered(g, &a, za.as_ref(), Axis::Row)?;
    let bi = centered(g, &b, zb.as_ref(), Axis::Column)?;
    let mut acc = g.matmul(&ai, &bi)?;
    if let Some(c) = bias.filter(|&c| ctx.has(c)) {
        let c = ctx.tensor(c)?;
        let c = ctx.graph.cast(&c, DType::I32);
        acc = ctx.graph.binary(BinaryOp::Add, &acc, &c)?;
    }
    Ok(acc)
}

/// The quantized product `(a − za) · (b − zb) [+ bias]`, requantized to `y`'s scale: inputs
/// `[a, sa, za, b, sb, zb]` first, the bias at `bias`, `[sy, zy]` at `out`.
fn quantized_matmul(ctx: &mut Ctx, bias: Option<usize>, out: usize, trans: [bool; 2]) -> Out {
    let acc = matmul_acc(ctx, bias, trans)?;
    let (sa, sb) = (ctx.tensor(1)?, ctx.tensor(4)?);
    let (sy, zy) = (ctx.tensor(out)?, ctx.opt_tensor(out + 1)?);
    let to = zy.as_ref().map_or(ctx.tensor(0)?.dtype, |z| z.dtype);
    let g = &mut *ctx.graph;
    let rank = acc.shape().len();
    let scale = combined_scale(g, &sa, &sb, &sy, rank, Axis::Column)?;
    let r = Requantization {
        scale,
        inputs: [1, 4, out, out + 1],
        zero_point: output_zero_point(zy)?,
        axis: rank.saturating_sub(1),
        to,
        dense: true,
    };
    Ok(vec![Value::Tensor(r.apply(ctx, &acc)?)])
}

/// `x` with its last two axes swapped.
fn swap_last(x: &Lazy) -> Result<Lazy, OpError> {
    let r = x.shape().len();
    if r < 2 {
        return Err(invalid(format!(
            "a transposed operand of shape {:?}",
            x.shape()
        )));
    }
    let mut p: Vec<usize> = (0..r).collect();
    p.swap(r - 2, r - 1);
    Ok(x.permute(&p)?)
}

fn qlinear_matmul(ctx: &mut Ctx) -> Out {
    quantized_matmul(ctx, None, 6, [false; 2])
}

/// onnxruntime's `QGemm` (`com.microsoft`): `QLinearMatMul` with `transA`, `transB` and an
/// `int32` bias `C` of scale `a_scale · b_scale`. Kiln also takes a batched `A`, as the QDQ
/// rewrite of a `MatMul` and `Add` may give it.
fn qgemm(ctx: &mut Ctx) -> Out {
    let alpha = ctx.attrs().float_or("alpha", 1.0)?;
    if alpha != 1.0 {
        return Err(OpError::Unsupported(format!("QGemm with alpha {alpha}")));
    }
    if !ctx.has(7) {
        return Err(OpError::Unsupported(
            "QGemm with a float output (no y_scale)".into(),
        ));
    }
    let trans = [
        ctx.attrs().int_or("transA", 0)? != 0,
        ctx.attrs().int_or("transB", 0)? != 0,
    ];
    quantized_matmul(ctx, Some(6), 7, trans)
}

/// `Σ (x − zx)(w − zw) + bias` of `QLinearConv` in `i32`.
fn conv_acc(ctx: &mut Ctx) -> Result<Lazy, OpError> {
    let x = ctx.tensor(0)?;
    if let Some(f) = folded(ctx, 0, Some(8))? {
        let acc = super::conv::quantized_conv_of(ctx, &x, &f.weight, f.zx, DType::I32)?;
        return add_table(ctx, &acc, &f.bias, 1);
    }
    let (zx, w, zw) = (ctx.opt_tensor(2)?, ctx.tensor(3)?, ctx.opt_tensor(5)?);
    let xi = centered(ctx.graph, &x, zx.as_ref(), Axis::Scalar)?;
    let wi = centered(ctx.graph, &w, zw.as_ref(), Axis::Channel)?;
    let bias = ctx.opt_tensor(8)?.map(|b| ctx.graph.cast(&b, DType::I32));
    super::conv::conv_of(ctx, &xi, &wi, bias.as_ref())
}

fn qlinear_conv(ctx: &mut Ctx) -> Out {
    let acc = conv_acc(ctx)?;
    let (x, sx, sw) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(4)?);
    let (sy, zy) = (ctx.tensor(6)?, ctx.opt_tensor(7)?);
    let to = zy.as_ref().map_or(x.dtype, |z| z.dtype);
    let rank = acc.shape().len();
    let sx = sx.reshape(&[])?;
    let scale = combined_scale(ctx.graph, &sx, &sw, &sy, rank, Axis::Channel)?;
    let zero_point = match zy {
        Some(z) => Some(z.reshape(&[])?),
        None => None,
    };
    let r = Requantization {
        scale,
        inputs: [1, 4, 6, 7],
        zero_point,
        axis: 1,
        to,
        dense: false,
    };
    Ok(vec![Value::Tensor(r.apply(ctx, &acc)?)])
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

//! Products: `BATCH_MATMUL` and `TRANSPOSE_CONV`.
//!
//! `BATCH_MATMUL` multiplies the last two axes (each operand transposed first when `adj_x` /
//! `adj_y` say so) with the batch axes broadcast. Quantized, it sums
//! `(x − zp_x) · (y − zp_y)` in `i32` (int8) or `i64` (int16, zero points 0) and requantizes by
//! `s_x · s_y / s_out`, the product taken in float as TFLM's `GetQuantizedConvolutionMultipler`
//! does, to the type's full range.
//!
//! `TRANSPOSE_CONV` scatters each input pixel times the filter onto the output; it is lowered
//! as the equivalent convolution: the input dilated by the strides (zeros between pixels),
//! padded by `k − 1 − pad` in front (cropped where that is negative) and to the output's size
//! behind, convolved with the spatially flipped filter. TFLM's padding is computed from the
//! output's size. Quantized, as TFLM's `reference_integer_ops::TransposeConv`: int8 sums
//! `(x − zp_in) · w` in `i32`; 16x8 sums `x · w` in `i64` (bias int64 or int16) and adds no
//! output zero point; both requantize per output channel by `s_in · s_w[c] / s_out` in double.

use super::conv::filter_quant;
use super::{
    activation, expect_shape, float_activation, int_range, padding, positive, to_nchw, to_nhwc,
    Ctx, OpBuilder,
};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{activation_range, Activation, Multipliers, QuantMultiplier};
use crate::graph::{Graph, Lazy};
use crate::ops::BinaryOp;
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions, Padding};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::BatchMatmul, batch_matmul),
    (Op::TransposeConv, transpose_conv),
];

type Out = Result<Vec<Lazy>, OpError>;

/// `x` with its last two axes swapped.
fn swap_last(x: &Lazy) -> Result<Lazy, OpError> {
    let r = x.shape().len();
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    Ok(x.permute(&perm)?)
}

fn batch_matmul(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::BatchMatMulOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (tx, ty, to) = (
        ctx.info(0)?.clone(),
        ctx.info(1)?.clone(),
        ctx.out_info(0)?.clone(),
    );
    if tx.shape.len() < 2 || ty.shape.len() < 2 {
        return Err(OpError::Invalid(format!(
            "BATCH_MATMUL of shapes {:?} and {:?} (both must have 2 axes or more)",
            tx.shape, ty.shape
        )));
    }
    if tx.dtype != ty.dtype || tx.dtype != to.dtype {
        return Err(OpError::Unsupported(format!(
            "BATCH_MATMUL of {} and {} to {}",
            tx.dtype, ty.dtype, to.dtype
        )));
    }
    let mut x = ctx.input(0)?;
    let mut y = ctx.input(1)?;
    if o.adj_x {
        x = swap_last(&x)?;
    }
    if o.adj_y {
        y = swap_last(&y)?;
    }
    let r = match tx.dtype {
        Scalar::F32 => ctx.graph.matmul(&x, &y)?,
        Scalar::I8 | Scalar::I16 => {
            let (qx, qy, qo) = (ctx.quant(&tx)?, ctx.quant(&ty)?, ctx.quant(&to)?);
            let wide = tx.dtype == Scalar::I16;
            if wide && [qx.zero_point(), qy.zero_point(), qo.zero_point()] != [0; 3] {
                return Err(OpError::Unsupported(
                    "BATCH_MATMUL on int16 with nonzero zero points".into(),
                ));
            }
            let acc = if wide { DType::I64 } else { DType::I32 };
            let g = &mut *ctx.graph;
            let xc = centred(g, &x, qx.zero_point(), acc)?;
            let yc = centred(g, &y, qy.zero_point(), acc)?;
            let sum = g.matmul_in(&xc, &yc, Some(acc))?;
            let m =
                QuantMultiplier::new(f64::from(qx.scale() * qy.scale()) / f64::from(qo.scale()));
            check_wide(acc, &[m])?;
            let range = int_range(to.dtype)?;
            let ms = Multipliers::Tensor(m);
            g.requantize_to(&sum, &ms, qo.zero_point(), range, DType::from(to.dtype))?
        }
        other => {
            return Err(OpError::Unsupported(format!(
                "BATCH_MATMUL on {other} (float32, int8 and int16 are)"
            )))
        }
    };
    expect_shape(ctx, &r, 0)?;
    Ok(vec![r])
}

/// `x − zp` in `acc` (`x` as it is when `zp` is 0: the product widens it where it reads it).
fn centred(g: &mut Graph, x: &Lazy, zp: i32, acc: DType) -> Result<Lazy, OpError> {
    if zp == 0 {
        return Ok(x.clone());
    }
    let w = g.cast(x, acc);
    Ok(g.int_scalar(BinaryOp::Sub, &w, i64::from(zp))?)
}

/// The 64-bit `MultiplyByQuantizedMultiplier` takes shifts in `[-31, 7]`.
fn check_wide(acc: DType, ms: &[QuantMultiplier]) -> Result<(), OpError> {
    if acc != DType::I64 {
        return Ok(());
    }
    match ms.iter().find(|m| !(-31..8).contains(&m.shift)) {
        Some(m) => Err(OpError::Unsupported(format!(
            "a 16-bit output multiplier of 2^{} (TFLM takes shifts in [-31, 7])",
            m.shift
        ))),
        None => Ok(()),
    }
}

/// Axis `axis` of `x` grown by `before` in front and `after` behind (zeros), or cut where
/// negative.
fn grow(x: &Lazy, axis: usize, before: i64, after: i64) -> Result<Lazy, OpError> {
    let d = x.shape()[axis] as i64;
    let x = x.slice_axis(axis, (-before).max(0), d - (-after).max(0), 1)?;
    let mut pads = vec![(0, 0); x.shape().len()];
    pads[axis] = (before.max(0) as usize, after.max(0) as usize);
    Ok(x.pad(&pads)?)
}

/// `s − 1` zeros between neighbours along `axis`.
fn dilate(x: &Lazy, axis: usize, s: usize) -> Result<Lazy, OpError> {
    let d = x.shape()[axis];
    if s == 1 || d == 0 {
        return Ok(x.clone());
    }
    let mut split = x.shape().to_vec();
    split.insert(axis + 1, 1);
    let mut pads = vec![(0, 0); split.len()];
    pads[axis + 1] = (0, s - 1);
    let mut merged = x.shape().to_vec();
    merged[axis] = d * s;
    let y = x.reshape(&split)?.pad(&pads)?.reshape(&merged)?;
    Ok(y.slice_axis(axis, 0, ((d - 1) * s + 1) as i64, 1)?)
}

/// The geometry of a transposed convolution.
struct Geometry {
    stride: [usize; 2],
    pad: [usize; 2],
    act: Activation,
}

fn geometry(ctx: &Ctx) -> Result<Geometry, OpError> {
    let o = ctx.options(|o| match o {
        BuiltinOptions::TransposeConvOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (xs, ws, os) = (
        &ctx.info(2)?.shape,
        &ctx.info(1)?.shape,
        &ctx.out_info(0)?.shape,
    );
    if xs.len() != 4 || ws.len() != 4 || os.len() != 4 || ws[3] != xs[3] || ws[0] != os[3] {
        return Err(OpError::Invalid(format!(
            "TRANSPOSE_CONV of input {xs:?} by filter {ws:?} to {os:?}"
        )));
    }
    if let Ok(shape) = ctx.ints(0) {
        if shape.iter().map(|&d| d as usize).ne(os.iter().copied()) {
            return Err(OpError::Invalid(format!(
                "output_shape {shape:?} for an output of shape {os:?}"
            )));
        }
    }
    let stride = [
        positive("stride_h", o.stride_h)?,
        positive("stride_w", o.stride_w)?,
    ];
    let same = o.padding == Padding::Same;
    let pad = [
        padding(same, os[1], ws[1], stride[0], 1)?.0 .0,
        padding(same, os[2], ws[2], stride[1], 1)?.0 .0,
    ];
    Ok(Geometry {
        stride,
        pad,
        act: activation(o.fused_activation_function)?,
    })
}

/// The input (NHWC) dilated and padded so that a unit-stride convolution by the flipped
/// filter gives the output.
fn spread(x: &Lazy, geo: &Geometry, k: [usize; 2], out: [usize; 2]) -> Result<Lazy, OpError> {
    let mut y = x.clone();
    for a in 0..2 {
        y = dilate(&y, a + 1, geo.stride[a])?;
        let before = k[a] as i64 - 1 - geo.pad[a] as i64;
        let after = (out[a] + k[a] - 1) as i64 - before - y.shape()[a + 1] as i64;
        y = grow(&y, a + 1, before, after)?;
    }
    Ok(y)
}

fn transpose_conv(ctx: &mut Ctx) -> Out {
    let geo = geometry(ctx)?;
    let ws = ctx.info(1)?.shape.clone();
    let os = ctx.out_info(0)?.shape.clone();
    let (k, out) = ([ws[1], ws[2]], [os[1], os[2]]);
    let x = ctx.input(2)?;
    let w = ctx.input(1)?.stride(&[1, -1, -1, 1])?;
    let t = ctx.info(2)?.clone();
    let y = match t.dtype {
        Scalar::F32 => {
            let xp = spread(&x, &geo, k, out)?;
            let bias = if ctx.has(3) {
                Some(ctx.input(3)?)
            } else {
                None
            };
            let wn = w.permute(&[0, 3, 1, 2])?;
            let g = &mut *ctx.graph;
            let y = g.conv(
                &to_nchw(&xp)?,
                &wn,
                bias.as_ref(),
                &[1, 1],
                &[1, 1],
                &[(0, 0); 2],
                1,
            )?;
            float_activation(ctx.graph, &to_nhwc(&y)?, geo.act)?
        }
        Scalar::I8 | Scalar::I16 => {
            let wide = t.dtype == Scalar::I16;
            let acc = if wide { DType::I64 } else { DType::I32 };
            let zp = if wide { 0 } else { ctx.quant(&t)?.zero_point() };
            let xc = centred(ctx.graph, &x, zp, acc)?;
            let xp = spread(&xc, &geo, k, out)?;
            let g = &mut *ctx.graph;
            let sum =
                g.conv_channels_last_in(&to_nchw(&xp)?, &w, &[1, 1], &[1, 1], 1, Some(acc))?;
            let sum = with_bias(ctx, sum)?;
            requantize_out(ctx, &sum, geo.act)?
        }
        other => {
            return Err(OpError::Unsupported(format!(
                "TRANSPOSE_CONV on {other} (float32, int8 and int16 are)"
            )))
        }
    };
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// The accumulator plus the bias (input 3, when given), per output channel.
fn with_bias(ctx: &mut Ctx, acc: Lazy) -> Result<Lazy, OpError> {
    if !ctx.has(3) {
        return Ok(acc);
    }
    let b = ctx.info(3)?.clone();
    let fits = match acc.dtype {
        DType::I64 => matches!(b.dtype, Scalar::I64 | Scalar::I16),
        _ => b.dtype == Scalar::I32,
    };
    let n = acc.shape()[3];
    if !fits || b.shape.iter().product::<usize>() != n {
        return Err(OpError::Unsupported(format!(
            "TRANSPOSE_CONV with a {} bias of shape {:?} for {n} channels of {}",
            b.dtype,
            b.shape,
            ctx.info(2)?.dtype
        )));
    }
    let v = ctx.ints(3)?;
    let name = format!("{}_bias", ctx.out_info(0)?.name);
    let t = Tensor::from_i64(acc.dtype.scalar, vec![1, 1, 1, n], &v).expect("one per channel");
    let w = ctx.graph.weight(&name, t);
    Ok(ctx.graph.binary(BinaryOp::Add, &acc, &w)?)
}

/// Requantizes the NHWC accumulator per output channel to output 0's type.
fn requantize_out(ctx: &mut Ctx, acc: &Lazy, act: Activation) -> Result<Lazy, OpError> {
    let n = acc.shape()[3];
    let s_in = ctx.quant(ctx.info(2)?)?.scale();
    let fq = filter_quant(ctx, n)?;
    let out = ctx.out_info(0)?.clone();
    let qo = ctx.quant(&out)?;
    let each: Vec<QuantMultiplier> = fq
        .scales
        .iter()
        .map(|&s_w| QuantMultiplier::new(f64::from(s_in) * f64::from(s_w) / f64::from(qo.scale())))
        .collect();
    check_wide(acc.dtype, &each)?;
    let (qmin, qmax) = int_range(out.dtype)?;
    let range = activation_range(act, qo.scale(), qo.zero_point(), qmin, qmax);
    let zp = if acc.dtype == DType::I64 {
        0
    } else {
        qo.zero_point()
    };
    let ms = Multipliers::PerAxis { axis: 3, each };
    Ok(ctx
        .graph
        .requantize_to(acc, &ms, zp, range, DType::from(out.dtype))?)
}

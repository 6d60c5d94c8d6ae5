//! Pooling: `AVERAGE_POOL_2D`, `MAX_POOL_2D` and `L2_POOL_2D` (float) over the in-bounds part of each window (TFLite
//! pads nothing: a window at the border is smaller).
//!
//! Quantized, input and output share scale and zero point; the average of the raw values is
//! `(acc ± n/2) / n` with C's truncating division, `n` the in-bounds count.

use super::{
    activation, expect_shape, float_activation, int_range, is_quantized, padding, positive,
    to_nchw, to_nhwc, Ctx, OpBuilder,
};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{activation_range, Activation};
use crate::graph::Lazy;
use crate::ops::{BinaryOp, ReduceOp, UnaryOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions, Padding, Pool2DOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::AveragePool2d, average_pool2d),
    (Op::MaxPool2d, max_pool2d),
    (Op::L2Pool2d, l2_pool2d),
];

type Out = Result<Vec<Lazy>, OpError>;

/// The windows of a pool: each axis's padding and output size.
struct Windows {
    k: [usize; 2],
    stride: [usize; 2],
    pads: [(usize, usize); 2],
    out: [usize; 2],
    act: Activation,
}

fn windows(ctx: &Ctx) -> Result<Windows, OpError> {
    let o: Pool2DOptions = ctx.options(|o| match o {
        BuiltinOptions::Pool2DOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let xs = &ctx.info(0)?.shape;
    if xs.len() != 4 {
        return Err(OpError::Invalid(format!(
            "input of shape {xs:?} is not 4-D"
        )));
    }
    let k = [
        positive("filter_height", o.filter_height)?,
        positive("filter_width", o.filter_width)?,
    ];
    let stride = [
        positive("stride_h", o.stride_h)?,
        positive("stride_w", o.stride_w)?,
    ];
    let same = o.padding == Padding::Same;
    let (ph, oh) = padding(same, xs[1], k[0], stride[0], 1)?;
    let (pw, ow) = padding(same, xs[2], k[1], stride[1], 1)?;
    Ok(Windows {
        k,
        stride,
        pads: [ph, pw],
        out: [oh, ow],
        act: activation(o.fused_activation_function)?,
    })
}

/// The windows of `x` (NCHW, padded with `fill`): `[N, C, OH, OW, KH, KW]`.
fn windowed(ctx: &mut Ctx, x: &Lazy, w: &Windows, fill: f64) -> Result<Lazy, OpError> {
    let g = &mut *ctx.graph;
    let xn = to_nchw(x)?;
    let arg = [(0, 0), (0, 0), w.pads[0], w.pads[1]];
    let xp = if w.pads.iter().any(|&(a, b)| a + b > 0) {
        g.pad_value(&xn, &arg, fill)?
    } else {
        xn
    };
    Ok(g.pool(&xp, &w.k, &w.stride, &[1, 1], &[(0, 0); 2])?)
}

/// The count of in-bounds taps of each output position, `[1, 1, OH, OW]`; `None` when every
/// window is whole.
fn counts(w: &Windows, input: [usize; 2]) -> Option<Vec<i64>> {
    if w.pads.iter().all(|&(a, b)| a + b == 0) {
        return None;
    }
    let inside = |axis: usize, o: usize| {
        let start = (o * w.stride[axis]) as i64 - w.pads[axis].0 as i64;
        let lo = start.max(0);
        let hi = (start + w.k[axis] as i64).min(input[axis] as i64);
        (hi - lo).max(0)
    };
    let mut n = Vec::with_capacity(w.out[0] * w.out[1]);
    for oy in 0..w.out[0] {
        for ox in 0..w.out[1] {
            n.push(inside(0, oy) * inside(1, ox));
        }
    }
    Some(n)
}

fn average_pool2d(ctx: &mut Ctx) -> Out {
    let w = windows(ctx)?;
    let x = ctx.input(0)?;
    let xs = x.shape().to_vec();
    let input = [xs[1], xs[2]];
    let whole = (w.k[0] * w.k[1]) as i64;
    let counts = counts(&w, input);
    let y = if is_quantized(ctx.info(0)?) {
        let t = ctx.info(0)?.clone();
        let win = windowed(ctx, &x, &w, 0.0)?;
        let g = &mut *ctx.graph;
        let wi = g.cast(&win, DType::I32);
        let acc = g.reduce(ReduceOp::Sum, &wi, &[4, 5])?;
        let acc = acc.reshape(&acc.shape()[..4])?;
        let n = match &counts {
            None => g.int_const(whole, DType::I32, acc.shape()),
            Some(c) => {
                let t = Tensor::from_i64(Scalar::I32, vec![1, 1, w.out[0], w.out[1]], c)
                    .expect("one count per output position");
                let name = format!("{}_counts", ctx.out_info(0)?.name);
                let n = ctx.graph.weight(&name, t);
                n.expand(acc.shape())?
            }
        };
        let g = &mut *ctx.graph;
        // acc > 0 ? (acc + n / 2) / n : (acc − n / 2) / n
        let half = g.int_scalar(BinaryOp::Div, &n, 2)?;
        let zero = g.int_const(0, DType::I32, acc.shape());
        let positive = g.binary(BinaryOp::CmpLt, &zero, &acc)?;
        let up = g.binary(BinaryOp::Add, &acc, &half)?;
        let down = g.binary(BinaryOp::Sub, &acc, &half)?;
        let s = g.where_(&positive, &up, &down)?;
        let avg = g.binary(BinaryOp::Div, &s, &n)?;
        let q = ctx.quant(&t)?;
        let (qmin, qmax) = int_range(t.dtype)?;
        let (lo, hi) = activation_range(w.act, q.scale(), q.zero_point(), qmin, qmax);
        let g = &mut *ctx.graph;
        let avg = g.clamp_int(&avg, i64::from(lo), i64::from(hi))?;
        let y = g.cast(&avg, DType::from(t.dtype));
        to_nhwc(&y)?
    } else {
        let avg = float_mean(ctx, &x, &w, counts.as_deref())?;
        let y = to_nhwc(&avg)?;
        float_activation(ctx.graph, &y, w.act)?
    };
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// The float mean of each window of `x` (NHWC) over its in-bounds taps, `[N, C, OH, OW]`.
fn float_mean(
    ctx: &mut Ctx,
    x: &Lazy,
    w: &Windows,
    counts: Option<&[i64]>,
) -> Result<Lazy, OpError> {
    let win = windowed(ctx, x, w, 0.0)?;
    let g = &mut *ctx.graph;
    let s = g.reduce(ReduceOp::Sum, &win, &[4, 5])?;
    let s = s.reshape(&s.shape()[..4])?;
    Ok(match counts {
        None => g.mul_scalar(&s, 1.0 / (w.k[0] * w.k[1]) as f64)?,
        Some(c) => {
            let f: Vec<f64> = c.iter().map(|&n| n as f64).collect();
            let t = Tensor::from_f64(s.dtype.scalar, vec![1, 1, w.out[0], w.out[1]], &f)
                .expect("one count per output position");
            let name = format!("{}_counts", ctx.out_info(0)?.name);
            let n = ctx.graph.weight(&name, t).expand(s.shape())?;
            ctx.graph.binary(BinaryOp::Div, &s, &n)?
        }
    })
}

/// `L2_POOL_2D` (float only, as TFLM): `sqrt(Σ x² / n)` over the in-bounds taps of each window.
fn l2_pool2d(ctx: &mut Ctx) -> Out {
    let dtype = ctx.info(0)?.dtype;
    if dtype != Scalar::F32 {
        return Err(OpError::Unsupported(format!(
            "L2_POOL_2D on {dtype} (TFLM takes float32 only)"
        )));
    }
    let w = windows(ctx)?;
    let x = ctx.input(0)?;
    let counts = counts(&w, [x.shape()[1], x.shape()[2]]);
    let sq = ctx.graph.binary(BinaryOp::Mul, &x, &x)?;
    let mean = float_mean(ctx, &sq, &w, counts.as_deref())?;
    let r = ctx.graph.unary(UnaryOp::Sqrt, &mean)?;
    let y = float_activation(ctx.graph, &to_nhwc(&r)?, w.act)?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn max_pool2d(ctx: &mut Ctx) -> Out {
    let w = windows(ctx)?;
    let x = ctx.input(0)?;
    let t = ctx.info(0)?.clone();
    let quantized = is_quantized(&t);
    let fill = if quantized {
        f64::from(int_range(t.dtype)?.0)
    } else {
        f64::NEG_INFINITY
    };
    let win = windowed(ctx, &x, &w, fill)?;
    let g = &mut *ctx.graph;
    let m = g.reduce(ReduceOp::Max, &win, &[4, 5])?;
    let m = m.reshape(&m.shape()[..4])?;
    let m = to_nhwc(&m)?;
    let y = if quantized {
        let q = ctx.quant(&t)?;
        let (qmin, qmax) = int_range(t.dtype)?;
        let (lo, hi) = activation_range(w.act, q.scale(), q.zero_point(), qmin, qmax);
        let g = &mut *ctx.graph;
        let mi = g.cast(&m, DType::I32);
        let c = g.clamp_int(&mi, i64::from(lo), i64::from(hi))?;
        g.cast(&c, DType::from(t.dtype))
    } else {
        float_activation(ctx.graph, &m, w.act)?
    };
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

//! Convolutions and dense layers: `CONV_2D`, `DEPTHWISE_CONV_2D`, `FULLY_CONNECTED`.
//!
//! Quantized, they accumulate `Σ w · (x − zp_in)` in `i32` over the in-bounds taps, add the
//! bias and requantize per output channel (TFLM's `reference_integer_ops`). The input is
//! padded with its zero point, so every tap adds `w · (x − zp_in)` with padding adding nothing,
//! and `zp_in · Σ w` is folded into the bias at compile time: the kernel multiplies the raw
//! int8 values.
//!
//! 16x8 (int16 activations, int8 weights) accumulate in the width of their bias (`i64`, or
//! `i32` for an `i32` bias) and requantize with the `MultiplyByQuantizedMultiplier` of that
//! width. TFLM's 16x8 `CONV_2D` and `DEPTHWISE_CONV_2D` ignore the zero points (they are 0 in a
//! 16x8 model; only the fused activation's range reads the output's); its `FULLY_CONNECTED`
//! applies them.
//!
//! Float activations with int8 weights (hybrid models) are lowered in [`hybrid`].

use super::hybrid;
use super::{
    activation, expect_shape, float_activation, int_range, is_quantized, kept_f16, padding,
    positive, to_nchw, to_nhwc, Ctx, OpBuilder,
};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{
    activation_range, folded_zero_points, Activation, Multipliers, QuantMultiplier,
};
use crate::graph::Lazy;
use crate::ops::BinaryOp;
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{
    ActivationFunctionType, BuiltinOperator as Op, BuiltinOptions, Padding,
};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Conv2d, conv2d),
    (Op::DepthwiseConv2d, depthwise_conv2d),
    (Op::FullyConnected, fully_connected),
];

type Out = Result<Vec<Lazy>, OpError>;

/// The geometry of a 2-D convolution.
struct ConvSpec {
    same: bool,
    stride: [usize; 2],
    dilation: [usize; 2],
    act: Activation,
    groups: usize,
    /// Zero-weighted input channels added after the file's ([`channels_in_words`]).
    extra_channels: usize,
}

impl ConvSpec {
    /// From the options: `[stride_h, stride_w, dilation_h, dilation_w]`.
    fn new(
        padding: Padding,
        [sh, sw, dh, dw]: [i32; 4],
        act: ActivationFunctionType,
        groups: usize,
    ) -> Result<ConvSpec, OpError> {
        Ok(ConvSpec {
            same: padding == Padding::Same,
            stride: [positive("stride_h", sh)?, positive("stride_w", sw)?],
            dilation: [positive("dilation_h", dh)?, positive("dilation_w", dw)?],
            act: activation(act)?,
            groups,
            extra_channels: 0,
        })
    }
}

fn conv2d(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::Conv2DOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (xs, ws) = (ctx.info(0)?.shape.clone(), ctx.info(1)?.shape.clone());
    rank4(&xs, "input")?;
    rank4(&ws, "filter")?;
    if ws[3] == 0 || xs[3] % ws[3] != 0 {
        return Err(OpError::Invalid(format!(
            "input channels {} are not a multiple of the filter's {}",
            xs[3], ws[3]
        )));
    }
    let geometry = [
        o.stride_h,
        o.stride_w,
        o.dilation_h_factor,
        o.dilation_w_factor,
    ];
    let mut spec = ConvSpec::new(
        o.padding,
        geometry,
        o.fused_activation_function,
        xs[3] / ws[3],
    )?;
    // OHWI is already channels-last, output channels first.
    let w = match channels_in_words(ctx, spec.groups)? {
        Some((w, extra)) => {
            spec.extra_channels = extra;
            w
        }
        None => ctx.input(1)?,
    };
    lower(ctx, &spec, &w, 0)
}

/// Where the import asks for it (a target with packed int8 dot products): an int8 convolution
/// of one group over `4k + 3` input channels (an RGB image's first layer) gets its filter with
/// one more input channel, all zeros, and how many it added; the input is padded to match in
/// [`lower`]. Each pixel's channels are then one 32-bit word, in the activations and the
/// filter, and the reduce packs into dot products like any other layer's; the added products
/// are zero, so the sum is the file's.
fn channels_in_words(ctx: &mut Ctx, groups: usize) -> Result<Option<(Lazy, usize)>, OpError> {
    let (x, w) = (ctx.info(0)?, ctx.info(1)?);
    let int8 = x.dtype == Scalar::I8 && w.dtype == Scalar::I8 && is_quantized(x);
    let cin = w.shape[3];
    // Int8 activations: not a hybrid convolution (float activations, int8 weights).
    if !ctx.scope.channels_in_words || !int8 || groups != 1 || cin % 4 != 3 {
        return Ok(None);
    }
    let Ok(filter) = ctx.constant(1) else {
        return Ok(None);
    };
    let mut bytes = Vec::with_capacity(filter.bytes().len() / cin * (cin + 1));
    for pixel in filter.bytes().chunks(cin) {
        bytes.extend_from_slice(pixel);
        bytes.push(0);
    }
    let mut shape = w.shape.clone();
    shape[3] = cin + 1;
    let name = format!("{} (input channels padded to {})", w.name, cin + 1);
    let padded = Tensor::new(Scalar::I8, shape, bytes)
        .map_err(|e| OpError::Invalid(format!("filter {}: {e}", w.name)))?;
    Ok(Some((ctx.graph.weight(&name, padded), 1)))
}

fn depthwise_conv2d(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::DepthwiseConv2DOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (xs, ws) = (ctx.info(0)?.shape.clone(), ctx.info(1)?.shape.clone());
    rank4(&xs, "input")?;
    rank4(&ws, "filter")?;
    if ws[0] != 1 || xs[3] == 0 || ws[3] % xs[3] != 0 {
        return Err(OpError::Invalid(format!(
            "depthwise filter {ws:?} does not fit input {xs:?}"
        )));
    }
    let geometry = [
        o.stride_h,
        o.stride_w,
        o.dilation_h_factor,
        o.dilation_w_factor,
    ];
    let spec = ConvSpec::new(o.padding, geometry, o.fused_activation_function, xs[3])?;
    // [1, KH, KW, C·mult] → [C·mult, KH, KW, 1]: output channel `c · mult + m` reads input `c`.
    let w = ctx.input(1)?.permute(&[3, 1, 2, 0])?;
    lower(ctx, &spec, &w, 3)
}

fn rank4(s: &[usize], what: &str) -> Result<(), OpError> {
    if s.len() != 4 {
        return Err(OpError::Invalid(format!(
            "{what} of shape {s:?} is not 4-D"
        )));
    }
    Ok(())
}

/// The convolution of input 0 (NHWC) with `w` (OHWI, a view of input 1 whose output channel
/// is axis `w_axis` of the file's layout), bias input 2.
///
/// Quantized, it is computed channels-last, as TFLM lays it out: the input channels are the
/// innermost reduce axis, contiguous in the activations and the filter (what a packed int8
/// dot product reads), and the output is stored NHWC.
fn lower(ctx: &mut Ctx, spec: &ConvSpec, w: &Lazy, w_axis: usize) -> Out {
    if hybrid::is_hybrid(ctx)? {
        let h = hybrid::HybridConv {
            same: spec.same,
            stride: spec.stride,
            dilation: spec.dilation,
            groups: spec.groups,
            act: spec.act,
        };
        let y = hybrid::conv(ctx, &h, w)?;
        expect_shape(ctx, &y, 0)?;
        return Ok(vec![y]);
    }
    let x = ctx.input(0)?;
    let xs = x.shape().to_vec();
    let (kh, kw) = (w.shape()[1], w.shape()[2]);
    let (pad_h, _) = padding(spec.same, xs[1], kh, spec.stride[0], spec.dilation[0])?;
    let (pad_w, _) = padding(spec.same, xs[2], kw, spec.stride[1], spec.dilation[1])?;
    let y = if is_quantized(ctx.info(0)?) {
        // Padded as stored (NHWC), so that a padded copy keeps the channels innermost too.
        let arg = [(0, 0), pad_h, pad_w, (0, spec.extra_channels)];
        let acc = quantized_sum(ctx, &x, w, w_axis, &arg, |g, x, w, acc| {
            let (s, d, groups) = (&spec.stride, &spec.dilation, spec.groups);
            Ok(g.conv_channels_last_in(&to_nchw(x)?, w, s, d, groups, Some(acc))?)
        })?;
        let acc = add_bias(ctx, acc, 3)?;
        requantize_out(ctx, &acc, 3, spec.act)?
    } else {
        let xn = to_nchw(&x)?;
        let w = w.permute(&[0, 3, 1, 2])?;
        let bias = if ctx.has(2) {
            Some(ctx.input(2)?)
        } else {
            None
        };
        let g = &mut *ctx.graph;
        let y = g.conv(
            &xn,
            &w,
            bias.as_ref(),
            &spec.stride,
            &spec.dilation,
            &[pad_h, pad_w],
            spec.groups,
        )?;
        let y = to_nhwc(&y)?;
        float_activation(ctx.graph, &y, spec.act)?
    };
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn fully_connected(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::FullyConnectedOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let act = activation(o.fused_activation_function)?;
    let x = ctx.input(0)?;
    let ws = ctx.info(1)?.shape.clone();
    if ws.len() != 2 || ws[1] == 0 || x.numel() % ws[1] != 0 {
        return Err(OpError::Invalid(format!(
            "weights {ws:?} do not fit input {:?}",
            x.shape()
        )));
    }
    let x2 = x.reshape(&[x.numel() / ws[1], ws[1]])?;
    let w = ctx.input(1)?;
    let y = if hybrid::is_hybrid(ctx)? {
        hybrid::fully_connected(ctx, &x2, o.asymmetric_quantize_inputs, act)?
    } else if is_quantized(ctx.info(0)?) {
        let acc = quantized_sum(ctx, &x2, &w, 0, &[], |g, x, w, acc| {
            let wt = w.permute(&[1, 0])?;
            Ok(g.matmul_in(x, &wt, Some(acc))?)
        })?;
        let acc = add_bias(ctx, acc, 1)?;
        requantize_out(ctx, &acc, 1, act)?
    } else if let Some(w16) = kept_f16(ctx.graph, &w) {
        // A kept float16 weight, widened as the product reads it.
        let wt = w16.permute(&[1, 0])?;
        let y = ctx.graph.matmul_in(&x2, &wt, Some(DType::F32))?;
        float_bias_activation(ctx, y, act)?
    } else {
        let wt = w.permute(&[1, 0])?;
        let mut y = ctx.graph.matmul(&x2, &wt)?;
        if ctx.has(2) {
            let b = ctx.input(2)?;
            y = ctx.graph.binary(BinaryOp::Add, &y, &b)?;
        }
        float_activation(ctx.graph, &y, act)?
    };
    let out = ctx.out_info(0)?.shape.clone();
    let y = y.reshape(&out)?;
    Ok(vec![y])
}

/// `y` plus the float bias (input 2, when given), then the fused activation.
fn float_bias_activation(ctx: &mut Ctx, y: Lazy, act: Activation) -> Result<Lazy, OpError> {
    let y = if ctx.has(2) {
        let b = ctx.input(2)?;
        ctx.graph.binary(BinaryOp::Add, &y, &b)?
    } else {
        y
    };
    float_activation(ctx.graph, &y, act)
}

/// The zero points and scales of a quantized filter: per output channel, `n` of them.
pub(super) struct FilterQuant {
    pub scales: Vec<f32>,
    zero_point: i32,
    per_channel: bool,
}

pub(super) fn filter_quant(ctx: &Ctx, n: usize) -> Result<FilterQuant, OpError> {
    let t = ctx.info(1)?;
    let q = ctx.quant(t)?;
    if t.dtype != Scalar::I8 {
        return Err(OpError::Unsupported(format!("{} filters", t.dtype)));
    }
    let per_channel = q.scale.len() > 1;
    if per_channel && q.scale.len() != n {
        return Err(OpError::Invalid(format!(
            "{} filter scales for {n} output channels",
            q.scale.len()
        )));
    }
    if per_channel && q.zero_point.iter().any(|&z| z != 0) {
        return Err(OpError::Unsupported(
            "per-channel filters with a nonzero zero point".into(),
        ));
    }
    Ok(FilterQuant {
        scales: (0..n)
            .map(|c| q.scale[if per_channel { c } else { 0 }])
            .collect(),
        zero_point: q.zero_point(),
        per_channel,
    })
}

/// The accumulator TFLM sums a quantized convolution or dense layer in: `i32` for int8
/// activations; for int16 ones (16x8) the bias's width, `i64` without a bias.
fn accumulator(ctx: &Ctx) -> Result<DType, OpError> {
    match ctx.info(0)?.dtype {
        Scalar::I8 => Ok(DType::I32),
        Scalar::I16 if ctx.has(2) && ctx.info(2)?.dtype == Scalar::I32 => Ok(DType::I32),
        Scalar::I16 => Ok(DType::I64),
        other => Err(OpError::Unsupported(format!(
            "{other} activations (int8 and int16 are)"
        ))),
    }
}

/// Whether the kernel reads the activations' zero points: all but TFLM's 16x8 convolutions do.
fn applies_zero_points(ctx: &Ctx) -> Result<bool, OpError> {
    Ok(ctx.info(0)?.dtype != Scalar::I16 || ctx.op.code == Op::FullyConnected)
}

/// `Σ w · (x − zp_in)` in the [`accumulator`] by `op` on the raw values (`op` widens them as it
/// reads them, to the type it is given): `x` padded with `zp_in` by `pads` (empty: none), the
/// filter centred on its zero point; and `−zp_in · Σ w` per output channel, for the bias.
fn quantized_sum(
    ctx: &mut Ctx,
    x: &Lazy,
    w: &Lazy,
    w_axis: usize,
    pads: &[(usize, usize)],
    op: impl Fn(&mut crate::graph::Graph, &Lazy, &Lazy, DType) -> Result<Lazy, OpError>,
) -> Result<(Lazy, Vec<i64>), OpError> {
    let acc = accumulator(ctx)?;
    let zp_in = if applies_zero_points(ctx)? {
        ctx.quant(ctx.info(0)?)?.zero_point()
    } else {
        0
    };
    let n = w.shape()[0];
    let fq = filter_quant(ctx, n)?;
    let g = &mut *ctx.graph;
    let xp = if pads.iter().any(|&(a, b)| a + b > 0) {
        let xp = g.pad_value(x, pads, f64::from(zp_in))?;
        g.mark_channels_last(&xp);
        xp
    } else {
        x.clone()
    };
    // The raw int8 values, each widened to i32 where the kernel reads it.
    let mut wq = w.clone();
    if fq.zero_point != 0 {
        let wide = g.cast(w, acc);
        wq = g.int_scalar(BinaryOp::Sub, &wide, i64::from(fq.zero_point))?;
    }
    let sum = op(g, &xp, &wq, acc)?;
    let raw = ctx.ints(1)?;
    let zps = [i64::from(zp_in), i64::from(fq.zero_point)];
    let folded = folded_zero_points(&raw, &ctx.info(1)?.shape, w_axis, zps[0], &zps[1..]);
    Ok((sum, folded))
}

/// `acc + bias − zp_in · Σ w`, the constant folded into one table of the accumulator's type
/// along `axis`.
fn add_bias(
    ctx: &mut Ctx,
    (acc, mut bias): (Lazy, Vec<i64>),
    axis: usize,
) -> Result<Lazy, OpError> {
    if ctx.has(2) {
        let b = ctx.ints(2)?;
        if b.len() != bias.len() {
            return Err(OpError::Invalid(format!(
                "{} bias values for {} output channels",
                b.len(),
                bias.len()
            )));
        }
        for (t, v) in bias.iter_mut().zip(b) {
            *t += v;
        }
    }
    if bias.iter().all(|&b| b == 0) {
        return Ok(acc);
    }
    let wide = acc.dtype == DType::I64;
    if let Some(b) = bias.iter().find(|&&b| !wide && i32::try_from(b).is_err()) {
        return Err(OpError::Invalid(format!(
            "the folded bias {b} does not fit in 32 bits"
        )));
    }
    let name = format!("{}_bias", ctx.out_info(0)?.name);
    let t = Tensor::from_i64(acc.dtype.scalar, vec![bias.len()], &bias).expect("a vector");
    let w = ctx.graph.weight(&name, t);
    let mut shape = vec![1; acc.shape().len()];
    shape[axis] = bias.len();
    let w = w.reshape(&shape)?;
    Ok(ctx.graph.binary(BinaryOp::Add, &acc, &w)?)
}

/// Requantizes the accumulator (output channels along `axis`) to output 0's type.
fn requantize_out(
    ctx: &mut Ctx,
    acc: &Lazy,
    axis: usize,
    act: Activation,
) -> Result<Lazy, OpError> {
    let n = acc.shape()[axis];
    let s_in = ctx.quant(ctx.info(0)?)?.scale();
    let fq = filter_quant(ctx, n)?;
    let out = ctx.out_info(0)?.clone();
    let qo = ctx.quant(&out)?;
    let (s_out, zp_out) = (qo.scale(), qo.zero_point());
    let zp_added = if applies_zero_points(ctx)? { zp_out } else { 0 };
    let fully_connected = ctx.op.code == Op::FullyConnected;
    let each: Vec<QuantMultiplier> = fq
        .scales
        .iter()
        .map(|&s_w| {
            // TFLM's per-tensor dense layer multiplies the scales in float first
            // (`GetQuantizedConvolutionMultipler`); everything else in double.
            let product = if fully_connected && !fq.per_channel {
                f64::from(s_in * s_w)
            } else {
                f64::from(s_in) * f64::from(s_w)
            };
            QuantMultiplier::new(product / f64::from(s_out))
        })
        .collect();
    if acc.dtype == DType::I64 {
        // The 64-bit `MultiplyByQuantizedMultiplier` shifts by `15 − shift` ≥ 1.
        if let Some(m) = each.iter().find(|m| !(-31..8).contains(&m.shift)) {
            return Err(OpError::Unsupported(format!(
                "a 16x8 output multiplier of 2^{} (TFLM takes shifts in [-31, 7])",
                m.shift
            )));
        }
    }
    let (qmin, qmax) = int_range(out.dtype)?;
    let range = activation_range(act, s_out, zp_out, qmin, qmax);
    let ms = Multipliers::PerAxis { axis, each };
    Ok(ctx
        .graph
        .requantize_to(acc, &ms, zp_added, range, DType::from(out.dtype))?)
}

//! Convolutions, and the sliding-window geometry they share with pooling: kernel, strides,
//! dilations and padding (explicit or `auto_pad`, plus `ceil_mode`'s extra end padding).

use super::ctx::{checked_numel, invalid, to_usize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::Lazy;

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Conv", conv),
    ("ConvTranspose", conv_transpose),
    ("CausalConvWithState", causal_conv_with_state),
];

type Out = Result<Vec<Value>, OpError>;

/// The geometry of a sliding window over the spatial axes.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Window {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    /// `(begin, end)` padding per spatial axis, as the model gives it (or `auto_pad` implies).
    pub pads: Vec<(usize, usize)>,
    /// More end padding per axis, so that `ceil_mode` windows fit.
    pub extra: Vec<usize>,
}

impl Window {
    /// Padding including `extra`.
    pub fn total_pads(&self) -> Vec<(usize, usize)> {
        self.pads
            .iter()
            .zip(&self.extra)
            .map(|(&(b, e), &x)| (b, e + x))
            .collect()
    }

    /// Padding of every axis of a tensor with `lead` leading (batch, channel) axes.
    pub fn full_pads(&self, lead: usize) -> Vec<(usize, usize)> {
        let mut arg = vec![(0, 0); lead];
        arg.extend(self.total_pads());
        arg
    }

    pub fn span(&self, axis: usize) -> usize {
        self.dilations[axis] * (self.kernel[axis] - 1) + 1
    }
}

/// An ints attribute of length `n` (one per spatial axis), `default` when absent.
fn per_axis(ctx: &Ctx, name: &str, n: usize, default: usize) -> Result<Vec<usize>, OpError> {
    let Some(_) = ctx.attrs().get(name) else {
        return Ok(vec![default; n]);
    };
    let v = ctx.attrs().ints(name)?;
    if v.len() != n {
        return Err(invalid(format!(
            "{name} has {} values for {n} axes",
            v.len()
        )));
    }
    v.into_iter().map(|x| to_usize(x, name)).collect()
}

/// Reads a window's attributes for input spatial dims `spatial` and kernel `kernel`, and
/// checks that the window fits the padded input.
pub(super) fn window(
    ctx: &Ctx,
    spatial: &[usize],
    kernel: Vec<usize>,
    ceil_mode: bool,
) -> Result<Window, OpError> {
    let mut w = parse_window(ctx, spatial, kernel)?;
    for (i, &d) in spatial.iter().enumerate() {
        let (b, e) = w.pads[i];
        let padded = d + b + e;
        if padded < w.span(i) {
            return Err(invalid(format!(
                "window {} exceeds padded input {padded}",
                w.span(i)
            )));
        }
        if ceil_mode {
            let s = w.strides[i];
            let mut out = (padded - w.span(i)).div_ceil(s) + 1;
            if (out - 1) * s >= d + b {
                out -= 1;
            }
            w.extra[i] = ((out - 1) * s + w.span(i)).saturating_sub(padded);
        }
    }
    Ok(w)
}

/// The window's attributes, with `auto_pad` resolved for input spatial dims `spatial`.
fn parse_window(ctx: &Ctx, spatial: &[usize], kernel: Vec<usize>) -> Result<Window, OpError> {
    let n = spatial.len();
    if spatial.contains(&0) {
        return Err(invalid(format!("empty spatial dims {spatial:?}")));
    }
    if kernel.len() != n || kernel.contains(&0) {
        return Err(invalid(format!("kernel {kernel:?} for {n} spatial axes")));
    }
    let strides = per_axis(ctx, "strides", n, 1)?;
    let dilations = per_axis(ctx, "dilations", n, 1)?;
    if strides.contains(&0) || dilations.contains(&0) {
        return Err(invalid("strides and dilations must be positive"));
    }
    let auto_pad = ctx.attrs().string_or("auto_pad", "NOTSET".into())?;
    let mut w = Window {
        kernel,
        strides,
        dilations,
        pads: vec![(0, 0); n],
        extra: vec![0; n],
    };
    match auto_pad.as_str() {
        "NOTSET" | "" => {
            let p = ctx.attrs().ints_or("pads", vec![0; 2 * n])?;
            if p.len() != 2 * n {
                return Err(invalid(format!("{} pads for {n} axes", p.len())));
            }
            for i in 0..n {
                w.pads[i] = (to_usize(p[i], "pad")?, to_usize(p[i + n], "pad")?);
            }
        }
        "VALID" => {}
        "SAME_UPPER" | "SAME_LOWER" => {
            for (i, &d) in spatial.iter().enumerate() {
                let out = d.div_ceil(w.strides[i]);
                let total = ((out - 1) * w.strides[i] + w.span(i)).saturating_sub(d);
                let small = total / 2;
                w.pads[i] = match auto_pad.as_str() {
                    "SAME_UPPER" => (small, total - small),
                    _ => (total - small, small),
                };
            }
        }
        other => return Err(invalid(format!("unknown auto_pad {other:?}"))),
    }
    Ok(w)
}

/// The kernel shape: the attribute, or the weight's trailing dims.
fn kernel_of(ctx: &Ctx, weight_shape: &[usize]) -> Result<Vec<usize>, OpError> {
    match ctx.attrs().get("kernel_shape") {
        Some(_) => ctx
            .attrs()
            .ints("kernel_shape")?
            .into_iter()
            .map(|k| to_usize(k, "kernel dim"))
            .collect(),
        None => Ok(weight_shape.get(2..).unwrap_or_default().to_vec()),
    }
}

fn conv(ctx: &mut Ctx) -> Out {
    let (x, w) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let bias = ctx.opt_tensor(2)?;
    Ok(vec![Value::Tensor(conv_of(ctx, &x, &w, bias.as_ref())?)])
}

/// The node's window over `x` for the weight `w`, and its groups.
fn conv_window(ctx: &Ctx, x: &Lazy, w: &Lazy) -> Result<(Window, usize), OpError> {
    if x.shape().len() < 3 || x.shape().len() != w.shape().len() {
        let (xs, ws) = (x.shape(), w.shape());
        return Err(invalid(format!(
            "input {xs:?} and weight {ws:?} do not match"
        )));
    }
    let kernel = kernel_of(ctx, w.shape())?;
    let win = window(ctx, &x.shape()[2..], kernel, false)?;
    let groups = to_usize(ctx.attrs().int_or("group", 1)?, "group")?;
    Ok((win, groups))
}

/// The convolution of `x` by `w` with the node's window attributes (also the integer
/// convolution's).
pub(super) fn conv_of(
    ctx: &mut Ctx,
    x: &Lazy,
    w: &Lazy,
    bias: Option<&Lazy>,
) -> Result<Lazy, OpError> {
    let (win, groups) = conv_window(ctx, x, w)?;
    Ok(ctx
        .graph
        .conv(x, w, bias, &win.strides, &win.dilations, &win.pads, groups)?)
}

/// The convolution of the raw quantized `x` and `w` with the node's window, summed in `acc`
/// (each value widened where the kernel reads it): `x` padded with its zero point `zx`, so that a
/// padded tap adds `w · (zx − zx) = 0` once the caller folds `−zx · Σ w` into the bias.
pub(super) fn quantized_conv_of(
    ctx: &mut Ctx,
    x: &Lazy,
    w: &Lazy,
    zx: i64,
    acc: DType,
) -> Result<Lazy, OpError> {
    let (win, groups) = conv_window(ctx, x, w)?;
    let mut pads = vec![(0, 0); 2];
    pads.extend(&win.pads);
    let g = &mut *ctx.graph;
    let xp = g.pad_value(x, &pads, zx as f64)?;
    let none = vec![(0, 0); win.pads.len()];
    Ok(g.conv_in(
        &xp,
        w,
        None,
        &win.strides,
        &win.dilations,
        &none,
        groups,
        Some(acc),
    )?)
}

fn dilate(x: &Lazy, strides: &[usize]) -> Result<Lazy, OpError> {
    let lead = x.shape().len() - strides.len();
    let mut y = x.clone();
    for (i, &s) in strides.iter().enumerate() {
        let a = lead + i;
        let d = y.shape()[a];
        if s == 1 || d == 0 {
            continue;
        }
        let mut split = y.shape().to_vec();
        split.insert(a + 1, 1);
        let mut pad = vec![(0, 0); split.len()];
        pad[a + 1] = (0, s - 1);
        let mut merged = y.shape().to_vec();
        merged[a] = d * s;
        checked_numel(&merged)?;
        let mut keep: Vec<(usize, usize)> = merged.iter().map(|&n| (0, n)).collect();
        keep[a] = (0, (d - 1) * s + 1);
        y = y
            .reshape(&split)?
            .pad(&pad)?
            .reshape(&merged)?
            .shrink(&keep)?;
    }
    Ok(y)
}

/// The padding of a transposed convolution: explicit, or from `output_shape` or `auto_pad`; an
/// output larger than the full one grows at the end, like `output_padding`.
fn transpose_pads(ctx: &Ctx, win: &mut Window, input: &[usize], out_pad: &mut [usize]) -> Res {
    let auto_pad = ctx.attrs().string_or("auto_pad", "NOTSET".into())?;
    let wanted = ctx.attrs().ints_or("output_shape", vec![])?;
    let n = input.len();
    for i in 0..n {
        let full = (input[i] - 1) * win.strides[i] + win.span(i) + out_pad[i];
        let target = match (wanted.len(), auto_pad.as_str()) {
            (k, _) if k >= n => Some(to_usize(wanted[k - n + i], "output_shape")?),
            (_, "SAME_UPPER" | "SAME_LOWER") => Some(input[i] * win.strides[i]),
            _ => None,
        };
        if let Some(t) = target {
            if t > full {
                out_pad[i] += t - full;
                win.pads[i] = (0, 0);
                continue;
            }
            let total = full - t;
            let half = total / 2;
            win.pads[i] = match auto_pad.as_str() {
                "SAME_UPPER" => (half, total - half),
                _ => (total - half, half),
            };
        }
    }
    Ok(())
}

type Res = Result<(), OpError>;

/// The kernel `(C, M/g, *k)` of a transposed convolution as a plain convolution's
/// `(M, C/g, *k)`: in/out channels swapped within each group, spatial axes flipped.
fn transposed_kernel(w: &Lazy, groups: usize, cin: usize) -> Result<Lazy, OpError> {
    let ws = w.shape();
    let (og, kernel) = (ws[1], &ws[2..]);
    let nsp = kernel.len();
    let cg = cin / groups;
    let mut split = vec![groups, cg, og];
    split.extend(kernel);
    let mut perm = vec![0, 2, 1];
    perm.extend(3..3 + nsp);
    let mut flat = vec![groups * og, cg];
    flat.extend(kernel);
    let mut flip = vec![1; nsp + 2];
    flip[2..].fill(-1);
    let wt = w.reshape(&split)?.permute(&perm)?.reshape(&flat)?;
    Ok(wt.stride(&flip)?)
}

/// Transposed convolution: the input dilated by the strides, padded by `span - 1 - pad`, and
/// convolved with the transposed kernel.
fn conv_transpose(ctx: &mut Ctx) -> Out {
    let (x, w) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let bias = ctx.opt_tensor(2)?;
    let (xs, ws) = (x.shape().to_vec(), w.shape().to_vec());
    let nsp = xs.len().saturating_sub(2);
    let groups = to_usize(ctx.attrs().int_or("group", 1)?, "group")?;
    if nsp == 0 || ws.len() != xs.len() || groups == 0 || ws[0] != xs[1] || xs[1] % groups != 0 {
        let reason = format!("input {xs:?}, weight {ws:?}, {groups} groups");
        return Err(invalid(reason));
    }
    let kernel = kernel_of(ctx, &ws)?;
    if kernel != ws[2..] {
        return Err(invalid(format!("kernel_shape {kernel:?}, weight {ws:?}")));
    }
    let mut win = parse_window(ctx, &xs[2..], kernel)?;
    let mut out_pad = per_axis(ctx, "output_padding", nsp, 0)?;
    transpose_pads(ctx, &mut win, &xs[2..], &mut out_pad)?;
    let wt = transposed_kernel(&w, groups, xs[1])?;
    let xd = dilate(&x, &win.strides)?;
    let mut grow = Vec::with_capacity(nsp);
    let mut crop: Vec<(usize, usize)> = xd.shape().iter().map(|&d| (0, d)).collect();
    for i in 0..nsp {
        let edge = win.span(i) - 1;
        let (b, e) = win.pads[i];
        let e_total = edge + out_pad[i];
        grow.push((edge.saturating_sub(b), e_total.saturating_sub(e)));
        let d = xd.shape()[2 + i];
        let (cb, ce) = (b.saturating_sub(edge), e.saturating_sub(e_total));
        if cb + ce > d {
            return Err(invalid("padding removes the whole output"));
        }
        crop[2 + i] = (cb, d - ce);
    }
    let xp = xd.shrink(&crop)?;
    let mut padded = xp.shape().to_vec();
    for (d, (b, e)) in padded[2..].iter_mut().zip(&grow) {
        *d += b + e;
    }
    checked_numel(&padded)?;
    let ones = vec![1; nsp];
    let g = &mut *ctx.graph;
    let y = g.conv(
        &xp,
        &wt,
        bias.as_ref(),
        &ones,
        &win.dilations,
        &grow,
        groups,
    )?;
    Ok(vec![Value::Tensor(y)])
}

/// CausalConvWithState (opset 27): a depthwise 1-D convolution over `past_state` (zeros when
/// not given) followed by the input, so that output `t` sees input `t` and the `k - 1`
/// positions before it; `present_state` is the last `k - 1` positions, for the next call.
/// `activation` may fuse SiLU (`silu` or `swish`).
fn causal_conv_with_state(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let w = ctx.tensor(1)?;
    let (&[b, c, l], &[wc, one, k]) = (x.shape(), w.shape()) else {
        return Err(invalid(format!(
            "input {:?} and weight {:?} must both have rank 3",
            x.shape(),
            w.shape()
        )));
    };
    if wc != c || one != 1 || k == 0 {
        return Err(invalid(format!(
            "weight {:?} is not (channels {c}, 1, kernel) for input {:?}",
            w.shape(),
            x.shape()
        )));
    }
    let bias = ctx.opt_tensor(2)?;
    let past = match ctx.opt_tensor(3)? {
        Some(p) if p.shape() == [b, c, k - 1] => p,
        Some(p) => {
            return Err(invalid(format!(
                "past_state {:?} is not (batch {b}, channels {c}, kernel - 1 = {})",
                p.shape(),
                k - 1
            )))
        }
        None => ctx.scalar_const(0.0, x.dtype, &[b, c, k - 1]),
    };
    let activation = ctx.attrs().string_or("activation", "none".into())?;
    let g = &mut *ctx.graph;
    let padded = match k {
        1 => x,
        _ => g.concat(&[past, x], 2)?,
    };
    let y = g.conv(&padded, &w, bias.as_ref(), &[1], &[1], &[(0, 0)], c)?;
    let y = match activation.to_ascii_lowercase().as_str() {
        "none" => y,
        "silu" | "swish" => {
            let s = g.sigmoid(&y)?;
            g.binary(crate::ops::BinaryOp::Mul, &y, &s)?
        }
        other => {
            return Err(invalid(format!(
                "activation {other:?} (none, silu or swish)"
            )))
        }
    };
    let present = padded.shrink(&[(0, b), (0, c), (l, l + k - 1)])?;
    Ok(vec![Value::Tensor(y), Value::Tensor(present)])
}

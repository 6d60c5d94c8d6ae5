//! GridSample: samples the input at the (normalized) coordinates of a grid, with nearest,
//! linear or cubic interpolation and zeros, border or reflection padding, in any number of
//! spatial dims. Each spatial dim gets a weight per output point and source index (taps
//! matched against the indices), and the output sums the input against their product.
//! AffineGrid makes such grids from affine matrices.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::graph::tensor::broadcast_to;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;

pub(super) const OPS: &[(&str, OpBuilder)] =
    &[("GridSample", grid_sample), ("AffineGrid", affine_grid)];

type Out = Result<Vec<Value>, OpError>;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Nearest,
    Linear,
    Cubic,
}

#[derive(Clone, Copy, PartialEq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

fn grid_sample(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let a = ctx.attrs();
    let mode = match a.string_or("mode", "linear".into())?.as_str() {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" => Mode::Linear,
        "cubic" | "bicubic" => Mode::Cubic,
        other => return Err(invalid(format!("mode {other:?}"))),
    };
    let padding = match a.string_or("padding_mode", "zeros".into())?.as_str() {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => return Err(invalid(format!("padding_mode {other:?}"))),
    };
    let align = a.int_or("align_corners", 0)? != 0;
    let x = ctx.tensor(0)?;
    let grid = ctx.tensor(1)?;
    let (xs, gs) = (x.shape().to_vec(), grid.shape().to_vec());
    let k = xs.len().saturating_sub(2);
    if k == 0 || gs.len() != k + 2 || gs[0] != xs[0] || gs[k + 1] != k {
        return Err(invalid(format!(
            "input {xs:?} and grid {gs:?} do not match: the grid needs (N, *out, {k})"
        )));
    }
    if !grid.dtype.is_float() {
        return Err(invalid(format!("grid is {}, not a float type", grid.dtype)));
    }
    let (n, c) = (xs[0], xs[1]);
    let out: Vec<usize> = gs[1..=k].to_vec();
    let g = &mut *ctx.graph;
    // full: (N, C, *out, *dims)
    let mut full = vec![n, c];
    full.extend(&out);
    full.extend(&xs[2..]);
    let mut prod = {
        let mut s = vec![n, c];
        s.extend(std::iter::repeat_n(1, k));
        s.extend(&xs[2..]);
        broadcast_to(&x.reshape(&s)?, &full)?
    };
    for i in 0..k {
        let d = xs[2 + i];
        // The grid holds coordinates innermost dim first.
        let comp = k - 1 - i;
        let mut arg: Vec<(usize, usize)> = gs.iter().map(|&s| (0, s)).collect();
        arg[k + 1] = (comp, comp + 1);
        let mut cs = vec![n];
        cs.extend(&out);
        let coord = grid.shrink(&arg)?.reshape(&cs)?;
        let w = dim_weights(g, &coord, d, mode, padding, align)?;
        let w = g.cast(&w, x.dtype);
        // w: (N, *out, d) → (N, 1, *out, 1.., d, 1..)
        let mut s = vec![n, 1];
        s.extend(&out);
        s.extend((0..k).map(|j| if j == i { d } else { 1 }));
        let w = broadcast_to(&w.reshape(&s)?, &full)?;
        prod = g.binary(BinaryOp::Mul, &prod, &w)?;
    }
    let axes: Vec<usize> = (2 + k..2 + 2 * k).collect();
    let y = g.reduce(ReduceOp::Sum, &prod, &axes)?;
    let mut ys = vec![n, c];
    ys.extend(&out);
    Ok(vec![Value::Tensor(y.reshape(&ys)?)])
}

/// `lo + r` or `hi - r`: `x` reflected by the borders until it lies within `[lo, hi]`.
fn reflect(g: &mut Graph, x: &Lazy, lo: f64, hi: f64) -> Result<Lazy, OpError> {
    let range = hi - lo;
    if range <= 0.0 {
        return Ok(g.scalar_like(x, lo));
    }
    let mut side = |below: bool| -> Result<Lazy, OpError> {
        // dx: the distance beyond the border.
        let dx = if below {
            let n = g.neg(x)?;
            g.add_scalar(&n, lo)?
        } else {
            g.add_scalar(x, -hi)?
        };
        let q = g.mul_scalar(&dx, 1.0 / range)?;
        let q = g.trunc(&q)?;
        let qr = g.mul_scalar(&q, range)?;
        let r = g.binary(BinaryOp::Sub, &dx, &qr)?;
        let half = g.mul_scalar(&q, 0.5)?;
        let fh = g.floor(&half)?;
        let even = g.eq(&half, &fh)?;
        let from_lo = g.add_scalar(&r, lo)?;
        let nr = g.neg(&r)?;
        let from_hi = g.add_scalar(&nr, hi)?;
        Ok(if below {
            g.where_(&even, &from_lo, &from_hi)?
        } else {
            g.where_(&even, &from_hi, &from_lo)?
        })
    };
    let below = side(true)?;
    let above = side(false)?;
    let lo_c = g.scalar_like(x, lo);
    let hi_c = g.scalar_like(x, hi);
    let is_below = g.lt(x, &lo_c)?;
    let is_above = g.lt(&hi_c, x)?;
    let y = g.where_(&is_above, &above, x)?;
    Ok(g.where_(&is_below, &below, &y)?)
}

const A: f64 = -0.75;

/// The cubic kernel for taps within 1: `((A + 2)x - (A + 3))x² + 1`.
fn cubic_near(g: &mut Graph, x: &Lazy) -> Result<Lazy, OpError> {
    let p = g.mul_scalar(x, A + 2.0)?;
    let p = g.add_scalar(&p, -(A + 3.0))?;
    let x2 = g.binary(BinaryOp::Mul, x, x)?;
    let p = g.binary(BinaryOp::Mul, &p, &x2)?;
    Ok(g.add_scalar(&p, 1.0)?)
}

/// The cubic kernel for taps between 1 and 2: `((Ax - 5A)x + 8A)x - 4A`.
fn cubic_far(g: &mut Graph, x: &Lazy) -> Result<Lazy, OpError> {
    let p = g.mul_scalar(x, A)?;
    let p = g.add_scalar(&p, -5.0 * A)?;
    let p = g.binary(BinaryOp::Mul, &p, x)?;
    let p = g.add_scalar(&p, 8.0 * A)?;
    let p = g.binary(BinaryOp::Mul, &p, x)?;
    Ok(g.add_scalar(&p, -4.0 * A)?)
}

/// The cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for fraction `t`.
fn cubic_weights(g: &mut Graph, t: &Lazy) -> Result<[Lazy; 4], OpError> {
    let nt = g.neg(t)?;
    let t1 = g.add_scalar(t, 1.0)?;
    let one_minus = g.add_scalar(&nt, 1.0)?;
    let two_minus = g.add_scalar(&nt, 2.0)?;
    Ok([
        cubic_far(g, &t1)?,
        cubic_near(g, t)?,
        cubic_near(g, &one_minus)?,
        cubic_far(g, &two_minus)?,
    ])
}

/// The weight of each source index `0..d` for each normalized coordinate: (*coord, d).
fn dim_weights(
    g: &mut Graph,
    coord: &Lazy,
    d: usize,
    mode: Mode,
    padding: Padding,
    align: bool,
) -> Result<Lazy, OpError> {
    let (x, (lo, hi)) = source_coords(g, coord, d, mode, padding, align)?;
    let taps = taps(g, &x, mode)?;
    let df = d as f64;
    let mut shape = coord.shape().to_vec();
    shape.push(d);
    let mut ones = vec![1; coord.shape().len()];
    ones.push(d);
    let ar = g.arange(d, coord.dtype).reshape(&ones)?;
    let ar = broadcast_to(&ar, &shape)?;
    let mut total: Option<Lazy> = None;
    for (t, w) in taps {
        let t = match padding {
            Padding::Zeros => t,
            Padding::Border => g.clip(&t, Some(0.0), Some(df - 1.0))?,
            Padding::Reflection => {
                let r = reflect(g, &t, lo, hi)?;
                let r = g.trunc(&r)?;
                g.contiguous(&r)
            }
        };
        let mut ts = coord.shape().to_vec();
        ts.push(1);
        let t = broadcast_to(&t.reshape(&ts)?, &shape)?;
        let hit = g.eq(&t, &ar)?;
        let w = match w {
            Some(w) => broadcast_to(&w.reshape(&ts)?, &shape)?,
            None => g.constant(1.0, coord.dtype, &shape),
        };
        let zero = g.scalar_like(&w, 0.0);
        let part = g.where_(&hit, &w, &zero)?;
        total = Some(match total {
            Some(a) => g.binary(BinaryOp::Add, &a, &part)?,
            None => part,
        });
    }
    total.ok_or_else(|| invalid("no taps"))
}

/// The normalized coordinates as source positions along a dim of size `d` (rounded for
/// nearest, padded by `padding`, in one buffer), and the range of positions inside the dim.
fn source_coords(
    g: &mut Graph,
    coord: &Lazy,
    d: usize,
    mode: Mode,
    padding: Padding,
    align: bool,
) -> Result<(Lazy, (f64, f64)), OpError> {
    let df = d as f64;
    // Denormalize.
    let c1 = g.add_scalar(coord, 1.0)?;
    let mut x = if align {
        g.mul_scalar(&c1, (df - 1.0) / 2.0)?
    } else {
        let s = g.mul_scalar(&c1, df / 2.0)?;
        g.add_scalar(&s, -0.5)?
    };
    if mode == Mode::Nearest {
        x = g.round_even(&x)?;
    }
    let (lo, hi) = if align {
        (0.0, df - 1.0)
    } else {
        (-0.5, df - 0.5)
    };
    match padding {
        Padding::Zeros => {}
        Padding::Border => {
            let lo_c = g.scalar_like(&x, lo);
            let hi_c = g.scalar_like(&x, hi);
            let below = g.lt(&x, &lo_c)?;
            let above = g.lt(&hi_c, &x)?;
            let clamped = g.clip(&x, Some(0.0), Some(df - 1.0))?;
            let y = g.where_(&above, &clamped, &x)?;
            x = g.where_(&below, &clamped, &y)?;
        }
        Padding::Reflection => x = reflect(g, &x, lo, hi)?,
    }
    // One buffer of coordinates, instead of recomputing them in every use.
    Ok((g.contiguous(&x), (lo, hi)))
}

/// The interpolation's taps at source positions `x`: each tap's index and weight (none for
/// nearest, whose one tap weighs 1).
fn taps(g: &mut Graph, x: &Lazy, mode: Mode) -> Result<Vec<(Lazy, Option<Lazy>)>, OpError> {
    if mode == Mode::Nearest {
        return Ok(vec![(g.trunc(x)?, None)]);
    }
    let x0 = g.floor(x)?;
    let t = g.binary(BinaryOp::Sub, x, &x0)?;
    if mode == Mode::Linear {
        let nt = g.neg(&t)?;
        let w0 = g.add_scalar(&nt, 1.0)?;
        let x1 = g.add_scalar(&x0, 1.0)?;
        return Ok(vec![(x0, Some(w0)), (x1, Some(t))]);
    }
    let ws = cubic_weights(g, &t)?;
    let mut v = Vec::with_capacity(4);
    for (j, w) in ws.into_iter().enumerate() {
        let xi = g.add_scalar(&x0, j as f64 - 1.0)?;
        v.push((xi, Some(w)));
    }
    Ok(v)
}

/// AffineGrid: the normalized coordinates of every output position, `(x, y[, z], 1)`,
/// transformed by each batch's affine matrix `theta` (N, k, k + 1).
fn affine_grid(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let align = ctx.attrs().int_or("align_corners", 0)? != 0;
    let theta = ctx.tensor(0)?;
    let size = ctx.ints(1)?;
    let k = size.len().saturating_sub(2);
    let ts = theta.shape().to_vec();
    if !(k == 2 || k == 3) || ts.len() != 3 || ts[1] != k || ts[2] != k + 1 {
        return Err(invalid(format!(
            "theta {ts:?} and size {size:?}: need (N, 2, 3) with a 4-D size or (N, 3, 4) with a 5-D one"
        )));
    }
    let dims: Vec<usize> = size[2..]
        .iter()
        .map(|&d| super::ctx::to_usize(d, "size"))
        .collect::<Result<_, _>>()?;
    let positions = super::ctx::checked_numel(&dims)?;
    let coord = |i: usize, n: usize| -> f64 {
        if align {
            if n > 1 {
                -1.0 + 2.0 * i as f64 / (n - 1) as f64
            } else {
                -1.0
            }
        } else {
            -1.0 + (2 * i + 1) as f64 / n as f64
        }
    };
    // Row p: the innermost axis's coordinate first, then outwards, then 1.
    let mut base = Vec::with_capacity(positions * (k + 1));
    for p in 0..positions {
        let mut rest = p;
        let mut idx = vec![0; k];
        for a in (0..k).rev() {
            idx[a] = rest % dims[a];
            rest /= dims[a];
        }
        for a in (0..k).rev() {
            base.push(coord(idx[a], dims[a]));
        }
        base.push(1.0);
    }
    let t = Tensor::from_f64(theta.dtype.scalar, vec![positions, k + 1], &base)?;
    let g = &mut *ctx.graph;
    let base = super::ctx::materialize(g, "affine_grid_base", &t)?;
    let tt = theta.permute(&[0, 2, 1])?;
    let grid = g.matmul(&base, &tt)?;
    let mut out = vec![ts[0]];
    out.extend(&dims);
    out.push(k);
    Ok(vec![Value::Tensor(grid.reshape(&out)?)])
}

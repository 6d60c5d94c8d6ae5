//! DFT: the discrete Fourier transform along one axis, forward or inverse, full or one-sided,
//! as products with known cosine and sine matrices. The last input dim holds the real part
//! (size 1) or the real and imaginary parts (size 2). The window functions, known at compile
//! time.

use super::ctx::{invalid, materialize, norm_axis, to_usize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::graph::{Graph, Lazy};
use crate::onnx::ElemType;
use crate::ops::BinaryOp;
use crate::tensor::Tensor;
use std::f64::consts::TAU;

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("DFT", dft),
    ("HannWindow", hann_window),
    ("HammingWindow", hamming_window),
    ("BlackmanWindow", blackman_window),
];

type Out = Result<Vec<Value>, OpError>;

/// A known `(rows, cols)` matrix of `x`'s type.
fn matrix(
    g: &mut Graph,
    x: &Lazy,
    rows: usize,
    cols: usize,
    f: impl Fn(usize, usize) -> f64,
) -> Result<Lazy, OpError> {
    let values: Vec<f64> = (0..rows * cols).map(|i| f(i / cols, i % cols)).collect();
    let t = Tensor::from_f64(x.dtype.scalar, vec![rows, cols], &values)?;
    materialize(g, "dft_matrix", &t)
}

/// `a @ ma + b @ mb` (either operand optional).
fn mix(g: &mut Graph, terms: &[(Option<&Lazy>, Lazy)]) -> Result<Lazy, OpError> {
    let mut acc: Option<Lazy> = None;
    for (x, m) in terms {
        let Some(x) = x else { continue };
        let p = g.matmul(x, m)?;
        acc = Some(match acc {
            Some(a) => g.binary(BinaryOp::Add, &a, &p)?,
            None => p,
        });
    }
    acc.ok_or_else(|| invalid("nothing to transform"))
}

/// What DFT transforms: along `axis`, `n` points of the `len` the input has there.
struct DftShape {
    axis: usize,
    len: usize,
    n: usize,
    inverse: bool,
    onesided: bool,
}

fn dft(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let x = ctx.tensor(0)?;
    let d = dft_shape(ctx, &x)?;
    let rank = x.shape().len();
    // Split the parts and move the axis last: (..., len).
    let mut perm: Vec<usize> = (0..rank - 1).filter(|&a| a != d.axis).collect();
    perm.push(d.axis);
    let part = |k: usize| -> Result<Lazy, OpError> {
        let mut arg: Vec<(usize, usize)> = x.shape().iter().map(|&s| (0, s)).collect();
        arg[rank - 1] = (k, k + 1);
        Ok(x.shrink(&arg)?
            .reshape(&x.shape()[..rank - 1])?
            .permute(&perm)?)
    };
    let re = part(0)?;
    let im = if x.shape()[rank - 1] == 2 {
        Some(part(1)?)
    } else {
        None
    };
    let g = &mut *ctx.graph;
    let (out_re, out_im, k) = if d.inverse && d.onesided {
        (inverse_onesided(g, &re, im.as_ref(), &d)?, None, d.n)
    } else {
        let (r, i, k) = full_spectrum(g, &re, im.as_ref(), &d)?;
        (r, Some(i), k)
    };
    // Back to the input's layout with the new axis length and a parts dim.
    let mut back = vec![0; rank - 1];
    for (i, &p) in perm.iter().enumerate() {
        back[p] = i;
    }
    let mut with_part = x.shape()[..rank - 1].to_vec();
    with_part[d.axis] = k;
    with_part.push(1);
    let r = out_re.permute(&back)?.reshape(&with_part)?;
    let y = match out_im {
        Some(i) => {
            let i = i.permute(&back)?.reshape(&with_part)?;
            g.concat(&[r, i], rank - 1)?
        }
        None => r,
    };
    Ok(vec![Value::Tensor(y)])
}

/// DFT's axis, direction, sidedness and length, checked against the input `x`.
fn dft_shape(ctx: &mut Ctx, x: &Lazy) -> Result<DftShape, OpError> {
    let rank = x.shape().len();
    let inverse = ctx.attrs().int_or("inverse", 0)? != 0;
    let onesided = ctx.attrs().int_or("onesided", 0)? != 0;
    let axis = if ctx.opset >= 20 {
        match ctx.opt_ints(2)? {
            Some(v) if v.len() == 1 => v[0],
            Some(v) => return Err(invalid(format!("axis {v:?} is not one integer"))),
            None => -2,
        }
    } else {
        ctx.attrs().int_or("axis", 1)?
    };
    let axis = norm_axis(axis, rank, false)?;
    let parts = x.shape()[rank - 1];
    if rank < 2 || axis == rank - 1 || !(parts == 1 || parts == 2) {
        return Err(invalid(format!(
            "input {:?} with axis {axis}: the last dim must hold 1 or 2 parts, and not be the axis",
            x.shape()
        )));
    }
    if !x.dtype.is_float() {
        return Err(invalid(format!("input is {}, not a float type", x.dtype)));
    }
    let len = x.shape()[axis];
    let n = match ctx.opt_ints(1)? {
        Some(v) if v.len() == 1 => to_usize(v[0], "dft_length")?,
        Some(v) => return Err(invalid(format!("dft_length {v:?} is not one integer"))),
        None if inverse && onesided => 2 * len.saturating_sub(1),
        None => len,
    };
    if n == 0 {
        return Err(invalid("dft_length 0"));
    }
    Ok(DftShape {
        axis,
        len,
        n,
        inverse,
        onesided,
    })
}

/// The angle of frequency `a` at point `b` of an `n`-point transform.
fn angle(n: usize, a: usize, b: usize) -> f64 {
    TAU * ((a * b) % n) as f64 / n as f64
}

/// The real output of an inverse transform of half a spectrum with Hermitian symmetry.
fn inverse_onesided(
    g: &mut Graph,
    re: &Lazy,
    im: Option<&Lazy>,
    d: &DftShape,
) -> Result<Lazy, OpError> {
    let (n, nf) = (d.n, d.n as f64);
    let weight = move |k: usize| {
        if k == 0 || (n % 2 == 0 && k == n / 2) {
            1.0
        } else {
            2.0
        }
    };
    let used = move |k: usize| k <= n / 2;
    let cr = matrix(g, re, d.len, n, |k, j| {
        if used(k) {
            weight(k) * angle(n, k, j).cos() / nf
        } else {
            0.0
        }
    })?;
    let ci = matrix(g, re, d.len, n, |k, j| {
        if used(k) && k != 0 && !(n % 2 == 0 && k == n / 2) {
            -weight(k) * angle(n, k, j).sin() / nf
        } else {
            0.0
        }
    })?;
    mix(g, &[(Some(re), cr), (im, ci)])
}

/// A forward (or inverse) transform to the full spectrum (the first half and one for a
/// one-sided forward one): the real and imaginary parts, and their length.
fn full_spectrum(
    g: &mut Graph,
    re: &Lazy,
    im: Option<&Lazy>,
    d: &DftShape,
) -> Result<(Lazy, Lazy, usize), OpError> {
    let (n, nf) = (d.n, d.n as f64);
    let k = if d.onesided && !d.inverse {
        n / 2 + 1
    } else {
        n
    };
    let (sign, scale) = if d.inverse {
        (1.0, 1.0 / nf)
    } else {
        (-1.0, 1.0)
    };
    let ok = move |j: usize| j < n;
    let cos = matrix(g, re, d.len, k, |j, f| {
        if ok(j) {
            angle(n, j, f).cos() * scale
        } else {
            0.0
        }
    })?;
    let sin = matrix(g, re, d.len, k, |j, f| {
        if ok(j) {
            sign * angle(n, j, f).sin() * scale
        } else {
            0.0
        }
    })?;
    let neg_sin = matrix(g, re, d.len, k, |j, f| {
        if ok(j) {
            -sign * angle(n, j, f).sin() * scale
        } else {
            0.0
        }
    })?;
    // (re + i·im)(cos + i·s·sin) = re·cos - im·s·sin + i(re·s·sin + im·cos)
    let r = mix(g, &[(Some(re), cos.clone()), (im, neg_sin)])?;
    let i = mix(g, &[(Some(re), sin), (im, cos)])?;
    Ok((r, i, k))
}

/// A window of the size in input 0, `f(n, N)` at each `n` (N is the size when `periodic`,
/// else one less), as a known tensor of `output_datatype`.
fn window(ctx: &mut Ctx, f: fn(f64, f64) -> f64) -> Out {
    let size = match ctx.ints(0)?.as_slice() {
        [v] => to_usize(*v, "size")?,
        other => return Err(invalid(format!("size {other:?} is not one integer"))),
    };
    super::ctx::checked_numel(&[size])?;
    let periodic = ctx.attrs().int_or("periodic", 1)? != 0;
    let code = ctx.attrs().int_or("output_datatype", 1)?;
    let elem = ElemType::from_code(i32::try_from(code).unwrap_or(-1));
    let dtype = super::ctx::dtype_of(elem, super::ctx::output_name(ctx.node, 0))?;
    let big_n = if periodic {
        size as f64
    } else {
        size as f64 - 1.0
    };
    let values: Vec<f64> = (0..size).map(|i| f(i as f64, big_n)).collect();
    Ok(vec![Value::known(Tensor::vector(dtype.scalar, &values))])
}

fn hann_window(ctx: &mut Ctx) -> Out {
    window(ctx, |i, n| (i * std::f64::consts::PI / n).sin().powi(2))
}

fn hamming_window(ctx: &mut Ctx) -> Out {
    window(ctx, |i, n| {
        let alpha = 25.0 / 46.0;
        alpha - (i * TAU / n).cos() * (1.0 - alpha)
    })
}

fn blackman_window(ctx: &mut Ctx) -> Out {
    window(ctx, |i, n| {
        0.42 - (i * TAU / n).cos() * 0.5 + (i * 2.0 * TAU / n).cos() * 0.08
    })
}

//! TFLM's `SignalRfft` and `SignalIrfft`: KISS FFT's real transforms (`kiss_fftr`,
//! `kiss_fftri`) of each frame along the last axis, in int16, int32 or float32.
//!
//! - `SignalRfft`: a frame of `input_length ≤ fft_length` real samples, zero-padded to
//!   `fft_length`, to `fft_length / 2 + 1` complex bins, interleaved (real, imaginary).
//! - `SignalIrfft`: `fft_length / 2 + 1` interleaved complex bins to `fft_length` samples (in
//!   float divided by `fft_length`, as TFLM divides KISS FFT's unscaled result).
//!
//! The real transform packs the `n` samples as `n / 2` complex values, transforms them, and
//! splits the result with the "super twiddles" `exp(∓iπ (k / (n/2) + 1/2))`.

use super::kiss_fft::{Cx, Format, Kiss};
use super::{Ctx, OpBuilder};
use crate::dtype::Scalar;
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::BinaryOp;
use crate::tflite::error::OpError;

pub(super) const CUSTOM: &[(&str, OpBuilder)] = &[("SignalRfft", rfft), ("SignalIrfft", irfft)];

type Out = Result<Vec<Lazy>, OpError>;

/// The transform's format (from the input's type, which option `T` must agree with) and its
/// length (option `fft_length`, even and positive).
fn setup(ctx: &Ctx) -> Result<(Format, usize), OpError> {
    let t = ctx.info(0)?;
    let format = match t.dtype {
        Scalar::I16 => Format::Q15,
        Scalar::I32 => Format::Q31,
        Scalar::F32 => Format::Float,
        other => {
            return Err(OpError::Unsupported(format!(
                "{} on {other} input {:?} (TFLM takes int16, int32 or float32)",
                ctx.op.name(),
                t.name
            )))
        }
    };
    for i in 0..ctx.op.outputs.len() {
        let o = ctx.out_info(i)?;
        if o.dtype != t.dtype {
            return Err(OpError::Invalid(format!(
                "output {:?} is {}, the input {}",
                o.name, o.dtype, t.dtype
            )));
        }
    }
    let o = ctx.custom_options()?;
    let n = o
        .int("fft_length")?
        .ok_or_else(|| OpError::Invalid("custom option \"fft_length\" is missing".into()))?;
    if n < 2 || n % 2 != 0 || n > 1 << 20 {
        return Err(OpError::Invalid(format!(
            "custom option \"fft_length\" is {n}, not an even length from 2 to 2^20"
        )));
    }
    Ok((format, n as usize))
}

/// The value's leading axes flattened: `[frames, last]`, and the leading axes.
fn frames(x: &Lazy) -> Result<(Lazy, Vec<usize>), OpError> {
    let shape = x.shape();
    let Some((&last, lead)) = shape.split_last() else {
        return Err(OpError::Invalid("the input is a scalar, not frames".into()));
    };
    let b = lead.iter().product();
    Ok((x.reshape(&[b, last])?, lead.to_vec()))
}

/// `[b, 2k]` interleaved pairs as a complex `[b, k]`.
fn unpair(x: &Lazy) -> Result<Cx, GraphError> {
    let (b, k) = (x.shape()[0], x.shape()[1] / 2);
    let p = x.reshape(&[b, k, 2])?;
    let pick = |j: usize| p.shrink(&[(0, b), (0, k), (j, j + 1)])?.reshape(&[b, k]);
    Ok(Cx {
        re: pick(0)?,
        im: pick(1)?,
    })
}

/// A complex `[b, k]` interleaved as `[b, 2k]`.
fn pair(g: &mut Graph, x: &Cx) -> Result<Lazy, GraphError> {
    let (b, k) = (x.re.shape()[0], x.re.shape()[1]);
    let re = x.re.reshape(&[b, k, 1])?;
    let im = x.im.reshape(&[b, k, 1])?;
    g.concat(&[re, im], 2)?.reshape(&[b, 2 * k])
}

/// Columns `[lo, hi)` of a `[b, k]` complex value, reversed if `flip`.
fn cols(x: &Cx, lo: usize, hi: usize, flip: bool) -> Result<Cx, GraphError> {
    let cut = |v: &Lazy| -> Result<Lazy, GraphError> {
        let y = v.shrink(&[(0, v.shape()[0]), (lo, hi)])?;
        if flip {
            y.stride(&[1, -1])
        } else {
            Ok(y)
        }
    };
    Ok(Cx {
        re: cut(&x.re)?,
        im: cut(&x.im)?,
    })
}

fn concat_cx(g: &mut Graph, parts: &[Cx]) -> Result<Cx, GraphError> {
    let re: Vec<Lazy> = parts.iter().map(|c| c.re.clone()).collect();
    let im: Vec<Lazy> = parts.iter().map(|c| c.im.clone()).collect();
    Ok(Cx {
        re: g.concat(&re, 1)?,
        im: g.concat(&im, 1)?,
    })
}

/// The super twiddles `kf_cexp(∓π ((k + 1) / n + 1/2))` for `k < n / 2`.
fn super_twiddles(k: &mut Kiss, n: usize, to: &[usize]) -> Result<Cx, GraphError> {
    let sign = if k.inverse { 1.0 } else { -1.0 };
    let w: Vec<Vec<(f64, f64)>> = vec![(0..n / 2)
        .map(|i| {
            let phase = sign * std::f64::consts::PI * ((i + 1) as f64 / n as f64 + 0.5);
            k.format.cexp(phase)
        })
        .collect()];
    Ok(k.table(&w, to)?.remove(0))
}

/// The pairs `(F[k], conj F[n − k])` for `k` in `1 ..= n/2`, each through `C_FIXDIV(·, 2)`.
fn mirrored(k: &mut Kiss, z: &Cx, n: usize) -> Result<(Cx, Cx), GraphError> {
    let half = n / 2;
    let fk = cols(z, 1, half + 1, false)?;
    let back = cols(z, n - half, n, true)?;
    let conj = Cx {
        im: k.neg(&back.im)?,
        re: back.re,
    };
    Ok((k.fixdiv(&fk, 2)?, k.fixdiv(&conj, 2)?))
}

/// The outputs at `k` and at `n − k`: positions `1 ..= (n−1)/2` from `lo`, then `n − n/2 … n−1`
/// from `hi` reversed (where `k = n − k`, `hi` is written last and wins, as in KISS FFT).
fn spread(lo: &Cx, hi: &Cx, n: usize) -> Result<(Cx, Cx), GraphError> {
    Ok((cols(lo, 0, (n - 1) / 2, false)?, cols(hi, 0, n / 2, true)?))
}

fn rfft(ctx: &mut Ctx) -> Out {
    let (format, len) = setup(ctx)?;
    let x = ctx.input(0)?;
    let (x, lead) = frames(&x)?;
    let (b, samples) = (x.shape()[0], x.shape()[1]);
    if samples > len {
        return Err(OpError::Invalid(format!(
            "frames of {samples} samples are longer than fft_length {len}"
        )));
    }
    let name = ctx.out_info(0)?.name.clone();
    let mut k = Kiss {
        g: &mut *ctx.graph,
        format,
        name,
        inverse: false,
    };
    let n = len / 2;
    let z = k.transform(&unpair(&x.pad(&[(0, 0), (0, len - samples)])?)?)?;
    // DC and Nyquist from the first bin: (r + i, r − i) of it halved.
    let tdc = k.fixdiv(&cols(&z, 0, 1, false)?, 2)?;
    let zero = k.g.constant(0.0, format.stored(), &[b, 1]);
    let dc = Cx {
        re: k.g.binary(BinaryOp::Add, &tdc.re, &tdc.im)?,
        im: zero.clone(),
    };
    let nyquist = Cx {
        re: k.g.binary(BinaryOp::Sub, &tdc.re, &tdc.im)?,
        im: zero,
    };
    let mut parts = vec![dc];
    if n >= 2 {
        let (fpk, fpnk) = mirrored(&mut k, &z, n)?;
        let f1k = k.cadd(&fpk, &fpnk)?;
        let f2k = k.csub(&fpk, &fpnk)?;
        let w = super_twiddles(&mut k, n, f2k.re.shape())?;
        let tw = k.cmul(&f2k, &w)?;
        let lo = Cx {
            re: k.half(&f1k.re, &tw.re, BinaryOp::Add)?,
            im: k.half(&f1k.im, &tw.im, BinaryOp::Add)?,
        };
        let hi = Cx {
            re: k.half(&f1k.re, &tw.re, BinaryOp::Sub)?,
            im: k.half(&tw.im, &f1k.im, BinaryOp::Sub)?,
        };
        let (lo, hi) = spread(&lo, &hi, n)?;
        parts.extend([lo, hi]);
    }
    parts.push(nyquist);
    let y = concat_cx(k.g, &parts)?;
    let y = pair(k.g, &y)?;
    let mut shape = lead;
    shape.push(len + 2);
    Ok(vec![y.reshape(&shape)?])
}

fn irfft(ctx: &mut Ctx) -> Out {
    let (format, len) = setup(ctx)?;
    let x = ctx.input(0)?;
    let (x, lead) = frames(&x)?;
    let n = len / 2;
    if x.shape()[1] != len + 2 {
        return Err(OpError::Invalid(format!(
            "frames of {} values are not the {} of fft_length {len}'s {} complex bins",
            x.shape()[1],
            len + 2,
            n + 1
        )));
    }
    let name = ctx.out_info(0)?.name.clone();
    let mut k = Kiss {
        g: &mut *ctx.graph,
        format,
        name,
        inverse: true,
    };
    let f = unpair(&x)?;
    let (first, last) = (cols(&f, 0, 1, false)?, cols(&f, n, n + 1, false)?);
    let t0 = Cx {
        re: k.g.binary(BinaryOp::Add, &first.re, &last.re)?,
        im: k.g.binary(BinaryOp::Sub, &first.re, &last.re)?,
    };
    let mut parts = vec![k.fixdiv(&t0, 2)?];
    if n >= 2 {
        let (fk, fnkc) = mirrored(&mut k, &cols(&f, 0, n, false)?, n)?;
        let fek = k.cadd(&fk, &fnkc)?;
        let tmp = k.csub(&fk, &fnkc)?;
        let w = super_twiddles(&mut k, n, tmp.re.shape())?;
        let fok = k.cmul(&tmp, &w)?;
        let lo = k.cadd(&fek, &fok)?;
        let hi = k.csub(&fek, &fok)?;
        let hi = Cx {
            im: k.neg(&hi.im)?,
            re: hi.re,
        };
        let (lo, hi) = spread(&lo, &hi, n)?;
        parts.extend([lo, hi]);
    }
    let t = concat_cx(k.g, &parts)?;
    let y = k.transform(&t)?;
    let mut y = pair(k.g, &y)?;
    if format == Format::Float {
        // TFLM divides KISS FFT's float result by the length.
        let l = k.g.constant(len as f64, y.dtype, y.shape());
        y = k.g.binary(BinaryOp::Div, &y, &l)?;
    }
    let mut shape = lead;
    shape.push(len);
    Ok(vec![y.reshape(&shape)?])
}

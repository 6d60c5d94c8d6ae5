//! `RESIZE_BILINEAR` and `RESIZE_NEAREST_NEIGHBOR` of NHWC images to the output's static size.
//!
//! The source rows and columns of every output pixel are known at compile time, so each
//! resize is separable: the height axis is resampled first, then the width, each a gather of
//! known indices (views or concatenated slices) and, for bilinear, a weighted sum of two.
//!
//! Float bilinear weights are computed in `f32` as TFLM's `ResizeBilinear` does. Int8 follows
//! `ResizeBilinearInteger`: source positions in fixed point with 10 fractional bits, the
//! four-tap sum in integers (exact when split into two passes) and one rounding division by
//! `2^20`, halves away from zero. Nearest neighbour copies values, so any type keeps them.

use super::index::take;
use super::{expect_shape, Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, Lazy};
use crate::ops::BinaryOp;
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::ResizeBilinear, resize_bilinear),
    (Op::ResizeNearestNeighbor, resize_nearest),
];

type Out = Result<Vec<Lazy>, OpError>;

/// The two modes both resizes take.
#[derive(Clone, Copy)]
struct Mode {
    align_corners: bool,
    half_pixel: bool,
}

/// The input (NHWC) and the output's height and width.
fn sizes(ctx: &mut Ctx) -> Result<(Lazy, [usize; 2]), OpError> {
    let x = ctx.input(0)?;
    let out = ctx.out_info(0)?.shape.clone();
    if x.shape().len() != 4 || out.len() != 4 {
        return Err(OpError::Invalid(format!(
            "{} of {:?} to {out:?}: both must be 4-D",
            ctx.op.name(),
            x.shape()
        )));
    }
    if let Ok(size) = ctx.ints(1) {
        if size != [out[1] as i64, out[2] as i64] {
            return Err(OpError::Invalid(format!(
                "size {size:?} for an output of shape {out:?}"
            )));
        }
    }
    if out[1] == 0 || out[2] == 0 || x.shape()[1] == 0 || x.shape()[2] == 0 {
        return Err(OpError::Invalid(format!(
            "{} of {:?} to {out:?}",
            ctx.op.name(),
            x.shape()
        )));
    }
    Ok((x, [out[1], out[2]]))
}

/// The float scale of one axis, as TFLM computes it.
fn float_scale(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// The source index of each output position along one axis (`GetNearestNeighbor`).
fn nearest_indices(input: usize, output: usize, mode: Mode) -> Vec<usize> {
    let scale = float_scale(input, output, mode.align_corners);
    let offset = if mode.half_pixel { 0.5f32 } else { 0.0 };
    (0..output)
        .map(|o| {
            let p = (o as f32 + offset) * scale;
            let i = if mode.align_corners {
                p.round() as i64
            } else {
                p.floor() as i64
            };
            i.clamp(0, input as i64 - 1) as usize
        })
        .collect()
}

/// One axis of a bilinear resize: per output position the two source indices and their
/// weights (`f32` values, or integers in units of `2^-10`).
struct Taps {
    lo: Vec<usize>,
    hi: Vec<usize>,
    w_lo: Vec<f64>,
    w_hi: Vec<f64>,
}

fn float_taps(input: usize, output: usize, mode: Mode) -> Taps {
    let scale = float_scale(input, output, mode.align_corners);
    let mut t = Taps {
        lo: vec![],
        hi: vec![],
        w_lo: vec![],
        w_hi: vec![],
    };
    for o in 0..output {
        let p = if mode.half_pixel {
            (o as f32 + 0.5) * scale - 0.5
        } else {
            o as f32 * scale
        };
        let lo = (p.floor() as i64).max(0);
        let hi = (p.ceil() as i64).min(input as i64 - 1);
        let frac = p - lo as f32;
        t.lo.push(lo.min(input as i64 - 1) as usize);
        t.hi.push(hi.max(0) as usize);
        t.w_lo.push(f64::from(1.0 - frac));
        t.w_hi.push(f64::from(frac));
    }
    t
}

fn integer_taps(input: usize, output: usize, mode: Mode) -> Taps {
    let (i, o) = (input as i64, output as i64);
    let scale = if mode.align_corners && o > 1 {
        ((1 << 10) * (i - 1) + (o - 1) / 2) / (o - 1)
    } else {
        ((1 << 10) * i + o / 2) / o
    };
    let mut t = Taps {
        lo: vec![],
        hi: vec![],
        w_lo: vec![],
        w_hi: vec![],
    };
    for v in 0..o {
        let p = if mode.half_pixel {
            v * scale + scale / 2 - (1 << 9)
        } else {
            v * scale
        };
        let lo = (p / (1 << 10)).max(0);
        let hi = ((p + (1 << 10) - 1) / (1 << 10)).min(i - 1);
        let frac = p - (1 << 10) * lo;
        t.lo.push(lo.min(i - 1) as usize);
        t.hi.push(hi.max(0) as usize);
        t.w_lo.push(((1 << 10) - frac) as f64);
        t.w_hi.push(frac as f64);
    }
    t
}

/// `w` laid along `axis` of a rank-4 value, as a `dtype` weight.
fn along(g: &mut Graph, name: &str, axis: usize, w: &[f64], dtype: DType) -> Result<Lazy, OpError> {
    let mut shape = vec![1; 4];
    shape[axis] = w.len();
    let t = Tensor::from_f64(dtype.scalar, shape, w).expect("one weight per position");
    Ok(g.weight(name, t))
}

/// `x[lo] · w_lo + x[hi] · w_hi` along `axis` (in `x`'s type).
fn blend(g: &mut Graph, name: &str, x: &Lazy, axis: usize, t: &Taps) -> Result<Lazy, OpError> {
    let a = take(g, x, axis, &t.lo)?;
    let b = take(g, x, axis, &t.hi)?;
    let wa = along(g, &format!("{name}_w{axis}_lo"), axis, &t.w_lo, x.dtype)?;
    let wb = along(g, &format!("{name}_w{axis}_hi"), axis, &t.w_hi, x.dtype)?;
    let a = g.binary(BinaryOp::Mul, &a, &wa)?;
    let b = g.binary(BinaryOp::Mul, &b, &wb)?;
    Ok(g.binary(BinaryOp::Add, &a, &b)?)
}

fn resize_bilinear(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::ResizeBilinearOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let mode = Mode {
        align_corners: o.align_corners,
        half_pixel: o.half_pixel_centers,
    };
    let (x, [oh, ow]) = sizes(ctx)?;
    let [ih, iw] = [x.shape()[1], x.shape()[2]];
    let name = ctx.out_info(0)?.name.clone();
    let dtype = ctx.info(0)?.dtype;
    if ctx.out_info(0)?.dtype != dtype {
        return Err(OpError::Unsupported(format!(
            "RESIZE_BILINEAR from {dtype} to {}",
            ctx.out_info(0)?.dtype
        )));
    }
    super::same_quant(ctx, 0)?;
    let g = &mut *ctx.graph;
    let y = match dtype {
        Scalar::F32 => {
            let h = blend(g, &name, &x, 1, &float_taps(ih, oh, mode))?;
            blend(g, &name, &h, 2, &float_taps(iw, ow, mode))?
        }
        Scalar::I8 => {
            let wide = g.cast(&x, DType::I32);
            let h = blend(g, &name, &wide, 1, &integer_taps(ih, oh, mode))?;
            let s = blend(g, &name, &h, 2, &integer_taps(iw, ow, mode))?;
            let r = g.rounding_divide_by_pot(&s, 20)?;
            g.cast(&r, DType::I8)
        }
        other => {
            return Err(OpError::Unsupported(format!(
                "RESIZE_BILINEAR on {other} (float32 and int8 are)"
            )))
        }
    };
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

fn resize_nearest(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::ResizeNearestNeighborOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let mode = Mode {
        align_corners: o.align_corners,
        half_pixel: o.half_pixel_centers,
    };
    let dtype = ctx.info(0)?.dtype;
    if !matches!(dtype, Scalar::F32 | Scalar::I8 | Scalar::I16) {
        return Err(OpError::Unsupported(format!(
            "RESIZE_NEAREST_NEIGHBOR on {dtype} (float32, int8 and int16 are)"
        )));
    }
    super::same_quant(ctx, 0)?;
    let (x, [oh, ow]) = sizes(ctx)?;
    let [ih, iw] = [x.shape()[1], x.shape()[2]];
    let g = &mut *ctx.graph;
    let h = take(g, &x, 1, &nearest_indices(ih, oh, mode))?;
    let y = take(g, &h, 2, &nearest_indices(iw, ow, mode))?;
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_taps_follow_ten_bit_fixed_point() {
        let m = Mode {
            align_corners: false,
            half_pixel: true,
        };
        // 5 → 8: scale round(5·1024/8) = 640; the first position is 320 − 512 = −192.
        let t = integer_taps(5, 8, m);
        assert_eq!((t.lo[0], t.hi[0]), (0, 0));
        assert_eq!((t.w_lo[0], t.w_hi[0]), (1216.0, -192.0));
        assert_eq!((t.lo[7], t.hi[7]), (4, 4));
    }

    #[test]
    fn nearest_rounds_with_align_corners() {
        let m = Mode {
            align_corners: true,
            half_pixel: false,
        };
        assert_eq!(nearest_indices(3, 5, m), vec![0, 1, 1, 2, 2]);
    }
}

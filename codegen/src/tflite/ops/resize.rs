//! `RESIZE_BILINEAR` and `RESIZE_NEAREST_NEIGHBOR` of NHWC images to a constant size, as TFLM's
//! reference kernels compute them (`align_corners`, `half_pixel_centers`).
//!
//! The output size is known at compile time, so are the source rows and columns of every
//! output pixel and their weights: the sources are gathered as views (or concatenated slices),
//! the weights are constants. Float bilinear weights are TFLM's float ones, the products summed
//! in its order; int8 bilinear is its 10-bit fixed point, the four products summed in 64 bits
//! and rounded half away from zero by a division by 2²⁰.

use super::{Ctx, OpBuilder};
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

/// The input (rank 4, NHWC) and the constant output size `(height, width)`.
fn image_and_size(ctx: &mut Ctx) -> Result<(Lazy, usize, usize), OpError> {
    let x = ctx.input(0)?;
    if x.shape().len() != 4 {
        return Err(OpError::Invalid(format!(
            "input {:?} of shape {:?} is not an NHWC image",
            ctx.info(0)?.name,
            x.shape()
        )));
    }
    let size = ctx.ints(1)?;
    match size.as_slice() {
        [h, w] if *h > 0 && *w > 0 => Ok((x, *h as usize, *w as usize)),
        other => Err(OpError::Invalid(format!(
            "size {:?} is not two positive dims: {other:?}",
            ctx.info(1)?.name
        ))),
    }
}

/// The scale of one axis in float, as TFLM computes it.
fn scale(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// One axis's source positions: the lower and upper source and the float position.
fn float_sources(input: usize, output: usize, align: bool, half: bool) -> Vec<(usize, usize, f32)> {
    let s = scale(input, output, align);
    (0..output)
        .map(|o| {
            let v = if half {
                (o as f32 + 0.5) * s - 0.5
            } else {
                o as f32 * s
            };
            let lo = (v.floor() as i64).max(0) as usize;
            let hi = (v.ceil() as i64).min(input as i64 - 1).max(0) as usize;
            (lo, hi, v)
        })
        .collect()
}

/// One axis's source positions in TFLM's 10-bit fixed point: lower and upper source and the
/// position scaled by 1024.
fn fixed_sources(input: usize, output: usize, align: bool, half: bool) -> Vec<(usize, usize, i64)> {
    let (i, o) = (input as i64, output as i64);
    let s = if align && o > 1 {
        ((1 << 10) * (i - 1) + (o - 1) / 2) / (o - 1)
    } else {
        ((1 << 10) * i + o / 2) / o
    };
    (0..o)
        .map(|y| {
            let v = if half {
                y * s + s / 2 - (1 << 9)
            } else {
                y * s
            };
            let lo = (v / (1 << 10)).max(0);
            let hi = ((v + (1 << 10) - 1) / (1 << 10)).min(i - 1);
            (lo as usize, hi as usize, v)
        })
        .collect()
}

/// A per-row or per-column constant of `values` along `axis` of a rank-4 tensor.
fn along(
    g: &mut Graph,
    name: &str,
    dtype: Scalar,
    axis: usize,
    values: &[f64],
) -> Result<Lazy, OpError> {
    let mut shape = vec![1; 4];
    shape[axis] = values.len();
    let t = Tensor::from_f64(dtype, shape, values)
        .map_err(|e| OpError::Invalid(format!("{name}: {e}")))?;
    Ok(g.weight(name, t))
}

fn resize_bilinear(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::ResizeBilinearOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (x, oh, ow) = image_and_size(ctx)?;
    let (ih, iw) = (x.shape()[1], x.shape()[2]);
    let name = ctx.out_info(0)?.name.clone();
    let dtype = ctx.info(0)?.dtype;
    let (align, half) = (o.align_corners, o.half_pixel_centers);
    let g = &mut *ctx.graph;
    let y = match dtype {
        Scalar::F32 => {
            let rows = float_sources(ih, oh, align, half);
            let cols = float_sources(iw, ow, align, half);
            bilinear_float(g, &name, &x, &rows, &cols)?
        }
        Scalar::I8 | Scalar::I16 => {
            let rows = fixed_sources(ih, oh, align, half);
            let cols = fixed_sources(iw, ow, align, half);
            bilinear_fixed(g, &name, &x, &rows, &cols, dtype)?
        }
        other => return Err(OpError::Unsupported(format!("RESIZE_BILINEAR on {other}"))),
    };
    Ok(vec![y])
}

/// The four corners of every output pixel: `[y0x0, y1x0, y0x1, y1x1]`.
fn corners(
    g: &mut Graph,
    x: &Lazy,
    rows: (&[usize], &[usize]),
    cols: (&[usize], &[usize]),
) -> Result<[Lazy; 4], OpError> {
    let r0 = g.take(x, 1, rows.0)?;
    let r1 = g.take(x, 1, rows.1)?;
    Ok([
        g.take(&r0, 2, cols.0)?,
        g.take(&r1, 2, cols.0)?,
        g.take(&r0, 2, cols.1)?,
        g.take(&r1, 2, cols.1)?,
    ])
}

fn bilinear_float(
    g: &mut Graph,
    name: &str,
    x: &Lazy,
    rows: &[(usize, usize, f32)],
    cols: &[(usize, usize, f32)],
) -> Result<Lazy, OpError> {
    let lo = |v: &[(usize, usize, f32)]| v.iter().map(|s| s.0).collect::<Vec<_>>();
    let hi = |v: &[(usize, usize, f32)]| v.iter().map(|s| s.1).collect::<Vec<_>>();
    let c = corners(g, x, (&lo(rows), &hi(rows)), (&lo(cols), &hi(cols)))?;
    // The fractions in float, as TFLM takes them: `v − lower` and `1 − (v − lower)`.
    let frac = |v: &[(usize, usize, f32)]| v.iter().map(|s| s.2 - s.0 as f32).collect::<Vec<_>>();
    let (fy, fx) = (frac(rows), frac(cols));
    let f64s = |v: &[f32], one_minus: bool| {
        v.iter()
            .map(|&f| f64::from(if one_minus { 1.0 - f } else { f }))
            .collect::<Vec<_>>()
    };
    let wy0 = along(g, &format!("{name}_wy0"), Scalar::F32, 1, &f64s(&fy, true))?;
    let wy1 = along(g, &format!("{name}_wy1"), Scalar::F32, 1, &f64s(&fy, false))?;
    let wx0 = along(g, &format!("{name}_wx0"), Scalar::F32, 2, &f64s(&fx, true))?;
    let wx1 = along(g, &format!("{name}_wx1"), Scalar::F32, 2, &f64s(&fx, false))?;
    let weights = [(&wy0, &wx0), (&wy1, &wx0), (&wy0, &wx1), (&wy1, &wx1)];
    let mut sum: Option<Lazy> = None;
    for (v, (wy, wx)) in c.iter().zip(weights) {
        let t = g.binary(BinaryOp::Mul, v, wy)?;
        let t = g.binary(BinaryOp::Mul, &t, wx)?;
        sum = Some(match sum {
            None => t,
            Some(s) => g.binary(BinaryOp::Add, &s, &t)?,
        });
    }
    Ok(sum.expect("four corners"))
}

fn bilinear_fixed(
    g: &mut Graph,
    name: &str,
    x: &Lazy,
    rows: &[(usize, usize, i64)],
    cols: &[(usize, usize, i64)],
    dtype: Scalar,
) -> Result<Lazy, OpError> {
    let lo = |v: &[(usize, usize, i64)]| v.iter().map(|s| s.0).collect::<Vec<_>>();
    let hi = |v: &[(usize, usize, i64)]| v.iter().map(|s| s.1).collect::<Vec<_>>();
    let c = corners(g, x, (&lo(rows), &hi(rows)), (&lo(cols), &hi(cols)))?;
    // The weights in 1/1024: `v − 1024·lower` and `1024 − (v − 1024·lower)`.
    let w = |v: &[(usize, usize, i64)], upper: bool| {
        v.iter()
            .map(|s| {
                let d = s.2 - (1 << 10) * s.0 as i64;
                (if upper { d } else { (1 << 10) - d }) as f64
            })
            .collect::<Vec<_>>()
    };
    let wy0 = along(g, &format!("{name}_wy0"), Scalar::I64, 1, &w(rows, false))?;
    let wy1 = along(g, &format!("{name}_wy1"), Scalar::I64, 1, &w(rows, true))?;
    let wx0 = along(g, &format!("{name}_wx0"), Scalar::I64, 2, &w(cols, false))?;
    let wx1 = along(g, &format!("{name}_wx1"), Scalar::I64, 2, &w(cols, true))?;
    let weights = [(&wy0, &wx0), (&wy1, &wx0), (&wy0, &wx1), (&wy1, &wx1)];
    let mut sum: Option<Lazy> = None;
    for (v, (wy, wx)) in c.iter().zip(weights) {
        let v = g.cast(v, DType::I64);
        let t = g.binary(BinaryOp::Mul, &v, wy)?;
        let t = g.binary(BinaryOp::Mul, &t, wx)?;
        sum = Some(match sum {
            None => t,
            Some(s) => g.binary(BinaryOp::Add, &s, &t)?,
        });
    }
    let sum = sum.expect("four corners");
    // `(sum ± 2^19) / 2^20`, the sign of the rounding the sum's, the division truncating.
    let zero = g.int_const(0, DType::I64, sum.shape());
    let positive = g.lt(&zero, &sum)?;
    let up = g.int_scalar(BinaryOp::Add, &sum, 1 << 19)?;
    let down = g.int_scalar(BinaryOp::Add, &sum, -(1 << 19))?;
    let rounded = g.where_(&positive, &up, &down)?;
    let y = g.int_scalar(BinaryOp::Div, &rounded, 1 << 20)?;
    Ok(g.cast(&y, DType::from(dtype)))
}

/// TFLM's nearest source of each output position along one axis.
fn nearest_sources(input: usize, output: usize, align: bool, half: bool) -> Vec<usize> {
    let s = scale(input, output, align);
    let offset = if half { 0.5f32 } else { 0.0 };
    (0..output)
        .map(|o| {
            let v = (o as f32 + offset) * s;
            let i = if align { v.round() } else { v.floor() } as i64;
            i.min(input as i64 - 1).max(0) as usize
        })
        .collect()
}

fn resize_nearest(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::ResizeNearestNeighborOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (x, oh, ow) = image_and_size(ctx)?;
    let (ih, iw) = (x.shape()[1], x.shape()[2]);
    let (align, half) = (o.align_corners, o.half_pixel_centers);
    let rows = nearest_sources(ih, oh, align, half);
    let cols = nearest_sources(iw, ow, align, half);
    let g = &mut *ctx.graph;
    let r = g.take(&x, 1, &rows)?;
    Ok(vec![g.take(&r, 2, &cols)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_follow_tflms_arithmetic() {
        // 2× up, half-pixel centres: the first and last rows clamp to the edges.
        let f = float_sources(4, 8, false, true);
        assert_eq!((f[0].0, f[0].1), (0, 0));
        assert_eq!((f[7].0, f[7].1), (3, 3));
        assert_eq!((f[1].0, f[1].1, f[1].2), (0, 1, 0.25));
        let q = fixed_sources(4, 8, false, true);
        assert_eq!(q[1], (0, 1, 256));
        // Before the first source the position is negative: TFLM keeps the weights it gives.
        assert_eq!(q[0], (0, 0, -256));
        assert_eq!(nearest_sources(3, 6, false, false), vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(nearest_sources(3, 5, true, false), vec![0, 1, 1, 2, 2]);
    }
}

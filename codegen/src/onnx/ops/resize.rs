//! `Resize` (nearest, linear and cubic, with ONNX's coordinate transformations, antialiasing and
//! regions of interest) and the older `Upsample`: one axis at a time, as weighted sums of
//! gathers of source indices computed at compile time.

use super::ctx::{invalid, materialize, norm_axes, to_usize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::graph::{Graph, Lazy};
use crate::ops::BinaryOp;
use crate::tensor::Tensor;

pub(super) const OPS: &[(&str, OpBuilder)] = &[("Resize", resize), ("Upsample", upsample)];

type Out = Result<Vec<Value>, OpError>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Nearest,
    Linear,
    Cubic,
}

/// How an output coordinate maps to an input one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Coord {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfCropAndResize,
}

/// How `Nearest` rounds an input coordinate; `Simple` is the pre-opset-11 rule.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rounding {
    PreferFloor,
    PreferCeil,
    Floor,
    Ceil,
    Simple,
}

/// The parsed arguments: per axis the output size, scale and region of interest.
struct ResizeSpec {
    mode: Mode,
    coord: Coord,
    rounding: Rounding,
    sizes: Vec<usize>,
    scales: Vec<f32>,
    /// Start and end of the region of interest per axis (`tf_crop_and_resize` only).
    roi: Vec<(f64, f64)>,
    extrapolation: f64,
    cubic_a: f64,
    exclude_outside: bool,
    antialias: bool,
}

impl ResizeSpec {
    fn simple(mode: Mode, sizes: Vec<usize>, scales: Vec<f32>) -> ResizeSpec {
        let roi = vec![(0.0, 1.0); sizes.len()];
        ResizeSpec {
            mode,
            coord: Coord::Asymmetric,
            rounding: Rounding::Simple,
            sizes,
            scales,
            roi,
            extrapolation: 0.0,
            cubic_a: -0.75,
            exclude_outside: false,
            antialias: false,
        }
    }
}

fn parse_mode(s: &str) -> Result<Mode, OpError> {
    match s {
        "nearest" => Ok(Mode::Nearest),
        "linear" | "bilinear" => Ok(Mode::Linear),
        "cubic" => Ok(Mode::Cubic),
        other => Err(OpError::Unsupported(format!("mode {other:?}"))),
    }
}

fn parse_coord(s: &str) -> Result<Coord, OpError> {
    Ok(match s {
        "half_pixel" => Coord::HalfPixel,
        "half_pixel_symmetric" => Coord::HalfPixelSymmetric,
        "pytorch_half_pixel" => Coord::PytorchHalfPixel,
        "align_corners" => Coord::AlignCorners,
        "asymmetric" => Coord::Asymmetric,
        "tf_crop_and_resize" => Coord::TfCropAndResize,
        other => return Err(OpError::Unsupported(format!("coordinate mode {other:?}"))),
    })
}

fn parse_rounding(s: &str) -> Result<Rounding, OpError> {
    Ok(match s {
        "round_prefer_floor" => Rounding::PreferFloor,
        "round_prefer_ceil" => Rounding::PreferCeil,
        "floor" => Rounding::Floor,
        "ceil" => Rounding::Ceil,
        other => return Err(invalid(format!("nearest_mode {other:?}"))),
    })
}

/// Sizes and scales from known `scales` (floats) or `sizes` (ints) for the listed `axes`.
fn sizes_and_scales(
    input: &[usize],
    axes: &[usize],
    scales: Option<Vec<f64>>,
    sizes: Option<Vec<i64>>,
    policy: &str,
) -> Result<(Vec<usize>, Vec<f32>), OpError> {
    let mut out = input.to_vec();
    let mut sc = vec![1f32; input.len()];
    let n = scales.as_ref().map_or(0, Vec::len) + sizes.as_ref().map_or(0, Vec::len);
    if n != axes.len() {
        return Err(invalid(format!(
            "{n} scales or sizes for {} axes",
            axes.len()
        )));
    }
    for (k, &a) in axes.iter().enumerate() {
        if let Some(s) = &scales {
            let s = s[k] as f32;
            if s.is_nan() || s <= 0.0 {
                return Err(invalid(format!("scale {s}")));
            }
            sc[a] = s;
            out[a] = to_usize((input[a] as f32 * s).floor() as i64, "output size")?;
        }
        if let Some(s) = &sizes {
            out[a] = to_usize(s[k], "size")?;
            sc[a] = out[a] as f32 / input[a].max(1) as f32;
        }
    }
    if sizes.is_some() && policy != "stretch" {
        let ratios = axes.iter().map(|&a| out[a] as f64 / input[a].max(1) as f64);
        let scale = match policy {
            "not_larger" => ratios.fold(f64::INFINITY, f64::min),
            "not_smaller" => ratios.fold(0.0, f64::max),
            other => return Err(invalid(format!("keep_aspect_ratio_policy {other:?}"))),
        };
        for &a in axes {
            sc[a] = scale as f32;
            out[a] = to_usize((scale * input[a] as f64 + 0.5) as i64, "output size")?;
        }
    }
    Ok((out, sc))
}

fn parse_resize(ctx: &Ctx, input: &[usize]) -> Result<ResizeSpec, OpError> {
    let a = ctx.attrs();
    let mode = parse_mode(&a.string_or("mode", "nearest".into())?)?;
    if ctx.opset < 11 {
        let scales = ctx.known(1)?.to_f64();
        let axes: Vec<usize> = (0..input.len()).collect();
        let (sizes, scales) = sizes_and_scales(input, &axes, Some(scales), None, "stretch")?;
        return Ok(ResizeSpec::simple(mode, sizes, scales));
    }
    let antialias = a.int_or("antialias", 0)? != 0;
    if antialias && mode == Mode::Nearest {
        return Err(invalid("antialias needs mode linear or cubic"));
    }
    let policy = a.string_or("keep_aspect_ratio_policy", "stretch".into())?;
    let coord = parse_coord(&a.string_or("coordinate_transformation_mode", "half_pixel".into())?)?;
    let rounding = parse_rounding(&a.string_or("nearest_mode", "round_prefer_floor".into())?)?;
    let axes = match a.get("axes") {
        Some(_) => norm_axes(&a.ints("axes")?, input.len())?,
        None => (0..input.len()).collect(),
    };
    let present =
        |i: usize| ctx.has(i) && ctx.shape(i).is_ok_and(|s| s.iter().product::<usize>() > 0);
    let scales = match present(2) {
        true => Some(ctx.known(2)?.to_f64()),
        false => None,
    };
    let sizes = if present(3) { Some(ctx.ints(3)?) } else { None };
    let (sizes, scales) = sizes_and_scales(input, &axes, scales, sizes, &policy)?;
    let mut roi = vec![(0.0, 1.0); input.len()];
    if coord == Coord::TfCropAndResize {
        let r = match present(1) {
            true => ctx.known(1)?.to_f64(),
            false => return Err(invalid("tf_crop_and_resize needs a roi")),
        };
        if r.len() != 2 * axes.len() {
            return Err(invalid(format!(
                "roi has {} values for {} axes",
                r.len(),
                axes.len()
            )));
        }
        for (k, &ax) in axes.iter().enumerate() {
            roi[ax] = (r[k], r[axes.len() + k]);
        }
    }
    Ok(ResizeSpec {
        mode,
        coord,
        rounding,
        sizes,
        scales,
        roi,
        extrapolation: f64::from(a.float_or("extrapolation_value", 0.0)?),
        cubic_a: f64::from(a.float_or("cubic_coeff_a", -0.75)?),
        exclude_outside: a.int_or("exclude_outside", 0)? != 0,
        antialias,
    })
}

/// The input coordinate of output coordinate `o` (ONNX's formulas, in f32 as runtimes do), and
/// whether it lies outside the input (only `tf_crop_and_resize` extrapolates).
fn source(coord: Coord, o: usize, scale: f32, input: usize, output: usize) -> f32 {
    let (o, inf, outf) = (o as f32, input as f32, output as f32);
    // The output width before rounding.
    let width = scale * inf;
    match coord {
        Coord::HalfPixel => (o + 0.5) / scale - 0.5,
        Coord::HalfPixelSymmetric => {
            let adjust = outf / (scale * inf);
            let offset = inf / 2.0 * (1.0 - adjust);
            offset + (o + 0.5) / scale - 0.5
        }
        Coord::PytorchHalfPixel if output > 1 => (o + 0.5) / scale - 0.5,
        Coord::PytorchHalfPixel => 0.0,
        Coord::AlignCorners if width != 1.0 => o * (inf - 1.0) / (width - 1.0),
        Coord::AlignCorners => 0.0,
        Coord::Asymmetric | Coord::TfCropAndResize => o / scale,
    }
}

/// The `tf_crop_and_resize` coordinate of output `o`, and whether it is outside the input.
fn crop_source(o: usize, scale: f32, input: usize, roi: (f64, f64)) -> (f32, bool) {
    let (o, inf) = (o as f64, input as f64);
    let width = f64::from(scale) * inf;
    let span = (roi.1 - roi.0) * (inf - 1.0);
    let x = if width == 1.0 {
        span / 2.0
    } else {
        o * span / (width - 1.0)
    } + roi.0 * (inf - 1.0);
    (x as f32, x < 0.0 || x > inf - 1.0)
}

/// The cubic convolution kernel at distance `d` with coefficient `a`.
fn cubic(d: f64, a: f64) -> f64 {
    let x = d.abs();
    if x <= 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    } else {
        0.0
    }
}

/// The taps of output coordinate `x`: source indices (clamped to the input) and weights.
fn taps(p: &ResizeSpec, x: f32, scale: f32, input: usize) -> Vec<(usize, f64)> {
    let x = f64::from(x);
    let s = if p.antialias {
        f64::from(scale).min(1.0)
    } else {
        1.0
    };
    let n: i64 = match (p.mode, p.antialias) {
        (Mode::Cubic, true) => 2 - 2 * ((-2.0 / s).floor() as i64 + 1),
        (_, true) => 2 - 2 * ((-1.0 / s).floor() as i64 + 1),
        (Mode::Cubic, false) => 4,
        _ => 2,
    };
    // The nearest `n` indices, preferring the smaller ones: `i0` is the last one before `x`.
    let i0 = x.ceil() as i64 - 1;
    let first = i0 + 1 - n / 2;
    let mut out: Vec<(i64, f64)> = (first..first + n)
        .map(|t| {
            let d = (t as f64 - x) * s;
            let w = match p.mode {
                Mode::Cubic => cubic(d, p.cubic_a),
                _ => (1.0 - d.abs()).max(0.0),
            };
            (t, w)
        })
        .collect();
    let last = input as i64 - 1;
    if p.exclude_outside {
        for (t, w) in &mut out {
            if *t < 0 || *t > last {
                *w = 0.0;
            }
        }
    }
    if p.exclude_outside || p.antialias {
        let sum: f64 = out.iter().map(|(_, w)| w).sum();
        if sum != 0.0 {
            for (_, w) in &mut out {
                *w /= sum;
            }
        }
    }
    out.into_iter()
        .map(|(t, w)| (t.clamp(0, last.max(0)) as usize, w))
        .collect()
}

fn nearest(x: f32, rounding: Rounding, scale: f32, input: usize) -> usize {
    let tie = x.fract().abs() == 0.5;
    let r = match rounding {
        Rounding::PreferFloor if tie => x.floor(),
        Rounding::PreferCeil if tie => x.ceil(),
        Rounding::PreferFloor | Rounding::PreferCeil => x.round(),
        Rounding::Floor => x.floor(),
        Rounding::Ceil => x.ceil(),
        Rounding::Simple if scale < 1.0 => x.ceil(),
        Rounding::Simple => x.trunc(),
    };
    r.clamp(0.0, input.saturating_sub(1) as f32) as usize
}

/// A known per-position weight along `axis` of a rank-`rank` tensor.
fn axis_weights(g: &mut Graph, x: &Lazy, axis: usize, w: &[f64]) -> Result<Lazy, OpError> {
    let mut dims = vec![1; x.shape().len()];
    dims[axis] = w.len();
    let t = Tensor::from_f64(x.dtype.scalar, dims, w)?;
    materialize(g, "resize_weights", &t)
}

/// Resizes one axis.
fn resize_axis(g: &mut Graph, x: &Lazy, axis: usize, p: &ResizeSpec) -> Result<Lazy, OpError> {
    let (input, output, scale) = (x.shape()[axis], p.sizes[axis], p.scales[axis]);
    let coords: Vec<(f32, bool)> = (0..output)
        .map(|o| match p.coord {
            Coord::TfCropAndResize => crop_source(o, scale, input, p.roi[axis]),
            c => (source(c, o, scale, input, output), false),
        })
        .collect();
    let y = if p.mode == Mode::Nearest {
        let idx: Vec<usize> = coords
            .iter()
            .map(|&(c, _)| nearest(c, p.rounding, scale, input))
            .collect();
        g.take(x, axis, &idx)?
    } else {
        let per_out: Vec<Vec<(usize, f64)>> = coords
            .iter()
            .map(|&(c, _)| taps(p, c, scale, input))
            .collect();
        let n = per_out.first().map_or(0, Vec::len);
        let mut acc: Option<Lazy> = None;
        for k in 0..n {
            let idx: Vec<usize> = per_out.iter().map(|t| t[k].0).collect();
            let w: Vec<f64> = per_out.iter().map(|t| t[k].1).collect();
            if w.iter().all(|&v| v == 0.0) {
                continue;
            }
            let t = g.take(x, axis, &idx)?;
            let t = if w.iter().all(|&v| v == 1.0) {
                t
            } else {
                let wt = axis_weights(g, x, axis, &w)?;
                g.binary(BinaryOp::Mul, &t, &wt)?
            };
            acc = Some(match acc {
                Some(a) => g.binary(BinaryOp::Add, &a, &t)?,
                None => t,
            });
        }
        match acc {
            Some(a) => a,
            None => {
                let mut shape = x.shape().to_vec();
                shape[axis] = output;
                g.constant(0.0, x.dtype, &shape)
            }
        }
    };
    if coords.iter().any(|&(_, out)| out) {
        let keep: Vec<f64> = coords
            .iter()
            .map(|&(_, o)| if o { 0.0 } else { 1.0 })
            .collect();
        let keep = axis_weights(g, &y, axis, &keep)?;
        let keep = g.to_bool(&keep)?;
        let fill = g.scalar_like(&y, p.extrapolation);
        return Ok(g.where_(&keep, &y, &fill)?);
    }
    Ok(y)
}

fn apply(ctx: &mut Ctx, spec: &ResizeSpec) -> Out {
    let mut y = ctx.tensor(0)?;
    super::ctx::checked_numel(&spec.sizes)?;
    for axis in 0..spec.sizes.len() {
        if spec.sizes[axis] != y.shape()[axis]
            || spec.scales[axis] != 1.0
            || spec.roi[axis] != (0.0, 1.0)
        {
            if y.shape()[axis] == 0 {
                return Err(invalid("resizing an empty axis"));
            }
            y = resize_axis(ctx.graph, &y, axis, spec)?;
        }
    }
    Ok(vec![Value::Tensor(y)])
}

fn resize(ctx: &mut Ctx) -> Out {
    let spec = parse_resize(ctx, &ctx.shape(0)?)?;
    apply(ctx, &spec)
}

/// `Upsample` (opsets 7 to 9): scales from the attribute or input 1, asymmetric coordinates.
fn upsample(ctx: &mut Ctx) -> Out {
    let input = ctx.shape(0)?;
    let mode = parse_mode(&ctx.attrs().string_or("mode", "nearest".into())?)?;
    let scales: Vec<f64> = match ctx.attrs().get("scales") {
        Some(_) => ctx
            .attrs()
            .floats("scales")?
            .into_iter()
            .map(f64::from)
            .collect(),
        None => ctx.known(1)?.to_f64(),
    };
    let axes: Vec<usize> = (0..input.len()).collect();
    let (sizes, scales) = sizes_and_scales(&input, &axes, Some(scales), None, "stretch")?;
    apply(ctx, &ResizeSpec::simple(mode, sizes, scales))
}

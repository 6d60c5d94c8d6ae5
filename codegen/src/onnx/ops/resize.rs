//! `Resize` (nearest and linear, with ONNX's coordinate transformations) and the older
//! `Upsample`: one axis at a time, as gathers of source indices computed at compile time.

use super::ctx::{invalid, materialize, norm_axes, to_usize, Ctx, OpError, Value};
use super::gather::take;
use super::Builder;
use crate::graph::{Graph, Lazy};
use crate::onnx::{ElemType, TensorData};
use crate::ops::BinaryOp;
use crate::uop::interp::HostBuffer;

pub(super) const OPS: &[(&str, Builder)] = &[("Resize", resize), ("Upsample", upsample)];

type Out = Result<Vec<Value>, OpError>;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Nearest,
    Linear,
}

/// How an output coordinate maps to an input one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Coord {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
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

/// The parsed arguments: per axis the output size and scale.
struct Plan {
    mode: Mode,
    coord: Coord,
    rounding: Rounding,
    sizes: Vec<usize>,
    scales: Vec<f32>,
}

fn parse_mode(s: &str) -> Result<Mode, OpError> {
    match s {
        "nearest" => Ok(Mode::Nearest),
        "linear" | "bilinear" => Ok(Mode::Linear),
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
    Ok((out, sc))
}

fn plan_resize(ctx: &Ctx, input: &[usize]) -> Result<Plan, OpError> {
    let a = ctx.attrs();
    let mode = parse_mode(&a.string_or("mode", "nearest".into())?)?;
    if ctx.opset < 11 {
        let scales = ctx.known(1)?.to_f64().ok_or_else(|| invalid("scales"))?;
        let axes: Vec<usize> = (0..input.len()).collect();
        let (sizes, scales) = sizes_and_scales(input, &axes, Some(scales), None)?;
        let (coord, rounding) = (Coord::Asymmetric, Rounding::Simple);
        return Ok(Plan {
            mode,
            coord,
            rounding,
            sizes,
            scales,
        });
    }
    if a.int_or("antialias", 0)? != 0 {
        return Err(OpError::Unsupported("antialias".into()));
    }
    if a.string_or("keep_aspect_ratio_policy", "stretch".into())? != "stretch" {
        return Err(OpError::Unsupported("keep_aspect_ratio_policy".into()));
    }
    let coord = parse_coord(&a.string_or("coordinate_transformation_mode", "half_pixel".into())?)?;
    let rounding = parse_rounding(&a.string_or("nearest_mode", "round_prefer_floor".into())?)?;
    let axes = match a.get("axes") {
        Some(_) => norm_axes(&a.ints("axes")?, input.len())?,
        None => (0..input.len()).collect(),
    };
    let present =
        |i: usize| ctx.has(i) && ctx.shape(i).is_ok_and(|s| s.iter().product::<usize>() > 0);
    let scales = match present(2) {
        true => Some(ctx.known(2)?.to_f64().ok_or_else(|| invalid("scales"))?),
        false => None,
    };
    let sizes = if present(3) { Some(ctx.ints(3)?) } else { None };
    let (sizes, scales) = sizes_and_scales(input, &axes, scales, sizes)?;
    Ok(Plan {
        mode,
        coord,
        rounding,
        sizes,
        scales,
    })
}

/// The input coordinate of output coordinate `o` (ONNX's formulas, in f32 as runtimes do).
fn source(coord: Coord, o: usize, scale: f32, input: usize, output: usize) -> f32 {
    let (o, inf, outf) = (o as f32, input as f32, output as f32);
    match coord {
        Coord::HalfPixel => (o + 0.5) / scale - 0.5,
        Coord::HalfPixelSymmetric => {
            let adjust = outf / (scale * inf);
            let offset = inf / 2.0 * (1.0 - adjust);
            offset + (o + 0.5) / scale - 0.5
        }
        Coord::PytorchHalfPixel if output > 1 => (o + 0.5) / scale - 0.5,
        Coord::PytorchHalfPixel => 0.0,
        Coord::AlignCorners if output > 1 => o * (inf - 1.0) / (outf - 1.0),
        Coord::AlignCorners => 0.0,
        Coord::Asymmetric => o / scale,
    }
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
    let t = TensorData {
        elem: ElemType::from(x.dtype.scalar),
        dims,
        bytes: HostBuffer::from_f64(x.dtype.scalar, w).to_bytes(),
    };
    materialize(g, "resize_weights", &t)
}

/// Resizes one axis.
fn resize_axis(g: &mut Graph, x: &Lazy, axis: usize, p: &Plan) -> Result<Lazy, OpError> {
    let (input, output, scale) = (x.shape()[axis], p.sizes[axis], p.scales[axis]);
    let coords = (0..output).map(|o| source(p.coord, o, scale, input, output));
    if p.mode == Mode::Nearest {
        let idx: Vec<usize> = coords
            .map(|c| nearest(c, p.rounding, scale, input))
            .collect();
        return take(g, x, axis, &idx);
    }
    let last = input.saturating_sub(1);
    let (mut lo, mut hi, mut w) = (Vec::new(), Vec::new(), Vec::new());
    for c in coords {
        let c = c.clamp(0.0, last as f32);
        let i = (c.floor() as usize).min(last);
        lo.push(i);
        hi.push((i + 1).min(last));
        w.push(f64::from(c - i as f32));
    }
    let a = take(g, x, axis, &lo)?;
    if w.iter().all(|&v| v == 0.0) {
        return Ok(a);
    }
    let b = take(g, x, axis, &hi)?;
    let wb = axis_weights(g, x, axis, &w)?;
    let wa: Vec<f64> = w.iter().map(|v| 1.0 - v).collect();
    let wa = axis_weights(g, x, axis, &wa)?;
    let a = g.binary(BinaryOp::Mul, &a, &wa)?;
    let b = g.binary(BinaryOp::Mul, &b, &wb)?;
    Ok(g.binary(BinaryOp::Add, &a, &b)?)
}

fn apply(ctx: &mut Ctx, plan: &Plan) -> Out {
    let mut y = ctx.tensor(0)?;
    super::ctx::checked_numel(&plan.sizes)?;
    for axis in 0..plan.sizes.len() {
        if plan.sizes[axis] != y.shape()[axis] || plan.scales[axis] != 1.0 {
            if y.shape()[axis] == 0 {
                return Err(invalid("resizing an empty axis"));
            }
            y = resize_axis(ctx.graph, &y, axis, plan)?;
        }
    }
    Ok(vec![Value::Tensor(y)])
}

fn resize(ctx: &mut Ctx) -> Out {
    let plan = plan_resize(ctx, &ctx.shape(0)?)?;
    apply(ctx, &plan)
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
        None => ctx.known(1)?.to_f64().ok_or_else(|| invalid("scales"))?,
    };
    let axes: Vec<usize> = (0..input.len()).collect();
    let (sizes, scales) = sizes_and_scales(&input, &axes, Some(scales), None)?;
    let (coord, rounding) = (Coord::Asymmetric, Rounding::Simple);
    apply(
        ctx,
        &Plan {
            mode,
            coord,
            rounding,
            sizes,
            scales,
        },
    )
}

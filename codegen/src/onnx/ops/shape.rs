//! Shape ops: reshapes, transposes, broadcasting, and the ops whose result is a shape or
//! another tensor known at compile time (`Shape`, `Size`, `ConstantOfShape`, `Range`).

use super::ctx::{
    checked_numel, dtype_of, invalid, norm_axes, norm_axis, output_name, to_usize, Ctx, OpError,
    Value,
};
use super::OpBuilder;
use crate::dtype::Scalar;
use crate::graph::tensor::{broadcast_shape, broadcast_to};
use crate::graph::Lazy;
use crate::onnx::ElemType;
use crate::tensor::Tensor;

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Reshape", reshape),
    ("Flatten", flatten),
    ("Transpose", transpose),
    ("Squeeze", squeeze),
    ("Unsqueeze", unsqueeze),
    ("Expand", expand),
    ("Tile", tile),
    ("DepthToSpace", depth_to_space),
    ("SpaceToDepth", space_to_depth),
    ("Shape", shape),
    ("Size", size),
    ("ConstantOfShape", constant_of_shape),
    ("Range", range),
    ("EyeLike", eye_like),
    ("CenterCropPad", center_crop_pad),
];

/// Above this many elements a `ConstantOfShape` is a broadcast constant, not a known tensor.
const KNOWN_LIMIT: usize = 4096;

type Out = Result<Vec<Value>, OpError>;

fn one(l: Lazy) -> Out {
    Ok(vec![Value::Tensor(l)])
}

/// The target shape of `Reshape`: `0` copies the input's dim (unless `allowzero`), `-1` is
/// inferred.
pub(super) fn reshape_dims(
    input: &[usize],
    spec: &[i64],
    allowzero: bool,
) -> Result<Vec<usize>, OpError> {
    let mut dims = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &s) in spec.iter().enumerate() {
        dims.push(match s {
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            0 if !allowzero => *input
                .get(i)
                .ok_or_else(|| invalid(format!("0 at axis {i} has no input dim to copy")))?,
            s => to_usize(s, "reshape dim")?,
        });
    }
    let total: usize = input.iter().product();
    checked_numel(&dims)?;
    if let Some(i) = infer {
        let rest: usize = dims.iter().product();
        if rest == 0 || !total.is_multiple_of(rest) {
            return Err(invalid(format!("cannot reshape {input:?} to {spec:?}")));
        }
        dims[i] = total / rest;
    }
    Ok(dims)
}

fn reshape(ctx: &mut Ctx) -> Out {
    let spec = if ctx.opset < 5 {
        ctx.attrs().ints("shape")?
    } else {
        ctx.ints(1)?
    };
    let allowzero = ctx.attrs().int_or("allowzero", 0)? != 0;
    let dims = reshape_dims(&ctx.shape(0)?, &spec, allowzero)?;
    one(ctx.tensor(0)?.reshape(&dims)?)
}

fn flatten(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let axis = norm_axis(ctx.attrs().int_or("axis", 1)?, x.shape().len(), true)?;
    let outer: usize = x.shape()[..axis].iter().product();
    let inner: usize = x.shape()[axis..].iter().product();
    one(x.reshape(&[outer, inner])?)
}

fn transpose(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let rank = x.shape().len();
    let perm = match ctx.attrs().get("perm") {
        Some(_) => norm_axes(&ctx.attrs().ints("perm")?, rank)?,
        None => (0..rank).rev().collect(),
    };
    one(x.permute(&perm)?)
}

/// The `axes` of Squeeze/Unsqueeze/reductions: an attribute before opset `input_from`, the
/// optional input 1 from then on.
pub(super) fn axes_arg(ctx: &Ctx, input_from: i64) -> Result<Option<Vec<i64>>, OpError> {
    if ctx.opset < input_from {
        match ctx.attrs().get("axes") {
            Some(_) => Ok(Some(ctx.attrs().ints("axes")?)),
            None => Ok(None),
        }
    } else {
        ctx.opt_ints(1)
    }
}

fn squeeze(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let shape = x.shape().to_vec();
    let axes = match axes_arg(ctx, 13)? {
        Some(a) => norm_axes(&a, shape.len())?,
        None => (0..shape.len()).filter(|&a| shape[a] == 1).collect(),
    };
    if let Some(&a) = axes.iter().find(|&&a| shape[a] != 1) {
        return Err(invalid(format!("axis {a} of {shape:?} is not 1")));
    }
    let dims: Vec<usize> = (0..shape.len())
        .filter(|a| !axes.contains(a))
        .map(|a| shape[a])
        .collect();
    one(x.reshape(&dims)?)
}

fn unsqueeze(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let axes = axes_arg(ctx, 13)?.ok_or_else(|| invalid("no axes"))?;
    let rank = x.shape().len() + axes.len();
    let axes = norm_axes(&axes, rank)?;
    let mut rest = x.shape().iter();
    let dims: Vec<usize> = (0..rank)
        .map(|a| match axes.contains(&a) {
            true => 1,
            false => rest.next().copied().unwrap_or(1),
        })
        .collect();
    one(x.reshape(&dims)?)
}

fn expand(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let spec: Vec<usize> = ctx
        .ints(1)?
        .into_iter()
        .map(|d| to_usize(d, "expand dim"))
        .collect::<Result<_, _>>()?;
    let shape = broadcast_shape("expand", x.shape(), &spec)?;
    checked_numel(&shape)?;
    one(broadcast_to(&x, &shape)?)
}

fn tile(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let reps = ctx.ints(1)?;
    let shape = x.shape().to_vec();
    if reps.len() != shape.len() {
        return Err(invalid(format!(
            "{} repeats for rank {}",
            reps.len(),
            shape.len()
        )));
    }
    let mut y = x;
    for (a, &r) in reps.iter().enumerate() {
        let r = to_usize(r, "repeat")?;
        let d = shape[a];
        let mut split = y.shape().to_vec();
        split.splice(a..=a, [1, d]);
        let mut wide = split.clone();
        wide[a] = r;
        let mut merged = y.shape().to_vec();
        merged[a] = r * d;
        checked_numel(&merged)?;
        y = y.reshape(&split)?.expand(&wide)?.reshape(&merged)?;
    }
    one(y)
}

fn block_size(ctx: &Ctx) -> Result<usize, OpError> {
    to_usize(ctx.attrs().int("blocksize")?, "blocksize")
}

fn nchw(x: &Lazy) -> Result<[usize; 4], OpError> {
    <[usize; 4]>::try_from(x.shape()).map_err(|_| invalid("expects a rank-4 input"))
}

fn depth_to_space(ctx: &mut Ctx) -> Out {
    let b = block_size(ctx)?;
    let crd = ctx.attrs().string_or("mode", "DCR".into())? == "CRD";
    let x = ctx.tensor(0)?;
    let [n, c, h, w] = nchw(&x)?;
    if b == 0 || c % (b * b) != 0 {
        return Err(invalid(format!(
            "{c} channels do not split into blocks of {b}"
        )));
    }
    let c2 = c / (b * b);
    let (split, perm) = if crd {
        ([n, c2, b, b, h, w], [0, 1, 4, 2, 5, 3])
    } else {
        ([n, b, b, c2, h, w], [0, 3, 4, 1, 5, 2])
    };
    let y = x.reshape(&split)?.permute(&perm)?;
    one(y.reshape(&[n, c2, h * b, w * b])?)
}

fn space_to_depth(ctx: &mut Ctx) -> Out {
    let b = block_size(ctx)?;
    let x = ctx.tensor(0)?;
    let [n, c, h, w] = nchw(&x)?;
    if b == 0 || h % b != 0 || w % b != 0 {
        return Err(invalid(format!(
            "{h}x{w} does not split into blocks of {b}"
        )));
    }
    let y = x
        .reshape(&[n, c, h / b, b, w / b, b])?
        .permute(&[0, 3, 5, 1, 2, 4])?;
    one(y.reshape(&[n, c * b * b, h / b, w / b])?)
}

fn shape(ctx: &mut Ctx) -> Out {
    let dims = ctx.shape(0)?;
    let rank = dims.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(ctx.attrs().int_or("start", 0)?);
    let end = clamp(ctx.attrs().int_or("end", rank)?).max(start);
    let v: Vec<i64> = dims[start..end].iter().map(|&d| d as i64).collect();
    Ok(vec![Value::ints(vec![v.len()], &v)?])
}

fn size(ctx: &mut Ctx) -> Out {
    let n: usize = ctx.shape(0)?.iter().product();
    Ok(vec![Value::ints(vec![], &[n as i64])?])
}

fn constant_of_shape(ctx: &mut Ctx) -> Out {
    let dims: Vec<usize> = ctx
        .ints(0)?
        .into_iter()
        .map(|d| to_usize(d, "dim"))
        .collect::<Result<_, _>>()?;
    let fill = match ctx.attrs().get("value") {
        Some(_) => ctx.attrs().tensor("value")?.clone(),
        None => Tensor::from_f32(vec![1], &[0.0])?,
    };
    let v = match (fill.numel(), fill.values().next()) {
        (1, Some(v)) => v,
        _ => return Err(invalid("value must hold one element")),
    };
    let n = checked_numel(&dims)?;
    if n <= KNOWN_LIMIT {
        let bytes = fill.bytes().repeat(n);
        return Ok(vec![Value::known(Tensor::new(fill.dtype(), dims, bytes)?)]);
    }
    one(ctx.graph.const_exact(v, fill.dtype().into(), &dims))
}

fn range(ctx: &mut Ctx) -> Out {
    let dtype = ctx.known(0)?.dtype();
    let (start, limit, delta) = (ctx.scalar(0)?, ctx.scalar(1)?, ctx.scalar(2)?);
    if delta == 0.0 {
        return Err(invalid("delta is 0"));
    }
    let n = ((limit - start) / delta).ceil().max(0.0) as usize;
    if n > 1 << 20 {
        return Err(invalid(format!("{n} elements is too many")));
    }
    let dims = vec![n];
    let out = if dtype == Scalar::F32 {
        let (mut acc, step) = (start as f32, delta as f32);
        let v: Vec<f32> = (0..n)
            .map(|_| {
                let v = acc;
                acc += step;
                v
            })
            .collect();
        Tensor::from_f32(dims, &v)?
    } else {
        let v: Vec<f64> = (0..n).map(|i| start + i as f64 * delta).collect();
        Tensor::from_f64(dtype, dims, &v)?
    };
    Ok(vec![Value::known(out)])
}

/// Ones on the diagonal `k` of a matrix shaped like the input, zeros elsewhere.
fn eye_like(ctx: &mut Ctx) -> Out {
    let shape = ctx.shape(0)?;
    let k = ctx.attrs().int_or("k", 0)?;
    let dtype = match ctx.attrs().get("dtype") {
        Some(_) => {
            let code = ctx.attrs().int("dtype")?;
            let elem = ElemType::from_code(i32::try_from(code).unwrap_or(-1));
            dtype_of(elem, output_name(ctx.node, 0))?
        }
        None => ctx.dtype(0)?,
    };
    let (rows, cols) = match shape.as_slice() {
        [r, c] => (*r, *c),
        other => return Err(invalid(format!("input {other:?} is not 2-D"))),
    };
    let mut values = vec![0.0; rows * cols];
    for (r, row) in values.chunks_mut(cols.max(1)).enumerate().take(rows) {
        let c = (r as i64).saturating_add(k);
        if (0..cols as i64).contains(&c) {
            row[c as usize] = 1.0;
        }
    }
    let t = Tensor::from_f64(dtype.scalar, vec![rows, cols], &values)?;
    Ok(vec![Value::known(t)])
}

/// Crops or pads (with zeros) each of `axes` to the given size, centered.
fn center_crop_pad(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let sizes = ctx.ints(1)?;
    let rank = x.shape().len();
    let axes = match ctx.attrs().get("axes") {
        Some(_) => norm_axes(&ctx.attrs().ints("axes")?, rank)?,
        None => (0..rank).collect(),
    };
    if axes.len() != sizes.len() {
        return Err(invalid(format!(
            "{} sizes for {} axes",
            sizes.len(),
            axes.len()
        )));
    }
    let mut crop: Vec<(usize, usize)> = x.shape().iter().map(|&d| (0, d)).collect();
    let mut pad = vec![(0, 0); rank];
    for (&a, &s) in axes.iter().zip(&sizes) {
        let s = to_usize(s, "size")?;
        let dim = x.shape()[a];
        if s < dim {
            let start = (dim - s) / 2;
            crop[a] = (start, start + s);
        } else if s > dim {
            let before = (s - dim) / 2;
            pad[a] = (before, s - dim - before);
        }
    }
    let y = x.shrink(&crop)?.pad(&pad)?;
    one(y)
}

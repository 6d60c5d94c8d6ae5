//! Ops that move data without arithmetic: `RESHAPE`, `SQUEEZE`, `EXPAND_DIMS`, `TRANSPOSE`,
//! `PAD`, `CONCATENATION`, `STRIDED_SLICE`, `SLICE`, `SPLIT`, `SPLIT_V`, `PACK`, `UNPACK`,
//! `SPACE_TO_DEPTH`, `DEPTH_TO_SPACE`. The file gives each output's shape; a quantized tensor
//! keeps its values (TFLM copies them, and requires the same scale and zero point in and out).

use super::{is_quantized, same_quant, Ctx, OpBuilder};
use crate::graph::Lazy;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Reshape, reshape),
    (Op::Squeeze, reshape),
    (Op::ExpandDims, reshape),
    (Op::Transpose, transpose),
    (Op::Pad, pad),
    (Op::Padv2, pad),
    (Op::Concatenation, concatenation),
    (Op::StridedSlice, strided_slice),
    (Op::Slice, slice),
    (Op::Split, split),
    (Op::SplitV, split_v),
    (Op::Pack, pack),
    (Op::Unpack, unpack),
    (Op::SpaceToDepth, space_to_depth),
    (Op::DepthToSpace, depth_to_space),
];

type Out = Result<Vec<Lazy>, OpError>;

fn transpose(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let rank = x.shape().len() as i64;
    let perm = ctx
        .ints(1)?
        .into_iter()
        .map(|p| {
            let a = if p < 0 { p + rank } else { p };
            usize::try_from(a)
                .ok()
                .filter(|&a| (a as i64) < rank)
                .ok_or_else(|| OpError::Invalid(format!("permutation entry {p} for rank {rank}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(vec![x.permute(&perm)?])
}

/// `PAD` (with the output's zero point, or 0 for float) and `PADV2` (with its constant).
fn pad(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    let p = ctx.ints(1)?;
    if p.len() != 2 * rank || p.iter().any(|&v| v < 0) {
        return Err(OpError::Invalid(format!(
            "paddings {p:?} for rank {rank} (TFLite pads only outward)"
        )));
    }
    let arg: Vec<(usize, usize)> = p
        .chunks(2)
        .map(|c| (c[0] as usize, c[1] as usize))
        .collect();
    let value = if ctx.has(2) {
        let c = ctx.constant(2)?;
        c.to_f64().first().copied().unwrap_or(0.0)
    } else if is_quantized(ctx.out_info(0)?) {
        f64::from(ctx.quant(ctx.out_info(0)?)?.zero_point())
    } else {
        0.0
    };
    Ok(vec![ctx.graph.pad_value(&x, &arg, value)?])
}

fn concatenation(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::ConcatenationOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    super::activation(o.fused_activation_function).and_then(|a| match a {
        crate::graph::quant::Activation::None => Ok(()),
        _ => Err(OpError::Unsupported(
            "a fused activation on CONCATENATION".into(),
        )),
    })?;
    let n = ctx.op.inputs.len();
    let mut parts = Vec::with_capacity(n);
    for i in 0..n {
        same_quant(ctx, i)?;
        parts.push(ctx.input(i)?);
    }
    let rank = parts[0].shape().len();
    let axis = crate::graph::tensor::axis("CONCATENATION", i64::from(o.axis), rank)?;
    Ok(vec![ctx.graph.concat(&parts, axis)?])
}

/// Input 0 viewed with output 0's shape.
fn reshape(ctx: &mut Ctx) -> Result<Vec<Lazy>, OpError> {
    let x = ctx.input(0)?;
    let out = ctx.out_info(0)?;
    let (qi, qo) = (&ctx.info(0)?.quant, &out.quant);
    if qi != qo {
        return Err(OpError::Unsupported(format!(
            "a reshape to other quantization parameters ({:?})",
            out.name
        )));
    }
    Ok(vec![x.reshape(&out.shape.clone())?])
}

/// `STRIDED_SLICE`: per axis `begin:end:stride`, where a set bit of `begin_mask` / `end_mask`
/// takes the whole range that way, a set bit of `shrink_axis_mask` takes the one element at
/// `begin` and drops the axis, and `offset` makes `end` relative to `begin`.
fn strided_slice(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let o = ctx.options(|o| match o {
        BuiltinOptions::StridedSliceOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    for (mask, what) in [
        (o.ellipsis_mask, "ellipsis_mask"),
        (o.new_axis_mask, "new_axis_mask"),
    ] {
        if mask != 0 {
            return Err(OpError::Unsupported(format!(
                "STRIDED_SLICE with {what} {mask}"
            )));
        }
    }
    let mut x = ctx.input(0)?;
    let (begin, end, strides) = (ctx.ints(1)?, ctx.ints(2)?, ctx.ints(3)?);
    let rank = x.shape().len();
    if [begin.len(), end.len(), strides.len()] != [rank; 3] {
        return Err(OpError::Invalid(format!(
            "begin {begin:?}, end {end:?} and strides {strides:?} for rank {rank}"
        )));
    }
    let bit = |mask: i32, axis: usize| mask >> axis & 1 == 1;
    let mut keep = Vec::with_capacity(rank);
    for axis in 0..rank {
        let (b, e, step) = if bit(o.shrink_axis_mask, axis) {
            let d = x.shape()[axis] as i64;
            let b = if begin[axis] < 0 {
                begin[axis] + d
            } else {
                begin[axis]
            };
            if !(0..d).contains(&b) {
                return Err(OpError::Invalid(format!(
                    "shrink index {} on axis {axis} of size {d}",
                    begin[axis]
                )));
            }
            (b, b + 1, 1)
        } else {
            let step = strides[axis];
            let whole = |forward: i64, backward: i64| if step > 0 { forward } else { backward };
            let b = match bit(o.begin_mask, axis) {
                true => whole(0, i64::MAX),
                false => begin[axis],
            };
            let e = match (bit(o.end_mask, axis), o.offset) {
                (true, _) => whole(i64::MAX, i64::MIN),
                (false, true) => begin[axis] + end[axis],
                (false, false) => end[axis],
            };
            keep.push(axis);
            (b, e, step)
        };
        x = x.slice_axis(axis, b, e, step)?;
    }
    let shape: Vec<usize> = keep.iter().map(|&a| x.shape()[a]).collect();
    Ok(vec![x.reshape(&shape)?])
}

/// Every output carries input `i`'s quantization (or none).
fn same_quant_out(ctx: &Ctx, i: usize) -> Result<(), OpError> {
    let q = &ctx.info(i)?.quant;
    for k in 0..ctx.op.outputs.len() {
        if !super::quant_eq(&ctx.out_info(k)?.quant, q) {
            return Err(OpError::Unsupported(format!(
                "{} with output {k} quantized unlike its input",
                ctx.op.name()
            )));
        }
    }
    Ok(())
}

/// Axis `axis` of a rank-`rank` tensor (negative: from the end), for `op`.
fn axis_of(op: &'static str, axis: i64, rank: usize) -> Result<usize, OpError> {
    Ok(crate::graph::tensor::axis(op, axis, rank)?)
}

/// `SLICE`: `size[a]` elements from `begin[a]` on each axis (`-1`: to the end).
fn slice(ctx: &mut Ctx) -> Out {
    same_quant(ctx, 0)?;
    let mut x = ctx.input(0)?;
    let (begin, size) = (ctx.ints(1)?, ctx.ints(2)?);
    let rank = x.shape().len();
    if begin.len() != rank || size.len() != rank {
        return Err(OpError::Invalid(format!(
            "begin {begin:?} and size {size:?} for rank {rank}"
        )));
    }
    for axis in 0..rank {
        let d = x.shape()[axis] as i64;
        let end = if size[axis] < 0 {
            d
        } else {
            begin[axis] + size[axis]
        };
        if begin[axis] < 0 || end > d || begin[axis] > end {
            return Err(OpError::Invalid(format!(
                "begin {} and size {} on axis {axis} of size {d}",
                begin[axis], size[axis]
            )));
        }
        x = x.slice_axis(axis, begin[axis], end, 1)?;
    }
    Ok(vec![x])
}

/// The axis of `x` that input `i` of `op` names (one value).
fn split_axis(ctx: &Ctx, i: usize, op: &'static str, x: &Lazy) -> Result<usize, OpError> {
    match ctx.ints(i)?[..] {
        [a] => axis_of(op, a, x.shape().len()),
        ref other => Err(OpError::Invalid(format!("split axis {other:?}"))),
    }
}

/// `x` cut along `axis` into pieces of `sizes`.
fn pieces(x: &Lazy, axis: usize, sizes: &[usize]) -> Out {
    let mut start = 0i64;
    let mut out = Vec::with_capacity(sizes.len());
    for &n in sizes {
        out.push(x.slice_axis(axis, start, start + n as i64, 1)?);
        start += n as i64;
    }
    Ok(out)
}

/// `SPLIT`: the axis (input 0) cut into `num_splits` equal pieces of input 1.
fn split(ctx: &mut Ctx) -> Out {
    same_quant_out(ctx, 1)?;
    let o = ctx.options(|o| match o {
        BuiltinOptions::SplitOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let x = ctx.input(1)?;
    let axis = split_axis(ctx, 0, "SPLIT", &x)?;
    let (d, n) = (x.shape()[axis], o.num_splits.max(0) as usize);
    if n == 0 || d % n != 0 {
        return Err(OpError::Invalid(format!(
            "{n} equal pieces of axis {axis} of size {d}"
        )));
    }
    pieces(&x, axis, &vec![d / n; n])
}

/// `SPLIT_V`: input 0 cut along the axis (input 2) into the sizes of input 1 (one may be `-1`,
/// the rest).
fn split_v(ctx: &mut Ctx) -> Out {
    same_quant_out(ctx, 0)?;
    let x = ctx.input(0)?;
    let axis = split_axis(ctx, 2, "SPLIT_V", &x)?;
    let d = x.shape()[axis] as i64;
    let mut sizes = ctx.ints(1)?;
    let known: i64 = sizes.iter().filter(|&&v| v >= 0).sum();
    if let Some(rest) = sizes.iter_mut().find(|v| **v < 0) {
        *rest = d - known;
    }
    if sizes.iter().any(|&v| v < 0) || sizes.iter().sum::<i64>() != d {
        return Err(OpError::Invalid(format!(
            "sizes {sizes:?} for axis {axis} of size {d}"
        )));
    }
    let sizes: Vec<usize> = sizes.iter().map(|&v| v as usize).collect();
    pieces(&x, axis, &sizes)
}

/// `PACK`: the inputs stacked along a new `axis`.
fn pack(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::PackOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let n = ctx.op.inputs.len();
    let mut parts = Vec::with_capacity(n);
    for i in 0..n {
        same_quant(ctx, i)?;
        parts.push(ctx.input(i)?);
    }
    let rank = parts[0].shape().len();
    let axis = axis_of("PACK", i64::from(o.axis), rank + 1)?;
    let parts = parts
        .iter()
        .map(|p| {
            let mut shape = p.shape().to_vec();
            shape.insert(axis, 1);
            p.reshape(&shape)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(vec![ctx.graph.concat(&parts, axis)?])
}

/// `UNPACK`: one output per index of `axis`, without it.
fn unpack(ctx: &mut Ctx) -> Out {
    same_quant_out(ctx, 0)?;
    let o = ctx.options(|o| match o {
        BuiltinOptions::UnpackOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let x = ctx.input(0)?;
    let axis = axis_of("UNPACK", i64::from(o.axis), x.shape().len())?;
    let mut shape = x.shape().to_vec();
    let d = shape.remove(axis);
    pieces(&x, axis, &vec![1; d])?
        .into_iter()
        .map(|p| Ok(p.reshape(&shape)?))
        .collect()
}

/// The block size of `SPACE_TO_DEPTH` / `DEPTH_TO_SPACE` and the NHWC input.
fn blocks(ctx: &mut Ctx, block: i32) -> Result<(Lazy, usize, [usize; 4]), OpError> {
    same_quant(ctx, 0)?;
    let x = ctx.input(0)?;
    let b = usize::try_from(block)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| OpError::Invalid(format!("block size {block}")))?;
    let [n, h, w, c] = x.shape()[..] else {
        return Err(OpError::Invalid(format!(
            "input of shape {:?} is not 4-D",
            x.shape()
        )));
    };
    Ok((x, b, [n, h, w, c]))
}

/// `SPACE_TO_DEPTH`: each `b × b` block of pixels becomes one pixel of `b · b · c` channels,
/// row by row.
fn space_to_depth(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::SpaceToDepthOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (x, b, [n, h, w, c]) = blocks(ctx, o.block_size)?;
    if h % b != 0 || w % b != 0 {
        return Err(OpError::Invalid(format!("{h}x{w} pixels in blocks of {b}")));
    }
    let y = x
        .reshape(&[n, h / b, b, w / b, b, c])?
        .permute(&[0, 1, 3, 2, 4, 5])?
        .reshape(&[n, h / b, w / b, b * b * c])?;
    Ok(vec![y])
}

/// `DEPTH_TO_SPACE`: the inverse of `SPACE_TO_DEPTH`.
fn depth_to_space(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::DepthToSpaceOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let (x, b, [n, h, w, c]) = blocks(ctx, o.block_size)?;
    if c % (b * b) != 0 {
        return Err(OpError::Invalid(format!(
            "{c} channels in blocks of {b}x{b}"
        )));
    }
    let y = x
        .reshape(&[n, h, w, b, b, c / (b * b)])?
        .permute(&[0, 1, 3, 2, 4, 5])?
        .reshape(&[n, h * b, w * b, c / (b * b)])?;
    Ok(vec![y])
}

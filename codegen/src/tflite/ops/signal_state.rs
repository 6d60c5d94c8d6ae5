//! TFLM's signal ops that keep samples between invocations, each a ring buffer in TFLM
//! (`signal/micro/kernels/{delay,framer,stacker,overlap_add}.cc`) and a state of the graph here:
//! the newest samples the next invocation needs, right-aligned, and for the ops whose output
//! is not ready at every invocation a counter of the samples (or frames) held. Each state
//! starts, and returns on a reset, where TFLM's `Prepare` and `Reset` leave it.
//!
//! - `SignalDelay`: each row delayed by `delay_length` samples (zeros first).
//! - `SignalFramer`: frames of `frame_size` samples every `frame_step`, `frame_step` new samples
//!   at a time; with `prefill` the first frame is padded with zeros, without it the output is
//!   valid once the buffer has filled, and then lags as TFLM's does (it outputs the oldest
//!   `frame_size` of the samples held).
//! - `SignalStacker`: the last `left + right + 1` frames of channels, the first frame repeated
//!   `left` times before it; valid once that many frames are held, then every `stacker_step`
//!   invocations.
//! - `SignalOverlapAdd`: frames added into a buffer (int16 saturating, or float), `frame_step`
//!   samples out per frame.
//!
//! Where TFLM leaves an output unwritten (a frame that is not valid), Kiln writes what the
//! buffer holds; the validity output says which.

use super::signal::{expect_type, required_int};
use super::{Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ConstValue};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;

pub(super) const CUSTOM: &[(&str, OpBuilder)] = &[
    ("SignalDelay", delay),
    ("SignalFramer", framer),
    ("SignalStacker", stacker),
    ("SignalOverlapAdd", overlap_add),
];

type Out = Result<Vec<Lazy>, OpError>;
type R = Result<Lazy, OpError>;

/// A non-negative option.
fn count(ctx: &Ctx, key: &str) -> Result<usize, OpError> {
    let v = required_int(ctx, key)?;
    usize::try_from(v)
        .map_err(|_| OpError::Invalid(format!("custom option {key:?} is {v}, below 0")))
}

/// A positive option.
fn positive(ctx: &Ctx, key: &str) -> Result<usize, OpError> {
    match count(ctx, key)? {
        0 => Err(OpError::Invalid(format!("custom option {key:?} is 0"))),
        v => Ok(v),
    }
}

/// `x`'s elements `start..end` of its last axis.
fn slice_last(x: &Lazy, start: usize, end: usize) -> R {
    let last = x.shape().len() - 1;
    Ok(x.slice_axis(last, start as i64, end as i64, 1)?)
}

/// `parts` joined along their last axis.
fn join_last(g: &mut Graph, parts: &[Lazy]) -> R {
    let axis = parts[0].shape().len() - 1;
    Ok(g.concat(parts, axis)?)
}

/// `true` of `shape`.
fn always(g: &mut Graph, shape: &[usize]) -> Lazy {
    g.const_exact(ConstValue::Int(1), DType::BOOL, shape)
}

/// A new state of `dtype` and `shape`, starting from `init` (zeros when `None`).
fn state(
    g: &mut Graph,
    name: &str,
    dtype: DType,
    shape: &[usize],
    init: Option<i64>,
) -> Result<(Lazy, usize), OpError> {
    let init = init.map(|v| {
        let n = shape.iter().product();
        Tensor::from_i64(dtype.scalar, shape.to_vec(), &vec![v; n]).expect("one value per element")
    });
    Ok(g.state(name, dtype, shape, init)?)
}

/// An `i32` counter `held` (shape `[1]`) moved on by `add`; where it then reaches `ready` the
/// output is valid and `taken` is subtracted. Returns (valid, the counter after).
fn advance(
    g: &mut Graph,
    held: &Lazy,
    add: i64,
    ready: i64,
    taken: i64,
) -> Result<(Lazy, Lazy), OpError> {
    let held = g.int_scalar(BinaryOp::Add, held, add)?;
    let limit = g.int_const(ready, DType::I32, &[1]);
    let short = g.binary(BinaryOp::CmpLt, &held, &limit)?;
    let after = g.int_scalar(BinaryOp::Sub, &held, taken)?;
    let held = g.where_(&short, &held, &after)?;
    Ok((g.not(&short)?, held))
}

fn delay(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::I16)?;
    let d = count(ctx, "delay_length")?;
    let x = ctx.input(0)?;
    let Some((&frame, outer)) = x.shape().split_last() else {
        return Err(OpError::Invalid("the input is a scalar".into()));
    };
    if d == 0 {
        return Ok(vec![x]);
    }
    let name = ctx.out_info(0)?.name.clone();
    let g = &mut *ctx.graph;
    let (held, n) = state(g, &name, DType::I16, &[outer, &[d]].concat(), None)?;
    let all = join_last(g, &[held, x.clone()])?;
    g.set_next_state(n, &slice_last(&all, frame, frame + d)?)?;
    Ok(vec![slice_last(&all, 0, frame)?])
}

fn framer(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::I16)?;
    let (size, step) = (positive(ctx, "frame_size")?, positive(ctx, "frame_step")?);
    let prefill = ctx.custom_options()?.bool("prefill")?.unwrap_or(false);
    let x = ctx.input(0)?;
    let Some((&samples, outer)) = x.shape().split_last() else {
        return Err(OpError::Invalid("the input is a scalar".into()));
    };
    if samples < step || samples % step != 0 {
        return Err(OpError::Invalid(format!(
            "{samples} samples a row are not a whole number of frame_step {step}"
        )));
    }
    if prefill && size < step {
        return Err(OpError::Invalid(format!(
            "frame_size {size} is below frame_step {step}: there is nothing to prefill"
        )));
    }
    // The samples kept before each write: TFLM's buffer holds them in the steady state.
    let kept = if prefill {
        size - step
    } else {
        size.div_ceil(step) * step - step
    };
    let name = ctx.out_info(0)?.name.clone();
    let g = &mut *ctx.graph;
    let outer = outer.to_vec();
    let mut hist = match kept {
        0 => None,
        _ => Some(state(
            g,
            &name,
            DType::I16,
            &[&outer[..], &[kept]].concat(),
            None,
        )?),
    };
    let mut frames = Vec::new();
    for k in 0..samples / step {
        let chunk = slice_last(&x, k * step, (k + 1) * step)?;
        let all = match &hist {
            Some((h, _)) => join_last(g, &[h.clone(), chunk])?,
            None => chunk,
        };
        frames.push(slice_last(&all, 0, size)?.reshape(&[&outer[..], &[1, size]].concat())?);
        if let Some((h, _)) = &mut hist {
            *h = slice_last(&all, step, step + kept)?;
        }
    }
    if let Some((h, n)) = hist {
        g.set_next_state(n, &h)?;
    }
    let out = g.concat(&frames, outer.len())?;
    let valid = if prefill {
        always(g, &[])
    } else {
        let (held, m) = state(g, &format!("{name}/held"), DType::I32, &[1], None)?;
        let (mut held, mut all_valid) = (held, always(g, &[1]));
        for _ in 0..samples / step {
            let (valid, after) = advance(g, &held, step as i64, size as i64, step as i64)?;
            all_valid = g.binary(BinaryOp::And, &all_valid, &valid)?;
            held = after;
        }
        g.set_next_state(m, &held)?;
        all_valid.reshape(&[])?
    };
    Ok(vec![out, valid])
}

fn stacker(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::I16)?;
    let channels = positive(ctx, "num_channels")?;
    let (left, right) = (
        count(ctx, "stacker_left_context")?,
        count(ctx, "stacker_right_context")?,
    );
    let frames = left + right + 1;
    let step = positive(ctx, "stacker_step")?;
    if step > frames {
        return Err(OpError::Invalid(format!(
            "stacker_step {step} is over the {frames} frames stacked"
        )));
    }
    let x = ctx.input(0)?;
    if x.shape() != [channels] {
        return Err(OpError::Invalid(format!(
            "input {:?} has shape {:?}, custom option \"num_channels\" {channels} channels",
            ctx.info(0)?.name,
            x.shape()
        )));
    }
    let name = ctx.out_info(0)?.name.clone();
    let g = &mut *ctx.graph;
    let row = x.reshape(&[1, channels])?;
    // -1: no frame yet (the first is repeated `left` times), else the frames held.
    let (held, m) = state(g, &format!("{name}/held"), DType::I32, &[1], Some(-1))?;
    let zero = g.int_const(0, DType::I32, &[1]);
    let first = g.binary(BinaryOp::CmpLt, &held, &zero)?;
    let start = g.int_const(left as i64, DType::I32, &[1]);
    let before = g.where_(&first, &start, &held)?;
    let (valid, after) = advance(g, &before, 1, frames as i64, step as i64)?;
    g.set_next_state(m, &after)?;
    let window = if frames == 1 {
        row
    } else {
        let (hist, n) = state(g, &name, DType::I16, &[frames - 1, channels], None)?;
        // As the first frame comes: the zeros before it, then it `left` times.
        let mut parts = vec![hist.shrink(&[(0, frames - 1 - left), (0, channels)])?];
        parts.push(row.expand(&[left, channels])?);
        parts.retain(|p| p.shape()[0] > 0);
        let started = g.concat(&parts, 0)?;
        let hist = g.where_(&first.reshape(&[1, 1])?, &started, &hist)?;
        let window = g.concat(&[hist, row], 0)?;
        g.set_next_state(n, &window.shrink(&[(1, frames), (0, channels)])?)?;
        window
    };
    Ok(vec![
        window.reshape(&[frames * channels])?,
        valid.reshape(&[])?,
    ])
}

fn overlap_add(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.dtype;
    if !matches!(t, Scalar::I16 | Scalar::F32) {
        expect_type(ctx, 0, Scalar::I16)?;
    }
    let step = positive(ctx, "frame_step")?;
    let x = ctx.input(0)?;
    let rank = x.shape().len();
    if rank < 2 {
        return Err(OpError::Invalid(format!(
            "the input {:?} is not frames ([.., frames, frame_size])",
            x.shape()
        )));
    }
    let (outer, n_frames, size) = (
        x.shape()[..rank - 2].to_vec(),
        x.shape()[rank - 2],
        x.shape()[rank - 1],
    );
    if step > size {
        return Err(OpError::Invalid(format!(
            "frame_step {step} is over frame_size {size}"
        )));
    }
    let name = ctx.out_info(0)?.name.clone();
    let g = &mut *ctx.graph;
    let (mut buffer, n) = state(g, &name, x.dtype, &[&outer[..], &[size]].concat(), None)?;
    let mut out = Vec::with_capacity(n_frames);
    for k in 0..n_frames {
        let frame = x.slice_axis(rank - 2, k as i64, k as i64 + 1, 1)?;
        let frame = frame.reshape(&[&outer[..], &[size]].concat())?;
        let sum = if x.dtype == DType::F32 {
            g.binary(BinaryOp::Add, &buffer, &frame)?
        } else {
            let (b, f) = (g.cast(&buffer, DType::I32), g.cast(&frame, DType::I32));
            let s = g.binary(BinaryOp::Add, &b, &f)?;
            let s = g.clamp_int(&s, i16::MIN.into(), i16::MAX.into())?;
            g.cast(&s, DType::I16)
        };
        out.push(slice_last(&sum, 0, step)?);
        let rest = slice_last(&sum, step, size)?;
        let mut pad = vec![(0, 0); outer.len() + 1];
        pad[outer.len()] = (0, step);
        buffer = rest.pad(&pad)?;
    }
    g.set_next_state(n, &buffer)?;
    Ok(vec![join_last(g, &out)?])
}

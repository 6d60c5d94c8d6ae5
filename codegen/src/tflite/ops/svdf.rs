//! `SVDF`: a rank-`r` factored filter over time, as keyword spotters use it.
//!
//! One invocation shifts each filter's memory of `memory_size` values one step into the past,
//! writes the feature projection `weights_feature · x` as its newest value, and sums the memory
//! weighted by `weights_time`; the output sums each unit's `rank` filters and adds the bias.
//! The activation state (input 4, a variable tensor) starts as TFLM resets it (zeros, the zero
//! point for int8) unless an earlier op of the model computed it. The updated state is a value
//! of the graph, recorded as the state tensor's value for any later op that reads it.
//!
//! Quantized (int8 input, int8 feature weights, int16 or int8 time weights and state, int32
//! bias, int8 output), it is TFLM's integer kernel: the feature products summed in `i32`,
//! requantized by `s_in · s_wf / s_state` and clamped to the state's type; the time products
//! summed in `i32` with the bias, requantized by `s_state · s_wt / s_out`. TFLM applies no
//! fused activation on this path.

use super::{activation, expect_shape, float_activation, is_quantized, Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{Multipliers, QuantMultiplier};
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[(Op::Svdf, svdf)];

type Out = Result<Vec<Lazy>, OpError>;

/// The sizes of an SVDF.
#[derive(Clone, Copy)]
struct Dims {
    batch: usize,
    input: usize,
    filters: usize,
    memory: usize,
    rank: usize,
}

impl Dims {
    fn units(&self) -> usize {
        self.filters / self.rank
    }
}

fn dims(ctx: &Ctx, rank: i32) -> Result<Dims, OpError> {
    let shape = |i: usize| -> Result<Vec<usize>, OpError> { Ok(ctx.info(i)?.shape.clone()) };
    let (x, wf, wt, st) = (shape(0)?, shape(1)?, shape(2)?, shape(4)?);
    let bad = |what: &str, s: &[usize]| {
        OpError::Invalid(format!(
            "SVDF {what} of shape {s:?} does not fit input {x:?}"
        ))
    };
    if x.len() != 2 {
        return Err(bad("input", &x));
    }
    if wf.len() != 2 || wf[1] != x[1] {
        return Err(bad("weights_feature", &wf));
    }
    if wt.len() != 2 || wt[0] != wf[0] || wt[1] == 0 {
        return Err(bad("weights_time", &wt));
    }
    let rank = usize::try_from(rank)
        .ok()
        .filter(|&r| r > 0 && wf[0] % r == 0)
        .ok_or_else(|| {
            OpError::Invalid(format!(
                "SVDF rank {rank} does not divide {} filters",
                wf[0]
            ))
        })?;
    let d = Dims {
        batch: x[0],
        input: x[1],
        filters: wf[0],
        memory: wt[1],
        rank,
    };
    if st != [d.batch, d.filters * d.memory] {
        return Err(bad("activation_state", &st));
    }
    if ctx.has(3) && ctx.info(3)?.shape != [d.units()] {
        return Err(bad("bias", &ctx.info(3)?.shape));
    }
    Ok(d)
}

fn svdf(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::SvdfOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let d = dims(ctx, o.rank)?;
    let y = if is_quantized(ctx.info(0)?) {
        integer(ctx, d)?
    } else {
        for i in [0, 1, 2, 4] {
            if ctx.info(i)?.dtype != Scalar::F32 {
                return Err(OpError::Unsupported(format!(
                    "SVDF on {} with input {i} of {}",
                    ctx.info(0)?.dtype,
                    ctx.info(i)?.dtype
                )));
            }
        }
        let act = activation(o.fused_activation_function)?;
        let y = float(ctx, d)?;
        float_activation(ctx.graph, &y, act)?
    };
    expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// The state before this invocation: the value an earlier op gave it, else TFLM's reset.
fn old_state(ctx: &mut Ctx) -> Result<Lazy, OpError> {
    let id = ctx.id(4)?;
    if let Some(v) = ctx.values.get(&id) {
        return Ok(v.clone());
    }
    let t = ctx.info(4)?;
    let zp = match (&t.quant, t.dtype) {
        (Some(q), Scalar::I8) => q.zero_point(),
        _ => 0,
    };
    let (dtype, shape) = (DType::from(t.dtype), t.shape.clone());
    Ok(ctx.graph.int_const(i64::from(zp), dtype, &shape))
}

/// The state shifted one step into the past with `newest` (`[batch, filters]`) as each
/// filter's last value, `[batch, filters, memory]`; recorded as the state tensor's new value.
fn shift_state(ctx: &mut Ctx, d: Dims, newest: &Lazy) -> Result<Lazy, OpError> {
    let old = old_state(ctx)?.reshape(&[d.batch, d.filters, d.memory])?;
    let kept = old.shrink(&[(0, d.batch), (0, d.filters), (1, d.memory)])?;
    let newest = newest.reshape(&[d.batch, d.filters, 1])?;
    let state = ctx.graph.concat(&[kept, newest], 2)?;
    let state = ctx.graph.contiguous(&state);
    let id = ctx.id(4)?;
    let flat = state.reshape(&[d.batch, d.filters * d.memory])?;
    ctx.values.insert(id, flat);
    Ok(state)
}

/// `Σ_k a[b, f, k] · w[f, k]` for `a` of shape `[batch, filters, k]`, summed in `acc`.
fn weighted_sum(g: &mut Graph, a: &Lazy, w: &Lazy, acc: DType) -> Result<Lazy, OpError> {
    let a = g.cast(a, acc);
    let w = g.cast(w, acc);
    let w = w
        .reshape(&[1, w.shape()[0], w.shape()[1]])?
        .expand(a.shape())?;
    let p = g.binary(BinaryOp::Mul, &a, &w)?;
    Ok(g.reduce(ReduceOp::Sum, &p, &[2])?
        .reshape(&a.shape()[..2])?)
}

/// The sum of each unit's `rank` filters plus the bias: `[batch, units]`.
fn unit_sums(ctx: &mut Ctx, d: Dims, filtered: &Lazy) -> Result<Lazy, OpError> {
    let per_rank = filtered.reshape(&[d.batch, d.units(), d.rank])?;
    let sum = ctx.graph.reduce(ReduceOp::Sum, &per_rank, &[2])?;
    let sum = sum.reshape(&[d.batch, d.units()])?;
    if !ctx.has(3) {
        return Ok(sum);
    }
    let b = ctx.input(3)?;
    let b = ctx.graph.cast(&b, sum.dtype);
    let b = b.reshape(&[1, d.units()])?.expand(sum.shape())?;
    Ok(ctx.graph.binary(BinaryOp::Add, &sum, &b)?)
}

fn float(ctx: &mut Ctx, d: Dims) -> Result<Lazy, OpError> {
    let x = ctx.input(0)?;
    let wf = ctx.input(1)?;
    let wt = ctx.input(2)?;
    let x3 = x.reshape(&[d.batch, 1, d.input])?;
    let x3 = x3.expand(&[d.batch, d.filters, d.input])?;
    let newest = weighted_sum(ctx.graph, &x3, &wf, DType::F32)?;
    let state = shift_state(ctx, d, &newest)?;
    let filtered = weighted_sum(ctx.graph, &state, &wt, DType::F32)?;
    if ctx.has(3) && ctx.info(3)?.dtype != Scalar::F32 {
        return Err(OpError::Unsupported(format!(
            "SVDF on float32 with a {} bias",
            ctx.info(3)?.dtype
        )));
    }
    unit_sums(ctx, d, &filtered)
}

/// The scale of input `i` (its first).
fn scale(ctx: &Ctx, i: usize) -> Result<f32, OpError> {
    let q = ctx.quant(ctx.info(i)?)?;
    q.scale
        .first()
        .copied()
        .ok_or_else(|| OpError::Invalid(format!("SVDF input {i} has no scale")))
}

/// Checks the types of TFLM's integer SVDF; returns the state's type.
fn integer_types(ctx: &Ctx) -> Result<Scalar, OpError> {
    let ty = |i: usize| -> Result<Scalar, OpError> { Ok(ctx.info(i)?.dtype) };
    let state = ty(4)?;
    let ok = ty(0)? == Scalar::I8
        && ty(1)? == Scalar::I8
        && matches!(state, Scalar::I8 | Scalar::I16)
        && ty(2)? == state
        && (!ctx.has(3) || ty(3)? == Scalar::I32)
        && ctx.out_info(0)?.dtype == Scalar::I8;
    if !ok {
        return Err(OpError::Unsupported(format!(
            "SVDF on {} with weights_feature {}, weights_time {}, state {}, output {}",
            ty(0)?,
            ty(1)?,
            ty(2)?,
            state,
            ctx.out_info(0)?.dtype
        )));
    }
    Ok(state)
}

fn integer(ctx: &mut Ctx, d: Dims) -> Result<Lazy, OpError> {
    let state_ty = integer_types(ctx)?;
    let (s_in, s_wf, s_wt, s_state) = (
        scale(ctx, 0)?,
        scale(ctx, 1)?,
        scale(ctx, 2)?,
        scale(ctx, 4)?,
    );
    let s_out = ctx
        .quant(ctx.out_info(0)?)?
        .scale
        .first()
        .copied()
        .ok_or_else(|| OpError::Invalid("SVDF output has no scale".into()))?;
    // TFLM forms both products in float, then widens them.
    let m1 = QuantMultiplier::new(f64::from(s_in * s_wf / s_state));
    let m2 = QuantMultiplier::new(f64::from(s_state * s_wt / s_out));
    let zp_in = ctx.quant(ctx.info(0)?)?.zero_point();
    let zp_state = ctx.quant(ctx.info(4)?)?.zero_point();
    let zp_out = ctx.quant(ctx.out_info(0)?)?.zero_point();
    let (lo, hi) = match state_ty {
        Scalar::I8 => (-128, 127),
        _ => (-32768, 32767),
    };

    let x = ctx.input(0)?;
    let wf = ctx.input(1)?;
    let wt = ctx.input(2)?;
    let g = &mut *ctx.graph;
    let xi = g.cast(&x, DType::I32);
    let xi = g.int_scalar(BinaryOp::Sub, &xi, i64::from(zp_in))?;
    let x3 = xi.reshape(&[d.batch, 1, d.input])?;
    let x3 = x3.expand(&[d.batch, d.filters, d.input])?;
    let dot = weighted_sum(g, &x3, &wf, DType::I32)?;
    let dot = g.requantize(&dot, &Multipliers::Tensor(m1))?;
    let dot = g.clamp_int(&dot, lo, hi)?;
    let dot = g.int_scalar(BinaryOp::Add, &dot, i64::from(zp_state))?;
    let newest = g.cast(&dot, DType::from(state_ty));
    let state = shift_state(ctx, d, &newest)?;
    let g = &mut *ctx.graph;
    let si = g.cast(&state, DType::I32);
    let si = g.int_scalar(BinaryOp::Sub, &si, i64::from(zp_state))?;
    let filtered = weighted_sum(g, &si, &wt, DType::I32)?;
    let acc = unit_sums(ctx, d, &filtered)?;
    let out = ctx.graph.requantize_to(
        &acc,
        &Multipliers::Tensor(m2),
        zp_out,
        (-128, 127),
        DType::I8,
    )?;
    Ok(out)
}

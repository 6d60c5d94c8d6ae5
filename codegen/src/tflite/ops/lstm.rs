//! `UNIDIRECTIONAL_SEQUENCE_LSTM` on float32 (int8: [`super::lstm_int`]): the form TFLM's kernel runs (input, forget, cell
//! and output gates; no CIFG, peephole, projection or layer norm), either batch- or time-major.
//!
//! The input projections `x_t · Wᵀ + b` of every step are one product before the sequence; a
//! counted loop ([`Graph::repeat`]) runs the recurrent part once per step over the hidden and
//! cell states, so a long sequence costs no more code than a short one. Per step, as TFLM:
//! `f, i, o = σ(xw + h · Rᵀ)`, `g = tanh(xw + h · Rᵀ)`, `c = f · c + i · g` (clipped to
//! `±cell_clip` when it is positive), `h = o · tanh(c)`. The states (inputs 18 and 19, variable tensors) start as TFLM resets them
//! (zeros) unless an earlier op computed them; their final values become the state tensors'
//! values for any later op that reads them.

use super::lstm_int::{self, IntLstm};
use super::{Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::loops::{LoopBody, LoopInput, LoopResult};
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::BinaryOp;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{ActivationFunctionType, BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[(Op::UnidirectionalSequenceLstm, lstm)];

type Out = Result<Vec<Lazy>, OpError>;

/// Input weights of the input, forget, cell and output gates; recurrent weights and biases
/// follow at +4 and +11.
const GATES: [usize; 4] = [1, 2, 3, 4];
const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;
/// Peephole, projection and layer-norm inputs, which TFLM's kernel does not run.
const UNSUPPORTED: [usize; 9] = [9, 10, 11, 16, 17, 20, 21, 22, 23];

/// The sizes of an LSTM, with its input laid out `[time, batch, input]`.
struct Dims {
    time: usize,
    batch: usize,
    hidden: usize,
}

fn lstm(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::UnidirectionalSequenceLstmOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let ty = ctx.info(0)?.dtype;
    if !matches!(ty, Scalar::F32 | Scalar::I8) {
        return Err(OpError::Unsupported(format!(
            "UNIDIRECTIONAL_SEQUENCE_LSTM on {ty}"
        )));
    }
    for i in UNSUPPORTED {
        if ctx.has(i) {
            return Err(OpError::Unsupported(format!(
                "UNIDIRECTIONAL_SEQUENCE_LSTM on {ty} with input {i} (peephole, projection or \
                 layer norm), which TFLM does not run"
            )));
        }
    }
    if o.fused_activation_function != ActivationFunctionType::Tanh {
        return Err(OpError::Unsupported(format!(
            "UNIDIRECTIONAL_SEQUENCE_LSTM on {ty} with cell activation {:?} (TFLM runs tanh)",
            o.fused_activation_function
        )));
    }
    let x = ctx.input(0)?;
    let x = match o.time_major {
        true => x,
        false if x.shape().len() == 3 => x.permute(&[1, 0, 2])?,
        false => x,
    };
    let d = dims(ctx, &x)?;
    let int = match ty {
        Scalar::I8 => Some(lstm_int::params(ctx, o.cell_clip)?),
        _ => {
            float_types(ctx)?;
            None
        }
    };
    let (y, h, c) = sequence(ctx, &d, &x, o.cell_clip, int.as_ref())?;
    record_state(ctx, OUTPUT_STATE, h)?;
    record_state(ctx, CELL_STATE, c)?;
    let y = if o.time_major {
        y
    } else {
        y.permute(&[1, 0, 2])?
    };
    super::expect_shape(ctx, &y, 0)?;
    Ok(vec![y])
}

/// Checks that a float LSTM's weights, biases and states are float32 (TFLM runs no hybrid
/// kernel).
fn float_types(ctx: &Ctx) -> Result<(), OpError> {
    for i in [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        12,
        13,
        14,
        15,
        OUTPUT_STATE,
        CELL_STATE,
    ] {
        let t = ctx.info(i)?;
        if t.dtype != Scalar::F32 {
            return Err(OpError::Unsupported(format!(
                "UNIDIRECTIONAL_SEQUENCE_LSTM on float32 with input {i} ({:?}) of {}",
                t.name, t.dtype
            )));
        }
    }
    Ok(())
}

fn dims(ctx: &Ctx, x: &Lazy) -> Result<Dims, OpError> {
    let bad = |what: String| OpError::Invalid(format!("UNIDIRECTIONAL_SEQUENCE_LSTM {what}"));
    let &[time, batch, input] = x.shape() else {
        return Err(bad(format!("input of shape {:?} is not 3-D", x.shape())));
    };
    for i in [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        12,
        13,
        14,
        15,
        OUTPUT_STATE,
        CELL_STATE,
    ] {
        if !ctx.has(i) {
            return Err(bad(format!("without input {i}")));
        }
    }
    let hidden = ctx.info(2)?.shape.first().copied().unwrap_or(0);
    let want = |i: usize| -> Vec<usize> {
        match i {
            1..=4 => vec![hidden, input],
            5..=8 => vec![hidden, hidden],
            12..=15 => vec![hidden],
            _ => vec![batch, hidden],
        }
    };
    for i in [1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15] {
        let s = &ctx.info(i)?.shape;
        if *s != want(i) {
            return Err(bad(format!("input {i} of shape {s:?}, not {:?}", want(i))));
        }
    }
    for i in [OUTPUT_STATE, CELL_STATE] {
        let n: usize = ctx.info(i)?.shape.iter().product();
        if n != batch * hidden {
            return Err(bad(format!(
                "state input {i} of {n} values, not {batch}×{hidden}"
            )));
        }
    }
    Ok(Dims {
        time,
        batch,
        hidden,
    })
}

/// A state's value before the op: what an earlier op computed, else TFLM's reset (zeros, the
/// zero point for int8), as `[batch, hidden]`.
fn initial_state(ctx: &mut Ctx, i: usize, d: &Dims) -> Result<Lazy, OpError> {
    let id = ctx.id(i)?;
    if let Some(v) = ctx.values.get(&id) {
        return Ok(v.reshape(&[d.batch, d.hidden])?);
    }
    let t = ctx.info(i)?;
    let zp = match (&t.quant, t.dtype) {
        (Some(q), Scalar::I8) => q.zero_point(),
        _ => 0,
    };
    let dtype = DType::from(t.dtype);
    Ok(ctx
        .graph
        .int_const(i64::from(zp), dtype, &[d.batch, d.hidden]))
}

/// Records a state's final value, in its tensor's shape.
fn record_state(ctx: &mut Ctx, i: usize, v: Lazy) -> Result<(), OpError> {
    let shape = ctx.info(i)?.shape.clone();
    let id = ctx.id(i)?;
    let v = v.reshape(&shape)?;
    ctx.values.insert(id, v);
    Ok(())
}

/// The input projections of all steps, `[time, batch, 4 · hidden]`, gates in TFLite's order
/// (int16 on the gate scale when quantized).
fn projections(ctx: &mut Ctx, x: &Lazy, int: Option<&IntLstm>) -> Result<Lazy, OpError> {
    let mut ws = Vec::new();
    let mut bs = Vec::new();
    for k in GATES {
        ws.push(ctx.input(k)?);
        bs.push(ctx.input(k + 11)?);
    }
    let g = &mut *ctx.graph;
    if let Some(p) = int {
        let mut parts = Vec::new();
        for k in 0..4 {
            let m = p.input_fc[k];
            parts.push(lstm_int::gate_fc(g, x, p.zp_in, &ws[k], Some(&bs[k]), m)?);
        }
        let xw = g.concat(&parts, 2)?;
        return Ok(g.cast(&xw, DType::I16));
    }
    let w = g.concat(&ws, 0)?;
    let b = g.concat(&bs, 0)?;
    let xw = g.matmul(x, &w.permute(&[1, 0])?)?;
    Ok(g.binary(BinaryOp::Add, &xw, &b)?)
}

/// Runs the sequence: the stacked hidden states `[time, batch, hidden]` and the final hidden
/// and cell states.
fn sequence(
    ctx: &mut Ctx,
    d: &Dims,
    x: &Lazy,
    clip: f32,
    int: Option<&IntLstm>,
) -> Result<(Lazy, Lazy, Lazy), OpError> {
    let xw = projections(ctx, x, int)?;
    let h0 = initial_state(ctx, OUTPUT_STATE, d)?;
    let c0 = initial_state(ctx, CELL_STATE, d)?;
    let mut rs = Vec::new();
    for k in GATES {
        rs.push(ctx.constant(k + 4)?.clone());
    }
    let mut g = Graph::new();
    let xw_t = g.input("xw", xw.dtype, &xw.shape()[1..]);
    let h = g.input("h", h0.dtype, h0.shape());
    let c = g.input("c", c0.dtype, c0.shape());
    let mut r = Vec::new();
    for (k, t) in rs.into_iter().enumerate() {
        r.push(g.weight(&format!("recurrent_{k}"), t));
    }
    let (h_next, c_next) = match int {
        Some(p) => lstm_int::step(&mut g, p, &xw_t, &h, &c, &r)?,
        None => {
            let r = g.concat(&r, 0)?;
            step(&mut g, d.hidden, &xw_t, &h, &c, &r, clip)?
        }
    };
    let body = LoopBody {
        count: d.time,
        graph: g,
        outputs: vec![h_next, c_next],
        inputs: vec![
            LoopInput::Row {
                operand: 0,
                reverse: false,
            },
            LoopInput::State { init: 1, next: 0 },
            LoopInput::State { init: 2, next: 1 },
        ],
        results: vec![
            LoopResult::Stacked {
                output: 0,
                reverse: false,
            },
            LoopResult::Final { input: 1 },
            LoopResult::Final { input: 2 },
        ],
    };
    let mut res = ctx.graph.repeat(body, &[xw, h0, c0])?.into_iter();
    let mut next = || {
        res.next()
            .ok_or_else(|| OpError::Invalid("the LSTM loop gave too few results".into()))
    };
    Ok((next()?, next()?, next()?))
}

/// One step: the next hidden and cell states.
#[allow(clippy::too_many_arguments)]
fn step(
    g: &mut Graph,
    hidden: usize,
    xw: &Lazy,
    h: &Lazy,
    c: &Lazy,
    r: &Lazy,
    clip: f32,
) -> Result<(Lazy, Lazy), GraphError> {
    let hr = g.matmul(h, &r.permute(&[1, 0])?)?;
    let pre = g.binary(BinaryOp::Add, xw, &hr)?;
    let batch = pre.shape()[0];
    let gate = |k: usize| pre.shrink(&[(0, batch), (k * hidden, (k + 1) * hidden)]);
    let i = g.sigmoid(&gate(0)?)?;
    let f = g.sigmoid(&gate(1)?)?;
    let cell = g.tanh(&gate(2)?)?;
    let o = g.sigmoid(&gate(3)?)?;
    let fc = g.binary(BinaryOp::Mul, &f, c)?;
    let ig = g.binary(BinaryOp::Mul, &i, &cell)?;
    let mut c_next = g.binary(BinaryOp::Add, &fc, &ig)?;
    if clip > 0.0 {
        let clip = f64::from(clip);
        c_next = g.clip(&c_next, Some(-clip), Some(clip))?;
    }
    let t = g.tanh(&c_next)?;
    let h_next = g.binary(BinaryOp::Mul, &o, &t)?;
    Ok((h_next, c_next))
}

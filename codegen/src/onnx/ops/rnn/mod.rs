//! Recurrent layers: RNN, GRU and LSTM (opsets 7 to 22) in every direction and layout, with
//! every optional input and output.
//!
//! The input projection of every time step, X·Wᵀ + Wb + Rb, is one matrix product before the
//! time loop. The loop ([`Graph::repeat`]) runs only the recurrent part once per step: the
//! product of the hidden state with Rᵀ, the gates and the state update. R, the peepholes and
//! the biases the loop needs are weights of its body when they are known at compile time,
//! operands of the loop otherwise. `sequence_lens` becomes a mask of shape (T, B, 1), fed a row
//! per step: where it is false, the states stay and the step's output row is 0. A reverse
//! direction reads the rows of X and writes those of Y from the last; bidirectional layers run
//! two loops and concatenate their results along the direction axis.

use super::ctx::{invalid, materialize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::loops::{LoopBody, LoopInput, LoopResult};
use crate::graph::{Graph, GraphError, Lazy};
use crate::onnx::AttrProblem;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::Tensor;

mod activation;
mod attrs;
mod cells;
mod inputs;

use activation::*;
use attrs::*;
use cells::*;
use inputs::*;

pub(super) const OPS: &[(&str, OpBuilder)] = &[("RNN", rnn), ("GRU", gru), ("LSTM", lstm)];

type Out = Result<Vec<Value>, OpError>;
type GResult = Result<Lazy, GraphError>;

fn rnn(ctx: &mut Ctx) -> Out {
    recurrent(ctx, Cell::Rnn)
}

fn gru(ctx: &mut Ctx) -> Out {
    recurrent(ctx, Cell::Gru)
}

fn lstm(ctx: &mut Ctx) -> Out {
    recurrent(ctx, Cell::Lstm)
}

/// The inputs of the three ops, by position.
const X: usize = 0;
const W: usize = 1;
const R: usize = 2;
const B: usize = 3;
const SEQUENCE_LENS: usize = 4;
const INITIAL_H: usize = 5;
const INITIAL_C: usize = 6;
const P: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    /// The gates stacked in W, R and each half of B.
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }

    /// The default activation functions of one direction.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }

    /// The outputs: Y, Y_h and (LSTM) Y_c.
    fn outputs(self) -> usize {
        match self {
            Cell::Lstm => 3,
            _ => 2,
        }
    }
}

/// An error in attribute `attr` (the import error adds the node).
fn attr_error(attr: &str, reason: String) -> OpError {
    OpError::Attribute {
        attr: attr.to_string(),
        problem: AttrProblem::Invalid(reason),
    }
}

/// The shapes of a layer, with X in time-major order.
struct Dims {
    /// Time steps.
    t: usize,
    batch: usize,
    hidden: usize,
    directions: usize,
    dtype: DType,
}

/// A tensor of one direction of a per-direction input (W, R, B or P): elements `from..to` of
/// direction `d`'s, as `shape`.
enum Param {
    Known(Tensor),
    Computed(Lazy),
}

fn direction_param(
    ctx: &mut Ctx,
    input: usize,
    d: usize,
    (from, to): (usize, usize),
    shape: &[usize],
) -> Result<Param, OpError> {
    if ctx.is_known(input) {
        let t = ctx.known(input)?;
        let directions = t.shape()[0];
        let per = t.numel() / directions.max(1);
        let size = DType::from(t.dtype()).size();
        let bytes = &t.bytes()[(d * per + from) * size..(d * per + to) * size];
        return Ok(Param::Known(Tensor::new(
            t.dtype(),
            shape.to_vec(),
            bytes.to_vec(),
        )?));
    }
    let l = ctx.tensor(input)?;
    let directions = l.shape()[0];
    let per = l.numel() / directions.max(1);
    let part = l
        .reshape(&[directions, per])?
        .shrink(&[(d, d + 1), (from, to)])?
        .reshape(shape)?;
    Ok(Param::Computed(part))
}

/// Elements `from..to` of direction `d` of a per-direction input, as a value of the outer
/// graph.
fn direction_slice(
    ctx: &mut Ctx,
    input: usize,
    d: usize,
    (from, to): (usize, usize),
) -> Result<Lazy, OpError> {
    let l = ctx.tensor(input)?;
    let directions = l.shape()[0];
    let per = l.numel() / directions.max(1);
    Ok(l.reshape(&[directions, per])?
        .shrink(&[(d, d + 1), (from, to)])?
        .reshape(&[to - from])?)
}

/// What one direction's loop gives: Y's rows (T, B, H), and the final hidden and cell states
/// (B, H), each when wanted.
struct Direction {
    y: Option<Lazy>,
    h: Option<Lazy>,
    c: Option<Lazy>,
}

/// Which outputs are wanted.
#[derive(Clone, Copy)]
struct Wanted {
    y: bool,
    h: bool,
    c: bool,
}

fn recurrent(ctx: &mut Ctx, cell: Cell) -> Out {
    ctx.only_outputs(cell.outputs())?;
    let attrs = Attrs::read(ctx, cell)?;
    let wanted = Wanted {
        y: ctx.wants(0),
        h: ctx.wants(1),
        c: cell == Cell::Lstm && ctx.wants(2),
    };
    let x = ctx.tensor(X)?;
    let dims = check_shapes(ctx, cell, &attrs, &x)?;
    // What stands for an output that is not wanted: it is never read.
    let empty = Value::known(Tensor::new(dims.dtype.scalar, vec![0], Vec::new())?);
    let unused = || empty.clone();
    if !(wanted.y || wanted.h || wanted.c) {
        return Ok(vec![unused(); cell.outputs()]);
    }
    let x = match attrs.batch_first {
        true => x.permute(&[1, 0, 2])?,
        false => x,
    };
    let mask = step_mask(ctx, &dims)?;
    let mut runs = Vec::with_capacity(dims.directions);
    for d in 0..dims.directions {
        let steps = mask.as_ref().map(|m| &m.steps);
        runs.push(direction(ctx, cell, &attrs, &dims, &x, steps, d, wanted)?);
    }
    let g = &mut *ctx.graph;
    if let Some(m) = &mask {
        // The final states of an empty sequence are 0, as onnxruntime gives them, not the
        // initial ones.
        for run in &mut runs {
            for s in [&mut run.h, &mut run.c].into_iter().flatten() {
                let zero = g.scalar_like(s, 0.0);
                *s = g.where_(&m.any, s, &zero)?;
            }
        }
    }
    let (t, b, h) = (dims.t, dims.batch, dims.hidden);
    let stack = |g: &mut Graph, parts: Vec<Option<Lazy>>, shape: &[usize], axis: usize| {
        let parts = parts
            .into_iter()
            .map(|p| p.expect("a wanted result").reshape(shape))
            .collect::<Result<Vec<Lazy>, GraphError>>()?;
        g.concat(&parts, axis)
    };
    let mut outs = Vec::with_capacity(cell.outputs());
    if wanted.y {
        let ys = runs.iter().map(|r| r.y.clone()).collect();
        let y = stack(g, ys, &[t, 1, b, h], 1)?;
        let y = match attrs.batch_first {
            true => y.permute(&[2, 0, 1, 3])?,
            false => y,
        };
        outs.push(Value::Tensor(y));
    } else {
        outs.push(unused());
    }
    let states = [
        (
            wanted.h,
            runs.iter().map(|r| r.h.clone()).collect::<Vec<_>>(),
        ),
        (wanted.c, runs.iter().map(|r| r.c.clone()).collect()),
    ];
    for (want, parts) in states.into_iter().take(cell.outputs() - 1) {
        if !want {
            outs.push(unused());
            continue;
        }
        let s = stack(g, parts, &[1, b, h], 0)?;
        let s = match attrs.batch_first {
            true => s.permute(&[1, 0, 2])?,
            false => s,
        };
        outs.push(Value::Tensor(s));
    }
    Ok(outs)
}

/// Runs direction `d` of the layer over time-major `x`.
#[allow(clippy::too_many_arguments)]
fn direction(
    ctx: &mut Ctx,
    cell: Cell,
    attrs: &Attrs,
    dims: &Dims,
    x: &Lazy,
    mask: Option<&Lazy>,
    d: usize,
    wanted: Wanted,
) -> Result<Direction, OpError> {
    let (t, b, h) = (dims.t, dims.batch, dims.hidden);
    let gh = cell.gates() * h;
    let reverse = attrs.reverse[d];
    let lbr = cell == Cell::Gru && attrs.linear_before_reset;
    // The input projection of every step: X·Wᵀ + Wb + Rb (without GRU's Rbh when it is
    // applied before the reset gate).
    let w = ctx.tensor(W)?;
    let input = w.shape()[2];
    let wd = w
        .shrink(&[(d, d + 1), (0, gh), (0, input)])?
        .reshape(&[gh, input])?;
    let mut xw = times_transposed(ctx.graph, x, &wd)?;
    if ctx.has(B) {
        let wb = direction_slice(ctx, B, d, (0, gh))?;
        let rb = match lbr {
            true => direction_slice(ctx, B, d, (gh, gh + 2 * h))?.pad(&[(0, h)])?,
            false => direction_slice(ctx, B, d, (gh, 2 * gh))?,
        };
        let g = &mut *ctx.graph;
        let bias = add(g, &wb, &rb)?;
        xw = add(g, &xw, &bias)?;
    }
    debug_assert_eq!(xw.shape(), [t, b, gh]);

    let mut body = Body::new();
    let xw_t = body.row("xw", &xw, reverse);
    let mask_t = mask.map(|m| body.row("mask", m, reverse));
    let h0 = initial_state(ctx, INITIAL_H, d, dims, attrs.batch_first)?;
    let (h_prev, h_state) = body.state("h", &h0);
    let c = match cell {
        Cell::Lstm => {
            let c0 = initial_state(ctx, INITIAL_C, d, dims, attrs.batch_first)?;
            Some(body.state("c", &c0))
        }
        _ => None,
    };
    let acts = &attrs.activations[d];
    let clip = attrs.clip;
    let (h_new, c_new) = match cell {
        Cell::Rnn => {
            let r = direction_param(ctx, R, d, (0, h * h), &[h, h])?;
            let r = body.param("R", r)?;
            let g = &mut body.g;
            let hr = times_transposed(g, &h_prev, &r)?;
            let a = add(g, &xw_t, &hr)?;
            (acts[0].apply(g, &a, clip)?, None)
        }
        Cell::Gru => {
            let h_next = gru_step(ctx, &mut body, attrs, dims, d, &xw_t, &h_prev)?;
            (h_next, None)
        }
        Cell::Lstm => {
            let (c_prev, _) = c.as_ref().expect("an LSTM has a cell state");
            let (h_next, c_next) =
                lstm_step(ctx, &mut body, attrs, dims, d, &xw_t, &h_prev, c_prev)?;
            (h_next, Some(c_next))
        }
    };
    // Past a sequence's end, the states stay and the output rows are 0.
    let g = &mut body.g;
    let keep = |g: &mut Graph, new: &Lazy, old: &Lazy| match &mask_t {
        Some(m) => g.where_(m, new, old),
        None => Ok(new.clone()),
    };
    let mut outputs = vec![keep(g, &h_new, &h_prev)?];
    body.carry(h_state, 0);
    if let (Some((c_prev, c_state)), Some(c_new)) = (&c, &c_new) {
        let g = &mut body.g;
        outputs.push(keep(g, c_new, c_prev)?);
        body.carry(*c_state, outputs.len() - 1);
    }
    let mut results = Vec::new();
    if wanted.y {
        let output = match &mask_t {
            Some(m) => {
                let g = &mut body.g;
                let zero = g.scalar_like(&h_new, 0.0);
                outputs.push(g.where_(m, &h_new, &zero)?);
                outputs.len() - 1
            }
            None => 0,
        };
        results.push(LoopResult::Stacked { output, reverse });
    }
    if wanted.h {
        results.push(LoopResult::Final { input: h_state });
    }
    if let (true, Some((_, c_state))) = (wanted.c, &c) {
        results.push(LoopResult::Final { input: *c_state });
    }
    let loop_body = LoopBody {
        count: t,
        graph: body.g,
        outputs,
        inputs: body.inputs,
        results,
    };
    let mut res = ctx.graph.repeat(loop_body, &body.operands)?.into_iter();
    Ok(Direction {
        y: if wanted.y { res.next() } else { None },
        h: if wanted.h { res.next() } else { None },
        c: if wanted.c { res.next() } else { None },
    })
}

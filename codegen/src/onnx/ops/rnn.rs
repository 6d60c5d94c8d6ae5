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

/// An activation function of a recurrent layer, with its alpha and beta.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    Relu,
    Tanh,
    Sigmoid,
    Affine(f64, f64),
    LeakyRelu(f64),
    ThresholdedRelu(f64),
    ScaledTanh(f64, f64),
    HardSigmoid(f64, f64),
    Elu(f64),
    Softsign,
    Softplus,
}

/// The activation functions recurrent layers accept.
const ACTIVATIONS: &str = "Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, \
                           ScaledTanh, HardSigmoid, Elu, Softsign, Softplus";

impl Act {
    /// The function named `name` (in any case). It takes its alpha and beta, when it has them,
    /// from the next unused values of `alphas` and `betas`, else the defaults of the ONNX
    /// operator of the same name.
    fn parse(
        name: &str,
        alphas: &mut impl Iterator<Item = f64>,
        betas: &mut impl Iterator<Item = f64>,
    ) -> Result<Act, OpError> {
        let mut alpha = |default: f64| alphas.next().unwrap_or(default);
        Ok(match name.to_ascii_lowercase().as_str() {
            "relu" => Act::Relu,
            "tanh" => Act::Tanh,
            "sigmoid" => Act::Sigmoid,
            "affine" => {
                let a = alpha(1.0);
                Act::Affine(a, betas.next().unwrap_or(0.0))
            }
            "leakyrelu" => Act::LeakyRelu(alpha(0.01)),
            "thresholdedrelu" => Act::ThresholdedRelu(alpha(1.0)),
            "scaledtanh" => {
                let a = alpha(1.0);
                Act::ScaledTanh(a, betas.next().unwrap_or(1.0))
            }
            "hardsigmoid" => {
                let a = alpha(0.2);
                Act::HardSigmoid(a, betas.next().unwrap_or(0.5))
            }
            "elu" => Act::Elu(alpha(1.0)),
            "softsign" => Act::Softsign,
            "softplus" => Act::Softplus,
            _ => {
                return Err(attr_error(
                    "activations",
                    format!(
                    "{name:?} is not an activation function of recurrent layers ({ACTIVATIONS})"
                ),
                ))
            }
        })
    }

    /// The function of `x`, its input first clipped to `[-clip, clip]` when `clip` is set.
    fn apply(self, g: &mut Graph, x: &Lazy, clip: Option<f64>) -> GResult {
        let x = match clip {
            Some(c) => g.clip(x, Some(-c), Some(c))?,
            None => x.clone(),
        };
        let x = &x;
        match self {
            Act::Relu => g.relu(x),
            Act::Tanh => g.tanh(x),
            Act::Sigmoid => g.sigmoid(x),
            Act::Affine(a, b) => {
                let ax = g.mul_scalar(x, a)?;
                g.add_scalar(&ax, b)
            }
            Act::LeakyRelu(a) => {
                let ax = g.mul_scalar(x, a)?;
                let zero = g.scalar_like(x, 0.0);
                let negative = g.lt(x, &zero)?;
                g.where_(&negative, &ax, x)
            }
            Act::ThresholdedRelu(a) => {
                let alpha = g.scalar_like(x, a);
                let below = g.lt(x, &alpha)?;
                let zero = g.scalar_like(x, 0.0);
                g.where_(&below, &zero, x)
            }
            Act::ScaledTanh(a, b) => {
                let bx = g.mul_scalar(x, b)?;
                let t = g.tanh(&bx)?;
                g.mul_scalar(&t, a)
            }
            Act::HardSigmoid(a, b) => {
                let ax = g.mul_scalar(x, a)?;
                let y = g.add_scalar(&ax, b)?;
                g.clip(&y, Some(0.0), Some(1.0))
            }
            Act::Elu(a) => {
                let e = g.exp(x)?;
                let e1 = g.add_scalar(&e, -1.0)?;
                let n = g.mul_scalar(&e1, a)?;
                let zero = g.scalar_like(x, 0.0);
                let negative = g.lt(x, &zero)?;
                g.where_(&negative, &n, x)
            }
            Act::Softsign => {
                let a = g.abs(x)?;
                let d = g.add_scalar(&a, 1.0)?;
                let r = g.unary(UnaryOp::Recip, &d)?;
                g.binary(BinaryOp::Mul, x, &r)
            }
            Act::Softplus => super::activation::softplus_of(g, x),
        }
    }
}

/// The attributes of a recurrent layer.
struct Attrs {
    /// Per direction: whether it runs backwards in time.
    reverse: Vec<bool>,
    /// `layout` 1: batch first.
    batch_first: bool,
    hidden_size: Option<usize>,
    clip: Option<f64>,
    /// Per direction, the cell's activation functions (f, g, h).
    activations: Vec<Vec<Act>>,
    input_forget: bool,
    linear_before_reset: bool,
}

impl Attrs {
    fn read(ctx: &Ctx, cell: Cell) -> Result<Attrs, OpError> {
        let a = ctx.attrs();
        let direction = a.string_or("direction", "forward".into())?;
        let reverse = match direction.as_str() {
            "forward" => vec![false],
            "reverse" => vec![true],
            "bidirectional" => vec![false, true],
            other => {
                return Err(attr_error(
                    "direction",
                    format!("{other:?} is not forward, reverse or bidirectional"),
                ))
            }
        };
        let batch_first = match a.int_or("layout", 0)? {
            0 => false,
            1 => true,
            other => return Err(attr_error("layout", format!("{other} is not 0 or 1"))),
        };
        let hidden_size = match a.get("hidden_size") {
            None => None,
            Some(_) => {
                let h = a.int("hidden_size")?;
                Some(
                    usize::try_from(h)
                        .ok()
                        .filter(|&h| h > 0)
                        .ok_or_else(|| attr_error("hidden_size", format!("{h} is not positive")))?,
                )
            }
        };
        let clip = match a.get("clip") {
            None => None,
            Some(_) => {
                let c = f64::from(a.float("clip")?);
                if c.is_nan() || c <= 0.0 {
                    return Err(attr_error("clip", format!("{c} is not positive")));
                }
                Some(c)
            }
        };
        let input_forget = a.int_or("input_forget", 0)? != 0;
        let linear_before_reset = a.int_or("linear_before_reset", 0)? != 0;
        let activations = Self::activations(ctx, cell, reverse.len())?;
        Ok(Attrs {
            reverse,
            batch_first,
            hidden_size,
            clip,
            activations,
            input_forget,
            linear_before_reset,
        })
    }

    /// The activation functions of each of `directions` directions.
    fn activations(ctx: &Ctx, cell: Cell, directions: usize) -> Result<Vec<Vec<Act>>, OpError> {
        let a = ctx.attrs();
        let per = cell.default_activations().len();
        let names: Vec<String> = match a.get("activations") {
            None => cell
                .default_activations()
                .iter()
                .map(|s| s.to_string())
                .collect(),
            Some(_) => a.strings("activations")?,
        };
        let alphas = a.floats_or("activation_alpha", Vec::new())?;
        let betas = a.floats_or("activation_beta", Vec::new())?;
        let mut alphas = alphas.into_iter().map(f64::from);
        let mut betas = betas.into_iter().map(f64::from);
        let acts = names
            .iter()
            .map(|n| Act::parse(n, &mut alphas, &mut betas))
            .collect::<Result<Vec<Act>, OpError>>()?;
        // One list per direction; one direction's list serves both of a bidirectional layer,
        // and a forward or reverse layer ignores a second direction's (RNN's schema default
        // names two functions whatever the direction).
        let per_direction = match acts.len() {
            n if n == per * directions => acts.chunks(per).map(<[Act]>::to_vec).collect(),
            n if n == per => vec![acts; directions],
            n if n == 2 * per && directions == 1 => vec![acts[..per].to_vec()],
            n => {
                return Err(attr_error(
                    "activations",
                    format!("{n} functions {names:?} for {directions} direction(s) of {per} each"),
                ))
            }
        };
        Ok(per_direction)
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

/// A loop body under construction, with the operands its inputs are fed from.
struct Body {
    g: Graph,
    inputs: Vec<LoopInput>,
    operands: Vec<Lazy>,
}

impl Body {
    fn new() -> Body {
        Body {
            g: Graph::new(),
            inputs: Vec::new(),
            operands: Vec::new(),
        }
    }

    fn operand(&mut self, x: &Lazy) -> usize {
        self.operands.push(x.clone());
        self.operands.len() - 1
    }

    /// An input fed row `t` of `x` (row `T - 1 - t` when `reverse`) at step `t`.
    fn row(&mut self, name: &str, x: &Lazy, reverse: bool) -> Lazy {
        let operand = self.operand(x);
        self.inputs.push(LoopInput::Row { operand, reverse });
        self.g.input(name, x.dtype, &x.shape()[1..])
    }

    /// A state starting at `init`: the input, and its index (whose `next` is set by
    /// [`Body::carry`]).
    fn state(&mut self, name: &str, init: &Lazy) -> (Lazy, usize) {
        let init_operand = self.operand(init);
        self.inputs.push(LoopInput::State {
            init: init_operand,
            next: usize::MAX,
        });
        let k = self.inputs.len() - 1;
        (self.g.input(name, init.dtype, init.shape()), k)
    }

    /// Says that body output `output` is the next value of state input `k`.
    fn carry(&mut self, k: usize, output: usize) {
        if let LoopInput::State { next, .. } = &mut self.inputs[k] {
            *next = output;
        }
    }

    /// A parameter: a weight of the body when known, else an input fed the same operand at
    /// every step.
    fn param(&mut self, name: &str, p: Param) -> Result<Lazy, OpError> {
        match p {
            Param::Known(t) => materialize(&mut self.g, name, &t),
            Param::Computed(l) => {
                let operand = self.operand(&l);
                self.inputs.push(LoopInput::Invariant { operand });
                Ok(self.g.input(name, l.dtype, l.shape()))
            }
        }
    }
}

/// Columns `from..to` of a (batch, n) matrix.
fn columns(x: &Lazy, from: usize, to: usize) -> GResult {
    x.shrink(&[(0, x.shape()[0]), (from, to)])
}

/// `h · Rᵀ` for a (rows, hidden) R.
fn times_transposed(g: &mut Graph, h: &Lazy, r: &Lazy) -> GResult {
    let rt = r.permute(&[1, 0])?;
    g.matmul(h, &rt)
}

fn add(g: &mut Graph, a: &Lazy, b: &Lazy) -> GResult {
    g.binary(BinaryOp::Add, a, b)
}

fn mul(g: &mut Graph, a: &Lazy, b: &Lazy) -> GResult {
    g.binary(BinaryOp::Mul, a, b)
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

/// Checks the inputs' shapes and types against X's (time-major or batch-first) and each other.
fn check_shapes(ctx: &Ctx, cell: Cell, attrs: &Attrs, x: &Lazy) -> Result<Dims, OpError> {
    let dtype = x.dtype;
    if !dtype.is_float() {
        return Err(invalid(format!("X is {dtype}, not a floating-point type")));
    }
    let xs = x.shape();
    if xs.len() != 3 {
        return Err(invalid(format!("X {xs:?} is not 3-D")));
    }
    let (t, batch) = match attrs.batch_first {
        true => (xs[1], xs[0]),
        false => (xs[0], xs[1]),
    };
    let input = xs[2];
    let directions = attrs.reverse.len();
    let gates = cell.gates();
    let r = ctx.shape(R)?;
    let hidden = match r.as_slice() {
        [_, _, h] => *h,
        _ => return Err(invalid(format!("R {r:?} is not 3-D"))),
    };
    if let Some(hs) = attrs.hidden_size {
        if hs != hidden {
            return Err(attr_error(
                "hidden_size",
                format!("{hs} does not match R {r:?}"),
            ));
        }
    }
    let gh = gates * hidden;
    let mut expect = vec![
        (W, "W", vec![directions, gh, input]),
        (R, "R", vec![directions, gh, hidden]),
        (B, "B", vec![directions, 2 * gh]),
    ];
    let state = match attrs.batch_first {
        true => vec![batch, directions, hidden],
        false => vec![directions, batch, hidden],
    };
    expect.push((INITIAL_H, "initial_h", state.clone()));
    if cell == Cell::Lstm {
        expect.push((INITIAL_C, "initial_c", state));
        expect.push((P, "P", vec![directions, 3 * hidden]));
    }
    for (i, name, shape) in expect {
        if !ctx.has(i) {
            if i == W || i == R {
                return Err(OpError::MissingInput { index: i });
            }
            continue;
        }
        let got = ctx.shape(i)?;
        if got != shape {
            return Err(invalid(format!(
                "{name} {got:?} is not {shape:?} (direction {:?}, X {xs:?}, hidden size {hidden})",
                match directions {
                    2 => "bidirectional",
                    _ if attrs.reverse[0] => "reverse",
                    _ => "forward",
                }
            )));
        }
        let dt = ctx.dtype(i)?;
        if dt != dtype {
            return Err(invalid(format!("{name} is {dt}, X is {dtype}")));
        }
    }
    if ctx.has(SEQUENCE_LENS) {
        let s = ctx.shape(SEQUENCE_LENS)?;
        if s != [batch] {
            return Err(invalid(format!("sequence_lens {s:?} is not [{batch}]")));
        }
        let dt = ctx.dtype(SEQUENCE_LENS)?;
        if !dt.is_int() {
            return Err(invalid(format!("sequence_lens is {dt}, not integers")));
        }
    }
    Ok(Dims {
        t,
        batch,
        hidden,
        directions,
        dtype,
    })
}

/// Where each batch element is in its sequence: at each step (`steps`, (T, B, 1) bool), and
/// whether its sequence has any step at all (`any`, (B, 1) bool).
struct Lengths {
    steps: Lazy,
    any: Lazy,
}

/// The [`Lengths`] of `sequence_lens`: `None` when there is none, or it is known to cover
/// every step.
fn step_mask(ctx: &mut Ctx, dims: &Dims) -> Result<Option<Lengths>, OpError> {
    if !ctx.has(SEQUENCE_LENS) {
        return Ok(None);
    }
    if let Some(lens) = ctx.known_ints(SEQUENCE_LENS)? {
        if lens.iter().all(|&n| n >= dims.t as i64) {
            return Ok(None);
        }
    }
    let lens = ctx.tensor(SEQUENCE_LENS)?;
    let (t, b) = (dims.t, dims.batch);
    let g = &mut *ctx.graph;
    let lens = g.cast(&lens, DType::I32).reshape(&[1, b, 1])?;
    let zero = g.constant(0.0, DType::I32, &[1, b, 1]);
    let any = g.lt(&zero, &lens)?.reshape(&[b, 1])?;
    let lens = lens.expand(&[t, b, 1])?;
    let steps = g
        .arange(t, DType::I32)
        .reshape(&[t, 1, 1])?
        .expand(&[t, b, 1])?;
    let steps = g.lt(&steps, &lens)?;
    Ok(Some(Lengths { steps, any }))
}

/// The initial value of state input `input` (initial_h or initial_c) for direction `d`, (B, H):
/// zeros when omitted.
fn initial_state(
    ctx: &mut Ctx,
    input: usize,
    d: usize,
    dims: &Dims,
    batch_first: bool,
) -> Result<Lazy, OpError> {
    let (b, h) = (dims.batch, dims.hidden);
    if !ctx.has(input) {
        return Ok(ctx.graph.constant(0.0, dims.dtype, &[b, h]));
    }
    let s = ctx.tensor(input)?;
    let s = match batch_first {
        true => s.permute(&[1, 0, 2])?,
        false => s,
    };
    Ok(s.shrink(&[(d, d + 1), (0, b), (0, h)])?.reshape(&[b, h])?)
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

/// One GRU step: the next hidden state from the step's input projection `xw` (B, 3H) and the
/// previous state `h_prev` (B, H).
fn gru_step(
    ctx: &mut Ctx,
    body: &mut Body,
    attrs: &Attrs,
    dims: &Dims,
    d: usize,
    xw: &Lazy,
    h_prev: &Lazy,
) -> Result<Lazy, OpError> {
    let h = dims.hidden;
    let (f, act_g) = (attrs.activations[d][0], attrs.activations[d][1]);
    let clip = attrs.clip;
    let (xz, xr, xh) = (
        columns(xw, 0, h)?,
        columns(xw, h, 2 * h)?,
        columns(xw, 2 * h, 3 * h)?,
    );
    if attrs.linear_before_reset {
        // ht = g(xh + r ⊙ (h·Rhᵀ + Rbh)): one product with all of R.
        let r = direction_param(ctx, R, d, (0, 3 * h * h), &[3 * h, h])?;
        let r = body.param("R", r)?;
        let rbh = match ctx.has(B) {
            true => Some(direction_param(ctx, B, d, (3 * h + 2 * h, 6 * h), &[h])?),
            false => None,
        };
        let rbh = rbh.map(|p| body.param("Rbh", p)).transpose()?;
        let g = &mut body.g;
        let hr = times_transposed(g, h_prev, &r)?;
        let z = add(g, &xz, &columns(&hr, 0, h)?)?;
        let z = f.apply(g, &z, clip)?;
        let rg = add(g, &xr, &columns(&hr, h, 2 * h)?)?;
        let rg = f.apply(g, &rg, clip)?;
        let mut hh = columns(&hr, 2 * h, 3 * h)?;
        if let Some(rbh) = rbh {
            hh = add(g, &hh, &rbh)?;
        }
        let hh = mul(g, &rg, &hh)?;
        let hh = add(g, &xh, &hh)?;
        let hh = act_g.apply(g, &hh, clip)?;
        return Ok(gru_update(g, &z, &hh, h_prev)?);
    }
    // ht = g(xh + (r ⊙ h)·Rhᵀ): the reset gate comes before the product.
    let rzr = direction_param(ctx, R, d, (0, 2 * h * h), &[2 * h, h])?;
    let rzr = body.param("Rzr", rzr)?;
    let rh = direction_param(ctx, R, d, (2 * h * h, 3 * h * h), &[h, h])?;
    let rh = body.param("Rh", rh)?;
    let g = &mut body.g;
    let hr = times_transposed(g, h_prev, &rzr)?;
    let z = add(g, &xz, &columns(&hr, 0, h)?)?;
    let z = f.apply(g, &z, clip)?;
    let rg = add(g, &xr, &columns(&hr, h, 2 * h)?)?;
    let rg = f.apply(g, &rg, clip)?;
    let reset = mul(g, &rg, h_prev)?;
    let hh = times_transposed(g, &reset, &rh)?;
    let hh = add(g, &xh, &hh)?;
    let hh = act_g.apply(g, &hh, clip)?;
    Ok(gru_update(g, &z, &hh, h_prev)?)
}

/// `(1 - z) ⊙ hh + z ⊙ h`, as `hh + z ⊙ (h - hh)`.
fn gru_update(g: &mut Graph, z: &Lazy, hh: &Lazy, h: &Lazy) -> GResult {
    let diff = g.binary(BinaryOp::Sub, h, hh)?;
    let zd = mul(g, z, &diff)?;
    add(g, hh, &zd)
}

/// One LSTM step: the next hidden and cell states from the step's input projection `xw`
/// (B, 4H, gates i, o, f, c) and the previous states (B, H).
#[allow(clippy::too_many_arguments)]
fn lstm_step(
    ctx: &mut Ctx,
    body: &mut Body,
    attrs: &Attrs,
    dims: &Dims,
    d: usize,
    xw: &Lazy,
    h_prev: &Lazy,
    c_prev: &Lazy,
) -> Result<(Lazy, Lazy), OpError> {
    let h = dims.hidden;
    let acts = &attrs.activations[d];
    let (f, act_g, act_h) = (acts[0], acts[1], acts[2]);
    let clip = attrs.clip;
    let r = direction_param(ctx, R, d, (0, 4 * h * h), &[4 * h, h])?;
    let r = body.param("R", r)?;
    // The peepholes (i, o, f), unless omitted or known to be all 0.
    let peepholes = ctx.has(P) && ctx.uniform(P) != Some(0.0);
    let mut peep = Vec::new();
    if peepholes {
        for (k, name) in ["Pi", "Po", "Pf"].into_iter().enumerate() {
            let p = direction_param(ctx, P, d, (k * h, (k + 1) * h), &[h])?;
            peep.push(body.param(name, p)?);
        }
    }
    let g = &mut body.g;
    let gates = times_transposed(g, h_prev, &r)?;
    let gates = add(g, xw, &gates)?;
    let gate = |k: usize| columns(&gates, k * h, (k + 1) * h);
    let (gi, go, gf, gc) = (gate(0)?, gate(1)?, gate(2)?, gate(3)?);
    let with_peephole = |g: &mut Graph, x: &Lazy, k: usize, c: &Lazy| -> GResult {
        match peep.get(k) {
            Some(p) => {
                let pc = mul(g, p, c)?;
                add(g, x, &pc)
            }
            None => Ok(x.clone()),
        }
    };
    let gi = with_peephole(g, &gi, 0, c_prev)?;
    let i = f.apply(g, &gi, clip)?;
    let forget = match attrs.input_forget {
        // Coupled gates: what is let in is forgotten.
        true => {
            let one = g.scalar_like(&i, 1.0);
            g.binary(BinaryOp::Sub, &one, &i)?
        }
        false => {
            let gf = with_peephole(g, &gf, 2, c_prev)?;
            f.apply(g, &gf, clip)?
        }
    };
    let cc = act_g.apply(g, &gc, clip)?;
    let kept = mul(g, &forget, c_prev)?;
    let added = mul(g, &i, &cc)?;
    let c_next = add(g, &kept, &added)?;
    let go = with_peephole(g, &go, 1, &c_next)?;
    let o = f.apply(g, &go, clip)?;
    let hc = act_h.apply(g, &c_next, clip)?;
    let h_next = mul(g, &o, &hc)?;
    Ok((h_next, c_next))
}

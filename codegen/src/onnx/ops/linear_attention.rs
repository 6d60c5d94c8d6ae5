//! LinearAttention (opset 27): attention whose memory is a recurrent state per key/value head,
//! `S` of shape (d_k, d_v), updated once per token. The tokens run as a counted loop
//! ([`Graph::repeat`]): the body is one token's update and output, the state stays in the
//! arena, and a prefill of many tokens costs no more kernels than a decode step of one.
//!
//! Update rules (`g` the decay in log space, `β` the update rate, `⊗` the outer product):
//! `linear` S = S + k ⊗ v; `gated` S = e^g S + k ⊗ v; `delta` S = S + β k ⊗ (v − Sᵀk);
//! `gated_delta` S = e^g S + β k ⊗ (v − (e^g S)ᵀ k). The output is `scale · qᵀ S` after the
//! update; a query head reads the state of key/value head `h / (q_num_heads / kv_num_heads)`.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::loops::{LoopBody, LoopInput, LoopResult};
use crate::graph::{Graph, Lazy};
use crate::onnx::Attributes;
use crate::ops::{BinaryOp, ReduceOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[("LinearAttention", linear_attention)];

type Out = Result<Vec<Value>, OpError>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    Linear,
    Gated,
    Delta,
    GatedDelta,
}

impl Rule {
    fn gated(self) -> bool {
        matches!(self, Rule::Gated | Rule::GatedDelta)
    }

    fn delta(self) -> bool {
        matches!(self, Rule::Delta | Rule::GatedDelta)
    }
}

/// Heads and sizes.
struct Dims {
    batch: usize,
    tokens: usize,
    q_heads: usize,
    kv_heads: usize,
    dk: usize,
    dv: usize,
}

impl Rule {
    fn of(a: &Attributes) -> Result<Rule, OpError> {
        Ok(
            match a.string_or("update_rule", "gated_delta".into())?.as_str() {
                "linear" => Rule::Linear,
                "gated" => Rule::Gated,
                "delta" => Rule::Delta,
                "gated_delta" => Rule::GatedDelta,
                other => {
                    return Err(invalid(format!(
                        "update_rule {other:?} (linear, gated, delta or gated_delta)"
                    )))
                }
            },
        )
    }
}

impl Dims {
    /// The dims of packed (batch, tokens, heads × size) queries, keys and values, checked
    /// against each other.
    fn of(q: &Lazy, k: &Lazy, v: &Lazy, q_heads: usize, kv_heads: usize) -> Result<Dims, OpError> {
        let packed = |x: &Lazy, what: &str, heads: usize| -> Result<usize, OpError> {
            match x.shape() {
                &[_, _, n] if heads > 0 && n % heads == 0 => Ok(n / heads),
                s => Err(invalid(format!(
                    "{what} {s:?} is not (batch, tokens, {heads} heads × size)"
                ))),
            }
        };
        if !q_heads.is_multiple_of(kv_heads) {
            return Err(invalid(format!(
                "q_num_heads {q_heads} is not a multiple of kv_num_heads {kv_heads}"
            )));
        }
        let dk = packed(q, "query", q_heads)?;
        let d = Dims {
            batch: q.shape()[0],
            tokens: q.shape()[1],
            q_heads,
            kv_heads,
            dk,
            dv: packed(v, "value", kv_heads)?,
        };
        if packed(k, "key", kv_heads)? != dk || k.shape()[..2] != q.shape()[..2] {
            return Err(invalid(format!(
                "key {:?} does not match query {:?}",
                k.shape(),
                q.shape()
            )));
        }
        if v.shape()[..2] != q.shape()[..2] {
            return Err(invalid(format!(
                "value {:?} does not match query {:?}",
                v.shape(),
                q.shape()
            )));
        }
        Ok(d)
    }
}

/// Per token: (batch, width) rows of a sequence operand, as (tokens, batch, width).
fn rows(x: &Lazy) -> Result<Lazy, OpError> {
    Ok(x.permute(&[1, 0, 2])?)
}

/// The rows of a per-token gate (decay, beta) the update rule needs, of one of `widths` per
/// token: its rows and its width.
fn gate_rows(
    x: Option<Lazy>,
    what: &str,
    q: &Lazy,
    widths: [usize; 2],
) -> Result<(Lazy, usize), OpError> {
    let x = x.ok_or_else(|| invalid(format!("update_rule needs the {what} input")))?;
    let w = x.shape()[2];
    if x.shape()[..2] != q.shape()[..2] || !widths.contains(&w) {
        return Err(invalid(format!(
            "{what} {:?} is not (batch, tokens, {} or {})",
            x.shape(),
            widths[0],
            widths[1]
        )));
    }
    Ok((rows(&x)?, w))
}

fn linear_attention(ctx: &mut Ctx) -> Out {
    let a = ctx.attrs();
    let rule = Rule::of(a)?;
    let heads = |name: &str| -> Result<usize, OpError> {
        let v = a.int(name)?;
        usize::try_from(v)
            .ok()
            .filter(|&h| h > 0)
            .ok_or_else(|| invalid(format!("{name} {v} is not positive")))
    };
    let (q_heads, kv_heads) = (heads("q_num_heads")?, heads("kv_num_heads")?);
    let scale = a.float_or("scale", 0.0)?;
    let (q, k, v) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    let d = Dims::of(&q, &k, &v, q_heads, kv_heads)?;
    // Half-precision inputs are computed in f32, state included, as the operator's function
    // does; the outputs are rounded back.
    let given = q.dtype;
    let dtype = match given == DType::F16 {
        true => DType::F32,
        false => given,
    };
    let (q, k, v) = (
        ctx.graph.cast(&q, dtype),
        ctx.graph.cast(&k, dtype),
        ctx.graph.cast(&v, dtype),
    );
    let state_shape = [d.batch, d.kv_heads, d.dk, d.dv];
    let past = match ctx.opt_tensor(3)? {
        Some(p) if p.shape() == state_shape => ctx.graph.cast(&p, dtype),
        Some(p) => {
            return Err(invalid(format!(
                "past_state {:?} is not {state_shape:?}",
                p.shape()
            )))
        }
        None => ctx.scalar_const(0.0, dtype, &state_shape),
    };
    let decay = ctx.opt_tensor(4)?.map(|x| ctx.graph.cast(&x, dtype));
    let beta = ctx.opt_tensor(5)?.map(|x| ctx.graph.cast(&x, dtype));
    let mut operands = vec![past, rows(&q)?, rows(&k)?, rows(&v)?];
    let mut gate = |x: Option<Lazy>, what: &str, widths| -> Result<Option<usize>, OpError> {
        let (r, w) = gate_rows(x, what, &q, widths)?;
        operands.push(r);
        Ok(Some(w))
    };
    let decay_width = match rule.gated() {
        true => gate(decay, "decay", [d.kv_heads, d.kv_heads * d.dk])?,
        false => None,
    };
    let beta_width = match rule.delta() {
        true => gate(beta, "beta", [d.kv_heads, 1])?,
        false => None,
    };
    let scale = match scale {
        0.0 => 1.0 / (d.dk as f64).sqrt(),
        s => f64::from(s),
    };
    let body = token_body(&d, dtype, decay_width, beta_width, scale)?;
    let [output, present] = run_tokens(ctx, d.tokens, body, &operands)?;
    let output = ctx.graph.cast(&output, given);
    let present = ctx.graph.cast(&present, given);
    Ok(vec![Value::Tensor(output), Value::Tensor(present)])
}

/// Runs the token `body` once per token over `operands` (the state, then per-token rows):
/// the output, as (batch, tokens, q_heads · d_v), and the last state.
fn run_tokens(
    ctx: &mut Ctx,
    tokens: usize,
    body: (Graph, Vec<Lazy>),
    operands: &[Lazy],
) -> Result<[Lazy; 2], OpError> {
    let inputs: Vec<LoopInput> = std::iter::once(LoopInput::State { init: 0, next: 0 })
        .chain((1..operands.len()).map(|o| LoopInput::Row {
            operand: o,
            reverse: false,
        }))
        .collect();
    let spec = LoopBody {
        count: tokens,
        graph: body.0,
        outputs: body.1,
        inputs,
        results: vec![
            LoopResult::Stacked {
                output: 1,
                reverse: false,
            },
            LoopResult::Final { input: 0 },
        ],
    };
    let results = ctx.graph.repeat(spec, operands)?;
    Ok([results[0].permute(&[1, 0, 2])?, results[1].clone()])
}

/// One token's body: inputs the state, then the token's q, k, v (and decay, beta) rows;
/// outputs the next state and the token's output row (batch, q_heads · d_v).
fn token_body(
    d: &Dims,
    dtype: DType,
    decay_width: Option<usize>,
    beta_width: Option<usize>,
    scale: f64,
) -> Result<(Graph, Vec<Lazy>), OpError> {
    let (b, hkv, dk, dv) = (d.batch, d.kv_heads, d.dk, d.dv);
    let group = d.q_heads / d.kv_heads;
    let mut g = Graph::new();
    let s = g.input("state", dtype, &[b, hkv, dk, dv]);
    let q = g.input("q", dtype, &[b, d.q_heads * dk]);
    let k = g.input("k", dtype, &[b, hkv * dk]);
    let v = g.input("v", dtype, &[b, hkv * dv]);
    let decay = decay_width.map(|w| g.input("decay", dtype, &[b, w]));
    let beta = beta_width.map(|w| g.input("beta", dtype, &[b, w]));
    let k_col = k.reshape(&[b, hkv, dk, 1])?;
    let v_row = v.reshape(&[b, hkv, 1, dv])?;
    // The decayed state e^g · S, a factor per key row (or per head).
    let s = match decay {
        Some(gl) => {
            let per = gl.shape()[1] / hkv;
            let e = g.exp(&gl)?;
            let e = e.reshape(&[b, hkv, per, 1])?;
            g.binary(BinaryOp::Mul, &s, &e)?
        }
        None => s,
    };
    let update = match beta {
        Some(beta) => {
            // β k ⊗ (v − Sᵀk): Sᵀk sums the key rows of S weighted by k.
            let sk = g.binary(BinaryOp::Mul, &s, &k_col)?;
            let sk = g.reduce(ReduceOp::Sum, &sk, &[2])?;
            let diff = g.binary(BinaryOp::Sub, &v_row, &sk)?;
            let outer = g.binary(BinaryOp::Mul, &k_col, &diff)?;
            let per = beta.shape()[1];
            let beta = beta.reshape(&[b, per, 1, 1])?;
            g.binary(BinaryOp::Mul, &outer, &beta)?
        }
        None => g.binary(BinaryOp::Mul, &k_col, &v_row)?,
    };
    let next = g.binary(BinaryOp::Add, &s, &update)?;
    // scale · qᵀ S per query head, each group of query heads on its key/value head's state.
    let q = q.reshape(&[b, hkv, group, dk, 1])?;
    let state = next.reshape(&[b, hkv, 1, dk, dv])?;
    let prod = g.binary(BinaryOp::Mul, &q, &state)?;
    let out = g.reduce(ReduceOp::Sum, &prod, &[3])?;
    let out = g.mul_scalar(&out, scale)?;
    let out = out.reshape(&[b, d.q_heads * dv])?;
    Ok((g, vec![next, out]))
}

//! Attention (opset 23): scaled dot-product attention over 3-D (batch, seq, heads · size) or
//! 4-D (batch, heads, seq, size) inputs, with optional mask, key/value cache, causal mask,
//! grouped key/value heads, soft-capping and padded key/value lengths.

use super::ctx::{dtype_of, invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::onnx::ElemType;
use crate::ops::{BinaryOp, ReduceOp, UnaryOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[("Attention", attention)];

type Out = Result<Vec<Value>, OpError>;

/// A 3-D (batch, seq, heads · size) tensor as 4-D (batch, heads, seq, size).
fn to_heads(x: &Lazy, heads: usize, what: &str) -> Result<Lazy, OpError> {
    let s = x.shape();
    if heads == 0 || !s[2].is_multiple_of(heads) {
        return Err(invalid(format!(
            "{what} hidden size {} is not a multiple of {heads} heads",
            s[2]
        )));
    }
    let (b, n, h) = (s[0], s[1], s[2]);
    Ok(x.reshape(&[b, n, heads, h / heads])?
        .permute(&[0, 2, 1, 3])?)
}

/// Where `keep` holds 0, else -inf, as `dtype`.
fn bias_from(g: &mut Graph, keep: &Lazy, dtype: DType) -> Result<Lazy, OpError> {
    let zero = g.constant(0.0, dtype, keep.shape());
    let ninf = g.constant(f64::NEG_INFINITY, dtype, keep.shape());
    Ok(g.where_(keep, &zero, &ninf)?)
}

/// Attention's attributes.
struct AttentionAttrs {
    is_causal: bool,
    /// `q_num_heads` and `kv_num_heads` (3-D inputs only).
    q_heads: i64,
    kv_heads: i64,
    scale: Option<f32>,
    softcap: f64,
    /// `qk_matmul_output_mode`: which scores the fourth output is (0 to 3).
    mode: i64,
    softmax_precision: Option<i64>,
}

impl AttentionAttrs {
    fn read(ctx: &Ctx) -> Result<Self, OpError> {
        let a = ctx.attrs();
        let is_causal = a.int_or("is_causal", 0)? != 0;
        let q_heads = a.int_or("q_num_heads", 0)?;
        let kv_heads = a.int_or("kv_num_heads", 0)?;
        let scale = a
            .get("scale")
            .map(|_| a.float_or("scale", 1.0))
            .transpose()?;
        let softcap = f64::from(a.float_or("softcap", 0.0)?);
        let mode = a.int_or("qk_matmul_output_mode", 0)?;
        let softmax_precision = a
            .get("softmax_precision")
            .map(|_| a.int_or("softmax_precision", 0))
            .transpose()?;
        if !(0..=3).contains(&mode) {
            return Err(invalid(format!(
                "qk_matmul_output_mode {mode} is not 0 to 3"
            )));
        }
        Ok(AttentionAttrs {
            is_causal,
            q_heads,
            kv_heads,
            scale,
            softcap,
            mode,
            softmax_precision,
        })
    }
}

/// The scores at each stage, for the optional fourth output, and the result.
struct Attended {
    y: Lazy,
    /// Q·Kᵀ, scaled and soft-capped.
    qk: Lazy,
    /// `qk` plus the bias.
    with_bias: Lazy,
    probs: Lazy,
}

fn attention(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(4)?;
    let attrs = AttentionAttrs::read(ctx)?;
    let q = ctx.tensor(0)?;
    let k = ctx.tensor(1)?;
    let v = ctx.tensor(2)?;
    let mask = ctx.opt_tensor(3)?;
    let past_k = ctx.opt_tensor(4)?;
    let past_v = ctx.opt_tensor(5)?;
    let nonpad = ctx.opt_tensor(6)?;
    let rank = q.shape().len();
    let (q, k, v) = as_heads(q, k, v, &attrs)?;
    let g = &mut *ctx.graph;
    let past_len = past_k
        .as_ref()
        .map_or(0, |p| p.shape().get(2).copied().unwrap_or(0));
    let (k, v) = with_past(g, k, v, past_k, past_v)?;
    let (present_k, present_v) = (k.clone(), v.clone());
    let (b, sq, skv, dtype) = (q.shape()[0], q.shape()[2], k.shape()[2], q.dtype);
    let mut bias = match mask {
        Some(m) => Some(mask_bias(g, m, skv, dtype)?),
        None => None,
    };
    if attrs.is_causal {
        let c = causal_bias(g, sq, skv, past_len, dtype)?;
        bias = Some(add_bias(g, bias, c)?);
    }
    if let Some(n) = nonpad {
        let p = padding_bias(g, &n, b, skv, dtype)?;
        bias = Some(add_bias(g, bias, p)?);
    }
    let (k, v) = repeat_kv_heads(k, v, q.shape()[1])?;
    let att = attend(g, &q, &k, &v, bias.as_ref(), &attrs)?;
    let y = match rank {
        3 => {
            let s = att.y.shape().to_vec();
            att.y
                .permute(&[0, 2, 1, 3])?
                .reshape(&[s[0], s[2], s[1] * s[3]])?
        }
        _ => att.y,
    };
    let mut outs = vec![Value::Tensor(y)];
    if ctx.wants(1) || ctx.wants(2) || ctx.wants(3) {
        outs.push(Value::Tensor(present_k));
        outs.push(Value::Tensor(present_v));
    }
    if ctx.wants(3) {
        let out = match attrs.mode {
            0 | 1 => att.qk,
            2 => att.with_bias,
            _ => att.probs,
        };
        outs.push(Value::Tensor(out));
    }
    Ok(outs)
}

/// Q, K and V as 4-D (batch, heads, seq, size), checked to agree.
fn as_heads(
    q: Lazy,
    k: Lazy,
    v: Lazy,
    attrs: &AttentionAttrs,
) -> Result<(Lazy, Lazy, Lazy), OpError> {
    let rank = q.shape().len();
    if !(rank == 3 || rank == 4) || k.shape().len() != rank || v.shape().len() != rank {
        return Err(invalid(format!(
            "Q {:?}, K {:?} and V {:?} must all be 3-D or all 4-D",
            q.shape(),
            k.shape(),
            v.shape()
        )));
    }
    let (q, k, v) = if rank == 3 {
        let to = |v: i64, what: &str| {
            usize::try_from(v)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| invalid(format!("3-D inputs need a positive {what}, not {v}")))
        };
        let qh = to(attrs.q_heads, "q_num_heads")?;
        let kvh = to(attrs.kv_heads, "kv_num_heads")?;
        (
            to_heads(&q, qh, "Q")?,
            to_heads(&k, kvh, "K")?,
            to_heads(&v, kvh, "V")?,
        )
    } else {
        (q, k, v)
    };
    let (b, dh, hkv) = (q.shape()[0], q.shape()[3], k.shape()[1]);
    if k.shape()[0] != b || v.shape()[0] != b || v.shape()[1] != hkv || k.shape()[3] != dh {
        return Err(invalid(format!(
            "Q {:?}, K {:?} and V {:?} do not match (as 4-D)",
            q.shape(),
            k.shape(),
            v.shape()
        )));
    }
    Ok((q, k, v))
}

/// The present key and value: the cached past ones (if any) followed by `k` and `v`.
fn with_past(
    g: &mut Graph,
    mut k: Lazy,
    mut v: Lazy,
    past_k: Option<Lazy>,
    past_v: Option<Lazy>,
) -> Result<(Lazy, Lazy), OpError> {
    if let Some(p) = past_k {
        k = g.concat(&[p, k], 2)?;
    }
    if let Some(p) = past_v {
        v = g.concat(&[p, v], 2)?;
    }
    if v.shape()[2] != k.shape()[2] {
        return Err(invalid(format!(
            "present key {:?} and value {:?} lengths differ",
            k.shape(),
            v.shape()
        )));
    }
    Ok((k, v))
}

/// `attn_mask` as an additive bias of `dtype` (a boolean mask: 0 or -inf), padded with -inf
/// to the `skv` keys.
fn mask_bias(g: &mut Graph, m: Lazy, skv: usize, dtype: DType) -> Result<Lazy, OpError> {
    let ms = m.shape().to_vec();
    let last = *ms.last().ok_or_else(|| invalid("attn_mask is a scalar"))?;
    if last > skv {
        return Err(invalid(format!(
            "attn_mask {ms:?} is longer than the {skv} keys"
        )));
    }
    let m = if m.dtype == DType::BOOL {
        bias_from(g, &m, dtype)?
    } else if m.dtype != dtype {
        return Err(invalid(format!("attn_mask is {}, Q is {dtype}", m.dtype)));
    } else {
        m
    };
    if last < skv {
        let mut arg = vec![(0, 0); ms.len()];
        arg[ms.len() - 1] = (0, skv - last);
        Ok(g.pad_value(&m, &arg, f64::NEG_INFINITY)?)
    } else {
        Ok(m)
    }
}

/// The causal mask as a (sq, skv) bias: query i sees keys up to `past_len + i`.
fn causal_bias(
    g: &mut Graph,
    sq: usize,
    skv: usize,
    past_len: usize,
    dtype: DType,
) -> Result<Lazy, OpError> {
    let rows = g.arange(sq, DType::I64).reshape(&[sq, 1])?;
    let rows = g.add_scalar(&rows, past_len as f64)?;
    let cols = g.arange(skv, DType::I64).reshape(&[1, skv])?;
    let rows = rows.expand(&[sq, skv])?;
    let cols = cols.expand(&[sq, skv])?;
    let keep = g.le(&cols, &rows)?;
    bias_from(g, &keep, dtype)
}

/// `nonpad_kv_seqlen` as a (b, 1, 1, skv) bias: batch i sees its first `n[i]` keys.
fn padding_bias(
    g: &mut Graph,
    n: &Lazy,
    b: usize,
    skv: usize,
    dtype: DType,
) -> Result<Lazy, OpError> {
    if n.shape() != [b] {
        return Err(invalid(format!(
            "nonpad_kv_seqlen {:?} must be ({b})",
            n.shape()
        )));
    }
    let n = g.cast(n, DType::I64).reshape(&[b, 1, 1, 1])?;
    let n = n.expand(&[b, 1, 1, skv])?;
    let cols = g.arange(skv, DType::I64).reshape(&[1, 1, 1, skv])?;
    let cols = cols.expand(&[b, 1, 1, skv])?;
    let keep = g.lt(&cols, &n)?;
    bias_from(g, &keep, dtype)
}

/// `bias + more`, or `more` where there is no bias yet.
fn add_bias(g: &mut Graph, bias: Option<Lazy>, more: Lazy) -> Result<Lazy, OpError> {
    match bias {
        Some(m) => Ok(g.binary(BinaryOp::Add, &m, &more)?),
        None => Ok(more),
    }
}

/// Grouped heads: K and V with each head repeated so that query head h reads key/value head
/// h / (hq / hkv).
fn repeat_kv_heads(k: Lazy, v: Lazy, hq: usize) -> Result<(Lazy, Lazy), OpError> {
    let hkv = k.shape()[1];
    if hq == hkv {
        return Ok((k, v));
    }
    if hkv == 0 || !hq.is_multiple_of(hkv) {
        return Err(invalid(format!(
            "{hq} query heads are not a multiple of {hkv} key/value heads"
        )));
    }
    let reps = hq / hkv;
    let rep = |x: &Lazy| -> Result<Lazy, OpError> {
        let s = x.shape().to_vec();
        Ok(x.reshape(&[s[0], s[1], 1, s[2], s[3]])?
            .expand(&[s[0], s[1], reps, s[2], s[3]])?
            .reshape(&[s[0], s[1] * reps, s[2], s[3]])?)
    };
    Ok((rep(&k)?, rep(&v)?))
}

/// softmax(scale · Q·Kᵀ (soft-capped) + bias) · V, over 4-D heads.
fn attend(
    g: &mut Graph,
    q: &Lazy,
    k: &Lazy,
    v: &Lazy,
    bias: Option<&Lazy>,
    attrs: &AttentionAttrs,
) -> Result<Attended, OpError> {
    let scale = match attrs.scale {
        Some(s) => f64::from(s),
        None => 1.0 / (q.shape()[3] as f64).sqrt(),
    };
    let root = scale.sqrt();
    let qs = g.mul_scalar(q, root)?;
    let ks = g.mul_scalar(k, root)?;
    let kt = ks.permute(&[0, 1, 3, 2])?;
    let mut qk = g.matmul(&qs, &kt)?;
    let softcap = attrs.softcap;
    if softcap > 0.0 {
        let t = g.mul_scalar(&qk, 1.0 / softcap)?;
        let t = g.tanh(&t)?;
        qk = g.mul_scalar(&t, softcap)?;
    }
    let with_bias = match bias {
        Some(m) => g.binary(BinaryOp::Add, &qk, m)?,
        None => qk.clone(),
    };
    let soft_in = match attrs.softmax_precision {
        Some(code) => {
            let t = dtype_of(ElemType::from_code(code as i32), "softmax_precision")?;
            g.cast(&with_bias, t)
        }
        None => with_bias.clone(),
    };
    let probs = softmax_last(g, &soft_in)?;
    let probs = g.cast(&probs, q.dtype);
    let y = g.matmul(&probs, v)?;
    Ok(Attended {
        y,
        qk,
        with_bias,
        probs,
    })
}

/// Softmax over the last axis.
fn softmax_last(g: &mut Graph, x: &Lazy) -> Result<Lazy, OpError> {
    let ax = x.shape().len() - 1;
    let m = g.reduce(ReduceOp::Max, x, &[ax])?;
    let d = g.binary(BinaryOp::Sub, x, &m)?;
    let e = g.exp(&d)?;
    let s = g.reduce(ReduceOp::Sum, &e, &[ax])?;
    let r = g.unary(UnaryOp::Recip, &s)?;
    Ok(g.binary(BinaryOp::Mul, &e, &r)?)
}

//! Attention (opset 23): scaled dot-product attention over 3-D (batch, seq, heads · size) or
//! 4-D (batch, heads, seq, size) inputs, with optional mask, key/value cache, causal mask,
//! grouped key/value heads, soft-capping and padded key/value lengths; RotaryEmbedding.

use super::ctx::{dtype_of, invalid, Ctx, OpError, Value};
use super::Builder;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::onnx::ElemType;
use crate::ops::{BinaryOp, ReduceOp, UnaryOp};

pub(super) const OPS: &[(&str, Builder)] = &[
    ("Attention", attention),
    ("RotaryEmbedding", rotary_embedding),
];

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

fn attention(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(4)?;
    let a = ctx.attrs();
    let is_causal = a.int_or("is_causal", 0)? != 0;
    let q_heads_attr = a.int_or("q_num_heads", 0)?;
    let kv_heads_attr = a.int_or("kv_num_heads", 0)?;
    let scale_attr = a
        .get("scale")
        .map(|_| a.float_or("scale", 1.0))
        .transpose()?;
    let softcap = f64::from(a.float_or("softcap", 0.0)?);
    let mode = a.int_or("qk_matmul_output_mode", 0)?;
    let precision = a
        .get("softmax_precision")
        .map(|_| a.int_or("softmax_precision", 0))
        .transpose()?;
    if !(0..=3).contains(&mode) {
        return Err(invalid(format!(
            "qk_matmul_output_mode {mode} is not 0 to 3"
        )));
    }
    let mut q = ctx.tensor(0)?;
    let mut k = ctx.tensor(1)?;
    let mut v = ctx.tensor(2)?;
    let mask = ctx.opt_tensor(3)?;
    let past_k = ctx.opt_tensor(4)?;
    let past_v = ctx.opt_tensor(5)?;
    let nonpad = ctx.opt_tensor(6)?;
    let dtype = q.dtype;
    let rank = q.shape().len();
    if !(rank == 3 || rank == 4) || k.shape().len() != rank || v.shape().len() != rank {
        return Err(invalid(format!(
            "Q {:?}, K {:?} and V {:?} must all be 3-D or all 4-D",
            q.shape(),
            k.shape(),
            v.shape()
        )));
    }
    if rank == 3 {
        let to = |v: i64, what: &str| {
            usize::try_from(v)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| invalid(format!("3-D inputs need a positive {what}, not {v}")))
        };
        let qh = to(q_heads_attr, "q_num_heads")?;
        let kvh = to(kv_heads_attr, "kv_num_heads")?;
        q = to_heads(&q, qh, "Q")?;
        k = to_heads(&k, kvh, "K")?;
        v = to_heads(&v, kvh, "V")?;
    }
    let (b, hq, sq, dh) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let hkv = k.shape()[1];
    if k.shape()[0] != b || v.shape()[0] != b || v.shape()[1] != hkv || k.shape()[3] != dh {
        return Err(invalid(format!(
            "Q {:?}, K {:?} and V {:?} do not match (as 4-D)",
            q.shape(),
            k.shape(),
            v.shape()
        )));
    }
    let g = &mut *ctx.graph;
    let past_len = past_k
        .as_ref()
        .map_or(0, |p| p.shape().get(2).copied().unwrap_or(0));
    if let Some(p) = &past_k {
        k = g.concat(&[p.clone(), k.clone()], 2)?;
    }
    if let Some(p) = &past_v {
        v = g.concat(&[p.clone(), v.clone()], 2)?;
    }
    let (present_k, present_v) = (k.clone(), v.clone());
    let skv = k.shape()[2];
    if v.shape()[2] != skv {
        return Err(invalid(format!(
            "present key {:?} and value {:?} lengths differ",
            k.shape(),
            v.shape()
        )));
    }

    // The additive bias: mask (padded to the key length), causal mask, key padding.
    let mut bias: Option<Lazy> = None;
    if let Some(m) = mask {
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
        let m = if last < skv {
            let mut arg = vec![(0, 0); ms.len()];
            arg[ms.len() - 1] = (0, skv - last);
            g.pad_value(&m, &arg, f64::NEG_INFINITY)?
        } else {
            m
        };
        bias = Some(m);
    }
    if is_causal {
        // Query i sees keys up to past_len + i.
        let rows = g.arange(sq, DType::I64).reshape(&[sq, 1])?;
        let rows = g.add_scalar(&rows, past_len as f64)?;
        let cols = g.arange(skv, DType::I64).reshape(&[1, skv])?;
        let rows = rows.expand(&[sq, skv])?;
        let cols = cols.expand(&[sq, skv])?;
        let keep = g.le(&cols, &rows)?;
        let c = bias_from(g, &keep, dtype)?;
        bias = Some(match bias {
            Some(m) => g.binary(BinaryOp::Add, &m, &c)?,
            None => c,
        });
    }
    if let Some(n) = nonpad {
        if n.shape() != [b] {
            return Err(invalid(format!(
                "nonpad_kv_seqlen {:?} must be ({b})",
                n.shape()
            )));
        }
        let n = g.cast(&n, DType::I64).reshape(&[b, 1, 1, 1])?;
        let n = n.expand(&[b, 1, 1, skv])?;
        let cols = g.arange(skv, DType::I64).reshape(&[1, 1, 1, skv])?;
        let cols = cols.expand(&[b, 1, 1, skv])?;
        let keep = g.lt(&cols, &n)?;
        let p = bias_from(g, &keep, dtype)?;
        bias = Some(match bias {
            Some(m) => g.binary(BinaryOp::Add, &m, &p)?,
            None => p,
        });
    }

    // Grouped heads: query head h reads key/value head h / (hq / hkv).
    if hq != hkv {
        if hkv == 0 || hq % hkv != 0 {
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
        k = rep(&k)?;
        v = rep(&v)?;
    }

    let scale = match scale_attr {
        Some(s) => f64::from(s),
        None => 1.0 / (dh as f64).sqrt(),
    };
    let root = scale.sqrt();
    let qs = g.mul_scalar(&q, root)?;
    let ks = g.mul_scalar(&k, root)?;
    let kt = ks.permute(&[0, 1, 3, 2])?;
    let mut qk = g.matmul(&qs, &kt)?;
    if softcap > 0.0 {
        let t = g.mul_scalar(&qk, 1.0 / softcap)?;
        let t = g.tanh(&t)?;
        qk = g.mul_scalar(&t, softcap)?;
    }
    let with_bias = match &bias {
        Some(m) => g.binary(BinaryOp::Add, &qk, m)?,
        None => qk.clone(),
    };
    let soft_in = match precision {
        Some(code) => {
            let t = dtype_of(ElemType::from_code(code as i32), "softmax_precision")?;
            g.cast(&with_bias, t)
        }
        None => with_bias.clone(),
    };
    let probs = softmax_last(g, &soft_in)?;
    let probs = g.cast(&probs, dtype);
    let mut y = g.matmul(&probs, &v)?;
    if rank == 3 {
        let s = y.shape().to_vec();
        y = y
            .permute(&[0, 2, 1, 3])?
            .reshape(&[s[0], s[2], s[1] * s[3]])?;
    }
    let mut outs = vec![Value::Tensor(y)];
    if ctx.wants(1) || ctx.wants(2) || ctx.wants(3) {
        outs.push(Value::Tensor(present_k));
        outs.push(Value::Tensor(present_v));
    }
    if ctx.wants(3) {
        let out = match mode {
            0 | 1 => qk,
            2 => with_bias,
            _ => probs,
        };
        outs.push(Value::Tensor(out));
    }
    Ok(outs)
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

/// Rotates pairs of features by the angles of `cos_cache` and `sin_cache` at each position:
/// halves (or interleaved pairs) of the first `rotary_embedding_dim` features of each head.
fn rotary_embedding(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let interleaved = ctx.attrs().int_or("interleaved", 0)? != 0;
    let rot_dim = ctx.attrs().int_or("rotary_embedding_dim", 0)?;
    let heads = ctx.attrs().int_or("num_heads", 0)?;
    let x = ctx.tensor(0)?;
    let mut cos = ctx.tensor(1)?;
    let mut sin = ctx.tensor(2)?;
    let pos = ctx.opt_tensor(3)?;
    let shape = x.shape().to_vec();
    // (batch, seq, heads, size)
    let x4 = match shape.len() {
        4 => x.permute(&[0, 2, 1, 3])?,
        3 => {
            let h = usize::try_from(heads)
                .ok()
                .filter(|&h| h > 0 && shape[2] % h == 0)
                .ok_or_else(|| {
                    invalid(format!(
                        "3-D input {shape:?} needs num_heads dividing {}, not {heads}",
                        shape[2]
                    ))
                })?;
            x.reshape(&[shape[0], shape[1], h, shape[2] / h])?
        }
        _ => return Err(invalid(format!("input {shape:?} is not 3-D or 4-D"))),
    };
    let s4 = x4.shape().to_vec();
    let (b, sq, d) = (s4[0], s4[1], s4[3]);
    let rd = if rot_dim == 0 {
        d
    } else {
        super::ctx::to_usize(rot_dim, "rotary_embedding_dim")?
    };
    if rd > d || rd % 2 != 0 {
        return Err(invalid(format!(
            "rotary_embedding_dim {rd} must be even and at most the head size {d}"
        )));
    }
    let half = rd / 2;
    let g = &mut *ctx.graph;
    if let Some(p) = pos {
        if p.shape() != [b, sq] {
            return Err(invalid(format!(
                "position_ids {:?} must be ({b}, {sq})",
                p.shape()
            )));
        }
        let rows = |c: &Lazy| c.shape().get(1).copied().unwrap_or(0);
        let (hc, hs) = (rows(&cos), rows(&sin));
        cos = super::gather::gather_one_hot(g, &cos, 0, &p)?.reshape(&[b, sq, hc])?;
        sin = super::gather::gather_one_hot(g, &sin, 0, &p)?.reshape(&[b, sq, hs])?;
    }
    if cos.shape() != [b, sq, half] || sin.shape() != [b, sq, half] {
        return Err(invalid(format!(
            "cos {:?} and sin {:?} caches must be ({b}, {sq}, {half})",
            cos.shape(),
            sin.shape()
        )));
    }
    let cos = cos.reshape(&[b, sq, 1, half])?;
    let sin = sin.reshape(&[b, sq, 1, half])?;
    let last = |lo: usize, hi: usize| -> Result<Lazy, OpError> {
        let mut arg: Vec<(usize, usize)> = s4.iter().map(|&v| (0, v)).collect();
        arg[3] = (lo, hi);
        Ok(x4.shrink(&arg)?)
    };
    let rot = last(0, rd)?;
    let (x1, x2) = if interleaved {
        let pairs = rot.reshape(&[b, sq, s4[2], half, 2])?;
        let pick = |k: usize| -> Result<Lazy, OpError> {
            Ok(pairs
                .shrink(&[(0, b), (0, sq), (0, s4[2]), (0, half), (k, k + 1)])?
                .reshape(&[b, sq, s4[2], half])?)
        };
        (pick(0)?, pick(1)?)
    } else {
        (last(0, half)?, last(half, rd)?)
    };
    let c1 = g.binary(BinaryOp::Mul, &cos, &x1)?;
    let s2 = g.binary(BinaryOp::Mul, &sin, &x2)?;
    let real = g.binary(BinaryOp::Sub, &c1, &s2)?;
    let s1 = g.binary(BinaryOp::Mul, &sin, &x1)?;
    let c2 = g.binary(BinaryOp::Mul, &cos, &x2)?;
    let imag = g.binary(BinaryOp::Add, &s1, &c2)?;
    let rotated = if interleaved {
        let r = real.reshape(&[b, sq, s4[2], half, 1])?;
        let i = imag.reshape(&[b, sq, s4[2], half, 1])?;
        g.concat(&[r, i], 4)?.reshape(&[b, sq, s4[2], rd])?
    } else {
        g.concat(&[real, imag], 3)?
    };
    let y = if rd < d {
        let rest = last(rd, d)?;
        g.concat(&[rotated, rest], 3)?
    } else {
        rotated
    };
    let y = match shape.len() {
        4 => y.permute(&[0, 2, 1, 3])?,
        _ => y.reshape(&shape)?,
    };
    Ok(vec![Value::Tensor(y)])
}

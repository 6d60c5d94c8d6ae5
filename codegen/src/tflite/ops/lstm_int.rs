//! `UNIDIRECTIONAL_SEQUENCE_LSTM` on int8, TFLM's integer kernel: int8 input, hidden state and
//! output, int8 weights (zero point 0), int32 biases, an int16 cell state whose scale is a
//! power of two.
//!
//! Each gate's two products are TFLM's int8 → int16 fully connected layers onto the gate
//! scale 2^-12 (requantized, saturated to int16) and added with saturation; the input side
//! (with the bias) is computed for every step before the loop. The gates' sigmoid and tanh are
//! TFLM's int16 table functions: the input times 3, its magnitude split into a table index and
//! a remainder that interpolates between two entries of a 256-entry sigmoid table (Q0.16 at
//! `i / 24`), the sign folded back, Q0.15 out. The cell and hidden updates are TFLM's
//! element-wise int16 products, each requantized by its scale ratio and saturated.

use super::sigmoid_table::SIGMOID_Q16;
use super::{Ctx, OpError};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{Multipliers, QuantMultiplier};
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;

type R = Result<Lazy, GraphError>;

/// The gate pre-activations' scale, 2^-12 (Q3.12).
const GATE_SCALE: f64 = 1.0 / 4096.0;
/// The gate outputs' scale, 2^-15 (Q0.15).
const GATE_OUT_SCALE: f64 = 1.0 / 32768.0;

/// The quantization of an int8 LSTM: multipliers of the gates' two products, the state's
/// zero points, the element-wise products' multipliers and the cell's scale and clip.
pub(super) struct IntLstm {
    pub input_fc: [QuantMultiplier; 4],
    pub recurrent_fc: [QuantMultiplier; 4],
    pub zp_in: i32,
    pub zp_h: i32,
    pub forget_cell: QuantMultiplier,
    pub input_cell: QuantMultiplier,
    pub output_hidden: QuantMultiplier,
    pub cell_power: i32,
    pub cell_clip: Option<i64>,
}

fn scale_of(ctx: &Ctx, i: usize) -> Result<(f32, i32), OpError> {
    let t = ctx.info(i)?;
    let q = ctx.quant(t)?;
    let s = q
        .scale
        .first()
        .copied()
        .filter(|s| *s > 0.0)
        .ok_or_else(|| OpError::Invalid(format!("LSTM tensor {:?} has no scale", t.name)))?;
    Ok((s, q.zero_point()))
}

/// Reads and checks the quantization of TFLM's int8 kernel.
pub(super) fn params(ctx: &Ctx, cell_clip: f32) -> Result<IntLstm, OpError> {
    let ty = |i: usize| -> Result<Scalar, OpError> { Ok(ctx.info(i)?.dtype) };
    let weights_ok = (1..=8).all(|i| ty(i).ok() == Some(Scalar::I8));
    let bias_ok = (12..=15).all(|i| ty(i).ok() == Some(Scalar::I32));
    if !weights_ok || !bias_ok || ty(18)? != Scalar::I8 || ty(19)? != Scalar::I16 {
        return Err(OpError::Unsupported(format!(
            "UNIDIRECTIONAL_SEQUENCE_LSTM on int8 with {} weights, {} biases, {} hidden and {} \
             cell states (TFLM's kernel takes int8, int32, int8, int16)",
            ty(2)?,
            ty(13)?,
            ty(18)?,
            ty(19)?
        )));
    }
    let (s_in, zp_in) = scale_of(ctx, 0)?;
    let (s_h, zp_h) = scale_of(ctx, 18)?;
    let (s_c, _) = scale_of(ctx, 19)?;
    let mut input_fc = [QuantMultiplier::new(0.0); 4];
    let mut recurrent_fc = input_fc;
    for k in 0..4 {
        let (s_w, zp_w) = scale_of(ctx, 1 + k)?;
        let (s_r, zp_r) = scale_of(ctx, 5 + k)?;
        if zp_w != 0 || zp_r != 0 {
            return Err(OpError::Unsupported(
                "UNIDIRECTIONAL_SEQUENCE_LSTM on int8 with weights of a nonzero zero point".into(),
            ));
        }
        input_fc[k] = QuantMultiplier::new(f64::from(s_in * s_w) / GATE_SCALE);
        recurrent_fc[k] = QuantMultiplier::new(f64::from(s_h * s_r) / GATE_SCALE);
    }
    let s_c64 = f64::from(s_c);
    let cell_power = s_c64.log2().round() as i32;
    if !(-30..=0).contains(&cell_power) {
        return Err(OpError::Unsupported(format!(
            "UNIDIRECTIONAL_SEQUENCE_LSTM on int8 with a cell state scale of {s_c} (2^-30 to 1 \
             are)"
        )));
    }
    let clip = (f64::from(cell_clip) / s_c64).clamp(-32768.0, 32767.0) as i64;
    Ok(IntLstm {
        input_fc,
        recurrent_fc,
        zp_in,
        zp_h,
        forget_cell: QuantMultiplier::new(GATE_OUT_SCALE * s_c64 / s_c64),
        input_cell: QuantMultiplier::new(GATE_OUT_SCALE * GATE_OUT_SCALE / s_c64),
        output_hidden: QuantMultiplier::new(GATE_OUT_SCALE * GATE_OUT_SCALE / f64::from(s_h)),
        cell_power,
        cell_clip: (cell_clip > 0.0).then_some(clip),
    })
}

/// `clamp(requantize(acc) + zp, lo, hi)` of an `i32` accumulator, as `i32`.
fn requant(g: &mut Graph, acc: &Lazy, m: QuantMultiplier, zp: i32, lo: i64, hi: i64) -> R {
    let r = g.requantize(acc, &Multipliers::Tensor(m))?;
    let r = g.int_scalar(BinaryOp::Add, &r, i64::from(zp))?;
    g.clamp_int(&r, lo, hi)
}

/// TFLM's int8 → int16 fully connected layer onto the gate scale: `Σ w · (x − zp)` (+ bias),
/// requantized, saturated; `i32` out. `x`: `[.., k]` int8, `w`: `[n, k]` int8.
pub(super) fn gate_fc(
    g: &mut Graph,
    x: &Lazy,
    zp: i32,
    w: &Lazy,
    bias: Option<&Lazy>,
    m: QuantMultiplier,
) -> R {
    let xi = g.cast(x, DType::I32);
    let xi = g.int_scalar(BinaryOp::Sub, &xi, i64::from(zp))?;
    let wt = w.permute(&[1, 0])?;
    let mut acc = g.matmul_in(&xi, &wt, Some(DType::I32))?;
    if let Some(b) = bias {
        let b = g.cast(b, DType::I32);
        acc = g.binary(BinaryOp::Add, &acc, &b)?;
    }
    requant(g, &acc, m, 0, -32768, 32767)
}

/// The sigmoid table as a weight of 257 entries (the last repeated), read at `i` and `i + 1`.
pub(super) fn table(g: &mut Graph) -> R {
    let values: Vec<i64> = (0..257)
        .map(|i| i64::from(SIGMOID_Q16[i.min(255)]))
        .collect();
    let t = Tensor::from_i64(Scalar::I32, vec![257], &values).map_err(|e| GraphError::Invalid {
        op: "lstm",
        reason: e.to_string(),
    })?;
    Ok(g.weight("sigmoid_table", t))
}

/// `T[idx]` and `T[idx + 1]` of the sigmoid table for `idx` in `0..255`, by a one-hot sum.
fn table_pair(g: &mut Graph, table: &Lazy, idx: &Lazy) -> Result<(Lazy, Lazy), GraphError> {
    let rank = idx.shape().len();
    let mut shape = idx.shape().to_vec();
    shape.push(256);
    let row = [vec![1; rank], vec![256]].concat();
    let lanes = g.arange(256, DType::I32).reshape(&row)?.expand(&shape)?;
    let mut wide = idx.shape().to_vec();
    wide.push(1);
    let at = idx.reshape(&wide)?.expand(&shape)?;
    let hit = g.eq(&at, &lanes)?;
    let zero = g.int_const(0, DType::I32, &shape);
    let mut out = Vec::new();
    for shift in [0, 1] {
        let t = table.shrink(&[(shift, shift + 256)])?;
        let t = t.reshape(&row)?.expand(&shape)?;
        let picked = g.where_(&hit, &t, &zero)?;
        let sum = g.reduce(ReduceOp::Sum, &picked, &[rank])?;
        out.push(sum.reshape(idx.shape())?);
    }
    let b = out.pop().expect("two reads");
    let a = out.pop().expect("two reads");
    Ok((a, b))
}

/// The interpolated table value of `|v|` with `frac` remainder bits (per element):
/// `(T[h] << frac) + rem · (T[h + 1] − T[h])`, or `sat` past the table.
fn interpolate(g: &mut Graph, table: &Lazy, v: &Lazy, frac: &Lazy, sat: &Lazy) -> R {
    let zero = g.int_const(0, DType::I32, v.shape());
    let one = g.int_const(1, DType::I32, v.shape());
    let neg = g.neg(v)?;
    let negative = g.lt(v, &zero)?;
    let a = g.where_(&negative, &neg, v)?;
    let h = g.binary(BinaryOp::Shr, &a, frac)?;
    let pot = g.binary(BinaryOp::Shl, &one, frac)?;
    let mask = g.binary(BinaryOp::Sub, &pot, &one)?;
    let rem = g.binary(BinaryOp::And, &a, &mask)?;
    let idx = g.clamp_int(&h, 0, 254)?;
    let (ta, tb) = table_pair(g, table, &idx)?;
    let base = g.binary(BinaryOp::Shl, &ta, frac)?;
    let step = g.binary(BinaryOp::Sub, &tb, &ta)?;
    let step = g.binary(BinaryOp::Mul, &rem, &step)?;
    let r = g.binary(BinaryOp::Add, &base, &step)?;
    let limit = g.int_const(255, DType::I32, v.shape());
    let past = g.le(&limit, &h)?;
    g.where_(&past, sat, &r)
}

/// TFLM's int16 sigmoid (`tanh == false`) or tanh of the scaled input `v`: the sign folded
/// back into the interpolated magnitude `r`, Q0.15 out.
fn fold(g: &mut Graph, v: &Lazy, r: &Lazy, tanh: bool) -> R {
    let zero = g.int_const(0, DType::I32, v.shape());
    let negative = g.lt(v, &zero)?;
    let flipped = g.neg(r)?;
    let (pos, neg, shift) = match tanh {
        false => (1 << 9, (1 << 25) + (1 << 9) - 1, 10),
        true => ((1 << 7) - (1 << 23), (1 << 23) + (1 << 7) - 1, 8),
    };
    let pos = g.int_scalar(BinaryOp::Add, r, pos)?;
    let neg = g.int_scalar(BinaryOp::Add, &flipped, neg)?;
    let r = g.where_(&negative, &neg, &pos)?;
    g.int_scalar(BinaryOp::Shr, &r, shift)
}

/// `[batch, 4 · hidden]` of `cell` in the cell gate's block and `other` in the others.
fn per_gate(g: &mut Graph, shape: &[usize], cell: i64, other: i64) -> R {
    let (batch, hidden) = (shape[0], shape[1] / 4);
    let parts: Vec<Lazy> = (0..4)
        .map(|k| {
            g.int_const(
                if k == 2 { cell } else { other },
                DType::I32,
                &[batch, hidden],
            )
        })
        .collect();
    g.concat(&parts, 1)
}

/// The four gates' activations of their Q3.12 pre-activations `[batch, 4 · hidden]`: TFLM's
/// int16 sigmoid, tanh for the cell gate (both read the input times 3), with one table read.
fn gate_activations(g: &mut Graph, table: &Lazy, pre: &Lazy) -> R {
    let shape = pre.shape().to_vec();
    let v = g.int_scalar(BinaryOp::Mul, pre, 3)?;
    let frac = per_gate(g, &shape, 8, 9)?;
    let sat = per_gate(g, &shape, 0xFFFF << 8, 0x7FFF << 10)?;
    let r = interpolate(g, table, &v, &frac, &sat)?;
    let s = fold(g, &v, &r, false)?;
    let t = fold(g, &v, &r, true)?;
    let is_cell = per_gate(g, &shape, 1, 0)?;
    let zero = g.int_const(0, DType::I32, &shape);
    let is_cell = g.binary(BinaryOp::CmpNe, &is_cell, &zero)?;
    g.where_(&is_cell, &t, &s)
}

/// TFLM's int16 tanh of the cell state of scale `2^power`: the input scaled to Q3.12 (times
/// 3, as TFLM's tanh reads it), Q0.15 out.
fn cell_tanh(g: &mut Graph, table: &Lazy, c: &Lazy, power: i32) -> R {
    let shift = 15 + i64::from(power) - 3;
    let v = if shift >= 0 {
        g.int_scalar(BinaryOp::Mul, c, 3 << shift)?
    } else {
        let s = -shift;
        let v = g.int_scalar(BinaryOp::Mul, c, 3)?;
        let v = g.int_scalar(BinaryOp::Add, &v, 1 << (s - 1))?;
        g.int_scalar(BinaryOp::Shr, &v, s)?
    };
    let frac = g.int_const(8, DType::I32, v.shape());
    let sat = g.int_const(0xFFFF << 8, DType::I32, v.shape());
    let r = interpolate(g, table, &v, &frac, &sat)?;
    fold(g, &v, &r, true)
}

/// One step: the next hidden (int8) and cell (int16) states from the step's input products
/// `xw` (`[batch, 4 · hidden]` int16), `h`, `c` and the recurrent weights of the four gates.
pub(super) fn step(
    g: &mut Graph,
    p: &IntLstm,
    xw: &Lazy,
    h: &Lazy,
    c: &Lazy,
    r: &[Lazy],
) -> Result<(Lazy, Lazy), GraphError> {
    let hidden = h.shape()[1];
    let table = table(g)?;
    let r = g.concat(r, 0)?;
    let each = (0..4 * hidden)
        .map(|j| p.recurrent_fc[j / hidden])
        .collect();
    let hi = g.cast(h, DType::I32);
    let hi = g.int_scalar(BinaryOp::Sub, &hi, i64::from(p.zp_h))?;
    let acc = g.matmul_in(&hi, &r.permute(&[1, 0])?, Some(DType::I32))?;
    let rec = g.requantize(&acc, &Multipliers::PerAxis { axis: 1, each })?;
    let rec = g.clamp_int(&rec, -32768, 32767)?;
    let xw = g.cast(xw, DType::I32);
    let pre = g.binary(BinaryOp::Add, &xw, &rec)?;
    let pre = g.clamp_int(&pre, -32768, 32767)?;
    let act = gate_activations(g, &table, &pre)?;
    let batch = act.shape()[0];
    let gate = |k: usize| act.shrink(&[(0, batch), (k * hidden, (k + 1) * hidden)]);
    let (i, f, cell, o) = (gate(0)?, gate(1)?, gate(2)?, gate(3)?);
    let ci = g.cast(c, DType::I32);
    let fc = g.binary(BinaryOp::Mul, &f, &ci)?;
    let fc = requant(g, &fc, p.forget_cell, 0, -32768, 32767)?;
    let ig = g.binary(BinaryOp::Mul, &i, &cell)?;
    let ig = requant(g, &ig, p.input_cell, 0, -32768, 32767)?;
    let c_new = g.binary(BinaryOp::Add, &fc, &ig)?;
    let mut c_new = g.clamp_int(&c_new, -32768, 32767)?;
    if let Some(clip) = p.cell_clip {
        c_new = g.clamp_int(&c_new, -clip, clip)?;
    }
    let t = cell_tanh(g, &table, &c_new, p.cell_power)?;
    let ho = g.binary(BinaryOp::Mul, &t, &o)?;
    let h_new = requant(g, &ho, p.output_hidden, p.zp_h, -128, 127)?;
    Ok((g.cast(&h_new, DType::I8), g.cast(&c_new, DType::I16)))
}

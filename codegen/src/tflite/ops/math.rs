//! Elementwise math: the float functions (`CEIL`, `FLOOR`, `ROUND`, `SQRT`, `RSQRT`, `SQUARE`,
//! `EXP`, `LOG`, `SIN`, `COS`, `NEG`), `ABS`, the divisions (`DIV`, `FLOOR_DIV`, `FLOOR_MOD`),
//! `SQUARED_DIFFERENCE`, `ADD_N`, `CAST` and `ZEROS_LIKE`, with numpy broadcasting.
//!
//! Quantized `ABS` requantizes `|x − zp|` by `s_in / s_out` (computed in float); quantized
//! `SQUARED_DIFFERENCE` brings both sides to a common scale with 7 bits of headroom (none for
//! int16) as `ADD` does, squares the difference and requantizes it; int8 `ADD_N` sums the
//! inputs on the scale `ADD` uses and requantizes the sum once.

use super::activation::to_quantized;
use super::elementwise::{centred, requantize_out, scaled};
use super::{activation, float_activation, is_quantized, Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::quant::{activation_range, Activation};
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, UnaryOp};
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[
    (Op::Abs, abs),
    (Op::Neg, neg),
    (Op::Ceil, ceil),
    (Op::Floor, floor),
    (Op::Round, round),
    (Op::Sqrt, sqrt),
    (Op::Rsqrt, rsqrt),
    (Op::Square, square),
    (Op::Exp, exp),
    (Op::Log, log),
    (Op::Sin, sin),
    (Op::Cos, cos),
    (Op::Div, div),
    (Op::FloorDiv, floor_div),
    (Op::FloorMod, floor_mod),
    (Op::SquaredDifference, squared_difference),
    (Op::AddN, add_n),
    (Op::Cast, cast),
    (Op::ZerosLike, zeros_like),
];

type Out = Result<Vec<Lazy>, OpError>;
type R = Result<Lazy, GraphError>;

/// A float32 function of input 0.
fn float_unary(ctx: &mut Ctx, f: fn(&mut Graph, &Lazy) -> R) -> Out {
    let t = ctx.info(0)?;
    if t.dtype != Scalar::F32 || ctx.out_info(0)?.dtype != Scalar::F32 {
        return Err(OpError::Unsupported(format!(
            "{} on {} ({:?}; float32 is taken)",
            ctx.op.name(),
            t.dtype,
            t.name
        )));
    }
    let x = ctx.input(0)?;
    Ok(vec![f(ctx.graph, &x)?])
}

fn ceil(ctx: &mut Ctx) -> Out {
    float_unary(ctx, Graph::ceil)
}

fn floor(ctx: &mut Ctx) -> Out {
    float_unary(ctx, Graph::floor)
}

fn round(ctx: &mut Ctx) -> Out {
    float_unary(ctx, Graph::round_even)
}

fn sqrt(ctx: &mut Ctx) -> Out {
    float_unary(ctx, |g, x| g.unary(UnaryOp::Sqrt, x))
}

fn square(ctx: &mut Ctx) -> Out {
    float_unary(ctx, |g, x| g.binary(BinaryOp::Mul, x, x))
}

fn exp(ctx: &mut Ctx) -> Out {
    float_unary(ctx, Graph::exp)
}

fn log(ctx: &mut Ctx) -> Out {
    float_unary(ctx, Graph::log)
}

fn sin(ctx: &mut Ctx) -> Out {
    float_unary(ctx, |g, x| g.unary(UnaryOp::Sin, x))
}

fn cos(ctx: &mut Ctx) -> Out {
    float_unary(ctx, |g, x| {
        let s = g.add_scalar(x, std::f64::consts::FRAC_PI_2)?;
        g.unary(UnaryOp::Sin, &s)
    })
}

/// `−x` on float32, and on the plain integers (wrapping).
fn neg(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    let plain_int = matches!(t.dtype, Scalar::I32 | Scalar::I64) && !is_quantized(&t);
    if t.dtype != Scalar::F32 && !plain_int {
        return Err(OpError::Unsupported(format!("NEG on {}", t.dtype)));
    }
    let x = ctx.input(0)?;
    Ok(vec![ctx.graph.neg(&x)?])
}

/// `|x|`; int8 and int16 quantized: `|x − zp|`, requantized when the scales differ, plus the
/// output's zero point; int16 unquantized: the raw values' (wrapping at −32768).
fn abs(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    let x = ctx.input(0)?;
    match t.dtype {
        Scalar::F32 => return Ok(vec![ctx.graph.abs(&x)?]),
        Scalar::I16 if !is_quantized(&t) => return Ok(vec![ctx.graph.abs(&x)?]),
        Scalar::I8 | Scalar::I16 => {}
        other => return Err(OpError::Unsupported(format!("ABS on {other}"))),
    }
    let (qi, qo) = (ctx.quant(&t)?, ctx.quant(ctx.out_info(0)?)?);
    let g = &mut *ctx.graph;
    let c = centred(g, &x, qi.zero_point())?;
    let a = g.abs(&c)?;
    if qi.scale() == qo.scale() {
        return to_quantized(g, &a, qo.zero_point(), t.dtype);
    }
    requantize_out(ctx, &a, f64::from(qi.scale() / qo.scale()), None)
}

/// `1 / sqrt(x)` (float32; int8 and int16 in `normalise`).
fn rsqrt(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    if t.dtype == Scalar::I8 || (t.dtype == Scalar::I16 && is_quantized(&t)) {
        return super::normalise::rsqrt_quantized(ctx);
    }
    float_unary(ctx, |g, x| {
        let s = g.unary(UnaryOp::Sqrt, x)?;
        g.unary(UnaryOp::Recip, &s)
    })
}

fn div(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::DivOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let act = activation(o.fused_activation_function)?;
    let t = ctx.info(0)?.clone();
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    match t.dtype {
        Scalar::F32 => {
            let g = &mut *ctx.graph;
            let y = g.binary(BinaryOp::Div, &a, &b)?;
            Ok(vec![float_activation(g, &y, act)?])
        }
        Scalar::I32 if !is_quantized(&t) => {
            let g = &mut *ctx.graph;
            let y = g.binary(BinaryOp::Div, &a, &b)?;
            Ok(vec![int_activation(g, &y, act)?])
        }
        Scalar::I8 => super::normalise::div_int8(ctx, act),
        other => Err(OpError::Unsupported(format!("DIV on {other}"))),
    }
}

/// A fused activation on plain integers (TFLM's `CalculateActivationRange` for `int32`).
fn int_activation(g: &mut Graph, x: &Lazy, act: Activation) -> Result<Lazy, OpError> {
    let (lo, hi) = activation_range(act, 1.0, 0, i32::MIN, i32::MAX);
    Ok(g.clamp_int(x, i64::from(lo), i64::from(hi))?)
}

/// The two operands of a float32 or plain int32 binary op.
fn plain_pair(ctx: &mut Ctx) -> Result<(Lazy, Lazy, Scalar), OpError> {
    let t = ctx.info(0)?.clone();
    let ok = t.dtype == Scalar::F32 || (t.dtype == Scalar::I32 && !is_quantized(&t));
    if !ok || ctx.info(1)?.dtype != t.dtype {
        return Err(OpError::Unsupported(format!(
            "{} on {} and {}",
            ctx.op.name(),
            t.dtype,
            ctx.info(1)?.dtype
        )));
    }
    Ok((ctx.input(0)?, ctx.input(1)?, t.dtype))
}

/// `floor(a / b)`: float32 divided in double as TFLM does, int32 rounded toward −∞.
fn floor_div(ctx: &mut Ctx) -> Out {
    let (a, b, t) = plain_pair(ctx)?;
    let g = &mut *ctx.graph;
    if t == Scalar::F32 {
        let (a, b) = (g.cast(&a, DType::F64), g.cast(&b, DType::F64));
        let q = g.binary(BinaryOp::Div, &a, &b)?;
        let q = g.floor(&q)?;
        return Ok(vec![g.cast(&q, DType::F32)]);
    }
    let q = g.binary(BinaryOp::Div, &a, &b)?;
    let r = g.binary(BinaryOp::Mod, &a, &b)?;
    let fix = sign_differs(g, &r, &b)?;
    let down = g.int_scalar(BinaryOp::Sub, &q, 1)?;
    Ok(vec![g.where_(&fix, &down, &q)?])
}

/// Whether the truncated remainder `r` is non-zero and of the other sign than `b`.
fn sign_differs(g: &mut Graph, r: &Lazy, b: &Lazy) -> R {
    let zero = g.scalar_like(r, 0.0);
    let nonzero = g.binary(BinaryOp::CmpNe, r, &zero)?;
    let r_neg = g.lt(r, &zero)?;
    let zb = g.scalar_like(b, 0.0);
    let b_neg = g.lt(b, &zb)?;
    let differ = g.binary(BinaryOp::CmpNe, &r_neg, &b_neg)?;
    g.binary(BinaryOp::And, &nonzero, &differ)
}

/// `a mod b` with the sign of `b`: the truncated remainder, plus `b` where their signs differ.
fn floor_mod(ctx: &mut Ctx) -> Out {
    let (a, b, _) = plain_pair(ctx)?;
    let g = &mut *ctx.graph;
    let r = g.binary(BinaryOp::Mod, &a, &b)?;
    let fix = sign_differs(g, &r, &b)?;
    let up = g.binary(BinaryOp::Add, &r, &b)?;
    Ok(vec![g.where_(&fix, &up, &r)?])
}

fn squared_difference(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    if !matches!(t.dtype, Scalar::I8 | Scalar::I16) {
        let (a, b, _) = plain_pair(ctx)?;
        let g = &mut *ctx.graph;
        let d = g.binary(BinaryOp::Sub, &a, &b)?;
        return Ok(vec![g.binary(BinaryOp::Mul, &d, &d)?]);
    }
    let (q1, q2) = (ctx.quant(&t)?, ctx.quant(ctx.info(1)?)?);
    let qo = ctx.quant(ctx.out_info(0)?)?;
    let left_shift = if t.dtype == Scalar::I8 { 7 } else { 0 };
    let twice_max = 2.0 * f64::from(q1.scale().max(q2.scale()));
    let m1 = f64::from(q1.scale()) / twice_max;
    let m2 = f64::from(q2.scale()) / twice_max;
    let mo = twice_max * twice_max / f64::from((1i32 << (2 * left_shift)) as f32 * qo.scale());
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let g = &mut *ctx.graph;
    let sa = scaled(g, &a, q1.zero_point(), left_shift, m1)?;
    let sb = scaled(g, &b, q2.zero_point(), left_shift, m2)?;
    let d = g.binary(BinaryOp::Sub, &sa, &sb)?;
    let sq = g.binary(BinaryOp::Mul, &d, &d)?;
    requantize_out(ctx, &sq, mo, None)
}

/// The sum of all inputs (same shape and type); int8: each input scaled by
/// `MBQM((x − zp) · 2^20, 1/2)`, the sum by `2 s_in / (2^20 s_out)`.
fn add_n(ctx: &mut Ctx) -> Out {
    let n = ctx.op.inputs.len();
    let t = ctx.info(0)?.clone();
    let mut xs = Vec::with_capacity(n);
    for i in 0..n {
        if ctx.info(i)?.dtype != t.dtype || !super::quant_eq(&ctx.info(i)?.quant, &t.quant) {
            return Err(OpError::Invalid(format!(
                "ADD_N input {i} ({:?}) differs from input 0 in type or quantization",
                ctx.info(i)?.name
            )));
        }
        xs.push(ctx.input(i)?);
    }
    if t.dtype == Scalar::F32 {
        let g = &mut *ctx.graph;
        let mut s = xs[0].clone();
        for x in &xs[1..] {
            s = g.binary(BinaryOp::Add, &s, x)?;
        }
        return Ok(vec![s]);
    }
    if t.dtype != Scalar::I8 {
        return Err(OpError::Unsupported(format!("ADD_N on {}", t.dtype)));
    }
    let (qi, qo) = (ctx.quant(&t)?, ctx.quant(ctx.out_info(0)?)?);
    let twice = 2.0 * f64::from(qi.scale());
    let (mi, mo) = (
        f64::from(qi.scale()) / twice,
        twice / ((1i64 << 20) as f64 * f64::from(qo.scale())),
    );
    let g = &mut *ctx.graph;
    // The kernel starts its sum from the scaled zero value (0 for any multiplier).
    let mut s = scaled(g, &xs[0], qi.zero_point(), 20, mi)?;
    for x in &xs[1..] {
        let v = scaled(g, x, qi.zero_point(), 20, mi)?;
        s = g.binary(BinaryOp::Add, &s, &v)?;
    }
    requantize_out(ctx, &s, mo, None)
}

/// C's `static_cast` between the types TFLM converts (bool, integers, float32).
fn cast(ctx: &mut Ctx) -> Out {
    let (t, o) = (ctx.info(0)?.dtype, ctx.out_info(0)?.dtype);
    let from = matches!(
        t,
        Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::U32 | Scalar::F32 | Scalar::Bool
    ) || matches!(t, Scalar::I64 | Scalar::U8 | Scalar::U16);
    let to = matches!(
        o,
        Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::U32 | Scalar::F32
    ) || matches!(o, Scalar::I64 | Scalar::U8 | Scalar::U16 | Scalar::Bool);
    if !from || !to {
        return Err(OpError::Unsupported(format!("CAST from {t} to {o}")));
    }
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    if o == Scalar::Bool {
        return Ok(vec![g.to_bool(&x)?]);
    }
    Ok(vec![g.cast(&x, DType::from(o))])
}

/// Zeros of the input's type and shape.
fn zeros_like(ctx: &mut Ctx) -> Out {
    let t = ctx.info(0)?.clone();
    if !matches!(
        t.dtype,
        Scalar::I64 | Scalar::I32 | Scalar::I8 | Scalar::F32
    ) {
        return Err(OpError::Unsupported(format!("ZEROS_LIKE on {}", t.dtype)));
    }
    let x = ctx.input(0)?;
    let g = &mut *ctx.graph;
    let z = g.int_const(0, DType::from(t.dtype), x.shape());
    Ok(vec![g.contiguous(&z)])
}

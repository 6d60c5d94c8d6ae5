//! Trigonometric and hyperbolic functions built from `exp`, `log`, `sqrt` and `sin`, the
//! bitwise ops on integers, and determinants of small matrices.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::Scalar;
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, UnaryOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Tan", tan),
    ("Sinh", sinh),
    ("Cosh", cosh),
    ("Asinh", asinh),
    ("Acosh", acosh),
    ("Atanh", atanh),
    ("Atan", atan),
    ("Asin", asin),
    ("Acos", acos),
    ("BitwiseAnd", bitwise_and),
    ("BitwiseOr", bitwise_or),
    ("BitwiseXor", bitwise_xor),
    ("BitwiseNot", bitwise_not),
    ("BitShift", bit_shift),
    ("Det", det),
];

type Out = Result<Vec<Value>, OpError>;
type R = Result<Lazy, GraphError>;

fn unary(ctx: &mut Ctx, f: fn(&mut Graph, &Lazy) -> R) -> Out {
    let x = ctx.tensor(0)?;
    Ok(vec![Value::Tensor(f(ctx.graph, &x)?)])
}

fn bin(g: &mut Graph, op: BinaryOp, a: &Lazy, b: &Lazy) -> R {
    g.binary(op, a, b)
}

fn sqrt(g: &mut Graph, x: &Lazy) -> R {
    g.unary(UnaryOp::Sqrt, x)
}

fn tan(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| {
        let s = g.unary(UnaryOp::Sin, x)?;
        let shifted = g.add_scalar(x, std::f64::consts::FRAC_PI_2)?;
        let c = g.unary(UnaryOp::Sin, &shifted)?;
        bin(g, BinaryOp::Div, &s, &c)
    })
}

/// `(e^x + sign·e^-x) / 2`.
fn exp_pair(g: &mut Graph, x: &Lazy, sign: f64) -> R {
    let e = g.exp(x)?;
    let n = g.neg(x)?;
    let en = g.exp(&n)?;
    let en = g.mul_scalar(&en, sign)?;
    let s = bin(g, BinaryOp::Add, &e, &en)?;
    g.mul_scalar(&s, 0.5)
}

fn sinh(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| exp_pair(g, x, -1.0))
}

fn cosh(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| exp_pair(g, x, 1.0))
}

/// `log(x + sqrt(x² + c))`: asinh with `c = 1`, acosh with `c = -1`.
fn log_root(g: &mut Graph, x: &Lazy, c: f64) -> R {
    let sq = bin(g, BinaryOp::Mul, x, x)?;
    let sq = g.add_scalar(&sq, c)?;
    let r = sqrt(g, &sq)?;
    let s = bin(g, BinaryOp::Add, x, &r)?;
    g.log(&s)
}

fn asinh(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| log_root(g, x, 1.0))
}

fn acosh(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| log_root(g, x, -1.0))
}

/// `log((1 + x) / (1 - x)) / 2`.
fn atanh(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| {
        let p = g.add_scalar(x, 1.0)?;
        let n = g.neg(x)?;
        let m = g.add_scalar(&n, 1.0)?;
        let q = bin(g, BinaryOp::Div, &p, &m)?;
        let l = g.log(&q)?;
        g.mul_scalar(&l, 0.5)
    })
}

/// `t / (1 + sqrt(1 + t²))`: `atan(t) = 2·atan(half(t))`, and `|half(t)| < 1`.
fn half_angle(g: &mut Graph, t: &Lazy) -> R {
    let sq = bin(g, BinaryOp::Mul, t, t)?;
    let sq = g.add_scalar(&sq, 1.0)?;
    let r = sqrt(g, &sq)?;
    let d = g.add_scalar(&r, 1.0)?;
    bin(g, BinaryOp::Div, t, &d)
}

/// Two half-angle steps bring the argument within ±tan(π/8); the odd series to u¹⁵ is then
/// accurate to about 1e-8, times the 4 that undoes the steps.
fn atan_of(g: &mut Graph, x: &Lazy) -> R {
    let h = half_angle(g, x)?;
    let u = half_angle(g, &h)?;
    let u2 = bin(g, BinaryOp::Mul, &u, &u)?;
    let mut acc = g.scalar_like(&u, -1.0 / 15.0);
    for k in (0..7).rev() {
        let coef = if k % 2 == 0 { 1.0 } else { -1.0 } / f64::from(2 * k + 1);
        let m = bin(g, BinaryOp::Mul, &acc, &u2)?;
        acc = g.add_scalar(&m, coef)?;
    }
    let s = bin(g, BinaryOp::Mul, &acc, &u)?;
    g.mul_scalar(&s, 4.0)
}

/// `atan(x / sqrt(1 - x²))`.
fn asin_of(g: &mut Graph, x: &Lazy) -> R {
    let sq = bin(g, BinaryOp::Mul, x, x)?;
    let n = g.neg(&sq)?;
    let one_minus = g.add_scalar(&n, 1.0)?;
    let r = sqrt(g, &one_minus)?;
    let q = bin(g, BinaryOp::Div, x, &r)?;
    atan_of(g, &q)
}

fn atan(ctx: &mut Ctx) -> Out {
    unary(ctx, atan_of)
}

fn asin(ctx: &mut Ctx) -> Out {
    unary(ctx, asin_of)
}

fn acos(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| {
        let a = asin_of(g, x)?;
        let n = g.neg(&a)?;
        g.add_scalar(&n, std::f64::consts::FRAC_PI_2)
    })
}

fn bitwise(ctx: &mut Ctx, op: BinaryOp) -> Out {
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    Ok(vec![Value::Tensor(ctx.graph.binary(op, &a, &b)?)])
}

fn bitwise_and(ctx: &mut Ctx) -> Out {
    bitwise(ctx, BinaryOp::And)
}

fn bitwise_or(ctx: &mut Ctx) -> Out {
    bitwise(ctx, BinaryOp::Or)
}

fn bitwise_xor(ctx: &mut Ctx) -> Out {
    bitwise(ctx, BinaryOp::Xor)
}

/// `!x` as `-1 - x` (signed) or `MAX - x` (unsigned).
fn bitwise_not(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let all_ones = match x.dtype.scalar {
        Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => -1.0,
        Scalar::U8 => f64::from(u8::MAX),
        Scalar::U16 => f64::from(u16::MAX),
        Scalar::U32 => f64::from(u32::MAX),
        other => return Err(OpError::Unsupported(format!("BitwiseNot of {other:?}"))),
    };
    let g = &mut *ctx.graph;
    let ones = g.scalar_like(&x, all_ones);
    Ok(vec![Value::Tensor(g.binary(BinaryOp::Sub, &ones, &x)?)])
}

fn bit_shift(ctx: &mut Ctx) -> Out {
    let op = match ctx.attrs().string_or("direction", String::new())?.as_str() {
        "LEFT" => BinaryOp::Shl,
        "RIGHT" => BinaryOp::Shr,
        other => return Err(OpError::Invalid(format!("direction {other:?}"))),
    };
    bitwise(ctx, op)
}

/// The largest matrix `Det` expands (its Leibniz sum has `n!` products).
const DET_MAX: usize = 5;

/// Every permutation of `0..n` with its sign.
fn permutations(n: usize) -> Vec<(Vec<usize>, f64)> {
    fn build(prefix: &mut Vec<usize>, n: usize, out: &mut Vec<Vec<usize>>) {
        if prefix.len() == n {
            out.push(prefix.clone());
            return;
        }
        for v in 0..n {
            if !prefix.contains(&v) {
                prefix.push(v);
                build(prefix, n, out);
                prefix.pop();
            }
        }
    }
    let mut all = Vec::new();
    build(&mut Vec::new(), n, &mut all);
    all.into_iter()
        .map(|p| {
            let inversions = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|&(i, j)| p[i] > p[j])
                .count();
            let sign = if inversions % 2 == 0 { 1.0 } else { -1.0 };
            (p, sign)
        })
        .collect()
}

/// The determinant of each square matrix in the last two dims, by the Leibniz formula.
fn det(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let s = x.shape().to_vec();
    let r = s.len();
    if r < 2 || s[r - 1] != s[r - 2] {
        return Err(invalid(format!(
            "input {s:?} is not a stack of square matrices"
        )));
    }
    if !x.dtype.is_float() {
        return Err(invalid(format!("input is {}, not a float type", x.dtype)));
    }
    let n = s[r - 1];
    if n > DET_MAX {
        return Err(OpError::Unsupported(format!(
            "determinants of matrices larger than {DET_MAX}x{DET_MAX} ({n}x{n})"
        )));
    }
    let lead = s[..r - 2].to_vec();
    let g = &mut *ctx.graph;
    if n == 0 {
        return Ok(vec![Value::Tensor(g.constant(1.0, x.dtype, &lead))]);
    }
    let at = |i: usize, j: usize| -> Result<Lazy, OpError> {
        let mut arg: Vec<(usize, usize)> = s.iter().map(|&d| (0, d)).collect();
        arg[r - 2] = (i, i + 1);
        arg[r - 1] = (j, j + 1);
        Ok(x.shrink(&arg)?.reshape(&lead)?)
    };
    let mut total: Option<Lazy> = None;
    for (p, sign) in permutations(n) {
        let mut term = at(0, p[0])?;
        for (i, &j) in p.iter().enumerate().skip(1) {
            let e = at(i, j)?;
            term = g.binary(BinaryOp::Mul, &term, &e)?;
        }
        total = Some(match total {
            None if sign > 0.0 => term,
            None => g.neg(&term)?,
            Some(t) if sign > 0.0 => g.binary(BinaryOp::Add, &t, &term)?,
            Some(t) => g.binary(BinaryOp::Sub, &t, &term)?,
        });
    }
    let y = total.ok_or_else(|| invalid("empty matrix"))?;
    Ok(vec![Value::Tensor(y)])
}

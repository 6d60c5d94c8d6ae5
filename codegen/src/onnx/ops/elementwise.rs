//! Elementwise arithmetic and math functions (numpy broadcasting throughout).

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::graph::tensor::{broadcast_shape, broadcast_to};
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, UnaryOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Add", add),
    ("Sub", sub),
    ("Mul", mul),
    ("Div", div),
    ("Pow", pow),
    ("Mod", modulo),
    ("Neg", neg),
    ("Abs", abs),
    ("Sqrt", sqrt),
    ("Reciprocal", reciprocal),
    ("Exp", exp),
    ("Log", log),
    ("Sin", sin),
    ("Cos", cos),
    ("Floor", floor),
    ("Ceil", ceil),
    ("Round", round),
    ("Sign", sign),
    ("Erf", erf),
    ("Max", max),
    ("Min", min),
    ("Sum", sum),
    ("Mean", mean),
];

type Out = Result<Vec<Value>, OpError>;
type GraphFn = fn(&mut Graph, &Lazy) -> Result<Lazy, GraphError>;

fn one(l: Lazy) -> Out {
    Ok(vec![Value::Tensor(l)])
}

fn unary(ctx: &mut Ctx, f: GraphFn) -> Out {
    let x = ctx.tensor(0)?;
    one(f(ctx.graph, &x)?)
}

fn binary(ctx: &mut Ctx, op: BinaryOp) -> Out {
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    one(ctx.graph.binary(op, &a, &b)?)
}

/// Folds every input into one with `f` (variadic Max, Min, Sum).
fn variadic(ctx: &mut Ctx, f: fn(&mut Graph, &Lazy, &Lazy) -> Result<Lazy, GraphError>) -> Out {
    let xs = ctx.tensors()?;
    let (first, rest) = xs.split_first().ok_or_else(|| invalid("no inputs"))?;
    let mut acc = first.clone();
    for x in rest {
        acc = f(ctx.graph, &acc, x)?;
    }
    one(acc)
}

fn add(ctx: &mut Ctx) -> Out {
    binary(ctx, BinaryOp::Add)
}

fn sub(ctx: &mut Ctx) -> Out {
    binary(ctx, BinaryOp::Sub)
}

fn mul(ctx: &mut Ctx) -> Out {
    binary(ctx, BinaryOp::Mul)
}

fn div(ctx: &mut Ctx) -> Out {
    binary(ctx, BinaryOp::Div)
}

/// `x ** y`: known small integer exponents multiply, `±0.5` take square roots; other float
/// powers go through `exp2(y * log2(x))`, integer ones square and multiply.
fn pow(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let shape = broadcast_shape("pow", x.shape(), &ctx.shape(1)?)?;
    if let Some(e) = ctx.uniform(1) {
        if let Some(y) = pow_const(ctx.graph, &x, e)? {
            return one(broadcast_to(&y, &shape)?);
        }
    }
    let y = ctx.tensor(1)?;
    if !x.dtype.scalar.is_float() {
        return one(ctx.graph.int_pow(&x, &y)?);
    }
    let y = ctx.graph.cast(&y, x.dtype);
    one(ctx.graph.pow(&x, &y)?)
}

/// `x ** e` for a known exponent that needs no logarithm, else `None`.
fn pow_const(g: &mut Graph, x: &Lazy, e: f64) -> Result<Option<Lazy>, GraphError> {
    let float = x.dtype.scalar.is_float();
    if e.fract() == 0.0 && e.abs() <= 16.0 && (float || e >= 0.0) {
        let mut y = g.scalar_like(x, 1.0);
        for k in 0..e.abs() as u32 {
            y = match k {
                0 => x.clone(),
                _ => g.binary(BinaryOp::Mul, &y, x)?,
            };
        }
        return Ok(Some(match e < 0.0 {
            true => g.unary(UnaryOp::Recip, &y)?,
            false => y,
        }));
    }
    if float && e.abs() == 0.5 {
        let s = g.unary(UnaryOp::Sqrt, x)?;
        return Ok(Some(match e < 0.0 {
            true => g.unary(UnaryOp::Recip, &s)?,
            false => s,
        }));
    }
    Ok(None)
}

/// `fmod = 1`: C's remainder (sign of the dividend); `fmod = 0` (ints): sign of the divisor.
fn modulo(ctx: &mut Ctx) -> Out {
    let fmod = ctx.attrs().int_or("fmod", 0)? != 0;
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let g = &mut *ctx.graph;
    let r = g.binary(BinaryOp::Mod, &a, &b)?;
    if fmod || a.dtype.scalar.is_float() || a.dtype.scalar.is_unsigned() {
        return one(r);
    }
    let zero = g.scalar_like(&r, 0.0);
    let r_neg = g.lt(&r, &zero)?;
    let bz = g.scalar_like(&b, 0.0);
    let b_neg = g.lt(&b, &bz)?;
    let differ = g.binary(BinaryOp::CmpNe, &r_neg, &b_neg)?;
    let nonzero = g.binary(BinaryOp::CmpNe, &r, &zero)?;
    let fix = g.binary(BinaryOp::And, &differ, &nonzero)?;
    let shifted = g.binary(BinaryOp::Add, &r, &b)?;
    one(g.where_(&fix, &shifted, &r)?)
}

fn neg(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::neg)
}

fn abs(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::abs)
}

fn sqrt(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| g.unary(UnaryOp::Sqrt, x))
}

fn reciprocal(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| g.unary(UnaryOp::Recip, x))
}

fn exp(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::exp)
}

fn log(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::log)
}

fn sin(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| g.unary(UnaryOp::Sin, x))
}

fn cos(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| {
        let s = g.add_scalar(x, std::f64::consts::FRAC_PI_2)?;
        g.unary(UnaryOp::Sin, &s)
    })
}

fn floor(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::floor)
}

fn ceil(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::ceil)
}

fn round(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::round_even)
}

fn sign(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::sign)
}

fn erf(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::erf)
}

fn max(ctx: &mut Ctx) -> Out {
    variadic(ctx, |g, a, b| g.binary(BinaryOp::Max, a, b))
}

fn min(ctx: &mut Ctx) -> Out {
    variadic(ctx, |g, a, b| {
        let lt = g.lt(a, b)?;
        g.where_(&lt, a, b)
    })
}

fn sum(ctx: &mut Ctx) -> Out {
    variadic(ctx, |g, a, b| g.binary(BinaryOp::Add, a, b))
}

fn mean(ctx: &mut Ctx) -> Out {
    let n = ctx.tensors()?.len();
    let s = sum(ctx)?;
    let Some(Value::Tensor(s)) = s.into_iter().next() else {
        return Err(invalid("no inputs"));
    };
    one(ctx.graph.mul_scalar(&s, 1.0 / n as f64)?)
}

//! Activation functions.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, UnaryOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Relu", relu),
    ("LeakyRelu", leaky_relu),
    ("PRelu", prelu),
    ("ThresholdedRelu", thresholded_relu),
    ("Elu", elu),
    ("Selu", selu),
    ("Celu", celu),
    ("Clip", clip),
    ("Sigmoid", sigmoid),
    ("Tanh", tanh),
    ("HardSigmoid", hard_sigmoid),
    ("HardSwish", hard_swish),
    ("Swish", swish),
    ("Softplus", softplus),
    ("Softsign", softsign),
    ("Gelu", gelu),
    ("Mish", mish),
    ("Shrink", shrink),
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

fn relu(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::relu)
}

/// `x < 0 ? neg : x`.
fn where_negative(g: &mut Graph, x: &Lazy, neg: &Lazy) -> Result<Lazy, GraphError> {
    let zero = g.scalar_like(x, 0.0);
    let is_neg = g.lt(x, &zero)?;
    g.where_(&is_neg, neg, x)
}

fn leaky_relu(ctx: &mut Ctx) -> Out {
    let alpha = ctx.attrs().float_or("alpha", 0.01)?;
    let x = ctx.tensor(0)?;
    let n = ctx.graph.mul_scalar(&x, f64::from(alpha))?;
    one(where_negative(ctx.graph, &x, &n)?)
}

fn prelu(ctx: &mut Ctx) -> Out {
    let (x, slope) = (ctx.tensor(0)?, ctx.tensor(1)?);
    let n = ctx.graph.binary(BinaryOp::Mul, &x, &slope)?;
    one(where_negative(ctx.graph, &x, &n)?)
}

fn thresholded_relu(ctx: &mut Ctx) -> Out {
    let alpha = ctx.attrs().float_or("alpha", 1.0)?;
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let a = g.scalar_like(&x, f64::from(alpha));
    let above = g.lt(&a, &x)?;
    let zero = g.scalar_like(&x, 0.0);
    one(g.where_(&above, &x, &zero)?)
}

/// `alpha * (exp(x) - 1)`.
fn exp_m1(g: &mut Graph, x: &Lazy, alpha: f64) -> Result<Lazy, GraphError> {
    let e = g.exp(x)?;
    let e1 = g.add_scalar(&e, -1.0)?;
    g.mul_scalar(&e1, alpha)
}

fn elu(ctx: &mut Ctx) -> Out {
    let alpha = f64::from(ctx.attrs().float_or("alpha", 1.0)?);
    let x = ctx.tensor(0)?;
    let n = exp_m1(ctx.graph, &x, alpha)?;
    one(where_negative(ctx.graph, &x, &n)?)
}

fn selu(ctx: &mut Ctx) -> Out {
    let alpha = f64::from(ctx.attrs().float_or("alpha", 1.673_263_2)?);
    let gamma = f64::from(ctx.attrs().float_or("gamma", 1.050_701)?);
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let n = exp_m1(g, &x, alpha)?;
    let zero = g.scalar_like(&x, 0.0);
    let pos = g.lt(&zero, &x)?;
    let y = g.where_(&pos, &x, &n)?;
    one(g.mul_scalar(&y, gamma)?)
}

fn celu(ctx: &mut Ctx) -> Out {
    let alpha = f64::from(ctx.attrs().float_or("alpha", 1.0)?);
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let xs = g.mul_scalar(&x, 1.0 / alpha)?;
    let n = exp_m1(g, &xs, alpha)?;
    one(where_negative(g, &x, &n)?)
}

fn clip(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    if ctx.opset < 11 {
        let lo = ctx.attrs().float_or("min", f32::MIN)?;
        let hi = ctx.attrs().float_or("max", f32::MAX)?;
        return one(ctx.graph.clip(&x, Some(lo.into()), Some(hi.into()))?);
    }
    let mut y = x;
    if let Some(lo) = ctx.opt_tensor(1)? {
        y = ctx.graph.binary(BinaryOp::Max, &y, &lo)?;
    }
    if let Some(hi) = ctx.opt_tensor(2)? {
        let lt = ctx.graph.lt(&y, &hi)?;
        y = ctx.graph.where_(&lt, &y, &hi)?;
    }
    one(y)
}

fn sigmoid(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::sigmoid)
}

fn tanh(ctx: &mut Ctx) -> Out {
    unary(ctx, Graph::tanh)
}

fn hard_sigmoid(ctx: &mut Ctx) -> Out {
    let alpha = f64::from(ctx.attrs().float_or("alpha", 0.2)?);
    let beta = f64::from(ctx.attrs().float_or("beta", 0.5)?);
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let ax = g.mul_scalar(&x, alpha)?;
    let y = g.add_scalar(&ax, beta)?;
    one(g.clip(&y, Some(0.0), Some(1.0))?)
}

/// `x · sigmoid(alpha · x)`.
fn swish(ctx: &mut Ctx) -> Out {
    let alpha = f64::from(ctx.attrs().float_or("alpha", 1.0)?);
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let ax = g.mul_scalar(&x, alpha)?;
    let s = g.sigmoid(&ax)?;
    one(g.binary(BinaryOp::Mul, &x, &s)?)
}

fn hard_swish(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let ax = g.mul_scalar(&x, 1.0 / 6.0)?;
    let y = g.add_scalar(&ax, 0.5)?;
    let s = g.clip(&y, Some(0.0), Some(1.0))?;
    one(g.binary(BinaryOp::Mul, &x, &s)?)
}

/// `log(1 + exp(x))`, computed as `max(x, 0) + log(1 + exp(-|x|))`.
pub(super) fn softplus_of(g: &mut Graph, x: &Lazy) -> Result<Lazy, GraphError> {
    let a = g.abs(x)?;
    let na = g.neg(&a)?;
    let e = g.exp(&na)?;
    let e1 = g.add_scalar(&e, 1.0)?;
    let l = g.log(&e1)?;
    let r = g.relu(x)?;
    g.binary(BinaryOp::Add, &r, &l)
}

fn softplus(ctx: &mut Ctx) -> Out {
    unary(ctx, softplus_of)
}

/// `x * tanh(softplus(x))`.
fn mish(ctx: &mut Ctx) -> Out {
    unary(ctx, |g, x| {
        let s = softplus_of(g, x)?;
        let t = g.tanh(&s)?;
        g.binary(BinaryOp::Mul, x, &t)
    })
}

/// `x < -lambd ? x + bias : x > lambd ? x - bias : 0`.
fn shrink(ctx: &mut Ctx) -> Out {
    let bias = f64::from(ctx.attrs().float_or("bias", 0.0)?);
    let lambd = f64::from(ctx.attrs().float_or("lambd", 0.5)?);
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let lo = g.scalar_like(&x, -lambd);
    let hi = g.scalar_like(&x, lambd);
    let below = g.lt(&x, &lo)?;
    let above = g.lt(&hi, &x)?;
    let up = g.add_scalar(&x, bias)?;
    let down = g.add_scalar(&x, -bias)?;
    let zero = g.scalar_like(&x, 0.0);
    let y = g.where_(&above, &down, &zero)?;
    one(g.where_(&below, &up, &y)?)
}

fn softsign(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let a = g.abs(&x)?;
    let d = g.add_scalar(&a, 1.0)?;
    let r = g.unary(UnaryOp::Recip, &d)?;
    one(g.binary(BinaryOp::Mul, &x, &r)?)
}

fn gelu(ctx: &mut Ctx) -> Out {
    let approx = ctx.attrs().string_or("approximate", "none".into())?;
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let inner = match approx.as_str() {
        "none" => {
            let s = g.mul_scalar(&x, std::f64::consts::FRAC_1_SQRT_2)?;
            g.erf(&s)?
        }
        "tanh" => {
            let x2 = g.binary(BinaryOp::Mul, &x, &x)?;
            let x3 = g.binary(BinaryOp::Mul, &x2, &x)?;
            let c = g.mul_scalar(&x3, 0.044_715)?;
            let s = g.binary(BinaryOp::Add, &x, &c)?;
            let s = g.mul_scalar(&s, (2.0 / std::f64::consts::PI).sqrt())?;
            g.tanh(&s)?
        }
        other => return Err(invalid(format!("unknown approximate {other:?}"))),
    };
    let one_plus = g.add_scalar(&inner, 1.0)?;
    let hx = g.mul_scalar(&x, 0.5)?;
    one(g.binary(BinaryOp::Mul, &hx, &one_plus)?)
}

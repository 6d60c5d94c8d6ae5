//! NegativeLogLikelihoodLoss: the input's value at each target class, negated and weighted;
//! SoftmaxCrossEntropyLoss: the same on the log-softmax of the scores.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("NegativeLogLikelihoodLoss", nll_loss),
    ("SoftmaxCrossEntropyLoss", softmax_cross_entropy_loss),
];

type Out = Result<Vec<Value>, OpError>;

/// `loss[n, d…] = -input[n, target[n, d…], d…] · weight[target]`, zero where the target is
/// `ignore_index`; reduced by `none`, `sum` or `mean` (the sum over the summed weights).
fn nll_loss(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let args = LossArgs::of(ctx)?;
    let x = ctx.tensor(0)?;
    let target = ctx.tensor(1)?;
    let weight = ctx.opt_tensor(2)?;
    let out = nll(ctx.graph, &args, &x, &target, weight.as_ref())?;
    Ok(vec![Value::Tensor(out)])
}

/// The NLL loss of `log_softmax(scores, axis 1)`; output 1 is the log-softmax itself.
fn softmax_cross_entropy_loss(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(2)?;
    let args = LossArgs::of(ctx)?;
    let x = ctx.tensor(0)?;
    let target = ctx.tensor(1)?;
    let weight = ctx.opt_tensor(2)?;
    if x.shape().len() < 2 {
        return Err(invalid(format!(
            "scores {:?} need a class axis 1",
            x.shape()
        )));
    }
    let g = &mut *ctx.graph;
    let m = g.reduce(ReduceOp::Max, &x, &[1])?;
    let d = g.binary(BinaryOp::Sub, &x, &m)?;
    let e = g.exp(&d)?;
    let s = g.reduce(ReduceOp::Sum, &e, &[1])?;
    let ls = g.log(&s)?;
    let log_prob = g.binary(BinaryOp::Sub, &d, &ls)?;
    let out = nll(g, &args, &log_prob, &target, weight.as_ref())?;
    let mut outs = vec![Value::Tensor(out)];
    if ctx.wants(1) {
        outs.push(Value::Tensor(log_prob));
    }
    Ok(outs)
}

/// The attributes both losses share.
struct LossArgs {
    reduction: String,
    ignore_index: Option<i64>,
}

impl LossArgs {
    fn of(ctx: &Ctx) -> Result<LossArgs, OpError> {
        let reduction = ctx.attrs().string_or("reduction", "mean".into())?;
        if !matches!(reduction.as_str(), "none" | "sum" | "mean") {
            return Err(invalid(format!(
                "reduction {reduction:?} is not none, sum or mean"
            )));
        }
        let ignore_index = match ctx.attrs().get("ignore_index") {
            Some(_) => Some(ctx.attrs().int_or("ignore_index", 0)?),
            None => None,
        };
        Ok(LossArgs {
            reduction,
            ignore_index,
        })
    }
}

fn nll(
    g: &mut Graph,
    args: &LossArgs,
    x: &Lazy,
    target: &Lazy,
    weight: Option<&Lazy>,
) -> Result<Lazy, OpError> {
    let shape = x.shape().to_vec();
    if shape.len() < 2 || target.shape().len() + 1 != shape.len() {
        let t = target.shape();
        return Err(invalid(format!("input {shape:?} and target {t:?}")));
    }
    let classes = shape[1];
    let mut ts = target.shape().to_vec();
    ts.insert(1, 1);
    let mut ars = vec![1; shape.len()];
    ars[1] = classes;
    let t = g.cast(target, DType::I64).reshape(&ts)?;
    let ar = g.arange(classes, DType::I64).reshape(&ars)?;
    let hit = g.eq(&t, &ar)?;
    let onehot = g.cast(&hit, x.dtype);
    let mut w = match weight {
        Some(w) => {
            if w.shape() != [classes] {
                return Err(invalid(format!(
                    "weight {:?} must have one value per class ({classes})",
                    w.shape()
                )));
            }
            let per_class = g.binary(BinaryOp::Mul, &onehot, &w.reshape(&ars)?)?;
            g.reduce(ReduceOp::Sum, &per_class, &[1])?
        }
        None => g.constant(1.0, x.dtype, &ts),
    };
    if let Some(ignore_index) = args.ignore_index {
        let ig = g.scalar_like(&t, ignore_index as f64);
        let same = g.eq(&t, &ig)?;
        let zero = g.scalar_like(&w, 0.0);
        w = g.where_(&same, &zero, &w)?;
    }
    let picked = g.binary(BinaryOp::Mul, x, &onehot)?;
    let picked = g.reduce(ReduceOp::Sum, &picked, &[1])?;
    let loss = g.binary(BinaryOp::Mul, &picked, &w)?;
    let loss = g.neg(&loss)?;
    let all: Vec<usize> = (0..ts.len()).collect();
    Ok(match args.reduction.as_str() {
        "none" => loss.reshape(target.shape())?,
        "sum" => g.reduce(ReduceOp::Sum, &loss, &all)?.reshape(&[])?,
        _ => {
            let s = g.reduce(ReduceOp::Sum, &loss, &all)?;
            let ws = g.reduce(ReduceOp::Sum, &w, &all)?;
            g.binary(BinaryOp::Div, &s, &ws)?.reshape(&[])?
        }
    })
}

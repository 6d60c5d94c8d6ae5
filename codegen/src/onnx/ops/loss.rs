//! NegativeLogLikelihoodLoss: the input's value at each target class, negated and weighted.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::Builder;
use crate::dtype::DType;
use crate::ops::{BinaryOp, ReduceOp};

pub(super) const OPS: &[(&str, Builder)] = &[("NegativeLogLikelihoodLoss", nll_loss)];

type Out = Result<Vec<Value>, OpError>;

/// `loss[n, d…] = -input[n, target[n, d…], d…] · weight[target]`, zero where the target is
/// `ignore_index`; reduced by `none`, `sum` or `mean` (the sum over the summed weights).
fn nll_loss(ctx: &mut Ctx) -> Out {
    let reduction = ctx.attrs().string_or("reduction", "mean".into())?;
    let ignore = ctx.attrs().get("ignore_index").is_some();
    let ignore_index = ctx.attrs().int_or("ignore_index", 0)?;
    let x = ctx.tensor(0)?;
    let target = ctx.tensor(1)?;
    let weight = ctx.opt_tensor(2)?;
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
    let g = &mut *ctx.graph;
    let t = g.cast(&target, DType::I64).reshape(&ts)?;
    let ar = g.arange(classes, DType::I64).reshape(&ars)?;
    let hit = g.eq(&t, &ar)?;
    let onehot = g.cast(&hit, x.dtype);
    let mut w = match &weight {
        Some(w) => {
            let per_class = g.binary(BinaryOp::Mul, &onehot, &w.reshape(&ars)?)?;
            g.reduce(ReduceOp::Sum, &per_class, &[1])?
        }
        None => g.constant(1.0, x.dtype, &ts),
    };
    if ignore {
        let ig = g.scalar_like(&t, ignore_index as f64);
        let same = g.eq(&t, &ig)?;
        let zero = g.scalar_like(&w, 0.0);
        w = g.where_(&same, &zero, &w)?;
    }
    let picked = g.binary(BinaryOp::Mul, &x, &onehot)?;
    let picked = g.reduce(ReduceOp::Sum, &picked, &[1])?;
    let loss = g.binary(BinaryOp::Mul, &picked, &w)?;
    let loss = g.neg(&loss)?;
    let all: Vec<usize> = (0..ts.len()).collect();
    let out = match reduction.as_str() {
        "none" => loss.reshape(target.shape())?,
        "sum" => g.reduce(ReduceOp::Sum, &loss, &all)?.reshape(&[])?,
        "mean" => {
            let s = g.reduce(ReduceOp::Sum, &loss, &all)?;
            let ws = g.reduce(ReduceOp::Sum, &w, &all)?;
            g.binary(BinaryOp::Div, &s, &ws)?.reshape(&[])?
        }
        other => return Err(invalid(format!("reduction {other:?}"))),
    };
    Ok(vec![Value::Tensor(out)])
}

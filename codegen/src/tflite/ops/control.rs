//! Control flow: `IF` and `WHILE`, whose branches and bodies are other subgraphs of the file,
//! lowered through the same path as the main one.
//!
//! - `IF` on a condition known at compile time lowers the chosen branch in place. On one known
//!   only at run time, both branches are lowered and each output selects between them (the
//!   values TFLM computes by running one branch), which needs branches whose outputs agree in
//!   type and shape.
//! - `WHILE` becomes a counted loop ([`Graph::repeat`]): the body is lowered once, into a graph
//!   of its own, and runs once per iteration with the loop variables as its state; one body of
//!   code, however many iterations. The count must be known at compile time: the importer runs
//!   the condition, and the part of the body it depends on, on the loop variables whose values
//!   are known when it compiles. A condition that reads a value computed at run time is refused.

use super::{Ctx, OpBuilder, Scope};
use crate::graph::eval::evaluate;
use crate::graph::loops::{LoopBody, LoopInput, LoopResult};
use crate::graph::{GOp, Graph, Lazy};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, OpBuilder)] = &[(Op::If, if_op), (Op::While, while_op)];

/// Most iterations a `WHILE` may run (each is run once at compile time to count them).
const MAX_TRIPS: usize = 1 << 16;

/// How deeply subgraphs may nest (a subgraph that names itself would nest forever).
const MAX_DEPTH: usize = 16;

type Out = Result<Vec<Lazy>, OpError>;

/// Lowers subgraph `index` (the op's `role` subgraph: "then", "body", …) into `graph`, its
/// inputs fed by `inputs`: its outputs.
pub(super) fn lower_subgraph(
    scope: Scope,
    graph: &mut Graph,
    role: &str,
    index: i32,
    inputs: &[Lazy],
) -> Out {
    let sub = scope
        .root
        .subgraph(index)
        .filter(|_| index > 0)
        .ok_or_else(|| {
            OpError::Invalid(format!(
                "{role} subgraph index {index} is out of range: the file has subgraphs 1..{} \
                 besides the main one",
                scope.root.bodies.len()
            ))
        })?;
    if scope.depth >= MAX_DEPTH {
        return Err(OpError::Invalid(format!(
            "{role} subgraph {index} nests {MAX_DEPTH} control-flow ops deep (does a subgraph \
             name itself?)"
        )));
    }
    if sub.inputs.len() != inputs.len() {
        return Err(OpError::Invalid(format!(
            "{role} subgraph {index} takes {} inputs, the op gives it {}",
            sub.inputs.len(),
            inputs.len()
        )));
    }
    for (k, (&id, x)) in sub.inputs.iter().zip(inputs).enumerate() {
        let t = sub.tensor(id);
        if t.shape != x.shape() || t.dtype != x.dtype.scalar {
            return Err(OpError::Invalid(format!(
                "{role} subgraph {index}: input {k} ({:?}) is {} {:?}, the op gives it {} {:?}",
                t.name,
                t.dtype,
                t.shape,
                x.dtype,
                x.shape()
            )));
        }
    }
    let inner = Scope {
        depth: scope.depth + 1,
        ..scope
    };
    crate::tflite::lower(graph, inner, sub, inputs).map_err(|source| OpError::Subgraph {
        index,
        source: Box::new(source),
    })
}

/// Checks that a subgraph gives `want` outputs.
fn expect_outputs(role: &str, index: i32, outs: &[Lazy], want: usize) -> Result<(), OpError> {
    if outs.len() == want {
        Ok(())
    } else {
        Err(OpError::Invalid(format!(
            "{role} subgraph {index} gives {} outputs, the op needs {want}",
            outs.len()
        )))
    }
}

/// The op's inputs from `first` on.
fn inputs_from(ctx: &mut Ctx, first: usize) -> Result<Vec<Lazy>, OpError> {
    (first..ctx.op.inputs.len()).map(|i| ctx.input(i)).collect()
}

/// Whether a boolean tensor's first element is true.
fn first_true(t: &Tensor) -> bool {
    t.to_f64().first().is_some_and(|&v| v != 0.0)
}

/// `IF`: input 0 the condition (its first element), the others the branches' inputs.
fn if_op(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::IfOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let cond = ctx.input(0)?;
    if cond.dtype.scalar != crate::dtype::Scalar::Bool || cond.numel() == 0 {
        return Err(OpError::Invalid(format!(
            "the condition {:?} is {} {:?}, not a non-empty BOOL tensor",
            ctx.info(0)?.name,
            cond.dtype,
            cond.shape()
        )));
    }
    let args = inputs_from(ctx, 1)?;
    let want = ctx.op.outputs.len();
    let (scope, graph) = (ctx.scope, &mut *ctx.graph);
    let (then_index, else_index) = (o.then_subgraph_index, o.else_subgraph_index);
    if let Ok(known) = evaluate(graph, std::slice::from_ref(&cond), &[]) {
        let (role, index) = match first_true(&known[0]) {
            true => ("then", then_index),
            false => ("else", else_index),
        };
        let outs = lower_subgraph(scope, graph, role, index, &args)?;
        expect_outputs(role, index, &outs, want)?;
        return Ok(outs);
    }
    let then = lower_subgraph(scope, graph, "then", then_index, &args)?;
    expect_outputs("then", then_index, &then, want)?;
    let other = lower_subgraph(scope, graph, "else", else_index, &args)?;
    expect_outputs("else", else_index, &other, want)?;
    let c = cond
        .reshape(&[cond.numel()])?
        .shrink(&[(0, 1)])?
        .reshape(&[])?;
    let mut outs = Vec::with_capacity(want);
    for (k, (a, b)) in then.iter().zip(&other).enumerate() {
        if a.dtype != b.dtype || a.shape() != b.shape() {
            return Err(OpError::Invalid(format!(
                "output {k}: the then subgraph {then_index} gives {} {:?}, the else subgraph \
                 {else_index} gives {} {:?}",
                a.dtype,
                a.shape(),
                b.dtype,
                b.shape()
            )));
        }
        outs.push(graph.where_(&c, a, b)?);
    }
    Ok(outs)
}

/// `WHILE`: its inputs are the loop variables, its outputs their values once the condition
/// subgraph gives false; the body subgraph maps the variables to their next values.
fn while_op(ctx: &mut Ctx) -> Out {
    let o = ctx.options(|o| match o {
        BuiltinOptions::WhileOptions(o) => Some(o.as_ref()),
        _ => None,
    });
    let vars = inputs_from(ctx, 0)?;
    if vars.len() != ctx.op.outputs.len() {
        return Err(OpError::Invalid(format!(
            "a WHILE has as many outputs as inputs: this one has {} inputs and {} outputs",
            vars.len(),
            ctx.op.outputs.len()
        )));
    }
    let (cond_index, body_index) = (o.cond_subgraph_index, o.body_subgraph_index);
    let count = trip_count(ctx, &vars, cond_index, body_index)?;
    if count == 0 {
        return Ok(vars);
    }
    let mut body = Graph::new();
    let inputs: Vec<Lazy> = vars
        .iter()
        .enumerate()
        .map(|(k, v)| body.input(&format!("while_var{k}"), v.dtype, v.shape()))
        .collect();
    let next = lower_subgraph(ctx.scope, &mut body, "body", body_index, &inputs)?;
    expect_outputs("body", body_index, &next, vars.len())?;
    let n = vars.len();
    let body = LoopBody {
        count,
        graph: body,
        outputs: next,
        inputs: (0..n)
            .map(|k| LoopInput::State { init: k, next: k })
            .collect(),
        results: (0..n).map(|input| LoopResult::Final { input }).collect(),
    };
    Ok(ctx.graph.repeat(body, &vars)?)
}

/// How many times a `WHILE`'s body runs, found by running its condition (and the loop
/// variables it reads, through the body) at compile time.
fn trip_count(
    ctx: &mut Ctx,
    vars: &[Lazy],
    cond_index: i32,
    body_index: i32,
) -> Result<usize, OpError> {
    let mut probe = Graph::new();
    let inputs: Vec<Lazy> = vars
        .iter()
        .enumerate()
        .map(|(k, v)| probe.input(&format!("while_var{k}"), v.dtype, v.shape()))
        .collect();
    let cond = lower_subgraph(ctx.scope, &mut probe, "cond", cond_index, &inputs)?;
    expect_outputs("cond", cond_index, &cond, 1)?;
    let next = lower_subgraph(ctx.scope, &mut probe, "body", body_index, &inputs)?;
    expect_outputs("body", body_index, &next, vars.len())?;
    let known: Vec<Option<Tensor>> = vars
        .iter()
        .map(|v| {
            evaluate(ctx.graph, std::slice::from_ref(v), &[])
                .ok()
                .map(|mut t| t.remove(0))
        })
        .collect();
    let fixed = compile_time_vars(&probe, &known, &next);
    if let Some(k) = reads(&probe, &cond[0]).into_iter().find(|&k| !fixed[k]) {
        return Err(OpError::Unsupported(format!(
            "WHILE whose condition (subgraph {cond_index}) reads loop variable {k} ({:?}), \
             which is not known at compile time: Kiln runs a WHILE a number of times fixed \
             when it compiles",
            ctx.info(k)?.name
        )));
    }
    let mut state: Vec<Tensor> = known
        .into_iter()
        .zip(vars)
        .map(|(t, v)| t.unwrap_or_else(|| zeros(v)))
        .collect();
    let carried: Vec<usize> = (0..vars.len()).filter(|&k| fixed[k]).collect();
    let outs: Vec<Lazy> = carried.iter().map(|&k| next[k].clone()).collect();
    let fail = |e| OpError::Invalid(format!("running the WHILE at compile time: {e}"));
    for trips in 0..=MAX_TRIPS {
        let go = evaluate(&probe, &cond, &state).map_err(fail)?;
        if !first_true(&go[0]) {
            return Ok(trips);
        }
        let values = evaluate(&probe, &outs, &state).map_err(fail)?;
        for (&k, v) in carried.iter().zip(values) {
            state[k] = v;
        }
    }
    Err(OpError::Unsupported(format!(
        "WHILE that runs more than {MAX_TRIPS} iterations"
    )))
}

/// Which loop variables have values known at compile time in every iteration: known at the
/// start, and computed by the body from such variables only.
fn compile_time_vars(probe: &Graph, known: &[Option<Tensor>], next: &[Lazy]) -> Vec<bool> {
    let mut fixed: Vec<bool> = known.iter().map(Option::is_some).collect();
    let deps: Vec<Vec<usize>> = next.iter().map(|x| reads(probe, x)).collect();
    loop {
        let lost: Vec<usize> = (0..fixed.len())
            .filter(|&k| fixed[k] && deps[k].iter().any(|&j| !fixed[j]))
            .collect();
        if lost.is_empty() {
            return fixed;
        }
        for k in lost {
            fixed[k] = false;
        }
    }
}

/// The inputs of `graph` that `x` reads.
fn reads(graph: &Graph, x: &Lazy) -> Vec<usize> {
    graph
        .toposort(std::slice::from_ref(x))
        .into_iter()
        .filter_map(|id| match graph.node(id).op {
            GOp::Input(k) => Some(k),
            _ => None,
        })
        .collect()
}

/// Zeros of `v`'s type and shape: the stand-in for a variable the condition never reads.
fn zeros(v: &Lazy) -> Tensor {
    let bytes = vec![0; v.numel() * v.dtype.scalar.size()];
    Tensor::new(v.dtype.scalar, v.shape().to_vec(), bytes).expect("sized to fit")
}

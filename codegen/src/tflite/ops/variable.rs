//! Resource variables, the state of streaming models (microWakeWord's ring buffers):
//! `VAR_HANDLE`, `READ_VARIABLE`, `ASSIGN_VARIABLE`, and `CALL_ONCE`, which runs an
//! initialization subgraph before the first invocation.
//!
//! As in TFLM, a variable is named by its handle's container and shared name, in every
//! subgraph; its type and shape are those of the values assigned to it, and it starts as zeros.
//! Each variable is a state of the graph ([`Graph::state`]): a read sees the value as the run
//! started, or the last value assigned before it in this run; the last assignment is the next
//! run's value. `CALL_ONCE`'s subgraph runs at compile time: its assignments are the
//! variables' initial values, which a reset restores.
//!
//! A handle is a compile-time int32, the variable's index among the graph's states.

use super::{control, Ctx};
use crate::dtype::DType;
use crate::graph::eval::evaluate;
use crate::graph::{Graph, Lazy};
use crate::tflite::error::{OpError, TfliteError};
use crate::tflite::model::{TfOp, TfliteModel};
use kiln_tflite_schema::tflite::{BuiltinOperator as Op, BuiltinOptions};

pub(super) const OPS: &[(Op, super::OpBuilder)] = &[
    (Op::VarHandle, var_handle),
    (Op::ReadVariable, read_variable),
    (Op::AssignVariable, assign_variable),
    (Op::CallOnce, call_once),
];

type Out = Result<Vec<Lazy>, OpError>;

/// The name a handle op gives its variable: `container/shared_name`, or the shared name alone.
fn variable_name(op: &TfOp) -> String {
    let o = match &op.options {
        Some(BuiltinOptions::VarHandleOptions(o)) => o.as_ref().clone(),
        _ => Default::default(),
    };
    let shared = o.shared_name.unwrap_or_default();
    match o.container.filter(|c| !c.is_empty()) {
        Some(c) => format!("{c}/{shared}"),
        None => shared,
    }
}

/// Makes a state of `graph` for every variable the model assigns, typed and shaped by its
/// assignments, which must agree (across all subgraphs).
pub(in crate::tflite) fn declare(
    model: &TfliteModel,
    graph: &mut Graph,
) -> Result<(), TfliteError> {
    let subgraphs = std::iter::once(model).chain(&model.bodies);
    for (index, sub) in subgraphs.enumerate() {
        for op in sub.ops.iter().filter(|op| op.code == Op::AssignVariable) {
            let (Some(Some(handle)), Some(Some(value))) = (op.inputs.first(), op.inputs.get(1))
            else {
                continue;
            };
            let Some(var) = sub.ops.iter().find(|o| o.outputs.contains(handle)) else {
                continue;
            };
            let name = variable_name(var);
            let t = sub.tensor(*value);
            let (dtype, shape) = (DType::from(t.dtype), t.shape.clone());
            match graph.states.iter().find(|s| s.name == name) {
                Some(s) if s.dtype != dtype || s.shape != shape => {
                    return Err(TfliteError::Variable {
                        reason: format!(
                            "assigned {} {:?} before, and {dtype} {shape:?} by operator {} of \
                             subgraph {index}: a variable keeps one type and shape",
                            s.dtype, s.shape, op.index
                        ),
                        name,
                    })
                }
                Some(_) => {}
                None => {
                    graph
                        .state(&name, dtype, &shape, None)
                        .map_err(|e| TfliteError::Variable {
                            name: name.clone(),
                            reason: e.to_string(),
                        })?;
                }
            }
        }
    }
    Ok(())
}

/// The state a handle (input `i`) names.
fn state_of(ctx: &mut Ctx, i: usize) -> Result<usize, OpError> {
    let handle = ctx.input(i)?;
    let index = ctx.graph.const_value(&handle).map(|c| c.as_i64());
    match index.and_then(|n| usize::try_from(n).ok()) {
        Some(n) if n < ctx.graph.states.len() => Ok(n),
        _ => Err(OpError::Invalid(format!(
            "input {i} ({:?}) is not a variable handle of this graph (variables live in the \
             main subgraph and the subgraphs IF and CALL_ONCE run, not in a WHILE's)",
            ctx.info(i)?.name
        ))),
    }
}

/// `VAR_HANDLE`: the variable's handle.
fn var_handle(ctx: &mut Ctx) -> Out {
    let name = variable_name(ctx.op);
    let Some(n) = ctx.graph.states.iter().position(|s| s.name == name) else {
        let output = ctx.op.outputs.first().copied();
        let read =
            ctx.model.ops.iter().any(|o| {
                o.code == Op::ReadVariable && o.inputs.first().copied().flatten() == output
            });
        if read {
            return Err(OpError::Invalid(format!(
                "variable {name:?} is read but never assigned: it has no type or shape"
            )));
        }
        // A handle nothing reads through: never used.
        return Ok(vec![ctx.graph.constant(-1.0, DType::I32, &[])]);
    };
    Ok(vec![ctx.graph.constant(n as f64, DType::I32, &[])])
}

/// `READ_VARIABLE`: the variable's value so far in this run (in `CALL_ONCE`'s subgraph: its
/// initial value so far).
fn read_variable(ctx: &mut Ctx) -> Out {
    let n = state_of(ctx, 0)?;
    let value = match ctx.scope.init {
        true => initial_value(ctx.graph, n),
        false => ctx.graph.current_state(n),
    };
    let out = ctx.out_info(0)?;
    if out.dtype != value.dtype.scalar || out.shape != value.shape() {
        return Err(OpError::Invalid(format!(
            "output {:?} is {} {:?}, the variable {:?} {} {:?}",
            out.name,
            out.dtype,
            out.shape,
            ctx.graph.states[n].name,
            value.dtype,
            value.shape()
        )));
    }
    Ok(vec![value])
}

/// State `n`'s initial value as a constant.
fn initial_value(graph: &mut Graph, n: usize) -> Lazy {
    let s = &graph.states[n];
    let (name, dtype, shape) = (s.name.clone(), s.dtype, s.shape.clone());
    match s.init.clone() {
        Some(t) => graph.weight(&name, t),
        None => graph.constant(0.0, dtype, &shape),
    }
}

/// `ASSIGN_VARIABLE`: the variable's next value (in `CALL_ONCE`'s subgraph: its initial value,
/// which must be known at compile time).
fn assign_variable(ctx: &mut Ctx) -> Out {
    let n = state_of(ctx, 0)?;
    let value = ctx.input(1)?;
    if !ctx.scope.init {
        ctx.graph.set_next_state(n, &value)?;
        return Ok(vec![]);
    }
    let name = ctx.graph.states[n].name.clone();
    let known = evaluate(ctx.graph, std::slice::from_ref(&value), &[]).map_err(|e| {
        OpError::Invalid(format!(
            "the initial value of variable {name:?} is not known at compile time ({e}); Kiln \
             runs CALL_ONCE's subgraph when it compiles"
        ))
    })?;
    let init = known.into_iter().next().expect("one value asked for");
    ctx.graph.set_initial_state(n, init)?;
    Ok(vec![])
}

/// `CALL_ONCE`: its subgraph sets the variables' initial values.
fn call_once(ctx: &mut Ctx) -> Out {
    let index = match &ctx.op.options {
        Some(BuiltinOptions::CallOnceOptions(o)) => o.init_subgraph_index,
        _ => 0,
    };
    let scope = super::Scope {
        init: true,
        ..ctx.scope
    };
    let outs = control::lower_subgraph(scope, ctx.graph, "init", index, &[])?;
    if !outs.is_empty() {
        return Err(OpError::Invalid(format!(
            "init subgraph {index} gives {} outputs, CALL_ONCE takes none",
            outs.len()
        )));
    }
    Ok(vec![])
}

//! Comparisons, logic, selection and type conversion.

use super::ctx::{dtype_of, invalid, output_name, Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::DType;
use crate::graph::{Graph, GraphError, Lazy};
use crate::onnx::narrow::ScaleRounding;
use crate::onnx::{AttrValue, ElemType, Narrow};
use crate::ops::BinaryOp;

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Equal", equal),
    ("Less", less),
    ("Greater", greater),
    ("LessOrEqual", less_or_equal),
    ("GreaterOrEqual", greater_or_equal),
    ("Not", not),
    ("And", and),
    ("Or", or),
    ("Xor", xor),
    ("Where", where_),
    ("IsNaN", is_nan),
    ("IsInf", is_inf),
    ("Cast", cast),
    ("CastLike", cast_like),
    ("BitCast", bit_cast),
    ("Identity", identity),
];

type Out = Result<Vec<Value>, OpError>;

fn compare(ctx: &mut Ctx, f: fn(&mut Graph, &Lazy, &Lazy) -> Result<Lazy, GraphError>) -> Out {
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    Ok(vec![Value::Tensor(f(ctx.graph, &a, &b)?)])
}

fn equal(ctx: &mut Ctx) -> Out {
    compare(ctx, Graph::eq)
}

fn less(ctx: &mut Ctx) -> Out {
    compare(ctx, Graph::lt)
}

fn greater(ctx: &mut Ctx) -> Out {
    compare(ctx, |g, a, b| g.lt(b, a))
}

fn less_or_equal(ctx: &mut Ctx) -> Out {
    compare(ctx, Graph::le)
}

fn greater_or_equal(ctx: &mut Ctx) -> Out {
    compare(ctx, |g, a, b| g.le(b, a))
}

fn and(ctx: &mut Ctx) -> Out {
    compare(ctx, |g, a, b| g.binary(BinaryOp::And, a, b))
}

fn or(ctx: &mut Ctx) -> Out {
    compare(ctx, |g, a, b| g.binary(BinaryOp::Or, a, b))
}

fn xor(ctx: &mut Ctx) -> Out {
    compare(ctx, |g, a, b| g.binary(BinaryOp::CmpNe, a, b))
}

fn not(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    Ok(vec![Value::Tensor(ctx.graph.not(&x)?)])
}

fn where_(ctx: &mut Ctx) -> Out {
    let (c, a, b) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
    Ok(vec![Value::Tensor(ctx.graph.where_(&c, &a, &b)?)])
}

fn is_nan(ctx: &mut Ctx) -> Out {
    let x = ctx.tensor(0)?;
    Ok(vec![Value::Tensor(ctx.graph.binary(
        BinaryOp::CmpNe,
        &x,
        &x,
    )?)])
}

fn is_inf(ctx: &mut Ctx) -> Out {
    let pos = ctx.attrs().int_or("detect_positive", 1)? != 0;
    let neg = ctx.attrs().int_or("detect_negative", 1)? != 0;
    let x = ctx.tensor(0)?;
    let g = &mut *ctx.graph;
    let mut y = g.constant(0.0, DType::BOOL, x.shape());
    for (on, v) in [(pos, f64::INFINITY), (neg, f64::NEG_INFINITY)] {
        if on {
            let c = g.scalar_like(&x, v);
            let hit = g.eq(&x, &c)?;
            y = g.binary(BinaryOp::Or, &y, &hit)?;
        }
    }
    Ok(vec![Value::Tensor(y)])
}

/// Converts with C semantics (floats truncate toward zero); to bool compares with zero.
fn convert(g: &mut Graph, x: &Lazy, to: DType) -> Result<Lazy, GraphError> {
    if to == DType::BOOL {
        g.to_bool(x)
    } else {
        Ok(g.cast(x, to))
    }
}

fn cast(ctx: &mut Ctx) -> Out {
    let elem = match ctx.attrs().get("to") {
        // Before opset 6 the type is named (`"FLOAT"`).
        Some(AttrValue::String(name)) => ElemType::from_name(name)
            .ok_or_else(|| invalid(format!("attribute \"to\" names no element type: {name:?}")))?,
        _ => {
            let code = ctx.attrs().int("to")?;
            ElemType::from_code(i32::try_from(code).unwrap_or(-1))
        }
    };
    if let Some(narrow) = elem.narrow() {
        return cast_to_narrow(ctx, narrow);
    }
    let to = dtype_of(elem, output_name(ctx.node, 0))?;
    let x = ctx.tensor(0)?;
    Ok(vec![Value::Tensor(convert(ctx.graph, &x, to)?)])
}

/// Converts input 0 to a narrow type, as the node's `saturate` and `round_mode` say.
fn cast_to_narrow(ctx: &mut Ctx, narrow: Narrow) -> Out {
    let saturate = ctx.attrs().int_or("saturate", 1)? != 0;
    let mode = ctx.attrs().string_or("round_mode", "up".into())?;
    let rounding = ScaleRounding::from_name(&mode).ok_or_else(|| {
        invalid(format!(
            "round_mode {mode:?} is not one of \"up\", \"down\", \"nearest\""
        ))
    })?;
    let x = ctx.tensor(0)?;
    let y = narrow.convert(ctx.graph, &x, saturate, rounding)?;
    ctx.set_narrow(0, narrow);
    Ok(vec![Value::Tensor(y)])
}

/// Reinterprets the bits of each element as type `to`, of the same size.
fn bit_cast(ctx: &mut Ctx) -> Out {
    let code = ctx.attrs().int("to")?;
    let elem = ElemType::from_code(i32::try_from(code).unwrap_or(-1));
    let to = dtype_of(elem, output_name(ctx.node, 0))?;
    let x = ctx.tensor(0)?;
    if x.dtype.size() != to.size() {
        return Err(invalid(format!(
            "{} ({} bytes) and {to} ({} bytes) differ in size",
            x.dtype,
            x.dtype.size(),
            to.size()
        )));
    }
    if x.dtype == to {
        return Ok(vec![Value::Tensor(x)]);
    }
    Ok(vec![Value::Tensor(ctx.graph.bitcast(&x, to))])
}

fn cast_like(ctx: &mut Ctx) -> Out {
    if let Some(narrow) = ctx.narrow(1) {
        return cast_to_narrow(ctx, narrow);
    }
    let to = ctx.dtype(1)?;
    let x = ctx.tensor(0)?;
    Ok(vec![Value::Tensor(convert(ctx.graph, &x, to)?)])
}

/// Passes its input through, known values staying known.
fn identity(ctx: &mut Ctx) -> Out {
    Ok(vec![ctx.value(0)?.clone()])
}

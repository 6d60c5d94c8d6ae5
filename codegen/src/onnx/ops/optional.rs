//! Optionals of tensors, resolved at compile time: an input is there or it is not, so an
//! optional holding a tensor is the tensor itself, and whether it holds one is a constant.

use super::ctx::{Ctx, OpError, Value};
use super::OpBuilder;
use crate::dtype::Scalar;
use crate::tensor::Tensor;

pub(super) const OPS: &[(&str, OpBuilder)] = &[
    ("Optional", optional),
    ("OptionalHasElement", optional_has_element),
    ("OptionalGetElement", optional_get_element),
];

type Out = Result<Vec<Value>, OpError>;

/// The one input, which must be there: an empty optional has no value Kiln could carry.
fn held(ctx: &Ctx, what: &str) -> Out {
    match ctx.has(0) {
        true => Ok(vec![ctx.value(0)?.clone()]),
        false => Err(OpError::Unsupported(format!("{what} of an empty optional"))),
    }
}

fn optional(ctx: &mut Ctx) -> Out {
    held(ctx, "Optional")
}

fn optional_get_element(ctx: &mut Ctx) -> Out {
    held(ctx, "OptionalGetElement")
}

fn optional_has_element(ctx: &mut Ctx) -> Out {
    let has = u8::from(ctx.has(0));
    Ok(vec![Value::known(Tensor::new(
        Scalar::Bool,
        vec![],
        vec![has],
    )?)])
}

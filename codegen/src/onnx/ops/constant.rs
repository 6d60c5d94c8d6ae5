//! `Constant`: a tensor known at compile time, from whichever `value*` attribute it has.

use super::ctx::{Ctx, OpError, Value};
use super::OpBuilder;

pub(super) const OPS: &[(&str, OpBuilder)] = &[("Constant", constant)];

fn constant(ctx: &mut Ctx) -> Result<Vec<Value>, OpError> {
    Ok(vec![Value::known(ctx.attrs().constant()?)])
}

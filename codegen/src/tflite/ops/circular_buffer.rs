//! TFLM's `CIRCULAR_BUFFER` custom op (`tensorflow/lite/micro/kernels/circular_buffer.cc`):
//! the last `num_slots` int8 frames of depth `depth`, the newest last. Each invocation shifts
//! the buffer by one frame and writes the input at its end.
//!
//! TFLM keeps the buffer in the op's output tensor and so starts from whatever the arena held;
//! here it is a state of the graph, zeros at load and after a reset. With `cycles_max` above 1
//! TFLM stops the rest of the graph (`kTfLiteAbort`) on all but one of every `cycles_max`
//! invocations; Kiln runs every op at every invocation, so it refuses such a buffer, naming it.
//! Without `cycles_max`, TFLM guesses it from the shapes of the two streaming models it was
//! written for: 1 for 5, 13 or 25 slots, else (but for one layer of one model) 2.

use super::signal::expect_type;
use super::{Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::Lazy;
use crate::tflite::error::OpError;

pub(super) const CUSTOM: &[(&str, OpBuilder)] = &[("CIRCULAR_BUFFER", circular_buffer)];

fn circular_buffer(ctx: &mut Ctx) -> Result<Vec<Lazy>, OpError> {
    expect_type(ctx, 0, Scalar::I8)?;
    let x = ctx.input(0)?;
    let out = ctx.out_info(0)?.clone();
    let [batch, 1, rows, depth] = *x.shape() else {
        return Err(OpError::Invalid(format!(
            "input {:?} is not one frame [1, 1, rows, depth]",
            x.shape()
        )));
    };
    let slots = match out.shape.as_slice() {
        &[b, slots, r, d] if (b, r, d) == (batch, rows, depth) && slots >= 1 => slots,
        other => {
            return Err(OpError::Invalid(format!(
                "output {:?} has shape {other:?}, not [{batch}, slots, {rows}, {depth}]",
                out.name
            )))
        }
    };
    let cycles = match ctx.custom_options()?.int("cycles_max")? {
        Some(c) if c > 0 => c,
        _ if [5, 13, 25].contains(&slots) => 1,
        _ => 2,
    };
    if cycles != 1 {
        return Err(OpError::Unsupported(format!(
            "buffer {:?} runs the rest of the graph once every {cycles} invocations \
             (cycles_max {cycles}: TFLM aborts the others); Kiln runs every op at every \
             invocation",
            out.name
        )));
    }
    let g = &mut *ctx.graph;
    let (held, n) = g.state(&out.name, DType::I8, &[batch, slots, rows, depth], None)?;
    let kept = held.slice_axis(1, 1, slots as i64, 1)?;
    let next = g.concat(&[kept, x], 1)?;
    g.set_next_state(n, &next)?;
    Ok(vec![next])
}

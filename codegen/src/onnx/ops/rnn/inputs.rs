//! A recurrent layer's inputs: their shapes checked against X's, `sequence_lens` as a step
//! mask, and the initial states.

use super::*;

/// Checks the inputs' shapes and types against X's (time-major or batch-first) and each other.
pub(super) fn check_shapes(
    ctx: &Ctx,
    cell: Cell,
    attrs: &Attrs,
    x: &Lazy,
) -> Result<Dims, OpError> {
    let dtype = x.dtype;
    if !dtype.is_float() {
        return Err(invalid(format!("X is {dtype}, not a floating-point type")));
    }
    let xs = x.shape();
    if xs.len() != 3 {
        return Err(invalid(format!("X {xs:?} is not 3-D")));
    }
    let (t, batch) = match attrs.batch_first {
        true => (xs[1], xs[0]),
        false => (xs[0], xs[1]),
    };
    let input = xs[2];
    let directions = attrs.reverse.len();
    let gates = cell.gates();
    let r = ctx.shape(R)?;
    let hidden = match r.as_slice() {
        [_, _, h] => *h,
        _ => return Err(invalid(format!("R {r:?} is not 3-D"))),
    };
    if let Some(hs) = attrs.hidden_size {
        if hs != hidden {
            return Err(attr_error(
                "hidden_size",
                format!("{hs} does not match R {r:?}"),
            ));
        }
    }
    let gh = gates * hidden;
    let mut expect = vec![
        (W, "W", vec![directions, gh, input]),
        (R, "R", vec![directions, gh, hidden]),
        (B, "B", vec![directions, 2 * gh]),
    ];
    let state = match attrs.batch_first {
        true => vec![batch, directions, hidden],
        false => vec![directions, batch, hidden],
    };
    expect.push((INITIAL_H, "initial_h", state.clone()));
    if cell == Cell::Lstm {
        expect.push((INITIAL_C, "initial_c", state));
        expect.push((P, "P", vec![directions, 3 * hidden]));
    }
    for (i, name, shape) in expect {
        if !ctx.has(i) {
            if i == W || i == R {
                return Err(OpError::MissingInput { index: i });
            }
            continue;
        }
        let got = ctx.shape(i)?;
        if got != shape {
            return Err(invalid(format!(
                "{name} {got:?} is not {shape:?} (direction {:?}, X {xs:?}, hidden size {hidden})",
                match directions {
                    2 => "bidirectional",
                    _ if attrs.reverse[0] => "reverse",
                    _ => "forward",
                }
            )));
        }
        let dt = ctx.dtype(i)?;
        if dt != dtype {
            return Err(invalid(format!("{name} is {dt}, X is {dtype}")));
        }
    }
    if ctx.has(SEQUENCE_LENS) {
        let s = ctx.shape(SEQUENCE_LENS)?;
        if s != [batch] {
            return Err(invalid(format!("sequence_lens {s:?} is not [{batch}]")));
        }
        let dt = ctx.dtype(SEQUENCE_LENS)?;
        if !dt.is_int() {
            return Err(invalid(format!("sequence_lens is {dt}, not integers")));
        }
    }
    Ok(Dims {
        t,
        batch,
        hidden,
        directions,
        dtype,
    })
}

/// Where each batch element is in its sequence: at each step (`steps`, (T, B, 1) bool), and
/// whether its sequence has any step at all (`any`, (B, 1) bool).
pub(super) struct Lengths {
    pub(super) steps: Lazy,
    pub(super) any: Lazy,
}

/// The [`Lengths`] of `sequence_lens`: `None` when there is none, or it is known to cover
/// every step.
pub(super) fn step_mask(ctx: &mut Ctx, dims: &Dims) -> Result<Option<Lengths>, OpError> {
    if !ctx.has(SEQUENCE_LENS) {
        return Ok(None);
    }
    if let Some(lens) = ctx.known_ints(SEQUENCE_LENS)? {
        if lens.iter().all(|&n| n >= dims.t as i64) {
            return Ok(None);
        }
    }
    let lens = ctx.tensor(SEQUENCE_LENS)?;
    let (t, b) = (dims.t, dims.batch);
    let g = &mut *ctx.graph;
    let lens = g.cast(&lens, DType::I32).reshape(&[1, b, 1])?;
    let zero = g.constant(0.0, DType::I32, &[1, b, 1]);
    let any = g.lt(&zero, &lens)?.reshape(&[b, 1])?;
    let lens = lens.expand(&[t, b, 1])?;
    let steps = g
        .arange(t, DType::I32)
        .reshape(&[t, 1, 1])?
        .expand(&[t, b, 1])?;
    let steps = g.lt(&steps, &lens)?;
    Ok(Some(Lengths { steps, any }))
}

/// The initial value of state input `input` (initial_h or initial_c) for direction `d`, (B, H):
/// zeros when omitted.
pub(super) fn initial_state(
    ctx: &mut Ctx,
    input: usize,
    d: usize,
    dims: &Dims,
    batch_first: bool,
) -> Result<Lazy, OpError> {
    let (b, h) = (dims.batch, dims.hidden);
    if !ctx.has(input) {
        return Ok(ctx.graph.constant(0.0, dims.dtype, &[b, h]));
    }
    let s = ctx.tensor(input)?;
    let s = match batch_first {
        true => s.permute(&[1, 0, 2])?,
        false => s,
    };
    Ok(s.shrink(&[(d, d + 1), (0, b), (0, h)])?.reshape(&[b, h])?)
}

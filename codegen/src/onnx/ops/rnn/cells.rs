//! The cells, one step each, as the loop body computes them: RNN, GRU and LSTM, on the body
//! under construction ([`Body`]) and its small matrix helpers.

use super::*;

/// A loop body under construction, with the operands its inputs are fed from.
pub(super) struct Body {
    pub(super) g: Graph,
    pub(super) inputs: Vec<LoopInput>,
    pub(super) operands: Vec<Lazy>,
}

impl Body {
    pub(super) fn new() -> Body {
        Body {
            g: Graph::new(),
            inputs: Vec::new(),
            operands: Vec::new(),
        }
    }

    pub(super) fn operand(&mut self, x: &Lazy) -> usize {
        self.operands.push(x.clone());
        self.operands.len() - 1
    }

    /// An input fed row `t` of `x` (row `T - 1 - t` when `reverse`) at step `t`.
    pub(super) fn row(&mut self, name: &str, x: &Lazy, reverse: bool) -> Lazy {
        let operand = self.operand(x);
        self.inputs.push(LoopInput::Row { operand, reverse });
        self.g.input(name, x.dtype, &x.shape()[1..])
    }

    /// A state starting at `init`: the input, and its index (whose `next` is set by
    /// [`Body::carry`]).
    pub(super) fn state(&mut self, name: &str, init: &Lazy) -> (Lazy, usize) {
        let init_operand = self.operand(init);
        self.inputs.push(LoopInput::State {
            init: init_operand,
            next: usize::MAX,
        });
        let k = self.inputs.len() - 1;
        (self.g.input(name, init.dtype, init.shape()), k)
    }

    /// Says that body output `output` is the next value of state input `k`.
    pub(super) fn carry(&mut self, k: usize, output: usize) {
        if let LoopInput::State { next, .. } = &mut self.inputs[k] {
            *next = output;
        }
    }

    /// A parameter: a weight of the body when known, else an input fed the same operand at
    /// every step.
    pub(super) fn param(&mut self, name: &str, p: Param) -> Result<Lazy, OpError> {
        match p {
            Param::Known(t) => materialize(&mut self.g, name, &t),
            Param::Computed(l) => {
                let operand = self.operand(&l);
                self.inputs.push(LoopInput::Invariant { operand });
                Ok(self.g.input(name, l.dtype, l.shape()))
            }
        }
    }
}

/// Columns `from..to` of a (batch, n) matrix.
pub(super) fn columns(x: &Lazy, from: usize, to: usize) -> GResult {
    x.shrink(&[(0, x.shape()[0]), (from, to)])
}

/// `h · Rᵀ` for a (rows, hidden) R.
pub(super) fn times_transposed(g: &mut Graph, h: &Lazy, r: &Lazy) -> GResult {
    let rt = r.permute(&[1, 0])?;
    g.matmul(h, &rt)
}

pub(super) fn add(g: &mut Graph, a: &Lazy, b: &Lazy) -> GResult {
    g.binary(BinaryOp::Add, a, b)
}

pub(super) fn mul(g: &mut Graph, a: &Lazy, b: &Lazy) -> GResult {
    g.binary(BinaryOp::Mul, a, b)
}

/// One GRU step: the next hidden state from the step's input projection `xw` (B, 3H) and the
/// previous state `h_prev` (B, H).
pub(super) fn gru_step(
    ctx: &mut Ctx,
    body: &mut Body,
    attrs: &Attrs,
    dims: &Dims,
    d: usize,
    xw: &Lazy,
    h_prev: &Lazy,
) -> Result<Lazy, OpError> {
    let h = dims.hidden;
    let (f, act_g) = (attrs.activations[d][0], attrs.activations[d][1]);
    let clip = attrs.clip;
    let (xz, xr, xh) = (
        columns(xw, 0, h)?,
        columns(xw, h, 2 * h)?,
        columns(xw, 2 * h, 3 * h)?,
    );
    if attrs.linear_before_reset {
        // ht = g(xh + r ⊙ (h·Rhᵀ + Rbh)): one product with all of R.
        let r = direction_param(ctx, R, d, (0, 3 * h * h), &[3 * h, h])?;
        let r = body.param("R", r)?;
        let rbh = match ctx.has(B) {
            true => Some(direction_param(ctx, B, d, (3 * h + 2 * h, 6 * h), &[h])?),
            false => None,
        };
        let rbh = rbh.map(|p| body.param("Rbh", p)).transpose()?;
        let g = &mut body.g;
        let hr = times_transposed(g, h_prev, &r)?;
        let z = add(g, &xz, &columns(&hr, 0, h)?)?;
        let z = f.apply(g, &z, clip)?;
        let rg = add(g, &xr, &columns(&hr, h, 2 * h)?)?;
        let rg = f.apply(g, &rg, clip)?;
        let mut hh = columns(&hr, 2 * h, 3 * h)?;
        if let Some(rbh) = rbh {
            hh = add(g, &hh, &rbh)?;
        }
        let hh = mul(g, &rg, &hh)?;
        let hh = add(g, &xh, &hh)?;
        let hh = act_g.apply(g, &hh, clip)?;
        return Ok(gru_update(g, &z, &hh, h_prev)?);
    }
    // ht = g(xh + (r ⊙ h)·Rhᵀ): the reset gate comes before the product.
    let rzr = direction_param(ctx, R, d, (0, 2 * h * h), &[2 * h, h])?;
    let rzr = body.param("Rzr", rzr)?;
    let rh = direction_param(ctx, R, d, (2 * h * h, 3 * h * h), &[h, h])?;
    let rh = body.param("Rh", rh)?;
    let g = &mut body.g;
    let hr = times_transposed(g, h_prev, &rzr)?;
    let z = add(g, &xz, &columns(&hr, 0, h)?)?;
    let z = f.apply(g, &z, clip)?;
    let rg = add(g, &xr, &columns(&hr, h, 2 * h)?)?;
    let rg = f.apply(g, &rg, clip)?;
    let reset = mul(g, &rg, h_prev)?;
    let hh = times_transposed(g, &reset, &rh)?;
    let hh = add(g, &xh, &hh)?;
    let hh = act_g.apply(g, &hh, clip)?;
    Ok(gru_update(g, &z, &hh, h_prev)?)
}

/// `(1 - z) ⊙ hh + z ⊙ h`, as `hh + z ⊙ (h - hh)`.
pub(super) fn gru_update(g: &mut Graph, z: &Lazy, hh: &Lazy, h: &Lazy) -> GResult {
    let diff = g.binary(BinaryOp::Sub, h, hh)?;
    let zd = mul(g, z, &diff)?;
    add(g, hh, &zd)
}

/// One LSTM step: the next hidden and cell states from the step's input projection `xw`
/// (B, 4H, gates i, o, f, c) and the previous states (B, H).
#[allow(clippy::too_many_arguments)]
pub(super) fn lstm_step(
    ctx: &mut Ctx,
    body: &mut Body,
    attrs: &Attrs,
    dims: &Dims,
    d: usize,
    xw: &Lazy,
    h_prev: &Lazy,
    c_prev: &Lazy,
) -> Result<(Lazy, Lazy), OpError> {
    let h = dims.hidden;
    let acts = &attrs.activations[d];
    let (f, act_g, act_h) = (acts[0], acts[1], acts[2]);
    let clip = attrs.clip;
    let r = direction_param(ctx, R, d, (0, 4 * h * h), &[4 * h, h])?;
    let r = body.param("R", r)?;
    // The peepholes (i, o, f), unless omitted or known to be all 0.
    let peepholes = ctx.has(P) && ctx.uniform(P) != Some(0.0);
    let mut peep = Vec::new();
    if peepholes {
        for (k, name) in ["Pi", "Po", "Pf"].into_iter().enumerate() {
            let p = direction_param(ctx, P, d, (k * h, (k + 1) * h), &[h])?;
            peep.push(body.param(name, p)?);
        }
    }
    let g = &mut body.g;
    let gates = times_transposed(g, h_prev, &r)?;
    let gates = add(g, xw, &gates)?;
    let gate = |k: usize| columns(&gates, k * h, (k + 1) * h);
    let (gi, go, gf, gc) = (gate(0)?, gate(1)?, gate(2)?, gate(3)?);
    let with_peephole = |g: &mut Graph, x: &Lazy, k: usize, c: &Lazy| -> GResult {
        match peep.get(k) {
            Some(p) => {
                let pc = mul(g, p, c)?;
                add(g, x, &pc)
            }
            None => Ok(x.clone()),
        }
    };
    let gi = with_peephole(g, &gi, 0, c_prev)?;
    let i = f.apply(g, &gi, clip)?;
    let forget = match attrs.input_forget {
        // Coupled gates: what is let in is forgotten.
        true => {
            let one = g.scalar_like(&i, 1.0);
            g.binary(BinaryOp::Sub, &one, &i)?
        }
        false => {
            let gf = with_peephole(g, &gf, 2, c_prev)?;
            f.apply(g, &gf, clip)?
        }
    };
    let cc = act_g.apply(g, &gc, clip)?;
    let kept = mul(g, &forget, c_prev)?;
    let added = mul(g, &i, &cc)?;
    let c_next = add(g, &kept, &added)?;
    let go = with_peephole(g, &go, 1, &c_next)?;
    let o = f.apply(g, &go, clip)?;
    let hc = act_h.apply(g, &c_next, clip)?;
    let h_next = mul(g, &o, &hc)?;
    Ok((h_next, c_next))
}

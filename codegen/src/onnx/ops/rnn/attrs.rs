//! A recurrent layer's attributes, read and checked against the cell kind.

use super::*;

/// The attributes of a recurrent layer.
pub(super) struct Attrs {
    /// Per direction: whether it runs backwards in time.
    pub(super) reverse: Vec<bool>,
    /// `layout` 1: batch first.
    pub(super) batch_first: bool,
    pub(super) hidden_size: Option<usize>,
    pub(super) clip: Option<f64>,
    /// Per direction, the cell's activation functions (f, g, h).
    pub(super) activations: Vec<Vec<Act>>,
    pub(super) input_forget: bool,
    pub(super) linear_before_reset: bool,
}

impl Attrs {
    pub(super) fn read(ctx: &Ctx, cell: Cell) -> Result<Attrs, OpError> {
        let a = ctx.attrs();
        let direction = a.string_or("direction", "forward".into())?;
        let reverse = match direction.as_str() {
            "forward" => vec![false],
            "reverse" => vec![true],
            "bidirectional" => vec![false, true],
            other => {
                return Err(attr_error(
                    "direction",
                    format!("{other:?} is not forward, reverse or bidirectional"),
                ))
            }
        };
        let batch_first = match a.int_or("layout", 0)? {
            0 => false,
            1 => true,
            other => return Err(attr_error("layout", format!("{other} is not 0 or 1"))),
        };
        let hidden_size = match a.get("hidden_size") {
            None => None,
            Some(_) => {
                let h = a.int("hidden_size")?;
                Some(
                    usize::try_from(h)
                        .ok()
                        .filter(|&h| h > 0)
                        .ok_or_else(|| attr_error("hidden_size", format!("{h} is not positive")))?,
                )
            }
        };
        let clip = match a.get("clip") {
            None => None,
            Some(_) => {
                let c = f64::from(a.float("clip")?);
                if c.is_nan() || c <= 0.0 {
                    return Err(attr_error("clip", format!("{c} is not positive")));
                }
                Some(c)
            }
        };
        let input_forget = a.int_or("input_forget", 0)? != 0;
        let linear_before_reset = a.int_or("linear_before_reset", 0)? != 0;
        let activations = Self::activations(ctx, cell, reverse.len())?;
        Ok(Attrs {
            reverse,
            batch_first,
            hidden_size,
            clip,
            activations,
            input_forget,
            linear_before_reset,
        })
    }

    /// The activation functions of each of `directions` directions.
    pub(super) fn activations(
        ctx: &Ctx,
        cell: Cell,
        directions: usize,
    ) -> Result<Vec<Vec<Act>>, OpError> {
        let a = ctx.attrs();
        let per = cell.default_activations().len();
        let names: Vec<String> = match a.get("activations") {
            None => cell
                .default_activations()
                .iter()
                .map(|s| s.to_string())
                .collect(),
            Some(_) => a.strings("activations")?,
        };
        let alphas = a.floats_or("activation_alpha", Vec::new())?;
        let betas = a.floats_or("activation_beta", Vec::new())?;
        let mut alphas = alphas.into_iter().map(f64::from);
        let mut betas = betas.into_iter().map(f64::from);
        let acts = names
            .iter()
            .map(|n| Act::parse(n, &mut alphas, &mut betas))
            .collect::<Result<Vec<Act>, OpError>>()?;
        // One list per direction; one direction's list serves both of a bidirectional layer,
        // and a forward or reverse layer ignores a second direction's (RNN's schema default
        // names two functions whatever the direction).
        let per_direction = match acts.len() {
            n if n == per * directions => acts.chunks(per).map(<[Act]>::to_vec).collect(),
            n if n == per => vec![acts; directions],
            n if n == 2 * per && directions == 1 => vec![acts[..per].to_vec()],
            n => {
                return Err(attr_error(
                    "activations",
                    format!("{n} functions {names:?} for {directions} direction(s) of {per} each"),
                ))
            }
        };
        Ok(per_direction)
    }
}

//! Quantized models' fixed-point set-up: the multipliers TFLite Micro computes (in double, on
//! the host) from the tensors' scales, the folded zero points and the fused activations'
//! ranges, and the tables that hold them per channel. The requantization the kernels run
//! with them is [`Graph::requantize`].
//!
//! A real multiplier `m` is held as `multiplier · 2^(shift − 31)` ([`QuantMultiplier`]).

use super::{Graph, GraphError, Lazy};
use crate::dtype::DType;
use crate::ops::{BinaryOp, ConstValue};
use crate::tensor::Tensor;

/// A real multiplier as TFLM holds it: `multiplier · 2^(shift − 31)`, `multiplier` in
/// `[2^30, 2^31)` (or 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantMultiplier {
    pub multiplier: i32,
    pub shift: i32,
}

impl QuantMultiplier {
    /// TFLM's `QuantizeMultiplier`: `frexp`, the fraction rounded half away from zero to 31
    /// bits, renormalised when it rounds up to `2^31`; below `2^-32` it is zero.
    pub fn new(m: f64) -> QuantMultiplier {
        if m == 0.0 || !m.is_finite() {
            return QuantMultiplier {
                multiplier: 0,
                shift: 0,
            };
        }
        let (q, mut shift) = frexp(m);
        let mut fixed = (q * (1u64 << 31) as f64).round() as i64;
        if fixed == 1 << 31 {
            fixed /= 2;
            shift += 1;
        }
        if shift < -31 {
            return QuantMultiplier {
                multiplier: 0,
                shift: 0,
            };
        }
        QuantMultiplier {
            multiplier: fixed as i32,
            shift,
        }
    }

    /// The shift left before the high multiply.
    pub fn left(self) -> i32 {
        self.shift.max(0)
    }

    /// The rounding shift right after it.
    pub fn right(self) -> i32 {
        (-self.shift).max(0)
    }
}

/// `(q, e)` with `m = q · 2^e` and `|q|` in `[0.5, 1)`, as C's `frexp` (for normal `m`).
fn frexp(m: f64) -> (f64, i32) {
    if m.abs() < f64::MIN_POSITIVE {
        let (q, e) = frexp(m * 2f64.powi(64));
        return (q, e - 64);
    }
    let bits = m.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let q = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (q, exp - 1022)
}

/// `−zp_in · Σ (w − zp_w)` per output channel of the integer weight `w` of `shape`, its `n`
/// output channels along `axis` (`zp_w`: one zero point, or one per channel): the zero-point
/// term of a quantized convolution or product, folded into its bias at compile time.
pub fn folded_zero_points(
    w: &[i64],
    shape: &[usize],
    axis: usize,
    zp_in: i64,
    zp_w: &[i64],
) -> Vec<i64> {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut sums = vec![0i64; n];
    for (i, v) in w.iter().enumerate() {
        let c = (i / inner) % n;
        sums[c] += v - zp_w[if zp_w.len() > 1 { c } else { 0 }];
    }
    sums.iter().map(|s| -zp_in * s).collect()
}

/// TFLM's `CalculateActivationRangeQuantized`: the clamp of a fused activation on an output of
/// scale `scale` and zero point `zp`, within the type's `[qmin, qmax]`.
pub fn activation_range(act: Activation, scale: f32, zp: i32, qmin: i32, qmax: i32) -> (i32, i32) {
    let q = |v: f32| zp + (v / scale).round() as i32;
    match act {
        Activation::None => (qmin, qmax),
        Activation::Relu => (qmin.max(q(0.0)), qmax),
        Activation::Relu6 => (qmin.max(q(0.0)), qmax.min(q(6.0))),
        Activation::ReluN1To1 => (qmin.max(q(-1.0)), qmax.min(q(1.0))),
    }
}

/// A fused activation of a TFLite op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    None,
    Relu,
    Relu6,
    ReluN1To1,
}

/// Multipliers of a requantization: one for the tensor, or one per index of `axis`.
#[derive(Clone, Debug, PartialEq)]
pub enum Multipliers {
    Tensor(QuantMultiplier),
    PerAxis {
        axis: usize,
        each: Vec<QuantMultiplier>,
    },
}

impl Multipliers {
    pub(super) fn all(&self) -> Vec<QuantMultiplier> {
        match self {
            Multipliers::Tensor(m) => vec![*m],
            Multipliers::PerAxis { each, .. } => each.clone(),
        }
    }
}

impl Graph {
    /// The integer `v` as a `dtype` constant broadcast to `shape`.
    pub fn int_const(&mut self, v: i64, dtype: DType, shape: &[usize]) -> Lazy {
        self.const_exact(ConstValue::from_i64(dtype, v), dtype, shape)
    }

    /// `per(m)` for each multiplier, as a constant (one multiplier) or a table in flash laid
    /// along the axis, broadcast like `x`.
    pub(super) fn table(
        &mut self,
        name: &str,
        x: &Lazy,
        ms: &Multipliers,
        dtype: DType,
        per: impl Fn(QuantMultiplier) -> i64,
    ) -> Result<Lazy, GraphError> {
        match ms {
            Multipliers::Tensor(m) => Ok(self.int_const(per(*m), dtype, x.shape())),
            Multipliers::PerAxis { axis, each } => {
                let values: Vec<i64> = each.iter().map(|&m| per(m)).collect();
                if values.iter().all(|&v| v == values[0]) {
                    return Ok(self.int_const(values[0], dtype, x.shape()));
                }
                let t = Tensor::from_i64(dtype.scalar, vec![values.len()], &values)
                    .expect("one value per channel");
                let w = self.weight(name, t);
                let mut shape = vec![1; x.shape().len()];
                shape[*axis] = values.len();
                w.reshape(&shape)?.expand(x.shape())
            }
        }
    }

    /// An integer binary op with a constant right operand of `x`'s type.
    pub fn int_scalar(&mut self, op: BinaryOp, x: &Lazy, v: i64) -> Result<Lazy, GraphError> {
        let c = self.int_const(v, x.dtype, x.shape());
        self.binary(op, x, &c)
    }

    /// `min(max(x, lo), hi)` for integers (exact at the type's limits).
    pub fn clamp_int(&mut self, x: &Lazy, lo: i64, hi: i64) -> Result<Lazy, GraphError> {
        let y = self.int_scalar(BinaryOp::Max, x, lo)?;
        let h = self.int_const(hi, x.dtype, x.shape());
        let over = self.binary(BinaryOp::CmpLt, &h, &y)?;
        self.where_(&over, &h, &y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipliers_match_tflm_set_up() {
        let q = QuantMultiplier::new;
        assert_eq!(
            q(0.5),
            QuantMultiplier {
                multiplier: 1 << 30,
                shift: 0
            }
        );
        assert_eq!(
            q(1.0),
            QuantMultiplier {
                multiplier: 1 << 30,
                shift: 1
            }
        );
        assert_eq!(
            q(0.75),
            QuantMultiplier {
                multiplier: 3 << 29,
                shift: 0
            }
        );
        assert_eq!(
            q(0.0),
            QuantMultiplier {
                multiplier: 0,
                shift: 0
            }
        );
        assert_eq!(
            q(1e-12),
            QuantMultiplier {
                multiplier: 0,
                shift: 0
            }
        );
        // Rounds up to 2^31: renormalised.
        let m = q(1.0 - 1e-12);
        assert_eq!(
            m,
            QuantMultiplier {
                multiplier: 1 << 30,
                shift: 1
            }
        );
        assert_eq!(frexp(3e-310).1, -1028);
    }

    #[test]
    fn activation_ranges() {
        assert_eq!(
            activation_range(Activation::Relu, 0.1, -10, -128, 127),
            (-10, 127)
        );
        assert_eq!(
            activation_range(Activation::Relu6, 0.05, -128, -128, 127),
            (-128, -8)
        );
        assert_eq!(
            activation_range(Activation::None, 0.05, 3, -128, 127),
            (-128, 127)
        );
    }
}

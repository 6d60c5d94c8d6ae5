//! The activation functions of recurrent layers: their names, defaults, alpha and beta.

use super::*;

/// An activation function of a recurrent layer, with its alpha and beta.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Act {
    Relu,
    Tanh,
    Sigmoid,
    Affine(f64, f64),
    LeakyRelu(f64),
    ThresholdedRelu(f64),
    ScaledTanh(f64, f64),
    HardSigmoid(f64, f64),
    Elu(f64),
    Softsign,
    Softplus,
}

/// The activation functions recurrent layers accept.
pub(super) const ACTIVATIONS: &str = "Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, \
                           ScaledTanh, HardSigmoid, Elu, Softsign, Softplus";

impl Act {
    /// The function named `name` (in any case). It takes its alpha and beta, when it has them,
    /// from the next unused values of `alphas` and `betas`, else the defaults of the ONNX
    /// operator of the same name.
    pub(super) fn parse(
        name: &str,
        alphas: &mut impl Iterator<Item = f64>,
        betas: &mut impl Iterator<Item = f64>,
    ) -> Result<Act, OpError> {
        let mut alpha = |default: f64| alphas.next().unwrap_or(default);
        Ok(match name.to_ascii_lowercase().as_str() {
            "relu" => Act::Relu,
            "tanh" => Act::Tanh,
            "sigmoid" => Act::Sigmoid,
            "affine" => {
                let a = alpha(1.0);
                Act::Affine(a, betas.next().unwrap_or(0.0))
            }
            "leakyrelu" => Act::LeakyRelu(alpha(0.01)),
            "thresholdedrelu" => Act::ThresholdedRelu(alpha(1.0)),
            "scaledtanh" => {
                let a = alpha(1.0);
                Act::ScaledTanh(a, betas.next().unwrap_or(1.0))
            }
            "hardsigmoid" => {
                let a = alpha(0.2);
                Act::HardSigmoid(a, betas.next().unwrap_or(0.5))
            }
            "elu" => Act::Elu(alpha(1.0)),
            "softsign" => Act::Softsign,
            "softplus" => Act::Softplus,
            _ => {
                return Err(attr_error(
                    "activations",
                    format!(
                    "{name:?} is not an activation function of recurrent layers ({ACTIVATIONS})"
                ),
                ))
            }
        })
    }

    /// The function of `x`, its input first clipped to `[-clip, clip]` when `clip` is set.
    pub(super) fn apply(self, g: &mut Graph, x: &Lazy, clip: Option<f64>) -> GResult {
        let x = match clip {
            Some(c) => g.clip(x, Some(-c), Some(c))?,
            None => x.clone(),
        };
        let x = &x;
        match self {
            Act::Relu => g.relu(x),
            Act::Tanh => g.tanh(x),
            Act::Sigmoid => g.sigmoid(x),
            Act::Affine(a, b) => {
                let ax = g.mul_scalar(x, a)?;
                g.add_scalar(&ax, b)
            }
            Act::LeakyRelu(a) => {
                let ax = g.mul_scalar(x, a)?;
                let zero = g.scalar_like(x, 0.0);
                let negative = g.lt(x, &zero)?;
                g.where_(&negative, &ax, x)
            }
            Act::ThresholdedRelu(a) => {
                let alpha = g.scalar_like(x, a);
                let below = g.lt(x, &alpha)?;
                let zero = g.scalar_like(x, 0.0);
                g.where_(&below, &zero, x)
            }
            Act::ScaledTanh(a, b) => {
                let bx = g.mul_scalar(x, b)?;
                let t = g.tanh(&bx)?;
                g.mul_scalar(&t, a)
            }
            Act::HardSigmoid(a, b) => {
                let ax = g.mul_scalar(x, a)?;
                let y = g.add_scalar(&ax, b)?;
                g.clip(&y, Some(0.0), Some(1.0))
            }
            Act::Elu(a) => {
                let e = g.exp(x)?;
                let e1 = g.add_scalar(&e, -1.0)?;
                let n = g.mul_scalar(&e1, a)?;
                let zero = g.scalar_like(x, 0.0);
                let negative = g.lt(x, &zero)?;
                g.where_(&negative, &n, x)
            }
            Act::Softsign => {
                let a = g.abs(x)?;
                let d = g.add_scalar(&a, 1.0)?;
                let r = g.unary(UnaryOp::Recip, &d)?;
                g.binary(BinaryOp::Mul, x, &r)
            }
            Act::Softplus => super::super::activation::softplus_of(g, x),
        }
    }
}

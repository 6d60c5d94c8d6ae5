//! Pinning the free dimensions of a model's inputs: the `--shape NAME=D0xD1x…` flag.

use super::error::OnnxError;
use super::model::{Dim, ValueInfo};

/// Parses one `--shape` flag, `NAME=1x49x10x1`, into the input's name and its dims.
pub fn parse_shape_override(s: &str) -> Result<(String, Vec<usize>), OnnxError> {
    let bad = |reason: &str| OnnxError::BadShapeFlag {
        flag: s.to_string(),
        reason: reason.to_string(),
    };
    let (name, dims) = s.rsplit_once('=').ok_or_else(|| bad("no '='"))?;
    let (name, dims) = (name.trim(), dims.trim());
    if name.is_empty() {
        return Err(bad("no input name"));
    }
    if dims.is_empty() {
        return Err(bad("no dims"));
    }
    let dims = dims
        .split('x')
        .map(|d| match d.trim().parse::<usize>() {
            Ok(0) => Err(bad("dims must be positive")),
            Ok(d) => Ok(d),
            Err(_) => Err(bad(&format!("{:?} is not a dimension", d.trim()))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((name.to_string(), dims))
}

/// The concrete dims of every input, in input order. A free leading (batch) dim defaults to 1;
/// every other free dim needs an override, and overrides must match the inputs they name.
pub fn pin_dims(
    inputs: &[ValueInfo],
    overrides: &[(String, Vec<usize>)],
) -> Result<Vec<(String, Vec<usize>)>, OnnxError> {
    for (i, (name, _)) in overrides.iter().enumerate() {
        if !inputs.iter().any(|v| &v.name == name) {
            return Err(OnnxError::UnknownInput {
                name: name.clone(),
                known: inputs.iter().map(|v| v.name.clone()).collect(),
            });
        }
        if overrides[..i].iter().any(|(n, _)| n == name) {
            return Err(OnnxError::DuplicateOverride {
                input: name.clone(),
            });
        }
    }
    inputs
        .iter()
        .map(|input| {
            let given = overrides.iter().find(|(n, _)| n == &input.name);
            let dims = match given {
                Some((_, dims)) => check_override(input, dims)?,
                None => default_dims(input)?,
            };
            Ok((input.name.clone(), dims))
        })
        .collect()
}

fn check_override(input: &ValueInfo, given: &[usize]) -> Result<Vec<usize>, OnnxError> {
    if given.len() != input.dims.len() {
        return Err(OnnxError::OverrideRank {
            input: input.name.clone(),
            expected: input.dims.len(),
            given: given.len(),
        });
    }
    for (axis, (dim, &g)) in input.dims.iter().zip(given).enumerate() {
        if let Dim::Fixed(fixed) = *dim {
            if fixed != g {
                let input = input.name.clone();
                return Err(OnnxError::OverrideConflict {
                    input,
                    axis,
                    fixed,
                    given: g,
                });
            }
        }
    }
    Ok(given.to_vec())
}

fn default_dims(input: &ValueInfo) -> Result<Vec<usize>, OnnxError> {
    let pin = |(axis, dim): (usize, &Dim)| match dim {
        Dim::Fixed(d) => Ok(*d),
        Dim::Free(_) if axis == 0 => Ok(1),
        Dim::Free(param) => Err(OnnxError::FreeDim {
            input: input.name.clone(),
            axis,
            param: param.clone(),
        }),
    };
    input.dims.iter().enumerate().map(pin).collect()
}

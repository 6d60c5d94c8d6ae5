//! Comparing a run's outputs with the expected ones: floats within a tolerance (relative
//! errors only where the expected value is beyond the absolute one), integers in steps (LSBs).

use crate::model::Compiled;
use anyhow::{bail, Context, Result};
use kiln_codegen::dtype::Scalar;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio;
use std::path::Path;

/// How closely an output must match its expected value: floats within `atol + rtol·|want|`,
/// integers within `lsb` steps (exact by default).
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
    pub lsb: u64,
}

impl Tolerance {
    /// Floats within 1e-4 relative and 1e-5 absolute; integers exactly.
    pub const DEFAULT: Tolerance = Tolerance {
        rtol: 1e-4,
        atol: 1e-5,
        lsb: 0,
    };
}

/// How one output differs from its expected values.
pub struct OutputDiff {
    /// The largest absolute difference (in steps, LSBs, for an integer output).
    pub max_abs: f64,
    /// The largest relative difference where the expected value is beyond the absolute
    /// tolerance (where it means something); `None` if it is nowhere.
    pub max_rel: Option<f64>,
    /// Elements outside the tolerance.
    pub bad: usize,
    pub len: usize,
    /// The output is integer and compared in steps.
    pub integer: bool,
}

impl OutputDiff {
    fn of(got: &Tensor, want: &Tensor, tol: Tolerance) -> OutputDiff {
        let integer = got.dtype().is_int() && want.dtype().is_int();
        let (g, e) = (got.to_f64(), want.to_f64());
        let (mut max_abs, mut max_rel, mut bad) = (0f64, None::<f64>, 0usize);
        for (a, b) in g.iter().zip(&e) {
            let d = (a - b).abs();
            max_abs = max_abs.max(d);
            if b.abs() > tol.atol {
                max_rel = Some(max_rel.unwrap_or(0.0).max(d / b.abs()));
            }
            let out = match integer {
                true => d > tol.lsb as f64,
                false => d > tol.atol + tol.rtol * b.abs() || a.is_nan() != b.is_nan(),
            };
            bad += usize::from(out);
        }
        OutputDiff {
            max_abs,
            max_rel,
            bad,
            len: g.len(),
            integer,
        }
    }

    /// The verdict line: the largest difference and whether it is within `tol`.
    fn line(&self, dtype: Scalar, tol: Tolerance) -> String {
        let verdict = match self.bad {
            0 => "ok".to_string(),
            bad => format!("MISMATCH in {bad} of {} elements", self.len),
        };
        if self.integer {
            let allowed = match tol.lsb {
                0 => "exact".to_string(),
                l => format!("at most {l} LSB"),
            };
            format!(
                "{dtype}, largest difference {} LSB ({allowed}): {verdict}",
                self.max_abs
            )
        } else {
            let rel = match self.max_rel {
                Some(r) => format!("max rel error {r:.3e}"),
                None => format!(
                    "no expected value beyond {:.0e} to be relative to",
                    tol.atol
                ),
            };
            format!("max abs error {:.3e}, {rel}: {verdict}", self.max_abs)
        }
    }
}

/// Each of `outputs` against the `output_N` tensors in `expect`.
pub fn output_diffs(
    c: &Compiled,
    outputs: &[Vec<u8>],
    expect: &Path,
    tol: Tolerance,
) -> Result<Vec<OutputDiff>> {
    let want = tensorio::read_dir_tensors(expect, "output")
        .with_context(|| format!("reading expected outputs from {}", expect.display()))?;
    let outputs = c.model_outputs(outputs).map_err(anyhow::Error::msg)?;
    // A folder written for the model file also has the outputs that now only feed a state.
    let (want, _) = crate::model::without_bound(want, outputs.len(), &c.state_outputs);
    if want.len() != outputs.len() {
        bail!(
            "the model has {} outputs, {} has {}",
            outputs.len(),
            expect.display(),
            want.len()
        );
    }
    let mut diffs = Vec::with_capacity(want.len());
    for (i, ((name, dtype, shape, got), w)) in outputs.into_iter().zip(&want).enumerate() {
        let g = Tensor::new(dtype.scalar, shape, got)
            .with_context(|| format!("output {i} ({name})"))?;
        if g.numel() != w.numel() {
            bail!(
                "output {i} ({name}): {} elements, expected {}",
                g.numel(),
                w.numel()
            );
        }
        diffs.push(OutputDiff::of(&g, w, tol));
    }
    Ok(diffs)
}

/// The per-output comparison with `expect`, printed; true when every output matches.
pub fn compare(c: &Compiled, outputs: &[Vec<u8>], expect: &Path, tol: Tolerance) -> Result<bool> {
    compare_as(c, outputs, expect, tol, "")
}

/// [`compare`], each line after `prefix` (`step 03, `).
pub(super) fn compare_as(
    c: &Compiled,
    outputs: &[Vec<u8>],
    expect: &Path,
    tol: Tolerance,
    prefix: &str,
) -> Result<bool> {
    let diffs = output_diffs(c, outputs, expect, tol)?;
    let names = c.model_outputs(outputs).map_err(anyhow::Error::msg)?;
    for (i, (d, (name, dtype, _, _))) in diffs.iter().zip(&names).enumerate() {
        println!("{prefix}output {i} ({name}): {}", d.line(dtype.scalar, tol));
    }
    Ok(diffs.iter().all(|d| d.bad == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_errors_count_only_beyond_the_absolute_tolerance() {
        let tensor = |v: &[f32]| Tensor::from_f32(vec![v.len()], v).unwrap();
        let tol = Tolerance::DEFAULT;
        // A state output whose expected values are all about zero: no relative error to speak of.
        let d = OutputDiff::of(&tensor(&[1e-7, 0.0]), &tensor(&[1e-300, 0.0]), tol);
        assert!(d.max_rel.is_none());
        assert!(d
            .line(Scalar::F32, tol)
            .contains("no expected value beyond"));
        let d = OutputDiff::of(&tensor(&[2.0, 1e-6]), &tensor(&[2.0002, 0.0]), tol);
        let rel = d.max_rel.unwrap();
        assert!((rel - 1e-4).abs() < 1e-6, "{rel}");
        assert_eq!(d.bad, 0);
    }
}

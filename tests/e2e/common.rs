//! Shared by the end-to-end tests: where the models and their references are, and how a model
//! is compiled and compared.

use anyhow::{bail, Context, Result};
use kiln_codegen::bundle::Bundle;
use kiln_codegen::compile::compile_graph;
use kiln_codegen::onnx;
use kiln_codegen::target::Target;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio::read_dir_tensors;
use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The MLPerf Tiny models and their TFLM vectors, in the repository.
pub fn mlperf_models() -> PathBuf {
    root().join("tests/models/mlperf-tiny")
}

/// The MLPerf Tiny float models, by reference-data name.
pub const MLPERF: [&str; 5] = [
    "kws_float",
    "ic_float",
    "vww_float",
    "ad_float",
    "str_ww_float",
];
/// Kiln's own small models in `tests/models/`.
pub const SMALL: [&str; 5] = [
    "mlp",
    "dw_separable",
    "residual",
    "softmax_head",
    "concat_transpose",
];

/// The path of a test model by name.
pub fn model_path(name: &str) -> PathBuf {
    if MLPERF.contains(&name) {
        mlperf_models().join("onnx").join(format!("{name}.onnx"))
    } else {
        root().join("tests/models").join(format!("{name}.onnx"))
    }
}

/// Inputs and onnxruntime's outputs for a model.
pub fn references(name: &str) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let dir = root().join("tests/data").join(name);
    let i = read_dir_tensors(&dir, "input").with_context(|| format!("inputs of {name}"))?;
    let o = read_dir_tensors(&dir, "output").with_context(|| format!("outputs of {name}"))?;
    Ok((i, o))
}

/// Imports and compiles a model for the C target.
pub fn compile(name: &str) -> Result<Bundle> {
    let path = model_path(name);
    let model = onnx::load(&path).with_context(|| format!("loading {}", path.display()))?;
    let imported = onnx::import::import(&model, &[])?;
    Ok(compile_graph(
        name,
        &imported.graph,
        &imported.outputs,
        &Target::c(),
        true,
        &mut |_, _| {},
    )?)
}

/// Largest absolute and relative errors; fails beyond `atol + rtol * |want|`.
pub fn compare(
    name: &str,
    got: &[Vec<u8>],
    want: &[Tensor],
    rtol: f64,
    atol: f64,
) -> Result<(f64, f64)> {
    if got.len() != want.len() {
        bail!("{name}: {} outputs, {} expected", got.len(), want.len());
    }
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let g = Tensor::new(w.dtype(), w.shape().to_vec(), g.clone())
            .with_context(|| format!("{name} output {k}"))?;
        let (g, w) = (g.to_f64(), w.to_f64());
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            let d = (a - b).abs();
            max_abs = max_abs.max(d);
            max_rel = max_rel.max(d / b.abs().max(1e-30));
            if d > atol + rtol * b.abs() || d.is_nan() {
                bail!("{name} output {k} element {i}: got {a}, want {b}");
            }
        }
    }
    Ok((max_abs, max_rel))
}

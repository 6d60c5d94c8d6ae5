//! Shared by the end-to-end tests: where the models and their references are, and how a model
//! is compiled and compared.

use anyhow::{bail, Context, Result};
use kiln_codegen::bundle::Bundle;
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
/// The int8 MLPerf Tiny ONNX models in QDQ form.
pub const QDQ: [&str; 5] = [
    "kws_int8_qdq",
    "ic_int8_qdq",
    "vww_int8_qdq",
    "ad_int8_qdq",
    "str_ww_int8_qdq",
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
    if MLPERF.contains(&name) || QDQ.contains(&name) {
        mlperf_models().join("onnx").join(format!("{name}.onnx"))
    } else {
        root().join("tests/models").join(format!("{name}.onnx"))
    }
}

/// Inputs and onnxruntime's outputs for a model.
pub fn references(name: &str) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let dir = match QDQ.contains(&name) {
        true => root().join("tests/ops/mlperf_int8").join(name),
        false => root().join("tests/data").join(name),
    };
    let i = read_dir_tensors(&dir, "input").with_context(|| format!("inputs of {name}"))?;
    let o = read_dir_tensors(&dir, "output").with_context(|| format!("outputs of {name}"))?;
    Ok((i, o))
}

/// The `.tflite` file of an MLPerf Tiny model.
pub fn tflite_path(name: &str) -> PathBuf {
    mlperf_models()
        .join("tflite")
        .join(format!("{name}.tflite"))
}

/// The TFLM vectors of an MLPerf Tiny TFLite model: (input, output) per sample.
pub fn tflm_vectors(name: &str) -> Result<Vec<(Tensor, Tensor)>> {
    let path = mlperf_models()
        .join("vectors")
        .join(format!("{name}.tflm.npz"));
    let file = std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut archive = zip::ZipArchive::new(file).with_context(|| path.display().to_string())?;
    let mut entry = |key: &str| -> Result<Tensor> {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut archive.by_name(&format!("{key}.npy"))?, &mut bytes)?;
        kiln_codegen::tensorio::decode_npy(&bytes)
            .map_err(|e| anyhow::anyhow!("{}: {key}: {e}", path.display()))
    };
    let (x, y) = (entry("x")?, entry("y")?);
    Ok(samples(&x)?.into_iter().zip(samples(&y)?).collect())
}

/// The tensors along the first axis of `t`.
fn samples(t: &Tensor) -> Result<Vec<Tensor>> {
    let n = t.shape()[0];
    let shape = t.shape()[1..].to_vec();
    let size = t.bytes().len() / n.max(1);
    t.bytes()
        .chunks(size)
        .map(|c| Ok(Tensor::new(t.dtype(), shape.clone(), c.to_vec())?))
        .collect()
}

/// Imports any model file (ONNX or TFLite) and compiles it for the C target.
pub fn compile_file(name: &str, path: &std::path::Path) -> Result<Bundle> {
    compile_file_for(name, path, &Target::c())
}

/// Imports any model file (ONNX or TFLite) and compiles it for `target`.
pub fn compile_file_for(name: &str, path: &std::path::Path, target: &Target) -> Result<Bundle> {
    compile_file_with(name, path, target, &Default::default())
}

/// [`compile_file_for`], imported with `options` (`--shape`, `--const`, `--state`, …): the
/// entry point every caller of the compiler shares.
pub fn compile_file_with(
    name: &str,
    path: &std::path::Path,
    target: &Target,
    options: &kiln_codegen::model::ImportOptions,
) -> Result<Bundle> {
    let options = kiln_codegen::compile::FileOptions {
        name: Some(name.to_string()),
        import: options.clone(),
        ..Default::default()
    };
    let (compiled, _) = kiln_codegen::compile::compile_file(path, options, target, &mut |_, _| {})?;
    Ok(compiled.bundle)
}

/// Imports and compiles a test model (by name) for the C target.
pub fn compile(name: &str) -> Result<Bundle> {
    compile_file(name, &model_path(name))
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

/// Whether a part of the machine that a test needs (a GPU driver, QEMU and the cross compilers,
/// the ONNX node tests) must be there. `scripts/test.sh`, the suite's one command, sets
/// `KILN_REQUIRE_ALL=1`: there a missing part fails the test. Elsewhere the test prints what it
/// skips and why, and passes.
pub fn required() -> bool {
    std::env::var("KILN_REQUIRE_ALL").as_deref() == Ok("1")
}

/// Whether the part a test needs is here: `true` when `found` is `Ok`; otherwise a failure
/// where the part is [`required`], else `false` after a line saying what is skipped and why.
pub fn available<E: std::fmt::Display>(what: &str, found: Result<(), E>) -> bool {
    match found {
        Ok(()) => true,
        Err(why) if required() => panic!("{what}: {why} (KILN_REQUIRE_ALL=1)"),
        Err(why) => {
            eprintln!("skipping {what}: {why}");
            false
        }
    }
}

/// One invocation of a streamed run: its inputs, and the outputs it should give.
pub struct StreamStep {
    pub inputs: Vec<Tensor>,
    pub expected: Vec<Tensor>,
}

/// The steps of a streamed run, in order: `dir/00/inputs/input_<i>.npy` and
/// `dir/00/expected/output_<i>.npy`, `dir/01/…`, until the first number missing.
pub fn read_steps(dir: &std::path::Path) -> Result<Vec<StreamStep>> {
    let mut steps = Vec::new();
    loop {
        let step = dir.join(format!("{:02}", steps.len()));
        if !step.is_dir() {
            break;
        }
        let read = |sub: &str, prefix: &str| {
            read_dir_tensors(&step.join(sub), prefix)
                .with_context(|| format!("{}", step.join(sub).display()))
        };
        steps.push(StreamStep {
            inputs: read("inputs", "input")?,
            expected: read("expected", "output")?,
        });
    }
    if steps.is_empty() {
        bail!("{}: no steps (00/, 01/, …)", dir.display());
    }
    Ok(steps)
}

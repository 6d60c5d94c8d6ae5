//! ONNX models compiled for OpenCL and Vulkan and run on the installed drivers (PoCL, lavapipe)
//! against onnxruntime's outputs: the MLPerf Tiny float models and Kiln's small test models.

mod gpu_support;

use gpu_support::{limits, run};
use kiln_codegen::gpu::{self, Api};
use kiln_codegen::onnx::{self, import};
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio::{read_dir_tensors, TensorIoError};
use std::path::{Path, PathBuf};
use std::time::Duration;

const RTOL: f64 = 1e-4;
const ATOL: f64 = 1e-5;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An MLPerf Tiny model in the repository.
fn mlperf(name: &str) -> PathBuf {
    repo().join(format!("tests/models/mlperf-tiny/onnx/{name}.onnx"))
}

/// Max abs and rel errors of `got` against `want`; panics past the tolerance.
fn compare(what: &str, got: &[f64], want: &Tensor) -> (f64, f64) {
    let want = want.to_f64();
    assert_eq!(got.len(), want.len(), "{what}: length");
    let (mut abs, mut rel) = (0f64, 0f64);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let err = (g - w).abs();
        assert!(
            err <= ATOL + RTOL * w.abs() || g == w,
            "{what}: element {i}: got {g}, want {w}"
        );
        abs = abs.max(err);
        rel = rel.max(err / w.abs().max(f64::MIN_POSITIVE));
    }
    (abs, rel)
}

/// Compiles the model at `path` for both interfaces, runs it on `data`'s inputs and checks
/// every output against `data`'s.
fn check(name: &str, path: &Path, data: &Path) {
    let model = onnx::load(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let inputs = match read_dir_tensors(data, "input") {
        Err(TensorIoError::NoTensors { .. }) => Vec::new(),
        other => other.unwrap_or_else(|e| panic!("{name}: {e}")),
    };
    let expected = read_dir_tensors(data, "output").unwrap();
    let shapes: Vec<(String, Vec<usize>)> = model
        .graph
        .inputs
        .iter()
        .zip(&inputs)
        .map(|(v, t)| (v.name.clone(), t.shape().to_vec()))
        .collect();
    let imported = import(&model, &shapes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|t| t.bytes().to_vec()).collect();
    for api in [Api::OpenCl, Api::Vulkan] {
        let Some(l) = limits(api) else { continue };
        let gb = gpu::compile(
            name,
            &imported.graph,
            &imported.outputs,
            api,
            &l,
            &mut |_, _| {},
        )
        .unwrap_or_else(|e| panic!("{name} for {}: {e}", api.name()));
        let first = run(&gb, &bytes, 1);
        let r = run(&gb, &bytes, 3);
        let (mut abs, mut rel) = (0f64, 0f64);
        for (k, ((got, out), want)) in r
            .outputs
            .iter()
            .zip(&imported.outputs)
            .zip(&expected)
            .enumerate()
        {
            assert_eq!(out.shape(), want.shape(), "{name} output {k} shape");
            let got = Tensor::new(out.dtype.scalar, out.shape().to_vec(), got.clone())
                .unwrap_or_else(|e| panic!("{name} output {k}: {e}"))
                .to_f64();
            let (a, e) = compare(&format!("{name} on {} output {k}", api.name()), &got, want);
            (abs, rel) = (abs.max(a), rel.max(e));
        }
        let locals = gb
            .kernels
            .iter()
            .filter(|k| k.threads_per_group() > 1)
            .count();
        let grouped = gb.kernels.iter().filter(|k| k.shared_bytes > 0).count();
        println!(
            "{name} on {}: {} launches, {} kernels ({locals} with local dims, {grouped} grouped \
             reduces); max abs err {abs:.2e}, max rel err {rel:.2e}; device time {:?} (first \
             run {:?})",
            api.name(),
            r.step_times.len(),
            gb.kernels.len(),
            r.step_times.iter().sum::<Duration>(),
            first.step_times.iter().sum::<Duration>(),
        );
    }
}

fn check_mlperf(name: &str) {
    check(name, &mlperf(name), &repo().join("tests/data").join(name));
}

#[test]
fn mlperf_ad_float_on_gpus() {
    check_mlperf("ad_float");
}

#[test]
fn mlperf_ic_float_on_gpus() {
    check_mlperf("ic_float");
}

#[test]
fn mlperf_kws_float_on_gpus() {
    check_mlperf("kws_float");
}

#[test]
fn mlperf_str_ww_float_on_gpus() {
    check_mlperf("str_ww_float");
    let real = repo().join("tests/ops/mlperf_float/str_ww_float");
    check("str_ww_float (real input)", &mlperf("str_ww_float"), &real);
}

#[test]
fn mlperf_vww_float_on_gpus() {
    check_mlperf("vww_float");
}

#[test]
fn kilns_test_models_on_gpus() {
    for name in [
        "mlp",
        "dw_separable",
        "residual",
        "softmax_head",
        "concat_transpose",
    ] {
        let path = repo().join(format!("tests/models/{name}.onnx"));
        check(name, &path, &repo().join("tests/data").join(name));
    }
}

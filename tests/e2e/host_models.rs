//! Every test model compiled to C, built by the system C compiler, run by the firmware executor
//! on the host, and compared with onnxruntime: float models within rtol 1e-4, atol 1e-5, the
//! int8 QDQ models (integer kernels) bit for bit.

use kiln_codegen::bundle::Report;
use kiln_codegen::tensor::Tensor;
use kiln_runners::host;
use kiln_tests::{compare, compile, references, MLPERF, QDQ, SMALL};

fn run_model(name: &str) {
    run_within(name, 1e-4, 1e-5);
}

/// TFLM's smallest arena for the int8 TFLite model each QDQ model was converted from
/// (`tests/models/mlperf-tiny/README.md`).
const TFLM_ARENA: [(&str, usize); 5] = [
    ("kws_int8_qdq", 24_272),
    ("ic_int8_qdq", 55_984),
    ("vww_int8_qdq", 103_680),
    ("ad_int8_qdq", 3_984),
    ("str_ww_int8_qdq", 16_640),
];

/// An int8 QDQ model: its outputs equal onnxruntime's, and (its values int8 between kernels)
/// its arena is at its bound and below TFLM's for the same network, but for IC, whose residual
/// additions stay in float between their `DequantizeLinear` and `QuantizeLinear`.
fn run_exact(name: &str) {
    let r = run_within(name, 0.0, 0.0);
    assert_eq!(r.arena_bytes, r.arena_lower_bound, "{name}");
    let (_, tflm) = TFLM_ARENA.iter().find(|(n, _)| *n == name).unwrap();
    if name != "ic_int8_qdq" {
        assert!(
            r.arena_bytes < *tflm,
            "{name}: arena {} B, TFLM's {tflm} B",
            r.arena_bytes
        );
    }
}

fn run_within(name: &str, rtol: f64, atol: f64) -> Report {
    let bundle = compile(name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let dir = tempfile_dir(name);
    bundle.write(&dir).unwrap();
    let lib = host::build_library(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (inputs, want) = references(name).unwrap();
    let inputs: Vec<Vec<u8>> = inputs.into_iter().map(Tensor::into_bytes).collect();
    let run = host::run(&bundle, &lib, &inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (abs, rel) =
        compare(name, &run.outputs, &want, rtol, atol).unwrap_or_else(|e| panic!("{e:#}"));
    let r = &bundle.report;
    println!(
        "{name}: max abs {abs:.2e}, max rel {rel:.2e}; {} steps, arena {} B (bound {} B), weights {} B",
        r.steps.len(),
        r.arena_bytes,
        r.arena_lower_bound,
        r.weight_bytes
    );
    assert!(r.arena_bytes >= r.arena_lower_bound && r.arena_bytes > 0);
    bundle.report
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("host_models")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

macro_rules! model_tests {
    ($($t:ident: $name:expr,)*) => { $( #[test] fn $t() { run_model($name); } )* };
}

model_tests! {
    kws_float: MLPERF[0],
    ic_float: MLPERF[1],
    vww_float: MLPERF[2],
    ad_float: MLPERF[3],
    str_ww_float: MLPERF[4],
    mlp: SMALL[0],
    dw_separable: SMALL[1],
    residual: SMALL[2],
    softmax_head: SMALL[3],
    concat_transpose: SMALL[4],
}

macro_rules! exact_tests {
    ($($t:ident: $name:expr,)*) => { $( #[test] fn $t() { run_exact($name); } )* };
}

exact_tests! {
    kws_qdq: QDQ[0],
    ic_qdq: QDQ[1],
    vww_qdq: QDQ[2],
    ad_qdq: QDQ[3],
    str_ww_qdq: QDQ[4],
}

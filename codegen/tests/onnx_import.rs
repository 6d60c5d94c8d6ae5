//! ONNX models imported to the lazy graph, scheduled, and run in the UOp interpreter against
//! onnxruntime's outputs: the MLPerf Tiny float models, Kiln's small test models, and one
//! single-op model per supported op (`tests/ops/`, from `scripts/make_op_models.py`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use kiln_codegen::compile::compile_graph;
use kiln_codegen::error::chain;
use kiln_codegen::graph::{cut_bounded, GOp, Graph, Lazy};
use kiln_codegen::interpret::run_schedule;
use kiln_codegen::onnx::proto::tensor_shape_proto::dimension;
use kiln_codegen::onnx::proto::{type_proto, ModelProto};
use kiln_codegen::onnx::{self, import, qdq, ImportError, Imported, OnnxError, OnnxModel};
use kiln_codegen::schedule::create_schedule;
use kiln_codegen::target::Target;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio::{read_dir_tensors, TensorIoError};
use prost::Message;

/// How close outputs must be: `|got - want| <= atol + rtol * |want|`.
#[derive(Clone, Copy)]
struct Tolerance {
    atol: f64,
    rtol: f64,
}

/// Float outputs against onnxruntime's.
const FLOAT: Tolerance = Tolerance {
    atol: 1e-5,
    rtol: 1e-4,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The MLPerf Tiny models in the repository.
fn mlperf_dir() -> PathBuf {
    repo().join("tests/models/mlperf-tiny")
}

fn mlperf_path(name: &str) -> PathBuf {
    mlperf_dir().join(format!("onnx/{name}.onnx"))
}

/// What one run of a model gave.
struct Outcome {
    kernels: usize,
    ops: usize,
    max_abs: f64,
    max_rel: f64,
    seconds: f64,
}

/// Imports `model` with inputs pinned to the reference inputs' shapes, runs it, and compares
/// every output with the reference.
fn run_reference(model: &OnnxModel, data: &Path, tol: Tolerance) -> Result<Outcome, String> {
    let inputs = match read_dir_tensors(data, "input") {
        Err(TensorIoError::NoTensors { .. }) => Vec::new(),
        other => other.map_err(|e| chain(&e))?,
    };
    let expected = read_dir_tensors(data, "output").map_err(|e| chain(&e))?;
    let shapes: Vec<(String, Vec<usize>)> = model
        .graph
        .inputs
        .iter()
        .zip(&inputs)
        .map(|(v, t)| (v.name.clone(), t.shape().to_vec()))
        .collect();
    let imported = import(model, &shapes).map_err(|e| chain(&e))?;
    let schedule = create_schedule(&imported.graph, &imported.outputs).map_err(|e| chain(&e))?;
    let start = Instant::now();
    let got = run_schedule(&schedule, &inputs).map_err(|e| chain(&e))?;
    let seconds = start.elapsed().as_secs_f64();
    // Outputs of data-dependent length are cut to it, and their lengths left out.
    let shapes: Vec<_> = (imported.outputs.iter())
        .map(|o| (o.dtype, o.shape().to_vec()))
        .collect();
    let raw: Vec<Vec<u8>> = got.iter().map(|t| t.bytes().to_vec()).collect();
    let cut = cut_bounded(&imported.bounded, &shapes, &raw)?;
    if cut.len() != expected.len() {
        return Err(format!("{} outputs, want {}", cut.len(), expected.len()));
    }
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for (k, (want, (shape, bytes))) in expected.iter().zip(cut).enumerate() {
        let got =
            Tensor::new(want.dtype(), shape, bytes).map_err(|e| format!("output {k}: {e}"))?;
        let (a, r) = compare(&got, want, tol).map_err(|e| format!("output {k}: {e}"))?;
        (max_abs, max_rel) = (max_abs.max(a), max_rel.max(r));
    }
    Ok(Outcome {
        kernels: schedule.items.len(),
        ops: runtime_ops(&imported.graph, &imported.outputs),
        max_abs,
        max_rel,
        seconds,
    })
}

/// Max abs and rel error of `got` against `want`; an error past tolerance.
fn compare(got: &Tensor, want: &Tensor, tol: Tolerance) -> Result<(f64, f64), String> {
    if got.shape() != want.shape() {
        return Err(format!("shape {:?}, want {:?}", got.shape(), want.shape()));
    }
    let want = want.to_f64();
    let got = got.to_f64();
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let same = g == w || (g.is_nan() && w.is_nan());
        let err = (g - w).abs();
        let within = err <= tol.atol + tol.rtol * w.abs();
        if !same && !within {
            return Err(format!("element {i}: got {g}, want {w}"));
        }
        if !same {
            max_abs = max_abs.max(err);
            max_rel = max_rel.max(err / w.abs().max(f64::MIN_POSITIVE));
        }
    }
    Ok((max_abs, max_rel))
}

/// Graph ops computed at run time (not foldable into weights): what the kernels fuse.
fn runtime_ops(g: &Graph, outputs: &[Lazy]) -> usize {
    let mut live = vec![false; g.nodes.len()];
    let mut count = 0;
    for id in g.toposort(outputs) {
        let node = g.node(id);
        let i = id.0 as usize;
        live[i] = match node.op {
            GOp::Input(_) => true,
            GOp::Weight(_) | GOp::Const(_) => false,
            _ => node.src.iter().any(|s| live[s.base.0 as usize]),
        };
        if live[i] && !matches!(node.op, GOp::Input(_)) {
            count += 1;
        }
    }
    count
}

fn check_model(name: &str, path: &Path) {
    check_against(name, path, &repo().join("tests/data").join(name), FLOAT);
}

fn check_against(name: &str, path: &Path, data: &Path, tol: Tolerance) {
    let model = onnx::load(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let o = run_reference(&model, data, tol).unwrap_or_else(|e| panic!("{name}: {e}"));
    println!(
        "{name}: {} nodes -> {} runtime graph ops fused into {} kernels; \
         max abs err {:.2e}, max rel err {:.2e}; interpreter {:.2} s",
        model.graph.nodes.len(),
        o.ops,
        o.kernels,
        o.max_abs,
        o.max_rel,
        o.seconds
    );
}

#[test]
fn mlperf_ad_float_matches_onnxruntime() {
    check_model("ad_float", &mlperf_path("ad_float"));
}

/// Without running it: ic_float imports and schedules (and prints its kernel count). Its
/// outputs are checked compiled, against onnxruntime, by `tests/e2e/host_models.rs` (the UOp
/// interpreter takes half a minute on it).
#[test]
fn mlperf_ic_float_schedules() {
    let model = onnx::load(&mlperf_path("ic_float")).unwrap();
    let imported = import(&model, &[]).unwrap();
    let schedule = create_schedule(&imported.graph, &imported.outputs).unwrap();
    let ops = runtime_ops(&imported.graph, &imported.outputs);
    let kernels = schedule.items.len();
    println!("ic_float: {ops} runtime graph ops fused into {kernels} kernels (not run)");
    assert!(kernels <= 20, "{kernels} kernels");
}

#[test]
fn mlperf_kws_float_matches_onnxruntime() {
    check_model("kws_float", &mlperf_path("kws_float"));
}

#[test]
fn mlperf_str_ww_float_matches_onnxruntime() {
    check_model("str_ww_float", &mlperf_path("str_ww_float"));
}

/// On random inputs str_ww_float's softmax saturates; this input (a dequantized TFLite test
/// vector) keeps every output class above 1e-8.
#[test]
fn mlperf_str_ww_float_matches_onnxruntime_on_a_real_input() {
    let data = repo().join("tests/ops/mlperf_float/str_ww_float");
    check_against("str_ww_float", &mlperf_path("str_ww_float"), &data, FLOAT);
}

#[test]
fn mlperf_vww_float_matches_onnxruntime() {
    check_model("vww_float", &mlperf_path("vww_float"));
}

/// Every convolution and dense layer of the five int8 QDQ models becomes a quantized operator
/// (an integer kernel); the softmax and the pools stay between their `DequantizeLinear` and
/// `QuantizeLinear`.
#[test]
fn mlperf_qdq_models_fuse_every_conv_and_matmul() {
    for (name, conv, matmul) in [
        ("kws_int8_qdq", 9, 1),
        ("vww_int8_qdq", 27, 1),
        ("ic_int8_qdq", 9, 1),
        ("ad_int8_qdq", 0, 10),
        ("str_ww_int8_qdq", 8, 1),
    ] {
        let model = onnx::load(&mlperf_path(name)).unwrap();
        let (graph, fused) = qdq::fuse(&model.graph);
        assert_eq!(fused, qdq::Fused { conv, matmul }, "{name}");
        let float_ops = ["Conv", "MatMul"];
        let left: Vec<&str> = graph
            .nodes
            .iter()
            .map(|n| n.op_type.as_str())
            .filter(|op| float_ops.contains(op))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?} left in float");
    }
}

/// Each small QDQ case of `tests/ops` (`scripts/make_qdq_models.py`) is one group rewritten into
/// a quantized operator; `every_op_case_matches_onnxruntime` checks their outputs.
#[test]
fn the_qdq_op_cases_fuse_their_group() {
    for (name, conv, matmul) in [
        ("qdq_conv_relu", 1, 0),
        ("qdq_conv_clip_u8", 1, 0),
        ("qdq_gemm_trans_b", 0, 1),
        ("qdq_matmul_add_relu", 0, 1),
        ("qdq_matmul_u8_weight", 0, 1),
        ("qdq_shared_input", 1, 0),
    ] {
        let model = onnx::load(&repo().join("tests/ops").join(name).join("model.onnx")).unwrap();
        assert_eq!(
            qdq::fuse(&model.graph).1,
            qdq::Fused { conv, matmul },
            "{name}"
        );
    }
}

/// The kernels that turn float values into integers (a requantization by a float32 scale, a
/// quantization) are rendered so that no C compiler fuses a multiply and an add into one
/// rounding (GCC's attribute, Clang's pragma); the others keep their fused multiply-adds.
#[test]
fn quantizing_kernels_keep_each_float_rounding() {
    let model = onnx::load(&mlperf_path("kws_int8_qdq")).unwrap();
    let imported = import(&model, &[]).unwrap();
    let bundle = compile_graph(
        "kws",
        &imported.graph,
        &imported.outputs,
        &Target::c(),
        true,
        &mut |_, _| {},
    )
    .unwrap();
    let (mut exact, mut other) = (0, 0);
    for p in &bundle.programs {
        let float = p.src.contains("float");
        let writes_ints = p
            .buffers
            .iter()
            .filter(|b| b.mutable)
            .all(|b| b.dtype.scalar.is_int());
        let marked =
            p.src.contains("KILN_EXACT_FLOAT static") || p.src.contains("KILN_EXACT_FLOAT void");
        assert_eq!(marked, float && writes_ints, "{}:\n{}", p.name, p.src);
        assert_eq!(
            marked,
            p.src.contains("#pragma STDC FP_CONTRACT OFF"),
            "{}",
            p.name
        );
        if marked {
            exact += 1
        } else {
            other += 1
        }
    }
    assert!(
        exact >= 10 && other > 0,
        "{exact} quantizing kernels, {other} others"
    );
}

/// An int8 QDQ model (its convolutions and dense layers integer kernels) against onnxruntime
/// within `steps` quantization steps.
fn check_int8(name: &str, steps: f64) {
    let data = repo().join("tests/ops/mlperf_int8").join(name);
    let tol = Tolerance {
        atol: steps,
        rtol: 0.0,
    };
    check_against(name, &mlperf_path(name), &data, tol);
}

#[test]
fn mlperf_small_int8_models_match_onnxruntime_exactly() {
    for name in ["ad_int8_qdq", "kws_int8_qdq", "str_ww_int8_qdq"] {
        check_int8(name, 0.0);
    }
}

/// `ic_int8_qdq` is checked compiled, bit for bit, by `tests/e2e/host_models.rs` (the UOp
/// interpreter takes 40 s on it).
#[test]
fn mlperf_vww_int8_matches_onnxruntime_exactly() {
    check_int8("vww_int8_qdq", 0.0);
}

#[test]
fn kilns_test_models_match_onnxruntime() {
    for name in [
        "mlp",
        "dw_separable",
        "residual",
        "softmax_head",
        "concat_transpose",
    ] {
        check_model(name, &repo().join(format!("tests/models/{name}.onnx")));
    }
}

/// The case folders under `tests/ops/` (each with `model.onnx`), sorted.
fn op_cases() -> Vec<PathBuf> {
    let dir = repo().join("tests/ops");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("model.onnx").is_file())
        .collect();
    cases.sort();
    cases
}

#[test]
fn every_op_case_matches_onnxruntime() {
    let cases = op_cases();
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let result = onnx::load(&case.join("model.onnx"))
            .map_err(|e| chain(&e))
            .and_then(|m| run_reference(&m, case, FLOAT));
        match result {
            Ok(o) => println!("{name:>32}: ok, max abs err {:.1e}", o.max_abs),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(cases.len() > 100, "only {} op cases", cases.len());
    assert!(
        failures.is_empty(),
        "{} of {} op cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_supported_op_has_a_case() {
    let mut tested = std::collections::BTreeSet::new();
    for case in op_cases() {
        let model = onnx::load(&case.join("model.onnx")).unwrap();
        tested.extend(model.graph.nodes.iter().map(|n| n.op_type.clone()));
    }
    let untested: Vec<&str> = onnx::ops::supported_ops()
        .into_iter()
        .filter(|op| !tested.contains(*op))
        .collect();
    assert!(untested.is_empty(), "ops without a case: {untested:?}");
}

#[test]
fn a_failing_node_names_itself_its_op_and_the_reason() {
    let err = import(&invalid_model("bad_reshape.onnx"), &[]).unwrap_err();
    assert!(matches!(err, ImportError::Node { .. }), "{err}");
    assert_eq!(
        chain(&err),
        "node bad_reshape (Reshape): cannot reshape [2, 12] to [5, -1]"
    );
    let err = import(&invalid_model("bad_attribute.onnx"), &[]).unwrap_err();
    assert_eq!(
        chain(&err),
        "node flat (Flatten): attribute \"axis\": expected int, found float"
    );
}

/// Every `.onnx` file of a folder tree.
fn onnx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            onnx_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "onnx") {
            out.push(p);
        }
    }
}

/// Imports (and schedules, where import succeeds) `bytes`; never panics.
fn import_bytes(bytes: &[u8]) -> Option<Result<usize, ImportError>> {
    let model = onnx::load_bytes(bytes).ok()?;
    Some(
        import(&model, &[])
            .map(|imp| create_schedule(&imp.graph, &imp.outputs).map_or(0, |s| s.items.len())),
    )
}

#[test]
fn importing_any_model_never_panics() {
    let mut files = Vec::new();
    onnx_files(&repo().join("tests"), &mut files);
    onnx_files(&mlperf_dir().join("onnx"), &mut files);
    assert!(files.len() > 20, "found only {} models", files.len());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        if let Some(Err(e)) = import_bytes(&bytes) {
            println!("{}: {e}", f.display());
        }
    }
}

#[test]
fn truncated_models_never_panic() {
    let bytes = std::fs::read(repo().join("tests/models/dw_separable.onnx")).unwrap();
    for len in (0..bytes.len()).step_by(7) {
        let _ = import_bytes(&bytes[..len]);
    }
}

fn invalid_model(name: &str) -> OnnxModel {
    let path = repo().join("tests/ops/invalid").join(name);
    onnx::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_unsupported_op_is_reported_at_once() {
    let err = import(&invalid_model("unknown_ops.onnx"), &[]).unwrap_err();
    let ImportError::UnsupportedOps { ops } = &err else {
        panic!("{err}");
    };
    let kinds: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "kiln.test:Frobnicate",
            "kiln.test:Twiddle",
            "kiln.test:Frobnicate"
        ]
    );
    let msg = err.to_string();
    assert!(msg.contains("Frobnicate ×2 (frob_a, frob_b)"), "{msg}");
    assert!(msg.contains("Twiddle ×1 (twiddle)"), "{msg}");
}

#[test]
fn a_free_dim_needs_a_shape() {
    let model = invalid_model("free_dim.onnx");
    let err = import(&model, &[]).unwrap_err();
    assert!(
        matches!(&err, ImportError::Onnx(OnnxError::FreeDim { input, axis: 1, .. }) if input == "x"),
        "{err}"
    );
    let pinned = [("x".to_string(), vec![1, 6])];
    let imported = import(&model, &pinned).unwrap();
    assert_eq!(imported.outputs[0].shape(), [1, 6]);
    assert_eq!(imported.input_names, ["x"]);
}

#[test]
fn an_unsupported_type_names_the_tensor() {
    let err = import(&invalid_model("string_input.onnx"), &[]).unwrap_err();
    assert!(
        matches!(&err, ImportError::Onnx(OnnxError::UnsupportedElemType { tensor, .. }) if tensor == "x"),
        "{err}"
    );
}

#[test]
fn shape_arithmetic_folds_on_the_host() {
    let path = repo().join("tests/ops/shape_arithmetic/model.onnx");
    let imported = import(&onnx::load(&path).unwrap(), &[]).unwrap();
    let schedule = create_schedule(&imported.graph, &imported.outputs).unwrap();
    assert_eq!(imported.outputs[0].shape(), [2, 12]);
    assert_eq!(
        schedule.items.len(),
        1,
        "one kernel: the reshape and the scale"
    );
}

/// Extreme values written into integer attributes, initializers and input dims.
const EXTREMES: [i64; 8] = [i64::MIN, -(1 << 40), -3, -1, 0, 2, 1 << 33, i64::MAX];

/// Calls `f` on every integer of `m` that a malicious file could set: int attributes,
/// int64 initializer elements and fixed input dims.
fn visit_ints(m: &mut ModelProto, f: &mut dyn FnMut(&mut i64)) {
    let Some(g) = m.graph.as_mut() else {
        return;
    };
    for node in &mut g.node {
        for a in &mut node.attribute {
            a.i.iter_mut().chain(a.ints.iter_mut()).for_each(&mut *f);
        }
    }
    for t in g.initializer.iter_mut().filter(|t| t.data_type == Some(7)) {
        for chunk in t.raw_data.iter_mut().flat_map(|r| r.chunks_exact_mut(8)) {
            let mut v = i64::from_le_bytes(chunk.try_into().unwrap());
            f(&mut v);
            chunk.copy_from_slice(&v.to_le_bytes());
        }
    }
    for input in &mut g.input {
        let tensor = input.r#type.as_mut().and_then(|t| t.value.as_mut());
        if let Some(type_proto::Value::TensorType(t)) = tensor {
            for d in t.shape.iter_mut().flat_map(|s| s.dim.iter_mut()) {
                if let Some(dimension::Value::DimValue(v)) = d.value.as_mut() {
                    f(v);
                }
            }
        }
    }
}

#[test]
fn extreme_integers_in_op_models_never_panic() {
    let (mut imports, mut panics) = (0, Vec::new());
    for case in op_cases() {
        let proto = ModelProto::decode(&*std::fs::read(case.join("model.onnx")).unwrap()).unwrap();
        let mut sites = 0;
        visit_ints(&mut proto.clone(), &mut |_| sites += 1);
        for site in 0..sites {
            for v in EXTREMES {
                let mut m = proto.clone();
                let mut k = 0;
                visit_ints(&mut m, &mut |slot| {
                    if k == site {
                        *slot = v;
                    }
                    k += 1;
                });
                let bytes = m.encode_to_vec();
                if std::panic::catch_unwind(|| import_bytes_unscheduled(&bytes)).is_err() {
                    panics.push(format!("{}: int {site} set to {v}", case.display()));
                }
                imports += 1;
            }
        }
    }
    assert!(imports > 1000, "{imports} imports");
    assert!(
        panics.is_empty(),
        "{} panics:\n{}",
        panics.len(),
        panics.join("\n")
    );
}

fn import_bytes_unscheduled(bytes: &[u8]) -> Option<Result<Imported, ImportError>> {
    Some(import(&onnx::load_bytes(bytes).ok()?, &[]))
}

//! Inputs bound at compile time (`--const NAME=VALUE`, `--state OUT=IN`): what the imported
//! graph keeps, and the errors that name the flag, the tensor and the value.

use kiln_codegen::dtype::DType;
use kiln_codegen::graph::Imported;
use kiln_codegen::model::{import_file, BindError, Bindings, ImportOptions, ModelError, StateLink};
use kiln_codegen::onnx::ImportError;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::TfliteError;
use std::path::PathBuf;

fn model(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/models")).join(path)
}

fn options(shapes: &[(&str, &[usize])], consts: &[&str], states: &[&str]) -> ImportOptions {
    ImportOptions {
        shapes: shapes
            .iter()
            .map(|(n, d)| (n.to_string(), d.to_vec()))
            .collect(),
        bindings: Bindings::parse(consts, states).unwrap(),
        ..Default::default()
    }
}

/// The GRU model imported with `consts` and `states` bound; an error is a binding error.
fn gru(consts: &[&str], states: &[&str]) -> Result<Imported, BindError> {
    import_file(
        &model("onnx-streaming/gru_stream.onnx"),
        &options(&[], consts, states),
    )
    .map_err(bind_error)
}

/// The bind error inside an import error of either format.
fn bind_error(e: ModelError) -> BindError {
    match e {
        ModelError::OnnxImport(ImportError::Bind(b)) => b,
        ModelError::Tflite(TfliteError::Bind(b)) => b,
        ModelError::Bind(b) => b,
        other => panic!("not a binding error: {other}"),
    }
}

#[test]
fn a_state_input_and_its_output_leave_the_model() {
    let plain = gru(&[], &[]).unwrap();
    assert_eq!((plain.graph.inputs.len(), plain.outputs.len()), (2, 2));
    assert!(plain.graph.states.is_empty());
    let bound = gru(&[], &["hn=h"]).unwrap();
    assert_eq!(bound.input_names, ["x"]);
    assert_eq!(bound.output_names, ["scores"]);
    assert_eq!(bound.bound_inputs, [(1, "h".to_string())]);
    assert_eq!(bound.state_outputs, [(1, "hn".to_string())]);
    let state = &bound.graph.states[0];
    assert_eq!((state.name.as_str(), state.dtype), ("h", DType::F32));
    assert_eq!(state.shape, [1, 1, 32]);
    assert!(state.init.is_none(), "a bound state starts from zeros");
    assert_eq!(bound.graph.next_states().len(), 1);
}

#[test]
fn a_constant_input_leaves_the_model() {
    let x = vec!["0.5"; 16].join(",");
    let bound = gru(&[&format!("x={x}")], &[]).unwrap();
    assert_eq!(bound.input_names, ["h"]);
    assert_eq!(bound.bound_inputs, [(0, "x".to_string())]);
    assert_eq!(bound.outputs.len(), 2);
}

#[test]
fn a_constant_from_a_file_must_have_the_inputs_type() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bindings");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x_i32.npy");
    let t = Tensor::from_i64(kiln_codegen::dtype::Scalar::I32, vec![1, 1, 16], &[1; 16]).unwrap();
    kiln_codegen::tensorio::write_npy(&path, &t).unwrap();
    let e = gru(&[&format!("x={}", path.display())], &[]).unwrap_err();
    assert!(
        matches!(&e, BindError::ConstValue { name, reason } if name == "x" && reason.contains("i32")),
        "{e}"
    );
    let f = Tensor::from_f64(kiln_codegen::dtype::Scalar::F32, vec![1, 16], &[1.0; 16]).unwrap();
    kiln_codegen::tensorio::write_npy(&path, &f).unwrap();
    let e = gru(&[&format!("x={}", path.display())], &[]).unwrap_err();
    assert!(e.to_string().contains("[1, 1, 16]"), "{e}");
    let missing = gru(&["x=no/such/file.npy"], &[]).unwrap_err().to_string();
    assert!(
        missing.contains("--const x") && missing.contains("no/such/file.npy"),
        "{missing}"
    );
}

#[test]
fn errors_name_the_flag_the_tensor_and_the_value() {
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (&[], &["hn=hidden"], &["--state", "\"hidden\"", "x, h"]),
        (&[], &["out=h"], &["no output \"out\"", "scores, hn"]),
        (
            &[],
            &["scores=h"],
            &["\"scores\" is f32 [1, 4]", "\"h\" is f32 [1, 1, 32]"],
        ),
        (
            &["h=0"],
            &["hn=h"],
            &["\"h\" is bound twice", "--const", "--state"],
        ),
        (&["x=1,2"], &[], &["--const x", "2 value(s)", "needs 16"]),
        (&["x=abc"], &[], &["\"abc\" is not a f32 value"]),
        (
            &[],
            &["hn=h", "hn=x"],
            &["\"hn\" is the next value of two inputs"],
        ),
    ];
    for (consts, states, words) in cases {
        let e = (gru(consts, states).unwrap_err()).to_string();
        for w in *words {
            assert!(e.contains(w), "{consts:?} {states:?}: {e:?} lacks {w:?}");
        }
    }
    for bad in ["hn", "=h", "hn="] {
        let e = StateLink::parse(bad).unwrap_err().to_string();
        assert!(e.contains("--state") && e.contains(bad), "{e}");
    }
}

/// Silero VAD branches on its sample rate: with it fixed, only the taken branch is imported.
#[test]
fn a_constant_condition_imports_one_branch() {
    let path = model("onnx-streaming/silero_vad.onnx");
    let shapes: &[(&str, &[usize])] = &[("input", &[1, 576]), ("state", &[2, 1, 128])];
    let both = import_file(&path, &options(shapes, &[], &[]));
    assert!(both.is_err(), "the 8 kHz branch does not take 576 samples");
    let one = import_file(&path, &options(shapes, &["sr=16000"], &["stateN=state"])).unwrap();
    assert_eq!(one.input_names, ["input"]);
    assert_eq!(one.output_names, ["output"]);
    let e = bind_error(import_file(&path, &options(shapes, &["sr=16000.5"], &[])).unwrap_err());
    assert!(
        e.to_string().contains("\"16000.5\" is not a i64 value"),
        "{e}"
    );
    let e = bind_error(import_file(&path, &options(shapes, &["sr=1e30"], &[])).unwrap_err());
    assert!(e.to_string().contains("sr"), "{e}");
}

#[test]
fn tflite_inputs_bind_too() {
    let path = model("tflite-real/hello_world_int8.tflite");
    let input = "serving_default_dense_input:0";
    let fixed = import_file(&path, &options(&[], &[&format!("{input}=5")], &[])).unwrap();
    assert!(fixed.graph.inputs.is_empty());
    assert_eq!(fixed.bound_inputs, [(0, input.to_string())]);
    let e = import_file(&path, &options(&[], &[&format!("{input}=300")], &[])).unwrap_err();
    assert!(bind_error(e).to_string().contains("300 does not fit in i8"));
    let looped = format!("StatefulPartitionedCall:0={input}");
    let state = import_file(&path, &options(&[], &[], &[&looped])).unwrap();
    assert_eq!(state.graph.states.len(), 1);
    assert!(state.outputs.is_empty() && state.graph.inputs.is_empty());
}

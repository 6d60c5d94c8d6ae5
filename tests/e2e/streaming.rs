//! Streaming models: state kept on the device between invocations. Each model runs over its
//! recorded steps on one loaded bundle (no reset between them), every step's outputs against
//! TFLM's invoked the same way (bit-exact for integers, floats within 1e-5 relative); a reset
//! then gives the first step's outputs again, as a freshly loaded model does (TFLM's own
//! `reset()` refills each variable with its zero point instead, without rerunning
//! `CALL_ONCE`). The vectors are `scripts/make_streaming_tflite.py`'s.

use kiln_runners::host::{self, Invocation};
use kiln_tests::{compare, compile_file, read_steps, root, StreamStep};
use std::path::{Path, PathBuf};

const RTOL: f64 = 1e-5;
const ATOL: f64 = 1e-6;

/// Compiles `model`, runs its steps on the host, then a reset and the first step again.
fn stream_on_host(name: &str, model: &Path, steps_dir: &Path) -> Vec<StreamStep> {
    let bundle = compile_file(name, model).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    assert!(bundle.report.state_bytes > 0, "{name} keeps no state");
    let steps = read_steps(steps_dir).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(steps.len() >= 20, "{name}: {} steps", steps.len());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("streaming")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    bundle.write(&dir).unwrap();
    let lib = host::compile(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bytes: Vec<Vec<Vec<u8>>> = (steps.iter())
        .map(|s| s.inputs.iter().map(|t| t.bytes().to_vec()).collect())
        .collect();
    let mut invocations: Vec<Invocation> = bytes.iter().map(|b| Invocation::Run(b)).collect();
    invocations.extend([Invocation::Reset, Invocation::Run(&bytes[0])]);
    let runs = host::run_invocations(&bundle, &lib, &invocations)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let expected = steps.iter().chain(&steps[..1]).map(|s| &s.expected);
    for (k, (run, want)) in runs.iter().zip(expected).enumerate() {
        let step = format!("{name} step {k:02}");
        compare(&step, &run.outputs, want, RTOL, ATOL).unwrap_or_else(|e| panic!("{e:#}"));
    }
    println!(
        "{name}: {} steps and a reset on the host, state {} B of a {} B arena",
        steps.len(),
        bundle.report.state_bytes,
        bundle.report.arena_bytes
    );
    steps
}

fn real(name: &str) -> (PathBuf, PathBuf) {
    let dir = root().join("tests/models/tflite-real");
    (
        dir.join(format!("{name}.tflite")),
        dir.join(name).join("steps"),
    )
}

fn generated(name: &str) -> (PathBuf, PathBuf) {
    let dir = root().join("tests/models/tflite-streaming");
    (
        dir.join(format!("{name}.tflite")),
        dir.join(name).join("steps"),
    )
}

/// microWakeWord's hey_jarvis: six int8 ring buffers in resource variables, initialized by
/// CALL_ONCE.
#[test]
fn hey_jarvis_streams_like_tflm() {
    let (model, steps) = real("hey_jarvis");
    let steps = stream_on_host("hey_jarvis", &model, &steps);
    // The wake word's score moves as the windows come: the state matters.
    let first = &steps[0].expected[0];
    assert!(steps.iter().any(|s| s.expected[0].bytes() != first.bytes()));
}

#[test]
fn float_ring_buffers_stream_like_tflm() {
    let (model, steps) = generated("stream_conv_float");
    stream_on_host("stream_conv_float", &model, &steps);
}

#[test]
fn int8_ring_buffers_stream_like_tflm() {
    let (model, steps) = generated("stream_conv_int8");
    stream_on_host("stream_conv_int8", &model, &steps);
}

/// A variable read again after its assignment in the same run, from a non-zero start.
#[test]
fn a_variable_read_after_its_assignment_sees_the_new_value() {
    let (model, steps) = generated("stream_accumulate_float");
    stream_on_host("stream_accumulate_float", &model, &steps);
}

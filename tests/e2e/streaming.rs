//! Streaming models: state kept on the device between invocations. Each model runs over its
//! recorded steps on one loaded bundle (no reset between them), every step's outputs against
//! TFLM's invoked the same way (bit-exact for integers, floats within 1e-5 relative); a reset
//! then gives the first step's outputs again, as a freshly loaded model does (TFLM's own
//! `reset()` refills each variable with its zero point instead, without rerunning
//! `CALL_ONCE`). The vectors are `scripts/make_streaming_tflite.py`'s.

use kiln_codegen::bundle::Bundle;
use kiln_runners::board;
use kiln_runners::host;
use kiln_runners::Invocation;
use kiln_tests::{compare, compile_file, read_steps, root, StreamStep};
use std::path::{Path, PathBuf};
use std::time::Duration;

const RTOL: f64 = 1e-5;
const ATOL: f64 = 1e-6;

/// A model with state, compiled and written to its own folder, and its recorded steps.
struct Stream {
    name: String,
    bundle: Bundle,
    dir: PathBuf,
    steps: Vec<StreamStep>,
    /// Each step's input bytes.
    bytes: Vec<Vec<Vec<u8>>>,
}

impl Stream {
    fn new(name: &str, model: &Path, steps_dir: &Path, place: &str) -> Stream {
        let bundle = compile_file(name, model).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(bundle.report.state_bytes > 0, "{name} keeps no state");
        let steps = read_steps(steps_dir).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(steps.len() >= 20, "{name}: {} steps", steps.len());
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("streaming")
            .join(format!("{name}-{place}"));
        let _ = std::fs::remove_dir_all(&dir);
        bundle.write(&dir).unwrap();
        let bytes = (steps.iter())
            .map(|s| s.inputs.iter().map(|t| t.bytes().to_vec()).collect())
            .collect();
        Stream {
            name: name.into(),
            bundle,
            dir,
            steps,
            bytes,
        }
    }

    /// Every step in order, a reset, and the first step again.
    fn invocations(&self) -> Vec<Invocation<'_>> {
        let mut invocations: Vec<Invocation> =
            self.bytes.iter().map(|b| Invocation::Run(b)).collect();
        invocations.extend([Invocation::Reset, Invocation::Run(&self.bytes[0])]);
        invocations
    }

    /// Each run's outputs against its step's (the last against the first step's).
    fn check(&self, outputs: &[&[Vec<u8>]], place: &str) {
        assert_eq!(outputs.len(), self.steps.len() + 1, "{}", self.name);
        let expected = self.steps.iter().chain(&self.steps[..1]);
        for (k, (got, want)) in outputs.iter().zip(expected).enumerate() {
            let step = format!("{} on {place}, run {k:02}", self.name);
            compare(&step, got, &want.expected, RTOL, ATOL).unwrap_or_else(|e| panic!("{e:#}"));
        }
        println!(
            "{} on {place}: {} steps and a reset, state {} B of a {} B arena",
            self.name,
            self.steps.len(),
            self.bundle.report.state_bytes,
            self.bundle.report.arena_bytes
        );
    }
}

/// Compiles `model`, runs its steps on the host, then a reset and the first step again.
fn stream_on_host(name: &str, model: &Path, steps_dir: &Path) -> Vec<StreamStep> {
    let s = Stream::new(name, model, steps_dir, "host");
    let lib = host::compile(&s.dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let runs = host::run_invocations(&s.bundle, &lib, &s.invocations())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let outputs: Vec<&[Vec<u8>]> = runs.iter().map(|r| r.outputs.as_slice()).collect();
    s.check(&outputs, "the host");
    s.steps
}

/// The same on an emulated board, in one run of its firmware: each step's instructions too.
fn stream_on_board(board_name: &str, name: &str, model: &Path, steps_dir: &Path) {
    let s = Stream::new(name, model, steps_dir, board_name);
    let info = board::info(board_name).unwrap();
    let image = board::build_with_options(&info, &s.dir, Default::default(), &mut |_| {})
        .unwrap_or_else(|e| panic!("building {name} for {board_name}: {e}"));
    let timeout = Duration::from_secs(600);
    let runs = board::run_invocations(&info, &image, &s.invocations(), timeout)
        .unwrap_or_else(|e| panic!("{name} on {board_name}: {}", kiln_codegen::error::chain(&e)));
    let outputs: Vec<&[Vec<u8>]> = runs.iter().map(|r| r.outputs.as_slice()).collect();
    s.check(&outputs, board_name);
    let per_run: Vec<u64> = (runs.iter())
        .map(|r| r.step_instructions.iter().sum())
        .collect();
    // Every run calls every kernel; their branches (saturation, clamps) follow the data.
    let (least, most) = (per_run.iter().min().unwrap(), per_run.iter().max().unwrap());
    assert!(*least > 0 && most - least <= most / 100, "{per_run:?}");
    println!("{name} on {board_name}: {least}..={most} instructions a window");
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
    let (model, dir) = real("hey_jarvis");
    let steps = stream_on_host("hey_jarvis", &model, &dir);
    stream_on_board("qemu-an386", "hey_jarvis", &model, &dir);
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
    stream_on_board("qemu-an386", "stream_conv_int8", &model, &steps);
}

/// A variable read again after its assignment in the same run, from a non-zero start.
#[test]
fn a_variable_read_after_its_assignment_sees_the_new_value() {
    let (model, steps) = generated("stream_accumulate_float");
    stream_on_host("stream_accumulate_float", &model, &steps);
}

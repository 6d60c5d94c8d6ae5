//! Streaming models: state kept on the device between invocations. Each model runs over its
//! recorded steps on one loaded bundle (no reset between them), every step's outputs against
//! TFLM's invoked the same way (bit-exact for integers, floats within 1e-5 relative); a reset
//! then gives the first step's outputs again, as a freshly loaded model does (TFLM's own
//! `reset()` refills each variable with its zero point instead, without rerunning
//! `CALL_ONCE`). The vectors are `scripts/make_streaming_tflite.py`'s.
//!
//! ONNX models that take their state as inputs and give the next state as outputs are compiled
//! with their states bound (`--state OUT=IN`) and their fixed inputs constant (`--const`): their
//! steps, recorded by `scripts/make_onnx_streaming.py` from one onnxruntime session fed its own
//! state back, hold every input and output of the file; the device gets only the others, and
//! the outputs that are states are not compared (the next steps' outputs depend on them).

use kiln_codegen::bundle::Bundle;
use kiln_codegen::gpu::Api;
use kiln_codegen::model::{Bindings, ImportOptions};
use kiln_codegen::target::Target;
use kiln_runners::board;
use kiln_runners::host;
use kiln_runners::Invocation;
use kiln_tests::{compare, compile_file_with, read_steps, root, StreamStep};
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
    valid: Option<usize>,
}

/// A model file, the options it is compiled with, and which of its inputs and outputs (by
/// index) those options bind.
struct Model {
    name: &'static str,
    path: PathBuf,
    steps: PathBuf,
    options: ImportOptions,
    bound_inputs: &'static [usize],
    state_outputs: &'static [usize],
    /// The bool output that says whether the others hold a frame (a framer or stacker whose
    /// buffer has not filled): where TFLM's is false it left them unwritten, so only the flag
    /// is compared.
    valid: Option<usize>,
}

impl Model {
    /// A model compiled as it is.
    fn plain(name: &'static str, path: PathBuf, steps: PathBuf) -> Model {
        Model {
            name,
            path,
            steps,
            options: ImportOptions::default(),
            bound_inputs: &[],
            state_outputs: &[],
            valid: None,
        }
    }
}

/// `tensors` without those at `indices`.
fn without(
    tensors: Vec<kiln_codegen::tensor::Tensor>,
    indices: &[usize],
) -> Vec<kiln_codegen::tensor::Tensor> {
    (tensors.into_iter().enumerate())
        .filter(|(i, _)| !indices.contains(i))
        .map(|(_, t)| t)
        .collect()
}

impl Stream {
    fn new(m: &Model, place: &str) -> Stream {
        let name = m.name;
        let bundle = compile_file_with(name, &m.path, &Target::c(), &m.options)
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(bundle.report.state_bytes > 0, "{name} keeps no state");
        let steps = read_steps(&m.steps).unwrap_or_else(|e| panic!("{e:#}"));
        let steps: Vec<StreamStep> = (steps.into_iter())
            .map(|s| StreamStep {
                inputs: without(s.inputs, m.bound_inputs),
                expected: without(s.expected, m.state_outputs),
            })
            .collect();
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
            valid: m.valid,
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
            let (got, want) = match self.valid {
                Some(v) if want.expected[v].bytes() == [0] => (&got[v..=v], &want.expected[v..=v]),
                _ => (*got, &want.expected[..]),
            };
            compare(&step, got, want, RTOL, ATOL).unwrap_or_else(|e| panic!("{e:#}"));
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
fn stream_on_host(m: &Model) -> Vec<StreamStep> {
    let name = m.name;
    let s = Stream::new(m, "host");
    let lib = host::build_library(&s.dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let runs = host::run_invocations(&s.bundle, &lib, &s.invocations())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let outputs: Vec<&[Vec<u8>]> = runs.iter().map(|r| r.outputs.as_slice()).collect();
    s.check(&outputs, "the host");
    s.steps
}

/// The same on an emulated board, in one run of its firmware, its inputs and outputs over `io`
/// (semihosting files, or one session of the test-vector channel on the console or on RTT, as
/// a real board speaks it): each step's instructions too.
fn stream_on_board(board_name: &str, m: &Model, io: board::Io) {
    let name = m.name;
    let place = format!("{board_name}-{}", io.name());
    let s = Stream::new(m, &place);
    let info = board::info(board_name).unwrap();
    let build = board::BuildOptions {
        rtt: io == board::Io::Rtt,
        ..Default::default()
    };
    let image = board::build_with_options(&info, &s.dir, build, &mut |_| {})
        .unwrap_or_else(|e| panic!("building {name} for {board_name}: {e}"));
    let timeout = Duration::from_secs(600);
    let options = board::RunOptions { io };
    let runs =
        board::run_invocations_with_options(&info, &image, &s.invocations(), timeout, options)
            .unwrap_or_else(|e| panic!("{name} on {place}: {}", kiln_codegen::error::chain(&e)));
    let outputs: Vec<&[Vec<u8>]> = runs.iter().map(|r| r.outputs.as_slice()).collect();
    s.check(&outputs, &place);
    let per_run: Vec<u64> = (runs.iter())
        .map(|r| r.step_instructions.iter().sum())
        .collect();
    // Every run calls every kernel; their branches (saturation, clamps) follow the data, by
    // 1% of a window or a few instructions on a tiny model.
    let (least, most) = (per_run.iter().min().unwrap(), per_run.iter().max().unwrap());
    assert!(
        *least > 0 && most - least <= (most / 100).max(16),
        "{per_run:?}"
    );
    println!("{name} on {place}: {least}..={most} instructions a window");
}

/// The same on an edge GPU through `api` (OpenCL on PoCL, Vulkan on lavapipe): the state stays
/// in device memory between the runs, and a reset writes its initial values there again.
fn stream_on_gpu(api: kiln_codegen::gpu::Api, m: &Model) {
    let name = m.name;
    let place = api.name();
    let s = Stream::new(m, place);
    let imported = kiln_codegen::model::import_file(&m.path, &m.options).unwrap();
    let limits =
        kiln_runners::gpu::device_limits(api).unwrap_or_else(|e| panic!("no {place} device: {e}"));
    let gb = kiln_codegen::gpu::compile(
        name,
        &imported.graph,
        &imported.outputs,
        api,
        &limits,
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{name} for {place}: {e}"));
    assert_eq!(gb.bundle.report.state_bytes, s.bundle.report.state_bytes);
    let runs = kiln_runners::gpu::run_invocations(&gb, &s.invocations())
        .unwrap_or_else(|e| panic!("{name} on {place}: {e}"));
    let outputs: Vec<&[Vec<u8>]> = runs.iter().map(|r| r.outputs.as_slice()).collect();
    s.check(&outputs, place);
}

fn real(name: &'static str) -> Model {
    let dir = root().join("tests/models/tflite-real");
    let (path, steps) = (
        dir.join(format!("{name}.tflite")),
        dir.join(name).join("steps"),
    );
    Model::plain(name, path, steps)
}

fn generated(name: &'static str) -> Model {
    let dir = root().join("tests/models/tflite-streaming");
    let (path, steps) = (
        dir.join(format!("{name}.tflite")),
        dir.join(name).join("steps"),
    );
    Model::plain(name, path, steps)
}

/// An ONNX model of `tests/models/onnx-streaming`, its states bound by `states` (`OUT=IN`) and
/// its inputs fixed by `consts` (`NAME=VALUE`).
fn onnx(
    name: &'static str,
    shapes: &[(&str, &[usize])],
    consts: &[&str],
    states: &[&str],
) -> Model {
    let dir = root().join("tests/models/onnx-streaming");
    let (path, steps) = (
        dir.join(format!("{name}.onnx")),
        dir.join(name).join("steps"),
    );
    let bindings = Bindings::parse(consts, states).unwrap();
    let options = ImportOptions {
        shapes: shapes
            .iter()
            .map(|(n, d)| (n.to_string(), d.to_vec()))
            .collect(),
        bindings,
        ..Default::default()
    };
    Model {
        options,
        ..Model::plain(name, path, steps)
    }
}

/// microWakeWord's hey_jarvis: six int8 ring buffers in resource variables, initialized by
/// CALL_ONCE.
#[test]
fn hey_jarvis_streams_like_tflm() {
    let m = real("hey_jarvis");
    let steps = stream_on_host(&m);
    stream_on_board("qemu-an386", &m, board::Io::Files);
    // Over RTT, as on a real board under a probe: one channel session, a `Reset` message.
    stream_on_board("qemu-an386", &m, board::Io::Rtt);
    // The GPUs keep the state in device memory; its copies share a source but not their sizes.
    stream_on_gpu(Api::OpenCl, &m);
    stream_on_gpu(Api::Vulkan, &m);
    // The wake word's score moves as the windows come: the state matters.
    let first = &steps[0].expected[0];
    assert!(steps.iter().any(|s| s.expected[0].bytes() != first.bytes()));
}

/// TFLM's micro_speech audio front end: the noise estimate of its spectral subtraction is its
/// state, zeros at load and after a reset.
#[test]
fn the_audio_front_end_streams_like_tflm() {
    let m = real("audio_preprocessor_int8");
    stream_on_host(&m);
    stream_on_board("qemu-an386", &m, board::Io::Files);
    stream_on_gpu(Api::OpenCl, &m);
}

/// Spectral subtraction with clamping (the estimate forced down to a quieter signal) and
/// channels whose `x << smoothing_bits` wraps; both outputs, the estimate included.
#[test]
fn clamped_spectral_subtraction_streams_like_tflm() {
    let m = generated("spectral_subtraction_clamped");
    stream_on_host(&m);
    stream_on_gpu(Api::OpenCl, &m);
    stream_on_gpu(Api::Vulkan, &m);
}

/// TFLM's signal ops that keep samples between invocations, one op a model: every step exact
/// (or, where the op says its frame is not ready, the same flag).
#[test]
fn signal_ops_with_state_stream_like_tflm() {
    for (name, valid) in [
        ("signal_delay", None),
        ("signal_framer_prefill", Some(1)),
        ("signal_framer", Some(1)),
        ("signal_stacker", Some(1)),
        ("signal_overlap_add_int16", None),
        ("signal_overlap_add_float", None),
    ] {
        let m = Model {
            valid,
            ..generated(name)
        };
        stream_on_host(&m);
        stream_on_gpu(Api::OpenCl, &m);
    }
    let m = Model {
        valid: Some(1),
        ..generated("signal_stacker")
    };
    stream_on_board("qemu-an386", &m, board::Io::Files);
}

/// TFLM's `CIRCULAR_BUFFER` (the TFLite suite's case): three invocations on one frame fill the
/// buffer with it, as TFLM's third output holds; before that the empty slots are zeros.
#[test]
fn a_circular_buffer_fills_like_tflm() {
    let dir = root().join("tests/tflite-suite/circular_buffer_int8");
    let bundle = compile_file_with(
        "circular",
        &dir.join("model.tflite"),
        &Target::c(),
        &Default::default(),
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let frame = kiln_codegen::tensorio::read_tensor(&dir.join("input_0.npy")).unwrap();
    let want = kiln_codegen::tensorio::read_tensor(&dir.join("output_0.npy")).unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("streaming/circular_buffer");
    let _ = std::fs::remove_dir_all(&out);
    bundle.write(&out).unwrap();
    let lib = host::build_library(&out).unwrap();
    let input = vec![frame.bytes().to_vec()];
    let mut invocations = vec![Invocation::Run(&input); 3];
    invocations.extend([Invocation::Reset, Invocation::Run(&input)]);
    let runs = host::run_invocations(&bundle, &lib, &invocations).unwrap();
    let depth = frame.bytes().len();
    for (k, run) in runs.iter().enumerate() {
        let filled = if k < 3 { k + 1 } else { 1 };
        let mut expected = vec![0u8; depth * (3 - filled)];
        expected.extend(frame.bytes().repeat(filled));
        assert_eq!(run.outputs[0], expected, "run {k}");
    }
    assert_eq!(runs[2].outputs[0], want.bytes(), "TFLM's third output");
}

#[test]
fn float_ring_buffers_stream_like_tflm() {
    stream_on_host(&generated("stream_conv_float"));
}

#[test]
fn int8_ring_buffers_stream_like_tflm() {
    let m = generated("stream_conv_int8");
    stream_on_host(&m);
    stream_on_board("qemu-an386", &m, board::Io::Files);
    stream_on_board("qemu-an386", &m, board::Io::Channel);
    stream_on_gpu(Api::OpenCl, &m);
    stream_on_gpu(Api::Vulkan, &m);
}

/// A variable read again after its assignment in the same run, from a non-zero start.
#[test]
fn a_variable_read_after_its_assignment_sees_the_new_value() {
    let m = generated("stream_accumulate_float");
    stream_on_host(&m);
    // Its state starts from values other than zeros: the GPU writes them, at load and reset.
    stream_on_gpu(Api::Vulkan, &m);
}

/// Silero VAD: its LSTM state kept on the device (`--state stateN=state`), its sample rate
/// fixed (`--const sr=16000`) so that only the 16 kHz branch of its `If` is imported.
#[test]
fn silero_vad_streams_like_onnxruntime_fed_its_own_state() {
    let mut m = onnx(
        "silero_vad",
        &[("input", &[1, 576]), ("state", &[2, 1, 128])],
        &["sr=16000"],
        &["stateN=state"],
    );
    (m.bound_inputs, m.state_outputs) = (&[1, 2], &[1]);
    let steps = stream_on_host(&m);
    stream_on_board("qemu-an386", &m, board::Io::Files);
    stream_on_gpu(Api::OpenCl, &m);
    let speech = steps
        .iter()
        .filter(|s| s.expected[0].to_f64()[0] > 0.5)
        .count();
    assert!(
        speech > 0 && speech < steps.len(),
        "{speech} windows of speech"
    );
}

/// A GRU step whose hidden state stays on the device (`--state hn=h`).
#[test]
fn gru_state_bound_streams_like_onnxruntime() {
    let mut m = onnx("gru_stream", &[], &[], &["hn=h"]);
    (m.bound_inputs, m.state_outputs) = (&[1], &[1]);
    stream_on_host(&m);
}

/// An LSTM step with both its states on the device (`--state hn=h --state cn=c`).
#[test]
fn lstm_states_bound_stream_like_onnxruntime() {
    let mut m = onnx("lstm_stream", &[], &[], &["hn=h", "cn=c"]);
    (m.bound_inputs, m.state_outputs) = (&[1, 2], &[1, 2]);
    stream_on_host(&m);
    stream_on_board("qemu-an386", &m, board::Io::Channel);
    // Both states are updated in place, a kernel reading and writing one buffer.
    stream_on_gpu(Api::OpenCl, &m);
    stream_on_gpu(Api::Vulkan, &m);
}

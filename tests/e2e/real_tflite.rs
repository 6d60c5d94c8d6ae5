//! Real `.tflite` models as they ship in public wheels and in TFLM's own examples
//! (`tests/models/tflite-real`, fetched by `scripts/make_real_tflite.py`, with their licences): compiled to C, run by the firmware
//! executor on the host, and compared with TFLM's outputs (or LiteRT's reference kernels' where
//! TFLM refuses the model: float16 and sparse weights) within 1e-3 relative and 1e-4 absolute;
//! the models small enough also on the emulated Cortex-M4F. Those Kiln cannot run yet must
//! fail to import with an error that names what stops them.

use kiln_codegen::bundle::Bundle;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio::read_dir_tensors;
use kiln_runners::board::{self, Io};
use kiln_runners::host;
use kiln_tests::{compare, compile_file, root};
use std::path::{Path, PathBuf};
use std::time::Duration;

const RTOL: f64 = 1e-3;
const ATOL: f64 = 1e-4;

fn real() -> PathBuf {
    root().join("tests/models/tflite-real")
}

fn model(name: &str) -> PathBuf {
    real().join(format!("{name}.tflite"))
}

/// The model's inputs and its reference outputs.
fn vectors(name: &str) -> (Vec<Tensor>, Vec<Tensor>) {
    let dir = real().join(name);
    let inputs = read_dir_tensors(&dir, "input").unwrap();
    let outputs = read_dir_tensors(&dir, "output").unwrap();
    (inputs, outputs)
}

fn compiled(name: &str) -> Bundle {
    compile_file(name, &model(name)).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

fn on_host(name: &str) {
    let bundle = compiled(name);
    let (inputs, want) = vectors(name);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("real_tflite")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    bundle.write(&dir).unwrap();
    let lib = host::build_library(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|t| t.bytes().to_vec()).collect();
    let run = host::run(&bundle, &lib, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (abs, rel) =
        compare(name, &run.outputs, &want, RTOL, ATOL).unwrap_or_else(|e| panic!("{e:#}"));
    println!("{name} on the host: max abs {abs:.2e}, max rel {rel:.2e}");
}

fn on_board(board_name: &str, name: &str) {
    let bundle = compiled(name);
    let (inputs, want) = vectors(name);
    let info = board::info(board_name).unwrap();
    board::check_fits(&info, &bundle).unwrap_or_else(|e| panic!("{name}: {e}"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("real_tflite")
        .join(format!("{name}-{board_name}"));
    let _ = std::fs::remove_dir_all(&dir);
    bundle.write(&dir).unwrap();
    let image = board::build_with_options(&info, &dir, Default::default(), &mut |_| {})
        .unwrap_or_else(|e| panic!("building {name} for {board_name}: {e}"));
    let inputs: Vec<Vec<u8>> = inputs.into_iter().map(Tensor::into_bytes).collect();
    let options = board::RunOptions { io: Io::Files };
    let run = board::run_with_options(&info, &image, &inputs, Duration::from_secs(600), options)
        .unwrap_or_else(|e| panic!("{name} on {board_name}: {}", kiln_codegen::error::chain(&e)));
    let (abs, rel) =
        compare(name, &run.outputs, &want, RTOL, ATOL).unwrap_or_else(|e| panic!("{e:#}"));
    println!(
        "{name} on {board_name}: max abs {abs:.2e}, max rel {rel:.2e}; {} instructions",
        run.total_instructions
    );
}

fn on_gpu(api: kiln_codegen::gpu::Api, name: &str) {
    let imported = kiln_codegen::model::import_file(&model(name), &Default::default()).unwrap();
    let limits = kiln_runners::gpu::device_limits(api)
        .unwrap_or_else(|e| panic!("no {} device: {e}", api.name()));
    let (graph, outputs) = (&imported.graph, &imported.outputs);
    let gb = kiln_codegen::gpu::compile(name, graph, outputs, api, &limits, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{name} for {}: {e}", api.name()));
    let (inputs, want) = vectors(name);
    let inputs: Vec<Vec<u8>> = inputs.into_iter().map(Tensor::into_bytes).collect();
    let run = kiln_runners::gpu::run(&gb, &inputs, 1)
        .unwrap_or_else(|e| panic!("{name} on {}: {e}", api.name()));
    compare(name, &run.outputs, &want, RTOL, ATOL).unwrap_or_else(|e| panic!("{e:#}"));
}

/// The import error of a model Kiln cannot run yet.
fn import_error(name: &str) -> String {
    match kiln_codegen::model::import_file(&model(name), &Default::default()) {
        Ok(_) => panic!("{name} imports: give it a reference and run it"),
        Err(e) => kiln_codegen::error::chain(&e),
    }
}

/// BlazeFace (MediaPipe's short-range face detector): float16 weights behind DEQUANTIZE,
/// widened at compile time.
#[test]
fn face_detection_short_range() {
    on_host("face_detection_short_range");
}

#[test]
fn face_detection_short_range_on_qemu_an386() {
    on_board("qemu-an386", "face_detection_short_range");
}

/// BlazeFace full-range: sparse weights (densified as the file is read), RESIZE_BILINEAR.
#[test]
fn face_detection_full_range_sparse() {
    on_host("face_detection_full_range_sparse");
}

/// MediaPipe's hand re-crop model: PRELU after every convolution.
#[test]
fn hand_recrop() {
    on_host("hand_recrop");
}

/// MediaPipe's custom transposed convolution is not a TFLM op: the error names it.
#[test]
fn selfie_segmentation_names_its_custom_op() {
    let e = import_error("selfie_segmentation");
    assert!(e.contains("CUSTOM:Convolution2DTransposeBias"), "{e}");
}

/// microWakeWord's streaming wake word: its first invocation, from the state CALL_ONCE sets
/// (`streaming.rs` runs it over many), exact.
#[test]
fn hey_jarvis_first_window() {
    on_host("hey_jarvis");
    on_board("qemu-an386", "hey_jarvis");
}

/// TFLM's hello_world: three int8 fully connected layers, exact.
#[test]
fn tflm_hello_world_int8() {
    on_host("hello_world_int8");
    on_board("qemu-an386", "hello_world_int8");
}

/// TFLM's micro_speech keyword spotter (int8 convolution, fully connected, softmax), exact.
#[test]
fn tflm_micro_speech() {
    on_host("micro_speech_quantized");
    on_board("qemu-an386", "micro_speech_quantized");
}

/// TFLM's mnist_lstm, float: an LSTM over 28 steps (a counted loop).
#[test]
fn tflm_mnist_lstm_float() {
    on_host("trained_lstm");
}

/// TFLM's mnist_lstm, int8: the integer LSTM over 28 steps, exact. On the host its kernels
/// overflow `int` where TFLM's arithmetic wraps: compiled without `-fwrapv`, the vectorizer
/// exploited that and 535 of its 560 outputs were wrong.
#[test]
fn tflm_mnist_lstm_int8() {
    on_host("trained_lstm_int8");
    on_board("qemu-an386", "trained_lstm_int8");
}

/// TFLM's DTLN noise suppression: two int8 LSTMs over a 257-bin spectrum frame, exact on the
/// host and both GPU targets.
#[test]
fn tflm_dtln_noise_suppression() {
    on_host("dtln_noise_suppression");
    on_gpu(kiln_codegen::gpu::Api::OpenCl, "dtln_noise_suppression");
    on_gpu(kiln_codegen::gpu::Api::Vulkan, "dtln_noise_suppression");
}

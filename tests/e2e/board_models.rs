//! The end-to-end models on the emulated boards: every model on the default board
//! (qemu-an386), keyword spotting and anomaly detection on every emulated board they fit on,
//! each compared with onnxruntime like on the host; the five int8 TFLite models compared with
//! TFLM bit for bit on every board they fit (the FPU-less Cortex-M0 included, and the micro:bit
//! for the one that fits it), and int8 QDQ models with onnxruntime; a board too small refuses
//! them with the numbers before anything is built. The int8 kernels are generated for each
//! board's core: packed int8 dot products (`SXTB16`/`SMLAD`) on the M4, M7, M33 and M55
//! (Helium's sixteen lanes, `VMLADAVA`, too on the M55, its loads and sums checked by QEMU's
//! emulation of them), and
//! again with their weights widened to int16 pairs (`--wide-weights`, the `_wide` tests), their
//! activations stored as int16 (`--wide-activations`, `_i16`), or both, and kws, vww, ic and
//! str_ww with `--memory min` on the M4 or the M0 (`_min`: outputs over dying inputs, tiles of
//! channels and of rows). Every
//! model of qemu-an386 and qemu-an505, and kws on qemu-an547, runs twice: with semihosting
//! files, and over RTT through QEMU's gdbstub (`_rtt`), the firmware and host path of a real
//! board under a probe. The host target's C runs on 64-bit Arm Linux too (`qemu-aarch64`,
//! QEMU's user-mode emulation): the same models, its float reduces on NEON vectors, and kws
//! over its test-vector channel on standard input and output (`_channel`). Needs
//! `scripts/setup-toolchain.sh` (run by the test script).

use kiln_codegen::bundle::Bundle;
use kiln_codegen::target::Memory;
use kiln_codegen::tensor::Tensor;
use kiln_runners::board::{self, BoardError, Io};
use kiln_tests::{
    compare, compile, compile_file, compile_file_for, model_path, references, tflite_path,
    tflm_vectors, MLPERF, QDQ, SMALL,
};
use std::time::Duration;

/// A model compiled for the kernels of `board_name` (packed int8 dot products on the cores with
/// the DSP extension).
fn compile_for(board_name: &str, model: &str, path: &std::path::Path) -> Bundle {
    let target = board::info(board_name).unwrap().kernel_target();
    compile_file_for(model, path, &target).unwrap_or_else(|e| panic!("{model}: {e:#}"))
}

fn run_on(board_name: &str, model: &str, io: Io) {
    let bundle = compile(model).unwrap_or_else(|e| panic!("{model}: {e:#}"));
    let (inputs, want) = references(model).unwrap();
    let tolerance = (1e-4, 1e-5);
    run_bundle(board_name, model, &bundle, (inputs, &want), tolerance, io);
}

/// An int8 QDQ model on a board: equal to onnxruntime's output (its float32 requantization
/// in the FPU, or in software on a core without one).
fn run_qdq_on(board_name: &str, model: &str, io: Io) {
    let bundle = compile_for(board_name, model, &model_path(model));
    let (inputs, want) = references(model).unwrap();
    run_bundle(board_name, model, &bundle, (inputs, &want), (0.0, 0.0), io);
}

/// An int8 TFLite model on a board, on its first TFLM vector: equal to TFLM's output (0 LSB).
fn run_tflite_on(board_name: &str, model: &str, io: Io) {
    let bundle = compile_for(board_name, model, &tflite_path(model));
    // The DSP cores run the convolutions and dense layers as packed dot products (`SMLAD`),
    // the Helium core as sixteen-lane ones (`VMLADAVA`) where sixteen divide the sum; the
    // others in plain integer C.
    let target = board::info(board_name).unwrap().kernel_target();
    let helium = bundle.kernels_c.contains("kiln_dot16(");
    assert_eq!(
        bundle.kernels_c.contains("kiln_dot4(") || helium,
        target.packed_dot,
        "{model} on {board_name}: packed dot products where the core has them"
    );
    assert_eq!(
        helium, target.helium_dot,
        "{model} on {board_name}: Helium's dot products where the core has them"
    );
    let (x, y) = tflm_vectors(model).unwrap().remove(0);
    run_bundle(board_name, model, &bundle, (vec![x], &[y]), (0.0, 0.0), io);
}

/// What a widened test widens: the dot products' weights (`--wide-weights`, the `_wide`
/// tests), the activations they read (`--wide-activations`, `_i16`), or both (`_wide_i16`).
#[derive(Clone, Copy)]
enum Widen {
    Weights,
    Activations,
    Both,
}

/// An int8 TFLite model on a DSP board with its dot products' operands widened to int16 as
/// `widen` says, on its first TFLM vector: equal to TFLM's output (0 LSB).
fn run_wide_tflite_on(board_name: &str, model: &str, widen: Widen) {
    let target = board::info(board_name).unwrap().kernel_target();
    let (wide, helper) = match widen {
        Widen::Weights => (target.with_wide_weights(), "kiln_dot4w("),
        // An int8 weight with its fours in pair order meets the int16 activations.
        Widen::Activations => (target.with_wide_activations(), "kiln_dot4w("),
        Widen::Both => (
            target
                .with_wide_weights()
                .and_then(|t| t.with_wide_activations()),
            "kiln_dot4ww(",
        ),
    };
    let wide = wide.expect("a core with packed dot products");
    let bundle = compile_file_for(model, &tflite_path(model), &wide)
        .unwrap_or_else(|e| panic!("{model}: {e:#}"));
    assert!(
        bundle.kernels_c.contains(helper),
        "{model} on {board_name}: no {helper}"
    );
    let (x, y) = tflm_vectors(model).unwrap().remove(0);
    let name = format!("{model}-{}", wide.name);
    run_bundle(
        board_name,
        &name,
        &bundle,
        (vec![x], &[y]),
        (0.0, 0.0),
        Io::Files,
    );
}

/// An int8 TFLite model on a board with `--memory min` (kernels writing over the inputs that
/// die where they read them), on its first TFLM vector: equal to TFLM's output (0 LSB), from
/// a smaller arena than the model's without.
fn run_min_tflite_on(board_name: &str, model: &str) {
    let target = board::info(board_name).unwrap().kernel_target();
    let speed = compile_for(board_name, model, &tflite_path(model));
    let bundle = compile_file_for(model, &tflite_path(model), &target.with_memory(Memory::Min))
        .unwrap_or_else(|e| panic!("{model}: {e:#}"));
    let (min, apart) = (bundle.report.arena_bytes, speed.report.arena_bytes);
    assert!(
        min < apart,
        "{model} on {board_name}: {min} B against {apart} B"
    );
    let (x, y) = tflm_vectors(model).unwrap().remove(0);
    let name = format!("{model}-min");
    let io = Io::Files;
    run_bundle(board_name, &name, &bundle, (vec![x], &[y]), (0.0, 0.0), io);
}

/// Runs `bundle` on the board with `vectors` (inputs, expected outputs), compared within
/// `tolerance` (relative, absolute).
fn run_bundle(
    board_name: &str,
    model: &str,
    bundle: &Bundle,
    vectors: (Vec<Tensor>, &[Tensor]),
    tolerance: (f64, f64),
    io: Io,
) {
    let ((inputs, want), (rtol, atol)) = (vectors, tolerance);
    let info = board::info(board_name).unwrap();
    board::check_fits(&info, bundle).unwrap_or_else(|e| panic!("{model} on {board_name}: {e}"));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("board_models/{board_name}/{model}-{}", io.name()));
    let _ = std::fs::remove_dir_all(&dir);
    bundle.write(&dir).unwrap();
    let options = board::BuildOptions {
        rtt: io == Io::Rtt,
        ..Default::default()
    };
    let image = board::build_with_options(&info, &dir, options, &mut |_| {})
        .unwrap_or_else(|e| panic!("building {model} for {board_name}: {e}"));
    if bundle.kernels_c.contains("kiln_dot4(") {
        // The packed dot products compiled to the DSP extension's instructions, not to the
        // plain C beside them (a board whose C flags lose the extension would run those).
        let text = disassembly("arm-none-eabi-objdump", &image.elf);
        // Only int8 words are unpacked: dot products of two int16 operands have none.
        let unpacks = ["= kiln_dot4(", "= kiln_dot4w("]
            .iter()
            .any(|call| bundle.kernels_c.contains(call));
        assert!(
            text.contains("smlad") && (text.contains("sxtb16") || !unpacks),
            "{model} on {board_name}: no SMLAD/SXTB16 in the image"
        );
    }
    if info.target.starts_with("aarch64") && bundle.kernels_c.contains("vector_size(") {
        // The vectors compiled to NEON's multiplies on four 32-bit lanes (`FMLA`, or `MUL` and
        // `MLA` of int32 lanes).
        let text = disassembly("aarch64-linux-gnu-objdump", &image.elf);
        let neon = |l: &str| (l.contains("mla") || l.contains("mul")) && l.contains(".4s");
        assert!(
            text.lines().any(neon),
            "{model} on {board_name}: no NEON multiply in the image"
        );
        // int8 products four a lane: `SDOT` on the board's Armv8.2-A.
        let sdot = |l: &str| l.contains("sdot") && l.contains(".16b");
        assert!(
            !bundle.kernels_c.contains("kiln_dot4_") || text.lines().any(sdot),
            "{model} on {board_name}: no SDOT in the image"
        );
    }
    let inputs: Vec<Vec<u8>> = inputs.into_iter().map(Tensor::into_bytes).collect();
    let options = board::RunOptions { io };
    let run = board::run_with_options(&info, &image, &inputs, Duration::from_secs(600), options)
        .unwrap_or_else(|e| {
            let e = kiln_codegen::error::chain(&e);
            panic!("{model} on {board_name} ({} I/O): {e}", io.name())
        });
    let (abs, rel) = compare(model, &run.outputs, want, rtol, atol)
        .unwrap_or_else(|e| panic!("{board_name}: {e:#}"));
    println!(
        "{model} on {board_name}: max abs {abs:.2e}, max rel {rel:.2e}; {} instructions; flash {} B, RAM {} B",
        run.total_instructions, image.flash_used, image.ram_used
    );
    // One count per kernel call: a loop's steps once per iteration.
    assert_eq!(run.step_instructions.len(), bundle.report.calls.len());
}

/// The listing `objdump` (the board's own) makes of `elf`.
fn disassembly(objdump: &str, elf: &std::path::Path) -> String {
    let listing = std::process::Command::new(objdump)
        .arg("-d")
        .arg(elf)
        .output()
        .unwrap_or_else(|e| panic!("{objdump}: {e}"));
    String::from_utf8_lossy(&listing.stdout).into_owned()
}

macro_rules! board_tests {
    ($($t:ident: $board:expr, $model:expr;)*) => {
        $( #[test] fn $t() { run_on($board, $model, Io::Files); } )*
    };
    ($($t:ident: $board:expr, $model:expr, $io:ident;)*) => {
        $( #[test] fn $t() { run_on($board, $model, Io::$io); } )*
    };
}

board_tests! {
    an386_kws: "qemu-an386", MLPERF[0];
    an386_ic: "qemu-an386", MLPERF[1];
    an386_vww: "qemu-an386", MLPERF[2];
    an386_ad: "qemu-an386", MLPERF[3];
    an386_str_ww: "qemu-an386", MLPERF[4];
    an386_mlp: "qemu-an386", SMALL[0];
    an386_dw_separable: "qemu-an386", SMALL[1];
    an386_residual: "qemu-an386", SMALL[2];
    an386_softmax_head: "qemu-an386", SMALL[3];
    an386_concat_transpose: "qemu-an386", SMALL[4];
    an500_kws: "qemu-an500", MLPERF[0];
    an500_ad: "qemu-an500", MLPERF[3];
    an505_kws: "qemu-an505", MLPERF[0];
    an505_ad: "qemu-an505", MLPERF[3];
    rv32_kws: "qemu-rv32", MLPERF[0];
    rv32_ad: "qemu-rv32", MLPERF[3];
    an385_m0_kws: "qemu-an385-m0", MLPERF[0];
    an385_m0_ad: "qemu-an385-m0", MLPERF[3];
    aarch64_kws: "qemu-aarch64", MLPERF[0];
    aarch64_ad: "qemu-aarch64", MLPERF[3];
}

// The same models over RTT, the path of a real board.
board_tests! {
    an386_kws_rtt: "qemu-an386", MLPERF[0], Rtt;
    an386_ic_rtt: "qemu-an386", MLPERF[1], Rtt;
    an386_vww_rtt: "qemu-an386", MLPERF[2], Rtt;
    an386_ad_rtt: "qemu-an386", MLPERF[3], Rtt;
    an386_str_ww_rtt: "qemu-an386", MLPERF[4], Rtt;
    an386_mlp_rtt: "qemu-an386", SMALL[0], Rtt;
    an386_dw_separable_rtt: "qemu-an386", SMALL[1], Rtt;
    an386_residual_rtt: "qemu-an386", SMALL[2], Rtt;
    an386_softmax_head_rtt: "qemu-an386", SMALL[3], Rtt;
    an386_concat_transpose_rtt: "qemu-an386", SMALL[4], Rtt;
    an505_kws_rtt: "qemu-an505", MLPERF[0], Rtt;
    an505_ad_rtt: "qemu-an505", MLPERF[3], Rtt;
}

macro_rules! tflite_board_tests {
    ($($t:ident: $board:expr, $model:expr;)*) => {
        $( #[test] fn $t() { run_tflite_on($board, $model, Io::Files); } )*
    };
    ($($t:ident: $board:expr, $model:expr, $io:ident;)*) => {
        $( #[test] fn $t() { run_tflite_on($board, $model, Io::$io); } )*
    };
}

tflite_board_tests! {
    an386_kws_int8: "qemu-an386", "kws_ref_model";
    an386_vww_int8: "qemu-an386", "vww_96_int8";
    an386_ic_int8: "qemu-an386", "pretrainedResnet_quant";
    an386_ad_int8: "qemu-an386", "ad01_int8";
    an386_str_ww_int8: "qemu-an386", "str_ww_ref_model";
    an500_kws_int8: "qemu-an500", "kws_ref_model";
    an500_vww_int8: "qemu-an500", "vww_96_int8";
    an500_ic_int8: "qemu-an500", "pretrainedResnet_quant";
    an500_ad_int8: "qemu-an500", "ad01_int8";
    an500_str_ww_int8: "qemu-an500", "str_ww_ref_model";
    an505_kws_int8: "qemu-an505", "kws_ref_model";
    an505_vww_int8: "qemu-an505", "vww_96_int8";
    an505_ic_int8: "qemu-an505", "pretrainedResnet_quant";
    an505_ad_int8: "qemu-an505", "ad01_int8";
    an505_str_ww_int8: "qemu-an505", "str_ww_ref_model";
    an547_kws_int8: "qemu-an547", "kws_ref_model";
    an547_vww_int8: "qemu-an547", "vww_96_int8";
    an547_ic_int8: "qemu-an547", "pretrainedResnet_quant";
    an547_ad_int8: "qemu-an547", "ad01_int8";
    an547_str_ww_int8: "qemu-an547", "str_ww_ref_model";
    rv32_kws_int8: "qemu-rv32", "kws_ref_model";
    rv32_vww_int8: "qemu-rv32", "vww_96_int8";
    rv32_ic_int8: "qemu-rv32", "pretrainedResnet_quant";
    rv32_ad_int8: "qemu-rv32", "ad01_int8";
    rv32_str_ww_int8: "qemu-rv32", "str_ww_ref_model";
    an385_m0_kws_int8: "qemu-an385-m0", "kws_ref_model";
    an385_m0_vww_int8: "qemu-an385-m0", "vww_96_int8";
    an385_m0_ic_int8: "qemu-an385-m0", "pretrainedResnet_quant";
    an385_m0_ad_int8: "qemu-an385-m0", "ad01_int8";
    an385_m0_str_ww_int8: "qemu-an385-m0", "str_ww_ref_model";
    microbit_str_ww_int8: "qemu-microbit", "str_ww_ref_model";
    aarch64_kws_int8: "qemu-aarch64", "kws_ref_model";
    aarch64_vww_int8: "qemu-aarch64", "vww_96_int8";
    aarch64_ic_int8: "qemu-aarch64", "pretrainedResnet_quant";
    aarch64_ad_int8: "qemu-aarch64", "ad01_int8";
    aarch64_str_ww_int8: "qemu-aarch64", "str_ww_ref_model";
}

// A hosted board's test-vector channel: its standard input and output.
tflite_board_tests! {
    aarch64_kws_int8_channel: "qemu-aarch64", "kws_ref_model", Channel;
}

tflite_board_tests! {
    an386_kws_int8_rtt: "qemu-an386", "kws_ref_model", Rtt;
    an386_vww_int8_rtt: "qemu-an386", "vww_96_int8", Rtt;
    an386_ic_int8_rtt: "qemu-an386", "pretrainedResnet_quant", Rtt;
    an386_ad_int8_rtt: "qemu-an386", "ad01_int8", Rtt;
    an386_str_ww_int8_rtt: "qemu-an386", "str_ww_ref_model", Rtt;
    an505_kws_int8_rtt: "qemu-an505", "kws_ref_model", Rtt;
    an505_vww_int8_rtt: "qemu-an505", "vww_96_int8", Rtt;
    an505_ic_int8_rtt: "qemu-an505", "pretrainedResnet_quant", Rtt;
    an505_ad_int8_rtt: "qemu-an505", "ad01_int8", Rtt;
    an505_str_ww_int8_rtt: "qemu-an505", "str_ww_ref_model", Rtt;
    an547_kws_int8_rtt: "qemu-an547", "kws_ref_model", Rtt;
}

// Overlapping kernels and tiles on the DSP core and on the core without an FPU or DSP
// instructions.
#[test]
fn an386_vww_int8_min() {
    run_min_tflite_on("qemu-an386", "vww_96_int8");
}

#[test]
fn an386_kws_int8_min() {
    run_min_tflite_on("qemu-an386", "kws_ref_model");
}

#[test]
fn an386_ic_int8_min() {
    run_min_tflite_on("qemu-an386", "pretrainedResnet_quant");
}

#[test]
fn an385_m0_vww_int8_min() {
    run_min_tflite_on("qemu-an385-m0", "vww_96_int8");
}

#[test]
fn an385_m0_str_ww_int8_min() {
    run_min_tflite_on("qemu-an385-m0", "str_ww_ref_model");
}

macro_rules! wide_tflite_board_tests {
    ($($t:ident: $board:expr, $model:expr, $widen:ident;)*) => {
        $( #[test] fn $t() { run_wide_tflite_on($board, $model, Widen::$widen); } )*
    };
}

// A matrix of one input vector (ad's dense layers), 1×1 convolutions over 125 pixels and a
// first 10×4 one (kws), and 2×2 blocks of pixels and channels (vww), on each DSP core; int16
// activations that residual additions read too (ic), and a streaming model's (str_ww).
wide_tflite_board_tests! {
    an386_kws_int8_wide: "qemu-an386", "kws_ref_model", Weights;
    an386_vww_int8_wide: "qemu-an386", "vww_96_int8", Weights;
    an386_ad_int8_wide: "qemu-an386", "ad01_int8", Weights;
    an500_ad_int8_wide: "qemu-an500", "ad01_int8", Weights;
    an505_kws_int8_wide: "qemu-an505", "kws_ref_model", Weights;
    an386_ic_int8_i16: "qemu-an386", "pretrainedResnet_quant", Activations;
    an500_kws_int8_wide_i16: "qemu-an500", "kws_ref_model", Both;
    an505_str_ww_int8_i16: "qemu-an505", "str_ww_ref_model", Activations;
}

/// Of the five int8 models only the streaming wake word fits a micro:bit (16 KiB of RAM,
/// 256 KiB of flash; `microbit_str_ww_int8` runs it); the others are refused before any build.
#[test]
fn microbit_refuses_the_int8_models_too_big() {
    let info = board::info("qemu-microbit").unwrap();
    for model in [
        "kws_ref_model",
        "vww_96_int8",
        "pretrainedResnet_quant",
        "ad01_int8",
    ] {
        let bundle = compile_file(model, &tflite_path(model)).unwrap();
        match board::check_fits(&info, &bundle) {
            Err(e @ BoardError::TooBig { .. }) => println!("{model}: {e}"),
            other => panic!("{model} on qemu-microbit: expected TooBig, got {other:?}"),
        }
    }
}

macro_rules! qdq_board_tests {
    ($($t:ident: $board:expr, $model:expr;)*) => {
        $( #[test] fn $t() { run_qdq_on($board, $model, Io::Files); } )*
    };
    ($($t:ident: $board:expr, $model:expr, $io:ident;)*) => {
        $( #[test] fn $t() { run_qdq_on($board, $model, Io::$io); } )*
    };
}

qdq_board_tests! {
    an386_kws_qdq: "qemu-an386", QDQ[0];
    an386_ad_qdq: "qemu-an386", QDQ[3];
    an385_m0_kws_qdq: "qemu-an385-m0", QDQ[0];
}

qdq_board_tests! {
    an386_kws_qdq_rtt: "qemu-an386", QDQ[0], Rtt;
    an386_ad_qdq_rtt: "qemu-an386", QDQ[3], Rtt;
}

/// KWS and AD do not fit a micro:bit (16 KiB of RAM, 256 KiB of flash): refused before any
/// build, with what they need and what the board has.
#[test]
fn microbit_refuses_models_too_big_with_the_numbers() {
    let info = board::info("qemu-microbit").unwrap();
    for model in [MLPERF[0], MLPERF[3]] {
        let bundle = compile(model).unwrap();
        match board::check_fits(&info, &bundle) {
            Err(e @ BoardError::TooBig { .. }) => {
                let msg = e.to_string();
                println!("{model}: {msg}");
                assert!(
                    msg.contains("qemu-microbit")
                        && (msg.contains("16,384 B") || msg.contains("262,144 B")),
                    "{msg}"
                );
            }
            other => panic!("{model} on qemu-microbit: expected TooBig, got {other:?}"),
        }
    }
}

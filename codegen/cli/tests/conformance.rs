//! The ONNX backend node tests on the expected-pass lists still pass: `kiln conformance
//! --listed` runs every case of `tests/conformance/host.pass`, two at a time, each in its own
//! process, and exits with 1 when one of them no longer passes; with `--board qemu-an386`, the
//! cases of `tests/conformance/qemu-an386.pass` run on the emulated Cortex-M4F, many to an image,
//! through semihosting files and again over RTT (`--io rtt`: one session per case through
//! QEMU's gdbstub, the path of a real board); with `--board opencl` and `--board vulkan`, the
//! cases of their lists on this machine's devices (PoCL and lavapipe in CI).
//!
//! The TFLite suite's cases (`tests/tflite-suite`) run the same way, from their own lists
//! (`tests/conformance/tflite-<board>.pass`).
//!
//! The ONNX cases come with the `onnx` package (`bash scripts/setup-python.sh`, or
//! `$KILN_ONNX_NODE_TESTS`); without them (or without a GPU driver) the test says so and
//! passes, except with `KILN_REQUIRE_ALL=1` (`scripts/test.sh`), where it fails.

use kiln_tests::available;
use std::path::Path;
use std::process::Command;

/// Seconds a case may take before the harness counts it as a hang. The largest cases (the
/// TFLite suite's 512-point FFTs: about 1 MB of C for the host's compiler) take 20–30 s alone
/// on a 2-core machine, and over a minute beside the other tests of this file.
const CASE_TIMEOUT: &str = "300";

#[test]
fn every_listed_case_still_passes() {
    listed_cases_pass("host");
}

#[test]
fn every_listed_case_still_passes_on_qemu_an386() {
    listed_cases_pass("qemu-an386");
}

#[test]
fn every_listed_case_still_passes_on_qemu_an386_over_rtt() {
    listed_cases_pass_with("qemu-an386", &["--io", "rtt"]);
}

#[test]
fn every_listed_case_still_passes_on_opencl() {
    listed_cases_pass_on_gpu(kiln_codegen::gpu::Api::OpenCl);
}

#[test]
fn every_listed_case_still_passes_on_vulkan() {
    listed_cases_pass_on_gpu(kiln_codegen::gpu::Api::Vulkan);
}

/// The GPU interface's list on this machine's device (PoCL and lavapipe in CI).
fn listed_cases_pass_on_gpu(api: kiln_codegen::gpu::Api) {
    let device = kiln_runners::gpu::device_limits(api).map(|_| ());
    if available(&format!("the {} conformance list", api.name()), device) {
        listed_cases_pass(api.name());
    }
}

fn listed_cases_pass(board: &str) {
    listed_cases_pass_with(board, &[]);
}

fn listed_cases_pass_with(board: &str, extra: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cases = kiln_cli::conformance::find_cases_dir(&root).map(|_| ());
    if !available("the conformance cases", cases) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["conformance", "--listed", "--jobs", "2", "--board", board])
        .args(["--timeout", CASE_TIMEOUT])
        .args(extra)
        .output()
        .expect("run kiln conformance");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "listed cases fail:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed, 0 skipped"), "{last}");
}

/// The TFLite suite's cases (`tests/tflite-suite`, in the repository) on its pass lists still
/// pass: on the host, and on the emulated Cortex-M4F with its DSP kernels.
#[test]
fn every_listed_tflite_case_still_passes() {
    listed_tflite_cases_pass("host");
}

#[test]
fn every_listed_tflite_case_still_passes_on_qemu_an386() {
    listed_tflite_cases_pass("qemu-an386");
}

fn listed_tflite_cases_pass(board: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args([
            "conformance",
            "--suite",
            "tflite",
            "--listed",
            "--jobs",
            "2",
        ])
        .args(["--board", board, "--timeout", CASE_TIMEOUT])
        .output()
        .expect("run kiln conformance");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "listed TFLite cases fail on {board}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed, 0 skipped"), "{last}");
}

#[test]
fn a_filtered_run_ends_with_the_summary_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cases = kiln_cli::conformance::find_cases_dir(&root).map(|_| ());
    if !available("the filtered conformance run", cases) {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args([
            "conformance",
            "--filter",
            "^test_(abs|relu)$",
            "--jobs",
            "1",
        ])
        .output()
        .expect("run kiln conformance");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some("2 passed, 0 failed, 0 skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("\nAbs "), "{stdout}");
}

/// A real board's batches go through its debug probe: with none attached (as in CI), `kiln
/// conformance` says so before it runs a single case, and exits 2; an emulated board has no
/// probe to name.
#[test]
#[cfg(feature = "probe")]
fn conformance_on_a_real_board_needs_its_probe() {
    if !kiln_runners::board::probe::attached().is_empty() {
        eprintln!("a debug probe is attached: the error without one is not tested here");
        return;
    }
    let kiln = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kiln"))
            .arg("conformance")
            .args(args)
            .output()
            .expect("run kiln conformance")
    };
    let cases: [(&[&str], &str); 3] = [
        (
            &["--board", "nrf52840-dk"],
            "error: no debug probe is attached for nrf52840-dk",
        ),
        (
            &["--board", "rp2040-pico", "--probe", "A", "--probe", "B"],
            "error: no debug probe with serial A for rp2040-pico",
        ),
        (
            &["--board", "qemu-an386", "--probe", "A"],
            "error: --probe names a debug probe, and qemu-an386 is not a real board",
        ),
    ];
    for (args, want) in cases {
        let out = kiln(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

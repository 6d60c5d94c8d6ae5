//! The ONNX backend node tests on the expected-pass lists still pass: `kiln conformance
//! --listed` runs every case of `tests/conformance/host.pass`, two at a time, each in its own
//! process, and exits with 1 when one of them no longer passes; with `--board qemu-an386`, the
//! cases of `tests/conformance/qemu-an386.pass` run on the emulated Cortex-M4F, many to an image.
//!
//! The cases come with the `onnx` package (`bash scripts/setup-python.sh`, or
//! `$KILN_ONNX_NODE_TESTS`); without them the test says so and passes.

use std::path::Path;
use std::process::Command;

#[test]
fn every_listed_case_still_passes() {
    listed_cases_pass("host");
}

#[test]
fn every_listed_case_still_passes_on_qemu_an386() {
    listed_cases_pass("qemu-an386");
}

fn listed_cases_pass(board: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if let Err(why) = kiln_cli::conformance::find_cases_dir(&root) {
        eprintln!("skipping the conformance cases: {why}");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["conformance", "--listed", "--jobs", "2", "--board", board])
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

#[test]
fn a_filtered_run_ends_with_the_summary_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if kiln_cli::conformance::find_cases_dir(&root).is_err() {
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

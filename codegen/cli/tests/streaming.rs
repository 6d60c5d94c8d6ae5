//! `kiln run --steps`: a streaming model over its recorded steps on one device, each step
//! written and compared; a steps folder with a gap or a missing input is an error naming the
//! step (exit 2), a step that differs is a mismatch (exit 1).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kiln(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .output()
        .expect("run kiln")
}

fn model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/models/tflite-streaming")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// `kiln run` of the int8 streaming model on the host over `steps`, compared with `expect`.
fn run_steps(steps: &Path, expect: &Path, outputs: &Path) -> Output {
    let m = model().join("stream_conv_int8.tflite");
    kiln(&[
        "run",
        m.to_str().unwrap(),
        "--board",
        "host",
        "--steps",
        steps.to_str().unwrap(),
        "--outputs",
        outputs.to_str().unwrap(),
        "--expect",
        expect.to_str().unwrap(),
    ])
}

/// The recorded steps `from` as steps `to`, for each pair of `pick`, in `dir/steps`.
fn copy_steps(dir: &Path, pick: &[(usize, usize)]) -> PathBuf {
    let recorded = model().join("stream_conv_int8/steps");
    let out = dir.join("steps");
    for &(from, to) in pick {
        for sub in ["inputs", "expected"] {
            let (a, b) = (
                recorded.join(format!("{from:02}/{sub}")),
                out.join(format!("{to:02}/{sub}")),
            );
            std::fs::create_dir_all(&b).unwrap();
            for f in std::fs::read_dir(&a).unwrap() {
                let f = f.unwrap();
                std::fs::copy(f.path(), b.join(f.file_name())).unwrap();
            }
        }
    }
    out
}

#[test]
fn every_step_runs_in_order_and_matches() {
    let steps = model().join("stream_conv_int8/steps");
    let dir = tempfile::tempdir().unwrap();
    let o = run_steps(&steps, &steps, &dir.path().join("out"));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("all 24 steps match"), "{t}");
    assert!(t.contains("of which state 48 B kept between runs"), "{t}");
    assert!(t.contains("step 23, output 0"), "{t}");
    assert!(dir.path().join("out/23/output_0.npy").exists());
}

#[test]
fn steps_out_of_order_are_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    // Step 01's inputs come before step 00's: from another state, other outputs.
    let swapped = copy_steps(&dir.path().join("swapped"), &[(1, 0), (0, 1), (2, 2)]);
    let recorded = copy_steps(&dir.path().join("recorded"), &[(0, 0), (1, 1), (2, 2)]);
    let o = run_steps(&swapped, &recorded, &dir.path().join("out"));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("MISMATCH"), "{t}");
}

#[test]
fn a_gap_or_a_missing_input_names_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let gap = copy_steps(&dir.path().join("gap"), &[(0, 0), (1, 1), (3, 3)]);
    let o = run_steps(&gap, &gap, &dir.path().join("out"));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("step 02 is missing"), "{t}");
    let missing = copy_steps(&dir.path().join("missing"), &[(0, 0), (1, 1)]);
    std::fs::remove_file(missing.join("01/inputs/input_0.npy")).unwrap();
    let o = run_steps(&missing, &missing, &dir.path().join("out"));
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("step 01"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    assert!(
        !dir.path().join("out").exists(),
        "nothing is written on failure"
    );
}

#[test]
fn one_run_of_a_stateful_model_says_where_its_state_starts() {
    let steps = model().join("stream_accumulate_float/steps");
    let dir = tempfile::tempdir().unwrap();
    let m = model().join("stream_accumulate_float.tflite");
    let o = kiln(&[
        "run",
        m.to_str().unwrap(),
        "--board",
        "host",
        "--inputs",
        steps.join("00/inputs").to_str().unwrap(),
        "--outputs",
        dir.path().join("out").to_str().unwrap(),
        "--expect",
        steps.join("00/expected").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("this run started from its initial values"),
        "{t}"
    );
}

fn onnx_model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/models/onnx-streaming/{name}"))
}

/// `--state hn=h`: the hidden state stays on the device, so the steps' `h` inputs (onnxruntime
/// fed its own state) and `hn` outputs are left out, and said to be.
#[test]
fn a_bound_state_streams_without_its_input_and_output() {
    let (m, steps) = (
        onnx_model("gru_stream.onnx"),
        onnx_model("gru_stream/steps"),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (m, steps, out) = (
        m.to_str().unwrap(),
        steps.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let o = kiln(&[
        "run",
        m,
        "--board",
        "host",
        "--state",
        "hn=h",
        "--steps",
        steps,
        "--expect",
        steps,
        "--outputs",
        out,
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("input_1 (h) is not used"), "{t}");
    assert_eq!(
        t.matches("is not used").count(),
        1,
        "said once, not per step: {t}"
    );
    assert!(t.contains("all 24 steps match"), "{t}");
    assert!(t.contains("of which state 128 B kept between runs"), "{t}");
    assert!(!dir.path().join("out/00/output_1.npy").exists());
}

/// A `--state` or `--const` that names what the model lacks, or a value that does not fit:
/// exit 2, the flag and the tensor named, nothing written.
#[test]
fn bad_bindings_are_errors_that_name_them() {
    let m = onnx_model("gru_stream.onnx");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    let cases: &[(&[&str], &str)] = &[
        (&["--state", "hn=hidden"], "--state names input \"hidden\""),
        (&["--state", "scores=h"], "output \"scores\" is f32 [1, 4]"),
        (&["--const", "x=1,2"], "--const x: 2 value(s) given"),
        (&["--const", "x"], "--const \"x\": no '='"),
    ];
    for (flags, words) in cases {
        let mut args = vec!["compile", m.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend_from_slice(flags);
        let o = kiln(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {t}");
        assert!(t.contains(words), "{flags:?}: {t}");
        assert!(!out.exists(), "{flags:?} wrote {}", out.display());
    }
}

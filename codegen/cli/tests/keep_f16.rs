//! `--keep-f16`: a TFLite model's float16 weights stay float16 in the bundle (half the bytes)
//! and its outputs are those of the float32-widened model (the widening is exact either way).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kiln(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .output()
        .expect("run kiln")
}

fn model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/models/tflite-real/face_detection_short_range")
}

fn weight_bytes(extra: &[&str]) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let (m, o) = (
        model().with_extension("tflite").display().to_string(),
        dir.path().join("bundle").display().to_string(),
    );
    let mut args = vec!["compile", &m, "-o", &o];
    args.extend_from_slice(extra);
    let out = kiln(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::metadata(dir.path().join("bundle/weights.bin"))
        .unwrap()
        .len()
}

#[test]
fn float16_weights_stay_float16_and_compute_the_same() {
    let (widened, kept) = (weight_bytes(&[]), weight_bytes(&["--keep-f16"]));
    assert!(
        kept * 2 <= widened + 4096 && kept < widened,
        "kept {kept} B, widened {widened} B"
    );
    let dir = tempfile::tempdir().unwrap();
    let (m, data, outs) = (
        model().with_extension("tflite").display().to_string(),
        model().display().to_string(),
        dir.path().join("out").display().to_string(),
    );
    let run = kiln(&[
        "run",
        &m,
        "--keep-f16",
        "--board",
        "host",
        "--inputs",
        &data,
        "--outputs",
        &outs,
        "--expect",
        &data,
        "--rtol",
        "1e-3",
        "--atol",
        "1e-4",
    ]);
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(text.contains(&format!("weights {kept} B")), "{text}");
}

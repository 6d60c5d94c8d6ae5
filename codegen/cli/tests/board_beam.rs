//! `kiln run --board` and `kiln compile --board` with a BEAM search by the board's estimated
//! cycles (an emulated Cortex-M4F, `qemu-an386`, and the Helium Cortex-M55, `qemu-an547`),
//! sharing one cache. They need the board toolchain (`scripts/setup-toolchain.sh`).

use std::time::Instant;

fn kiln(args: &[&str], cache: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .env("KILN_BEAM_CACHE", cache)
        .output()
        .expect("run kiln")
}

#[test]
fn kiln_run_on_a_board_searches_by_its_cycles_and_compile_reuses_them() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = root.join("tests/models/mlp.onnx");
    let data = root.join("tests/data/mlp");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (model, data) = (model.to_str().unwrap(), data.to_str().unwrap());
    let outs = dir.path().join("out");
    let run = [
        "run",
        model,
        "--board",
        "qemu-an386",
        "--beam",
        "1",
        "--inputs",
        data,
        "--outputs",
        outs.to_str().unwrap(),
        "--expect",
        data,
        "--rtol",
        "1e-3",
    ];
    let started = Instant::now();
    let o = kiln(&run, &cache);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("{err}searched in {:.1} s", started.elapsed().as_secs_f64());
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("beam search (estimated cycles on qemu-an386)"),
        "{err}"
    );
    assert!(!err.contains(" 0 kernels searched"), "{err}");
    let bundle = dir.path().join("bundle");
    let bundle = bundle.to_str().unwrap();
    let compile = [
        "compile",
        model,
        "--board",
        "qemu-an386",
        "--beam",
        "1",
        "-o",
        bundle,
    ];
    let o = kiln(&compile, &cache);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains(" 0 kernels searched"), "{err}");
    // The host's search is another entry of the cache.
    let o = kiln(&["compile", model, "--beam", "1", "-o", bundle], &cache);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("(wall time on this host)"), "{err}");
    assert!(!err.contains(" 0 kernels searched"), "{err}");
    // A board cost only measures C kernels.
    let o = kiln(
        &[
            "compile",
            model,
            "--target",
            "opencl",
            "--board",
            "qemu-an386",
            "-o",
            bundle,
        ],
        &cache,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--target host"));
}

/// The Cortex-M55's search (`qemu-an547`) measures its candidates, Helium's sixteen-lane dot
/// products among them, on the board's batch image, and keeps them where they are cheapest.
#[test]
fn the_helium_board_searches_its_int8_kernels_by_its_cycles() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = root.join("tests/models/mlperf-tiny/tflite/ad01_int8.tflite");
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    let compile = [
        "compile",
        model.to_str().unwrap(),
        "--board",
        "qemu-an547",
        "--beam",
        "1",
        "-o",
        bundle.to_str().unwrap(),
    ];
    let o = kiln(&compile, &dir.path().join("cache"));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("beam search (estimated cycles on qemu-an547)"),
        "{err}"
    );
    assert!(!err.contains(" 0 kernels searched"), "{err}");
    let c = std::fs::read_to_string(bundle.join("kernels.c")).unwrap();
    assert!(c.contains("= kiln_ld16(data"), "no Helium dot product kept");
}

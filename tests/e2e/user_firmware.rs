//! The example of a user's own firmware (`boards/user-firmware`): its build script compiles three
//! models with `kiln_codegen::Builder`, and the firmware checks them against onnxruntime's
//! outputs (TFLM's, exactly, for the int8 TFLite model). It runs on qemu-an386 and builds for the nRF52840-DK. (Its host twin,
//! `boards/user-host`, is a member of this workspace: its unit tests run with the others.)

use kiln_codegen::Cpu;
use kiln_runners::board;
use kiln_tests::{compile_file_for, root};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Mutex;

/// The two tests share the example's target folder: one cargo at a time.
static CARGO: Mutex<()> = Mutex::new(());

/// Cargo for the firmware's target, with nothing of this test's own cargo run leaking in.
fn firmware_cargo(args: &[&str]) -> Output {
    let _one = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    let mut cargo = Command::new("bash");
    cargo
        .arg(root().join("scripts/toolchain-cargo.sh"))
        .arg("thumbv7em-none-eabihf")
        .args(args)
        .current_dir(root().join("boards/user-firmware"));
    for variable in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_MAKEFLAGS",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        cargo.env_remove(variable);
    }
    cargo.output().expect("bash runs")
}

fn text(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    format!("{stdout}\n--- stderr ---\n{stderr}")
}

#[test]
fn user_firmware_runs_its_three_models_on_qemu_an386() {
    let output = firmware_cargo(&["run", "--release", "--quiet"]);
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("user-firmware on qemu-an386"), "{shown}");
    // One line per kernel call from the run hook, named by the generated KERNEL_NAMES.
    assert_eq!(stdout.matches("  step ").count(), 14, "{shown}");
    for model in ["kws", "residual", "kws_int8"] {
        assert!(
            stdout.contains(&format!("{model}: ok, max abs diff")),
            "{shown}"
        );
    }
}

/// A firmware for a Cortex-M4F built through `build.rs` gets, for each of its models, the
/// kernels `kiln run --board qemu-an386` compiles (the board's kernel target): the `Builder`,
/// the board and the runners read one table of CPUs.
#[test]
fn the_firmwares_kernels_are_those_kiln_run_compiles_for_qemu_an386() {
    let output = firmware_cargo(&["build", "--release", "--quiet"]);
    assert!(output.status.success(), "{}", text(&output));
    let _one = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    let board = board::info("qemu-an386").unwrap();
    assert_eq!(
        Some(board.cpu),
        Cpu::from_triple("thumbv7em-none-eabihf", "the host")
    );
    let target = board.kernel_target();
    let models = [
        ("kws", "codegen/models/kws_float.onnx"),
        ("residual", "tests/models/residual.onnx"),
        (
            "kws_int8",
            "tests/models/mlperf-tiny/tflite/kws_ref_model.tflite",
        ),
    ];
    for (name, model) in models {
        let built = std::fs::read_to_string(built_kernels(name)).unwrap();
        let bundle = compile_file_for(name, &root().join(model), &target).unwrap();
        let run = bundle.kernels_c_with_prefix(&format!("kiln_{name}"));
        assert!(
            built == run,
            "{name}: the firmware's kernels differ from kiln run's"
        );
    }
    // The int8 model's dot products take the Cortex-M4's packed multiply-accumulates.
    let int8 = std::fs::read_to_string(built_kernels("kws_int8")).unwrap();
    assert!(int8.contains("__smlad("), "no packed dot products");
}

/// The `kernels.c` the firmware's build script wrote for model `name` last.
fn built_kernels(name: &str) -> PathBuf {
    let builds = root().join("target/boards/user-firmware/thumbv7em-none-eabihf/release/build");
    let newest = std::fs::read_dir(&builds)
        .unwrap()
        .filter_map(|e| {
            let file = e.ok()?.path().join("out/kiln").join(name).join("kernels.c");
            let modified = file.metadata().ok()?.modified().ok()?;
            Some((modified, file))
        })
        .max();
    newest
        .unwrap_or_else(|| panic!("no kernels.c of {name} under {}", builds.display()))
        .1
}

#[test]
fn user_firmware_builds_for_the_nrf52840_dk() {
    let args = [
        "build",
        "--release",
        "--quiet",
        "--no-default-features",
        "--features",
        "nrf52840-dk",
    ];
    let output = firmware_cargo(&args);
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
fn a_bad_model_fails_the_users_build_with_kilns_message() {
    let dir = tempfile_dir();
    let codegen = root().join("codegen");
    let firmware = root().join("firmware");
    let manifest = format!(
        "[package]\nname = \"my-firmware\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         [dependencies]\nkiln-firmware = {{ path = {firmware:?} }}\n\
         [build-dependencies]\nkiln-codegen = {{ path = {codegen:?}, default-features = false }}\n\
         [workspace]\n"
    );
    let model = root().join("tests/ops/invalid/unknown_ops.onnx");
    let build_rs = format!(
        "fn main() -> Result<(), kiln_codegen::BuildError> {{\n    \
         kiln_codegen::Builder::new({model:?}).build()?;\n    Ok(())\n}}\n"
    );
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("build.rs"), build_rs).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    // The workspace's lock file: the same dependency versions, nothing to resolve.
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let output = Command::new("cargo")
        .args(["build", "--quiet", "--offline"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", root().join("target/user-crate"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let shown = text(&output);
    assert!(!output.status.success(), "{shown}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = format!(
        "Error: {}: 2 unsupported op type(s) in 3 node(s): kiln.test:Frobnicate ×2 (frob_a, \
         frob_b); kiln.test:Twiddle ×1 (twiddle)",
        model.display()
    );
    assert!(stderr.contains(&expected), "{shown}");
    assert!(!stderr.contains("panicked"), "{shown}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh folder for a throwaway crate, under the build folder.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = root()
        .join("target/user-crate/src")
        .join(format!("bad-model-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

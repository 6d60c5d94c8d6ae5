//! Compiles the three models this firmware runs for its CPU (from cargo's target), writes the
//! reference vectors it checks itself against, and picks the board's memory map.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    kiln_codegen::Builder::new("../../codegen/models/kws_float.onnx")
        .name("kws")
        .build()?;
    kiln_codegen::Builder::new("../../tests/models/residual.onnx").build()?;
    // MLPerf Tiny's int8 keyword spotter, as TFLite ships it: bit-exact with TFLM.
    kiln_codegen::Builder::new("../../tests/models/mlperf-tiny/tflite/kws_ref_model.tflite")
        .name("kws_int8")
        .build()?;

    let out = PathBuf::from(env::var("OUT_DIR")?);
    let vectors = [
        ("kws", "kws_float"),
        ("residual", "residual"),
        ("kws_int8", "kws_int8"),
    ];
    for (name, folder) in vectors {
        for file in ["input_0", "output_0"] {
            let npy = Path::new("../../tests/data")
                .join(folder)
                .join(format!("{file}.npy"));
            println!("cargo:rerun-if-changed={}", npy.display());
            let tensor = kiln_codegen::tensorio::read_tensor(&npy)?;
            fs::write(out.join(format!("{name}_{file}.bin")), tensor.bytes())?;
        }
    }

    let board = if env::var_os("CARGO_FEATURE_NRF52840_DK").is_some() {
        println!("cargo:rustc-link-arg=-Tdefmt.x");
        "nrf52840-dk"
    } else {
        "qemu-an386"
    };
    let memory = format!("memory-{board}.x");
    println!("cargo:rerun-if-changed={memory}");
    fs::copy(&memory, out.join("memory.x"))?;
    println!("cargo:rustc-link-search={}", out.display());
    Ok(())
}

//! `kiln demo`: the MLPerf Tiny keyword-spotting model on the default emulated board, twice:
//! the float ONNX model against onnxruntime's output, and the int8 TFLite model against
//! TensorFlow Lite Micro's, bit for bit. Each with its per-kernel cost and memory.

use super::model::{compile, read_inputs, ModelArgs};
use super::run::{compare, print_costs, run_on, Tolerance};
use anyhow::{Context, Result};
use std::path::Path;
use std::process::ExitCode;

/// The default emulated board.
const BOARD: &str = "qemu-an386";

/// One model of the demo, with its input and the reference's output on it.
struct Part {
    title: &'static str,
    file: &'static str,
    model: &'static [u8],
    input: &'static [u8],
    expected: &'static [u8],
    reference: &'static str,
}

const PARTS: [Part; 2] = [
    Part {
        title: "MLPerf Tiny keyword spotting (DS-CNN, float ONNX)",
        file: "kws_float.onnx",
        model: include_bytes!("../../models/kws_float.onnx"),
        input: include_bytes!("../../../tests/data/kws_float/input_0.npy"),
        expected: include_bytes!("../../../tests/data/kws_float/output_0.npy"),
        reference: "onnxruntime",
    },
    Part {
        title: "MLPerf Tiny keyword spotting (DS-CNN, int8 TFLite)",
        file: "kws_ref_model.tflite",
        model: include_bytes!("../../../tests/models/mlperf-tiny/tflite/kws_ref_model.tflite"),
        input: include_bytes!("../../../tests/data/kws_int8/input_0.npy"),
        expected: include_bytes!("../../../tests/data/kws_int8/output_0.npy"),
        reference: "TensorFlow Lite Micro",
    },
];

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_: Args) -> Result<ExitCode> {
    let dir = tempfile::tempdir().context("a temporary folder")?;
    let mut all_ok = true;
    for (i, part) in PARTS.iter().enumerate() {
        if i > 0 {
            println!();
        }
        all_ok &= run_part(part, dir.path())?;
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Compiles and runs one part on the board, prints its costs and verdict; true on a match.
fn run_part(part: &Part, dir: &Path) -> Result<bool> {
    let p = dir.join(part.file);
    std::fs::create_dir_all(p.join("in"))?;
    std::fs::create_dir_all(p.join("want"))?;
    std::fs::write(p.join(part.file), part.model)?;
    std::fs::write(p.join("in/input_0.npy"), part.input)?;
    std::fs::write(p.join("want/output_0.npy"), part.expected)?;
    println!(
        "Kiln demo: {} on {BOARD} (Cortex-M4F, emulated)\n",
        part.title
    );
    let args = ModelArgs::file(p.join(part.file));
    let c = compile(&args, &crate::run::target_for(BOARD))?;
    let inputs = read_inputs(&p.join("in"), &c)?;
    let ran = run_on(BOARD, &c, &inputs, &Default::default())?;
    print_costs(&c, &ran);
    let (name, dtype, shape) = &c.outputs[0];
    let scores =
        kiln_codegen::tensor::Tensor::new(dtype.scalar, shape.clone(), ran.outputs[0].clone())
            .with_context(|| format!("output 0 ({name})"))?
            .to_f64();
    let best = (0..scores.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap_or(0);
    match dtype.scalar.is_int() {
        true => println!("predicted class {best} (score {})", scores[best]),
        false => println!("predicted class {best} (probability {:.4})", scores[best]),
    }
    let ok = compare(&c, &ran.outputs, &p.join("want"), Tolerance::DEFAULT)?;
    let how = if dtype.scalar.is_int() {
        " bit for bit"
    } else {
        ""
    };
    match ok {
        true => println!("matches {}{how}", part.reference),
        false => println!("DOES NOT match {}", part.reference),
    }
    Ok(ok)
}

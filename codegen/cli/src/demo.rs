//! `kiln demo`: the MLPerf Tiny keyword-spotting model, compiled and run on a fixed input,
//! compared with onnxruntime's output, with its per-kernel cost and memory.

use super::model::{compile, ModelArgs};
use super::run::{compare, print_costs, run_on};

/// The default emulated board.
const BOARD: &str = "qemu-an386";
use anyhow::{Context, Result};
use kiln_codegen::target::Target;
use std::process::ExitCode;

const MODEL: &[u8] = include_bytes!("../../models/kws_float.onnx");
const INPUT: &[u8] = include_bytes!("../../../tests/data/kws_float/input_0.npy");
const EXPECTED: &[u8] = include_bytes!("../../../tests/data/kws_float/output_0.npy");

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_: Args) -> Result<ExitCode> {
    let dir = tempfile::tempdir().context("a temporary folder")?;
    let p = dir.path();
    std::fs::write(p.join("kws_float.onnx"), MODEL)?;
    for (sub, name, bytes) in [
        ("in", "input_0.npy", INPUT),
        ("want", "output_0.npy", EXPECTED),
    ] {
        std::fs::create_dir_all(p.join(sub))?;
        std::fs::write(p.join(sub).join(name), bytes)?;
    }
    println!("Kiln demo: MLPerf Tiny keyword spotting (DS-CNN, float) on {BOARD} (Cortex-M4F, emulated)\n");
    let args = ModelArgs {
        model: p.join("kws_float.onnx"),
        shapes: vec![],
        beam: 0,
    };
    let c = compile(&args, &Target::c())?;
    let inputs = super::model::read_inputs(&p.join("in"), &c)?;
    let ran = run_on(BOARD, &c, &inputs, kiln_runners::board::Io::Files)?;
    let probs: Vec<f32> = ran.outputs[0]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let (best, p_best) =
        probs.iter().enumerate().fold(
            (0, f32::MIN),
            |acc, (i, &v)| if v > acc.1 { (i, v) } else { acc },
        );
    print_costs(&c, &ran);
    println!("predicted class {best} with probability {p_best:.4}");
    let ok = compare(&c, &ran.outputs, &p.join("want"), 1e-4, 1e-5)?;
    println!(
        "{}",
        if ok {
            "matches onnxruntime"
        } else {
            "DOES NOT match onnxruntime"
        }
    );
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

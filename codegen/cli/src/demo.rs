//! `kiln demo`: the MLPerf Tiny keyword-spotting model on the default emulated board, twice:
//! the float ONNX model against onnxruntime's output, and the int8 TFLite model against
//! TensorFlow Lite Micro's, bit for bit. Each with its per-kernel cost and memory. Then a
//! streaming wake-word model over a sequence of windows, its state kept on the board, each
//! window against TFLM's.

use super::model::{compile, read_inputs, ModelArgs};
use super::run::{compare, output_diffs, print_costs, run_on, Tolerance};
use anyhow::{Context, Result};
use kiln_runners::Invocation;
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
    for part in &PARTS {
        all_ok &= run_part(part, dir.path())?;
        println!();
    }
    all_ok &= run_stream()?;
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
    let c = compile(&args, &crate::run::target_for(BOARD)?)?;
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

/// The streaming wake-word model, its recorded windows and the reference's outputs for them.
const STREAM_MODEL: &str = "tests/models/tflite-real/hey_jarvis.tflite";
const STREAM_STEPS: &str = "tests/models/tflite-real/hey_jarvis/steps";
/// The audio a window of it covers: three 10 ms feature frames.
const WINDOW_MS: f64 = 30.0;

/// Runs the wake-word model over its windows in one run of the board's firmware, the state
/// carried from each to the next; prints the costs summed over the windows, the state, a
/// window's cost at the core's clock, the scores, and the verdict; true on a match.
fn run_stream() -> Result<bool> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let steps = root.join(STREAM_STEPS);
    let dirs = crate::run::steps::step_dirs(&steps)?;
    println!(
        "Kiln demo: microWakeWord's \"hey jarvis\" (streaming int8 TFLite) over {} windows on \
         {BOARD} (Cortex-M4F, emulated)\n",
        dirs.len()
    );
    let c = compile(
        &ModelArgs::file(root.join(STREAM_MODEL)),
        &crate::run::target_for(BOARD)?,
    )?;
    let inputs = crate::run::steps::read_steps(&dirs, &c)?;
    let invocations: Vec<Invocation> = inputs.iter().map(|i| Invocation::Run(i)).collect();
    let runs = crate::run::run_stream_on(BOARD, &c, &invocations, &Default::default())?;
    println!("Each kernel's cost summed over the {} windows:", runs.len());
    let all = crate::run::steps::summed(&runs);
    print_costs(&c, &all);
    let report = &c.bundle.report;
    println!(
        "state: {} B of the {} B arena, kept on the board from one window to the next",
        report.state_bytes, report.arena_bytes
    );
    println!("{}", window_cost(&all, runs.len()));
    let mut scores = Vec::new();
    let mut matched = 0;
    for (run, d) in runs.iter().zip(&dirs) {
        scores.push(
            run.outputs[0]
                .first()
                .copied()
                .unwrap_or_default()
                .to_string(),
        );
        let diffs = output_diffs(&c, &run.outputs, &d.join("expected"), Tolerance::DEFAULT)?;
        matched += usize::from(diffs.iter().all(|d| d.bad == 0));
    }
    println!(
        "wake word probability per window (of 255; the windows are recorded features, not \
         the wake word): {}",
        scores.join(" ")
    );
    let n = runs.len();
    match matched == n {
        true => println!("all {n} windows match TensorFlow Lite Micro bit for bit"),
        false => println!(
            "{} of {n} windows DO NOT match TensorFlow Lite Micro",
            n - matched
        ),
    }
    Ok(matched == n)
}

/// `a window: N instructions, M est. cycles, T ms at F MHz (of 30 ms of audio)`, averaged over
/// the `windows` runs summed as `all`.
fn window_cost(all: &crate::run::Ran, windows: usize) -> String {
    let (instructions, cycles) = crate::run::steps::average(all, windows);
    let mut line = format!("a window: {instructions:.0} instructions");
    let mhz = all
        .cycles
        .as_ref()
        .and_then(|e| crate::run::reference_mhz(e.core));
    if let (Some(per_window), Some(mhz)) = (cycles, mhz) {
        let ms = per_window / (mhz * 1e3);
        line += &format!(
            ", {per_window:.0} est. cycles, {ms:.2} ms at {mhz:.0} MHz (a window is \
             {WINDOW_MS:.0} ms of audio)"
        );
    }
    line
}

//! `kiln bench`: Kiln on the MLPerf Tiny float models and a ResNet block, side by side with
//! onnxruntime (one thread), tinygrad 0.9.1 (CLANG) and TensorFlow Lite Micro, in one run.
//!
//! Kiln's side is measured here: compile time, host latency (best and median of repeated whole
//! inferences through the firmware executor), arena and liveness bound, and on the emulated
//! Cortex-M4 board the instructions per inference and the image's flash and RAM. The reference
//! side comes from `scripts/bench_refs.py` in the environment `scripts/setup-bench.sh` makes.
//! The results go to `OUT/bench.md` (a Markdown table), `OUT/bench.svg` (a plot) and
//! `OUT/bench.tsv` (every number, one per line).
//!
//! [`kiln`] measures Kiln, [`refs`] gathers the references' numbers, [`report`] and [`plot`]
//! write them out; [`models`] names the benchmarked models.

mod kiln;
mod models;
mod plot;
mod refs;
mod report;
mod table;

use anyhow::{bail, Context, Result};
use models::BenchModel;
use refs::Refs;
use report::{Row, README_END, README_START};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The board whose instructions and image sizes are reported.
const BOARD: &str = "qemu-an386";

/// Host latency at most this many times onnxruntime's.
pub const TARGET_VS_ORT: f64 = 1.5;
/// At least this many times faster than tinygrad.
pub const TARGET_VS_TINYGRAD: f64 = 5.0;
/// Arena at most this fraction of TFLM's.
pub const TARGET_VS_TFLM: f64 = 0.8;
/// Compile time without search, seconds.
pub const TARGET_COMPILE_S: f64 = 2.0;

#[derive(clap::Args)]
pub struct Args {
    /// Folder with the MLPerf Tiny models (`onnx/`, `tflite/`); default
    /// `tests/models/mlperf-tiny` in the repository.
    #[arg(long)]
    models: Option<PathBuf>,
    /// Folder the table, plot and raw numbers are written into.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Timed host inferences per model (Kiln and onnxruntime; tinygrad gets a tenth, at least 5).
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// Only these models (repeatable): kws, vww, ic, ad, str_ww, resnet_block.
    #[arg(long)]
    only: Vec<String>,
    /// Skip the emulated board (instructions, flash and RAM).
    #[arg(long)]
    no_board: bool,
    /// Skip the references (onnxruntime, tinygrad, TFLM) and their Python environment.
    #[arg(long)]
    no_refs: bool,
    /// BEAM search width for Kiln's kernels (0: the hand-coded opts); searches are cached.
    #[arg(long, default_value_t = 0)]
    beam: usize,
    /// With `--beam`: the board column runs kernels searched by instructions on the board
    /// (default: the host's searched kernels, the host column's).
    #[arg(long)]
    board_beam: bool,
    /// Replace the table between the `bench` markers of this README with the new one.
    #[arg(long)]
    readme: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let dir = a
        .models
        .clone()
        .unwrap_or_else(|| models::repo_root().join("tests/models/mlperf-tiny"));
    let all = models::models(&dir);
    let list = select(&all, &a.only)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let refs = if a.no_refs {
        Refs::new()
    } else {
        refs::run_refs(&list, a.runs)?
    };
    let rows = measure_rows(list, &refs, &a)?;
    let table = table::markdown(&rows, &refs, a.runs, a.beam, a.board_beam);
    write_results(&a, &rows, &table)?;
    if let Some(path) = &a.readme {
        update_readme(path, &table)?;
    }
    println!("{table}");
    println!(
        "wrote {}, {} and {}",
        a.out.join("bench.md").display(),
        a.out.join("bench.svg").display(),
        a.out.join("bench.tsv").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The models `--only` names (all of them without it), each checked to exist.
fn select<'a>(all: &'a [BenchModel], only: &[String]) -> Result<Vec<&'a BenchModel>> {
    let list: Vec<&BenchModel> = all
        .iter()
        .filter(|m| only.is_empty() || only.iter().any(|o| o == m.name))
        .collect();
    if list.is_empty() {
        bail!(
            "no model matches --only {:?} (known: kws, vww, ic, ad, str_ww, resnet_block)",
            only
        );
    }
    for m in &list {
        if !m.onnx.exists() {
            bail!(
                "model {} not found at {} (set --models)",
                m.name,
                m.onnx.display()
            );
        }
    }
    Ok(list)
}

/// Measures Kiln on each model and sets its numbers beside the references'.
fn measure_rows<'a>(list: Vec<&'a BenchModel>, refs: &Refs, a: &Args) -> Result<Vec<Row<'a>>> {
    let tflm_sizes = refs::parse_tflm_sizes(refs::TFLM_SIZES);
    let mut rows = Vec::new();
    for m in list {
        eprintln!("kiln: {}", m.name);
        let k = kiln::measure_kiln(m, a.runs, !a.no_board, a.beam, a.board_beam)
            .with_context(|| format!("benchmarking {}", m.name))?;
        let measured = refs::num(refs, m.name, "tflm_arena").map(|t| (t as usize, ""));
        let tflm = measured.or(m.published_tflm.map(|t| (t, "*")));
        rows.push(Row {
            m,
            k,
            ort_us: refs::num(refs, m.name, "ort_best_s").map(|s| s * 1e6),
            tinygrad_us: refs::num(refs, m.name, "tinygrad_best_s").map(|s| s * 1e6),
            tflm,
            tflm_image: tflm_sizes.get(m.name).cloned(),
        });
    }
    Ok(rows)
}

/// Writes `bench.md`, `bench.svg` and `bench.tsv` into `--out`.
fn write_results(a: &Args, rows: &[Row], table: &str) -> Result<()> {
    let md = a.out.join("bench.md");
    std::fs::write(&md, table).with_context(|| format!("writing {}", md.display()))?;
    std::fs::write(a.out.join("bench.svg"), plot::svg(rows))?;
    std::fs::write(a.out.join("bench.tsv"), report::tsv(rows))?;
    Ok(())
}

/// Replaces the table between the bench markers of the README at `path`.
fn update_readme(path: &Path, table: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let Some(new) = report::splice_readme(&text, table) else {
        bail!(
            "{} has no {README_START} … {README_END} markers",
            path.display()
        );
    };
    std::fs::write(path, new).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

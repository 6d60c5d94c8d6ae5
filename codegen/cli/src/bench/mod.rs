//! `kiln bench`: Kiln on the MLPerf Tiny float models and a ResNet block, side by side with
//! onnxruntime (one thread), tinygrad 0.9.1 (CLANG) and TensorFlow Lite Micro, and on the MLPerf
//! Tiny int8 TFLite models side by side with TFLM's reference kernels and LiteRT (one thread), in
//! one run.
//!
//! Kiln's side is measured here: compile time, host latency (best and median of repeated whole
//! inferences through the firmware executor), arena and liveness bound, and on the emulated
//! Cortex-M4 board the instructions per inference and the image's flash and RAM; on an int8
//! model, also how far its outputs are from TFLM's on the same input, and its instructions and
//! estimated cycles on the Cortex-M4, M33 and M7 boards against the best published MLPerf Tiny
//! results on those cores ([`speed`]) and, on the M4 and the M33, against TFLM with CMSIS-NN's
//! kernels run in the same way on the same boards ([`peer`]; one model also layer by layer,
//! [`layers`]). The reference side comes from `scripts/bench_refs.py` in
//! the environment `scripts/setup-bench.sh` makes; on a float model, Kiln's host inferences
//! and onnxruntime's and tinygrad's are timed in alternating rounds ([`kiln::ROUNDS`]), so that
//! a machine whose speed drifts over the run weighs on every side alike. The results go to `OUT/bench.md` (a Markdown
//! table per kind of model), `OUT/bench.svg` (a plot of the float models) and `OUT/bench.tsv`
//! (every number, one per line); a run replaces the tables and numbers of the kinds of model it
//! measured there and keeps the others'.
//!
//! [`kiln`] measures Kiln, [`refs`] gathers the references' numbers, [`peer`] runs the int8
//! peer's images (their flash read by [`elf`]), [`report`], [`table`], [`speed`], [`layers`]
//! and [`plot`] write them out; [`models`] names the benchmarked models.

mod kiln;
mod layers;
mod memory;
mod models;
mod peer;
mod plot;
mod refs;
mod report;
pub(crate) mod speed;
mod table;

use anyhow::{bail, Context, Result};
use models::{BenchModel, Kind};
use refs::{RefServer, Refs, Round};
use report::{Row, Tables, README_END, README_START};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The board whose instructions and image sizes are reported.
const BOARD: &str = "qemu-an386";

/// Host latency at most this many times onnxruntime's (the MLPerf Tiny models and the ResNet
/// block).
pub const TARGET_VS_ORT: f64 = 1.0;
/// The same for the large networks.
pub const TARGET_VS_ORT_LARGE: f64 = 1.5;
/// At least this many times faster than tinygrad.
pub const TARGET_VS_TINYGRAD: f64 = 5.0;
/// Arena at most this fraction of TFLM's.
pub const TARGET_VS_TFLM: f64 = 0.8;
/// Compile time without search, seconds.
pub const TARGET_COMPILE_S: f64 = 2.0;
/// An int8 model's estimated cycles on the M4 and the M33 at most this fraction of TFLM +
/// CMSIS-NN's on the same board.
pub const TARGET_VS_CMSIS_NN: f64 = 0.6;

#[derive(clap::Args)]
pub struct Args {
    /// Folder with the MLPerf Tiny models (`onnx/`, `tflite/`); default
    /// `tests/models/mlperf-tiny` in the repository.
    #[arg(long)]
    models: Option<PathBuf>,
    /// Folder the table, plot and raw numbers are written into.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Timed host inferences per model (Kiln, onnxruntime, TFLM and LiteRT; tinygrad gets a
    /// tenth, at least 5).
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// Only these models (repeatable): the float kws, vww, ic, ad, str_ww, resnet_block, and
    /// the large resnet50 and mobilenet; the int8 kws_int8, vww_int8, ic_int8, ad_int8,
    /// str_ww_int8; or `float`, `int8` for all of a kind. The tables of the kinds not run are
    /// kept in `--out` and `--docs`.
    #[arg(long)]
    only: Vec<String>,
    /// Skip the emulated boards (instructions, cycles, flash and RAM; the int8 models' speed on
    /// the four cores).
    #[arg(long)]
    no_board: bool,
    /// Skip the references (onnxruntime, tinygrad, TFLM, LiteRT) and their Python environment.
    #[arg(long)]
    no_refs: bool,
    /// BEAM search width for Kiln's kernels (0: the hand-coded opts); searches are cached.
    #[arg(long, default_value_t = 0)]
    beam: usize,
    /// With `--beam`: the board column runs kernels searched by estimated cycles on the board
    /// (default: the host's searched kernels, the host column's).
    #[arg(long)]
    board_beam: bool,
    /// Replace the tables between the `bench` markers of this Markdown file (the project's is
    /// `docs/benchmark.md`) with the new ones.
    #[arg(long)]
    docs: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let dir = a
        .models
        .clone()
        .unwrap_or_else(|| models::repo_root().join("tests/models/mlperf-tiny"));
    let all = models::models(&dir);
    let list = select(&all, &a.only)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    // The int8 models' input and TFLM's outputs on it, from the references.
    let vectors = tempfile::tempdir().context("a temporary folder for the int8 vectors")?;
    let (mut refs, mut server) = match a.no_refs {
        true => (Refs::new(), None),
        false => {
            let refs = refs::run_refs(&list, a.runs, vectors.path())?;
            (refs, Some(RefServer::start()?))
        }
    };
    let rows = measure_rows(list, &mut refs, server.as_mut(), vectors.path(), &a)?;
    drop(server);
    let (float, int8): (Vec<Row>, Vec<Row>) =
        rows.into_iter().partition(|r| r.m.kind == Kind::Float);
    let tables = Tables {
        float: (!float.is_empty())
            .then(|| table::markdown(&float, &refs, a.runs, a.beam, a.board_beam)),
        int8: (!int8.is_empty())
            .then(|| table::int8_markdown(&int8, &refs, a.runs, a.beam, a.board_beam)),
    };
    println!("{}", tables.text());
    let written = write_results(&a, &all, &float, &int8, &tables)?;
    if let Some(path) = &a.docs {
        update_docs(path, tables)?;
    }
    let written: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", written.join(", "));
    Ok(ExitCode::SUCCESS)
}

/// The models `--only` names, by name or kind (all of them without it), each checked to exist.
fn select<'a>(all: &'a [BenchModel], only: &[String]) -> Result<Vec<&'a BenchModel>> {
    let list: Vec<&BenchModel> = all
        .iter()
        .filter(|m| only.is_empty() || only.iter().any(|o| o == m.name || o == m.kind.name()))
        .collect();
    if list.is_empty() {
        let known: Vec<&str> = all.iter().map(|m| m.name).collect();
        bail!(
            "no model matches --only {:?} (known: {}, or float, int8)",
            only,
            known.join(", ")
        );
    }
    if list.iter().any(|m| m.large && !m.model.exists()) {
        make_large_models()?;
    }
    for m in &list {
        if !m.model.exists() {
            bail!(
                "model {} not found at {} (set --models)",
                m.name,
                m.model.display()
            );
        }
    }
    Ok(list)
}

/// Generates the large networks into [`models::large_dir`] with the benchmark's Python
/// environment (made first if need be).
fn make_large_models() -> Result<()> {
    let root = models::repo_root();
    let status = std::process::Command::new("bash")
        .arg(root.join("scripts/setup-bench.sh"))
        .status()
        .context("running scripts/setup-bench.sh")?;
    if !status.success() {
        bail!("scripts/setup-bench.sh failed ({status})");
    }
    let script = root.join("scripts/make_large_models.py");
    let status = std::process::Command::new(root.join(".venv-bench/bin/python"))
        .arg(&script)
        .arg(models::large_dir())
        .status()
        .with_context(|| format!("running {}", script.display()))?;
    if !status.success() {
        bail!("{} failed ({status})", script.display());
    }
    Ok(())
}

/// Measures Kiln on each model and sets its numbers beside the references'; a model with
/// vectors in `vectors/<name>` runs on their inputs and is checked against their outputs. With
/// `server`, a float model's references are made ready on it and timed in rounds between
/// Kiln's, their numbers going into `refs`.
fn measure_rows<'a>(
    list: Vec<&'a BenchModel>,
    refs: &mut Refs,
    mut server: Option<&mut RefServer>,
    vectors: &Path,
    a: &Args,
) -> Result<Vec<Row<'a>>> {
    let tflm_sizes = refs::parse_tflm_sizes(refs::TFLM_SIZES);
    let mut rows = Vec::new();
    for m in list {
        eprintln!("kiln: {}", m.name);
        let v = vectors.join(m.name);
        let v = v.is_dir().then_some(v.as_path());
        // The int8 models also run on the speed table's other cores.
        let (others, wide) = match m.kind {
            Kind::Int8 => (speed::other_boards(), speed::wide_boards()),
            Kind::Float => (vec![], vec![]),
        };
        // A large network: no board holds it, and a search over its kernels would take hours.
        let (board, beam) = match m.large {
            true => (false, 0),
            false => (!a.no_board, a.beam),
        };
        let plan = kiln::Plan {
            runs: m.runs(a.runs),
            board,
            other_boards: &others,
            wide_boards: &wide,
            beam,
            board_beam: a.board_beam,
        };
        let server = server.as_deref_mut().filter(|_| m.kind == Kind::Float);
        let mut rivals = Rivals::new(m, server, refs)?;
        let k = kiln::measure_kiln(m, &plan, v, &mut |n| rivals.round(n))
            .with_context(|| format!("benchmarking {}", m.name))?;
        rivals.merge_into(refs);
        rows.push(row(m, k, refs, &tflm_sizes, board));
    }
    Ok(rows)
}

/// The row of `m` with Kiln's numbers `k`, the references' from `refs` and TFLM's image from
/// `tflm_sizes`; with `board`, an int8 model's peer runs on the same boards, in the same run.
fn row<'a>(
    m: &'a BenchModel,
    k: kiln::KilnNumbers,
    refs: &Refs,
    tflm_sizes: &BTreeMap<String, refs::TflmImage>,
    board: bool,
) -> Row<'a> {
    let measured = refs::num(refs, m.name, "tflm_arena").map(|t| (t as usize, ""));
    let (peer, layers) = match (board, m.kind) {
        (true, Kind::Int8) => (peer::measure(m), layers::measure(m)),
        _ => (Vec::new(), None),
    };
    Row {
        m,
        k,
        ort_us: refs::best_us(refs, m.name, "ort"),
        tinygrad_us: refs::best_us(refs, m.name, "tinygrad"),
        tflm_us: refs::best_us(refs, m.name, "tflm"),
        litert_us: refs::best_us(refs, m.name, "litert"),
        tflm: measured.or(m.published_tflm.map(|t| (t, "*"))),
        tflm_image: tflm_sizes.get(m.name).cloned(),
        peer,
        layers,
    }
}

/// The float references of one model, timed in rounds between Kiln's.
struct Rivals<'s> {
    name: &'static str,
    server: Option<&'s mut RefServer>,
    ort: Vec<Round>,
    tinygrad: Vec<Round>,
}

impl<'s> Rivals<'s> {
    /// Makes the references ready on `m` through `server` (none: nothing is timed), their
    /// rows (tinygrad's device and difference, failures) going into `refs`.
    fn new(m: &BenchModel, mut server: Option<&'s mut RefServer>, refs: &mut Refs) -> Result<Self> {
        if let Some(s) = server.as_deref_mut() {
            eprintln!("references: {}", m.name);
            for (model, rows) in s.prepare(m)? {
                refs.entry(model).or_default().extend(rows);
            }
        }
        Ok(Rivals {
            name: m.name,
            server,
            ort: vec![],
            tinygrad: vec![],
        })
    }

    /// One round after Kiln's `runs`: as many of onnxruntime, a tenth of them (at least one)
    /// of tinygrad.
    fn round(&mut self, runs: usize) -> Result<()> {
        let Some(s) = self.server.as_deref_mut() else {
            return Ok(());
        };
        self.ort.extend(s.time(self.name, "ort", runs)?);
        self.tinygrad
            .extend(s.time(self.name, "tinygrad", (runs / 10).max(1))?);
        Ok(())
    }

    fn merge_into(self, refs: &mut Refs) {
        refs::merged_rows(refs, self.name, "ort", &self.ort);
        refs::merged_rows(refs, self.name, "tinygrad", &self.tinygrad);
    }
}

/// Writes `bench.md` (`tables`, with those of the kinds not run kept from the one there),
/// `bench.svg` (the float rows, when there are some) and `bench.tsv` (the numbers of `float`
/// and `int8`, with those there of the models of kinds not run) into `--out`; the files written.
fn write_results(
    a: &Args,
    all: &[BenchModel],
    float: &[Row],
    int8: &[Row],
    tables: &Tables,
) -> Result<Vec<PathBuf>> {
    let md = a.out.join("bench.md");
    let old = read_if_there(&md)?;
    let merged = tables.clone().or(Tables::parse(&old));
    std::fs::write(&md, merged.text()).with_context(|| format!("writing {}", md.display()))?;
    let mut written = vec![md];
    if !float.is_empty() {
        let svg = a.out.join("bench.svg");
        std::fs::write(&svg, plot::svg(float))
            .with_context(|| format!("writing {}", svg.display()))?;
        written.push(svg);
    }
    let tsv = a.out.join("bench.tsv");
    let ran: Vec<Kind> = float.iter().chain(int8).map(|r| r.m.kind).collect();
    let replaced = |model: &str| all.iter().any(|m| m.name == model && ran.contains(&m.kind));
    let new = report::tsv(float) + &report::tsv(int8);
    let text = report::merge_tsv(&read_if_there(&tsv)?, &new, |m| !replaced(m));
    std::fs::write(&tsv, text).with_context(|| format!("writing {}", tsv.display()))?;
    written.push(tsv);
    Ok(written)
}

/// The text of `path`, or nothing when there is no such file.
fn read_if_there(path: &Path) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Replaces the tables between the bench markers of the Markdown file at `path` by `tables`' (keeping
/// a kind's that `tables` lacks).
fn update_docs(path: &Path, tables: Tables) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let Some(new) = report::splice_readme(&text, tables) else {
        bail!(
            "{} has no {README_START} … {README_END} markers",
            path.display()
        );
    };
    std::fs::write(path, new).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

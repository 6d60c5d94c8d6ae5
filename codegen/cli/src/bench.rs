//! `kiln bench`: Kiln on the MLPerf Tiny float models and a ResNet block, side by side with
//! onnxruntime (one thread), tinygrad 0.9.1 (CLANG) and TensorFlow Lite Micro, in one run.
//!
//! Kiln's side is measured here: compile time, host latency (best and median of repeated whole
//! inferences through the firmware executor), arena and liveness bound, and on the emulated
//! Cortex-M4 board the instructions per inference and the image's flash and RAM. The reference
//! side comes from `scripts/bench_refs.py` in the environment `scripts/setup-bench.sh` makes.
//! The results go to `OUT/bench.md` (a Markdown table), `OUT/bench.svg` (a plot) and
//! `OUT/bench.tsv` (every number, one per line).

use super::model::BeamCost;
use super::model::{compile, compile_with_cost, ModelArgs};
use super::run::{run_on, target_for};
use anyhow::{bail, Context, Result};
use kiln_codegen::target::Target;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

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

/// One benchmarked model.
struct BenchModel {
    name: &'static str,
    onnx: PathBuf,
    tflite: Option<PathBuf>,
    /// TFLM's smallest arena as published in the models' README, when there is a float model.
    published_tflm: Option<usize>,
}

fn repo_root() -> PathBuf {
    kiln_runners::board::root()
}

fn models(dir: &Path) -> Vec<BenchModel> {
    let onnx = |f: &str| dir.join("onnx").join(f);
    let tflite = |f: &str| Some(dir.join("tflite").join(f));
    vec![
        BenchModel {
            name: "kws",
            onnx: onnx("kws_float.onnx"),
            tflite: None,
            published_tflm: None,
        },
        BenchModel {
            name: "vww",
            onnx: onnx("vww_float.onnx"),
            tflite: tflite("vww_96_float.tflite"),
            published_tflm: Some(324_800),
        },
        BenchModel {
            name: "ic",
            onnx: onnx("ic_float.onnx"),
            tflite: tflite("pretrainedResnet.tflite"),
            published_tflm: Some(203_376),
        },
        BenchModel {
            name: "ad",
            onnx: onnx("ad_float.onnx"),
            tflite: tflite("ad01_fp32.tflite"),
            published_tflm: Some(6_224),
        },
        BenchModel {
            name: "str_ww",
            onnx: onnx("str_ww_float.onnx"),
            tflite: None,
            published_tflm: None,
        },
        BenchModel {
            name: "resnet_block",
            onnx: repo_root().join("tests/models/residual.onnx"),
            tflite: None,
            published_tflm: None,
        },
    ]
}

/// What Kiln measured on one model.
#[derive(Default)]
struct KilnNumbers {
    compile: Duration,
    host_best: Duration,
    host_median: Duration,
    arena: usize,
    bound: usize,
    weights: usize,
    kernels: usize,
    board: Option<BoardNumbers>,
    board_error: Option<String>,
}

struct BoardNumbers {
    instructions: u64,
    flash: usize,
    ram: usize,
}

/// Deterministic inputs: f32 in [-1, 1) from a fixed linear congruential sequence.
fn inputs_for(c: &super::model::Compiled) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    c.inputs
        .iter()
        .map(|(_, dtype, shape)| {
            let n: usize = shape.iter().product();
            let size = dtype.scalar.size();
            let mut out = Vec::with_capacity(n * size);
            for _ in 0..n {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                if size == 4 {
                    let v = ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                    out.extend_from_slice(&v.to_le_bytes());
                } else {
                    out.extend(std::iter::repeat_n(0u8, size));
                }
            }
            out
        })
        .collect()
}

fn best_and_median(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    match v.len() {
        0 => (Duration::ZERO, Duration::ZERO),
        n => (v[0], v[n / 2]),
    }
}

fn measure_kiln(
    m: &BenchModel,
    runs: usize,
    board: bool,
    beam: usize,
    board_beam: bool,
) -> Result<KilnNumbers> {
    let mut args = ModelArgs {
        model: m.onnx.clone(),
        shapes: vec![],
        beam: 0,
    };
    // The compile time is without search; with --beam the searched bundle is measured.
    let started = Instant::now();
    let mut c = compile(&args, &Target::host())?;
    let compile_time = started.elapsed();
    if beam > 0 {
        args.beam = beam;
        c = compile(&args, &Target::host())?;
    }
    let inputs = inputs_for(&c);
    let dir = tempfile::tempdir().context("a temporary folder for the bundle")?;
    c.bundle.write(dir.path())?;
    let lib = kiln_runners::host::compile(dir.path())?;
    let run = kiln_runners::host::run_repeated(&c.bundle, &lib, &inputs, runs.max(1))?;
    let (host_best, host_median) = best_and_median(run.run_times);
    let r = &c.bundle.report;
    let mut k = KilnNumbers {
        compile: compile_time,
        host_best,
        host_median,
        arena: r.arena_bytes,
        bound: r.arena_lower_bound,
        weights: r.weight_bytes,
        kernels: r.steps.len(),
        ..KilnNumbers::default()
    };
    if board {
        // The board has no float vectors: its kernels are plain C, with their opts searched
        // by the board's instructions (`--board-beam`) or the hand-coded ones.
        let board_args = ModelArgs { beam, ..args };
        let c = match board_beam && beam > 0 {
            true => compile_with_cost(
                &board_args,
                &target_for(BOARD),
                BeamCost::Board(kiln_runners::board::info(BOARD)?),
            )?,
            false => compile(
                &ModelArgs {
                    beam: 0,
                    ..board_args
                },
                &target_for(BOARD),
            )?,
        };
        match run_on(BOARD, &c, &inputs, kiln_runners::board::Io::Files) {
            Ok(ran) => {
                let (flash, ram) = ran.image.unwrap_or((0, 0));
                k.board = Some(BoardNumbers {
                    instructions: ran.step_cost.iter().sum::<f64>() as u64,
                    flash,
                    ram,
                });
            }
            Err(e) => k.board_error = Some(format!("{e:#}")),
        }
    }
    Ok(k)
}

/// The references' numbers: model → key → value.
type Refs = BTreeMap<String, BTreeMap<String, String>>;

fn run_refs(list: &[&BenchModel], runs: usize) -> Result<Refs> {
    let root = repo_root();
    let setup = root.join("scripts/setup-bench.sh");
    let status = Command::new("bash")
        .arg(&setup)
        .status()
        .with_context(|| format!("running {}", setup.display()))?;
    if !status.success() {
        bail!("{} failed ({status})", setup.display());
    }
    let scratch = tempfile::tempdir().context("a temporary folder")?;
    let spec = scratch.path().join("refs-spec.tsv");
    let mut text = String::new();
    for m in list {
        let tflite = m
            .tflite
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "-".into());
        writeln!(
            text,
            "{}\t{}\t{}\t{}",
            m.name,
            m.onnx.display(),
            tflite,
            runs
        )?;
    }
    std::fs::write(&spec, text).with_context(|| format!("writing {}", spec.display()))?;
    let result = scratch.path().join("refs.tsv");
    let py = root.join(".venv-bench/bin/python");
    let script = root.join("scripts/bench_refs.py");
    let status = Command::new(&py)
        .arg(&script)
        .arg(&spec)
        .arg(&result)
        .status()
        .with_context(|| format!("running {}", py.display()))?;
    if !status.success() {
        bail!("{} failed ({status})", script.display());
    }
    let text = std::fs::read_to_string(&result)
        .with_context(|| format!("reading {}", result.display()))?;
    Ok(parse_refs(&text))
}

fn parse_refs(text: &str) -> Refs {
    let mut refs = Refs::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, '\t');
        if let (Some(m), Some(k), Some(v)) = (parts.next(), parts.next(), parts.next()) {
            refs.entry(m.to_string())
                .or_default()
                .insert(k.to_string(), v.to_string());
        }
    }
    refs
}

fn num(refs: &Refs, model: &str, key: &str) -> Option<f64> {
    refs.get(model)?.get(key)?.parse().ok()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "—".into())
}

fn mark(ok: bool) -> &'static str {
    if ok {
        " ✓"
    } else {
        " ✗"
    }
}

/// TFLM's image of the same float model on the board (flash and RAM counted as Kiln's image is),
/// with its provenance: `scripts/tflm_sizes.tsv`.
const TFLM_SIZES: &str = include_str!("../../../scripts/tflm_sizes.tsv");

/// Flash and RAM bytes of TFLM's image of one model, and where the numbers come from.
#[derive(Clone, Debug, PartialEq)]
struct TflmImage {
    flash: usize,
    ram: usize,
    source: String,
}

/// `model → TflmImage` from the tab-separated `model, flash, RAM, source` lines of `text`
/// (`#` starts a comment line; malformed lines are skipped).
fn parse_tflm_sizes(text: &str) -> BTreeMap<String, TflmImage> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let f: Vec<&str> = line.split('\t').map(str::trim).collect();
        if let [model, flash, ram, source] = f[..] {
            if let (Ok(flash), Ok(ram)) = (flash.parse(), ram.parse()) {
                let source = source.to_string();
                out.insert(model.to_string(), TflmImage { flash, ram, source });
            }
        }
    }
    out
}

/// What `measured` in the source column of `scripts/tflm_sizes.tsv` stands for.
const TFLM_MEASURED: &str =
    "measured once, not published: tflite-micro 90b983c2 with its reference \
     kernels and only the model's ops registered, built by arm-none-eabi-gcc 12.2.1 for the \
     Cortex-M4F (hard float) with TFLM's release flags (core -Os, kernels -O2, --gc-sections) and \
     newlib, the .tflite and a static arena of TFLM's smallest size in the image";

/// The note under the table on where TFLM's image numbers come from, per source.
fn tflm_image_note(rows: &[Row]) -> String {
    let mut by_source: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut without = Vec::new();
    for r in rows {
        match &r.tflm_image {
            Some(t) => by_source.entry(&t.source).or_default().push(r.m.name),
            None => without.push(r.m.name),
        }
    }
    let mut parts: Vec<String> = by_source
        .iter()
        .map(|(src, models)| {
            let what = if *src == "measured" {
                TFLM_MEASURED
            } else {
                src
            };
            format!("{}: {what}", models.join(", "))
        })
        .collect();
    if !without.is_empty() {
        parts.push(format!("none for {}", without.join(", ")));
    }
    format!(
        "TFLM's image on {BOARD} (flash and RAM counted as Kiln's; `scripts/tflm_sizes.tsv`) — {}.",
        parts.join("; ")
    )
}

/// One model's row, with the ratios the targets are about.
struct Row<'a> {
    m: &'a BenchModel,
    k: KilnNumbers,
    ort_us: Option<f64>,
    tinygrad_us: Option<f64>,
    tflm: Option<(usize, &'static str)>,
    /// TFLM's image of the same model on the board, where one was measured.
    tflm_image: Option<TflmImage>,
}

impl Row<'_> {
    fn kiln_us(&self) -> f64 {
        us(self.k.host_best)
    }
    fn vs_ort(&self) -> Option<f64> {
        self.ort_us.map(|o| self.kiln_us() / o)
    }
    fn vs_tinygrad(&self) -> Option<f64> {
        self.tinygrad_us.map(|t| t / self.kiln_us())
    }
    fn vs_tflm(&self) -> Option<f64> {
        self.tflm.map(|(t, _)| self.k.arena as f64 / t as f64)
    }
    /// Kiln's image ÷ TFLM's, flash and RAM.
    fn image_vs_tflm(&self) -> Option<(f64, f64)> {
        let (b, t) = (self.k.board.as_ref()?, self.tflm_image.as_ref()?);
        Some((b.flash as f64 / t.flash as f64, b.ram as f64 / t.ram as f64))
    }
}

fn markdown(rows: &[Row], refs: &Refs, runs: usize, beam: usize, board_beam: bool) -> String {
    let mut s = String::new();
    let v = |k: &str| {
        refs.get("-")
            .and_then(|m| m.get(k))
            .cloned()
            .unwrap_or_else(|| "not run".into())
    };
    let _ = writeln!(
        s,
        "Host latency: best of {runs} whole inferences, one thread (Kiln: its C at `{}` through \
         the firmware executor, kernel opts {}; onnxruntime {}: 1 intra-op thread; tinygrad {}: CLANG, JIT, best of \
         max(5, {runs}/10)). Ratios: Kiln ÷ onnxruntime (target ≤ {TARGET_VS_ORT}), tinygrad ÷ \
         Kiln (target ≥ {TARGET_VS_TINYGRAD}), arena ÷ TFLM's smallest (tflite-micro {}; target \
         ≤ {TARGET_VS_TFLM}). Board: {BOARD} (Cortex-M4F under QEMU), instructions in the \
         kernels per inference, image flash (text + rodata) and static RAM, each against TFLM's \
         image of the same model (Kiln ÷ TFLM).\n",
        kiln_runners::host::HOST_OPT,
        if beam > 0 {
            format!("from a BEAM search of width {beam}")
        } else {
            "hand-coded".to_string()
        },
        v("onnxruntime_version"),
        v("tinygrad_version"),
        v("tflite-micro_version"),
    );
    let _ = writeln!(
        s,
        "| model | compile s | Kiln µs | onnxruntime µs | Kiln/ORT | tinygrad µs | tinygrad/Kiln \
         | arena B | liveness bound B | TFLM arena B | arena/TFLM | M4 instructions | flash B \
         | TFLM flash B | flash/TFLM | RAM B | TFLM RAM B | RAM/TFLM |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let k = &r.k;
        let compile = k.compile.as_secs_f64();
        let _ = writeln!(
            s,
            "| {} | {:.2}{} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.m.name,
            compile,
            mark(compile <= TARGET_COMPILE_S),
            r.kiln_us(),
            opt(r.ort_us, |x| format!("{x:.1}")),
            opt(r.vs_ort(), |x| format!(
                "{x:.2}×{}",
                mark(x <= TARGET_VS_ORT)
            )),
            opt(r.tinygrad_us, |x| format!("{x:.1}")),
            opt(r.vs_tinygrad(), |x| format!(
                "{x:.2}×{}",
                mark(x >= TARGET_VS_TINYGRAD)
            )),
            thousands(k.arena as u64),
            thousands(k.bound as u64),
            opt(r.tflm, |(t, src)| format!("{}{src}", thousands(t as u64))),
            opt(r.vs_tflm(), |x| format!(
                "{x:.2}×{}",
                mark(x <= TARGET_VS_TFLM)
            )),
            opt(k.board.as_ref(), |b| thousands(b.instructions)),
            opt(k.board.as_ref(), |b| thousands(b.flash as u64)),
            opt(r.tflm_image.as_ref(), |t| thousands(t.flash as u64)),
            opt(r.image_vs_tflm(), |(f, _)| format!("{f:.2}×")),
            opt(k.board.as_ref(), |b| thousands(b.ram as u64)),
            opt(r.tflm_image.as_ref(), |t| thousands(t.ram as u64)),
            opt(r.image_vs_tflm(), |(_, m)| format!("{m:.2}×")),
        );
    }
    if rows
        .iter()
        .any(|r| r.tflm.is_some_and(|(_, src)| !src.is_empty()))
    {
        let _ = writeln!(
            s,
            "\nTFLM arenas marked * are the published measurements (the Python package could \
             not be run here)."
        );
    }
    let _ = writeln!(
        s,
        "\nkws and str_ww have no float TFLite model that TFLM runs. resnet_block is \
         `tests/models/residual.onnx` (conv-BN-ReLU-conv-BN + skip, pools). The host runs its \
         kernels over float vectors of 8 lanes (16 where the CPU has AVX-512 and the search \
         chose them); the board, which has none, runs plain C kernels \
         with {}.",
        if board_beam && beam > 0 {
            format!("opts from a BEAM search of width {beam} by the board's instructions")
        } else {
            "the hand-coded opts".to_string()
        }
    );
    let _ = writeln!(s, "\n{}", tflm_image_note(rows));
    for r in rows {
        if let Some(e) = &r.k.board_error {
            let _ = writeln!(s, "\n{} on {BOARD}: {e}", r.m.name);
        }
        if let Some(errs) = refs.get(r.m.name) {
            for (key, val) in errs.iter().filter(|(k, _)| k.ends_with("_error")) {
                let _ = writeln!(s, "\n{} {key}: {val}", r.m.name);
            }
        }
    }
    s
}

/// A plot of the three ratios per model, each against its target line, as SVG.
fn svg(rows: &[Row]) -> String {
    let panels: [(&str, f64, bool, Vec<Option<f64>>); 3] = [
        (
            "Kiln ÷ onnxruntime latency (≤ 1.5)",
            TARGET_VS_ORT,
            false,
            rows.iter().map(|r| r.vs_ort()).collect(),
        ),
        (
            "tinygrad ÷ Kiln latency (≥ 5)",
            TARGET_VS_TINYGRAD,
            true,
            rows.iter().map(|r| r.vs_tinygrad()).collect(),
        ),
        (
            "Kiln arena ÷ TFLM arena (≤ 0.8)",
            TARGET_VS_TFLM,
            false,
            rows.iter().map(|r| r.vs_tflm()).collect(),
        ),
    ];
    let (pw, ph, top, bottom, left) = (320.0, 260.0, 40.0, 60.0, 40.0);
    let width = panels.len() as f64 * (pw + left) + 20.0;
    let height = ph + top + bottom;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
    );
    for (p, (title, target, higher_better, values)) in panels.iter().enumerate() {
        let x0 = left + p as f64 * (pw + left);
        let max = values
            .iter()
            .flatten()
            .fold(*target, |a, &b| a.max(b))
            .max(1e-9)
            * 1.15;
        let y = |v: f64| top + ph - v / max * ph;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"13\">{title}</text>",
            x0 + pw / 2.0
        );
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
            top + ph,
            x0 + pw,
            top + ph
        );
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{top}\" x2=\"{x0}\" y2=\"{}\" stroke=\"black\"/>",
            top + ph
        );
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{max:.2}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>", x0 - 4.0, top + 4.0, x0 - 4.0, top + ph);
        let slot = pw / rows.len().max(1) as f64;
        for (i, (r, v)) in rows.iter().zip(values).enumerate() {
            let cx = x0 + slot * (i as f64 + 0.5);
            if let Some(v) = v {
                let ok = if *higher_better {
                    *v >= *target
                } else {
                    *v <= *target
                };
                let color = if ok { "#3a7d44" } else { "#c0504d" };
                let _ = writeln!(
                    s,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{color}\"/>\
                     <text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{v:.2}</text>",
                    cx - slot * 0.35,
                    y(*v),
                    slot * 0.7,
                    top + ph - y(*v),
                    y(*v) - 3.0
                );
            }
            let _ = writeln!(
                s,
                "<text x=\"{cx}\" y=\"{}\" text-anchor=\"end\" transform=\"rotate(-35 {cx} {})\">{}</text>",
                top + ph + 14.0,
                top + ph + 14.0,
                r.m.name
            );
        }
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\" stroke-dasharray=\"5,4\"/>",
            y(*target),
            x0 + pw,
            y(*target)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn tsv(rows: &[Row]) -> String {
    let mut s = String::new();
    for r in rows {
        let k = &r.k;
        let n = r.m.name;
        let _ = writeln!(s, "{n}\tcompile_s\t{}", k.compile.as_secs_f64());
        let _ = writeln!(s, "{n}\tkiln_best_us\t{}", us(k.host_best));
        let _ = writeln!(s, "{n}\tkiln_median_us\t{}", us(k.host_median));
        let _ = writeln!(s, "{n}\tsteps\t{}", k.kernels);
        let _ = writeln!(s, "{n}\tarena\t{}", k.arena);
        let _ = writeln!(s, "{n}\tliveness_bound\t{}", k.bound);
        let _ = writeln!(s, "{n}\tweights\t{}", k.weights);
        if let Some(b) = &k.board {
            let _ = writeln!(s, "{n}\tm4_instructions\t{}", b.instructions);
            let _ = writeln!(s, "{n}\tflash\t{}", b.flash);
            let _ = writeln!(s, "{n}\tram\t{}", b.ram);
        }
        if let Some(o) = r.ort_us {
            let _ = writeln!(s, "{n}\tort_best_us\t{o}");
        }
        if let Some(t) = r.tinygrad_us {
            let _ = writeln!(s, "{n}\ttinygrad_best_us\t{t}");
        }
        if let Some((t, _)) = r.tflm {
            let _ = writeln!(s, "{n}\ttflm_arena\t{t}");
        }
        if let Some(t) = &r.tflm_image {
            let _ = writeln!(s, "{n}\ttflm_flash\t{}", t.flash);
            let _ = writeln!(s, "{n}\ttflm_ram\t{}", t.ram);
        }
    }
    s
}

const README_START: &str = "<!-- bench:start -->";
const README_END: &str = "<!-- bench:end -->";

/// `readme` with the text between the bench markers replaced by `table`.
pub fn splice_readme(readme: &str, table: &str) -> Option<String> {
    let start = readme.find(README_START)? + README_START.len();
    let end = start + readme[start..].find(README_END)?;
    Some(format!("{}\n{}{}", &readme[..start], table, &readme[end..]))
}

pub fn run(a: Args) -> Result<ExitCode> {
    let dir = a
        .models
        .clone()
        .unwrap_or_else(|| repo_root().join("tests/models/mlperf-tiny"));
    let all = models(&dir);
    let list: Vec<&BenchModel> = all
        .iter()
        .filter(|m| a.only.is_empty() || a.only.iter().any(|o| o == m.name))
        .collect();
    if list.is_empty() {
        bail!(
            "no model matches --only {:?} (known: kws, vww, ic, ad, str_ww, resnet_block)",
            a.only
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
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let refs = if a.no_refs {
        Refs::new()
    } else {
        run_refs(&list, a.runs)?
    };
    let tflm_sizes = parse_tflm_sizes(TFLM_SIZES);
    let mut rows = Vec::new();
    for m in list {
        eprintln!("kiln: {}", m.name);
        let k = measure_kiln(m, a.runs, !a.no_board, a.beam, a.board_beam)
            .with_context(|| format!("benchmarking {}", m.name))?;
        let measured = num(&refs, m.name, "tflm_arena").map(|t| (t as usize, ""));
        let tflm = measured.or(m.published_tflm.map(|t| (t, "*")));
        rows.push(Row {
            m,
            k,
            ort_us: num(&refs, m.name, "ort_best_s").map(|s| s * 1e6),
            tinygrad_us: num(&refs, m.name, "tinygrad_best_s").map(|s| s * 1e6),
            tflm,
            tflm_image: tflm_sizes.get(m.name).cloned(),
        });
    }
    let table = markdown(&rows, &refs, a.runs, a.beam, a.board_beam);
    let md = a.out.join("bench.md");
    std::fs::write(&md, &table).with_context(|| format!("writing {}", md.display()))?;
    std::fs::write(a.out.join("bench.svg"), svg(&rows))?;
    std::fs::write(a.out.join("bench.tsv"), tsv(&rows))?;
    if let Some(path) = &a.readme {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let Some(new) = splice_readme(&text, &table) else {
            bail!(
                "{} has no {README_START} … {README_END} markers",
                path.display()
            );
        };
        std::fs::write(path, new).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{table}");
    println!(
        "wrote {}, {} and {}",
        md.display(),
        a.out.join("bench.svg").display(),
        a.out.join("bench.tsv").display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_the_table_between_the_markers() {
        let readme = "a\n<!-- bench:start -->\nold\n<!-- bench:end -->\nb\n";
        let out = splice_readme(readme, "new\n").unwrap();
        assert_eq!(out, "a\n<!-- bench:start -->\nnew\n<!-- bench:end -->\nb\n");
        assert_eq!(splice_readme("no markers", "x"), None);
    }

    #[test]
    fn reads_the_reference_numbers() {
        let refs = parse_refs("ic\tort_best_s\t0.001\nic\tort_error\tboom: x\ty\n");
        assert_eq!(num(&refs, "ic", "ort_best_s"), Some(0.001));
        assert_eq!(refs["ic"]["ort_error"], "boom: x\ty");
        assert_eq!(num(&refs, "kws", "ort_best_s"), None);
    }

    #[test]
    fn reads_the_tflm_image_sizes() {
        let t =
            parse_tflm_sizes("# c\tomment\nad\t1097068\t8916\tmeasured\nic\tx\t1\tm\nvww\t1\t2\n");
        assert_eq!(t.len(), 1);
        assert_eq!(
            t["ad"],
            TflmImage {
                flash: 1_097_068,
                ram: 8_916,
                source: "measured".into()
            }
        );
        let shipped = parse_tflm_sizes(TFLM_SIZES);
        assert!(["ad", "ic", "vww"].iter().all(|m| shipped.contains_key(*m)));
    }

    #[test]
    fn compares_the_image_with_tflm_and_says_where_its_numbers_come_from() {
        let m = |name| BenchModel {
            name,
            onnx: PathBuf::new(),
            tflite: None,
            published_tflm: None,
        };
        let (ad, kws) = (m("ad"), m("kws"));
        let row = |m, image: Option<TflmImage>| Row {
            m,
            k: KilnNumbers {
                board: Some(BoardNumbers {
                    instructions: 1,
                    flash: 1_000,
                    ram: 300,
                }),
                ..KilnNumbers::default()
            },
            ort_us: None,
            tinygrad_us: None,
            tflm: None,
            tflm_image: image,
        };
        let image = TflmImage {
            flash: 2_000,
            ram: 1_200,
            source: "measured".into(),
        };
        let rows = [row(&ad, Some(image)), row(&kws, None)];
        assert_eq!(rows[0].image_vs_tflm(), Some((0.5, 0.25)));
        assert_eq!(rows[1].image_vs_tflm(), None);
        let md = markdown(&rows, &Refs::new(), 1, 0, false);
        assert!(
            md.contains("| 1,000 | 2,000 | 0.50× | 300 | 1,200 | 0.25× |"),
            "{md}"
        );
        assert!(md.contains("| 1,000 | — | — | 300 | — | — |"), "{md}");
        let note = tflm_image_note(&rows);
        assert!(
            note.contains(&format!("ad: {TFLM_MEASURED}; none for kws.")),
            "{note}"
        );
        assert!(tsv(&rows).contains("ad\ttflm_flash\t2000\nad\ttflm_ram\t1200\n"));
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(6224), "6,224");
        assert_eq!(thousands(52_300_000), "52,300,000");
    }
}

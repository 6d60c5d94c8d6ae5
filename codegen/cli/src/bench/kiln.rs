//! Kiln's side of the benchmark: compile time, host latency, arena, and on the emulated board
//! the instructions per inference, their estimated cycles and the image's flash and RAM (on an
//! int8 model also on the other cores of the speed table, [`super::speed`]); given a
//! reference's inputs and outputs (an int8 model's TFLM vectors), how far Kiln's outputs are
//! from them.

use super::models::BenchModel;
use super::BOARD;
use crate::model::{compile, compile_for, read_inputs, Compiled, MemoryArg, ModelArgs};
use crate::run::{output_diffs, run_on, Tolerance};
use anyhow::Result;
use kiln_codegen::target::Target;
use std::path::Path;
use std::time::{Duration, Instant};

/// What Kiln measured on one model.
#[derive(Default)]
pub struct KilnNumbers {
    pub compile: Duration,
    pub host_best: Duration,
    pub host_median: Duration,
    pub arena: usize,
    pub bound: usize,
    pub weights: usize,
    pub kernels: usize,
    /// The largest difference of the host's outputs from the reference outputs, when given.
    pub host_diff: Option<f64>,
    pub board: Option<BoardNumbers>,
    pub board_error: Option<String>,
    /// The runs on the other boards asked for (the speed table's), each its numbers or its
    /// error as text.
    pub other_boards: Vec<(&'static str, Result<BoardNumbers, String>)>,
    /// The runs with the dot products' operands widened, per widening and board asked for.
    pub wide: Vec<(Widening, &'static str, Result<BoardNumbers, String>)>,
    /// The run on [`BOARD`] with `--memory min`, where the model ran there.
    pub min: Option<Result<BoardNumbers, String>>,
}

/// What a widened run widens: the dot products' int8 weights in flash (`--wide-weights`), the
/// int8 activations they read in the arena (`--wide-activations`), or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Widening {
    Weights,
    Activations,
    Both,
}

impl Widening {
    pub const ALL: [Widening; 3] = [Widening::Weights, Widening::Activations, Widening::Both];

    /// `args` with this widening's options.
    fn args(self, args: ModelArgs) -> ModelArgs {
        ModelArgs {
            wide_weights: self != Widening::Activations,
            wide_activations: self != Widening::Weights,
            ..args
        }
    }

    /// What it widens, in words.
    pub fn label(self) -> &'static str {
        match self {
            Widening::Weights => "weights",
            Widening::Activations => "activations",
            Widening::Both => "both",
        }
    }

    /// The target it compiles for, after its key in `bench.tsv`.
    pub fn key(self) -> &'static str {
        match self {
            Widening::Weights => "wide",
            Widening::Activations => "i16",
            Widening::Both => "wide_i16",
        }
    }
}

impl KilnNumbers {
    /// The numbers of the run on `board` with widening `w`, or its error; `None` where it did
    /// not run there.
    pub fn wide_on(&self, w: Widening, board: &str) -> Option<Result<&BoardNumbers, &str>> {
        let (_, _, run) = self.wide.iter().find(|(x, b, _)| *x == w && *b == board)?;
        Some(run.as_ref().map_err(String::as_str))
    }

    /// The numbers of the run on `board` ([`BOARD`] or one of [`KilnNumbers::other_boards`]),
    /// or its error; `None` where it did not run there.
    pub fn on(&self, board: &str) -> Option<Result<&BoardNumbers, &str>> {
        if board == BOARD {
            return match (&self.board, &self.board_error) {
                (Some(b), _) => Some(Ok(b)),
                (None, Some(e)) => Some(Err(e.as_str())),
                (None, None) => None,
            };
        }
        run_of(&self.other_boards, board)
    }
}

/// The run on `board` among `runs`, its numbers or its error.
fn run_of<'a>(
    runs: &'a [(&'static str, Result<BoardNumbers, String>)],
    board: &str,
) -> Option<Result<&'a BoardNumbers, &'a str>> {
    let (_, run) = runs.iter().find(|(b, _)| *b == board)?;
    Some(run.as_ref().map_err(String::as_str))
}

/// What Kiln measured on an emulated board.
#[derive(Default)]
pub struct BoardNumbers {
    pub instructions: u64,
    /// The kernels' cycles per inference estimated from the core's instruction timings, where
    /// the board's core has an estimate.
    pub cycles: Option<u64>,
    pub flash: usize,
    pub ram: usize,
    /// The largest difference of the board's outputs from the reference outputs, when given.
    pub diff: Option<f64>,
    /// Each kernel call's kernel, in the order a run makes them: its name and its estimated
    /// cycles per inference (empty without an estimate).
    pub steps: Vec<(String, u64)>,
    /// The bundle's arena and the floating-point or integer operations of one inference.
    pub arena: usize,
    pub flops: u64,
}

/// Deterministic inputs from a fixed linear congruential sequence: f32 in [-1, 1), and bytes
/// over their whole range for 1-byte types (int8); zeros for other types.
fn inputs_for(c: &Compiled) -> Vec<Vec<u8>> {
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
                match size {
                    4 => {
                        let v = ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                    1 => out.push((x >> 56) as u8),
                    _ => out.extend(std::iter::repeat_n(0u8, size)),
                }
            }
            out
        })
        .collect()
}

/// Kiln's host timing is split into this many rounds, with the references' rounds between
/// them: both sides see the machine in the same state, which drifts on a shared one.
pub const ROUNDS: usize = 5;

/// Runs between Kiln's timed rounds on the host, given the round's number of inferences.
pub type Between<'a> = &'a mut dyn FnMut(usize) -> Result<()>;

fn best_and_median(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    match v.len() {
        0 => (Duration::ZERO, Duration::ZERO),
        n => (v[0], v[n / 2]),
    }
}

/// What Kiln's side of one model runs.
pub struct Plan<'a> {
    /// Timed host inferences.
    pub runs: usize,
    /// Also once on [`BOARD`] and once on each of `other_boards`.
    pub board: bool,
    pub other_boards: &'a [&'static str],
    /// Boards (of those above) to run on again, once per [`Widening`].
    pub wide_boards: &'a [&'static str],
    /// BEAM width of the measured bundle (0: the hand-coded opts).
    pub beam: usize,
    /// The boards' kernels searched by the board's estimated cycles (else hand-coded).
    pub board_beam: bool,
}

/// Compiles `m` for the host (timed, without search), runs it `p.runs` times there in
/// [`ROUNDS`] rounds with `between` after each and, with `p.board`, on the boards. With
/// `vectors` (a folder of `input_N` and `output_N` tensors) it runs on those inputs and
/// measures how far its outputs are from those outputs; else on [`inputs_for`].
pub fn measure_kiln(
    m: &BenchModel,
    p: &Plan,
    vectors: Option<&Path>,
    between: Between,
) -> Result<KilnNumbers> {
    let Plan {
        runs,
        board,
        other_boards,
        wide_boards,
        beam,
        board_beam,
    } = *p;
    let mut args = ModelArgs::file(m.model.clone());
    // The compile time is without search; with --beam the searched bundle is measured.
    let started = Instant::now();
    let mut c = compile(&args, &Target::host())?;
    let compile_time = started.elapsed();
    if beam > 0 {
        args.beam = beam;
        c = compile(&args, &Target::host())?;
    }
    let inputs = match vectors {
        Some(dir) => read_inputs(dir, &c)?,
        None => inputs_for(&c),
    };
    let mut k = measure_host(&c, &inputs, runs, vectors, between)?;
    k.compile = compile_time;
    if board {
        let args = ModelArgs { beam, ..args };
        match measure_board(BOARD, args.clone(), board_beam, &inputs, vectors)? {
            Ok(b) => k.board = Some(b),
            Err(e) => k.board_error = Some(e),
        }
        let min = ModelArgs {
            memory: MemoryArg::Min,
            ..args.clone()
        };
        k.min = Some(measure_board(BOARD, min, board_beam, &inputs, vectors)?);
        for &other in other_boards {
            let run = measure_board(other, args.clone(), board_beam, &inputs, vectors)?;
            k.other_boards.push((other, run));
        }
        for &wide in wide_boards {
            for w in Widening::ALL {
                let run = measure_board(wide, w.args(args.clone()), board_beam, &inputs, vectors)?;
                k.wide.push((w, wide, run));
            }
        }
    }
    Ok(k)
}

/// The largest difference of `outputs` from the `output_N` tensors in `vectors`, when given.
fn max_diff(c: &Compiled, outputs: &[Vec<u8>], vectors: Option<&Path>) -> Result<Option<f64>> {
    let Some(dir) = vectors else {
        return Ok(None);
    };
    let diffs = output_diffs(c, outputs, dir, Tolerance::DEFAULT)?;
    Ok(Some(diffs.iter().map(|d| d.max_abs).fold(0.0, f64::max)))
}

/// Runs the host bundle `c` `runs` times through the firmware executor, in [`ROUNDS`] rounds
/// with `between` after each; the numbers of its report, its best and median latency, and its
/// outputs' difference from `vectors`'.
fn measure_host(
    c: &Compiled,
    inputs: &[Vec<u8>],
    runs: usize,
    vectors: Option<&Path>,
    between: Between,
) -> Result<KilnNumbers> {
    let per_round = runs.div_ceil(ROUNDS).max(1);
    let mut host = kiln_runners::by_name("host", &Default::default())?;
    let timed = host.time_inferences(&c.bundle, inputs, (ROUNDS, per_round), &mut |n| {
        between(n).map_err(Into::into)
    })?;
    let (times, outputs) = (timed.times, timed.outputs);
    let (host_best, host_median) = best_and_median(times);
    let r = &c.bundle.report;
    Ok(KilnNumbers {
        host_best,
        host_median,
        arena: r.arena_bytes,
        bound: r.arena_lower_bound,
        weights: r.weight_bytes,
        kernels: r.steps.len(),
        host_diff: max_diff(c, &outputs, vectors)?,
        ..KilnNumbers::default()
    })
}

/// Compiles the model for `board` (its kernel target, [`target_for`](crate::run::target_for))
/// and runs it there once: its numbers (with its outputs' difference from `vectors`', and each
/// step's name and estimated cycles), or the run's error as text (a failed compile is an error
/// of the benchmark).
fn measure_board(
    board: &str,
    args: ModelArgs,
    board_beam: bool,
    inputs: &[Vec<u8>],
    vectors: Option<&Path>,
) -> Result<Result<BoardNumbers, String>> {
    // The board has no float vectors: its kernels are plain C (with packed int8 dot products
    // on a DSP core), with their opts searched by the board's estimated cycles (`--board-beam`)
    // or the hand-coded ones.
    let runner = kiln_runners::by_name(board, &Default::default())?;
    let c = match board_beam && args.beam > 0 {
        true => compile_for(&args, runner.as_ref())?,
        false => compile_for(&ModelArgs { beam: 0, ..args }, runner.as_ref())?,
    };
    let ran = match run_on(board, &c, inputs, &Default::default()) {
        Ok(ran) => ran,
        Err(e) => return Ok(Err(format!("{e:#}"))),
    };
    let (flash, ram) = ran.image.unwrap_or((0, 0));
    let per_step = ran
        .cycles
        .as_ref()
        .map(|e| &e.per_step[..])
        .unwrap_or_default();
    let r = &c.bundle.report;
    let names = r.calls.iter().map(|&step| r.steps[step].name.clone());
    Ok(Ok(BoardNumbers {
        instructions: ran.step_cost.iter().sum::<f64>() as u64,
        cycles: ran.cycles.as_ref().map(|e| e.per_step.iter().sum()),
        flash,
        ram,
        diff: max_diff(&c, &ran.outputs, vectors)?,
        steps: names.zip(per_step.iter().copied()).collect(),
        arena: r.arena_bytes,
        flops: r.total_flops(),
    }))
}

//! `kiln compile` and `kiln run`.

mod compare;
pub(crate) mod steps;

use compare::compare_as;
pub use compare::{compare, output_diffs, Tolerance};
pub use kiln_runners::runner::{EstimatedCycles, Ran};

use super::model::BeamCost;
use super::model::{
    compile_for, compile_gpu, compile_with_cost, read_inputs, write_outputs, Compiled, ModelArgs,
};
use anyhow::{bail, Result};
use kiln_codegen::target::Target;
use kiln_runners::{board, Invocation, RunnerOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct CompileArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// What to generate code for: `host` (C for this machine's CPU, its reduces over float
    /// vectors of GCC/Clang), `c` (plain C for any C compiler or a board), `c-dsp` (plain C
    /// with packed int8 dot products for the DSP extension of the Cortex-M4, M7 and M33;
    /// `c-dsp-wide`, `c-dsp-i16` and `c-dsp-wide-i16` with its weights, its activations or both
    /// widened to int16), `c-mve` (the Cortex-M55's: `c-dsp` with Helium's sixteen-lane int8
    /// dot products), `opencl` (OpenCL C) or `vulkan` (GLSL compute and SPIR-V), for the
    /// API's portable limits.
    #[arg(long, default_value = "host")]
    target: String,
    /// The bundle folder to write (replaced whole).
    #[arg(short, long)]
    output: PathBuf,
    /// Also write each kernel's process-replay record (AST, opts, name, source) into this folder.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// With `--beam`: measure the search's candidates by estimated cycles on this emulated board
    /// (`qemu-an386`, …) instead of by wall time on this host (C targets).
    #[arg(long, value_name = "BOARD")]
    board: Option<String>,
}

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Where to run: `host`, an edge GPU API (`opencl`, `vulkan`: this machine's device), or a
    /// board (`qemu-an386`, `qemu-an500`, `qemu-an505`, `qemu-rv32`, `qemu-microbit`,
    /// `qemu-an385-m0`; real boards print their probe-rs command).
    #[arg(long, default_value = "qemu-an386")]
    board: String,
    /// Folder with `input_0.npy` (or `.pb`), `input_1.npy`, … in the model's input order.
    #[arg(long, required_unless_present = "steps", conflicts_with = "steps")]
    inputs: Option<PathBuf>,
    /// A streaming model over a sequence of invocations on one device, its state carried from
    /// each to the next: `DIR/00/inputs/`, `DIR/01/inputs/`, … in order (outputs under
    /// `--outputs`/NN; with `--expect E`, each compared with `E/NN/expected/`). The host and
    /// the emulated boards (semihosting files).
    #[arg(long, value_name = "DIR")]
    steps: Option<PathBuf>,
    /// Folder to write `output_0.npy`, … into.
    #[arg(long)]
    outputs: PathBuf,
    /// Folder with the expected `output_N.npy`/`.pb`: compare, and fail on a mismatch (with
    /// `--steps`, a folder of steps `NN/expected/`).
    #[arg(long)]
    expect: Option<PathBuf>,
    /// Relative tolerance of the comparison of float outputs.
    #[arg(long, default_value_t = Tolerance::DEFAULT.rtol)]
    rtol: f64,
    /// Absolute tolerance of the comparison of float outputs.
    #[arg(long, default_value_t = Tolerance::DEFAULT.atol)]
    atol: f64,
    /// Integer outputs (int8, …) may differ from `--expect` by this many steps (LSBs); they
    /// compare exactly by default, and the largest difference is reported either way.
    #[arg(long, default_value_t = Tolerance::DEFAULT.lsb)]
    lsb: u64,
    /// How tensors move in and out of an emulated board: `files` (semihosting files, the
    /// default), `channel` (the framed test-vector channel on the semihosting console) or `rtt`
    /// (that channel over RTT, read through QEMU's gdbstub: the path real boards take). Real
    /// boards speak RTT only.
    #[arg(long)]
    io: Option<String>,
    /// A real board: the serial number of its debug probe, when several are attached
    /// (`probe-rs list` shows them). Given several times, the model runs on each of those
    /// boards at once, one per probe, its outputs under `--outputs`/SERIAL.
    #[arg(long, value_name = "SERIAL")]
    probe: Vec<String>,
    /// On the host: run the model this many times and report each kernel's best time.
    #[arg(long, default_value_t = 1)]
    runs: usize,
}

pub fn compile_cmd(a: CompileArgs) -> Result<ExitCode> {
    let cpu_target = Target::by_name(&a.target);
    if a.board.is_some() && cpu_target.is_none() {
        bail!("--board measures the BEAM search of C kernels: it needs --target host");
    }
    let c = match (cpu_target, kiln_codegen::gpu::Api::from_name(&a.target)) {
        (Some(target), _) => {
            // Kernels searched on a board are for that board's CPU.
            let (target, cost) = match &a.board {
                Some(name) => {
                    let runner = kiln_runners::by_name(name, &Default::default())?;
                    (runner.target(), BeamCost::of(runner.as_ref())?)
                }
                None => (target, BeamCost::host()?),
            };
            let c = compile_with_cost(&a.model, &target, cost)?;
            c.bundle.write(&a.output)?;
            c
        }
        (_, Some(api)) => {
            let (c, gb) = compile_gpu(&a.model, api, &api.default_limits())?;
            gb.write(&a.output)?;
            c
        }
        (None, None) => bail!(
            "unknown target `{}` (known: {}, opencl, vulkan)",
            a.target,
            Target::CPU_NAMES.join(", ")
        ),
    };
    if let Some(dir) = &a.replay {
        c.bundle.write_replay(dir)?;
    }
    let r = &c.bundle.report;
    println!(
        "{}: {} steps ({} distinct kernels), arena {} B (lower bound {} B{}), weights {} B -> {}",
        a.model.model.display(),
        r.steps.len(),
        r.kernels,
        r.arena_bytes,
        r.arena_lower_bound,
        state_note(r),
        r.weight_bytes,
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The clock the estimated cycles of `core` are turned into time at: the one its best
/// published MLPerf Tiny results were measured at (the benchmark's speed table), if any.
pub(crate) fn reference_mhz(core: board::Core) -> Option<f64> {
    let short = match core {
        board::Core::M4 => "M4",
        board::Core::M33 => "M33",
        board::Core::M7 => "M7",
        board::Core::M55 => "M55",
        board::Core::M0 | board::Core::M3 => return None,
    };
    let cores = crate::bench::speed::CORES;
    cores.iter().find(|c| c.short == short).map(|c| c.mhz)
}

/// `, of which state N B` where the model keeps state between runs.
fn state_note(r: &kiln_codegen::bundle::Report) -> String {
    match r.state_bytes {
        0 => String::new(),
        n => format!(", of which state {n} B kept between runs"),
    }
}

/// The target the kernels of a model run on `board` are generated for (its runner's: this
/// CPU's vectors on the host, the board CPU's, an edge GPU's device).
pub fn target_for(board: &str) -> Result<Target> {
    Ok(kiln_runners::by_name(board, &Default::default())?.target())
}

/// Runs `work` with a spinner that shows the runner's progress, then prints what the runner
/// had to say of the run.
fn with_spinner<T>(
    work: impl FnOnce(&mut dyn FnMut(&str)) -> Result<T, kiln_runners::RunError>,
    notes: impl Fn(&T) -> Vec<String>,
) -> Result<T> {
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    let done = work(&mut |m| spinner.set_message(m.to_string()));
    spinner.finish_and_clear();
    let done = done?;
    for line in notes(&done) {
        println!("{line}");
    }
    Ok(done)
}

/// Runs a compiled model once on `board` (a name [`kiln_runners::by_name`] knows).
pub fn run_on(
    board: &str,
    c: &Compiled,
    inputs: &[Vec<u8>],
    options: &RunnerOptions,
) -> Result<Ran> {
    let mut runner = kiln_runners::by_name(board, options)?;
    with_spinner(
        |progress| runner.run(&c.bundle, inputs, progress),
        |ran| ran.notes.clone(),
    )
}

/// Makes each invocation in order on one device, the model's state carried from each run to
/// the next: each run's outputs and costs.
pub fn run_stream_on(
    board: &str,
    c: &Compiled,
    invocations: &[Invocation<'_>],
    options: &RunnerOptions,
) -> Result<Vec<Ran>> {
    let mut runner = kiln_runners::by_name(board, options)?;
    with_spinner(
        |progress| runner.run_stream(&c.bundle, invocations, progress),
        |runs| runs.first().map(|r| r.notes.clone()).unwrap_or_default(),
    )
}

/// Prints the per-kernel cost table and the memory use; with estimated cycles, their column
/// and a line under the table saying where they come from.
pub fn print_costs(c: &Compiled, ran: &Ran) {
    let cycles = ran.cycles.as_ref();
    let column = |n: Option<u64>| match (cycles, n) {
        (None, _) => String::new(),
        (Some(_), Some(n)) => format!(" {n:>14}"),
        (Some(_), None) => format!(" {:>14}", ""),
    };
    println!(
        "{:>4}  {:<40} {:>12} {:>14}{}",
        "step",
        "kernel",
        "FLOPs",
        ran.unit,
        match cycles {
            Some(_) => format!(" {:>14}", "est. cycles"),
            None => String::new(),
        }
    );
    let steps = &c.bundle.report.steps;
    for (i, (k, cost)) in steps.iter().zip(&ran.step_cost).enumerate() {
        let n = cycles.and_then(|e| e.per_step.get(i).copied());
        println!(
            "{:>4}  {:<40} {:>12} {:>14.0}{}",
            k.step,
            k.name,
            k.flops,
            cost,
            column(n)
        );
    }
    let total: f64 = ran.step_cost.iter().sum();
    let total_cycles = cycles.map(|e| e.per_step.iter().sum::<u64>());
    println!(
        "{:>4}  {:<40} {:>12} {:>14.0}{}",
        "",
        "total",
        c.bundle.report.total_flops(),
        total,
        column(total_cycles)
    );
    if let (Some(e), Some(n)) = (cycles, total_cycles) {
        let time = reference_mhz(e.core)
            .map(|mhz| format!("; {:.2} ms at {mhz} MHz", crate::bench::speed::ms(n, mhz)))
            .unwrap_or_default();
        println!("est. cycles: an estimate from {}{time}", e.core.source());
    }
    let r = &c.bundle.report;
    print!(
        "arena {} B (liveness lower bound {} B{}), weights {} B",
        r.arena_bytes,
        r.arena_lower_bound,
        state_note(r),
        r.weight_bytes
    );
    match ran.image {
        Some((flash, ram)) => println!(", image flash {flash} B, static RAM {ram} B"),
        None => println!(),
    }
}

/// The options of a run: `--io` and `--probe` checked against the board, `--runs`.
fn options(a: &RunArgs) -> Result<RunnerOptions> {
    Ok(RunnerOptions {
        runs: a.runs,
        ..RunnerOptions::for_place(&a.board, a.io.as_deref(), &a.probe)?
    })
}

pub fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    let options = options(&a)?;
    let inputs_dir = match (&a.steps, &a.inputs) {
        (Some(dir), _) => return steps::run_steps(&a, dir, &options),
        (None, Some(dir)) => dir.clone(),
        (None, None) => bail!("--inputs or --steps: the model's inputs"),
    };
    let mut runner = kiln_runners::by_name(&a.board, &options)?;
    let c = compile_for(&a.model, runner.as_ref())?;
    let inputs = read_inputs(&inputs_dir, &c)?;
    if a.probe.len() > 1 {
        return run_on_boards(&a, &options, &c, &inputs);
    }
    let ran = with_spinner(
        |progress| runner.run(&c.bundle, &inputs, progress),
        |ran| ran.notes.clone(),
    )?;
    report(&a, &a.outputs, &c, &ran)
}

/// Writes the outputs, prints the costs, and compares with `--expect`: exit code 0, or 1 on a
/// mismatch.
fn report(a: &RunArgs, outputs: &Path, c: &Compiled, ran: &Ran) -> Result<ExitCode> {
    write_outputs(outputs, c, &ran.outputs)?;
    print_costs(c, ran);
    if c.bundle.report.state_bytes > 0 {
        println!(
            "the model keeps {} B of state between runs: this run started from its initial \
             values (--steps runs a sequence)",
            c.bundle.report.state_bytes
        );
    }
    match &a.expect {
        Some(e) => {
            let tol = Tolerance {
                rtol: a.rtol,
                atol: a.atol,
                lsb: a.lsb,
            };
            match compare(c, &ran.outputs, e, tol)? {
                true => Ok(ExitCode::SUCCESS),
                false => Ok(ExitCode::from(1)),
            }
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// `kiln run` on several real boards at once, one per `--probe`: each board's runner, in
/// parallel, each reported (outputs under `--outputs`/SERIAL). Exit code 2 if a board failed,
/// else 1 if one mismatched.
fn run_on_boards(
    a: &RunArgs,
    options: &RunnerOptions,
    c: &Compiled,
    inputs: &[Vec<u8>],
) -> Result<ExitCode> {
    let runs: Vec<Result<Ran>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (a.probe.iter())
            .map(|serial| {
                let options = RunnerOptions {
                    probes: vec![serial.clone()],
                    ..options.clone()
                };
                let board = a.board.as_str();
                scope.spawn(move || {
                    let mut runner = kiln_runners::by_name(board, &options)?;
                    let ran = runner.run(&c.bundle, inputs, &mut |_| {})?;
                    Ok(ran)
                })
            })
            .collect();
        let joined = threads.into_iter().map(|t| t.join());
        joined
            .map(|r| r.unwrap_or_else(|_| bail!("a board's thread panicked")))
            .collect()
    });
    let mut code = ExitCode::SUCCESS;
    for (serial, ran) in a.probe.iter().zip(runs) {
        println!("== {} on probe {serial}", a.board);
        let ran = match ran {
            Ok(ran) => ran,
            Err(e) => {
                eprintln!("error: {e:#}");
                code = ExitCode::from(2);
                continue;
            }
        };
        ran.notes.iter().for_each(|line| println!("{line}"));
        let mine = report(a, &a.outputs.join(serial), c, &ran)?;
        if mine != ExitCode::SUCCESS && code == ExitCode::SUCCESS {
            code = mine;
        }
    }
    Ok(code)
}

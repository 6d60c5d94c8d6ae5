//! `kiln compile` and `kiln run`.

mod compare;
pub(crate) mod steps;

use compare::compare_as;
pub use compare::{compare, output_diffs, Tolerance};

use super::model::BeamCost;
use super::model::{
    compile_gpu, compile_with_cost, read_inputs, write_outputs, Compiled, ModelArgs,
};
use anyhow::{bail, Context, Result};
use kiln_codegen::target::Target;
use kiln_runners::{board, Invocation};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct CompileArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// What to generate code for: `host` (C for this machine's CPU, its reduces over float
    /// vectors of GCC/Clang), `c` (plain C for any C compiler or a board), `c-dsp` (plain C
    /// with packed int8 dot products for the DSP extension of the Cortex-M4, M7 and M33),
    /// `opencl` (OpenCL C) or `vulkan` (GLSL compute and SPIR-V), for the API's portable limits.
    #[arg(long, default_value = "host")]
    target: String,
    /// The bundle folder to write (replaced whole).
    #[arg(short, long)]
    output: PathBuf,
    /// Also write each kernel's process-replay record (AST, opts, name, source) into this folder.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// With `--beam`: measure the search's candidates by instructions on this emulated board
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
                Some(name) => (target_for(name), board_cost(name)?),
                None => (target, BeamCost::Host),
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
            "unknown target `{}` (known: host, c, c-dsp, opencl, vulkan)",
            a.target
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

/// The BEAM cost of running on board `name`: instructions on it, under QEMU (a real board
/// cannot be measured here: an error).
fn board_cost(name: &str) -> Result<BeamCost> {
    let info = board::info(name)?;
    if !info.emulated {
        bail!("{name} is not emulated: a BEAM search cannot measure kernels on it");
    }
    Ok(BeamCost::Board(info))
}

/// The result of running a compiled model somewhere: outputs and per-step cost.
pub struct Ran {
    pub outputs: Vec<Vec<u8>>,
    /// Per step: a cost and its unit (`us` on the host, `instructions` on an emulated board).
    pub step_cost: Vec<f64>,
    pub unit: &'static str,
    /// Flash and RAM of the board image, when there is one.
    pub image: Option<(usize, usize)>,
    /// Per step, the cycles estimated for the board's core, when it has an estimate.
    pub cycles: Option<EstimatedCycles>,
}

/// Each step's cycles on an emulated board's core, estimated by the instruction-count plugin
/// from the core's published instruction timings (see [`board::Core`]).
pub struct EstimatedCycles {
    pub core: board::Core,
    pub per_step: Vec<u64>,
}

/// The clock the estimated cycles of `core` are turned into time at: the one its best
/// published MLPerf Tiny results were measured at (the benchmark's speed table), if any.
pub(crate) fn reference_mhz(core: board::Core) -> Option<f64> {
    let short = match core {
        board::Core::M4 => "M4",
        board::Core::M33 => "M33",
        board::Core::M7 => "M7",
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

/// The target a board's kernels are generated for: this CPU's vectors on the host, plain C
/// on a microcontroller, with packed int8 dot products where its core has the DSP extension
/// (an unknown board: plain C, and running it says why it is unknown).
pub fn target_for(board: &str) -> Target {
    if board == "host" {
        return Target::host();
    }
    board::info(board).map_or_else(|_| Target::c(), |info| info.kernel_target())
}

/// Where on a board a run goes: how tensors travel to an emulated board, and which probe a real
/// one is wired to (`None`: the only one attached).
#[derive(Clone, Debug, Default)]
pub struct Place {
    pub io: board::Io,
    #[cfg_attr(not(feature = "probe"), allow(dead_code))]
    pub probe: Option<String>,
    /// On the host, each step's time is the best of this many runs (0 or 1: one run).
    pub runs: usize,
}

/// How long a board may take to run a model.
const BOARD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Runs a compiled model on `board` (`host` or a board folder's name: emulated, or real
/// through a debug probe).
pub fn run_on(board: &str, c: &Compiled, inputs: &[Vec<u8>], place: &Place) -> Result<Ran> {
    if board == "host" {
        let dir = tempfile::tempdir().context("a temporary folder for the bundle")?;
        let bundle_dir = dir.path().join("bundle");
        c.bundle.write(&bundle_dir)?;
        let lib = kiln_runners::host::compile(&bundle_dir)?;
        let run = kiln_runners::host::run_best_steps(&c.bundle, &lib, inputs, place.runs)?;
        return Ok(Ran::on_host(run));
    }
    let mut runs = run_stream_on(board, c, &[Invocation::Run(inputs)], place)?;
    Ok(runs.pop().expect("one run"))
}

/// Makes each invocation in order on one device, the model's state carried from each run to
/// the next: on the host, on an emulated board (over `place`'s I/O), or on a real one through
/// its debug probe. Each run's outputs and costs.
pub fn run_stream_on(
    board: &str,
    c: &Compiled,
    invocations: &[Invocation<'_>],
    place: &Place,
) -> Result<Vec<Ran>> {
    let dir = tempfile::tempdir().context("a temporary folder for the bundle")?;
    let bundle_dir = dir.path().join("bundle");
    if board == "host" {
        c.bundle.write(&bundle_dir)?;
        let lib = kiln_runners::host::compile(&bundle_dir)?;
        let runs = kiln_runners::host::run_invocations(&c.bundle, &lib, invocations)?;
        return Ok(runs.into_iter().map(Ran::on_host).collect());
    }
    let info = board::info(board)?;
    let fit = board::check_fits(&info, &c.bundle)?;
    if !info.emulated {
        find_probe(&info, place)?;
    }
    c.bundle.write(&bundle_dir)?;
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    let io = place.io;
    let options = board::BuildOptions {
        rtt: io == board::Io::Rtt,
        ..Default::default()
    };
    let image = board::build_with_options(&info, &bundle_dir, options, &mut |m| {
        spinner.set_message(format!("{board}: {m}"))
    })?;
    let runs = if info.emulated {
        spinner.set_message(format!("{board}: running under QEMU"));
        let options = board::RunOptions { io };
        let runs = board::run_invocations_with_options(
            &info,
            &image,
            invocations,
            BOARD_TIMEOUT,
            options,
        )?;
        let ran = |r| Ran::on_emulated(r, &c.bundle.report, &info, &image);
        runs.into_iter().map(ran).collect()
    } else {
        spinner.set_message(format!("{board}: flashing through the debug probe"));
        run_on_probe(&info, &image, invocations, place, &c.bundle.report)?
    };
    spinner.finish_and_clear();
    println!("{fit}");
    Ok(runs)
}

impl Ran {
    /// A run on an edge GPU: each step's device time in microseconds.
    pub fn on_gpu(run: kiln_runners::gpu::GpuRun, report: &kiln_codegen::bundle::Report) -> Ran {
        let times = run.step_times.iter().map(|d| d.as_secs_f64() * 1e6);
        Ran {
            outputs: run.outputs,
            step_cost: per_step(report, times),
            unit: "us (device)",
            image: None,
            cycles: None,
        }
    }

    /// A host run: each step's time in microseconds.
    pub fn on_host(run: kiln_runners::host::HostRun) -> Ran {
        Ran {
            outputs: run.outputs,
            step_cost: run
                .step_times
                .iter()
                .map(|d| d.as_secs_f64() * 1e6)
                .collect(),
            unit: "us",
            image: None,
            cycles: None,
        }
    }

    /// A run on an emulated board: each step's instructions, and its estimated cycles where
    /// the board's core has an estimate.
    pub fn on_emulated(
        run: board::BoardRun,
        report: &kiln_codegen::bundle::Report,
        info: &board::BoardInfo,
        image: &board::BuiltImage,
    ) -> Ran {
        let step_cost = per_step(report, run.step_instructions.iter().map(|&n| n as f64));
        let cycles = match board::Core::of(info) {
            Some(core) if run.step_cycles.len() == run.step_instructions.len() => {
                Some(EstimatedCycles {
                    core,
                    per_step: per_step(report, run.step_cycles.iter().copied()),
                })
            }
            _ => None,
        };
        Ran {
            outputs: run.outputs,
            step_cost,
            unit: "instructions",
            image: Some((image.flash_used, image.ram_used)),
            cycles,
        }
    }
}

/// Per-call costs (loops unrolled) summed per step; costs already per step stay as they are.
fn per_step<T: Copy + Default + std::ops::AddAssign>(
    report: &kiln_codegen::bundle::Report,
    per_call: impl Iterator<Item = T>,
) -> Vec<T> {
    let per_call: Vec<T> = per_call.collect();
    if per_call.len() != report.calls.len() || report.calls.len() == report.steps.len() {
        return per_call;
    }
    let mut steps = vec![T::default(); report.steps.len()];
    for (&step, cost) in report.calls.iter().zip(per_call) {
        steps[step] += cost;
    }
    steps
}

/// Runs an image's invocations on a real board through a debug probe: each step's cost is the
/// cycles its counter measured (DWT, or SysTick on a Cortex-M0+).
#[cfg(feature = "probe")]
fn run_on_probe(
    info: &board::BoardInfo,
    image: &board::BuiltImage,
    invocations: &[Invocation<'_>],
    place: &Place,
    report: &kiln_codegen::bundle::Report,
) -> Result<Vec<Ran>> {
    let options = board::probe::ProbeOptions {
        serial: place.probe.clone(),
        timeout: BOARD_TIMEOUT,
    };
    let (probe, runs) = board::probe::stream(info, image, invocations, &options)?;
    println!("{}: ran through {probe}", info.name);
    let ran = |run: board::channel::ChannelRun| Ran {
        step_cost: per_step(report, run.step_cycles.iter().map(|&n| f64::from(n))),
        outputs: run.outputs,
        unit: "cycles",
        image: Some((image.flash_used, image.ram_used)),
        cycles: None,
    };
    Ok(runs.into_iter().map(ran).collect())
}

/// Checks, before a build, that the probe a real board runs through is attached.
#[cfg(feature = "probe")]
fn find_probe(info: &board::BoardInfo, place: &Place) -> Result<()> {
    board::probe::find(&info.name, place.probe.as_deref())?;
    Ok(())
}

#[cfg(not(feature = "probe"))]
fn find_probe(info: &board::BoardInfo, _: &Place) -> Result<()> {
    let board = info.name.clone();
    Err(board::BoardError::NoProbeSupport { board }.into())
}

#[cfg(not(feature = "probe"))]
fn run_on_probe(
    info: &board::BoardInfo,
    _: &board::BuiltImage,
    _: &[Invocation<'_>],
    _: &Place,
    _: &kiln_codegen::bundle::Report,
) -> Result<Vec<Ran>> {
    let board = info.name.clone();
    Err(board::BoardError::NoProbeSupport { board }.into())
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

/// The `--io` and `--probe` of a run, checked against the board: a real board speaks RTT
/// only, an emulated one has no probe.
fn place(a: &RunArgs) -> Result<Place> {
    let real = board::info(&a.board).is_ok_and(|info| !info.emulated);
    let io = match a.io.as_deref() {
        None if real => board::Io::Rtt,
        None => board::Io::Files,
        Some(name) => match board::Io::from_name(name) {
            Some(io) if real && io != board::Io::Rtt => {
                bail!(
                    "{} is a real board: it speaks RTT only, not --io {name}",
                    a.board
                )
            }
            Some(io) => io,
            None => bail!("unknown --io `{name}` (files, channel or rtt)"),
        },
    };
    if !a.probe.is_empty() && !real {
        bail!(
            "--probe names a debug probe, and {} is not a real board",
            a.board
        );
    }
    Ok(Place {
        io,
        probe: a.probe.first().cloned(),
        runs: a.runs,
    })
}

pub fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    let place = place(&a)?;
    let inputs_dir = match (&a.steps, &a.inputs) {
        (Some(dir), _) => return steps::run_steps(&a, dir, &place),
        (None, Some(dir)) => dir.clone(),
        (None, None) => bail!("--inputs or --steps: the model's inputs"),
    };
    let (c, ran) = match kiln_codegen::gpu::Api::from_name(&a.board) {
        Some(api) => {
            let (c, gb) = compile_gpu(&a.model, api, &kiln_runners::gpu::device_limits(api)?)?;
            let inputs = read_inputs(&inputs_dir, &c)?;
            let run = kiln_runners::gpu::run(&gb, &inputs, 3)?;
            println!("device: {}", run.device);
            let ran = Ran::on_gpu(run, &c.bundle.report);
            (c, ran)
        }
        None => {
            let cost = match a.board.as_str() {
                "host" => BeamCost::Host,
                name if a.model.beam > 0 => board_cost(name)?,
                _ => BeamCost::Host,
            };
            let c = compile_with_cost(&a.model, &target_for(&a.board), cost)?;
            let inputs = read_inputs(&inputs_dir, &c)?;
            if a.probe.len() > 1 {
                return run_on_boards(&a, &c, &inputs);
            }
            let ran = run_on(&a.board, &c, &inputs, &place)?;
            (c, ran)
        }
    };
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

/// `kiln run` on several real boards at once, one per `--probe`: one image, flashed and run on
/// each board in parallel, each reported (outputs under `--outputs`/SERIAL). Exit code 2 if a
/// board failed, else 1 if one mismatched.
fn run_on_boards(a: &RunArgs, c: &Compiled, inputs: &[Vec<u8>]) -> Result<ExitCode> {
    let info = board::info(&a.board)?;
    let fit = board::check_fits(&info, &c.bundle)?;
    for serial in &a.probe {
        let place = Place {
            io: board::Io::Rtt,
            probe: Some(serial.clone()),
            runs: 1,
        };
        find_probe(&info, &place)?;
    }
    let dir = tempfile::tempdir().context("a temporary folder for the bundle")?;
    let bundle_dir = dir.path().join("bundle");
    c.bundle.write(&bundle_dir)?;
    let image = board::build_with_options(&info, &bundle_dir, Default::default(), &mut |_| {})?;
    println!("{fit}");
    let runs: Vec<Result<Ran>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (a.probe.iter())
            .map(|serial| {
                let place = Place {
                    io: board::Io::Rtt,
                    probe: Some(serial.clone()),
                    runs: 1,
                };
                let (info, image) = (&info, &image);
                let report = &c.bundle.report;
                scope.spawn(move || {
                    let runs =
                        run_on_probe(info, image, &[Invocation::Run(inputs)], &place, report);
                    runs.map(|mut runs| runs.pop().expect("one run"))
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
        let mine = report(a, &a.outputs.join(serial), c, &ran)?;
        if mine != ExitCode::SUCCESS && code == ExitCode::SUCCESS {
            code = mine;
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_codegen::bundle::report::KernelLine;

    #[test]
    fn per_call_costs_add_up_per_step() {
        let line = |step| KernelLine {
            step,
            name: format!("k{step}"),
            flops: 1,
            bytes: 1,
            runs: 1,
        };
        let report = kiln_codegen::bundle::Report {
            model: "m".into(),
            steps: vec![line(0), line(1), line(2)],
            calls: vec![0, 1, 1, 1, 2],
            kernels: 3,
            arena_bytes: 0,
            arena_lower_bound: 0,
            state_bytes: 0,
            weight_bytes: 0,
            inputs: vec![],
            outputs: vec![],
            states: vec![],
        };
        assert_eq!(per_step(&report, [1u64, 2, 3, 4, 5].into_iter()), [1, 9, 5]);
        // Already per step (the host's timer, the channel's cycles): unchanged.
        assert_eq!(per_step(&report, [7u64, 8, 9].into_iter()), [7, 8, 9]);
    }
}

//! The runners: the host, a board, an edge GPU.

use super::{
    per_step, Case, CaseOutcome, EstimatedCycles, Measure, Ran, RunError, Runner, RunnerOptions,
    Timed,
};
use crate::board::{self, BatchIo, BoardInfo, BuiltImage, Io};
use crate::gpu::GpuRun;
use crate::host::{self, HostRun, HostWallTime};
use crate::Invocation;
use kiln_codegen::bundle::{Bundle, Report};
use kiln_codegen::gpu::{from_bundle, Api};
use kiln_codegen::target::{DeviceLimits, Target};
use std::path::PathBuf;
use std::time::Duration;

/// The bundle written to a fresh temporary folder: the folder (removed when dropped) and the
/// bundle's path in it.
fn written(bundle: &Bundle) -> Result<(tempfile::TempDir, PathBuf), RunError> {
    let dir = tempfile::tempdir().map_err(RunError::TempDir)?;
    let bundle_dir = dir.path().join("bundle");
    bundle.write(&bundle_dir)?;
    Ok((dir, bundle_dir))
}

/// This machine: the kernels compiled by its C compiler and run in this process.
pub struct HostRunner {
    /// Each step's time is the best of this many runs (a single run's noise on a shared
    /// machine).
    pub runs: usize,
    /// The C compiler's optimization flags.
    pub opt: &'static str,
}

impl HostRunner {
    pub fn new(options: &RunnerOptions) -> HostRunner {
        HostRunner {
            runs: options.runs,
            opt: if options.quick { "-O1" } else { host::HOST_OPT },
        }
    }

    /// The bundle written to a fresh temporary folder and its kernels compiled there: the
    /// folder (removed when dropped) and the kernels' library.
    fn compiled(&self, bundle: &Bundle) -> Result<(tempfile::TempDir, PathBuf), RunError> {
        let (dir, bundle_dir) = written(bundle)?;
        let lib = host::build_library_with(&bundle_dir, self.opt)?;
        Ok((dir, lib))
    }

    fn ran(run: HostRun) -> Ran {
        Ran {
            outputs: run.outputs,
            step_cost: run.step_times.iter().map(micros).collect(),
            unit: "us",
            image: None,
            cycles: None,
            notes: Vec::new(),
        }
    }
}

fn micros(d: &Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl Runner for HostRunner {
    fn name(&self) -> &str {
        "host"
    }

    fn target(&self) -> Target {
        Target::host()
    }

    fn measure(&self) -> Option<Measure> {
        Some(Measure {
            model: Box::new(HostWallTime),
            by: "wall time on this host".into(),
        })
    }

    fn run_stream(
        &mut self,
        bundle: &Bundle,
        invocations: &[Invocation<'_>],
        _: &mut dyn FnMut(&str),
    ) -> Result<Vec<Ran>, RunError> {
        let (_dir, lib) = self.compiled(bundle)?;
        let runs = host::run_invocations(bundle, &lib, invocations)?;
        Ok(runs.into_iter().map(HostRunner::ran).collect())
    }

    fn run(
        &mut self,
        bundle: &Bundle,
        inputs: &[Vec<u8>],
        _: &mut dyn FnMut(&str),
    ) -> Result<Ran, RunError> {
        let (_dir, lib) = self.compiled(bundle)?;
        Ok(HostRunner::ran(host::run_best_steps(
            bundle, &lib, inputs, self.runs,
        )?))
    }

    fn time_inferences(
        &mut self,
        bundle: &Bundle,
        inputs: &[Vec<u8>],
        (rounds, per_round): (usize, usize),
        between: &mut dyn FnMut(usize) -> Result<(), kiln_codegen::error::Cause>,
    ) -> Result<Timed, RunError> {
        let (_dir, lib) = self.compiled(bundle)?;
        let mut timed = Timed {
            outputs: Vec::new(),
            times: Vec::with_capacity(rounds * per_round),
        };
        for round in 0..rounds {
            let run = host::run_repeated(bundle, &lib, inputs, per_round)?;
            timed.times.extend(run.run_times);
            if round == 0 {
                timed.outputs = run.outputs;
            }
            between(per_round).map_err(RunError::Between)?;
        }
        Ok(timed)
    }
}

/// A board: emulated under QEMU (each step's instructions, and cycles estimated for its core),
/// or real, flashed through a debug probe (each step's cycles as its counter measured them).
pub struct BoardRunner {
    pub info: BoardInfo,
    pub options: RunnerOptions,
}

impl BoardRunner {
    /// The runner of `info`'s board; `options` must suit it (see
    /// [`RunnerOptions::for_place`]).
    pub fn new(info: BoardInfo, options: &RunnerOptions) -> Result<BoardRunner, RunError> {
        let refuse = |why: &str| RunError::Options(format!("{}: {why}", info.name));
        if !info.emulated && options.io != Io::Rtt {
            return Err(refuse("a real board speaks RTT only"));
        }
        if info.emulated && !options.probes.is_empty() {
            return Err(refuse("an emulated board has no debug probe"));
        }
        Ok(BoardRunner {
            info,
            options: options.clone(),
        })
    }

    /// How a batch of models reaches an emulated board: semihosting files or RTT.
    fn emulated_batch_io(&self) -> Result<BatchIo, RunError> {
        match self.options.io {
            Io::Files => Ok(BatchIo::Files),
            Io::Rtt => Ok(BatchIo::Rtt),
            Io::Channel => Err(RunError::Unsupported {
                runner: self.info.name.clone(),
                what: "run a batch of models over the semihosting channel (files or rtt can)",
            }),
        }
    }

    /// A run under QEMU: each step's instructions, and its estimated cycles where the board's
    /// core has an estimate.
    fn emulated(&self, run: board::BoardRun, report: &Report, image: &BuiltImage) -> Ran {
        let step_cost = per_step(report, run.step_instructions.iter().map(|&n| n as f64));
        let cycles = match board::Core::of(&self.info) {
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
            notes: Vec::new(),
        }
    }
}

impl Runner for BoardRunner {
    fn name(&self) -> &str {
        &self.info.name
    }

    fn target(&self) -> Target {
        self.info.kernel_target()
    }

    fn measure(&self) -> Option<Measure> {
        let board = self.info.clone();
        self.info.emulated.then(|| Measure {
            by: format!("{} on {}", board::measure::cost_unit(&board), board.name),
            model: Box::new(board::measure::BoardCost { board }),
        })
    }

    fn run_stream(
        &mut self,
        bundle: &Bundle,
        invocations: &[Invocation<'_>],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<Ran>, RunError> {
        let fit = board::check_fits(&self.info, bundle)?;
        if !self.info.emulated {
            find_probe(&self.info, self.options.probe())?;
        }
        let (_dir, bundle_dir) = written(bundle)?;
        let options = board::BuildOptions {
            rtt: self.options.io == Io::Rtt,
            ..Default::default()
        };
        let name = self.info.name.clone();
        let image = board::build_with_options(&self.info, &bundle_dir, options, &mut |m| {
            progress(&format!("{name}: {m}"))
        })?;
        let mut runs: Vec<Ran> = if self.info.emulated {
            progress(&format!("{name}: running under QEMU"));
            let options = board::RunOptions {
                io: self.options.io,
            };
            let runs = board::run_invocations_with_options(
                &self.info,
                &image,
                invocations,
                self.options.timeout,
                options,
            )?;
            let ran = |r| self.emulated(r, &bundle.report, &image);
            runs.into_iter().map(ran).collect()
        } else {
            progress(&format!("{name}: flashing through the debug probe"));
            probe::stream(self, &image, invocations, &bundle.report)?
        };
        if let Some(first) = runs.first_mut() {
            first.notes.insert(0, fit.to_string());
        }
        Ok(runs)
    }

    fn ready(&self) -> Result<(), RunError> {
        self.options.check_probes(&self.info)
    }

    fn batches(&self) -> bool {
        true
    }

    fn run_cases(
        &mut self,
        cases: &[Case<'_>],
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<Vec<CaseOutcome>, RunError> {
        // A real board's batches go through its probes, shared between them where several.
        Ok(match self.info.emulated {
            true => {
                let io = self.emulated_batch_io()?;
                board::run_batches_with(&self.info, cases, &io, progress)?
            }
            false => {
                board::run_batches_on_probes(&self.info, cases, &self.options.probes, progress)?
            }
        })
    }
}

/// Checks, before a build, that the probe a real board runs through is attached.
pub(super) fn find_probe(info: &BoardInfo, serial: Option<&str>) -> Result<(), RunError> {
    probe::find(info, serial)
}

/// Real boards, through a debug probe (the `probe` feature).
#[cfg(feature = "probe")]
mod probe {
    use super::*;

    /// Checks, before a build, that the probe the board runs through is attached.
    pub fn find(info: &BoardInfo, serial: Option<&str>) -> Result<(), RunError> {
        board::probe::find(&info.name, serial)?;
        Ok(())
    }

    /// Runs an image's invocations on a real board: each step's cost is the cycles its
    /// counter measured (DWT, or SysTick on a Cortex-M0+).
    pub fn stream(
        runner: &BoardRunner,
        image: &BuiltImage,
        invocations: &[Invocation<'_>],
        report: &Report,
    ) -> Result<Vec<Ran>, RunError> {
        let options = board::probe::ProbeOptions {
            serial: runner.options.probe().map(String::from),
            timeout: runner.options.timeout,
        };
        let (probe, runs) = board::probe::stream(&runner.info, image, invocations, &options)?;
        let note = format!("{}: ran through {probe}", runner.info.name);
        let ran = |run: board::channel::ChannelRun| Ran {
            step_cost: per_step(report, run.step_cycles.iter().map(|&n| f64::from(n))),
            outputs: run.outputs,
            unit: "cycles",
            image: Some((image.flash_used, image.ram_used)),
            cycles: None,
            notes: vec![note.clone()],
        };
        Ok(runs.into_iter().map(ran).collect())
    }
}

/// Without the `probe` feature, a real board cannot be reached.
#[cfg(not(feature = "probe"))]
mod probe {
    use super::*;

    pub fn find(info: &BoardInfo, _: Option<&str>) -> Result<(), RunError> {
        let board = info.name.clone();
        Err(board::BoardError::NoProbeSupport { board }.into())
    }

    pub fn stream(
        runner: &BoardRunner,
        _: &BuiltImage,
        _: &[Invocation<'_>],
        _: &Report,
    ) -> Result<Vec<Ran>, RunError> {
        find(&runner.info, None).map(|()| Vec::new())
    }
}

/// This machine's device of an edge GPU interface: each step's device time.
pub struct GpuRunner {
    pub api: Api,
    pub limits: DeviceLimits,
    /// Each step's time is the best of this many runs (the first may include the driver's
    /// compilation).
    pub runs: usize,
}

impl GpuRunner {
    /// The runner of `api`'s device on this machine (an error where there is none).
    pub fn new(api: Api, runs: usize) -> Result<GpuRunner, RunError> {
        Ok(GpuRunner {
            api,
            limits: crate::gpu::device_limits(api)?,
            runs,
        })
    }

    fn ran(run: GpuRun, report: &Report) -> Ran {
        let notes = vec![format!("device: {}", run.device)];
        Ran {
            step_cost: per_step(report, run.step_times.iter().map(micros)),
            outputs: run.outputs,
            unit: "us (device)",
            image: None,
            cycles: None,
            notes,
        }
    }

    /// The bundle (compiled for this runner's target) with its GPU kernels; the runtimes
    /// check them against the device.
    fn gpu_bundle(&self, bundle: &Bundle) -> Result<kiln_codegen::gpu::GpuBundle, RunError> {
        Ok(from_bundle(self.api, bundle.clone()).map_err(crate::gpu::DeviceError::from)?)
    }
}

impl Runner for GpuRunner {
    fn name(&self) -> &str {
        self.api.name()
    }

    fn target(&self) -> Target {
        self.api.target(&self.limits)
    }

    fn run_stream(
        &mut self,
        bundle: &Bundle,
        invocations: &[Invocation<'_>],
        _: &mut dyn FnMut(&str),
    ) -> Result<Vec<Ran>, RunError> {
        let runs = crate::gpu::run_invocations(&self.gpu_bundle(bundle)?, invocations)?;
        Ok(runs
            .into_iter()
            .map(|r| GpuRunner::ran(r, &bundle.report))
            .collect())
    }

    fn run(
        &mut self,
        bundle: &Bundle,
        inputs: &[Vec<u8>],
        _: &mut dyn FnMut(&str),
    ) -> Result<Ran, RunError> {
        let run = crate::gpu::run(&self.gpu_bundle(bundle)?, inputs, self.runs)?;
        Ok(GpuRunner::ran(run, &bundle.report))
    }
}

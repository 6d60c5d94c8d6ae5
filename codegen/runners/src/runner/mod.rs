//! One face for every place a compiled model runs: [`Runner`], implemented by the host, the
//! boards (emulated under QEMU, real through a debug probe) and the edge GPUs (OpenCL,
//! Vulkan), and [`by_name`], which picks one by the name the command line uses. A caller
//! chooses a runner, compiles for its [`Runner::target`], and runs; it names no runner type.

mod cases;
mod options;
mod places;

use crate::board::{self, BoardError};
use crate::gpu::DeviceError;
use crate::host::HostError;
use crate::Invocation;
pub use cases::{Case, CaseError, CaseOutcome};
use kiln_codegen::bundle::{Bundle, PackError, Report};
use kiln_codegen::gpu::Api;
use kiln_codegen::optimize::CostModel;
use kiln_codegen::target::Target;
pub use options::RunnerOptions;
pub use places::{BoardRunner, GpuRunner, HostRunner};
use std::time::Duration;

/// One run of a model: its outputs and each step's cost, in the runner's unit.
#[derive(Clone, Debug)]
pub struct Ran {
    pub outputs: Vec<Vec<u8>>,
    /// Per step: a cost in `unit`.
    pub step_cost: Vec<f64>,
    /// `us` on the host, `us (device)` on a GPU, `instructions` on an emulated board, `cycles`
    /// on a real one.
    pub unit: &'static str,
    /// Flash and RAM of the board image, when there is one.
    pub image: Option<(usize, usize)>,
    /// Per step, the cycles estimated for the board's core, when it has an estimate.
    pub cycles: Option<EstimatedCycles>,
    /// What the runner has to say of the run, a line each (the device, how the image fits).
    pub notes: Vec<String>,
}

/// Each step's cycles on an emulated board's core, estimated by the instruction-count plugin
/// from the core's published instruction timings (see [`board::Core`]).
#[derive(Clone, Debug)]
pub struct EstimatedCycles {
    pub core: board::Core,
    pub per_step: Vec<u64>,
}

/// Whole inferences timed ([`Runner::time_inferences`]).
#[derive(Clone, Debug)]
pub struct Timed {
    /// The first run's outputs.
    pub outputs: Vec<Vec<u8>>,
    /// Each inference's wall time, in the order they ran.
    pub times: Vec<Duration>,
}

/// A BEAM search's cost model and what it measures (`wall time on this host`).
pub struct Measure {
    pub model: Box<dyn CostModel>,
    pub by: String,
}

/// Why a runner could not be chosen or did not run a model.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error(transparent)]
    Gpu(#[from] DeviceError),
    #[error(transparent)]
    Bundle(#[from] PackError),
    #[error("a temporary folder for the bundle")]
    TempDir(#[source] std::io::Error),
    /// The options ask for what the place does not have (`--io` of a real board, `--probe`
    /// of an emulated one).
    #[error("{0}")]
    Options(String),
    #[error("{runner} cannot {what}")]
    Unsupported { runner: String, what: &'static str },
    /// What the caller ran between timed rounds failed.
    #[error("between timed rounds")]
    Between(#[source] kiln_codegen::error::Cause),
}

/// A place a compiled model runs.
pub trait Runner {
    /// The name it is chosen by: `host`, `opencl`, `qemu-an386`.
    fn name(&self) -> &str;

    /// The target a model is compiled for to run here.
    fn target(&self) -> Target;

    /// What a BEAM search measures its candidates by here, where it can measure them (the
    /// host's wall time, an emulated board's instructions).
    fn measure(&self) -> Option<Measure> {
        None
    }

    /// Makes each invocation in order on one device, the model's state carried from each run
    /// to the next: each run's outputs and costs. `progress` hears what it is doing.
    fn run_stream(
        &mut self,
        bundle: &Bundle,
        invocations: &[Invocation<'_>],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<Ran>, RunError>;

    /// Checks, before anything is compiled for it, that the place can be reached (a real
    /// board's probes are attached).
    fn ready(&self) -> Result<(), RunError> {
        Ok(())
    }

    /// Whether many models run faster together than one at a time (a board links a batch of
    /// them into one image): a suite then gives it all its models in one
    /// [`Runner::run_cases`]; else one model a call, each where a crash ends only that one.
    fn batches(&self) -> bool {
        false
    }

    /// Runs each case from its model's initial state: per case, its last run's outputs or why
    /// it gave none. `progress` hears (cases done, cases in all). An error is about the place
    /// (its toolchain, its probe); a case's own failure is its outcome.
    fn run_cases(
        &mut self,
        cases: &[Case<'_>],
        progress: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<Vec<CaseOutcome>, RunError> {
        let mut outcomes = Vec::with_capacity(cases.len());
        for (done, case) in cases.iter().enumerate() {
            let runs = vec![Invocation::Run(case.inputs); case.invocations];
            let ran = self.run_stream(case.bundle, &runs, &mut |_| {});
            outcomes.push(match ran.map(|mut r| r.pop()) {
                Ok(Some(last)) => Ok(last.outputs),
                Ok(None) => Err(CaseError::Failed("no invocation ran".into())),
                Err(e) => Err(CaseError::from(e)),
            });
            progress(done + 1, cases.len());
        }
        Ok(outcomes)
    }

    /// Times whole inferences on `inputs`, in `rounds` rounds of `per_round`, calling
    /// `between` with the round's count after each (a benchmark times its peer there,
    /// interleaved): the first run's outputs and each inference's time. Where the runner
    /// cannot time whole inferences, [`RunError::Unsupported`].
    fn time_inferences(
        &mut self,
        bundle: &Bundle,
        inputs: &[Vec<u8>],
        (rounds, per_round): (usize, usize),
        between: &mut dyn FnMut(usize) -> Result<(), kiln_codegen::error::Cause>,
    ) -> Result<Timed, RunError> {
        let _ = (bundle, inputs, rounds, per_round, between);
        Err(RunError::Unsupported {
            runner: self.name().to_string(),
            what: "time whole inferences",
        })
    }

    /// One run on `inputs` from the model's initial state.
    fn run(
        &mut self,
        bundle: &Bundle,
        inputs: &[Vec<u8>],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Ran, RunError> {
        let mut runs = self.run_stream(bundle, &[Invocation::Run(inputs)], progress)?;
        Ok(runs.pop().expect("one run"))
    }
}

/// A GPU step's time is the best of at least this many runs: the first includes the driver's
/// compilation on some drivers.
const GPU_RUNS: usize = 3;

/// The runner of a name: `host`, `opencl`, `vulkan`, or a board folder's name.
pub fn by_name(name: &str, options: &RunnerOptions) -> Result<Box<dyn Runner>, RunError> {
    if name == "host" {
        return Ok(Box::new(HostRunner::new(options)));
    }
    if let Some(api) = Api::from_name(name) {
        return Ok(Box::new(GpuRunner::new(api, options.runs.max(GPU_RUNS))?));
    }
    Ok(Box::new(BoardRunner::new(board::info(name)?, options)?))
}

/// Per-call costs (loops unrolled) summed per step; costs already per step stay as they are.
pub fn per_step<T: Copy + Default + std::ops::AddAssign>(
    report: &Report,
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
        let report = Report {
            model: "m".into(),
            steps: vec![line(0), line(1), line(2)],
            calls: vec![0, 1, 1, 1, 2],
            kernels: 3,
            arena_bytes: 0,
            arena_lower_bound: 0,
            arena_peak_step: 0,
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

    #[test]
    fn an_unknown_place_names_the_boards() {
        let err = by_name("qemu-nowhere", &RunnerOptions::default())
            .err()
            .expect("no such board");
        assert!(
            err.to_string().contains("there is no board `qemu-nowhere`"),
            "{err}"
        );
    }
}

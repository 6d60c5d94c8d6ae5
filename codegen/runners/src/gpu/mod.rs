//! Running GPU bundles: the OpenCL and Vulkan runtimes ([`opencl`], [`vulkan`]), which execute a
//! bundle's schedule on this machine's device, and where its buffers live there (`layout`).

pub mod opencl;
mod placement;
pub mod vulkan;

use crate::Invocation;
use kiln_codegen::gpu::{opencl_source, spirv, Api, GpuBundle, GpuError, GpuKernel};
use kiln_codegen::target::DeviceLimits;
use kiln_firmware::error::BundleError;
use std::time::Duration;

/// Why a bundle did not run on a GPU: no device or driver, a driver call that failed, a kernel
/// the device cannot take, a bundle or inputs the runtime refuses.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// A kernel over the device's limits, lacking one of its features, or not compiling for it.
    #[error(transparent)]
    Kernel(#[from] GpuError),
    #[error("{api}: no usable device: {reason}")]
    NoDevice { api: &'static str, reason: String },
    /// The driver could not be loaded, or found no device: there is none to run on.
    #[error("{api}: no usable device: {call} failed (is a driver for {api} installed?)")]
    NoDriver {
        api: &'static str,
        call: &'static str,
        #[source]
        source: DriverError,
    },
    #[error("{api}: {call} failed")]
    Driver {
        api: &'static str,
        call: &'static str,
        #[source]
        source: DriverError,
    },
    #[error("the bundle was refused: {0}")]
    Refused(String),
    /// The runtime's reader refuses the bundle's schedule.
    #[error("the bundle was refused")]
    Schedule(#[source] BundleError),
    #[error("the model has {expected} inputs, {got} were given")]
    InputCount { expected: usize, got: usize },
    #[error("input {index}: expected {expected} bytes, got {got}")]
    InputSize {
        index: usize,
        expected: usize,
        got: usize,
    },
}

/// What a driver call failed with: the runtime's own error value (an OpenCL status, a Vulkan
/// result, a loader error), kept as the cause.
pub type DriverError = kiln_codegen::error::Cause;

/// The limits of `api`'s device on this machine (see [`opencl::device`] and
/// [`vulkan::device`] for which device that is).
pub fn device_limits(api: Api) -> Result<DeviceLimits, DeviceError> {
    match api {
        Api::OpenCl => opencl::device_limits(),
        Api::Vulkan => vulkan::device_limits(),
    }
}

/// One call of a kernel of a table on its own buffers (in argument order), for running kernels
/// outside a bundle: tests, benchmarks.
#[derive(Clone, Debug)]
pub struct KernelCall {
    pub kernel: usize,
    pub buffers: Vec<Vec<u8>>,
}

/// What a run of [`KernelCall`]s gives back.
#[derive(Clone, Debug)]
pub struct CallsRun {
    /// Each call's buffers after its run.
    pub buffers: Vec<Vec<Vec<u8>>>,
    /// Each call's device time.
    pub times: Vec<Duration>,
}

/// What one run on a device gives back.
#[derive(Clone, Debug)]
pub struct GpuRun {
    pub outputs: Vec<Vec<u8>>,
    /// Device time of each step (kernel launch), in schedule order.
    pub step_times: Vec<Duration>,
    /// The device's name as its driver reports it.
    pub device: String,
    /// Bytes of device memory for the arena: the planned arena, or more when the device's
    /// alignment of buffer offsets made the runtime give buffers their own aligned places, or
    /// scratch slices to copy unaligned ones through.
    pub arena_bytes: usize,
}

/// Runs `gb` `runs` times (at least once) on its interface's device on this machine, each from
/// the model's initial state; the step times are each step's fastest run (the first run
/// includes the driver's compilation on some drivers), the outputs the last run's.
pub fn run(gb: &GpuBundle, inputs: &[Vec<u8>], runs: usize) -> Result<GpuRun, DeviceError> {
    match gb.api {
        Api::OpenCl => opencl::run_repeated(&opencl::device()?, gb, inputs, runs),
        Api::Vulkan => vulkan::run_repeated(&vulkan::device()?, gb, inputs, runs),
    }
}

/// Makes each invocation in order on one loaded bundle on its interface's device, the model's
/// state kept in device memory from each run to the next until a reset: each run's outputs and
/// step times.
pub fn run_invocations(
    gb: &GpuBundle,
    invocations: &[Invocation<'_>],
) -> Result<Vec<GpuRun>, DeviceError> {
    match gb.api {
        Api::OpenCl => opencl::run_invocations(&opencl::device()?, gb, invocations),
        Api::Vulkan => vulkan::run_invocations(&vulkan::device()?, gb, invocations),
    }
}

/// What a runtime's execution gives for one run: the outputs and each launch's device time.
type Executed = (Vec<Vec<u8>>, Vec<Duration>);

/// `runs` runs (at least one) on `inputs`, a reset between each two.
fn repeated(inputs: &[Vec<u8>], runs: usize) -> Vec<Invocation<'_>> {
    let mut invocations = vec![Invocation::Run(inputs)];
    for _ in 1..runs.max(1) {
        invocations.extend([Invocation::Reset, Invocation::Run(inputs)]);
    }
    invocations
}

/// The inputs of the first run of `invocations` (none without a run).
fn first_inputs<'a>(invocations: &[Invocation<'a>]) -> &'a [Vec<u8>] {
    let mut runs = invocations.iter().filter_map(|i| match *i {
        Invocation::Run(inputs) => Some(inputs),
        Invocation::Reset => None,
    });
    runs.next().unwrap_or(&[])
}

/// Runs of the same inputs as one: each step's fastest time, the last run's outputs.
fn fastest(runs: Vec<GpuRun>) -> GpuRun {
    let mut runs = runs.into_iter();
    let mut best = runs.next().expect("at least one run");
    for run in runs {
        for (b, t) in best.step_times.iter_mut().zip(&run.step_times) {
            *b = (*b).min(*t);
        }
        best.outputs = run.outputs;
    }
    best
}

/// The flat list of buffers after a run of [`placement::prepare_calls`], one list per call.
fn regroup(calls: &[KernelCall], mut flat: Vec<Vec<u8>>) -> Vec<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(calls.len());
    for c in calls {
        let rest = flat.split_off(c.buffers.len());
        out.push(std::mem::replace(&mut flat, rest));
    }
    out
}

//! Running GPU bundles: the OpenCL and Vulkan runtimes ([`opencl`], [`vulkan`]), which execute a
//! bundle's schedule on this machine's device, and where its buffers live there (`layout`).

mod layout;
pub mod opencl;
pub mod vulkan;

use kiln_codegen::gpu::{opencl_source, spirv, Api, GpuBundle, GpuError, GpuKernel};
use kiln_codegen::target::DeviceLimits;
use std::time::Duration;

/// The limits of `api`'s device on this machine (see [`opencl::device`] and
/// [`vulkan::device`] for which device that is).
pub fn device_limits(api: Api) -> Result<DeviceLimits, GpuError> {
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

/// Runs `gb` `runs` times (at least once) on its interface's device on this machine; the step
/// times are each step's fastest run (the first run includes the driver's compilation on some
/// drivers), the outputs the last run's.
pub fn run(gb: &GpuBundle, inputs: &[Vec<u8>], runs: usize) -> Result<GpuRun, GpuError> {
    match gb.api {
        Api::OpenCl => opencl::run_repeated(&opencl::device()?, gb, inputs, runs),
        Api::Vulkan => vulkan::run_repeated(&vulkan::device()?, gb, inputs, runs),
    }
}

/// The flat list of buffers after a run of [`layout::prepare_calls`], one list per call.
fn regroup(calls: &[KernelCall], mut flat: Vec<Vec<u8>>) -> Vec<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(calls.len());
    for c in calls {
        let rest = flat.split_off(c.buffers.len());
        out.push(std::mem::replace(&mut flat, rest));
    }
    out
}

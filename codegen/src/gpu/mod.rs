//! Edge GPUs: a model compiled for OpenCL or Vulkan, the files a user ships, and the runtimes
//! that execute its schedule on a device ([`opencl`], [`vulkan`]).
//!
//! A GPU bundle is an ordinary [`Bundle`] (schedule, weights, report) plus one [`GpuKernel`]
//! per entry of its kernel table: the source and the launch sizes each kernel needs. On disk
//! they are `launch.txt` (one line per kernel, see [`launch`]) and the sources written by
//! [`write_sources`]: `kernels.cl` for OpenCL; `<kernel>.comp` and its SPIR-V `<kernel>.spv`
//! for Vulkan.

mod kernel;
pub mod launch;
mod layout;
pub mod opencl;
pub mod spirv;
pub mod vulkan;

use crate::bundle::{self, Bundle};
use crate::compile::CompileError;
use crate::graph::{Graph, Lazy};
use crate::kernel::{gpu_heuristic, Kernel};
use crate::linearize::{to_program, Program};
use crate::plan::plan_arena;
use crate::render::{DeviceLimits, Target};
use crate::schedule::{create_schedule, ScheduleError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The GPU programming interfaces Kiln renders for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenCl,
    Vulkan,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenCl => "opencl",
            Api::Vulkan => "vulkan",
        }
    }

    /// `opencl` or `vulkan`.
    pub fn from_name(name: &str) -> Option<Api> {
        [Api::OpenCl, Api::Vulkan]
            .into_iter()
            .find(|a| a.name() == name)
    }

    /// Portable limits for ahead-of-time builds, when the device is not at hand.
    pub fn default_limits(self) -> DeviceLimits {
        match self {
            Api::OpenCl => DeviceLimits::opencl_default(),
            Api::Vulkan => DeviceLimits::vulkan_default(),
        }
    }

    /// The limits of this interface's device on this machine (see [`opencl::device`] and
    /// [`vulkan::device`] for which device that is).
    pub fn device_limits(self) -> Result<DeviceLimits, GpuError> {
        match self {
            Api::OpenCl => opencl::device_limits(),
            Api::Vulkan => vulkan::device_limits(),
        }
    }

    /// The target of this interface for a device with `limits`.
    pub fn target(self, limits: &DeviceLimits) -> Target {
        match self {
            Api::OpenCl => Target::opencl(limits),
            Api::Vulkan => Target::vulkan(limits),
        }
    }
}

/// One kernel of the table: its source and how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuKernel {
    /// Unique in the bundle (the kernel table's name).
    pub name: String,
    /// OpenCL C (a `__kernel` function of that name) or GLSL (a whole shader).
    pub src: String,
    /// Work-groups per axis (x, y, z).
    pub groups: [usize; 3],
    /// Threads per work-group per axis.
    pub local: [usize; 3],
    /// Bytes of local memory the kernel declares.
    pub shared_bytes: usize,
    /// Buffer parameters, in argument (binding) order.
    pub buffers: usize,
    pub uses_half: bool,
    pub uses_double: bool,
}

/// A model compiled for a GPU interface.
#[derive(Clone, Debug)]
pub struct GpuBundle {
    pub api: Api,
    pub bundle: Bundle,
    /// In kernel-table order (the schedule's kernel indices).
    pub kernels: Vec<GpuKernel>,
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
    /// alignment of buffer offsets made the runtime give each buffer its own aligned place.
    pub arena_bytes: usize,
}

/// Errors of compiling for, writing for or running on a GPU.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(transparent)]
    Compile(#[from] CompileError),
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
    #[error("{what} did not compile:\n{log}")]
    Build { what: String, log: String },
    #[error("kernel {kernel}: {what} is {needed}, the device allows {limit}")]
    OverLimit {
        kernel: String,
        what: &'static str,
        needed: String,
        limit: String,
    },
    #[error("kernel {kernel} needs {feature}, which the device does not have")]
    MissingFeature {
        kernel: String,
        feature: &'static str,
    },
    #[error("the bundle was refused: {0}")]
    Refused(String),
    /// The runtime's reader refuses the bundle's schedule.
    #[error("the bundle was refused")]
    Schedule(#[source] kiln_firmware::error::BundleError),
    /// The bundle could not be written (other than for an I/O error, which is `Io`).
    #[error("the bundle was refused")]
    Bundle(#[source] bundle::BundleError),
    #[error("the model has {expected} inputs, {got} were given")]
    InputCount { expected: usize, got: usize },
    #[error("input {index}: expected {expected} bytes, got {got}")]
    InputSize {
        index: usize,
        expected: usize,
        got: usize,
    },
    #[error("{path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What a driver call failed with.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    OpenCl(#[from] opencl3::error_codes::ClError),
    /// The result code, as the Vulkan API names it (`ERROR_DEVICE_LOST`).
    #[error("{0:?}")]
    Vulkan(ash::vk::Result),
    #[error(transparent)]
    VulkanLoader(#[from] ash::LoadingError),
}

/// Compiles a graph's `outputs` for `api` on a device with `limits`: the GPU heuristics pick
/// each kernel's opts, then the usual pipeline (render, plan, bundle) runs. `progress` is called
/// after each kernel with (done, total).
pub fn compile(
    name: &str,
    graph: &Graph,
    outputs: &[Lazy],
    api: Api,
    limits: &DeviceLimits,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<GpuBundle, GpuError> {
    let target = api.target(limits);
    let schedule = create_schedule(graph, outputs).map_err(CompileError::from)?;
    let mut programs: Vec<Program> = Vec::with_capacity(schedule.items.len());
    for item in &schedule.items {
        let mut k = Kernel::new(item.ast.clone(), target.clone())
            .map_err(|e| CompileError::from(ScheduleError::from(e)))?;
        gpu_heuristic::optimize(&mut k);
        programs.push(to_program(&k).map_err(CompileError::from)?);
        progress(programs.len(), schedule.items.len());
    }
    let plan = plan_arena(&schedule);
    let bundle = bundle::build(name, &schedule, &programs, &plan).map_err(CompileError::from)?;
    from_programs(api, bundle, &programs)
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

/// The GPU bundle of `bundle`, built from the programs it was built from (one per schedule
/// step, rendered for `api`). The bundle's C kernel table is replaced by a note: a GPU bundle's
/// kernels are in the files [`write_sources`] writes.
pub fn from_programs(
    api: Api,
    mut bundle: Bundle,
    programs: &[Program],
) -> Result<GpuBundle, GpuError> {
    let kernel_of_step = step_kernels(&bundle)?;
    let mut kernels: Vec<Option<GpuKernel>> = vec![None; bundle.kernel_names.len()];
    for (p, &k) in programs.iter().zip(&kernel_of_step) {
        if kernels[k].is_none() {
            kernels[k] = Some(GpuKernel::from_program(api, p, &bundle.kernel_names[k]));
        }
    }
    let kernels = kernels
        .into_iter()
        .enumerate()
        .map(|(k, g)| g.ok_or_else(|| GpuError::Refused(format!("kernel {k} is never launched"))))
        .collect::<Result<Vec<_>, _>>()?;
    bundle.replay = programs
        .iter()
        .map(|p| p.replay_record(api.name()))
        .collect();
    bundle.kernels_c = format!(
        "/* Kiln {} bundle: the kernels are in {}, their launch sizes in {}. */\n",
        api.name(),
        match api {
            Api::OpenCl => OPENCL_FILE,
            Api::Vulkan => "<kernel>.comp and <kernel>.spv",
        },
        launch::LAUNCH_FILE
    );
    Ok(GpuBundle {
        api,
        bundle,
        kernels,
    })
}

/// The kernel index of each step of the bundle's schedule.
fn step_kernels(bundle: &Bundle) -> Result<Vec<usize>, GpuError> {
    let plan = kiln_firmware::schedule::read_plan(&bundle.schedule).map_err(GpuError::Schedule)?;
    let parsed = kiln_firmware::schedule::Bundle::parse(
        &bundle.schedule,
        plan.arena_bytes as usize,
        bundle.kernel_names.len(),
    )
    .map_err(GpuError::Schedule)?;
    Ok(parsed.steps().map(|s| s.kernel.0 as usize).collect())
}

/// The OpenCL source file of a bundle.
pub const OPENCL_FILE: &str = "kernels.cl";

/// All OpenCL kernels of a bundle in one source (helpers are guarded, so they can repeat).
pub fn opencl_source(kernels: &[GpuKernel]) -> String {
    let mut s = String::from("/* @generated by Kiln. Do not edit. */\n");
    for k in kernels {
        s.push_str(&k.src);
        s.push('\n');
    }
    s
}

/// Writes the sources of `gb` and its launch table into `dir` (which must exist): for OpenCL
/// `kernels.cl`; for Vulkan `<kernel>.comp` and `<kernel>.spv` (compiled by `glslc`). Returns
/// the files written.
pub fn write_sources(dir: &Path, gb: &GpuBundle) -> Result<Vec<PathBuf>, GpuError> {
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|source| GpuError::Io {
            path: p.display().to_string(),
            source,
        })?;
        Ok::<PathBuf, GpuError>(p)
    };
    let mut files = vec![write(
        launch::LAUNCH_FILE,
        launch::render(gb.api, &gb.kernels).as_bytes(),
    )?];
    match gb.api {
        Api::OpenCl => files.push(write(OPENCL_FILE, opencl_source(&gb.kernels).as_bytes())?),
        Api::Vulkan => {
            let shaders: Vec<(&str, &str)> = gb
                .kernels
                .iter()
                .map(|k| (k.name.as_str(), k.src.as_str()))
                .collect();
            for (k, spv) in gb.kernels.iter().zip(spirv::compile_all(&shaders)?) {
                files.push(write(&format!("{}.comp", k.name), k.src.as_bytes())?);
                files.push(write(&format!("{}.spv", k.name), &spirv::to_bytes(&spv))?);
            }
        }
    }
    Ok(files)
}

impl GpuBundle {
    /// Writes the whole bundle into `dir` (replacing it): the bundle's files, then the GPU
    /// sources and launch table.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, GpuError> {
        self.bundle.write(dir).map_err(|e| match e {
            bundle::BundleError::Io { path, source } => GpuError::Io { path, source },
            other => GpuError::Bundle(other),
        })?;
        write_sources(dir, self)
    }

    /// Checks every kernel against a device's limits and features before anything runs.
    pub fn check(&self, limits: &DeviceLimits) -> Result<(), GpuError> {
        self.kernels.iter().try_for_each(|k| k.check(limits))
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
